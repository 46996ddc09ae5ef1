"""The idle culler's decision, made with what each server itself knows (jupyterhub-idle-culler's
cull_arbiter_hook, set by docker/hub/culler_config.py).

jupyterhub-idle-culler stops a server when the hub's record of its last activity is older than
the timeout. That record lags behind the server: a server reports its activity every
JUPYTERHUB_ACTIVITY_INTERVAL seconds, an interval fixed when it started (300 s under the default
timeout of an hour), it reports nothing while the hub restarts, and a kernel that runs a long
cell without printing sends no message at all, so the server has nothing new to report. A hub
restarted with a shorter timeout therefore culled running work at its first pass.

busy_kernel_arbiter is asked only about a server that the hub's record says is idle. It asks
the server itself, with the culler's token, at the address the proxy routes it to: a kernel
that is busy (a cell running) keeps the server, and so does activity the hub has not heard of
yet (the server's own last_activity, and each kernel's). Its requests carry no_track_activity,
so asking is not activity. A server that does not answer is kept until it has not answered for
a whole timeout; then the hub's record decides, as the culler alone would.
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
    """What the server at path says of itself: its kernels that are busy, and its last activity
    (its own record: requests, kernel messages, terminals; and each kernel's)."""
    _, token = _hub_api()
    base = await server_target(path) + quote(path)
    kernels = await _get_json(f"{base}api/kernels?no_track_activity=1", token)
    status = await _get_json(f"{base}api/status?no_track_activity=1", token)
    busy = [k["id"] for k in kernels if k.get("execution_state") == "busy"]
    times = [parse_date(t) for t in [status.get("last_activity")] + [k.get("last_activity") for k in kernels] if t]
    return busy, max(times) if times else None


async def busy_kernel_arbiter(*, inactive, inactive_limit, server, **kwargs):
    """True when the server may be culled: idle by the hub's record and by its own, no kernel busy."""
    if not default_cull_arbiter(inactive=inactive, inactive_limit=inactive_limit, server=server, **kwargs):
        return False
    path = server.get("url") or ""
    try:
        busy, last = await server_activity(path)
    except Exception as e:  # noqa: BLE001 (any failure: the server could not be asked)
        since = _unreachable_since.setdefault(path, utcnow())
        waited = utcnow() - since
        if waited < timedelta(seconds=inactive_limit):
            log.warning(
                "Not culling server %s yet: it did not say whether a kernel is busy (%s); "
                "asking again at the next pass, for up to %d s", path, e, inactive_limit,
            )
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
    if last is not None and (utcnow() - last).total_seconds() < inactive_limit:
        log.info(
            "Not culling server %s: active %s ago by its own record (the hub's said %s)",
            path, utcnow() - last, inactive,
        )
        return False
    return True
