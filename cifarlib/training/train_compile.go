package training

import (
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
)

// batchShapes returns the shapes of a batch's inputs, then its labels: the input shapes of
// GoMLX's train step program.
func batchShapes(b train.Batch) []shapes.Shape {
	out := make([]shapes.Shape, 0, len(b.Inputs)+len(b.Labels))
	for _, t := range append(append([]*tensors.Tensor(nil), b.Inputs...), b.Labels...) {
		out = append(out, t.Shape())
	}
	return out
}

// onExecCreated is called by GoMLX's train.Trainer when it creates the Exec of a train step,
// just before its first call. On one device it compiles the program for the batch's shapes
// and initialises the variables there, each timed on the timeline (the call would otherwise do
// both, with the first step), and the program cache keeps the initial variables.
func (t *Trainer) onExecCreated(exec *model.Exec, kind train.GraphType) {
	if kind != train.TrainType || t.devices.numDevices() > 1 || t.steps == nil || len(t.steps.shapes) == 0 {
		return // compiled, and timed, by its first call
	}
	defer t.rt.event(t.stepStart()) // then the first step runs
	if err := t.rt.compile(runs.ProgramTrainStep, func() error {
		_, err := exec.Compile(t.steps.shapes...)
		return err
	}); err != nil {
		return // the call compiles again and reports the error
	}
	uninitialised := false
	for v := range t.store.IterVariables() {
		uninitialised = uninitialised || !v.HasValue()
	}
	if !uninitialised {
		return
	}
	t.rt.event(Event{Kind: EventCompile, Program: runs.ProgramInit, Reason: t.rt.reason(runs.ProgramTrainStep)})
	began, mark := time.Now(), backends.ProgramMark()
	var initVars []*model.Variable // those GoMLX initialises, in its order (Store.InitializeVariables)
	for v := range t.store.IterVariables() {
		if !v.HasValue() {
			initVars = append(initVars, v)
		}
	}
	var initExec *model.Exec
	if err := t.store.InitializeVariables(t.backend, func(e *model.Exec) error { initExec = e; return nil }); err != nil {
		return // the call initialises them again and reports the error
	}
	t.progs.seed, t.progs.initExec, t.progs.initVars = t.plan.Run.Seed, initExec, initVars
	now := time.Now()
	t.rt.prepared(runs.ProgramInit, runs.ProgramTrainStep, 0, began, now, mark)
	t.rt.lastCompileEnd = now
	t.progs.snapshot(t.store)
}

// stepStart is the event of the run's first step starting (EventStepStart): as GoMLX's loop
// starts, with programs an earlier run compiled, or else after the train step's compile and the
// variables' initialisation, which GoMLX does at the first step.
func (t *Trainer) stepStart() Event {
	first := 1
	if t.steps != nil {
		first = t.steps.start + 1
	}
	return Event{Kind: EventStepStart, Step: first, Steps: t.plan.Run.Steps}
}
