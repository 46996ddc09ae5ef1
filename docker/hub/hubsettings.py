"""The settings of docker/hub/jupyterhub_config.py, read from CIFARLAB_HUB_* environment variables.

Every variable is optional except CIFARLAB_HUB_SIGNUP_CODE; docker/README.md ("A workshop with
JupyterHub") lists them. Only the standard library (and DockerSpawner's docker package, for
Docker's bridge) is imported, so that docker/hub/z2jh/validate.py can read the defaults too.
"""

import dataclasses
import math
import os

# Idle culling: a server idle this long is stopped (z2jh/values.yaml's cull.timeout is the same).
DEFAULT_CULL_TIMEOUT = 3600

# The memory an attendee running notebooks 01-04 peaks at, measured (docker/hub/RESULTS.md: 1.7-2.5
# GB per container, podman stats, every process and the page cache): the capacity line counts
# attendees at it and never advises a limit under it.
PEAK_BYTES = 2.5e9

# The compile cache (docs/compile-cache.md): the image's shared layer of compiled programs (notebook
# 01's, compiled at image build: docker/Dockerfile), and where a host's folder (CIFARLAB_HUB_COMPILE_CACHE,
# filled before the event with `cifarlab cache warm`) is mounted, read-only, in every server.
IMAGE_COMPILE_CACHE = "/opt/cifarlab/compile-cache"
HOST_COMPILE_CACHE_MOUNT = "/srv/cifarlab/compile-cache"

# What a server needs free on the machine to start (CIFARLAB_HUB_START_MEM): JupyterLab, the entry
# point's kernel install and a first kernel; a spawn on a machine with less is refused at once.
DEFAULT_START_MEM = "1G"


class SettingsError(ValueError):
    """A CIFARLAB_HUB_* variable has a value the hub cannot use; the message names it and the fix."""


def _env_float(env, name, default, low, high):
    raw = env.get(name, "")
    if raw == "":
        return default
    try:
        v = float(raw)
    except ValueError:
        raise SettingsError(f"cifarlab hub: {name}={raw!r} is not a number") from None
    if not low <= v <= high:
        raise SettingsError(f"cifarlab hub: {name}={raw} is outside [{low}, {high}]")
    return v


@dataclasses.dataclass
class Settings:
    image: str
    public_url: str
    hub_port: int
    proxy_api_port: int
    ssl_cert: str
    ssl_key: str
    state_dir: str
    authenticator_class: str
    signup_code: str
    admin_users: list
    engine: str
    container_prefix: str
    volume_prefix: str
    cpu_limit: float
    mem_limit: str
    pids_limit: int
    ulimits: list
    gpu: str
    gpu_mem_fraction: float
    cull_timeout: int
    cull_every: int
    start_timeout: int
    start_mem: int = 0
    docker_bridge_gateway: str = ""
    compile_cache: str = ""

    @property
    def network_mode(self):
        # podman (rootful): slirp4netns gives each container its own network namespace, publishes
        # the server's port on the host's 127.0.0.1 and lets the container reach the host's
        # loopback (the hub's API) at 10.0.2.2. Docker: its default bridge.
        if self.engine == "podman":
            return "slirp4netns:allow_host_loopback=true"
        return "bridge"

    @property
    def hub_bind_url(self):
        if self.engine == "podman":
            return f"http://127.0.0.1:{self.hub_port}"
        # Docker's bridge: the containers reach the host at the bridge's gateway (docker0).
        return f"http://{self.docker_bridge_gateway or '172.17.0.1'}:{self.hub_port}"

    @property
    def spawner_hub_connect_url(self):
        if self.engine == "podman":
            return f"http://10.0.2.2:{self.hub_port}"
        return ""

    @property
    def activity_interval(self):
        """Seconds between activity reports: a quarter of the culling timeout, at most 300."""
        return max(5, min(300, self.cull_timeout // 4))

    @property
    def cuda_backend(self):
        """The CUDA kernel's GOMLX_BACKEND: each kernel's XLA allocator capped at its share."""
        return f"xla:cuda,preallocate=false,memory_fraction={self.gpu_mem_fraction:g}"

    def environment(self):
        """The environment of every user container (the image's entry point reads it)."""
        env = {
            "CIFARLAB_MODE": "gpu" if self.gpu != "none" else "cpu",
            "CIFARLAB_CUDA_BACKEND": self.cuda_backend,
            "JUPYTERHUB_ACTIVITY_INTERVAL": str(self.activity_interval),
        }
        if self.compile_cache:
            # The host's programs first, then the image's: both read-only, under each attendee's own folder.
            env["CIFARLAB_COMPILE_CACHE_SHARED"] = f"{HOST_COMPILE_CACHE_MOUNT}:{IMAGE_COMPILE_CACHE}"
        return env

    def read_only_volumes(self):
        """DockerSpawner's read_only_volumes: the host's compile cache folder, when there is one."""
        return {self.compile_cache: HOST_COMPILE_CACHE_MOUNT} if self.compile_cache else {}

    def host_config(self):
        """DockerSpawner's extra_host_config: pids, ulimits and the GPU."""
        # No auto_remove: a container that exits while its server starts keeps its log until the
        # spawner has read its last lines (docker/hub/cifarlab_spawner.py), which then removes it.
        hc = {"pids_limit": self.pids_limit, "auto_remove": False}
        if self.ulimits:
            hc["ulimits"] = [{"Name": n, "Soft": s, "Hard": h} for n, s, h in self.ulimits]
        if self.gpu != "none":
            req = {"Driver": "nvidia", "Capabilities": [["gpu"]]}
            if self.gpu == "all":
                req["Count"] = -1
            else:
                req["DeviceIDs"] = self.gpu.split(",")
            hc["device_requests"] = [req]
        return hc


def _ulimits(env):
    raw = env.get("CIFARLAB_HUB_ULIMITS", "")
    out = []
    for item in filter(None, (x.strip() for x in raw.split(","))):
        try:
            name, limits = item.split("=")
            soft, hard = (int(x) for x in limits.split(":"))
        except ValueError:
            raise SettingsError(
                f"cifarlab hub: CIFARLAB_HUB_ULIMITS item {item!r}: write NAME=SOFT:HARD, e.g. nofile=16384:16384"
            ) from None
        out.append((name, soft, hard))
    return out


def _gpu(env):
    gpu = env.get("CIFARLAB_HUB_GPU", "auto")
    if gpu == "auto":
        return "all" if os.path.exists("/dev/nvidia0") else "none"
    if gpu != "none" and gpu != "all" and not all(x.isdigit() for x in gpu.split(",")):
        raise SettingsError(f"cifarlab hub: CIFARLAB_HUB_GPU={gpu!r}: use auto, none, all or device numbers like 0 or 0,1")
    return gpu


def _docker_bridge_gateway(env):
    """The gateway of Docker's default bridge (docker0), where containers reach the host."""
    import docker  # DockerSpawner's dependency

    try:
        net = docker.from_env().api.inspect_network("bridge")
        return net["IPAM"]["Config"][0]["Gateway"]
    except Exception as e:  # noqa: BLE001 (any failure: fall back to Docker's usual address)
        print(f"cifarlab hub: could not read Docker's bridge gateway ({e}); using 172.17.0.1")
        return "172.17.0.1"


def _mem_bytes(text):
    """Bytes in a Docker memory size ("4G", "512m", "3221225472"); None when it is not one."""
    units = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    t = text.strip().lower()
    unit = t[-1] if t and t[-1] in "bkmgt" else ""
    try:
        return int(float(t[: len(t) - len(unit)]) * units[unit])
    except ValueError:
        return None


def capacity_line(env, host_cpus, host_mem):
    """One line for the organiser: what the per-user limits add up to for CIFARLAB_HUB_USERS, how
    many attendees this machine holds at the measured per-user peak (PEAK_BYTES) and at the memory
    limit set (in 90% of its memory: the rest for the hub, the proxy and the page cache), and what
    to set when they do not fit. It never advises a limit under the peak."""
    users = int(_env_float(env, "CIFARLAB_HUB_USERS", 30, 1, 1000))
    cpu = _env_float(env, "CIFARLAB_HUB_CPU", 2.0, 0.1, 1024)
    mem_text = env.get("CIFARLAB_HUB_MEM", "4G")
    mem = _mem_bytes(mem_text)
    if mem is None:
        raise SettingsError(f"cifarlab hub: CIFARLAB_HUB_MEM={mem_text!r} is not a size such as 4G or 512m")
    gib = 2**30
    usable = 0.9 * host_mem
    at_peak, at_limit = int(usable // PEAK_BYTES), int(usable // mem)
    line = (f"cifarlab hub: capacity: {users} users x ({cpu:g} CPU, {mem_text}) = {users * cpu:g} CPUs and "
            f"{users * mem / gib:.0f} GiB of limits; this machine has {host_cpus} CPUs and {host_mem / gib:.0f} GiB: "
            f"it holds {at_peak} attendees at the measured peak of {PEAK_BYTES / 1e9:g} GB each (notebooks 01-04) "
            f"and {at_limit} at the limit of {mem_text} each")
    peak_g = math.ceil(PEAK_BYTES / gib * 10) / 10  # the peak as a limit Docker takes (G: GiB)
    if mem < PEAK_BYTES:
        return line + (f"; CIFARLAB_HUB_MEM={mem_text} is under that peak: attendees running notebooks 01-04 run out of "
                       f"memory; set CIFARLAB_HUB_MEM={peak_g:g}G or more (docker/README.md, 'Capacity')")
    if users <= at_limit:
        if users * cpu > host_cpus:
            line += " (CPU limits are caps on shared cores: attendees who run cells at once share them)"
        return line
    fit_g = math.floor(usable / users / gib * 10) / 10
    if fit_g >= peak_g:
        return line + (f": if every attendee used their limit, memory would run out; set CIFARLAB_HUB_MEM={fit_g:g}G "
                       f"(90% of the machine for {users}, above the peak) or CIFARLAB_HUB_USERS={at_limit} (docker/README.md, 'Capacity')")
    return line + (f": {users} attendees do not fit at the peak; set CIFARLAB_HUB_USERS={int(usable // (peak_g * gib))} "
                   f"with CIFARLAB_HUB_MEM={peak_g:g}G, or use a machine with more memory (docker/README.md, 'Capacity')")


def _start_mem(env):
    text = env.get("CIFARLAB_HUB_START_MEM", DEFAULT_START_MEM)
    n = _mem_bytes(text)
    if n is None or n < 0:
        raise SettingsError(f"cifarlab hub: CIFARLAB_HUB_START_MEM={text!r} is not a size such as 1G or 512m (0: no check)")
    return n


def _compile_cache(env):
    """CIFARLAB_HUB_COMPILE_CACHE: a host folder of compiled programs that every server reads, which
    only its owner can write (the lab refuses a folder that others can write: a program put there would
    run in every attendee's kernel)."""
    path = env.get("CIFARLAB_HUB_COMPILE_CACHE", "")
    if not path:
        return ""
    warm = "fill it before the event with the image's `cifarlab cache warm --into` (docker/README.md, 'The compile cache at a workshop')"
    if not os.path.isabs(path):
        raise SettingsError(f"cifarlab hub: CIFARLAB_HUB_COMPILE_CACHE={path!r} is not an absolute path: give the folder's full path on this host")
    if not os.path.isdir(path):
        raise SettingsError(f"cifarlab hub: CIFARLAB_HUB_COMPILE_CACHE={path} is not a folder on this host; {warm}")
    mode = os.stat(path).st_mode & 0o777
    if mode & 0o022:
        raise SettingsError(f"cifarlab hub: CIFARLAB_HUB_COMPILE_CACHE={path} is writable by other users (mode {mode:04o}): "
                            f"the lab would refuse it (a program someone put there would run in every attendee's kernel); "
                            f"chmod go-w {path} (cifarlab cache warm --into leaves it 0755)")
    return path


def settings_from_env(env):
    """Settings from CIFARLAB_HUB_* variables; a bad value raises SettingsError naming it."""
    auth = env.get("CIFARLAB_HUB_AUTH", "native")
    if auth not in ("native", "dummy"):
        raise SettingsError(f"cifarlab hub: CIFARLAB_HUB_AUTH={auth!r}: use native (workshops) or dummy (tests)")
    code = env.get("CIFARLAB_HUB_SIGNUP_CODE", "")
    if len(code) < 8:
        raise SettingsError(
            "cifarlab hub: set CIFARLAB_HUB_SIGNUP_CODE to a code of 8 or more characters that you hand "
            "to the room (attendees need it to sign up; with CIFARLAB_HUB_AUTH=dummy it is the password)"
        )
    users = _env_float(env, "CIFARLAB_HUB_USERS", 30, 1, 1000)
    cull = int(_env_float(env, "CIFARLAB_HUB_CULL_TIMEOUT", DEFAULT_CULL_TIMEOUT, 30, 7 * 86400))
    engine = env.get("CIFARLAB_HUB_ENGINE", "docker")
    if engine not in ("docker", "podman"):
        raise SettingsError(f"cifarlab hub: CIFARLAB_HUB_ENGINE={engine!r}: use docker or podman")
    ip = env.get("CIFARLAB_HUB_IP", "127.0.0.1")
    port = int(_env_float(env, "CIFARLAB_HUB_PORT", 8000, 1, 65535))
    cert, key = env.get("CIFARLAB_HUB_SSL_CERT", ""), env.get("CIFARLAB_HUB_SSL_KEY", "")
    if bool(cert) != bool(key):
        raise SettingsError("cifarlab hub: set both CIFARLAB_HUB_SSL_CERT and CIFARLAB_HUB_SSL_KEY, or neither")
    s = Settings(
        image=env.get("CIFARLAB_HUB_IMAGE", "cifarlab:workshop"),
        public_url=f"{'https' if cert else 'http'}://{ip}:{port}",
        hub_port=int(_env_float(env, "CIFARLAB_HUB_API_PORT", 8081, 1, 65535)),
        proxy_api_port=int(_env_float(env, "CIFARLAB_HUB_PROXY_API_PORT", 8001, 1, 65535)),
        ssl_cert=cert,
        ssl_key=key,
        state_dir=env.get("CIFARLAB_HUB_STATE") or os.path.expanduser("~/.local/share/cifarlab-hub"),
        authenticator_class="cifarlab_hub.WorkshopAuthenticator" if auth == "native" else "dummy",
        signup_code=code,
        admin_users=[u for u in env.get("CIFARLAB_HUB_ADMINS", "admin").split(",") if u],
        engine=engine,
        container_prefix=env.get("CIFARLAB_HUB_PREFIX", "cifarlab-hub-"),
        volume_prefix=env.get("CIFARLAB_HUB_PREFIX", "cifarlab-hub-") + "work-",
        cpu_limit=_env_float(env, "CIFARLAB_HUB_CPU", 2.0, 0.1, 1024),
        mem_limit=env.get("CIFARLAB_HUB_MEM", "4G"),
        pids_limit=int(_env_float(env, "CIFARLAB_HUB_PIDS", 4096, 64, 1 << 22)),
        ulimits=_ulimits(env),
        gpu=_gpu(env),
        gpu_mem_fraction=_env_float(env, "CIFARLAB_HUB_GPU_MEM_FRACTION", round(0.9 / users, 4), 0.001, 1),
        cull_timeout=cull,
        cull_every=int(_env_float(env, "CIFARLAB_HUB_CULL_EVERY", max(10, min(300, cull // 4)), 5, 3600)),
        start_timeout=int(_env_float(env, "CIFARLAB_HUB_START_TIMEOUT", 300, 30, 3600)),
        start_mem=_start_mem(env),
        compile_cache=_compile_cache(env),
    )
    if engine == "docker":
        s.docker_bridge_gateway = _docker_bridge_gateway(env)
    return s


if __name__ == "__main__":
    # docker/hub/start.sh: the capacity line, or the settings' error, before the hub starts.
    import sys

    try:
        settings_from_env({**os.environ, "CIFARLAB_HUB_ENGINE": "podman"})
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        print(capacity_line(os.environ, os.cpu_count(), pages), file=sys.stderr)
    except SettingsError as e:
        sys.exit(str(e))
