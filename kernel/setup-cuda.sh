#!/usr/bin/env bash
# kernel/setup-cuda.sh: the CUDA part of kernel/setup.sh (step 2d), on its own so that it can be
# run and tested alone:
#
#   VENV=.venv bash kernel/setup-cuda.sh
#
# Only on a machine with an NVIDIA GPU (`nvidia-smi -L` lists one, or a /dev/nvidia[0-9]* device
# exists), or when CIFARLAB_CUDA asks; without a GPU it prints one line and installs nothing:
# 1. The CUDA PJRT plugin, PyPI's jax-cuda13-pjrt (kernel/requirements-cuda.txt, 134 MB), into
#    $VENV: `cifarlab kernel install` points the CUDA kernelspec at it.
# 2. Its NVIDIA libraries (kernel/requirements-cuda-libs.txt: cuDNN, cuBLAS, cuSOLVER, cuFFT,
#    cuSPARSE, NCCL, nvJitLink, the CUDA runtime, ptxas and libdevice; 1.8 GB of downloads).
#    pip puts them in SITE/nvidia/{cu13,cudnn,nccl}, where the plugin's RPATH
#    ($ORIGIN/../../nvidia/...) finds them; SITE/nvidia/cu13 holds bin/ptxas and nvvm/libdevice,
#    which `cifarlab kernel install` passes to XLA as --xla_gpu_cuda_data_dir. Both files are
#    hash-pinned and installed with --no-deps.
#
# Settings:
#   CIFARLAB_CUDA=1              the plugin and its libraries without a GPU (an image built for GPUs)
#   CIFARLAB_CUDA=plugin         the plugin, its libraries only with a GPU (kernel/run-tests.sh: the
#                                tests of the plugin's behaviour without a GPU)
#   CIFARLAB_CUDA=0              neither, even with a GPU
#   CIFARLAB_CUDA_SITE=SITE      use the jax-cuda13-pjrt and nvidia-* wheels already in that
#                                site-packages (a GPU machine's JAX environment): nothing is installed;
#                                the kernelspec, doctor and cifarlib read the same variable
#   SKIP_CUDA_PLUGIN=1           leave out the plugin and its libraries
#   VENV=DIR (default REPO/.venv), PIP_ARGS="..." as in setup.sh
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
PIP_ARGS="${PIP_ARGS:-}"
CIFARLAB_CUDA="${CIFARLAB_CUDA:-}"
CUDA_SITE="${CIFARLAB_CUDA_SITE:-}"

if [ "${SKIP_CUDA_PLUGIN:-0}" = 1 ]; then
  echo "CUDA plugin: skipped (SKIP_CUDA_PLUGIN=1)"
  exit 0
fi

# An existing environment: check it has the plugin, install nothing.
if [ -n "$CUDA_SITE" ]; then
  plugin="$(ls "$CUDA_SITE"/jax_plugins/xla_cuda13/xla_cuda_plugin.so 2>/dev/null | head -n 1 || true)"
  if [ -z "$plugin" ]; then
    echo "setup: CIFARLAB_CUDA_SITE=$CUDA_SITE has no jax_plugins/xla_cuda13/xla_cuda_plugin.so (pip's jax-cuda13-pjrt):" \
         "set it to the site-packages of a Python with jax-cuda13-pjrt (python3 -c 'import site; print(site.getsitepackages())')," \
         "or unset it to install the plugin into $VENV" >&2
    exit 1
  fi
  libs="missing"
  [ -e "$CUDA_SITE/nvidia/cu13/lib/libcudart.so.13" ] && libs="$CUDA_SITE/nvidia"
  echo "CUDA plugin: using CIFARLAB_CUDA_SITE's $plugin (NVIDIA libraries: $libs; cifarlab doctor checks each)"
  exit 0
fi

# Is there a GPU? The plugin and its libraries are for one.
gpu="$(compgen -G "/dev/nvidia[0-9]*" | head -n 1 || true)"
if [ -z "$gpu" ] && command -v nvidia-smi >/dev/null; then
  gpu="$(nvidia-smi -L 2>/dev/null | grep "^GPU " | head -n 1 || true)"
fi
libs=1
case "$CIFARLAB_CUDA" in
  1) reason="CIFARLAB_CUDA=1" ;;
  0) echo "CUDA plugin: not installed (CIFARLAB_CUDA=0)"; exit 0 ;;
  plugin|"")
    if [ -n "$gpu" ]; then
      reason="GPU found: $gpu"
    elif [ "$CIFARLAB_CUDA" = plugin ]; then
      reason="CIFARLAB_CUDA=plugin" libs=0
    else
      echo "CUDA plugin: not installed (no NVIDIA GPU: no /dev/nvidia[0-9]*, nvidia-smi -L lists none;" \
           "CIFARLAB_CUDA=1 installs it and its NVIDIA libraries anyway, 1.9 GB)"
      exit 0
    fi ;;
  *) echo "setup: CIFARLAB_CUDA=$CIFARLAB_CUDA: use 1 (the plugin and its NVIDIA libraries), plugin (the plugin; its libraries on a GPU machine) or 0 (neither)" >&2; exit 1 ;;
esac

# 1. The plugin.
want="$(sed -n 's/^jax-cuda13-pjrt==\([^ ]*\).*/\1/p' "$REPO/kernel/requirements-cuda.txt")"
have="$(cat "$VENV"/lib/python3*/site-packages/jax_plugins/xla_cuda13/version.py 2>/dev/null | sed -n 's/^_version = "\(.*\)"/\1/p' | tail -n 1 || true)"
if [ -n "$want" ] && [ "$have" = "$want" ] && compgen -G "$VENV/lib/python3*/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so" >/dev/null; then
  echo "CUDA plugin jax-cuda13-pjrt $have already installed ($reason)"
else
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PIP_ARGS \
    --no-deps --require-hashes -r "$REPO/kernel/requirements-cuda.txt"
  echo "CUDA plugin jax-cuda13-pjrt $want installed ($reason)"
fi

# 2. Its NVIDIA libraries.
if [ "$libs" != 1 ]; then
  echo "NVIDIA libraries: not installed (no NVIDIA GPU; CIFARLAB_CUDA=1 installs them anyway, 1.8 GB)"
  exit 0
fi
stamp="$VENV/.cifarlab-cuda-libs.sha256"
sum="$(sha256sum "$REPO/kernel/requirements-cuda-libs.txt" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && compgen -G "$VENV/lib/python3*/site-packages/nvidia/cudnn/lib/libcudnn.so.9" >/dev/null; then
  echo "NVIDIA libraries already installed ($reason)"
else
  echo "NVIDIA libraries: installing kernel/requirements-cuda-libs.txt ($reason; 1.8 GB)"
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PIP_ARGS \
    --no-deps --require-hashes -r "$REPO/kernel/requirements-cuda-libs.txt"
  echo "$sum" > "$stamp"
  echo "NVIDIA libraries installed into $(ls -d "$VENV"/lib/python3*/site-packages/nvidia | head -n 1)"
fi
