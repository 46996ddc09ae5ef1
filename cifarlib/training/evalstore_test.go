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
	cfg.Eval.Every, cfg.Eval.SkipFinal, cfg.Checkpoint.Every = EvalOff, true, 0
	_, err := Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)
	dir := cfg.Checkpoint.Dir
	ck, err := LoadCheckpoint(dir, cfg.Backend)
	require.NoError(t, err)
	opts := EvalOptions{BatchSize: 32}
	key, err := ck.EvalKey(cfg.Test, opts)
	require.NoError(t, err)
	require.Equal(t, EvalKey{Step: 6, Weights: key.Weights, Dataset: "cifar10", Split: "test", Examples: 70, Data: key.Data,
		Backend: "go", Precision: ck.Model.Precision, BatchSize: 32, Devices: 1}, key)
	_, found := StoredEval(dir, key)
	require.False(t, found, "nothing stored yet")

	res, err := ck.Evaluate(context.Background(), cfg.Test, opts)
	require.NoError(t, err)
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	require.NoError(t, StoreEval(dir, key, res, at, 1500*time.Millisecond))
	got, found := StoredEval(dir, key)
	require.True(t, found)
	require.Equal(t, res.Confusion, got.Result.Confusion)
	require.Equal(t, res.Loss, got.Result.Loss)
	require.Equal(t, at, got.At)
	require.Equal(t, 1.5, got.Seconds)

	checkOtherEvalKeys(t, ck, cfg, key)

	// The run trained further: a new checkpoint, other weights.
	more := cfg
	more.Run.Steps = 8
	_, err = Train(context.Background(), more.Settings, more.Env)
	require.NoError(t, err)
	ck2, err := LoadCheckpoint(dir, cfg.Backend)
	require.NoError(t, err)
	k2, err := ck2.EvalKey(cfg.Test, opts)
	require.NoError(t, err)
	require.NotEqual(t, key.Weights, k2.Weights)
	_, found = StoredEval(dir, k2)
	require.False(t, found)

	checkEvaluationsFile(t, dir, key, res, at)
}

// checkOtherEvalKeys checks that the defaults of EvalOptions spelt out are key again, and that
// another TTA level, split, number of images, batch size or records than key's is another key,
// with nothing stored: ck evaluated on cfg's test split.
func checkOtherEvalKeys(t *testing.T, ck *LoadedCheckpoint, cfg testRun, key EvalKey) {
	dir, opts := cfg.Checkpoint.Dir, EvalOptions{BatchSize: 32}
	same, err := ck.EvalKey(cfg.Test, EvalOptions{BatchSize: 32, Split: "test", Devices: 1})
	require.NoError(t, err)
	require.Equal(t, key, same, "the defaults, spelt out, are the same key")
	for name, o := range map[string]EvalOptions{
		"TTA":        {BatchSize: 32, TTA: TTAMirror},
		"split":      {BatchSize: 32, Split: "train"},
		"examples":   {BatchSize: 32, MaxExamples: 40},
		"batch size": {BatchSize: 16},
	} {
		k, err := ck.EvalKey(cfg.Test, o)
		require.NoError(t, err)
		require.NotEqual(t, key, k, name)
		_, found := StoredEval(dir, k)
		require.False(t, found, name)
	}
	k, err := ck.EvalKey(cfg.Train, opts)
	require.NoError(t, err)
	require.NotEqual(t, key.Data, k.Data, "other images")
}

// checkEvaluationsFile checks the file of stored evaluations in the run folder dir: it keeps the
// latest maxStoredEvaluations, a corrupt one is replaced, and a folder removed is not made again
// (res stored at at under key and keys like it).
func checkEvaluationsFile(t *testing.T, dir string, key EvalKey, res *EvalResult, at time.Time) {
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
	_, found := StoredEval(dir, key)
	require.False(t, found)
	require.NoError(t, StoreEval(dir, key, res, at, time.Second))
	_, found = StoredEval(dir, key)
	require.True(t, found)

	// A run folder removed (the run trained again from scratch) is not made again.
	gone := filepath.Join(t.TempDir(), "gone")
	require.Error(t, StoreEval(gone, key, res, at, time.Second))
	require.NoDirExists(t, gone)
}
