"""The workshop's spawner: DockerSpawner (one container of the cifarlab image per attendee) that
cleans up after a server that failed to start, and tells the attendee why in their own page.

DockerSpawner creates the container, then starts it. When the start fails (the engine refuses
the process limits, podman lacks slirp4netns, a volume will not mount, the disk is full),
JupyterHub stops only servers whose poll() says they run, so the container stayed behind in
state Created (a full copy of the image under podman's vfs storage), and the attendee's page
said only the engine's raw error, or "Timeout". Here a failed start removes its container and
raises SpawnFailed, whose message JupyterHub shows on the attendee's spawn page ("Spawn failed:
...") and whose log line tells the organiser the fix. A server that stopped without JupyterHub
stopping it (its container exited) is removed when JupyterHub notices, for the same reason.

docker/hub/jupyterhub_config.py uses it; it imports DockerSpawner, so it is kept out of
cifarlab_hub.py, which the Zero to JupyterHub values load without DockerSpawner.
"""

import re

from dockerspawner import DockerSpawner
from jupyterhub.utils import maybe_future

# Linux's resource limit numbers, as runc names them in "error setting rlimit type N".
RLIMITS = {"6": "nproc, processes", "7": "nofile, open files"}

# What the engine says, and what the organiser does about it (a one-line fix each).
KNOWN_FAILURES = [
    (
        re.compile(r"error setting rlimit type (\d+)"),
        "the container engine cannot give the server the process limits it asks for on this host "
        "(rlimit {0}): restart the hub with docker/hub/start.sh, which tries limits until some work and "
        "says which, or set lower ones, e.g. CIFARLAB_HUB_ULIMITS=nofile=16384:16384,nproc=8192:8192",
    ),
    (
        re.compile(r"could not find slirp4netns"),
        "podman cannot make the server's network: slirp4netns is missing (apt-get install slirp4netns; "
        "docker/hub/start.sh installs it)",
    ),
    (
        re.compile(r"no space left on device", re.I),
        "the disk of the hub's container storage is full (under podman's vfs storage every server is a "
        "full copy of the image: see docker/README.md, 'Disk and capacity')",
    ),
    (
        re.compile(r"mounting volume (\S+)"),
        "the attendee's volume {0} could not be mounted",
    ),
]


def engine_message(error):
    """The engine's own words in an error of docker-py (its explanation) or another exception."""
    text = getattr(error, "explanation", None) or str(error)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return " ".join(str(text).split())


def diagnose(error):
    """The organiser's fix for a start that failed with error, or "" when it is not a known case."""
    text = engine_message(error)
    for pattern, fix in KNOWN_FAILURES:
        m = pattern.search(text)
        if m:
            return fix.format(*(f"{g}: {RLIMITS[g]}" if g in RLIMITS else g for g in m.groups()))
    return ""


class SpawnFailed(Exception):
    """A server that could not start. JupyterHub shows jupyterhub_message on the attendee's page."""

    def __init__(self, user, cause, fix):
        self.cause, self.fix = cause, fix
        self.jupyterhub_message = (
            f"Your server could not start: {fix or cause}. Nothing of yours is lost (your notebooks are on "
            f"your own volume). Tell the organiser: the hub's log says how to fix it."
        )
        super().__init__(f"{user}'s server could not start: {cause}" + (f"; fix: {fix}" if fix else ""))


class CifarlabSpawner(DockerSpawner):
    """DockerSpawner whose failed starts leave no container behind and say why (see the module)."""

    async def start(self):
        try:
            return await super().start()
        except Exception as e:
            cause = engine_message(e)
            fix = diagnose(e)
            self.log.error(
                "cifarlab hub: %s's server did not start: %s%s", self.user.name, cause, f"\n  fix: {fix}" if fix else ""
            )
            await self._remove_leftover("its start failed")
            raise SpawnFailed(self.user.name, cause, fix) from e

    async def run_post_stop_hook(self):
        # JupyterHub calls Spawner.stop() only for a server that poll() says runs: a container
        # that exited by itself (or never ran) would stay. DockerSpawner's stop() removed the
        # ones it stopped; this removes the rest.
        await self._remove_leftover("it was not running when its server stopped")
        return await maybe_future(super().run_post_stop_hook())

    async def _remove_leftover(self, why):
        if not self.remove:
            return
        try:
            obj = await self.get_object()
            if obj is None:
                return
            self.object_id = obj[self.object_id_key]
            state = obj.get("State", {}).get("Status", "?")
            self.log.info("cifarlab hub: removing %s's container %s (state %s): %s", self.user.name, self.object_name, state, why)
            await self.remove_object()
        except Exception as e:  # noqa: BLE001 (cleanup must not hide the original error)
            self.log.warning("cifarlab hub: could not remove %s's container %s: %s", self.user.name, self.object_name, e)
