package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// tolLogits bounds, element by element against 1+|want|, the logits of one model computed by
// PyTorch and by the lab from the same float32 inputs and weights: the two sum in different
// orders. The largest sums are the cnn head's 1024 products (ResNet-18's convolutions: 3x3x512 =
// 4608); a reordered sum of n terms differs by about sqrt(n)·u of its terms' magnitude (u = 2^-24;
// Higham and Mary's probabilistic bound, x4 to hold with probability 1-7e-4): 4·sqrt(4608)·u =
// 1.6e-5 per layer. Errors pass through up to ~20 layers, which batch norm re-centres instead of
// compounding: 1e-4, as the lab's own tolerance for a reordered forward pass (cifarlib's
// tolReorder). A wrong layout (a transposed kernel, the flatten order, a missed normalisation)
// moves logits by O(1).
const tolLogits = 1e-4

// cnnTwinLogits is testdata/cnn_twin_logits.json: PyTorch's logits of LabCNN on images.bin.
type cnnTwinLogits struct {
	Normalize struct{ Mean, Std [3]float32 }
	Logits    [][]float32
}

// fixtureImages decodes testdata/images.bin (uint8, channel-planar like CIFAR's records) into
// [N, 32, 32, 3] float32 normalised with spec's statistics, as the lab's data pipeline does.
func fixtureImages(t *testing.T, spec data.Spec) *tensors.Tensor {
	raw, err := os.ReadFile(filepath.Join("testdata", "images.bin"))
	require.NoError(t, err)
	recs := data.NewRecords(spec, "images.bin", len(raw)/data.ImageBytes)
	copy(recs.Pixels, raw)
	b, err := recs.Batch(0, recs.Len())
	require.NoError(t, err)
	return b.Images
}

func goBackend(t *testing.T) compute.Backend {
	b, err := backends.New(backends.Go)
	require.NoError(t, err)
	return b
}

// requireLogitsClose compares logits element by element within tolLogits.
func requireLogitsClose(t *testing.T, want [][]float32, got []float32) {
	t.Helper()
	worst := 0.0
	for i, row := range want {
		for j, w := range row {
			d := float64(got[i*len(row)+j]-w) / (1 + abs(float64(w)))
			worst = max(worst, abs(d))
		}
	}
	t.Logf("spread: %s/logits %.3g <= %.3g", t.Name(), worst, tolLogits)
	require.LessOrEqual(t, worst, tolLogits)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestCNNTwinLogits imports the state_dict real PyTorch wrote for LabCNN and checks that the
// lab's cnn computes PyTorch's logits on the same images.
func TestCNNTwinLogits(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "cnn_twin_logits.json"))
	require.NoError(t, err)
	var want cnnTwinLogits
	require.NoError(t, json.Unmarshal(raw, &want))
	sd, err := ReadStateDict(filepath.Join("testdata", "cnn_twin.pt"))
	require.NoError(t, err)
	spec := data.CIFAR10()
	norm := Normalization{Mean: spec.Mean, Std: spec.Std}
	require.Equal(t, norm, Normalization{Mean: want.Normalize.Mean, Std: want.Normalize.Std})
	c, err := convertStateDict(sd, "cnn", "", 10, norm)
	require.NoError(t, err)
	store, err := newStore(c.variables)
	require.NoError(t, err)
	backend := goBackend(t)
	m, err := cifarlib.NewModel(spec, "cnn").Backend(backend).Done()
	require.NoError(t, err)
	logits, err := m.Logits(backend, store, fixtureImages(t, spec))
	require.NoError(t, err)
	requireLogitsClose(t, want.Logits, tensors.MustCopyFlatData[float32](logits))
}
