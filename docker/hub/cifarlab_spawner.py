"""The workshop's spawner: DockerSpawner (one container of the cifarlab image per attendee) whose
failed starts say why at once, on the attendee's page and in the hub's log, and leave no
container behind.

- Before it makes a container it checks that this machine has the memory a server needs to start
  (CIFARLAB_HUB_START_MEM): on a full machine the attendee reads that at once.
- DockerSpawner's start() returns once the engine has started the container; JupyterHub then
  waited up to its http_timeout (300 s) for the server to answer, also for a container that had
  exited 0.7 s after its start, and its handler then failed with "InvalidStateError: Exception is
  not set" (it asks a spawn that is still waiting for its exception). Here start() returns only
  once the server answers HTTP, and raises as soon as the container stops: with its exit code and
  last lines, read before the container is removed (the hub sets no auto_remove, so an exited
  container and its log stay until they are read).
- A start the engine refuses (process limits, slirp4netns, a volume, a full disk, a missing image)
  is said in the same words, and its container (state Created: JupyterHub stops only servers that
  run) is removed.
- A server that stopped without JupyterHub stopping it (its container exited later) has its last
  lines logged, then its container removed, when JupyterHub notices.

SpawnFailed's jupyterhub_message is what JupyterHub shows on the attendee's spawn page ("Spawn
failed: ..."); the words come from docker/hub/spawnfaults.py. docker/hub/jupyterhub_config.py uses
this class; it imports DockerSpawner, so it is kept out of cifarlab_hub.py, which the Zero to
JupyterHub values load without DockerSpawner.
"""

import asyncio
import time

from dockerspawner import DockerSpawner
from jupyterhub.utils import maybe_future
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from traitlets import Integer

from spawnfaults import attendee_message, engine_fault, exit_fault, free_memory_fault, read_mem_available

# How many of an exited container's last lines the page and the log show.
LAST_LINES = 15


class SpawnFailed(Exception):
    """A server that could not start. JupyterHub shows jupyterhub_message on the attendee's page."""

    def __init__(self, user, fault):
        self.fault = fault
        self.jupyterhub_message = attendee_message(fault)
        super().__init__(f"{user}'s server could not start: {fault.what}" + (f"; fix: {fault.fix}" if fault.fix else ""))


class CifarlabSpawner(DockerSpawner):
    """DockerSpawner whose failed starts say why at once and leave no container (see the module)."""

    start_mem = Integer(
        0, config=True, help="Bytes of free memory (MemAvailable) a server needs to start (CIFARLAB_HUB_START_MEM); 0: no check."
    )

    async def start(self):
        t0 = time.monotonic()
        try:
            self._check_free_memory()
            ip, port = await super().start()
            await self._wait_until_answering(ip, port, t0)
            return ip, port
        except SpawnFailed as e:
            await self._fail(e)
        except Exception as e:  # noqa: BLE001 (every failed start is said and cleaned up the same way)
            await self._fail(SpawnFailed(self.user.name, engine_fault(getattr(e, "explanation", None) or e, self.image)))

    def _check_free_memory(self):
        available = read_mem_available()
        if self.start_mem and available is not None and available < self.start_mem:
            raise SpawnFailed(self.user.name, free_memory_fault(available, self.start_mem))

    async def _fail(self, e):
        f = e.fault
        self.log.error(
            "cifarlab hub: %s's server did not start: %s%s%s", self.user.name, f.what,
            f"\n  fix: {f.fix}" if f.fix else "", f"\n  {f.detail}" if f.detail else "",
        )
        await self._remove_leftover("its start failed")
        raise e

    async def _wait_until_answering(self, ip, port, t0):
        """Returns once the server at ip:port answers HTTP (any status: it is up); raises
        SpawnFailed as soon as its container is no longer running. After start_timeout it returns,
        and JupyterHub's own wait for the server decides."""
        url = f"http://{ip}:{port}{self.server.base_url}api"
        client = AsyncHTTPClient()
        while time.monotonic() - t0 < self.start_timeout - 5:  # before JupyterHub's own start timeout
            obj = await self.get_object()
            state = (obj or {}).get("State", {})
            if not state.get("Running"):
                raise SpawnFailed(self.user.name, await self._exit_fault(obj))
            try:
                await client.fetch(HTTPRequest(url, request_timeout=5, follow_redirects=False))
                return
            except HTTPClientError as e:
                if e.code != 599:  # an HTTP answer (403, 302...): the server is up
                    return
            except OSError:
                pass  # not listening yet
            await asyncio.sleep(0.5)

    async def _exit_fault(self, obj):
        """The Fault of a container that stopped: its state and last lines (read now, before it is removed)."""
        if obj is None:
            return exit_fault("?", False, ["(the container is gone: removed by the engine before its log was read)"])
        state = obj.get("State", {})
        try:
            out = await self.docker("logs", obj["Id"], tail=LAST_LINES)
            lines = out.decode("utf-8", "replace").splitlines() if isinstance(out, bytes) else str(out).splitlines()
        except Exception as e:  # noqa: BLE001 (the reason must still be said)
            lines = [f"(its log could not be read: {e})"]
        mem_limit = obj.get("HostConfig", {}).get("Memory") or 0
        return exit_fault(state.get("ExitCode", "?"), bool(state.get("OOMKilled")), lines[-LAST_LINES:], mem_limit, read_mem_available())

    async def run_post_stop_hook(self):
        # JupyterHub calls Spawner.stop() only for a server that poll() says runs: a container
        # that exited by itself (or never ran) would stay. DockerSpawner's stop() removed the
        # ones it stopped; this says why the others stopped, then removes them.
        await self._remove_leftover("it was not running when its server stopped", log_exit=True)
        return await maybe_future(super().run_post_stop_hook())

    async def _remove_leftover(self, why, log_exit=False):
        if not self.remove:
            return
        try:
            obj = await self.get_object()
            if obj is None:
                return
            self.object_id = obj[self.object_id_key]
            state = obj.get("State", {}).get("Status", "?")
            if log_exit and state == "exited":
                f = await self._exit_fault(obj)
                self.log.warning("cifarlab hub: %s's server stopped by itself: %s\n  %s", self.user.name, f.what, f.detail)
            self.log.info("cifarlab hub: removing %s's container %s (state %s): %s", self.user.name, self.object_name, state, why)
            await self.remove_object()
        except Exception as e:  # noqa: BLE001 (cleanup must not hide the original error)
            self.log.warning("cifarlab hub: could not remove %s's container %s: %s", self.user.name, self.object_name, e)

