// Package cifarlib is the story's core: a GoMLX model factory for CIFAR-10/100 whose head is
// sized from the dataset, and guarded losses that turn a head/label mismatch into a clear Go
// error instead of GoMLX's silent zero loss.
//
// It is stage 4 of the module's pipeline (see internal/layers): it imports data and backends
// (and internal plumbing) and must not import runs, training, nb or cmd.
//
// The steps of the debugging story are one call each: the logits of a model for its weights
// (Model.Logits), the loss of every example under GoMLX's plain and cifarlib's guarded loss
// (Model.Losses), one guarded or logged loss step (Model.LossOn, and Model.LossOnDevices with
// the batch sharded across devices), the three guards (static: the head width when the graph is
// built; host: CheckLabels before a batch leaves the host; in-graph: AttachDeviceGuard), the
// usual shape mistakes (ShapeMistakes), the model summary (Summarize) and the dataset check
// (Diagnose). The data comes from package data, the backend from package backends, training
// from package training; package nb puts them in notebook cells.
package cifarlib
