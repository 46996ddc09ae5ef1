package runs_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cifarlab/cifarlab/cifarlib/runs"
)

// Two runs of the same recipe, one value changed: a comparison names each by that value (their
// folders differ too, but a checkpoint folder is bookkeeping), and the runs table gets its column.
func ExampleDiffering() {
	dir, _ := os.MkdirTemp("", "runs")
	defer os.RemoveAll(dir)
	for name, smoothing := range map[string]string{"ls-0.2": "0.2", "ls-0.1": "0.1"} {
		rec := runs.Record{Status: runs.RunDone, Settings: runs.RunSettings{
			Values: []runs.Setting{{Name: "recipe", Words: "recipe", Value: "airbench94"}, {Name: "model", Words: "model", Value: "airbench94"},
				{Name: "label-smoothing", Words: "label smoothing", Value: smoothing}, {Name: "epochs", Words: "epochs", Value: "2"},
				{Name: "checkpoint", Words: "checkpoint folder", Value: filepath.Join(dir, name), Bookkeeping: true}},
			Given: map[string]string{"recipe": "airbench94", "epochs": "2", "label-smoothing": smoothing}}}
		_ = os.Mkdir(filepath.Join(dir, name), 0o755)
		if err := rec.Write(filepath.Join(dir, name)); err != nil {
			panic(err)
		}
	}
	list, err := runs.List(dir)
	if err != nil {
		panic(err)
	}
	fmt.Println("differing:", runs.Differing(list...))
	fmt.Println("by", runs.Compared(list...))
	for i, label := range runs.Labels(list...) {
		fmt.Printf("%s: %s\n", list[i].Name, label)
	}
	// Output:
	// differing: [label-smoothing]
	// by label smoothing
	// ls-0.1: label smoothing 0.1
	// ls-0.2: label smoothing 0.2
}
