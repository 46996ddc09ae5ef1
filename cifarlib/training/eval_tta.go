package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Test-time augmentation levels (EvalOptions.TTA), after airbench (airbench 0.1.8, utils.py:
// infer with tta_level 0, 1 and 2: infer_basic, infer_mirror, infer_mirror_translate). Each
// averages the model's logits (not its probabilities) over views of every image.
const (
	// TTANone evaluates each image as it is: f(x).
	TTANone = 0
	// TTAMirror averages the image and its left-right mirror: 0.5*f(x) + 0.5*f(mirror(x)).
	TTAMirror = 1
	// TTAMirrorTranslate adds two translations to TTAMirror: with t1 and t2 the image shifted
	// by one pixel up-left and down-right (the 32x32 crops at (0, 0) and (2, 2) of the image
	// padded by 1 pixel with reflect padding, PyTorch's F.pad mode 'reflect'),
	// 0.5*m(x) + 0.5*(m(t1) + m(t2))/2, where m(v) = 0.5*f(v) + 0.5*f(mirror(v)): six views.
	TTAMirrorTranslate = 2
)

// checkTTA checks an EvalOptions.TTA level.
func checkTTA(level int) error {
	if level < TTANone || level > TTAMirrorTranslate {
		return fmt.Errorf("training: EvalOptions.TTA %d is not a test-time augmentation level: use TTANone (0), TTAMirror (1) or TTAMirrorTranslate (2)", level)
	}
	return nil
}

// ttaName names a TTA level for reports: "none", "mirror", "mirror+translate".
func ttaName(level int) string {
	switch level {
	case TTANone:
		return "none"
	case TTAMirror:
		return "mirror"
	case TTAMirrorTranslate:
		return "mirror+translate"
	}
	return fmt.Sprintf("level %d", level)
}

// ttaWeights returns the weight of each view's logits that TTA level tta averages, one per view:
// for TTAMirrorTranslate x, mirror(x), t1, mirror(t1), t2, mirror(t2), weighted 1/4, 1/4, 1/8,
// 1/8, 1/8, 1/8 (airbench's nesting of means, expanded).
func ttaWeights(tta int) []float32 {
	switch tta {
	case TTANone:
		return []float32{1}
	case TTAMirror:
		return []float32{0.5, 0.5}
	}
	return []float32{0.25, 0.25, 0.125, 0.125, 0.125, 0.125}
}

// ttaViewCount is the number of views TTA level tta averages: 1, 2 or 6.
func ttaViewCount(tta int) int { return len(ttaWeights(tta)) }

// ttaViews returns the views of images [B, 32, 32, 3] that TTA level tta averages, in the order
// of ttaWeights, and their weights.
func ttaViews(images *graph.Node, tta int) (views []*graph.Node, weights []float32) {
	const widthAxis = 2
	mirror := func(x *graph.Node) *graph.Node { return graph.Reverse(x, widthAxis) }
	switch tta {
	case TTANone:
		return []*graph.Node{images}, ttaWeights(tta)
	case TTAMirror:
		return []*graph.Node{images, mirror(images)}, ttaWeights(tta)
	}
	up, down := reflectShift(images, -1), reflectShift(images, 1)
	return []*graph.Node{images, mirror(images), up, mirror(up), down, mirror(down)}, ttaWeights(tta)
}

// reflectShift translates images [B, H, W, C] by d (-1 or 1) pixels on both the height and
// width axes: output pixel (y, x) is input pixel (y+d, x+d), with reflect padding at the edge
// (the pixel at -1 is the one at 1, the one at H the one at H-2).
func reflectShift(images *graph.Node, d int) *graph.Node {
	x := images
	for _, axis := range []int{1, 2} {
		n := x.Shape().Dimensions[axis]
		if d < 0 {
			x = graph.Concatenate([]*graph.Node{graph.SliceAxis(x, axis, graph.AxisRange(1, 2)), graph.SliceAxis(x, axis, graph.AxisRange(0, n-1))}, axis)
		} else {
			x = graph.Concatenate([]*graph.Node{graph.SliceAxis(x, axis, graph.AxisRange(1, n)), graph.SliceAxis(x, axis, graph.AxisRange(n-2, n-1))}, axis)
		}
	}
	return x
}

// ttaLogits returns m's logits [B, classes] of images [B, 32, 32, 3], averaged over the views
// of TTA level tta. The views of each image are stacked behind it into one batch of B*views
// images, so the model runs once per batch (its variables, and its batch norm, which
// evaluation runs on the moving averages, are the same for every view) and, on several
// devices, each device computes the views of its own examples.
func ttaLogits(m *cifarlib.Model, scope *model.Scope, images *graph.Node, tta int) *graph.Node {
	views, weights := ttaViews(images, tta)
	if len(views) == 1 {
		return m.ModelFn(scope, nil, views)[0]
	}
	b, k := images.Shape().Dimensions[0], len(views)
	stacked := graph.Reshape(graph.Stack(views, 1), b*k, data.ImageHeight, data.ImageWidth, data.ImageChannels)
	logits := m.ModelFn(scope, nil, []*graph.Node{stacked})[0]
	classes := logits.Shape().Dimensions[logits.Rank()-1]
	logits = graph.Reshape(logits, b, k, classes)
	w := graph.Reshape(graph.Const(images.Graph(), weights), 1, k, 1)
	return graph.ReduceSum(graph.Mul(logits, graph.ConvertDType(w, logits.DType())), 1)
}
