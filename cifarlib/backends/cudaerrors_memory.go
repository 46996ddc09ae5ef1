package backends

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// MemoryNeeds is what XLA's out-of-memory text states about a program's memory: the request
// that failed and, when XLA prints its "BufferAssignment OOM Debugging" report, the whole
// program's allocation and its largest (peak) buffers. Zero fields were not stated.
type MemoryNeeds struct {
	// Request is the allocation that failed, in bytes.
	Request int64
	// Total is the program's whole allocation ("total allocation"), in bytes.
	Total int64
	// Parameters, Outputs and Temporaries are its parts ("parameter allocation",
	// "maybe_live_out allocation", "preallocated temp allocation"), in bytes.
	Parameters, Outputs, Temporaries int64
	// PeakBuffers are the sizes of the largest buffers XLA lists ("Peak buffers:"), largest first.
	PeakBuffers []int64
	// Host is true when the memory that ran out is the host's pinned memory for transfers
	// ("Out of host memory", capped by XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB), not the GPU's.
	Host bool
}

var (
	reTryingToAllocate = regexp.MustCompile(`(?i:out of (?:host )?memory while trying to allocate) ([0-9]+ bytes|[0-9.]+ ?(?:[KMGT]i)?B)`)
	reRequestFor       = regexp.MustCompile(`(?i)failed to allocate request for [0-9.]+ ?[KMGT]?i?B \(([0-9]+)B\)`)
	reStat             = regexp.MustCompile(`(?m)^\s*(parameter|maybe_live_out|preallocated temp|total) allocation:\s*([0-9.]+ ?[KMGT]?i?B)\s*$`)
	reBufferSize       = regexp.MustCompile(`(?m)^\s*Size: ([0-9.]+ ?[KMGT]?i?B)\s*$`)
)

// ParseMemoryNeeds reads what an XLA out-of-memory text states (see MemoryNeeds); ok is false
// when it states no size at all.
func ParseMemoryNeeds(text string) (n MemoryNeeds, ok bool) {
	n.Host = strings.Contains(strings.ToLower(text), "out of host memory while trying to allocate")
	if m := reTryingToAllocate.FindStringSubmatch(text); m != nil {
		n.Request = parseBytes(strings.TrimSuffix(m[1], " bytes"))
	}
	if m := reRequestFor.FindStringSubmatch(text); m != nil && n.Request == 0 {
		n.Request, _ = strconv.ParseInt(m[1], 10, 64)
	}
	for _, m := range reStat.FindAllStringSubmatch(text, -1) {
		v := parseBytes(m[2])
		switch m[1] {
		case "parameter":
			n.Parameters = v
		case "maybe_live_out":
			n.Outputs = v
		case "preallocated temp":
			n.Temporaries = v
		case "total":
			n.Total = v
		}
	}
	if i := strings.Index(text, "Peak buffers:"); i >= 0 {
		for _, m := range reBufferSize.FindAllStringSubmatch(text[i:], 5) {
			n.PeakBuffers = append(n.PeakBuffers, parseBytes(m[1]))
		}
	}
	return n, n.Request > 0 || n.Total > 0
}

// parseBytes reads "17179869184", "8.00GiB", "24.6KiB", "4B"; 0 when it is none of these.
func parseBytes(s string) int64 {
	s = strings.TrimSpace(s)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0
	}
	return int64(math.Round(v * mult))
}

// formatBytes writes a byte count as XLA does (GiB, MiB, KiB with two decimals, or B).
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// describe says what the program needs, as XLA states it.
func (n MemoryNeeds) describe() string {
	var parts []string
	if n.Total > 0 {
		s := "the program needs " + formatBytes(n.Total) + " on the device (XLA's buffer assignment: " +
			formatBytes(n.Temporaries) + " temporaries, " + formatBytes(n.Parameters) + " parameters, " +
			formatBytes(n.Outputs) + " outputs"
		if len(n.PeakBuffers) > 0 {
			s += "; largest buffer " + formatBytes(n.PeakBuffers[0])
		}
		parts = append(parts, s+")")
	}
	if n.Request > 0 {
		parts = append(parts, "the failed allocation asked for "+formatBytes(n.Request))
	}
	return strings.Join(parts, "; ")
}

// FitBatch estimates the largest power-of-two batch size that fits in deviceBytes when batch
// did not: the temporaries (activations and their gradients) grow with the batch, the
// parameters and outputs do not. Without XLA's buffer assignment it scales the failed request
// instead, an upper bound. 0 means no estimate (a size unknown, or not even batch 1 fits).
func (n MemoryNeeds) FitBatch(batch int, deviceBytes int64) int {
	if batch < 1 || deviceBytes <= 0 {
		return 0
	}
	var perExample float64
	free := float64(deviceBytes)
	switch {
	case n.Total > 0 && n.Temporaries > 0:
		free -= float64(n.Total - n.Temporaries)
		perExample = float64(n.Temporaries) / float64(batch)
	case n.Request > 0:
		perExample = float64(n.Request) / float64(batch)
	default:
		return 0
	}
	fit := int(free / perExample)
	if fit >= batch {
		fit = batch / 2 // XLA's numbers said it fits, yet it failed: other memory is taken.
	}
	if fit < 1 {
		return 0
	}
	p := 1
	for p*2 <= fit {
		p *= 2
	}
	return p
}

// gpuMemoryBytes is the memory of the smallest GPU nvidia-smi lists (0 when unknown); a
// variable so that tests can set it.
var gpuMemoryBytes = func() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := plugins.GPUMemory(ctx)
	if err != nil {
		return 0
	}
	return b
}
