package training

import (
	"fmt"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// trainRecords is the data part of a Trainer: the training split, the test split when the run
// evaluates, and where they came from.
type trainRecords struct {
	// dataset is the run's Spec and folder the folder it loads from (Config.DataDir).
	dataset     data.Spec
	folder      string
	log         runLog
	train, test *data.Records
	provenance  data.Provenance // of train and test
}

// loadTrainRecords loads the splits of plan p: the records given in the Config, else from its
// DataDir (or the synthetic data Prepare put next to it). The test split is loaded when the run
// evaluates (at the end or periodically).
func loadTrainRecords(p *plan, log runLog) (*trainRecords, error) {
	r := &trainRecords{dataset: p.Spec, folder: p.DataDir, log: log}
	var err error
	if r.train, err = r.load(p.TrainRecords, data.SplitTrain); err != nil {
		return nil, err
	}
	if !p.SkipFinalEval || p.EvalEvery > 0 {
		if r.test, err = r.load(p.TestRecords, data.SplitTest); err != nil {
			return nil, err
		}
	}
	test := r.test
	if test == nil {
		test = p.TestRecords // given, though this run does not evaluate
	}
	r.provenance = data.ProvenanceOf(r.train, test)
	if p.TrainRecords == nil {
		log("data: %s", r.provenance) // synthetic or real, where from
	}
	return r, nil
}

// load returns given when set (checking its Spec), else loads the split from tr.folder, or from
// SyntheticDir(tr.folder) where Prepare puts synthetic data when the folder holds no real data
// (the data's SYNTHETIC DATA line goes to the log).
func (tr *trainRecords) load(given *data.Records, split data.Split) (*data.Records, error) {
	spec, dir := tr.dataset, tr.folder
	if given != nil {
		if given.Spec.ID() != spec.ID() || given.Spec.NumClasses != spec.NumClasses {
			return nil, &ConfigError{Field: "TrainRecords/TestRecords", Value: given.Spec.ID(),
				Reason: fmt.Sprintf("the records are %s but Spec is %s: load them with the same Spec", given.Spec, spec)}
		}
		return given, nil
	}
	recs, err := LoadSplitOrSynthetic(dir, spec, split)
	switch {
	case err != nil:
	case split != data.SplitTrain: // one note per run, for the training split
	case filepath.Dir(filepath.Dir(recs.Source)) == filepath.Clean(data.SyntheticDir(dir)):
		tr.log("%s", data.StateOf(dir, spec)) // "SYNTHETIC DATA: ...", as a notebook's first cell says it
	}
	return recs, err
}
