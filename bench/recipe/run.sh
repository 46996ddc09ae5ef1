#!/usr/bin/env bash
# bench/recipe/run.sh: the airbench94 recipe in the lab against airbench's own code, on the CPU, on
# the same real CIFAR-10 images, at equal epochs, over several seeds (issue 37, item 2). Writes one
# result per side and seed into $OUT and then bench/RESULTS-recipe.md (bench/recipe/report.py).
#
#   bash bench/recipe/run.sh                 # both sides, EPOCHS=2, SEEDS="0 1 2", then the report
#   SIDES=airbench bash bench/recipe/run.sh  # one side (airbench or lab); SIDES=report: only the report
#
# airbench: airbench 0.1.8's train()/make_net94/hyp through bench/recipe/airbench_cpu.py (CPU f32;
#   what it patches is in its header), on DATA converted to airbench's train.pt/test.pt by
#   bench/recipe/cifar10_to_pt.py into $SCRATCH (never the repository). Python: $TORCH_PYTHON, or
#   bench/.venv-torch (bench/requirements-torch.txt, as bench/run.sh makes it), into which
#   bench/recipe/requirements-airbench.txt is installed when airbench is missing.
# lab: `cifarlab train --recipe airbench94 --epochs $EPOCHS --seed S --backend cpu` (XLA CPU, f32),
#   built from this checkout, with a validation on the whole test split after every epoch (as
#   airbench's verbose train() does) and the recipe's TTA on the final evaluation; its run folder
#   (run.json with the timeline, history.json) and its --json result go to $OUT/lab-eE-sS/.
#
# A result already in $OUT is kept (delete it to run that seed again). Each run is under `nice`, one
# at a time. Settings (environment):
#   EPOCHS=2  SEEDS="0 1 2"  SIDES=airbench,lab  DATA=/work/c10real (the folder holding
#   cifar-10-batches-bin/)  SCRATCH=/tmp/cifarlab-recipe  OUT=bench/out/recipe  THREADS=$(nproc)
#   OMP_WAIT_POLICY=PASSIVE (PyTorch; see bench/README.md)  RESULTS=bench/RESULTS-recipe.md ("" skips)
#   LAB_FLAGS="" (more flags for cifarlab train)  NOTES=<Markdown appended to the report, e.g.
#   bench/recipe/findings-cpu.md: what was found reading these results>
#   NICE=10 (the niceness of each run)
#   FULL=0 (1: the full recipe, which must run on the whole CIFAR-10: DATA's batches are checked
#   to be 5 training files of 10,000 records and a test file of 10,000, and a subset or a folder of
#   mixed batches is refused before anything runs; the report then calls the runs full size)
#   CIFARLAB_COMMIT=? (the commit a given CIFARLAB was built from, for meta.json)
#   DEVICE=cpu (cuda: airbench as written on the GPU, after its own warm-up run, and the lab with
#   --backend cuda; bench/gpu.sh stage 12 runs it so)  CIFARLAB=<a built cifarlab> (default: go build)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
EPOCHS="${EPOCHS:-2}"
SEEDS="${SEEDS:-0 1 2}"
SIDES="${SIDES:-airbench,lab}"
DATA="${DATA:-/work/c10real}"
SCRATCH="${SCRATCH:-/tmp/cifarlab-recipe}"
OUT="${OUT:-$REPO/bench/out/recipe}"
THREADS="${THREADS:-$(nproc)}"
RESULTS="${RESULTS-$REPO/bench/RESULTS-recipe.md}"
LAB_FLAGS="${LAB_FLAGS:-}"
DEVICE="${DEVICE:-cpu}"
CIFARLAB="${CIFARLAB:-}"
FULL="${FULL:-0}"
NICE="${NICE:-10}"
case "$DEVICE" in
  cpu) AB_FLAGS=(--device cpu --threads "$THREADS"); BACKEND=cpu ;;
  cuda) AB_FLAGS=(--device cuda --warmup); BACKEND=cuda ;;
  *) echo "run.sh: DEVICE=$DEVICE: use cpu or cuda" >&2; exit 1 ;;
esac
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" GOMLX_NO_AUTO_INSTALL=1
mkdir -p "$OUT"
[ -d "$DATA/cifar-10-batches-bin" ] || { echo "run.sh: no cifar-10-batches-bin/ in DATA=$DATA (the folder that holds it)" >&2; exit 1; }
BIN="$DATA/cifar-10-batches-bin"
records() { [ -f "$1" ] && echo $(( $(stat -c %s "$1") / 3073 )) || echo missing; }
if [ "$FULL" = 1 ]; then
  # The full recipe on the whole data set only: a 20k subset, or batches of mixed sizes, is not "full".
  counts="$(for f in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
    echo -n "$f $(records "$BIN/$f.bin"), "; done)"
  [ "$counts" = "data_batch_1 10000, data_batch_2 10000, data_batch_3 10000, data_batch_4 10000, data_batch_5 10000, test_batch 10000, " ] || {
    echo "run.sh: FULL=1 needs the whole CIFAR-10 (5 training batches of 10000 records and a test batch of 10000) in $BIN; it holds ${counts%, }: convert all 60,000 images (bench/cifar10jpeg) or drop FULL=1" >&2; exit 1; }
fi
side() { [[ ",$SIDES," == *",$1,"* ]]; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
PY="${TORCH_PYTHON:-$REPO/bench/.venv-torch/bin/python}"

if side airbench; then
  "$PY" -c 'import torch' 2>/dev/null || {
    echo "run.sh: $PY cannot import torch: make bench/.venv-torch as bench/run.sh does (or set TORCH_PYTHON)" >&2; exit 1; }
  if ! "$PY" -c 'import airbench, torchvision' 2>/dev/null; then
    echo "== installing bench/recipe/requirements-airbench.txt into $("$PY" -c 'import sys; print(sys.prefix)')"
    "$PY" -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r bench/recipe/requirements-airbench.txt
  fi
  # The .pt files are made again whenever DATA's batches are not the ones they were made from.
  stamp="$(realpath "$BIN"; stat -c '%n %s %Y' "$BIN"/*.bin)"
  if [ ! -f "$SCRATCH/cifar10/test.pt" ] || [ "$(cat "$SCRATCH/cifar10/made-from" 2>/dev/null)" != "$stamp" ]; then
    rm -f "$SCRATCH/cifar10/made-from"
    "$PY" bench/recipe/cifar10_to_pt.py --data "$DATA" --out "$SCRATCH/cifar10"
    echo "$stamp" > "$SCRATCH/cifar10/made-from"
  fi
  for seed in $SEEDS; do
    res="$OUT/airbench-e$EPOCHS-s$seed.json"
    [ -f "$res" ] && { echo "== airbench seed $seed: kept $res"; continue; }
    echo "== airbench seed $seed, $EPOCHS epochs (load $(load))"
    nice -n "$NICE" "$PY" bench/recipe/airbench_cpu.py "${AB_FLAGS[@]}" --data "$SCRATCH" --epochs "$EPOCHS" --seed "$seed" \
      --json "$res" 2>&1 | tee "$OUT/airbench-e$EPOCHS-s$seed.log"
  done
fi

if side lab; then
  # COMMIT: the commit cifarlab is built from ("+changes": with uncommitted changes outside bench/),
  # recorded in each seed's meta.json; for a given CIFARLAB, CIFARLAB_COMMIT says it ("?" if not).
  COMMIT="${CIFARLAB_COMMIT:-?}"
  if [ -z "$CIFARLAB" ]; then
    echo "== go build ./cmd/cifarlab"
    go build -o "$OUT/cifarlab" ./cmd/cifarlab
    CIFARLAB="$OUT/cifarlab"
    COMMIT="$(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- . ':!bench' || echo +changes)"
  fi
  # Steps per epoch as the recipe counts them (airbench's too): the whole batches of the training split.
  train_images=$(( $(cat "$DATA"/cifar-10-batches-bin/data_batch_*.bin | wc -c) / 3073 ))
  spe=$(( train_images / 1024 ))
  for seed in $SEEDS; do
    dir="$OUT/lab-e$EPOCHS-s$seed"
    [ -f "$dir/result.json" ] && { echo "== lab seed $seed: kept $dir/result.json"; continue; }
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "== lab seed $seed, $EPOCHS epochs ($spe steps each; load $(load))"
    before="$(load)"
    # shellcheck disable=SC2086 # LAB_FLAGS is a list of flags
    if ! nice -n "$NICE" "$CIFARLAB" train --recipe airbench94 --epochs "$EPOCHS" --seed "$seed" --dataset cifar10 --data "$DATA" \
      --backend "$BACKEND" --eval-every "$spe" --eval-examples 0 --checkpoint "$dir/run" --progress off --json $LAB_FLAGS \
      > "$dir/result.json.tmp" 2> "$dir/train.log"; then
      echo "run.sh: the lab's seed $seed failed; the end of $dir/train.log:" >&2
      grep -v '^[WI][0-9]\{4\} ' "$dir/train.log" | tail -5 >&2
      exit 1
    fi
    printf '{"load_before": "%s", "load_after": "%s", "threads": "%s", "commit": "%s", "command": "%s"}\n' "$before" "$(load)" "$THREADS" "$COMMIT" \
      "cifarlab train --recipe airbench94 --epochs $EPOCHS --seed $seed --dataset cifar10 --data $DATA --backend $BACKEND --eval-every $spe --eval-examples 0 --checkpoint DIR --progress off --json $LAB_FLAGS" \
      > "$dir/meta.json"
    mv "$dir/result.json.tmp" "$dir/result.json"
    grep -v '^[WI][0-9]\{4\} ' "$dir/train.log" | tail -3
  done
fi

if [ -n "$RESULTS" ]; then
  python3 bench/recipe/report.py $([ "$FULL" = 1 ] && echo --full) --out-dir "$OUT" --epochs "$EPOCHS" --seeds "$SEEDS" --data "$DATA" --device "$DEVICE" \
    ${NOTES:+--notes "$NOTES"} --md "$RESULTS"
fi
