package cifarlib

import (
	"fmt"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

// diagnoseData writes a small synthetic CIFAR-100 under a temp folder and returns the folder.
func diagnoseData(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, data.Synthesize(root, data.CIFAR100(data.LabelsFine), data.SynthOptions{Seed: 3, TrainSize: 300, TestSize: 120}))
	return root
}

func TestDiagnoseHeadMismatch(t *testing.T) {
	root := diagnoseData(t)
	m, err := NewModel(data.CIFAR100(data.LabelsFine), ArchCNN).Head(10).Done()
	require.NoError(t, err)
	d, err := DiagnoseWith(m, root, DiagnoseOptions{BatchSize: 16})
	require.NoError(t, err)
	require.False(t, d.OK)
	require.Equal(t, 10, d.HeadWidth)
	require.Equal(t, 100, d.NumClasses)
	require.True(t, d.HeadOverridden)
	require.Equal(t, "int32", d.LabelDType)
	require.Equal(t, []int{16, 1}, d.LabelShape)
	require.Equal(t, []int{16, 32, 32, 3}, d.ImageShape)

	// Label statistics, recomputed here from the records.
	for i, split := range []data.Split{data.SplitTrain, data.SplitTest} {
		recs, err := data.LoadSplit(root, data.CIFAR100(data.LabelsFine), split)
		require.NoError(t, err)
		hist := make([]int, 100)
		minL, maxL, beyond := 1000, -1, 0
		for j := range recs.Len() {
			l := recs.Label(j)
			hist[l]++
			minL, maxL = min(minL, l), max(maxL, l)
			if l >= 10 {
				beyond++
			}
		}
		s := d.Splits[i]
		require.Equal(t, split.String(), s.Split)
		require.Equal(t, recs.Len(), s.Count)
		require.Equal(t, hist, s.Histogram)
		require.Equal(t, minL, s.Min)
		require.Equal(t, maxL, s.Max)
		require.Equal(t, beyond, s.BeyondHead)
		require.Greater(t, beyond, 0)
		require.Contains(t, d.Problems, fmt.Sprintf("%s split: %d of %d labels are >= 10 (labels %d..%d, first at "+
			"examples %v): an unguarded loss gives them a loss of exactly 0, so they are silently ignored",
			s.Split, beyond, recs.Len(), minL, maxL, s.FirstBeyondHead))
	}
	require.Equal(t, "model head has 10 outputs but dataset cifar100 has 100 classes (head overridden to 10): "+
		"build the model with cifarlib's factory for cifar100, or set the head to 100", d.Problems[0])
	require.Equal(t, "MISMATCH: the head has 10 outputs but cifar100 has 100 classes", d.Verdict)
	require.Equal(t, `build the model for the dataset: cifarlib.NewModel(data.CIFAR100(data.LabelsFine), "cnn") `+
		`without Head(10), so the head has 100 outputs`, d.Fix)
	text := d.String()
	require.Contains(t, text, "head: 10 outputs != 100 classes: MISMATCH\n")
	require.Contains(t, text, "Verdict: MISMATCH: the head has 10 outputs but cifar100 has 100 classes\n")
}

func TestDiagnoseOK(t *testing.T) {
	root := diagnoseData(t)
	for _, labels := range []data.LabelSet{data.LabelsFine, data.LabelsCoarse} {
		m, err := NewModel(data.CIFAR100(labels), ArchLinear).Done()
		require.NoError(t, err)
		d, err := Diagnose(m, root)
		require.NoError(t, err)
		require.True(t, d.OK, "%v", d.Problems)
		require.Empty(t, d.Problems)
		require.Equal(t, fmt.Sprintf("OK: the head has %d outputs for the %d classes of %s, and every label of "+
			"train and test is in [0, %d)", m.NumClasses, m.NumClasses, m.Spec.ID(), m.NumClasses), d.Verdict)
		require.Equal(t, 0, d.Splits[0].BeyondHead)
		require.Len(t, d.Splits[0].Histogram, m.NumClasses)
		require.Equal(t, []int{128, 1}, d.LabelShape)
	}
}

func TestDiagnoseFindsSyntheticSubfolderAndReportsMissingData(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, data.Synthesize(data.SyntheticDir(root), data.CIFAR10(), data.SynthOptions{Seed: 1, TrainSize: 50, TestSize: 20}))
	m, err := NewModel(data.CIFAR10(), ArchLinear).Done()
	require.NoError(t, err)
	d, err := Diagnose(m, root)
	require.NoError(t, err)
	require.True(t, d.OK)
	require.Equal(t, data.SyntheticDir(root), d.Splits[0].Source)
	require.Equal(t, data.KindSynthetic, d.Splits[0].Kind, "the label chart's caption says synthetic")

	_, err = Diagnose(m, t.TempDir())
	require.ErrorContains(t, err, "is missing: run `cifarlab download --dataset cifar10")
}
