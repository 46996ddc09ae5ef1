"""Reads TensorBoard event files with TensorBoard's own reader and prints their scalars as JSON.

Usage: read_events.py LOGDIR [RUN ...]

LOGDIR is a folder of runs (one sub-folder each, as `tensorboard --logdir` takes it), or a run
folder itself. The output is {"run": {"tag": [[step, value], ...]}} with each run's scalars as
TensorBoard's EventAccumulator loads them (every point kept: size_guidance 0), values printed
with repr (a float32 widened to a double, exactly). Used by the Go tests of internal/tfevents
and cifarlib (kernel/requirements-tensorboard.txt pins TensorBoard).
"""

import json
import os
import sys

from tensorboard.backend.event_processing import event_accumulator


def scalars(run_dir):
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: [[e.step, repr(e.value)] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def main(argv):
    logdir = argv[1]
    runs = argv[2:]
    if not runs:
        runs = sorted(d for d in os.listdir(logdir) if os.path.isdir(os.path.join(logdir, d)))
    if not runs:
        runs = ["."]
    json.dump({run: scalars(os.path.join(logdir, run)) for run in runs}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
