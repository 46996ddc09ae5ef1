package backends

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/distributed"
	"github.com/gomlx/gomlx/ml/model"
)

// DevicesAll, as training.Settings.Compute.Devices or the devices argument of NewWithDevices, asks for
// every device the backend has ("--devices all").
const DevicesAll = -1

// MaxCPUDevices is the largest number of devices NewWithDevices asks XLA's CPU plugin
// for. XLA CPU devices are virtual: they share the machine's cores.
const MaxCPUDevices = 64

// xlaCPUDeviceCountOption is the PJRT client option of XLA's CPU plugin that sets its number of
// devices (the plugin exposes 4 when it is not set).
const xlaCPUDeviceCountOption = "cpu_device_count"

// deviceMeshAxis is the name of the one axis of the device mesh data-parallel training uses:
// the batch axis of images and labels is sharded along it, the variables are replicated.
const deviceMeshAxis = "batch"

// ParseDevices parses a device count as given to "cifarlab train --devices": a positive number,
// or "all" (DevicesAll).
func ParseDevices(s string) (int, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "all" {
		return DevicesAll, nil
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || n < 1 || fmt.Sprint(n) != s {
		return 0, &DevicesValueError{Value: fmt.Sprintf("%q", s), Fix: "use a positive number of devices or \"all\""}
	}
	return n, nil
}

// ResolveDevices returns the number of devices to train on with backend b for the requested
// count (DevicesAll: all of b's devices), or a typed error when b cannot provide them.
func ResolveDevices(b compute.Backend, requested int) (int, error) {
	switch {
	case requested == 0 || requested == 1:
		return 1, nil
	case requested < DevicesAll:
		return 0, &DevicesValueError{Value: fmt.Sprint(requested), Fix: "use a positive number of devices or DevicesAll"}
	}
	if IsGoBackend(b) {
		if requested == DevicesAll {
			return 1, nil
		}
		return 0, &DevicesUnsupportedError{Backend: Name(b), Requested: requested}
	}
	available := b.NumDevices()
	if requested == DevicesAll {
		return available, nil
	}
	if requested > available {
		fix := fmt.Sprintf("ask for %d devices (or all), or fewer", available)
		if xb, ok := xlaOf(b); ok && xb.IsCPU() {
			fix = fmt.Sprintf("create the backend with NewBackendWithDevices(name, %d) (XLA's CPU plugin makes as many "+
				"devices as asked), or use at most %d", requested, available)
		} else if ok && xb.IsCUDA() {
			fix = fmt.Sprintf("this host has %d GPUs visible to XLA (check nvidia-smi and CUDA_VISIBLE_DEVICES); "+
				"ask for %d devices or all", available, available)
		}
		return 0, &DeviceCountError{Backend: Name(b), Requested: requested, Available: available, Fix: fix}
	}
	return requested, nil
}

// NewDeviceMesh returns the one-axis mesh (deviceMeshAxis) of n devices used for data
// parallelism.
func NewDeviceMesh(n int) (*distributed.DeviceMesh, error) {
	return distributed.NewDeviceMesh([]int{n}, []string{deviceMeshAxis})
}

// BatchShardingSpec shards axis 0 (the batch) of a tensor along the mesh's deviceMeshAxis; the
// other axes are replicated.
func BatchShardingSpec(mesh *distributed.DeviceMesh) (*distributed.ShardingSpec, error) {
	return distributed.BuildSpec(mesh).S(deviceMeshAxis).Done()
}

// DeviceInfo describes one device of a backend, for "cifarlab doctor".
type DeviceInfo struct {
	// Num is the device number (compute.DeviceNum).
	Num int
	// Description is the backend's description of the device, e.g. "NVIDIA H100 80GB HBM3" or
	// "TFRT_CPU_0".
	Description string
}

// ListDevices returns the devices of backend b, in device-number order.
func ListDevices(b compute.Backend) (devices []DeviceInfo) {
	if b == nil {
		return nil
	}
	n := 0
	func() {
		defer func() { _ = recover() }()
		n = b.NumDevices()
	}()
	for i := range n {
		desc := ""
		func() {
			defer func() { _ = recover() }()
			desc = b.DeviceDescription(compute.DeviceNum(i))
		}()
		devices = append(devices, DeviceInfo{Num: i, Description: desc})
	}
	return devices
}

// StoreMesh returns the device mesh the variables of store are already distributed on (after
// data-parallel training: a graph must use the very mesh object of its variables' sharding
// specs), or a new one of n devices when they are not distributed. Variables distributed on a
// different number of devices are an error: save a checkpoint and load it, which any device
// count can evaluate.
func StoreMesh(store *model.Store, n int) (*distributed.DeviceMesh, error) {
	for v := range store.IterVariables() {
		spec := v.ShardingSpec()
		if spec == nil || spec.Mesh == nil {
			continue
		}
		if got := spec.Mesh.NumDevices(); got != n {
			return nil, &DeviceCountError{Backend: "store", Requested: n, Available: got,
				Fix: fmt.Sprintf("the variables (%s, ...) are distributed on %d devices: evaluate with %d devices, or "+
					"save a checkpoint and evaluate a loaded copy with any number of devices", v.Path(), got, got)}
		}
		return spec.Mesh, nil
	}
	return NewDeviceMesh(n)
}

// ReplicateUnsharded gives every variable of store without a sharding spec the replicated
// spec of mesh. GoMLX v0.28.3 creates the random-number state variable (Store.SetRNGStateFromSeed)
// without a link to its store (ml/model/random.go is the same in v0.28.16), so a distributed graph that reads it would otherwise fail on the
// store's default spec with a nil pointer.
func ReplicateUnsharded(store *model.Store, mesh *distributed.DeviceMesh) error {
	replicated := distributed.NewReplicatedShardingSpec(mesh)
	for v := range store.IterVariables() {
		if v.ShardingSpec() == nil {
			if err := v.SetShardingSpec(replicated); err != nil {
				return err
			}
		}
	}
	return nil
}
