package interop

// Layout changes between PyTorch's tensors and the lab's variables; each is a permutation of
// the values, so a round trip is exact.

// convToLab turns a PyTorch convolution kernel [out, in, kh, kw] into the lab's [kh, kw, in, out].
func convToLab(w []float32, shape []int) []float32 { return permuteConv(w, shape, true) }

// convToTorch is convToLab's inverse; shape is PyTorch's [out, in, kh, kw].
func convToTorch(w []float32, shape []int) []float32 { return permuteConv(w, shape, false) }

// permuteConv moves a kernel between PyTorch's [out, in, kh, kw] (shape) and the lab's
// [kh, kw, in, out], towards the lab when toLab.
func permuteConv(w []float32, shape []int, toLab bool) []float32 {
	o, in, kh, kw := shape[0], shape[1], shape[2], shape[3]
	out := make([]float32, len(w))
	for a := range o {
		for b := range in {
			for y := range kh {
				for x := range kw {
					t, l := ((a*in+b)*kh+y)*kw+x, ((y*kw+x)*in+b)*o+a
					if toLab {
						out[l] = w[t]
					} else {
						out[t] = w[l]
					}
				}
			}
		}
	}
	return out
}

// cnnFlatten is the cnn head's input layout: 64 channels of 4 x 4.
const cnnFlatC, cnnFlatHW = 64, 16

// labInput maps a PyTorch input index of a linear layer to the lab's: the identity, or for the
// cnn's head PyTorch's C x H x W flatten order to the lab's H x W x C.
func labInput(i int, flatten bool) int {
	if !flatten {
		return i
	}
	c, hw := i/cnnFlatHW, i%cnnFlatHW
	return hw*cnnFlatC + c
}

// linearToLab turns a PyTorch Linear weight [out, in] into the lab's [in, out].
func linearToLab(w []float32, shape []int, flatten bool) []float32 {
	return permuteLinear(w, shape, flatten, true)
}

// linearToTorch is linearToLab's inverse; shape is PyTorch's [out, in].
func linearToTorch(w []float32, shape []int, flatten bool) []float32 {
	return permuteLinear(w, shape, flatten, false)
}

// permuteLinear moves a Linear weight between PyTorch's [out, in] (shape) and the lab's
// [in, out] (inputs reordered by labInput), towards the lab when toLab.
func permuteLinear(w []float32, shape []int, flatten, toLab bool) []float32 {
	o, in := shape[0], shape[1]
	out := make([]float32, len(w))
	for a := range o {
		for b := range in {
			t, l := a*in+b, labInput(b, flatten)*o+a
			if toLab {
				out[l] = w[t]
			} else {
				out[t] = w[l]
			}
		}
	}
	return out
}
