package cifarlib

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/internal/testenv"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/require"
)

// float64's unit roundoff, 2^-53.
const unitRoundoff64 = 0x1p-53

// whiteningRecords reads testdata/whitening_images.bin: 16 smooth synthetic images that
// cifarlib/interop/testdata/make_airbench_fixtures.py wrote (uint8, channel-planar like CIFAR's records).
func whiteningRecords(t *testing.T) *data.Records {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "whitening_images.bin"))
	require.NoError(t, err)
	recs := data.NewRecords(data.CIFAR10(), "whitening_images.bin", len(raw)/data.ImageBytes)
	copy(recs.Pixels, raw)
	return recs
}

// whiteningFixture is testdata/whitening_filters.json: airbench's get_whitening_parameters, run
// by PyTorch in float64 on the fixture images' patches, normalised the lab's way.
type whiteningFixture struct {
	Eigenvalues []float64
	Filters     [][][][]float64 // PyTorch's [24, 3, 2, 2]
}

// TestWhiteningFiltersMatchAirbench: the filters computed from the fixture images equal
// airbench's own (init_whitening_conv's formula, computed by PyTorch's eigh on the same
// patches in float64), each pair (v, -v) possibly in the other order, as an eigenvector's sign
// is arbitrary.
//
// Tolerance, per element: the lab rounds each float64 value to float32 (at most u·|w|, u =
// 2^-24); the two float64 computations differ by the order of the covariance's sums, at most
// about 4·sqrt(n)·ε·λmax (n patches, ε = 2^-53), which moves a unit eigenvector by that over its
// eigenvalue's gap to the others and its scale 1/sqrt(λ+eps) by that over 2(λ+eps) (first-order
// perturbation); with the fixture's gaps (down to 1.8e-4, λmax = 2.7) that is about 1e-9 of a
// filter's norm. A wrong layout, order or scaling moves elements by O(|w|).
func TestWhiteningFiltersMatchAirbench(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "whitening_filters.json"))
	require.NoError(t, err)
	var want whiteningFixture
	require.NoError(t, json.Unmarshal(raw, &want))
	recs := whiteningRecords(t)
	b, err := recs.Batch(0, recs.Len())
	require.NoError(t, err)
	filters, err := WhiteningFilters(b.Images)
	require.NoError(t, err)
	require.Equal(t, []int{2, 2, 3, 24}, filters.Shape().Dimensions)
	got := tensors.MustCopyFlatData[float32](filters)
	const p = airbenchWhitenPatch
	patches := float64(recs.Len() * 31 * 31)
	lambdaMax := want.Eigenvalues[0]
	perturbation := 4 * math.Sqrt(patches) * unitRoundoff64 * lambdaMax
	// filter o of the fixture at the lab's kernel position j = (ky*2+kx)*3+c.
	fixture := func(o, j int) float64 { return want.Filters[o][j%3][j/6][(j/3)%2] }
	worst := 0.0
	for i := range p {
		gap := math.Inf(1)
		for k, l := range want.Eigenvalues {
			if k != i {
				gap = min(gap, math.Abs(l-want.Eigenvalues[i]))
			}
		}
		var norm float64
		for j := range p {
			norm += fixture(i, j) * fixture(i, j)
		}
		norm = math.Sqrt(norm)
		rel := perturbation/gap + perturbation/(2*(want.Eigenvalues[i]+AirbenchWhiteningEpsilon))
		distance := func(swap bool) (float64, bool) {
			d, ok := 0.0, true
			for j := range p {
				for half := range 2 {
					o := i + half*p
					w := fixture(o, j)
					if swap {
						w = fixture(i+(1-half)*p, j)
					}
					diff := math.Abs(float64(got[j*AirbenchWhitenWidth+o]) - w)
					tol := 0x1p-24*math.Abs(w) + rel*norm
					ok = ok && diff <= tol
					d = max(d, diff/tol)
				}
			}
			return d, ok
		}
		d, ok := distance(false)
		if !ok {
			d, ok = distance(true)
		}
		require.True(t, ok, "filter %d (eigenvalue %g): %.3g of its tolerance away from airbench's, either sign", i, want.Eigenvalues[i], d)
		worst = max(worst, d)
	}
	testenv.RequireSpread(t, "filters_in_tolerances", worst, 1)
}

// patchCovarianceFloat64 is the uncentred covariance of the 2x2 patches of images 32x32x3
// images (channels last), summed, and the number of patches n, in float64.
func patchCovarianceFloat64(pixels []float32, images int) (cov [airbenchWhitenPatch][airbenchWhitenPatch]float64, n int) {
	const p = airbenchWhitenPatch
	for img := range images {
		for y := range 31 {
			for x := range 31 {
				var v [p]float64
				for ky := range 2 {
					for kx := range 2 {
						for c := range 3 {
							v[(ky*2+kx)*3+c] = float64(pixels[((img*32+y+ky)*32+x+kx)*3+c])
						}
					}
				}
				for a := range p {
					for bb := range p {
						cov[a][bb] += v[a] * v[bb]
					}
				}
				n++
			}
		}
	}
	return cov, n
}

// TestWhiteningFiltersWhiten: the first 12 filters applied to the patches they were computed
// from give outputs with covariance W C Wᵀ = diag(λᵢ/(λᵢ+eps)): uncorrelated, of variance
// nearly 1 for every eigenvalue well above eps; the other 12 are their negatives, exactly.
// The covariance C is computed here in float64, independently of the library's code.
//
// Tolerance, per element (i, j): the filters are float32, each within u·|w| (u = 2^-24) of the
// float64 values whose product is exact up to the eigensolver's residual, so the product moves by
// at most 2u·Σ|wᵢₖ||Cₖₗ||wⱼₗ| (to first order), plus the float64 residual, 64·12·ε times the same
// sum (ε = 2^-53, a backward-stable eigensolver of a 12x12 matrix). A filter scaled or
// ordered wrongly misses by O(1).
func TestWhiteningFiltersWhiten(t *testing.T) {
	recs := whiteningRecords(t)
	b, err := recs.Batch(0, recs.Len())
	require.NoError(t, err)
	filters, err := WhiteningFilters(b.Images)
	require.NoError(t, err)
	w := tensors.MustCopyFlatData[float32](filters)
	const p = airbenchWhitenPatch
	for j := range p {
		for i := range p {
			require.Equal(t, -w[j*AirbenchWhitenWidth+i], w[j*AirbenchWhitenWidth+i+p], "filter %d+12 is filter %d negated", i, i)
		}
	}
	cov, n := patchCovarianceFloat64(b.Host.Images, recs.Len()) // in float64, from the pixels directly
	var lambdas []float64
	worst := 0.0
	for i := range p {
		for j := range p {
			var got, bound float64
			for k := range p {
				for l := range p {
					c := cov[k][l] / float64(n)
					wi, wj := float64(w[k*AirbenchWhitenWidth+i]), float64(w[l*AirbenchWhitenWidth+j])
					got += wi * c * wj
					bound += math.Abs(wi * c * wj)
				}
			}
			want := 0.0
			if i == j {
				// λ/(λ+eps) = 1 - eps·|w|²: the filter is v/sqrt(λ+eps) with |v| = 1.
				var norm2 float64
				for k := range p {
					norm2 += float64(w[k*AirbenchWhitenWidth+i]) * float64(w[k*AirbenchWhitenWidth+i])
				}
				want = 1 - AirbenchWhiteningEpsilon*norm2
				lambdas = append(lambdas, AirbenchWhiteningEpsilon*want/(1-want))
			}
			tol := (2*0x1p-24 + 64*12*unitRoundoff64) * bound
			require.InDelta(t, want, got, tol, "(W C Wᵀ)[%d][%d]", i, j)
			worst = max(worst, math.Abs(got-want)/tol)
		}
	}
	testenv.RequireSpread(t, "whitened_covariance_in_tolerances", worst, 1)
	for i := 1; i < p; i++ {
		require.GreaterOrEqual(t, lambdas[i-1], lambdas[i], "filters in descending order of eigenvalue")
	}
	require.Greater(t, lambdas[p-1]/(lambdas[p-1]+AirbenchWhiteningEpsilon), 0.98,
		"the smallest direction is whitened to variance near 1 (eps is small against it)")
}

// TestInitWhitening: InitWhitening writes WhiteningFilters of the records' first images into the
// airbench94 store's whitening variable, not trainable, which the model then uses as they are;
// other architectures and bad input are refused with errors saying why.
func TestInitWhitening(t *testing.T) {
	recs := whiteningRecords(t)
	m, err := NewModel(data.CIFAR10(), ArchAirbench94).Backend(labtest.Backend(t)).Done()
	require.NoError(t, err)
	store := model.NewStore()
	require.NoError(t, m.InitWhitening(store, recs))
	b, err := recs.Batch(0, recs.Len())
	require.NoError(t, err)
	want, err := WhiteningFilters(b.Images)
	require.NoError(t, err)
	wantValues := tensors.MustCopyFlatData[float32](want)
	require.Equal(t, wantValues, variableValues(t, store, AirbenchWhiteningVariable))
	airbenchStore(t, m, store, tensors.FromShape(shapes.Make(dtypes.Float32, 1, 32, 32, 3)))
	require.Equal(t, wantValues, variableValues(t, store, AirbenchWhiteningVariable), "building the model keeps the filters")
	require.False(t, store.GetVariable(AirbenchWhiteningVariable).Trainable)

	// Set again on a store where the model was built: the variable is overwritten.
	zero := tensors.FromShape(shapes.Make(dtypes.Float32, 2, 2, 3, 24))
	require.NoError(t, SetWhiteningFilters(store, zero))
	require.Equal(t, make([]float32, 2*2*3*24), variableValues(t, store, AirbenchWhiteningVariable))

	var we *WhiteningError
	cnn, err := NewModel(data.CIFAR10(), ArchCNN).Done()
	require.NoError(t, err)
	require.ErrorAs(t, cnn.InitWhitening(model.NewStore(), recs), &we)
	require.EqualError(t, we, "cifarlib: airbench94's whitening filters: cnn for cifar10 (10 classes) has no whitening layer: only airbench94 does")
	require.ErrorAs(t, m.InitWhitening(model.NewStore(), data.NewRecords(data.CIFAR10(), "empty", 0)), &we)
	require.ErrorAs(t, SetWhiteningFilters(model.NewStore(), tensors.FromShape(shapes.Make(dtypes.Float32, 24, 3, 2, 2))), &we)
	require.Contains(t, we.Error(), "filters are float32 [24 3 2 2], want float32 [2 2 3 24]: compute them with WhiteningFilters")
	_, err = WhiteningFilters(tensors.FromShape(shapes.Make(dtypes.Float32, 2, 3, 32, 32)))
	var ise *InputShapeError
	require.ErrorAs(t, err, &ise)
	require.True(t, ise.ChannelsFirst)
	nan := make([]float32, data.ImageBytes)
	nan[5] = float32(math.NaN())
	_, err = WhiteningFilters(tensors.FromFlatDataAndDimensions(nan, 1, 32, 32, 3))
	require.ErrorAs(t, err, &we)
}
