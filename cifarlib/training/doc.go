// Package training trains the models of package cifarlib on the data of package data: Train
// and Trainer (Settings, Env, Result), evaluation (Evaluate, EvalOptions), data parallelism over
// the devices of package backends (the device-sharded dataset), transfer from a trained run
// (Settings.Transfer, DiagnoseRun's dataset-switch checklist), mixed precision, interrupts, the
// run folder (run.json and TensorBoard scalars, through package runs), the run's timeline
// (runs.Timeline: where the wall time went, each compile with its program), a cache of compiled
// programs for later runs in the process (Programs), and named recipes (Airbench94). Two
// concerns are packages of their own below it: a run's optimizers and schedules (package
// optimizers: the typed optimizer of Settings.Optimizer, Settings.Schedule, and their graphs),
// and its checkpoint folder (package checkpoints: the files, what they record, their recovery).
//
// It is stage 6 of the module's pipeline (see internal/layers): it may import every stage below
// it (data, backends, cifarlib, runs, its own optimizers and checkpoints) and must not import nb
// or cmd.
//
// # Design: a run's settings, written once
//
// A run is its Settings and its Env, kept apart:
//
//   - Settings (settings.go) are a value: typed, nested by part (Data, Model, Optimizer,
//     Schedule, Run, Eval, Checkpoint, Transfer, Compute, Record), complete and serialisable.
//     Defaults is the one function that gives every field its default; a recipe is a function
//     returning Settings (Airbench94, recipe.go), and a caller overrides field by field. A zero is
//     a value like any other: TTA 0 is no TTA, label smoothing 0 is none, even after a recipe;
//     nothing is "left at zero to mean the default". The optimizer is a typed value per
//     algorithm (optimizers.Adam, ..., optimizers.Nesterov), as GoMLX's optimizers own their
//     settings.
//   - Env (env.go) is what is live: the backend, the splits, the log, the hooks (OnPoint, and
//     OnEvent: what the run starts doing, which a Status draws as a cell's or the CLI's status
//     line), the progress bar and plots, the program cache (Programs) and the clock. Nothing of
//     it is recorded or sent: the lab process gives a run its own Env, and sends its events back.
//   - Fields (settings_table.go, its rows in settings_rows.go) is the one table of the settings:
//     each row binds a name (the flag of `cifarlab train`, a sweep's axis, a name of run.json's
//     settings) to a Settings field, with its words, its Role in the compiled programs, and what
//     it takes as data (its values: Range and Choices say them), its default taken from Defaults.
//     From the row come Set's parsing and refusal, Validate's refusal of the setting, the flag's
//     help and the CLI's synopsis, and a sweep axis's check. A name that is not in the table is an
//     *UnknownFieldError listing the names; a malformed value a *ValueError with the name and the
//     range; a value outside the range a *ConfigError of the row's Path with its range.
//
// Train(ctx, settings, env), or NewTrainer then Run, goes one way through the parts: Settings.Validate
// (pure), the transfer source read (transfer.go), resolve (train_plan.go: derives the source's
// architecture and the head's width, reads nothing), the backend and devices, the model with its
// static guard (before any data is read), the data, plan.count (the steps of a run in epochs,
// the periods), then the Store, checkpoints (a resume compares the table's rows that a resume
// must keep), programs, whitening, transfer, validation and GoMLX's trainer. The plan is never
// changed afterwards.
//
// Each boundary uses Settings as they are: run.json records them once (runs.Record.Settings: each
// row with its value, and what the run was given), a checkpoint's CheckpointInfo is them (a Store
// parameter holding their JSON, checkpoints.Params), the lab process sends them (gob of their
// JSON), the CLI binds each flag to a row of Fields, and a sweep varies rows by name. The runs of
// the lab before Settings (format 1: one Store parameter per setting) load, evaluate and resume
// (checkpoint.go's settingsV1); a format newer than this lab's is a one-line *runs.FormatError.
//
// The compiled programs are keyed by the table (ProgramKey, programs.go): the rows that shape a
// program (their Role is Shapes), and of the numeric rows the programs read at run time (Role
// Fed: optimizers.Scalar) those a program holds as constants all the same, by the row's keyed
// rule. `cifarlab train -h` lists the settings under their role. ProgramKey.Diff names the rows
// (by their Label) in which a new program's key differs from the nearest kept one: why a run
// compiles.
package training
