package cifarlib

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// goBackend returns the shared pure-Go backend, for tests about the Go backend itself; the
// model, loss and guard tests use testBackend, which follows $GOMLX_BACKEND.
var goBackend = sync.OnceValue(func() compute.Backend {
	os.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	b, err := backends.New(backends.Go)
	if err != nil {
		panic(err)
	}
	return b
})

// forward runs the model on a zero batch and returns the logits' dimensions.
func forward(t testing.TB, m *Model, batch int) []int {
	t.Helper()
	store := model.NewStore()
	exec, err := model.NewExec(labtest.Backend(t), store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		return m.ModelFn(scope, nil, []*graph.Node{x})[0]
	})
	require.NoError(t, err)
	defer exec.Finalize()
	out, err := exec.Call(tensors.FromShape(shapes.Make(dtypes.Float32, batch, 32, 32, 3)))
	require.NoError(t, err)
	return out[0].Shape().Dimensions
}

func TestModelOutputDimensions(t *testing.T) {
	specs := []struct {
		spec data.Spec
		want int
	}{{data.CIFAR10(), 10}, {data.CIFAR100(data.LabelsFine), 100}, {data.CIFAR100(data.LabelsCoarse), 20}}
	for _, arch := range Architectures() {
		for _, s := range specs {
			t.Run(fmt.Sprintf("%s/%s", arch, s.spec.ID()), func(t *testing.T) {
				if arch == ArchResNet18 && s.spec.ID() != "cifar10" && testing.Short() {
					t.Skip("resnet18 forward is slow on the go backend")
				}
				m, err := NewModel(s.spec, arch).Backend(labtest.Backend(t)).Done()
				require.NoError(t, err)
				require.Equal(t, s.want, m.NumClasses)
				require.False(t, m.HeadOverridden)
				require.Equal(t, []int{2, s.want}, forward(t, m, 2))
			})
		}
	}
}

func TestModelString(t *testing.T) {
	m, err := NewModel(data.CIFAR100(data.LabelsFine), "cnn").Done()
	require.NoError(t, err)
	require.Equal(t, "cnn for cifar100 (100 classes)", m.String())
	m, err = NewModel(data.CIFAR100(data.LabelsFine), "cnn").Head(10).Done()
	require.NoError(t, err)
	require.True(t, m.HeadOverridden)
	require.Equal(t, 10, m.NumClasses)
	require.Equal(t, "cnn for cifar100 (100 classes), head overridden to 10", m.String())
	// Head set to the spec's own width is not an override.
	m, err = NewModel(data.CIFAR10(), "linear").Head(10).Done()
	require.NoError(t, err)
	require.False(t, m.HeadOverridden)
}

func TestNewModelErrors(t *testing.T) {
	_, err := NewModel(data.CIFAR10(), "vgg16").Done()
	require.EqualError(t, err, `cifarlib: unknown architecture "vgg16": use one of linear, cnn, resnet18, resnet20, airbench94`)
	_, err = NewModel(data.Spec{}, "cnn").Done()
	require.EqualError(t, err, "cifarlib: NewModel needs a dataset Spec (use CIFAR10(), CIFAR100(...) or SpecByName)")
	_, err = NewModel(data.CIFAR10(), "cnn").Head(0).Done()
	require.EqualError(t, err, "cifarlib: head width must be positive, got 0")
}

func TestBatchNormFor(t *testing.T) {
	require.Equal(t, BatchNormGraph, BatchNormFor(goBackend()))
	require.Equal(t, BatchNormGraph, BatchNormFor(nil))
	m, err := NewModel(data.CIFAR10(), ArchResNet20).Backend(goBackend()).Done()
	require.NoError(t, err)
	require.Equal(t, BatchNormGraph, m.BatchNorm)
}

func TestModelFnRejectsBadImages(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	run := func(shape shapes.Shape) error {
		store := model.NewStore()
		_, err := model.CallOnceN(labtest.Backend(t), store, func(scope *model.Scope, x *graph.Node) *graph.Node {
			return m.ModelFn(scope, nil, []*graph.Node{x})[0]
		}, tensors.FromShape(shape))
		return err
	}
	err = run(shapes.Make(dtypes.Float32, 4, 3, 32, 32))
	var shapeErr *InputShapeError
	require.ErrorAs(t, err, &shapeErr)
	require.True(t, errors.Is(err, ErrInputContract))
	require.True(t, shapeErr.ChannelsFirst)
	require.Equal(t, "images have shape [4 3 32 32], which is channels-first [batch, 3, 32, 32] (PyTorch's NCHW): "+
		"cifarlib models take channels-last [batch, 32, 32, 3]: transpose the axes (0, 2, 3, 1), e.g. "+
		"graph.TransposeAllAxes(x, 0, 2, 3, 1), or use cifarlib's Dataset", shapeErr.Error())

	err = run(shapes.Make(dtypes.Float32, 32, 32, 3))
	require.ErrorAs(t, err, &shapeErr)
	require.Equal(t, "images have rank 3 (shape [32 32 3]) but a 4D tensor [batch, 32, 32, 3] is expected: "+
		"a single image needs a batch axis (graph.InsertAxes(x, 0)); flat rows of 3072 values need a reshape "+
		"to [batch, 32, 32, 3]", shapeErr.Error())

	err = run(shapes.Make(dtypes.Float32, 2, 28, 28, 3))
	require.ErrorAs(t, err, &shapeErr)
	require.Equal(t, "images have shape [2 28 28 3] but [batch, 32, 32, 3] is expected: CIFAR images are "+
		"32x32 RGB, stored channels-last", shapeErr.Error())

	err = run(shapes.Make(dtypes.Uint8, 2, 32, 32, 3))
	var dtypeErr *InputDTypeError
	require.ErrorAs(t, err, &dtypeErr)
	require.Equal(t, "images have dtype uint8 but the model takes float32 images: convert the pixels to "+
		"float32 (scaled to [0, 1] and normalised, as cifarlib's Dataset does)", dtypeErr.Error())
}
