package interop

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/safetensors"
)

// TestKeyMapCoversLabModel: the lab variables the key maps write are exactly the variables the
// lab's model creates (paths and shapes), for resnet18 and cnn at 10 and 100 classes.
func TestKeyMapCoversLabModel(t *testing.T) {
	backend := goBackend(t)
	for _, tc := range []struct {
		arch    string
		names   Names
		classes int
	}{{"resnet18", NamesPytorchCIFAR, 10}, {"resnet18", NamesTorchvision, 100}, {"cnn", NamesCNNTwin, 100}} {
		spec := data.CIFAR10()
		if tc.classes == 100 {
			spec = data.CIFAR100(data.LabelsFine)
		}
		m, err := cifarlib.NewModel(spec, tc.arch).Backend(backend).Done()
		require.NoError(t, err)
		store := model.NewStore()
		_, err = m.Logits(backend, store, tensors.FromFlatDataAndDimensions(make([]float32, data.ImageBytes), 1, 32, 32, 3))
		require.NoError(t, err)
		want := map[string][]int{}
		for v := range store.IterVariables() {
			if strings.HasPrefix(v.Path(), "/"+tc.arch+"/") { // not the RNG state
				want[v.Path()] = v.Shape().Dimensions
			}
		}
		ps, err := keyMap(tc.arch, tc.names, tc.classes)
		require.NoError(t, err)
		got := map[string][]int{}
		for i, p := range ps {
			shape := p.labShape()
			if p.kind == kindBatches {
				shape = []int{channelsOf(ps, i)}
			}
			got[p.lab] = shape
		}
		require.Equal(t, want, got, "%s %s", tc.arch, tc.names)
	}
}

// TestImportExportResNetSafetensors: a torchvision-named ResNet-18 in a safetensors file (no
// metadata) imports with the naming detected and, exported (in the source's naming, the
// default), gives back its tensors bit for bit; exported in kuangliu's naming it has kuangliu's keys.
func TestImportExportResNetSafetensors(t *testing.T) {
	dir := t.TempDir()
	file, ts := writeSynthetic(t, dir, "torchvision")
	lab := data.CIFAR10()
	rep, err := Import(file, filepath.Join(dir, "run"), ImportOptions{Source: Normalization{Mean: lab.Mean, Std: lab.Std}})
	require.NoError(t, err)
	require.Equal(t, NamesTorchvision, rep.Names)
	require.Equal(t, 20, rep.BatchNorms)
	require.Equal(t, int64(42), rep.BatchesTracked)

	out := filepath.Join(dir, "back.safetensors")
	_, err = Export(filepath.Join(dir, "run"), out, ExportOptions{Backend: goBackend(t)}) // the source's naming by default
	require.NoError(t, err)
	back, err := safetensors.ReadFile(out)
	require.NoError(t, err)
	require.Len(t, back.Tensors, len(ts))
	for _, want := range ts {
		got, ok := back.Get(want.Name)
		require.True(t, ok, want.Name)
		require.Equal(t, want, got, want.Name)
	}
	_, err = Export(filepath.Join(dir, "run"), out, ExportOptions{Names: NamesPytorchCIFAR, Backend: goBackend(t)})
	require.NoError(t, err)
	kuangliu, err := safetensors.ReadFile(out)
	require.NoError(t, err)
	var names []string
	for _, k := range readKeys(t, "kuangliu") {
		names = append(names, k.Name)
	}
	for _, tensor := range kuangliu.Tensors {
		require.True(t, slices.Contains(names, tensor.Name), tensor.Name)
	}
	require.Len(t, kuangliu.Tensors, len(names))
}
