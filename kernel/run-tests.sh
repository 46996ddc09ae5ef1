#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need (kernel/setup.sh,
# idempotent) and runs every test with the pure-Go backend. This is the README's test command
# and what CI (.ci/run) calls.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

# The kernels of this run go into out/jupyter, not into the venv as setup's default puts them
# (kernel/README.md): the tests install kernels into folders of their own and check what Jupyter
# lists there, so the venv they share must not hold this checkout's kernels already. The
# notebook tests use these (JUPYTER_DATA_DIR is exported to them).
export JUPYTER_DATA_DIR="${JUPYTER_DATA_DIR:-$repo/out/jupyter}"
# GOTOOLCHAIN=go.mod's toolchain (go1.27.3) for setup, every build and every test (and the
# kernels and go commands the tests start, which inherit it).
REPO="$repo"
# shellcheck source=kernel/toolchain.sh
. kernel/toolchain.sh
# CIFARLAB_CUDA=plugin: the CUDA plugin also without a GPU (not its 1.8 GB of NVIDIA libraries),
# for the tests of what it does on a machine without one.
CIFARLAB_CUDA="${CIFARLAB_CUDA:-plugin}" bash kernel/setup.sh

export PATH="$repo/.bin:$(go env GOROOT)/bin:$PATH"
export GOMLX_BACKEND="${GOMLX_BACKEND:-go}"
export GOMLX_NO_AUTO_INSTALL=1
# The compile cache of this run (issue 55, docs/compile-cache.md): a folder of its own, shared by
# every test package and by the kernels, lab processes and CLI runs they start, so that each XLA
# program compiles once per run (never from the user's own cache, nor into it); removed at the end.
CIFARLAB_COMPILE_CACHE="$(mktemp -d "${TMPDIR:-/tmp}/cifarlab-test-compile-cache.XXXXXX")"
export CIFARLAB_COMPILE_CACHE CIFARLAB_COMPILE_CACHE_SHARED=

# The workshop image (docker/test.sh's tools, lint, base and build phases: 6-12 minutes, mostly
# apt, pip and module downloads and a nice'd compile) is built in the background while the Go tests
# run, in a process group of its own that ends with this script; its run and notebook phases and
# the hub's test run after the Go tests, on that image (CIFARLAB_DOCKER_REUSE=1). Its log:
# out/docker-build.log. CIFARLAB_DOCKER_TEST=0 skips the image and the hub.
image_pid=
if [ "${CIFARLAB_DOCKER_TEST:-1}" = 1 ]; then
  mkdir -p out
  echo "== docker/test.sh: the image builds in the background (log out/docker-build.log)"
  CIFARLAB_DOCKER_STOP_AFTER=build setsid bash docker/test.sh >out/docker-build.log 2>&1 &
  image_pid=$!
fi
stop_image_build() {
  if [ -n "$image_pid" ] && kill -0 "$image_pid" 2>/dev/null; then
    kill -TERM -- "-$image_pid" 2>/dev/null || true
    wait "$image_pid" 2>/dev/null || true
  fi
}
trap 'stop_image_build; rm -rf "$CIFARLAB_COMPILE_CACHE"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

echo "== go vet"
go vet ./...
# cifarlib as the XLA kernels build notebook cells: without the pure-Go backend (kernel.cellGoFlags).
go vet -tags cifarlab_nogobackend ./cifarlib/...
echo "== go mod tidy -diff (go.mod and go.sum as go mod tidy leaves them)"
go mod tidy -diff
echo "== third_party/go-xla (go-xla v0.4.13 plus third_party/go-xla.patch, byte for byte)"
bash third_party/go-xla.sh check
echo "== gofmt"
unformatted="$(gofmt -l cifarlib cmd internal kernel bench docker notebooks docs research 2>/dev/null || true)"
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
echo "== go test (backend: $GOMLX_BACKEND)"
go test -count=1 -timeout 40m ./...

# The same model, loss, guard and training tests on XLA's CPU PJRT plugin (installed into .venv by
# kernel/setup.sh from kernel/requirements-xla-cpu.txt): "cpu" resolves to it, and the plugin tests
# fail rather than skip when it is missing.
echo "== go test cifarlib (models, losses, guards, training, backends) and internal/plugins on the XLA CPU plugin"
plugin="$(ls "$repo"/.venv/lib/python3*/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so | tail -1)"
GOMLX_BACKEND="xla:$plugin" CIFARLAB_REQUIRE_XLA_CPU=1 go test -count=1 -timeout 30m \
  -run '^(TestLossAtInit|TestCheckLabels|TestHostGuard.*|TestTrainStepEachArchitecture|TestAirbench.*|TestTrainerSurfacesGuardErrors|TestDeviceGuardInLoop|TestUnguardedLossIsSilent|TestGuardedLossValues|TestStaticGuardHeadMismatch|TestInGraphGuard.*|TestIgnoreIndex|TestLabelContract|TestModelOutputDimensions|TestModelFnRejectsBadImages|TestTrain.*|TestTopKAccuracyGraph|TestIm2colConvolutionMatchesConvolve|TestMaxPool2x2MatchesMaxPool|TestMaxPoolSelectMatchesTorch|TestLayerOps.*|TestNewBackend.*|TestLazy.*|TestXLACPUMatchesGo|TestFindXLACPUPluginSearch|TestFindXLACPUPluginGoXLAFolders|TestDevices.*|TestParseDevices|TestCheckPrecision|TestPrecision.*|TestTransferDevicesSameAsOneDevice|TestTransferFrozenBackboneUnchanged|TestCheckpointFixtureLoadsEvaluatesAndResumes|TestRunsOf4805295LoadEvaluateAndResume|TestRunsOff035eacLoadEvaluateResumeAndCompare|TestCUDACompileCache.*|TestRecipe.*|TestLabelSmoothingLoss|TestProgramsFeedHyperParameters|TestProgramsNewShapeSaysWhy|TestProgramsKeepWhitening|TestProgramsResumedRunReusesThem|TestLookahead.*)$' \
  ./cifarlib ./cifarlib/backends ./cifarlib/training ./cifarlib/training/optimizers ./internal/plugins

# The determinism tests again with the compile cache off: the pass above loaded most programs
# from this run's cache, and each path must give the same bits (TestCompileCacheTrainingSameResults
# compares them across processes).
echo "== determinism tests on the XLA CPU plugin with the compile cache off"
GOMLX_BACKEND="xla:$plugin" CIFARLAB_REQUIRE_XLA_CPU=1 CIFARLAB_COMPILE_CACHE=off go test -count=1 -timeout 20m \
  -run '^(TestTrainInterruptResumeEqualsStraightRun|TestLookaheadEndFed|TestProgramsFeedHyperParameters)$' ./cifarlib/training ./cifarlib/training/optimizers

# The go-xla patch's own tests (third_party/README.md): serialise and load executables, the
# compile hook, on the same plugin.
echo "== go test third_party/go-xla/pjrt (the patch) on the XLA CPU plugin"
(cd third_party/go-xla && go test -count=1 -run '^(TestSerializeDeserializeAndLoad|TestCompileHook)$' ./pjrt -plugin="$plugin")

# The workshop image on every run (see docker/README.md): built with buildah in the background
# (above), run with podman (docker/test.sh installs both from apt when missing; it needs root):
# its kernels checked and notebook 01 executed inside it on XLA CPU. It prints each phase's time.
# CIFARLAB_DOCKER_TEST=0 skips it (e.g. a laptop run without root), leaving docker/lint.sh, which
# docker/test.sh runs before its build.
if [ "${CIFARLAB_DOCKER_TEST:-1}" != 1 ]; then
  echo "== docker lint (the full image build is docker/test.sh, see docker/README.md)"
  bash docker/lint.sh
else
  echo "== docker/test.sh: waiting for the image build (started with the Go tests)"
  build_rc=0
  wait "$image_pid" || build_rc=$?
  image_pid=
  grep -E '^(=== |docker/test.sh: |image )' out/docker-build.log || true
  if [ "$build_rc" != 0 ]; then
    tail -n 60 out/docker-build.log
    echo "docker/test.sh: the image build failed (exit $build_rc; log out/docker-build.log)" >&2
    exit 1
  fi
  echo "== docker/test.sh (run, notebook 01 inside the image)"
  CIFARLAB_DOCKER_REUSE=1 bash docker/test.sh
  # The workshop hub on that image, through start.sh as docker/README.md runs it, at CI size (2
  # users, notebook 01 run by one of them from the image's compile cache: about 6 minutes;
  # CIFARLAB_HUB_TEST_SIZE=full for RESULTS.md's figures).
  # CIFARLAB_HUB_TEST=0 skips it.
  if [ "${CIFARLAB_HUB_TEST:-1}" = 1 ]; then
    echo "== docker/hub/test.sh (JupyterHub through start.sh: spawns, failed spawns, isolation, culling with a tab open, down)"
    CIFARLAB_HUB_TEST_SIZE=ci bash docker/hub/test.sh
  fi
fi

# Fuzz targets for a fixed budget of executions (counts, not durations: a duration budget can
# fail spuriously with "context deadline exceeded" on a loaded machine, golang/go#75804).
echo "== fuzz (fixed budget)"
go test -run '^$' -fuzz '^FuzzReadRecords$' -fuzztime 10000x -fuzzminimizetime 50x ./cifarlib/data
go test -run '^$' -fuzz '^FuzzExtract$' -fuzztime 3000x -fuzzminimizetime 50x ./cifarlib/data
go test -run '^$' -fuzz '^FuzzReadPickle$' -fuzztime 10000x -fuzzminimizetime 50x ./cifarlib/data
go test -run '^$' -fuzz '^FuzzReadTorch$' -fuzztime 10000x -fuzzminimizetime 50x ./internal/torchfile
go test -run '^$' -fuzz '^FuzzReadSafetensors$' -fuzztime 10000x -fuzzminimizetime 50x ./internal/safetensors
go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 10000x -fuzzminimizetime 50x ./internal/pickle
go test -run '^$' -fuzz '^FuzzExtract$' -fuzztime 3000x -fuzzminimizetime 50x ./internal/archive
