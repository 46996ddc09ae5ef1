#!/usr/bin/env bash
# JupyterHub for a workshop on one GPU machine, in one command (docker/README.md, "A workshop
# with JupyterHub"):
#
#   CIFARLAB_HUB_SIGNUP_CODE=... CIFARLAB_HUB_IP=0.0.0.0 docker/hub/start.sh
#   docker/hub/start.sh down      stop every user server of the hub (their volumes stay)
#
# It installs what the hub needs when missing (the venv docker/hub/.venv from the hash-pinned
# docker/hub/requirements.txt, configurable-http-proxy from docker/hub/proxy/package-lock.json),
# finds the container engine (DOCKER_HOST; else Docker's socket; else it starts podman's Docker
# API service itself, on a socket in the state folder that only its user can open) and runs
# JupyterHub with docker/hub/jupyterhub_config.py in the foreground. On exit (Ctrl-C included)
# it stops the hub, its proxy and culler, and the podman service it started; the users' servers
# keep running (a restart of the hub loses nothing) until `start.sh down`.
#
# Environment (all optional but the code): CIFARLAB_HUB_SIGNUP_CODE, CIFARLAB_HUB_IMAGE,
# CIFARLAB_HUB_IP/PORT, CIFARLAB_HUB_SSL_CERT/KEY, CIFARLAB_HUB_ADMINS, CIFARLAB_HUB_CPU/MEM/PIDS,
# CIFARLAB_HUB_GPU, CIFARLAB_HUB_USERS, CIFARLAB_HUB_GPU_MEM_FRACTION, CIFARLAB_HUB_CULL_TIMEOUT,
# CIFARLAB_HUB_STATE (default ~/.local/share/cifarlab-hub), CIFARLAB_HUB_ENGINE (docker|podman),
# CIFARLAB_HUB_PODMAN_ARGS (global podman options for the service it starts, e.g. --root ...),
# CIFARLAB_HUB_ULIMITS: see docker/README.md.
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
engine_cmd() { # the engine's CLI with the hub's settings, for `down`
  if [ "${CIFARLAB_HUB_ENGINE:-}" = podman ]; then podman "${podman_args[@]}" "$@"; else docker "$@"; fi
}
if [ "${1:-}" = down ]; then
  prefix="${CIFARLAB_HUB_PREFIX:-cifarlab-hub-}"
  ids="$(engine_cmd ps -a -q --filter "name=^$prefix")"
  # shellcheck disable=SC2086 # one word per container id
  [ -z "$ids" ] || engine_cmd rm -f -t 10 $ids >/dev/null
  say "stopped $(echo "$ids" | grep -c . || true) user server(s); volumes ${prefix}work-* kept"
  exit 0
fi
[ $# -eq 0 ] || die "usage: start.sh [down]"

# Job control: the background processes below keep SIGINT's default action (a non-interactive
# shell would start them ignoring it, and the hub's services inherit that, so stopping the idle
# culler took the hub 30 s). They run in process groups of their own; Ctrl-C reaches this
# script, whose cleanup stops them in order.
set -m
podman_pid=""
hub_pid=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$hub_pid" ] && kill -0 "$hub_pid" 2>/dev/null; then
    kill -TERM "$hub_pid" 2>/dev/null || true
    wait "$hub_pid" 2>/dev/null || true
  fi
  if [ -n "$podman_pid" ] && kill -0 "$podman_pid" 2>/dev/null; then
    kill -TERM "$podman_pid" 2>/dev/null || true
    wait "$podman_pid" 2>/dev/null || true
    rm -f "$state/podman.sock"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${DOCKER_HOST:-}" ]; then
  say "engine: DOCKER_HOST=$DOCKER_HOST (${CIFARLAB_HUB_ENGINE:=docker})"
elif [ -S /var/run/docker.sock ] && [ "${CIFARLAB_HUB_ENGINE:-docker}" = docker ]; then
  CIFARLAB_HUB_ENGINE=docker
  say "engine: Docker (/var/run/docker.sock)"
else
  command -v podman >/dev/null || die "no container engine: install Docker (and the NVIDIA Container Toolkit), or podman"
  CIFARLAB_HUB_ENGINE=podman
  sock="$state/podman.sock"
  rm -f "$sock"
  # --time=0: the service lives as long as this script, which ends it.
  podman "${podman_args[@]}" system service --time=0 "unix://$sock" &
  podman_pid=$!
  for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
  [ -S "$sock" ] || die "podman system service did not create $sock"
  chmod 0600 "$sock"
  export DOCKER_HOST="unix://$sock"
  say "engine: podman's Docker API on $DOCKER_HOST (pid $podman_pid)"
fi
export CIFARLAB_HUB_ENGINE

cd "$state"
"$venv/bin/jupyterhub" -f "$here/jupyterhub_config.py" &
hub_pid=$!
wait "$hub_pid"
