#!/usr/bin/env python3
"""The client side of docker/hub/test.sh: talks to a running hub only through its public URL
(the proxy) and REST API, as attendees' browsers and an admin would.

    loadtest.py STATE.json signup [USER]          sign-up form: a wrong code creates nobody, the right one logs in
                                                  (USER: a user the admin created beforehand signs up; admin: the
                                                  organiser's first sign-up, which must be the hub's admin)
    loadtest.py STATE.json users N                create users u1..uN and a token each through the REST API
    loadtest.py STATE.json start USER...          start their servers, wait until ready
    loadtest.py STATE.json run LABEL USER... [--notebooks=A.ipynb,...] [--expect=loaded|compiled]
                                                  each user runs the notebooks (default 01-04) through their own kernel,
                                                  at once; --expect: notebook 01's training cell loaded every program
                                                  from the compile cache (none compiled), or compiled them all
    loadtest.py STATE.json isolation              other users' tokens and no token are refused
    loadtest.py STATE.json mark USER              the user edits a notebook and adds one of their own
    loadtest.py STATE.json check-mark USER [--notebooks-only]  ... and both are still there
    loadtest.py STATE.json restart USER...        stop and start the users' servers through the REST API, at once
    loadtest.py STATE.json spawn-fails USER WORDS... [--within=S]  a spawn that fails: the attendee's page says WORDS
                                                  (within S seconds), no container left
    loadtest.py STATE.json oom USER LIMIT         a cell over the memory limit is killed; the next cell says why (LIMIT, e.g. "3.0 GiB")
    loadtest.py STATE.json busy USER SECONDS      the user's kernel runs a silent cell of SECONDS (no client left connected)
    loadtest.py STATE.json kept-while-busy USER SECONDS  the server stays while that kernel is busy, until it is idle
    loadtest.py STATE.json culled-after-idle USER TIMEOUT EVERY  culled once idle for TIMEOUT, within a culling period
    loadtest.py STATE.json culled-with-tab USER TIMEOUT EVERY TABPID EVENTS  ... with a JupyterLab tab open (tab.mjs)
    loadtest.py STATE.json wait-culled SECONDS [USER...]  every server (or USER's) stopped by the idle culler within SECONDS
    loadtest.py STATE.json report                 RESULTS tables from what the runs recorded

STATE.json holds the hub's URL and admin token (written by test.sh) and what the steps record
(tokens, per-cell latencies, resource samples). Notebooks run over the Jupyter server's REST
API (a session per notebook, so the kernel starts in the notebook's folder) and the kernel's
websocket (execute_request per code cell, outputs collected from iopub as nbclient does), and
are checked with notebooks/nbcheck.py's own checks (errors, raises-exception tags, the cells'
expectations). Needs requests, websocket-client and nbformat (the lab's .venv has them).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid

import nbformat
import requests
import websocket

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "notebooks"))
sys.path.insert(0, os.path.join(REPO, "docker"))
import cachecheck  # noqa: E402
import nbcheck  # noqa: E402

NOTEBOOKS = ["01-reproduce.ipynb", "02-move-to-cpu.ipynb", "03-inspect-shapes.ipynb", "04-fix-the-head.ipynb"]
# Where the image keeps Go: outputs are made portable with these, as nbcheck does inside the image.
IMAGE_GO_ENV = {"GOMODCACHE": "/opt/go/pkg/mod", "GOROOT": "/usr/local/go"}
CHECKOUT_IN_IMAGE = "/opt/cifarlab"
CELL_TIMEOUT = 900


class Fail(Exception):
    """A check of the hub failed; the message says which and what was seen."""


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1)
    os.replace(tmp, path)


def api(state, method, path, token=None, expect=(200, 201, 202, 204), **kw):
    token = token or state["admin_token"]
    r = requests.request(method, state["url"] + "/hub/api" + path, headers={"Authorization": f"token {token}"},
                         timeout=60, **kw)
    if expect and r.status_code not in expect:
        raise Fail(f"{method} /hub/api{path}: {r.status_code} {r.text[:300]}")
    return r


# --- sign-up with the workshop code ----------------------------------------------------------
def xsrf_form(session, url):
    r = session.get(url, timeout=30)
    r.raise_for_status()
    m = re.search(r'name="_xsrf" value="([^"]+)"', r.text)
    if not m:
        raise Fail(f"{url}: no _xsrf field in the form")
    return r.text, m.group(1)


def cmd_signup(state, args):
    """Signs a new name up (and removes it again), or, given USER, a user the admin created
    beforehand through the REST API (a server started before the room opens), who keeps it."""
    base = state["url"] + "/hub"
    s = requests.Session()
    page, xsrf = xsrf_form(s, base + "/signup")
    if 'name="signup_code"' not in page:
        raise Fail("the sign-up page has no workshop code field")
    existing = bool(args)
    user = args[0] if existing else "attendee-" + uuid.uuid4().hex[:6]
    pw = "correct-horse-" + uuid.uuid4().hex[:8]
    form = {"_xsrf": xsrf, "username": user, "signup_password": pw, "signup_password_confirmation": pw}
    r = s.post(base + "/signup", data={**form, "signup_code": "wrong-" + state["signup_code"]}, timeout=30)
    if r.status_code != 403 or "Wrong workshop code" not in r.text:
        raise Fail(f"sign-up with a wrong code answered {r.status_code}, want 403 with an explanation")
    # (That it created nobody shows below too: the same name then signs up, which NativeAuthenticator
    # refuses for a name already taken.)
    if not existing and api(state, "GET", f"/users/{user}", expect=(200, 404)).status_code != 404:
        raise Fail("a sign-up with a wrong code created the user")
    r = s.post(base + "/signup", data={**form, "signup_code": state["signup_code"]}, timeout=30)
    if r.status_code != 200 or "successful" not in r.text:
        alert = re.search(r'role="alert">(.*?)</div>', r.text, re.S)
        raise Fail(f"sign-up with the code answered {r.status_code}: "
                   f"{' '.join(alert.group(1).split()) if alert else r.text[:300]}")
    _, xsrf = xsrf_form(s, base + "/login")
    r = s.post(base + "/login", data={"_xsrf": xsrf, "username": user, "password": "not-" + pw},
               allow_redirects=False, timeout=30)
    if r.status_code == 302:
        raise Fail("login with a wrong password was accepted")
    r = s.post(base + "/login", data={"_xsrf": xsrf, "username": user, "password": pw},
               allow_redirects=False, timeout=30)
    if r.status_code != 302:
        raise Fail(f"login with the signed-up password answered {r.status_code}, want a redirect")
    who = s.get(base + "/api/user", timeout=30, headers={"X-XSRFToken": s.cookies.get("_xsrf", "")})
    if who.status_code != 200 or who.json().get("name") != user:
        raise Fail(f"after login, /hub/api/user answered {who.status_code} {who.text[:200]}")
    if existing:
        state.setdefault("passwords", {})[user] = pw
        if user == "admin":
            # start.sh says to sign up as the admin first: that sign-up is the hub's admin.
            if not who.json().get("admin"):
                raise Fail(f"admin signed up and logged in, but the hub does not make it an admin: {who.text[:200]}")
            print("signup: admin (CIFARLAB_HUB_ADMINS) signed up first with the code and is the hub's admin")
            return
        print(f"signup: {user}, created by the admin beforehand, signed up with the code and logged in with "
              f"the password chosen then (a wrong code and a wrong password refused)")
        return
    api(state, "DELETE", f"/users/{user}")
    print(f"signup: wrong code refused (403, no user), right code signed {user} up, "
          f"wrong password refused, password logged in")


# --- users, tokens, servers ------------------------------------------------------------------
def cmd_users(state, args):
    n = int(args[0])
    names = [f"u{i}" for i in range(1, n + 1)]
    api(state, "POST", "/users", json={"usernames": names}, expect=(201, 409))
    tokens = state.setdefault("tokens", {})
    for u in names:
        r = api(state, "POST", f"/users/{u}/tokens", json={"note": "loadtest", "expires_in": 4 * 3600})
        tokens[u] = r.json()["token"]
    print(f"users: created {', '.join(names)} through POST /hub/api/users, a token each")


def server_state(state, user):
    model = api(state, "GET", f"/users/{user}").json()
    return model.get("servers", {}).get("")


def wait_ready(state, user, timeout=900):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        srv = server_state(state, user)
        if srv and srv.get("ready"):
            return time.monotonic() - t0
        if srv is None and time.monotonic() - t0 > 10:
            raise Fail(f"{user}'s server is gone while starting (see the hub's log)")
        time.sleep(2)
    raise Fail(f"{user}'s server not ready after {timeout}s")


def start(state, user):
    t0 = time.monotonic()
    api(state, "POST", f"/users/{user}/server", expect=(201, 202, 400))
    wait_ready(state, user)
    return time.monotonic() - t0


def cmd_start(state, users):
    with concurrent.futures.ThreadPoolExecutor(len(users)) as ex:
        took = dict(zip(users, ex.map(lambda u: start(state, u), users)))
    first = state.setdefault("start_seconds", {})  # the figures: each user's first start
    first.update({u: s for u, s in took.items() if u not in first})
    print("start: " + ", ".join(f"{u} ready in {s:.0f} s" for u, s in took.items()))


def user_get(state, user, path, token):
    headers = {"Authorization": f"token {token}"} if token else {}
    return requests.get(f"{state['url']}/user/{user}{path}", headers=headers, timeout=60, allow_redirects=False)


# --- notebooks through a remote kernel -------------------------------------------------------
class RemoteKernel:
    """A kernel of a user's server, driven over the Jupyter server's websocket."""

    def __init__(self, state, user, nb_path, kernel):
        self.state, self.user, self.token = state, user, state["tokens"][user]
        h = {"Authorization": f"token {self.token}"}
        r = requests.post(f"{state['url']}/user/{user}/api/sessions", headers=h, timeout=300,
                          json={"path": nb_path, "name": nb_path, "type": "notebook", "kernel": {"name": kernel}})
        if r.status_code != 201:
            raise Fail(f"{user}: POST /api/sessions for {nb_path}: {r.status_code} {r.text[:300]}")
        self.session_id = r.json()["id"]
        self.kernel_id = r.json()["kernel"]["id"]
        self.client_session = uuid.uuid4().hex
        ws_url = state["url"].replace("http", "ws", 1) + f"/user/{user}/api/kernels/{self.kernel_id}/channels"
        self.ws = websocket.create_connection(ws_url + f"?session_id={self.client_session}", header=[
            f"Authorization: token {self.token}"], timeout=CELL_TIMEOUT)

    def close(self):
        try:
            self.ws.close()
        finally:
            requests.delete(f"{self.state['url']}/user/{self.user}/api/sessions/{self.session_id}",
                            headers={"Authorization": f"token {self.token}"}, timeout=60)

    def send_execute(self, code):
        """Sends code to run; returns the request's msg_id."""
        msg_id = uuid.uuid4().hex
        msg = {
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": self.client_session,
                       "username": self.user, "version": "5.3",
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True},
        }
        self.ws.send(json.dumps(msg))
        return msg_id

    def execute(self, code):
        """Runs code; returns (outputs, execution_count, seconds) with outputs as nbformat dicts."""
        t0 = time.monotonic()
        msg_id = self.send_execute(code)
        outputs, displays, count = [], {}, None
        clear_pending = False
        got_reply = got_idle = False
        while not (got_reply and got_idle):
            if time.monotonic() - t0 > CELL_TIMEOUT:
                raise Fail(f"{self.user}: a cell ran past {CELL_TIMEOUT}s")
            m = json.loads(self.ws.recv())
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            t, c = m["msg_type"], m["content"]
            if m["channel"] == "shell" and t == "execute_reply":
                got_reply, count = True, c.get("execution_count")
                continue
            if t == "status":
                got_idle = got_idle or c["execution_state"] == "idle"
                continue
            if t == "clear_output":
                if c.get("wait"):
                    clear_pending = True
                else:
                    outputs.clear()
                continue
            if t == "update_display_data":
                for o in displays.get(c.get("transient", {}).get("display_id"), []):
                    o["data"], o["metadata"] = c["data"], c.get("metadata", {})
                continue
            if t not in ("stream", "display_data", "execute_result", "error"):
                continue
            if clear_pending:
                outputs.clear()
                clear_pending = False
            if t == "stream":
                if outputs and outputs[-1].get("output_type") == "stream" and outputs[-1]["name"] == c["name"]:
                    outputs[-1]["text"] += c["text"]
                else:
                    outputs.append(nbformat.v4.new_output("stream", name=c["name"], text=c["text"]))
            elif t == "error":
                outputs.append(nbformat.v4.new_output("error", ename=c["ename"], evalue=c["evalue"],
                                                      traceback=c["traceback"]))
            else:
                o = nbformat.v4.new_output(t, data=c["data"], metadata=c.get("metadata", {}),
                                           **({"execution_count": c.get("execution_count")} if t == "execute_result" else {}))
                outputs.append(o)
                did = c.get("transient", {}).get("display_id")
                if did:
                    displays.setdefault(did, []).append(o)
        return outputs, count, time.monotonic() - t0


def run_notebook(state, user, name, kernel="cifarlab-cpu"):
    """Runs one notebook as nbclient would (stops at the first unexpected error) and checks it."""
    nb = nbformat.read(os.path.join(REPO, "notebooks", name), as_version=4)
    t0 = time.monotonic()
    rk = RemoteKernel(state, user, name, kernel)
    seconds, stopped = {}, None
    try:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            outputs, count, secs = rk.execute(cell.source)
            cell.outputs, cell.execution_count, seconds[i] = outputs, count, secs
            if any(o["output_type"] == "error" for o in outputs) and nbcheck.RAISES_TAG not in cell.metadata.get("tags", []):
                stopped = i
                break
    finally:
        rk.close()
    wall = time.monotonic() - t0
    nbcheck.go_env = lambda key: IMAGE_GO_ENV.get(key, "")
    nbcheck.portable(nb, CHECKOUT_IN_IMAGE)
    reports = nbcheck.check_cells(nb, stopped, seconds, None, CHECKOUT_IN_IMAGE)
    problems = [f"cell {r.index}: {p}" for r in reports for p in r.problems]
    r = {"user": user, "notebook": name, "wall": wall, "cells": [seconds[i] for i in sorted(seconds)],
         "ok": not problems, "problems": problems}
    # The training cell (the first whose timeline says what became of its programs): the compile
    # cache's figures, and its wall time from execute_request to idle (what the attendee waits).
    for i in sorted(seconds):
        got = cachecheck.training_cell(nb.cells[i].outputs)
        if got is not None:
            r["training"] = {**got, "cell": seconds[i]}
            break
    return r


def sample_stats(stats_cmd, prefix, samples, stop):
    """podman stats of the hub's containers every few seconds, until stop is set."""
    while not stop.is_set():
        try:
            out = subprocess.run(stats_cmd + ["stats", "--no-stream", "--no-reset", "--format", "json"],
                                 capture_output=True, text=True, timeout=60).stdout
            t = time.time()
            for row in json.loads(out or "[]"):
                if row.get("name", "").startswith(prefix):
                    samples.append({"t": t, "name": row["name"], "cpu_time": row.get("cpu_time"),
                                    "mem": row.get("mem_usage"), "pids": row.get("pids")})
        except (subprocess.SubprocessError, ValueError) as e:
            samples.append({"t": time.time(), "error": str(e)})
        stop.wait(5)


def cmd_run(state, args):
    opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--"))
    label, users = args[0], [a for a in args[1:] if not a.startswith("--")]
    notebooks = opts["notebooks"].split(",") if "notebooks" in opts else NOTEBOOKS
    expect = opts.get("expect")
    stop = threading.Event()
    samples = []
    sampler = None
    if state.get("stats_cmd"):
        sampler = threading.Thread(target=sample_stats, args=(state["stats_cmd"], state["prefix"], samples, stop))
        sampler.start()
    t0 = time.monotonic()
    results = []
    failures = []

    def one_user(u):
        out = []
        for name in notebooks:
            try:
                r = run_notebook(state, u, name)
            except Exception as e:  # noqa: BLE001 (any failure of a user's run is reported, not raised)
                r = {"user": u, "notebook": name, "ok": False, "problems": [f"{type(e).__name__}: {e}"], "cells": []}
            if expect and name == NOTEBOOKS[0]:
                bad = cachecheck.problems(r.get("training"), expect)
                r["ok"], r["problems"] = r["ok"] and not bad, r["problems"] + [f"compile cache ({expect} expected): {b}" for b in bad]
            out.append(r)
            training = f"; training cell {r['training']['cell']:.1f} s: {cachecheck.describe(r['training'])}" if r.get("training") else ""
            print(f"  {label} {u} {name}: {'ok' if r['ok'] else 'FAILED'} "
                  f"{r.get('wall', 0):.1f} s, {len(r['cells'])} cells{training}", flush=True)
            if not r["ok"]:
                break
        return out

    try:
        with concurrent.futures.ThreadPoolExecutor(len(users)) as ex:
            for out in ex.map(one_user, users):
                results.extend(out)
    finally:
        stop.set()
        if sampler:
            sampler.join()
    wall = time.monotonic() - t0
    for r in results:
        if not r["ok"]:
            failures.append(f"{r['user']} {r['notebook']}: " + "\n".join(r["problems"])[:2000])
    state.setdefault("runs", {})[label] = {"users": users, "wall": wall, "results": results, "samples": samples}
    lat = [c for r in results for c in r["cells"]]
    print(f"run {label}: {len(users)} user(s) x {len(notebooks)} notebooks in {wall:.0f} s; "
          f"cell latency p50 {pct(lat, 50):.2f} s, p95 {pct(lat, 95):.2f} s over {len(lat)} cells")
    done = sum(1 for r in results if r["ok"])
    if failures or done != len(users) * len(notebooks):
        raise Fail(f"run {label}: {done} of {len(users) * len(notebooks)} notebooks passed:\n" + "\n".join(failures))


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


# --- isolation -------------------------------------------------------------------------------
def cmd_isolation(state, _args):
    tok = state["tokens"]
    users = sorted(tok)
    a, b = users[0], users[1]
    checks = []

    def refused(what, r):
        ok = r.status_code in (401, 403, 404)
        if r.status_code == 302:
            # A browser without the user's cookie is sent to log in with the hub, nothing else.
            where = r.headers.get("Location", "")
            ok = "/hub/api/oauth2/authorize" in where or "/hub/login" in where
            if not ok:
                raise Fail(f"isolation: {what} redirected to {where!r}, not to the hub's login")
        checks.append(f"{what}: {r.status_code}")
        if not ok:
            raise Fail(f"isolation: {what} answered {r.status_code}, want a refusal: {r.text[:200]}")

    own = user_get(state, a, "/api/contents/01-reproduce.ipynb", tok[a])
    if own.status_code != 200:
        raise Fail(f"isolation: {a}'s own token on {a}'s files answered {own.status_code}")
    checks.append(f"{a}'s token on {a}'s notebook: 200")
    for path in ("/api/contents/01-reproduce.ipynb", "/files/01-reproduce.ipynb", "/api/kernels", "/api/sessions",
                 "/api/status", "/lab"):
        refused(f"{b}'s token on {a}{path}", user_get(state, a, path, tok[b]))
        refused(f"no token on {a}{path}", user_get(state, a, path, None))
    h = {"Authorization": f"token {tok[b]}"}
    r = requests.post(f"{state['url']}/user/{a}/api/kernels", headers=h, json={"name": "cifarlab-cpu"}, timeout=60,
                      allow_redirects=False)
    refused(f"{b}'s token starting a kernel on {a}'s server", r)
    r = requests.put(f"{state['url']}/user/{a}/api/contents/intruder.ipynb", headers=h, timeout=60,
                     json={"type": "notebook", "content": nbformat.v4.new_notebook()}, allow_redirects=False)
    refused(f"{b}'s token writing a file on {a}'s server", r)
    refused(f"{b}'s token on the hub's model of {a}", api(state, "GET", f"/users/{a}", token=tok[b], expect=None))
    refused(f"{b}'s token stopping {a}'s server",
            api(state, "DELETE", f"/users/{a}/server", token=tok[b], expect=None))
    # A kernel's websocket of a's, opened with b's token.
    kid = requests.post(f"{state['url']}/user/{a}/api/kernels", headers={"Authorization": f"token {tok[a]}"},
                        json={"name": "cifarlab-cpu"}, timeout=120).json()["id"]
    try:
        url = state["url"].replace("http", "ws", 1) + f"/user/{a}/api/kernels/{kid}/channels"
        for who, hdr in ((f"{b}'s token", [f"Authorization: token {tok[b]}"]), ("no token", [])):
            try:
                websocket.create_connection(url, header=hdr, timeout=30).close()
                raise Fail(f"isolation: {who} opened {a}'s kernel websocket")
            except websocket.WebSocketBadStatusException as e:
                checks.append(f"{who} on {a}'s kernel websocket: {e.status_code}")
                if e.status_code not in (302, 401, 403, 404):
                    raise Fail(f"isolation: {who} on {a}'s kernel websocket: {e.status_code}") from None
    finally:
        requests.delete(f"{state['url']}/user/{a}/api/kernels/{kid}", headers={"Authorization": f"token {tok[a]}"},
                        timeout=60)
    # The container's own port (published on 127.0.0.1 for the proxy) asks for the hub's login too.
    if state.get("stats_cmd"):
        port = subprocess.run(state["stats_cmd"] + ["port", state["prefix"] + a, "8888"], capture_output=True,
                              text=True, timeout=60).stdout.split()
        if not port or not port[0].startswith("127.0.0.1:"):
            raise Fail(f"isolation: {a}'s container port is not published on 127.0.0.1 only: {port}")
        for path in ("/api/contents/01-reproduce.ipynb", "/api/kernels"):
            r = requests.get(f"http://{port[0]}/user/{a}{path}", timeout=30, allow_redirects=False)
            refused(f"no token on {a}'s container port {port[0]}{path}", r)
            r = requests.get(f"http://{port[0]}/user/{a}{path}", timeout=30, allow_redirects=False,
                             headers={"Authorization": f"token {tok[b]}"})
            refused(f"{b}'s token on {a}'s container port {port[0]}{path}", r)
    if user_get(state, a, "/api/contents/intruder.ipynb", tok[a]).status_code != 404:
        raise Fail("isolation: the intruder's file exists on the victim's server")
    state["isolation"] = checks
    print("isolation: " + "; ".join(checks))


# --- the user's work survives restarts -------------------------------------------------------
MARK = "my own change, kept across restarts"


def cmd_mark(state, args):
    user = args[0]
    h = {"Authorization": f"token {state['tokens'][user]}"}
    base = f"{state['url']}/user/{user}/api/contents"
    model = requests.get(base + "/03-inspect-shapes.ipynb", headers=h, timeout=60).json()
    nb = nbformat.from_dict(model["content"])
    nb.cells.append(nbformat.v4.new_markdown_cell(MARK))
    for path, content in (("03-inspect-shapes.ipynb", nb), ("mine.ipynb", nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_markdown_cell(MARK)]))):
        r = requests.put(f"{base}/{path}", headers=h, json={"type": "notebook", "content": content}, timeout=60)
        if r.status_code not in (200, 201):
            raise Fail(f"mark: PUT {path}: {r.status_code} {r.text[:200]}")
    print(f"mark: {user} edited 03-inspect-shapes.ipynb and saved mine.ipynb")


def cmd_check_mark(state, args):
    user = args[0]
    h = {"Authorization": f"token {state['tokens'][user]}"}
    base = f"{state['url']}/user/{user}/api/contents"
    listing = requests.get(base, headers=h, timeout=60)
    if listing.status_code != 200:
        raise Fail(f"check-mark: {user}'s contents answered {listing.status_code}")
    names = sorted(x["name"] for x in listing.json()["content"])
    marked = "--notebooks-only" not in args
    missing = [n for n in NOTEBOOKS + (["mine.ipynb"] if marked else []) if n not in names]
    if missing:
        raise Fail(f"check-mark: {user} lost {missing}; has {names}")
    if not marked:
        print(f"check-mark: {user} still has the workshop notebooks ({len(names)} files)")
        return
    for path in ("03-inspect-shapes.ipynb", "mine.ipynb"):
        text = json.dumps(requests.get(f"{base}/{path}", headers=h, timeout=60).json()["content"])
        if MARK not in text:
            raise Fail(f"check-mark: {user}'s change to {path} is gone")
    print(f"check-mark: {user} still has the workshop notebooks, the edit and mine.ipynb ({len(names)} files)")


def restart(state, user):
    t0 = time.monotonic()
    api(state, "DELETE", f"/users/{user}/server", expect=(202, 204))
    while server_state(state, user) is not None:
        if time.monotonic() - t0 > 300:
            raise Fail(f"restart: {user}'s server did not stop in 300 s")
        time.sleep(2)
    stopped = time.monotonic() - t0
    took = start(state, user)
    return f"restart: {user}'s server stopped in {stopped:.0f} s and started again in {took:.0f} s"


def cmd_restart(state, users):
    with concurrent.futures.ThreadPoolExecutor(len(users)) as ex:
        for line in ex.map(lambda u: restart(state, u), users):
            print(line)


def cmd_wait_culled(state, args):
    limit = float(args[0])
    t0 = time.monotonic()
    users = args[1:] or sorted(state["tokens"])
    running = users
    while time.monotonic() - t0 < limit:
        running = [u for u in users if server_state(state, u) is not None]
        if not running:
            took = time.monotonic() - t0
            state["culled_after"] = took
            print(f"culled: {', '.join(users)}: every server stopped by the idle culler, the last {took:.0f} s after this step began")
            return
        time.sleep(3)
    raise Fail(f"culling: still running after {limit:.0f} s: {running}")


# --- a spawn that fails ----------------------------------------------------------------------
def cmd_spawn_fails(state, args):
    """The user's spawn fails: the progress events (what the attendee's spawn page shows) end with
    a failure whose message holds every one of WORDS, and no container of the user is left."""
    user, words = args[0], [w for w in args[1:] if not w.startswith("--within=")]
    within = float(next((w.split("=", 1)[1] for w in args[1:] if w.startswith("--within=")), 900))
    api(state, "POST", "/users", json={"usernames": [user]}, expect=(201, 409))
    t0 = time.monotonic()
    # 500: it failed within the hub's slow_spawn_timeout (10 s), and the request says why itself.
    posted = api(state, "POST", f"/users/{user}/server", expect=(201, 202, 500))
    if posted.status_code == 500:
        missing = [w for w in words if w not in posted.json().get("message", "")]
        if missing:
            raise Fail(f"spawn-fails: starting {user}'s server answered {posted.text[:300]}, without {missing}")
    r = requests.get(f"{state['url']}/hub/api/users/{user}/server/progress", stream=True, timeout=900,
                     headers={"Authorization": f"token {state['admin_token']}", "Accept": "text/event-stream"})
    if r.status_code != 200:
        raise Fail(f"spawn-fails: the progress of {user}'s spawn answered {r.status_code} {r.text[:200]}")
    events = []
    for line in r.iter_lines(decode_unicode=True):
        if line and line.startswith("data:"):
            events.append(json.loads(line[5:]))
            if events[-1].get("failed") or events[-1].get("ready"):
                break
    r.close()
    took = time.monotonic() - t0
    last = events[-1] if events else {}
    if not last.get("failed"):
        raise Fail(f"spawn-fails: {user}'s spawn did not fail: {last}")
    missing = [w for w in words if w not in last.get("message", "")]
    if missing:
        raise Fail(f"spawn-fails: the attendee's page says {last.get('message')!r}, without {missing}")
    if took > within:
        raise Fail(f"spawn-fails: {user}'s page said why after {took:.0f} s, not within {within:.0f} s: {last.get('message')!r}")
    left = subprocess.run(state["stats_cmd"] + ["ps", "-a", "--filter", f"name=^{state['prefix']}{user}$",
                                                "--format", "{{.Names}} {{.Status}}"],
                          capture_output=True, text=True, timeout=120).stdout.strip()
    if left:
        raise Fail(f"spawn-fails: {user}'s failed spawn left a container: {left}")
    if server_state(state, user) is not None:
        raise Fail(f"spawn-fails: the hub still lists a server for {user}")
    state.setdefault("spawn_failed", {})[user] = {"seconds": took, "message": last["message"]}
    print(f"spawn-fails: {user}'s spawn failed after {took:.0f} s; the attendee's page says: {last['message']}")
    print(f"spawn-fails: no container of {user} left (podman ps -a), no server listed")


# --- out of memory ----------------------------------------------------------------------------
OOM_CELLS = [
    'import (\n\t"fmt"\n\n\t"github.com/cifarlab/cifarlab/cifarlib/nb"\n)\n\nvar _ = nb.InNotebook\n\n%%\nfmt.Println("ready")',
    # More than the container's memory, touched page by page: the out-of-memory killer ends it.
    '%%\nb := make([]byte, 8<<30)\nfor i := 0; i < len(b); i += 4096 {\n\tb[i] = 1\n}\nfmt.Println("did not run out", len(b))',
    '%%\nfmt.Println("next cell")',
]


def text_of(outputs):
    return "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream") + "".join(
        f"{o['ename']}: {o['evalue']}" for o in outputs if o["output_type"] == "error")


def cmd_oom(state, args):
    """A cell of the user's touches more memory than the container's limit: the out-of-memory
    killer ends its program (the cell's error says "signal: killed", GoNB's words), and the next
    cell begins with what happened (memory ran out, the limit) and what to do."""
    user, limit = args[0], args[1]
    rk = RemoteKernel(state, user, "oom.ipynb", "cifarlab-cpu")
    try:
        texts = [text_of(rk.execute(c)[0]) for c in OOM_CELLS]
    finally:
        rk.close()
    if "ready" not in texts[0]:
        raise Fail(f"oom: the first cell: {texts[0]!r}")
    if "signal: killed" not in texts[1] or "did not run out" in texts[1]:
        raise Fail(f"oom: the cell over the limit was not killed: {texts[1]!r}")
    want = f"nb: memory ran out (limit {limit}, memory cgroup "
    if not texts[2].startswith(want) or "To go on, use less memory" not in texts[2] or "next cell" not in texts[2]:
        raise Fail(f"oom: the next cell does not say that memory ran out ({want}...): {texts[2]!r}")
    print(f"oom: {user}'s cell over the limit ended with {texts[1].strip()!r}; the next cell said: {texts[2].splitlines()[0]}")


# --- a busy kernel and the culler -------------------------------------------------------------
BUSY_CELL = 'import "time"\n\n%%\ntime.Sleep({seconds} * time.Second)\n'


def container_url(state, user):
    """The user's server at its container's port on 127.0.0.1, not through the proxy: a request
    there is no proxy activity, which the hub would count for the user."""
    port = subprocess.run(state["stats_cmd"] + ["port", state["prefix"] + user, "8888"], capture_output=True,
                          text=True, timeout=60).stdout.split()
    if not port:
        raise Fail(f"{user}'s container has no published port")
    return f"http://{port[0]}/user/{user}"


def kernel_model(state, user, b):
    """The busy kernel's model (execution_state, last_activity), asked at the container's port
    found when it started (podman's CLI waits while the engine removes a culled container) and
    without counting as activity (no_track_activity)."""
    r = requests.get(f"{b['url']}/api/kernels/{b['kernel']}?no_track_activity=1",
                     headers={"Authorization": f"token {state['tokens'][user]}"}, timeout=60)
    if r.status_code != 200:
        raise Fail(f"{user}'s kernel {b['kernel']}: {r.status_code} {r.text[:200]}")
    return r.json()


def cmd_busy(state, args):
    """The user's kernel runs a cell that sleeps SECONDS and prints nothing; once the kernel says
    it is busy, the client closes its websocket (the session and kernel stay), so nothing but the
    running cell is left to show the server is in use."""
    user, seconds = args[0], int(args[1])
    rk = RemoteKernel(state, user, "busy.ipynb", "cifarlab-cpu")
    msg_id = rk.send_execute(BUSY_CELL.format(seconds=seconds))
    t0 = time.monotonic()
    while True:
        if time.monotonic() - t0 > 300:
            raise Fail(f"busy: {user}'s kernel did not say busy within 300 s")
        m = json.loads(rk.ws.recv())
        if m.get("parent_header", {}).get("msg_id") == msg_id and m["msg_type"] == "status" \
                and m["content"]["execution_state"] == "busy":
            break
    rk.ws.close()
    state.setdefault("busy", {})[user] = {"kernel": rk.kernel_id, "seconds": seconds, "started": time.time(),
                                          "url": container_url(state, user)}
    print(f"busy: {user}'s kernel {rk.kernel_id} runs a silent cell of {seconds} s; its client has disconnected")


def cmd_kept_while_busy(state, args):
    """Polls every 3 s, up to SECONDS, until the user's busy kernel is idle: the server must be
    there, not stopping, at every poll. Records when the kernel went idle."""
    user, limit = args[0], float(args[1])
    b = state["busy"][user]
    t0 = time.monotonic()
    polls = 0
    while time.monotonic() - t0 < limit:
        srv = server_state(state, user)
        if srv is None or srv.get("pending") == "stop":
            raise Fail(f"kept-while-busy: {user}'s server was culled while its kernel ran a cell "
                       f"({time.time() - b['started']:.0f} s into its {b['seconds']} s cell): {srv}")
        t = time.monotonic()
        k = kernel_model(state, user, b)
        polls += 1
        if polls % 10 == 1 or time.monotonic() - t > 5:
            print(f"  kept-while-busy: poll {polls} at {time.monotonic() - t0:.0f} s: server running, kernel "
                  f"{k['execution_state']} (asked in {time.monotonic() - t:.1f} s)", flush=True)
        if k["execution_state"] == "idle":
            # When it went idle: its last message (the idle status), as the server recorded it.
            b["idle_at"] = datetime.datetime.fromisoformat(k["last_activity"].replace("Z", "+00:00")).timestamp()
            print(f"kept-while-busy: {user}'s server stayed while its kernel was busy "
                  f"({b['idle_at'] - b['started']:.0f} s, {polls} polls); the kernel is idle now")
            return
        time.sleep(3)
    raise Fail(f"kept-while-busy: {user}'s kernel still busy after {limit:.0f} s")


def cmd_culled_after_idle(state, args):
    """Once the user's kernel went idle, the culler stops the server after TIMEOUT seconds of
    inactivity and within one more culling period (EVERY, plus 30 s of slack for a loaded hub)."""
    user, timeout, every = args[0], float(args[1]), float(args[2])
    idle_at = state["busy"][user]["idle_at"]
    while True:
        srv = server_state(state, user)
        waited = time.time() - idle_at
        if srv is None or srv.get("pending") == "stop":
            break
        if waited > timeout + every + 30:
            raise Fail(f"culled-after-idle: {user}'s server still running {waited:.0f} s after its kernel went idle")
        time.sleep(2)
    if waited < timeout:
        raise Fail(f"culled-after-idle: {user}'s server was culled {waited:.0f} s after its kernel went idle, "
                   f"before the timeout of {timeout:.0f} s")
    print(f"culled-after-idle: {user}'s server was culled {waited:.0f} s after its kernel went idle "
          f"(timeout {timeout:.0f} s, culling every {every:.0f} s)")


def server_doings(state, user, url):
    """What the user's server says it did last, asked at its container's port without counting as
    activity: its kernels' last activity, its folder's newest change, and its own last_activity
    (which every request of an open tab refreshes)."""
    h = {"Authorization": f"token {state['tokens'][user]}"}
    kernels = requests.get(f"{url}/api/kernels?no_track_activity=1", headers=h, timeout=30).json()
    folder = requests.get(f"{url}/api/contents?no_track_activity=1&content=1", headers=h, timeout=30).json()
    status = requests.get(f"{url}/api/status?no_track_activity=1", headers=h, timeout=30).json()
    ts = lambda t: datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()  # noqa: E731
    did = [ts(k["last_activity"]) for k in kernels if k.get("last_activity")]
    did += [ts(f["last_modified"]) for f in folder.get("content") or [] if f.get("last_modified")]
    return {"kernels": len(kernels), "busy": sum(k.get("execution_state") == "busy" for k in kernels),
            "did": max(did) if did else None, "requested": ts(status["last_activity"]) if status.get("last_activity") else None}


def cmd_culled_with_tab(state, args):
    """The user left a JupyterLab tab open on an idle notebook (docker/hub/tab.mjs, pid TABPID,
    its events in EVENTS): the server is culled TIMEOUT seconds after it last did something (a
    kernel message, a saved file), within one more culling period (EVERY, plus 30 s for a loaded
    hub), while the tab still runs and still polls (the server's own last_activity stays fresh)."""
    user, timeout, every, tab_pid, events = args[0], float(args[1]), float(args[2]), int(args[3]), args[4]
    url = container_url(state, user)
    t0 = time.monotonic()
    did = requested = None
    while True:
        if time.monotonic() - t0 > timeout + every + 600:
            raise Fail(f"culled-with-tab: {user}'s server still runs {time.monotonic() - t0:.0f} s after this step began")
        srv = server_state(state, user)
        if srv is None or srv.get("pending") == "stop":
            break
        try:
            d = server_doings(state, user, url)
        except (requests.RequestException, ValueError):
            time.sleep(2)
            continue
        if d["busy"]:
            raise Fail(f"culled-with-tab: {user}'s kernel is busy; the tab was to leave it idle")
        did, requested = d["did"] or did, d["requested"] or requested
        if did and time.time() - did > timeout + every + 30:
            raise Fail(f"culled-with-tab: {user}'s server still runs {time.time() - did:.0f} s after it last did something "
                       f"(timeout {timeout:.0f} s), its tab open and polling ({time.time() - (requested or did):.0f} s ago)")
        time.sleep(2)
    culled = time.time()
    try:
        os.kill(tab_pid, 0)
    except OSError:
        raise Fail(f"culled-with-tab: the tab (pid {tab_pid}) had ended before {user}'s server was culled") from None
    lines = [json.loads(x) for x in open(events) if x.strip()]
    if not lines or lines[0]["event"] != "open":
        raise Fail(f"culled-with-tab: the tab never opened the notebook: {lines[:3]}")
    if did is None or requested is None:
        raise Fail(f"culled-with-tab: {user}'s server was culled before it was asked what it did")
    idle, polled = culled - did, culled - requested
    print(f"culled-with-tab: {user}'s server was culled {idle:.0f} s after it last did something (a kernel message or "
          f"a saved file), with its tab open and polling ({polled:.0f} s before the cull; {len(lines)} tab events; "
          f"timeout {timeout:.0f} s, culling every {every:.0f} s)")
    if idle < timeout - 2:
        raise Fail(f"culled-with-tab: culled {idle:.0f} s after its last activity, before the timeout of {timeout:.0f} s")
    if idle > timeout + every + 30:
        raise Fail(f"culled-with-tab: culled {idle:.0f} s after its last activity, later than the timeout and a culling period")
    if polled > timeout:
        raise Fail(f"culled-with-tab: the tab had not polled for {polled:.0f} s: it did not stand for an open tab")


def cmd_report(state, _args):
    took = state.get("start_seconds", {})
    if took:
        t = sorted(took.values())
        print(f"Servers started at once: {len(t)} ({' '.join(state.get('stats_cmd', [])[1:])}); ready after "
              f"{t[0]:.0f} s (first), {statistics.median(t):.0f} s (median), {t[-1]:.0f} s (last)")
        print()
    runs = state.get("runs", {})
    if not runs:
        return
    report_training(runs)
    print("| run | users | notebooks passed | wall (s) | cells | cell p50 (s) | cell p95 (s) | notebook wall p50 (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, run in runs.items():
        res = run["results"]
        lat = [c for r in res for c in r["cells"]]
        walls = [r["wall"] for r in res if "wall" in r]
        print(f"| {label} | {len(run['users'])} | {sum(r['ok'] for r in res)}/{len(res)} | {run['wall']:.0f} | "
              f"{len(lat)} | {pct(lat, 50):.2f} | {pct(lat, 95):.2f} | {pct(walls, 50):.1f} |")
    print()
    print("CPU in cores (100% = one core), from the container's CPU time between samples 5 s apart;")
    print("memory as podman stats reports it (the container's cgroup: every process, page cache included).")
    print()
    print("| run | container | samples | CPU mean (%) | CPU peak (%) | CPU time (s) | memory mean (MB) | memory peak (MB) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, run in runs.items():
        by = {}
        for s in run["samples"]:
            if "name" in s:
                by.setdefault(s["name"], []).append(s)
        for name, ss in sorted(by.items()):
            cpu = [100 * (parse_duration(b["cpu_time"]) - parse_duration(a["cpu_time"])) / (b["t"] - a["t"])
                   for a, b in zip(ss, ss[1:]) if b["t"] > a["t"]] or [0.0]
            used = parse_duration(ss[-1]["cpu_time"]) - parse_duration(ss[0]["cpu_time"])
            mem = [parse_mem(s["mem"]) / 1e6 for s in ss]
            print(f"| {label} | {name} | {len(ss)} | {statistics.mean(cpu):.0f} | {max(cpu):.0f} | {used:.0f} | "
                  f"{statistics.mean(mem):.0f} | {max(mem):.0f} |")


def report_training(runs):
    """The compile cache's table: notebook 01's training cell in each run, per user at once."""
    rows = [(label, run, [r["training"] for r in run["results"] if r["notebook"] == NOTEBOOKS[0] and r.get("training")])
            for label, run in runs.items()]
    rows = [row for row in rows if row[2]]
    if not rows:
        return
    print("Notebook 01's training cell (150 steps), each user in a new kernel; cell: execute_request to idle (GoNB's build "
          "of the cell included); trained: the run's own time; programs: the timeline's compile or load of each program.")
    print()
    print("| run | users at once | programs | cell p50 (s) | cell max (s) | trained p50 (s) | programs p50 (s) | programs max (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, run, ts in rows:
        kinds = sorted({("compiled" if t["compiled"] else "") + ("/" if t["compiled"] and t["loaded"] else "") +
                        ("loaded" if t["loaded"] else "") for t in ts})
        prog = [sum(t["compiled"].values()) + sum(t["loaded"].values()) for t in ts]
        cell = [t["cell"] for t in ts]
        trained = [t["trained"] for t in ts if t.get("trained") is not None]
        print(f"| {label} | {len(run['users'])} | {', '.join(kinds)} | {pct(cell, 50):.1f} | {max(cell):.1f} | "
              f"{pct(trained, 50):.1f} | {pct(prog, 50):.2f} | {max(prog):.2f} |")
    print()


def parse_duration(text):
    """Seconds in a Go duration as podman prints it ("1m41.41s", "850ms")."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    return sum(float(n) * units[u] for n, u in re.findall(r"([0-9.]+)(h|ms|us|µs|ns|m|s)", text or ""))


UNITS = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_mem(text):
    """Bytes used in podman's "429.2MB / 3.221GB"."""
    m = re.match(r"([0-9.]+)\s*([a-zA-Z]*)", str(text or "0").split("/")[0].strip())
    return float(m.group(1)) * UNITS.get(m.group(2).lower(), 1) if m else 0.0


COMMANDS = {"signup": cmd_signup, "users": cmd_users, "start": cmd_start, "run": cmd_run,
            "isolation": cmd_isolation, "mark": cmd_mark, "check-mark": cmd_check_mark, "restart": cmd_restart,
            "wait-culled": cmd_wait_culled, "report": cmd_report, "spawn-fails": cmd_spawn_fails, "busy": cmd_busy, "oom": cmd_oom,
            "kept-while-busy": cmd_kept_while_busy, "culled-after-idle": cmd_culled_after_idle,
            "culled-with-tab": cmd_culled_with_tab}


def main(argv):
    if len(argv) < 3 or argv[2] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    path, cmd, args = argv[1], argv[2], argv[3:]
    state = load(path)
    try:
        COMMANDS[cmd](state, args)
    except Fail as e:
        print(f"loadtest {cmd}: FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        save(path, state)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
