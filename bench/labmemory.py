#!/usr/bin/env python3
"""The lab process's memory (issue 44) measured through a real kernel: its resident memory while
it trains airbench94 and when it is idle afterwards.

Cells, in one kernel (the CPU kernel, XLA CPU when the plugin is installed):
  setup  nb.Open(data.CIFAR10()) and the lab's folder of the kernel
  fit    lab.Fit of the airbench94 recipe for --steps steps (batch 1024, its validations and its
         final evaluation with TTA): the lab process starts here
  eval   lab.Load of that run and Evaluate on the test split (the run is then held for evaluation)
  fit2   the same Fit again (its compiled programs are kept: nothing compiles)
While the cells run, a thread samples the lab process's VmRSS every 0.5 s from /proc; after each
cell it reads VmRSS and VmHWM (the peak) and, after the last, the idle RSS after --idle seconds
without a cell (the lab process trims itself after CIFARLAB_LAB_TRIM of idleness, which the
caller may set low).

Usage (kernels of the checkout installed in JUPYTER_DATA_DIR; the data folder is CIFARLAB_DATA):
  .bin/cifarlab kernel install --jupyter-data-dir /tmp/j
  CIFARLAB_DATA=/tmp/data5k JUPYTER_DATA_DIR=/tmp/j .venv/bin/python bench/labmemory.py [--steps 5] [--idle 60] [--label NAME] [--no-refit]
It prints one JSON object: per cell its wall time, the RSS/HWM after it (MiB) and the load average
at its start and end, the sampled peak, and the idle RSS at 5 s and at --idle s after the last cell.
Before and after a change: a checkout of each with its kernels in its own JUPYTER_DATA_DIR, run one
after the other (bench/RESULTS-loop.md, "The lab process's memory").
"""

import argparse
import json
import os
import threading
import time

from jupyter_client.manager import start_new_kernel

from labprocess import run_timed  # the same cell runner and timing as bench/labprocess.py

SETUP = """import (
	"context"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

var lab = nb.Open(data.CIFAR10())

var _ = context.Background
var _ = training.Config{}

%%
fmt.Println(lab)
fmt.Println("labdir", filepath.Join(os.Getenv("GONB_TMP_DIR"), "cifarlab-lab"))"""

FIT = """%%
s := training.Airbench94()
s.Run.Steps, s.Run.Epochs, s.Run.Seed = STEPS, 0, 1
res := nb.Must(lab.Fit("mem", s))
fmt.Println("test accuracy", res.Eval.Accuracy)"""

EVAL = """%%
run := nb.Must(lab.Load("mem"))
ev := nb.Must(run.Evaluate(context.Background(), lab.Test, training.EvalOptions{}))
fmt.Println(ev.Summary())"""


def status(pid):
    """VmRSS and VmHWM of pid in MiB, or (None, None)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None, None
    kib = lambda k: int(fields[k].split()[0]) / 1024 if k in fields else None
    return kib("VmRSS"), kib("VmHWM")


def loadavg():
    """The 1-minute load average."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def lab_pid(labdir):
    try:
        with open(os.path.join(labdir, "lab.pid")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def run(kc, code):
    """Runs code in the kernel of kc: what it printed, whether it ended without an error, and its
    wall time (bench/labprocess.py's timing)."""
    wall, _, text = run_timed(kc, code)
    return text, "ERROR " not in text, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--idle", type=float, default=60)
    ap.add_argument("--label", default="")
    ap.add_argument("--no-refit", action="store_true", help="leave out the fit2 cell (the same Fit again)")
    args = ap.parse_args()
    km, kc = start_new_kernel(kernel_name="cifarlab-cpu", startup_timeout=300)
    out = {"label": args.label, "steps": args.steps, "cells": []}
    peak = {"rss": 0.0}
    stop = threading.Event()
    labdir = None

    def sample():
        while not stop.is_set():
            pid = lab_pid(labdir) if labdir else None
            if pid:
                rss, _ = status(pid)
                if rss:
                    peak["rss"] = max(peak["rss"], rss)
            time.sleep(0.5)

    try:
        text, ok, secs = run(kc, SETUP)
        assert ok, text
        labdir = [l.split(" ", 1)[1] for l in text.splitlines() if l.startswith("labdir ")][0]
        out["data"] = [l for l in text.splitlines() if l.startswith("data:")]
        threading.Thread(target=sample, daemon=True).start()
        cells = [("fit", FIT.replace("STEPS", str(args.steps))), ("eval", EVAL)]
        if not args.no_refit:
            cells.append(("fit2", FIT.replace("STEPS", str(args.steps))))
        for name, code in cells:
            began_load = loadavg()
            text, ok, secs = run(kc, code)
            pid = lab_pid(labdir)
            rss, hwm = status(pid) if pid else (None, None)
            out["cells"].append({"cell": name, "ok": ok, "seconds": round(secs, 1), "rss_mib": rss, "hwm_mib": hwm,
                                 "load": [began_load, loadavg()], "tail": text.strip().splitlines()[-3:]})
        pid = lab_pid(labdir)
        time.sleep(5)
        out["idle_5s_mib"], _ = status(pid)
        time.sleep(max(0, args.idle - 5))
        out[f"idle_{int(args.idle)}s_mib"], out["hwm_mib"] = status(pid)
        out["sampled_peak_mib"] = peak["rss"]
        with open(os.path.join(labdir, "lab.log")) as f:
            out["lab_log_tail"] = f.read().strip().splitlines()[-5:]
    finally:
        stop.set()
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
