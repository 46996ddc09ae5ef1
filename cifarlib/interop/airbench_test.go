package interop

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/safetensors"
)

// TestAirbench94KeyMapMatchesPyTorch: the airbench94 key map lists exactly the names, order and
// shapes of make_net94's state_dict as real PyTorch writes it (keys_airbench94.json, from
// airbench 0.1.8's own modules), the Linear head at index 7; the keys are detected and named.
func TestAirbench94KeyMapMatchesPyTorch(t *testing.T) {
	want := readKeys(t, "airbench94")
	ps, err := keyMap(cifarlib.ArchAirbench94, NamesAirbench94, 10)
	require.NoError(t, err)
	require.Len(t, ps, len(want))
	for i, p := range ps {
		require.Equal(t, want[i].Name, p.torch)
		require.Equal(t, want[i].Shape, p.shape, p.torch)
		require.Equal(t, want[i].DType == "int64", p.kind == kindBatches, p.torch)
	}
	require.Equal(t, "7.weight", ps[len(ps)-1].torch)
	require.Equal(t, NamesAirbench94, DefaultNames(cifarlib.ArchAirbench94))
	arch, names := matchingNaming(torchKeys(ps))
	require.Equal(t, cifarlib.ArchAirbench94, arch)
	require.Equal(t, NamesAirbench94, names)
	// Every lab variable the map names is one of the model's, and every trained one is mapped.
	for _, p := range ps {
		require.True(t, strings.HasPrefix(p.lab, "/airbench94/"), p.lab)
	}

	_, err = convertStateDict(syntheticStateDict(want), "resnet18", "", 10, labNorm)
	require.ErrorContains(t, err, "The file has the keys of airbench94's Sequential: import it with --arch airbench94 --names airbench94")
	_, err = convertStateDict(syntheticStateDict(want), cifarlib.ArchAirbench94, "", 100, labNorm)
	require.ErrorContains(t, err, "Error(s) in loading state_dict for Sequential:\n\tsize mismatch for 7.weight: copying a param with shape "+
		"torch.Size([10, 256]) from checkpoint, the shape in current model is torch.Size([100, 256]).\nThe file's head has 10 outputs, the model's 100")
}

// airbenchFormula is the value of element i (in PyTorch's layout) of the tensor at index t of
// make_net94's state_dict named name, shape shape: cifarlib/interop/testdata/make_airbench_fixtures.py's
// formula_state_dict, computed in float64 as there and rounded once to float32.
func airbenchFormula(t, i int, name string, shape []int) float32 {
	f := float64((i*7919+t*104729)%2001-1000) / 1000
	switch {
	case strings.HasSuffix(name, "running_var"):
		return float32(1 + 0.5*f)
	case strings.HasSuffix(name, "running_mean"), strings.HasSuffix(name, "bias"):
		return float32(0.2 * f)
	case len(shape) == 1: // a batch-norm weight
		return float32(1 + 0.2*f)
	}
	return float32(math.Sqrt(3/float64(numel(shape)/shape[0])) * f)
}

// writeAirbenchFormula writes make_net94's state_dict with the formula's values as a
// safetensors file, as safetensors.torch.save_file(net.state_dict()) would.
func writeAirbenchFormula(t *testing.T, dir string) string {
	t.Helper()
	var ts []safetensors.Tensor
	for k, key := range readKeys(t, "airbench94") {
		if key.DType == "int64" {
			ts = append(ts, safetensors.Tensor{Name: key.Name, DType: "I64", Shape: key.Shape, Data: binary.LittleEndian.AppendUint64(nil, 7)})
			continue
		}
		b := make([]byte, 0, 4*numel(key.Shape))
		for i := range numel(key.Shape) {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(airbenchFormula(k, i, key.Name, key.Shape)))
		}
		ts = append(ts, safetensors.Tensor{Name: key.Name, DType: "F32", Shape: key.Shape, Data: b})
	}
	file := filepath.Join(dir, "airbench94.safetensors")
	require.NoError(t, safetensors.WriteFile(file, ts, nil))
	return file
}

// airbenchLogits is testdata/airbench94_logits.json: make_net94's logits computed by PyTorch
// with the formula's weights on images.bin, in eval mode, then in train mode with the running
// statistics that forward pass left.
type airbenchLogits struct {
	Normalize struct{ Mean, Std [3]float32 }
	Eval      [][]float32
	Train     [][]float32
	Running   map[string]json.RawMessage
}

// TestAirbench94Logits: make_net94's state_dict imported into the lab computes PyTorch's logits
// (within tolLogits) on the same images, in eval mode (the imported running statistics) and in
// train mode (batch statistics), and that train-mode pass moves the running statistics as
// PyTorch's did (momentum 0.4, the unbiased variance, num_batches_tracked 7 -> 8).
func TestAirbench94Logits(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "airbench94_logits.json"))
	require.NoError(t, err)
	var want airbenchLogits
	require.NoError(t, json.Unmarshal(raw, &want))
	spec := data.CIFAR10()
	require.Equal(t, Normalization{Mean: spec.Mean, Std: spec.Std}, Normalization{Mean: want.Normalize.Mean, Std: want.Normalize.Std})
	run := filepath.Join(t.TempDir(), "run")
	rep, err := Import(writeAirbenchFormula(t, t.TempDir()), run, ImportOptions{Arch: cifarlib.ArchAirbench94})
	require.NoError(t, err)
	require.Equal(t, NamesAirbench94, rep.Names)
	require.Equal(t, AirbenchNormalization, rep.Source)
	require.Equal(t, rep.Lab, rep.Source, "airbench's statistics are the lab's CIFAR-10 ones: nothing to re-normalise")
	require.Equal(t, 6, rep.BatchNorms)
	require.Equal(t, int64(7), rep.BatchesTracked)

	backend := goBackend(t)
	images := fixtureImages(t, spec)
	ck, err := training.LoadCheckpoint(run, backend)
	require.NoError(t, err)
	logits, err := ck.Logits(images)
	require.NoError(t, err)
	requireLogitsClose(t, want.Eval, tensors.MustCopyFlatData[float32](logits))

	checkAirbenchTrainMode(t, backend, want, images)
}

// checkAirbenchTrainMode runs the imported airbench94 in train mode on images: its logits and
// its batch-norm statistics after the pass are PyTorch's (want).
func checkAirbenchTrainMode(t *testing.T, backend compute.Backend, want airbenchLogits, images *tensors.Tensor) {
	spec := data.CIFAR10()
	sd, err := ReadStateDict(writeAirbenchFormula(t, t.TempDir()))
	require.NoError(t, err)
	c, err := convertStateDict(sd, cifarlib.ArchAirbench94, "", 10, AirbenchNormalization)
	require.NoError(t, err)
	store, err := newStore(c.variables)
	require.NoError(t, err)
	m, err := cifarlib.NewModel(spec, cifarlib.ArchAirbench94).Backend(backend).Done()
	require.NoError(t, err)
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		scope.Store().SetTraining(x.Graph(), true)
		return m.ModelFn(scope, nil, []*graph.Node{x})[0]
	})
	require.NoError(t, err)
	defer exec.Finalize()
	out, err := exec.Call(images)
	require.NoError(t, err)
	requireLogitsClose(t, want.Train, tensors.MustCopyFlatData[float32](out[0]))
	for torch, lab := range map[string]string{
		"2.norm1.running_mean": "/airbench94/block1/norm1/batch_normalization/mean",
		"2.norm1.running_var":  "/airbench94/block1/norm1/batch_normalization/variance",
		"4.norm2.running_mean": "/airbench94/block3/norm2/batch_normalization/mean",
		"4.norm2.running_var":  "/airbench94/block3/norm2/batch_normalization/variance",
	} {
		var stats []float32
		require.NoError(t, json.Unmarshal(want.Running[torch], &stats))
		v, err := store.GetVariable(lab).Value()
		require.NoError(t, err)
		got := tensors.MustCopyFlatData[float32](v)
		rows := make([][]float32, len(stats))
		for i := range stats {
			rows[i] = stats[i : i+1]
		}
		requireLogitsClose(t, rows, got) // statistics of activations: the same sums as the logits'
	}
	v, err := store.GetVariable("/airbench94/block3/norm2/batch_normalization/avg_weight").Value()
	require.NoError(t, err)
	require.Equal(t, float32(8), tensors.MustCopyFlatData[float32](v)[0], "num_batches_tracked after one train-mode pass")
	require.Equal(t, json.RawMessage("8"), want.Running["4.norm2.num_batches_tracked"])
}

// TestAirbench94ImportExportExact: make_net94's state_dict imported and exported without
// training gives back every tensor bit for bit under make_net94's names (what
// net.load_state_dict(safetensors.torch.load_file(FILE)) takes with strict=True), with the
// lab's CIFAR-10 normalisation, airbench's, in its metadata.
func TestAirbench94ImportExportExact(t *testing.T) {
	dir := t.TempDir()
	file, ts := writeSynthetic(t, dir, "airbench94")
	run := filepath.Join(dir, "run")
	_, err := Import(file, run, ImportOptions{Arch: cifarlib.ArchAirbench94})
	require.NoError(t, err)
	out := filepath.Join(dir, "back.safetensors")
	res, err := Export(run, out, ExportOptions{Backend: goBackend(t)})
	require.NoError(t, err)
	require.Equal(t, NamesAirbench94, res.Names)
	require.Equal(t, AirbenchNormalization, res.Normalization)
	back, err := safetensors.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "transforms.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.2435, 0.2616))", back.Metadata[MetaTransforms])
	require.Len(t, back.Tensors, len(ts))
	for i, want := range ts {
		got := back.Tensors[i]
		require.Equal(t, want.Name, got.Name, "PyTorch's order")
		require.Equal(t, want.DType, got.DType, want.Name)
		require.Equal(t, want.Shape, got.Shape, want.Name)
		require.True(t, bytes.Equal(want.Data, got.Data), "%s: the export must be the file's tensor bit for bit", want.Name)
	}
}
