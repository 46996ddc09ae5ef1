package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// trainRecords is the data part of a Trainer: the training split, the test split when the run
// evaluates, and where they came from.
type trainRecords struct {
	// dataset is the run's Spec; state what its DataDir holds (data.StateOf, looked at once,
	// only when a split is loaded from it).
	dataset     data.Spec
	state       data.State
	log         runLog
	train, test *data.Records
	provenance  data.Provenance // of train and test
}

// loadTrainRecords loads the splits of config p (its Spec and DataDir resolved): the records
// given in the Config, else from its DataDir (or the synthetic data Prepare put next to it). The
// test split is loaded when the run evaluates (at the end or periodically: EvalEvery > 0, which
// is also true of EvalEvery before resolve, whose 0 turns positive only without SkipFinalEval).
func loadTrainRecords(p *Config, log runLog) (*trainRecords, error) {
	r := &trainRecords{dataset: p.Spec, log: log}
	evaluates := !p.SkipFinalEval || p.EvalEvery > 0
	if p.TrainRecords == nil || evaluates && p.TestRecords == nil {
		r.state = data.StateOf(p.DataDir, p.Spec) // once, for both splits and the provenance
	}
	var err error
	if r.train, err = r.load(p.TrainRecords, data.SplitTrain); err != nil {
		return nil, err
	}
	if evaluates {
		if r.test, err = r.load(p.TestRecords, data.SplitTest); err != nil {
			return nil, err
		}
	}
	test := r.test
	if test == nil {
		test = p.TestRecords // given, though this run does not evaluate
	}
	r.provenance = r.state.Provenance(r.train, test) // loaded from r.state
	if p.TrainRecords != nil {
		r.provenance = data.ProvenanceOf(r.train, test) // given: from their own folder
	}
	if p.TrainRecords == nil {
		log("data: %s", r.provenance) // synthetic or real, where from
	}
	return r, nil
}

// load returns given when set (checking its Spec), else loads the split from what tr.state
// found: the DataDir, or SyntheticDir(DataDir) where Prepare puts synthetic data when the
// folder holds no real data (the data's SYNTHETIC DATA line goes to the log).
func (tr *trainRecords) load(given *data.Records, split data.Split) (*data.Records, error) {
	if spec := tr.dataset; given != nil {
		if given.Spec.ID() != spec.ID() || given.Spec.NumClasses != spec.NumClasses {
			return nil, &ConfigError{Field: "TrainRecords/TestRecords", Value: given.Spec.ID(),
				Reason: fmt.Sprintf("the records are %s but Spec is %s: load them with the same Spec", given.Spec, spec)}
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
