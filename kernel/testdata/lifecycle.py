#!/usr/bin/env python3
"""Starts a real kernel, runs one cell in it, and ends the kernel the way Jupyter does, in steps
that internal/kernel/lifecycle_test.go (TestKernelLeavesNoProcess) watches.

Usage: lifecycle.py KERNEL_NAME MODE CELL_FILE, MODE being
    shutdown  KernelManager.shutdown_kernel(): a shutdown_request, as JupyterLab's Shut Down
    restart   KernelManager.restart_kernel(): Kernel -> Restart, then a shutdown of the new one
    sigterm   SIGTERM to the kernel's process group, as Jupyter sends when a shutdown request
              is not answered in time; "code" is the kernel's exit status
    kill      SIGKILL to the kernel's process (a kernel that crashed or was killed)
It prints JSON lines on stdout and waits for a line on stdin after each:
    {"pid": P, "cell": "ok" | "error", "text": ...}   the kernel runs, with the cell run
    {"ended": MODE, "pid": P2 | null}                 the kernel was ended (P2: the restarted one)
and, after a restart, ends the new kernel on the next line.
"""

import json
import os
import signal
import sys

from jupyter_client.manager import start_new_kernel


def run(kc, code):
    msg_id = kc.execute(code)
    text = ""
    while True:
        m = kc.get_iopub_msg(timeout=600)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = m["msg_type"], m["content"]
        if t == "stream":
            text += c.get("text", "")
        elif t == "error":
            text += c.get("ename", "") + ": " + c.get("evalue", "")
        elif t == "status" and c.get("execution_state") == "idle":
            break
    while True:
        reply = kc.get_shell_msg(timeout=600)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"].get("status"), text


def say(obj):
    print(json.dumps(obj), flush=True)
    sys.stdin.readline()


def main():
    kernel, mode, cell = sys.argv[1], sys.argv[2], sys.argv[3]
    km, kc = start_new_kernel(kernel_name=kernel, startup_timeout=120)
    status, text = run(kc, open(cell).read())
    say({"pid": km.provisioner.pid, "cell": status, "text": text})
    kc.stop_channels()
    if mode == "shutdown":
        km.shutdown_kernel()
        say({"ended": mode, "pid": None})
    elif mode == "restart":
        km.restart_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        kc.stop_channels()
        say({"ended": mode, "pid": km.provisioner.pid})
        km.shutdown_kernel()
        say({"ended": "shutdown", "pid": None})
    elif mode == "sigterm":
        os.killpg(km.provisioner.pgid, signal.SIGTERM)
        code = km.provisioner.process.wait()
        say({"ended": mode, "pid": None, "code": code})
        km.cleanup_resources()
    elif mode == "kill":
        os.kill(km.provisioner.pid, signal.SIGKILL)
        km.provisioner.process.wait()
        say({"ended": mode, "pid": None})
        km.cleanup_resources()
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
