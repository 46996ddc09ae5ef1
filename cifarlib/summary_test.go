package cifarlib

import (
	"fmt"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

// resnetParams counts trainable parameters of a CIFAR ResNet from its definition, independently
// of GoMLX: bias-free convolutions, 2 parameters per batch-norm channel, a dense head with bias.
func resnetParams(stem int, stages []int, blocks int, zeroPad bool, classes int) int {
	bn := func(c int) int { return 2 * c }
	total := 9*3*stem + bn(stem)
	in := stem
	for s, out := range stages {
		for b := range blocks {
			stride := 1
			if s > 0 && b == 0 {
				stride = 2
			}
			total += 9*in*out + bn(out) + 9*out*out + bn(out)
			if (stride != 1 || in != out) && !zeroPad {
				total += in*out + bn(out)
			}
			in = out
		}
	}
	return total + in*classes + classes
}

func TestSummaryParamCounts(t *testing.T) {
	cases := []struct {
		arch    string
		spec    data.Spec
		want    int
		layers  int
		literal int // a published count, 0 if none
	}{
		{ArchLinear, data.CIFAR10(), 3072*10 + 10, 2, 0},
		{ArchCNN, data.CIFAR10(), 448 + 4640 + 18496 + 1024*10 + 10, 8, 0},
		{ArchCNN, data.CIFAR100(data.LabelsFine), 448 + 4640 + 18496 + 1024*100 + 100, 8, 0},
		{ArchResNet20, data.CIFAR10(), resnetParams(16, []int{16, 32, 64}, 3, true, 10), 12, 269722},
		{ArchResNet20, data.CIFAR100(data.LabelsCoarse), resnetParams(16, []int{16, 32, 64}, 3, true, 20), 12, 0},
		{ArchResNet18, data.CIFAR10(), resnetParams(64, []int{64, 128, 256, 512}, 2, false, 10), 11, 11173962},
		{ArchResNet18, data.CIFAR100(data.LabelsFine), resnetParams(64, []int{64, 128, 256, 512}, 2, false, 100), 11, 11220132},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s", c.arch, c.spec.ID()), func(t *testing.T) {
			m, err := NewModel(c.spec, c.arch).Done()
			require.NoError(t, err)
			s, err := Summarize(m, goBackend(), 2)
			require.NoError(t, err)
			require.Equal(t, c.want, s.TotalParams)
			if c.literal != 0 {
				require.Equal(t, c.literal, s.TotalParams)
			}
			require.Len(t, s.Layers, c.layers)
			require.Equal(t, []int{2, c.spec.NumClasses}, s.Layers[len(s.Layers)-1].OutputShape)
			require.Equal(t, c.spec.NumClasses, s.HeadWidth)
		})
	}
}

func TestSummaryText(t *testing.T) {
	m, err := NewModel(data.CIFAR100(data.LabelsFine), ArchCNN).Head(10).Done()
	require.NoError(t, err)
	s, err := Summarize(m, goBackend(), 8)
	require.NoError(t, err)
	require.Equal(t, `Model: cnn for cifar100 (100 classes), head overridden to 10
--------------------------------------
Layer    Output shape           Params
--------------------------------------
input    [8, 32, 32, 3]              0
conv1    [8, 32, 32, 16]           448
pool1    [8, 16, 16, 16]             0
conv2    [8, 16, 16, 32]         4,640
pool2    [8, 8, 8, 32]               0
conv3    [8, 8, 8, 64]          18,496
pool3    [8, 4, 4, 64]               0
flatten  [8, 1024]                   0
head     [8, 10]                10,250
--------------------------------------
Total params: 33,834
Non-trainable (batch-norm statistics): 0
head: 10 outputs != 100 classes: MISMATCH
`, s.String())
	require.Equal(t, `<table class="cifarlab-summary"><caption>cnn for cifar100 (100 classes), head overridden to 10</caption>`+
		`<thead><tr><th>Layer</th><th>Output shape</th><th>Params</th></tr></thead><tbody>`+
		`<tr><td>input</td><td>[8, 32, 32, 3]</td><td>0</td></tr>`+
		`<tr><td>conv1</td><td>[8, 32, 32, 16]</td><td>448</td></tr>`+
		`<tr><td>pool1</td><td>[8, 16, 16, 16]</td><td>0</td></tr>`+
		`<tr><td>conv2</td><td>[8, 16, 16, 32]</td><td>4,640</td></tr>`+
		`<tr><td>pool2</td><td>[8, 8, 8, 32]</td><td>0</td></tr>`+
		`<tr><td>conv3</td><td>[8, 8, 8, 64]</td><td>18,496</td></tr>`+
		`<tr><td>pool3</td><td>[8, 4, 4, 64]</td><td>0</td></tr>`+
		`<tr><td>flatten</td><td>[8, 1024]</td><td>0</td></tr>`+
		`<tr><td>head</td><td>[8, 10]</td><td>10,250</td></tr>`+
		`</tbody><tfoot><tr><th colspan="2">Total params</th><th>33,834</th></tr>`+
		`<tr><td colspan="2">Non-trainable (batch-norm statistics)</td><td>0</td></tr>`+
		`<tr class="mismatch"><td colspan="3">head: 10 outputs != 100 classes: MISMATCH</td></tr></tfoot></table>`, s.HTML())
}

func TestSummaryResNet20Layers(t *testing.T) {
	m, err := NewModel(data.CIFAR10(), ArchResNet20).Done()
	require.NoError(t, err)
	s, err := Summarize(m, goBackend(), 1)
	require.NoError(t, err)
	var names []string
	var outs []string
	for _, l := range s.Layers {
		names = append(names, l.Name)
		outs = append(outs, summaryDims(l.OutputShape))
	}
	require.Equal(t, []string{"stem", "stage1/block1", "stage1/block2", "stage1/block3", "stage2/block1",
		"stage2/block2", "stage2/block3", "stage3/block1", "stage3/block2", "stage3/block3", "avgpool", "head"}, names)
	require.Equal(t, []string{"[1, 32, 32, 16]", "[1, 32, 32, 16]", "[1, 32, 32, 16]", "[1, 32, 32, 16]",
		"[1, 16, 16, 32]", "[1, 16, 16, 32]", "[1, 16, 16, 32]", "[1, 8, 8, 64]", "[1, 8, 8, 64]", "[1, 8, 8, 64]",
		"[1, 64]", "[1, 10]"}, outs)
	// Batch-norm statistics: mean, variance and avg_weight per channel of the 19 batch norms.
	require.Equal(t, 3*(16+3*2*16+3*2*32+3*2*64), s.NonTrainable)
	require.Equal(t, "head: 10 outputs = 10 classes: OK", s.HeadVerdict())
}

func TestSummaryCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 11173962: "11,173,962", -1234: "-1,234"} {
		require.Equal(t, want, FormatCount(n))
	}
}
