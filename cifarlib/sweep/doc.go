// Package sweep runs a grid of `cifarlab train` runs: as one Slurm job array (sbatch) on a
// cluster, or on this machine a few at a time (Local), each task into its own run folder of a
// shared runs folder, resumable from its checkpoints. Slurm and Local are both an Executor,
// which the command picks once and calls the same way. The sweep's record, sweep.json, holds
// the grid, the tasks and the job ids; each task's run.json says how it stands, and is the
// truth that Status joins with squeue (without slurmdbd, sacct is off) and the tasks' logs.
// Table groups a sweep's runs by hyperparameter, with the mean and spread over the seeds.
//
// It is stage 6 of the module's pipeline, beside training (see internal/layers): it may import
// runs and internal/atomicfile, and must not import training, nb or cmd. A task is a
// `cifarlab sweep task` process, which trains in-process; the sweep itself never trains.
package sweep
