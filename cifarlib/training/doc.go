// Package training trains the models of package cifarlib on the data of package data: Train
// and Trainer (Config, Result), checkpoints and their recovery, evaluation (Evaluate,
// Evaluator), data parallelism over the devices of package backends (the device-sharded
// dataset), transfer from a trained run (Config.From, DiagnoseRun's dataset-switch checklist),
// mixed precision, interrupts, the run folder (run.json and TensorBoard scalars, through
// package runs), the run's timeline (runs.Timeline: where the wall time went, each compile
// with its program) and a cache of compiled programs for later runs in the process (Programs).
//
// It is stage 6 of the module's pipeline (see internal/layers): it may import every stage below
// it (data, backends, cifarlib, runs) and must not import nb or cmd.
package training
