package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/internal/plugins"

	"github.com/cifarlab/cifarlab/internal/kernel"
	"github.com/gomlx/compute"
)

// probeDevices lists the devices of each backend, which is what "cifarlab train --devices N"
// can shard a batch across: the pure-Go backend's one device, the XLA CPU plugin's (virtual)
// CPU devices, and the GPUs of XLA CUDA.
func probeDevices(ctx context.Context) []kernel.Check {
	checks := []kernel.Check{{Name: "devices go", Status: kernel.StatusOK,
		Detail: "1 device (the pure-Go backend runs on one device: --devices 1)"}}

	cpu := kernel.Check{Name: "devices cpu"}
	if b, err := backends.New("xla:cpu"); err != nil {
		cpu.Status, cpu.Detail = kernel.StatusAbsent, "no XLA CPU plugin, so one device (the pure-Go backend)"
		cpu.Fix = "optional: " + plugins.XLACPUInstallHint
	} else {
		cpu.Status = kernel.StatusOK
		cpu.Detail = describeDevices(b) + fmt.Sprintf("; --backend cpu --devices N creates N CPU devices (at most %d), "+
			"which share the machine's cores", backends.MaxCPUDevices)
		b.Finalize()
	}

	cuda := kernel.Check{Name: "devices cuda"}
	b, err := backends.New(backends.CUDA)
	var noGPU *backends.NoGPUError
	switch {
	case err == nil:
		cuda.Status, cuda.Detail = kernel.StatusOK, describeDevices(b)+"; --backend cuda --devices all shards each batch across them"
		b.Finalize()
	case errors.As(err, &noGPU):
		cuda.Status, cuda.Detail = kernel.StatusAbsent, "no NVIDIA GPU"
		cuda.Fix = "optional: multi-GPU training needs NVIDIA GPUs and the CUDA PJRT plugin"
	default:
		cuda.Status, cuda.Detail, cuda.Fix = kernel.StatusWarn, err.Error(), "see the \"backend cuda\" check"
	}
	return append(checks, cpu, cuda)
}

// describeDevices says, e.g., "4 devices: 0 TFRT_CPU_0, 1 TFRT_CPU_1, 2 TFRT_CPU_2, 3 TFRT_CPU_3".
func describeDevices(b compute.Backend) string {
	devices := backends.ListDevices(b)
	names := make([]string, len(devices))
	for i, d := range devices {
		names[i] = fmt.Sprintf("%d %s", d.Num, d.Description)
	}
	word := "devices"
	if len(devices) == 1 {
		word = "device"
	}
	return fmt.Sprintf("%d %s: %s", len(devices), word, strings.Join(names, ", "))
}
