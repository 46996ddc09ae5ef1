#!/usr/bin/env bash
# Installs the XLA PJRT plugins of the cifarlab image at pinned versions, with go-xla's
# installer library (github.com/gomlx/go-xla/installer at the version pinned in go.mod,
# verified by go.sum) through the small non-interactive front end docker/pjrtinstall.
#
#   cpu     libpjrt from github.com/gomlx/pjrt-cpu-binaries release $PJRT_CPU_VERSION
#           -> $PJRT_PATH/pjrt_c_api_cpu_<version>_plugin.so (+ pjrt_c_api_cpu_plugin.so link)
#   cuda13  xla_cuda_plugin.so from PyPI's jax-cuda13-pjrt==$PJRT_CUDA_VERSION and the NVIDIA
#           libraries (cuBLAS, cuDNN, NCCL, ...) from their PyPI wheels, SHA-256 checked
#           against PyPI -> $PJRT_PATH/nvidia/
#
# $PJRT_PATH defaults to /usr/local/lib/go-xla, a folder go-xla searches by default, outside
# any home folder (a volume mounted on /home/lab does not hide the plugins).
#
# Environment (the Dockerfile passes its build arguments of the same names):
#   PJRT_PLUGINS       plugins to install, space separated (default "cuda13"; the image's CPU
#                      kernel uses PyPI's XLA CPU plugin from kernel/setup.sh, "cpu" adds GitHub's)
#   PJRT_CPU_VERSION   pjrt-cpu-binaries tag (default v0.114.0, go-xla v0.4.5's DefaultCPUVersion)
#   PJRT_CPU_SHA256    SHA-256 the installed CPU plugin must have (GitHub publishes none;
#                      empty: the build prints it so it can be pinned)
#   PJRT_CUDA_VERSION  jax-cuda13-pjrt version (default 0.11.2)
#   PJRT_CUDA_SHA256   SHA-256 the installed CUDA plugin must have (optional: the wheel is
#                      already checked against PyPI's digest)
#   PJRT_PATH          install folder (default /usr/local/lib/go-xla)
#   GH_TOKEN           optional GitHub token (go-xla uses it for the release API's rate limit)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PJRT_PLUGINS="${PJRT_PLUGINS:-cuda13}"
PJRT_CPU_VERSION="${PJRT_CPU_VERSION:-v0.114.0}"
PJRT_CPU_SHA256="${PJRT_CPU_SHA256:-}"
PJRT_CUDA_VERSION="${PJRT_CUDA_VERSION:-0.11.2}"
PJRT_CUDA_SHA256="${PJRT_CUDA_SHA256:-}"
PJRT_PATH="${PJRT_PATH:-/usr/local/lib/go-xla}"

if ! command -v go >/dev/null; then
  echo "install-plugins.sh: the go command is not on PATH (the Dockerfile installs Go first)" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# Build the installer front end with a throw-away module and build cache, so this layer holds
# only the plugins. Downloads go through $GOPROXY and are checked against go.sum.
echo "== building docker/pjrtinstall (go-xla $(sed -n 's/^[[:space:]]*github.com\/gomlx\/go-xla \(v[^ ]*\).*/\1/p' "$repo/go.mod"))"
(cd "$repo" && GOMODCACHE="$work/mod" GOCACHE="$work/cache" GOFLAGS="${GOFLAGS:-} -mod=readonly" \
  go build -trimpath -o "$work/pjrtinstall" ./docker/pjrtinstall)

for plugin in $PJRT_PLUGINS; do
  case "$plugin" in
    cpu) version="$PJRT_CPU_VERSION" sum="$PJRT_CPU_SHA256" ;;
    cuda12|cuda13) version="$PJRT_CUDA_VERSION" sum="$PJRT_CUDA_SHA256" ;;
    *) echo "install-plugins.sh: unknown plugin \"$plugin\" in PJRT_PLUGINS (use cpu, cuda13, cuda12)" >&2; exit 2 ;;
  esac
  echo "== installing PJRT plugin $plugin $version into $PJRT_PATH"
  # HOME points into $work: go-xla's installer has no cache here (useCache=false), but keep
  # anything it might write out of the image.
  HOME="$work" "$work/pjrtinstall" -plugin "$plugin" -version "$version" -path "$PJRT_PATH" -sha256 "$sum"
done

# Make the plugins readable by the non-root user (the installer creates 0755 dirs, but the
# extracted wheel files keep the wheel's modes).
chmod -R a+rX "$PJRT_PATH"
ls -l "$PJRT_PATH"
