package cifarlib

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/core/graph"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// InputNormalization is the input normalisation a model's weights expect:
// transforms.Normalize(Mean, Std) after ToTensor(), on pixel values scaled to [0, 1]. The lab's
// data pipeline normalises images with the dataset Spec's Mean and Std; a model whose weights
// were trained with other statistics (an imported PyTorch model: kuangliu's pytorch-cifar uses
// the same means with other standard deviations) records its own, and its graph re-normalises
// its input from the Spec's statistics to its own before the first layer.
type InputNormalization struct {
	Mean, Std [data.ImageChannels]float32
}

// IsZero reports whether n is unset (the model uses its Spec's statistics).
func (n InputNormalization) IsZero() bool { return n == InputNormalization{} }

// String formats it as PyTorch's transforms.Normalize((m, m, m), (s, s, s)).
func (n InputNormalization) String() string {
	f := func(v [3]float32) string { return fmt.Sprintf("(%v, %v, %v)", v[0], v[1], v[2]) }
	return "transforms.Normalize(" + f(n.Mean) + ", " + f(n.Std) + ")"
}

// SpecNormalization is the normalisation the data pipeline applies for spec.
func SpecNormalization(spec data.Spec) InputNormalization {
	return InputNormalization{Mean: spec.Mean, Std: spec.Std}
}

// Input sets the normalisation the model's weights expect (zero: the Spec's, the default). Done
// refuses a standard deviation that is not positive.
func (b *ModelBuilder) Input(n InputNormalization) *ModelBuilder {
	b.input = n
	return b
}

// checkInput validates an input normalisation given to Input.
func checkInput(n InputNormalization) error {
	if n.IsZero() {
		return nil
	}
	for c, s := range n.Std {
		if !(s > 0) {
			return fmt.Errorf("cifarlib: input normalisation %v: std of channel %d must be positive", n, c)
		}
	}
	return nil
}

// Normalization is the normalisation the model's weights expect: Input when set, else the
// Spec's.
func (m *Model) Normalization() InputNormalization {
	if m.Input.IsZero() {
		return SpecNormalization(m.Spec)
	}
	return m.Input
}

// renormalizeInput maps images normalised with the Spec's statistics (what the data pipeline
// feeds) to the model's own: x' = (x*specStd + specMean - mean) / std per channel, as one
// multiply-add with coefficients computed in float64. It is the identity (no op in the graph)
// when the model's normalisation is the Spec's.
func (m *Model) renormalizeInput(x *graph.Node) *graph.Node {
	scale, shift, ok := m.renormalization(m.Spec)
	if !ok {
		return x
	}
	g := x.Graph()
	a := graph.Reshape(graph.Const(g, scale[:]), 1, 1, 1, data.ImageChannels)
	b := graph.Reshape(graph.Const(g, shift[:]), 1, 1, 1, data.ImageChannels)
	return graph.Add(graph.Mul(x, a), b)
}

// renormalization is the per-channel x*scale + shift that maps images normalised with from's
// statistics to the model's own, with coefficients computed in float64; ok is false when the
// two are the same (the identity).
func (m *Model) renormalization(from data.Spec) (scale, shift [data.ImageChannels]float32, ok bool) {
	own, spec := m.Normalization(), SpecNormalization(from)
	if own == spec {
		return scale, shift, false
	}
	for c := range data.ImageChannels {
		scale[c] = float32(float64(spec.Std[c]) / float64(own.Std[c]))
		shift[c] = float32((float64(spec.Mean[c]) - float64(own.Mean[c])) / float64(own.Std[c]))
	}
	return scale, shift, true
}

// JoinStats formats per-channel statistics as "a,b,c", each with the fewest digits that read
// back the same (how run records and exported files store them).
func JoinStats(v [data.ImageChannels]float32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	return strings.Join(s, ",")
}

// ParseStats parses "a,b,c" (JoinStats' format).
func ParseStats(s string) ([data.ImageChannels]float32, error) {
	var out [data.ImageChannels]float32
	parts := strings.Split(s, ",")
	if len(parts) != len(out) {
		return out, fmt.Errorf("cifarlib: statistics %q: want %d comma-separated values", s, len(out))
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil {
			return out, fmt.Errorf("cifarlib: statistics %q: %w", s, err)
		}
		out[i] = float32(v)
	}
	return out, nil
}
