package runs

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// Source says where a run's numbers come from, as the caption of its charts says it: the data
// it was trained on (synthetic, or real and verified or not) and the machine (the backend,
// the devices and the precision). training.Result.Source and Info.Source give a run's.
//
// The machine is the backend as backends.Name describes it (with the GPU's model on CUDA), not
// the host: the host does not change the numbers, and a notebook's committed outputs stay the
// same whichever machine regenerated them (the run's run.json keeps the host: Record.Job).
type Source struct {
	// Data is what the run was trained on; nil when not recorded.
	Data *data.Provenance
	// Backend describes the backend (backends.Name, training.Result.Backend); "" when not
	// recorded.
	Backend string
	// Devices is the number of devices each batch was sharded across (0: not recorded).
	Devices int
	// Precision is the run's precision; "" and f32 are not said.
	Precision cifarlib.Precision
}

// DataCaption says which data, e.g. "SYNTHETIC cifar10 (generated images, not real accuracy)"
// or "real cifar10, verified" (data.Caption); "not recorded" without Data.
func (s Source) DataCaption() string {
	if s.Data == nil || s.Data.Dataset == "" {
		return "not recorded"
	}
	return s.Data.Caption()
}

// MachineCaption says which machine, e.g. "xla:cpu (XLA CPU plugin), 4 devices" or
// "xla:cuda (XLA CUDA: NVIDIA H200), 1 device, bf16-mixed"; "not recorded" without Backend.
func (s Source) MachineCaption() string {
	if s.Backend == "" {
		return "not recorded"
	}
	parts := []string{s.Backend}
	if s.Devices > 0 {
		parts = append(parts, fmt.Sprintf("%d device%s", s.Devices, map[bool]string{true: "", false: "s"}[s.Devices == 1]))
	}
	if s.Precision != "" && s.Precision != cifarlib.PrecisionF32 {
		parts = append(parts, string(s.Precision))
	}
	return strings.Join(parts, ", ")
}

// Synthetic reports whether the run was trained on synthetic data.
func (s Source) Synthetic() bool { return s.Data != nil && s.Data.Kind == data.KindSynthetic }

// String is the caption in one line: "data: ... · machine: ...".
func (s Source) String() string {
	return "data: " + s.DataCaption() + " · machine: " + s.MachineCaption()
}
