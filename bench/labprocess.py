#!/usr/bin/env python3
"""The lab process (issue 36) measured through a real kernel: what a cell that trains, evaluates
or only uses `lab` costs when it is run again, with the lab process (the default) and without it
(CIFARLAB_LAB_PROCESS=0), and the memory the lab process holds.

Each cell prints nb.CellTime at its start (program start to the cell's first line: nb.Open)
and at its end (program start to the end); the time counts from nb's package initialisation,
the start of the cell's program, so GoNB's build of the cell is left out (it is the same with
and without the lab process; the wall column has it). Cells:

  trivial  fmt.Println(lab.Arch)
  fit      lab.Fit of 1 step (no evaluation), batch 64: the backend, the data, the compile and
           one step; run three times with the same shapes; prints when the first step ended,
           from the run's timeline (runs.PhaseFirstStep), counted from the cell's program start
  eval     lab.Load of that run and Evaluate on the whole test split, three times
  rss      the lab process's resident memory (VmRSS, VmHWM), with the lab process on

Usage (kernels installed in a private JUPYTER_DATA_DIR; the data folder is CIFARLAB_DATA):
  JUPYTER_DATA_DIR=/tmp/j .bin/cifarlab kernel install --jupyter-data-dir /tmp/j
  CIFARLAB_DATA=/tmp/data JUPYTER_DATA_DIR=/tmp/j .venv/bin/python bench/labprocess.py [--off]
"""

import json
import re
import sys
import time

from jupyter_client.manager import start_new_kernel

SETUP = """import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

var lab = nb.Open(data.CIFAR10())

func labPID() string {
	b, _ := os.ReadFile(filepath.Join(os.Getenv("GONB_TMP_DIR"), "cifarlab-lab", "lab.pid"))
	return strings.TrimSpace(string(b))
}

%%
fmt.Println(lab)"""

CELLS = [
    ("trivial", "%%\nnb.CellTime()\ndefer nb.CellTime()\nfmt.Println(lab.Arch)"),
    ("fit", "%%\nnb.CellTime()\ndefer nb.CellTime()\nres := nb.Must(lab.Fit(\"bench\", training.Config{Steps: 1, BatchSize: 64, Seed: 1, "
            "EvalEvery: training.EvalOff, SkipFinalEval: true}))\nfor _, e := range res.Timeline.Events {\n\tif e.Phase == runs.PhaseFirstStep {\n"
            "\t\tfmt.Printf(\"first step ended %.2fs after the program started (%s)\\n\", e.End().Seconds(), res.Timeline.OriginFrom)\n\t}\n}\nfmt.Println(res.Timeline)"),
    ("eval", "%%\nnb.CellTime()\ndefer nb.CellTime()\nrun := nb.Must(lab.Load(\"bench\"))\n"
             "ev := nb.Must(run.Evaluate(context.Background(), lab.Test, training.EvalOptions{}))\nfmt.Println(ev.Summary())"),
]

RSS = """%%
pid := labPID()
b, _ := os.ReadFile("/proc/" + pid + "/status")
for _, l := range strings.Split(string(b), "\\n") {
	if strings.HasPrefix(l, "VmRSS") || strings.HasPrefix(l, "VmHWM") {
		fmt.Println("lab process", pid, l)
	}
}"""


def run_timed(kc, code):
    """Runs code in the kernel of kc: the time from the request to the kernel's idle (Shift+Enter
    to end), to the cell's first output (None: none), and what it printed."""
    start = time.time()
    first = None
    msg_id = kc.execute(code)
    text = ""
    while True:
        m = kc.get_iopub_msg(timeout=900)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = m["msg_type"], m["content"]
        if first is None and t in ("stream", "display_data", "update_display_data", "error"):
            first = time.time() - start
        if t == "stream":
            text += c.get("text", "")
        elif t == "error":
            text += "ERROR " + c.get("evalue", "")
        elif t == "status" and c.get("execution_state") == "idle":
            return time.time() - start, first, text


def run(kc, code):
    wall, _, text = run_timed(kc, code)
    return wall, text


def main():
    off = "--off" in sys.argv
    env = {"CIFARLAB_LAB_PROCESS": "0"} if off else {}
    km, kc = start_new_kernel(kernel_name="cifarlab-cpu", startup_timeout=120, env={**__import__("os").environ, **env})
    rows = []
    try:
        wall, text = run(kc, SETUP)
        print(text.strip(), file=sys.stderr)
        for name, code in CELLS:
            for i in range(3):
                wall, text = run(kc, code)
                times = [float(t) for t in re.findall(r"\(cell time ([\d.]+)s", text)]
                print(f"{name} #{i + 1}: wall {wall:.2f}s, program start to cell {times[0] if times else 'n/a'}s, to end {times[-1] if times else 'n/a'}s\n  "
                      + text.strip().replace("\n", "\n  "), file=sys.stderr)
                rows.append({"cell": name, "run": i + 1, "wall": wall, "open": times[0] if times else None,
                             "end": times[-1] if times else None, "text": text})
        if not off:
            wall, text = run(kc, RSS)
            print(text.strip(), file=sys.stderr)
            rows.append({"cell": "rss", "text": text})
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    json.dump({"lab_process": not off, "rows": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
