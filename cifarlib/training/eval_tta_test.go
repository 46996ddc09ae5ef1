package training

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// ttaLinear is a linear model with weights set by the test, and the weights on the host.
type ttaLinear struct {
	m      *cifarlib.Model
	store  *model.Store
	ev     *evalProgram
	w      []float32 // [data.ImageBytes][classes], row-major, pixel index (y*32+x)*3+c
	b      []float32
	scaleW float64
}

const ttaClasses = 10

// newTTALinear returns a linear CIFAR-10 model with random weights of magnitude up to 0.02 and
// biases up to 0.5; with symmetric, the weight of pixel (y, x) equals that of (y, 31-x), so
// the model is exactly mirror-symmetric as a function (its sums only run in another order).
func newTTALinear(t *testing.T, backend compute.Backend, symmetric bool, seed uint64) *ttaLinear {
	t.Helper()
	m, err := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchLinear).Done()
	require.NoError(t, err)
	l := &ttaLinear{m: m, store: model.NewStore(), scaleW: 0.02}
	l.ev, err = newEvalProgram(backend, m, l.store)
	require.NoError(t, err)
	one, _ := labtest.TrainTestRecords(t, data.CIFAR10(), 5, 1, 1)
	_, err = l.ev.Evaluate(context.Background(), one, EvalOptions{}) // Creates the variables.
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(seed, 1))
	l.w = make([]float32, data.ImageBytes*ttaClasses)
	for y := range data.ImageHeight {
		for x := range data.ImageWidth {
			for c := range data.ImageChannels {
				for k := range ttaClasses {
					src := x
					if symmetric && x >= data.ImageWidth/2 {
						src = data.ImageWidth - 1 - x
					}
					i := ((y*data.ImageWidth+x)*data.ImageChannels+c)*ttaClasses + k
					if src == x {
						l.w[i] = float32(l.scaleW * (2*rng.Float64() - 1))
					} else {
						l.w[i] = l.w[((y*data.ImageWidth+src)*data.ImageChannels+c)*ttaClasses+k]
					}
				}
			}
		}
	}
	l.b = make([]float32, ttaClasses)
	for k := range l.b {
		l.b[k] = float32(rng.Float64() - 0.5)
	}
	require.NoError(t, l.store.GetVariable("/linear/head/dense/weights").SetValue(tensors.FromFlatDataAndDimensions(l.w, data.ImageBytes, ttaClasses)))
	require.NoError(t, l.store.GetVariable("/linear/head/dense/biases").SetValue(tensors.FromFlatDataAndDimensions(l.b, ttaClasses)))
	return l
}

// logits runs ttaLogits of level tta on images in a program of its own.
func (l *ttaLinear) logits(t *testing.T, backend compute.Backend, images *tensors.Tensor, tta int) [][]float32 {
	t.Helper()
	exec, err := model.NewExec(backend, l.store, func(scope *model.Scope, images *graph.Node) *graph.Node {
		scope.Store().SetTraining(images.Graph(), false)
		return ttaLogits(l.m, scope, images, tta)
	})
	require.NoError(t, err)
	defer exec.Finalize()
	out, err := exec.Call(images)
	require.NoError(t, err)
	return out[0].Value().([][]float32)
}

// host returns, in float64, the model's logits of the HWC image img and Σ|w·x| + |b| per class
// (what bounds the rounding of the float32 dot product).
func (l *ttaLinear) host(img []float32) (logits, magnitude []float64) {
	logits, magnitude = make([]float64, ttaClasses), make([]float64, ttaClasses)
	for k := range ttaClasses {
		logits[k], magnitude[k] = float64(l.b[k]), math.Abs(float64(l.b[k]))
	}
	for i, v := range img {
		for k := range ttaClasses {
			p := float64(v) * float64(l.w[i*ttaClasses+k])
			logits[k] += p
			magnitude[k] += math.Abs(p)
		}
	}
	return logits, magnitude
}

// sumTol bounds how far a float32 sum of n terms (in any order) lies from the exact sum,
// relative to the sum of the terms' magnitudes: Higham and Mary's probabilistic bound
// λ·sqrt(n)·u, with λ = 6, which holds for one sum with probability at least 1-2·exp(-λ²/2)
// = 1-3e-8 (the worst case, n·u, is 50 times looser at n = 3072 and would let a wrong pixel
// through).
func sumTol(n int) float64 {
	const u, lambda = 0x1p-24, 6
	return lambda * math.Sqrt(float64(n)) * u
}

// hostView returns the HWC image img translated by shift on both axes with reflect padding
// (output (y, x) reads (y+shift, x+shift); -1 reads 1, 32 reads 30), then mirrored left-right
// if mirror (airbench's order: infer_mirror of the crop), with explicit index arithmetic.
func hostView(img []float32, mirror bool, shift int) []float32 {
	const h, w, ch = data.ImageHeight, data.ImageWidth, data.ImageChannels
	reflect := func(i, n int) int {
		switch {
		case i == -1:
			return 1
		case i == n:
			return n - 2
		}
		return i
	}
	out := make([]float32, len(img))
	for y := range h {
		for x := range w {
			cx := x
			if mirror {
				cx = w - 1 - x
			}
			sy, sx := reflect(y+shift, h), reflect(cx+shift, w)
			copy(out[(y*w+x)*ch:(y*w+x+1)*ch], img[(sy*w+sx)*ch:(sy*w+sx+1)*ch])
		}
	}
	return out
}

// hostTTA is airbench's infer_mirror_translate on the host, in float64, for one image, with
// the rounding bound of the float32 result: each view's dot product (3072 products and the
// bias) and the weighted sum of the six (5 more additions; the weights are powers of two), as
// one sum of 3078 terms bounded by the largest view's magnitudes.
func (l *ttaLinear) hostTTA(img []float32) (logits, tol []float64) {
	mirrorOf := func(shift int) (avg, mag []float64) {
		a, ma := l.host(hostView(img, false, shift))
		b, mb := l.host(hostView(img, true, shift))
		avg, mag = make([]float64, ttaClasses), make([]float64, ttaClasses)
		for k := range avg {
			avg[k] = 0.5*a[k] + 0.5*b[k]
			mag[k] = math.Max(ma[k], mb[k])
		}
		return avg, mag
	}
	center, m0 := mirrorOf(0)
	up, m1 := mirrorOf(-1) // airbench's crop at (0, 0) of the image padded by 1
	down, m2 := mirrorOf(1)
	logits, tol = make([]float64, ttaClasses), make([]float64, ttaClasses)
	for k := range logits {
		logits[k] = 0.5*center[k] + 0.5*(up[k]+down[k])/2
		tol[k] = sumTol(data.ImageBytes+1+5) * math.Max(m0[k], math.Max(m1[k], m2[k]))
	}
	return logits, tol
}

// hostImages decodes recs as the evaluation does, as a tensor and per-image HWC slices.
func hostImages(t *testing.T, recs *data.Records) (*tensors.Tensor, [][]float32) {
	t.Helper()
	b, err := recs.Batch(0, recs.Len())
	require.NoError(t, err)
	flat := tensors.MustCopyFlatData[float32](b.Images)
	imgs := make([][]float32, recs.Len())
	for i := range imgs {
		imgs[i] = flat[i*data.ImageBytes : (i+1)*data.ImageBytes]
	}
	return b.Images, imgs
}

// TestTTANoneIsTheModel: level 0 is the model's own logits, bit for bit.
func TestTTANoneIsTheModel(t *testing.T) {
	backend := labtest.Backend(t)
	l := newTTALinear(t, backend, false, 1)
	_, test := labtest.TrainTestRecords(t, data.CIFAR10(), 5, 6, 2)
	images, _ := hostImages(t, test)
	want, err := l.m.Logits(backend, l.store, images)
	require.NoError(t, err)
	require.Equal(t, want.Value(), l.logits(t, backend, images, TTANone))
}

// TestTTAMirrorOfMirrorSymmetricModel: on a model that is mirror-symmetric, TTAMirror gives
// TTANone's logits and evaluation; on one that is not, it does not.
func TestTTAMirrorOfMirrorSymmetricModel(t *testing.T) {
	backend := labtest.Backend(t)
	_, test := labtest.TrainTestRecords(t, data.CIFAR10(), 5, 12, 3)
	images, imgs := hostImages(t, test)

	sym := newTTALinear(t, backend, true, 4)
	none, mirrored := sym.logits(t, backend, images, TTANone), sym.logits(t, backend, images, TTAMirror)
	var worst, worstTol float64
	for i, img := range imgs {
		_, mag := sym.host(img)
		for k := range ttaClasses {
			// f(x) and f(mirror(x)) are the same sum in two orders, each within
			// sumTol(3073)·Σ|w·x| of the exact one; the average adds one rounding.
			tol := 2*sumTol(data.ImageBytes+1)*mag[k] + 0x1p-24*math.Abs(float64(none[i][k]))
			d := math.Abs(float64(mirrored[i][k] - none[i][k]))
			require.LessOrEqual(t, d, tol, "image %d class %d: TTAMirror %g, TTANone %g", i, k, mirrored[i][k], none[i][k])
			worst, worstTol = max(worst, d), max(worstTol, tol)
		}
	}
	t.Logf("spread: symmetric model, |TTAMirror - TTANone| at most %.3g (bound %.3g)", worst, worstTol)

	ctx := context.Background()
	r0, err := sym.ev.Evaluate(ctx, test, EvalOptions{BatchSize: 5})
	require.NoError(t, err)
	r1, err := sym.ev.Evaluate(ctx, test, EvalOptions{BatchSize: 5, TTA: TTAMirror})
	require.NoError(t, err)
	require.Equal(t, r0.Accuracy, r1.Accuracy)
	require.InDelta(t, r0.Loss, r1.Loss, 2*worstTol, "the cross-entropy moves by at most twice its logits' change")

	asym := newTTALinear(t, backend, false, 4)
	none, mirrored = asym.logits(t, backend, images, TTANone), asym.logits(t, backend, images, TTAMirror)
	require.Greater(t, math.Abs(float64(mirrored[0][0]-none[0][0])), 10*worstTol, "an asymmetric model must see the mirror")
}

// TestTTAMirrorTranslateMatchesHost: TTAMirrorTranslate's logits are airbench's average of
// six views computed on the host, and Evaluate's loss and accuracy are those of these logits,
// also for a padded last batch.
func TestTTAMirrorTranslateMatchesHost(t *testing.T) {
	backend := labtest.Backend(t)
	l := newTTALinear(t, backend, false, 5)
	_, test := labtest.TrainTestRecords(t, data.CIFAR10(), 5, 13, 4)
	images, imgs := hostImages(t, test)
	got := l.logits(t, backend, images, TTAMirrorTranslate)

	var lossSum float64
	hits := 0
	var worst, worstTol, maxTol float64
	for i, img := range imgs {
		want, tol := l.hostTTA(img)
		best, lse := 0, 0.0
		for k := range ttaClasses {
			d := math.Abs(float64(got[i][k]) - want[k])
			require.LessOrEqual(t, d, tol[k], "image %d class %d: graph %g, host %g", i, k, got[i][k], want[k])
			worst, worstTol, maxTol = max(worst, d), max(worstTol, tol[k]), max(maxTol, tol[k])
			if want[k] > want[best] {
				best = k
			}
			lse += math.Exp(want[k])
		}
		for k := range ttaClasses {
			require.True(t, k == best || want[best]-want[k] > 2*tol[k], "image %d: near tie, pick other data", i)
		}
		label := test.Label(i)
		lossSum += math.Log(lse) - want[label]
		if best == label {
			hits++
		}
	}
	t.Logf("spread: TTAMirrorTranslate against the host's float64 average at most %.3g (bound %.3g)", worst, worstTol)

	res, err := l.ev.Evaluate(context.Background(), test, EvalOptions{BatchSize: 5, TTA: TTAMirrorTranslate})
	require.NoError(t, err)
	require.Equal(t, 13, res.Examples)
	require.Equal(t, TTAMirrorTranslate, res.TTA)
	require.Contains(t, res.Summary(), ", test-time augmentation mirror+translate [SYNTHETIC cifar10 (generated images, not real accuracy), head 10]")
	require.Equal(t, float64(hits)/13, res.Accuracy)
	// The cross-entropy moves by at most twice its logits' error, plus its own rounding.
	require.InDelta(t, lossSum/13, res.Loss, 2*maxTol+1e-5)
	// The translated views differ: the level is not TTAMirror's.
	mirrorOnly := l.logits(t, backend, images, TTAMirror)
	require.Greater(t, math.Abs(float64(mirrorOnly[0][0]-got[0][0])), 10*maxTol)
}

// TestTTAOnDevices: TTAMirrorTranslate on 2 XLA CPU devices evaluates as on one.
func TestTTAOnDevices(t *testing.T) {
	backend := devicesTestBackend(t, 2)
	l := newTTALinear(t, backend, false, 6)
	_, test := labtest.TrainTestRecords(t, data.CIFAR10(), 5, 13, 5)
	one, err := l.ev.Evaluate(context.Background(), test, EvalOptions{BatchSize: 6, TTA: TTAMirrorTranslate})
	require.NoError(t, err)
	two, err := l.ev.Evaluate(context.Background(), test, EvalOptions{BatchSize: 6, TTA: TTAMirrorTranslate, Devices: 2})
	require.NoError(t, err)
	require.Equal(t, one.Accuracy, two.Accuracy)
	require.Equal(t, one.Confusion, two.Confusion)
	// Each example's logits are computed on one device in both: the same sums, in an order
	// XLA may pick differently per program (testenv.TolReorder's bound for one shallow pass).
	require.InDelta(t, one.Loss, two.Loss, 1e-4*math.Max(1, one.Loss))
}

func TestTTALevelError(t *testing.T) {
	backend := labtest.Backend(t)
	l := newTTALinear(t, backend, false, 7)
	_, test := labtest.TrainTestRecords(t, data.CIFAR10(), 5, 2, 6)
	for _, level := range []int{-1, 3} {
		_, err := l.ev.Evaluate(context.Background(), test, EvalOptions{TTA: level})
		require.ErrorContains(t, err, "is not a test-time augmentation level: use TTANone (0), TTAMirror (1) or TTAMirrorTranslate (2)")
	}
}
