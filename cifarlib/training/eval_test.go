package training

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// evalFixedModel returns a linear model whose logits are the same for every image: its weights
// are zero and its biases are bias.
func evalFixedModel(t *testing.T, spec data.Spec, head int, bias []float32) (*evalProgram, *cifarlib.Model, *model.Store) {
	t.Helper()
	b := labtest.Backend(t)
	mb := cifarlib.NewModel(spec, cifarlib.ArchLinear)
	if head != spec.NumClasses {
		mb = mb.Head(head)
	}
	m, err := mb.Done()
	require.NoError(t, err)
	store := model.NewStore()
	ev, err := newEvalProgram(b, m, store)
	require.NoError(t, err)
	one, _ := labtest.TrainTestRecords(t, spec, 1, 1, 1)
	_, err = ev.Evaluate(context.Background(), one, EvalOptions{}) // Creates the variables.
	require.NoError(t, err)
	w := store.GetVariable("/linear/head/dense/weights")
	require.NotNil(t, w, "variables: %v", testenv.SortedVariablePaths(store))
	require.NoError(t, w.SetValue(tensors.FromFlatDataAndDimensions(make([]float32, data.ImageBytes*head), data.ImageBytes, head)))
	require.NoError(t, store.GetVariable("/linear/head/dense/biases").SetValue(tensors.FromFlatDataAndDimensions(bias, head)))
	return ev, m, store
}

// fixedModelExpected computes on the host what a model of constant logits bias gives on test:
// the examples per class, those whose label is among the top 5 (classes 0..4) and the summed loss.
func fixedModelExpected(test *data.Records, bias []float32) (counts []int, top5 int, lossSum float64) {
	var lse float64
	for _, v := range bias {
		lse += math.Exp(float64(v))
	}
	lse = math.Log(lse)
	counts = make([]int, len(bias))
	for _, l := range test.Labels() {
		counts[l]++
		if l < 5 {
			top5++
		}
		lossSum += lse - float64(bias[l])
	}
	return counts, top5, lossSum
}

func TestEvaluatePerClassTopKAndLoss(t *testing.T) {
	spec := data.CIFAR100(data.LabelsFine)
	bias := make([]float32, 100)
	for c := range 5 {
		bias[c] = float32(5 - c) // Classes 0..4 are the top 5; class 0 is always predicted.
	}
	ev, _, _ := evalFixedModel(t, spec, 100, bias)
	_, test := labtest.TrainTestRecords(t, spec, 100, 300, 4)
	res, err := ev.Evaluate(context.Background(), test, EvalOptions{BatchSize: 64})
	require.NoError(t, err)

	counts, top5, lossSum := fixedModelExpected(test, bias) // expected values, computed on the host
	require.Equal(t, "cifar100", res.Dataset)
	require.Equal(t, "test", res.Split)
	require.Equal(t, 100, res.HeadWidth)
	require.Equal(t, 300, res.Examples)
	require.Equal(t, 5, res.TopK)
	require.Equal(t, float64(counts[0])/300, res.Accuracy)
	require.Equal(t, float64(top5)/300, res.TopKAccuracy)
	require.InDelta(t, lossSum/300, res.Loss, testenv.TolFloat32Ref)
	require.Zero(t, res.OutOfRange)
	for c, pc := range res.PerClass {
		want := ClassAccuracy{Label: c, Name: spec.ClassNames[c], Examples: counts[c]}
		if c == 0 {
			want.Correct, want.Accuracy = counts[0], 1
		}
		require.Equal(t, want, pc)
		for p, n := range res.Confusion[c] {
			if p == 0 {
				require.Equal(t, counts[c], n)
			} else {
				require.Zero(t, n)
			}
		}
	}
	worst := res.worst(2)
	require.Len(t, worst, 2)
	require.Zero(t, worst[0].Accuracy)

	// MaxExamples evaluates a prefix.
	res, err = ev.Evaluate(context.Background(), test, EvalOptions{MaxExamples: 7, Split: "first7"})
	require.NoError(t, err)
	require.Equal(t, 7, res.Examples)
	require.Equal(t, "first7", res.Split)

	// A cancelled context stops the evaluation.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ev.Evaluate(ctx, test, EvalOptions{})
	require.True(t, errors.Is(err, context.Canceled))
}

// A 10-class head evaluated on CIFAR-100 labels: the labels >= 10 can never be predicted;
// they are counted, left out of the loss and count as misses.
func TestEvaluateNarrowHeadCountsOutOfRange(t *testing.T) {
	spec := data.CIFAR100(data.LabelsFine)
	bias := []float32{0, 0, 0, 9, 0, 0, 0, 0, 0, 0} // Always predicts 3.
	ev, m, _ := evalFixedModel(t, spec, 10, bias)
	require.True(t, m.HeadOverridden)
	_, test := labtest.TrainTestRecords(t, spec, 100, 200, 6)
	res, err := ev.Evaluate(context.Background(), test, EvalOptions{})
	require.NoError(t, err)
	out, threes := 0, 0
	for _, l := range test.Labels() {
		if l >= 10 {
			out++
		}
		if l == 3 {
			threes++
		}
	}
	require.Equal(t, out, res.OutOfRange)
	require.Equal(t, float64(threes)/200, res.Accuracy)
	require.Len(t, res.Confusion, 100)
	require.Len(t, res.Confusion[57], 10)
	require.Equal(t, res.PerClass[57].Examples, res.Confusion[57][3])
	require.Equal(t, 5, res.TopK) // CIFAR-100 data: top-5 even for a narrow head.
	require.Equal(t, float64(200-out)/200, res.TopKAccuracy, "every in-range label ties for the top 5 except 3, which leads")
	lse := math.Log(9 + math.Exp(9))
	require.InDelta(t, (float64(200-out-threes)*lse+float64(threes)*(lse-9))/float64(200-out), res.Loss, testenv.TolFloat32Ref)
	require.Equal(t, data.KindSynthetic, res.DataKind, "the records' Kind")
	require.True(t, strings.HasSuffix(res.Summary(), fmt.Sprintf("[SYNTHETIC cifar100 (generated images, not real accuracy), head 10]; %d of 200 examples (%.1f%%) have labels "+
		"outside the head's 10 outputs and can never be predicted", out, 100*float64(out)/200)), res.Summary())

	var report bytes.Buffer
	require.NoError(t, res.WriteReport(&report))
	lines := strings.Split(strings.TrimSuffix(report.String(), "\n"), "\n")
	require.Len(t, lines, 2+100)
	require.Equal(t, "label  class                           correct examples  accuracy", lines[1])
	require.Equal(t, fmt.Sprintf("    3  bear                           %8d %8d   100.00%%", threes, threes), lines[2+3])

	h := res.HTML()
	require.True(t, strings.HasPrefix(h, "<p>test accuracy "), h)
	require.Contains(t, h, "head&#39;s 10 outputs")
	// The 10 worst of 100 classes, worst first, each with what it was most often taken for.
	require.Equal(t, 1+10, strings.Count(h, "<tr>"))
	worst := res.worst(100)
	first := worst[0]
	require.Contains(t, h, fmt.Sprintf("<tr><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%.2f%%</td><td>%s</td></tr>\n",
		first.Label, first.Name, first.Correct, first.Examples, 100*first.Accuracy, res.confusedWith(first.Label)))
	require.Contains(t, h, fmt.Sprintf("<p>The 10 worst of 100 classes; the other 90 have %.2f%% to 100.00%%", 100*worst[10].Accuracy))
	require.NotContains(t, h, "<td>bear</td>", "bear (100%) is not among the worst")
	require.Equal(t, "", res.confusedWith(3), "no example of bear was misclassified")
}

func TestEvaluateErrors(t *testing.T) {
	b := labtest.Backend(t)
	m, err := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchLinear).Done()
	require.NoError(t, err)
	_, err = newEvalProgram(b, m, nil)
	require.EqualError(t, err, "training: newEvalProgram needs a backend, a model and a store (got true, true, false)")
	ev, err := newEvalProgram(b, m, model.NewStore())
	require.NoError(t, err)
	_, err = ev.Evaluate(context.Background(), nil, EvalOptions{})
	require.EqualError(t, err, "training: Evaluate: no examples to evaluate")
}

// TestEvalHTMLWorstFirst: the table starts with the worst class and says what each class was
// most often taken for; with 20 classes or fewer every class is listed.
func TestEvalHTMLWorstFirst(t *testing.T) {
	r := &EvalResult{Split: "test", Examples: 15, Accuracy: 7.0 / 15, Confusion: [][]int{{3, 1, 0}, {2, 0, 5}, {0, 0, 4}},
		PerClass: []ClassAccuracy{{Label: 0, Name: "a", Correct: 3, Examples: 4, Accuracy: 0.75},
			{Label: 1, Name: "b", Correct: 0, Examples: 7, Accuracy: 0}, {Label: 2, Name: "c", Correct: 4, Examples: 4, Accuracy: 1}}}
	require.Equal(t, []string{"b (1)", "c (5)", ""}, []string{r.confusedWith(0), r.confusedWith(1), r.confusedWith(2)})
	h := r.HTML()
	rows := "<tr><td>1</td><td>b</td><td>0</td><td>7</td><td>0.00%</td><td>c (5)</td></tr>\n" +
		"<tr><td>0</td><td>a</td><td>3</td><td>4</td><td>75.00%</td><td>b (1)</td></tr>\n" +
		"<tr><td>2</td><td>c</td><td>4</td><td>4</td><td>100.00%</td><td></td></tr>\n"
	require.Contains(t, h, "<th>most often taken for</th></tr>\n"+rows+"</table>\n")
	require.NotContains(t, h, "worst of")
}
