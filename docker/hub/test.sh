#!/usr/bin/env bash
# Tests docker/hub for real on this machine: JupyterHub 6.1.1 from PyPI with DockerSpawner against
# podman's Docker API (no Docker engine needed), the workshop image that docker/test.sh built
# (its storage, its tag), configurable-http-proxy from npm, the idle culler, NativeAuthenticator
# with the workshop code. Everything goes through the hub's public URL (the proxy, 127.0.0.1) and
# REST API, through docker/hub/loadtest.py:
#
#   1. hub       docker/hub/start.sh (the one command of the README) with a fresh state folder and
#                nothing set for the host: start.sh's own checks install slirp4netns when missing
#                and choose process limits that this host's runtime accepts
#   2. signup    a wrong workshop code creates nobody; the right one signs up; the password logs in
#   3. users     N users (u1..uN) created with POST /hub/api/users, a token each
#   4. start     their servers started through the REST API; CPU, memory and GPU settings checked
#                on the containers (podman inspect) and in the served CUDA kernelspec
#   5. failed    a spawn that fails at the engine (the user "broken", whose volume cannot be
#                mounted): the attendee's spawn page says why, and no container is left (Created)
#   6. load-1    u1 runs notebooks 01-04 through its own kernels (sessions API + kernel websocket),
#                checked with notebooks/nbcheck.py's checks; cell latencies recorded
#   7. load-N    all N users run 01-04 at once; podman stats sampled every 5 s
#   8. isolation another user's token, or none, is refused on a user's server, files, kernels
#                (REST and websocket), the hub's API, and the container's own port; then a cell
#                of u1's touches more memory than its limit: the next cell says memory ran out
#   9. restart   u1 edits a notebook, saves one of its own, and starts a silent cell of
#                CIFARLAB_HUB_TEST_BUSY seconds, then disconnects; the hub is restarted (start.sh
#                stopped and started again) with the culling timeout lowered to
#                CIFARLAB_HUB_TEST_CULL (30 s): u1's server is still there, with its work
#  10. culling   while u1's kernel is busy its server stays (polled at the container's port, so
#                that polling is no activity), and the idle servers are culled; once the cell ends,
#                u1 is culled after the timeout and within a culling period; containers and
#                processes gone
#  11. persist   u1 starts again: its edit and its notebook are there (the volume outlived culling)
#  12. down      u1 busy again; the hub stopped; start.sh down, as the README writes it (no engine
#                named: the one start.sh chose): u1's running container removed, the volumes kept;
#                start.sh down --volumes: no volume left
#
# Then the figures (docker/hub/RESULTS.md's tables) are printed and kept in $out. Everything it
# started (hub, proxy, culler, podman service, containers, volumes) is removed on exit, Ctrl-C
# included. Root, 25-35 minutes on 2 shared cores; not part of CI (kernel/run-tests.sh), too heavy.
#
# Environment:
#   CIFARLAB_HUB_TEST_USERS      N (default 4; at least 2)
#   CIFARLAB_HUB_TEST_IMAGE      image (default localhost/cifarlab:test, docker/test.sh's)
#   CIFARLAB_DOCKER_CACHE        docker/test.sh's cache, whose storage holds the image
#   CIFARLAB_HUB_TEST_PODMAN_ARGS podman's storage options instead of that cache's (e.g. an overlay
#                                store the image was loaded into: docker/README.md, "Disk")
#   CIFARLAB_HUB_TEST_STOP_AFTER start: stop after the servers started (their start times are the
#                                figures), to measure N spawns at once
#   CIFARLAB_HUB_TEST_CULL       culling timeout after the restart, seconds (default 30)
#   CIFARLAB_HUB_TEST_BUSY       how long u1's silent cell sleeps, seconds (default 150: longer
#                                than the hub's restart and a few culling periods)
#   CIFARLAB_HUB_TEST_LOAD       0 skips the notebook runs (load-1, load-N), to check the rest
#   CIFARLAB_HUB_TEST_OOM        0 skips the out-of-memory cell (an image built before it)
#   CIFARLAB_HUB_TEST_OUT        where state, logs and figures go (default $cache/hub-test)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
n="${CIFARLAB_HUB_TEST_USERS:-4}"
image="${CIFARLAB_HUB_TEST_IMAGE:-localhost/cifarlab:test}"
cache="${CIFARLAB_DOCKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cifarlab-docker}"
cull="${CIFARLAB_HUB_TEST_CULL:-30}"
every=10
busy="${CIFARLAB_HUB_TEST_BUSY:-150}"
out="${CIFARLAB_HUB_TEST_OUT:-$cache/hub-test}"
# The same storage as docker/test.sh (see its comment on the run root).
runroot="/tmp/cifarlab-podman-$(id -u)-$(printf '%s' "$cache" | sha256sum | cut -c1-12)"
podman_args="${CIFARLAB_HUB_TEST_PODMAN_ARGS:---root $cache/storage --runroot $runroot --storage-driver vfs}"
# shellcheck disable=SC2206 # words on purpose
P=(podman $podman_args)
prefix="cifarlab-hubtest-$$-"
py="$repo/.venv/bin/python"

fail() { echo "docker/hub/test.sh: FAIL: $*" >&2; exit 1; }
step() { echo "=== [$(date +%T)] $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

[ "$(id -u)" = 0 ] || fail "run as root (rootful podman, like docker/test.sh)"
[ "$n" -ge 2 ] || fail "CIFARLAB_HUB_TEST_USERS=$n: the isolation checks need 2 users or more"
command -v podman >/dev/null || fail "podman is missing: apt-get install podman"
[ -x "$py" ] || fail "$py is missing: kernel/setup.sh makes the lab's venv (requests, websocket-client, nbformat)"
"${P[@]}" image exists "$image" || fail "no image $image in $cache/storage: build it with docker/test.sh"
# The image's files, read in place (a container would copy the whole image first under vfs).
mnt="$("${P[@]}" image mount "$image")"
have_su=0
[ -x "$mnt/opt/cifarlab/.venv/bin/jupyterhub-singleuser" ] && have_su=1
"${P[@]}" image unmount "$image" >/dev/null
[ "$have_su" = 1 ] || fail "$image has no jupyterhub-singleuser: rebuild it with docker/test.sh from this checkout"

rm -rf "$out"
install -d -m 0700 "$out" "$out/state"
state_json="$out/state.json"
hub_pid=""

export CIFARLAB_HUB_STATE="$out/state"
CIFARLAB_HUB_SIGNUP_CODE="code-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export CIFARLAB_HUB_SIGNUP_CODE
export CIFARLAB_HUB_IMAGE="$image"
CIFARLAB_HUB_PORT="$(free_port)"
CIFARLAB_HUB_API_PORT="$(free_port)"
CIFARLAB_HUB_PROXY_API_PORT="$(free_port)"
export CIFARLAB_HUB_PORT CIFARLAB_HUB_API_PORT CIFARLAB_HUB_PROXY_API_PORT
export CIFARLAB_HUB_PODMAN_ARGS="$podman_args"
export CIFARLAB_HUB_ENGINE=podman
export CIFARLAB_HUB_PREFIX="$prefix"
export CIFARLAB_HUB_ADMINS=admin
export CIFARLAB_HUB_CPU="${CIFARLAB_HUB_CPU:-1}" CIFARLAB_HUB_MEM="${CIFARLAB_HUB_MEM:-3G}"
export CIFARLAB_HUB_USERS="$n"
# Nothing for the host (slirp4netns, process limits): start.sh's checks find it, as on a fresh host.
unset DOCKER_HOST

hub_start() { # hub_start LOG: start.sh in the background, until the hub answers
  setsid "$here/start.sh" >"$1" 2>&1 &
  hub_pid=$!
  # The first start checks the host first (it may install slirp4netns and try process limits).
  for _ in $(seq 1 300); do
    grep -q "JupyterHub is now running" "$1" && return 0
    kill -0 "$hub_pid" 2>/dev/null || { tail -n 30 "$1"; fail "start.sh exited"; }
    sleep 1
  done
  tail -n 30 "$1"; fail "the hub did not start within 300 s"
}
hub_stop() { # stops start.sh (it stops the hub, proxy, culler and its podman service)
  [ -n "$hub_pid" ] || return 0
  kill -TERM "$hub_pid" 2>/dev/null || true
  # start.sh gives the hub 60 s and podman's service 20 s, then kills them.
  for _ in $(seq 1 120); do kill -0 "$hub_pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$hub_pid" 2>/dev/null && { kill -KILL -- "-$hub_pid" 2>/dev/null || true; }
  hub_pid=""
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  hub_stop
  local ids
  ids="$("${P[@]}" ps -a -q --filter "name=^$prefix" 2>/dev/null || true)"
  # shellcheck disable=SC2086
  [ -z "$ids" ] || "${P[@]}" rm -f -t 5 $ids >/dev/null 2>&1 || true
  ids="$("${P[@]}" volume ls -q --filter "name=^$prefix" 2>/dev/null || true)"
  # shellcheck disable=SC2086
  [ -z "$ids" ] || "${P[@]}" volume rm -f $ids >/dev/null 2>&1 || true
  rm -f "$out/state/podman.sock"
  [ "$rc" = 0 ] || echo "docker/hub/test.sh: failed (exit $rc); logs in $out" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

lt() { "$py" "$here/loadtest.py" "$state_json" "$@"; }

step "hub: docker/hub/start.sh (port $CIFARLAB_HUB_PORT, image $image, $n users)"
t0=$(date +%s)
hub_start "$out/hub-1.log"
grep '^cifarlab hub: ' "$out/hub-1.log" || true
grep -q "^cifarlab hub: capacity: $n users x ($CIFARLAB_HUB_CPU CPU, $CIFARLAB_HUB_MEM)" "$out/hub-1.log" \
  || fail "start.sh did not say what the limits add up to"
token="$(cd "$out/state" && CIFARLAB_HUB_ENGINE=podman DOCKER_HOST="unix://$out/state/podman.sock" \
  "$here/.venv/bin/jupyterhub" token -f "$here/jupyterhub_config.py" admin 2>>"$out/token.log" | tail -n 1)"
[ -n "$token" ] || fail "jupyterhub token admin gave no token (see $out/token.log)"
# shellcheck disable=SC2086 # podman's options, one word each
python3 - "$state_json" "$CIFARLAB_HUB_PORT" "$token" "$CIFARLAB_HUB_SIGNUP_CODE" "$prefix" $podman_args <<'EOF'
import json, sys
path, port, token, code, prefix, *pargs = sys.argv[1:]
json.dump({"url": f"http://127.0.0.1:{port}", "admin_token": token, "signup_code": code, "prefix": prefix,
           "stats_cmd": ["podman", *pargs]}, open(path, "w"))
EOF

step "signup"
lt signup
step "users"
users=()
for i in $(seq 1 "$n"); do users+=("u$i"); done
lt users "$n"
# A user the admin created beforehand (to start their server before the room opens) signs up.
lt signup u1
step "start"
lt start "${users[@]}"
for u in "${users[@]}"; do
  "${P[@]}" inspect -f '{{.Name}} cpu_quota={{.HostConfig.CpuQuota}}/{{.HostConfig.CpuPeriod}} memory={{.HostConfig.Memory}} pids={{.HostConfig.PidsLimit}} net={{.HostConfig.NetworkMode}} ports={{json .HostConfig.PortBindings}}' "$prefix$u"
done | tee "$out/limits.txt"
python3 - "$out/limits.txt" "$CIFARLAB_HUB_CPU" "$CIFARLAB_HUB_MEM" <<'EOF' || fail "the containers do not carry the configured limits"
import re, sys
cpu = float(sys.argv[2]); mem = sys.argv[3]
units = {"K": 2**10, "M": 2**20, "G": 2**30}
want_mem = int(float(mem[:-1]) * units[mem[-1].upper()]) if mem[-1].upper() in units else int(mem)
for line in open(sys.argv[1]):
    q, p = map(int, re.search(r"cpu_quota=(\d+)/(\d+)", line).groups())
    m = int(re.search(r"memory=(\d+)", line).group(1))
    if abs(q / p - cpu) > 1e-6 or m != want_mem:
        sys.exit(f"limits: {line.strip()}: want cpu {cpu}, memory {want_mem}")
    if '"HostIp":"127.0.0.1"' not in line.replace(" ", ""):
        sys.exit(f"the server's port is not published on 127.0.0.1 only: {line.strip()}")
print(f"limits: every container has cpu {cpu}, memory {mem}, its port on 127.0.0.1 only")
EOF
# ... and its cgroup enforces them (what the kernel reads, from inside u1's container).
# shellcheck disable=SC2016 # expanded by the container's shell
"${P[@]}" exec "${prefix}u1" sh -c 'echo "cgroup of u1: memory.limit_in_bytes $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes) cpu.cfs_quota_us $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)/$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us) pids.max $(cat /sys/fs/cgroup/pids/pids.max)"' \
  | tee -a "$out/limits.txt" | grep -q "memory.limit_in_bytes $("${P[@]}" inspect -f '{{.HostConfig.Memory}}' "${prefix}u1") " \
  || fail "u1's cgroup does not carry the memory limit (see $out/limits.txt)"
tail -n 1 "$out/limits.txt"
# The GPU memory share reaches the CUDA kernel (the spec that the user's server serves).
"$py" - "$state_json" u1 <<'EOF' || fail "the CUDA kernelspec does not carry the per-user memory fraction"
import json, sys, requests
s = json.load(open(sys.argv[1])); u = sys.argv[2]
r = requests.get(f"{s['url']}/user/{u}/api/kernelspecs", headers={"Authorization": f"token {s['tokens'][u]}"}, timeout=60)
specs = r.json()
env = specs["kernelspecs"]["cifarlab-cuda"]["spec"]["env"]["GOMLX_BACKEND"]
if "memory_fraction=" not in env or "preallocate=false" not in env:
    sys.exit(f"cifarlab-cuda GOMLX_BACKEND={env!r}")
print(f"GPU share: {u}'s CUDA kernel runs with GOMLX_BACKEND={env}; default kernel {specs['default']}")
EOF
# CPU time so far: what starting the server (the container, JupyterLab) cost.
for u in "${users[@]}"; do "${P[@]}" stats --no-stream --format '{{.Name}} idle: cpu {{.CPUPerc}} mem {{.MemUsage}} cpu time since start {{.CPUNano}} ns' "$prefix$u"; done | tee "$out/idle.txt"

if [ "${CIFARLAB_HUB_TEST_STOP_AFTER:-}" = start ]; then
  lt report | tee "$out/figures.md"
  echo "docker/hub/test.sh: ok (stopped after start) in $(( $(date +%s) - t0 )) s"
  exit 0
fi

step "failed: a spawn that fails at the engine (broken's volume cannot be mounted)"
"${P[@]}" volume create --opt type=ext4 --opt device=/dev/cifarlab-hubtest-no-such-disk "${prefix}work-broken" >/dev/null
lt spawn-fails broken "Your server could not start" "could not be mounted" "Tell the organiser"
grep "cifarlab hub: broken's server did not start" "$out/hub-1.log" | cut -c1-400
"${P[@]}" volume rm -f "${prefix}work-broken" >/dev/null

if [ "${CIFARLAB_HUB_TEST_LOAD:-1}" != 0 ]; then
  step "load-1: u1 runs notebooks 01-04"
  lt run load-1 u1
  step "load-$n: ${users[*]} run notebooks 01-04 at once"
  lt run "load-$n" "${users[@]}"
fi

step "isolation"
lt isolation

if [ "${CIFARLAB_HUB_TEST_OOM:-1}" != 0 ]; then
  step "oom: a cell of u1's over its memory limit ($CIFARLAB_HUB_MEM)"
  lt oom u1 "$(python3 -c 'import sys; u = {"K": 2**10, "M": 2**20, "G": 2**30}; m = sys.argv[1]; print(f"{int(float(m[:-1]) * u[m[-1].upper()]) / 2**30:.1f} GiB")' "$CIFARLAB_HUB_MEM")"
fi

step "restart: u1 busy in a silent cell of $busy s; the hub restarted with the culling timeout lowered to $cull s"
lt mark u1
lt busy u1 "$busy"
hub_stop
# The containers to find gone after culling, listed now: podman's CLI waits for its storage while
# the engine removes a culled container (minutes each under vfs), which would hold up the checks.
ids="$("${P[@]}" ps -q --no-trunc --filter "name=^$prefix")"
echo "hub stopped; user servers still running: $(echo "$ids" | grep -c .)"
export CIFARLAB_HUB_CULL_TIMEOUT="$cull" CIFARLAB_HUB_CULL_EVERY="$every"
hub_start "$out/hub-2.log"
lt check-mark u1

step "culling (timeout $cull s, checked every $every s)"
lt kept-while-busy u1 $((busy + 600))
# podman removes the culled containers one after another, and under vfs each removal deletes a
# full copy of the image (1-3 minutes each here): a server counts as stopped only then.
lt wait-culled $((cull + every + 600)) "${users[@]:1}"
lt culled-after-idle u1 "$cull" "$every"
lt wait-culled $((cull + every + 600))
grep -E "Culling server|Not culling server" "$out/hub-2.log" | sed 's/^.*IdleCuller[^]]*] /culler: /' | tail -n 25 || true
grep -q "Not culling server /user/u1/: 1 kernel(s) busy" "$out/hub-2.log" \
  || fail "the culler's log does not say it kept u1's server for its busy kernel"
left="$("${P[@]}" ps -a -q --filter "name=^$prefix")"
[ -z "$left" ] || fail "culled servers' containers are still there: $left"
for id in $ids; do
  if pgrep -f "$id" >/dev/null; then fail "a process of culled container $id is still running: $(pgrep -af "$id")"; fi
done
if pgrep -f jupyterhub-singleuser >/dev/null; then fail "a jupyterhub-singleuser process is still running: $(pgrep -af jupyterhub-singleuser)"; fi
echo "culled: no container, conmon or server process of the hub's users left"

step "persist: u1 starts again after culling"
lt start u1
lt check-mark u1
# Busy again, so that the culler leaves it to start.sh down.
lt busy u1 600

step "down: start.sh down as the README writes it, then down --volumes"
hub_stop
[ "$("${P[@]}" ps -a -q --filter "name=^$prefix" | wc -l)" = 1 ] || fail "u1's server is not running before start.sh down"
(unset CIFARLAB_HUB_ENGINE CIFARLAB_HUB_PODMAN_ARGS; "$here/start.sh" down) 2>&1 | tee "$out/down.log"
grep -q "removed 1 user server(s); volumes ${prefix}work-\* kept" "$out/down.log" || fail "start.sh down did not say what it removed"
left="$("${P[@]}" ps -a -q --filter "name=^$prefix")"
[ -z "$left" ] || fail "start.sh down left containers: $left"
vols="$("${P[@]}" volume ls -q --filter "name=^${prefix}work-")"
[ "$(echo "$vols" | grep -c .)" = "$n" ] || fail "start.sh down removed volumes, or they were not there: $vols"
(unset CIFARLAB_HUB_ENGINE CIFARLAB_HUB_PODMAN_ARGS; "$here/start.sh" down --volumes) 2>&1 | tee -a "$out/down.log"
vols="$("${P[@]}" volume ls -q --filter "name=^${prefix}work-")"
[ -z "$vols" ] || fail "start.sh down --volumes left volumes: $vols"

step "figures"
lt report | tee "$out/figures.md"
echo "docker/hub/test.sh: ok in $(( $(date +%s) - t0 )) s (state, logs, figures in $out)"
