package training

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gomlx/gomlx/ml/model/checkpoint"
)

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
	return fmt.Sprintf("cifarlib: checkpoint %s in %s is incomplete (%s; a save was interrupted): resume "+
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
				return nil, fmt.Errorf("cifarlib: setting aside the incomplete checkpoint %s: %w", from, err)
			}
		}
	}
	return names, nil
}
