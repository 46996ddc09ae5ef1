#!/usr/bin/env python3
"""The researcher's loop through real kernels (issue 47 item 6): change one value, re-run, and
how long each cell takes, on two checkouts side by side (BEFORE: programs keyed by every
hyper-parameter; AFTER: hyper-parameters fed at run time).

For each model (airbench94's recipe, and the cnn with Adam), each kernel runs, on its own data
folder and lab process, 2 epochs on the data folder given (the issue's: 5,000 real training
images), without validations or a final evaluation (the evaluation cell measures that):

  first      the first training cell (the lab process starts, loads the data, compiles)
  identical  the same cell again
  smoothing  label smoothing changed (airbench94: 0.2 -> 0.1; cnn: 0.1 -> 0.2)
  lr         the learning rate changed (airbench94: 11.5 -> 5 per 1024 examples; cnn: 0.001 -> 0.002)
  seed       a new seed (1 -> 2)
  eval       lab.Load and Evaluate on the whole test split with TTA level 2 (6 views)
  eval-again the same evaluation cell again

Each change is from the first cell's settings. Cells run interleaved, each on BEFORE and then on
AFTER (AFTER first for the cnn), so both see the same load. For each cell: Shift+Enter to its
first output, to the end of its first training step, and to its end (the kernel's idle: GoNB's
build of the cell included); the cell's program start to its first step's start (the target:
<= 0.5 s for a changed value) and the compiles in its run's timeline. Shift+Enter to the first
step is the request's wall time less the cell's own time (nb.CellTime: program start to end)
plus the first step's end on the run's timeline (which counts from the cell's program start).

BEFORE's cells are written for training.Config (the lab before issue 46's Settings), AFTER's
for training.Settings (--before-dialect/--after-dialect: config or settings). XLA_FLAGS, when
set, reaches both kernels alike (e.g. the Eigen convolutions a BEFORE without them lacks).

Usage (kernels installed into a Jupyter data folder per checkout):
  (cd BEFORE && .bin/cifarlab kernel install --jupyter-data-dir /tmp/jb)
  (cd AFTER && .bin/cifarlab kernel install --jupyter-data-dir /tmp/ja)
  .venv/bin/python bench/loopkernel.py /tmp/jb /tmp/ja --data DIR [--models airbench94,cnn] > loop.json
  python3 bench/loopkernel.py --report loop.json     # the Markdown table of bench/RESULTS-loop.md
"""

import argparse
import json
import os
import re
import sys
import tempfile


SETUP = """import (
	"context"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

var lab = nb.Open(data.CIFAR10())

var _, _ = context.Background, runs.PhaseFirstStep

%%
fmt.Println(lab)"""

# What a training cell prints after its run: its first step's start and end on the run's
# timeline (from the cell's program start) and the compiles in it.
REPORT = """for _, e := range res.Timeline.Events {
	if e.Phase == runs.PhaseFirstStep {
		fmt.Printf("LOOP first_step_start=%.3f first_step_end=%.3f compiles=%d\\n", e.Start.Seconds(), e.End().Seconds(), res.Timeline.Compiles(""))
		break
	}
}"""

# The first cell's settings and each change, per model and dialect.
FIT = {
    "config": {
        "airbench94": ("training.Config{Recipe: training.RecipeAirbench94, Epochs: 2, EvalEvery: training.EvalOff, SkipFinalEval: true%s}",
                       {"": ", Seed: 1", "smoothing": ", Seed: 1, LabelSmoothing: 0.1", "lr": ", Seed: 1, LearningRate: 5", "seed": ", Seed: 2"}),
        "cnn": ("training.Config{Model: \"cnn\", Epochs: 2, BatchSize: 64, EvalEvery: training.EvalOff, SkipFinalEval: true%s}",
                {"": ", Seed: 1, LabelSmoothing: 0.1", "smoothing": ", Seed: 1, LabelSmoothing: 0.2", "lr": ", Seed: 1, LabelSmoothing: 0.1, LearningRate: 0.002",
                 "seed": ", Seed: 2, LabelSmoothing: 0.1"}),
    },
    "settings": {
        "airbench94": ("func() training.Settings {\n\ts := training.Airbench94()\n\ts.Run.Epochs, s.Run.Seed, s.Eval.Every, s.Eval.SkipFinal = 2, 1, training.EvalOff, true\n%s\treturn s\n}()",
                       {"smoothing": "\ts.Run.LabelSmoothing = 0.1\n", "lr": "\tn := s.Optimizer.(training.Nesterov)\n\tn.LearningRate = 5\n\ts.Optimizer = n\n",
                        "seed": "\ts.Run.Seed = 2\n"}),
        "cnn": ("func() training.Settings {\n\ts := lab.Settings()\n\ts.Model.Arch, s.Run.Epochs, s.Data.BatchSize, s.Run.Seed, s.Run.LabelSmoothing = \"cnn\", 2, 64, 1, 0.1\n"
                "\ts.Eval.Every, s.Eval.SkipFinal = training.EvalOff, true\n%s\treturn s\n}()",
                {"smoothing": "\ts.Run.LabelSmoothing = 0.2\n", "lr": "\ta := s.Optimizer.(training.Adam)\n\ta.LearningRate = 0.002\n\ts.Optimizer = a\n",
                 "seed": "\ts.Run.Seed = 2\n"}),
    },
}

EVAL = ("%%%%\ndefer nb.CellTime()\nrun := nb.Must(lab.Load(%r))\n"
        "ev := nb.Must(run.Evaluate(context.Background(), lab.Test, training.EvalOptions{TTA: training.TTAMirrorTranslate}))\nfmt.Println(ev.Summary())")

STEPS = ["first", "identical", "smoothing", "lr", "seed", "eval", "eval-again"]


def cell(dialect, model, step):
    """The code of step's cell for model in dialect."""
    name = "loop-" + model
    if step.startswith("eval"):
        return EVAL.replace("%r", '"%s"' % name).replace("%%%%", "%%")
    base, changes = FIT[dialect][model]
    settings = base % changes.get(step, changes.get("", ""))
    return "%%%%\ndefer nb.CellTime()\nres := nb.Must(lab.Fit(%s, %s))\n%s" % ('"' + name + '"', settings, REPORT)


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(kc, code):
    """bench/labprocess.py's timing of code in kc (imported here: --report needs no Jupyter)."""
    from labprocess import run_timed
    return run_timed(kc, code)


def start(jupyter_dir, workdir, data_dir):
    """A CPU kernel of the checkout whose kernelspec is in jupyter_dir, with its own runs folder
    (CIFARLAB_DATA is data_dir: the lab's runs go under workdir)."""
    from jupyter_client.manager import start_new_kernel
    os.makedirs(workdir, exist_ok=True)
    env = {**os.environ, "JUPYTER_DATA_DIR": jupyter_dir, "CIFARLAB_DATA": data_dir, "CIFARLAB_RUNS": os.path.join(workdir, "runs")}
    os.environ["JUPYTER_DATA_DIR"] = jupyter_dir  # where jupyter_client looks for the kernelspec
    return start_new_kernel(kernel_name="cifarlab-cpu", startup_timeout=180, env=env)


def measure(kc, code):
    """Runs code in kc and returns what bench/RESULTS-loop.md tabulates of it."""
    la = load()
    wall, first, text = run(kc, code)
    program = [float(t) for t in re.findall(r"\(cell time ([\d.]+)s", text)]
    row = {"wall_s": wall, "first_output_s": first, "program_s": program[-1] if program else None, "load": la, "text": text}
    m = re.search(r"LOOP first_step_start=([\d.]+) first_step_end=([\d.]+) compiles=(\d+)", text)
    if m:
        start, end, compiles = float(m.group(1)), float(m.group(2)), int(m.group(3))
        row.update(first_step_start_s=start, compiles=compiles)
        if row["program_s"] is not None:
            row["first_step_s"] = wall - row["program_s"] + end  # from Shift+Enter
    return row


def report(path):
    """Prints the Markdown table of the rows in path (what main wrote)."""
    with open(path) as f:
        rows = json.load(f)["rows"]
    print("| model | cell | side | first output | first step | end | program start to step 1 | compiles | load |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        fs, st = r.get("first_step_s"), r.get("first_step_start_s")
        if "ERROR" in r["text"]:
            print(f"| {r['model']} | {r['step']} | {r['side']} | the cell did not build (ERROR) | | | | | {r['load']:.1f} |")
            continue
        print(f"| {r['model']} | {r['step']} | {r['side']} | {r['first_output_s'] or 0:.2f} s | {'-' if fs is None else '%.2f s' % fs} | "
              f"{r['wall_s']:.2f} s | {'-' if st is None else '%.2f s' % st} | {r.get('compiles', '-')} | {r['load']:.1f} |")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--report":
        report(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--data", required=True, help="the data folder (holding cifar-10-batches-bin/)")
    ap.add_argument("--models", default="airbench94,cnn")
    ap.add_argument("--steps", default=",".join(STEPS), help="the cells to run, in their order (first: the first cell, needed before any other)")
    ap.add_argument("--before-dialect", default="config", choices=["config", "settings"])
    ap.add_argument("--after-dialect", default="settings", choices=["config", "settings"])
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="loopkernel-")
    sides = {"before": (a.before, a.before_dialect), "after": (a.after, a.after_dialect)}
    kernels, rows = {}, []
    try:
        for side, (jd, _) in sides.items():
            kernels[side] = start(jd, os.path.join(work, side), a.data)
            wall, _, text = run(kernels[side][1], SETUP)
            print(f"{side} setup: {wall:.2f}s\n  " + text.strip().replace("\n", "\n  "), file=sys.stderr)
        for i, model in enumerate(a.models.split(",")):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            for step in a.steps.split(","):
                for side in order:
                    row = measure(kernels[side][1], cell(sides[side][1], model, step))
                    row.update(model=model, step=step, side=side)
                    rows.append(row)
                    fs = row.get("first_step_s")
                    print(f"{model:10s} {step:10s} {side:6s}: first output {row['first_output_s'] or 0:6.2f}s, first step "
                          f"{'-' if fs is None else '%.2fs' % fs:>7s}, end {row['wall_s']:6.2f}s, program to step 1 "
                          f"{row.get('first_step_start_s', '-')}, compiles {row.get('compiles', '-')}, load {row['load']:.1f}", file=sys.stderr)
                    if "ERROR" in row["text"]:
                        print("  " + row["text"].strip().replace("\n", "\n  "), file=sys.stderr)
    finally:
        for km, kc in kernels.values():
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    json.dump({"data": a.data, "xla_flags": os.environ.get("XLA_FLAGS", ""), "rows": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
