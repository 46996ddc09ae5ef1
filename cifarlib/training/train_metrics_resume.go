package training

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/metric"
)

// ckptParamTrainMetrics is the checkpoint parameter that holds the running state of the
// training metrics (metricState): the moving averages of the loss and accuracy are GoMLX
// variables under a name made afresh for each run ("/metrics/<name>_uuid_<id>/mean"), which the
// checkpoint does not save (trainCheckpoint.save), and GoMLX's loop resets them when it starts.
// A resumed run sets them from this parameter, so that its moving averages continue where the
// interrupted run's stopped: its summary and history equal those of a run never interrupted.
const ckptParamTrainMetrics = "cifarlab_train_metrics"

// metricState is the state of the training metrics: by metric name, each of its variables'
// value (a scalar) and dtype.
type metricState map[string]map[string]metricValue

// metricValue is a metric variable's scalar value and its dtype's name.
type metricValue struct {
	DType string  `json:"dtype"`
	Value float64 `json:"value"`
}

// metricScope is the variable scope of the GoMLX metric m ("/metrics/<its scope name>").
func metricScope(m metric.Interface) string { return model.JoinPath("/", metric.Scope, m.ScopeName()) }

// saveMetricState records the state of the run's training metrics in the Store's parameters,
// which the next checkpoint saves with the weights.
func (t *Trainer) saveMetricState() error {
	state := metricState{}
	for _, m := range t.trainer.TrainMetrics() {
		prefix := metricScope(m) + "/"
		for v := range t.store.IterVariables() {
			if !strings.HasPrefix(v.Path(), prefix) {
				continue
			}
			value, err := v.Value()
			if err != nil || value.Shape().Size() != 1 {
				continue // not a running scalar: nothing to carry
			}
			if state[m.Name()] == nil {
				state[m.Name()] = map[string]metricValue{}
			}
			state[m.Name()][strings.TrimPrefix(v.Path(), prefix)] = metricValue{DType: value.DType().String(),
				Value: shapes.ConvertTo[float64](value.Value())}
		}
	}
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("training: recording the training metrics' state: %w", err)
	}
	t.store.RootScope().SetParam(ckptParamTrainMetrics, string(b))
	return nil
}

// restoreMetricState sets the training metrics of a resumed run to the state its checkpoint
// recorded (after GoMLX's loop reset them, before the first step): it reports false when the
// checkpoint recorded none (one written before it was recorded), and the moving averages then
// start again at the resume.
func (t *Trainer) restoreMetricState() (bool, error) {
	raw := model.GetParamOr(t.store.RootScope(), ckptParamTrainMetrics, "")
	if raw == "" {
		return false, nil
	}
	var state metricState
	if err := json.Unmarshal([]byte(raw), &state); err != nil {
		return false, fmt.Errorf("training: the checkpoint's training metrics' state: %w", err)
	}
	for _, m := range t.trainer.TrainMetrics() {
		for name, mv := range state[m.Name()] {
			dtype, err := dtypes.DTypeString(mv.DType)
			if err != nil {
				return false, fmt.Errorf("training: the checkpoint's training metric %q: %w", m.Name(), err)
			}
			value, err := tensors.FromAnyValue(shapes.CastAsDType(mv.Value, dtype))
			if err == nil {
				err = setMetricVariable(t.store, metricScope(m)+"/"+name, value)
			}
			if err != nil {
				return false, fmt.Errorf("training: restoring the training metric %q: %w", m.Name(), err)
			}
		}
	}
	return true, nil
}

// setMetricVariable sets the metric variable at path to value, creating it (not trainable) when
// the train step has not been built yet: its graph then uses it as it is.
func setMetricVariable(store *model.Store, path string, value *tensors.Tensor) error {
	if v := store.GetVariable(path); v != nil {
		return v.SetValue(value)
	}
	v, err := store.CreateVariable(path, value)
	if err == nil {
		v.SetTrainable(false)
	}
	return err
}

// resumeMetrics carries a resumed run's training metrics over from its checkpoint, as GoMLX's
// loop starts (it has just reset them); when the checkpoint recorded none, metricsFrom says from
// which step the moving averages count.
func (t *Trainer) resumeMetrics() error {
	step, resumed := t.ckpt.resumedAt()
	if !resumed {
		return nil
	}
	carried, err := t.restoreMetricState()
	if err != nil {
		return err
	}
	if !carried {
		t.metricsFrom = step
	}
	return nil
}
