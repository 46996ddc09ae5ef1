// Command gpusmoke runs the kernel smoke notebook's forward pass without Jupyter: the small
// CNN on 8 synthetic CIFAR-10 images, on the backend named by -backend (default "cuda").
// kernel/gpu-smoke.sh runs it on a GPU machine before trying the notebook itself, so a
// failure can be told apart: plugin and libraries, cifarlib's backend selection, or the kernel.
//
// With -raw it skips backends.New and asks go-xla directly for the plugin file given
// to -plugin (GOMLX_BACKEND=xla:/path/to/xla_cuda_plugin.so style), to check the plugin alone.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func main() {
	name := flag.String("backend", "cuda", "cifarlib backend name")
	raw := flag.Bool("raw", false, "load -plugin with go-xla directly instead of backends.New")
	plugin := flag.String("plugin", "", "absolute path of the PJRT plugin for -raw")
	flag.Parse()
	start := time.Now()
	var backend compute.Backend
	var err error
	if *raw {
		xla.EnableAutoInstall(false)
		backend, err = xla.New(*plugin)
	} else {
		backend, err = backends.New(*name)
	}
	check("backend", err)
	fmt.Printf("backend: %s (%.1f s)\n", backends.Name(backend), time.Since(start).Seconds())

	spec := data.CIFAR10()
	m, err := cifarlib.NewModel(spec, cifarlib.ArchCNN).Backend(backend).Done()
	check("model", err)
	const batch = 8
	recs, err := data.SynthesizeRecords(spec, data.SplitTrain, data.SynthOptions{Seed: 1, TrainSize: batch, TestSize: batch})
	check("data", err)
	b, err := recs.Batch(0, batch) // normalised with the spec's mean and std
	check("batch", err)
	images := b.Images
	exec, err := model.NewExec(backend, model.NewStore(), func(scope *model.Scope, x *graph.Node) *graph.Node {
		return m.ModelFn(scope, nil, []*graph.Node{x})[0]
	})
	check("exec", err)
	t0 := time.Now()
	out, err := exec.Exec(images)
	check("forward pass", err)
	values, err := tensors.CopyFlatData[float32](out[0])
	check("logits", err)
	finite := true
	for _, v := range values {
		finite = finite && !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
	}
	fmt.Printf("logits shape: %v\nlogits finite: %v\nforward pass: %.2f s (with compilation)\n", out[0].Shape().Dimensions, finite, time.Since(t0).Seconds())
	if !finite {
		os.Exit(1)
	}
}

func check(what string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR: %s: %v\n", what, err)
		os.Exit(1)
	}
}
