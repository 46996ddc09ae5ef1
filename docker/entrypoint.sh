#!/usr/bin/env bash
# Entry point of the cifarlab image; runs as the non-root lab user under tini.
#
#   (no arguments) or "lab"   start JupyterLab on /opt/cifarlab/notebooks (port 8888, token auth);
#                             under JupyterHub (its spawner sets JUPYTERHUB_API_TOKEN) start
#                             jupyterhub-singleuser instead, on notebooks/work, with the hub's
#                             logins (docker/hub/), as jupyter/docker-stacks images do
#   anything else             run it as a command (e.g. "bash", "cifarlab doctor")
#
# Environment:
#   CIFARLAB_MODE          auto (default), gpu or cpu. auto picks gpu when an NVIDIA device is
#                          visible (docker run --gpus ...), else cpu. It sets the kernel that new
#                          notebooks get: "Go (cifarlab, CUDA)" or "Go (cifarlab, CPU)"; both
#                          kernels are always listed.
#   CIFARLAB_CUDA_BACKEND  GOMLX_BACKEND of the CUDA kernel, to share one GPU among attendees,
#                          e.g. "xla:cuda,preallocate=false,memory_fraction=0.2" (see README).
#                          Written to a user-level kernelspec that overrides the image's one.
#   CIFARLAB_PORT          port inside the container (default 8888).
#   JUPYTER_TOKEN          the login token (default: a random one, printed). An empty value is
#                          refused: it would turn authentication off. Not used under JupyterHub,
#                          whose logins and tokens guard the server.
#   CIFARLAB_KERNEL_CULL_IDLE, CIFARLAB_KERNEL_CULL_EVERY  seconds: Jupyter shuts down a kernel
#                          idle that long (default 1800; 0: never), checking that often (default
#                          300); read by /usr/local/etc/jupyter/jupyter_server_config.py.
#   CIFARLAB_COPY_NOTEBOOKS  1 (default): when a folder is mounted at
#                          /opt/cifarlab/notebooks/work and holds no notebooks, copy the
#                          image's notebooks into it once, so that edits survive the container.
#   CIFARLAB_COMPILE_CACHE_SHARED  read-only folders of compiled programs (':'-separated); the
#                          image's is /opt/cifarlab/compile-cache, filled at build (notebook 01);
#                          the hub lists a host's folder before it (CIFARLAB_HUB_COMPILE_CACHE).
#   CIFARLAB_RUNS          where training keeps its run folders; default, when a folder is
#                          mounted at /opt/cifarlab/notebooks/work: its runs/ (they outlive the
#                          container), else $CIFARLAB_DATA/runs (the container's own layer).
#
# Nothing here or in the kernels writes into the image's folders (the repository, its .bin, the
# kernelspecs in /usr/local): the user-level kernelspec and the cells' pinned module proxy go to
# the user's home, run folders to the mounted work/ folder. Overlay storage, podman's and Docker's
# default, cannot rename a folder of an image's layer (docker/README.md, "Storage").
set -euo pipefail

repo="${CIFARLAB_REPO:-/opt/cifarlab}"
notebooks="$repo/notebooks"
port="${CIFARLAB_PORT:-8888}"

if [ $# -gt 0 ] && [ "$1" != "lab" ]; then
  exec "$@"
fi
[ $# -gt 0 ] && shift

say() { echo "cifarlab: $*" >&2; }
die() { say "$*"; exit 2; }

has_gpu() {
  compgen -G "/dev/nvidia[0-9]*" >/dev/null || { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }
}

mode="${CIFARLAB_MODE:-auto}"
case "$mode" in
  auto) if has_gpu; then mode=gpu; else mode=cpu; fi ;;
  gpu|cpu) ;;
  *) die "CIFARLAB_MODE=$mode: use auto, gpu or cpu" ;;
esac
if [ "$mode" = gpu ]; then
  kernel=cifarlab-cuda
  has_gpu || say "WARNING: CIFARLAB_MODE=gpu but no NVIDIA device is visible: start the container with --gpus all (NVIDIA Container Toolkit)"
  [ -f /usr/local/lib/go-xla/nvidia/pjrt_c_api_cuda_plugin.so ] \
    || say "WARNING: this image has no CUDA PJRT plugin (built with SKIP_PLUGINS=1): the CUDA kernel cannot run"
else
  kernel=cifarlab-cpu
fi

if [ -n "${CIFARLAB_CUDA_BACKEND:-}" ]; then
  say "CUDA kernel: GOMLX_BACKEND=$CIFARLAB_CUDA_BACKEND (user kernelspec overriding the image's)"
  cifarlab kernel install --no-build-tools --jupyter-data-dir "$HOME/.local/share/jupyter" \
    --cuda-backend "$CIFARLAB_CUDA_BACKEND" >&2
fi

# The compile cache (docs/compile-cache.md): how many of the shared programs (the image's, notebook
# 01's, compiled at build; a host's folder that the hub mounts) were compiled for this machine's CPU.
# Programs of another CPU model never load: then every first training cell compiles, said here.
if cache_line="$(cifarlab cache check 2>/dev/null)"; then
  say "$cache_line"
else
  say "WARNING: ${cache_line:-compile cache: cifarlab cache check failed}"
fi

hub=0
[ -n "${JUPYTERHUB_API_TOKEN:-}" ] && hub=1
if [ "$hub" = 0 ]; then
  if [ "${JUPYTER_TOKEN+set}" = set ] && [ -z "$JUPYTER_TOKEN" ]; then
    die "JUPYTER_TOKEN is set but empty, which would disable authentication: unset it (a random token is made) or give one"
  fi
  if [ -z "${JUPYTER_TOKEN:-}" ]; then
    JUPYTER_TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
  fi
  export JUPYTER_TOKEN
fi

# work/ is in the image, empty: the copy goes only into a folder mounted there (a host folder,
# the hub's per-user volume), never into the container's own layer.
work="$notebooks/work"
if [ "${CIFARLAB_COPY_NOTEBOOKS:-1}" = 1 ] && [ -d "$work" ] && [ -w "$work" ] && mountpoint -q "$work" \
   && ! compgen -G "$work/*.ipynb" >/dev/null && compgen -G "$notebooks/*.ipynb" >/dev/null; then
  cp -n "$notebooks"/*.ipynb "$work"/
  say "copied the notebooks into work/ (your mounted folder); edit them there"
fi
if [ -z "${CIFARLAB_RUNS:-}" ] && [ -d "$work" ] && [ -w "$work" ] && mountpoint -q "$work"; then
  export CIFARLAB_RUNS="$work/runs"
  say "run folders go to work/runs (your mounted folder), where they outlive the container"
fi

say "mode $mode: new notebooks use the kernel $kernel"
if [ "$hub" = 1 ]; then
  # JupyterHub's single-user server: the hub authenticates (OAuth with the hub), the spawner
  # passes --ip/--port and the server's URL prefix in the environment. It opens on the user's
  # own copies (work/, the per-user volume) when there are any.
  root="$notebooks"
  compgen -G "$work/*.ipynb" >/dev/null && root="$work"
  say "JupyterHub user ${JUPYTERHUB_USER:-?}: jupyterhub-singleuser on $root"
  exec jupyterhub-singleuser \
    --ServerApp.root_dir="$root" \
    --MappingKernelManager.default_kernel_name="$kernel" \
    "$@"
fi
say "open http://127.0.0.1:$port/lab?token=$JUPYTER_TOKEN (use the host port you published with -p)"
exec jupyter lab --no-browser --ip=0.0.0.0 --port="$port" \
  --ServerApp.root_dir="$notebooks" \
  --MappingKernelManager.default_kernel_name="$kernel" \
  "$@"
