# shellcheck shell=bash
# kernel/toolchain.sh: sourced (never run) by every script that builds Go code: kernel/setup.sh,
# kernel/lab.sh, kernel/run-tests.sh, .ci/run, .ci/new-machine and bench/gpu.sh. The caller sets
# REPO (the checkout) first.
#
# It exports GOTOOLCHAIN=go.mod's toolchain line (go1.27.3). gomlx v0.28.9+, go-xla v0.4.12+ and
# compute v0.1.13+ need Go 1.27, and many machines start on an older Go whose GOROOT/go.env says
# GOTOOLCHAIN=local, so the toolchain line alone is ignored there: exported, it makes the go
# command on PATH (any Go 1.21+) run exactly that release, fetched once through the Go module
# proxy into the module cache like a module (76 MB) and verified against go.sum's checksum
# database. A GOTOOLCHAIN the user exported (local, auto, another release) is replaced: every
# build of the lab uses the same Go. It also puts that toolchain's bin/ first on PATH, so that
# the tools the scripts start (go test, gopls, GoNB) run it directly, without a switch per call.
#
# cifarlab_toolchain_check fetches the toolchain now, or says in one line what it needs and why
# and returns 1: setup runs it before it installs anything of the lab.

# cifarlab_toolchain is the toolchain line of REPO/go.mod, e.g. go1.27.3.
cifarlab_toolchain="$(sed -n 's/^toolchain[[:space:]]\{1,\}\(go[0-9.a-z]*\).*/\1/p' "$REPO/go.mod")"
if [ -z "$cifarlab_toolchain" ]; then
  echo "toolchain.sh: $REPO/go.mod has no toolchain line (e.g. toolchain go1.27.3)" >&2
  # shellcheck disable=SC2317 # exit only when run rather than sourced
  return 1 2>/dev/null || exit 1
fi
if [ -n "${GOTOOLCHAIN:-}" ] && [ "$GOTOOLCHAIN" != "$cifarlab_toolchain" ]; then
  echo "note: GOTOOLCHAIN=$GOTOOLCHAIN in the environment; the lab builds with $cifarlab_toolchain (go.mod's toolchain line)" >&2
fi
export GOTOOLCHAIN="$cifarlab_toolchain"

# cifarlab_toolchain_check: fetches go.mod's toolchain (a no-op when it is already in the module
# cache or is the go on PATH) and puts its bin/ first on PATH; on failure one line to stderr.
cifarlab_toolchain_check() {
  local out goroot
  if ! command -v go >/dev/null; then
    echo "setup: needs Go ${cifarlab_toolchain#go} (go.mod's toolchain line): no go command on PATH. Install any Go 1.21+ (https://go.dev/dl) and put it on PATH; the go command then fetches ${cifarlab_toolchain} itself through the Go module proxy." >&2
    return 1
  fi
  # GOROOT alone on stdout: the go command says "go: downloading go1.27.3 ..." on stderr while it
  # fetches the toolchain, which must not end up in the path.
  local errf
  errf="$(mktemp)"
  if ! out="$(cd "$REPO" && go env GOROOT 2>"$errf")" || [ ! -x "$out/bin/go" ]; then
    out="$out $(tail -n 1 "$errf")"
    rm -f "$errf"
    local have proxy
    have="$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null || echo 'an unknown Go')"
    proxy="$(GOTOOLCHAIN=local go env GOPROXY 2>/dev/null)"
    echo "setup: needs Go ${cifarlab_toolchain#go} (go.mod's toolchain line: gomlx, go-xla and compute need Go 1.27), but the go command on PATH is ${have} and could not fetch ${cifarlab_toolchain} through GOPROXY=${proxy} ($(printf '%s' "$out" | tail -n 1)): give it access to the Go module proxy, or install Go ${cifarlab_toolchain#go} from https://go.dev/dl and put it first on PATH, then re-run. Nothing was installed." >&2
    return 1
  fi
  rm -f "$errf"
  goroot="$out"
  case ":$PATH:" in
    *":$goroot/bin:"*) ;;
    *) export PATH="$goroot/bin:$PATH" ;;
  esac
}
