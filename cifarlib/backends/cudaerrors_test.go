package backends

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/repo"

	"github.com/stretchr/testify/require"
)

// readXLAFixture returns the text of testdata/xla-errors/NAME.txt (the lines after its "# source:"
// and "# class:" header) and the class it names.
func readXLAFixture(t *testing.T, name string) (text, class string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "xla-errors", name+".txt"))
	require.NoError(t, err)
	var body []string
	source := ""
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# source: "):
			source = strings.TrimPrefix(line, "# source: ")
		case strings.HasPrefix(line, "# class: "):
			class = strings.TrimPrefix(line, "# class: ")
		default:
			body = append(body, line)
		}
	}
	require.Contains(t, source, "xla/", "%s names the XLA source file its text comes from", name)
	require.NotEmpty(t, class, name)
	return strings.Join(body, "\n"), class
}

// TestTranslateRuntimeErrorFixtures: every XLA text of testdata/xla-errors becomes the typed
// error its header names, keeps the raw text (errors.Unwrap) and says its class's advice.
func TestTranslateRuntimeErrorFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "xla-errors", "*.txt"))
	require.NoError(t, err)
	require.Len(t, files, 18)
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			text, class := readXLAFixture(t, name)
			raw := errors.New(text)
			err := TranslateRuntimeError(raw)
			require.Same(t, raw, errors.Unwrap(err), "the raw text is kept")
			var c RuntimeErrorClass
			for _, k := range RuntimeErrorClasses() {
				if k.Type == class {
					c = k
				}
			}
			require.Equal(t, class, c.Type, "a known class")
			seen[class] = true
			require.Contains(t, err.Error(), c.Advice)
			require.Contains(t, err.Error(), "("+firstLine(text)+")", "the first line of XLA's text")
			var (
				dm  *DeviceMemoryError
				dnn *CuDNNError
				bl  *CuBLASError
				tl  *CUDAToolsError
				dr  *DriverError
				kl  *KernelLaunchError
				mm  *DeviceMismatchError
			)
			got := map[string]bool{"*DeviceMemoryError": errors.As(err, &dm), "*CuDNNError": errors.As(err, &dnn),
				"*CuBLASError": errors.As(err, &bl), "*CUDAToolsError": errors.As(err, &tl), "*DriverError": errors.As(err, &dr),
				"*KernelLaunchError": errors.As(err, &kl), "*DeviceMismatchError": errors.As(err, &mm)}
			for typ, ok := range got {
				require.Equal(t, typ == class, ok, "errors.As(%s)", typ)
			}
			require.Equal(t, class == "*DeviceMemoryError", errors.Is(err, ErrDeviceMemory))
			require.Equal(t, class != "*DeviceMemoryError", errors.Is(err, ErrCUDARuntime))
			require.Same(t, err, TranslateRuntimeError(err), "already translated")
		})
	}
	require.Len(t, seen, len(RuntimeErrorClasses()), "a fixture for every class")
}

// TestTranslateRuntimeErrorMessages: the exact messages of one error per kind.
func TestTranslateRuntimeErrorMessages(t *testing.T) {
	text, _ := readXLAFixture(t, "cudnn-version")
	require.Equal(t, "CUDA failure, cuDNN missing or mismatched (PJRT error (code=9): FAILED_PRECONDITION: Loaded runtime "+
		"CuDNN library: 9.1.0 but source was compiled with: 9.8.0.  CuDNN library needs to have matching major version and "+
		"equal or higher minor version. If using a binary install, upgrade your CuDNN library.  If building from sources, "+
		"make sure the library loaded at runtime is compatible with the version specified during compile configuration.): "+
		"the CUDA PJRT plugin needs cuDNN 9 (pip's nvidia-cudnn-cu13 in SITE/nvidia/cudnn/lib): run `cifarlab doctor` to "+
		"see which cuDNN it finds; `bash kernel/setup.sh` on the GPU machine installs the pinned one "+
		"(kernel/requirements-cuda-libs.txt), or set CIFARLAB_CUDA_SITE to a site-packages that has it",
		TranslateRuntimeError(errors.New(text)).Error())

	text, _ = readXLAFixture(t, "illegal-address")
	require.Equal(t, "CUDA failure, kernel launch failure or illegal address (PJRT error (code=13): INTERNAL: CUDA error: "+
		"Failed to synchronize GPU stream: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered): the CUDA "+
		"context is lost: restart the notebook kernel (or the program) before running anything else on the GPU; then run "+
		"the same cell on the CPU kernel (\"Go (cifarlab, CPU)\", the cpu backend), where cifarlib's guards give their own "+
		"message for a bad label or shape: try the CPU first", TranslateRuntimeError(errors.New(text)).Error())

	noDev := errors.New("while creating plugin cuda: INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected")
	var be *BackendError
	require.ErrorAs(t, TranslateRuntimeError(noDev), &be)
	require.Equal(t, "the CUDA device or driver is not usable", be.Missing)
	require.Same(t, noDev, be.Err)

	require.NoError(t, TranslateRuntimeError(nil))
	other := errors.New("PJRT error (code=3): INVALID_ARGUMENT: shapes do not match")
	require.Same(t, other, TranslateRuntimeError(other), "not a CUDA failure: unchanged")
	guard := &data.LabelRangeError{Batch: 0, BatchSize: 1, NumClasses: 10}
	require.Same(t, error(guard), TranslateRuntimeError(guard))
}

// TestDeviceMemoryErrorNeeds: the device-memory error says what XLA says the program needs, and
// at a run's boundary (batch size and GPU memory known) the batch size that would fit.
func TestDeviceMemoryErrorNeeds(t *testing.T) {
	saved := gpuMemoryBytes
	t.Cleanup(func() { gpuMemoryBytes = saved })

	text, _ := readXLAFixture(t, "oom-buffer-assignment")
	needs, ok := ParseMemoryNeeds(text)
	require.True(t, ok)
	require.Equal(t, MemoryNeeds{Request: 22271409880, Total: 22301617684, Parameters: 30974935, Outputs: 29087498,
		Temporaries: 22269405430, PeakBuffers: []int64{3650722202, 1642824991}}, needs)

	gpuMemoryBytes = func() int64 { return 16 << 30 }
	err := TranslateRunError(errors.New(text), 256)
	var dm *DeviceMemoryError
	require.ErrorAs(t, err, &dm)
	require.Equal(t, 256, dm.BatchSize)
	require.Equal(t, int64(16<<30), dm.DeviceBytes)
	// 16 GiB minus the 30.72 MiB that do not grow with the batch, over 20.74 GiB / 256 per
	// example: 197 examples; the largest power of two below is 128.
	require.Equal(t, "out of device memory (PJRT error (code=8): RESOURCE_EXHAUSTED: Out of memory while trying to "+
		"allocate 22271409880 bytes.): the program needs 20.77GiB on the device (XLA's buffer assignment: 20.74GiB "+
		"temporaries, 29.54MiB parameters, 27.74MiB outputs; largest buffer 3.40GiB); the failed allocation asked for "+
		"20.74GiB; the GPU has 16.00GiB; batch size 128 would fit (this run used 256; an estimate: the temporaries grow "+
		"with the batch): use a smaller batch size (or model); go-xla's CUDA options in GOMLX_BACKEND: "+
		"\"cuda,preallocate=false\" (the default) allocates as needed, \"cuda,preallocate=true,memory_fraction=0.9\" "+
		"reserves 90% of the GPU up front; check that no other process holds GPU memory (nvidia-smi)", err.Error())

	gpuMemoryBytes = func() int64 { return 0 }
	err = TranslateRunError(errors.New(text), 256)
	require.ErrorAs(t, err, &dm)
	require.Contains(t, err.Error(), "largest buffer 3.40GiB); the failed allocation asked for 20.74GiB; this run used "+
		"batch size 256: use a smaller batch size", "no GPU memory known: no estimate")

	text, _ = readXLAFixture(t, "oom-request-for")
	needs, ok = ParseMemoryNeeds(text)
	require.True(t, ok)
	require.Equal(t, MemoryNeeds{Request: 165425291480, Total: 207060373340, Parameters: 10780367913, Outputs: 30859340022,
		Temporaries: 165420665405, PeakBuffers: []int64{38 << 30}}, needs)
	// 141 GiB minus 36.78 GiB that do not grow, over 154.06 GiB / 64 per example: 42, so 32.
	require.Equal(t, 32, needs.FitBatch(64, 141<<30))

	text, _ = readXLAFixture(t, "oom-host")
	needs, ok = ParseMemoryNeeds(text)
	require.True(t, ok)
	require.Equal(t, MemoryNeeds{Request: 64 << 30, Host: true}, needs)
	require.Equal(t, "out of device memory (PJRT error (code=8): RESOURCE_EXHAUSTED: Out of host memory while trying to "+
		"allocate 68719476736 bytes. Please set the environment variable XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB to allocate "+
		"larger host memory than the default 64 GB.): the failed allocation asked for 64.00GiB: the host's pinned memory "+
		"for GPU transfers ran out, not the GPU's: set XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB above its default of 64, or "+
		deviceMemoryAdvice, TranslateRuntimeError(errors.New(text)).Error())

	text, _ = readXLAFixture(t, "oom-cubin")
	_, ok = ParseMemoryNeeds(text)
	require.False(t, ok, "XLA states no size")
	err = TranslateRunError(errors.New(text), 128)
	require.Contains(t, err.Error(), "CUDA_ERROR_OUT_OF_MEMORY: out of memory); this run used batch size 128: use a smaller")
}

func TestFitBatch(t *testing.T) {
	const gib = int64(1) << 30
	for _, c := range []struct {
		name   string
		needs  MemoryNeeds
		batch  int
		device int64
		want   int
	}{
		{"temporaries scale", MemoryNeeds{Total: 10 * gib, Temporaries: 8 * gib}, 128, 6 * gib, 64},     // (6-2)/8*128 = 64
		{"just under", MemoryNeeds{Total: 10 * gib, Temporaries: 8 * gib}, 128, 5 * gib, 32},            // 48 -> 32
		{"parameters alone too big", MemoryNeeds{Total: 10 * gib, Temporaries: 2 * gib}, 8, 7 * gib, 0}, // 8 GiB fixed
		{"request only", MemoryNeeds{Request: 4 * gib}, 256, 3 * gib, 128},                              // 192 -> 128
		{"says it fits", MemoryNeeds{Request: 1 * gib}, 64, 16 * gib, 32},                               // other memory taken: halve
		{"no device memory", MemoryNeeds{Request: gib}, 64, 0, 0},
		{"no batch", MemoryNeeds{Request: gib}, 0, gib, 0},
		{"no sizes", MemoryNeeds{}, 64, gib, 0},
	} {
		require.Equal(t, c.want, c.needs.FitBatch(c.batch, c.device), c.name)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"17179869184": 17179869184, "8.00GiB": 8 << 30, "24.6KiB": 25190, "4B": 4,
		"1.5 MiB": 1572864, "2TiB": 2 << 40, "x": 0, "-1B": 0} {
		require.Equal(t, want, parseBytes(in), in)
	}
	require.Equal(t, "20.77GiB", formatBytes(22301617684))
	require.Equal(t, "512B", formatBytes(512))
}

// TestTrainCatchTranslates: a PJRT failure panicked or returned inside the library boundary comes
// back typed.
func TestTrainCatchTranslates(t *testing.T) {
	text, _ := readXLAFixture(t, "ptx-provider")
	err := TrainCatch(func() error { panic(errors.New(text)) })
	var tools *CUDAToolsError
	require.ErrorAs(t, err, &tools)
	err = TrainCatch(func() error { return errors.New(text) })
	require.ErrorAs(t, err, &tools)
	require.NoError(t, TrainCatch(func() error { return nil }))
}

// TestRuntimeErrorTableInREADME: kernel/README.md shows the table the library prints.
func TestRuntimeErrorTableInREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repo.Dir(), "kernel", "README.md"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(readme), RuntimeErrorTable()),
		"kernel/README.md's table under \"CUDA errors, explained\" is not RuntimeErrorTable()'s: paste its output there")
	require.Equal(t, 7+2, strings.Count(RuntimeErrorTable(), "\n"), "header, separator, seven classes")
}
