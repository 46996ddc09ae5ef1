package interop

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/cifarlab/cifarlab/internal/safetensors"
)

// toTorch turns the lab variables of arch (by path) into PyTorch's state_dict of a naming, in
// its key order: kernels back to [out, in, kh, kw], linear weights to [out, in] (with the cnn
// head's inputs back in C x H x W order), num_batches_tracked an int64 scalar.
func toTorch(vars map[string]Variable, arch string, names Names, numClasses int) ([]safetensors.Tensor, error) {
	ps, err := keyMap(arch, names, numClasses)
	if err != nil {
		return nil, err
	}
	out := make([]safetensors.Tensor, 0, len(ps))
	for i, p := range ps {
		v, ok := vars[p.lab]
		want := p.labShape()
		if p.kind == kindBatches {
			want = []int{channelsOf(ps, i)}
		}
		if !ok || !slices.Equal(v.Shape, want) || len(v.Values) != numel(want) {
			got := "missing"
			if ok {
				got = fmt.Sprint(v.Shape)
			}
			return nil, fmt.Errorf("interop: the run has no variable %s of shape %v (%s) for PyTorch's %s: not a %s run with %d classes",
				p.lab, want, got, p.torch, arch, numClasses)
		}
		t := safetensors.Tensor{Name: p.torch, DType: "F32", Shape: p.shape}
		var values []float32
		switch p.kind {
		case kindBatches:
			t.DType, t.Shape = "I64", []int{}
			t.Data = binary.LittleEndian.AppendUint64(nil, uint64(int64(math.Round(float64(v.Values[0])))))
			out = append(out, t)
			continue
		case kindConv:
			values = convToTorch(v.Values, p.shape)
		case kindLinear, kindFlattenLinear:
			values = linearToTorch(v.Values, p.shape, p.kind == kindFlattenLinear)
		default:
			values = v.Values
		}
		t.Data = make([]byte, 0, 4*len(values))
		for _, x := range values {
			t.Data = binary.LittleEndian.AppendUint32(t.Data, math.Float32bits(x))
		}
		out = append(out, t)
	}
	return out, nil
}

// numel is the element count of a shape.
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
