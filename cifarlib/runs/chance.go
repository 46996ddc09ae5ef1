package runs

import (
	"fmt"
	"math"
)

// ChanceSigmas is the half-width of a ChanceBand in standard deviations of a model that
// learned nothing: 3, so that 99.7% of such models fall inside it (a normal approximation of
// the binomial; see Chance).
const ChanceSigmas = 3

// ChanceBand is the range of test accuracies within the noise of a model that learned
// nothing: one whose prediction does not depend on the image (the initial weights, a
// constant guess) is right on each test image with probability 1/Classes, so its accuracy on
// Examples images is Binomial(Examples, 1/Classes)/Examples, of mean 1/Classes and standard
// deviation sqrt(p(1-p)/Examples); the band is ChanceSigmas of those either side of the mean.
// On CIFAR-10's 10000 test images it is 10% ± 0.90 points; on 1000 images, 10% ± 2.85 points.
type ChanceBand struct {
	// Classes is the number of classes and Examples the number of test images.
	Classes, Examples int
	// Low and High bound the band (fractions, clamped to [0, 1]).
	Low, High float64
}

// Chance returns the chance band of a test of examples images of classes classes (a zero
// band when either is not positive).
func Chance(classes, examples int) ChanceBand {
	b := ChanceBand{Classes: classes, Examples: examples}
	if classes <= 0 || examples <= 0 {
		return b
	}
	p := 1 / float64(classes)
	half := ChanceSigmas * math.Sqrt(p*(1-p)/float64(examples))
	b.Low, b.High = max(0, p-half), min(1, p+half)
	return b
}

// Contains reports whether accuracy (a fraction) lies within the band: the result cannot be
// told apart from a model that learned nothing.
func (b ChanceBand) Contains(accuracy float64) bool {
	return b.Classes > 0 && b.Examples > 0 && accuracy >= b.Low && accuracy <= b.High
}

// String says the band, e.g. "1/10 = 10.00% ± 0.90 points on 10000 test images".
func (b ChanceBand) String() string {
	p := 100 / float64(b.Classes)
	return fmt.Sprintf("1/%d = %.2f%% ± %.2f points on %d test images", b.Classes, p, 100*(b.High-b.Low)/2, b.Examples)
}
