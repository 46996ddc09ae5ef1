package backends

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
)

// Backend short names accepted by New.
const (
	// Auto picks $GOMLX_BACKEND when set, else XLA CUDA when a GPU and its plugin are
	// present, else CPU.
	Auto = "auto"
	// CPU is XLA's CPU plugin when installed (see New), else the pure-Go backend.
	CPU = "cpu"
	// Go is the pure-Go backend (github.com/gomlx/compute/gobackend): slow for
	// convolutions, and available in every program not built with NoGoBackendTag.
	Go = "go"
	// CUDA is XLA with the CUDA PJRT plugin. It fails fast when there is no GPU or no plugin.
	CUDA = "cuda"
)

// BackendError is returned by New when the requested backend cannot be created: it says
// what is missing and how to get it. New never falls back silently from an explicit request.
type BackendError struct {
	// Requested is the name given to New.
	Requested string
	// Missing says what is missing, e.g. "an NVIDIA GPU" or "the CUDA PJRT plugin".
	Missing string
	// Fix says how to install or configure it.
	Fix string
	// Err is the underlying error, if any.
	Err error
}

func (e *BackendError) Error() string {
	msg := fmt.Sprintf("backend %q unavailable: %s", e.Requested, e.Missing)
	if e.Err != nil {
		msg += fmt.Sprintf(" (%s)", firstLine(e.Err.Error()))
	}
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *BackendError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBackend) true.
func (e *BackendError) Is(target error) bool { return target == ErrBackend }

// createTimeout bounds how long New waits for an XLA plugin to create its client
// (loading CUDA can take a while, but it must never hang).
var createTimeout = 2 * time.Minute

// xlaSetup disables go-xla's plugin auto-installer once: cifarlib never downloads plugins.
var xlaSetup = sync.OnceFunc(func() { xla.EnableAutoInstall(false) })

// New returns a GoMLX compute backend from a short name:
//
//   - "go": the pure-Go backend; available unless the program was built with NoGoBackendTag
//     (as the XLA notebook kernels build cells), where it is a *BackendError saying so.
//   - "cpu": XLA's CPU PJRT plugin when installed (the first of $CIFARLAB_XLA_CPU_PLUGIN, go-xla's
//     plugin folders, pip's lammps-jax-pjrt-cpu in the repository's .venv, where the repository
//     is $CIFARLAB_REPO or found above the working directory, and $VIRTUAL_ENV), else the
//     pure-Go backend. Options for the XLA plugin can follow after a comma. Name says
//     which one was picked.
//   - "cuda": XLA with the CUDA PJRT plugin ($CIFARLAB_CUDA_PLUGIN, e.g. jax-cuda13-pjrt's
//     xla_cuda_plugin.so, else a "cuda" plugin in go-xla's folders). Without an NVIDIA GPU or without the plugin it
//     returns a *BackendError saying what is missing and how to install it; it never falls back.
//     Options for the XLA plugin can follow after a comma, e.g. "cuda,memory_fraction=0.5".
//   - "auto" or "": $GOMLX_BACKEND when set (any of these names, or a raw GoMLX configuration
//     such as "xla:cpu" or "go"), else "cuda" when a GPU and its plugin are present, else "cpu".
//
// Raw GoMLX configurations ("xla:cuda", "xla:/abs/path/plugin.so", "go:ops_sequential", ...) are
// accepted too; "xla:cpu" finds the CPU plugin as "cpu" does, but never falls back to Go.
// The XLA plugin auto-installer is always disabled: nothing is downloaded. The pure-Go backend
// runs its ops sequentially unless told "go:ops_parallel" (see goBackendDefaultOptions: the
// parallel executor of compute v0.1.3 to v0.1.6 can deadlock on convolutions).
func New(name string) (compute.Backend, error) {
	c, err := choose(name)
	if err != nil {
		return nil, err
	}
	return c.create()
}

// choice is what New(name) creates, decided before anything is created: the name is parsed,
// the plugin file found, the GPU looked for, and the process readied for a CUDA plugin (its
// environment: see newCUDAChoice), so that creating the client later (Lazy) changes nothing else.
type choice struct {
	// requested is the name given to New, for errors; env is $GOMLX_BACKEND's value when "auto"
	// followed it (its errors then name it).
	requested, env string
	// xla is the XLA plugin's configuration (a go-xla name or a path, with options after a
	// comma); "" chooses the pure-Go backend, with configuration goConfig.
	xla, goConfig string
	// fallbackGo: xla is a plugin found by searching ("cpu"), and the pure-Go backend stands in
	// when it does not start.
	fallbackGo bool
}

// create creates the backend of c.
func (c choice) create() (compute.Backend, error) {
	var b compute.Backend
	var err error
	if c.xla == "" {
		b, err = newGoBackend(c.requested, c.goConfig)
	} else if b, err = newXLA(c.requested, c.xla, nil); err != nil && c.fallbackGo {
		// A plugin found by searching that does not start: the pure-Go backend still works.
		b, err = newGoBackend(c.requested, "")
	}
	if err != nil && c.env != "" {
		return nil, fmt.Errorf("backends: $%s=%q: %w", compute.ConfigEnvVar, c.env, err)
	}
	return b, err
}

// choose returns the choice of New(name) (see New), or the error New returns for it without
// creating anything (an unknown name, a missing plugin, no GPU).
func choose(name string) (choice, error) {
	xlaSetup()
	requested := strings.TrimSpace(name)
	lower := strings.ToLower(requested)
	switch {
	case lower == "" || lower == Auto:
		return chooseAuto()
	case lower == Go || strings.HasPrefix(lower, Go+":"):
		_, config, _ := strings.Cut(requested, ":")
		return choice{requested: requested, goConfig: config}, nil
	case lower == CPU || strings.HasPrefix(lower, CPU+","):
		options := strings.TrimPrefix(requested[len(CPU):], ",")
		loc, err := findXLACPUPluginFor(requested)
		if err != nil {
			return choice{}, err
		}
		if loc.Path == "" {
			return choice{requested: requested}, nil
		}
		return xlaCPUChoice(choice{requested: requested, xla: withOptions(loc.Path, options), fallbackGo: !loc.Explicit})
	case lower == CUDA || strings.HasPrefix(lower, CUDA+","):
		options := strings.TrimPrefix(requested[len(CUDA):], ",")
		return newCUDAChoice(requested, "", options)
	case strings.HasPrefix(lower, "xla:") || lower == "xla":
		_, config, _ := strings.Cut(requested, ":")
		return chooseConfiguredXLA(requested, config)
	}
	return choice{}, &BackendError{Requested: requested, Missing: "unknown backend name",
		Fix: "use one of \"auto\", \"cpu\", \"go\", \"cuda\" (or a GoMLX configuration such as \"xla:cpu\")"}
}

// chooseAuto is choose("auto"): $GOMLX_BACKEND when it names a backend, else CUDA when there is a
// GPU and its plugin, else the CPU's.
func chooseAuto() (choice, error) {
	if env := strings.TrimSpace(os.Getenv(compute.ConfigEnvVar)); env != "" && strings.ToLower(env) != Auto {
		c, err := choose(env)
		if err != nil {
			return choice{}, fmt.Errorf("backends: $%s=%q: %w", compute.ConfigEnvVar, env, err)
		}
		c.env = env
		return c, nil
	}
	if plugins.HasNvidiaGPU() {
		if plugin, err := plugins.FindCUDA(); err != nil || plugin != "" {
			return choose(CUDA)
		}
	}
	return choose(CPU)
}

// chooseConfiguredXLA is choose of a raw GoMLX XLA configuration ("xla:" config: a plugin name
// or path, and its options after a comma), requested as given.
func chooseConfiguredXLA(requested, config string) (choice, error) {
	plugin, options, _ := strings.Cut(config, ",")
	if pjrt.IsCUDAName(plugin) {
		if !filepath.IsAbs(plugin) {
			plugin = "" // "xla:cuda": search as "cuda" does
		}
		return newCUDAChoice(requested, plugin, options)
	}
	if plugin == "" {
		plugin = "cpu"
	}
	if plugin == "cpu" {
		loc, err := findXLACPUPluginFor(requested)
		if err != nil {
			return choice{}, err
		}
		if loc.Path == "" {
			return choice{}, &BackendError{Requested: requested, Missing: "the XLA CPU PJRT plugin is not installed",
				Fix: plugins.XLACPUInstallHint}
		}
		return xlaCPUChoice(choice{requested: requested, xla: withOptions(loc.Path, options)})
	}
	found := plugins.GoXLAName(plugin)
	if found == "" && !filepath.IsAbs(plugin) {
		return choice{}, &BackendError{Requested: requested,
			Missing: fmt.Sprintf("the XLA PJRT plugin %q is not installed (found: %s)", plugin, plugins.DescribeGoXLA()),
			Fix: "install it with `go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest`, set " +
				"PJRT_PLUGIN_LIBRARY_PATH to its folder, or use the go backend"}
	}
	if found == "" {
		found = plugin
	}
	if options != "" {
		found += "," + options
	}
	if strings.Contains(strings.ToLower(filepath.Base(plugin)), "cpu") {
		return xlaCPUChoice(choice{requested: requested, xla: found})
	}
	return choice{requested: requested, xla: found}, nil
}

// NewWithDevices is New(name) for data-parallel training over devices devices
// (DevicesAll: every device the backend has; 0 or 1: one device, the same as New).
//
// On XLA's CPU plugin ("cpu", "xla:cpu", an "xla:/path/pjrt_c_api_cpu_plugin.so", or "auto"
// resolving to one of them) the client is created with the plugin option cpu_device_count set
// to devices, so the backend has exactly that many CPU devices (virtual: they share the cores;
// at most MaxCPUDevices); DevicesAll keeps the plugin's default (4). On CUDA the GPUs are what
// they are: asking for more than there are is a *DeviceCountError that says how many exist.
// The pure-Go backend has one device: devices > 1 is a *DevicesUnsupportedError, and so is
// "cpu" when the XLA CPU plugin is not installed (it falls back to the pure-Go backend).
func NewWithDevices(name string, devices int) (compute.Backend, error) {
	if devices < DevicesAll {
		return nil, &DevicesValueError{Value: fmt.Sprint(devices), Fix: "use a positive number of devices or DevicesAll"}
	}
	b, err := New(name)
	if err != nil || devices == 0 || devices == 1 {
		return b, err
	}
	if b, err = withCPUDevices(name, b, devices); err != nil {
		return nil, err
	}
	if _, err := ResolveDevices(b, devices); err != nil {
		b.Finalize()
		return nil, err
	}
	return b, nil
}

// withCPUDevices returns b, or, when b is XLA's CPU plugin with another number of devices than
// the devices asked for (not DevicesAll), b created again with that many (b is finalized).
func withCPUDevices(name string, b compute.Backend, devices int) (compute.Backend, error) {
	xb, isXLA := b.(*xla.Backend)
	if !isXLA || !xb.IsCPU() || devices == DevicesAll || devices == b.NumDevices() {
		return b, nil
	}
	plugin := xb.PluginName()
	b.Finalize()
	if devices > MaxCPUDevices {
		return nil, &DeviceCountError{Backend: xlaCPUName, Requested: devices, Available: MaxCPUDevices,
			Fix: fmt.Sprintf("cifarlib creates at most %d XLA CPU devices (they share the machine's cores); ask for fewer", MaxCPUDevices)}
	}
	return newXLA(name, plugin, pjrt.NamedValuesMap{xlaCPUDeviceCountOption: int64(devices)})
}

// findXLACPUPluginFor is plugins.FindXLACPU with errors naming the requested backend.
func findXLACPUPluginFor(requested string) (plugins.Location, error) {
	loc, err := plugins.FindXLACPU("")
	return loc, envBackendError(requested, err)
}

// envBackendError turns a *plugins.EnvError (a variable naming a missing plugin file) into a
// *BackendError for the requested backend; other errors are returned unchanged.
func envBackendError(requested string, err error) error {
	var ee *plugins.EnvError
	if errors.As(err, &ee) {
		return &BackendError{Requested: requested, Missing: ee.Missing(), Err: ee.Err, Fix: ee.Fix}
	}
	return err
}

// xlaCPUChoice readies the process for XLA's CPU plugin (plugins.SetXLACPUFlags: convolutions on
// Eigen, not YNNPACK, unless $XLA_FLAGS says otherwise; see plugins.FlagYnnFusionType) and returns
// c. XLA reads $XLA_FLAGS once, when the process's first client starts: so it is set here, at the
// choice, before any client.
func xlaCPUChoice(c choice) (choice, error) {
	if _, err := plugins.SetXLACPUFlags(); err != nil {
		return choice{}, &BackendError{Requested: c.requested, Missing: "the XLA CPU plugin's flags could not be set", Err: err,
			Fix: "set XLA_FLAGS=" + strings.Join(plugins.XLACPUFlags, " ") + " yourself"}
	}
	return c, nil
}

// newCUDAChoice checks for a GPU and for the plugin, the choice of a CUDA client. plugin is an
// absolute plugin path given in the request, or "" to search (see findCUDAPlugin). It readies
// the process for the plugin: pip's CUDA layout (plugins.PrepareJaxCUDA) and the lab's CUDA
// compile cache (plugins.SetCUDACompileCache: XLA reads $XLA_FLAGS when the client starts, so
// that autotuning results and compiled kernels outlive the process). Both only set this
// process's environment, the same whether the client is created now or later (Lazy).
func newCUDAChoice(requested, plugin, options string) (choice, error) {
	if !plugins.HasNvidiaGPU() {
		return choice{}, newNoGPUError(requested, nil)
	}
	if plugin != "" {
		if fi, err := os.Stat(plugin); err != nil || !fi.Mode().IsRegular() {
			return choice{}, &BackendError{Requested: requested, Missing: "the CUDA PJRT plugin " + plugin + " does not exist",
				Fix: plugins.CUDAInstallHint}
		}
		plugins.PrepareJaxCUDA(plugin)
		_, _ = plugins.SetCUDACompileCache(plugin) // without a cache folder, compiles are not kept
		return choice{requested: requested, xla: withOptions(plugin, options)}, nil
	}
	plugin, err := plugins.FindCUDA()
	if err != nil {
		return choice{}, envBackendError(requested, err)
	}
	if plugin == "" {
		return choice{}, &BackendError{Requested: requested,
			Missing: fmt.Sprintf("the CUDA PJRT plugin is not installed (plugins found: %s; searched %s)",
				plugins.DescribeGoXLA(), plugins.GoXLASearchDescription()),
			Fix: plugins.CUDAInstallHint}
	}
	path := plugin // a go-xla name, or an absolute path from $CIFARLAB_CUDA_PLUGIN
	if !filepath.IsAbs(path) {
		path = plugins.GoXLA()[plugin]
	}
	plugins.PrepareJaxCUDA(path)
	_, _ = plugins.SetCUDACompileCache(path)
	return choice{requested: requested, xla: withOptions(plugin, options)}, nil
}

// withOptions appends XLA plugin options ("memory_fraction=0.5,...") to a plugin name or path.
func withOptions(plugin, options string) string {
	if options == "" {
		return plugin
	}
	return plugin + "," + options
}

// newXLA creates an XLA backend on config (a plugin name or path, with go-xla's options after a
// comma) with PJRT client options (nil: none), with a timeout, translating failures into
// *BackendError; a CUDA failure TranslateRuntimeError knows (driver, cuDNN, ...) is kept under it
// (errors.As finds the typed error) and its advice is the fix. New and
// NewWithDevices both create their clients here, and each compiles through the compile cache
// (CompileCache), so that no caller can forget it.
func newXLA(requested, config string, options pjrt.NamedValuesMap) (compute.Backend, error) {
	b, err, timedOut := startWithTimeout(func() (compute.Backend, error) {
		xb, err := xla.NewWithOptions(config, options)
		if err != nil {
			return nil, err
		}
		clients.Add(1)
		installProgramHook(xb)
		return xb, nil
	})
	what := "plugin " + config
	if len(options) > 0 {
		what += fmt.Sprintf(" with %v", options)
	}
	switch {
	case timedOut:
		fix := "check that no other process holds the GPU (nvidia-smi), or use the cpu backend"
		if len(options) > 0 {
			fix = "use 1 device, or the go backend"
		}
		return nil, &BackendError{Requested: requested,
			Missing: fmt.Sprintf("XLA plugin %s did not start within %s", config, createTimeout), Fix: fix}
	case err != nil:
		if pjrt.IsCUDAName(config) && isNoGPUMessage(err.Error()) {
			return nil, newNoGPUError(requested, err)
		}
		be := &BackendError{Requested: requested, Missing: "XLA could not start " + what, Err: err}
		var cuda *CUDAError
		switch translated := TranslateRuntimeError(err); {
		case errors.As(translated, &cuda):
			be.Err, be.Fix = translated, cuda.Advice
		case pjrt.IsCUDAName(config):
			be.Fix = "check the NVIDIA driver (nvidia-smi) and that the plugin's CUDA libraries match it (cifarlab doctor); " +
				plugins.CUDAInstallHint
		case len(options) > 0:
			be.Fix = "reinstall the plugin, ask for fewer devices, or use 1 device"
		default:
			be.Fix = "reinstall the plugin or use the go backend"
		}
		return nil, be
	}
	return b, nil
}

// startWithTimeout runs create in a goroutine, turning a panic into an error, and waits for it
// at most createTimeout (a plugin that hangs, e.g. on a GPU held by another process).
func startWithTimeout(create func() (compute.Backend, error)) (b compute.Backend, err error, timedOut bool) {
	type result struct {
		b   compute.Backend
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("panic: %v", p)
			}
			done <- r
		}()
		r.b, r.err = create()
	}()
	select {
	case r := <-done:
		return r.b, r.err, false
	case <-time.After(createTimeout):
		return nil, nil, true
	}
}
