package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/cifarlab/cifarlab/internal/kernel"
	"github.com/stretchr/testify/require"
)

// The doctor lists the devices of each backend: one for the pure-Go backend, the XLA CPU
// plugin's default 4 (when installed), none without a GPU.
func TestDoctorListsDevices(t *testing.T) {
	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	checks := probeDevices(context.Background())
	require.Len(t, checks, 3)
	require.Equal(t, kernel.Check{Name: "devices go", Status: kernel.StatusOK,
		Detail: "1 device (the pure-Go backend runs on one device: --devices 1)"}, checks[0])
	cpu := checks[1]
	require.Equal(t, "devices cpu", cpu.Name)
	if b, err := backends.New("xla:cpu"); err == nil {
		b.Finalize()
		require.Equal(t, kernel.StatusOK, cpu.Status)
		require.True(t, strings.HasPrefix(cpu.Detail, "4 devices: 0 "), cpu.Detail)
		require.Contains(t, cpu.Detail, ", 3 ")
	} else {
		require.Equal(t, kernel.StatusAbsent, cpu.Status)
	}
	require.Equal(t, "devices cuda", checks[2].Name)
	if checks[2].Status != kernel.StatusOK {
		require.NotEmpty(t, checks[2].Fix, "no GPU: says what multi-GPU training needs")
	}
}
