// Package backends creates GoMLX compute backends without GoMLX's auto-install (New: "auto",
// "cpu", "go", "cuda", "xla:..."), lists and resolves devices for data parallelism
// (NewWithDevices, ParseDevices, ListDevices, the device mesh), and translates CUDA runtime
// failures into typed errors that say what to do (TranslateRuntimeError).
//
// It is stage 3 of the module's pipeline (see internal/layers): it knows no dataset and no
// training, and imports only internal plumbing (never data, cifarlib, runs, training, nb).
package backends
