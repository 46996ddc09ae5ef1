package training

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/stretchr/testify/require"
)

// TestLossAtInit is the first check of every training recipe ("verify the loss at init"): the
// loss of the first training step, a real step of Train on a batch of 32 synthetic images (the
// batch's loss before its update), is within 15% of ln(C), the loss of uniform predictions, for
// every architecture, at 10, 20 and 100 classes, on three seeds. With GoMLX's default He
// initialisation everywhere it was 0.86 to 1.94 ln(C) (see cifarlib/init.go for the causes).
// ResNet-18 takes 15-37 s a step on the pure-Go backend (220 s of the test, most of the training
// package's time in CI): it is checked in the XLA CPU pass of kernel/run-tests.sh, where its
// three programs compile once and the seeds load them from the compile cache; -short leaves it
// out there too.
func TestLossAtInit(t *testing.T) {
	backend := labtest.Backend(t)
	for _, arch := range cifarlib.Architectures() {
		if arch == cifarlib.ArchResNet18 && (testing.Short() || backend.String() == backends.Go) {
			t.Logf("%s: left to the XLA CPU pass (kernel/run-tests.sh) on the pure-Go backend, and with -short", arch)
			continue
		}
		for _, spec := range []data.Spec{data.CIFAR10(), data.CIFAR100(data.LabelsCoarse), data.CIFAR100(data.LabelsFine)} {
			trainRecs, _ := labtest.TrainTestRecords(t, spec, 32, 1, 1)
			for _, seed := range []int64{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/%s/seed%d", arch, spec.ID(), seed), func(t *testing.T) {
					s := with(t, Defaults(), map[string]string{"model": arch, "steps": "1", "batch": "32", "seed": fmt.Sprint(seed), "no-eval": "true"})
					s.Data.Spec = spec
					res, err := Train(context.Background(), s, Env{Backend: backend, Train: trainRecs, Progress: ProgressOff})
					require.NoError(t, err)
					require.Len(t, res.History.Points, 1)
					lnC := math.Log(float64(spec.NumClasses))
					loss := res.History.Points[0].Loss
					t.Logf("step-1 loss %.3f = %.3f ln(%d)", loss, loss/lnC, spec.NumClasses)
					require.InDelta(t, lnC, loss, 0.15*lnC, "step-1 loss %.3f, ln(%d) = %.3f", loss, spec.NumClasses, lnC)
				})
			}
		}
	}
}
