#!/usr/bin/env bash
# The size and link time of a notebook cell's binary, built as the XLA kernels build cells
# (kernel.cellGoFlags on an XLA backend: -buildvcs=false, -ldflags=-s -linkmode=internal,
# -tags=cifarlab_nogobackend), outside Jupyter, so that only the go command is timed.
#
#   bash bench/cellbin.sh [REPO] [RUNS]
#
# For each kind of cell (data: imports cifarlib/data, as bench/cells.py's "cifarlib" cell;
# cifarlib: imports cifarlib, so its backends and go-xla; nb: imports cifarlib/nb) it builds the
# program once (compiling what changed), then RUNS times, each after editing a comment (so the
# go command compiles the cell's package and links again, as when a user edits a cell), and
# prints the binary's size, the median and the best of those builds' wall times (and the median
# CPU time, user + system, of go build and its compile and link, which depends less on the
# machine's load), and the best
# of RUNS runs of the link command alone (go build -x's last link step, run again). REPO
# (default: this checkout) is the repository the cells import; use a `git archive` snapshot to
# keep edits to the working tree out of the timings.
set -euo pipefail
repo="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
runs="${2:-7}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="-buildvcs=false '-ldflags=-s -linkmode=internal' -tags=cifarlab_nogobackend"
export GOWORK=off GOMLX_NO_AUTO_INSTALL=1

cell() { # kind import expression
  local dir="$work/$1"
  mkdir -p "$dir"
  cat >"$dir/go.mod" <<EOF
module cell

go 1.26

require github.com/cifarlab/cifarlab v0.0.0

replace github.com/cifarlab/cifarlab => $repo
EOF
  cp "$repo/go.sum" "$dir/go.sum"
  printf 'package main\n\nimport (\n\t"fmt"\n\n\t"%s"\n)\n\nfunc main() { fmt.Println(%s) } // edit 0\n' "$2" "$3" >"$dir/main.go"
  (cd "$dir" && go mod tidy >/dev/null 2>&1 && go build -o cell .)
  local times=() cpus=()
  for i in $(seq 1 "$runs"); do
    sed -i "s|// edit .*|// edit $i|" "$dir/main.go"
    local rus
    # wall, user and system seconds of go build and what it waited for (compile, link)
    rus=$( { TIMEFORMAT='%3R %3U %3S'; time (cd "$dir" && go build -o cell .); } 2>&1 | tail -1)
    times+=("$(echo "$rus" | cut -d' ' -f1)")
    cpus+=("$(echo "$rus" | awk '{print $2 + $3}')")
  done
  # The link alone: go build -x's link command (with its importcfg) run again.
  sed -i "s|// edit .*|// edit x|" "$dir/main.go"
  (cd "$dir" && go build -x -work -o cell . 2>"$dir/x.log")
  local wdir link best=999 lcpus=()
  wdir=$(sed -n 's/^WORK=//p' "$dir/x.log")
  link=$(grep -E '/link -o ' "$dir/x.log" | tail -1)
  for i in $(seq 1 "$runs"); do
    local rus d
    rus=$( { TIMEFORMAT='%3R %3U %3S'; time (cd "$dir" && WORK="$wdir" bash -c "$link" >/dev/null 2>&1); } 2>&1 | tail -1)
    d=$(echo "$rus" | cut -d' ' -f1)
    lcpus+=("$(echo "$rus" | awk '{print $2 + $3}')")
    best=$(echo "if ($d < $best) $d else $best" | bc)
  done
  rm -rf "$wdir"
  local sorted median cpu
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  median=$(echo "$sorted" | sed -n "$(((runs + 1) / 2))p")
  cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
  printf '%-9s size %5.1f MB  go build (edited cell) median %.2f s (%.2f s CPU) best %.2f s  link alone best %.2f s (median %.2f s CPU)\n' \
    "$1" "$(echo "$(stat -c %s "$dir/cell") / 1000000" | bc -l)" "$median" "$cpu" "$(echo "$sorted" | head -1)" "$best" \
    "$(printf '%s\n' "${lcpus[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")"
}

echo "repo $repo, $(go version), $(grep -E '^\s*github.com/gomlx/(gomlx|go-xla|compute) ' "$repo/go.mod" | awk '{print $1"@"$2}' | tr '\n' ' ')"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
cell data github.com/cifarlab/cifarlab/cifarlib/data "data.CIFAR10().NumClasses"
cell cifarlib github.com/cifarlab/cifarlab/cifarlib "cifarlib.ArchCNN"
cell nb github.com/cifarlab/cifarlab/cifarlib/nb "nb.Arch(nil)"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
