package interop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/internal/safetensors"
	"github.com/cifarlab/cifarlab/internal/torchfile"
)

// TestImportExportCNNTwin: the state_dict real PyTorch wrote for the cnn twin becomes a run
// whose model gives PyTorch's logits; exporting the run gives back PyTorch's tensors bit for
// bit (so PyTorch loading the export computes the same logits); importing the export again
// gives the same run.
func TestImportExportCNNTwin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "twin")
	rep, err := Import(filepath.Join("testdata", "cnn_twin.pt"), dir, ImportOptions{Arch: "cnn"})
	require.NoError(t, err)
	require.Equal(t, NamesCNNTwin, rep.Names)
	require.Equal(t, rep.Lab, rep.Source, "the cnn twin uses the lab's normalisation")
	require.Equal(t, 8, rep.Tensors)

	backend := goBackend(t)
	ck, err := training.LoadCheckpoint(dir, backend)
	require.NoError(t, err)
	require.Equal(t, "cnn", ck.Info.Model.Arch)
	require.Equal(t, 10, ck.Info.Model.Head)
	rec, err := runs.ReadRecord(dir)
	require.NoError(t, err)
	require.Equal(t, runs.RunDone, rec.Status)
	require.Equal(t, filepath.Join("testdata", "cnn_twin.pt"), rec.ImportedFrom)
	raw, err := os.ReadFile(filepath.Join("testdata", "cnn_twin_logits.json"))
	require.NoError(t, err)
	var want cnnTwinLogits
	require.NoError(t, json.Unmarshal(raw, &want))
	spec := data.CIFAR10()
	logits, err := ck.Logits(fixtureImages(t, spec))
	require.NoError(t, err)
	requireLogitsClose(t, want.Logits, tensors.MustCopyFlatData[float32](logits))

	out := filepath.Join(t.TempDir(), "twin.safetensors")
	res, err := Export(dir, out, ExportOptions{Backend: backend})
	require.NoError(t, err)
	require.Equal(t, 8, res.Tensors)
	f, err := safetensors.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "pt", f.Metadata["format"])
	require.Equal(t, "transforms.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.2435, 0.2616))", f.Metadata[MetaTransforms])
	orig, err := torchfile.ReadFile(filepath.Join("testdata", "cnn_twin.pt"))
	require.NoError(t, err)
	sd := orig.Root.(*torchfile.Dict)
	require.Len(t, f.Tensors, sd.Len())
	for i, k := range sd.Keys {
		got, ok := f.Get(k.(string))
		require.True(t, ok, k)
		tensor := sd.Values[i].(*torchfile.Tensor)
		require.Equal(t, tensor.Shape, got.Shape, k)
		require.Equal(t, tensor.Storage.Data, got.Data, "%s: the export is PyTorch's tensor bit for bit", k)
	}

	again := filepath.Join(t.TempDir(), "again")
	_, err = Import(out, again, ImportOptions{Arch: "cnn"})
	require.NoError(t, err)
	logits2, err := func() (*tensors.Tensor, error) {
		ck2, err := training.LoadCheckpoint(again, backend)
		require.NoError(t, err)
		return ck2.Logits(fixtureImages(t, spec))
	}()
	require.NoError(t, err)
	require.Equal(t, tensors.MustCopyFlatData[float32](logits), tensors.MustCopyFlatData[float32](logits2))
}

// TestImportWritesNothingOnError: refused files, and a destination already holding files,
// leave no run folder and no temporary folder.
func TestImportWritesNothingOnError(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "run")
	for _, tc := range []struct {
		file string
		opts ImportOptions
		want string
	}{
		{filepath.Join("..", "..", "internal", "torchfile", "testdata", "evil_os_system.pt"), ImportOptions{}, "posix.system: global not allowed"},
		{filepath.Join("testdata", "cnn_twin.pt"), ImportOptions{}, "The file has the keys of cnn-twin's LabCNN: import it with --arch cnn --names cnn-twin (ImportOptions{Arch: \"cnn\", Names: \"cnn-twin\"})."},
		{filepath.Join("testdata", "cnn_twin.pt"), ImportOptions{Arch: "cnn", Spec: data.CIFAR100(data.LabelsFine)},
			"size mismatch for head.weight: copying a param with shape torch.Size([10, 1024]) from checkpoint, the shape in current model is torch.Size([100, 1024])"},
	} {
		_, err := Import(tc.file, dir, tc.opts)
		require.ErrorContains(t, err, tc.want)
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Empty(t, entries, "nothing written for %s", tc.file)
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), nil, 0o644))
	_, err := Import(filepath.Join("testdata", "cnn_twin.pt"), dir, ImportOptions{Arch: "cnn"})
	require.ErrorContains(t, err, "already holds 1 files")
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

// TestImportedRunTransfers: `train --from` carries an imported run to CIFAR-100 like a run
// the lab trained (backbone carried, new 100-wide head).
func TestImportedRunTransfers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "twin")
	_, err := Import(filepath.Join("testdata", "cnn_twin.pt"), dir, ImportOptions{Arch: "cnn"})
	require.NoError(t, err)
	spec := data.CIFAR100(data.LabelsFine)
	train, err := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{Seed: 1, TrainSize: 16, TestSize: 8})
	require.NoError(t, err)
	s := training.Defaults()
	s.Data.Spec, s.Model.Arch, s.Transfer.From, s.Run.Steps, s.Data.BatchSize, s.Eval.SkipFinal = spec, training.ArchOfSource, dir, 1, 8, true
	res, err := training.Train(context.Background(), s, training.Env{Train: train, Backend: goBackend(t), Progress: training.ProgressOff})
	require.NoError(t, err)
	rep := res.Transfer
	require.NotNil(t, rep)
	require.Equal(t, dir, rep.From)
	require.Equal(t, 100, rep.Head)
	require.Equal(t, "cifar10", rep.FromDataset)
	require.Len(t, rep.Carried, 6, "the three convolutions' weights and biases")
}
