#!/usr/bin/env bash
# bench/interop/run.sh: the full ResNet-18 import/export check with real PyTorch (issue 28).
#
#   bash bench/interop/run.sh DATA_DIR [MINUTES]
#
# DATA_DIR holds cifar-10-batches-bin/ (real CIFAR-10). Needs a Python with torch, numpy and
# safetensors: $TORCH_PYTHON, or bench/.venv-torch made from bench/requirements-torch.txt plus
# kernel/requirements-test.txt. Trains the source model for MINUTES (default 4) of CPU unless
# bench/out/interop/ckpt.pth exists, then runs verify.py and writes bench/RESULTS-interop.md.
# The XLA CPU plugin of the repository's .venv (or $VIRTUAL_ENV) makes the lab's evaluation fast.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
DATA="${1:?usage: bench/interop/run.sh DATA_DIR [MINUTES]}"
MINUTES="${2:-4}"
PY="${TORCH_PYTHON:-$REPO/bench/.venv-torch/bin/python}"
OUT="$REPO/bench/out/interop"
mkdir -p "$OUT"
go build -o "$OUT/cifarlab" ./cmd/cifarlab
go build -o "$OUT/logits" ./bench/interop/logits
if [ ! -f "$OUT/ckpt.pth" ]; then
  "$PY" bench/interop/train_source.py --data "$DATA" --out "$OUT/ckpt.pth" --minutes "$MINUTES"
fi
"$PY" bench/interop/verify.py --data "$DATA" --ckpt "$OUT/ckpt.pth" --cifarlab "$OUT/cifarlab" --logits "$OUT/logits" \
  --out "$OUT" --md bench/RESULTS-interop.md
