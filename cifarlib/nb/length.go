package nb

// SyntheticEpochs is how long Lab.Epochs trains on the synthetic stand-in: one pass, enough to
// show a recipe running end to end (curves, checkpoint, evaluations) in a minute or two on a
// CPU, which is what CI runs; its accuracy means nothing (the first cell, and every figure's
// caption, say the data is synthetic).
const SyntheticEpochs = 1.0

// Epochs is the length of a notebook's training run for the lab's data, in epochs: epochs on
// real data (verified or not; 0 leaves it to the recipe, e.g. airbench94's 9.9), and
// SyntheticEpochs on the synthetic stand-in, so that a notebook that trains a recipe for
// minutes on real data runs briefly where there is none (CI), without a switch in its cells.
func (l *Lab) Epochs(epochs float64) float64 {
	if l.Synthetic {
		return SyntheticEpochs
	}
	return epochs
}
