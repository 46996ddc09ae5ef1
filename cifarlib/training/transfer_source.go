package training

import (
	"github.com/gomlx/gomlx/ml/model/checkpoint"

	"github.com/cifarlab/cifarlab/cifarlib/training/checkpoints"
)

// sourceRun is the trained run a transfer starts from (Settings.Transfer.From), as the Trainer
// reads it for resolve: what the run recorded, and its checkpoint with the saved tensors.
type sourceRun struct {
	info    CheckpointInfo
	handler *checkpoint.Handler
	// dataset is the Spec ID of the dataset the run was trained on.
	dataset string
}

// readTransferSource reads the source run in from ("": no source, nil).
func readTransferSource(from string) (*sourceRun, error) {
	if from == "" {
		return nil, nil
	}
	h, info, err := readRunSource(from)
	if err != nil {
		return nil, err
	}
	return &sourceRun{info: info, handler: h, dataset: info.Data.Spec.ID()}, nil
}

// readRunSource opens the trained run in dir as a source (of a transfer, of DiagnoseRun):
// *checkpoints.IncompleteError and *checkpoints.CorruptError as they are, any other failure (no
// folder, no checkpoint, a foreign one) as *NotRunError.
func readRunSource(dir string) (*checkpoint.Handler, CheckpointInfo, error) {
	_, h, info, err := readRunCheckpoint(dir)
	if err != nil {
		switch err.(type) {
		case *checkpoints.IncompleteError, *checkpoints.CorruptError:
			return nil, info, err
		}
		return nil, info, &NotRunError{Dir: dir, Err: err}
	}
	return h, info, nil
}
