package runs

import "math"

// Smoothing is the smoothing weight of the training curves (History.SmoothedLoss and
// SmoothedAccuracy): the weight of the past in TensorBoard's exponential moving average, per
// History point. It is TensorBoard's own default, 0.6, so a run's curves look the same in a
// notebook and in TensorBoard; it averages about the last 2.5 points, so on a short run the
// smoothed curve stays with the batches (0.9 averaged the last 10 and, on the 50-step runs of
// notebook 06, stayed above both the batch loss and the test loss for the whole run).
const Smoothing = 0.6

// Smooth returns values smoothed the way TensorBoard's scalar charts smooth them: an
// exponential moving average with the given weight of the past (0: no smoothing, towards 1:
// smoother), debiased for its zero start, so that the first value is kept as it is and the
// early values are not pulled towards 0:
//
//	last_i = weight*last_(i-1) + (1-weight)*v_i,  last_0 = 0
//	smoothed_i = last_i / (1 - weight^i)
//
// Unlike GoMLX's "Moving Average Loss" (the plain mean of the first 1/decay steps, then an
// average that gives each new step a weight of 1%), it tracks the values as they fall.
// Values that are not finite (NaN, ±Inf) are kept as they are and do not enter the average.
// A weight outside [0, 1) is clamped to it.
func Smooth(values []float64, weight float64) []float64 {
	weight = min(max(weight, 0), math.Nextafter(1, 0))
	out := make([]float64, len(values))
	last, n := 0.0, 0
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			out[i] = v
			continue
		}
		n++
		last = weight*last + (1-weight)*v
		out[i] = last / (1 - math.Pow(weight, float64(n)))
	}
	return out
}

// SmoothedLoss returns the batch loss of every point, smoothed with Smooth and Smoothing:
// what the loss charts draw as the training curve.
func (h *History) SmoothedLoss() []float64 {
	losses := make([]float64, len(h.Points))
	for i, p := range h.Points {
		losses[i] = p.Loss
	}
	return Smooth(losses, Smoothing)
}

// SmoothedAccuracy returns the batch accuracy of every point smoothed as SmoothedLoss smooths
// the loss, and true; or, for a history without batch accuracies (written before they were
// recorded), the moving averages of Accuracy as they are, and false.
func (h *History) SmoothedAccuracy() ([]float64, bool) {
	values := make([]float64, len(h.Points))
	batch := len(h.Points) > 0
	for i, p := range h.Points {
		values[i] = p.Accuracy
		if p.BatchAccuracy == nil {
			batch = false
		}
	}
	if !batch {
		return values, false
	}
	for i, p := range h.Points {
		values[i] = *p.BatchAccuracy
	}
	return Smooth(values, Smoothing), true
}
