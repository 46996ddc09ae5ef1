#!/usr/bin/env bash
# bench/run.sh: GoMLX (bench/trainstep, on every CPU backend available: go, xla-cpu) against
# PyTorch CPU (bench/torch_cpu.py) on the same models, the same machine, in the same run, with
# the same number of threads. Prints a table with ratios and writes bench/RESULTS.md.
#
#   bash bench/run.sh                 # full run: cnn, resnet20, resnet18 at batch 32 and 128
#   bash bench/run.sh --quick         # smoke: cnn and resnet20 at batch 32, 3 steps
#
# Settings (environment):
#   MODELS=cnn,resnet20,resnet18  BATCHES=32,128  MODES=train,infer
#   STEPS=10 WARMUP=2 BUDGET=120   timed steps (median), untimed first steps, seconds per measurement
#   BACKENDS=go,xla-cpu            GoMLX backends (xla-cpu is reported as skipped when not installed)
#   SKIP=go/resnet18/*             backend/model/batch patterns left out (the go backend's ResNet-18 takes
#                                  minutes per step: ~7 min at batch 128 on 2 cores); SKIP= runs everything
#   SIMD=1                         also time the pure-Go backend built with GOEXPERIMENT=simd (its AVX2/AVX-512
#                                  matmul kernels; reported as backend "go+simd"); SIMD=0 leaves it out
#   THREADS=$(nproc)               PyTorch threads; the Go side runs with GOMAXPROCS=THREADS and XLA CPU
#                                  uses one thread per core
#   OMP_POLICIES="PASSIVE ACTIVE"  PyTorch runs once per OpenMP wait policy and the faster counts: on a
#                                  loaded machine spinning OpenMP threads (ACTIVE, the default) run 3-10x
#                                  slower than sleeping ones (PASSIVE)
#   TORCH_PYTHON=...               a Python with torch already installed (default: bench/.venv-torch, created
#                                  from bench/requirements-torch.txt)
#   OUT=bench/out                  raw results, profiles, logs
#   RESULTS=bench/RESULTS.md       the Markdown report ("" to skip writing it)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

MODELS="${MODELS:-cnn,resnet20,resnet18}"
BATCHES="${BATCHES:-32,128}"
MODES="${MODES:-train,infer}"
STEPS="${STEPS:-10}"
WARMUP="${WARMUP:-2}"
BUDGET="${BUDGET:-120}"
BACKENDS="${BACKENDS:-go,xla-cpu}"
SKIP="${SKIP-go/resnet18/*}"
SIMD="${SIMD:-1}"
THREADS="${THREADS:-$(nproc)}"
OMP_POLICIES="${OMP_POLICIES:-PASSIVE ACTIVE}"
OUT="${OUT:-$REPO/bench/out}"
RESULTS="${RESULTS-$REPO/bench/RESULTS.md}"
if [ "${1:-}" = "--quick" ]; then
  MODELS="${QUICK_MODELS:-cnn,resnet20}"; BATCHES=32; STEPS=3; WARMUP=1; BUDGET=30
  RESULTS="${QUICK_RESULTS-}"
fi
mkdir -p "$OUT"
export GOMLX_NO_AUTO_INSTALL=1

# 1. PyTorch (CPU use of PyPI's CUDA wheel: see requirements-torch.txt).
PY="${TORCH_PYTHON:-}"
if [ -z "$PY" ]; then
  VENV="$REPO/bench/.venv-torch"
  STAMP="$VENV/.requirements.sha256"
  want="$(sha256sum bench/requirements-torch.txt | cut -d' ' -f1)"
  if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
    echo "== creating $VENV (PyTorch from PyPI, about 3.7 GB installed)"
    /usr/bin/python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps --require-hashes -r bench/requirements-torch.txt
    echo "$want" > "$STAMP"
  fi
  PY="$VENV/bin/python"
fi
"$PY" -c 'import torch' 2>/dev/null || { echo "run.sh: $PY cannot import torch" >&2; exit 1; }

# 2. The Go benchmark.
echo "== go build ./bench/trainstep"
go build -o "$OUT/trainstep" ./bench/trainstep
GO_SIMD=""
if [ "$SIMD" = 1 ] && [[ ",$BACKENDS," == *,go,* ]]; then
  echo "== GOEXPERIMENT=simd go build ./bench/trainstep (the go backend's SIMD matmul)"
  GOEXPERIMENT=simd go build -o "$OUT/trainstep-simd" ./bench/trainstep
  GO_SIMD="$OUT/trainstep-simd"
fi

# 3. Machine and versions.
load() { cut -d' ' -f1-3 /proc/loadavg; }
LOAD_BEFORE="$(load)"
PLUGIN="$("$OUT/trainstep" -list -backends xla-cpu 2>/dev/null | awk -F'\t' '$2 ~ /^xla/ {print $3}' || true)"
modver() { go list -m -f '{{.Version}}' "$1" 2>/dev/null || echo "?"; }
"$PY" - "$OUT/meta.json" <<EOF
import warnings; warnings.filterwarnings("ignore")
import json, platform, sys, torch, time, os, subprocess
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception: return ""
plugin = "$PLUGIN"
meta = {
  "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
  "machine": platform.node() + ", " + platform.platform(),
  "cpu": sh("lscpu | sed -n 's/^Model name: *//p' | head -1") + " (" + sh("grep -m1 -o -w -E 'avx512f|avx2' /proc/cpuinfo | head -1") + ")",
  "cores": sh("nproc") + " (lscpu: " + sh("lscpu | sed -n 's/^CPU(s): *//p' | head -1") + " CPUs, " + sh("lscpu | sed -n 's/^Thread(s) per core: *//p'") + " thread(s) per core)",
  "memory": sh("free -g | awk '/^Mem:/{print \$2\" GiB\"}'"),
  "threads": "$THREADS (PyTorch set_num_threads; Go GOMAXPROCS; XLA CPU: one per core)",
  "load_before": "$LOAD_BEFORE (1, 5, 15 min)",
  "go": sh("go version"),
  "gomlx": "gomlx $(modver github.com/gomlx/gomlx), compute $(modver github.com/gomlx/compute)",
  "go_xla": "go-xla $(modver github.com/gomlx/go-xla)",
  "xla_cpu_plugin": (plugin + " (PyPI lammps-jax-pjrt-cpu " + sh("'$REPO/.venv/bin/pip' show lammps-jax-pjrt-cpu 2>/dev/null | sed -n 's/^Version: //p'") + ")") if plugin else "not installed",
  "torch": "PyTorch " + torch.__version__ + " (" + torch.backends.cpu.get_cpu_capability() + ")",
  "python": platform.python_version(),
  "command": "bench/run.sh: MODELS=$MODELS BATCHES=$BATCHES STEPS=$STEPS WARMUP=$WARMUP BUDGET=$BUDGET BACKENDS=$BACKENDS SIMD=$SIMD SKIP='$SKIP'",
}
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF

# 4. Interleaved runs (per model and batch: GoMLX backends, then PyTorch), so slow drifts in the
#    machine's load hit both sides alike.
RES="$OUT/results.jsonl"
: > "$RES"
: > "$OUT/load.txt"
for model in ${MODELS//,/ }; do
  for batch in ${BATCHES//,/ }; do
    echo "== $model, batch $batch (load $(load))"
    cut -d' ' -f1 /proc/loadavg >> "$OUT/load.txt"
    runs=("$OUT/trainstep:$BACKENDS")
    [ -n "$GO_SIMD" ] && runs+=("$GO_SIMD:go")
    for run in "${runs[@]}"; do
      GOMAXPROCS="$THREADS" "${run%%:*}" -backends "${run#*:}" -models "$model" -batches "$batch" -modes "$MODES" \
        -steps "$STEPS" -warmup "$WARMUP" -budget "${BUDGET}s" -skip "$SKIP" -json "$RES" 2>&1 | grep --line-buffered -v '^W[0-9]\{4\} '
    done
    for policy in $OMP_POLICIES; do
      OMP_WAIT_POLICY="$policy" "$PY" bench/torch_cpu.py --threads "$THREADS" --models "$model" --batches "$batch" \
        --modes "$MODES" --steps "$STEPS" --warmup "$WARMUP" --budget "$BUDGET" --json "$RES" 2>&1 | grep --line-buffered -v -i numpy
    done
  done
done

# 5. Report.
"$PY" - "$OUT/meta.json" "$(load)" "$OUT/load.txt" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1])); m["load_after"] = sys.argv[2] + " (1, 5, 15 min)"
during = [float(x) for x in open(sys.argv[3]).read().split()]
if during:
    m["load_during"] = "1-min load average %.2f to %.2f at the start of each model/batch group (%d groups)" % (
        min(during), max(during), len(during))
json.dump(m, open(sys.argv[1], "w"), indent=1)
EOF
echo
"$PY" bench/report.py --results "$RES" --meta "$OUT/meta.json" --reference torch-cpu ${RESULTS:+--out "$RESULTS"}
[ -n "$RESULTS" ] && echo "wrote $RESULTS"
exit 0
