package cifarlib

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/metric"
)

// CheckLabels is the host guard: it checks every label of a batch against [0, numClasses)
// before the batch reaches the device. batch is the batch number (-1 if unknown); examples, when
// not nil, gives the split index of each position, so the error can name the examples.
// It returns nil or a *LabelRangeError listing all out-of-range labels.
func CheckLabels(labels []int32, numClasses int, batch int, examples []int) error {
	n := int32(numClasses)
	var bad []data.BadLabel
	for i, l := range labels {
		if l < 0 || l >= n {
			ex := -1
			if i < len(examples) {
				ex = examples[i]
			}
			bad = append(bad, data.BadLabel{Position: i, Example: ex, Label: int(l)})
		}
	}
	if bad == nil {
		return nil
	}
	return &data.LabelRangeError{Batch: batch, BatchSize: len(labels), NumClasses: numClasses, Bad: bad}
}

// HostGuard returns the host guard for this model, to set as DatasetOptions.Check: every batch's
// labels are checked against the head width [0, NumClasses) before the batch becomes tensors,
// and a *LabelRangeError names the batch number, positions, example indices and values.
func (m *Model) HostGuard() func(*data.HostBatch) error {
	n := m.NumClasses
	return func(b *data.HostBatch) error { return CheckLabels(b.Labels, n, b.Number, b.Examples) }
}

// deviceGuardScope is the model.Store scope where the in-graph label guard writes its report.
const deviceGuardScope = "/cifarlib/label_guard"

// deviceGuardSlots is how many out-of-range positions the in-graph guard records per step (the
// count is always exact).
const deviceGuardSlots = 16

// recordDeviceLabels adds to the graph the in-graph guard's report, kept in non-trainable
// variables under deviceGuardScope that model.Exec writes back after each run: the number of bad
// labels and of batches with bad labels, accumulated until checkDeviceLabels clears them (so a
// whole Trainer.Eval can be checked once), and, for the latest batch with bad labels, its size,
// the head width and the first deviceGuardSlots bad positions and values.
func recordDeviceLabels(g *graph.Graph, labels, bad *graph.Node, numClasses int) {
	store := model.GetStore(g)
	if store == nil {
		panic(fmt.Errorf("cifarlib: the in-graph label guard (GuardAll) needs a model.Store: build the graph " +
			"with model.NewExec or train.Trainer, or use GuardStatic"))
	}
	scope := store.Scope(deviceGuardScope)
	empty := make([]int32, deviceGuardSlots)
	for i := range empty {
		empty[i] = -1
	}
	countVar := scope.VariableWithValue("bad_count", int32(0)).SetTrainable(false)
	batchesVar := scope.VariableWithValue("bad_batches", int32(0)).SetTrainable(false)
	batchVar := scope.VariableWithValue("batch_size", int32(0)).SetTrainable(false)
	classesVar := scope.VariableWithValue("num_classes", int32(0)).SetTrainable(false)
	posVar := scope.VariableWithValue("positions", empty).SetTrainable(false)
	valVar := scope.VariableWithValue("values", empty).SetTrainable(false)

	batch := labels.Shape().Dimensions[0]
	if batch <= 0 {
		panic(fmt.Errorf("cifarlib: the in-graph label guard needs a static batch size, got labels %s: "+
			"do not mark the batch axis dynamic, or use GuardStatic", labels.Shape()))
	}
	badI := graph.ConvertDType(bad, dtypes.Int32)
	// rank[i] is the 0-based order of position i among the bad positions.
	rank := graph.Sub(graph.CumSum(badI, 0), graph.OnesLike(badI))
	grid := shapes.Make(dtypes.Int32, deviceGuardSlots, batch)
	slot := graph.Iota(g, grid, 0)
	position := graph.Iota(g, grid, 1)
	sel := graph.LogicalAnd(
		graph.Equal(graph.BroadcastToDims(graph.InsertAxes(rank, 0), deviceGuardSlots, batch), slot),
		graph.BroadcastToDims(graph.InsertAxes(bad, 0), deviceGuardSlots, batch))
	zeros := graph.ZerosLike(position)
	filled := graph.GreaterThan(graph.ReduceSum(graph.ConvertDType(sel, dtypes.Int32), 1),
		graph.ScalarZero(g, dtypes.Int32))
	minusOnes := graph.Scalar(g, dtypes.Int32, -1)
	pos := graph.ReduceSum(graph.Where(sel, position, zeros), 1)
	val := graph.ReduceSum(graph.Where(sel, graph.BroadcastToDims(graph.InsertAxes(labels, 0), deviceGuardSlots, batch), zeros), 1)
	pos = graph.Where(filled, pos, graph.BroadcastToDims(minusOnes, deviceGuardSlots))
	val = graph.Where(filled, val, graph.BroadcastToDims(minusOnes, deviceGuardSlots))

	newBad := graph.ReduceAllSum(badI)
	hasBad := graph.GreaterThan(newBad, graph.ScalarZero(g, dtypes.Int32))
	keep := func(v *model.Variable, latest *graph.Node) {
		old := v.NodeValue(g)
		v.SetNodeValue(graph.Where(graph.BroadcastToDims(hasBad, old.Shape().Dimensions...), latest, old))
	}
	countVar.SetNodeValue(graph.Add(countVar.NodeValue(g), newBad))
	batchesVar.SetNodeValue(graph.Add(batchesVar.NodeValue(g), graph.ConvertDType(hasBad, dtypes.Int32)))
	keep(batchVar, graph.Scalar(g, dtypes.Int32, batch))
	keep(classesVar, graph.Scalar(g, dtypes.Int32, numClasses))
	keep(posVar, pos)
	keep(valVar, val)
}

// checkDeviceLabels reads the in-graph guard's report left in store by the graphs built with a
// GuardAll loss since the previous check, and returns a *DeviceLabelError (with the step number,
// -1 if unknown) when labels were out of range; it then clears the report. It returns nil when
// every label was in range, or when no GuardAll loss has run on this store (e.g. with GuardOff).
// Call it after each Trainer.TrainStep (or use AttachDeviceGuard with a train.Loop), and after
// Trainer.Eval.
func checkDeviceLabels(store *model.Store, step int) error {
	countVar := store.GetVariable(deviceGuardScope + model.ScopeSeparator + "bad_count")
	if countVar == nil {
		return nil
	}
	count, err := readInt32s(countVar)
	if err != nil || len(count) != 1 {
		return fmt.Errorf("cifarlib: reading the in-graph label guard: %v", err)
	}
	if count[0] == 0 {
		return nil
	}
	e := &DeviceLabelError{Step: step, NumBad: int(count[0])}
	vals := map[string][]int32{}
	for _, name := range []string{"bad_batches", "batch_size", "num_classes", "positions", "values"} {
		v := store.GetVariable(deviceGuardScope + model.ScopeSeparator + name)
		if v == nil {
			return fmt.Errorf("cifarlib: in-graph label guard report is incomplete: %s missing", name)
		}
		if vals[name], err = readInt32s(v); err != nil {
			return fmt.Errorf("cifarlib: reading the in-graph label guard: %w", err)
		}
	}
	e.Batches, e.BatchSize, e.NumClasses = int(vals["bad_batches"][0]), int(vals["batch_size"][0]), int(vals["num_classes"][0])
	for i, p := range vals["positions"] {
		if p >= 0 {
			e.Bad = append(e.Bad, data.BadLabel{Position: int(p), Example: -1, Label: int(vals["values"][i])})
		}
	}
	for _, name := range []string{"bad_count", "bad_batches"} {
		v := store.GetVariable(deviceGuardScope + model.ScopeSeparator + name)
		if err := v.SetValue(tensors.FromScalar(int32(0))); err != nil {
			return fmt.Errorf("cifarlib: clearing the in-graph label guard: %w", err)
		}
	}
	return e
}

func readInt32s(v *model.Variable) ([]int32, error) {
	t, err := v.Value()
	if err != nil {
		return nil, err
	}
	return tensors.CopyFlatData[int32](t)
}

// AttachDeviceGuard makes loop check the in-graph label guard after every training step
// (checkDeviceLabels): a step whose labels were out of range stops the loop with a
// *DeviceLabelError (errors.As works on the loop's error).
func AttachDeviceGuard(loop *train.Loop) {
	loop.OnStep("cifarlib in-graph label guard", -1000, func(loop *train.Loop, _ []*tensors.Tensor) error {
		return checkDeviceLabels(loop.Trainer.Store(), loop.LoopStep)
	})
}

// LabelGuardMetric is a train metric counting, per batch, the sparse labels outside
// [0, numClasses) (short name "bad"), for progress bars and plots. It only counts; the guards
// are the loss (GuardAll) and the host check.
func LabelGuardMetric(numClasses int) metric.Interface {
	return metric.NewBaseMetric("Out-of-range labels", "bad", "labels",
		func(_ *model.Scope, labels, _ []*graph.Node) *graph.Node {
			lab := labels[0]
			g := lab.Graph()
			if !lab.DType().IsInt() {
				return graph.ScalarZero(g, dtypes.Float32)
			}
			l := graph.ConvertDType(lab, dtypes.Int32)
			bad := graph.LogicalOr(graph.LessThan(l, graph.ScalarZero(g, dtypes.Int32)),
				graph.GreaterOrEqual(l, graph.Scalar(g, dtypes.Int32, numClasses)))
			return graph.ReduceAllSum(graph.ConvertDType(bad, dtypes.Float32))
		},
		func(t *tensors.Tensor) string { return fmt.Sprintf("%.0f", tensors.ToScalar[float32](t)) })
}
