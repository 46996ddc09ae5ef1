#!/usr/bin/env python3
"""A lab cell's time, Shift+Enter to end, on two checkouts side by side (issue 48 item 4, issue
47 items 2-3): the same cells run through two real CPU kernels, one per checkout (BEFORE and
AFTER), interleaved cell by cell, each timed from the execute request to the kernel's idle (what a
user waits for after Shift+Enter: GoNB's build of the cell included) and from the request to the
cell's first output, with the machine's load average (/proc/loadavg) at each cell, and the cell's
own time (nb.CellTime: its program's start to its end, GoNB's build of the cell left out).

Cells (each kernel: its own data folder, runs and lab process):

  setup    var lab = nb.Open(data.CIFAR10()); fmt.Println(lab)
  trivial  fmt.Println(lab.Arch)                         (a lab cell that computes nothing)
  fit      lab.Fit of the cnn, 20 steps at batch 64       (in the lab process; warm after the first)
  eval     lab.Load, then Evaluate on 1,000 test images   (in the lab process)

ROUNDS rounds of trivial, fit, eval, each cell on BEFORE then AFTER (AFTER first on even rounds).

Usage (kernels installed into a Jupyter data folder per checkout):
  (cd BEFORE && .bin/cifarlab kernel install --jupyter-data-dir /tmp/jb)
  (cd AFTER && .bin/cifarlab kernel install --jupyter-data-dir /tmp/ja)
  .venv/bin/python bench/labcell_ab.py /tmp/jb /tmp/ja [ROUNDS] > ab.json
"""

import json
import os
import re
import sys
import tempfile
import time

from jupyter_client.manager import start_new_kernel

from labprocess import run_timed as run  # the same timing as bench/labprocess.py

SETUP = """import (
	"context"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

var lab = nb.Open(data.CIFAR10())

var _ = context.Background

%%
fmt.Println(lab)"""

CELLS = {  # each prints nb.CellTime at its end: its program's start to its end, GoNB's build left out
    "trivial": "%%\ndefer nb.CellTime()\nfmt.Println(lab.Arch)",
    "fit": "%%\ndefer nb.CellTime()\nnb.Must(lab.Fit(\"ab\", training.Config{Steps: 20, BatchSize: 64, Seed: 1, EvalEvery: training.EvalOff, SkipFinalEval: true}))",
    "eval": "%%\ndefer nb.CellTime()\nrun := nb.Must(lab.Load(\"ab\"))\nev := nb.Must(run.Evaluate(context.Background(), lab.Test, training.EvalOptions{MaxExamples: 1000}))\nfmt.Println(ev.Summary())",
}


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def start(data_dir, workdir):
    env = {**os.environ, "JUPYTER_DATA_DIR": data_dir, "CIFARLAB_DATA": os.path.join(workdir, "data")}
    os.environ["JUPYTER_DATA_DIR"] = data_dir  # where jupyter_client looks for the kernelspec
    return start_new_kernel(kernel_name="cifarlab-cpu", startup_timeout=180, env=env)


def main():
    before_dir, after_dir = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    work = tempfile.mkdtemp(prefix="labcell-ab-")
    kernels = {}
    rows = []
    try:
        for name, d in (("before", before_dir), ("after", after_dir)):
            kernels[name] = start(d, os.path.join(work, name))
        for name in ("before", "after"):
            wall, first, text = run(kernels[name][1], SETUP)
            print(f"{name} setup: {wall:.2f}s\n  " + text.strip().replace("\n", "\n  "), file=sys.stderr)
        for r in range(rounds):
            for cell in ("trivial", "fit", "eval"):
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for name in order:
                    la = load()
                    wall, first, text = run(kernels[name][1], CELLS[cell])
                    program = re.findall(r"\(cell time ([\d.]+)s", text)
                    row = {"round": r + 1, "cell": cell, "checkout": name, "wall_s": wall, "first_output_s": first,
                           "program_s": float(program[-1]) if program else None, "load": la, "text": text}
                    rows.append(row)
                    print(f"round {r + 1} {cell:8s} {name:6s}: Shift+Enter to end {wall:6.2f}s, to first output {first if first is None else round(first, 2)}s, "
                          f"program {row['program_s']}s, load {la:.1f}", file=sys.stderr)
                    if "ERROR" in text:
                        print("  " + text.strip().replace("\n", "\n  "), file=sys.stderr)
    finally:
        for km, kc in kernels.values():
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    json.dump({"rows": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
