package training

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"

	"github.com/stretchr/testify/require"
)

// fedTestConfig is a tiny run on 96 synthetic training examples (12 batches of 8), with
// validations every 4 steps on 24 examples (two batches of 16, the second padded), and the
// settings values (by their names in Fields) on top.
func fedTestConfig(t *testing.T, base Settings, values map[string]string) testRun {
	spec := data.CIFAR10()
	train, test := labtest.TrainTestRecords(t, spec, 96, 40, 5)
	s := with(t, base, map[string]string{"batch": "8", "steps": "8", "seed": "3", "eval-every": "4", "eval-examples": "24", "eval-batch": "16"})
	return testRun{Settings: with(t, s, values), Env: Env{Train: train, Test: test, Backend: labtest.Backend(t), Progress: ProgressOff}}
}

// fedRun is what a run computed: every variable, the final loss and evaluation, and the curves.
type fedRun struct {
	vars    map[string][]byte
	loss    float64
	eval    EvalResult // without its timeline
	history string
}

func trainFed(t *testing.T, cfg testRun) (fedRun, *Result) {
	t.Helper()
	res, err := Train(context.Background(), cfg.Settings, cfg.Env)
	require.NoError(t, err)
	history, err := json.Marshal(res.History.Points)
	require.NoError(t, err)
	require.NotNil(t, res.Eval)
	eval := *res.Eval
	eval.Timeline = nil
	return fedRun{vars: trainVars(t, res.Store), loss: res.Loss, eval: eval, history: string(history)}, res
}

// A run that changes only numeric hyper-parameters (the learning rate, the schedule's settings,
// momentum, weight decay, bias scaler, label smoothing's value, the steps (the lookahead's end too),
// the seed, the validation's size) reuses the programs a Programs keeps: it compiles nothing, not even GoMLX's variable
// initialisation, and trains bit for bit as a fresh run with those values does. Then the first
// settings again train as they did.
func TestProgramsFeedHyperParameters(t *testing.T) {
	for _, tc := range feedCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			p := &Programs{}
			kept := tc.base
			kept.Programs = p
			first, res := trainFed(t, kept)
			require.Equal(t, 1, res.Timeline.Programs(runs.ProgramTrainStep))
			for _, v := range tc.variants {
				cfg := tc.base
				cfg.Settings = with(t, cfg.Settings, v.values)
				fresh, _ := trainFed(t, cfg)
				cfg.Programs = p
				got, res := trainFed(t, cfg)
				require.Zero(t, res.Timeline.Programs(""), "%s: %s", v.name, res.Timeline)
				require.Equal(t, 1, p.Len(), v.name)
				requireSameRun(t, fresh, got, v.name+": the same training as a fresh run, bit for bit")
				require.False(t, fresh.history == first.history && len(diffVars(fresh.vars, first.vars)) == 0, "%s changes the run", v.name)
			}
			again, res := trainFed(t, kept)
			require.Zero(t, res.Timeline.Programs(""), res.Timeline.String())
			requireSameRun(t, first, again, "the first settings again")
		})
	}
}

// variant is a change of TestProgramsFeedHyperParameters: its name and the settings it changes
// (by their names in Fields).
type variant struct {
	name   string
	values map[string]string
}

// feedCase is a case of TestProgramsFeedHyperParameters: a base run and its variants.
type feedCase struct {
	name     string
	base     testRun
	variants []variant
}

// feedCases are the cases of TestProgramsFeedHyperParameters.
func feedCases(t *testing.T) []feedCase {
	recipe := fedTestConfig(t, Airbench94(), map[string]string{"model": cifarlib.ArchLinear, "epochs": "0.6", "whiten-bias-epochs": "0"}) // nesterov, triangle, smoothing, lookahead
	recipeCNN := fedTestConfig(t, Airbench94(), map[string]string{"model": cifarlib.ArchCNN, "epochs": "0.6", "whiten-bias-epochs": "0"}) // with batch-norm biases (BiasScaler)
	noLookahead := fedTestConfig(t, Airbench94(), map[string]string{"model": cifarlib.ArchLinear, "epochs": "0.6", "lookahead": "false", "whiten-bias-epochs": "0"})
	cosine := fedTestConfig(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear, "optimizer": "sgd", "schedule": optimizers.ScheduleCosine, "warmup": "2", "min-lr": "0.001"})
	adam := fedTestConfig(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear, "optimizer": "adam", "label-smoothing": "0.1"})
	return []feedCase{
		{"recipe", recipe, []variant{
			{"learning rate", map[string]string{"lr": "7"}},
			{"label smoothing", map[string]string{"label-smoothing": "0.1"}},
			{"momentum", map[string]string{"momentum": "0.8"}},
			{"weight decay", map[string]string{"weight-decay": "0.03"}},
			{"seed", map[string]string{"seed": "9"}},
			{"validation size", map[string]string{"eval-examples": "40"}},
			{"epochs (the lookahead's end)", map[string]string{"epochs": "1"}},
		}},
		{"recipe without lookahead", noLookahead, []variant{
			{"epochs", map[string]string{"epochs": "1"}},
		}},
		{"recipe cnn", recipeCNN, []variant{
			{"bias scaler, seed, learning rate, momentum, smoothing", map[string]string{"bias-scaler": "32", "seed": "4", "lr": "9", "momentum": "0.9", "label-smoothing": "0.3"}},
		}},
		{"cosine", cosine, []variant{
			{"learning rates", map[string]string{"lr": "0.05", "min-lr": "0.01"}},
			{"no warm-up", map[string]string{"warmup": "0"}},
			{"steps and warm-up", map[string]string{"steps": "11", "warmup": "3"}},
		}},
		{"adam", adam, []variant{
			{"learning rate", map[string]string{"lr": "0.01"}},
			{"label smoothing", map[string]string{"label-smoothing": "0.25"}},
			{"seed", map[string]string{"seed": "1"}},
		}},
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
		base, edit map[string]string
		why        string
	}{
		{"batch", nil, map[string]string{"batch": "16"}, "new program: batch size 16, not 8"},
		{"schedule", nil, map[string]string{"schedule": optimizers.ScheduleTriangle}, "new program: schedule triangle, not constant"},
		{"lookahead", nil, map[string]string{"lookahead": "true"}, "new program: lookahead true, not false"},
		// Label smoothing on is another loss (its value is fed), guarded or not.
		{"label smoothing on", nil, map[string]string{"label-smoothing": "0.1"}, "new program: label smoothing on, not off"},
		{"unguarded, label smoothing on", map[string]string{"guard": "false"}, map[string]string{"label-smoothing": "0.1"}, "new program: label smoothing on, not off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Programs{}
			cfg := fedTestConfig(t, Defaults(), map[string]string{"model": cifarlib.ArchLinear})
			cfg.Programs = p
			cfg.Settings = with(t, cfg.Settings, tc.base)
			_, err := Train(context.Background(), cfg.Settings, cfg.Env)
			require.NoError(t, err)
			cfg.Settings = with(t, cfg.Settings, tc.edit)
			var events []Event
			cfg.OnEvent = func(e Event) { events = append(events, e) }
			_, res := trainFed(t, cfg)
			require.Equal(t, 1, res.Timeline.Programs(runs.ProgramTrainStep))
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
// an error that names the setting, the value and the range.
func TestProgramsRefuseBadHyperParameters(t *testing.T) {
	p := &Programs{}
	for _, tc := range []struct {
		base Settings
		edit func(*Settings)
		want []string
	}{
		{Defaults(), func(s *Settings) { s.Optimizer = optimizers.Adam{LearningRate: -0.1} }, []string{"LearningRate=-0.1", "use a number >= 0"}},
		{Defaults(), func(s *Settings) { s.Run.LabelSmoothing = 1 }, []string{"LabelSmoothing", "1", "[0, 1)"}},
		{recipeOn(cifarlib.ArchLinear, 0, 8, 3), func(s *Settings) { n := s.Optimizer.(optimizers.Nesterov); n.Momentum = 1; s.Optimizer = n }, []string{"Momentum", "1", "[0, 1)"}},
		{recipeOn(cifarlib.ArchLinear, 0, 8, 3), func(s *Settings) { n := s.Optimizer.(optimizers.Nesterov); n.Momentum = -0.5; s.Optimizer = n }, []string{"Momentum", "-0.5", "[0, 1)"}},
	} {
		cfg := fedTestConfig(t, tc.base, map[string]string{"model": cifarlib.ArchLinear, "steps": "8"})
		cfg.Programs = p
		var events []Event
		cfg.OnEvent = func(e Event) { events = append(events, e) }
		tc.edit(&cfg.Settings)
		_, err := Train(context.Background(), cfg.Settings, cfg.Env)
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

// A kept set keeps airbench94's whitening filters of the training records it last saw: a
// re-run on the same records sets them without computing them again and trains bit for bit as
// a fresh run does; a run on other records computes theirs.
func TestProgramsKeepWhitening(t *testing.T) {
	if backends.IsGoBackend(labtest.Backend(t)) {
		t.Skip("airbench94 on the pure-Go backend takes minutes: kernel/run-tests.sh's XLA CPU pass runs it")
	}
	base := fedTestConfig(t, Airbench94(), map[string]string{"steps": "2", "eval-every": "-1"}) // airbench94 itself, 2 steps of 8
	p := &Programs{}
	kept := base
	kept.Programs = p
	trainFed(t, kept)
	require.Equal(t, 1, p.Len())
	var set *programSet
	for _, s := range p.sets {
		set = s
	}
	require.Same(t, base.Train, set.whitenRecs)
	filters := set.whitenFilters
	require.NotNil(t, filters)

	again := base
	again.Settings = with(t, base.Settings, map[string]string{"seed": "9"})
	fresh, _ := trainFed(t, again)
	again.Programs = p
	got, res := trainFed(t, again)
	require.Zero(t, res.Timeline.Programs(""), res.Timeline.String())
	require.Same(t, filters, set.whitenFilters, "the kept filters, not computed again")
	requireSameRun(t, fresh, got, "a re-run with the kept whitening filters: the same training as a fresh run, bit for bit")

	other := again
	other.Train, _ = labtest.TrainTestRecords(t, data.CIFAR10(), 96, 40, 6)
	trainFed(t, other)
	require.Same(t, other.Train, set.whitenRecs, "other records: their own filters")
	require.NotSame(t, filters, set.whitenFilters)
}
