package data

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
		s.ClassesPresent(), len(s.Histogram))
	if s.HeadWidth > 0 {
		line += fmt.Sprintf("; %d (%.0f%%) are >= the head's %d outputs", s.BeyondHead,
			100*float64(s.BeyondHead)/float64(max(1, s.Count)), s.HeadWidth)
	}
	return line
}

// SplitLabels describes the labels of one split, as Diagnose found them.
type SplitLabels struct {
	// Split is "train" or "test"; Source the folder the records were read from.
	Split  string `json:"split"`
	Source string `json:"source"`
	// Count is the number of examples; Min and Max the smallest and largest label.
	Count int `json:"count"`
	Min   int `json:"min"`
	Max   int `json:"max"`
	// Histogram counts the examples of each label, indexed by label (length NumClasses).
	Histogram []int `json:"histogram"`
	// BeyondHead counts the labels >= the model's head width (they would be silently ignored by
	// an unguarded loss); FirstBeyondHead lists the first few such example indices.
	BeyondHead      int   `json:"beyond_head"`
	FirstBeyondHead []int `json:"first_beyond_head,omitempty"`
	// HeadWidth is the head width BeyondHead was counted against.
	HeadWidth int `json:"head_width"`
	// Dataset is the dataset's id (Spec.ID) and Kind what the records are (Records.Kind: synthetic,
	// real and verified or not, "" when not known): a chart of the labels says it (Caption).
	Dataset string `json:"dataset,omitempty"`
	Kind    string `json:"kind,omitempty"`
}

// Caption says which data the labels are of, in a few words (see Caption).
func (s SplitLabels) Caption() string { return Caption(s.Dataset, s.Kind) }

// splitLabels counts the labels of recs, split name read from source, against a head of
// headWidth outputs.
func splitLabels(name, source string, recs *Records, headWidth int) SplitLabels {
	s := SplitLabels{Split: name, Source: source, Count: recs.Len(), Min: -1, Max: -1,
		Histogram: make([]int, recs.Spec.NumClasses), HeadWidth: headWidth, Dataset: recs.Spec.ID(), Kind: recs.Kind}
	for i := range recs.Len() {
		l := recs.Label(i)
		if s.Min < 0 || l < s.Min {
			s.Min = l
		}
		if l > s.Max {
			s.Max = l
		}
		if l >= 0 && l < len(s.Histogram) {
			s.Histogram[l]++
		}
		if l >= headWidth {
			s.BeyondHead++
			if len(s.FirstBeyondHead) < 5 {
				s.FirstBeyondHead = append(s.FirstBeyondHead, i)
			}
		}
	}
	return s
}

// ClassesPresent is the number of classes with at least one example.
func (s SplitLabels) ClassesPresent() int {
	n := 0
	for _, c := range s.Histogram {
		if c > 0 {
			n++
		}
	}
	return n
}
