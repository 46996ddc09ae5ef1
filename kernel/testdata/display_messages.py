#!/usr/bin/env python3
"""Runs cells in a real kernel and prints, as JSON, every display message each one sent.

Used by internal/kernel/live_test.go (TestLiveViewUpdatesInPlace): nbclient folds update_display_data
into the outputs it saves, so what the live view sent while a cell ran can only be seen on the
iopub channel. Usage: display_messages.py KERNEL_NAME CELL_FILE... ; output:
[[{"type": "display_data"|"update_display_data", "display_id": str|null, "text": str,
   "mimes": [MIME types of its data], "metadata": {...}, "t": float}, ...], ...]
one list per cell, and the cell's stdout/stderr and error under "stream"/"error" entries. Each
entry also has "t": when it arrived (time.time(), the machine's clock, which the cell's own
clock shares), for tests of when a cell first speaks (internal/kernel/labcells_test.go).
"""

import json
import sys
import time

from jupyter_client.manager import start_new_kernel


def run(kc, code, timeout):
    msg_id = kc.execute(code)
    out = []
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t, c, now = m["msg_type"], m["content"], time.time()
        if t in ("display_data", "update_display_data"):
            out.append({"type": t, "display_id": c.get("transient", {}).get("display_id"),
                        "text": c.get("data", {}).get("text/plain", ""),
                        "mimes": sorted(c.get("data", {})), "metadata": c.get("metadata", {}), "t": now})
        elif t == "stream":
            out.append({"type": "stream", "text": c.get("text", ""), "t": now})
        elif t == "error":
            out.append({"type": "error", "text": c.get("ename", "") + ": " + c.get("evalue", ""), "t": now})
        elif t == "status" and c.get("execution_state") == "idle":
            return out


def main():
    kernel, cells = sys.argv[1], sys.argv[2:]
    km, kc = start_new_kernel(kernel_name=kernel, startup_timeout=120)
    try:
        results = [run(kc, open(f).read(), 900) for f in cells]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
