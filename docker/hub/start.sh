#!/usr/bin/env bash
# JupyterHub for a workshop on one GPU machine, in one command (docker/README.md, "A workshop
# with JupyterHub"):
#
#   CIFARLAB_HUB_SIGNUP_CODE=... CIFARLAB_HUB_IP=0.0.0.0 docker/hub/start.sh
#   docker/hub/start.sh down             after the workshop: remove every user server's container
#                                        (their volumes, the attendees' notebooks, stay)
#   docker/hub/start.sh down --volumes   ... and remove the volumes too (cifarlab-hub-work-NAME)
#   docker/hub/start.sh down --all       ... and the state folder: accounts, passwords, tokens, the
#                                        cookie secret (the reset between two events)
#
# It installs what the hub needs when missing (the venv docker/hub/.venv from the hash-pinned
# docker/hub/requirements.txt, configurable-http-proxy from docker/hub/proxy/package-lock.json),
# finds the container engine (DOCKER_HOST; else Docker's socket; else it starts podman's Docker
# API service itself, on a socket in the state folder that only its user can open) and runs
# JupyterHub with docker/hub/jupyterhub_config.py in the foreground. On exit (Ctrl-C included)
# it stops the hub, its proxy and culler, and the podman service it started; the users' servers
# keep running (a restart of the hub loses nothing) until they are culled or `start.sh down`.
#
# Before the first spawn it checks what a user's server needs, so that an attendee does not
# find out: the image is in the engine's storage; with podman, its storage works, slirp4netns
# (installed with apt-get when missing, as root) and process limits that this host's runtime
# accepts: a test container (this host's /bin/true, no image copy) starts with podman's defaults,
# or else with the first of a few lower limits that works, which it says in one line
# (CIFARLAB_HUB_ULIMITS chooses them); then a test server of the image, started as the hub starts
# them, must get through its entry point on this storage (docker/hub/preflight.py). It writes the
# engine it chose into the state folder, where `down` reads it, and says the sign-up code.
#
# Environment (all optional but the code): CIFARLAB_HUB_SIGNUP_CODE, CIFARLAB_HUB_IMAGE,
# CIFARLAB_HUB_IP/PORT, CIFARLAB_HUB_API_PORT, CIFARLAB_HUB_PROXY_API_PORT,
# CIFARLAB_HUB_SSL_CERT/KEY, CIFARLAB_HUB_ADMINS, CIFARLAB_HUB_CPU/MEM/PIDS, CIFARLAB_HUB_START_MEM,
# CIFARLAB_HUB_GPU, CIFARLAB_HUB_USERS, CIFARLAB_HUB_GPU_MEM_FRACTION, CIFARLAB_HUB_CULL_TIMEOUT,
# CIFARLAB_HUB_STATE (default ~/.local/share/cifarlab-hub), CIFARLAB_HUB_ENGINE (docker|podman),
# CIFARLAB_HUB_PODMAN_ARGS (global podman options, e.g. "--root DIR --storage-driver vfs" for an
# image in other podman storage), CIFARLAB_HUB_ULIMITS, CIFARLAB_HUB_PREFIX, CIFARLAB_HUB_COMPILE_CACHE
# (a host folder of compiled programs, mounted read-only in every server): see docker/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
state="${CIFARLAB_HUB_STATE:-$HOME/.local/share/cifarlab-hub}"
export CIFARLAB_HUB_STATE="$state"
venv="$here/.venv"
say() { echo "cifarlab hub: $*" >&2; }
die() { say "$*"; exit 2; }

install -d -m 0700 "$state"

# --- the hub's venv and proxy, installed once (again when their pins change) -----------------
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  say "installing JupyterHub, DockerSpawner, the idle culler and NativeAuthenticator into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    --no-deps --require-hashes -r "$here/requirements.txt"
  echo "$want" > "$venv/.requirements.sha256"
fi
want="$(sha256sum "$here/proxy/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$here/proxy/node_modules/.lock.sha256" 2>/dev/null)" != "$want" ]; then
  command -v npm >/dev/null || die "npm is missing: apt-get install nodejs npm (configurable-http-proxy runs on Node.js)"
  say "installing configurable-http-proxy into $here/proxy/node_modules"
  (cd "$here/proxy" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" > "$here/proxy/node_modules/.lock.sha256"
fi

# --- the container engine --------------------------------------------------------------------
podman_args=()
# shellcheck disable=SC2206 # a list of words on purpose
[ -n "${CIFARLAB_HUB_PODMAN_ARGS:-}" ] && podman_args=(${CIFARLAB_HUB_PODMAN_ARGS})
prefix="${CIFARLAB_HUB_PREFIX:-cifarlab-hub-}"
image="${CIFARLAB_HUB_IMAGE:-cifarlab:workshop}"
engine_file="$state/engine"

# podman_log: podman's messages (its service's, and down's removals), passed on, except one it
# repeats for every server:
# podman runs an image's HEALTHCHECK with a systemd timer, and this service has no systemd to ask
# (podman 4.3 also for a healthcheck switched off through its Docker API, as the hub does). It is
# explained once instead.
podman_log() {
  local line said=0
  while IFS= read -r line; do
    case "$line" in
      *"unable to get systemd connection to"*"healthchecks"*)
        [ "$said" = 1 ] || say "podman: \"unable to get systemd connection to add healthchecks\" (said once here, not again for each server): podman runs the image's HEALTHCHECK with a systemd timer, and the podman service start.sh runs has no systemd to ask; harmless: the servers run, the hub watches them itself"
        said=1
        ;;
      *) printf '%s\n' "$line" >&2 ;;
    esac
  done
}

# `down` uses the engine that the last start chose (its file), else the one a start would choose.
if [ "${1:-}" = down ]; then
  usage="usage: start.sh down [--volumes | --all]"
  case "${2:-}" in
    "") volumes=0 all=0 ;;
    --volumes) volumes=1 all=0 ;;
    --all) volumes=1 all=1 ;;
    *) die "$usage" ;;
  esac
  [ $# -le 2 ] || die "$usage"
  if [ -f "$engine_file" ]; then
    # shellcheck disable=SC1090 # written by this script: ENGINE=... PODMAN_ARGS=... PREFIX=...
    . "$engine_file"
    # shellcheck disable=SC2206 # a list of words on purpose
    podman_args=(${PODMAN_ARGS:-})
    prefix="${PREFIX:-$prefix}"
  elif [ -n "${DOCKER_HOST:-}" ] || { [ -S /var/run/docker.sock ] && [ "${CIFARLAB_HUB_ENGINE:-docker}" = docker ]; }; then
    ENGINE=docker
  else
    ENGINE=podman
  fi
  engine_cmd() { if [ "$ENGINE" = podman ]; then podman "${podman_args[@]}" "$@"; else docker "$@"; fi; }
  command -v "$ENGINE" >/dev/null || die "down: $ENGINE is not installed (the engine $engine_file names)"
  hub_pid="$(cat "$state/jupyterhub.pid" 2>/dev/null || true)"
  if [ -n "$hub_pid" ] && grep -qs jupyterhub "/proc/$hub_pid/cmdline"; then
    die "down: the hub is still running (pid $hub_pid): stop it first (Ctrl-C in its terminal), or its culler and restarts act on what down removes"
  fi
  ids="$(engine_cmd ps -a -q --filter "name=^$prefix")"
  # shellcheck disable=SC2086 # one word per container id
  [ -z "$ids" ] || engine_cmd rm -f -t 10 $ids 2> >(podman_log) >/dev/null
  n="$(echo "$ids" | grep -c . || true)"
  if [ "$volumes" = 1 ]; then
    vols="$(engine_cmd volume ls -q --filter "name=^${prefix}work-")"
    # shellcheck disable=SC2086 # one word per volume name
    [ -z "$vols" ] || engine_cmd volume rm -f $vols >/dev/null
    say "$ENGINE: removed $n user server(s) and $(echo "$vols" | grep -c . || true) volume(s) ${prefix}work-* (the attendees' notebooks)"
  else
    say "$ENGINE: removed $n user server(s); volumes ${prefix}work-* kept (start.sh down --volumes removes them)"
  fi
  if [ "$all" = 1 ]; then
    # The reset between two events: the next start has no accounts, tokens or sessions.
    rm -rf "$state"
    say "removed the state folder $state (accounts, passwords, tokens, the cookie secret): the next start begins afresh"
  else
    say "the state folder $state (accounts, passwords, tokens, the cookie secret) is kept: start.sh down --all removes it too, the reset between two events"
  fi
  exit 0
fi
[ $# -eq 0 ] || die "usage: start.sh [down [--volumes | --all]]"

# --- the settings, and what their limits add up to on this machine (one line) -----------------
"$venv/bin/python" "$here/hubsettings.py" || exit 2

# Job control: the background processes below keep SIGINT's default action (a non-interactive
# shell would start them ignoring it, and the hub's services inherit that, so stopping the idle
# culler took the hub 30 s). They run in process groups of their own; Ctrl-C reaches this
# script, whose cleanup stops them in order.
set -m
podman_pid=""
hub_pid=""
stop_group() { # stop_group PID SECONDS: SIGTERM to PID, then SIGKILL to its process group
  local pid="$1" i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < $2 * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    say "pid $pid did not stop in $2 s: killing its process group"
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  # The hub stops its culler and proxy (about 30 s: JupyterHub waits on the culler's SIGINT).
  stop_group "$hub_pid" 60
  # podman's service finishes the requests in flight (a container removal under vfs takes long).
  stop_group "$podman_pid" 20
  [ -z "$podman_pid" ] || rm -f "$state/podman.sock"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

own_service=0
if [ -n "${DOCKER_HOST:-}" ]; then
  say "engine: DOCKER_HOST=$DOCKER_HOST (${CIFARLAB_HUB_ENGINE:=docker})"
elif [ -S /var/run/docker.sock ] && [ "${CIFARLAB_HUB_ENGINE:-docker}" = docker ]; then
  CIFARLAB_HUB_ENGINE=docker
  say "engine: Docker (/var/run/docker.sock)"
else
  command -v podman >/dev/null || die "no container engine: install Docker (and the NVIDIA Container Toolkit), or podman"
  CIFARLAB_HUB_ENGINE=podman
  own_service=1
fi
if [ "$own_service" = 1 ]; then
  # shellcheck source=docker/hub/podman-preflight.sh
  . "$here/podman-preflight.sh"
  podman_preflight
  sock="$state/podman.sock"
  rm -f "$sock"
  # --time=0: the service lives as long as this script, which ends it. It runs in the state
  # folder: conmon leaves files in its working directory (an "oom" file when a server's memory
  # ran out), which would otherwise land wherever start.sh was run from.
  (cd "$state" && exec podman "${podman_args[@]}" system service --time=0 "unix://$sock" 2> >(podman_log)) &
  podman_pid=$!
  for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
  [ -S "$sock" ] || die "podman system service did not create $sock"
  chmod 0600 "$sock"
  export DOCKER_HOST="unix://$sock"
  say "engine: podman's Docker API on $DOCKER_HOST (pid $podman_pid)"
fi
export CIFARLAB_HUB_ENGINE
# The image, the storage, and a test server of the image through the engine's API, as
# DockerSpawner will start the servers (docker-py, from the hub's venv); then the sign-up code.
"$venv/bin/python" "$here/preflight.py" || exit 2
# Only a start whose checks passed names the engine for `down`: a failed one (other storage, a
# wrong image) leaves `down` acting on the servers of the last hub that ran.
printf 'ENGINE=%q\nPODMAN_ARGS=%q\nPREFIX=%q\n' "$CIFARLAB_HUB_ENGINE" "${CIFARLAB_HUB_PODMAN_ARGS:-}" "$prefix" > "$engine_file"

cd "$state"
"$venv/bin/jupyterhub" -f "$here/jupyterhub_config.py" &
hub_pid=$!
wait "$hub_pid"
