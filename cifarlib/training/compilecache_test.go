package training

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/gomlx/compute"
	"github.com/stretchr/testify/require"
)

// cacheChildEnv runs TestCompileCacheTrainingChild's body in a child process (the compile cache's
// settings are read once per process).
const cacheChildEnv = "CIFARLAB_TEST_TRAIN_CACHE_CHILD"

// TestCompileCacheTrainingChild is the child of TestCompileCacheTrainingSameResults (it does nothing in a
// normal run): a cnn trained 4 steps with augmentation and a cosine schedule, then evaluated; it
// prints a digest of every variable, the losses and the evaluation, and the run's timeline.
func TestCompileCacheTrainingChild(t *testing.T) {
	if os.Getenv(cacheChildEnv) == "" {
		t.Skip("the child of TestCompileCacheTrainingSameResults")
	}
	spec := data.CIFAR10()
	train, test := labtest.TrainTestRecords(t, spec, 96, 40, 5)
	cfg := Defaults()
	cfg.Data.Spec, cfg.Model.Arch, cfg.Run.Steps, cfg.Data.BatchSize, cfg.Run.Seed = spec, cifarlib.ArchCNN, 4, 8, 7
	cfg.Data.Augment, cfg.Optimizer, cfg.Schedule = true, optimizers.AdamW{LearningRate: 0.003, WeightDecay: 0.004}, optimizers.Schedule{Name: optimizers.ScheduleCosine, WarmupSteps: 1}
	cfg.Eval.Every, cfg.Eval.BatchSize = 2, 16
	tr, err := NewTrainer(cfg, Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff})
	require.NoError(t, err)
	res, err := tr.Run(context.Background())
	require.NoError(t, err)
	vars := trainVars(t, tr.Store())
	h := sha256.New()
	for _, path := range slices.Sorted(func(yield func(string) bool) {
		for p := range vars {
			if !yield(p) {
				return
			}
		}
	}) {
		fmt.Fprintf(h, "%s %x\n", path, vars[path])
	}
	for _, p := range res.History.Points {
		fmt.Fprintf(h, "%d %v %v %v %+v\n", p.Step, p.Loss, p.MovingLoss, p.Accuracy, p.Eval)
	}
	fmt.Fprintf(h, "%v %v\n", res.Eval.Loss, res.Eval.Confusion)
	fmt.Printf("\nRESULT %x\nTIMELINE %s\nCOMPILES %d LOADS %d\n", h.Sum(nil), res.Timeline, res.Timeline.Compiles(""), res.Timeline.Loads(""))
}

// Training gives the same variables, losses and evaluation, bit for bit, with the compile cache
// off, with a cold cache (it compiles and stores every program) and with a warm one (it loads
// every program: nothing compiles, and its timeline says so), each in a process of its own on
// the XLA CPU plugin.
func TestCompileCacheTrainingSameResults(t *testing.T) {
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	dir := filepath.Join(t.TempDir(), "cache")
	run := func(cache string) (result, timeline string, compiles, loads int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompileCacheTrainingChild$", "-test.count=1", "-test.v")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "CIFARLAB_COMPILE_CACHE") && !strings.HasPrefix(kv, compute.ConfigEnvVar+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, cacheChildEnv+"=1", compute.ConfigEnvVar+"=xla:"+cpu, compilecache.DirEnv+"="+cache)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		m := regexp.MustCompile(`\nRESULT ([0-9a-f]+)\nTIMELINE ([^\n]*)\nCOMPILES (\d+) LOADS (\d+)\n`).FindStringSubmatch(string(out))
		require.NotNil(t, m, "%s", out)
		fmt.Sscan(m[3], &compiles)
		fmt.Sscan(m[4], &loads)
		return m[1], m[2], compiles, loads
	}
	off, offTimeline, offCompiles, _ := run("off")
	cold, coldTimeline, coldCompiles, _ := run(dir)
	warm, warmTimeline, warmCompiles, warmLoads := run(dir)
	require.Equal(t, off, cold, "cache off and cold: %s\n%s", offTimeline, coldTimeline)
	require.Equal(t, off, warm, "cache off and warm: %s\n%s", offTimeline, warmTimeline)
	require.Equal(t, 3, offCompiles, offTimeline)
	require.Equal(t, 3, coldCompiles, coldTimeline)
	require.Zero(t, warmCompiles, "a warm cache compiles nothing: %s", warmTimeline)
	require.Equal(t, 3, warmLoads, warmTimeline)
	require.Contains(t, warmTimeline, "loaded "+runs.ProgramTrainStep+" from the cache")
	require.Regexp(t, `build train step \d+\.\d+ s · loaded train step from the cache \d+\.\d+ s`, warmTimeline)
}
