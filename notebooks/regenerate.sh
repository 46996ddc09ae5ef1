#!/usr/bin/env bash
# notebooks/regenerate.sh: re-executes the notebooks with the "Go (cifarlab, CPU)" kernel and
# writes their outputs in place, so the committed outputs are those of an actual run (GitHub
# renders them). Each notebook is run top to bottom through nbclient by nbcheck.py, which also
# checks it (no unexpected error, the expected error texts, the key results): a notebook whose
# checks fail is NOT rewritten, and the script exits non-zero.
#
# Usage: notebooks/regenerate.sh [NOTEBOOK.ipynb ...]     (default: all of 0?-*.ipynb)
#
# Needs what kernel/setup.sh installs (.venv with nbclient, the GoNB kernelspecs).
# The data is the synthetic data set, generated on first use in $NOTEBOOKS_DATA (default
# out/notebooks/data), so that anyone regenerating gets the same outputs; set NOTEBOOKS_DATA to a
# folder with real CIFAR data (verified or not) to run them on it (their accuracy checks are
# calibrated on the synthetic data and may then fail).
# Environment: NBCHECK_KERNEL (default cifarlab-cpu), NBCHECK_CELL_TIMEOUT (default 600 s).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
py="$repo/.venv/bin/python"
kernel="${NBCHECK_KERNEL:-cifarlab-cpu}"

if [ ! -x "$py" ]; then
  echo "regenerate.sh: $py not found: run kernel/setup.sh first (it creates the venv with nbclient)" >&2
  exit 2
fi
if ! "$py" -m jupyter kernelspec list --json | "$py" -c "import json,sys; sys.exit(0 if '$kernel' in json.load(sys.stdin)['kernelspecs'] else 1)"; then
  echo "regenerate.sh: kernelspec $kernel not installed: run $repo/.bin/cifarlab kernel install" >&2
  exit 2
fi

cd "$here"
if [ "$#" -gt 0 ]; then
  notebooks=("$@")
else
  notebooks=(0?-*.ipynb)
fi
export CIFARLAB_DATA="${NOTEBOOKS_DATA:-$repo/out/notebooks/data}"
export GOMLX_NO_AUTO_INSTALL=1
mkdir -p "$repo/out/notebooks"
echo "regenerating ${notebooks[*]} with kernel $kernel, data in $CIFARLAB_DATA"
exec "$py" "$here/nbcheck.py" --kernel "$kernel" --timeout "${NBCHECK_CELL_TIMEOUT:-600}" --write \
  --report "$repo/out/notebooks/regenerate-report.json" "${notebooks[@]}"
