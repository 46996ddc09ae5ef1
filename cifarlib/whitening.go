package cifarlib

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"
)

// airbench94's whitening layer is set from the data, as init_whitening_conv in Keller Jordan's
// airbench (KellerJordan/cifar10-airbench, airbench 0.1.8, utils.py) does before the first step:
// the 2x2x3 patches of the first 5000 training images (normalised as the network sees them),
// their covariance C = PᵀP/n (uncentred), its eigenvectors vᵢ in descending order of eigenvalue
// λᵢ, each scaled to vᵢ/sqrt(λᵢ + 5e-4), and the 12 of them followed by their negatives: 24
// filters. Convolved with the patches, the first 12 give uncorrelated outputs of variance
// λᵢ/(λᵢ+5e-4), nearly 1 for every direction the data spans; the negatives let the GELU after
// it keep both signs. (airbench normalises its images in float16 on the GPU, a relative
// rounding of 2^-11 per pixel; the lab's are float32, as its network sees them.)
const (
	// AirbenchWhiteningImages is how many training images the whitening is computed from: the
	// first 5000 (airbench's train_loader.images[:5000]).
	AirbenchWhiteningImages = 5000
	// AirbenchWhiteningEpsilon is added to each eigenvalue before the scaling (init_whitening_conv's eps).
	AirbenchWhiteningEpsilon = 5e-4
	// AirbenchWhiteningVariable is the path of the whitening filters in the model's store.
	AirbenchWhiteningVariable = "/" + ArchAirbench94 + "/" + AirbenchScopeWhiten + "/conv/weights"
)

// WhiteningError reports whitening filters that cannot be computed or set.
type WhiteningError struct {
	// What is wrong and what to do.
	Reason string
}

// Error implements error.
func (e *WhiteningError) Error() string {
	return "cifarlib: airbench94's whitening filters: " + e.Reason
}

// WhiteningFilters returns airbench94's 24 whitening filters, computed from images [N, 32, 32, 3]
// float32 normalised as the network sees them (e.g. Records.Batch(0, n).Images for a model built
// with the records' Spec: data.Spec's mean and std), as the lab's convolution kernel
// [2, 2, 3, 24] (PyTorch's weight [24, 3, 2, 2] transposed). Filter i and filter i+12 are the
// i-th eigenvector, scaled, and its negative. An eigenvector's sign is arbitrary (PyTorch's
// torch.linalg.eigh gives LAPACK's); here its component of largest magnitude is positive, so
// the set of filters is airbench's and only which of a pair comes first may differ. The
// covariance is accumulated in float64. Images of the wrong shape or dtype return the model's
// input errors (*InputShapeError, *InputDTypeError), no images or non-finite values a
// *WhiteningError.
func WhiteningFilters(images *tensors.Tensor) (*tensors.Tensor, error) {
	if images == nil {
		return nil, &WhiteningError{Reason: "no images: pass the first training images, e.g. records.Batch(0, 5000).Images"}
	}
	if err := checkImages(images.Shape()); err != nil {
		return nil, err
	}
	n := images.Shape().Dimensions[0]
	if n < 1 {
		return nil, &WhiteningError{Reason: "no images: pass the first training images, e.g. records.Batch(0, 5000).Images"}
	}
	pixels, err := tensors.CopyFlatData[float32](images)
	if err != nil {
		return nil, fmt.Errorf("cifarlib: airbench94's whitening filters: %w", err)
	}
	cov, err := patchCovariance(pixels, n)
	if err != nil {
		return nil, err
	}
	return whiteningKernel(cov)
}

// patchCovariance is PᵀP/n over the 2x2 patches of n images [n, 32, 32, 3], each patch
// flattened in the kernel's (ky, kx, c) order, accumulated in float64. The images are summed in
// chunks of whiteningChunk, on all CPUs, and the chunks' sums added in order, so the result does
// not depend on the number of CPUs.
func patchCovariance(pixels []float32, n int) (*mat.SymDense, error) {
	const out = data.ImageHeight - airbenchWhitenKernel + 1
	chunks := make([]patchSums, (n+whiteningChunk-1)/whiteningChunk)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(chunks)) {
		wg.Go(func() {
			for c := int(next.Add(1)) - 1; c < len(chunks); c = int(next.Add(1)) - 1 {
				for img := c * whiteningChunk; img < min(n, (c+1)*whiteningChunk); img++ {
					chunks[c].add(pixels[img*data.ImageBytes : (img+1)*data.ImageBytes])
				}
			}
		})
	}
	wg.Wait()
	var total patchSums
	for _, c := range chunks {
		for a := range total {
			for b := range total[a] {
				total[a][b] += c[a][b]
			}
		}
	}
	patches := float64(n * out * out)
	cov := mat.NewSymDense(airbenchWhitenPatch, nil)
	for a := range airbenchWhitenPatch {
		for b := a; b < airbenchWhitenPatch; b++ {
			c := total[a][b] / patches
			if math.IsNaN(c) || math.IsInf(c, 0) {
				return nil, &WhiteningError{Reason: "the images hold NaN or infinite values: normalise finite pixel values (records.Batch does)"}
			}
			cov.SetSym(a, b, c)
		}
	}
	return cov, nil
}

// whiteningChunk is how many images patchCovariance sums at a time.
const whiteningChunk = 64

// patchSums holds Σ vₐv_b over patches v (the upper triangle, b >= a).
type patchSums [airbenchWhitenPatch][airbenchWhitenPatch]float64

// add adds the 2x2 patches of one image [32, 32, 3].
func (s *patchSums) add(image []float32) {
	const k, side = airbenchWhitenKernel, data.ImageHeight
	var v [airbenchWhitenPatch]float64
	for y := range side - k + 1 {
		for x := range side - k + 1 {
			p := 0
			for ky := range k {
				row := image[((y+ky)*side+x)*data.ImageChannels:]
				for j := range k * data.ImageChannels {
					v[p] = float64(row[j])
					p++
				}
			}
			for a := range airbenchWhitenPatch {
				va := v[a]
				for b := a; b < airbenchWhitenPatch; b++ {
					s[a][b] += va * v[b]
				}
			}
		}
	}
}

// whiteningKernel turns the patch covariance into the [2, 2, 3, 24] kernel (see
// WhiteningFilters).
func whiteningKernel(cov *mat.SymDense) (*tensors.Tensor, error) {
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, &WhiteningError{Reason: "the eigendecomposition of the patch covariance did not converge"}
	}
	values := eig.Values(nil) // ascending
	var vectors mat.Dense
	eig.VectorsTo(&vectors)
	const p, width = airbenchWhitenPatch, AirbenchWhitenWidth
	kernel := make([]float32, p*width)
	for i := range p {
		col := p - 1 - i // descending eigenvalues
		lambda := values[col] + AirbenchWhiteningEpsilon
		if !(lambda > 0) {
			return nil, &WhiteningError{Reason: fmt.Sprintf("eigenvalue %g of the patch covariance is below -eps", values[col])}
		}
		v := mat.Col(nil, col, &vectors)
		largest := slices.MaxFunc(v, func(a, b float64) int { return cmpAbs(a, b) })
		sign := 1.0
		if largest < 0 {
			sign = -1
		}
		scale := sign / math.Sqrt(lambda)
		for j, x := range v {
			kernel[j*width+i] = float32(x * scale)
			kernel[j*width+i+p] = float32(-x * scale)
		}
	}
	return tensors.FromFlatDataAndDimensions(kernel, airbenchWhitenKernel, airbenchWhitenKernel, data.ImageChannels, width), nil
}

// cmpAbs orders by absolute value.
func cmpAbs(a, b float64) int {
	switch a, b := math.Abs(a), math.Abs(b); {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// SetWhiteningFilters writes filters (WhiteningFilters' [2, 2, 3, 24] kernel) into the
// whitening layer of the airbench94 model whose variables store holds (AirbenchWhiteningVariable),
// creating the variable, not trainable, when the model has not been built on store yet.
func SetWhiteningFilters(store *model.Store, filters *tensors.Tensor) error {
	want := []int{airbenchWhitenKernel, airbenchWhitenKernel, data.ImageChannels, AirbenchWhitenWidth}
	if filters == nil || filters.DType() != dtypes.Float32 || !slices.Equal(filters.Shape().Dimensions, want) {
		got := "nil"
		if filters != nil {
			got = fmt.Sprintf("%s %v", strings.ToLower(filters.DType().String()), filters.Shape().Dimensions)
		}
		return &WhiteningError{Reason: fmt.Sprintf("filters are %s, want float32 %v: compute them with WhiteningFilters", got, want)}
	}
	if v := store.GetVariable(AirbenchWhiteningVariable); v != nil {
		if !slices.Equal(v.Shape().Dimensions, want) {
			return &WhiteningError{Reason: fmt.Sprintf("the store's %s is %s, not airbench94's %v", AirbenchWhiteningVariable, v.Shape(), want)}
		}
		return v.SetValue(filters)
	}
	v, err := store.CreateVariable(AirbenchWhiteningVariable, filters)
	if err != nil {
		return fmt.Errorf("cifarlib: airbench94's whitening filters: %w", err)
	}
	v.SetTrainable(false)
	return nil
}

// InitWhitening sets the whitening filters of m, an airbench94 model whose variables store
// holds, from the first AirbenchWhiteningImages images of recs (all of them when it holds
// fewer), normalised as m's graph sees them (WhiteningFiltersOf). A trainer calls it once,
// before the first step of a fresh run (not when it resumes one, nor when a transfer carries
// the weights).
func (m *Model) InitWhitening(store *model.Store, recs *data.Records) error {
	filters, err := m.WhiteningFiltersOf(recs)
	if err != nil {
		return err
	}
	return SetWhiteningFilters(store, filters)
}

// WhiteningFiltersOf computes the whitening filters of m, an airbench94 model, from the first
// AirbenchWhiteningImages images of recs, normalised as m's graph sees them: what InitWhitening
// sets. The same records give the same filters (a process that trains again on them may keep
// them).
func (m *Model) WhiteningFiltersOf(recs *data.Records) (*tensors.Tensor, error) {
	if m.Arch != ArchAirbench94 {
		return nil, &WhiteningError{Reason: fmt.Sprintf("%s has no whitening layer: only %s does", m, ArchAirbench94)}
	}
	if recs == nil || recs.Len() == 0 {
		return nil, &WhiteningError{Reason: "no training records: pass the run's training records"}
	}
	b, err := recs.Batch(0, min(recs.Len(), AirbenchWhiteningImages))
	if err != nil {
		return nil, err
	}
	images := b.Images
	if scale, shift, ok := m.renormalization(recs.Spec); ok {
		pixels := b.Host.Images
		for i := range pixels {
			c := i % data.ImageChannels
			pixels[i] = pixels[i]*scale[c] + shift[c]
		}
		images = tensors.FromFlatDataAndDimensions(pixels, images.Shape().Dimensions...)
	}
	return WhiteningFilters(images)
}
