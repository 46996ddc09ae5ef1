#!/usr/bin/env bash
# Writes cifarlib/training/testdata/run-4805295/: two runs written by the cifarlab of commit 4805295
# (GoMLX v0.28.8, compute v0.1.6, Go 1.26), the last commit before the upgrade to GoMLX v0.28.16,
# which checkpoint_compat_test.go (TestRunsOf4805295LoadEvaluateAndResume) reads with the current
# code. Run it from anywhere in a clone that has that commit; it takes a few minutes (it builds
# the old cifarlab):
#
#   bash cifarlib/training/checkpoint_compat_4805295.sh
#
# What it does, all with the old code and the pure-Go backend:
#   1. builds cmd/cifarlab of 4805295 (git archive into a temporary folder; GOWORK=off, the module
#      cache must hold go.mod's modules of 4805295, as on any machine that built it);
#   2. synthesizes CIFAR-10 (cifarlab synth --seed 45 --train 64 --test 32);
#   3. trains two runs with the old code, as a user would:
#        cnn/     cifarlab train --model cnn --steps 3 --batch 8 --seed 34 (Adam), with the old binary;
#        recipe/  the airbench94 recipe on the cnn (Nesterov SGD with its groups, lookahead EMA,
#                 label smoothing, triangle schedule; the cnn keeps the checkpoint small), batch 16,
#                 seed 35, for 5 steps, interrupted after step 3 (as Ctrl-C in a cell or SIGINT
#                 leaves it: the recipe's schedule spans the run's steps, so a run is only
#                 resumed with its own step count), with the old library (Trainer.Run, its
#                 context cancelled by a step hook);
#      each with its checkpoint, run.json, history.json and event file;
#   4. resumes a copy of each run to step 5 with the old code (not kept: its history's steps 4
#      and 5 are what a resumed run must reproduce);
#   5. computes, with the old library, each run's loss, accuracy and logits on the 32 test
#      records, and the resumed copies' steps 4 and 5, into want.json.
# The old module versions come from the module cache (GOFLAGS=-mod=mod is not needed: 4805295's
# go.sum pins them); GOTOOLCHAIN is go.mod's toolchain of this checkout, which builds the old
# code too.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel)"
commit=4805295
out="$here/testdata/run-$commit"
w="$(mktemp -d)"
trap 'chmod -R u+w "$w" 2>/dev/null; rm -rf "$w"' EXIT

mkdir -p "$w/src" "$w/runs"
git -C "$repo" archive "$commit" | tar -x -C "$w/src"
gomlx="$(sed -n 's/^[[:space:]]*github.com\/gomlx\/gomlx \(v[^ ]*\)$/\1/p' "$w/src/go.mod")"
echo "== building cifarlab at $commit (gomlx $gomlx)"
(cd "$w/src" && GOWORK=off go build -o "$w/cifarlab" ./cmd/cifarlab)

export GOMLX_BACKEND=go GOMLX_NO_AUTO_INSTALL=1
echo "== synthetic CIFAR-10"
"$w/cifarlab" synth --dataset cifar10 --out "$w/data" --seed 45 --train 64 --test 32
echo "== training"
"$w/cifarlab" train --data "$w/data" --model cnn --steps 3 --batch 8 --seed 34 --backend go \
  --checkpoint "$w/runs/cnn" --no-eval --progress off

mkdir -p "$w/src/cmd/fixturewant"
cat >"$w/src/cmd/fixturewant/main.go" <<'EOF'
// Command fixturewant, with the cifarlib of the commit it is built in:
//
//	fixturewant recipe DIR STEPS          trains the recipe run into DIR, to 5 steps, stopping after STEPS
//	fixturewant want COMMIT GOMLX RUNS RESUMED   prints want.json
package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train"
)

var synth = data.SynthOptions{Seed: 45, TrainSize: 64, TestSize: 32}

type want struct {
	Accuracy float64     `json:"accuracy"`
	Loss     float64     `json:"loss"`
	Logits   [][]float32 `json:"logits"`
	// Resumed are the points of steps 4 and 5 of the run resumed to step 5.
	Resumed any `json:"resumed"`
}

func main() {
	b, err := backends.New("go")
	check(err)
	test, err := data.SynthesizeRecords(data.CIFAR10(), data.SplitTest, synth)
	check(err)
	if os.Args[1] == "recipe" {
		stop, err := strconv.Atoi(os.Args[3])
		check(err)
		trainRecs, err := data.SynthesizeRecords(data.CIFAR10(), data.SplitTrain, synth)
		check(err)
		cfg := training.Config{Spec: data.CIFAR10(), TrainRecords: trainRecs, TestRecords: test, Recipe: training.RecipeAirbench94,
			Model: cifarlib.ArchCNN, Steps: 5, BatchSize: 16, Seed: 35, TTA: training.TTAOff, EvalEvery: training.EvalOff,
			SkipFinalEval: true, Backend: b, Progress: training.ProgressOff, CheckpointDir: os.Args[2]}
		tr, err := training.NewTrainer(cfg)
		check(err)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tr.Loop().OnStep("fixture: stop", 10, func(*train.Loop, []*tensors.Tensor) error {
			if tr.GlobalStep() >= stop {
				cancel()
			}
			return nil
		})
		res, err := tr.Run(ctx)
		check(err)
		os.Stderr.WriteString("recipe run: end step " + strconv.Itoa(res.EndStep) + ", interrupted " + strconv.FormatBool(res.Interrupted) + "\n")
		return
	}
	res := map[string]any{"commit": os.Args[2], "gomlx": os.Args[3], "backend": b.Name(), "test_records": test.Len()}
	for _, run := range []string{"cnn", "recipe"} {
		ld, err := training.LoadCheckpoint(os.Args[4]+"/"+run, b)
		check(err)
		ev, err := ld.Evaluate(context.Background(), test, training.EvalOptions{BatchSize: test.Len()})
		check(err)
		batch, err := test.Batch(0, test.Len())
		check(err)
		lt, err := ld.Logits(batch.Images)
		check(err)
		resumed, err := training.LoadCheckpoint(os.Args[5]+"/"+run, b)
		check(err)
		w := want{Accuracy: ev.Accuracy, Loss: ev.Loss, Resumed: resumed.History.Points[3:]}
		tensors.ConstFlatData(lt, func(flat []float32) {
			n := lt.Shape().Dimensions[1]
			for i := 0; i < len(flat); i += n {
				w.Logits = append(w.Logits, append([]float32(nil), flat[i:i+n]...))
			}
		})
		res[run] = w
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	check(enc.Encode(res))
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
EOF
(cd "$w/src" && GOWORK=off go build -o "$w/fixturewant" ./cmd/fixturewant)
"$w/fixturewant" recipe "$w/runs/recipe" 3

echo "== resuming copies to step 5"
mkdir -p "$w/resumed"
cp -r "$w/runs/cnn" "$w/runs/recipe" "$w/resumed/"
"$w/cifarlab" train --data "$w/data" --model cnn --steps 5 --batch 8 --seed 34 --backend go \
  --checkpoint "$w/resumed/cnn" --no-eval --progress off
"$w/fixturewant" recipe "$w/resumed/recipe" 5

echo "== want.json (the old library's loss, accuracy and logits of each run)"
"$w/fixturewant" want "$commit" "$gomlx" "$w/runs" "$w/resumed" >"$w/runs/want.json"

rm -rf "$out"
mkdir -p "$out"
cp -r "$w/runs/." "$out/"
du -sh "$out"
echo "wrote $out"
