package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"

	"github.com/stretchr/testify/require"
)

// cifarlab eval on a CIFAR-100 coarse checkpoint: the dataset, label set and head come from
// the checkpoint; top-5 and the 20 per-class rows are reported.
func TestEvalCommandCIFAR100Coarse(t *testing.T) {
	root := trainTestData(t, data.CIFAR100(data.LabelsCoarse))
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"train", "--dataset", "cifar100", "--labels", "coarse", "--data", root, "--model", "linear",
		"--steps", "2", "--batch", "16", "--backend", "go", "--checkpoint", ckpt, "--no-eval", "--progress", "off"}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "trained linear (head 20) on cifar100-coarse with guarded loss")

	stdout.Reset()
	require.Equal(t, 0, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--backend", "go", "--json", "--batch", "32"}, &stdout, &stderr), stderr.String())
	var ev struct {
		Checkpoint training.CheckpointInfo `json:"checkpoint"`
		training.EvalResult
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &ev))
	require.Equal(t, "coarse", ev.Checkpoint.Data.Spec.Labels.String())
	require.Equal(t, 2, ev.Checkpoint.Step)
	require.Equal(t, "cifar100-coarse", ev.Dataset)
	require.Equal(t, 20, ev.HeadWidth)
	require.Equal(t, 5, ev.TopK)
	require.Equal(t, 100, ev.Examples)
	require.Len(t, ev.PerClass, 20)
	require.Equal(t, "aquatic_mammals", ev.PerClass[0].Name)
	require.GreaterOrEqual(t, ev.TopKAccuracy, ev.Accuracy)
	require.NotNil(t, ev.Timeline, "--json carries the evaluation's timeline")
	require.Equal(t, 1, ev.Timeline.Programs(runs.ProgramEvaluation), ev.Timeline.String())

	stdout.Reset()
	require.Equal(t, 0, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--backend", "go"}, &stdout, &stderr), stderr.String())
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	require.Equal(t, "checkpoint "+ckpt+": linear for cifar100-coarse (20 classes), step 2, precision f32", lines[0])
	require.Contains(t, lines[1], ", top-5 ")
	require.Len(t, lines, 3+20)

	require.Equal(t, 2, run([]string{"eval", "--checkpoint", ckpt, "--split", "validation"}, &stdout, &stderr))

	// --tta: airbench's mirror+translate test-time augmentation, recorded in the result.
	stdout.Reset()
	require.Equal(t, 0, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--backend", "go", "--tta", "2", "--json"}, &stdout, &stderr), stderr.String())
	var tta training.EvalResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &tta))
	require.Equal(t, training.TTAMirrorTranslate, tta.TTA)
	require.Equal(t, 100, tta.Examples)
	require.NotEqual(t, ev.Loss, tta.Loss, "the averaged logits of six views are not the plain ones")
	stderr.Reset()
	require.Equal(t, 2, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--tta", "3"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--tta 3: use 0 (none), 1 (mirror) or 2 (mirror and translate)")
}

// cifarlab eval reuses an evaluation the run folder keeps, as a notebook's Evaluate does: the
// same weights, images and options again print the same report at once, and a line on stderr
// says where it was kept and that nothing was evaluated; other options evaluate.
func TestEvalCommandReusesStoredEvaluation(t *testing.T) {
	root := trainTestData(t, data.CIFAR10())
	ckpt := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"train", "--data", root, "--model", "linear", "--steps", "2", "--batch", "16", "--backend", "go",
		"--checkpoint", ckpt, "--no-eval", "--progress", "off"}, &stdout, &stderr), stderr.String())
	eval := func(tta string) (report, logged string) {
		t.Helper()
		stdout.Reset()
		logged = captureStderr(t, func() {
			require.Equal(t, 0, run([]string{"eval", "--checkpoint", ckpt, "--data", root, "--backend", "go", "--tta", tta}, &stdout, &stderr), stderr.String())
		})
		return stdout.String(), logged
	}
	first, logged := eval("2")
	require.NotContains(t, logged, "not evaluated again")
	require.Contains(t, logged, "evaluated 100 images with TTA level 2 (6 views)")
	require.FileExists(t, filepath.Join(ckpt, training.EvaluationsFile))

	again, logged := eval("2")
	require.Equal(t, first, again, "the same report")
	require.Regexp(t, `\ntest accuracy \d+\.\d\d% \(\d+/100\), loss \d+\.\d+, test-time augmentation mirror\+translate [^\n]*: stored in `+
		regexp.QuoteMeta(filepath.Join(ckpt, training.EvaluationsFile))+` when the same weights \(step 2\), images and options were evaluated `+
		`\([0-9-]+ [0-9:]+, in \d+\.\d s\); not evaluated again\n`, logged)
	require.NotContains(t, logged, "evaluating 100 images")

	_, logged = eval("1")
	require.NotContains(t, logged, "not evaluated again", "another TTA level evaluates")
}
