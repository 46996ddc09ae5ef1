#!/usr/bin/env bash
# The patched copy of go-xla v0.4.13 in third_party/go-xla (see third_party/README.md):
#
#   bash third_party/go-xla.sh check   the copy is go-xla v0.4.13's pruned packages plus
#                                      third_party/go-xla.patch, byte for byte (CI runs it)
#   bash third_party/go-xla.sh patch   rewrites third_party/go-xla.patch from the copy
#                                      (after editing the copy)
#   bash third_party/go-xla.sh pristine DIR   writes the pruned, unpatched v0.4.13 into DIR
#
# The pristine source is the module cache's github.com/gomlx/go-xla@v0.4.13, fetched with
# `go mod download` (outside the repository, whose go.mod replaces the module) and required to
# have the checksum SUM, the one go.sum held before the replace (the Go checksum database's).
# Only the packages the module builds are kept (PACKAGES: `go list -deps -test ./... | grep
# go-xla` from the repository root, and those that `go mod tidy` loads with other build tags),
# without upstream's tests, test data and documentation, but for the two files that pjrt's
# tests share (TESTFILES: the -plugin flag, the test client, the test helpers).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION=v0.4.13
SUM=h1:z+u8ORjjQTmvUYTrw5ultYQqwVvhqWSP0KagjLFjNpI=
PACKAGES=(
  compute/xla compute/xla/autoinstall installer pjrt pjrt/cpu/dynamic pjrt/cpu/static stablehlo types types/shapes types/shardy
  internal/cbuffer internal/optypes internal/pool internal/rocm internal/shapeinference internal/utils
  internal/protos/autotune_results internal/protos/autotuning internal/protos/backends
  internal/protos/compile_options internal/protos/cuda_compute_capability
  internal/protos/device_description internal/protos/dnn internal/protos/hlo internal/protos/metrics
  internal/protos/oneapi_compute_capability internal/protos/xla internal/protos/xla_data
)
TESTFILES=(pjrt/pjrt_test.go pjrt/testutil_test.go)
copy="$repo/third_party/go-xla"
patchfile="$repo/third_party/go-xla.patch"

# pristine DIR: the pruned v0.4.13 into DIR.
pristine() {
  local dst="$1" src info
  info="$(cd / && GOWORK=off GOFLAGS= go mod download -json "github.com/gomlx/go-xla@$VERSION")"
  src="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$info")"
  [ -d "$src" ] || { echo "go-xla.sh: go mod download github.com/gomlx/go-xla@$VERSION gave no folder: $info" >&2; exit 1; }
  grep -qF "\"Sum\": \"$SUM\"" <<<"$info" ||
    { echo "go-xla.sh: github.com/gomlx/go-xla@$VERSION in the module cache is not $SUM: $info" >&2; exit 1; }
  mkdir -p "$dst"
  cp "$src/LICENSE" "$src/go.mod" "$src/go.sum" "$dst/"
  for p in "${PACKAGES[@]}"; do
    mkdir -p "$dst/$p"
    find "$src/$p" -maxdepth 1 -type f \( -name '*.go' -o -name '*.c' -o -name '*.h' \) ! -name '*_test.go' \
      -exec cp {} "$dst/$p/" \;
  done
  for f in "${TESTFILES[@]}"; do cp "$src/$f" "$dst/$f"; done
  chmod -R u+w "$dst"
}

# patched DIR: pristine DIR with the patch applied.
patched() {
  pristine "$1"
  if [ -s "$patchfile" ]; then (cd "$1" && git apply -p1 "$patchfile"); fi
}

case "${1:-}" in
  pristine) pristine "$2" ;;
  check)
    work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
    patched "$work/go-xla"
    if ! diff -r "$work/go-xla" "$copy" >"$work/diff"; then
      cat "$work/diff" >&2
      echo "go-xla.sh: third_party/go-xla is not go-xla $VERSION plus third_party/go-xla.patch (above: what differs); after editing the copy run: bash third_party/go-xla.sh patch" >&2
      exit 1
    fi
    echo "third_party/go-xla = go-xla $VERSION (${#PACKAGES[@]} packages) + third_party/go-xla.patch" ;;
  patch)
    work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
    pristine "$work/a"
    cp -r "$copy" "$work/b"
    (cd "$work" && diff -ruN a b >"$patchfile" || [ $? = 1 ])
    sed -i -E 's#^(---|\+\+\+) ([ab]/[^\t]*)\t.*#\1 \2#' "$patchfile"
    echo "wrote $patchfile ($(grep -c '^+++' "$patchfile") files)" ;;
  *) echo "usage: bash third_party/go-xla.sh check|patch|pristine DIR" >&2; exit 2 ;;
esac
