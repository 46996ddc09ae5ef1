#!/usr/bin/env bash
# Writes cifarlib/training/testdata/run-f035eac/: three runs written by the cifarlab of commit
# f035eac (GoMLX v0.28.16, the last commit whose run.json stored a run's settings four ways:
# fields of the record, its params, training.Settings in JSON and the table's values), which
# compat_f035eac_test.go (TestRunsOff035eacLoadEvaluateResumeAndCompare) reads with the current
# code. Run it from anywhere in a clone that has that commit; it takes a few minutes (it builds
# the old cifarlab):
#
#   bash cifarlib/training/checkpoint_compat_f035eac.sh
#
# What it does, all with the old code and the pure-Go backend:
#   1. builds cmd/cifarlab of f035eac (git archive into a temporary folder; GOWORK=off, the module
#      cache must hold go.mod's modules of f035eac, as on any machine that built it);
#   2. synthesizes CIFAR-10 and CIFAR-100 (cifarlab synth --seed 45 --train 64 --test 32);
#   3. trains three runs with the old code, as a user would:
#        cnn/       cifarlab train --model cnn --steps 3 --batch 8 --seed 34 --lr 0.002 (Adam), with the old binary;
#        recipe/    cifarlab train --recipe airbench94 --model cnn --whiten-bias-epochs 0 --batch 16 --seed 35 --steps 5
#                   --tta 0, interrupted
#                   after step 3 (as Ctrl-C leaves it; with the old library, Trainer.Run, its context cancelled by a
#                   step hook, and the flags as that binary records them);
#        transfer/  cifarlab train --from cnn --dataset cifar100 --labels coarse --steps 3 --batch 8 --seed 36 (the
#                   cnn's backbone carried, a new head of 20; --from relative to the runs folder, so that the test
#                   resumes it there), with the old binary;
#      each with its checkpoint, run.json, history.json and event file;
#   4. resumes a copy of cnn/ and recipe/ to step 5 and of transfer/ to step 4, with the old code (not kept: their
#      histories' later steps are what a resumed run must reproduce);
#   5. computes, with the old library, each run's loss, accuracy and logits on the 32 test records of its
#      dataset, the resumed copies' later steps, and what the old runs package says of the three runs (each
#      one's settings, and a comparison's differing settings and labels), into want.json.
# GOTOOLCHAIN is go.mod's toolchain of this checkout, which builds the old code too.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel)"
commit=f035eac
out="$here/testdata/run-$commit"
w="$(mktemp -d)"
trap 'chmod -R u+w "$w" 2>/dev/null; rm -rf "$w"' EXIT

mkdir -p "$w/src" "$w/runs"
git -C "$repo" archive "$commit" | tar -x -C "$w/src"
gomlx="$(sed -n 's/^[[:space:]]*github.com\/gomlx\/gomlx \(v[^ ]*\)$/\1/p' "$w/src/go.mod")"
echo "== building cifarlab at $commit (gomlx $gomlx)"
(cd "$w/src" && GOWORK=off go build -o "$w/cifarlab" ./cmd/cifarlab)

export GOMLX_BACKEND=go GOMLX_NO_AUTO_INSTALL=1
echo "== synthetic CIFAR-10 and CIFAR-100"
for dataset in cifar10 cifar100; do
  "$w/cifarlab" synth --dataset "$dataset" --out "$w/data" --seed 45 --train 64 --test 32
done
common=(--data "$w/data" --backend go --no-eval --eval-every -1 --progress off)
cnn=(--model cnn --batch 8 --seed 34 --lr 0.002)
transfer=(--dataset cifar100 --labels coarse --batch 8 --seed 36 --from cnn)
echo "== training"
"$w/cifarlab" train "${common[@]}" "${cnn[@]}" --steps 3 --checkpoint "$w/runs/cnn"
(cd "$w/runs" && "$w/cifarlab" train "${common[@]}" "${transfer[@]}" --steps 3 --checkpoint transfer)

mkdir -p "$w/src/cmd/fixturewant"
cat >"$w/src/cmd/fixturewant/main.go" <<'EOF'
// Command fixturewant, with the cifarlib of the commit it is built in:
//
//	fixturewant recipe DATA DIR STOP        trains the recipe run into DIR, to 5 steps, stopping after step STOP
//	fixturewant want COMMIT GOMLX DATA RUNS RESUMED   prints want.json
package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train"
)

// recipeFlags are the flags the recipe run was given (its params, as `cifarlab train` records them).
var recipeFlags = map[string]string{"recipe": "airbench94", "model": "cnn", "whiten-bias-epochs": "0", "batch": "16", "seed": "35", "steps": "5", "tta": "0",
	"no-eval": "true", "eval-every": "-1", "backend": "go"}

type want struct {
	Accuracy float64     `json:"accuracy"`
	Loss     float64     `json:"loss"`
	Logits   [][]float32 `json:"logits"`
	// Resumed are the points after step 3 of the run resumed (5 steps; the transfer 4).
	Resumed []runs.HistoryPoint `json:"resumed"`
	// Info is what the runs package read of the run.
	Info runs.Info `json:"info"`
}

func main() {
	b, err := backends.New("go")
	check(err)
	if os.Args[1] == "recipe" {
		recipe(b, os.Args[2], os.Args[3], os.Args[4])
		return
	}
	if len(os.Args) != 7 {
		panic("usage: fixturewant want COMMIT GOMLX DATA RUNS RESUMED")
	}
	dataDir, runsDir, resumedDir := os.Args[4], os.Args[5], os.Args[6]
	res := map[string]any{"commit": os.Args[2], "gomlx": os.Args[3], "backend": b.Name(), "test_records": 32}
	var list []runs.Info
	for _, run := range []string{"cnn", "recipe", "transfer"} {
		ld, err := training.LoadCheckpoint(filepath.Join(runsDir, run), b)
		check(err)
		test, err := data.LoadSplit(dataDir, ld.Model.Spec, data.SplitTest)
		check(err)
		ev, err := ld.Evaluate(context.Background(), test, training.EvalOptions{BatchSize: test.Len()})
		check(err)
		batch, err := test.Batch(0, test.Len())
		check(err)
		lt, err := ld.Logits(batch.Images)
		check(err)
		resumed, err := training.LoadCheckpoint(filepath.Join(resumedDir, run), b)
		check(err)
		info := runs.Read(filepath.Join(runsDir, run))
		info.History = nil
		list = append(list, info)
		w := want{Accuracy: ev.Accuracy, Loss: ev.Loss, Resumed: resumed.History.Points[3:], Info: info}
		tensors.ConstFlatData(lt, func(flat []float32) {
			n := lt.Shape().Dimensions[1]
			for i := 0; i < len(flat); i += n {
				w.Logits = append(w.Logits, append([]float32(nil), flat[i:i+n]...))
			}
		})
		res[run] = w
	}
	res["differing"], res["labels"], res["compared"] = runs.Differing(list...), runs.Labels(list...), runs.Compared(list...)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	check(enc.Encode(res))
}

// recipe trains the recipe run into dir from the data in dataDir on backend b, stopping after
// step stop.
func recipe(b compute.Backend, dataDir, dir, stop string) {
	s := training.Defaults()
	check(s.Apply(recipeFlags))
	s.Data.Dir, s.Checkpoint.Dir = dataDir, dir
	s.Record.Params = recipeFlags
	tr, err := training.NewTrainer(s, training.Env{Backend: b, Progress: training.ProgressOff})
	check(err)
	at, err := strconv.Atoi(stop)
	check(err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr.Loop().OnStep("fixture: stop", 10, func(*train.Loop, []*tensors.Tensor) error {
		if tr.GlobalStep() >= at {
			cancel()
		}
		return nil
	})
	r, err := tr.Run(ctx)
	check(err)
	os.Stderr.WriteString("recipe run: end step " + strconv.Itoa(r.EndStep) + ", interrupted " + strconv.FormatBool(r.Interrupted) + "\n")
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
EOF
(cd "$w/src" && GOWORK=off go build -o "$w/fixturewant" ./cmd/fixturewant)
"$w/fixturewant" recipe "$w/data" "$w/runs/recipe" 3

echo "== resuming copies"
mkdir -p "$w/resumed"
cp -r "$w/runs/cnn" "$w/runs/recipe" "$w/runs/transfer" "$w/resumed/"
"$w/cifarlab" train "${common[@]}" "${cnn[@]}" --steps 5 --checkpoint "$w/resumed/cnn"
"$w/fixturewant" recipe "$w/data" "$w/resumed/recipe" 5
(cd "$w/runs" && "$w/cifarlab" train "${common[@]}" "${transfer[@]}" --steps 4 --checkpoint ../resumed/transfer)

echo "== want.json (the old library's loss, accuracy and logits of each run, and what its runs package read of them)"
"$w/fixturewant" want "$commit" "$gomlx" "$w/data" "$w/runs" "$w/resumed" >"$w/runs/want.json"

rm -rf "$out"
mkdir -p "$out"
cp -r "$w/runs/." "$out/"
du -sh "$out"
echo "wrote $out"
