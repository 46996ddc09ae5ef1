#!/usr/bin/env bash
# kernel/gpu-smoke.sh: the kernel smoke test on a GPU machine, with the CUDA PJRT plugin that
# pip's jax-cuda13-pjrt ships. Prepared for a lent H200 machine (no network; its Python has
# jax-cuda13-pjrt 0.11.2); run from the repository root:
#
#   bash kernel/gpu-smoke.sh            # results also go to $OUT (or /tmp/cifarlab-gpu-smoke)
#
# Stages (each reports ok/FAIL/skip; the script goes on where it can and exits non-zero if a
# stage that could run failed):
#   1. GPU: nvidia-smi -L.
#   2. Plugin: SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so of the jax-cuda13-pjrt package
#      (found through Python's import system) and pip's NVIDIA libraries in SITE/nvidia
#      (cu13/lib for the plugin's RPATH $ORIGIN/../../nvidia/cu13/lib, cu13/bin/ptxas and
#      cu13/nvvm/libdevice for XLA).
#   3. Raw go-xla: loads the plugin by absolute path (GOMLX_BACKEND=xla:/abs/xla_cuda_plugin.so
#      style: go-xla's xla.New accepts an absolute plugin path) and runs the forward pass.
#   4. cifarlib: the same through backends.New("cuda"), configured exactly as the
#      "Go (cifarlab, CUDA)" kernelspec does it (see kernel.jaxCUDABackend): a folder with
#      pjrt_c_api_cuda_plugin.so -> the jax file and nvidia -> SITE/nvidia, named by
#      PJRT_PLUGIN_LIBRARY_PATH, and XLA_FLAGS=--xla_gpu_cuda_data_dir=SITE/nvidia/cu13.
#   5. Notebook: `cifarlab kernel install --cuda-plugin PLUGIN` into a temporary Jupyter data
#      directory and kernel/testdata/smoke.ipynb through the real GoNB kernel with the CUDA
#      kernelspec (needs jupyter + nbclient in some Python, and gonb/goimports/gopls in .bin
#      or buildable).
# Go builds run offline (GOPROXY=off) from the module cache, or from a vendor tree carried in
# out/gpu-vendor (30 MB; make it with: GOWORK=off go mod vendor -o out/gpu-vendor). Without a
# Go toolchain there, stages 3-4 use a prebuilt out/gpu-bin/gpusmoke if one was carried
# (GOWORK=off go build -o out/gpu-bin/gpusmoke ./kernel/testdata/gpusmoke; glibc of the build
# machine must not be newer than the GPU machine's), or the one GPUSMOKE_BIN names (bench/gpu.sh
# runs this script as its stage 4 with the gpusmoke it carries in bench/out/gpu).
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
OUTDIR="${OUT:-/tmp/cifarlab-gpu-smoke}"
mkdir -p "$OUTDIR"
WORK="$(mktemp -d /tmp/cifarlab-gpu-smoke.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
LOG="$OUTDIR/gpu-smoke.log"
: > "$LOG"
failed=0
say() { echo "$*" | tee -a "$LOG"; }
result() { say "[$1] $2"; [ "$1" = FAIL ] && failed=1; return 0; }

say "== cifarlab GPU smoke test, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"

# 1. GPU
if command -v nvidia-smi >/dev/null && nvidia-smi -L > "$WORK/gpus" 2>&1; then
  result ok "GPU: $(tr '\n' ';' < "$WORK/gpus")"
  nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader >> "$LOG" 2>&1
else
  result FAIL "GPU: nvidia-smi failed: $(cat "$WORK/gpus" 2>/dev/null)"
fi

# 2. The plugin of jax-cuda13-pjrt, and pip's NVIDIA libraries.
PLUGIN="${CIFARLAB_CUDA_PLUGIN:-}"
for py in ${PYTHON:-} python3 /usr/bin/python3 /usr/local/bin/python3; do
  [ -n "$PLUGIN" ] && break
  command -v "$py" >/dev/null || continue
  PLUGIN="$("$py" "$REPO/kernel/find_cuda_plugin.py" 2>/dev/null || true)"
  [ -n "$PLUGIN" ] && PLUGIN_PY="$py"
done
if [ -z "$PLUGIN" ] || [ ! -f "$PLUGIN" ]; then
  result FAIL "plugin: no jax_plugins/xla_cuda13/xla_cuda_plugin.so in any Python (pip install jax-cuda13-pjrt jax-cuda13-plugin[with-cuda]); set CIFARLAB_CUDA_PLUGIN=/path to name it"
  say "== result: FAIL"; exit 1
fi
SITE="$(dirname "$(dirname "$(dirname "$PLUGIN")")")"
say "plugin: $PLUGIN ($(du -h "$PLUGIN" | cut -f1)); site-packages: $SITE"
"${PLUGIN_PY:-python3}" -m pip show jax-cuda13-pjrt 2>/dev/null | grep -E "^(Name|Version):" | tee -a "$LOG"
readelf -d "$PLUGIN" 2>/dev/null | grep -E "RPATH|RUNPATH" | cut -c1-200 >> "$LOG"
NV="$SITE/nvidia"
DATA=""
if [ -d "$NV/cu13/lib" ]; then
  [ -x "$NV/cu13/bin/ptxas" ] && DATA="$NV/cu13"
  result ok "NVIDIA libraries: $NV (cu13/lib; ptxas: $([ -n "$DATA" ] && echo yes || echo no); libdevice: $(ls "$NV"/cu13/nvvm/libdevice/*.bc 2>/dev/null | head -1))"
else
  result FAIL "NVIDIA libraries: $NV/cu13/lib missing (pip install jax-cuda13-plugin[with-cuda])"
fi

# Go, offline.
export GOMLX_NO_AUTO_INSTALL=1 GOPROXY=off
if [ -d "$REPO/out/gpu-vendor" ] && [ ! -e "$REPO/vendor" ]; then
  cp -r "$REPO/out/gpu-vendor" "$REPO/vendor" && export GOFLAGS="-mod=vendor"
  trap 'rm -rf "$WORK" "$REPO/vendor"' EXIT
fi
HAVE_GO=1
if [ -n "${GPUSMOKE_BIN:-}" ] && [ -x "$GPUSMOKE_BIN" ]; then
  # A prebuilt gpusmoke (bench/gpu.sh --build carries one): no build here.
  cp "$GPUSMOKE_BIN" "$WORK/gpusmoke"
  result ok "build: using the prebuilt $GPUSMOKE_BIN"
  command -v go >/dev/null || HAVE_GO=0
  PREBUILT=1
elif ! command -v go >/dev/null; then
  HAVE_GO=0
  if [ -x "$REPO/out/gpu-bin/gpusmoke" ]; then
    cp "$REPO/out/gpu-bin/gpusmoke" "$WORK/gpusmoke"
    result ok "build: no Go toolchain here; using the carried out/gpu-bin/gpusmoke"
  else
    result FAIL "go: no Go toolchain on this machine and no carried out/gpu-bin/gpusmoke; stages 3-5 need one"
    say "== result: FAIL"; exit 1
  fi
else
  say "go: $(go version)"
fi
if [ "$HAVE_GO" = 0 ] || [ "${PREBUILT:-0}" = 1 ]; then
  :
elif GOWORK=off go build -o "$WORK/gpusmoke" ./kernel/testdata/gpusmoke > "$WORK/build.log" 2>&1; then
  result ok "build: kernel/testdata/gpusmoke"
else
  result FAIL "build: go build ./kernel/testdata/gpusmoke failed offline (module cache missing? carry out/gpu-vendor): $(tail -3 "$WORK/build.log" | tr '\n' ' ')"
  say "== result: FAIL"; exit 1
fi

# 3. go-xla alone, plugin by absolute path.
say "-- raw go-xla: xla.New($PLUGIN)"
if timeout 300 env ${DATA:+XLA_FLAGS=--xla_gpu_cuda_data_dir=$DATA} "$WORK/gpusmoke" -raw -plugin "$PLUGIN" > "$WORK/raw.out" 2>&1; then
  cat "$WORK/raw.out" >> "$LOG"; tail -5 "$WORK/raw.out"
  result ok "raw go-xla forward pass on the GPU"
else
  cat "$WORK/raw.out" >> "$LOG"; tail -5 "$WORK/raw.out" | cut -c1-300
  result FAIL "raw go-xla forward pass (output above)"
fi

# 4. backends.New("cuda") with the kernelspec's configuration.
LINKS="$WORK/pjrt-cuda"
PDIR="$LINKS/jax_plugins/$(basename "$(dirname "$PLUGIN")")"
mkdir -p "$PDIR"
ln -s "$PLUGIN" "$PDIR/pjrt_c_api_cuda_plugin.so"
[ -d "$NV" ] && ln -s "$NV" "$LINKS/nvidia"
say "-- cifarlib: PJRT_PLUGIN_LIBRARY_PATH=$PDIR GOMLX_BACKEND=xla:cuda ${DATA:+XLA_FLAGS=--xla_gpu_cuda_data_dir=$DATA}"
if timeout 300 env PJRT_PLUGIN_LIBRARY_PATH="$PDIR" GOMLX_BACKEND=xla:cuda ${DATA:+XLA_FLAGS=--xla_gpu_cuda_data_dir=$DATA} \
     "$WORK/gpusmoke" -backend cuda > "$WORK/cifarlib.out" 2>&1; then
  cat "$WORK/cifarlib.out" >> "$LOG"; tail -5 "$WORK/cifarlib.out"
  result ok "backends.New(\"cuda\") forward pass on the GPU"
else
  cat "$WORK/cifarlib.out" >> "$LOG"; tail -5 "$WORK/cifarlib.out" | cut -c1-300
  result FAIL "backends.New(\"cuda\") forward pass (output above)"
fi

# 5. The notebook through the real GoNB kernel with the CUDA kernelspec.
JPY=""
for py in "$REPO/.venv/bin/python" ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c "import nbclient, nbformat, jupyter_client" 2>/dev/null; then JPY="$py"; break; fi
done
if [ "$HAVE_GO" = 0 ]; then
  result skip "notebook: GoNB compiles every cell with go, which this machine lacks"
elif [ -z "$JPY" ]; then
  result skip "notebook: no Python with nbclient here (pip is unreachable offline); stages 3-4 cover the plugin and cifarlib"
elif ! GOWORK=off go build -o "$WORK/cifarlab" ./cmd/cifarlab > "$WORK/build2.log" 2>&1; then
  result FAIL "notebook: go build ./cmd/cifarlab failed: $(tail -3 "$WORK/build2.log" | tr '\n' ' ')"
else
  export JUPYTER_DATA_DIR="$WORK/jupyter" JUPYTER_PREFER_ENV_PATH=0  # this folder before any venv's kernels
  # GoNB's go.work (and tools/) must not see the vendor setting of stages 3-4.
  if env -u GOFLAGS "$WORK/cifarlab" kernel install --repo "$REPO" --cuda-plugin "$PLUGIN" 2>&1 | tee -a "$LOG"; then
    env -u GOFLAGS PATH="$(dirname "$JPY"):$PATH" timeout 900 "$JPY" kernel/run_notebook.py kernel/testdata/smoke.ipynb \
      --kernel cifarlab-cuda --first-timeout 600 --timeout 300 \
      --summary "$OUTDIR/smoke-cuda.json" --out "$OUTDIR/smoke-cuda.ipynb" --kernel-log "$OUTDIR/kernel-cuda.log"
    "$JPY" - "$OUTDIR/smoke-cuda.json" <<'EOF' | tee -a "$LOG"
import json, sys
s = json.load(open(sys.argv[1]))
for c in s["cells"]:
    print("cell %d: %s in %.1f s" % (c["index"], c["status"], c["seconds"]))
    print("  " + (c["stdout"] + c["stderr"]).strip().replace("\n", "\n  "))
print("notebook ok:", s["ok"])
EOF
    if grep -q '"ok": true' "$OUTDIR/smoke-cuda.json" 2>/dev/null && grep -q "logits finite: true" "$OUTDIR/smoke-cuda.json"; then
      result ok "notebook: smoke.ipynb with the CUDA kernelspec"
    else
      result FAIL "notebook: smoke.ipynb with the CUDA kernelspec (see $OUTDIR/smoke-cuda.json, kernel-cuda.log)"
    fi
  else
    result FAIL "notebook: cifarlab kernel install failed (gonb/goimports/gopls missing and not buildable offline?)"
  fi
fi

if [ "$failed" = 0 ]; then say "== result: ok"; else say "== result: FAIL"; fi
exit "$failed"
