package cifarlib

import (
	"fmt"
	"html"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/norm"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// LayerInfo is one row of a model summary.
type LayerInfo struct {
	// Name is the layer's name, e.g. "conv1", "stage2/block1" or "head".
	Name string
	// Scope is the model.Scope path holding the layer's variables ("" for layers without any).
	Scope string
	// OutputShape is the layer's output dimensions, batch first.
	OutputShape []int
	// Params is the number of trainable parameters of the layer.
	Params int
	// NonTrainable is the number of non-trainable values (batch-norm statistics, and weights
	// that are not trained, such as airbench94's whitening filters).
	NonTrainable int
}

// Summary is a per-layer table of a model, like torchsummary or Keras' summary().
type Summary struct {
	// Model is the summarised model's description (Model.String()).
	Model string
	// Input is the input shape used, [batch, 32, 32, 3].
	Input []int
	// Layers lists the layers in graph order.
	Layers []LayerInfo
	// TotalParams is the number of trainable parameters; NonTrainable the non-trainable values.
	TotalParams, NonTrainable int
	// FixedWeights is how many of the NonTrainable values are weights that are not trained
	// rather than batch-norm statistics (airbench94's whitening filters and batch-norm scales).
	FixedWeights int
	// HeadWidth is the logits' last dimension; NumClasses the dataset's number of classes.
	HeadWidth, NumClasses int
}

// Summarize builds the model's graph for a batch of batchSize images on backend (nothing is
// executed) and returns its per-layer summary. Graph-building failures are returned as errors.
func Summarize(m *Model, backend compute.Backend, batchSize int) (sum *Summary, err error) {
	if batchSize <= 0 {
		batchSize = 1
	}
	rec := &layerRecorder{}
	store := model.NewStore()
	defer store.Finalize()
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		return m.ModelFn(scope, rec, []*graph.Node{x})[0]
	})
	if err != nil {
		return nil, fmt.Errorf("cifarlib: summary of %s: %w", m, err)
	}
	defer exec.Finalize()
	input := shapes.Make(dtypes.Float32, batchSize, data.ImageHeight, data.ImageWidth, data.ImageChannels)
	if err := exceptions.TryCatch[error](func() { _, err = exec.Compile(input) }); err != nil {
		return nil, fmt.Errorf("cifarlib: summary of %s: %w", m, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cifarlib: summary of %s: %w", m, err)
	}
	sum = &Summary{Model: m.String(), Input: input.Dimensions, NumClasses: m.Spec.NumClasses}
	for _, l := range rec.layers {
		if l.Scope != "" {
			prefix := l.Scope + model.ScopeSeparator
			for v := range store.IterVariables() {
				if strings.HasPrefix(v.Path(), prefix) {
					if v.Trainable {
						l.Params += v.Shape().Size()
					} else {
						l.NonTrainable += v.Shape().Size()
						if !isBatchNormStatistic(v.Path()) {
							sum.FixedWeights += v.Shape().Size()
						}
					}
				}
			}
		}
		sum.TotalParams += l.Params
		sum.NonTrainable += l.NonTrainable
		sum.Layers = append(sum.Layers, l)
	}
	if n := len(sum.Layers); n > 0 {
		out := sum.Layers[n-1].OutputShape
		sum.HeadWidth = out[len(out)-1]
	}
	return sum, nil
}

func summaryDims(d []int) string {
	parts := make([]string, len(d))
	for i, v := range d {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// FormatCount writes n with thousands separators, as the lab's summaries and status lines write
// counts: 11173962 -> "11,173,962".
func FormatCount(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + FormatCount(-n)
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// HeadVerdict is a one-line statement on the head width against the dataset's classes.
func (s *Summary) HeadVerdict() string {
	if s.HeadWidth == s.NumClasses {
		return fmt.Sprintf("head: %d outputs = %d classes: OK", s.HeadWidth, s.NumClasses)
	}
	return fmt.Sprintf("head: %d outputs != %d classes: MISMATCH", s.HeadWidth, s.NumClasses)
}

// String renders the summary as a fixed-width text table.
func (s *Summary) String() string {
	nameW, shapeW := len("Layer"), max(len("Output shape"), len(summaryDims(s.Input)))
	for _, l := range s.Layers {
		nameW = max(nameW, len(l.Name))
		shapeW = max(shapeW, len(summaryDims(l.OutputShape)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %s\n", s.Model)
	line := strings.Repeat("-", nameW+shapeW+16) + "\n"
	b.WriteString(line)
	fmt.Fprintf(&b, "%-*s  %-*s  %12s\n", nameW, "Layer", shapeW, "Output shape", "Params")
	b.WriteString(line)
	fmt.Fprintf(&b, "%-*s  %-*s  %12s\n", nameW, "input", shapeW, summaryDims(s.Input), "0")
	for _, l := range s.Layers {
		fmt.Fprintf(&b, "%-*s  %-*s  %12s\n", nameW, l.Name, shapeW, summaryDims(l.OutputShape), FormatCount(l.Params))
	}
	b.WriteString(line)
	fmt.Fprintf(&b, "Total params: %s\n", FormatCount(s.TotalParams))
	fmt.Fprintf(&b, "Non-trainable (%s): %s\n", s.nonTrainableWhat(), FormatCount(s.NonTrainable))
	fmt.Fprintf(&b, "%s\n", s.HeadVerdict())
	return b.String()
}

// nonTrainableWhat says what the non-trainable values are.
func (s *Summary) nonTrainableWhat() string {
	if s.FixedWeights > 0 {
		return "batch-norm statistics and fixed weights"
	}
	return "batch-norm statistics"
}

// isBatchNormStatistic says whether the variable at path is a batch norm's running statistic
// (mean, variance or avg_weight, the batches seen).
func isBatchNormStatistic(path string) bool {
	scope, name := model.SplitPath(path)
	return strings.HasSuffix(scope, model.ScopeSeparator+norm.BatchNormalizationScopeName) &&
		(name == "mean" || name == "variance" || name == "avg_weight")
}

// HTML renders the summary as an HTML table for notebooks (nb.Show displays it).
func (s *Summary) HTML() string {
	var b strings.Builder
	b.WriteString(`<table class="cifarlab-summary">`)
	fmt.Fprintf(&b, "<caption>%s</caption>", html.EscapeString(s.Model))
	b.WriteString("<thead><tr><th>Layer</th><th>Output shape</th><th>Params</th></tr></thead><tbody>")
	fmt.Fprintf(&b, "<tr><td>input</td><td>%s</td><td>0</td></tr>", summaryDims(s.Input))
	for _, l := range s.Layers {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td></tr>",
			html.EscapeString(l.Name), summaryDims(l.OutputShape), FormatCount(l.Params))
	}
	b.WriteString("</tbody><tfoot>")
	fmt.Fprintf(&b, "<tr><th colspan=\"2\">Total params</th><th>%s</th></tr>", FormatCount(s.TotalParams))
	fmt.Fprintf(&b, "<tr><td colspan=\"2\">Non-trainable (%s)</td><td>%s</td></tr>", s.nonTrainableWhat(), FormatCount(s.NonTrainable))
	status := "ok"
	if s.HeadWidth != s.NumClasses {
		status = "mismatch"
	}
	fmt.Fprintf(&b, "<tr class=\"%s\"><td colspan=\"3\">%s</td></tr>", status, html.EscapeString(s.HeadVerdict()))
	b.WriteString("</tfoot></table>")
	return b.String()
}
