package cifarlib

import "fmt"

// LabelStats returns the label statistics of r against a head of headWidth outputs: count,
// minimum, maximum, histogram, and how many labels a head that narrow cannot represent. It is
// PyTorch's `labels.min(), labels.max()` and `len(dataset.classes)` in one value.
func (r *Records) LabelStats(headWidth int) SplitLabels {
	return splitLabels("", r.Source, r, headWidth)
}

// String says it in a line, e.g. "5000 labels of cifar100 (data_batch): 0..99, 100 of 100
// classes present; 4500 (90%) are >= the head's 10 outputs".
func (s SplitLabels) String() string {
	what := s.Source
	if s.Split != "" {
		what = s.Split + " split, " + s.Source
	}
	line := fmt.Sprintf("%d labels (%s): %d..%d, %d of %d classes present", s.Count, what, s.Min, s.Max,
		present(s.Histogram), len(s.Histogram))
	if s.HeadWidth > 0 {
		line += fmt.Sprintf("; %d (%.0f%%) are >= the head's %d outputs", s.BeyondHead,
			100*float64(s.BeyondHead)/float64(max(1, s.Count)), s.HeadWidth)
	}
	return line
}
