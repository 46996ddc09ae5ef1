package pjrt

/*
#include "pjrt_c_api.h"
#include "gen_api_calls.h"
#include "gen_new_struct.h"

// Go cannot call a C function pointer: these call the deleters the plugin hands out.
static void delete_serialized_executable(PJRT_Executable_Serialize_Args* args) {
	if (args->serialized_executable_deleter != NULL) {
		args->serialized_executable_deleter(args->serialized_executable);
	}
}

static void delete_serialized_compile_options(PJRT_Executable_GetCompileOptions_Args* args) {
	if (args->serialized_compile_options_deleter != NULL) {
		args->serialized_compile_options_deleter(args->serialized_compile_options);
	}
}
*/
import "C"
import (
	"runtime"
	"unsafe"

	"github.com/gomlx/go-xla/internal/protos/compile_options"
	"github.com/pkg/errors"
	"google.golang.org/protobuf/proto"
)

// Serialize returns the compiled program of e in the plugin's own format
// (PJRT_Executable_Serialize), which Client.DeserializeAndLoad loads again, in this process or
// another one, without compiling. The format is the plugin's: it holds only for the same plugin
// build and the same hardware (CPU features, GPU model), which is for the caller to check (a
// persistent compile cache keys its entries by them).
func (e *LoadedExecutable) Serialize() ([]byte, error) {
	if e == nil || e.plugin == nil || e.executable == nil || !e.executable.wrapper.IsValid() {
		return nil, errors.New("LoadedExecutable.Serialize: the executable is nil or was destroyed")
	}
	defer runtime.KeepAlive(e)
	args := C.new_PJRT_Executable_Serialize_Args()
	defer cFree(args)
	args.executable = e.executable.wrapper.c
	if err := toError(e.plugin, C.call_PJRT_Executable_Serialize(e.plugin.api, args)); err != nil {
		return nil, errors.WithMessage(err, "LoadedExecutable.Serialize")
	}
	defer C.delete_serialized_executable(args)
	return cBytes(args.serialized_bytes, args.serialized_bytes_size), nil
}

// DeserializeAndLoad loads onto c's devices a program that LoadedExecutable.Serialize
// serialized (PJRT_Executable_DeserializeAndLoad), with the compile options it was compiled
// with: a LoadedExecutable as CompileConfig.Done returns it, without compiling. The bytes must
// come from the same plugin build and hardware: a plugin may reject others with an error, or
// not notice.
func (c *Client) DeserializeAndLoad(serialized []byte) (*LoadedExecutable, error) {
	if !c.IsValid() {
		return nil, errors.New("Client.DeserializeAndLoad: the client is nil or was destroyed")
	}
	if len(serialized) == 0 {
		return nil, errors.New("Client.DeserializeAndLoad: no serialized executable given")
	}
	defer runtime.KeepAlive(c)
	var pinner runtime.Pinner
	defer pinner.Unpin()
	pinner.Pin(unsafe.SliceData(serialized))
	args := C.new_PJRT_Executable_DeserializeAndLoad_Args()
	defer cFree(args)
	args.client = c.client.c
	args.serialized_executable = (*C.char)(unsafe.Pointer(unsafe.SliceData(serialized)))
	args.serialized_executable_size = C.size_t(len(serialized))
	if err := toError(c.plugin, C.call_PJRT_Executable_DeserializeAndLoad(c.plugin.api, args)); err != nil {
		return nil, errors.WithMessage(err, "Client.DeserializeAndLoad")
	}
	e, err := newLoadedExecutable(c.plugin, c, args.loaded_executable)
	if err != nil {
		return nil, errors.WithMessage(err, "Client.DeserializeAndLoad")
	}
	if err := e.configureFromCompileOptions(); err != nil {
		e.destroyOrLog()
		return nil, errors.WithMessage(err, "Client.DeserializeAndLoad")
	}
	return e, nil
}

// configureFromCompileOptions sets what CompileConfig.Done carries over from its configuration
// (replicas, partitions, device assignment, portability) from the executable's own compile
// options (PJRT_Executable_GetCompileOptions).
func (e *LoadedExecutable) configureFromCompileOptions() error {
	args := C.new_PJRT_Executable_GetCompileOptions_Args()
	defer cFree(args)
	args.executable = e.executable.wrapper.c
	if err := toError(e.plugin, C.call_PJRT_Executable_GetCompileOptions(e.plugin.api, args)); err != nil {
		return errors.WithMessage(err, "reading the executable's compile options")
	}
	defer C.delete_serialized_compile_options(args)
	options := &compile_options.CompileOptionsProto{}
	if err := proto.Unmarshal(cBytes(args.serialized_bytes, args.serialized_bytes_size), options); err != nil {
		return errors.Wrap(err, "parsing the executable's compile options")
	}
	e.isPortable = options.CompilePortableExecutable
	build := options.GetExecutableBuildOptions()
	e.numReplicas, e.numPartitions = max(1, int(build.GetNumReplicas())), max(1, int(build.GetNumPartitions()))
	if assignment := build.GetDeviceAssignment(); assignment != nil && !e.isPortable {
		e.deviceAssignment = make([]int, e.numReplicas*e.numPartitions)
		for partition, devices := range assignment.GetComputationDevices() {
			for replica, id := range devices.GetReplicaDeviceIds() {
				if i := replica*e.numPartitions + partition; i < len(e.deviceAssignment) {
					e.deviceAssignment[i] = int(id)
				}
			}
		}
	}
	return nil
}

// cBytes copies size bytes at data into Go memory.
func cBytes(data *C.char, size C.size_t) []byte {
	if data == nil || size == 0 {
		return nil
	}
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(data)), int(size))...)
}
