#!/usr/bin/env python3
"""Runs cells in a real kernel and interrupts one of them the way JupyterLab's Kernel -> Interrupt
does (jupyter_client's KernelManager.interrupt_kernel: an interrupt_request for GoNB, whose
kernelspec says interrupt_mode "message"), as soon as that cell has printed a given text.

Used by internal/kernel/interrupt_test.go (TestInterruptedFitResumes, TestInterruptInALongStep) and,
interrupting nothing (INTERRUPT_CELL -1), by internal/kernel/realdata_test.go
(TestNotebookUsesUnverifiedRealData). Usage:
    interrupt_cells.py KERNEL_NAME INTERRUPT_CELL TRIGGER CELL_FILE...
INTERRUPT_CELL is the index of the cell to interrupt and TRIGGER the text of its output after
which the interrupt is sent; several cells: "1,2" and "text of 1|text of 2". Output, as JSON,
one entry per cell:
    [{"text": stdout and stderr, "error": "ename: evalue" | null, "status": "ok" | "error",
      "interrupted": bool, "after_interrupt": seconds from the interrupt to the cell's end
      (null when not interrupted), "seconds": the cell's time}, ...]
"""

import json
import os
import sys
import time

from jupyter_client.manager import start_new_kernel


def run(km, kc, code, trigger, timeout):
    began = time.monotonic()
    msg_id = kc.execute(code)
    out = {"text": "", "error": None, "status": None, "interrupted": False, "after_interrupt": None}
    interrupted_at = None
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = m["msg_type"], m["content"]
        if t == "stream":
            out["text"] += c.get("text", "")
            if trigger and not out["interrupted"] and trigger in out["text"]:
                # $INTERRUPT_DELAY seconds after the trigger (default 0): a test whose next step
                # is long waits until that step has surely begun.
                time.sleep(float(os.environ.get("INTERRUPT_DELAY", "0")))
                km.interrupt_kernel()
                out["interrupted"] = True
                interrupted_at = time.monotonic()
        elif t == "error":
            out["error"] = c.get("ename", "") + ": " + c.get("evalue", "")
        elif t == "status" and c.get("execution_state") == "idle":
            break
    if interrupted_at is not None:
        out["after_interrupt"] = time.monotonic() - interrupted_at
    out["seconds"] = time.monotonic() - began
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            out["status"] = reply["content"].get("status")
            return out


def main():
    kernel, cells = sys.argv[1], sys.argv[4:]
    targets = [int(i) for i in sys.argv[2].split(",")]
    triggers = dict(zip(targets, sys.argv[3].split("|")))
    km, kc = start_new_kernel(kernel_name=kernel, startup_timeout=120)
    try:
        results = [run(km, kc, open(f).read(), triggers.get(i) or None, 900) for i, f in enumerate(cells)]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
