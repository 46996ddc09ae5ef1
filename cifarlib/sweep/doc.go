// Package sweep runs a grid of `cifarlab train` runs: as one Slurm job array (sbatch) on a
// cluster, or on this machine a few at a time (Local), each task into its own run folder of a
// shared runs folder, resumable from its checkpoints. The sweep's record, sweep.json, holds the
// grid, the tasks and the job ids; each task's run.json says how it stands, and is the truth
// that Status joins with squeue (without slurmdbd, sacct is off).
//
// The package sits above cifarlib's run records and below the CLI and the notebooks: a task is
// a `cifarlab sweep task` process, which trains in-process; the sweep itself never trains.
package sweep
