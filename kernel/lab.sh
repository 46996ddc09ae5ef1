#!/usr/bin/env bash
# The main job, from a fresh machine: installs everything (kernel/setup.sh, idempotent), says
# what data the notebooks will use (`cifarlab verify --status`: one line per dataset, real and
# verified, real and unverified, or synthetic, from $CIFARLAB_DATA, default ~/.cache/cifarlab;
# the notebooks use real data wherever it is there and synthesize a stand-in only when none is)
# and starts JupyterLab on the notebooks with the GoNB kernels. On a machine without a GPU, open
# the notebooks with the "Go (cifarlab, CPU)" kernel. Extra arguments go to `cifarlab lab`.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# GOTOOLCHAIN=go.mod's toolchain (go1.27.3) for setup, the CLI and the kernels it installs.
REPO="$repo"
# shellcheck source=kernel/toolchain.sh
. kernel/toolchain.sh
bash kernel/setup.sh
"$repo/.bin/cifarlab" verify --status
exec "$repo/.bin/cifarlab" lab "$@"
