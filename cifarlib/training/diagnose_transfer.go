package training

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// DiagnoseRun diagnoses the trained run in runDir (a checkpoint directory) against the dataset
// target under root: the model as the run saved it (its architecture and head) on the target's
// labels, as Diagnose does, plus the dataset-switch checklist in Diagnosis.Checklist (head width
// against the classes, label range, the normalisation statistics the run was trained with
// against the target's, the metrics, the class names), each OK, FAIL or NOTE with the fix. A
// FAIL makes the Diagnosis not OK; its Fix is then the transfer (cifarlab train --from). The run
// errors are those of a transfer's source (*NotRunError, *checkpoints.IncompleteError,
// *checkpoints.CorruptError).
func DiagnoseRun(runDir string, target data.Spec, root string, opts cifarlib.DiagnoseOptions) (*cifarlib.Diagnosis, error) {
	_, info, err := readRunSource(runDir)
	if err != nil {
		return nil, err
	}
	source := info.Data.Spec
	m, err := info.modelBuilder(target).Done()
	if err != nil {
		return nil, fmt.Errorf("training: run %s: %w", runDir, err)
	}
	d, err := cifarlib.DiagnoseWith(m, root, opts)
	if err != nil {
		return nil, err
	}
	d.From, d.FromDataset = runDir, source.ID()
	// The head is the run's, not an override the user set: say where it came from.
	d.Model = fmt.Sprintf("%s trained on %s (its head: %d outputs), checked against %s (%d classes)",
		m.Arch, source.ID(), info.Model.Head, target.ID(), target.NumClasses)
	if d.Summary != nil {
		d.Summary.Model = d.Model
	}
	if d.HeadOverridden {
		// The factory's advice (build the model for the dataset) is the wrong fix for a trained
		// run: its problem line says what the checklist does.
		he := &cifarlib.HeadMismatchError{Dataset: d.Dataset, HeadWidth: d.HeadWidth, NumClasses: d.NumClasses, Overridden: true}
		for i, p := range d.Problems {
			if p == he.Error() {
				d.Problems[i] = fmt.Sprintf("the run's head has %d outputs but %s has %d classes: see the checklist",
					d.HeadWidth, d.Dataset, d.NumClasses)
			}
		}
		d.HeadOverridden = false
	}
	transfer := fmt.Sprintf("transfer the run (training.Settings.Transfer.From; the settings from=%s %s), which carries the "+
		"backbone and initialises a new head of %d", runDir, datasetSettings(target.ID()), target.NumClasses)
	d.Checklist = switchChecklist(info.Model.Head, source, target, d.Splits, transfer)
	ownNormalizationItem(d.Checklist, info.Input, target)
	if i := slices.IndexFunc(d.Checklist, func(c cifarlib.CheckItem) bool { return c.Status == cifarlib.CheckFail }); i >= 0 {
		d.OK, d.Fix = false, transfer
		if !strings.HasPrefix(d.Verdict, "MISMATCH") && !strings.HasPrefix(d.Verdict, "PROBLEM") {
			d.Verdict = fmt.Sprintf("MISMATCH: run %s (%s) can not be used on %s as it is: %s", runDir, source.ID(), target.ID(),
				d.Checklist[i].Detail)
		}
	}
	return d, nil
}

// switchChecklist compares a run trained on source with a head of head outputs to target.
func switchChecklist(head int, source, target data.Spec, splits []data.SplitLabels, transfer string) []cifarlib.CheckItem {
	var items []cifarlib.CheckItem
	add := func(item string, ok bool, detail, fix string) {
		c := cifarlib.CheckItem{Item: item, Status: cifarlib.CheckOK, Detail: detail}
		if !ok {
			c.Status, c.Fix = cifarlib.CheckFail, fix
		}
		items = append(items, c)
	}

	add("head width", head == target.NumClasses, fmt.Sprintf("the run's head has %d outputs, %s has %d classes",
		head, target.ID(), target.NumClasses), transfer)

	var parts []string
	beyond, lo, hi := 0, -1, -1
	for _, s := range splits {
		beyond += s.BeyondHead
		parts = append(parts, fmt.Sprintf("%d of %d %s", s.BeyondHead, s.Count, s.Split))
		if s.Count > 0 && (lo < 0 || s.Min < lo) {
			lo = s.Min
		}
		hi = max(hi, s.Max)
	}
	rangeDetail := fmt.Sprintf("%s labels %d..%d fit the head's %d outputs", target.ID(), lo, hi, head)
	if beyond > 0 {
		rangeDetail = fmt.Sprintf("%s labels %d..%d, the head covers 0..%d: %s labels are beyond it (an unguarded "+
			"loss gives them exactly 0; the guard stops)", target.ID(), lo, hi, head-1, strings.Join(parts, " and "))
	}
	add("label range", beyond == 0, rangeDetail, transfer)

	items = append(items, normalisationCheck(source, target))

	metrics := "top-1 accuracy"
	if target.NumClasses > 10 {
		metrics = "top-1 and top-5 accuracy (with 100 or 20 classes top-1 alone undersells a model)"
	}
	items = append(items, cifarlib.CheckItem{Item: "metrics", Status: cifarlib.CheckOK, Detail: fmt.Sprintf("%s is evaluated with %s and "+
		"per-class accuracy over its %d classes; cifarlib picks them from the dataset", target.ID(), metrics, target.NumClasses)})

	same := slices.Equal(source.ClassNames, target.ClassNames)
	namesDetail := fmt.Sprintf("the run's %d classes are %s's", len(source.ClassNames), target.ID())
	if !same {
		namesDetail = fmt.Sprintf("the run's %d classes (%s) are not %s's %d (%s): output i of the old head means "+
			"another class", len(source.ClassNames), firstNames(source.ClassNames), target.ID(), len(target.ClassNames),
			firstNames(target.ClassNames))
	}
	add("class names", same, namesDetail, transfer)
	return items
}

// normalisationCheck compares the normalisation statistics a run was trained with (source's)
// with target's.
func normalisationCheck(source, target data.Spec) cifarlib.CheckItem {
	shift := 0.0 // The largest gap between the two normalisations, in the run's standard deviations.
	for c := range data.ImageChannels {
		shift = math.Max(shift, math.Abs(float64(target.Mean[c]-source.Mean[c]))/float64(source.Std[c]))
		shift = math.Max(shift, math.Abs(float64(target.Std[c]/source.Std[c])-1))
	}
	norm := cifarlib.CheckItem{Item: "normalisation", Status: cifarlib.CheckOK, Detail: fmt.Sprintf("the run was trained with %s's "+
		"statistics, the same as %s's (mean %v, std %v)", source.ID(), target.ID(), source.Mean, source.Std)}
	if source.Mean != target.Mean || source.Std != target.Std {
		norm.Status = cifarlib.CheckNote
		norm.Detail = fmt.Sprintf("the run was trained on inputs normalised with %s's mean %v and std %v; %s's are %v "+
			"and %v (up to %.2f of the run's standard deviation apart)", source.ID(), source.Mean, source.Std,
			target.ID(), target.Mean, target.Std, shift)
		norm.Fix = "cifarlib normalises each dataset with its own statistics: fine-tuning adapts the batch norms to " +
			"them; a frozen backbone (linear probe) sees its inputs shifted by that much"
	}
	return norm
}

// firstNames lists the first three names, then "...".
func firstNames(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:3], ", ") + ", ..."
}
