package training

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/compute"
	"github.com/stretchr/testify/require"
)

// transferSource trains a small CIFAR-10 run of arch (3 Adam steps) into a new checkpoint
// directory and returns the directory and the loaded run.
func transferSource(t *testing.T, arch string) (string, *LoadedCheckpoint) {
	t.Helper()
	train, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 48, 10, 11)
	dir := filepath.Join(t.TempDir(), "cifar10-"+arch)
	s := with(t, Defaults(), map[string]string{"model": arch, "steps": "3", "batch": "8", "seed": "3", "no-eval": "true", "checkpoint": dir})
	_, err := Train(context.Background(), s, Env{Train: train, Backend: labtest.Backend(t), Progress: ProgressOff})
	require.NoError(t, err)
	src, err := LoadCheckpoint(dir, labtest.Backend(t))
	require.NoError(t, err)
	return dir, src
}

// transferConfig is a CIFAR-100 (fine) transfer of the run in from, of its architecture.
func transferConfig(t *testing.T, from string, steps int) (Settings, Env) {
	train, test := labtest.TrainTestRecords(t, data.CIFAR100(data.LabelsFine), 48, 12, 12)
	s := with(t, Defaults(), map[string]string{"dataset": "cifar100", "from": from, "steps": fmt.Sprint(steps), "batch": "8", "seed": "5",
		"no-eval": "true"})
	if from != "" {
		s.Model.Arch = ArchOfSource
	}
	return s, Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}
}

// sourceBackbone is the backbone of the source run, variable by variable, as bytes: what a
// transferred run must hold before it trains (and keep when frozen).
func sourceBackbone(t *testing.T, src *LoadedCheckpoint) map[string][]byte {
	t.Helper()
	want := map[string][]byte{}
	for path, value := range loadAll(t, src) {
		if strings.HasPrefix(path, "/"+src.Info.Model.Arch+"/") && !strings.HasPrefix(path, "/"+src.Info.Model.Arch+"/head/") {
			want[path] = value
		}
	}
	return want
}

// loadAll reads every variable of a loaded checkpoint (lazily loaded) as bytes.
func loadAll(t *testing.T, ck *LoadedCheckpoint) map[string][]byte {
	t.Helper()
	_, h, _, err := readRunCheckpoint(ck.Info.Dir)
	require.NoError(t, err)
	out := map[string][]byte{}
	for key, value := range h.LoadedVariables() {
		require.NoError(t, value.ConstBytes(func(raw []byte) { out[strings.TrimPrefix(key, "var:")] = append([]byte{}, raw...) }))
	}
	return out
}

// checkTransferReport checks the report of a transfer of resnet20 from the cifar10 run from to
// cifar100: carried variables, the new head and the optimizer state left behind.
func checkTransferReport(t *testing.T, r *TransferReport, from string, carried int) {
	require.Equal(t, from, r.From)
	require.Equal(t, 3, r.FromStep)
	require.Equal(t, "cifar10", r.FromDataset)
	require.Equal(t, 10, r.FromHead)
	require.Equal(t, "cifar100", r.Dataset)
	require.Equal(t, 100, r.Head)
	require.Len(t, r.Carried, carried)
	require.Equal(t, []TransferVariable{
		{Path: "/resnet20/head/dense/biases", Shape: []int{100}, FromShape: []int{10}},
		{Path: "/resnet20/head/dense/weights", Shape: []int{64, 100}, FromShape: []int{64, 10}}}, r.Reinitialized)
	require.Contains(t, r.Dropped, "/AdamOptimizer/step")
	require.Contains(t, r.Dropped, "/optimizers/learning_rate")
	require.Contains(t, r.Dropped, "/AdamOptimizer/resnet20/stem/conv/conv/weights_1st_moment")
}

// The backbone (convolutions and batch norm, statistics included) is carried bit for bit; the
// head is new, at 100 outputs, initialised from the run's seed: the same seed gives the same
// head, another seed another; the report and the summary say what happened.
func TestTransferCarriesBackboneBitForBit(t *testing.T) {
	from, src := transferSource(t, cifarlib.ArchResNet20)
	want := sourceBackbone(t, src)
	require.Contains(t, want, "/resnet20/stage2/block1/bn1/batch_normalization/mean")
	require.Contains(t, want, "/resnet20/stage3/block3/conv2/conv/weights")
	require.Len(t, want, 19+19*5) // 19 convolutions (no bias), each followed by a batch norm of 5 variables.

	heads := map[int64]map[string][]byte{}
	for _, seed := range []int64{5, 5, 6} {
		cfg, env := transferConfig(t, from, 1)
		cfg.Run.Seed = seed
		tr, err := NewTrainer(cfg, env)
		require.NoError(t, err)
		got := trainVars(t, tr.Store())
		for path, value := range want {
			require.Equal(t, value, got[path], "carried variable %s differs from the source", path)
		}
		_, ok := got["/resnet20/head/dense/weights"]
		require.False(t, ok, "the head must be left to the initializer")
		// Evaluating builds the model and initialises the head, without a training step.
		_, err = tr.Evaluate(context.Background(), env.Test, EvalOptions{BatchSize: 4})
		require.NoError(t, err)
		v := tr.Store().GetVariable("/resnet20/head/dense/weights")
		require.NotNil(t, v)
		require.Equal(t, []int{64, 100}, v.Shape().Dimensions)
		require.Equal(t, []int{100}, tr.Store().GetVariable("/resnet20/head/dense/biases").Shape().Dimensions)
		head := map[string][]byte{}
		for path, value := range trainVars(t, tr.Store()) {
			if strings.Contains(path, "/head/") {
				head[path] = value
			}
		}
		if prev, ok := heads[seed]; ok {
			require.Equal(t, prev, head, "the same seed must initialise the same head")
		}
		heads[seed] = head
		for path, value := range want {
			require.Equal(t, value, trainVars(t, tr.Store())[path], "evaluating changed %s", path)
		}

		checkTransferReport(t, tr.Transfer(), from, len(want))
	}
	require.NotEqual(t, heads[5], heads[6], "another seed must initialise another head")

	s, env := transferConfig(t, from, 1)
	res, err := Train(context.Background(), s, env)
	require.NoError(t, err)
	var summary strings.Builder
	require.NoError(t, res.WriteSummary(&summary))
	require.Contains(t, summary.String(), "transferred from "+from+" (cifar10, head 10, step 3) to cifar100 (head 100)\n")
	require.Regexp(t, `\n  carried bit for bit: 114 backbone variables of resnet20 \(\d+ values: weights and batch-norm statistics\)\n`, summary.String())
	require.Contains(t, summary.String(), "  re-initialised from the seed: /resnet20/head/dense/biases [100] (was [10]), "+
		"/resnet20/head/dense/weights [64 100] (was [64 10]): cifar100 has 100 classes, the source's head 10\n")
	require.Contains(t, summary.String(), "  recipe: fine-tune everything: head learning rate 0.001, backbone learning rate 0.001\n")
}

// A frozen backbone (linear probe) keeps its weights and its batch-norm moving statistics, bit
// for bit, through training steps; only the head moves. Fine-tuning moves the backbone too.
func TestTransferFrozenBackboneUnchanged(t *testing.T) {
	from, src := transferSource(t, cifarlib.ArchResNet20)
	want := sourceBackbone(t, src)
	cfg, env := transferConfig(t, from, 4)
	cfg.Transfer.Freeze = FreezeBackbone
	tr, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	res, err := tr.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 4, res.EndStep)
	got := trainVars(t, tr.Store())
	for path, value := range want {
		require.Equal(t, value, got[path], "frozen variable %s changed", path)
	}
	require.Contains(t, got, "/AdamOptimizer/resnet20/head/dense/weights_1st_moment")
	_, ok := got["/AdamOptimizer/resnet20/stem/conv/conv/weights_1st_moment"]
	require.False(t, ok, "a frozen variable has no optimizer state")
	require.Equal(t, FreezeBackbone, res.Transfer.Freeze)
	require.Zero(t, res.Transfer.BackboneLearningRate)
	require.Contains(t, res.Transfer.String(), "  recipe: linear probe: backbone frozen (its weights and batch-norm statistics unchanged), head learning rate 0.001\n")

	cfg.Transfer.Freeze = ""
	tuned, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	_, err = tuned.Run(context.Background())
	require.NoError(t, err)
	got = trainVars(t, tuned.Store())
	for _, path := range []string{"/resnet20/stem/conv/conv/weights", "/resnet20/stem/bn/batch_normalization/mean"} {
		require.NotEqual(t, want[path], got[path], "fine-tuning must train %s", path)
	}

	// Without From, Freeze keeps the backbone the seed initialised: the random-feature baseline.
	cfg.Transfer.From, cfg.Transfer.Freeze, cfg.Model.Arch = "", FreezeBackbone, cifarlib.ArchResNet20
	random, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	require.Nil(t, random.Transfer())
	_, err = random.Evaluate(context.Background(), env.Test, EvalOptions{BatchSize: 4}) // initialises the variables
	require.NoError(t, err)
	initial := trainVars(t, random.Store())
	_, err = random.Run(context.Background())
	require.NoError(t, err)
	got = trainVars(t, random.Store())
	frozen := 0
	for path, value := range initial {
		switch {
		case strings.HasPrefix(path, "/resnet20/head/"):
			require.NotEqual(t, value, got[path], "the head must train")
		case strings.HasPrefix(path, "/resnet20/"):
			require.Equal(t, value, got[path], "frozen variable %s changed", path)
			frozen++
		}
	}
	require.Equal(t, len(want), frozen)
}

// A separate backbone learning rate: with SGD, one step with BackboneLearningRate = lr/10 moves
// every backbone variable by a tenth of what the same step moves it with lr, and the head alike.
func TestTransferBackboneLearningRate(t *testing.T) {
	from, _ := transferSource(t, cifarlib.ArchCNN)
	var before map[string][]float32
	steps := map[float64]map[string][]float32{}
	for _, backboneLR := range []float64{0, 0.01} {
		cfg, env := transferConfig(t, from, 1)
		cfg.Optimizer, cfg.Transfer.BackboneLearningRate = optimizers.SGD{LearningRate: 0.1}, backboneLR
		tr, err := NewTrainer(cfg, env)
		require.NoError(t, err)
		_, err = tr.Evaluate(context.Background(), env.Test, EvalOptions{BatchSize: 4}) // initialises the head
		require.NoError(t, err)
		before = storeValues(t, tr.Store())
		res, err := tr.Run(context.Background())
		require.NoError(t, err)
		require.Equal(t, 0.1, res.Transfer.LearningRate)
		after := storeValues(t, tr.Store())
		steps[backboneLR] = map[string][]float32{}
		for path, b := range before {
			if strings.HasPrefix(path, "/cnn/") {
				d := make([]float32, len(b))
				for i := range b {
					d[i] = after[path][i] - b[i]
				}
				steps[backboneLR][path] = d
			}
		}
	}
	// Both runs take the same gradient at the same point. The scaled step is old + 0.1*(new-old),
	// three float32 roundings at the magnitude of the weights (|w| < 1 here: ulp <= 2^-24) on top
	// of the unscaled one's: 1e-6 is a few times what they can add up to.
	moved := 0
	for path, full := range steps[0] {
		ratio := 0.1
		if strings.HasPrefix(path, "/cnn/head/") {
			ratio = 1
		}
		for i, d := range full {
			require.InDelta(t, ratio*float64(d), float64(steps[0.01][path][i]), 1e-6, "%s[%d]", path, i)
			if math.Abs(float64(d)) > 1e-4 {
				moved++
			}
		}
	}
	require.Greater(t, moved, 1000, "the backbone must move")
}

// A transferred run resumes from its own checkpoint like any other (the backbone is not carried
// again) and equals, bit for bit, the same transfer trained straight through; its checkpoint
// loads and evaluates for CIFAR-100; the resume must name the same source and recipe.
func TestTransferThenResume(t *testing.T) {
	from, _ := transferSource(t, cifarlib.ArchCNN)
	straightCfg, env := transferConfig(t, from, 4)
	straightCfg.Transfer.BackboneLearningRate = 0.0001
	straight, err := NewTrainer(straightCfg, env)
	require.NoError(t, err)
	_, err = straight.Run(context.Background())
	require.NoError(t, err)

	cfg := straightCfg
	cfg.Checkpoint.Dir = filepath.Join(t.TempDir(), "cifar100-from-cifar10")
	cfg.Run.Steps = 2
	first, err := Train(context.Background(), cfg, env)
	require.NoError(t, err)
	require.False(t, first.Transfer.Resumed)
	cfg.Run.Steps = 4
	resumed, err := NewTrainer(cfg, env)
	require.NoError(t, err)
	res, err := resumed.Run(context.Background())
	require.NoError(t, err)
	require.True(t, res.Resumed)
	require.True(t, res.Transfer.Resumed)
	require.Equal(t, 2, res.StartStep)
	want, got := trainVars(t, straight.Store()), trainVars(t, resumed.Store())
	for path, value := range want {
		require.Equal(t, value, got[path], "variable %s differs between the straight and the resumed transfer", path)
	}

	ck, err := LoadCheckpoint(cfg.Checkpoint.Dir, labtest.Backend(t))
	require.NoError(t, err)
	require.Equal(t, from, ck.Info.Transfer.From)
	require.Equal(t, 100, ck.Model.NumClasses)
	ev, err := ck.Evaluate(context.Background(), env.Test, EvalOptions{BatchSize: 4})
	require.NoError(t, err)
	require.Equal(t, 12, ev.Examples)

	cfg.Transfer.BackboneLearningRate = 0.001
	_, err = NewTrainer(cfg, env)
	var me *CheckpointMismatchError
	require.ErrorAs(t, err, &me)
	require.Equal(t, []string{"backbone learning rate: saved 0.0001, requested 0.001"}, me.Diffs)
}

// Each bad input is refused with its own typed error: another architecture, a folder that is
// not a run, an incomplete or corrupt checkpoint, a plain load or a resume into a model whose
// head differs (PyTorch's size-mismatch message), and recipes without a source.
func TestTransferErrors(t *testing.T) {
	from, _ := transferSource(t, cifarlib.ArchLinear)

	cfg, env := transferConfig(t, from, 1)
	cfg.Model.Arch = cifarlib.ArchCNN
	_, err := NewTrainer(cfg, env)
	require.Equal(t, &ArchMismatchError{Dir: from, Saved: cifarlib.ArchLinear, Requested: cifarlib.ArchCNN}, err)
	require.EqualError(t, err, "training: run "+from+" is a linear, but the model asked for is a cnn: the backbone can only be "+
		`carried into the same architecture; use Model.Arch "linear", or training.ArchOfSource with Transfer.From`)
	require.Equal(t, "training: run "+from+" is a linear, but the model asked for is a cnn: the backbone can only be "+
		"carried into the same architecture", err.(*ArchMismatchError).Problem())

	// ArchOfSource is the source's: read into the plan, the caller's settings untouched.
	cfg.Model.Arch = ArchOfSource
	source, err := readTransferSource(from)
	require.NoError(t, err)
	p, err := resolve(cfg, source)
	require.NoError(t, err)
	require.Equal(t, cifarlib.ArchLinear, p.Model.Arch)
	require.Equal(t, cifarlib.ArchLinear, p.source.info.Model.Arch)
	require.Equal(t, ArchOfSource, cfg.Model.Arch)

	checkBrokenSources(t, from)
	checkHeadMismatches(t, from)
	checkTransferSettingsErrors(t, from)
}

// checkBrokenSources checks the errors of a source that is not a run, or whose checkpoint is
// incomplete or corrupt.
func checkBrokenSources(t *testing.T, from string) {
	for name, dir := range map[string]string{"missing": filepath.Join(t.TempDir(), "missing"), "empty": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			_, err := NewTrainer(transferConfig(t, dir, 1))
			var nr *NotRunError
			require.ErrorAs(t, err, &nr)
			require.Equal(t, dir, nr.Dir)
			require.ErrorIs(t, err, checkpoints.ErrNoCheckpoint)
			require.Contains(t, err.Error(), "training: "+dir+" is not a trained cifarlib run (")
		})
	}

	// Interrupted save: the newest .json is empty.
	copyDir := func(t *testing.T) (string, string) {
		dst := filepath.Join(t.TempDir(), "copy")
		require.NoError(t, os.CopyFS(dst, os.DirFS(from)))
		matches, err := filepath.Glob(filepath.Join(dst, "checkpoint-*.json"))
		require.NoError(t, err)
		require.Len(t, matches, 1)
		return dst, strings.TrimSuffix(matches[0], ".json")
	}
	incomplete, base := copyDir(t)
	require.NoError(t, os.WriteFile(base+".json", nil, 0o644))
	_, err := NewTrainer(transferConfig(t, incomplete, 1))
	var ie *checkpoints.IncompleteError
	require.ErrorAs(t, err, &ie)

	// Truncated .bin: GoMLX cannot read it back.
	corrupt, base := copyDir(t)
	raw, err := os.ReadFile(base + ".bin")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(base+".bin", raw[:len(raw)/2], 0o644))
	_, err = NewTrainer(transferConfig(t, corrupt, 1))
	var ce *checkpoints.CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, corrupt, ce.Dir)
	require.True(t, strings.HasPrefix(err.Error(), "checkpoints: the checkpoint in "+corrupt+" is corrupt and was not used ("), err.Error())
}

// checkHeadMismatches checks a plain load and a resume into a model whose head differs from
// the run's (PyTorch's size-mismatch message).
func checkHeadMismatches(t *testing.T, from string) {
	// A plain load into a CIFAR-100 model: PyTorch's "size mismatch for fc.weight".
	m100, err := cifarlib.NewModel(data.CIFAR100(data.LabelsFine), cifarlib.ArchLinear).Done()
	require.NoError(t, err)
	_, err = LoadCheckpointInto(from, m100, labtest.Backend(t))
	want := &checkpoints.ShapeMismatchError{Dir: from, Variable: "/linear/head/dense/weights", Saved: []int{3072, 10}, Model: []int{3072, 100},
		SavedDataset: "cifar10", ModelDataset: "cifar100", SavedHead: 10, ModelHead: 100}
	require.Equal(t, want, err)
	require.EqualError(t, err, "checkpoints: loading "+from+": size mismatch for /linear/head/dense/weights: copying a variable with "+
		"shape [3072 10] from checkpoint (trained for cifar10, head of 10), the shape in the current model is [3072 100] (built "+
		"for cifar100, head of 100); a saved variable is never reshaped: transfer the run instead, which carries the backbone "+
		`and initialises a new head of 100 (training.Settings with Transfer.From "`+from+`" and Data.Spec data.CIFAR100(data.LabelsFine))`)
	require.True(t, strings.HasSuffix(err.(*checkpoints.ShapeMismatchError).Problem(), "initialises a new head of 100"), err.(*checkpoints.ShapeMismatchError).Problem())
	m10, err := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchLinear).Done()
	require.NoError(t, err)
	ck, err := LoadCheckpointInto(from, m10, labtest.Backend(t))
	require.NoError(t, err, "the same head loads")
	require.Equal(t, m10, ck.Model)
	mCNN, err := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchCNN).Done()
	require.NoError(t, err)
	_, err = LoadCheckpointInto(from, mCNN, labtest.Backend(t))
	require.Equal(t, &ArchMismatchError{Dir: from, Saved: cifarlib.ArchLinear, Requested: cifarlib.ArchCNN}, err)

	// A resume into CIFAR-100: the same error, for the resume.
	resume, resumeEnv := transferConfig(t, "", 4)
	resume.Model.Arch, resume.Checkpoint.Dir = cifarlib.ArchLinear, from
	_, err = NewTrainer(resume, resumeEnv)
	want.Resume = true
	require.Equal(t, want, err)
	require.Contains(t, err.Error(), "checkpoints: resuming "+from+": size mismatch for /linear/head/dense/weights: ")
	require.True(t, strings.HasSuffix(err.Error(), "Data.Spec data.CIFAR100(data.LabelsFine), in a new Checkpoint.Dir)"), err.Error())

	// Coarse labels name their Spec.
	coarse, coarseEnv := transferConfig(t, "", 4)
	coarse.Data.Spec = data.CIFAR100(data.LabelsCoarse)
	coarseEnv.Train, coarseEnv.Test = labtest.TrainTestRecords(t, coarse.Data.Spec, 16, 4, 1)
	coarse.Model.Arch, coarse.Checkpoint.Dir = cifarlib.ArchLinear, from
	_, err = NewTrainer(coarse, coarseEnv)
	require.ErrorContains(t, err, "head of 20 (training.Settings with Transfer.From \""+from+"\" and Data.Spec data.CIFAR100(data.LabelsCoarse), "+
		"in a new Checkpoint.Dir)")
}

// checkTransferSettingsErrors checks the settings a transfer refuses.
func checkTransferSettingsErrors(t *testing.T, from string) {
	for _, c := range []struct {
		edit func(*Settings)
		msg  string
	}{
		{func(c *Settings) {
			c.Transfer.From, c.Model.Arch = "", cifarlib.ArchLinear
			c.Transfer.BackboneLearningRate = 0.1
		},
			`training: config: Transfer.BackboneLearningRate=0.1: it applies to a transferred run: set Transfer.From to the trained run's checkpoint directory`},
		{func(c *Settings) { c.Transfer.Freeze = "head" },
			`training: config: Transfer.Freeze="head": use "" (fine-tune everything) or "backbone" (linear probe)`},
		{func(c *Settings) { c.Transfer.Freeze, c.Transfer.BackboneLearningRate = FreezeBackbone, 0.1 },
			`training: config: Transfer.BackboneLearningRate=0.1: a frozen backbone does not train: leave it 0 with Freeze "backbone"`},
		{func(c *Settings) { c.Transfer.BackboneLearningRate = -1 },
			`training: config: Transfer.BackboneLearningRate=-1: use a number >= 0`},
		{func(c *Settings) { c.Model.Head = 10 },
			`training: config: Model.Head=10: a transferred run's head is sized from the dataset: leave Head 0`},
	} {
		cfg, env := transferConfig(t, from, 1)
		c.edit(&cfg)
		_, err := NewTrainer(cfg, env)
		var ce *ConfigError
		require.ErrorAs(t, err, &ce)
		require.EqualError(t, err, c.msg)
	}
}

// The same transfer (fine-tuning with a separate backbone rate; and a linear probe) on 4 XLA CPU
// devices trains as the one on 1. Tolerance: both sides start from the same values (the backbone
// carried bit for bit, the head from the same seed), and the transfer adds no reduction of its
// own (the backbone-rate scaling and the frozen batch norm are element-wise per variable), so the
// two differ as TestDevicesSameAsOneDevice's SGD runs do: the order of the float32 sums across
// shards, plus the ReLU kinks rounding can flip, normwise per update (kinkTolerance, derived in
// numbers_test.go, for batch 16 and the 8x8 smallest feature map of resnet20). The frozen
// backbone is untouched, bit for bit, on 4 devices as on 1.
func TestTransferDevicesSameAsOneDevice(t *testing.T) {
	backend := devicesTestBackend(t, 4)
	from, src := transferSource(t, cifarlib.ArchResNet20)
	frozen := sourceBackbone(t, src)
	kinkTol := testenv.KinkTolerance(devicesBatch, devicesMinHW)
	for _, freeze := range []string{"", FreezeBackbone} {
		t.Run(fmt.Sprintf("freeze=%q", freeze), func(t *testing.T) {
			var results []*Result
			var trainers []*Trainer
			for _, n := range []int{1, 4} {
				cfg, env := transferConfig(t, from, 3)
				env.Backend, cfg.Compute.Devices, cfg.Data.BatchSize, cfg.Record.HistoryEvery = backend, n, devicesBatch, 1
				cfg.Optimizer, cfg.Transfer.Freeze = optimizers.SGD{LearningRate: 0.01}, freeze
				if freeze == "" {
					cfg.Transfer.BackboneLearningRate = 0.001
				}
				tr, err := NewTrainer(cfg, env)
				require.NoError(t, err)
				res, err := tr.Run(context.Background())
				require.NoError(t, err)
				require.Equal(t, n, res.Devices)
				require.Len(t, res.History.Points, 3)
				results, trainers = append(results, res), append(trainers, tr)
				if freeze != "" {
					got := trainVars(t, tr.Store())
					for path, value := range frozen {
						require.Equal(t, value, got[path], "frozen %s changed on %d devices", path, n)
					}
				}
			}
			requireSameLossCurve(t, results[0].History.Points, results[1].History.Points, kinkTol)
			init := initialValues(t, trainers[0].Settings(), trainers[0].Env())
			requireSameTraining(t, init, storeValues(t, trainers[0].Store()), storeValues(t, trainers[1].Store()), 3, kinkTol)

			// The 4-device transfer's model evaluates alike on 1 and on 4 devices (one forward pass,
			// other shards: the same predictions where no two logits are within rounding of a tie).
			test := trainers[1].Env().Test
			requireNoNearTies(t, results[1].Trained, test)
			one, err := results[1].Evaluate(context.Background(), test, EvalOptions{BatchSize: 4})
			require.NoError(t, err)
			four, err := results[1].Evaluate(context.Background(), test, EvalOptions{BatchSize: 4, Devices: 4})
			require.NoError(t, err)
			require.Equal(t, one.Confusion, four.Confusion)
		})
	}

	checkTransferResumesOnOtherDevices(t, backend, from)
}

// checkTransferResumesOnOtherDevices checks that a transfer from from checkpointed on 4 devices
// of backend resumes on 1 and evaluates from its checkpoint on 4.
func checkTransferResumesOnOtherDevices(t *testing.T, backend compute.Backend, from string) {
	cfg, env := transferConfig(t, from, 2)
	env.Backend, cfg.Compute.Devices, cfg.Data.BatchSize, cfg.Checkpoint.Dir = backend, 4, devicesBatch, filepath.Join(t.TempDir(), "c100")
	_, err := Train(context.Background(), cfg, env)
	require.NoError(t, err)
	cfg.Compute.Devices, cfg.Run.Steps = 1, 3
	res, err := Train(context.Background(), cfg, env)
	require.NoError(t, err)
	require.True(t, res.Resumed)
	require.Equal(t, 3, res.EndStep)
	ck, err := LoadCheckpoint(cfg.Checkpoint.Dir, backend)
	require.NoError(t, err)
	ev, err := ck.Evaluate(context.Background(), env.Test, EvalOptions{BatchSize: 4, Devices: 4})
	require.NoError(t, err)
	require.Equal(t, 12, ev.Examples)
}

// DiagnoseRun's dataset-switch checklist, for a CIFAR-10 run against each dataset: only CIFAR-10
// itself passes (the normalisation is only a note); CIFAR-100, fine or coarse, fails on the head,
// the labels and the class names.
func TestDiagnoseRunChecklist(t *testing.T) {
	from, _ := transferSource(t, cifarlib.ArchLinear)
	root := t.TempDir()
	for _, spec := range []data.Spec{data.CIFAR10(), data.CIFAR100(data.LabelsFine)} {
		require.NoError(t, data.Synthesize(root, spec, data.SynthOptions{Seed: 1, TrainSize: 200, TestSize: 100}))
	}
	status := func(d *cifarlib.Diagnosis) map[string]string {
		out := map[string]string{}
		for _, c := range d.Checklist {
			out[c.Item] = c.Status
		}
		return out
	}
	for _, c := range []struct {
		spec   data.Spec
		ok     bool
		status map[string]string
	}{
		{data.CIFAR10(), true, map[string]string{"head width": cifarlib.CheckOK, "label range": cifarlib.CheckOK, "normalisation": cifarlib.CheckOK, "metrics": cifarlib.CheckOK, "class names": cifarlib.CheckOK}},
		{data.CIFAR100(data.LabelsFine), false, map[string]string{"head width": cifarlib.CheckFail, "label range": cifarlib.CheckFail, "normalisation": cifarlib.CheckNote, "metrics": cifarlib.CheckOK, "class names": cifarlib.CheckFail}},
		{data.CIFAR100(data.LabelsCoarse), false, map[string]string{"head width": cifarlib.CheckFail, "label range": cifarlib.CheckFail, "normalisation": cifarlib.CheckNote, "metrics": cifarlib.CheckOK, "class names": cifarlib.CheckFail}},
	} {
		t.Run(c.spec.ID(), func(t *testing.T) {
			d, err := DiagnoseRun(from, c.spec, root, cifarlib.DiagnoseOptions{Backend: labtest.Backend(t)})
			require.NoError(t, err)
			require.Equal(t, c.ok, d.OK)
			require.Equal(t, c.status, status(d))
			require.Equal(t, from, d.From)
			require.Equal(t, "cifar10", d.FromDataset)
			require.Equal(t, 10, d.HeadWidth)
			// The head is the run's: no "head overridden", which would say the user set one.
			model := fmt.Sprintf("linear trained on cifar10 (its head: 10 outputs), checked against %s (%d classes)",
				c.spec.ID(), c.spec.NumClasses)
			require.Equal(t, model, d.Model)
			require.Contains(t, d.String(), "Model: "+model+"\n")
			require.NotContains(t, d.String(), "overridden")
			if !c.ok {
				require.Equal(t, "transfer the run (training.Settings.Transfer.From; the settings from="+from+" "+datasetSettings(c.spec.ID())+
					fmt.Sprintf("), which carries the backbone and initialises a new head of %d", c.spec.NumClasses), d.Fix)
				require.Contains(t, d.String(), "  [FAIL] head width    the run's head has 10 outputs, "+c.spec.ID()+" has "+fmt.Sprint(c.spec.NumClasses)+" classes\n")
			}
		})
	}
	_, err := DiagnoseRun(root, data.CIFAR10(), root, cifarlib.DiagnoseOptions{Backend: labtest.Backend(t)})
	var nr *NotRunError
	require.ErrorAs(t, err, &nr)
}

// The new head has the target's width whatever the direction: 100 (fine) and 20 (coarse) from
// CIFAR-10, and 10 going back from CIFAR-100.
func TestTransferHeadWidths(t *testing.T) {
	from10, _ := transferSource(t, cifarlib.ArchCNN)
	train100, _ := labtest.TrainTestRecords(t, data.CIFAR100(data.LabelsFine), 32, 4, 2)
	from100 := filepath.Join(t.TempDir(), "cifar100-cnn")
	s := with(t, Defaults(), map[string]string{"dataset": "cifar100", "model": cifarlib.ArchCNN, "steps": "1", "batch": "8", "no-eval": "true",
		"checkpoint": from100})
	_, err := Train(context.Background(), s, Env{Train: train100, Backend: labtest.Backend(t), Progress: ProgressOff})
	require.NoError(t, err)
	for _, c := range []struct {
		from string
		spec data.Spec
		head int
	}{{from10, data.CIFAR100(data.LabelsFine), 100}, {from10, data.CIFAR100(data.LabelsCoarse), 20}, {from100, data.CIFAR10(), 10}} {
		t.Run(c.spec.ID(), func(t *testing.T) {
			train, _ := labtest.TrainTestRecords(t, c.spec, 16, 4, 3)
			s := with(t, Defaults(), map[string]string{"model": ArchOfSource, "from": c.from, "steps": "1", "batch": "8", "no-eval": "true"})
			s.Data.Spec = c.spec
			res, err := Train(context.Background(), s, Env{Train: train, Backend: labtest.Backend(t), Progress: ProgressOff})
			require.NoError(t, err)
			require.Equal(t, c.head, res.HeadWidth)
			require.Equal(t, []int{1024, c.head}, res.Store.GetVariable("/cnn/head/dense/weights").Shape().Dimensions)
			require.Equal(t, []int{c.head}, res.Transfer.Reinitialized[0].Shape)
			require.Len(t, res.Transfer.Carried, 6)
		})
	}
}
