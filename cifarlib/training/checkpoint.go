package training

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute"
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
	// A transferred run's source and recipe (Config.From, Freeze, BackboneLearningRate).
	ckptParamFrom       = "cifarlab_transferred_from"
	ckptParamFreeze     = "cifarlab_freeze"
	ckptParamBackboneLR = "cifarlab_backbone_learning_rate"
)

// ErrNoCheckpoint is returned (wrapped) when a directory holds no checkpoint to load.
var ErrNoCheckpoint = errors.New("cifarlib: no checkpoint")

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
	BatchSize       int     `json:"batch_size"`
	Seed            int64   `json:"seed"`
	Augment         bool    `json:"augment"`
	Optimizer       string  `json:"optimizer"`
	LearningRate    float64 `json:"learning_rate"`
	WeightDecay     float64 `json:"weight_decay"`
	Schedule        string  `json:"schedule"`
	WarmupSteps     int     `json:"warmup_steps"`
	MinLearningRate float64 `json:"min_learning_rate"`
	// Steps is the target step of the run that saved it (it matters to the cosine schedule).
	Steps int `json:"steps"`
	// Unguarded is true when that run trained with the guards off.
	Unguarded bool `json:"unguarded"`
	// TransferredFrom is the run a transferred run started from (Config.From; "" when it
	// trained from scratch), with its Freeze and BackboneLearningRate.
	TransferredFrom      string  `json:"transferred_from,omitempty"`
	Freeze               string  `json:"freeze,omitempty"`
	BackboneLearningRate float64 `json:"backbone_learning_rate,omitempty"`
}

// Spec returns the dataset Spec the checkpoint was trained on.
func (ci *CheckpointInfo) Spec() (data.Spec, error) { return data.SpecByName(ci.Dataset, ci.Labels) }

// checkpointInfoFromConfig is the info a run with config c records.
func checkpointInfoFromConfig(c *Config) CheckpointInfo {
	return CheckpointInfo{Dir: c.CheckpointDir, Dataset: c.Spec.Name, Labels: c.Spec.Labels.String(), Model: c.Model,
		Head: c.headWidth(), BatchSize: c.BatchSize, Seed: c.Seed, Augment: c.Augment, Optimizer: c.Optimizer,
		LearningRate: c.LearningRate, WeightDecay: c.WeightDecay, Schedule: c.Schedule, WarmupSteps: c.WarmupSteps,
		MinLearningRate: c.MinLearningRate, Steps: c.Steps, Unguarded: c.Unguarded,
		TransferredFrom: c.From, Freeze: c.Freeze, BackboneLearningRate: c.BackboneLearningRate}
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
	})
	if ci.TransferredFrom != "" {
		root.SetParams(map[string]any{ckptParamFrom: ci.TransferredFrom, ckptParamFreeze: ci.Freeze,
			ckptParamBackboneLR: ci.BackboneLearningRate})
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

		TransferredFrom:      model.GetParamOr(root, ckptParamFrom, ""),
		Freeze:               model.GetParamOr(root, ckptParamFreeze, ""),
		BackboneLearningRate: model.GetParamOr(root, ckptParamBackboneLR, 0.0),
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
	return fmt.Sprintf("cifarlib: checkpoint %s was saved by a run with different settings (%s): resume with the "+
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
	add("optimizer", ci.Optimizer, want.Optimizer)
	add("learning rate", ci.LearningRate, want.LearningRate)
	add("weight decay", ci.WeightDecay, want.WeightDecay)
	add("schedule", ci.Schedule, want.Schedule)
	if ci.Schedule == ScheduleCosine {
		add("warmup steps", ci.WarmupSteps, want.WarmupSteps)
		add("min learning rate", ci.MinLearningRate, want.MinLearningRate)
		add("steps (the cosine schedule spans them)", ci.Steps, want.Steps)
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
	// setAside lists the incomplete checkpoints (interrupted saves) moved out of the way.
	setAside []string
}

// openTrainCheckpoint creates (or loads) the checkpoint directory for a run of config c into
// store, before any of the run's parameters are set. A loaded checkpoint must match c.
func openTrainCheckpoint(store *model.Store, c *Config) (*trainCheckpoint, error) {
	setAside, err := setAsideIncompleteCheckpoints(c.CheckpointDir)
	if err != nil {
		return nil, err
	}
	h, err := checkpoint.Build(store).Dir(c.CheckpointDir).Keep(c.CheckpointKeep).Done()
	if err != nil {
		return nil, fmt.Errorf("cifarlib: checkpoint directory %s: %w", c.CheckpointDir, err)
	}
	tc := &trainCheckpoint{handler: h, dir: c.CheckpointDir, setAside: setAside}
	has, err := h.HasCheckpoints()
	if err != nil {
		return nil, fmt.Errorf("cifarlib: checkpoint directory %s: %w", c.CheckpointDir, err)
	}
	if !has {
		return tc, nil
	}
	info, ok := checkpointInfoFromStore(store, c.CheckpointDir)
	if !ok {
		return nil, fmt.Errorf("cifarlib: %s holds a GoMLX checkpoint that cifarlib did not write (no %q parameter): "+
			"use another checkpoint directory", c.CheckpointDir, ckptParamModel)
	}
	if err := headShapeCheck(h, info, c.Spec.ID(), c.headWidth(), c.Model, true); err != nil {
		return nil, err
	}
	if diffs := info.compareForResume(checkpointInfoFromConfig(c)); len(diffs) > 0 {
		return nil, &CheckpointMismatchError{Dir: c.CheckpointDir, Diffs: diffs}
	}
	tc.resumed = &info
	return tc, nil
}

// save writes a new checkpoint (keeping the newest CheckpointKeep) and the history.
// Metric accumulators are not saved: GoMLX names them with a fresh id per run.
func (tc *trainCheckpoint) save(store *model.Store, history *runs.History) error {
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/metrics/") {
			tc.handler.ExcludeVarsFromSaving(v)
		}
	}
	if err := tc.handler.Save(); err != nil {
		return fmt.Errorf("cifarlib: saving checkpoint in %s: %w", tc.dir, err)
	}
	return history.Save(tc.dir)
}

// LoadedCheckpoint is a trained model loaded from a checkpoint directory, ready to evaluate.
type LoadedCheckpoint struct {
	// Info describes the run that saved it.
	Info CheckpointInfo
	// Trained is the model, rebuilt from Info with the model factory (same architecture and
	// head), with the checkpoint's variables in its Store (loaded lazily as the model graph asks
	// for them), on the backend given to LoadCheckpoint.
	*Trained
	// History is the run's History (empty if none was saved).
	History *runs.History
}

// LoadCheckpoint loads the latest checkpoint in dir, rebuilding its model for backend.
func LoadCheckpoint(dir string, backend compute.Backend) (*LoadedCheckpoint, error) {
	store, _, info, err := readRunCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	spec, err := info.Spec()
	if err != nil {
		return nil, fmt.Errorf("cifarlib: checkpoint %s: %w", dir, err)
	}
	m, err := info.modelBuilder(spec).Backend(backend).Done()
	if err != nil {
		return nil, fmt.Errorf("cifarlib: checkpoint %s: rebuilding model %s: %w", dir, info.Model, err)
	}
	return loadedCheckpoint(store, info, m, backend)
}

// modelBuilder starts the run's model (its architecture and head width) for spec; the head is
// marked overridden only when it differs from spec's classes.
func (ci *CheckpointInfo) modelBuilder(spec data.Spec) *cifarlib.ModelBuilder {
	b := cifarlib.NewModel(spec, ci.Model)
	if ci.Head != spec.NumClasses {
		b = b.Head(ci.Head)
	}
	return b
}

// loadedCheckpoint pairs the checkpoint's store with the model m and reads the run's History.
func loadedCheckpoint(store *model.Store, info CheckpointInfo, m *cifarlib.Model, backend compute.Backend) (*LoadedCheckpoint, error) {
	hist, err := runs.LoadHistory(info.Dir)
	if err != nil {
		return nil, err
	}
	return &LoadedCheckpoint{Info: info, Trained: &Trained{Model: m, Store: store, Backend: backend}, History: hist}, nil
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
		return nil, nil, CheckpointInfo{}, fmt.Errorf("cifarlib: %s holds a GoMLX checkpoint that cifarlib did not write (no %q parameter)", dir, ckptParamModel)
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

// LoadCheckpointInto loads the latest checkpoint in dir into the model m, as it is: PyTorch's
// model.load_state_dict(checkpoint), strict. The run must have m's architecture
// (*ArchMismatchError) and head width (*ShapeMismatchError, naming the head variable, both shapes
// and both datasets): a checkpoint is never reshaped to fit; a transfer (training.Config.From) is
// how a trained run moves to a dataset with another number of classes.
func LoadCheckpointInto(dir string, m *cifarlib.Model, backend compute.Backend) (*LoadedCheckpoint, error) {
	store, h, info, err := readRunCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if info.Model != m.Arch {
		return nil, &ArchMismatchError{Dir: dir, Saved: info.Model, Requested: m.Arch}
	}
	if err := headShapeCheck(h, info, m.Spec.ID(), m.NumClasses, m.Arch, false); err != nil {
		return nil, err
	}
	return loadedCheckpoint(store, info, m, backend)
}
