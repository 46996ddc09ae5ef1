package cifarlib_test

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
)

// In a GoNB notebook cell, DisplaySVG shows the chart; anywhere else (here, a test) it prints
// the plain-text alternative.
func ExampleDisplaySVG() {
	hist := []int{50, 50, 50, 50} // examples per label
	svg := cifarlib.LabelHistogramSVG("training labels", hist, 2)
	fmt.Println(strings.Count(svg, "<title>label"), "bars")
	cifarlib.DisplaySVG(svg, "4 labels; labels 2 and 3 have no output in a 2-wide head")
	// Output:
	// 4 bars
	// 4 labels; labels 2 and 3 have no output in a 2-wide head
}
