package training

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
	"github.com/stretchr/testify/require"
)

// Every row of the table reads back what it writes: Set(Get(s)) leaves s as it was, for the
// defaults, the recipe and a transfer; names are unique, every row has a role, a path into
// Settings, words and a range, and the settings its usage names in braces are rows.
func TestFieldsReadBackWhatTheyWrite(t *testing.T) {
	transfer := with(t, Defaults(), map[string]string{"from": "/runs/src", "freeze": "backbone", "steps": "3"})
	names := map[string]bool{}
	for _, f := range Fields() {
		require.False(t, names[f.Name], "row %s twice", f.Name)
		names[f.Name] = true
		require.NotEmpty(t, f.Path, f.Name)
		require.NotEmpty(t, f.Label, f.Name)
		require.NotEmpty(t, f.Usage, f.Name)
		require.NotEmpty(t, f.Range, f.Name)
		require.Contains(t, []Role{Shapes, Fed, Host}, f.Role, f.Name)
		for _, ref := range regexp.MustCompile(`\{([^}]*)\}`).FindAllStringSubmatch(f.Usage, -1) {
			_, err := LookupField(ref[1])
			require.NoError(t, err, "%s's usage names {%s}", f.Name, ref[1])
		}
		if f.Name == "recipe" {
			continue // it replaces the settings
		}
		for _, s := range []Settings{Defaults(), Airbench94(), transfer} {
			back := s
			require.NoError(t, f.Set(&back, f.Get(&s)), f.Name)
			require.Equal(t, s, back, f.Name)
		}
	}
	require.Equal(t, len(Fields()), len(FieldNames()))
	f, err := LookupField("lr")
	require.NoError(t, err)
	require.Equal(t, "Optimizer.LearningRate", f.Path)
	require.Same(t, f, FieldOfPath("Optimizer.LearningRate"))
	require.Nil(t, FieldOfPath("Optimizer.Nothing"))
}

// A setting that does not exist is refused with the list of those that do, from the table; a
// malformed value with the setting's name and range; a length given twice as a ConfigError.
// Settings are unchanged by a refused Apply.
func TestApplyRefusals(t *testing.T) {
	s := Defaults()
	err := s.Apply(map[string]string{"steps": "10", "sed": "1"})
	var uf *UnknownFieldError
	require.ErrorAs(t, err, &uf)
	require.Equal(t, "sed", uf.Name)
	require.Equal(t, FieldNames(), uf.Names)
	require.ErrorContains(t, err, `training: no setting "sed": the settings are recipe, dataset, labels, model, head, guard, batch, seed, `)
	require.Equal(t, Defaults(), s, "unchanged")

	for _, c := range []struct {
		name, value, want string
		unknown           bool
	}{
		{"seed", "x", `training: setting seed="x": use a whole number`, false},
		{"lr", "fast", `training: setting lr="fast": use a number >= 0`, false},
		{"lr", "NaN", `training: setting lr="NaN": use a number >= 0`, false},
		{"augment", "maybe", `training: setting augment="maybe": use true or false`, false},
		{"whiten-bias-epochs", "1.5", `training: setting whiten-bias-epochs="1.5": use a whole number >= 0`, false},
		{"model", "vgg", `training: unknown setting model="vgg": use one of linear, cnn, resnet18, resnet20, airbench94`, true},
		{"recipe", "airbench96", `training: unknown setting recipe="airbench96": use one of airbench94`, true},
		{"devices", "0", `backends: --devices "0": use a positive number or all`, false},
	} {
		s := with(t, Defaults(), map[string]string{"optimizer": "nesterov"})
		err := s.Apply(map[string]string{c.name: c.value})
		require.Error(t, err, c.name)
		if c.name == "devices" {
			require.ErrorContains(t, err, c.value, c.name)
			continue
		}
		require.EqualError(t, err, c.want)
		var ve *ValueError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, []any{c.name, c.value, c.unknown}, []any{ve.Field, ve.Value, ve.Unknown})
	}

	err = s.Apply(map[string]string{"dataset": "svhn"})
	var ve *ValueError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, `data: unknown dataset "svhn": use "cifar10" or "cifar100"`, ve.Err.Error())

	err = s.Apply(map[string]string{"steps": "3", "epochs": "1"})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "Run.Steps/Run.Epochs", ce.Field)
}

// Settings given together apply in table order whatever the map's order: the recipe first (it
// replaces the settings), the optimizer before its own settings, the dataset before its labels;
// a transfer without a model takes its source's.
func TestApplyInTableOrder(t *testing.T) {
	s := with(t, Defaults(), map[string]string{"momentum": "0.9", "optimizer": "nesterov", "recipe": "airbench94",
		"labels": "coarse", "dataset": "cifar100", "steps": "5"})
	require.Equal(t, []any{"airbench94", 0.9, 11.5, "cifar100-coarse", 5, 0.0}, []any{s.Model.Arch, s.Optimizer.(optimizers.Nesterov).Momentum,
		s.Optimizer.(optimizers.Nesterov).LearningRate, s.Data.Spec.ID(), s.Run.Steps, s.Run.Epochs}, "the recipe's epochs replaced by the steps")
	s = with(t, Defaults(), map[string]string{"from": "/runs/a", "steps": "2"})
	require.Equal(t, ArchOfSource, s.Model.Arch)
	s = with(t, Defaults(), map[string]string{"from": "/runs/a", "model": "cnn", "steps": "2"})
	require.Equal(t, "cnn", s.Model.Arch)
	s = with(t, Defaults(), map[string]string{"guard": "false"})
	require.True(t, s.Model.Unguarded)
}

// Settings are a value: JSON (run.json, the checkpoint, the lab process) gives them back
// exactly, with the optimizer's type; an unknown algorithm or a newer format is refused in one
// line.
func TestSettingsJSONRoundTrip(t *testing.T) {
	for _, s := range []Settings{Defaults(), Airbench94(), with(t, Defaults(), map[string]string{"optimizer": "adamw", "weight-decay": "0.01",
		"schedule": "cosine", "warmup": "2", "steps": "9", "from": "/runs/a", "freeze": "backbone", "devices": "all", "precision": "bf16-mixed"})} {
		for _, algo := range optimizers.Algorithms() {
			o, err := optimizers.New(algo)
			require.NoError(t, err)
			s.Optimizer = o
			b, err := json.Marshal(s)
			require.NoError(t, err)
			var back Settings
			require.NoError(t, json.Unmarshal(b, &back), string(b))
			require.Equal(t, s, back, string(b))
		}
	}
	var s Settings
	err := json.Unmarshal([]byte(`{"format": 99, "optimizer": {"algorithm": "adam"}}`), &s)
	var fe *runs.FormatError
	require.True(t, errors.As(err, &fe), "%v", err)
	require.ErrorContains(t, err, "99")
	err = json.Unmarshal([]byte(`{"format": 2, "optimizer": {"algorithm": "lion"}}`), &s)
	require.ErrorContains(t, err, `"lion"`)
}

// ProgramKey is the table's: a setting that shapes a program, or a fed one that the programs
// hold as a constant all the same (label smoothing on or off, AdamW's weight decay),
// changes it; a fed value (the programs read it at run time) or a setting of the host alone
// does not.
func TestProgramKeyFromTheTable(t *testing.T) {
	base := with(t, Defaults(), map[string]string{"steps": "20", "model": "cnn"})
	key := func(s Settings) ProgramKey {
		p, err := resolved(s, 256)
		require.NoError(t, err)
		return programKey(p, nil, 1)
	}
	k0 := key(base)
	for _, c := range []struct {
		name, value string
		same        bool
	}{
		{"batch", "64", false}, {"tta", "1", false}, {"precision", "bf16-mixed", false},
		{"optimizer", "sgd", false}, {"label-smoothing", "0.1", false}, {"eval-batch", "50", false}, {"lookahead", "true", false},
		{"lr", "0.01", true}, {"seed", "3", true}, {"steps", "30", true},
		{"log-every", "3", true}, {"history-every", "2", true}, {"checkpoint-every", "5", true}, {"no-eval", "true", true},
		{"eval-every", "4", true}, {"checkpoint", "/runs/x", true}, {"augment", "true", true}, {"augmentation", "altflip-translate", true},
	} {
		f, err := LookupField(c.name)
		require.NoError(t, err)
		require.Equal(t, c.same, f.Role != Shapes && f.keyed == nil, c.name)
		k := key(with(t, base, map[string]string{c.name: c.value}))
		if c.same {
			require.Equal(t, k0, k, c.name)
		} else {
			require.NotEqual(t, k0, k, c.name)
		}
	}
	var shapes, fed []string
	for _, f := range Fields() {
		switch f.Role {
		case Shapes:
			shapes = append(shapes, f.Name)
		case Fed:
			fed = append(fed, f.Name)
		}
	}
	require.Subset(t, shapes, []string{"model", "head", "batch", "precision", "devices", "optimizer", "tta"})
	require.Subset(t, fed, []string{"lr", "warmup", "min-lr", "momentum", "weight-decay", "bias-scaler", "label-smoothing", "steps",
		"epochs", "seed"})
	require.False(t, slices.Contains(shapes, "lr"))

	// Fed values the programs hold as constants all the same are keyed: label smoothing's value
	// in bf16-mixed, AdamW's weight decay. The lookahead's end (its run's steps) is fed.
	lookahead := with(t, base, map[string]string{"lookahead": "true"})
	require.Equal(t, key(lookahead), key(with(t, lookahead, map[string]string{"steps": "30"})), "the lookahead's end, fed")
	bf16 := with(t, base, map[string]string{"precision": "bf16-mixed", "label-smoothing": "0.1"})
	require.NotEqual(t, key(bf16), key(with(t, bf16, map[string]string{"label-smoothing": "0.2"})), "smoothing in bf16-mixed")
	smooth := with(t, base, map[string]string{"label-smoothing": "0.1"})
	require.Equal(t, key(smooth), key(with(t, smooth, map[string]string{"label-smoothing": "0.2"})), "smoothing's value, fed")
	adamw := with(t, base, map[string]string{"optimizer": "adamw"})
	require.NotEqual(t, key(adamw), key(with(t, adamw, map[string]string{"weight-decay": "0.01"})), "AdamW's weight decay")
	require.Equal(t, key(adamw), key(with(t, adamw, map[string]string{"lr": "0.01"})), "AdamW's learning rate, fed")
}

// TestRefusalsFromTheRows: every value Validate refused at f035eac is refused, with the same
// setting (ConfigError.Field, its row's Path) and value, and now by the setting's row: its
// reason is the row's Range, the words its flag's help and a malformed value's error say, and
// Set refuses the same value as written with the same error (Apply, a sweep's axis). At f035eac
// the ranges were written again in Validate, some settings checked together (a negative weight
// decay or minimum learning rate was refused as Optimizer.LearningRate).
func TestRefusalsFromTheRows(t *testing.T) {
	nesterov := with(t, Defaults(), map[string]string{"optimizer": "nesterov", "steps": "10"})
	for _, c := range []struct {
		name, value string // the row and the value, as written
		edit        func(*Settings)
	}{
		{"recipe", `"airbench96"`, func(s *Settings) { s.Recipe = "airbench96" }},
		{"model", `"vgg"`, func(s *Settings) { s.Model.Arch = "vgg" }},
		{"head", "-1", func(s *Settings) { s.Model.Head = -1 }},
		{"batch", "0", func(s *Settings) { s.Data.BatchSize = 0 }},
		{"batch", "-4", func(s *Settings) { s.Data.BatchSize = -4 }},
		{"augmentation", `"cutout"`, func(s *Settings) { s.Data.Augmentation = "cutout" }},
		{"lr", "-0.1", func(s *Settings) { s.Optimizer = optimizers.Adam{LearningRate: -0.1} }},
		{"weight-decay", "-1", func(s *Settings) { s.Optimizer = optimizers.AdamW{LearningRate: 0.1, WeightDecay: -1} }},
		{"momentum", "1", func(s *Settings) { n := s.Optimizer.(optimizers.Nesterov); n.Momentum = 1; s.Optimizer = n }},
		{"momentum", "-0.5", func(s *Settings) { n := s.Optimizer.(optimizers.Nesterov); n.Momentum = -0.5; s.Optimizer = n }},
		{"bias-scaler", "-1", func(s *Settings) { n := s.Optimizer.(optimizers.Nesterov); n.BiasScaler = -1; s.Optimizer = n }},
		{"whiten-bias-epochs", "-1", func(s *Settings) { n := s.Optimizer.(optimizers.Nesterov); n.WhitenBiasEpochs = -1; s.Optimizer = n }},
		{"label-smoothing", "1", func(s *Settings) { s.Run.LabelSmoothing = 1 }},
		{"label-smoothing", "-0.1", func(s *Settings) { s.Run.LabelSmoothing = -0.1 }},
		{"schedule", `"step"`, func(s *Settings) { s.Schedule.Name = "step" }},
		{"min-lr", "-1", func(s *Settings) { s.Schedule.Name, s.Schedule.MinLearningRate = optimizers.ScheduleCosine, -1 }},
		{"warmup", "-1", func(s *Settings) { s.Schedule.Name, s.Schedule.WarmupSteps = optimizers.ScheduleCosine, -1 }},
		{"steps", "-5", func(s *Settings) { s.Run.Steps = -5 }},
		{"epochs", "-1", func(s *Settings) { s.Run.Steps, s.Run.Epochs = 0, -1 }},
		{"freeze", `"head"`, func(s *Settings) { s.Transfer.Freeze = "head" }},
		{"backbone-lr", "-1", func(s *Settings) { s.Transfer.From, s.Transfer.BackboneLearningRate = "/runs/a", -1 }},
		{"tta", "3", func(s *Settings) { s.Eval.TTA = 3 }},
		{"tta", "-1", func(s *Settings) { s.Eval.TTA = -1 }},
		{"eval-every", "-2", func(s *Settings) { s.Eval.Every = -2 }},
		{"eval-examples", "-1", func(s *Settings) { s.Eval.Examples = -1 }},
		{"eval-batch", "0", func(s *Settings) { s.Eval.BatchSize = 0 }},
		{"checkpoint-every", "-1", func(s *Settings) { s.Checkpoint.Every = -1 }},
		{"checkpoint-keep", "0", func(s *Settings) { s.Checkpoint.Keep = 0 }},
		{"devices", "-3", func(s *Settings) { s.Compute.Devices = -3 }},
		{"precision", `"fp16"`, func(s *Settings) { s.Compute.Precision = "fp16" }},
		{"history-every", "-1", func(s *Settings) { s.Record.HistoryEvery = -1 }},
		{"log-every", "-1", func(s *Settings) { s.Record.LogEvery = -1 }},
	} {
		f, err := LookupField(c.name)
		require.NoError(t, err)
		want := &ConfigError{Field: f.Path, Value: c.value, Reason: "use " + f.Range}
		s := nesterov
		c.edit(&s)
		var ce *ConfigError
		require.ErrorAs(t, s.Validate(), &ce, "%s=%s", c.name, c.value)
		require.Equal(t, want, ce, "%s=%s: Validate", c.name, c.value)

		written := strings.Trim(c.value, `"`)
		if c.name == "devices" || c.name == "weight-decay" || c.name == "lr" {
			continue // "-3" is not a number of devices as written (backends.ParseDevices); an optimizer's own values: below
		}
		s = nesterov
		if c.name == "backbone-lr" {
			s.Transfer.From = "/runs/a"
		}
		err = f.Set(&s, written)
		var ve *ValueError
		if errors.As(err, &ve) {
			require.True(t, ve.Unknown, "%s=%s: Set: %v", c.name, written, err) // a name no row takes
			require.Equal(t, f.Range, ve.Range)
			continue
		}
		require.ErrorAs(t, err, &ce, "%s=%s: Set", c.name, written)
		require.Equal(t, want, ce, "%s=%s: Set", c.name, written)
	}
	s := nesterov
	require.Equal(t, &ConfigError{Field: "Optimizer.LearningRate", Value: "-1", Reason: "use a number >= 0"},
		s.Apply(map[string]string{"lr": "-1"}))
	s = with(t, Defaults(), map[string]string{"optimizer": "adamw"})
	require.Equal(t, &ConfigError{Field: "Optimizer.WeightDecay", Value: "-1", Reason: "use a number >= 0"},
		s.Apply(map[string]string{"weight-decay": "-1"}))
}
