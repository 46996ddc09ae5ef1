// Command convim2col measures, on one backend, a 3x3 "same" convolution's forward pass and its
// gradients (with respect to the input and the kernel) computed two ways:
//
//   - conv: graph.Convolve, as cifarlib's layers use it (GoMLX's Convolution layer); on the pure-Go
//     backend this runs compute's direct convolution loop (execConvNoDilationGeneric), and the
//     kernel gradient is another such convolution with batch and channel axes swapped
//     (convVJPWrtKernel in gomlx core/graph/ops_convolve.go);
//   - im2col: the same convolution written with graph ops: the 9 shifted copies of the
//     zero-padded input are concatenated on the channel axis ([B*H*W, 9*Cin]) and multiplied by the
//     kernel reshaped to [9*Cin, Cout] with graph.Dot, so the forward pass and both gradients are
//     matrix multiplications (the pure-Go backend has SIMD matmul kernels) plus slices and pads.
//
// It checks that both give the same numbers and prints the median times. With -model cnn it
// also times a whole training step of cifarlib's cnn against the same network with im2col
// convolutions (same variable names and shapes, so checkpoints are interchangeable). It is an
// experiment for issue 8 (where the pure-Go backend's convolution time goes), not part of the
// library.
//
//	go run ./bench/convim2col -backend go -batch 32
//	go run ./bench/convim2col -backend go -batch 32 -model cnn
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// im2colConv3x3 is a 3x3, stride 1, "same"-padded convolution of x [B, H, W, Cin] with kernel
// [3, 3, Cin, Cout], as slices, a concatenation and one matmul.
func im2colConv3x3(x, kernel *graph.Node) *graph.Node {
	dims := x.Shape().Dimensions
	b, h, w, c := dims[0], dims[1], dims[2], dims[3]
	cout := kernel.Shape().Dimensions[3]
	g := x.Graph()
	zRow := graph.Zeros(g, shapes.Make(x.DType(), b, 1, w, c))
	xp := graph.Concatenate([]*graph.Node{zRow, x, zRow}, 1) // [B, H+2, W, C]
	zCol := graph.Zeros(g, shapes.Make(x.DType(), b, h+2, 1, c))
	xp = graph.Concatenate([]*graph.Node{zCol, xp, zCol}, 2) // [B, H+2, W+2, C]
	patches := make([]*graph.Node, 0, 9)
	for ky := range 3 {
		for kx := range 3 {
			patches = append(patches, graph.Slice(xp, graph.AxisRange(), graph.AxisRange(ky, ky+h),
				graph.AxisRange(kx, kx+w), graph.AxisRange()))
		}
	}
	cols := graph.Reshape(graph.Concatenate(patches, 3), b*h*w, 9*c)
	y := graph.Dot(cols, graph.Reshape(kernel, 9*c, cout)).Product()
	return graph.Reshape(y, b, h, w, cout)
}

func main() {
	backendName := flag.String("backend", "go", "cifarlib backend name")
	batch := flag.Int("batch", 32, "batch size")
	steps := flag.Int("steps", 5, "timed runs (median)")
	layerTable := flag.Bool("layers", true, "time the single layers")
	layerSet := flag.String("layerset", "cnn", "layer shapes: cnn (cnn's 3 convolutions and 2 ResNet-20-like ones) or resnet18 (its 3x3 stride-1 convolutions)")
	modelName := flag.String("model", "", "also time a cnn training step with both convolutions (\"cnn\")")
	flag.Parse()
	backend, err := backends.New(*backendName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *modelName == "cnn" {
		defer timeCNN(backend, *batch, *steps)
	}
	if !*layerTable {
		return
	}
	fmt.Printf("backend %s, batch %d, median of %d runs; fwd+grad = output, d/dx and d/dkernel of sum(y*y)\n",
		backends.Name(backend), *batch, *steps)
	fmt.Printf("%-22s %12s %12s %12s %12s %8s  %s\n", "layer [H W Cin->Cout]", "conv fwd ms", "im2col fwd", "conv f+g ms", "im2col f+g", "speedup", "max |diff|")
	type layer struct{ hw, cin, cout int }
	set := []layer{{32, 3, 16}, {16, 16, 32}, {8, 32, 64}, {32, 16, 16}, {16, 64, 64}}
	if *layerSet == "resnet18" {
		set = []layer{{32, 64, 64}, {16, 128, 128}, {8, 256, 256}, {4, 512, 512}}
	}
	for _, l := range set {
		x := make([]float32, *batch*l.hw*l.hw*l.cin)
		for i := range x {
			x[i] = float32(math.Sin(float64(i) * 0.013))
		}
		k := make([]float32, 9*l.cin*l.cout)
		for i := range k {
			k[i] = float32(math.Cos(float64(i)*0.07)) * 0.1
		}
		xt := tensors.FromFlatDataAndDimensions(x, *batch, l.hw, l.hw, l.cin)
		kt := tensors.FromFlatDataAndDimensions(k, 3, 3, l.cin, l.cout)
		conv := func(x, k *graph.Node) *graph.Node { return graph.Convolve(x, k).PadSame().Done() }
		var results [2][]*tensors.Tensor
		var fwdMS, allMS [2]float64
		for i, f := range []func(x, k *graph.Node) *graph.Node{conv, im2colConv3x3} {
			fwd := graph.MustNewExec(backend, func(x, k *graph.Node) *graph.Node { return f(x, k) })
			all := graph.MustNewExec(backend, func(x, k *graph.Node) []*graph.Node {
				y := f(x, k)
				loss := graph.ReduceAllSum(graph.Mul(y, y))
				grads := graph.Gradient(loss, x, k)
				return []*graph.Node{y, grads[0], grads[1]}
			})
			fwdMS[i] = timeIt(*steps, func() { fwd.MustExec(xt, kt)[0].FinalizeAll() })
			allMS[i] = timeIt(*steps, func() {
				for _, t := range all.MustExec(xt, kt) {
					t.FinalizeAll()
				}
			})
			results[i] = all.MustExec(xt, kt)
		}
		gradX := graph.MustNewExec(backend, func(x, k *graph.Node) *graph.Node {
			y := conv(x, k)
			return graph.Gradient(graph.ReduceAllSum(graph.Mul(y, y)), x)[0]
		})
		gradK := graph.MustNewExec(backend, func(x, k *graph.Node) *graph.Node {
			y := conv(x, k)
			return graph.Gradient(graph.ReduceAllSum(graph.Mul(y, y)), k)[0]
		})
		dxMS := timeIt(*steps, func() { gradX.MustExec(xt, kt)[0].FinalizeAll() })
		dkMS := timeIt(*steps, func() { gradK.MustExec(xt, kt)[0].FinalizeAll() })
		var maxDiff float64
		for j := range results[0] {
			a, b := tensors.MustCopyFlatData[float32](results[0][j]), tensors.MustCopyFlatData[float32](results[1][j])
			for n := range a {
				maxDiff = max(maxDiff, math.Abs(float64(a[n]-b[n]))/(1+math.Abs(float64(a[n]))))
			}
		}
		fmt.Printf("%-22s %12.1f %12.1f %12.1f %12.1f %7.1fx  %.1e\n", fmt.Sprintf("%dx%d %d->%d", l.hw, l.hw, l.cin, l.cout),
			fwdMS[0], fwdMS[1], allMS[0], allMS[1], allMS[0]/allMS[1], maxDiff)
		fmt.Printf("%-22s %12.1f %12.1f   (forward+d/dx and forward+d/dk, graph.Convolve)\n", "", dxMS, dkMS)
	}
}

// timeIt runs fn once untimed (compilation), then steps times, and returns the median in ms.
func timeIt(steps int, fn func()) float64 {
	fn()
	times := make([]float64, steps)
	for i := range times {
		start := time.Now()
		fn()
		times[i] = float64(time.Since(start).Microseconds()) / 1000
	}
	sort.Float64s(times)
	return times[steps/2]
}

// cnnIm2col is cifarlib's cnn (arch_cnn.go) with im2col convolutions; the variables have the
// names and shapes layers.Convolution gives them (conv/weights [3, 3, Cin, Cout], conv/biases).
func cnnIm2col(scope *model.Scope, _ any, inputs []*graph.Node) []*graph.Node {
	x := inputs[0]
	scope = scope.In("cnn")
	for i, channels := range []int{16, 32, 64} {
		s := scope.In("conv%d", i+1).In("conv")
		cin := x.Shape().Dimensions[3]
		w := s.VariableWithShape("weights", shapes.Make(x.DType(), 3, 3, cin, channels)).NodeValue(x.Graph())
		b := s.VariableWithShape("biases", shapes.Make(x.DType(), channels)).NodeValue(x.Graph())
		x = graph.Add(im2colConv3x3(x, w), graph.Reshape(b, 1, 1, 1, channels))
		x = activation.Relu(x)
		x = graph.MaxPool(x).Window(2).Done()
	}
	dims := x.Shape().Dimensions
	x = graph.Reshape(x, dims[0], dims[1]*dims[2]*dims[3])
	return []*graph.Node{layers.DenseWithBias(scope.In("head"), x, 10)}
}

// timeCNN times one SGD training step of cifarlib's cnn and of cnnIm2col.
func timeCNN(backend compute.Backend, batch, steps int) {
	m, err := cifarlib.NewModel(data.CIFAR10(), cifarlib.ArchCNN).Backend(backend).Done()
	if err != nil {
		panic(err)
	}
	images := make([]float32, batch*data.ImageBytes)
	for i := range images {
		images[i] = float32(math.Sin(float64(i) * 0.0137))
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	b := train.Batch{Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(images, batch, 32, 32, 3)},
		Labels: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(labels, batch, 1)}}
	fmt.Printf("\ncnn training step, batch %d (plain SGD, guarded loss), median of %d:\n", batch, steps)
	for _, v := range []struct {
		name string
		fn   func(*model.Scope, any, []*graph.Node) []*graph.Node
	}{{"graph.Convolve (cifarlib's cnn)", m.ModelFn}, {"im2col + Dot", cnnIm2col}} {
		trainer := train.NewTrainer(backend, model.NewStore(), v.fn, m.LossFn(cifarlib.GuardAll),
			optimizer.StochasticGradientDescent().WithLearningRate(0.01).WithDecay(false).Done(), nil, nil)
		loss := 0.0
		ms := timeIt(steps, func() {
			metrics, err := trainer.TrainStep(b)
			if err != nil {
				panic(err)
			}
			loss = float64(tensors.ToScalar[float32](metrics[0]))
		})
		fmt.Printf("  %-32s %9.1f ms  (loss %.4f)\n", v.name, ms, loss)
	}
}
