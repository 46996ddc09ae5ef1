package cifarlib

import (
	"math"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// TestInitValues checks the initial values themselves, on a fresh store: the head drawn from
// PyTorch's U(-1/sqrt(fan_in), 1/sqrt(fan_in)), weights and biases alike; the cnn's
// convolutions from N(0, 1/fan_in) with zero biases; and the ResNets' residual branches ending
// in a batch norm whose scale starts at zero while every other batch-norm scale starts at one.
func TestInitValues(t *testing.T) {
	backend := labtest.Backend(t)
	recs, _ := labtest.TrainTestRecords(t, data.CIFAR100(data.LabelsFine), 2, 1, 1)
	batch, err := recs.Batch(0, 2)
	require.NoError(t, err)
	convFanIn := map[string]int{"conv1": 9 * 3, "conv2": 9 * 16, "conv3": 9 * 32}
	for _, arch := range []string{ArchLinear, ArchCNN, ArchResNet20} {
		t.Run(arch, func(t *testing.T) {
			m, err := NewModel(data.CIFAR100(data.LabelsFine), arch).Backend(backend).Done()
			require.NoError(t, err)
			store := model.NewStore()
			require.NoError(t, store.SetRNGStateFromSeed(5))
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
				values := tensors.MustCopyFlatData[float32](value)
				switch {
				case strings.Contains(path, "/head/"):
					fanIn := map[string]int{ArchLinear: data.ImageBytes, ArchCNN: 4 * 4 * 64, ArchResNet20: 64}[arch]
					requireUniform(t, path, values, 1/math.Sqrt(float64(fanIn)))
				case arch == ArchCNN && strings.HasSuffix(path, "/biases"):
					require.Equal(t, make([]float32, len(values)), values, path)
				case arch == ArchCNN:
					requireVariance(t, path, values, 1/float64(convFanIn[strings.Split(path, "/")[2]]), 2)
				case strings.HasSuffix(path, "/bn2/batch_normalization/scale"):
					require.Equal(t, make([]float32, len(values)), values, path)
				case strings.HasSuffix(path, "/batch_normalization/scale"):
					for i := range values {
						require.Equal(t, float32(1), values[i], "%s[%d]", path, i)
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

// requireUniform checks that values look drawn from U(-bound, bound): all inside, the extremes
// near the bounds, and the variance bound²/3.
func requireUniform(t *testing.T, path string, values []float32, bound float64) {
	t.Helper()
	n := float64(len(values))
	lo, hi := 0.0, 0.0
	for _, v := range values {
		lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
	}
	require.GreaterOrEqual(t, lo, -bound, path)
	require.LessOrEqual(t, hi, bound, path)
	// The chance that n uniform draws all miss the outer 1-q of either side is q^n: with
	// q = 1-10/n, below e^-10.
	require.Less(t, lo, -bound*(1-math.Min(1, 10/n)), "%s: no value near -%g", path, bound)
	require.Greater(t, hi, bound*(1-math.Min(1, 10/n)), "%s: no value near %g", path, bound)
	requireVariance(t, path, values, bound*bound/3, 1.8)
}

// requireVariance checks that the mean square of values (drawn with mean 0) is within 6 standard
// errors of want, for a distribution whose fourth moment is kurtosis times its variance squared
// (3 for a normal, 9/5 for a uniform): the sample's relative standard error is
// sqrt((kurtosis-1)/n).
func requireVariance(t *testing.T, path string, values []float32, want, kurtosis float64) {
	t.Helper()
	sumSq := 0.0
	for _, v := range values {
		sumSq += float64(v) * float64(v)
	}
	n := float64(len(values))
	require.InDelta(t, want, sumSq/n, 6*math.Sqrt((kurtosis-1)/n)*want, "%s: variance", path)
}
