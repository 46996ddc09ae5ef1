package training

import (
	"fmt"

	"github.com/gomlx/gomlx/ml/model/checkpoint"
)

// sourceRun is the trained run a transfer starts from (Config.From), as resolve reads it
// into the plan: what the run recorded, and its checkpoint with the saved tensors.
type sourceRun struct {
	info    CheckpointInfo
	handler *checkpoint.Handler
	// dataset is the Spec ID of the dataset the run was trained on.
	dataset string
}

// readTransferSource reads the source run of c.From ("": no source, nil). A backbone learning
// rate and a new head need a source.
func readTransferSource(c *Config) (*sourceRun, error) {
	if c.From == "" {
		if c.BackboneLearningRate != 0 {
			return nil, &ConfigError{Field: "BackboneLearningRate", Value: fmt.Sprint(c.BackboneLearningRate),
				Reason: "it applies to a transferred run: set From to the trained run's checkpoint directory"}
		}
		if c.NewHead {
			return nil, &ConfigError{Field: "NewHead", Value: "true",
				Reason: "it applies to a transferred run: set From to the trained run's checkpoint directory"}
		}
		return nil, nil
	}
	h, info, err := readRunSource(c.From)
	if err != nil {
		return nil, err
	}
	return &sourceRun{info: info, handler: h, dataset: specID(info)}, nil
}

// readRunSource opens the trained run in dir as a source (of a transfer, of DiagnoseRun):
// *IncompleteCheckpointError and *CorruptCheckpointError as they are, any other failure (no
// folder, no checkpoint, a foreign one) as *NotRunError.
func readRunSource(dir string) (*checkpoint.Handler, CheckpointInfo, error) {
	_, h, info, err := readRunCheckpoint(dir)
	if err != nil {
		switch err.(type) {
		case *IncompleteCheckpointError, *CorruptCheckpointError:
			return nil, info, err
		}
		return nil, info, &NotRunError{Dir: dir, Err: err}
	}
	return h, info, nil
}
