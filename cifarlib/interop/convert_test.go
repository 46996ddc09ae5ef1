package interop

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/internal/torchfile"
)

// torchKey is one [name, dtype, shape] of a keys_*.json fixture (written by real PyTorch,
// cifarlib/interop/testdata/make_fixtures.py).
type torchKey struct {
	Name  string
	DType string
	Shape []int
}

func readKeys(t *testing.T, name string) []torchKey {
	raw, err := os.ReadFile(filepath.Join("testdata", "keys_"+name+".json"))
	require.NoError(t, err)
	var rows [][]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &rows))
	keys := make([]torchKey, len(rows))
	for i, r := range rows {
		require.NoError(t, json.Unmarshal(r[0], &keys[i].Name))
		require.NoError(t, json.Unmarshal(r[1], &keys[i].DType))
		require.NoError(t, json.Unmarshal(r[2], &keys[i].Shape))
	}
	return keys
}

// syntheticStateDict builds a state_dict with the fixture's names, dtypes and shapes, and
// deterministic values (value i of tensor k is k + i/1000); dtype float32 tensors may be
// written as another dtype.
func syntheticStateDict(keys []torchKey) *StateDict {
	sd := &StateDict{File: "synthetic.pt", Tensors: map[string]*torchfile.Tensor{}}
	for k, key := range keys {
		dt := torchfile.DType(key.DType)
		n := numel(key.Shape)
		data := make([]byte, n*dt.Size())
		for i := range n {
			if dt == torchfile.Int64 {
				binary.LittleEndian.PutUint64(data[8*i:], 42)
			} else {
				binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(k)+float32(i)/1000))
			}
		}
		strides := make([]int, len(key.Shape))
		step := 1
		for i := len(key.Shape) - 1; i >= 0; i-- {
			strides[i], step = step, step*key.Shape[i]
		}
		sd.Keys = append(sd.Keys, key.Name)
		sd.Tensors[key.Name] = &torchfile.Tensor{DType: dt, Shape: key.Shape, Strides: strides,
			Storage: &torchfile.Storage{Key: key.Name, DType: dt, Numel: n, Data: data}}
	}
	return sd
}

var labNorm = Normalization{Mean: [3]float32{0.4914, 0.4822, 0.4465}, Std: [3]float32{0.2470, 0.2435, 0.2616}}

// TestKeyMapsMatchPyTorch: the key maps list exactly the names, order and shapes of the
// state_dicts real PyTorch writes for kuangliu's ResNet18 and torchvision's resnet18.
func TestKeyMapsMatchPyTorch(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		names   Names
	}{{"kuangliu", NamesPytorchCIFAR}, {"torchvision", NamesTorchvision}} {
		t.Run(tc.fixture, func(t *testing.T) {
			want := readKeys(t, tc.fixture)
			ps, err := keyMap("resnet18", tc.names, 10)
			require.NoError(t, err)
			require.Len(t, ps, len(want))
			for i, p := range ps {
				require.Equal(t, want[i].Name, p.torch)
				require.Equal(t, want[i].Shape, p.shape, p.torch)
				require.Equal(t, want[i].DType == "int64", p.kind == kindBatches, p.torch)
			}
			require.Equal(t, tc.names, detectNames("resnet18", torchKeys(ps)))
		})
	}
}

// TestConvertRoundTrip: a state_dict converted to the lab's variables and back is the same,
// bit for bit (nothing is folded, whatever the source's normalisation), in both namings.
func TestConvertRoundTrip(t *testing.T) {
	for _, fixture := range []string{"kuangliu", "torchvision"} {
		sd := syntheticStateDict(readKeys(t, fixture))
		c, err := convertStateDict(sd, "resnet18", "", 10, PytorchCIFARNormalization)
		require.NoError(t, err)
		require.Equal(t, int64(42), c.batches)
		require.Equal(t, 20, c.batchNorms, "stem, 2 per block, 3 shortcuts")
		vars := map[string]Variable{}
		for _, v := range c.variables {
			vars[v.Path] = v
		}
		require.Equal(t, []int{3, 3, 3, 64}, vars["/resnet18/stem/conv/conv/weights"].Shape)
		require.Equal(t, []int{512, 10}, vars["/resnet18/head/dense/weights"].Shape)
		require.Equal(t, []float32{42, 42}, vars["/resnet18/stage4/block1/shortcut_bn/batch_normalization/avg_weight"].Values[:2])
		back, err := toTorch(vars, "resnet18", c.names, 10)
		require.NoError(t, err)
		require.Len(t, back, len(sd.Keys))
		for i, b := range back {
			require.Equal(t, sd.Keys[i], b.Name)
			require.Equal(t, sd.Tensors[b.Name].Storage.Data, b.Data, b.Name)
		}
	}
}

// TestLayouts pins single elements: PyTorch's conv weight [o, i, y, x] is the lab's
// [y, x, i, o]; Linear [o, i] is [i, o]; the cnn head's input c*16 + h*4 + w is the lab's
// (h*4 + w)*64 + c.
func TestLayouts(t *testing.T) {
	shape := []int{4, 3, 3, 2}
	w := make([]float32, numel(shape))
	for i := range w {
		w[i] = float32(i)
	}
	lab := convToLab(w, shape)
	// torch [1, 2, 0, 1] = ((1*3+2)*3+0)*2+1 = 31; lab [0, 1, 2, 1] over [3, 2, 3, 4] = ((0*2+1)*3+2)*4+1 = 21.
	require.Equal(t, float32(31), lab[21])
	require.Equal(t, w, convToTorch(lab, shape))

	lin := make([]float32, 10*1024)
	for i := range lin {
		lin[i] = float32(i)
	}
	flat := linearToLab(lin, []int{10, 1024}, true)
	// torch [o=3, c=5, h=2, w=1]: column 5*16+2*4+1 = 89; lab row (2*4+1)*64+5 = 581.
	require.Equal(t, float32(3*1024+89), flat[581*10+3])
	require.Equal(t, lin, linearToTorch(flat, []int{10, 1024}, true))
	require.Equal(t, float32(3*1024+89), linearToLab(lin, []int{10, 1024}, false)[89*10+3])
}

// TestConvertKeepsStem: importing kuangliu's statistics leaves the stem's weights as they
// are (the run applies the statistics at its input); a std that is not positive is refused.
func TestConvertKeepsStem(t *testing.T) {
	sd := syntheticStateDict(readKeys(t, "kuangliu"))
	c, err := convertStateDict(sd, "resnet18", NamesPytorchCIFAR, 10, PytorchCIFARNormalization)
	require.NoError(t, err)
	w, _ := sd.Tensors["conv1.weight"].Float32()
	// torch [o=0, c=1, 0, 0] (index 9) is lab [0, 0, 1, 0] (index 64).
	require.Equal(t, w[9], c.variables[0].Values[64])

	_, err = convertStateDict(sd, "resnet18", NamesPytorchCIFAR, 10,
		Normalization{Mean: [3]float32{0.5, 0.5, 0.5}, Std: [3]float32{0.5, 0, 0.5}})
	require.ErrorIs(t, err, ErrNormalization)
}

// TestConvertRefuses: the named refusals and load_state_dict's errors, in PyTorch's words.
func TestConvertRefuses(t *testing.T) {
	kuangliu := readKeys(t, "kuangliu")
	_, err := convertStateDict(syntheticStateDict(readKeys(t, "torchvision_7x7")), "resnet18", "", 10, labNorm)
	require.ErrorIs(t, err, ErrStem7x7)
	require.ErrorContains(t, err, "conv1.weight is [64, 3, 7, 7]")
	_, err = convertStateDict(syntheticStateDict(readKeys(t, "preact")), "resnet18", "", 10, labNorm)
	require.ErrorIs(t, err, ErrPreAct)

	double := append([]torchKey(nil), kuangliu...)
	double[3].DType = "float64"
	_, err = convertStateDict(syntheticStateDict(double), "resnet18", "", 10, labNorm)
	require.ErrorIs(t, err, ErrDType)
	require.ErrorContains(t, err, "bn1.running_mean is float64")

	_, err = convertStateDict(syntheticStateDict(kuangliu), "resnet18", "", 100, labNorm)
	var le *LoadStateDictError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "interop: synthetic.pt: Error(s) in loading state_dict for ResNet18:\n"+
		"\tsize mismatch for linear.weight: copying a param with shape torch.Size([10, 512]) from checkpoint, the shape in current model is torch.Size([100, 512]).\n"+
		"\tsize mismatch for linear.bias: copying a param with shape torch.Size([10]) from checkpoint, the shape in current model is torch.Size([100]).\n"+
		"The file's head has 10 outputs, the model's 100: import it with the dataset it was trained on (dataset cifar100 for 100 classes; "+
		"ImportOptions.Spec), then move it to another dataset by a transfer (lab.Transfer; training.Settings.Transfer.From, the setting from).", err.Error())

	edited := append([]torchKey{{Name: "extra.weight", DType: "float32", Shape: []int{1}}}, kuangliu[1:]...)
	_, err = convertStateDict(syntheticStateDict(edited), "resnet18", "", 10, labNorm)
	require.ErrorContains(t, err, "\n\tMissing key(s) in state_dict: \"conv1.weight\".\n\tUnexpected key(s) in state_dict: \"extra.weight\".")

	_, err = convertStateDict(syntheticStateDict(readKeys(t, "torchvision")), "resnet18", NamesPytorchCIFAR, 10, labNorm)
	require.ErrorContains(t, err, "The file has the keys of torchvision's ResNet: import it with --arch resnet18 --names torchvision")
}

// TestFromTorchWrappers: a checkpoint dict ('net' + 'acc' + 'epoch') with DataParallel's and
// torch.compile's prefixes gives the bare state_dict, and records acc and epoch.
func TestFromTorchWrappers(t *testing.T) {
	f, err := torchfile.ReadFile(filepath.Join("testdata", "cnn_twin.pt"))
	require.NoError(t, err)
	bare := f.Root.(*torchfile.Dict)
	prefixed := &torchfile.Dict{}
	for i, k := range bare.Keys {
		prefixed.Keys = append(prefixed.Keys, "_orig_mod.module."+k.(string))
		prefixed.Values = append(prefixed.Values, bare.Values[i])
	}
	for _, wrapper := range wrapperKeys {
		root := &torchfile.Dict{Keys: []any{"epoch", wrapper, "acc", "optimizer"},
			Values: []any{7, prefixed, 93.25, &torchfile.Dict{Keys: []any{"lr"}, Values: []any{0.1}}}}
		sd, err := fromTorch("ckpt.pth", root)
		require.NoError(t, err)
		require.Equal(t, wrapper, sd.Wrapper)
		require.Equal(t, "_orig_mod.module.", sd.Prefix)
		require.Equal(t, []string{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "conv3.weight", "conv3.bias",
			"head.weight", "head.bias"}, sd.Keys)
		require.True(t, sd.HasAcc && sd.HasEpoch)
		require.Equal(t, 93.25, sd.Acc)
		require.Equal(t, 7, sd.Epoch)
	}
	_, err = fromTorch("ckpt.pth", &torchfile.Dict{Keys: []any{"weights"}, Values: []any{1}})
	require.ErrorIs(t, err, ErrNoStateDict)
	require.ErrorContains(t, err, "top-level keys are [weights]")
}
