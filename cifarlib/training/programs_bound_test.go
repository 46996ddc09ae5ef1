package training

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// Programs.MaxSets bounds the sets kept: a third configuration lets go of the one used longest
// ago, whose next run compiles again, while the one used since stays warm.
func TestProgramsMaxSets(t *testing.T) {
	cfg := timelineConfig(t)
	dir := t.TempDir()
	p := &Programs{MaxSets: 2}
	run := func(name string, batch int) *Result {
		t.Helper()
		c := cfg
		c.Checkpoint.Dir, c.Programs, c.Data.BatchSize = filepath.Join(dir, name), p, batch
		res, err := Train(context.Background(), c.Settings, c.Env)
		require.NoError(t, err)
		return res
	}
	batches := func() []int {
		var b []int
		for _, k := range p.Keys() {
			for kv := range strings.SplitSeq(k.Shapes, keySep) {
				if v, ok := strings.CutPrefix(kv, "batch="); ok {
					n, err := strconv.Atoi(v)
					require.NoError(t, err)
					b = append(b, n)
				}
			}
		}
		slices.Sort(b)
		return b
	}
	run("a", 8)
	run("b", 16)
	require.Equal(t, []int{8, 16}, batches())
	require.Zero(t, run("a2", 8).Timeline.Programs(runs.ProgramTrainStep), "kept")
	run("c", 4) // lets go of 16, used longest ago
	require.Equal(t, []int{4, 8}, batches())
	require.Zero(t, run("a3", 8).Timeline.Programs(runs.ProgramTrainStep), "still kept")
	require.Equal(t, 1, run("b2", 16).Timeline.Programs(runs.ProgramTrainStep), "let go: compiled again")
	require.Equal(t, []int{8, 16}, batches())
}
