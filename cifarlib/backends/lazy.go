package backends

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
)

// clients counts the XLA PJRT clients this process created (newXLA).
var clients atomic.Int64

// Clients returns the number of XLA PJRT clients (XLA backends: CPU or CUDA) this process has
// created so far. A notebook cell whose work runs in the kernel's lab process creates none
// (Lazy); a cell that computes on lab.Backend creates one.
func Clients() int { return int(clients.Load()) }

// Lazy returns the backend New(name) returns, created when it is first used: the checks that
// need no client are made now and fail now (an unknown name, a missing plugin, no GPU), and the
// process is readied for the plugin, but an XLA backend's PJRT client (a CUDA context and its
// device memory on a GPU) is created by the first call that needs it: a computation (Builder),
// a buffer, its devices. Before that, what it will be is known without creating it: Name,
// IsGoBackend, Plugin, its String and Capabilities (go-xla's, the table every XLA backend starts
// from). The pure-Go backend, which holds no client, is created at once. Everything computes on
// it as on New's backend, with the same results: its buffers and programs are the created
// backend's, which it hands out as its own (GoMLX's tensors never mix backends).
//
// A notebook's Lab (nb.Open) holds one, so that a cell whose work runs in the lab process, or
// which never computes, creates no client in its own process. A client that cannot be created
// when first used panics with New's *BackendError, as GoMLX's graph functions report errors.
func Lazy(name string) (compute.Backend, error) {
	c, err := choose(name)
	if err != nil {
		return nil, err
	}
	if c.xla == "" {
		return c.create()
	}
	return &lazyBackend{choice: c}, nil
}

// lazyBackend is an XLA backend of Lazy, created on first use.
type lazyBackend struct {
	choice    choice
	once      sync.Once
	b         compute.Backend
	err       error
	created   atomic.Bool
	finalized atomic.Bool
}

// get returns the backend, creating it on the first call.
func (l *lazyBackend) get() (compute.Backend, error) {
	l.once.Do(func() {
		l.b, l.err = l.choice.create()
		l.created.Store(l.err == nil)
	})
	return l.b, l.err
}

// must returns the backend, creating it; it panics with the error of its creation.
func (l *lazyBackend) must() compute.Backend {
	b, err := l.get()
	if err != nil {
		panic(err)
	}
	return b
}

// plugin is the choice's plugin name or path, without options.
func (l *lazyBackend) plugin() string {
	plugin, _, _ := strings.Cut(l.choice.xla, ",")
	return plugin
}

// Name implements compute.Backend: "xla" before it is created.
func (l *lazyBackend) Name() string {
	if l.created.Load() {
		return l.b.Name()
	}
	return xla.BackendName
}

// String implements compute.Backend.
func (l *lazyBackend) String() string { return l.Name() }

// Description implements compute.Backend (it creates the backend).
func (l *lazyBackend) Description() string { return l.must().Description() }

// NumDevices implements compute.Backend (it creates the backend).
func (l *lazyBackend) NumDevices() int { return l.must().NumDevices() }

// DeviceDescription implements compute.Backend (it creates the backend).
func (l *lazyBackend) DeviceDescription(deviceNum compute.DeviceNum) string {
	return l.must().DeviceDescription(deviceNum)
}

// Capabilities implements compute.Backend: before it is created, go-xla's table, from which
// every XLA backend's capabilities are copied.
func (l *lazyBackend) Capabilities() compute.Capabilities {
	if l.created.Load() {
		return l.b.Capabilities()
	}
	return xla.Capabilities.Clone()
}

// Builder implements compute.Backend (it creates the backend): its programs take and give the
// lazy backend's buffers.
func (l *lazyBackend) Builder(name string) compute.Builder {
	return lazyBuilder{Builder: l.must().Builder(name), lazy: l}
}

// BufferFromFlatData implements compute.DataInterface (it creates the backend).
func (l *lazyBackend) BufferFromFlatData(deviceNum compute.DeviceNum, flat any, shape shapes.Shape) (compute.Buffer, error) {
	b, err := l.get()
	if err != nil {
		return nil, err
	}
	return l.wrap(b.BufferFromFlatData(deviceNum, flat, shape))
}

// HasSharedBuffers implements compute.DataInterface (it creates the backend).
func (l *lazyBackend) HasSharedBuffers() bool { return l.must().HasSharedBuffers() }

// NewSharedBuffer implements compute.DataInterface (it creates the backend).
func (l *lazyBackend) NewSharedBuffer(deviceNum compute.DeviceNum, shape shapes.Shape) (compute.Buffer, any, error) {
	b, err := l.get()
	if err != nil {
		return nil, nil, err
	}
	buf, flat, err := b.NewSharedBuffer(deviceNum, shape)
	if err != nil {
		return nil, nil, err
	}
	return lazyBuffer{Buffer: buf, lazy: l}, flat, nil
}

// The buffers and programs of a lazy backend are the created backend's, wrapped so that a
// buffer names the lazy backend as its own (compute.Buffer.Backend): GoMLX's tensors keep the
// backend of their buffers and refuse to mix backends, so the cell's tensors, variables and
// programs all stay on the one backend it was given (lab.Backend), whether or not it existed yet
// when they were made. The programs give the created backend its own buffers, and wrap theirs.

// wrap wraps a buffer of the created backend (nil, and errors, as they are).
func (l *lazyBackend) wrap(buf compute.Buffer, err error) (compute.Buffer, error) {
	if err != nil || buf == nil {
		return buf, err
	}
	return lazyBuffer{Buffer: buf, lazy: l}, nil
}

// lazyBuffer is a buffer of a lazy backend.
type lazyBuffer struct {
	compute.Buffer
	lazy *lazyBackend
}

// Backend implements compute.Buffer: the lazy backend.
func (b lazyBuffer) Backend() compute.Backend { return b.lazy }

// CopyToDevice implements compute.Buffer.
func (b lazyBuffer) CopyToDevice(deviceNum compute.DeviceNum) (compute.Buffer, error) {
	return b.lazy.wrap(b.Buffer.CopyToDevice(deviceNum))
}

// lazyBuilder is a builder of a lazy backend: what it compiles runs on its buffers.
type lazyBuilder struct {
	compute.Builder
	lazy *lazyBackend
}

// Compile implements compute.Builder.
func (b lazyBuilder) Compile() (compute.Executable, error) {
	exec, err := b.Builder.Compile()
	if err != nil {
		return nil, err
	}
	return lazyExecutable{Executable: exec, lazy: b.lazy}, nil
}

// lazyExecutable is a program of a lazy backend.
type lazyExecutable struct {
	compute.Executable
	lazy *lazyBackend
}

// Execute implements compute.Executable: the created backend's program on its own buffers.
func (e lazyExecutable) Execute(inputs []compute.Buffer, donate []bool, defaultDevice compute.DeviceNum) ([]compute.Buffer, error) {
	own := make([]compute.Buffer, len(inputs))
	for i, in := range inputs {
		if lb, ok := in.(lazyBuffer); ok {
			in = lb.Buffer
		}
		own[i] = in
	}
	outs, err := e.Executable.Execute(own, donate, defaultDevice)
	if err != nil {
		return nil, err
	}
	for i, out := range outs {
		if out != nil {
			outs[i] = lazyBuffer{Buffer: out, lazy: e.lazy}
		}
	}
	return outs, nil
}

// Finalize implements compute.Backend: it finalizes the backend if it was created.
func (l *lazyBackend) Finalize() {
	l.finalized.Store(true)
	if l.created.Load() {
		l.b.Finalize()
	}
}

// IsFinalized implements compute.Backend.
func (l *lazyBackend) IsFinalized() bool {
	if l.created.Load() {
		return l.b.IsFinalized()
	}
	return l.finalized.Load()
}

// resolved returns b, or the backend a Lazy b stands for, created now if create is true (nil
// when it is not created and create is false, or its creation failed).
func resolved(b compute.Backend, create bool) compute.Backend {
	l, ok := b.(*lazyBackend)
	if !ok {
		return b
	}
	if !create && !l.created.Load() {
		return nil
	}
	r, _ := l.get()
	return r
}

// xlaOf returns the XLA backend b is, or stands for (a Lazy one is created).
func xlaOf(b compute.Backend) (*xla.Backend, bool) {
	xb, ok := resolved(b, true).(*xla.Backend)
	return xb, ok
}

// lazyKind describes a Lazy backend not created yet: its Name, and whether its plugin is CUDA's
// or a CPU one, as go-xla tells them by name.
func lazyKind(b compute.Backend) (name string, plugin string, ok bool) {
	l, isLazy := b.(*lazyBackend)
	if !isLazy || l.created.Load() {
		return "", "", false
	}
	plugin = l.plugin()
	switch {
	case pjrt.IsCUDAName(plugin):
		return "xla:cuda (XLA CUDA)", plugin, true
	case strings.Contains(strings.ToUpper(plugin), "CPU"):
		return xlaCPUName, plugin, true
	}
	return "xla (" + plugin + ")", plugin, true
}
