package training

import (
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// trainRecords is the data part of a Trainer: the training split, the test split when the run
// evaluates, and where they came from.
type trainRecords struct {
	// dataset is the run's Spec; state what its Data.Dir holds (data.StateOf, looked at once,
	// only when a split is loaded from it).
	dataset     data.Spec
	state       data.State
	log         runLog
	train, test *data.Records
	provenance  data.Provenance // of train and test
}

// loadTrainRecords loads the splits of plan p, timed on the timeline rt: the Env's, else from
// Data.Dir (or the synthetic data Prepare put next to it). The test split is loaded when the
// run evaluates (at the end, or while it trains: Eval.Every not EvalOff).
func loadTrainRecords(p *plan, env Env, log runLog, rt *runTimeline) (*trainRecords, error) {
	r := &trainRecords{dataset: p.Data.Spec, log: log}
	evaluates := !p.Eval.SkipFinal || p.Eval.Every > 0
	if env.Train == nil || evaluates && env.Test == nil {
		rt.event(Event{Kind: EventData})
	}
	began := time.Now()
	if env.Train == nil || evaluates && env.Test == nil {
		r.state = data.StateOf(p.Data.Dir, p.Data.Spec) // once, for both splits and the provenance
	}
	var err error
	if r.train, err = r.load(env.Train, data.SplitTrain); err != nil {
		return nil, err
	}
	if evaluates {
		if r.test, err = r.load(env.Test, data.SplitTest); err != nil {
			return nil, err
		}
	}
	test := r.test
	if test == nil {
		test = env.Test // given, though this run does not evaluate
	}
	r.provenance = r.state.Provenance(r.train, test) // loaded from r.state
	if env.Train != nil {
		r.provenance = data.ProvenanceOf(r.train, test) // given: from their own folder
	}
	if env.Train == nil {
		log("data: %s", r.provenance) // synthetic or real, where from
	}
	rt.add(runs.PhaseData, began)
	return r, nil
}

// load returns given when set (checking its Spec), else loads the split from what tr.state
// found: the DataDir, or SyntheticDir(DataDir) where Prepare puts synthetic data when the
// folder holds no real data (the data's SYNTHETIC DATA line goes to the log).
func (tr *trainRecords) load(given *data.Records, split data.Split) (*data.Records, error) {
	if spec := tr.dataset; given != nil {
		if given.Spec.ID() != spec.ID() || given.Spec.NumClasses != spec.NumClasses {
			return nil, &ConfigError{Field: "Env.Train/Env.Test", Value: given.Spec.ID(),
				Reason: fmt.Sprintf("the records are %s but Data.Spec is %s: load them with the same Spec", given.Spec, spec)}
		}
		return given, nil
	}
	recs, err := tr.state.LoadSplit(split)
	st := tr.state
	if err == nil && split == data.SplitTrain && st.Kind == data.KindSynthetic && st.LoadRoot == data.SyntheticDir(st.Root) {
		tr.log("%s", st) // "SYNTHETIC DATA: ...", as a notebook's first cell says it (one note per run)
	}
	return recs, err
}
