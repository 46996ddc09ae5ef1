package training

import (
	"fmt"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// buildModel builds the model of plan p on backend and, with the guard on, runs the guarded
// loss's static check: a head that differs from the dataset's number of classes fails here,
// before the data is even loaded, with *HeadMismatchError.
func buildModel(p *plan, backend compute.Backend) (*cifarlib.Model, error) {
	mb := cifarlib.NewModel(p.Data.Spec, p.Model.Arch).Backend(backend).Precision(p.Compute.Precision)
	if p.Model.Head != p.Data.Spec.NumClasses {
		mb = mb.Head(p.Model.Head)
	}
	m, err := mb.Done()
	if err != nil {
		return nil, err
	}
	if !p.Model.Unguarded {
		if err := staticGuardCheck(backend, m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// staticGuardCheck runs the guarded loss's static check (head width against the dataset's
// classes) on a graph that is built but never run, so a mismatched head fails before anything
// is loaded or compiled, with the guard's own *HeadMismatchError.
func staticGuardCheck(backend compute.Backend, m *cifarlib.Model) error {
	return backends.TrainCatch(func() error {
		g := graph.NewGraph(backend, "cifarlib_static_guard")
		defer g.Finalize()
		logits := graph.Parameter(g, "logits", shapes.Make(dtypes.Float32, 1, m.NumClasses))
		labels := graph.Parameter(g, "labels", shapes.Make(dtypes.Int32, 1, 1))
		m.LossFn(cifarlib.GuardStatic)([]*graph.Node{labels}, []*graph.Node{logits})
		return nil
	})
}

// initWhitening sets airbench94's whitening filters of m from the first training images
// (cifarlib.Model.InitWhitening, airbench's init_whitening_conv) at the start of a fresh run of
// plan p. A run that continues a checkpoint (resumed or imported) keeps its own, and a transfer
// carries its source's. The filters depend on the training records alone: a set of programs
// kept for later runs (Env.Programs) keeps those of the records it last saw (a host copy), and
// a re-run on the same records sets them again without computing them (about 0.5 s on 2 cores).
func initWhitening(p *plan, m *cifarlib.Model, store *model.Store, train *data.Records, continued bool, set *programSet) error {
	if m.Arch != cifarlib.ArchAirbench94 || continued || p.source != nil {
		return nil
	}
	if set != nil && set.whitenRecs == train && set.whitenFilters != nil {
		filters, err := set.whitenFilters.LocalClone()
		if err != nil {
			return fmt.Errorf("training: the kept whitening filters: %w", err)
		}
		return cifarlib.SetWhiteningFilters(store, filters)
	}
	filters, err := m.WhiteningFiltersOf(train)
	if err != nil {
		return err
	}
	if set != nil {
		if set.whitenFilters, err = filters.LocalClone(); err != nil {
			return fmt.Errorf("training: keeping the whitening filters: %w", err)
		}
		set.whitenRecs = train
	}
	return cifarlib.SetWhiteningFilters(store, filters)
}
