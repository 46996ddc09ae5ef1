package main

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// classTask is a dataset made of some of CIFAR-10's classes, relabelled 0..n-1 in the order
// given: a real transfer task between disjoint classes where no real CIFAR-100 is at hand.
type classTask struct {
	// name is the Spec name of the task, e.g. "cifar10-animals".
	name string
	// classes are the CIFAR-10 labels kept, in the order of the new labels.
	classes []int
}

// CIFAR-10's six animal classes (bird, cat, deer, dog, frog, horse) and four vehicle classes
// (airplane, automobile, ship, truck).
var (
	animals  = classTask{"cifar10-animals", []int{2, 3, 4, 5, 6, 7}}
	vehicles = classTask{"cifar10-vehicles", []int{0, 1, 8, 9}}
)

// spec is CIFAR-10's Spec narrowed to the task's classes: its name, width and class names.
func (c classTask) spec() data.Spec {
	spec := data.CIFAR10()
	names := make([]string, len(c.classes))
	for i, label := range c.classes {
		names[i] = spec.ClassNames[label]
	}
	spec.Name, spec.NumClasses, spec.ClassNames, spec.MaxLabels = c.name, len(c.classes), names, []int{len(c.classes)}
	return spec
}

// String names the task and its classes, e.g. "cifar10-vehicles (airplane, automobile, ship, truck)".
func (c classTask) String() string {
	return fmt.Sprintf("%s (%s)", c.name, strings.Join(c.spec().ClassNames, ", "))
}

// subset copies the records of recs (CIFAR-10) whose label is one of the task's classes, with
// the label replaced by its index in the task, keeping at most limit of them per class in the
// order they come (limit 0: all).
func (c classTask) subset(recs *data.Records, limit int) (*data.Records, error) {
	if recs.Spec.Name != "cifar10" {
		return nil, fmt.Errorf("%s: the %s task takes CIFAR-10 records, got %s", recs.Source, c.name, recs.Spec)
	}
	index := map[int]int{}
	for i, label := range c.classes {
		index[label] = i
	}
	var keep []int
	taken := make([]int, len(c.classes))
	for i := range recs.Len() {
		j, ok := index[recs.Label(i)]
		if ok && (limit == 0 || taken[j] < limit) {
			keep = append(keep, i)
			taken[j]++
		}
	}
	out := data.NewRecords(c.spec(), fmt.Sprintf("%s of %s", c.name, recs.Source), len(keep))
	for k, i := range keep {
		copy(out.Image(k), recs.Image(i))
		out.RawLabels[k] = byte(index[recs.Label(i)])
	}
	return out, out.Validate()
}
