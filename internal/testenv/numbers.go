package testenv

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// Float comparisons. Two computations of one function round differently: device shards and their
// all-reduce, im2col against XLA's convolution, XLA against the pure-Go backend, and XLA CPU's
// own code generation (vector width, thread count: an AVX-512 Intel and an AVX2 AMD machine
// disagree in the last bits). Each tolerance says what the two sides can differ by; every
// comparison logs its measured spread next to its tolerance in one "spread:" line, which
// bench/spread.sh collects under settings that change that rounding (bench/RESULTS-spread.md).
const (
	// unitRoundoff is float32's u = 2^-24.
	unitRoundoff = 0x1p-24

	// tolReorder bounds one pass (forward, or forward and backward without a branch taken
	// differently) whose sums run in another order, relative to the magnitude of what is
	// compared. A reordered sum of n terms differs by about sqrt(n)·u of its terms' magnitude
	// (Higham and Mary's probabilistic bound; n·u is the worst case). The largest sums here
	// have n = 16·32·32 = 16384 terms (a kernel gradient over a batch of 16 at full
	// resolution): sqrt(n)·u = 7.6e-6, and the errors pass through up to ~10 layers, which
	// batch norm re-centres instead of compounding: 1e-4. Measured at most 4.9e-6 (resnet18's
	// logits, im2col against XLA's convolution, seed 9; bench/RESULTS-spread.md).
	TolReorder = 1e-4

	// tolReorderOp bounds a single op or a shallow graph (one convolution, one matmul, a
	// cross-entropy) with inputs of magnitude <= 1, element by element against 1+|want|. Its
	// largest sums are kernel gradients over 2·32·32 = 2048 positions; λ·sqrt(n)·u with λ = 4
	// (the probabilistic bound then holds for an element with probability 1-7e-4) is 1.1e-5.
	// Measured at most 2.9e-6 (that 32x32 kernel gradient).
	TolReorderOp = 2e-5

	// tolFloat32Ref bounds, absolutely, a float32 loss (cross-entropy, a mean of up to 300 of
	// them, values <= 10) against the same formula computed in float64 in the test: a log-sum-exp
	// rounds a few times by u·|value| and a mean of n values by about sqrt(n)·u·|mean|:
	// sqrt(300)·u·2.3 = 2.4e-6 for the tests' 300 losses near ln(10), 4x inside.
	TolFloat32Ref = 1e-5
)

// kinkTolerance bounds, normwise (||got-want||/||want||), a gradient through ReLUs or max-pools
// computed twice with different rounding. Where a pre-activation lies within rounding of 0 (or
// two max-pool inputs within rounding of a tie), the two sides take different branches: the
// forward values still agree (both branches are ~0 there), but that unit's term in the weight
// gradient it feeds is present on one side and absent on the other. A weight gradient is a sum
// over the batch·height·width positions of its layer; one flipped term among m of them moves it
// by about 1/sqrt(m) of its norm (the terms add incoherently). The smallest layer bounds it:
// m = batch·minHW, e.g. 16·8·8 = 1024 for cnn and resnet20 at batch 16 gives 3.1e-2. An
// element-wise check cannot hold there (one element moves by its whole term), and a seed
// or a CPU that hits no kink at all gives only tolReorder's spread. A structural bug (a shifted
// pixel, batch norm over one shard, a gradient not all-reduced or scaled by the device count)
// changes gradients by 0.3 to 3 of their norm and stays far outside. Measured: 1e-6 where no
// kink is hit; 3.8e-3 (resnet20's layer-ops gradients, seed 6, against 6.3e-2) and 8.8e-3
// (resnet20 after 3 steps on 4 devices, seed 9, against 3 x 3.1e-2) where one is.
func KinkTolerance(batch, minHW int) float64 {
	return 1 / math.Sqrt(float64(batch*minHW))
}

// requireSpread logs a comparison's measured spread next to its tolerance (the line
// bench/spread.sh collects: "spread: TEST/WHAT MEASURED <= TOL") and fails when it is over.
func RequireSpread(t *testing.T, what string, measured, tol float64) {
	t.Helper()
	t.Logf("spread: %s/%s %.3g <= %.3g", t.Name(), strings.ReplaceAll(what, " ", "_"), measured, tol)
	require.LessOrEqual(t, measured, tol, "%s: spread %.3g is over its tolerance %.3g", what, measured, tol)
}

// requireClose checks that got and want have the same length and agree element by element to
// within tol relative to 1+|want| (an absolute tolerance for values of magnitude <= 1), and logs
// the largest difference as the comparison's spread.
func RequireClose(t *testing.T, want, got []float32, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	worst, at := 0.0, 0
	for i := range want {
		if d := math.Abs(float64(got[i]-want[i])) / (1 + math.Abs(float64(want[i]))); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	if len(want) > 0 {
		require.False(t, math.IsNaN(worst), "%s[%d]: got %g, want %g", what, at, got[at], want[at])
		require.LessOrEqual(t, worst, tol, "%s[%d]: got %g, want %g", what, at, got[at], want[at])
	}
	RequireSpread(t, what, worst, tol)
}

// normRelDiff is ||got-want||₂ / ||want-base||₂: with base nil, relative to want itself; with
// base the starting point, relative to how far want moved from it (an update).
func NormRelDiff(base, want, got []float32) float64 {
	var diff, norm float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		diff += d * d
		w := float64(want[i])
		if base != nil {
			w -= float64(base[i])
		}
		norm += w * w
	}
	if norm == 0 {
		if diff == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(diff / norm)
}

// requireAllNormClose checks normRelDiff(nil, want[i], got[i]) <= tol for several named tensors, logging the worst
// one's spread.
func RequireAllNormClose(t *testing.T, names []string, want, got [][]float32, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	worst, worstName := 0.0, ""
	for i := range want {
		require.Len(t, got[i], len(want[i]), names[i])
		if d := NormRelDiff(nil, want[i], got[i]); d > worst || worstName == "" {
			worst, worstName = d, names[i]
		}
	}
	RequireSpread(t, what+" "+worstName, worst, tol)
}

// spreadSeed is the seed a comparison draws its weights with: def, or $CIFARLAB_SPREAD_SEED,
// which bench/spread.sh varies (another draw puts other pre-activations near a ReLU kink).
func SpreadSeed(t *testing.T, def int64) int64 {
	t.Helper()
	v := os.Getenv("CIFARLAB_SPREAD_SEED")
	if v == "" {
		return def
	}
	seed, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "$CIFARLAB_SPREAD_SEED")
	return seed
}

// spreadDevices are the device counts the device-equality tests compare with one device: 2 and
// 4, or the comma-separated counts of $CIFARLAB_SPREAD_DEVICES (bench/spread.sh adds 8).
func SpreadDevices(t *testing.T) []int {
	t.Helper()
	v := os.Getenv("CIFARLAB_SPREAD_DEVICES")
	if v == "" {
		return []int{2, 4}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(t, err, "$CIFARLAB_SPREAD_DEVICES")
		out = append(out, n)
	}
	return out
}

// sinData returns n deterministic test values scale*sin(i*freq), i = 0..n-1.
func SinData(n int, freq, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(math.Sin(float64(i)*freq) * scale)
	}
	return out
}

// seededStore returns a variable store whose random initializers start from seed, so that a
// comparison's inputs are the same on every run (and its measured spread reproducible).
func SeededStore(t *testing.T, seed int64) *model.Store {
	t.Helper()
	store := model.NewStore()
	require.NoError(t, store.SetRNGStateFromSeed(seed))
	return store
}

// bf16Tolerance bounds the relative L2 difference ||bf16 - f32|| / ||f32|| of a network of depth
// product layers (convolutions and dense layers one after the other). Each layer rounds its two
// operands and its result to bfloat16, at most bf16UnitRoundoff of each value; the products are
// accumulated in float32 (TestPrecisionBF16AccumulatesInFloat32), whose rounding (2^-24) does not
// count at this scale. Three roundings give each layer's output at most 3u of relative error (u
// the unit roundoff; independent roundings over a sum of many products average out rather than
// add, so 3u is generous), and the layers' errors add up at most linearly through ReLU,
// max-pooling, average pooling (1-Lipschitz), batch norm (which rescales signal and error alike)
// and the residual sums. Hence depth*3u: the cnn (3 convolutions + head) 12u = 4.7%, resnet20
// (19 convolutions on its longest path + head) 60u = 23%, against the ~100% of an unrelated
// network. The same bound serves the losses of a few SGD steps: cross-entropy is smooth in the
// logits (its gradient, softmax minus one-hot, has norm at most sqrt(2)), and the weights after a
// few small steps differ by the gradients' rounding, of the same relative size. Measured: logits
// 0.38-0.55%, losses after 3 steps 0.23-1.3% (XLA CPU with AVX-512 or AVX2, and the pure-Go
// backend). The lower bound, 2^-16, sits far below bfloat16's rounding and far above float32's
// (which a float32 run that only claims to be bf16-mixed would show: identical numbers).
func Bf16Tolerance(depth int) (low, high float64) {
	return 1.0 / 65536, float64(depth) * 3 * bf16UnitRoundoff
}

// precisionDevicesTolerance bounds |a-b|/(1+|b|) between 1 and 4 devices for every variable
// after three bf16-mixed SGD steps (learning rate 0.01). Both runs round the same float32
// computation to bfloat16 at the same places, but XLA may keep a value at excess precision
// (skip a float32 -> bfloat16 -> float32 round trip) in one partitioning and not in the other, so
// one value can differ by up to 2u between them (each within u of the exact one; u the unit
// roundoff). Batch-norm moving averages follow batch means of such values, of magnitude about 1
// after the batch norms before them (measured: 1.2e-3 for resnet20); weights move by 0.01 times
// gradients that differ as much, far less (measured: 2.4e-4).
const PrecisionDevicesTolerance = 2 * bf16UnitRoundoff

// bf16UnitRoundoff is bfloat16's unit roundoff: 8 significant bits (7 stored and the implicit
// one), so rounding to nearest changes a value by at most 2^-8 = 0.39% of it.
const bf16UnitRoundoff = 1.0 / 256
