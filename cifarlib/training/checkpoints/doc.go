// Package checkpoints holds a run's checkpoint folder on disk: GoMLX's checkpoints of the run's
// variables, with what the run recorded in their parameters (Params: the settings in JSON, the
// architecture, the input normalisation, an import's source), the History beside them, the
// incomplete checkpoints an interrupted save leaves (set aside, or refused), reading the latest
// back (Read), checking a saved head against a model's (CheckHead), and writing the folder of a
// run made elsewhere (WriteRun). What the settings say is package training's: this package
// carries them as JSON.
//
// It is a stage below package training (see internal/layers): it may import cifarlib and runs.
package checkpoints
