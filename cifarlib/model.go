package cifarlib

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Architecture names accepted by NewModel.
const (
	// ArchLinear is a single dense layer on the flattened pixels.
	ArchLinear = "linear"
	// ArchCNN is a small CNN (3 convolutions of 16/32/64 channels with max-pooling, then the
	// dense head), fast enough for the pure-Go backend in tests and notebooks.
	ArchCNN = "cnn"
	// ArchResNet18 is the CIFAR variant of ResNet-18: 3x3 stem with stride 1, no max-pool, four
	// stages of two BasicBlocks at 64/128/256/512 channels, batch norm, global average pooling
	// and a dense head (11.2M parameters for 10 classes).
	ArchResNet18 = "resnet18"
	// ArchResNet20 is He et al.'s CIFAR ResNet-20: 3x3 stem with 16 channels, three stages of
	// three BasicBlocks at 16/32/64 channels with zero-padding identity shortcuts (option A),
	// global average pooling and a dense head (0.27M parameters).
	ArchResNet20 = "resnet20"
	// ArchAirbench94 is airbench94's network (Keller Jordan, KellerJordan/cifar10-airbench,
	// airbench 0.1.8's make_net94; 94% on CIFAR-10 in seconds on a GPU with its recipe): a 2x2
	// whitening convolution set from the training data (WhiteningFilters), GELU, three
	// conv-pool-BN-GELU-conv-BN-GELU groups of 64, 256 and 256 channels, a 3x3 max-pool and a
	// bias-free linear head scaled by 1/9 (1.97M parameters for 10 classes). See arch_airbench.go.
	ArchAirbench94 = "airbench94"
)

// Architectures lists the architecture names NewModel accepts.
func Architectures() []string {
	return []string{ArchLinear, ArchCNN, ArchResNet18, ArchResNet20, ArchAirbench94}
}

// BatchNormKind selects how batch normalization is computed.
type BatchNormKind int

const (
	// BatchNormGraph computes batch norm from elementary graph ops (norm.BatchNorm with
	// UseBackendInference(false)). It works on every backend, including the pure-Go one, whose
	// lack of a BatchNormForTraining op makes GoMLX's default batch norm fail.
	BatchNormGraph BatchNormKind = iota
	// BatchNormBackendOps uses the backend's fused batch-norm ops (GoMLX's default); chosen
	// when the backend supports them (XLA).
	BatchNormBackendOps
)

// String returns "graph" or "backend-ops".
func (k BatchNormKind) String() string {
	if k == BatchNormBackendOps {
		return "backend-ops"
	}
	return "graph"
}

// BatchNormFor returns the batch-norm variant that works on the backend: BatchNormBackendOps
// when it implements BatchNormForTraining/Inference/Gradient, else BatchNormGraph.
func BatchNormFor(backend compute.Backend) BatchNormKind {
	if backend == nil {
		return BatchNormGraph
	}
	ops := backend.Capabilities().Operations
	if ops[compute.OpTypeBatchNormForTraining] && ops[compute.OpTypeBatchNormForInference] &&
		ops[compute.OpTypeBatchNormGradient] {
		return BatchNormBackendOps
	}
	return BatchNormGraph
}

// ModelBuilder configures a model; create it with NewModel and finish with Done.
type ModelBuilder struct {
	spec      data.Spec
	arch      string
	head      int
	headSet   bool
	batchNorm BatchNormKind
	layerOps  LayerOps
	precision Precision
	backend   compute.Backend
	input     InputNormalization
}

// NewModel starts building a classifier of architecture arch ("linear", "cnn", "resnet18",
// "resnet20" or "airbench94") for the dataset spec. The classifier head width is taken from spec.NumClasses,
// like timm's num_classes, so a model built for CIFAR-100 has 100 outputs.
func NewModel(spec data.Spec, arch string) *ModelBuilder {
	return &ModelBuilder{spec: spec, arch: strings.ToLower(strings.TrimSpace(arch)), head: spec.NumClasses}
}

// Head overrides the head width. It exists only to reproduce the head/label mismatch bug in
// notebooks; the override is recorded (Model.HeadOverridden) and shown by String, Summary and
// Diagnose, and the guarded loss refuses it.
func (b *ModelBuilder) Head(n int) *ModelBuilder {
	b.head, b.headSet = n, true
	return b
}

// Backend picks the batch-norm variant that works on the backend (see BatchNormFor) and the
// fastest way to compute convolutions and pooling on it (see LayerOpsFor), and makes Done check
// that the backend computes the Precision (CheckPrecision). Without it the model uses
// BatchNormGraph and LayerOpsNative, which work everywhere.
func (b *ModelBuilder) Backend(backend compute.Backend) *ModelBuilder {
	b.batchNorm = BatchNormFor(backend)
	b.layerOps = LayerOpsFor(backend)
	b.backend = backend
	return b
}

// LayerOps sets how convolutions and pooling are computed explicitly (the variables and the
// function are the same either way).
func (b *ModelBuilder) LayerOps(kind LayerOps) *ModelBuilder {
	b.layerOps = kind
	return b
}

// Precision sets the precision the convolutions and matrix products compute in (PrecisionF32,
// the default, or PrecisionBF16Mixed); the variables are float32 either way.
func (b *ModelBuilder) Precision(p Precision) *ModelBuilder {
	b.precision = p
	return b
}

// BatchNorm sets the batch-norm variant explicitly.
func (b *ModelBuilder) BatchNorm(kind BatchNormKind) *ModelBuilder {
	b.batchNorm = kind
	return b
}

// Done validates the configuration and returns the Model.
func (b *ModelBuilder) Done() (*Model, error) {
	if b.spec.NumClasses <= 0 || b.spec.Name == "" {
		return nil, errors.New("cifarlib: NewModel needs a dataset Spec (use CIFAR10(), CIFAR100(...) or SpecByName)")
	}
	known := false
	for _, a := range Architectures() {
		known = known || a == b.arch
	}
	if !known {
		return nil, fmt.Errorf("cifarlib: unknown architecture %q: use one of %s", b.arch, strings.Join(Architectures(), ", "))
	}
	if b.head <= 0 {
		return nil, fmt.Errorf("cifarlib: head width must be positive, got %d", b.head)
	}
	precision, err := ParsePrecision(string(b.precision))
	if err != nil {
		return nil, err
	}
	if err := CheckPrecision(b.backend, precision); err != nil {
		return nil, err
	}
	if err := checkInput(b.input); err != nil {
		return nil, err
	}
	return &Model{
		Input:          b.input,
		Arch:           b.arch,
		Spec:           b.spec,
		NumClasses:     b.head,
		HeadOverridden: b.headSet && b.head != b.spec.NumClasses,
		BatchNorm:      b.batchNorm,
		LayerOps:       b.layerOps,
		Precision:      precision,
	}, nil
}

// Model is a CIFAR classifier: an architecture, the dataset Spec it was built for, and its head
// width. Its ModelFn builds the GoMLX graph; its LossFn is the guarded loss.
type Model struct {
	// Arch is the architecture name.
	Arch string
	// Spec is the dataset the model was built for.
	Spec data.Spec
	// NumClasses is the width of the classifier head (the logits' last dimension).
	NumClasses int
	// HeadOverridden is true when the head width was forced with ModelBuilder.Head to a value
	// other than Spec.NumClasses.
	HeadOverridden bool
	// BatchNorm is the batch-norm variant used by the ResNets and airbench94.
	BatchNorm BatchNormKind
	// LayerOps is how convolutions and pooling are computed (the variables do not depend on it).
	LayerOps LayerOps
	// Precision is what the convolutions and matrix products compute in (the variables, the
	// loss and the guards are float32 whatever it is); it can be changed between uses of a
	// model, e.g. to evaluate a float32-trained model in bf16-mixed.
	Precision Precision
	// Input is the normalisation the weights expect when it is not the Spec's (an imported
	// model's; zero: the Spec's, see InputNormalization): the graph re-normalises its input.
	Input InputNormalization
}

// String describes the model, e.g. "cnn for cifar100 (100 classes)" or
// "cnn for cifar100 (100 classes), head overridden to 10".
func (m *Model) String() string {
	s := fmt.Sprintf("%s for %s (%d classes)", m.Arch, m.Spec.ID(), m.Spec.NumClasses)
	if m.HeadOverridden {
		s += fmt.Sprintf(", head overridden to %d", m.NumClasses)
	}
	return s
}

// ModelFn is the GoMLX model function (train.ModelFn): it takes one input, images shaped
// [batch, 32, 32, 3] float32, and returns the logits [batch, NumClasses].
//
// Bad inputs panic with a typed error (*InputShapeError, *InputDTypeError), which GoMLX's
// executors and train.Trainer return as errors (errors.As works through them).
// spec is passed through by train.Trainer from the Dataset and is otherwise ignored.
func (m *Model) ModelFn(scope *model.Scope, spec any, inputs []*graph.Node) []*graph.Node {
	if len(inputs) != 1 {
		panic(fmt.Errorf("cifarlib: %s takes exactly one input (the images), got %d", m, len(inputs)))
	}
	x := inputs[0]
	if err := checkImages(x.Shape()); err != nil {
		panic(err)
	}
	x = m.renormalizeInput(x)
	rec, _ := spec.(*layerRecorder)
	nb := &netBuilder{m: m, rec: rec}
	scope = scope.In("%s", m.Arch)
	var logits *graph.Node
	switch m.Arch {
	case ArchLinear:
		logits = nb.linear(scope, x)
	case ArchCNN:
		logits = nb.cnn(scope, x)
	case ArchResNet18:
		logits = nb.resnet(scope, x, 64, []int{64, 128, 256, 512}, 2, false)
	case ArchResNet20:
		logits = nb.resnet(scope, x, 16, []int{16, 32, 64}, 3, true)
	case ArchAirbench94:
		logits = nb.airbench94(scope, x)
	default:
		panic(fmt.Errorf("cifarlib: unknown architecture %q", m.Arch))
	}
	return []*graph.Node{logits}
}

// checkImages verifies the image side of the input contract: float32 images shaped
// [batch, 32, 32, 3]. It returns *InputShapeError (naming a channels-first [batch, 3, 32, 32]
// input as such) or *InputDTypeError.
func checkImages(s shapes.Shape) error {
	dims := append([]int(nil), s.Dimensions...)
	if len(dims) != 4 || dims[1] != data.ImageHeight || dims[2] != data.ImageWidth || dims[3] != data.ImageChannels {
		return &InputShapeError{Dimensions: dims,
			ChannelsFirst: len(dims) == 4 && dims[1] == data.ImageChannels && dims[2] == data.ImageHeight && dims[3] == data.ImageWidth}
	}
	if s.DType != dtypes.Float32 {
		return &InputDTypeError{DType: strings.ToLower(s.DType.String())}
	}
	return nil
}

// layerRecorder collects one LayerInfo per layer while a graph is built; Summary passes it as
// ModelFn's spec.
type layerRecorder struct {
	layers []LayerInfo
}

// netBuilder carries the model configuration and the optional recorder through the
// architecture builders.
type netBuilder struct {
	m   *Model
	rec *layerRecorder
}

// mark records a layer: its name, the scope holding its variables (or "" for none), and x's shape.
func (nb *netBuilder) mark(name string, scope *model.Scope, x *graph.Node) *graph.Node {
	if nb.rec != nil {
		path := ""
		if scope != nil {
			path = scope.Scope()
		}
		nb.rec.layers = append(nb.rec.layers, LayerInfo{Name: name, Scope: path,
			OutputShape: append([]int(nil), x.Shape().Dimensions...)})
	}
	return x
}
