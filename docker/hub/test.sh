#!/usr/bin/env bash
# Tests docker/hub for real on this machine, as an organiser runs it: docker/hub/start.sh (the
# README's one command) on the container engine's default storage (podman's: overlay), JupyterHub
# 6.1.1 from PyPI with DockerSpawner against podman's Docker API, the workshop image that
# docker/test.sh built (podman's default storage, its tag), configurable-http-proxy from npm, the
# idle culler, NativeAuthenticator with the workshop code, a real JupyterLab tab in headless
# Chromium. Only settings docker/README.md gives an organiser are set (a state folder, ports,
# the image, the name prefix, limits, the culling timeout, the memory a spawn needs). Where this
# machine cannot use podman's default storage, the run falls back to vfs and says so
# (docker/storage.sh). Everything goes through the hub's public URL (the proxy, 127.0.0.1) and
# REST API, through docker/hub/loadtest.py:
#
#   1. hub       start.sh with a fresh state folder and nothing set for the host: its checks
#                install slirp4netns when missing, choose process limits, say the storage, start a
#                test server of the image, and print the sign-up code and "sign up as admin first"
#   2. signup    the admin signs up first and is the hub's admin; a wrong workshop code creates
#                nobody; the right one signs up; the password logs in
#   3. users     N users (u1..uN) created with POST /hub/api/users, a token each
#   4. start     their servers started through the REST API; CPU, memory and GPU settings checked
#                on the containers (podman inspect) and in the served CUDA kernelspec
#   4b. cache    u1 runs notebook 01 (both sizes): its training cell loads every program from the
#                image's shared compile cache (/opt/cifarlab/compile-cache, compiled at image build),
#                compiles none, and u1's own folder (~/.cache/cifarlab/xla-programs) holds no
#                program, only hit counts; its entry point said the image's programs serve this CPU
#   5. failed    spawns that fail, each said on the attendee's page within seconds, with no
#                container left: a volume that cannot be mounted; an image that cannot run on this
#                storage (it renames a folder of its own layers at start: EXDEV on overlay, as
#                images built before f035eac's fix did; the page shows its exit code and last
#                lines); the servers' image removed from the engine
#   6. load-1    (full) u1 runs notebooks 01-04 through its own kernels (sessions API + kernel
#                websocket), checked with notebooks/nbcheck.py's checks; cell latencies recorded
#   7. load-N    (full) all N users run 01-04 at once; podman stats sampled every 5 s; in both
#                runs every notebook 01 training cell loads its programs from the shared layer
#   7b. cache-N  (full) the N servers restarted (new containers), all N run notebook 01 at once:
#                every training cell loads, no own folder holds a program; then again on the image
#                without its shared layer (nocache-N: every program compiled): the figures of
#                docker/hub/RESULTS.md's compile cache table
#   8. isolation another user's token, or none, is refused on a user's server, files, kernels
#                (REST and websocket), the hub's API, and the container's own port; then (full) a
#                cell of u1's touches more memory than its limit: the next cell says memory ran out
#   9. restart   u1 edits a notebook, saves one of its own, and starts a silent cell of
#                CIFARLAB_HUB_TEST_BUSY seconds, then disconnects; the hub is restarted (start.sh
#                stopped and started again) with the culling timeout lowered to
#                CIFARLAB_HUB_TEST_CULL (30 s) and a host folder of compiled programs
#                (CIFARLAB_HUB_COMPILE_CACHE; ci: the image's programs copied out; full: filled with
#                the image's `cifarlab cache warm --into`, as docker/README.md tells a GPU host's
#                organiser): u1's server is still there, with its work
#  10. culling   u2 logs in with headless Chromium and leaves a JupyterLab tab open on an idle
#                notebook (docker/hub/tab.mjs): its server is culled the timeout after it last did
#                something, while the tab still polls; u1's busy kernel keeps its server (polled at
#                the container's port, so that polling is no activity), and once the cell ends u1
#                is culled after the timeout; containers and processes gone
#  11. persist   u1 starts again: its edit and its notebook are there (the volume outlived culling);
#                its server has the host folder mounted read-only and listed first in
#                CIFARLAB_COMPILE_CACHE_SHARED, and its entry point says its programs serve this CPU;
#                (full) on the image without its own shared layer, u1's notebook 01 loads every
#                program from the host folder
#  12. faults    start.sh with CIFARLAB_HUB_START_MEM above this machine's memory (a machine with
#                no memory free): a spawn is refused at once, saying so; start.sh with the image
#                that cannot run on this storage, and start.sh on storage that cannot work at all
#                (podman's overlay in a folder on overlayfs): each stops before the hub starts,
#                saying why
#  13. down      start.sh down, as the README writes it (no engine named: the one start.sh chose):
#                u1's running container removed, the volumes and the state kept; down --volumes:
#                no volume left, the state folder kept; down --all: the state folder gone too
#
# The hub's logs must never show "Exception is not set" (JupyterHub's error on a server that
# exited while it waited). Then the figures (docker/hub/RESULTS.md's tables) are printed and kept in
# $out. Everything it started (hub, proxy, culler, podman service, browser, containers, volumes,
# images it made) is removed on exit, Ctrl-C included. Root.
#
# Two sizes (CIFARLAB_HUB_TEST_SIZE): ci (the default; what .ci/run runs through
# kernel/run-tests.sh: 2 users, notebook 01 run by u1 alone, no out-of-memory cell; every check
# above otherwise) and full (4 users, the load, compile cache and out-of-memory steps: the figures
# of RESULTS.md).
#
# Environment:
#   CIFARLAB_HUB_TEST_SIZE       ci (default) or full
#   CIFARLAB_HUB_TEST_USERS      N (default 2 for ci, 4 for full; at least 2)
#   CIFARLAB_HUB_TEST_IMAGE      image (default localhost/cifarlab:test, docker/test.sh's)
#   CIFARLAB_DOCKER_CACHE        docker/test.sh's cache (a vfs fallback's storage is there)
#   CIFARLAB_DOCKER_STORAGE      vfs: use the vfs fallback even where overlay works (docker/storage.sh)
#   CIFARLAB_HUB_TEST_STOP_AFTER start: stop after the servers started (their start times are the
#                                figures), to measure N spawns at once
#   CIFARLAB_HUB_TEST_CULL       culling timeout after the restart, seconds (default 30)
#   CIFARLAB_HUB_TEST_BUSY       how long u1's silent cell sleeps, seconds (default 150: longer
#                                than the hub's restart, the tab's cull and a few culling periods)
#   CIFARLAB_HUB_TEST_LOAD       1 runs the notebooks (load-1, load-N), 0 skips them (default: full only)
#   CIFARLAB_HUB_TEST_OOM        1 runs the out-of-memory cell, 0 skips it (default: full only)
#   CIFARLAB_HUB_TEST_OUT        where state, logs and figures go (default $cache/hub-test)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
size="${CIFARLAB_HUB_TEST_SIZE:-ci}"
case "$size" in
  ci) n_default=2 full=0 ;;
  full) n_default=4 full=1 ;;
  *) echo "docker/hub/test.sh: CIFARLAB_HUB_TEST_SIZE=$size: use ci or full" >&2; exit 2 ;;
esac
n="${CIFARLAB_HUB_TEST_USERS:-$n_default}"
load="${CIFARLAB_HUB_TEST_LOAD:-$full}"
oom="${CIFARLAB_HUB_TEST_OOM:-$full}"
image="${CIFARLAB_HUB_TEST_IMAGE:-localhost/cifarlab:test}"
cache="${CIFARLAB_DOCKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cifarlab-docker}"
cull="${CIFARLAB_HUB_TEST_CULL:-30}"
every=10
busy="${CIFARLAB_HUB_TEST_BUSY:-150}"
out="${CIFARLAB_HUB_TEST_OUT:-$cache/hub-test}"
py="$repo/.venv/bin/python"
prefix="cifarlab-hubtest-$$-"
# The servers' image under a name of the test's own, so that the faults below can point that name
# at an image that cannot run here, and remove it, as an organiser's `podman tag` or `rmi` would.
alias_image="localhost/cifarlab-hubtest:$$"
bad_image="localhost/cifarlab-hubtest-exdev:$$"
# The image without its shared compile cache (its programs removed): the image as built before it.
nocache_image="localhost/cifarlab-hubtest-nocache:$$"

fail() { echo "docker/hub/test.sh: FAIL: $*" >&2; exit 1; }
step() { echo "=== [$(date +%T)] $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

[ "$(id -u)" = 0 ] || fail "run as root (rootful podman, like docker/test.sh)"
[ "$n" -ge 2 ] || fail "CIFARLAB_HUB_TEST_USERS=$n: the isolation checks need 2 users or more"
command -v podman >/dev/null || fail "podman is missing: apt-get install podman"
command -v buildah >/dev/null || fail "buildah is missing: apt-get install buildah (docker/test.sh installs both)"
[ -x "$py" ] || fail "$py is missing: kernel/setup.sh makes the lab's venv (requests, websocket-client, nbformat)"
[ -f "$repo/notebooks/browser-test/node_modules/playwright-core/index.mjs" ] \
  || fail "playwright-core is missing: kernel/setup.sh installs it (notebooks/browser-test)"
t0=$(date +%s)
echo "docker/hub/test.sh: size $size ($n users, notebook runs $load, out-of-memory cell $oom)"
# shellcheck source=docker/storage.sh
. "$repo/docker/storage.sh"
choose_storage "docker/hub/test.sh" "$cache"
P=(podman "${storage[@]}")
B=(buildah "${storage[@]}")
overlay=1
[ "${#storage[@]}" = 0 ] || overlay=0
"${P[@]}" image exists "$image" || fail "no image $image in podman's storage: build it with docker/test.sh"
# The image's files, read in place.
mnt="$("${P[@]}" image mount "$image")"
have_su=0
[ -x "$mnt/opt/cifarlab/.venv/bin/jupyterhub-singleuser" ] && have_su=1
"${P[@]}" image unmount "$image" >/dev/null
[ "$have_su" = 1 ] || fail "$image has no jupyterhub-singleuser: rebuild it with docker/test.sh from this checkout"
(cd "$here" && python3 -m unittest -q hubsettings_test spawnfaults_test) || fail "the hub's unit tests failed"

rm -rf "$out"
install -d -m 0700 "$out" "$out/state"
state_json="$out/state.json"
hub_pid=""
tab_pid=""
ovl=""

export CIFARLAB_HUB_STATE="$out/state"
CIFARLAB_HUB_SIGNUP_CODE="code-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export CIFARLAB_HUB_SIGNUP_CODE
export CIFARLAB_HUB_IMAGE="$alias_image"
CIFARLAB_HUB_PORT="$(free_port)"
CIFARLAB_HUB_API_PORT="$(free_port)"
CIFARLAB_HUB_PROXY_API_PORT="$(free_port)"
export CIFARLAB_HUB_PORT CIFARLAB_HUB_API_PORT CIFARLAB_HUB_PROXY_API_PORT
export CIFARLAB_HUB_PREFIX="$prefix"
export CIFARLAB_HUB_CPU="${CIFARLAB_HUB_CPU:-1}" CIFARLAB_HUB_MEM="${CIFARLAB_HUB_MEM:-3G}"
export CIFARLAB_HUB_USERS="$n"
# The vfs fallback's storage, named as docker/README.md tells an organiser to ("Storage").
if [ "$overlay" = 0 ]; then export CIFARLAB_HUB_PODMAN_ARGS="${storage[*]}"; else unset CIFARLAB_HUB_PODMAN_ARGS; fi
# Nothing for the host (the engine, slirp4netns, process limits): start.sh finds it, as on a fresh host.
unset DOCKER_HOST CIFARLAB_HUB_ENGINE CIFARLAB_HUB_ULIMITS CIFARLAB_HUB_ADMINS CIFARLAB_HUB_START_MEM \
  CIFARLAB_HUB_CULL_TIMEOUT CIFARLAB_HUB_CULL_EVERY

hub_start() { # hub_start LOG: start.sh in the background, until the hub answers
  : >"$1"
  setsid "$here/start.sh" >"$1" 2>&1 &
  hub_pid=$!
  # The first start checks the host first (it may install slirp4netns and try process limits).
  for _ in $(seq 1 600); do
    grep -q "JupyterHub is now running" "$1" && return 0
    kill -0 "$hub_pid" 2>/dev/null || { tail -n 30 "$1"; fail "start.sh exited"; }
    sleep 1
  done
  tail -n 30 "$1"; fail "the hub did not start within 600 s"
}
hub_stop() { # stops start.sh (it stops the hub, proxy, culler and its podman service)
  [ -n "$hub_pid" ] || return 0
  kill -TERM "$hub_pid" 2>/dev/null || true
  # start.sh gives the hub 60 s and podman's service 20 s, then kills them.
  for _ in $(seq 1 120); do kill -0 "$hub_pid" 2>/dev/null || break; sleep 1; done
  kill -0 "$hub_pid" 2>/dev/null && { kill -KILL -- "-$hub_pid" 2>/dev/null || true; }
  hub_pid=""
}
tab_stop() {
  [ -n "$tab_pid" ] || return 0
  kill -TERM "$tab_pid" 2>/dev/null || true
  wait "$tab_pid" 2>/dev/null || true
  tab_pid=""
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  tab_stop
  hub_stop
  local ids
  ids="$("${P[@]}" ps -a -q --filter "name=^$prefix" 2>/dev/null || true)"
  # shellcheck disable=SC2086
  [ -z "$ids" ] || "${P[@]}" rm -f -t 5 $ids >/dev/null 2>&1 || true
  ids="$("${P[@]}" volume ls -q --filter "name=^$prefix" 2>/dev/null || true)"
  # shellcheck disable=SC2086
  [ -z "$ids" ] || "${P[@]}" volume rm -f $ids >/dev/null 2>&1 || true
  # IMAGE NAME: only that name (untag IMAGE alone removes every name of the image).
  "${P[@]}" untag "$alias_image" "$alias_image" >/dev/null 2>&1 || true
  "${P[@]}" rmi -f "$bad_image" >/dev/null 2>&1 || true
  "${P[@]}" rmi -f "$nocache_image" >/dev/null 2>&1 || true
  [ ! -d "$out/state" ] || rm -f "$out/state/podman.sock"
  if [ -n "$ovl" ]; then umount "$ovl/m" 2>/dev/null || true; rm -rf "$ovl"; fi
  [ "$rc" = 0 ] || echo "docker/hub/test.sh: failed (exit $rc) after $(($(date +%s) - t0)) s; logs in $out" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"${P[@]}" tag "$image" "$alias_image"

lt() { "$py" "$here/loadtest.py" "$state_json" "$@"; }
# own_cache USER: the user's own compile cache folder holds no program (every one came from a shared
# folder), only the hit counts of those loaded.
own_cache() {
  local listing xla hits
  # shellcheck disable=SC2016 # expanded by the container's shell
  listing="$("${P[@]}" exec "$prefix$1" sh -c 'ls -A "${XDG_CACHE_HOME:-$HOME/.cache}/cifarlab/xla-programs"')" \
    || fail "$1's own compile cache folder is missing"
  xla="$(grep -c '\.xla$' <<<"$listing" || true)"
  hits="$(grep -c '\.hits$' <<<"$listing" || true)"
  [ "$xla" = 0 ] || fail "$1's own compile cache folder holds $xla programs: something was compiled ($(tr '\n' ' ' <<<"$listing"))"
  [ "$hits" -ge 3 ] || fail "$1's own compile cache folder counts loads of $hits programs, want 3 or more ($(tr '\n' ' ' <<<"$listing"))"
  echo "own compile cache of $1: no program, the loads of $hits shared ones counted"
}
# cache_said LOG REGEX: the last compile cache line of a server's log (its entry point's) matches REGEX.
cache_said() {
  local line
  line="$(grep -h "cifarlab: compile cache: " "$1" | tail -n 1)"
  echo "${line:-(no compile cache line)}"
  grep -Eq "$2" <<<"$line" || fail "the entry point's compile cache line is not as expected (want /$2/)"
}

step "hub: docker/hub/start.sh (port $CIFARLAB_HUB_PORT, image $image as $alias_image, $n users)"
hub_start "$out/hub-1.log"
grep '^cifarlab hub: ' "$out/hub-1.log" || true
grep -q "^cifarlab hub: capacity: $n users x ($CIFARLAB_HUB_CPU CPU, $CIFARLAB_HUB_MEM) = .* it holds [0-9]* attendees at the measured peak of 2.5 GB each (notebooks 01-04) and [0-9]* at the limit of $CIFARLAB_HUB_MEM each" "$out/hub-1.log" \
  || fail "start.sh did not say what the limits add up to and how many attendees this machine holds"
grep -q "^cifarlab hub: storage: " "$out/hub-1.log" || fail "start.sh did not say the storage"
if [ "$overlay" = 1 ]; then
  grep -q "^cifarlab hub: a test server of $alias_image got through its entry point on this storage" "$out/hub-1.log" \
    || fail "start.sh did not start a test server of the image before the hub"
  grep -Eq "^cifarlab hub: the servers' compile cache: shared /opt/cifarlab/compile-cache: ([0-9]+) programs \(\1 compiled on this machine\)" "$out/hub-1.log" \
    || fail "start.sh did not say that the image's compiled programs serve this machine"
fi
grep -q "^cifarlab hub: sign-up code: $CIFARLAB_HUB_SIGNUP_CODE (hand it to the room). Sign up as admin first, at http://127.0.0.1:$CIFARLAB_HUB_PORT/hub/signup" "$out/hub-1.log" \
  || fail "start.sh did not print the sign-up code and that the admin signs up first"
token="$(cd "$out/state" && CIFARLAB_HUB_ENGINE=podman DOCKER_HOST="unix://$out/state/podman.sock" \
  "$here/.venv/bin/jupyterhub" token -f "$here/jupyterhub_config.py" admin 2>>"$out/token.log" | tail -n 1)"
[ -n "$token" ] || fail "jupyterhub token admin gave no token (see $out/token.log)"
python3 - "$state_json" "$CIFARLAB_HUB_PORT" "$token" "$CIFARLAB_HUB_SIGNUP_CODE" "$prefix" "${storage[@]}" <<'PY'
import json, sys
path, port, token, code, prefix, *pargs = sys.argv[1:]
json.dump({"url": f"http://127.0.0.1:{port}", "admin_token": token, "signup_code": code, "prefix": prefix,
           "stats_cmd": ["podman", *pargs]}, open(path, "w"))
PY

step "signup"
lt signup admin
lt signup
step "users"
users=()
for i in $(seq 1 "$n"); do users+=("u$i"); done
lt users "$n"
# Users the admin created beforehand (to start their servers before the room opens) sign up.
lt signup u1
lt signup u2
step "start"
lt start "${users[@]}"
for u in "${users[@]}"; do
  "${P[@]}" inspect -f '{{.Name}} cpu_quota={{.HostConfig.CpuQuota}}/{{.HostConfig.CpuPeriod}} memory={{.HostConfig.Memory}} pids={{.HostConfig.PidsLimit}} net={{.HostConfig.NetworkMode}} ports={{json .HostConfig.PortBindings}} autoremove={{.HostConfig.AutoRemove}}' "$prefix$u"
done | tee "$out/limits.txt"
python3 - "$out/limits.txt" "$CIFARLAB_HUB_CPU" "$CIFARLAB_HUB_MEM" <<'PY' || fail "the containers do not carry the configured limits"
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
    if "autoremove=true" in line:
        sys.exit(f"the engine removes the container, and its log, as soon as it exits: {line.strip()}")
print(f"limits: every container has cpu {cpu}, memory {mem}, its port on 127.0.0.1 only, no auto-removal")
PY
# ... and its cgroup enforces them (what the kernel reads, from inside u1's container).
# shellcheck disable=SC2016 # expanded by the container's shell
"${P[@]}" exec "${prefix}u1" sh -c 'echo "cgroup of u1: memory.limit_in_bytes $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes) cpu.cfs_quota_us $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)/$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us) pids.max $(cat /sys/fs/cgroup/pids/pids.max)"' \
  | tee -a "$out/limits.txt" | grep -q "memory.limit_in_bytes $("${P[@]}" inspect -f '{{.HostConfig.Memory}}' "${prefix}u1") " \
  || fail "u1's cgroup does not carry the memory limit (see $out/limits.txt)"
tail -n 1 "$out/limits.txt"
# The GPU memory share reaches the CUDA kernel (the spec that the user's server serves).
"$py" - "$state_json" u1 <<'PY' || fail "the CUDA kernelspec does not carry the per-user memory fraction"
import json, sys, requests
s = json.load(open(sys.argv[1])); u = sys.argv[2]
r = requests.get(f"{s['url']}/user/{u}/api/kernelspecs", headers={"Authorization": f"token {s['tokens'][u]}"}, timeout=60)
specs = r.json()
env = specs["kernelspecs"]["cifarlab-cuda"]["spec"]["env"]["GOMLX_BACKEND"]
if "memory_fraction=" not in env or "preallocate=false" not in env:
    sys.exit(f"cifarlab-cuda GOMLX_BACKEND={env!r}")
print(f"GPU share: {u}'s CUDA kernel runs with GOMLX_BACKEND={env}; default kernel {specs['default']}")
PY
# CPU time so far: what starting the server (the container, JupyterLab) cost.
for u in "${users[@]}"; do "${P[@]}" stats --no-stream --format '{{.Name}} idle: cpu {{.CPUPerc}} mem {{.MemUsage}} cpu time since start {{.CPUNano}} ns' "$prefix$u"; done | tee "$out/idle.txt"

if [ "${CIFARLAB_HUB_TEST_STOP_AFTER:-}" = start ]; then
  lt report | tee "$out/figures.md"
  echo "docker/hub/test.sh: ok (stopped after start) in $(($(date +%s) - t0)) s"
  exit 0
fi

step "cache: u1 runs notebook 01; its training cell loads every program from the image's shared compile cache"
"${P[@]}" logs "${prefix}u1" >"$out/u1-start.log" 2>&1
cache_said "$out/u1-start.log" "^cifarlab: compile cache: shared /opt/cifarlab/compile-cache: ([0-9]+) programs \(\1 compiled on this machine\)"
lt run cache-1 u1 --notebooks=01-reproduce.ipynb --expect=loaded
own_cache u1

step "failed: spawns that fail, said on the attendee's page within seconds"
"${P[@]}" volume create --opt type=ext4 --opt device=/dev/cifarlab-hubtest-no-such-disk "${prefix}work-broken" >/dev/null
lt spawn-fails broken "Your server could not start" "could not be mounted" "Tell the organiser" --within=60
"${P[@]}" volume rm -f "${prefix}work-broken" >/dev/null
if [ "$overlay" = 1 ]; then
  # An image that renames a folder of its own layers at start, as the entry point's kernel install
  # did at f035eac: rename(2) of /opt/cifarlab/kernel, which overlay storage refuses (EXDEV) where
  # the kernel's overlay redirect_dir is off, as here.
  b="$("${B[@]}" from --pull=never -q "$image")"
  "${B[@]}" config --cmd lab --entrypoint '["/usr/bin/tini", "--", "/opt/cifarlab/.venv/bin/python", "-c", "import os, sys; print(\"renaming a folder of the image\", flush=True); os.rename(\"/opt/cifarlab/kernel\", \"/opt/cifarlab/kernel.old\"); os.execv(\"/usr/local/bin/cifarlab-entrypoint\", [\"cifarlab-entrypoint\"] + sys.argv[1:])"]' "$b"
  "${B[@]}" commit -q "$b" "$bad_image" >/dev/null 2>&1
  "${B[@]}" rm "$b" >/dev/null
  "${P[@]}" tag "$bad_image" "$alias_image"
  lt spawn-fails exdev "the image cannot run on this machine's container storage" "rebuild the image from a current cifarlab checkout" \
    "exit code 1" "Invalid cross-device link" "renaming a folder of the image" --within=60
  grep -q "exdev's server did not start: the image cannot run on this machine's container storage" "$out/hub-1.log" \
    || fail "the hub's log does not say why exdev's server did not start"
  grep -A 20 "exdev's server did not start" "$out/hub-1.log" | grep -q "Invalid cross-device link" \
    || fail "the hub's log does not show the failed container's last lines"
else
  echo "NOTE: vfs storage: no image fails with EXDEV here; the storage fault is not checked on this machine"
fi
"${P[@]}" untag "$alias_image" "$alias_image"
lt spawn-fails noimage "the image of the servers is not in the container engine's storage" "build it" --within=60
"${P[@]}" tag "$image" "$alias_image"

if [ "$load" = 1 ]; then
  step "load-1: u1 runs notebooks 01-04"
  lt run load-1 u1 --expect=loaded
  step "load-$n: ${users[*]} run notebooks 01-04 at once"
  lt run "load-$n" "${users[@]}" --expect=loaded
  step "cache-$n: ${users[*]} run notebook 01 at once in new servers, with the image's shared compile cache, then without it (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  lt restart "${users[@]}"
  lt run "cache-$n" "${users[@]}" --notebooks=01-reproduce.ipynb --expect=loaded
  for u in "${users[@]}"; do own_cache "$u"; done
  b="$("${B[@]}" from --pull=never -q "$image")"
  m="$("${B[@]}" mount "$b")"
  rm -f "$m"/opt/cifarlab/compile-cache/*.xla
  "${B[@]}" umount "$b" >/dev/null
  "${B[@]}" commit -q "$b" "$nocache_image" >/dev/null 2>&1
  "${B[@]}" rm "$b" >/dev/null
  "${P[@]}" tag "$nocache_image" "$alias_image"
  lt restart "${users[@]}"
  echo "nocache-$n: the servers run $nocache_image, the image without its shared compile cache (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  lt run "nocache-$n" "${users[@]}" --notebooks=01-reproduce.ipynb --expect=compiled
  "${P[@]}" tag "$image" "$alias_image"
fi

step "isolation"
lt isolation

if [ "$oom" = 1 ]; then
  step "oom: a cell of u1's over its memory limit ($CIFARLAB_HUB_MEM)"
  lt oom u1 "$(python3 -c 'import sys; u = {"K": 2**10, "M": 2**20, "G": 2**30}; m = sys.argv[1]; print(f"{int(float(m[:-1]) * u[m[-1].upper()]) / 2**30:.1f} GiB")' "$CIFARLAB_HUB_MEM")"
fi

step "restart: u1 busy in a silent cell of $busy s; the hub restarted with the culling timeout lowered to $cull s"
lt mark u1
lt busy u1 "$busy"
hub_stop
# The containers to find gone after culling, listed now: podman's CLI waits for its storage while
# the engine removes a culled container, which would hold up the checks.
ids="$("${P[@]}" ps -q --no-trunc --filter "name=^$prefix")"
echo "hub stopped; user servers still running: $(echo "$ids" | grep -c .)"
# A host folder of compiled programs for every server (as on a GPU host, filled before the event).
hostcache="$out/host-compile-cache"
if [ "$full" = 1 ]; then
  # As docker/README.md tells the organiser: the image's own cifarlab cache warm, into the folder.
  # (--ulimit: this host's runtime cannot raise the open-files limit to podman's default.)
  install -d -o 1000 -g 1000 "$hostcache"
  "${P[@]}" run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 -v "$hostcache:/srv/cifarlab/compile-cache" "$image" \
    cifarlab cache warm --into /srv/cifarlab/compile-cache --notebook /opt/cifarlab/notebooks/01-reproduce.ipynb 2>"$out/warm.log" \
    || { tail -n 20 "$out/warm.log"; fail "cifarlab cache warm into a host folder failed"; }
else
  # ci: the image's programs copied out (what a warm on this machine compiles), in seconds.
  mnt="$("${P[@]}" image mount "$image")"
  cp -a "$mnt/opt/cifarlab/compile-cache" "$hostcache"
  "${P[@]}" image unmount "$image" >/dev/null
fi
echo "host compile cache $hostcache: $(find "$hostcache" -name '*.xla' | wc -l) programs, mode $(stat -c %a "$hostcache")"
export CIFARLAB_HUB_CULL_TIMEOUT="$cull" CIFARLAB_HUB_CULL_EVERY="$every" CIFARLAB_HUB_COMPILE_CACHE="$hostcache"
hub_start "$out/hub-2.log"
if [ "$overlay" = 1 ]; then
  grep -Eq "^cifarlab hub: the servers' compile cache: shared /srv/cifarlab/compile-cache: ([0-9]+) programs \(\1 compiled on this machine\); shared /opt/cifarlab/compile-cache: " "$out/hub-2.log" \
    || fail "start.sh's test server did not see the host folder first in the servers' compile cache (see $out/hub-2.log)"
fi
lt check-mark u1

step "culling (timeout $cull s, checked every $every s): u2 leaves a JupyterLab tab open; u1's kernel is busy"
pw="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["passwords"]["u2"])' "$state_json")"
node "$here/tab.mjs" "http://127.0.0.1:$CIFARLAB_HUB_PORT" u2 "$pw" 01-reproduce.ipynb "$out/tab-events.jsonl" >"$out/tab.log" 2>&1 &
tab_pid=$!
for _ in $(seq 1 180); do
  grep -q '"event":"open"' "$out/tab-events.jsonl" 2>/dev/null && break
  kill -0 "$tab_pid" 2>/dev/null || { cat "$out/tab.log"; fail "the browser tab ended before it opened the notebook"; }
  sleep 1
done
grep -q '"event":"open"' "$out/tab-events.jsonl" || fail "the browser tab did not open the notebook within 180 s"
echo "tab: u2 logged in with headless Chromium and left 01-reproduce.ipynb open, its kernel idle: $(head -n 1 "$out/tab-events.jsonl")"
lt culled-with-tab u2 "$cull" "$every" "$tab_pid" "$out/tab-events.jsonl"
tab_stop
lt kept-while-busy u1 $((busy + 600))
if [ "$n" -gt 2 ]; then lt wait-culled $((cull + every + 600)) "${users[@]:2}"; fi
lt culled-after-idle u1 "$cull" "$every"
lt wait-culled $((cull + every + 600))
grep -E "Culling server|Not culling server" "$out/hub-2.log" | sed 's/^.*IdleCuller[^]]*] /culler: /' | tail -n 25 || true
grep -q "Not culling server /user/u1/: 1 kernel(s) busy" "$out/hub-2.log" \
  || fail "the culler's log does not say it kept u1's server for its busy kernel"
grep -q "Culling server /user/u2/: no kernel busy, nothing done for" "$out/hub-2.log" \
  || fail "the culler's log does not say why it culled u2's server"
left="$("${P[@]}" ps -a -q --filter "name=^$prefix")"
[ -z "$left" ] || fail "culled servers' containers are still there: $left"
for id in $ids; do
  if pgrep -f "$id" >/dev/null; then fail "a process of culled container $id is still running: $(pgrep -af "$id")"; fi
done
if pgrep -f jupyterhub-singleuser >/dev/null; then fail "a jupyterhub-singleuser process is still running: $(pgrep -af jupyterhub-singleuser)"; fi
echo "culled: no container, conmon or server process of the hub's users left"

step "persist: u1 starts again after culling, with the host's compile cache folder"
nocache=0
"${P[@]}" image exists "$nocache_image" && nocache=1
if [ "$nocache" = 1 ]; then "${P[@]}" tag "$nocache_image" "$alias_image"; fi
lt start u1
"${P[@]}" inspect -f '{{range .Mounts}}{{.Source}}:{{.Destination}}:{{.RW}} {{end}}' "${prefix}u1" | tee "$out/u1-mounts.txt"
grep -q "$hostcache:/srv/cifarlab/compile-cache:false" "$out/u1-mounts.txt" || fail "u1's server does not have the host's compile cache folder mounted read-only"
shared_env="$("${P[@]}" exec "${prefix}u1" printenv CIFARLAB_COMPILE_CACHE_SHARED)"
[ "$shared_env" = /srv/cifarlab/compile-cache:/opt/cifarlab/compile-cache ] \
  || fail "u1's CIFARLAB_COMPILE_CACHE_SHARED is '$shared_env', want the host folder, then the image's"
"${P[@]}" logs "${prefix}u1" >"$out/u1-restart.log" 2>&1
cache_said "$out/u1-restart.log" "^cifarlab: compile cache: shared /srv/cifarlab/compile-cache: ([0-9]+) programs \(\1 compiled on this machine\); shared /opt/cifarlab/compile-cache"
if [ "$nocache" = 1 ]; then
  # The image without its own programs (made for nocache-N): everything loads from the host folder.
  lt run hostcache-1 u1 --notebooks=01-reproduce.ipynb --expect=loaded
  own_cache u1
  "${P[@]}" tag "$image" "$alias_image"
fi
# Busy, so that the culler of this hub (30 s timeout), which runs until the hub has stopped, leaves
# u1's server to start.sh down; the next hub keeps the default timeout.
lt busy u1 600
hub_stop

step "faults: a machine with no memory free; an image that cannot run on this storage"
unset CIFARLAB_HUB_CULL_TIMEOUT CIFARLAB_HUB_CULL_EVERY
# More than this machine has: a machine whose memory is all taken.
CIFARLAB_HUB_START_MEM="$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 + 1024))m" hub_start "$out/hub-3.log"
lt check-mark u1
lt spawn-fails u2 "this machine has only" "of memory free, and a server needs" "Try again in a few minutes" "CIFARLAB_HUB_START_MEM" --within=30
hub_stop
if [ "$overlay" = 1 ]; then
  set +e
  CIFARLAB_HUB_IMAGE="$bad_image" "$here/start.sh" >"$out/hub-4.log" 2>&1
  rc=$?
  set -e
  grep '^cifarlab hub: ' "$out/hub-4.log" | tail -n 4
  [ "$rc" = 2 ] || fail "start.sh with an image that cannot run on this storage exited $rc, want 2 (see $out/hub-4.log)"
  grep -q "a test server of $bad_image does not start on this machine: the image cannot run on this machine's container storage" "$out/hub-4.log" \
    || fail "start.sh did not say that the image cannot run on this storage"
  grep -q "Invalid cross-device link" "$out/hub-4.log" || fail "start.sh did not show the test server's last lines"
  if grep -q "JupyterHub is now running" "$out/hub-4.log"; then fail "start.sh started the hub with an image that cannot run"; fi
  echo "start.sh refused to start the hub with $bad_image, before the first spawn, saying why"
fi
# Storage that cannot work at all: podman's overlay driver in a folder that is itself on overlayfs.
ovl="$(mktemp -d /tmp/cifarlab-ovl.XXXXXX)"
mkdir -p "$ovl/l" "$ovl/u" "$ovl/w" "$ovl/m"
if mount -t overlay overlay -o "lowerdir=$ovl/l,upperdir=$ovl/u,workdir=$ovl/w" "$ovl/m" 2>/dev/null; then
  set +e
  CIFARLAB_HUB_PODMAN_ARGS="--root $ovl/m/root --runroot $ovl/m/run --storage-driver overlay" "$here/start.sh" >"$out/hub-5.log" 2>&1
  rc=$?
  set -e
  umount "$ovl/m"
  grep '^cifarlab hub: ' "$out/hub-5.log" | tail -n 1
  [ "$rc" = 2 ] || fail "start.sh on storage that cannot work exited $rc, want 2 (see $out/hub-5.log)"
  grep -q "podman's storage does not work on this machine: .*not supported over overlayfs" "$out/hub-5.log" \
    || fail "start.sh did not say that podman's storage does not work (see $out/hub-5.log)"
else
  echo "NOTE: this machine cannot mount an overlay: start.sh on storage that cannot work is not checked"
fi
rm -rf "$ovl"
ovl=""

step "down: start.sh down as the README writes it, then down --volumes, then down --all"
[ "$("${P[@]}" ps -a -q --filter "name=^$prefix" | wc -l)" = 1 ] || fail "u1's server is not running before start.sh down"
(unset CIFARLAB_HUB_PODMAN_ARGS; "$here/start.sh" down) 2>&1 | tee "$out/down.log"
grep -q "removed 1 user server(s); volumes ${prefix}work-\* kept" "$out/down.log" || fail "start.sh down did not say what it removed"
left="$("${P[@]}" ps -a -q --filter "name=^$prefix")"
[ -z "$left" ] || fail "start.sh down left containers: $left"
vols="$("${P[@]}" volume ls -q --filter "name=^${prefix}work-")"
[ "$(echo "$vols" | grep -c .)" -ge "$n" ] || fail "start.sh down removed volumes, or they were not there: $vols"
(unset CIFARLAB_HUB_PODMAN_ARGS; "$here/start.sh" down --volumes) 2>&1 | tee -a "$out/down.log"
vols="$("${P[@]}" volume ls -q --filter "name=^${prefix}work-")"
[ -z "$vols" ] || fail "start.sh down --volumes left volumes: $vols"
for f in jupyterhub.sqlite jupyterhub_cookie_secret; do
  [ -f "$out/state/$f" ] || fail "start.sh down --volumes removed the state folder's $f"
done
grep -q "start.sh down --all removes it too, the reset between two events" "$out/down.log" || fail "start.sh down does not say how to reset the state"
(unset CIFARLAB_HUB_PODMAN_ARGS; "$here/start.sh" down --all) 2>&1 | tee -a "$out/down.log"
[ ! -e "$out/state" ] || fail "start.sh down --all left the state folder $out/state: $(ls -A "$out/state")"

if grep -l "Exception is not set\|never showed up" "$out"/hub-*.log; then fail "the hub's log shows JupyterHub waiting on a server that had exited"; fi
# podman's healthcheck message is explained once per start, not repeated for every server.
for f in "$out"/hub-*.log "$out/down.log"; do
  if grep -q 'msg="unable to get systemd connection' "$f"; then fail "podman's healthcheck message is not explained in $f"; fi
  [ "$(grep -c '^cifarlab hub: podman: "unable to get systemd connection to add healthchecks" (said once' "$f")" -le 1 ] \
    || fail "podman's healthcheck message is explained more than once in $f"
done
if [ "$full" = 1 ]; then
  step "figures"
  lt report | tee "$out/figures.md"
fi
echo "docker/hub/test.sh: ok, size $size, in $(($(date +%s) - t0)) s (logs in $out)"
