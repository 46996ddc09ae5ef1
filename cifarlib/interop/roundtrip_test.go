package interop

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/cifarlab/cifarlab/cifarlib/training/optimizers"
	"github.com/cifarlab/cifarlab/internal/safetensors"
)

// writeSynthetic writes the state_dict of a committed key list (testdata/keys_NAME.json) with
// synthetic values as a safetensors file without metadata, as safetensors.torch.save_file
// writes it, and returns the file and its tensors.
func writeSynthetic(t *testing.T, dir, name string) (string, []safetensors.Tensor) {
	t.Helper()
	return writeKeys(t, dir, name, readKeys(t, name))
}

// writeKeys writes the state_dict of keys with synthetic values as NAME.safetensors.
func writeKeys(t *testing.T, dir, name string, keys []torchKey) (string, []safetensors.Tensor) {
	t.Helper()
	sd := syntheticStateDict(keys)
	var ts []safetensors.Tensor
	for _, k := range sd.Keys {
		tensor := sd.Tensors[k]
		dt := "F32"
		if tensor.DType == "int64" {
			dt = "I64"
		}
		ts = append(ts, safetensors.Tensor{Name: k, DType: dt, Shape: tensor.Shape, Data: tensor.Storage.Data})
	}
	file := filepath.Join(dir, name+".safetensors")
	require.NoError(t, safetensors.WriteFile(file, ts, nil))
	return file, ts
}

// TestImportExportKuangliuExact: a kuangliu ResNet-18 (its own normalisation, std
// 0.2023,0.1994,0.2010) imported and exported without training gives back every tensor bit for
// bit, conv1 included, under kuangliu's names; the run records kuangliu's normalisation and the
// export's metadata names it, so the source pipeline's transforms.Normalize works unchanged.
func TestImportExportKuangliuExact(t *testing.T) {
	dir := t.TempDir()
	file, ts := writeSynthetic(t, dir, "kuangliu")
	run := filepath.Join(dir, "run")
	rep, err := Import(file, run, ImportOptions{})
	require.NoError(t, err)
	require.Equal(t, PytorchCIFARNormalization, rep.Source)
	require.Contains(t, rep.String(), "normalisation: transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.201)), "+
		"the file's model's, recorded by the run and applied at its input")

	ck, err := training.LoadCheckpoint(run, goBackend(t))
	require.NoError(t, err)
	require.Equal(t, cifarlib.InputNormalization(PytorchCIFARNormalization), ck.Info.Input)
	require.Equal(t, cifarlib.InputNormalization(PytorchCIFARNormalization), ck.Model.Normalization())

	out := filepath.Join(dir, "back.safetensors")
	res, err := Export(run, out, ExportOptions{Backend: goBackend(t)})
	require.NoError(t, err)
	require.Equal(t, NamesPytorchCIFAR, res.Names)
	require.Equal(t, PytorchCIFARNormalization, res.Normalization)
	back, err := safetensors.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.201))", back.Metadata[MetaTransforms])
	require.Len(t, back.Tensors, len(ts))
	for _, want := range ts {
		got, ok := back.Get(want.Name)
		require.True(t, ok, want.Name)
		require.Equal(t, want.DType, got.DType, want.Name)
		require.Equal(t, want.Shape, got.Shape, want.Name)
		require.True(t, bytes.Equal(want.Data, got.Data), "%s: the export must be the file's tensor bit for bit", want.Name)
	}
}

// TestImportedRunAppliesItsNormalization: a run imported with a normalisation other than the
// lab's gives, on images the lab's pipeline normalises with the dataset's statistics, the
// logits the same weights give on images normalised with the run's own statistics (what the
// source's transforms.Normalize feeds PyTorch); the committed cnn twin with a made-up std.
func TestImportedRunAppliesItsNormalization(t *testing.T) {
	spec := data.CIFAR10()
	own := Normalization{Mean: [3]float32{0.5, 0.45, 0.4}, Std: [3]float32{0.2, 0.25, 0.3}}
	dir := t.TempDir()
	withOwn, plain := filepath.Join(dir, "own"), filepath.Join(dir, "plain")
	_, err := Import(filepath.Join("testdata", "cnn_twin.pt"), withOwn, ImportOptions{Arch: "cnn", Source: own})
	require.NoError(t, err)
	_, err = Import(filepath.Join("testdata", "cnn_twin.pt"), plain, ImportOptions{Arch: "cnn"})
	require.NoError(t, err)
	backend := goBackend(t)
	ckOwn, err := training.LoadCheckpoint(withOwn, backend)
	require.NoError(t, err)
	got, err := ckOwn.Logits(fixtureImages(t, spec)) // the lab's pipeline: the dataset's statistics
	require.NoError(t, err)
	ckPlain, err := training.LoadCheckpoint(plain, backend)
	require.NoError(t, err)
	ownSpec := spec
	ownSpec.Mean, ownSpec.Std = own.Mean, own.Std
	want, err := ckPlain.Logits(fixtureImages(t, ownSpec)) // the source's pipeline
	require.NoError(t, err)
	w := tensors.MustCopyFlatData[float32](want)
	rows := make([][]float32, len(w)/10)
	for i := range rows {
		rows[i] = w[i*10 : (i+1)*10]
	}
	requireLogitsClose(t, rows, tensors.MustCopyFlatData[float32](got))
	requireDifferent(t, w, ckPlain, spec)
}

// requireDifferent checks that the normalisation matters on these images: the plain run on
// the lab's pipeline gives other logits (so the comparison above could fail).
func requireDifferent(t *testing.T, own []float32, plain *training.LoadedCheckpoint, spec data.Spec) {
	t.Helper()
	lab, err := plain.Logits(fixtureImages(t, spec))
	require.NoError(t, err)
	l := tensors.MustCopyFlatData[float32](lab)
	worst := 0.0
	for i := range l {
		worst = max(worst, abs(float64(l[i]-own[i])))
	}
	require.Greater(t, worst, 100*tolLogits)
}

// TestImportedRunTrainsOn: `train --checkpoint IMPORTED_RUN` continues the committed cnn twin
// from its weights with the user's optimizer and batch: before the first step the store holds
// the imported head (and every other variable) bit for bit, the log says so in one line, the
// run trains from step 0, and its first save makes the run resume as strictly as any other.
func TestImportedRunTrainsOn(t *testing.T) {
	run := filepath.Join(t.TempDir(), "twin")
	_, err := Import(filepath.Join("testdata", "cnn_twin.pt"), run, ImportOptions{Arch: "cnn"})
	require.NoError(t, err)
	imported, err := training.LoadCheckpoint(run, goBackend(t))
	require.NoError(t, err)
	spec := data.CIFAR10()
	train, err := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{Seed: 1, TrainSize: 32, TestSize: 8})
	require.NoError(t, err)
	var log bytes.Buffer
	cfg := training.Defaults()
	cfg.Data.Spec, cfg.Model.Arch, cfg.Checkpoint.Dir, cfg.Run.Steps, cfg.Data.BatchSize, cfg.Eval.SkipFinal = spec, "cnn", run, 2, 8, true
	cfg.Optimizer, _ = optimizers.New("sgd")
	env := training.Env{Train: train, Backend: goBackend(t), Progress: training.ProgressOff, Log: &log}
	tr, err := training.NewTrainer(cfg, env)
	require.NoError(t, err)
	require.Contains(t, log.String(), "training on "+run+" (imported from "+filepath.Join("testdata", "cnn_twin.pt")+
		") from its weights, head kept: step 0, a fresh sgd optimizer state, batch 8")
	require.Equal(t, 0, tr.GlobalStep())
	head := []string{"/cnn/head/dense/weights", "/cnn/head/dense/biases", "/cnn/conv1/conv/weights"}
	src := variableBytes(t, imported.Trained)
	got := variableBytes(t, &training.Trained{Model: tr.Model(), Store: tr.Store(), Backend: tr.Backend()})
	for _, p := range head {
		require.NotEmpty(t, src[p], p)
		require.Equal(t, src[p], got[p], "%s must be the imported one, bit for bit, at step 0", p)
	}
	res, err := tr.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, res.EndStep)
	rec, err := runs.ReadRecord(run)
	require.NoError(t, err)
	require.Equal(t, runs.RunDone, rec.Status)
	require.Equal(t, filepath.Join("testdata", "cnn_twin.pt"), rec.ImportedFrom, "run.json still says where the weights came from")

	cfg.Data.BatchSize, cfg.Run.Steps, env.Log = 16, 4, nil
	_, err = training.NewTrainer(cfg, env)
	var mismatch *training.CheckpointMismatchError
	require.ErrorAs(t, err, &mismatch, "once trained on, the run resumes only with its own settings")

	other := filepath.Join(t.TempDir(), "twin100")
	_, err = Import(filepath.Join("testdata", "cnn_twin.pt"), other, ImportOptions{Arch: "cnn"})
	require.NoError(t, err)
	cfg.Checkpoint.Dir, cfg.Model.Arch = other, "resnet20"
	_, err = training.NewTrainer(cfg, env)
	require.ErrorContains(t, err, "is an imported cnn for cifar10 (head 10); training it on needs the same model and dataset, not resnet20")
}

// variableBytes reads every float32 variable of a trained model (loading the lazily loaded
// checkpoint with one evaluation on a blank image) as bytes, by path.
func variableBytes(t *testing.T, tr *training.Trained) map[string][]byte {
	t.Helper()
	vars, err := runVariables(tr)
	require.NoError(t, err)
	out := map[string][]byte{}
	for p, v := range vars {
		b := make([]byte, 0, 4*len(v.Values))
		for _, x := range v.Values {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		out[p] = b
	}
	return out
}

// TestDiagnoseImportedRunNormalization: diagnose --from on a run with its own normalisation
// says the model re-normalises the target's images to it (no shift note), on both datasets.
func TestDiagnoseImportedRunNormalization(t *testing.T) {
	run := filepath.Join(t.TempDir(), "twin")
	_, err := Import(filepath.Join("testdata", "cnn_twin.pt"), run, ImportOptions{Arch: "cnn", Source: PytorchCIFARNormalization})
	require.NoError(t, err)
	root := t.TempDir()
	for _, spec := range []data.Spec{data.CIFAR10(), data.CIFAR100(data.LabelsFine)} {
		require.NoError(t, data.Synthesize(root, spec, data.SynthOptions{Seed: 1, TrainSize: 50, TestSize: 20}))
		d, err := training.DiagnoseRun(run, spec, root, cifarlib.DiagnoseOptions{Backend: goBackend(t)})
		require.NoError(t, err)
		found := false
		for _, c := range d.Checklist {
			if c.Item == "normalisation" {
				found = true
				require.Equal(t, cifarlib.CheckOK, c.Status)
				require.Contains(t, c.Detail, "the run applies its own transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.201)) "+
					"at its input: "+spec.ID()+"'s images")
			}
		}
		require.True(t, found)
	}
}
