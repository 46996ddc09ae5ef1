#!/usr/bin/env bash
# bench/gpu-sweep.sh: the GPU check of issue 29, as one prepared script for a lent GPU machine
# (no network; its Python has jax-cuda13-pjrt, whose CUDA PJRT plugin XLA runs): a local sweep
# of two resnet20 runs on the CUDA backend (one GPU: one task at a time, CUDA_VISIBLE_DEVICES of
# each task recorded in run.json), each task's overhead on top of its training (the first step,
# which compiles, against the others), a sweep run again (every task done: exits at once), and
# a checkpoint's cost (60 steps with --checkpoint-every 1 against none).
#
# Here, first:   bash bench/gpu-sweep.sh --build     # -> bench/out/sweepgpu/cifarlab (25 MB)
# Then:          run(command="bash bench/gpu-sweep.sh", carry=["bench/out/sweepgpu"], timeout_s=420)
# Results in $OUT (or bench/out/sweepgpu/results): the runs, the task logs, ck0/ck1.json.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
HERE="$REPO/bench/out/sweepgpu"
B="$HERE/cifarlab"
if [ "${1:-}" = --build ]; then
  mkdir -p "$HERE" && CGO_ENABLED=1 go build -ldflags="-s -w" -o "$B" ./cmd/cifarlab && ls -la "$B"
  exit
fi
OUTD="${OUT:-$HERE/results}"; mkdir -p "$OUTD"
nvidia-smi -L
PLUGIN=""; PY=python3
for py in python3 /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python; do
  command -v "$py" >/dev/null 2>&1 || continue
  PLUGIN="$("$py" kernel/find_cuda_plugin.py 2>/dev/null || true)"; [ -n "$PLUGIN" ] && { PY="$py"; break; }
done
echo "plugin: $PLUGIN"
export CIFARLAB_CUDA_SITE="$(dirname "$(dirname "$(dirname "$PLUGIN")")")" GOMLX_NO_AUTO_INSTALL=1
D="$(mktemp -d)"
"$B" synth --dataset cifar10 --out "$D/data" --train 10000 --test 2000 >/dev/null
t0=$(date +%s%N)
"$B" sweep --runs "$OUTD/runs" --name gpu --grid seed=1,2 --data "$D/data" --model resnet20 --steps 300 --batch 128 \
  --backend cuda --checkpoint-every 100 --eval-examples 1000 --local 2>&1 | tail -8
t1=$(date +%s%N)
"$B" sweep --runs "$OUTD/runs" --name gpu --grid seed=1,2 --data "$D/data" --model resnet20 --steps 300 --batch 128 \
  --backend cuda --checkpoint-every 100 --eval-examples 1000 --local 2>&1 | tail -1
t2=$(date +%s%N)
echo "sweep: $(( (t1-t0)/1000000 )) ms; again (all done): $(( (t2-t1)/1000000 )) ms"
for ce in 0 1; do
  "$B" train --data "$D/data" --model resnet20 --steps 60 --batch 128 --backend cuda --checkpoint "$D/ck$ce" \
    --checkpoint-every $ce --no-eval --json >"$OUTD/ck$ce.json" 2>"$OUTD/ck$ce.err"
done
cp -r "$OUTD/runs/.sweeps/gpu/logs" "$OUTD/logs" 2>/dev/null
"$PY" - "$OUTD" <<'PYEOF'
import json, sys, glob, os
out = sys.argv[1]
for f in sorted(glob.glob(out + "/runs/*/run.json")):
    r = json.load(open(f)); res = r["result"]
    steps = res["end_step"] - res["start_step"]
    dur = res["duration_ns"] / 1e9; sps = res["steps_per_second"]
    first = dur - (steps - 1) / sps
    print(f"{os.path.basename(os.path.dirname(f))}: status {r['status']}, gpus {r['job'].get('gpus')!r}, wall {r['wall_time_ns']/1e9:.2f}s, "
          f"steps {dur:.2f}s, first step (compile) {first:.2f}s, {sps:.1f} steps/s, test acc {res['eval']['accuracy']:.4f}, backend {res['backend']}")
for ce in (0, 1):
    try:
        r = json.load(open(f"{out}/ck{ce}.json"))
        print(f"checkpoint-every {ce}: {r['steps_per_second']:.1f} steps/s, duration {r['duration_ns']/1e9:.2f}s")
    except Exception as e:
        print(f"checkpoint-every {ce}: {e}", open(f"{out}/ck{ce}.err").read()[-500:])
PYEOF
