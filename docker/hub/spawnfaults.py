"""Why a user's server did not start, in words for the attendee and a fix for the organiser.

docker/hub/cifarlab_spawner.py calls these with what it saw: the engine's error when it refused
to create or start the container, or the container's state (exit code, out-of-memory kill) and
last lines when it exited while starting, and this machine's free memory. Only the standard
library is imported, so docker/hub/spawnfaults_test.py runs without the hub's venv.
"""

import dataclasses
import re

# Linux's resource limit numbers, as runc names them in "error setting rlimit type N".
RLIMITS = {"6": "nproc, processes", "7": "nofile, open files"}

STORAGE_FIX = (
    "the image renames a folder of its own layers at start, which overlay storage (podman's and "
    "Docker's default) refuses where the kernel's overlay redirect_dir is off (\"Invalid cross-device "
    "link\"): rebuild the image from a current cifarlab checkout (docker/README.md, \"What the container writes\"), whose "
    "kernels write only into the user's home"
)


@dataclasses.dataclass
class Fault:
    """A failed start: what (for the attendee's page), fix (the organiser's, for the hub's log),
    and detail (the engine's words or the container's last lines and exit code)."""

    what: str
    fix: str = ""
    detail: str = ""
    kind: str = "other"


# What the engine says when it refuses a container, and what the organiser does about it.
ENGINE_FAILURES = [
    (
        re.compile(r"error setting rlimit type (\d+)"),
        "rlimit",
        "the container engine cannot give the server the process limits it asks for on this host (rlimit {0})",
        "restart the hub with docker/hub/start.sh, which tries limits until some work and says which, or set "
        "lower ones, e.g. CIFARLAB_HUB_ULIMITS=nofile=16384:16384,nproc=8192:8192",
    ),
    (
        re.compile(r"could not find slirp4netns"),
        "network",
        "the container engine cannot make the server's network: slirp4netns is missing",
        "apt-get install slirp4netns (docker/hub/start.sh installs it)",
    ),
    (
        re.compile(r"no space left on device", re.I),
        "disk",
        "the disk of the container storage is full",
        "free disk space where the engine keeps its storage (podman info, docker info); under vfs storage "
        "every server is a full copy of the image (docker/README.md, \"Storage\")",
    ),
    (
        re.compile(r"mounting volume (\S+)"),
        "volume",
        "the attendee's volume {0} could not be mounted",
        "look at the volume (podman volume inspect {0}); removing it loses the attendee's notebooks",
    ),
    (
        re.compile(r"(no such image|image not known|failed to find image|404 Client Error.*images)", re.I),
        "image",
        "the image of the servers is not in the container engine's storage (removed since the hub started?)",
        "build it (docker build -f docker/Dockerfile -t {image} .) or load it (docker load -i FILE, podman load "
        "-i FILE) under the name CIFARLAB_HUB_IMAGE gives; start.sh checks it before the hub starts",
    ),
    (
        re.compile(r"cannot allocate memory", re.I),
        "memory",
        "this machine has no memory left to start the server",
        "stop idle servers (the admin page, /hub/admin) or lower CIFARLAB_HUB_USERS; see docker/README.md, \"Capacity\"",
    ),
    (
        re.compile(r"invalid cross-device link", re.I),
        "storage",
        "the image cannot run on this machine's container storage",
        STORAGE_FIX,
    ),
]


def engine_fault(message, image=""):
    """The Fault for the engine's error message (of a refused create or start)."""
    text = " ".join(str(message).split())
    for pattern, kind, what, fix in ENGINE_FAILURES:
        m = pattern.search(text)
        if m:
            groups = [f"{g}: {RLIMITS[g]}" if g in RLIMITS else g for g in m.groups()]
            return Fault(what.format(*groups), fix.format(*groups, image=image or "IMAGE"), text, kind)
    return Fault("the container engine refused to start the server", "", text)


def mib(n):
    return f"{n / 2**20:.0f} MiB"


def exit_fault(exit_code, oom_killed, lines, mem_limit=0, mem_available=None):
    """The Fault for a container that exited while its server started: its exit code, whether its
    memory cgroup's out-of-memory killer ended it, its last lines, its memory limit (bytes, 0:
    none) and this machine's available memory (bytes, None: unknown)."""
    tail = "\n".join(lines)
    detail = f"exit code {exit_code}" + (", killed by its memory cgroup's out-of-memory killer" if oom_killed else "")
    detail += ("; its last lines:\n" + tail) if tail else "; it printed nothing"
    if re.search(r"invalid cross-device link", tail, re.I):
        return Fault("the image cannot run on this machine's container storage", STORAGE_FIX, detail, "storage")
    if oom_killed:
        return Fault(
            f"memory ran out while the server started (its limit is {mib(mem_limit)})" if mem_limit
            else "memory ran out while the server started",
            "raise CIFARLAB_HUB_MEM (a user running notebooks 01-04 peaks at about 2.5 GB; docker/README.md, \"Capacity\")",
            detail, "memory")
    if exit_code == 137 and mem_available is not None and mem_available < 512 * 2**20:
        return Fault(
            f"the server was killed while it started, and this machine has only {mib(mem_available)} of memory left",
            "stop idle servers (the admin page, /hub/admin) or lower CIFARLAB_HUB_USERS; see docker/README.md, \"Capacity\"",
            detail, "memory")
    last = lines[-1].strip() if lines else ""
    return Fault(f"the server's container exited with code {exit_code} while it started" + (f": {last}" if last else ""),
                 "read the container's last lines below", detail)


def free_memory_fault(available, need):
    """The Fault for a spawn refused before its container is made: this machine has available
    bytes of memory, and a server needs need (CIFARLAB_HUB_START_MEM) to start."""
    return Fault(
        f"this machine has only {mib(available)} of memory free, and a server needs {mib(need)} to start",
        "stop idle servers (the admin page, /hub/admin, or a shorter CIFARLAB_HUB_CULL_TIMEOUT), lower "
        "CIFARLAB_HUB_USERS, or use a machine with more memory (docker/README.md, \"Capacity\"); "
        "CIFARLAB_HUB_START_MEM sets what a server needs free",
        f"MemAvailable {available} bytes < CIFARLAB_HUB_START_MEM {need} bytes", "memory")


def attendee_message(fault):
    """What the attendee's spawn page says (JupyterHub shows it after "Spawn failed:"): which fault,
    what the attendee does, the organiser's fix, and what the engine or the container said."""
    msg = f"Your server could not start: {fault.what}."
    msg += " Try again in a few minutes, or tell the organiser." if fault.kind == "memory" else " Tell the organiser."
    msg += " Nothing of yours is lost (your notebooks are on your own volume)."
    if fault.fix:
        msg += f" For the organiser: {fault.fix}."
    if fault.detail:
        msg += f" ({fault.detail})"
    return msg


def read_mem_available(path="/proc/meminfo"):
    """This machine's available memory in bytes (MemAvailable), or None when it cannot be read."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
