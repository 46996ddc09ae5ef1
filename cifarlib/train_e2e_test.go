package cifarlib

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScratchCurve(t *testing.T) {
	for _, c := range []struct {
		spec  Spec
		steps int
	}{{CIFAR10(), 40}, {CIFAR100(LabelsFine), 60}} {
		o := SynthOptions{Seed: 1, TrainSize: 1000, TestSize: 200}
		tr, err := SynthesizeRecords(c.spec, SplitTrain, o)
		require.NoError(t, err)
		te, err := SynthesizeRecords(c.spec, SplitTest, o)
		require.NoError(t, err)
		res, err := Train(context.Background(), TrainConfig{Spec: c.spec, TrainRecords: tr, TestRecords: te, Model: "cnn", Steps: c.steps,
			BackendName: "go", Log: os.Stdout, EvalEvery: 10, SkipFinalEval: true, Progress: ProgressOff})
		require.NoError(t, err)
		require.NoError(t, res.WriteSummary(os.Stdout))
	}
}
