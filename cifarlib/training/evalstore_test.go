package training

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An evaluation stored in the run folder is found again by the same key only: the same
// checkpoint file, records and options; another TTA level, split, number of images, batch size or
// checkpoint (the run trained further) is another key. The file is rewritten whole, keeps the
// latest evaluations, and a corrupt one is replaced.
func TestStoredEvaluations(t *testing.T) {
	cfg := timelineConfig(t)
	cfg.EvalEvery, cfg.SkipFinalEval, cfg.CheckpointEvery = EvalOff, true, 0
	_, err := Train(context.Background(), cfg)
	require.NoError(t, err)
	dir := cfg.CheckpointDir
	ck, err := LoadCheckpoint(dir, cfg.Backend)
	require.NoError(t, err)
	opts := EvalOptions{BatchSize: 32}
	key, err := ck.EvalKey(cfg.TestRecords, opts)
	require.NoError(t, err)
	require.Equal(t, EvalKey{Step: 6, Weights: key.Weights, Dataset: "cifar10", Split: "test", Examples: 70, Data: key.Data,
		Backend: "go", Precision: ck.Model.Precision, BatchSize: 32, Devices: 1}, key)
	_, found := StoredEval(dir, key)
	require.False(t, found, "nothing stored yet")

	res, err := ck.Evaluate(context.Background(), cfg.TestRecords, opts)
	require.NoError(t, err)
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	require.NoError(t, StoreEval(dir, key, res, at, 1500*time.Millisecond))
	got, found := StoredEval(dir, key)
	require.True(t, found)
	require.Equal(t, res.Confusion, got.Result.Confusion)
	require.Equal(t, res.Loss, got.Result.Loss)
	require.Equal(t, at, got.At)
	require.Equal(t, 1.5, got.Seconds)

	same, err := ck.EvalKey(cfg.TestRecords, EvalOptions{BatchSize: 32, Split: "test", Devices: 1})
	require.NoError(t, err)
	require.Equal(t, key, same, "the defaults, spelt out, are the same key")
	for name, o := range map[string]EvalOptions{
		"TTA":        {BatchSize: 32, TTA: TTAMirror},
		"split":      {BatchSize: 32, Split: "train"},
		"examples":   {BatchSize: 32, MaxExamples: 40},
		"batch size": {BatchSize: 16},
	} {
		k, err := ck.EvalKey(cfg.TestRecords, o)
		require.NoError(t, err)
		require.NotEqual(t, key, k, name)
		_, found := StoredEval(dir, k)
		require.False(t, found, name)
	}
	k, err := ck.EvalKey(cfg.TrainRecords, opts)
	require.NoError(t, err)
	require.NotEqual(t, key.Data, k.Data, "other images")

	// The run trained further: a new checkpoint, other weights.
	more := cfg
	more.Steps = 8
	_, err = Train(context.Background(), more)
	require.NoError(t, err)
	ck2, err := LoadCheckpoint(dir, cfg.Backend)
	require.NoError(t, err)
	k2, err := ck2.EvalKey(cfg.TestRecords, opts)
	require.NoError(t, err)
	require.NotEqual(t, key.Weights, k2.Weights)
	_, found = StoredEval(dir, k2)
	require.False(t, found)

	// The latest maxStoredEvaluations are kept.
	for i := range maxStoredEvaluations + 3 {
		k := key
		k.BatchSize = 100 + i
		require.NoError(t, StoreEval(dir, k, res, at, time.Second))
	}
	all, err := readEvaluations(dir)
	require.NoError(t, err)
	require.Len(t, all, maxStoredEvaluations)
	require.Equal(t, 100+maxStoredEvaluations+2, all[len(all)-1].Key.BatchSize)

	// A corrupt file is no stored evaluation, and is replaced by the next one stored.
	require.NoError(t, os.WriteFile(filepath.Join(dir, EvaluationsFile), []byte("{not json"), 0o644))
	_, found = StoredEval(dir, key)
	require.False(t, found)
	require.NoError(t, StoreEval(dir, key, res, at, time.Second))
	_, found = StoredEval(dir, key)
	require.True(t, found)

	// A run folder removed (the run trained again from scratch) is not made again.
	gone := filepath.Join(t.TempDir(), "gone")
	require.Error(t, StoreEval(gone, key, res, at, time.Second))
	require.NoDirExists(t, gone)
}
