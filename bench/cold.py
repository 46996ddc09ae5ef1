#!/usr/bin/env python3
"""Cold starts, without and with the compile cache (issue 55 item 4): bench/RESULTS-cold.md.

"off" runs with CIFARLAB_COMPILE_CACHE=off (every new process compiles, as before the cache);
"cache" with a compile cache folder of this bench run, one per part, empty at its start. Both sides run the same
checkout, interleaved, so that they see the same load (/proc/loadavg is noted with each figure).

  kernel   per model (cnn, resnet18, airbench94), through the real GoNB kernel (cifarlab-cpu):
             fresh     a new kernel: its setup cell (nb.Open), then its first training cell
                       (lab.Fit, 3 steps; airbench94's recipe, 2 steps), measured from
                       Shift+Enter to its first step's start and end
             restart   the kernel restarted, then the same two cells
             fresh-2   (cache only) another new kernel, the same cells: a warm cache
           The first cache-side kernel compiles into the empty cache (cold); its restart and
           fresh-2 load.
  cli      `cifarlab train --recipe airbench94 --epochs 1` twice per side, each a new process,
           stopped (SIGINT) after step 1: from the process start to step 1's start on its
           timeline, and from its backend being up; with --base BIN also a binary of another
           checkout (e.g. main before the cache), as "base".
  sweep    `cifarlab sweep --local` of 4 tasks (the cnn, a learning-rate grid): the compiles and
           loads on the tasks' timelines, and the wall time.

Usage (the checkout's kernels installed into a Jupyter data folder of the bench's own):
  go build -o /tmp/cifarlab ./cmd/cifarlab
  /tmp/cifarlab kernel install --jupyter-data-dir /tmp/jd
  .venv/bin/python bench/cold.py --jupyter-data-dir /tmp/jd --cifarlab /tmp/cifarlab --data DIR > cold.json
  python3 bench/cold.py --report cold.json      # the tables of bench/RESULTS-cold.md
DIR holds cifar-10-batches-bin/ (the real 20k/10k subset of ../shared/data, or synthetic data).
--parts kernel,cli,sweep and --models pick what runs.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SETUP = """import (
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

var lab = nb.Open(data.CIFAR10())

var _, _ = runs.PhaseFirstStep, training.EvalOff

%%
fmt.Println(lab)"""

# The training cell's settings per model: short runs without evaluations (the first step is
# what is measured).
SETTINGS = {
    "cnn": 's := lab.Settings()\ns.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Run.Seed = "cnn", 3, 64, 1\n',
    "resnet18": 's := lab.Settings()\ns.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Run.Seed = "resnet18", 3, 64, 1\n',
    "airbench94": "s := training.Airbench94()\ns.Run.Epochs, s.Run.Steps, s.Run.Seed = 0, 2, 1\n",
}

TRAIN = """%%
defer nb.CellTime()
{settings}s.Eval.Every, s.Eval.SkipFinal = training.EvalOff, true
res := nb.Must(lab.Fit("cold-{model}", s))
for _, e := range res.Timeline.Events {{
	if e.Phase == runs.PhaseFirstStep {{
		fmt.Printf("COLD first_step_start=%.3f first_step_end=%.3f compiles=%d loads=%d\\n", e.Start.Seconds(), e.End().Seconds(),
			res.Timeline.Compiles(""), res.Timeline.Loads(""))
		break
	}}
}}
fmt.Println("TIMELINE", res.Timeline)"""


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def start_kernel(jupyter_dir, work, data_dir, cache):
    """A new cifarlab-cpu kernel with its own runs folder and the cache setting cache."""
    from jupyter_client.manager import start_new_kernel
    os.makedirs(work, exist_ok=True)
    env = {**os.environ, "JUPYTER_DATA_DIR": jupyter_dir, "CIFARLAB_DATA": data_dir, "CIFARLAB_RUNS": os.path.join(work, "runs"),
           "CIFARLAB_COMPILE_CACHE": cache, "CIFARLAB_COMPILE_CACHE_SHARED": ""}
    os.environ["JUPYTER_DATA_DIR"] = jupyter_dir
    return start_new_kernel(kernel_name="cifarlab-cpu", startup_timeout=180, env=env)


def training_cell(kc, model):
    """Runs the setup cell, then the training cell, in kc: what the table says of the second."""
    from labprocess import run_timed
    run_timed(kc, SETUP)
    la = loadavg()
    wall, first, text = run_timed(kc, TRAIN.format(settings=SETTINGS[model], model=model))
    row = {"load": la, "wall_s": wall, "first_output_s": first, "text": text}
    program = [float(t) for t in re.findall(r"\(cell time ([\d.]+)s", text)]
    m = re.search(r"COLD first_step_start=([\d.]+) first_step_end=([\d.]+) compiles=(\d+) loads=(\d+)", text)
    t = re.search(r"TIMELINE (.*)", text)
    if m and program:
        before = wall - program[-1]  # Shift+Enter to the cell's program start: GoNB's build of the cell
        row.update(build_s=before, step_start_s=before + float(m.group(1)), step_end_s=before + float(m.group(2)),
                   program_to_step_s=float(m.group(1)), compiles=int(m.group(3)), loads=int(m.group(4)))
    if t:
        row["timeline"] = t.group(1).strip()
    return row


def kernel_part(a, work, cache_dir, log):
    rows = []
    for model in a.models.split(","):
        kernels = {}
        try:
            plan = [("off", "fresh"), ("cache", "fresh"), ("off", "restart"), ("cache", "restart"), ("cache", "fresh-2")]
            for side, what in plan:
                cache = "off" if side == "off" else cache_dir
                if what.startswith("fresh"):
                    if side in kernels:
                        km, kc = kernels.pop(side)
                        kc.stop_channels()
                        km.shutdown_kernel(now=True)
                    kernels[side] = start_kernel(a.jupyter_data_dir, os.path.join(work, side, model, what), a.data, cache)
                else:
                    km, kc = kernels[side]
                    km.restart_kernel(now=True)
                    kc.wait_for_ready(timeout=180)
                row = training_cell(kernels[side][1], model)
                row.update(part="kernel", model=model, side=side, what=what)
                rows.append(row)
                log(row)
        finally:
            for km, kc in kernels.values():
                kc.stop_channels()
                km.shutdown_kernel(now=True)
    return rows


def cli_run(binary, data_dir, cache):
    """cifarlab train --recipe airbench94 --epochs 1 in a new process, stopped after step 1."""
    env = {**os.environ, "CIFARLAB_COMPILE_CACHE": cache, "CIFARLAB_COMPILE_CACHE_SHARED": ""}
    la = loadavg()
    t0 = time.time()
    p = subprocess.Popen([binary, "train", "--recipe", "airbench94", "--epochs", "1", "--dataset", "cifar10", "--data", data_dir,
                          "--backend", "cpu", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = None
    for line in p.stderr:
        if seen is None and re.match(r"step 1/\d+", line):
            seen = time.time() - t0
            p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=600)
    row = {"load": la, "stderr_step1_end_s": seen}
    try:
        res = json.loads(out)
    except ValueError:
        row["error"] = out[-2000:]
        return row
    events = res["timeline"]["events"]
    sec = lambda ns: ns / 1e9
    backend = next(e for e in events if e["phase"] == "backend")
    first = next(e for e in events if e["phase"] == "first_step")
    row.update(step_start_s=sec(first["start_ns"]), step_end_s=sec(first["start_ns"] + first["duration_ns"]),
               from_backend_s=sec(first["start_ns"] - backend["start_ns"] - backend["duration_ns"]),
               compiles=sum(e["phase"] == "compile" for e in events), loads=sum(e["phase"] == "load" for e in events),
               phases=[(e["phase"], e.get("program", ""), round(sec(e["duration_ns"]), 3)) for e in events if e["phase"] != "steps"])
    return row


def cli_part(a, cache_dir, log):
    rows = []
    sides = [("off", a.cifarlab), ("cache", a.cifarlab)] + ([("base", a.base)] if a.base else [])
    for i in (1, 2):
        for side, binary in sides:
            row = cli_run(binary, a.data, "off" if side != "cache" else cache_dir)
            row.update(part="cli", side=side, what=f"run {i}")
            rows.append(row)
            log(row)
    return rows


def sweep_part(a, work, cache_dir, log):
    rows = []
    for side in ("off", "cache"):
        runs_dir = os.path.join(work, "sweep-" + side)
        env = {**os.environ, "CIFARLAB_COMPILE_CACHE": "off" if side == "off" else cache_dir, "CIFARLAB_COMPILE_CACHE_SHARED": ""}
        la = loadavg()
        t0 = time.time()
        subprocess.run([a.cifarlab, "sweep", "--local", "--runs", runs_dir, "--name", "cold", "--grid", "lr=0.001,0.002,0.003,0.004",
                        "--dataset", "cifar10", "--data", a.data, "--model", "cnn", "--batch", "32", "--steps", "20", "--backend", "cpu"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.time() - t0
        tasks = []
        for d in sorted(os.listdir(runs_dir)):
            path = os.path.join(runs_dir, d, "run.json")
            if os.path.exists(path):
                with open(path) as f:
                    events = json.load(f).get("timeline", {}).get("events", [])
                tasks.append({"run": d, "compiles": sum(e["phase"] == "compile" for e in events),
                              "loads": sum(e["phase"] == "load" for e in events)})
        row = {"part": "sweep", "side": side, "what": "4 tasks", "load": la, "wall_s": wall, "tasks": tasks,
               "compiles": sum(t["compiles"] for t in tasks), "loads": sum(t["loads"] for t in tasks)}
        rows.append(row)
        log(row)
    return rows


def report(path):
    with open(path) as f:
        doc = json.load(f)
    rows = doc["rows"]
    fmt = lambda v, unit=" s": "-" if v is None else f"{v:.2f}{unit}"
    print("Kernel (Shift+Enter on the first training cell; GoNB's Go build of the cell included):\n")
    print("| model | kernel | cache | Shift+Enter to step 1 starts | to step 1 ends | of which GoNB's build | program start to step 1 | compiles | loads | load |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["part"] == "kernel":
            print(f"| {r['model']} | {r['what']} | {r['side']} | {fmt(r.get('step_start_s'))} | {fmt(r.get('step_end_s'))} | "
                  f"{fmt(r.get('build_s'))} | {fmt(r.get('program_to_step_s'))} | {r.get('compiles', '-')} | {r.get('loads', '-')} | {r['load']:.1f} |")
    print("\n`cifarlab train --recipe airbench94 --epochs 1`, each a new process, stopped after step 1:\n")
    print("| run | binary / cache | process start to step 1 | backend up to step 1 | step 1 ends | compiles | loads | load |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r["part"] == "cli":
            print(f"| {r['what']} | {r['side']} | {fmt(r.get('step_start_s'))} | {fmt(r.get('from_backend_s'))} | {fmt(r.get('step_end_s'))} | "
                  f"{r.get('compiles', '-')} | {r.get('loads', '-')} | {r['load']:.1f} |")
    print("\nA 4-task sweep (`cifarlab sweep --local`, the cnn, 20 steps each):\n")
    print("| cache | compiles | loads | per task (compiles/loads) | wall | load |")
    print("|---|---:|---:|---|---:|---:|")
    for r in rows:
        if r["part"] == "sweep":
            per = ", ".join(f"{t['compiles']}/{t['loads']}" for t in r["tasks"])
            print(f"| {r['side']} | {r['compiles']} | {r['loads']} | {per} | {r['wall_s']:.1f} s | {r['load']:.1f} |")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--report":
        report(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--jupyter-data-dir", required=True, help="where the checkout's kernels are installed")
    ap.add_argument("--cifarlab", required=True, help="the checkout's cifarlab binary")
    ap.add_argument("--base", default="", help="a cifarlab binary of another checkout, for the CLI rows (base)")
    ap.add_argument("--data", required=True, help="the data folder (holding cifar-10-batches-bin/)")
    ap.add_argument("--models", default="cnn,resnet18,airbench94")
    ap.add_argument("--parts", default="kernel,cli,sweep")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cold-")
    cache_dir = lambda part: os.path.join(work, "compile-cache-" + part)  # each part starts cold

    def log(row):
        keep = {k: v for k, v in row.items() if k not in ("text", "phases")}
        print(json.dumps(keep), file=sys.stderr, flush=True)

    rows = []
    parts = a.parts.split(",")
    if "kernel" in parts:
        rows += kernel_part(a, work, cache_dir("kernel"), log)
    if "cli" in parts:
        rows += cli_part(a, cache_dir("cli"), log)
    if "sweep" in parts:
        rows += sweep_part(a, work, cache_dir("sweep"), log)
    json.dump({"data": a.data, "rows": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
