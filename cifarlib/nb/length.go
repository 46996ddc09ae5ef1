package nb

// SyntheticEpochs is how long Lab.Epochs trains on the synthetic stand-in: enough to show a
// recipe running end to end (curves, checkpoint, evaluations) in two or three minutes on a
// two-core CPU, which is what CI runs; its accuracy means nothing (the first cell, and every
// figure's caption, say the data is synthetic). Two passes, not one: airbench94's lookahead
// first averages the weights at step 5, and a run of fewer steps (one pass of the 5000
// synthetic images at batch 1024 is 4) ends on its initial weights, at chance, as airbench's
// own code does.
const SyntheticEpochs = 2.0

// Epochs is the length of a notebook's training run for the lab's data, in epochs: epochs on
// real data (verified or not), and SyntheticEpochs on the synthetic stand-in, so that a notebook
// that trains a recipe for minutes on real data runs briefly where there is none (CI), without a
// switch in its cells. A recipe keeps its own length on real data with
// s.Run.Epochs = lab.Epochs(s.Run.Epochs) (airbench94's 9.9).
func (l *Lab) Epochs(epochs float64) float64 {
	if l.Synthetic {
		return SyntheticEpochs
	}
	return epochs
}
