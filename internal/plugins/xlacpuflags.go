package plugins

import (
	"fmt"
	"os"
	"strings"
)

// FlagYnnFusionType is XLA CPU's list of the op kinds it hands to YNNPACK (XNNPACK's successor
// inside XLA) instead of its own emitters and Eigen: LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,
// ..._INDIVIDUAL_CONVOLUTION, ..._REDUCE, ..._ELTWISE, comma-separated. The XLA of PyPI's
// lammps-jax-pjrt-cpu 0.11.2 (and jaxlib 0.11.2) gives YNNPACK every convolution, dot and
// reduction by default. Its convolutions' kernel gradients (a convolution whose window is the
// whole feature map, the batch contracted as the feature axis) run 5-10x slower per FLOP there
// than the forward pass, and were 69% of airbench94's training step; Eigen's convolutions, XLA's
// other path, take about the forward pass's time for each of the three (research/airbench94-parity/RESULTS.md,
// "Where a step's time goes").
const FlagYnnFusionType = "--xla_cpu_experimental_ynn_fusion_type"

// XLACPUFlags are the XLA flags the lab sets for the XLA CPU plugin (SetXLACPUFlags): YNNPACK
// for matrix products only, convolutions and reductions back to Eigen and XLA's own loops.
var XLACPUFlags = []string{FlagYnnFusionType + "=LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"}

// SetXLACPUFlags appends each of XLACPUFlags to $XLA_FLAGS unless $XLA_FLAGS sets that flag
// already (the user's value wins), and returns the flags it added. XLA reads $XLA_FLAGS once per
// process, when its first client starts: it must run before then, as backends.New does before
// every XLA CPU client.
func SetXLACPUFlags() ([]string, error) {
	flags := strings.TrimSpace(os.Getenv("XLA_FLAGS"))
	var added []string
	for _, f := range XLACPUFlags {
		name, _, _ := strings.Cut(f, "=")
		if !hasXLAFlag(flags, name) {
			added = append(added, f)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	if err := os.Setenv("XLA_FLAGS", strings.TrimSpace(flags+" "+strings.Join(added, " "))); err != nil {
		return nil, fmt.Errorf("plugins: XLA CPU flags: setting $XLA_FLAGS: %w", err)
	}
	return added, nil
}
