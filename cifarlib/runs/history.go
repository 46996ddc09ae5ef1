package runs

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib"

	"github.com/gomlx/gomlx/ml/train/metric"
	"github.com/gomlx/gomlx/ui/gonb/plotly"
	"github.com/gomlx/gomlx/ui/plot"
)

// HistoryPoint is one sample of a training run's curves, taken after global step Step.
type HistoryPoint struct {
	// Step is the global step just completed (1 after the first step).
	Step int `json:"step"`
	// Loss is the loss of the batch of this step.
	Loss float64 `json:"loss"`
	// MovingLoss is GoMLX's exponential moving average of the batch loss.
	MovingLoss float64 `json:"moving_loss"`
	// Accuracy is the moving average of the training batches' accuracy.
	Accuracy float64 `json:"accuracy"`
	// BatchAccuracy is the accuracy of the batch of this step, which the charts smooth as they
	// smooth Loss (SmoothedAccuracy); nil in a history written before it was recorded.
	BatchAccuracy *float64 `json:"batch_accuracy,omitempty"`
	// TopK is the moving average of the training batches' top-5 accuracy (CIFAR-100 only, else 0).
	TopK float64 `json:"top_k,omitempty"`
	// LearningRate is the learning rate used by this step.
	LearningRate float64 `json:"learning_rate"`
	// Eval holds an evaluation on the test split made at this step, if any (training.Settings.Eval.Every).
	Eval *EvalPoint `json:"eval,omitempty"`
}

// EvalPoint is an evaluation recorded in a History: a validation made while training, on the
// first Examples examples of the test split (training.Config.EvalExamples).
type EvalPoint struct {
	// Examples is the number of test examples evaluated.
	Examples int `json:"examples"`
	// Split is the split evaluated ("test"); "" in a history written before it was recorded,
	// when it was always the test split.
	Split string `json:"split,omitempty"`
	// TTA is the test-time augmentation level of the evaluation (0: none, 1: mirror, 2: mirror
	// and translate); 0 too in a history written before it was recorded, when validation was
	// always without it.
	TTA int `json:"tta,omitempty"`
	// Loss, Accuracy and TopK (top-5, CIFAR-100 only) are means over those examples.
	Loss     float64 `json:"loss"`
	Accuracy float64 `json:"accuracy"`
	TopK     float64 `json:"top_k,omitempty"`
}

// History holds the loss and accuracy curves of a training run, across resumes: it is saved
// next to the checkpoints (history.json) and reloaded when a run resumes.
type History struct {
	// TopK is 5 when the points carry top-5 accuracies (CIFAR-100), else 0.
	TopK int `json:"top_k,omitempty"`
	// Points are in increasing Step order.
	Points []HistoryPoint `json:"points"`
}

// Validation says what the evaluations of the history are, for a chart's legend or title, e.g.
// "validation: 500 test images, no TTA" or "validation: 10,000 test images, TTA level 2",
// from its last evaluation; "" when it has none.
func (h *History) Validation() string {
	if h == nil {
		return ""
	}
	for i := len(h.Points) - 1; i >= 0; i-- {
		if e := h.Points[i].Eval; e != nil {
			return e.Describe()
		}
	}
	return ""
}

// Describe says what the evaluation was: "validation: N SPLIT images, TTA".
func (e EvalPoint) Describe() string {
	return fmt.Sprintf("validation: %s %s images, %s", cifarlib.FormatCount(e.Examples), cmp.Or(e.Split, "test"), e.ttaWords())
}

// Legend says what the evaluation was in a run's chart's legend, where its points are named
// by their split: "test: 500 images, no TTA".
func (e EvalPoint) Legend() string {
	return fmt.Sprintf("%s: %s images, %s", cmp.Or(e.Split, "test"), cifarlib.FormatCount(e.Examples), e.ttaWords())
}

// ttaWords says the evaluation's test-time augmentation: "no TTA", "TTA level 2".
func (e EvalPoint) ttaWords() string {
	if e.TTA != 0 {
		return fmt.Sprintf("TTA level %d", e.TTA)
	}
	return "no TTA"
}

// add appends a point, dropping any later points left by a run that was resumed from an
// earlier checkpoint.
func (h *History) Add(p HistoryPoint) {
	for len(h.Points) > 0 && h.Points[len(h.Points)-1].Step >= p.Step {
		h.Points = h.Points[:len(h.Points)-1]
	}
	h.Points = append(h.Points, p)
}

// Last returns the last point, or false when the history is empty.
func (h *History) Last() (HistoryPoint, bool) {
	if h == nil || len(h.Points) == 0 {
		return HistoryPoint{}, false
	}
	return h.Points[len(h.Points)-1], true
}

// PlotPoints converts the history into GoMLX plot points, the input of GoMLX's plotly and
// margaid plots: training moving-average loss and accuracy (and top-5), the learning rate, and
// the test-split evaluations. Points of the same MetricType ("loss", "accuracy",
// "learning rate") share a figure.
func (h *History) PlotPoints() []plot.Point {
	var pts []plot.Point
	topName := fmt.Sprintf("Top-%d", h.TopK)
	for _, p := range h.Points {
		step := float64(p.Step)
		pts = append(pts,
			plot.Point{MetricName: "Train: Moving Average Loss", Short: "T/~loss", MetricType: metric.LossMetricType, Step: step, Value: p.MovingLoss},
			plot.Point{MetricName: "Train: Moving Average Accuracy", Short: "T/~acc", MetricType: metric.AccuracyMetricType, Step: step, Value: p.Accuracy})
		if h.TopK > 0 {
			pts = append(pts, plot.Point{MetricName: "Train: Moving Average " + topName + " Accuracy", Short: fmt.Sprintf("T/~top%d", h.TopK),
				MetricType: metric.AccuracyMetricType, Step: step, Value: p.TopK})
		}
		pts = append(pts, plot.Point{MetricName: "Learning Rate", Short: "lr", MetricType: "learning rate", Step: step, Value: p.LearningRate})
		if e := p.Eval; e != nil {
			pts = append(pts,
				plot.Point{MetricName: "Test: Mean Loss", Short: "loss(test)", MetricType: metric.LossMetricType, Step: step, Value: e.Loss},
				plot.Point{MetricName: "Test: Accuracy", Short: "acc(test)", MetricType: metric.AccuracyMetricType, Step: step, Value: e.Accuracy})
			if h.TopK > 0 {
				pts = append(pts, plot.Point{MetricName: "Test: " + topName + " Accuracy", Short: fmt.Sprintf("top%d(test)", h.TopK),
					MetricType: metric.AccuracyMetricType, Step: step, Value: e.TopK})
			}
		}
	}
	return pts
}

// Plot draws the curves in a GoNB notebook cell with GoMLX's plotly support (one interactive
// figure per metric type, log-scaled axes as GoMLX draws them). Outside a notebook it draws
// nothing and returns nil.
func (h *History) Plot() error {
	pc := plotly.New()
	for _, p := range h.PlotPoints() {
		pc.AddPoint(p)
	}
	return pc.Plot()
}

// HistoryFileName is the file, inside a checkpoint directory, holding the run's History.
const HistoryFileName = "history.json"

// LoadHistory reads the History saved in a checkpoint directory. A directory without one
// gives an empty History and no error.
func LoadHistory(dir string) (*History, error) {
	data, err := os.ReadFile(filepath.Join(dir, HistoryFileName))
	if errors.Is(err, os.ErrNotExist) {
		return &History{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runs: reading history: %w", err)
	}
	h := &History{}
	if err := json.Unmarshal(data, h); err != nil {
		return nil, fmt.Errorf("runs: %s: %w: delete the file to start a new history", filepath.Join(dir, HistoryFileName), err)
	}
	return h, nil
}

// Save writes the history to dir/history.json atomically (temporary file, then rename).
func (h *History) Save(dir string) error {
	data, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("runs: encoding history: %w", err)
	}
	tmp, err := os.CreateTemp(dir, HistoryFileName+".tmp-*")
	if err != nil {
		return fmt.Errorf("runs: saving history: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("runs: writing %s: %w", tmp.Name(), errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, HistoryFileName)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("runs: saving history: %w", err)
	}
	return nil
}
