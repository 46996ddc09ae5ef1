// Package layers holds the import rule of the module's packages, and its test enforces it: each
// package imports only the stages below it. Bottom to top:
//
//  1. internal/...: the plumbing (atomic writes, safe archive extraction, the pickle codec, the
//     torch.save and safetensors readers, plugin discovery, the repository, the TensorBoard
//     event writer) and the test helpers of testenv and slurmtest, a real single-node Slurm
//     (cifarlib/internal/labtest holds those that need data and backends, for the tests of the
//     stages above them);
//  2. cifarlib/data: specs, records, both layouts, download, synthetic data, datasets;
//  3. cifarlib/backends: backend creation, devices, the translation of CUDA errors;
//  4. cifarlib: the story's core (model factory, guarded losses, guards, inspection);
//  5. cifarlib/runs: run records, the runs table, history and its smoothing;
//  6. cifarlib/training: Train, checkpoints, evaluation, transfer, the run folder's scalars;
//     cifarlib/interop above it: PyTorch weights in and out (reading files with
//     internal/torchfile and internal/safetensors, writing runs through training);
//     cifarlib/sweep above it: sweeps of training runs (Slurm job arrays, the local executor),
//     which vary training.Settings by the names of training.Fields and read run records;
//  7. cifarlib/nb, cmd/cifarlab with its own internal/kernel (the kernelspecs, doctor and lab), and
//     bench on top.
//
// data and backends do not import each other: data knows no backend, backends no dataset.
// The package has no code; `go test ./internal/layers` checks the rule with `go list`, and that
// every non-test function of the module's packages is at most 60 lines (TestFunctionsAreShort).
package layers
