#!/usr/bin/env python3
"""airbench94's time per epoch in the lab against airbench's own code on PyTorch CPU, side by side
in one run (issue 48 item 2: the target is the lab at <= 1.5x airbench).

Each round runs every side once, one after another, on the same real images: airbench 0.1.8's
train() through research/airbench94-parity/airbench_cpu.py (PyTorch CPU, f32, --tta-level 0) and one or more lab
builds (`cifarlab train --recipe airbench94 --backend cpu`, no evaluation). The order is reversed
every other round, so a load that drifts during the run weighs on both sides alike. Time per
epoch is the training steps only: airbench's own timer around each epoch's loop, the lab's
timeline (first step and steps; compiles apart). Each run's ratio is taken against the airbench
run of the same round, and the summary gives the median over rounds. The load average before and
after each run is recorded, and `uptime` is printed at the start and the end.

    python3 research/airbench94-parity/speed.py --data /work/data/c10sub --rounds 3
    python3 research/airbench94-parity/speed.py --data DIR --lab before=/tmp/cifarlab-main --lab after=.bin/cifarlab \\
        --lab-env 'eigen=XLA_FLAGS=--xla_cpu_...' --lab eigen=.bin/cifarlab --json bench/out/speed.jsonl --md OUT.md

--lab NAME=PATH adds a lab build (default: after=.bin/cifarlab, or a `go build` of this checkout
when it has none); --lab-env NAME=VAR=VALUE sets a variable for that side's runs (repeatable).
airbench reads DATA converted to its cifar10/{train,test}.pt in --scratch (research/airbench94-parity/cifar10_to_pt.py,
done once). PyTorch: $TORCH_PYTHON or bench/.venv-torch (bench/README.md); every side runs under
`nice -n NICE` (default 5), PyTorch with --threads (default: the cores) and OMP_WAIT_POLICY=PASSIVE.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = 1e-9


def load():
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the folder holding cifar-10-batches-bin/ (real images)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=float, default=1, help="epochs per run (each side's time per epoch is its mean)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lab", action="append", default=[], metavar="NAME=PATH", help="a lab build to time (repeatable)")
    ap.add_argument("--lab-env", action="append", default=[], metavar="NAME=VAR=VALUE",
                    help="an environment variable for the lab side NAME (repeatable)")
    ap.add_argument("--no-airbench", action="store_true", help="time only the lab builds (their ratios to each other)")
    ap.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "cifarlab-speed"),
                    help="where airbench's converted data and the lab's run folders go")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--nice", type=int, default=5)
    ap.add_argument("--json", help="append one JSON line per run to this file")
    ap.add_argument("--md", help="write the result table (Markdown) to this file")
    return ap.parse_args()


def torch_python():
    py = os.environ.get("TORCH_PYTHON") or os.path.join(REPO, "bench", ".venv-torch", "bin", "python")
    if subprocess.run([py, "-c", "import torch, airbench, torchvision"], capture_output=True).returncode != 0:
        sys.exit(f"speed.py: {py} cannot import torch, airbench and torchvision: make bench/.venv-torch as bench/run.sh "
                 "does and install research/airbench94-parity/requirements-airbench.txt into it (or set TORCH_PYTHON)")
    return py


def run_airbench(a, py, out):
    cmd = ["nice", "-n", str(a.nice), py, os.path.join(REPO, "research", "airbench94-parity", "airbench_cpu.py"), "--device", "cpu",
           "--threads", str(a.threads), "--data", a.scratch, "--epochs", str(a.epochs), "--seed", str(a.seed),
           "--tta-level", "0", "--json", out]
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"speed.py: airbench failed:\n{p.stderr[-2000:]}")
    d = json.load(open(out))
    times = [e["train_time_s"] for e in d["epochs_log"]]
    return {"epoch_s": sum(times) / d["epochs"], "epoch_times": times, "accuracy": d.get("val_acc"),
            "steps": d.get("total_steps"), "torch": d.get("torch")}


def run_lab(a, path, env_extra, folder):
    cmd = ["nice", "-n", str(a.nice), path, "train", "--recipe", "airbench94", "--epochs", str(a.epochs),
           "--seed", str(a.seed), "--dataset", "cifar10", "--data", a.data, "--backend", "cpu", "--eval-every", "-1",
           "--no-eval", "--checkpoint", folder, "--progress", "off", "--json"]
    env = dict(os.environ, GOMLX_NO_AUTO_INSTALL="1")
    env.update(env_extra)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"speed.py: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    res = json.loads(p.stdout)
    ev = json.load(open(os.path.join(folder, "run.json")))["timeline"]["events"]

    def total(phase):
        return sum(e["duration_ns"] for e in ev if e["phase"] == phase) * NS

    train_s = total("first_step") + total("steps")
    return {"epoch_s": train_s / a.epochs, "compile_s": total("compile"), "first_step_s": total("first_step"),
            "steps": res["end_step"] - res["start_step"], "backend": res.get("backend")}


def main():
    a = parse_args()
    labs = []
    for spec in a.lab or ["after=" + os.path.join(REPO, ".bin", "cifarlab")]:
        name, _, path = spec.partition("=")
        if not path or not os.access(path, os.X_OK):
            sys.exit(f"speed.py: --lab {spec!r}: give NAME=PATH to a built cifarlab")
        labs.append((name, os.path.abspath(path)))
    envs = {}
    for spec in a.lab_env:
        name, _, kv = spec.partition("=")
        var, _, value = kv.partition("=")
        if name not in dict(labs) or not var:
            sys.exit(f"speed.py: --lab-env {spec!r}: give NAME=VAR=VALUE for a --lab NAME")
        envs.setdefault(name, {})[var] = value
    if not os.path.isdir(os.path.join(a.data, "cifar-10-batches-bin")):
        sys.exit(f"speed.py: no cifar-10-batches-bin/ in --data {a.data}")
    os.makedirs(a.scratch, exist_ok=True)
    py = None
    if not a.no_airbench:
        py = torch_python()
        if not os.path.exists(os.path.join(a.scratch, "cifar10", "test.pt")):
            subprocess.run([py, os.path.join(REPO, "research", "airbench94-parity", "cifar10_to_pt.py"), "--data", a.data,
                            "--out", os.path.join(a.scratch, "cifar10")], check=True)
    print(f"# speed.py: {a.rounds} rounds of {a.epochs} epoch(s), seed {a.seed}, data {a.data}, nice {a.nice}")
    print(f"# start: {uptime()}", flush=True)
    sides = ([] if a.no_airbench else [("airbench", None)]) + labs
    rows = []
    for r in range(a.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        for name, path in order:
            before = load()
            t = time.perf_counter()
            if path is None:
                res = run_airbench(a, py, os.path.join(a.scratch, f"airbench-r{r}.json"))
            else:
                folder = os.path.join(a.scratch, f"lab-{name}-r{r}")
                subprocess.run(["rm", "-rf", folder], check=True)
                res = run_lab(a, path, envs.get(name, {}), folder)
            res.update(side=name, round=r, load_before=before, load_after=load(), wall_s=time.perf_counter() - t,
                       epochs=a.epochs, env=envs.get(name, {}), path=path)
            rows.append(res)
            print(f"round {r} {name:10s} {res['epoch_s']:8.1f} s/epoch  (load {before[0]:.1f} -> {res['load_after'][0]:.1f})",
                  flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(res) + "\n")
    end = uptime()
    print(f"# end: {end}")
    md = summary(a, sides, rows, end)
    print("\n" + md)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md + "\n")


def summary(a, sides, rows, end):
    by = {(x["side"], x["round"]): x for x in rows}
    ref = "airbench" if not a.no_airbench else sides[0][0]
    lines = [f"| side | s/epoch per round | median s/epoch | against {ref} (per round) | median ratio |",
             "|---|---|---:|---|---:|"]
    for name, _ in sides:
        t = [by[(name, r)]["epoch_s"] for r in range(a.rounds)]
        ratios = [by[(name, r)]["epoch_s"] / by[(ref, r)]["epoch_s"] for r in range(a.rounds)]
        lines.append(f"| {name} | {', '.join(f'{x:.1f}' for x in t)} | {statistics.median(t):.1f} | "
                     f"{', '.join(f'{x:.2f}x' for x in ratios)} | {statistics.median(ratios):.2f}x |")
    loads = [x["load_before"][0] for x in rows] + [x["load_after"][0] for x in rows]
    lines += ["", f"{a.rounds} rounds, {a.epochs} epoch(s) per run, the order reversed every other round; "
              f"1-minute load average {min(loads):.1f}-{max(loads):.1f} at the runs' starts and ends; at the end: `{end}`."]
    for name, _ in sides:
        env = next((x["env"] for x in rows if x["side"] == name and x["env"]), None)
        if env:
            lines.append(f"- {name}: " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
