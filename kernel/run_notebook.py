#!/usr/bin/env python3
"""Execute a Jupyter notebook through a real kernel with nbclient and report every cell.

Used by the kernel tests (kernel/*_test.go), by the notebook CI checks and by
kernel/gpu-smoke.sh. It never stops at the first error: every cell runs (unless the kernel
dies), errors are recorded per cell, and the summary says which cells failed.

Cell time limits: --first-timeout applies to the first code cell (GoNB compiles GoMLX
there, 1-2 minutes cold), --timeout to every other cell. A cell can ask for its own limit
with the metadata key "cifarlab": {"timeout": SECONDS}.

Cells tagged "raises-exception" (Jupyter's standard tag) are expected to fail: an error
there is reported with "expected_error": true and does not count as a failure; a cell
with that tag that does NOT fail counts as a failure.

Output: the executed notebook (--out) and a JSON summary (--summary, "-" for stdout):
  {"ok": bool, "kernel": str, "failed_cells": [index...], "wall_s": float,
   "cells": [{"index": i, "source": str, "status": "ok"|"error"|"timeout"|"not-run",
              "expected_error": bool, "seconds": float, "stdout": str, "stderr": str,
              "text": str, "error": {"ename", "evalue", "traceback"} | null}]}
Exit status: 0 when ok, 1 when a cell failed, 2 for usage errors or a kernel that won't start.
"""

import argparse
import json
import os
import re
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TAGS = re.compile(r"<[^>]+>")


def strip(s):
    """Removes ANSI colour codes."""
    return ANSI.sub("", s)


def output_texts(outputs):
    """Splits a cell's outputs into (stdout, stderr, other text, error)."""
    stdout, stderr, text, error = [], [], [], None
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            (stdout if out.get("name") == "stdout" else stderr).append(out.get("text", ""))
        elif kind in ("display_data", "execute_result"):
            data = out.get("data", {})
            if "text/plain" in data:
                text.append(data["text/plain"])
            elif "text/html" in data:
                text.append(TAGS.sub("", data["text/html"]))
        elif kind == "error":
            error = {
                "ename": out.get("ename", ""),
                "evalue": strip(out.get("evalue", "")),
                "traceback": [strip(t) for t in out.get("traceback", [])],
            }
    return strip("".join(stdout)), strip("".join(stderr)), strip("\n".join(text)), error


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("notebook")
    p.add_argument("--kernel", required=True, help="kernelspec name, e.g. cifarlab-cpu")
    p.add_argument("--timeout", type=float, default=120, help="seconds per cell (default 120)")
    p.add_argument("--first-timeout", type=float, default=600,
                   help="seconds for the first code cell, which compiles GoMLX (default 600)")
    p.add_argument("--startup-timeout", type=float, default=120, help="seconds for the kernel to start")
    p.add_argument("--cwd", default=None, help="working directory of the kernel (default: the notebook's folder)")
    p.add_argument("--out", default=None, help="write the executed notebook here")
    p.add_argument("--summary", default="-", help="write the JSON summary here ('-': stdout)")
    p.add_argument("--kernel-log", default=None, help="write the kernel's own stdout/stderr (GoNB's log) to this file")
    args = p.parse_args()

    nb = nbformat.read(args.notebook, as_version=4)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    first = code_cells[0] if code_cells else -1

    current = {"index": -1}

    def timeout_func(cell):
        own = cell.get("metadata", {}).get("cifarlab", {}).get("timeout")
        if own:
            return float(own)
        return args.first_timeout if current["index"] == first else args.timeout

    cwd = args.cwd or os.path.dirname(os.path.abspath(args.notebook))
    client = NotebookClient(
        nb,
        kernel_name=args.kernel,
        timeout_func=timeout_func,
        startup_timeout=args.startup_timeout,
        allow_errors=True,
        record_timing=True,
        resources={"metadata": {"path": cwd}},
    )

    start = time.monotonic()
    results = {i: {"status": "not-run", "seconds": 0.0} for i in code_cells}
    fatal = None
    kernel_log = open(args.kernel_log, "ab") if args.kernel_log else None
    launch = {"stdout": kernel_log, "stderr": kernel_log} if kernel_log else {}
    try:
        with client.setup_kernel(**launch):
            for i in code_cells:
                cell = nb.cells[i]
                current["index"] = i
                t0 = time.monotonic()
                status = "ok"
                try:
                    client.execute_cell(cell, i)
                except CellTimeoutError as e:
                    status = "timeout"
                    fatal = "cell %d timed out after %.0f s: %s" % (i, timeout_func(cell), e)
                except DeadKernelError as e:
                    status = "error"
                    fatal = "kernel died in cell %d: %s" % (i, e)
                except CellExecutionError:
                    status = "error"
                results[i] = {"status": status, "seconds": round(time.monotonic() - t0, 2)}
                if any(o.get("output_type") == "error" for o in cell.get("outputs", [])) and status == "ok":
                    results[i]["status"] = "error"
                if fatal:
                    break
    except Exception as e:  # kernel failed to start, or died between cells
        if fatal is None:
            fatal = "%s: %s" % (type(e).__name__, e)
    wall = round(time.monotonic() - start, 2)
    if kernel_log:
        kernel_log.close()

    cells, failed = [], []
    for i in code_cells:
        cell = nb.cells[i]
        stdout, stderr, text, error = output_texts(cell.get("outputs", []))
        r = results[i]
        expected = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        status = r["status"]
        bad = (status != "ok" and not (expected and status == "error")) or (expected and status == "ok")
        if bad:
            failed.append(i)
        cells.append({
            "index": i, "source": cell.source, "status": status, "expected_error": expected,
            "seconds": r["seconds"], "stdout": stdout, "stderr": stderr, "text": text, "error": error,
        })

    if args.out:
        nbformat.write(nb, args.out)
    summary = {"ok": not failed and fatal is None, "kernel": args.kernel, "failed_cells": failed,
               "fatal": fatal, "wall_s": wall, "cells": cells}
    data = json.dumps(summary, indent=1)
    if args.summary == "-":
        print(data)
    else:
        with open(args.summary, "w") as f:
            f.write(data)
    if fatal and not any(r["status"] != "not-run" for r in results.values()):
        print("run_notebook: " + fatal, file=sys.stderr)
        return 2
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
