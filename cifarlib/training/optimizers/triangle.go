package optimizers

// Airbench's triangle learning-rate schedule (ScheduleTriangle).

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// The triangle schedule of airbench94 (airbench 0.1.8, utils.py: train's
// triangle(total_train_steps, start=0.2, end=0.07, peak=0.23)).
const (
	triangleStart = 0.2
	triangleEnd   = 0.07
	trianglePeak  = 0.23
)

// triangle is airbench's triangle(steps, start, end, peak) (airbench 0.1.8, utils.py): the
// factor of the learning rate at step x (0-based: the step being taken) rises linearly from
// start at step 0 to 1 at the integer peak step int(peak*steps), then falls linearly to end at
// step steps. It computes as airbench does, in float32: the slope m and intercept b of each
// segment from the float32 end points, then m*x + b.
type triangle struct {
	// peakStep is int(peak*steps), as Python's int() truncates.
	peakStep int
	// m and b are the slopes and intercepts of the rising (0) and the falling (1) segment.
	m, b [2]float32
}

// newTriangle returns the triangle schedule over steps steps.
func newTriangle(steps int, start, end, peak float64) triangle {
	p := int(peak * float64(steps))
	s, e, one := float32(start), float32(end), float32(1)
	tr := triangle{peakStep: p}
	if p > 0 {
		tr.m[0] = (one - s) / float32(p)
	}
	tr.b[0] = s // start - m0*0
	tr.m[1] = (e - one) / float32(steps-p)
	tr.b[1] = one - tr.m[1]*float32(p)
	return tr
}

// airbenchTriangle is the schedule of Schedule.Name "triangle" over steps steps.
func airbenchTriangle(steps int) triangle {
	return newTriangle(steps, triangleStart, triangleEnd, trianglePeak)
}

// at is the factor at step x (0 <= x <= steps): segment 0 below the peak step, else segment 1
// (airbench's index sum(x >= xp) - 1, clamped to the two segments).
func (tr triangle) at(x int) float32 {
	i := 1
	if x < tr.peakStep {
		i = 0
	}
	return tr.m[i]*float32(x) + tr.b[i]
}

// The triangle's fed values (fed.go): its segments' slopes and intercepts and its peak
// step, which depend on the run's steps.
var (
	hyperTriangleSlope     = [2]string{"triangle_rise_slope", "triangle_fall_slope"}
	hyperTriangleIntercept = [2]string{"triangle_rise_intercept", "triangle_fall_intercept"}
)

const hyperTrianglePeakStep = "triangle_peak_step"

// fed returns the values the triangle's graph reads at run time, with the learning rate its
// factor multiplies.
func (tr triangle) fed(learningRate float64) Values {
	h := Values{hyperTrianglePeakStep: float64(float32(tr.peakStep)), hyperLearningRate: learningRate}
	for i := range 2 {
		h[hyperTriangleSlope[i]], h[hyperTriangleIntercept[i]] = float64(tr.m[i]), float64(tr.b[i])
	}
	return h
}

// factor builds the factor at step (an integer node: the step being taken, from 0) in float32,
// its segments and peak fed at run time (Scalar).
func (tr triangle) factor(step *graph.Node) *graph.Node {
	x := graph.ConvertDType(step, dtypes.Float32)
	g := x.Graph()
	seg := func(i int) *graph.Node {
		return graph.Add(graph.Mul(x, Scalar(g, hyperTriangleSlope[i], dtypes.Float32, float64(tr.m[i]))),
			Scalar(g, hyperTriangleIntercept[i], dtypes.Float32, float64(tr.b[i])))
	}
	below := graph.LessThan(x, Scalar(g, hyperTrianglePeakStep, dtypes.Float32, float64(float32(tr.peakStep))))
	return graph.Where(below, seg(0), seg(1))
}

// setLearningRate sets GoMLX's learning-rate variable in g to learningRate (fed) times the
// factor of the step being taken (the global step before the optimizer increments it).
func (tr triangle) setLearningRate(scope *model.Scope, g *graph.Graph, learningRate float64) {
	step := optimizer.GetGlobalStepVar(scope).NodeValue(g)
	lrVar := optimizer.LearningRateVarWithValue(scope, dtypes.Float32, learningRate)
	factor := tr.factor(step)
	g.AttachState(triangleFactorKey{}, factor)
	lrVar.SetNodeValue(graph.Mul(factor, Scalar(g, hyperLearningRate, dtypes.Float32, learningRate)))
}

// triangleFactorKey keys the triangle's factor node in a training graph (Graph.State), for the
// nesterov optimizer (nesterovOptimizer.groupRate).
type triangleFactorKey struct{}

// triangleFactor returns the triangle's factor node of g, or nil.
func triangleFactor(g *graph.Graph) *graph.Node {
	factor, _ := g.State(triangleFactorKey{}).(*graph.Node)
	return factor
}
