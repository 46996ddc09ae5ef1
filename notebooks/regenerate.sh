#!/usr/bin/env bash
# notebooks/regenerate.sh: re-executes the notebooks with the "Go (cifarlab, CPU)" kernel and
# writes their outputs in place, so the committed outputs are those of an actual run (GitHub
# renders them). Each notebook is run top to bottom through nbclient by nbcheck.py, which also
# checks it (no unexpected error, the expected error texts, the key results): a notebook whose
# checks fail is NOT rewritten, and the script exits non-zero. A notebook is written in the form
# JupyterLab saves (labform.py), so that opening and saving it in JupyterLab changes nothing,
# and its metadata names the data its outputs come from, one line per dataset it reads
# ("cifarlab": {"data": ["cifar10: real, unverified (binary layout, 20000 train / 10000 test images)"]}).
#
# Usage:
#   notebooks/regenerate.sh --data DIR [NOTEBOOK.ipynb ...]   on the real data in DIR
#   notebooks/regenerate.sh --synthetic [NOTEBOOK.ipynb ...]  on the synthetic data (what CI runs)
#   notebooks/regenerate.sh --data DIR --synthetic [...]      real where DIR has it, synthetic elsewhere
# (default notebooks: all of 0?-*.ipynb)
#
# With --data alone, a notebook that reads a dataset DIR does not hold as real data (verified or
# not) is refused before anything runs or is written (notebook 01 reads CIFAR-100; 08 CIFAR-10).
# Nothing is ever written into DIR: the notebooks read it through a folder of its own in
# out/notebooks/data-view/, whose entries link to DIR's, and which holds the runs and any
# synthetic stand-in.
#
# Needs what kernel/setup.sh installs (.venv with nbclient, the GoNB kernelspecs, .bin/cifarlab).
# Environment: NBCHECK_KERNEL (default cifarlab-cpu), NBCHECK_CELL_TIMEOUT (default 600 s).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
py="$repo/.venv/bin/python"
kernel="${NBCHECK_KERNEL:-cifarlab-cpu}"

usage() {
  sed -n 's/^#   //p' "$0" | sed -n '1,3p' >&2
  echo "regenerate.sh: $1" >&2
  exit 2
}

data="" synthetic=0 notebooks=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --data) [ "$#" -ge 2 ] || usage "--data needs a folder"; data="$2"; shift 2 ;;
    --data=*) data="${1#--data=}"; shift ;;
    --synthetic) synthetic=1; shift ;;
    -h|--help) usage "name the data: --data DIR (real), --synthetic, or both" ;;
    -*) usage "unknown flag $1" ;;
    *) notebooks+=("$1"); shift ;;
  esac
done
if [ -z "$data" ] && [ "$synthetic" != 1 ]; then
  usage "name the data the outputs come from: --data DIR (a folder with real CIFAR), or --synthetic"
fi
if [ -n "$data" ] && [ ! -d "$data" ]; then
  usage "--data $data: no such folder"
fi

if [ ! -x "$py" ]; then
  echo "regenerate.sh: $py not found: run kernel/setup.sh first (it creates the venv with nbclient)" >&2
  exit 2
fi
if ! "$py" -m jupyter kernelspec list --json | "$py" -c "import json,sys; sys.exit(0 if '$kernel' in json.load(sys.stdin)['kernelspecs'] else 1)"; then
  echo "regenerate.sh: kernelspec $kernel not installed: run $repo/.bin/cifarlab kernel install" >&2
  exit 2
fi

cd "$here"
if [ "${#notebooks[@]}" -eq 0 ]; then
  notebooks=(0?-*.ipynb)
fi
mkdir -p "$repo/out/notebooks"
flags=()
if [ -n "$data" ]; then
  # The data folder as the notebooks see it: DIR's entries linked (its datasets, their records
  # of verification, archives), but not its runs or synthetic stand-in, which live in the view.
  # One view per data folder, so that regenerations on different folders never share one.
  data="$(cd "$data" && pwd)"
  view="$repo/out/notebooks/data-view/$(basename "$data")-$(printf %s "$data" | sha256sum | cut -c1-12)"
  mkdir -p "$view"
  find "$view" -maxdepth 1 -type l -delete
  for entry in "$data"/*; do
    name="$(basename "$entry")"
    case "$name" in runs|synthetic) continue ;; esac
    [ -e "$entry" ] && ln -s "$entry" "$view/$name"
  done
  export CIFARLAB_DATA="$view" NBCHECK_DATA_NAME="$data"
  [ "$synthetic" = 1 ] || flags+=(--require-real)
  echo "regenerating ${notebooks[*]} with kernel $kernel on $data (through $view)"
  "$repo/.bin/cifarlab" verify --status --data "$data" | sed 's/^/  data: /'
else
  export CIFARLAB_DATA="${NOTEBOOKS_DATA:-$repo/out/notebooks/data}"
  echo "regenerating ${notebooks[*]} with kernel $kernel on synthetic data in $CIFARLAB_DATA"
fi
unset CIFARLAB_RUNS # runs/ in the data folder the notebooks see (the view's own, never DIR's)
export GOMLX_NO_AUTO_INSTALL=1
exec nice -n 10 "$py" "$here/nbcheck.py" --kernel "$kernel" --timeout "${NBCHECK_CELL_TIMEOUT:-600}" --write "${flags[@]}" \
  --report "$repo/out/notebooks/regenerate-report.json" "${notebooks[@]}"
