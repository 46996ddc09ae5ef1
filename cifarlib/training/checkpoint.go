package training

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// Store parameters under which a checkpoint records the run that wrote it (GoMLX's checkpoint
// package saves the Store's parameters in its JSON file).
const (
	ckptParamDataset   = "cifarlab_dataset"
	ckptParamLabels    = "cifarlab_labels"
	ckptParamModel     = "cifarlab_model"
	ckptParamHead      = "cifarlab_head"
	ckptParamBatch     = "cifarlab_batch_size"
	ckptParamSeed      = "cifarlab_seed"
	ckptParamAugment   = "cifarlab_augment"
	ckptParamSchedule  = "cifarlab_schedule"
	ckptParamSteps     = "cifarlab_steps"
	ckptParamWarmup    = "cifarlab_warmup_steps"
	ckptParamMinLR     = "cifarlab_min_learning_rate"
	ckptParamDecay     = "cifarlab_weight_decay"
	ckptParamUnguarded = "cifarlab_unguarded"
	// The airbench94 recipe's settings (Config.Recipe, Momentum, BiasScaler, WhitenBiasEpochs,
	// LabelSmoothing, Lookahead); absent from older checkpoints, whose zero values they equal.
	ckptParamRecipe         = "cifarlab_recipe"
	ckptParamMomentum       = "cifarlab_momentum"
	ckptParamBiasScaler     = "cifarlab_bias_scaler"
	ckptParamWhitenBias     = "cifarlab_whiten_bias_epochs"
	ckptParamLabelSmoothing = "cifarlab_label_smoothing"
	ckptParamLookahead      = "cifarlab_lookahead"
	ckptParamAugmentation   = "cifarlab_augmentation"
	// A transferred run's source and recipe (Config.From, Freeze, BackboneLearningRate).
	ckptParamFrom       = "cifarlab_transferred_from"
	ckptParamFreeze     = "cifarlab_freeze"
	ckptParamBackboneLR = "cifarlab_backbone_learning_rate"
)

// ErrNoCheckpoint is returned (wrapped) when a directory holds no checkpoint to load.
var ErrNoCheckpoint = errors.New("training: no checkpoint")

// CheckpointInfo is what a checkpoint records about the training run that saved it.
type CheckpointInfo struct {
	// Dir is the checkpoint directory.
	Dir string `json:"dir"`
	// Step is the global step of the latest checkpoint.
	Step int `json:"step"`
	// Dataset is "cifar10" or "cifar100" and Labels "fine" or "coarse".
	Dataset string `json:"dataset"`
	Labels  string `json:"labels"`
	// Model is the architecture and Head the classifier width.
	Model string `json:"model"`
	Head  int    `json:"head"`
	// The settings that fix the data order and the optimisation: a resumed run must match them.
	// Augmentation is the scheme of Augment when it is not the default crop-flip (which is "", as
	// in checkpoints older than the choice).
	BatchSize       int     `json:"batch_size"`
	Seed            int64   `json:"seed"`
	Augment         bool    `json:"augment"`
	Augmentation    string  `json:"augmentation,omitempty"`
	Optimizer       string  `json:"optimizer"`
	LearningRate    float64 `json:"learning_rate"`
	WeightDecay     float64 `json:"weight_decay"`
	Schedule        string  `json:"schedule"`
	WarmupSteps     int     `json:"warmup_steps"`
	MinLearningRate float64 `json:"min_learning_rate"`
	// The airbench94 recipe's settings (see Config): the recipe named, nesterov's momentum, bias
	// scaler and whitening-bias epochs, label smoothing and lookahead.
	Recipe           string  `json:"recipe,omitempty"`
	Momentum         float64 `json:"momentum,omitempty"`
	BiasScaler       float64 `json:"bias_scaler,omitempty"`
	WhitenBiasEpochs int     `json:"whiten_bias_epochs,omitempty"`
	LabelSmoothing   float64 `json:"label_smoothing,omitempty"`
	Lookahead        bool    `json:"lookahead,omitempty"`
	// Steps is the target step of the run that saved it (it matters to the cosine and triangle
	// schedules and to lookahead).
	Steps int `json:"steps"`
	// Unguarded is true when that run trained with the guards off.
	Unguarded bool `json:"unguarded"`
	// TransferredFrom is the run a transferred run started from (Config.From; "" when it
	// trained from scratch), with its Freeze and BackboneLearningRate.
	TransferredFrom      string  `json:"transferred_from,omitempty"`
	Freeze               string  `json:"freeze,omitempty"`
	BackboneLearningRate float64 `json:"backbone_learning_rate,omitempty"`
	// Input is the normalisation the run's model expects when it is not its dataset's (an
	// imported model's: see cifarlib.InputNormalization); zero otherwise.
	Input cifarlib.InputNormalization `json:"input_normalization,omitzero"`
	// ImportedFrom is the file an imported run was made from (WriteImportedRun), or "".
	ImportedFrom string `json:"imported_from,omitempty"`
}

// Spec returns the dataset Spec the checkpoint was trained on.
func (ci *CheckpointInfo) Spec() (data.Spec, error) { return data.SpecByName(ci.Dataset, ci.Labels) }

// specID is the Spec ID of the dataset a checkpoint recorded.
func specID(info CheckpointInfo) string {
	if spec, err := info.Spec(); err == nil {
		return spec.ID()
	}
	return info.Dataset
}

// checkpointInfoFromConfig is the info a run with config c records.
func checkpointInfoFromConfig(c *Config) CheckpointInfo {
	return CheckpointInfo{Dir: c.CheckpointDir, Dataset: c.Spec.Name, Labels: c.Spec.Labels.String(), Model: c.Model,
		Head: c.headWidth(), BatchSize: c.BatchSize, Seed: c.Seed, Augment: c.Augment, Augmentation: nonDefaultAugmentation(c), Optimizer: c.Optimizer,
		LearningRate: c.LearningRate, WeightDecay: c.WeightDecay, Schedule: c.Schedule, WarmupSteps: c.WarmupSteps,
		MinLearningRate: c.MinLearningRate, Steps: c.Steps, Unguarded: c.Unguarded,
		Recipe: c.Recipe, Momentum: c.Momentum, BiasScaler: c.BiasScaler, WhitenBiasEpochs: c.WhitenBiasEpochs,
		LabelSmoothing: c.LabelSmoothing, Lookahead: c.Lookahead,
		TransferredFrom: c.From, Freeze: c.Freeze, BackboneLearningRate: c.BackboneLearningRate}
}

// nonDefaultAugmentation is the name of c's augmentation scheme when it augments with another
// than the default (data.AugmentCropFlip), else "".
func nonDefaultAugmentation(c *Config) string {
	if !c.Augment || c.Augmentation.String() == data.AugmentCropFlip.String() {
		return ""
	}
	return c.Augmentation.String()
}

// setStoreParams records info in the Store's parameters, which the checkpoint saves.
func (ci *CheckpointInfo) setStoreParams(store *model.Store) {
	root := store.RootScope()
	root.SetParams(map[string]any{
		ckptParamDataset: ci.Dataset, ckptParamLabels: ci.Labels, ckptParamModel: ci.Model, ckptParamHead: ci.Head,
		ckptParamBatch: ci.BatchSize, ckptParamSeed: ci.Seed, ckptParamAugment: ci.Augment,
		optimizer.ParamOptimizer: ci.Optimizer, optimizer.ParamLearningRate: ci.LearningRate,
		ckptParamDecay: ci.WeightDecay, ckptParamSchedule: ci.Schedule, ckptParamWarmup: ci.WarmupSteps,
		ckptParamMinLR: ci.MinLearningRate, ckptParamSteps: ci.Steps, ckptParamUnguarded: ci.Unguarded,
		ckptParamAugmentation: ci.Augmentation, ckptParamRecipe: ci.Recipe, ckptParamMomentum: ci.Momentum, ckptParamBiasScaler: ci.BiasScaler,
		ckptParamWhitenBias: ci.WhitenBiasEpochs, ckptParamLabelSmoothing: ci.LabelSmoothing, ckptParamLookahead: ci.Lookahead,
	})
	if ci.TransferredFrom != "" {
		root.SetParams(map[string]any{ckptParamFrom: ci.TransferredFrom, ckptParamFreeze: ci.Freeze,
			ckptParamBackboneLR: ci.BackboneLearningRate})
	}
	setInputParams(store, ci.Input)
	if ci.ImportedFrom != "" {
		root.SetParams(map[string]any{ckptParamImported: ci.ImportedFrom})
	}
}

// checkpointInfoFromStore reads the parameters a checkpoint restored into store. ok is false
// when the store holds no cifarlib run parameters (an empty directory, or a foreign checkpoint).
func checkpointInfoFromStore(store *model.Store, dir string) (info CheckpointInfo, ok bool) {
	root := store.RootScope()
	if _, found := root.GetParam(ckptParamModel); !found {
		return info, false
	}
	info = CheckpointInfo{Dir: dir,
		Dataset:         model.GetParamOr(root, ckptParamDataset, ""),
		Labels:          model.GetParamOr(root, ckptParamLabels, ""),
		Model:           model.GetParamOr(root, ckptParamModel, ""),
		Head:            model.GetParamOr(root, ckptParamHead, 0),
		BatchSize:       model.GetParamOr(root, ckptParamBatch, 0),
		Seed:            model.GetParamOr(root, ckptParamSeed, int64(0)),
		Augment:         model.GetParamOr(root, ckptParamAugment, false),
		Optimizer:       model.GetParamOr(root, optimizer.ParamOptimizer, ""),
		LearningRate:    model.GetParamOr(root, optimizer.ParamLearningRate, 0.0),
		WeightDecay:     model.GetParamOr(root, ckptParamDecay, 0.0),
		Schedule:        model.GetParamOr(root, ckptParamSchedule, ""),
		WarmupSteps:     model.GetParamOr(root, ckptParamWarmup, 0),
		MinLearningRate: model.GetParamOr(root, ckptParamMinLR, 0.0),
		Steps:           model.GetParamOr(root, ckptParamSteps, 0),
		Unguarded:       model.GetParamOr(root, ckptParamUnguarded, false),

		Augmentation:     model.GetParamOr(root, ckptParamAugmentation, ""),
		Recipe:           model.GetParamOr(root, ckptParamRecipe, ""),
		Momentum:         model.GetParamOr(root, ckptParamMomentum, 0.0),
		BiasScaler:       model.GetParamOr(root, ckptParamBiasScaler, 0.0),
		WhitenBiasEpochs: model.GetParamOr(root, ckptParamWhitenBias, 0),
		LabelSmoothing:   model.GetParamOr(root, ckptParamLabelSmoothing, 0.0),
		Lookahead:        model.GetParamOr(root, ckptParamLookahead, false),

		TransferredFrom:      model.GetParamOr(root, ckptParamFrom, ""),
		Freeze:               model.GetParamOr(root, ckptParamFreeze, ""),
		BackboneLearningRate: model.GetParamOr(root, ckptParamBackboneLR, 0.0),
		ImportedFrom:         model.GetParamOr(root, ckptParamImported, ""),
	}
	info.Step = int(optimizer.GetGlobalStep(store))
	return info, true
}

// CheckpointMismatchError reports a resume whose settings differ from those of the run that
// saved the checkpoint: continuing would not be the same training (or would not even load).
type CheckpointMismatchError struct {
	// Dir is the checkpoint directory.
	Dir string
	// Diffs lists each differing setting as "name: saved X, requested Y".
	Diffs []string
}

// Error implements error, listing every differing setting.
func (e *CheckpointMismatchError) Error() string {
	return fmt.Sprintf("training: checkpoint %s was saved by a run with different settings (%s): resume with the "+
		"same settings, or use a new checkpoint directory", e.Dir, strings.Join(e.Diffs, "; "))
}

// compareForResume lists the settings of want that differ from the saved ones. Steps only
// matters to the cosine schedule (its period spans the run); the guard may change freely.
func (ci *CheckpointInfo) compareForResume(want CheckpointInfo) []string {
	var diffs []string
	add := func(name string, saved, requested any) {
		if fmt.Sprint(saved) != fmt.Sprint(requested) {
			diffs = append(diffs, fmt.Sprintf("%s: saved %v, requested %v", name, saved, requested))
		}
	}
	add("dataset", ci.Dataset, want.Dataset)
	add("labels", ci.Labels, want.Labels)
	add("model", ci.Model, want.Model)
	add("head", ci.Head, want.Head)
	add("batch size", ci.BatchSize, want.BatchSize)
	add("seed", ci.Seed, want.Seed)
	add("augment", ci.Augment, want.Augment)
	add("augmentation", ci.Augmentation, want.Augmentation)
	add("optimizer", ci.Optimizer, want.Optimizer)
	add("learning rate", ci.LearningRate, want.LearningRate)
	add("weight decay", ci.WeightDecay, want.WeightDecay)
	add("momentum", ci.Momentum, want.Momentum)
	add("bias scaler", ci.BiasScaler, want.BiasScaler)
	add("whitening bias epochs", ci.WhitenBiasEpochs, want.WhitenBiasEpochs)
	add("label smoothing", ci.LabelSmoothing, want.LabelSmoothing)
	add("lookahead", ci.Lookahead, want.Lookahead)
	add("schedule", ci.Schedule, want.Schedule)
	if ci.Schedule == ScheduleCosine {
		add("warmup steps", ci.WarmupSteps, want.WarmupSteps)
		add("min learning rate", ci.MinLearningRate, want.MinLearningRate)
		add("steps (the cosine schedule spans them)", ci.Steps, want.Steps)
	}
	if ci.Schedule == ScheduleTriangle || ci.Lookahead {
		add("steps (the triangle schedule and lookahead span them)", ci.Steps, want.Steps)
	}
	add("transferred from", ci.TransferredFrom, want.TransferredFrom)
	add("freeze", ci.Freeze, want.Freeze)
	add("backbone learning rate", ci.BackboneLearningRate, want.BackboneLearningRate)
	return diffs
}

// trainCheckpoint is the checkpoint side of a Trainer: GoMLX's checkpoint.Handler plus the
// History file next to it.
type trainCheckpoint struct {
	handler *checkpoint.Handler
	dir     string
	// resumed is set when the directory held a checkpoint, with what it recorded.
	resumed *CheckpointInfo
	// imported is set instead when that checkpoint has no training settings (an imported
	// run's): training continues from its weights with the run's own settings.
	imported *CheckpointInfo
	// setAside lists the incomplete checkpoints (interrupted saves) moved out of the way.
	setAside []string
}

// openCheckpoints is the checkpointing part of a Trainer for plan p and its model m: it
// creates (or resumes from) the checkpoint directory, loading a checkpoint's variables and
// History, gives m the input normalisation its weights expect (adoptInput), and records the
// run's settings in store's parameters (replacing those a resumed checkpoint loaded), which
// every checkpoint saves. Without a CheckpointDir the run has no checkpoints (nil) and a fresh
// History.
func openCheckpoints(p *plan, m *cifarlib.Model, store *model.Store, log runLog) (*trainCheckpoint, *runs.History, error) {
	want := checkpointInfoFromConfig(&p.Config)
	history := &runs.History{TopK: p.topK()}
	var tc *trainCheckpoint
	if p.CheckpointDir != "" {
		var err error
		if tc, err = openTrainCheckpoint(store, p, want); err != nil {
			return nil, nil, err
		}
	}
	m.Input = tc.adoptInput(p, m.Input)
	recordSettings(p, store, m.Input)
	if tc == nil {
		return nil, history, nil
	}
	for _, name := range tc.setAside {
		log("checkpoint %s in %s was incomplete (an interrupted save): set aside as %s.{json,bin}%s",
			name, p.CheckpointDir, name, incompleteCheckpointSuffix)
	}
	if tc.resumed != nil {
		var err error
		if history, err = runs.LoadHistory(p.CheckpointDir); err != nil {
			return nil, nil, err
		}
		history.TopK = p.topK()
	}
	tc.noteImported(p, log)
	return tc, history, nil
}

// recordSettings records the settings of a run of plan p, whose model expects input, in
// store's parameters (replacing those a resumed checkpoint loaded), which every checkpoint saves.
func recordSettings(p *plan, store *model.Store, input cifarlib.InputNormalization) {
	info := checkpointInfoFromConfig(&p.Config)
	info.Input = input
	info.setStoreParams(store)
}

// adoptInput returns the input normalisation the weights of a run of plan p expect: a resumed
// or imported run's recorded one (tc nil: none), or a transfer source's. Runs that record none
// keep own, their dataset's.
func (tc *trainCheckpoint) adoptInput(p *plan, own cifarlib.InputNormalization) cifarlib.InputNormalization {
	switch {
	case tc != nil && tc.resumed != nil:
		return tc.resumed.Input
	case tc != nil && tc.imported != nil:
		return tc.imported.Input
	case p.source != nil:
		return p.source.info.Input
	}
	return own
}

// openTrainCheckpoint creates (or loads) the checkpoint directory of plan p into store, before
// any of the run's parameters are set, for a run that records want: a loaded checkpoint must
// match want.
func openTrainCheckpoint(store *model.Store, p *plan, want CheckpointInfo) (*trainCheckpoint, error) {
	dir := p.CheckpointDir
	setAside, err := setAsideIncompleteCheckpoints(dir)
	if err != nil {
		return nil, err
	}
	h, err := checkpoint.Build(store).Dir(dir).Keep(p.CheckpointKeep).Done()
	if err != nil {
		return nil, fmt.Errorf("training: checkpoint directory %s: %w", dir, err)
	}
	tc := &trainCheckpoint{handler: h, dir: dir, setAside: setAside}
	has, err := h.HasCheckpoints()
	if err != nil {
		return nil, fmt.Errorf("training: checkpoint directory %s: %w", dir, err)
	}
	if !has {
		return tc, nil
	}
	info, ok := checkpointInfoFromStore(store, dir)
	if !ok {
		return nil, fmt.Errorf("training: %s holds a GoMLX checkpoint that cifarlib did not write (no %q parameter): "+
			"use another checkpoint directory", dir, ckptParamModel)
	}
	if info.Input, err = inputFromStore(store); err != nil {
		return nil, err
	}
	diffs := info.compareForResume(want)
	// A different head is a *ShapeMismatchError, which says more than the settings' diff.
	if err := headShapeCheck(h, info, p.dataset, want.Head, want.Model, true); err != nil {
		return nil, err
	}
	if info.hasNoTrainingSettings() { // an import: nothing to resume but its weights
		if err := info.checkTrainOn(want); err != nil {
			return nil, err
		}
		tc.imported = &info
		return tc, nil
	}
	if len(diffs) > 0 {
		return nil, &CheckpointMismatchError{Dir: dir, Diffs: diffs}
	}
	tc.resumed = &info
	return tc, nil
}

// resumedAt returns the step the run resumed from, and whether it resumed (false for a fresh
// run and for a run without checkpoints, tc nil).
func (tc *trainCheckpoint) resumedAt() (step int, ok bool) {
	if tc == nil || tc.resumed == nil {
		return 0, false
	}
	return tc.resumed.Step, true
}

// save writes a new checkpoint (keeping the newest CheckpointKeep) and the history.
// Metric accumulators are not saved: GoMLX names them with a fresh id per run; nor are the fed
// hyper-parameters (train_hyper.go): each run sets its own.
func (tc *trainCheckpoint) save(store *model.Store, history *runs.History) error {
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/metrics/") || isHyper(v) {
			tc.handler.ExcludeVarsFromSaving(v)
		}
	}
	if err := tc.handler.Save(); err != nil {
		return fmt.Errorf("training: saving checkpoint in %s: %w", tc.dir, err)
	}
	return history.Save(tc.dir)
}

// readRunCheckpoint opens the latest checkpoint of the cifarlib run in dir into a new Store
// (its variables loaded lazily, the handler's LoadedVariables holding them until then) and
// returns what the run recorded. Errors: ErrNoCheckpoint (wrapped) for a missing, empty or file
// path, *IncompleteCheckpointError for an interrupted save, *CorruptCheckpointError for files
// GoMLX cannot read, and an error naming the missing parameter for a foreign checkpoint.
func readRunCheckpoint(dir string) (*model.Store, *checkpoint.Handler, CheckpointInfo, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, CheckpointInfo{}, fmt.Errorf("%w in %s: %w", ErrNoCheckpoint, dir, err)
	}
	if !fi.IsDir() {
		return nil, nil, CheckpointInfo{}, fmt.Errorf("%w: %s is a file, not a checkpoint directory", ErrNoCheckpoint, dir)
	}
	if names, reason, err := incompleteCheckpoints(dir); err == nil && len(names) > 0 {
		return nil, nil, CheckpointInfo{}, &IncompleteCheckpointError{Dir: dir, Files: names, Reason: reason}
	}
	store := model.NewStore()
	h, err := checkpoint.Build(store).Dir(dir).Done()
	if err != nil {
		return nil, nil, CheckpointInfo{}, &CorruptCheckpointError{Dir: dir, Err: err}
	}
	if has, err := h.HasCheckpoints(); err != nil || !has {
		return nil, nil, CheckpointInfo{}, fmt.Errorf("%w in %s: train with a checkpoint directory first (cifarlab train --checkpoint %s)", ErrNoCheckpoint, dir, dir)
	}
	info, ok := checkpointInfoFromStore(store, dir)
	if !ok {
		return nil, nil, CheckpointInfo{}, fmt.Errorf("training: %s holds a GoMLX checkpoint that cifarlib did not write (no %q parameter)", dir, ckptParamModel)
	}
	if info.Input, err = inputFromStore(store); err != nil {
		return nil, nil, CheckpointInfo{}, err
	}
	return store, h, info, nil
}

// headShapeCheck returns *ShapeMismatchError when the checkpoint h (of the run info) holds a
// head whose width differs from head, for a model of the same architecture arch built for the
// dataset with Spec ID dataset; nil otherwise.
func headShapeCheck(h *checkpoint.Handler, info CheckpointInfo, dataset string, head int, arch string, resume bool) error {
	if info.Model != arch || info.Head == head {
		return nil
	}
	_, headScope := archScopes(arch)
	path := headScope + "dense/weights" // layers.DenseWithBias in the model's "head" scope.
	saved, ok := h.LoadedVariables()["var:"+path]
	if !ok || saved.Shape().Rank() != 2 {
		return nil // The saved head is not there to compare: the settings' diff reports it.
	}
	dims := saved.Shape().Dimensions
	return &ShapeMismatchError{Dir: info.Dir, Variable: path, Saved: []int{dims[0], dims[1]}, Model: []int{dims[0], head},
		SavedDataset: specID(info), ModelDataset: dataset, SavedHead: info.Head, ModelHead: head, Resume: resume}
}

// incompleteCheckpointSuffix is appended to the files of a checkpoint that a save left
// incomplete when a resumed run sets them aside.
const incompleteCheckpointSuffix = ".incomplete"

// IncompleteCheckpointError reports that the newest checkpoint in a directory was not completely
// written (GoMLX's checkpoint.Save writes its files in place, and a crash or kill during a save
// leaves an empty or truncated .json): loading it would fail, and resuming from it is impossible.
type IncompleteCheckpointError struct {
	// Dir is the checkpoint directory.
	Dir string
	// Files are the base names (without .json/.bin) of the incomplete checkpoints, newest last.
	Files []string
	// Reason says what is wrong with the newest one.
	Reason string
}

func (e *IncompleteCheckpointError) Error() string {
	return fmt.Sprintf("training: checkpoint %s in %s is incomplete (%s; a save was interrupted): resume "+
		"training with the same --checkpoint directory to set it aside and continue from the previous one, "+
		"or delete its .json and .bin files", e.Files[len(e.Files)-1], e.Dir, e.Reason)
}

// incompleteCheckpoints returns the base names of the checkpoints in dir that are newer than
// its newest complete one and incomplete themselves, oldest first, with the reason for the newest.
// A checkpoint is complete when its .json (written last by GoMLX, after the .bin is closed)
// parses and names its variables, and its .bin exists.
func incompleteCheckpoints(dir string) (names []string, reason string, err error) {
	matches, err := filepath.Glob(filepath.Join(dir, "checkpoint-*"+checkpoint.JsonNameSuffix))
	if err != nil {
		return nil, "", err
	}
	sort.Strings(matches) // GoMLX names them checkpoint-nNNNNNNN-..., so this is oldest first
	for i := len(matches) - 1; i >= 0; i-- {
		base := strings.TrimSuffix(matches[i], checkpoint.JsonNameSuffix)
		why := checkpointProblem(base)
		if why == "" {
			break
		}
		if reason == "" {
			reason = why
		}
		names = append([]string{filepath.Base(base)}, names...)
	}
	return names, reason, nil
}

// checkpointProblem says what is wrong with the checkpoint files base.json and base.bin, or "".
func checkpointProblem(base string) string {
	data, err := os.ReadFile(base + checkpoint.JsonNameSuffix)
	if err != nil {
		return err.Error()
	}
	if len(data) == 0 {
		return "its .json is empty"
	}
	var meta struct {
		Variables []json.RawMessage `json:"Variables"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return "its .json does not parse: " + err.Error()
	}
	if meta.Variables == nil {
		return "its .json lists no variables"
	}
	if _, err := os.Stat(base + checkpoint.BinDataSuffix); err != nil {
		return "its .bin is missing"
	}
	return ""
}

// setAsideIncompleteCheckpoints renames the incomplete newest checkpoints of dir (see
// incompleteCheckpoints) to NAME.json.incomplete and NAME.bin.incomplete, so that GoMLX loads the
// newest complete one. It returns the base names it moved.
func setAsideIncompleteCheckpoints(dir string) ([]string, error) {
	names, _, err := incompleteCheckpoints(dir)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	for _, name := range names {
		for _, suffix := range []string{checkpoint.JsonNameSuffix, checkpoint.BinDataSuffix} {
			from := filepath.Join(dir, name+suffix)
			if err := os.Rename(from, from+incompleteCheckpointSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("training: setting aside the incomplete checkpoint %s: %w", from, err)
			}
		}
	}
	return names, nil
}
