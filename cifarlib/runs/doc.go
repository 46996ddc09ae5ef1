// Package runs reads and writes what a training run leaves in its folder: the run record
// (run.json: Record, ReadRecord), the curves (history.json: History) and their smoothing, and
// the table of a runs folder (List), which `cifarlab runs` and the notebooks show, and what
// tells runs apart in a comparison (Differing, Labels: the settings in which they differ).
//
// It is stage 5 of the module's pipeline (see internal/layers): it may import cifarlib, data and
// backends, and must not import training, nb or cmd; training fills the records.
package runs
