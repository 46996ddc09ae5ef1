#!/usr/bin/env python3
"""Starts a real kernel, runs one cell, asks for a completion, and shuts the kernel down, in steps
that internal/kernel/gopls_test.go (TestGoplsStartsOnFirstCompletion) watches.

Usage: gopls_lazy.py KERNEL_NAME CELL_FILE COMPLETE_FILE
It prints JSON lines on stdout and waits for a line on stdin after each:
    {"pid": P, "cell": "ok" | "error", "text": ...}       the kernel runs, with the cell run
    {"matches": [...], "status": ..., "attempts": N}      the reply to a complete_request for the
                                                          end of COMPLETE_FILE (Tab in JupyterLab),
                                                          asked again until gopls answers
    {"ended": true}                                       the kernel was shut down
"""

import sys
import time

from jupyter_client.manager import start_new_kernel

from lifecycle import run, say  # this folder is on the path: the same cell runner and steps


def main():
    kernel, cell, complete = sys.argv[1], sys.argv[2], sys.argv[3]
    km, kc = start_new_kernel(kernel_name=kernel, startup_timeout=120)
    try:
        steps(km, kc, cell, complete)
    finally:
        if km.is_alive():
            km.shutdown_kernel(now=True)


def steps(km, kc, cell, complete):
    status, text = run(kc, open(cell).read())
    say({"pid": km.provisioner.pid, "cell": status, "text": text})
    code = open(complete).read()
    # The first request starts gopls, which loads the workspace; GoNB gives up on an answer
    # after 8 s (goplsclient.CommunicationTimeout), so on a slow machine the first Tab may get
    # nothing: ask again, as a user presses Tab again, for up to 3 minutes.
    began, attempts = time.monotonic(), 0
    while True:
        attempts += 1
        msg_id = kc.complete(code, len(code))
        while True:
            reply = kc.get_shell_msg(timeout=300)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        content = reply["content"]
        if (content.get("status") == "ok" and content.get("matches")) or time.monotonic() - began > 180:
            break
        time.sleep(2)
    say({"matches": content.get("matches", []), "status": content.get("status"), "reply": content,
         "attempts": attempts, "seconds": round(time.monotonic() - began, 1)})
    kc.stop_channels()
    km.shutdown_kernel()
    say({"ended": True})


if __name__ == "__main__":
    main()
