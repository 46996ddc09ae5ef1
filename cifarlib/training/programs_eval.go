package training

import (
	"context"
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// evalProgramKey is what determines a model's evaluation program, besides the batch shape
// (each batch size is compiled once per key): the backend, the dataset, the architecture, its
// head and precision.
type evalProgramKey struct {
	// Backend is the backend's name and identity (programs live on the backend that compiled them).
	Backend string
	// Dataset is the dataset id and Classes its number of classes (the metrics, top-k).
	Dataset string
	Classes int
	// Model is the architecture, Head its head width and Precision what it computes in.
	Model     string
	Head      int
	Precision cifarlib.Precision
}

// evalSet is a kept evaluation program: the evalProgram of the first model evaluated with its
// key, on a Store of its own into which each model evaluated copies its weights.
type evalSet struct {
	store     *model.Store
	evaluator *evalProgram
}

// Evaluate evaluates tr on recs, as tr.Evaluate does, with the evaluation program kept for its
// evalProgramKey: the first model of a key compiles it, the later ones (another run's
// checkpoint of the same architecture, say) have their weights copied into its Store and
// compile nothing for a batch size evaluated before. tr itself is left as it was (the weights
// of a lazily loaded checkpoint are read into its Store). Data-parallel evaluations
// (opts.Devices above 1, or DevicesAll) are not kept: they evaluate as tr.Evaluate does.
func (p *Programs) Evaluate(ctx context.Context, tr *Trained, recs *data.Records, opts EvalOptions) (*EvalResult, error) {
	if p == nil || tr == nil || tr.Model == nil || tr.Store == nil || opts.Devices > 1 || opts.Devices < 0 {
		if tr == nil {
			return nil, fmt.Errorf("training: Programs.Evaluate: no trained model (nil *Trained)")
		}
		return tr.Evaluate(ctx, recs, opts)
	}
	m := tr.Model
	key := newEvalProgramKey(tr.Backend, m.Spec, m.Arch, m.NumClasses, m.Precision)
	p.mu.Lock()
	s := p.evals[key]
	if s != nil {
		delete(p.evals, key) // one evaluation at a time: in use until it returns
	}
	p.mu.Unlock()
	if s == nil {
		s = &evalSet{store: model.NewStore()}
		s.store.SetLoader(copyLoader{tr})
		var err error
		if s.evaluator, err = newEvalProgram(tr.Backend, m, s.store); err != nil {
			return nil, err
		}
	} else {
		for v := range s.store.IterVariables() {
			value, err := weightOf(tr, v.Path())
			if err == nil {
				err = v.SetValue(value)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	res, err := s.evaluator.Evaluate(ctx, recs, opts)
	if err == nil {
		p.mu.Lock()
		if p.evals == nil {
			p.evals = map[evalProgramKey]*evalSet{}
		}
		p.evals[key] = s
		p.mu.Unlock()
	}
	return res, err
}

// copyLoader gives a kept Store the weights of a trained model, as copies.
type copyLoader struct{ tr *Trained }

// LoadVariable implements model.Loader.
func (l copyLoader) LoadVariable(_ *model.Store, path string) (*tensors.Tensor, bool) {
	value, err := weightOf(l.tr, path)
	return value, err == nil
}

// DeleteVariable implements model.Loader.
func (copyLoader) DeleteVariable(*model.Store, string) error { return nil }

// weightOf returns a host copy of the variable path of tr: from its Store, or from the
// checkpoint its Store loads lazily, whose value it then keeps in its Store.
func weightOf(tr *Trained, path string) (*tensors.Tensor, error) {
	v := tr.Store.GetVariable(path)
	if v == nil || !v.HasValue() {
		loader := tr.Store.Loader()
		if loader == nil {
			return nil, fmt.Errorf("training: the trained %s has no variable %s to evaluate with", tr.Model, path)
		}
		value, found := loader.LoadVariable(tr.Store, path)
		if !found {
			return nil, fmt.Errorf("training: the trained %s has no variable %s to evaluate with", tr.Model, path)
		}
		var err error
		if v == nil {
			v, err = tr.Store.CreateVariable(path, value)
		} else {
			err = v.SetValue(value)
		}
		if err != nil {
			return nil, fmt.Errorf("training: reading variable %s of the trained %s: %w", path, tr.Model, err)
		}
	}
	value, err := v.Value()
	if err != nil {
		return nil, fmt.Errorf("training: reading variable %s of the trained %s: %w", path, tr.Model, err)
	}
	return value.LocalClone()
}

// evalProgramKey is the key of the evaluation program of the architecture arch with a head of
// head classes for spec, computing in precision, on backend b.
func newEvalProgramKey(b compute.Backend, spec data.Spec, arch string, head int, precision cifarlib.Precision) evalProgramKey {
	return evalProgramKey{Backend: backendID(b), Dataset: spec.ID(), Classes: spec.NumClasses, Model: arch, Head: head, Precision: precision}
}

// backendID names a backend and its identity: compiled programs live on the backend that
// compiled them.
func backendID(b compute.Backend) string { return fmt.Sprintf("%s (%T@%p)", backends.Name(b), b, b) }
