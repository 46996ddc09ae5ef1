package cifarlib

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/backends"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
)

// Precision is the floating-point format a model's convolutions and matrix products compute in
// (training.Settings.Compute.Precision, ModelBuilder.Precision, cifarlab train|eval --precision). Whatever the
// precision, the variables (master weights, optimizer state, batch-norm statistics) are float32,
// and so are the loss, its guards and the checkpoints: a run saved in one precision resumes and
// evaluates in the other.
type Precision string

const (
	// PrecisionF32 computes everything in float32 (the default).
	PrecisionF32 Precision = "f32"
	// PrecisionBF16Mixed runs the convolutions and matrix products (the dense head included) in
	// bfloat16, like PyTorch's torch.autocast(dtype=torch.bfloat16) or Lightning's
	// precision="bf16-mixed": right before each one, its input and its weights are cast to
	// bfloat16, and its result is cast back to float32, so everything between them (bias, batch
	// norm, ReLU, pooling, loss, guards) stays float32. The gradients of the convolutions and
	// matrix products are bfloat16 products too. XLA accumulates bfloat16 products in float32,
	// as cuBLAS and cuDNN do on a GPU, where bfloat16 runs on the tensor cores.
	PrecisionBF16Mixed Precision = "bf16-mixed"
)

// Precisions lists the precision names ParsePrecision and training.Settings.Compute.Precision accept.
func Precisions() []string { return []string{string(PrecisionF32), string(PrecisionBF16Mixed)} }

// ParsePrecision returns the Precision named s ("f32" or "bf16-mixed", any case; "" is f32).
func ParsePrecision(s string) (Precision, error) {
	switch p := Precision(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return PrecisionF32, nil
	case PrecisionF32, PrecisionBF16Mixed:
		return p, nil
	}
	return "", fmt.Errorf("cifarlib: unknown precision %q: use %s", s, strings.Join(Precisions(), " or "))
}

// String returns the precision's name; the zero value is "f32".
func (p Precision) String() string {
	if p == "" {
		return string(PrecisionF32)
	}
	return string(p)
}

// computeDType is the dtype the convolutions and matrix products run in.
func (p Precision) computeDType() dtypes.DType {
	if p == PrecisionBF16Mixed {
		return dtypes.BFloat16
	}
	return dtypes.Float32
}

// PrecisionError reports a precision the backend cannot compute in. cifarlib never falls back to
// float32 silently: a bf16-mixed run on such a backend stops before anything is compiled.
type PrecisionError struct {
	// Precision is the precision asked for and Backend the backend's name.
	Precision Precision
	Backend   string
	// Missing names what the backend lacks, e.g. "the bfloat16 dtype".
	Missing string
}

// Error implements error: what was asked, where, what is missing and the fix.
func (e *PrecisionError) Error() string {
	return fmt.Sprintf("cifarlib: precision %s needs bfloat16 convolutions and matrix products, but backend %s lacks %s: "+
		"use precision f32 (precision=f32, training.Settings.Compute.Precision = cifarlib.PrecisionF32) there, or an XLA backend (cpu, cuda)",
		e.Precision, e.Backend, e.Missing)
}

// CheckPrecision returns a *PrecisionError when backend cannot run a model in precision p: for
// bf16-mixed it needs the bfloat16 dtype and the DotGeneral, ConvGeneral and ConvertDType ops
// (compute v0.1.3's pure-Go backend and XLA have them). PrecisionF32 always passes.
func CheckPrecision(backend compute.Backend, p Precision) error {
	if _, err := ParsePrecision(string(p)); err != nil {
		return err
	}
	if backend == nil || p.computeDType() == dtypes.Float32 {
		return nil
	}
	caps := backend.Capabilities()
	missing := []string{}
	if !caps.DTypes[p.computeDType()] {
		missing = append(missing, "the bfloat16 dtype")
	}
	for _, op := range []compute.OpType{compute.OpTypeDotGeneral, compute.OpTypeConvGeneral, compute.OpTypeConvertDType} {
		if !caps.Operations[op] {
			missing = append(missing, "the "+op.String()+" op")
		}
	}
	if len(missing) > 0 {
		return &PrecisionError{Precision: p, Backend: backends.Name(backend), Missing: strings.Join(missing, ", ")}
	}
	return nil
}

// toCompute casts x (an activation or a weight, float32) to the dtype the model's convolutions
// and matrix products run in; a no-op in f32.
func (nb *netBuilder) toCompute(x *graph.Node) *graph.Node {
	if dt := nb.m.Precision.computeDType(); x.DType() != dt {
		return graph.ConvertDType(x, dt)
	}
	return x
}

// fromCompute casts the result of a convolution or matrix product back to float32.
func fromCompute(y *graph.Node) *graph.Node {
	if y.DType() != dtypes.Float32 {
		return graph.ConvertDType(y, dtypes.Float32)
	}
	return y
}

// matMul is the matrix product a [m, k] x b [k, n] in the operands' dtype. For bfloat16
// operands GoMLX's Dot asks for a float32 accumulator, and its gradient then computes both
// backward products in float32 (graph.dotGeneralVJP converts to the accumulator's dtype); that
// accumulator request is dropped here so that, as with torch.autocast, the backward products
// run in bfloat16 too. XLA still accumulates bfloat16 products in float32 (tested by
// TestPrecisionBF16AccumulatesInFloat32).
func matMul(a, b *graph.Node) *graph.Node {
	return graph.Dot(a, b).WithAccumulatorDType(dtypes.InvalidDType).Product()
}
