package nb

import (
	"context"
	"fmt"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// evaluateRun makes the Evaluate of ck, the run called name in dir, a cell's evaluation:
//
//   - An evaluation of the same weights (the checkpoint Load read), images and options that the
//     run folder keeps (training.StoredEval, whichever program evaluated it: a cell, the lab
//     process, before a restart) is returned at once, and a line says so.
//   - Otherwise it evaluates: in the kernel's lab process for the lab's Train or Test split
//     (evaluateInLabProcess), else in this program; in a notebook a status line says what it is
//     doing from its first second ("evaluating 10,000 images with TTA level 2 (6 views)…
//     3,000/10,000 · 2.1 s"). The result is kept in the run folder (training.StoreEval).
func (l *Lab) evaluateRun(name string, ck *training.LoadedCheckpoint, dir string) {
	t := ck.Trained
	if t == nil {
		return
	}
	client := l.labClient(training.Env{})
	t.EvaluateWith = func(ctx context.Context, recs *data.Records, opts training.EvalOptions) (*training.EvalResult, error) {
		key, keyErr := ck.EvalKey(recs, opts)
		if keyErr == nil {
			if s, ok := training.StoredEval(dir, key); ok {
				fmt.Fprintf(output(), "run %q: %s: %s\n", name, s.Result.Summary(), s.Reused(shownPath(dir)))
				return s.Result, nil
			}
		}
		st := cellStatus(name)
		began := time.Now()
		res, err, done := l.evaluateInLabProcess(ctx, client, ck, dir, recs, opts, st)
		if !done {
			opts.OnEvent = withStatus(st, opts.OnEvent)
			res, err = training.Evaluate(ctx, t.Backend, t.Model, t.Store, recs, opts)
		}
		closeStatus(st, err)
		if err == nil && keyErr == nil {
			_ = training.StoreEval(dir, key, res, began, time.Since(began)) // not kept: the next evaluation computes it again
		}
		return res, err
	}
}
