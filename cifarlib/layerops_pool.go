package cifarlib

import (
	"github.com/gomlx/gomlx/core/graph"
)

// maxPoolSelect is PyTorch's nn.MaxPool2d(k) (windows of k x k at stride k, the last H%k rows
// and W%k columns left out) for x [batch, H, W, C], computed as a selection: the k*k strided
// slices of x (one per window position, each [batch, H/k, W/k, C]), a mask that picks in each
// window the first maximum in PyTorch's scan order (row by row), and the sum of the slices
// where picked. The forward value is exactly the window's maximum; the gradient goes to the
// picked element alone, as PyTorch's (and graph.MaxPool's select-and-scatter) does, and is
// slices, compares and selects, which XLA fuses into a few loops. XLA CPU lowers
// graph.MaxPool's gradient (select-and-scatter) to scatters over an index array per input
// element: 4x slower at batch 256 on [31, 31, 64] (research/airbench94-parity/findings-cpu.md, "Speed").
//
// Selection uses the slices themselves, never a recomputed maximum, so a fusion that rounds
// differently cannot drop an element: exactly one element of each window is picked (the last
// one when no earlier one equals the maximum, e.g. for NaN).
func maxPoolSelect(x *graph.Node, k int) *graph.Node {
	d := x.Shape().Dimensions
	h, w := d[1]/k, d[2]/k
	at := func(i, j int) *graph.Node { // the element (i, j) of every window
		return graph.Slice(x, graph.AxisRange(), graph.AxisRange(i, i+(h-1)*k+1).Stride(k),
			graph.AxisRange(j, j+(w-1)*k+1).Stride(k), graph.AxisRange())
	}
	// slices and their values without gradient (what the mask is computed from)
	slices, values := make([]*graph.Node, 0, k*k), make([]*graph.Node, 0, k*k)
	for i := range k {
		for j := range k {
			s := at(i, j)
			slices, values = append(slices, s), append(values, graph.StopGradient(s))
		}
	}
	peak := values[0]
	for _, v := range values[1:] {
		peak = graph.Max(peak, v)
	}
	var taken, out *graph.Node // taken: a maximum was picked earlier in the window
	for n, s := range slices {
		var pick *graph.Node
		switch {
		case taken == nil:
			pick = graph.Equal(values[n], peak)
		case n == len(slices)-1:
			pick = graph.LogicalNot(taken)
		default:
			pick = graph.LogicalAnd(graph.Equal(values[n], peak), graph.LogicalNot(taken))
		}
		part := graph.Where(pick, s, graph.ZerosLike(s))
		if out == nil {
			out, taken = part, pick
			continue
		}
		out, taken = graph.Add(out, part), graph.LogicalOr(taken, pick)
	}
	return out
}
