#!/usr/bin/env python3
"""Cell turnaround of the cifarlab kernels: the wall time of GoNB cells, run through nbclient.

Each cell is executed REPEAT times in one kernel, each time with a different comment (as a user
edits a cell: GoNB compiles and links it again) and timed from nbclient's execute request to
its reply; the first run of each kind pays for compiling what changed and is reported apart,
the median of the others is the turnaround a user gets while working:

  floor     `fmt.Println(2)`: no cifarlib, GoNB's own floor (goimports, compile, link, run)
  cifarlib  `fmt.Println(data.CIFAR10().NumClasses)`: a cell that links cifarlib's data package
  nb        `fmt.Println(nb.Arch(nil))`: links the notebook helpers (charts, gonbui), no nb.Open
  lab       `fmt.Println(lab.Arch)` after `var lab = nb.Open(...)`: every later cell re-runs
            the program, so it pays for whatever nb.Open does at start

Variants (--variant NAME=GOFLAGS, repeatable) run the same cells with a copy of the installed
kernelspec whose GOFLAGS is replaced, in a private JUPYTER_PATH (the installed kernelspec is not
touched); "installed" is the kernelspec as installed. --variant-env NAME:VAR=VALUE (repeatable)
also sets VAR in variant NAME's kernelspec, or removes it when VALUE is empty. Usage:

  .venv/bin/python bench/cells.py                                   # the installed cifarlab-cpu
  .venv/bin/python bench/cells.py --variant plain=-buildvcs=false --variant w="-buildvcs=false -ldflags=-w"
  .venv/bin/python bench/cells.py --variant installed= --variant noproxy= --variant-env noproxy:GOPROXY=

--repo compiles against a snapshot of the repository instead of the kernelspec's (a tree others
edit while it runs would be recompiled in the middle of the timings):

  rm -rf /tmp/snap && mkdir /tmp/snap && git archive HEAD | tar -x -C /tmp/snap
  .venv/bin/python bench/cells.py --repo /tmp/snap --variant before=-buildvcs=false

Prints one line per cell run and a table (Markdown) of the medians of runs 2..REPEAT (run 1 of a
kind compiles the packages it adds), wall time and CPU time: the CPU seconds the kernel and what
it waited for (go build, compile, link, the cell's program) spent, which, unlike the wall time,
hardly depends on what else the machine runs. Each run's line also shows the CPU time of the
kernel's gopls (the Go language server behind GoNB's completion), which works beside the build.
--json writes every time.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

CELLS = [
    ("floor", "%%\nfmt.Println(2)"),
    ("cifarlib", 'import "github.com/cifarlab/cifarlab/cifarlib/data"\n\n%%\nfmt.Println(data.CIFAR10().NumClasses)'),
    ("nb", 'import "github.com/cifarlab/cifarlab/cifarlib/nb"\n\n%%\nfmt.Println(nb.Arch(nil))'),
    ("lab", 'var lab = nb.Open(data.CIFAR10())\n\n%%\nfmt.Println(lab.Arch)'),
]

# What each kind's repeated cell runs once its declarations are memorized.
REPEAT = {
    "floor": "%%\nfmt.Println(2)",
    "cifarlib": "%%\nfmt.Println(data.CIFAR10().NumClasses)",
    "nb": "%%\nfmt.Println(nb.Arch(nil))",
    "lab": "%%\nfmt.Println(lab.Arch)",
}


def kernel_json(name):
    from jupyter_client.kernelspec import KernelSpecManager
    spec = KernelSpecManager().get_kernel_spec(name)
    with open(os.path.join(spec.resource_dir, "kernel.json")) as f:
        return json.load(f)


def cpu_seconds(pid):
    """CPU time of process pid and of its children it has waited for (go build, compile, link,
    the cell's program), in seconds: Linux's utime+stime+cutime+cstime."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def gopls_seconds(pid):
    """CPU time of the gopls that the kernel runs (its child, reaped only when the kernel stops,
    so not in cpu_seconds), 0 when there is none: it re-checks the cell in the background."""
    total, children = 0.0, []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):  # a child belongs to the thread that started it
            children += open(f"/proc/{pid}/task/{task}/children").read().split()
    except OSError:
        return 0.0
    for c in children:
        try:
            if open(f"/proc/{c}/comm").read().strip() == "gopls":
                total += cpu_seconds(c)
        except OSError:
            pass
    return total


def run_variant(kernel, goflags, repo, repeat, timeout, env=None):
    """Runs the cells in a fresh kernel; returns [(kind, run index, seconds, output)]. goflags None
    (or "") keeps the kernelspec's GOFLAGS; env sets (or, with "", removes) kernelspec variables."""
    import nbformat
    from nbclient import NotebookClient

    name = kernel
    env_before = os.environ.get("JUPYTER_PATH")
    tmp = None
    if goflags or repo or env:
        spec = kernel_json(kernel)
        if goflags:
            spec["env"]["GOFLAGS"] = goflags
        for k, v in (env or {}).items():
            if v:
                spec["env"][k] = v
            else:
                spec["env"].pop(k, None)
        if repo:
            spec["argv"] = ["--go_work=" + os.path.abspath(repo) if a.startswith("--go_work=") else a for a in spec["argv"]]
        tmp = tempfile.TemporaryDirectory(prefix="cells-bench-")
        name = kernel + "-bench"
        d = os.path.join(tmp.name, "kernels", name)
        os.makedirs(d)
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump(spec, f)
        os.environ["JUPYTER_PATH"] = tmp.name + (os.pathsep + env_before if env_before else "")
    try:
        # Every run differs by a comment: `go build` does not relink a binary whose inputs did
        # not change, so repeating a cell verbatim would time no compilation or link at all,
        # which is not what a user who edits a cell gets.
        nonce = time.time_ns()
        sources = []
        for kind, first in CELLS:
            for n in range(repeat):
                sources.append((kind, (first if n == 0 else REPEAT[kind]) + f" // run {nonce}-{n}"))
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for _, src in sources]
        client = NotebookClient(nb, kernel_name=name, timeout=timeout, allow_errors=True,
                                resources={"metadata": {"path": os.getcwd()}})
        times = []
        with client.setup_kernel():
            pid = client.km.provisioner.process.pid
            counts = {}
            for i, (kind, _) in enumerate(sources):
                c0, g0, t0 = cpu_seconds(pid), gopls_seconds(pid), time.monotonic()
                client.execute_cell(nb.cells[i], i)
                dt, cpu = time.monotonic() - t0, cpu_seconds(pid) - c0
                gopls = gopls_seconds(pid) - g0
                out = "".join(o.get("text", "") for o in nb.cells[i].outputs if o.get("output_type") == "stream").strip()
                errs = [o for o in nb.cells[i].outputs if o.get("output_type") == "error"]
                if errs:
                    out = "ERROR " + errs[0].get("ename", "") + ": " + errs[0].get("evalue", "")[:200]
                n = counts.get(kind, 0)
                counts[kind] = n + 1
                times.append((kind, n, dt, cpu, out))
                print(f"  {kind:9s} run {n}: {dt:6.2f} s wall, {cpu:6.2f} s CPU, gopls {gopls:5.2f} s CPU  {out[:60]!r}", flush=True)
        return times
    finally:
        if tmp is not None:
            if env_before is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = env_before
            tmp.cleanup()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="cifarlab-cpu")
    p.add_argument("--variant", action="append", default=[],
                   help="NAME=GOFLAGS: run with the kernelspec's GOFLAGS replaced, or kept when empty (default: the installed kernelspec)")
    p.add_argument("--variant-env", action="append", default=[],
                   help="NAME:VAR=VALUE: set VAR in variant NAME's kernelspec env (removed when VALUE is empty)")
    p.add_argument("--repo", default=None,
                   help="compile cells against this copy of the repository (GoNB's --go_work) instead of the kernelspec's, "
                        "e.g. a `git archive HEAD` snapshot, so that edits to the working tree do not land in the timings")
    p.add_argument("--repeat", type=int, default=5, help="runs of each cell kind (the first is reported apart)")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--json", default=None, help="write every time here")
    args = p.parse_args()
    # The lab cells' data: synthetic data generated on the first run, in a folder of the bench's own.
    os.environ.setdefault("CIFARLAB_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "cells-data"))
    os.environ.setdefault("GOMLX_NO_AUTO_INSTALL", "1")

    variants = [("installed", None)]
    if args.variant:
        variants = []
        for v in args.variant:
            if "=" not in v:
                p.error(f"--variant {v!r}: want NAME=GOFLAGS")
            variants.append(tuple(v.split("=", 1)))
    envs = {}
    for v in args.variant_env:
        name, sep, assign = v.partition(":")
        var, eq, value = assign.partition("=")
        if not sep or not eq or not var or name not in dict(variants):
            p.error(f"--variant-env {v!r}: want NAME:VAR=VALUE for a NAME given with --variant")
        envs.setdefault(name, {})[var] = value
    results = {}
    for name, goflags in variants:
        installed = kernel_json(args.kernel)["env"]
        flags = goflags or installed.get("GOFLAGS", "")
        env = envs.get(name, {})
        proxy = env.get("GOPROXY", installed.get("GOPROXY", ""))
        print(f"variant {name}: GOFLAGS={flags!r}, GOPROXY={proxy!r}, env {env}, repo {args.repo or 'of the kernelspec'}, "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        results[name] = {"goflags": flags, "goproxy": proxy, "env": env, "load_before": os.getloadavg()[0],
                         "times": run_variant(args.kernel, goflags, args.repo, args.repeat, args.timeout, env)}
        results[name]["load_after"] = os.getloadavg()[0]

    print()
    print("| variant | GOFLAGS | GOPROXY | " + " | ".join(f"{k}" for k, _ in CELLS) + " | load avg |")
    print("|---|---|---|" + "---:|" * len(CELLS) + "---:|")
    for name, r in results.items():
        cols = []
        for kind, _ in CELLS:
            ts = [t for k, n, t, _, _ in r["times"] if k == kind and n > 0]
            cpu = [c for k, n, _, c, _ in r["times"] if k == kind and n > 0]
            cols.append(f"{statistics.median(ts):.2f} s ({statistics.median(cpu):.2f} s CPU)" if ts else "-")
        proxy = f"`{r['goproxy']}`" if r["goproxy"] else "(the user's)"
        print(f"| {name} | `{r['goflags']}` | {proxy} | " + " | ".join(cols) + f" | {r['load_before']:.1f}-{r['load_after']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    bad = [o for r in results.values() for _, _, _, _, o in r["times"] if o.startswith("ERROR")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
