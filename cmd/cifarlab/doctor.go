package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/cifarlab/cifarlab/internal/kernel"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func init() {
	register(command{
		name:    "doctor",
		summary: "check Go, the notebook tools, Jupyter, the kernelspecs, the backends and the CIFAR data",
		run:     runDoctor,
	})
}

func runDoctor(args []string, stdout io.Writer) error {
	fs := newFlagSet("doctor", "[--json] [--jupyter-data-dir DIR] [--data DIR]", stdout)
	asJSON := fs.Bool("json", false, "print the checklist as JSON")
	dataDir := fs.String("jupyter-data-dir", "", "look for the kernelspecs in this Jupyter data `DIR` (default: Jupyter's own search path)")
	cifarDir := fs.String("data", data.DefaultDir(), "CIFAR data `DIR` to check ($"+data.DirEnv+")")
	repoDir := fs.String("repo", "", "the cifarlab checkout (default: found from the working directory or the binary)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	repo, repoErr := kernel.FindRepo(*repoDir)
	opts := kernel.DoctorOptions{Repo: repo, RepoErr: repoErr, Probes: []kernel.Probe{probeBackends, probeDevices, probeData(*cifarDir), probeCompileCache}}
	if *dataDir != "" {
		abs, err := filepath.Abs(*dataDir)
		if err != nil {
			return err
		}
		opts.DataDir = abs
	}
	report := kernel.Doctor(ctx, opts)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		report.WriteText(stdout)
	}
	if !report.OK {
		return &exitError{code: 1, err: errors.New("required items are missing (see the checklist)")}
	}
	return nil
}

// probeBackends runs 1+2 on the pure-Go backend (it must always work) and reports
// which backend "cpu" resolves to.
func probeBackends(ctx context.Context) []kernel.Check {
	c := kernel.Check{Name: "backend go (pure Go)", Required: true}
	if sum, err := runOnePlusTwo("go"); err != nil {
		c.Status, c.Detail = kernel.StatusFail, err.Error()
		c.Fix = "rebuild cifarlab (go build -o .bin/cifarlab ./cmd/cifarlab); the pure-Go backend needs nothing else"
	} else {
		c.Status, c.Detail = kernel.StatusOK, fmt.Sprintf("computed 1+2 = %g", sum)
	}
	checks := []kernel.Check{c}
	cpu := kernel.Check{Name: "backend cpu"}
	if b, err := backends.New(backends.CPU); err != nil {
		cpu.Status, cpu.Detail, cpu.Fix = kernel.StatusWarn, err.Error(), "the CPU kernel falls back to the pure-Go backend"
	} else {
		cpu.Status, cpu.Detail = kernel.StatusOK, "resolves to "+backends.Name(b)
		b.Finalize()
	}
	return append(checks, cpu, probeCUDA())
}

// probeCUDA reports what backends.New("cuda") gives: the GPU's backend, or why not (without a GPU
// it looks for none before loading the plugin, so this is quick and quiet).
func probeCUDA() kernel.Check {
	c := kernel.Check{Name: "backend cuda"}
	b, err := backends.New(backends.CUDA)
	var noGPU *backends.NoGPUError
	switch {
	case err == nil:
		c.Status, c.Detail = kernel.StatusOK, "resolves to "+backends.Name(b)
		b.Finalize()
	case errors.As(err, &noGPU):
		c.Status, c.Detail = kernel.StatusAbsent, "no NVIDIA GPU ("+noGPU.Checked+")"
		if noGPU.Plugin != "" {
			c.Detail += "; CUDA plugin " + noGPU.Plugin + " installed at " + noGPU.PluginPath
		}
		c.Fix = "optional: CUDA needs an NVIDIA GPU and its driver (nvidia-smi -L); here use the CPU kernel"
	default:
		c.Status, c.Detail, c.Fix = kernel.StatusWarn, err.Error(), "the CUDA kernel will fail the same way; the CPU kernel works"
	}
	return c
}

func runOnePlusTwo(name string) (sum float64, err error) {
	b, err := backends.New(name)
	if err != nil {
		return 0, err
	}
	defer b.Finalize()
	out, err := graph.ExecOnce(b, func(x *graph.Node) *graph.Node {
		return graph.Add(x, graph.Const(x.Graph(), float32(2)))
	}, float32(1))
	if err != nil {
		return 0, err
	}
	v, err := tensors.CopyFlatData[float32](out)
	if err != nil || len(v) != 1 {
		return 0, fmt.Errorf("unexpected result %v: %v", out, err)
	}
	if v[0] != 3 {
		return 0, fmt.Errorf("1+2 gave %g", v[0])
	}
	return float64(v[0]), nil
}

// probeData reports, for CIFAR-10 and CIFAR-100, what the data folder holds (data.StateOf, the
// decision the notebooks and training follow), in its one line: real and verified is ok, real and
// unverified a warning whose fix is `cifarlab verify` (the data is used as real data all the
// same), synthetic or no data absent (optional: the notebooks synthesize data on first run).
func probeData(root string) kernel.Probe {
	return func(ctx context.Context) []kernel.Check {
		var checks []kernel.Check
		for _, spec := range []data.Spec{data.CIFAR10(), data.CIFAR100(data.LabelsFine)} {
			st := data.StateOf(root, spec)
			c := kernel.Check{Name: "data " + spec.Name, Detail: st.String()}
			switch st.Kind {
			case data.KindVerified:
				c.Status = kernel.StatusOK
			case data.KindUnverified:
				c.Status = kernel.StatusWarn
				c.Fix = st.VerifyCommand() + " (offline; add --archive FILE for the binary layout)"
			default:
				c.Status = kernel.StatusAbsent
				c.Fix = fmt.Sprintf("optional: cifarlab download --dataset %s --data %s", spec.Name, root)
			}
			checks = append(checks, c)
		}
		return checks
	}
}
