#!/usr/bin/env bash
# bench/gpu.sh: the GPU check of issue 8, as one prepared script for a lent H200 machine (no
# network; its Python has torch 2.11 and jax-cuda13-pjrt 0.11.2, whose CUDA PJRT plugin XLA runs).
#
# Here, first (this machine has the Go module cache; the GPU machine may have no Go at all):
#
#   bash bench/gpu.sh --build          # -> bench/out/gpu/{cifarlib.test,trainstep} (~45 MB, stripped)
#
# Then on the GPU machine, from the repository root, in one device call carrying that folder:
#
#   run(command="bash bench/gpu.sh", carry=["bench/out/gpu"], timeout_s=600)
#
# Stages (each prints [ok]/[FAIL]/[skip]; the script goes on where it can; exit status 1 if any failed):
#   1. GPU: nvidia-smi.
#   2. The CUDA plugin: SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so of jax-cuda13-pjrt, found through
#      the import system of the first Python that has it (or $CIFARLAB_CUDA_PLUGIN); its NVIDIA libraries
#      come from SITE/nvidia/cu13 (the plugin's RPATH). cifarlib.NewBackend("cuda") loads it by absolute
#      path from $CIFARLAB_CUDA_PLUGIN and points XLA at SITE/nvidia/cu13 for ptxas/libdevice.
#   3. Guard tests with GOMLX_BACKEND=cuda: the prebuilt cifarlib test binary, -test.run GUARD_TESTS.
#   4. Throughput, ResNet-18 (and the cnn) CIFAR training on the same GPU: bench/trainstep
#      -backends cuda against bench/torch_cpu.py --device cuda (PyTorch eager, cudnn.benchmark, TF32 as
#      XLA's default), median step time, images/s, ratio table (bench/report.py).
#   5. Data parallelism (issue 12): the same training at one global batch on 1, 2, 4, 8 and all GPUs
#      (bench/devices -backend cuda: each batch sharded across the GPUs, one program partitioned by XLA;
#      counts above the GPUs present are skipped), steps/s and images/s.
# Results: $OUT (the device tool's output folder) or bench/out/gpu-results: gpu.log, guard-tests.log,
# results.jsonl, RESULTS-gpu.md, devices.jsonl.
#
# Settings: GPU_MODELS=resnet18,cnn GPU_BATCHES=128,256 GPU_STEPS=20 GPU_WARMUP=3 GPU_DEADLINE=560 (s)
#           GUARD_TESTS=<regexp> PYTHON=<python with torch> CIFARLAB_CUDA_PLUGIN=<plugin .so>
#           GPU_DP_MODEL=resnet18 GPU_DP_BATCH=512 GPU_DP_DEVICES=1,2,4,8,all GPU_DP_STEPS=30
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
BIN="$REPO/bench/out/gpu"

# The guard, loss and model tests (backend-generic, via testBackend) plus the CUDA checks.
GUARD_TESTS="${GUARD_TESTS:-^(TestCheckLabels|TestHostGuard.*|TestTrainStepEachArchitecture|TestTrainerSurfacesGuardErrors|TestDeviceGuardInLoop|TestUnguardedLossIsSilent|TestGuardedLossValues|TestStaticGuardHeadMismatch|TestInGraphGuard.*|TestIgnoreIndex|TestLabelContract|TestModelOutputDimensions|TestModelFnRejectsBadImages|TestCUDAMatchesGo|TestNewBackendCUDA.*)\$}"

if [ "${1:-}" = "--build" ]; then
  set -e
  mkdir -p "$BIN"
  go test -c -ldflags='-s -w' -o "$BIN/cifarlib.test" ./cifarlib
  go build -ldflags='-s -w' -o "$BIN/trainstep" ./bench/trainstep
  go build -ldflags='-s -w' -o "$BIN/devices" ./bench/devices
  ls -la "$BIN"
  echo "carry: bench/out/gpu ($(du -sh "$BIN" | cut -f1)); then: bash bench/gpu.sh"
  exit 0
fi

OUTDIR="${OUT:-$REPO/bench/out/gpu-results}"
mkdir -p "$OUTDIR"
LOG="$OUTDIR/gpu.log"
: > "$LOG"
failed=0
T0=$(date +%s)
DEADLINE="${GPU_DEADLINE:-560}" # seconds for the whole script (the device tool allows 600 per call)
# left N: seconds for a stage, at most N, never past the deadline (minus 5 s for the report).
left() { local r=$(( DEADLINE - ($(date +%s) - T0) - 5 )); [ "$r" -gt "$1" ] && r=$1; [ "$r" -lt 1 ] && r=1; echo "$r"; }
say() { echo "$*" | tee -a "$LOG"; }
result() { say "[$1] $2"; [ "$1" = FAIL ] && failed=1; return 0; }
finish() { say "== gpu.sh: $([ $failed = 0 ] && echo ok || echo FAIL)"; exit $failed; }
say "== cifarlab bench/gpu.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"

# 1. GPU.
if command -v nvidia-smi >/dev/null && nvidia-smi -L > "$OUTDIR/gpus.txt" 2>&1; then
  result ok "GPU: $(tr '\n' ';' < "$OUTDIR/gpus.txt")"
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader 2>&1 | tee -a "$LOG"
else
  result FAIL "GPU: nvidia-smi failed: $(cat "$OUTDIR/gpus.txt" 2>/dev/null)"
fi

# 2. Python with torch, and the jax-cuda13-pjrt plugin.
PY=""
for py in ${PYTHON:-} python3 python /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python; do
  command -v "$py" >/dev/null 2>&1 || continue
  if "$py" -c 'import torch' >/dev/null 2>&1; then PY="$(command -v "$py")"; break; fi
done
[ -n "$PY" ] && result ok "python with torch: $PY ($("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1))" \
             || result FAIL "python: no python3 here imports torch (set PYTHON=...)"
PLUGIN="${CIFARLAB_CUDA_PLUGIN:-}"
for py in $PY ${PYTHON:-} python3 /usr/bin/python3 /usr/local/bin/python3; do
  [ -n "$PLUGIN" ] && break
  command -v "$py" >/dev/null 2>&1 || continue
  PLUGIN="$("$py" "$REPO/kernel/find_cuda_plugin.py" 2>/dev/null || true)"
done
if [ -z "$PLUGIN" ] || [ ! -f "$PLUGIN" ]; then
  result FAIL "CUDA plugin: no jax_plugins/xla_cuda13/xla_cuda_plugin.so (pip's jax-cuda13-pjrt) in any Python; set CIFARLAB_CUDA_PLUGIN=/path"
else
  SITE="$(dirname "$(dirname "$(dirname "$PLUGIN")")")"
  NV="$SITE/nvidia/cu13"
  result ok "CUDA plugin: $PLUGIN ($(du -h "$PLUGIN" | cut -f1)); NVIDIA libraries: $([ -d "$NV/lib" ] && echo "$NV/lib" || echo "MISSING $NV/lib"); ptxas: $([ -x "$NV/bin/ptxas" ] && echo yes || echo no)"
  readelf -d "$PLUGIN" 2>/dev/null | grep -E "RPATH|RUNPATH" | cut -c1-200 >> "$LOG"
  export CIFARLAB_CUDA_PLUGIN="$PLUGIN"
  # Fallback for the NVIDIA libraries when they are not where the plugin's RPATH says.
  if [ ! -d "$NV/lib" ]; then
    extra="$(ls -d "$SITE"/nvidia/*/lib 2>/dev/null | tr '\n' ':')"
    [ -n "$extra" ] && export LD_LIBRARY_PATH="${extra}${LD_LIBRARY_PATH:-}"
  fi
fi
export GOMLX_NO_AUTO_INSTALL=1

# Binaries: prebuilt (bench/gpu.sh --build, carried) or built here offline.
if [ ! -x "$BIN/cifarlib.test" ] || [ ! -x "$BIN/trainstep" ]; then
  if command -v go >/dev/null; then
    say "-- no prebuilt binaries in $BIN: building offline with $(go version)"
    mkdir -p "$BIN"
    GOFLAGS="${GOFLAGS:-} -mod=mod" GOPROXY=off go test -c -o "$BIN/cifarlib.test" ./cifarlib > "$OUTDIR/build.log" 2>&1 &&
      GOFLAGS="${GOFLAGS:-} -mod=mod" GOPROXY=off go build -o "$BIN/trainstep" ./bench/trainstep >> "$OUTDIR/build.log" 2>&1 ||
      result FAIL "build: $(tail -3 "$OUTDIR/build.log" | tr '\n' ' ') (run bash bench/gpu.sh --build where the module cache is, and carry bench/out/gpu)"
  else
    result FAIL "binaries: $BIN/cifarlib.test and trainstep missing and no Go here: run bash bench/gpu.sh --build first and carry bench/out/gpu"
  fi
fi
[ -x "$BIN/cifarlib.test" ] && [ -x "$BIN/trainstep" ] || finish
if [ ! -x "$BIN/devices" ] && command -v go >/dev/null; then
  GOFLAGS="${GOFLAGS:-} -mod=mod" GOPROXY=off go build -o "$BIN/devices" ./bench/devices >> "$OUTDIR/build.log" 2>&1
fi

# Does cifarlib pick the plugin up?
if timeout "$(left 120)" "$BIN/trainstep" -list -backends cuda > "$OUTDIR/backend.txt" 2>&1 && grep -q "xla:cuda" "$OUTDIR/backend.txt"; then
  result ok "cifarlib.NewBackend(\"cuda\"): $(grep -v '^[WIE][0-9]\{4\}' "$OUTDIR/backend.txt" | head -1 | tr '\t' ' ')"
else
  result FAIL "cifarlib.NewBackend(\"cuda\"): $(tail -5 "$OUTDIR/backend.txt" | tr '\n' ' ')"
fi
say "XLA_FLAGS seen by the Go side: set by cifarlib when SITE/nvidia/cu13 has ptxas or libdevice"

# 3. Guard tests on CUDA.
say "-- guard tests: GOMLX_BACKEND=cuda cifarlib.test -test.run '$GUARD_TESTS' -test.short"
start=$(date +%s)
if (cd cifarlib && GOMLX_BACKEND=cuda timeout "$(left 200)" "$BIN/cifarlib.test" -test.run "$GUARD_TESTS" -test.short -test.v -test.count=1) \
     > "$OUTDIR/guard-tests.log" 2>&1; then
  result ok "guard tests on cuda: $(grep -c '^--- PASS' "$OUTDIR/guard-tests.log") passed, $(grep -c '^--- SKIP' "$OUTDIR/guard-tests.log") skipped in $(( $(date +%s) - start )) s"
else
  result FAIL "guard tests on cuda ($(( $(date +%s) - start )) s): $(grep -E '^(--- FAIL|FAIL|panic)' "$OUTDIR/guard-tests.log" | head -8 | tr '\n' ' ')"
  tail -40 "$OUTDIR/guard-tests.log" >> "$LOG"
fi
grep -E '^(--- |ok|PASS|FAIL)' "$OUTDIR/guard-tests.log" | head -60 | tee -a "$LOG"

# 4. Throughput: XLA CUDA vs PyTorch eager on the same GPU.
MODELS="${GPU_MODELS:-resnet18,cnn}"
BATCHES="${GPU_BATCHES:-128,256}"
STEPS="${GPU_STEPS:-20}"
WARMUP="${GPU_WARMUP:-3}"
RES="$OUTDIR/results.jsonl"
: > "$RES"
for model in ${MODELS//,/ }; do
  [ "$(left 1000)" -lt 60 ] && { result skip "$model: under a minute left before the deadline"; continue; }
  say "-- $model: XLA CUDA (bench/trainstep)"
  timeout "$(left 180)" "$BIN/trainstep" -backends cuda -models "$model" -batches "$BATCHES" -modes train,infer \
    -steps "$STEPS" -warmup "$WARMUP" -budget 60s -json "$RES" 2>&1 | grep -v '^[WI][0-9]\{4\} ' | tee -a "$LOG" ||
    result FAIL "trainstep cuda $model"
  if [ -n "$PY" ]; then
    say "-- $model: PyTorch eager (bench/torch_cpu.py --device cuda)"
    timeout "$(left 90)" "$PY" bench/torch_cpu.py --device cuda --models "$model" --batches "$BATCHES" --modes train,infer \
      --steps "$STEPS" --warmup "$WARMUP" --budget 60 --json "$RES" 2>&1 | tee -a "$LOG" || result FAIL "torch cuda $model"
  fi
done
REPORT_PY="${PY:-python3}"
if grep -q '"steps":* *[1-9]' "$RES" 2>/dev/null; then
  "$REPORT_PY" bench/report.py --results "$RES" --reference torch-cuda \
    --title "cifarlab on $(head -1 "$OUTDIR/gpus.txt" 2>/dev/null | sed 's/ (UUID.*//'): XLA CUDA vs PyTorch eager" \
    --out "$OUTDIR/RESULTS-gpu.md" 2>&1 | tee -a "$LOG"
  grep -q '"backend":"cuda".*"steps":[1-9]' "$RES" && result ok "XLA CUDA throughput measured" || result FAIL "XLA CUDA throughput: no measurement (see above)"
else
  result FAIL "throughput: no measurements"
fi

# 5. Data parallelism over the GPUs of this host: bench/devices, each global batch sharded across N GPUs.
if [ ! -x "$BIN/devices" ]; then
  result FAIL "data parallelism: $BIN/devices missing (bash bench/gpu.sh --build)"
elif [ "$(left 1000)" -lt 60 ]; then
  result skip "data parallelism: under a minute left before the deadline"
else
  say "-- data parallelism over $(grep -c '^GPU ' "$OUTDIR/gpus.txt" 2>/dev/null) GPU(s): bench/devices -backend cuda"
  if timeout "$(left 240)" "$BIN/devices" -backend cuda -model "${GPU_DP_MODEL:-resnet18}" -batch "${GPU_DP_BATCH:-512}" \
       -devices "${GPU_DP_DEVICES:-1,2,4,8,all}" -steps "${GPU_DP_STEPS:-30}" -json "$OUTDIR/devices.jsonl" > "$OUTDIR/devices.txt" 2>&1; then
    result ok "data parallelism: $(grep -c '"devices"' "$OUTDIR/devices.jsonl") device counts measured"
  else
    result FAIL "data parallelism: $(grep -v '^[WIE][0-9]\{4\} ' "$OUTDIR/devices.txt" | tail -3 | tr '\n' ' ')"
  fi
  grep -v '^[WI][0-9]\{4\} ' "$OUTDIR/devices.txt" | tee -a "$LOG"
fi
finish
