#!/usr/bin/env python3
"""Drives a real Jupyter server (started by internal/kernel/cull_test.go with the workshop image's
docker/jupyter_server_config.py and short culling times) through its REST API and websockets:

  idle  a kernel with a websocket connection open, as a notebook tab left open to read has
  busy  a kernel whose cell runs for BUSY_SECONDS (a GoNB cell that sleeps), over its websocket

It polls GET /api/kernels every 0.5 s until both kernels are gone or LIMIT seconds have passed,
and prints one JSON object: for each kernel, when (seconds from the start) it was last listed,
its last execution_state and connections, and for "busy" when its cell ended.

Usage: cull.py BASE_URL TOKEN KERNEL_NAME BUSY_SECONDS LIMIT
"""

import asyncio
import datetime
import json
import sys
import time
import urllib.request
import uuid

from tornado.websocket import websocket_connect


def api(base, token, method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": "token " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        data = r.read()
        return json.loads(data) if data else None


def execute_request(code):
    return json.dumps({
        "header": {"msg_id": uuid.uuid4().hex, "msg_type": "execute_request", "username": "test", "session": uuid.uuid4().hex,
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False},
    })


async def main():
    base, token, kernel, busy_seconds, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
    began = time.monotonic()
    now = lambda: round(time.monotonic() - began, 1)
    kernels = {name: api(base, token, "POST", "api/kernels", {"name": kernel})["id"] for name in ("idle", "busy")}
    ws_base = base.replace("http://", "ws://")
    sockets = {name: await websocket_connect(f"{ws_base}api/kernels/{kid}/channels?token={token}") for name, kid in kernels.items()}
    out = {name: {"id": kid, "last_listed": None, "state": None, "connections": None} for name, kid in kernels.items()}
    out["busy"]["cell_started"] = out["busy"]["cell_ended"] = None
    await sockets["busy"].write_message(execute_request(f'import "time"\n\n%%\ntime.Sleep({busy_seconds} * time.Second)\nfmt.Println("slept")'))

    async def watch_busy():
        while True:
            m = await sockets["busy"].read_message()
            if m is None:
                return
            msg = json.loads(m)
            if msg.get("msg_type") == "status" and msg["parent_header"].get("msg_type") == "execute_request":
                state = msg["content"]["execution_state"]
                if state == "busy" and out["busy"]["cell_started"] is None:
                    out["busy"]["cell_started"] = now()
                if state == "idle":
                    out["busy"]["cell_ended"] = now()

    watcher = asyncio.ensure_future(watch_busy())
    while now() < limit:
        listed = {k["id"]: k for k in api(base, token, "GET", "api/kernels")}
        for name, kid in kernels.items():
            if kid in listed:
                out[name].update(last_listed=now(), state=listed[kid]["execution_state"], connections=listed[kid]["connections"])
        if not any(kid in listed for kid in kernels.values()):
            break
        await asyncio.sleep(0.5)
    watcher.cancel()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
