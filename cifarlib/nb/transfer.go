package nb

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Transfer trains s as the run called name, transferred from the run called from in the same
// runs folder (trained by another Lab's Fit, e.g. the CIFAR-10 lab's): s.Transfer.From is set
// to that run's folder, so its backbone is carried bit for bit, the head is initialised afresh
// at the lab's number of classes, and the optimizer state and global step start again (see
// training.TransferSettings). s.Transfer.Freeze = training.FreezeBackbone makes it a linear
// probe; s.Transfer.BackboneLearningRate gives the backbone its own learning rate. Everything
// else is as Fit: the run is trained from scratch each time the cell runs, and Load gets it
// back. res.Transfer says what was carried; Show prints it.
func (l *Lab) Transfer(name, from string, s training.Settings) (*training.Result, error) {
	dir, err := l.existingRun(from)
	if err != nil {
		return nil, err
	}
	s.Transfer.From = dir
	return l.Fit(name, s)
}

// LoadFor loads the run called name into a model built for the lab's dataset, as it is:
// PyTorch's `model = resnet18(num_classes=100); model.load_state_dict(checkpoint)`. A run
// trained for another number of classes is refused with *checkpoints.ShapeMismatchError (the
// head variable, both shapes, both datasets, and the fix: Transfer); a checkpoint is never
// reshaped to fit.
func (l *Lab) LoadFor(name string) (*training.LoadedCheckpoint, error) {
	dir, err := l.existingRun(name)
	if err != nil {
		return nil, err
	}
	m, err := cifarlib.NewModel(l.Spec, l.Arch).Backend(l.Backend).Done()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ckpt, err := training.LoadCheckpointInto(dir, m, l.Backend)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(output(), "run %q: loaded into %s at step %d in %.1fs\n", name, m, ckpt.Info.Step, time.Since(start).Seconds())
	return ckpt, nil
}

// existingRun returns the folder of the run called name, or ErrNoRun when it was never trained;
// when the lab process is still saving it after an interrupt, it waits for that (waitSaved).
func (l *Lab) existingRun(name string) (string, error) {
	dir, err := l.RunDir(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w %q in %s: run the cell that trains it (lab.Fit(%q, ...)) first", ErrNoRun, name, l.RunsDir, name)
	}
	return dir, l.waitSaved(name)
}
