package cifarlib

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// TestLossAtInit is the first check of every training recipe ("verify the loss at init"): the
// loss of the first training step, a real step of Train on a batch of 32 synthetic images (the
// batch's loss before its update), is within 15% of ln(C), the loss of uniform predictions, for
// every architecture, at 10, 20 and 100 classes, on three seeds. With GoMLX's default He
// initialisation everywhere it was 0.86 to 1.94 ln(C) (see init.go for the causes); -short
// leaves out resnet18 (about 8 s a step on the pure-Go backend).
func TestLossAtInit(t *testing.T) {
	backend := testBackend(t)
	for _, arch := range Architectures() {
		if arch == ArchResNet18 && testing.Short() {
			continue
		}
		for _, spec := range []Spec{CIFAR10(), CIFAR100(LabelsCoarse), CIFAR100(LabelsFine)} {
			trainRecs, _ := trainTestRecords(t, spec, 32, 1, 1)
			for _, seed := range []int64{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/%s/seed%d", arch, spec.ID(), seed), func(t *testing.T) {
					res, err := Train(context.Background(), TrainConfig{Spec: spec, Model: arch, Backend: backend,
						TrainRecords: trainRecs, Steps: 1, BatchSize: 32, Seed: seed, SkipFinalEval: true, Progress: ProgressOff})
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

// TestInitValues checks the initial values themselves, on a fresh store: the head drawn from
// PyTorch's U(-1/sqrt(fan_in), 1/sqrt(fan_in)), weights and biases alike; the cnn's
// convolutions from N(0, 1/fan_in) with zero biases; and the ResNets' residual branches ending
// in a batch norm whose scale starts at zero while every other batch-norm scale starts at one.
func TestInitValues(t *testing.T) {
	backend := testBackend(t)
	recs, _ := trainTestRecords(t, CIFAR100(LabelsFine), 2, 1, 1)
	batch, err := recs.Batch(0, 2)
	require.NoError(t, err)
	convFanIn := map[string]int{"conv1": 9 * 3, "conv2": 9 * 16, "conv3": 9 * 32}
	for _, arch := range []string{ArchLinear, ArchCNN, ArchResNet20} {
		t.Run(arch, func(t *testing.T) {
			m, err := NewModel(CIFAR100(LabelsFine), arch).Backend(backend).Done()
			require.NoError(t, err)
			store := seededStore(t, 5)
			_, err = m.Logits(backend, store, batch.Images)
			require.NoError(t, err)
			checked := 0
			for v := range store.IterVariables() {
				path := v.Path()
				if !strings.HasPrefix(path, "/"+arch+"/") {
					continue
				}
				value, err := v.Value()
				require.NoError(t, err)
				data := tensors.MustCopyFlatData[float32](value)
				switch {
				case strings.Contains(path, "/head/"):
					fanIn := map[string]int{ArchLinear: ImageBytes, ArchCNN: 4 * 4 * 64, ArchResNet20: 64}[arch]
					requireUniform(t, path, data, 1/math.Sqrt(float64(fanIn)))
				case arch == ArchCNN && strings.HasSuffix(path, "/biases"):
					require.Equal(t, make([]float32, len(data)), data, path)
				case arch == ArchCNN:
					requireVariance(t, path, data, 1/float64(convFanIn[strings.Split(path, "/")[2]]), 2)
				case strings.HasSuffix(path, "/bn2/batch_normalization/scale"):
					require.Equal(t, make([]float32, len(data)), data, path)
				case strings.HasSuffix(path, "/batch_normalization/scale"):
					for i := range data {
						require.Equal(t, float32(1), data[i], "%s[%d]", path, i)
					}
				default:
					continue
				}
				checked++
			}
			want := map[string]int{ArchLinear: 2, ArchCNN: 8, ArchResNet20: 2 + 1 + 2*9}[arch]
			require.Equal(t, want, checked, "variables checked")
		})
	}
}

// requireUniform checks that data look drawn from U(-bound, bound): all inside, the extremes
// near the bounds, and the variance bound²/3.
func requireUniform(t *testing.T, path string, data []float32, bound float64) {
	t.Helper()
	n := float64(len(data))
	lo, hi := 0.0, 0.0
	for _, v := range data {
		lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
	}
	require.GreaterOrEqual(t, lo, -bound, path)
	require.LessOrEqual(t, hi, bound, path)
	// The chance that n uniform draws all miss the outer 1-q of either side is q^n: with
	// q = 1-10/n, below e^-10.
	require.Less(t, lo, -bound*(1-math.Min(1, 10/n)), "%s: no value near -%g", path, bound)
	require.Greater(t, hi, bound*(1-math.Min(1, 10/n)), "%s: no value near %g", path, bound)
	requireVariance(t, path, data, bound*bound/3, 1.8)
}

// requireVariance checks that the mean square of data (drawn with mean 0) is within 6 standard
// errors of want, for a distribution whose fourth moment is kurtosis times its variance squared
// (3 for a normal, 9/5 for a uniform): the sample's relative standard error is
// sqrt((kurtosis-1)/n).
func requireVariance(t *testing.T, path string, data []float32, want, kurtosis float64) {
	t.Helper()
	sumSq := 0.0
	for _, v := range data {
		sumSq += float64(v) * float64(v)
	}
	n := float64(len(data))
	require.InDelta(t, want, sumSq/n, 6*math.Sqrt((kurtosis-1)/n)*want, "%s: variance", path)
}
