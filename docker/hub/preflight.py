"""What docker/hub/start.sh checks through the container engine's API before the hub starts, so
that no attendee's first spawn finds out (run with the hub's venv, DOCKER_HOST set to the engine
DockerSpawner will use: Docker's, or the podman service start.sh started):

1. the image (CIFARLAB_HUB_IMAGE) is in the engine's storage;
2. the storage: its driver is said in one line; under vfs every server is a full copy of the image
   (a warning, the test server below is skipped: it would copy the image too);
3. a test server of the image, made as DockerSpawner makes the servers (the same environment,
   network, limits, memory and read-only compile cache folder, jupyterhub-singleuser's path of the
   entry point, `--version` instead of serving) must get through the image's entry point on this
   storage: an image that renames a folder of its own layers fails here on overlay storage without
   redirect_dir (EXDEV), as every spawn would. Its exit code and last lines are said, with the fix
   (docker/hub/spawnfaults.py). What its entry point said of the compile cache (`cifarlab cache
   check`: how many of the shared programs were compiled for this host's CPU) is passed on, with a
   warning when none were: then every attendee compiles notebook 01's programs.

Then the sign-up code, and that the organiser signs up as the admin first. Exit status 2 when
the hub cannot serve anyone; the message says why and the fix.
"""

import os
import sys
import time

import docker

from hubsettings import SettingsError, settings_from_env
from spawnfaults import exit_fault

LAST_LINES = 15


def say(msg):
    print(f"cifarlab hub: {msg}", file=sys.stderr, flush=True)


def die(msg):
    say(msg)
    sys.exit(2)


def check_image(client, image):
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        die(f"the image {image} is not in the engine's storage: build it (docker build -f docker/Dockerfile -t {image} ., "
            f"or podman build) or load it (docker load -i FILE, podman load -i FILE), or name the storage that holds it "
            f"(CIFARLAB_HUB_PODMAN_ARGS, docker/README.md)")
    except docker.errors.DockerException as e:
        die(f"the container engine does not answer: {e}")


def check_storage(client):
    """The storage driver, said in one line; returns it."""
    try:
        info = client.info()
    except docker.errors.DockerException as e:
        die(f"the container engine cannot say what storage it uses ({e}): fix its storage (podman info, docker info)")
    driver = info.get("Driver", "?")
    root = info.get("DockerRootDir", "")
    if driver == "vfs":
        say(f"storage: vfs{f' in {root}' if root else ''}: every server is a full copy of the image (minutes and "
            f"gigabytes of disk per spawn); use overlay for a workshop (docker/README.md, 'Storage')")
    else:
        say(f"storage: {driver}{f' in {root}' if root else ''}")
    return driver


def test_server(client, s):
    """Starts a test server of the image as the hub would, until its entry point is through."""
    name = f"{s.container_prefix}preflight-{os.getpid()}"
    env = {**s.environment(), "JUPYTERHUB_API_TOKEN": "preflight", "JUPYTERHUB_USER": "preflight"}
    hc = {**s.host_config(), "mem_limit": s.mem_limit, "network_mode": s.network_mode}
    if s.read_only_volumes():
        hc["binds"] = {host: {"bind": ctr, "mode": "ro"} for host, ctr in s.read_only_volumes().items()}
    t0 = time.monotonic()
    ctr = client.api.create_container(s.image, command=["lab", "--version"], environment=env, name=name,
                                      healthcheck={"test": ["NONE"]},  # as the servers (jupyterhub_config.py)
                                      host_config=client.api.create_host_config(**hc))
    try:
        client.api.start(ctr["Id"])
        code = client.api.wait(ctr["Id"], timeout=s.start_timeout).get("StatusCode")
        inspected = client.api.inspect_container(ctr["Id"])
        lines = client.api.logs(ctr["Id"]).decode("utf-8", "replace").splitlines()
    finally:
        client.api.remove_container(ctr["Id"], force=True)
    if code != 0:
        f = exit_fault(code, bool(inspected["State"].get("OOMKilled")), lines[-LAST_LINES:], inspected["HostConfig"].get("Memory") or 0)
        die(f"a test server of {s.image} does not start on this machine: {f.what}\n  fix: {f.fix}\n  {f.detail}")
    say(f"a test server of {s.image} got through its entry point on this storage in {time.monotonic() - t0:.1f} s")
    say_compile_cache(lines, s)


def say_compile_cache(lines, s):
    """Passes on what the test server's entry point said of the compile cache (`cifarlab cache
    check`), with what it means for the attendees when the shared programs do not serve this host."""
    said = [line.split("cifarlab: ", 1)[1] for line in lines if "compile cache: " in line and "cifarlab: " in line]
    if not said:
        say(f"the servers' compile cache: {s.image}'s entry point said nothing of it (an image built before the "
            f"compile cache's shared layer: every attendee compiles notebook 01's programs)")
        return
    line = said[-1]
    warning = line.startswith("WARNING: ")
    say(f"{'WARNING: ' if warning else ''}the servers' {line.removeprefix('WARNING: ')}")
    if warning:
        say("so every attendee compiles notebook 01's programs (seconds each, all at once): build the image on a machine "
            "with this host's CPU, or fill a folder on this host and set CIFARLAB_HUB_COMPILE_CACHE (docker/README.md, "
            "'The compile cache at a workshop')")


def main():
    try:
        s = settings_from_env(os.environ)
    except SettingsError as e:
        die(str(e).removeprefix("cifarlab hub: "))
    client = docker.from_env(timeout=s.start_timeout)
    check_image(client, s.image)
    if check_storage(client) != "vfs":
        test_server(client, s)
    admins = " and ".join(s.admin_users) or "the admin"
    say(f"sign-up code: {s.signup_code} (hand it to the room). Sign up as {admins} first, at {s.public_url}/hub/signup, "
        f"before you hand the code out: whoever signs up first with an admin's name is the admin")


if __name__ == "__main__":
    main()
