package checkpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/checkpoint"
)

// Read opens the latest checkpoint of the run in dir into a new Store (its variables loaded
// lazily, the handler's LoadedVariables holding them until then) and returns what the run
// recorded. Errors: ErrNoCheckpoint (wrapped) for a missing, empty or file path, *IncompleteError
// for an interrupted save, *CorruptError for files GoMLX cannot read, and an error naming the
// missing parameter for a foreign checkpoint.
func Read(dir string) (*model.Store, *checkpoint.Handler, Params, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, Params{}, fmt.Errorf("%w in %s: %w", ErrNoCheckpoint, dir, err)
	}
	if !fi.IsDir() {
		return nil, nil, Params{}, fmt.Errorf("%w: %s is a file, not a checkpoint folder", ErrNoCheckpoint, dir)
	}
	if names, reason, err := incomplete(dir); err == nil && len(names) > 0 {
		return nil, nil, Params{}, &IncompleteError{Dir: dir, Files: names, Reason: reason}
	}
	store := model.NewStore()
	h, err := checkpoint.Build(store).Dir(dir).Done()
	if err != nil {
		return nil, nil, Params{}, &CorruptError{Dir: dir, Err: err}
	}
	if has, err := h.HasCheckpoints(); err != nil || !has {
		return nil, nil, Params{}, fmt.Errorf("%w in %s: train a run with it as its checkpoint folder first (Checkpoint.Dir, the setting checkpoint)", ErrNoCheckpoint, dir)
	}
	p, ok, err := ReadParams(store)
	if err != nil {
		return nil, nil, Params{}, err
	}
	if !ok {
		return nil, nil, Params{}, fmt.Errorf("checkpoints: %s holds a GoMLX checkpoint that cifarlib did not write (no %q parameter)", dir, paramModel)
	}
	return store, h, p, nil
}

// Open opens dir as the checkpoint folder of a run whose variables are store, keeping its keep
// newest checkpoints: it sets aside the incomplete checkpoints an interrupted save left (their
// base names returned, renamed with IncompleteSuffix), so that GoMLX loads the newest complete
// one into store, if any (Handler.HasCheckpoints), and refuses a folder whose checkpoint
// cifarlib did not write.
func Open(store *model.Store, dir string, keep int) (*checkpoint.Handler, []string, error) {
	setAside, err := setAsideIncomplete(dir)
	if err != nil {
		return nil, nil, err
	}
	h, err := checkpoint.Build(store).Dir(dir).Keep(keep).Done()
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoints: checkpoint folder %s: %w", dir, err)
	}
	if has, err := h.HasCheckpoints(); err != nil {
		return nil, nil, fmt.Errorf("checkpoints: checkpoint folder %s: %w", dir, err)
	} else if _, ours, _ := ReadParams(store); has && !ours {
		return nil, nil, fmt.Errorf("checkpoints: %s holds a GoMLX checkpoint that cifarlib did not write (no %q parameter): "+
			"use another checkpoint folder", dir, paramModel)
	}
	return h, setAside, nil
}

// Save writes a new checkpoint of h's store (keeping the newest of the folder) and history
// beside it. The metrics' accumulators are not saved (GoMLX names them with a fresh id per run),
// nor the variables exclude says (nil: none), e.g. the values a run is fed.
func Save(h *checkpoint.Handler, store *model.Store, history *runs.History, exclude func(*model.Variable) bool) error {
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/metrics/") || exclude != nil && exclude(v) {
			h.ExcludeVarsFromSaving(v)
		}
	}
	if err := h.Save(); err != nil {
		return fmt.Errorf("checkpoints: saving a checkpoint in %s: %w", h.Dir(), err)
	}
	return history.Save(h.Dir())
}

// WriteRun writes, in dir, the folder of a run made outside the lab from store (its variables
// and Params, set on it): a checkpoint at step 0, an empty history and rec as its run.json. dir
// must not exist or be empty. The folder is written under a temporary name beside it and
// renamed into place, so on any error nothing is left.
func WriteRun(dir string, store *model.Store, rec *runs.Record) (err error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("checkpoints: %s already holds %d files: give a new folder for the run", dir, len(entries))
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoints: run folder %s: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("checkpoints: creating %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".import-*")
	if err != nil {
		return fmt.Errorf("checkpoints: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	h, err := checkpoint.Build(store).Dir(tmp).Done()
	if err != nil {
		return fmt.Errorf("checkpoints: checkpoint in %s: %w", tmp, err)
	}
	if err := h.Save(); err != nil {
		return fmt.Errorf("checkpoints: saving the checkpoint: %w", err)
	}
	if err := (&runs.History{}).Save(tmp); err != nil {
		return err
	}
	if err := rec.Write(tmp); err != nil {
		return err
	}
	_ = os.Remove(dir) // an empty folder given as the destination
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("checkpoints: renaming %s to %s: %w", tmp, dir, err)
	}
	return nil
}

// IncompleteSuffix is appended to the files of a checkpoint that a save left incomplete when Open
// sets them aside.
const IncompleteSuffix = ".incomplete"

// incomplete returns the base names of the checkpoints in dir that are newer than its newest
// complete one and incomplete themselves, oldest first, with the reason for the newest. A
// checkpoint is complete when its .json (written last by GoMLX, after the .bin is closed)
// parses and names its variables, and its .bin exists.
func incomplete(dir string) (names []string, reason string, err error) {
	matches, err := filepath.Glob(filepath.Join(dir, "checkpoint-*"+checkpoint.JsonNameSuffix))
	if err != nil {
		return nil, "", err
	}
	sort.Strings(matches) // GoMLX names them checkpoint-nNNNNNNN-..., so this is oldest first
	for i := len(matches) - 1; i >= 0; i-- {
		base := strings.TrimSuffix(matches[i], checkpoint.JsonNameSuffix)
		why := problem(base)
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

// problem says what is wrong with the checkpoint files base.json and base.bin, or "".
func problem(base string) string {
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

// setAsideIncomplete renames the incomplete newest checkpoints of dir (see incomplete) to
// NAME.json.incomplete and NAME.bin.incomplete, so that GoMLX loads the newest complete one. It
// returns the base names it moved.
func setAsideIncomplete(dir string) ([]string, error) {
	names, _, err := incomplete(dir)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	for _, name := range names {
		for _, suffix := range []string{checkpoint.JsonNameSuffix, checkpoint.BinDataSuffix} {
			from := filepath.Join(dir, name+suffix)
			if err := os.Rename(from, from+IncompleteSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("checkpoints: setting aside the incomplete checkpoint %s: %w", from, err)
			}
		}
	}
	return names, nil
}
