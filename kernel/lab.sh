#!/usr/bin/env bash
# The main job, from a fresh machine: installs everything (kernel/setup.sh, idempotent), makes
# sure CIFAR data exists (real when present under $CIFARLAB_DATA, synthetic otherwise) and starts
# JupyterLab on the notebooks with the GoNB kernels. On a machine without a GPU, open the
# notebooks with the "Go (cifarlab, CPU)" kernel. Extra arguments go to `cifarlab lab`.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
bash kernel/setup.sh
exec "$repo/.bin/cifarlab" lab "$@"
