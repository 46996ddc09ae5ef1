#!/usr/bin/env bash
# Builds the workshop image without a Docker engine and smoke-tests it, the way CI can:
#
#   1. tools     buildah, podman, runc and debootstrap from Debian (installed when missing, as root)
#   2. lint      docker/lint.sh (Dockerfile linters, shell scripts)
#   3. base      a Debian bookworm base image made with debootstrap from the Debian mirror of
#                /etc/apt/sources.list*, imported with podman (no registry pulls are possible)
#   4. build     buildah bud --isolation chroot --storage-driver vfs of docker/Dockerfile with
#                BASE_IMAGE=that base, SKIP_PLUGINS=1 (no go-xla plugins: its CUDA libraries are
#                gigabytes; the CPU kernel runs PyPI's hash-pinned XLA CPU plugin that
#                kernel/setup.sh installs, as in CI) and SKIP_CIFAR=1 (the archives are not
#                reachable): each a build argument that the real build leaves at 0
#   5. run       podman run (runc) of the image as its non-root user; waits for the HEALTHCHECK
#                and checks token authentication and the two kernelspecs over JupyterLab's API
#                (the CPU one on XLA CPU from $CIFARLAB_DOCKER_CPU_PLUGIN), and cifarlab doctor
#                (the image's shared compile cache: root's, read-only to the lab user, its programs
#                compiled for this machine, as doctor and the entry point say)
#   6. notebook  executes a notebook inside the running container through JupyterLab's own
#                venv and the "Go (cifarlab, CPU)" kernel (kernel/run_notebook.py, nbclient);
#                notebook 01's training cell must load every program from the image's shared
#                compile cache (docker/cachecheck.py), and the lab user's own folder hold none
#
# Each phase's wall time is printed at the end and written to $CACHE/times.tsv.
#
# Environment:
#   CIFARLAB_DOCKER_CACHE     container storage, the base rootfs tarball, logs and times
#                             (default ~/.cache/cifarlab-docker; several GB: vfs copies layers;
#                             podman's run root is /tmp/cifarlab-podman-UID-HASH, since it must be short);
#                             the base is made once and reused while the tarball is there
#   CIFARLAB_DOCKER_NOTEBOOK  notebook to execute, relative to the repository (default:
#                             notebooks/01-*.ipynb when it exists, else kernel/testdata/smoke.ipynb)
#   CIFARLAB_DOCKER_JOBS      compile jobs inside the build (default 1: the machine is shared)
#   CIFARLAB_DOCKER_KEEP      1 keeps the container running and the image for inspection
#   CIFARLAB_DOCKER_BUILD_ARGS extra "--build-arg K=V ..." for buildah
#   CIFARLAB_DOCKER_REUSE     1 skips the lint, base and build phases when the image exists in
#                             the cache's storage (to iterate on the run checks; kernel/run-tests.sh
#                             after its background build, which linted)
#   CIFARLAB_DOCKER_STOP_AFTER build: stop once the image is built (kernel/run-tests.sh builds it
#                             while the Go tests run, then runs the rest with CIFARLAB_DOCKER_REUSE=1)
#   CIFARLAB_DOCKER_CPU_PLUGIN the CPU kernelspec must load XLA CPU from a plugin whose path holds
#                             this (default lammps_jax_pjrt_cpu, PyPI's; empty: no check)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
cache="${CIFARLAB_DOCKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cifarlab-docker}"
jobs="${CIFARLAB_DOCKER_JOBS:-1}"
base_tag="localhost/cifarlab-base:bookworm"
image_tag="localhost/cifarlab:test"
ctr="cifarlab-test-$$"
mkdir -p "$cache"
# Storage: podman's default (Debian's rootful default is overlay, Docker's is overlay2), where a
# user builds and runs the image; set after the tools phase (docker/storage.sh).
storage=()
run_opts=(--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

times=()
phase_start=0
phase() { # phase NAME: closes the previous phase and starts NAME
  local now; now="$(date +%s.%N)"
  if [ -n "${phase_name:-}" ]; then
    times+=("$phase_name	$(awk -v a="$phase_start" -v b="$now" 'BEGIN{printf "%.1f", b-a}')")
  fi
  phase_name="${1:-}"; phase_start="$now"
  [ -n "$phase_name" ] && echo "=== [$(date +%T)] $phase_name"
  return 0
}
report() {
  phase ""
  {
    printf 'phase\tseconds\n'
    printf '%s\n' "${times[@]}"
  } > "$cache/times.tsv"
  echo "=== phase times (s)"
  column -t -s $'\t' "$cache/times.tsv" 2>/dev/null || cat "$cache/times.tsv"
}
fail() { echo "docker/test.sh: FAIL: $*" >&2; exit 1; }

cleanup() {
  local rc=$?
  failed_phase="${phase_name:-}"
  if [ "${CIFARLAB_DOCKER_KEEP:-0}" != 1 ]; then
    podman "${storage[@]}" rm -f -t 5 "$ctr" >/dev/null 2>&1 || true
    [ -z "${work:-}" ] || rm -rf "$work"
  else
    echo "kept container $ctr: podman ${storage[*]} exec -it $ctr bash"
  fi
  report
  [ "$rc" = 0 ] || echo "docker/test.sh: failed (exit $rc) in phase ${failed_phase:-?}" >&2
  exit "$rc"
}
trap cleanup EXIT

t0="$(date +%s)"

# ---------------------------------------------------------------------------------------------
phase tools
missing=()
for cmd in buildah podman runc debootstrap; do
  command -v "$cmd" >/dev/null || missing+=("$cmd")
done
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}: apt-get install buildah podman runc debootstrap (as root)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends buildah podman runc debootstrap >/dev/null
fi
[ "$(id -u)" = 0 ] || fail "run as root: debootstrap and chroot-isolated buildah need it"
buildah --version
podman --version
# shellcheck source=docker/storage.sh
. docker/storage.sh
choose_storage "docker/test.sh" "$cache"

# ---------------------------------------------------------------------------------------------
reuse=0
if [ "${CIFARLAB_DOCKER_REUSE:-0}" = 1 ] && podman "${storage[@]}" image exists "$image_tag"; then
  reuse=1
  echo "CIFARLAB_DOCKER_REUSE=1: using the existing $image_tag (no lint, no base, no build)"
fi

phase lint
if [ "$reuse" = 0 ]; then
  bash docker/lint.sh
fi

phase base
if [ "$reuse" = 0 ]; then
  # The Debian mirror apt uses here (deb822 or one-line sources), bookworm by default.
  mirror="$(sed -n 's/^URIs:[[:space:]]*\(http[^[:space:]]*debian\)[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)"
  [ -n "$mirror" ] || mirror="$(sed -n 's/^deb[[:space:]]\+\(http[^[:space:]]*debian\)[[:space:]]\+bookworm[[:space:]].*/\1/p' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -n1)"
  mirror="${mirror:-http://deb.debian.org/debian}"
  base_tar="$cache/bookworm-minbase.tar"
  if [ ! -s "$base_tar" ]; then
    rootfs="$cache/rootfs.tmp"
    rm -rf "$rootfs"
    echo "debootstrap bookworm from $mirror"
    debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$mirror" > "$cache/debootstrap.log" 2>&1 \
      || { tail -n 20 "$cache/debootstrap.log"; fail "debootstrap failed (log: $cache/debootstrap.log)"; }
    # Trust what the host trusts: CAs added locally (e.g. a TLS-inspecting egress proxy) must
    # be trusted inside the build too, or curl, go and pip fail there. The real build's base
    # (ubuntu:24.04) needs none of this.
    cas=(/usr/local/share/ca-certificates/*.crt)
    if [ -f "${cas[0]}" ]; then
      cp "${cas[@]}" "$rootfs/usr/local/share/ca-certificates/"
      # Without the host's TMPDIR: a folder of the host (a cluster's /scratch/..., a test's
      # empty TMPDIR) does not exist in the chroot, and update-ca-certificates' mktemp fails.
      env -u TMPDIR chroot "$rootfs" update-ca-certificates >/dev/null
      echo "base trusts the host's local CAs: ${cas[*]##*/}"
    fi
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" --numeric-owner -cf "$base_tar.tmp" .
    mv "$base_tar.tmp" "$base_tar"
    rm -rf "$rootfs"
  fi
  if ! podman "${storage[@]}" image exists "$base_tag"; then
    # pip in a venv uses its own certifi bundle unless told to use the system one.
    podman "${storage[@]}" import --change 'CMD ["/bin/bash"]' \
      --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
      --change 'ENV REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt' \
      --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
      "$base_tar" "$base_tag" >/dev/null
  fi
  podman "${storage[@]}" run --rm "${run_opts[@]}" "$base_tag" cat /etc/debian_version
fi

# ---------------------------------------------------------------------------------------------
phase build
if [ "$reuse" = 0 ]; then
  # --format docker keeps the HEALTHCHECK (the OCI format has none). No --layers: with vfs
  # every cached layer is a full copy of the file system.
  set +e
  # shellcheck disable=SC2086 # CIFARLAB_DOCKER_BUILD_ARGS is a list of words on purpose
  nice -n 10 buildah "${storage[@]}" bud --isolation chroot --format docker \
    --build-arg BASE_IMAGE="$base_tag" \
    --build-arg SKIP_PLUGINS=1 \
    --build-arg SKIP_CIFAR=1 \
    --build-arg BUILD_JOBS="$jobs" \
    ${CIFARLAB_DOCKER_BUILD_ARGS:-} \
    -f docker/Dockerfile -t "$image_tag" . 2>&1 \
    | tee "$cache/build.log" | grep --line-buffered -E '^(STEP|COMMIT|Successfully|Error|error)|== setup'
  build_rc="${PIPESTATUS[0]}"
  set -e
  [ "$build_rc" = 0 ] || { tail -n 40 "$cache/build.log"; fail "buildah bud failed (log: $cache/build.log)"; }
fi
podman "${storage[@]}" image inspect "$image_tag" --format 'image {{.Id}} size {{.Size}} user {{.Config.User}} healthcheck {{.HealthCheck.Test}}' 2>/dev/null \
  || podman "${storage[@]}" image inspect "$image_tag" --format 'image {{.Id}} size {{.Size}} user {{.Config.User}}'
if [ "${CIFARLAB_DOCKER_STOP_AFTER:-}" = build ]; then
  echo "docker/test.sh: built in $(( $(date +%s) - t0 )) s (CIFARLAB_DOCKER_STOP_AFTER=build: no run, no notebook)"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
phase run
# One container exercises the entry point's features: a work folder mounted where the README
# says (it must receive the notebooks), CIFARLAB_CUDA_BACKEND (GPU sharing; must reach the
# CUDA kernelspec) and CIFARLAB_MODE=cpu (the CPU kernel must be the default). With vfs every
# new container copies the image, so the checks share it.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
token="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
cuda_backend="xla:cuda,preallocate=false,memory_fraction=0.25"
work="$cache/work.$$"
rm -rf "$work"
mkdir -p "$work"
chown 1000:1000 "$work"
podman "${storage[@]}" run -d --name "$ctr" "${run_opts[@]}" --health-interval disable \
  -p "127.0.0.1:$port:8888" -e JUPYTER_TOKEN="$token" -e CIFARLAB_MODE=cpu \
  -e CIFARLAB_CUDA_BACKEND="$cuda_backend" -v "$work:/opt/cifarlab/notebooks/work" \
  "$image_tag" >/dev/null
user="$(podman "${storage[@]}" exec "$ctr" id -un)"
[ "$user" != root ] || fail "the container runs as root"
echo "container $ctr runs as $user, JupyterLab on 127.0.0.1:$port"
healthy=0
for _ in $(seq 1 90); do
  if podman "${storage[@]}" healthcheck run "$ctr" >/dev/null 2>&1; then healthy=1; break; fi
  if [ "$(podman "${storage[@]}" inspect -f '{{.State.Running}}' "$ctr")" != true ]; then
    podman "${storage[@]}" logs "$ctr" | tail -n 30; fail "the container exited"
  fi
  sleep 2
done
[ "$healthy" = 1 ] || { podman "${storage[@]}" logs "$ctr" | tail -n 30; fail "HEALTHCHECK did not pass within 180 s"; }
echo "HEALTHCHECK passed"
api="http://127.0.0.1:$port/api/kernelspecs"
code="$(curl -s -o /dev/null -w '%{http_code}' "$api")"
[ "$code" = 403 ] || [ "$code" = 401 ] || fail "GET /api/kernelspecs without the token answered $code, want 401 or 403"
code="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: token wrong$token" "$api")"
[ "$code" = 403 ] || [ "$code" = 401 ] || fail "GET /api/kernelspecs with a wrong token answered $code, want 401 or 403"
echo "token required (no token, wrong token: $code)"
specs="$(curl -fsS -H "Authorization: token $token" "$api")"
image_cuda="$(podman "${storage[@]}" exec "$ctr" cat /usr/local/share/jupyter/kernels/cifarlab-cuda/kernel.json)"
cpu_plugin="${CIFARLAB_DOCKER_CPU_PLUGIN-lammps_jax_pjrt_cpu}"
python3 - "$specs" "$cuda_backend" "$image_cuda" "$cpu_plugin" <<'EOF' || fail "kernelspecs served by the container are not as expected"
import json, sys
d = json.loads(sys.argv[1])
names = sorted(d["kernelspecs"])
want = {"cifarlab-cpu": "Go (cifarlab, CPU)", "cifarlab-cuda": "Go (cifarlab, CUDA)"}
for name, display in want.items():
    if name not in d["kernelspecs"]:
        sys.exit(f"kernelspec {name} missing; served: {names}")
    got = d["kernelspecs"][name]["spec"]["display_name"]
    if got != display:
        sys.exit(f"kernelspec {name}: display name {got!r}, want {display!r}")
if d["default"] != "cifarlab-cpu":
    sys.exit(f"default kernel {d['default']!r}, want 'cifarlab-cpu' (CIFARLAB_MODE=cpu)")
got = d["kernelspecs"]["cifarlab-cuda"]["spec"]["env"]["GOMLX_BACKEND"]
if got != sys.argv[2]:
    sys.exit(f"served cifarlab-cuda has GOMLX_BACKEND={got!r}, want CIFARLAB_CUDA_BACKEND {sys.argv[2]!r}")
image = json.loads(sys.argv[3])["env"]["GOMLX_BACKEND"]
if image == sys.argv[2]:
    sys.exit("the image's own CUDA kernelspec was changed; the override must be user-level")
cpu_env = d["kernelspecs"]["cifarlab-cpu"]["spec"]["env"]
if sys.argv[4]:
    path = cpu_env.get("PJRT_PLUGIN_LIBRARY_PATH", "") + " " + cpu_env["GOMLX_BACKEND"]
    if not cpu_env["GOMLX_BACKEND"].startswith("xla:") or sys.argv[4] not in path:
        sys.exit(f"the CPU kernel does not run XLA CPU from {sys.argv[4]}: GOMLX_BACKEND={cpu_env['GOMLX_BACKEND']!r}, "
                 f"PJRT_PLUGIN_LIBRARY_PATH={cpu_env.get('PJRT_PLUGIN_LIBRARY_PATH')!r}")
print("kernelspecs", names, "default", d["default"])
print(f"CPU kernel GOMLX_BACKEND: {cpu_env['GOMLX_BACKEND']} (PJRT_PLUGIN_LIBRARY_PATH={cpu_env.get('PJRT_PLUGIN_LIBRARY_PATH', '')})")
print(f"CUDA kernel GOMLX_BACKEND: {got} (image's kernelspec: {image})")
EOF
not_copied="$(podman "${storage[@]}" exec -w /opt/cifarlab/notebooks "$ctr" \
  bash -c 'n=0; for f in *.ipynb; do [ -f "$f" ] || continue; n=$((n+1)); cmp -s "$f" "work/$f" || echo "$f"; done; [ "$n" -gt 0 ] || echo "(no notebooks in the image)"')"
[ -z "$not_copied" ] || fail "the mounted work folder did not receive: $not_copied"
echo "mounted work folder received the image's notebooks: $(cd "$work" && echo *.ipynb)"
# An empty token would switch authentication off: the entry point must refuse to start.
set +e
out="$(podman "${storage[@]}" exec -e JUPYTER_TOKEN= "$ctr" /usr/local/bin/cifarlab-entrypoint 2>&1)"
rc=$?
set -e
[ "$rc" = 2 ] || fail "entry point with an empty JUPYTER_TOKEN: exit $rc, want 2 (output: $out)"
grep -q "JUPYTER_TOKEN is set but empty" <<<"$out" || fail "entry point with an empty JUPYTER_TOKEN: no explanation in: $out"
echo "empty JUPYTER_TOKEN refused"
# The project's own checklist, as the lab user: it exits non-zero when something required
# (tools, Jupyter, kernelspecs, the pure-Go backend) is missing or broken.
doctor="$(podman "${storage[@]}" exec "$ctr" cifarlab doctor)" || { echo "$doctor"; fail "cifarlab doctor failed inside the container"; }
echo "$doctor"
if [ -n "$cpu_plugin" ]; then
  # doctor computed 1+2 on the pure-Go backend and loaded the CPU plugin as the lab user.
  grep -q "backend cpu .*resolves to xla:cpu" <<<"$doctor" || fail "backends.New(\"cpu\") is not XLA CPU inside the image"
fi

# The compile cache's shared layer (docker/Dockerfile: notebook 01's programs, compiled at build):
# root's and read-only to the lab user (no attendee can change what the others load), and compiled
# for this machine (the image was built here), as doctor and the entry point's line say.
layer="$(podman "${storage[@]}" exec "$ctr" sh -c 'stat -c "%U %a" /opt/cifarlab/compile-cache; stat -c "%U %a" /opt/cifarlab/compile-cache/*.xla | sort | uniq -c')" \
  || fail "the image has no compiled programs in /opt/cifarlab/compile-cache"
echo "image's shared compile cache: $(tr '\n' ' ' <<<"$layer")"
if [ "$(head -n 1 <<<"$layer")" != "root 755" ] || [ "$(sed 1d <<<"$layer" | wc -l)" != 1 ] \
   || ! grep -Eq '^ *([3-9]|[1-9][0-9]+) root 644$' <<<"$(sed 1d <<<"$layer")"; then
  fail "/opt/cifarlab/compile-cache is not root's 0755 with 3 or more entries root's 0644: $layer"
fi
if podman "${storage[@]}" exec "$ctr" sh -c 'touch /opt/cifarlab/compile-cache/x.xla' 2>/dev/null; then
  fail "the lab user can write the image's shared compile cache"
fi
line="$(grep "compile cache" <<<"$doctor" || true)"
grep -Eq "shared /opt/cifarlab/compile-cache: ([0-9]+) programs \(\1 compiled on this machine\)" <<<"$line" \
  || fail "doctor does not say that the image's compiled programs serve this machine: ${line:-no compile cache line}"
line="$(podman "${storage[@]}" logs "$ctr" 2>&1 | grep "cifarlab: compile cache: " || true)"
grep -Eq "^cifarlab: compile cache: shared /opt/cifarlab/compile-cache: ([0-9]+) programs \(\1 compiled on this machine\)" <<<"$line" \
  || fail "the entry point did not say that the image's compiled programs serve this machine: ${line:-nothing}"
echo "entry point: $line"

# What a kernel generates for its user goes to the user's own places, which must be writable:
# the cache (os.UserCacheDir: $XDG_CACHE_HOME, else ~/.cache) and the home.
# shellcheck disable=SC2016 # expanded by the container's shell
podman "${storage[@]}" exec "$ctr" sh -c 'd="${XDG_CACHE_HOME:-$HOME/.cache}/cifarlab"; mkdir -p "$d" && test -w "$d" && test -w "$HOME"' \
  || fail "the lab user's cache folder (\$XDG_CACHE_HOME or ~/.cache) is not writable"
echo "the lab user's cache folder and home are writable"

# ---------------------------------------------------------------------------------------------
phase notebook
nb="${CIFARLAB_DOCKER_NOTEBOOK:-}"
if [ -z "$nb" ]; then
  first=(notebooks/01-*.ipynb)
  if [ -f "${first[0]}" ]; then nb="${first[0]}"; else nb=kernel/testdata/smoke.ipynb; fi
fi
[ -f "$nb" ] || fail "notebook $nb does not exist"
in_image="/opt/cifarlab/$nb"
podman "${storage[@]}" exec "$ctr" test -f "$in_image" \
  || fail "$nb is not in the image at $in_image (the image has notebooks/ and kernel/)"
set +e
case "$nb" in
  notebooks/*)
    # The notebooks carry their own expectations (cell metadata "cifarlab"), checked by
    # notebooks/nbcheck.py as in CI; it runs the notebook in its folder, as JupyterLab does.
    # The copy in the mounted work folder is the one an attendee opens: run that one.
    copy="/opt/cifarlab/notebooks/work/$(basename "$nb")"
    if podman "${storage[@]}" exec "$ctr" test -f "$copy"; then in_image="$copy"; fi
    # The kernel gets the server's CIFARLAB_RUNS, which the entry point set (the kernels of
    # JupyterLab inherit it; a podman exec does not); -B: no __pycache__ of nbcheck's modules.
    # shellcheck disable=SC2016 # expanded by the container's shell
    server_runs="$(podman "${storage[@]}" exec "$ctr" sh -c 'for p in /proc/[0-9]*; do
      if tr "\0" " " < "$p/cmdline" 2>/dev/null | grep -q "bin/[j]upyter-lab "; then tr "\0" "\n" < "$p/environ" | sed -n "s/^CIFARLAB_RUNS=//p"; break; fi
    done')"
    [ "$server_runs" = /opt/cifarlab/notebooks/work/runs ] \
      || fail "the server's CIFARLAB_RUNS is ${server_runs:-unset}, want the mounted work folder's runs (/opt/cifarlab/notebooks/work/runs)"
    echo "executing and checking $in_image with the cifarlab-cpu kernel inside the container (nbcheck.py; CIFARLAB_RUNS=$server_runs, the server's)"
    podman "${storage[@]}" exec -e CIFARLAB_RUNS="$server_runs" "$ctr" python3 -B /opt/cifarlab/notebooks/nbcheck.py --kernel cifarlab-cpu \
      --output-dir /tmp/nbout --report /tmp/nbreport.json "$in_image"
    nb_rc=$?
    podman "${storage[@]}" cp "$ctr:/tmp/nbreport.json" "$cache/notebook-report.json" 2>/dev/null
    podman "${storage[@]}" cp "$ctr:/tmp/nbout/$(basename "$nb")" "$cache/notebook-executed.ipynb" 2>/dev/null
    ;;
  *)
    echo "executing $in_image with the cifarlab-cpu kernel inside the container (run_notebook.py)"
    # GoNB logs verbosely on stderr: keep it in a file, shown when the run fails.
    podman "${storage[@]}" exec -w /tmp "$ctr" python3 /opt/cifarlab/kernel/run_notebook.py "$in_image" \
      --kernel cifarlab-cpu --first-timeout 900 --timeout 300 --out /tmp/executed.ipynb --summary /tmp/summary.json \
      2> "$cache/notebook-stderr.log"
    nb_rc=$?
    [ "$nb_rc" = 0 ] || tail -n 40 "$cache/notebook-stderr.log"
    podman "${storage[@]}" cp "$ctr:/tmp/summary.json" "$cache/notebook-summary.json" 2>/dev/null
    podman "${storage[@]}" cp "$ctr:/tmp/executed.ipynb" "$cache/notebook-executed.ipynb" 2>/dev/null
    python3 - "$cache/notebook-summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"notebook: ok={s['ok']} kernel={s['kernel']} wall={s['wall_s']:.1f}s failed_cells={s['failed_cells']}")
for c in s["cells"]:
    print(f"  cell {c['index']}: {c['status']}{' (expected error)' if c.get('expected_error') else ''} {c['seconds']:.1f}s")
    if c["status"] != "ok" and not c.get("expected_error"):
        print("    " + ((c.get("error") or {}).get("evalue") or c.get("stderr", ""))[:800])
EOF
    ;;
esac
set -e
[ "$nb_rc" = 0 ] || fail "$nb failed inside the container (exit $nb_rc; outputs in $cache)"
if [ "$nb" = kernel/testdata/smoke.ipynb ]; then
  # The smoke notebook prints what it ran with: check it ran against the image's repository,
  # with go.mod's versions, on the CPU kernel's backend, and computed [8 10] finite logits.
  cpu_spec="$(podman "${storage[@]}" exec "$ctr" cat /usr/local/share/jupyter/kernels/cifarlab-cpu/kernel.json)"
  python3 - "$cache/notebook-summary.json" go.mod "$cpu_spec" <<'EOF' || fail "the smoke notebook's output is not as expected"
import json, re, sys
s = json.load(open(sys.argv[1]))
out = "".join(c.get("stdout", "") for c in s["cells"])
mod = open(sys.argv[2]).read()
backend = json.loads(sys.argv[3])["env"]["GOMLX_BACKEND"]
def pinned(path):
    return re.search(r"^\s*" + re.escape(path) + r" (v\S+)", mod, re.M).group(1)
want = [
    "kernel: cpu",
    "GOMLX_BACKEND: " + backend + "\n",
    "cifarlib source: /opt/cifarlab/cifarlib/",
    "module github.com/gomlx/gomlx: " + pinned("github.com/gomlx/gomlx"),
    "module github.com/gomlx/compute: " + pinned("github.com/gomlx/compute"),
    "module github.com/gomlx/go-xla: " + pinned("github.com/gomlx/go-xla"),
    "logits shape: [8 10]",
    "logits finite: true",
]
missing = [w for w in want if w not in out]
if missing:
    sys.exit(f"missing from the notebook's output: {missing}\n--- output ---\n{out}")
print("smoke notebook output checked:", len(want), "lines")
EOF
fi

# What the container wrote, after its start (the entry point's kernel install) and a notebook:
# nothing into the image's own folders (the repository and its .bin, the kernelspecs, the data),
# which overlay storage cannot rename; the user's kernelspec and the cells' pins went to the home,
# the run folder to the mounted work folder (the user's own, where it outlives the container).
changed="$(podman "${storage[@]}" diff "$ctr" | awk '{print $2}')"
echo "the container changed $(grep -c . <<<"$changed") paths of the image: $(sed -n 's|^\(/[^/]*/[^/]*\).*|\1|p' <<<"$changed" | sort | uniq -c | sort -rn | awk '{printf "%s %s, ", $2, $1}')"
into_image="$(grep -E '^/(opt/cifarlab|opt/cifar-data|usr/local)/' <<<"$changed" || true)"
[ -z "$into_image" ] || fail "the container wrote into the image's folders (overlay storage cannot rename them): $(head -n 20 <<<"$into_image" | tr '\n' ' ')"
echo "nothing written into /opt/cifarlab, /opt/cifar-data or /usr/local"
case "$nb" in
  notebooks/01-*) # it trains a run
    runs=("$work"/runs/*/)
    [ -d "${runs[0]}" ] || fail "no run folder in the mounted work folder ($work/runs): CIFARLAB_RUNS did not reach the kernel"
    echo "run folders in the mounted work folder: $(cd "$work/runs" && echo */)"
    # Its training cell loaded every program from the image's shared compile cache, compiled none,
    # and the lab user's own folder holds no program: only the counts of the shared ones it loaded.
    python3 docker/cachecheck.py "$cache/notebook-executed.ipynb" || fail "notebook 01 did not load its programs from the image's shared compile cache"
    # shellcheck disable=SC2016 # expanded by the container's shell
    own="$(podman "${storage[@]}" exec "$ctr" sh -c 'ls -A "${XDG_CACHE_HOME:-$HOME/.cache}/cifarlab/xla-programs"')" \
      || fail "the lab user's own compile cache folder is missing"
    if grep -q '\.xla$' <<<"$own"; then fail "the lab user's own compile cache holds programs, compiled by notebook 01: $(tr '\n' ' ' <<<"$own")"; fi
    echo "the lab user's own compile cache: no program, the loads of $(grep -c '\.hits$' <<<"$own" || true) shared ones counted"
    ;;
esac

if [ "${CIFARLAB_DOCKER_KEEP:-0}" != 1 ]; then
  podman "${storage[@]}" rm -f -t 5 "$ctr" >/dev/null
fi

rm -rf "$work"
echo "docker/test.sh: ok in $(( $(date +%s) - t0 )) s"
