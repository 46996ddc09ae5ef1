package training

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// fedTestConfig is a tiny run on 96 synthetic training examples (12 batches of 8), with
// validations every 4 steps on 24 examples (two batches of 16, the second padded).
func fedTestConfig(t *testing.T, model string) Config {
	spec := data.CIFAR10()
	train, test := labtest.TrainTestRecords(t, spec, 96, 40, 5)
	return Config{Model: model, Spec: spec, TrainRecords: train, TestRecords: test, BatchSize: 8, Steps: 8, Seed: 3,
		EvalEvery: 4, EvalExamples: 24, EvalBatchSize: 16, Backend: labtest.Backend(t), Progress: ProgressOff}
}

// fedRun is what a run computed: every variable, the final loss and evaluation, and the curves.
type fedRun struct {
	vars    map[string][]byte
	loss    float64
	eval    EvalResult // without its timeline
	history string
}

func trainFed(t *testing.T, cfg Config) (fedRun, *Result) {
	t.Helper()
	res, err := Train(context.Background(), cfg)
	require.NoError(t, err)
	history, err := json.Marshal(res.History.Points)
	require.NoError(t, err)
	require.NotNil(t, res.Eval)
	eval := *res.Eval
	eval.Timeline = nil
	return fedRun{vars: trainVars(t, res.Store), loss: res.Loss, eval: eval, history: string(history)}, res
}

// A run that changes only numeric hyper-parameters (the learning rate, the schedule's settings,
// momentum, weight decay, bias scaler, label smoothing's value, the steps (without lookahead),
// the seed, the validation's size) reuses the programs a Programs keeps: it compiles nothing, not even GoMLX's variable
// initialisation, and trains bit for bit as a fresh run with those values does. Then the first
// settings again train as they did.
func TestProgramsFeedHyperParameters(t *testing.T) {
	recipe := fedTestConfig(t, cifarlib.ArchLinear)
	recipe.Recipe, recipe.Steps, recipe.Epochs = RecipeAirbench94, 0, 0.6 // nesterov, triangle, smoothing, lookahead
	recipeCNN := fedTestConfig(t, cifarlib.ArchCNN)                       // with batch-norm biases (BiasScaler)
	recipeCNN.Recipe, recipeCNN.Steps, recipeCNN.Epochs = RecipeAirbench94, 0, 0.6
	noLookahead := recipe // the lookahead's end is the run's steps, and keyed
	noLookahead.RecipeOff = []string{"Lookahead"}
	cosine := fedTestConfig(t, cifarlib.ArchLinear)
	cosine.Optimizer, cosine.Schedule, cosine.WarmupSteps, cosine.MinLearningRate = "sgd", ScheduleCosine, 2, 0.001
	adam := fedTestConfig(t, cifarlib.ArchLinear)
	adam.Optimizer, adam.LabelSmoothing = "adam", 0.1
	type variant struct {
		name string
		edit func(*Config)
	}
	for _, tc := range []struct {
		name     string
		base     Config
		variants []variant
	}{
		{"recipe", recipe, []variant{
			{"learning rate", func(c *Config) { c.LearningRate = 7 }},
			{"label smoothing", func(c *Config) { c.LabelSmoothing = 0.1 }},
			{"momentum", func(c *Config) { c.Momentum = 0.8 }},
			{"weight decay", func(c *Config) { c.WeightDecay = 0.03 }},
			{"seed", func(c *Config) { c.Seed = 9 }},
			{"validation size", func(c *Config) { c.EvalExamples = 40 }},
		}},
		{"recipe without lookahead", noLookahead, []variant{
			{"epochs", func(c *Config) { c.Epochs = 1 }},
		}},
		{"recipe cnn", recipeCNN, []variant{
			{"bias scaler, seed, learning rate, momentum, smoothing", func(c *Config) {
				c.BiasScaler, c.Seed, c.LearningRate, c.Momentum, c.LabelSmoothing = 32, 4, 9, 0.9, 0.3
			}},
		}},
		{"cosine", cosine, []variant{
			{"learning rates", func(c *Config) { c.LearningRate, c.MinLearningRate = 0.05, 0.01 }},
			{"no warm-up", func(c *Config) { c.WarmupSteps = 0 }},
			{"steps and warm-up", func(c *Config) { c.Steps, c.WarmupSteps = 11, 3 }},
		}},
		{"adam", adam, []variant{
			{"learning rate", func(c *Config) { c.LearningRate = 0.01 }},
			{"label smoothing", func(c *Config) { c.LabelSmoothing = 0.25 }},
			{"seed", func(c *Config) { c.Seed = 1 }},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Programs{}
			kept := tc.base
			kept.Programs = p
			first, res := trainFed(t, kept)
			require.Equal(t, 1, res.Timeline.Compiles(runs.ProgramTrainStep))
			for _, v := range tc.variants {
				cfg := tc.base
				v.edit(&cfg)
				fresh, _ := trainFed(t, cfg)
				cfg.Programs = p
				got, res := trainFed(t, cfg)
				require.Zero(t, res.Timeline.Compiles(""), "%s: %s", v.name, res.Timeline)
				require.Equal(t, 1, p.Len(), v.name)
				requireSameRun(t, fresh, got, v.name+": the same training as a fresh run, bit for bit")
				require.False(t, fresh.history == first.history && len(diffVars(fresh.vars, first.vars)) == 0, "%s changes the run", v.name)
			}
			again, res := trainFed(t, kept)
			require.Zero(t, res.Timeline.Compiles(""), res.Timeline.String())
			requireSameRun(t, first, again, "the first settings again")
		})
	}
}

// requireSameRun requires got to be want bit for bit, naming the variables that differ.
func requireSameRun(t *testing.T, want, got fedRun, what string) {
	t.Helper()
	require.Empty(t, diffVars(want.vars, got.vars), "%s: variables differ", what)
	require.Equal(t, want.loss, got.loss, what)
	require.Equal(t, want.eval, got.eval, what)
	require.Equal(t, want.history, got.history, what)
}

// diffVars lists the paths of the variables whose values (or presence) differ in a and b.
func diffVars(a, b map[string][]byte) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || string(w) != string(v) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// A run whose settings change the program's shape compiles a new one, and its first event
// (a cell's status line, `cifarlab train`'s first line) says why, by the field that differs.
func TestProgramsNewShapeSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		base, edit func(*Config)
		why        string
	}{
		{"batch", func(*Config) {}, func(c *Config) { c.BatchSize = 16 }, "new program: batch size 16, not 8"},
		{"schedule", func(*Config) {}, func(c *Config) { c.Schedule = ScheduleTriangle }, "new program: schedule triangle, not constant"},
		// The lookahead's end is its run's steps.
		{"lookahead", func(c *Config) { c.Recipe, c.Steps, c.Epochs = RecipeAirbench94, 0, 0.6 },
			func(c *Config) { c.Epochs = 1 }, "new program: lookahead steps 12, not 8"},
		// Label smoothing on is another loss (its value is fed), guarded or not.
		{"label smoothing on", func(*Config) {}, func(c *Config) { c.LabelSmoothing = 0.1 }, "new program: label smoothing true, not false"},
		{"unguarded, label smoothing on", func(c *Config) { c.Unguarded = true }, func(c *Config) { c.LabelSmoothing = 0.1 }, "new program: label smoothing true, not false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Programs{}
			cfg := fedTestConfig(t, cifarlib.ArchLinear)
			cfg.Programs = p
			tc.base(&cfg)
			_, err := Train(context.Background(), cfg)
			require.NoError(t, err)
			tc.edit(&cfg)
			var events []Event
			cfg.OnEvent = func(e Event) { events = append(events, e) }
			_, res := trainFed(t, cfg)
			require.Equal(t, 1, res.Timeline.Compiles(runs.ProgramTrainStep))
			var first *Event
			for i := range events {
				if events[i].Kind == EventCompile {
					first = &events[i]
					break
				}
			}
			require.NotNil(t, first)
			require.Equal(t, runs.ProgramTrainStep, first.Program)
			require.Equal(t, "compiling the train step ("+tc.why+")…", first.Line(false))
			require.Equal(t, 2, p.Len())
		})
	}
}

// A hyper-parameter outside its range is refused before anything is loaded or compiled, with
// a *ConfigError that names the field, the value and the range.
func TestProgramsRefuseBadHyperParameters(t *testing.T) {
	p := &Programs{}
	for _, tc := range []struct {
		edit func(*Config)
		want []string
	}{
		{func(c *Config) { c.LearningRate = -0.1 }, []string{"LearningRate=-0.1", "must not be negative"}},
		{func(c *Config) { c.LabelSmoothing = 1 }, []string{"LabelSmoothing=1", "[0, 1)"}},
		{func(c *Config) { c.Recipe, c.Momentum = RecipeAirbench94, 1 }, []string{"Momentum=1", "[0, 1)"}},
		{func(c *Config) { c.Recipe, c.Momentum = RecipeAirbench94, -0.5 }, []string{"Momentum=-0.5", "[0, 1)"}},
	} {
		cfg := fedTestConfig(t, cifarlib.ArchLinear)
		cfg.Programs = p
		var events []Event
		cfg.OnEvent = func(e Event) { events = append(events, e) }
		tc.edit(&cfg)
		_, err := Train(context.Background(), cfg)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%v", err)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w)
		}
		for _, e := range events {
			require.NotEqual(t, EventCompile, e.Kind, "nothing compiles: %s", strings.TrimSpace(e.Line(false)))
		}
	}
	require.Zero(t, p.Len())
}
