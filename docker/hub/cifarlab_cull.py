"""The idle culler's decision, made with what each server itself knows (jupyterhub-idle-culler's
cull_arbiter_hook, set by docker/hub/culler_config.py).

jupyterhub-idle-culler stops a server when the hub's record of its last activity is older than
the timeout. That record says too little and too much. Too little: it lags behind the server (a
server reports its activity every JUPYTERHUB_ACTIVITY_INTERVAL seconds, fixed when it started, and
nothing while the hub restarts), and a kernel that runs a long cell without printing sends no
message at all, so a hub restarted with a shorter timeout culled running work. Too much: a
browser tab left open on JupyterLab polls the server every few seconds (kernels, sessions,
contents), and every request counts, through the proxy and in the server's own last_activity, so
an attendee who went home with a tab open kept a seat, and its memory, for the whole workshop.

busy_kernel_arbiter therefore decides by what the server is doing, for every server at every
pass. It asks the server itself, with the culler's token, at the address the proxy routes it to,
with no_track_activity (asking is not activity):

- a kernel that is busy (a cell running) keeps the server, however long, tab or no tab;
- otherwise the server is culled once, for the timeout, none of these happened: a message of one
  of its kernels (a cell run, a completion, an interrupt), terminal input or output, a change to a
  file of its folder (JupyterLab saves an edited notebook every two minutes), its start. Requests
  of an open tab (polling, listing, opening a notebook to read) are not among them.

A server that does not answer is kept until it has not answered for a whole timeout; then the
hub's record decides, as the culler alone would.
"""

import json
import logging
import os
from datetime import timedelta
from urllib.parse import quote

from jupyterhub_idle_culler import default_cull_arbiter, parse_date, utcnow
from tornado.httpclient import AsyncHTTPClient, HTTPRequest

# jupyterhub-idle-culler's own logger (its Application's), so that these lines go where its go.
log = logging.getLogger("IdleCuller")

REQUEST_TIMEOUT = 30

# When each server the culler could not ask first failed to answer (by its URL path).
_unreachable_since = {}


def _hub_api():
    return os.environ["JUPYTERHUB_API_URL"].rstrip("/"), os.environ["JUPYTERHUB_API_TOKEN"]


async def _get_json(url, token):
    resp = await AsyncHTTPClient().fetch(
        HTTPRequest(url, headers={"Authorization": f"token {token}"}, request_timeout=REQUEST_TIMEOUT)
    )
    return json.loads(resp.body.decode("utf-8", "replace"))


async def server_target(path):
    """The address the proxy sends the server at path (/user/NAME/) to, from the hub's view of the
    proxy's routes (GET /hub/api/proxy, scope proxy)."""
    api, token = _hub_api()
    routes = await _get_json(f"{api}/proxy", token)
    route = routes.get(path)
    if not route or not route.get("target"):
        raise LookupError(f"the proxy has no route for {path}")
    return route["target"].rstrip("/")


async def server_activity(path):
    """What the server at path says of itself: its kernels that are busy, and when it last did
    something (its kernels' and terminals' last activity, the newest change to a file of its
    folder, its own start), or None when nothing it reports says."""
    _, token = _hub_api()
    base = await server_target(path) + quote(path)
    kernels = await _get_json(f"{base}api/kernels?no_track_activity=1", token)
    try:
        terminals = await _get_json(f"{base}api/terminals?no_track_activity=1", token)
    except Exception:  # noqa: BLE001 (terminals switched off: none)
        terminals = []
    folder = await _get_json(f"{base}api/contents?no_track_activity=1&content=1", token)
    status = await _get_json(f"{base}api/status?no_track_activity=1", token)
    busy = [k["id"] for k in kernels if k.get("execution_state") == "busy"]
    stamps = [k.get("last_activity") for k in kernels] + [t.get("last_activity") for t in terminals]
    stamps += [f.get("last_modified") for f in folder.get("content") or []]
    # The server's own start (when it came up; a slow spawn does not eat into the timeout).
    stamps.append(status.get("started"))
    times = [parse_date(t) for t in stamps if t]
    return busy, max(times) if times else None


async def busy_kernel_arbiter(*, inactive, inactive_limit, server, **kwargs):
    """True when the server may be culled: no kernel busy, and nothing done for inactive_limit
    seconds by its own record (kernels, terminals, files, its start); the hub's record (which an
    open tab's polling keeps fresh) decides only for a server that has not answered for as long."""
    path = server.get("url") or ""
    try:
        busy, last = await server_activity(path)
    except Exception as e:  # noqa: BLE001 (any failure: the server could not be asked)
        since = _unreachable_since.setdefault(path, utcnow())
        waited = utcnow() - since
        if waited < timedelta(seconds=inactive_limit):
            log.warning(
                "Not culling server %s yet: it did not say what it is doing (%s); "
                "asking again at the next pass, for up to %d s", path, e, inactive_limit,
            )
            return False
        if not default_cull_arbiter(inactive=inactive, inactive_limit=inactive_limit, server=server, **kwargs):
            return False
        log.warning("Culling server %s by the hub's record: it has not answered for %s (%s)", path, waited, e)
        return True
    _unreachable_since.pop(path, None)
    if busy:
        log.info(
            "Not culling server %s: %d kernel(s) busy running a cell (%s); the hub's record said inactive for %s",
            path, len(busy), ", ".join(busy), inactive,
        )
        return False
    idle = utcnow() - last if last else inactive
    if idle is None or idle.total_seconds() < inactive_limit:
        log.debug("Not culling server %s: it did something %s ago", path, idle)
        return False
    log.info(
        "Culling server %s: no kernel busy, nothing done for %s by its own record (kernels, terminals, files); "
        "the hub's record, which an open tab's requests keep fresh, said inactive for %s", path, idle, inactive,
    )
    return True
