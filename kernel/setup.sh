#!/usr/bin/env bash
# kernel/setup.sh: every install step of the cifarlab lab, in one place.
#
# Used by .ci/run, by the README's main-job command and by docker/Dockerfile. On a fresh
# Debian/Ubuntu machine (as root, or with sudo) it:
#   1. apt-installs what is missing from $APT_PACKAGES (python3-venv, a C compiler for
#      go-xla's cgo, git, Slurm and munge for the sweep tests, and chromium for the browser test),
#   2. creates the venv $VENV (default REPO/.venv) with /usr/bin/python3 and pip-installs
#      kernel/requirements.txt under kernel/constraints.txt (JupyterLab, nbclient, ...),
#      the XLA CPU plugin, NumPy, safetensors and Pillow (tests only: kernel/requirements-test.txt) and TensorBoard,
#   1b. exports GOTOOLCHAIN=go.mod's toolchain line (go1.27.3) and fetches that toolchain through
#      the Go module proxy when the go on PATH is another release (kernel/toolchain.sh); when it
#      cannot (no go, or no proxy), it says so in one line and stops before installing anything,
#   3. builds the pinned gonb, goimports and gopls from tools/go.mod into REPO/.bin, with that Go,
#   4. builds the cifarlab command into REPO/.bin, and cifarlib as notebook cells build it
#      (warming the build cache for the first cell),
#   5. installs the kernelspecs "Go (cifarlab, CPU)" and "Go (cifarlab, CUDA)" into the venv,
#      $VENV/share/jupyter, where only this checkout's Jupyter sees them
#      (`cifarlab kernel install --prefix $VENV`; $KERNEL_INSTALL_ARGS or $JUPYTER_DATA_DIR
#      instead when set), and the kernel supervisor .bin/cifarlab-kernel,
#   6. runs `npm ci` in notebooks/browser-test when it has a package-lock.json
#      (playwright-core for the JupyterLab browser test).
# It is idempotent: a second run skips what is already in place and takes seconds.
#
# Skip parts with environment variables set to 1:
#   SKIP_APT, SKIP_VENV, SKIP_TOOLS, SKIP_CLI, SKIP_KERNELS, SKIP_NPM,
#   SKIP_BROWSER (leaves chromium out of the apt list and skips npm),
#   SKIP_SLURM (leaves Slurm and munge, for the sweep tests, out of the apt list),
#   SKIP_XLA_CPU (leaves out the XLA CPU PJRT plugin, kernel/requirements-xla-cpu.txt),
#   SKIP_CUDA_PLUGIN (leaves out the CUDA PJRT plugin, kernel/requirements-cuda.txt, and its
#   NVIDIA libraries),
#   SKIP_TENSORBOARD (leaves out TensorBoard, kernel/requirements-tensorboard.txt).
# CUDA (kernel/setup-cuda.sh): the CUDA PJRT plugin (kernel/requirements-cuda.txt, 134 MB) and its
# NVIDIA libraries (kernel/requirements-cuda-libs.txt, 1.8 GB) are installed only when a GPU is
# found (nvidia-smi -L, /dev/nvidia[0-9]*); without one, setup says so in one line;
#   CIFARLAB_CUDA=1          installs both anyway (an image built without a GPU), CIFARLAB_CUDA=0 never,
#   CIFARLAB_CUDA=plugin     the plugin alone without a GPU (kernel/run-tests.sh: its tests)
#   CIFARLAB_CUDA_SITE=SITE  uses the jax-cuda13-pjrt and nvidia-* wheels of that site-packages
#                            instead of installing (the kernelspec, doctor and cifarlib follow it)
# Other settings:
#   VENV=DIR                 venv location (default REPO/.venv)
#   PYTHON=/usr/bin/python3  interpreter for the venv
#   APT_PACKAGES="..."       replaces the apt list
#   KERNEL_INSTALL_ARGS="..." flags for `cifarlab kernel install` instead of --prefix $VENV
#                            (e.g. "--prefix /usr/local" for a system-wide install, "--user")
#   PIP_ARGS="..."           extra pip flags (e.g. --no-cache-dir in images)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
PYTHON="${PYTHON:-/usr/bin/python3}"
BIN="$REPO/.bin"
SKIP_APT="${SKIP_APT:-0}" SKIP_VENV="${SKIP_VENV:-0}" SKIP_TOOLS="${SKIP_TOOLS:-0}"
SKIP_CLI="${SKIP_CLI:-0}" SKIP_KERNELS="${SKIP_KERNELS:-0}" SKIP_NPM="${SKIP_NPM:-0}"
SKIP_BROWSER="${SKIP_BROWSER:-0}" SKIP_SLURM="${SKIP_SLURM:-0}" SKIP_XLA_CPU="${SKIP_XLA_CPU:-0}" SKIP_CUDA_PLUGIN="${SKIP_CUDA_PLUGIN:-0}"
SKIP_TENSORBOARD="${SKIP_TENSORBOARD:-0}"
PIP_ARGS="${PIP_ARGS:-}"
KERNEL_INSTALL_ARGS="${KERNEL_INSTALL_ARGS:-}"

# What the lab needs from the distribution. python3-venv: the venv; gcc/libc6-dev: cgo for
# go-xla's PJRT loader; git and ca-certificates: go and pip downloads; slurmctld, slurmd,
# slurm-client and munge: the sweep tests' single-node Slurm (internal/slurmtest, started as
# plain processes, never as services), left out with SKIP_SLURM=1; chromium: the JupyterLab
# browser test (issue 6), left out with SKIP_BROWSER=1.
DEFAULT_APT_PACKAGES="python3 python3-venv python3-pip gcc libc6-dev git ca-certificates"
if [ "$SKIP_SLURM" != 1 ]; then
  DEFAULT_APT_PACKAGES="$DEFAULT_APT_PACKAGES slurmctld slurmd slurm-client munge"
fi
if [ "$SKIP_BROWSER" != 1 ]; then
  DEFAULT_APT_PACKAGES="$DEFAULT_APT_PACKAGES chromium nodejs npm"
fi
APT_PACKAGES="${APT_PACKAGES:-$DEFAULT_APT_PACKAGES}"

step() { printf '\n== setup: %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Debian packages: install only the missing ones; apt-get update only then.
if [ "$SKIP_APT" != 1 ]; then
  step "Debian packages"
  missing=()
  for p in $APT_PACKAGES; do
    # Node may come from elsewhere (e.g. NodeSource's nodejs ships npm): a working command counts.
    case "$p" in
      nodejs) command -v node >/dev/null && continue ;;
      npm) command -v npm >/dev/null && continue ;;
      # A cluster's own Slurm (often built from source, not from Debian) is left alone.
      slurmctld|slurmd|slurm-client|munge) command -v sbatch >/dev/null && ! dpkg-query -W slurm-client >/dev/null 2>&1 && continue ;;
    esac
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "all present: $APT_PACKAGES"
  fi
fi

# 1b. Go: go.mod's toolchain (go1.27.3), exported as GOTOOLCHAIN for everything below and fetched
# now through the Go module proxy when the go on PATH is another release (kernel/toolchain.sh),
# so that no notebook cell ever waits for it. Without it (no go command, or an older Go and no
# proxy), one line says what is needed and nothing of the lab is installed.
# shellcheck source=kernel/toolchain.sh
. "$REPO/kernel/toolchain.sh"
cifarlab_toolchain_check || exit 1
step "Go: $(go version | cut -d' ' -f3) in $(go env GOROOT)"

# 2. The Python venv with JupyterLab, nbclient, nbformat, ipykernel (pinned).
if [ "$SKIP_VENV" != 1 ]; then
  step "Python venv $VENV"
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
  fi
  stamp="$VENV/.cifarlab-requirements.sha256"
  want="$(cat "$REPO/kernel/requirements.txt" "$REPO/kernel/constraints.txt" | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$VENV/bin/python" -c "import jupyterlab, nbclient, nbformat, ipykernel" 2>/dev/null; then
    echo "requirements already installed"
  else
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PIP_ARGS \
      -r "$REPO/kernel/requirements.txt" -c "$REPO/kernel/constraints.txt"
    echo "$want" > "$stamp"
  fi
  "$VENV/bin/jupyter" --version | grep -E "^(jupyterlab|nbclient|nbformat|ipykernel) "

  # 2b. XLA's CPU PJRT plugin from PyPI (hash-pinned, no dependencies): backends.New("cpu")
  # finds it in this venv and uses it instead of the pure-Go backend. SKIP_XLA_CPU=1 leaves it out.
  if [ "$SKIP_XLA_CPU" != 1 ]; then
    if compgen -G "$VENV/lib/python3*/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so" >/dev/null; then
      echo "XLA CPU plugin already installed"
    else
      # shellcheck disable=SC2086
      "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PIP_ARGS \
        --no-deps --require-hashes -r "$REPO/kernel/requirements-xla-cpu.txt"
    fi
  fi

  # 2c. NumPy, safetensors and Pillow for the tests that write or read files with Python
  # (torchvision-layout CIFAR pickles, safetensors files, JPEGs), hash-pinned in
  # kernel/requirements-test.txt.
  if "$VENV/bin/python" -c "import numpy, safetensors, PIL" 2>/dev/null; then
    echo "numpy, safetensors and Pillow already installed"
  else
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PIP_ARGS \
      --no-deps --require-hashes -r "$REPO/kernel/requirements-test.txt"
  fi

  # 2c'. TensorBoard (kernel/requirements-tensorboard.txt, hash-pinned, every dependency listed):
  # `tensorboard --logdir <runs folder>` shows the runs' curves, and the tests read cifarlab's
  # event files back with its reader. SKIP_TENSORBOARD=1 leaves it out.
  if [ "$SKIP_TENSORBOARD" != 1 ]; then
    if "$VENV/bin/python" -c "import tensorboard.backend.event_processing.event_accumulator" 2>/dev/null; then
      echo "tensorboard already installed"
    else
      # shellcheck disable=SC2086
      "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PIP_ARGS \
        --no-deps --require-hashes -r "$REPO/kernel/requirements-tensorboard.txt"
    fi
  fi

  # 2d. On a GPU machine (or with CIFARLAB_CUDA=1) the CUDA PJRT plugin from PyPI's
  # jax-cuda13-pjrt (hash-pinned, 134 MB) and its NVIDIA libraries (kernel/requirements-cuda-libs.txt,
  # 1.8 GB), where the plugin's RPATH finds them; CIFARLAB_CUDA_SITE=SITE uses an existing
  # environment's instead. Without a GPU, nothing (one line says so): the CUDA kernel then says
  # the GPU is missing, and doctor that the plugin is not installed and how to get it.
  # SKIP_CUDA_PLUGIN=1 leaves it out. See kernel/setup-cuda.sh.
  if [ "$SKIP_CUDA_PLUGIN" != 1 ]; then
    VENV="$VENV" PIP_ARGS="$PIP_ARGS" bash "$REPO/kernel/setup-cuda.sh"
  fi
fi

# 3. The pinned notebook tools (tool directives of tools/go.mod, never @latest).
if [ "$SKIP_TOOLS" != 1 ]; then
  step "gonb, goimports, gopls -> $BIN"
  mkdir -p "$BIN"
  (cd "$REPO/tools" && GOWORK=off GOBIN="$BIN" go install tool)
fi

# 4. The cifarlab command.
if [ "$SKIP_CLI" != 1 ]; then
  step "cifarlab -> $BIN/cifarlab"
  mkdir -p "$BIN"
  (cd "$REPO" && GOWORK=off go build -o "$BIN/cifarlab" ./cmd/cifarlab)
  # Warms the build cache for notebook cells, which an XLA kernel builds without the pure-Go
  # backend (kernel.cellGoFlags): the first cell then compiles none of cifarlib.
  (cd "$REPO" && GOWORK=off go build -tags cifarlab_nogobackend ./cifarlib/...)
fi

# 5. The kernelspecs and the kernel supervisor (.bin/cifarlab-kernel): into the venv
# ($VENV/share/jupyter, which only this checkout's Jupyter searches), or where
# KERNEL_INSTALL_ARGS or JUPYTER_DATA_DIR say.
if [ "$SKIP_KERNELS" != 1 ]; then
  step "kernelspecs"
  where=()
  if [ -z "$KERNEL_INSTALL_ARGS" ] && [ -z "${JUPYTER_DATA_DIR:-}" ]; then
    where=(--prefix "$VENV")
  fi
  # shellcheck disable=SC2086
  "$BIN/cifarlab" kernel install --repo "$REPO" "${where[@]}" $KERNEL_INSTALL_ARGS
  if [ -x "$VENV/bin/jupyter" ]; then
    "$VENV/bin/jupyter" kernelspec list
  fi
fi

# 6. playwright-core for the browser test, from notebooks/browser-test's lock file.
if [ "$SKIP_NPM" != 1 ] && [ "$SKIP_BROWSER" != 1 ] && [ -f "$REPO/notebooks/browser-test/package.json" ]; then
  step "npm packages in notebooks/browser-test"
  cd "$REPO/notebooks/browser-test"
  if [ -f package-lock.json ]; then
    want="$(sha256sum package-lock.json | cut -d' ' -f1)"
    if [ -f node_modules/.cifarlab-lock.sha256 ] && [ "$(cat node_modules/.cifarlab-lock.sha256)" = "$want" ]; then
      echo "node_modules up to date"
    else
      npm ci --no-audit --no-fund
      echo "$want" > node_modules/.cifarlab-lock.sha256
    fi
  else
    npm install --no-audit --no-fund
  fi
  cd "$REPO"
fi

step "done"
