// Package training trains the models of package cifarlib on the data of package data: Train
// and Trainer (Config, Result), checkpoints and their recovery, evaluation (Evaluate,
// Evaluator), data parallelism over the devices of package backends (the device-sharded
// dataset), transfer from a trained run (Config.From, DiagnoseRun's dataset-switch checklist),
// mixed precision, interrupts, the run folder (run.json and TensorBoard scalars, through
// package runs), the run's timeline (runs.Timeline: where the wall time went, each compile
// with its program), a cache of compiled programs for later runs in the process (Programs), and
// named recipes (Config.Recipe: RecipeAirbench94, airbench94's Nesterov SGD, triangle schedule,
// label smoothing and lookahead, recipe.go).
//
// It is stage 6 of the module's pipeline (see internal/layers): it may import every stage below
// it (data, backends, cifarlib, runs) and must not import nb or cmd.
package training
