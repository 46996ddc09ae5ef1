// Command devices measures data-parallel training (cifarlib's training.Settings.Compute.Devices): the same
// model at the same global batch trained on 1, 2, 4, ... devices of one backend, each global
// batch sharded across the devices (one program partitioned by XLA), reporting steps/s and
// images/s of the timed steps (the first step, which compiles, is left out).
//
// Run it from the repository root:
//
//	go run ./bench/devices                                        # XLA CPU, cnn, batch 64, 1/2/4 devices
//	go run ./bench/devices -backend cpu -model resnet20 -batch 128 -devices 1,2,4 -steps 20
//	go run ./bench/devices -backend cuda -model resnet18 -batch 512 -devices 1,2,4,8,all
//
// On "cpu" each count gets an XLA CPU backend with exactly that many devices (they share the
// machine's cores, so no speed-up is expected beyond the cores XLA's single-device kernels
// already use); on "cuda" a count above the number of GPUs is skipped with a note. The data are
// synthetic CIFAR-10 records in memory. -json appends one JSON line per measurement.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

// Result is one measurement.
type Result struct {
	Backend         string  `json:"backend"`
	Model           string  `json:"model"`
	Devices         int     `json:"devices"`
	Batch           int     `json:"batch"`
	PerDevice       int     `json:"per_device"`
	Steps           int     `json:"steps"`
	StepsPerSecond  float64 `json:"steps_per_second"`
	ImagesPerSecond float64 `json:"images_per_second"`
	SetupMS         float64 `json:"setup_ms"` // backend, data, compilation and the first step
	FinalLoss       float64 `json:"final_loss"`
}

func main() {
	backend := flag.String("backend", backends.CPU, "backend: cpu (XLA CPU, devices made on request) or cuda (the GPUs)")
	model := flag.String("model", cifarlib.ArchCNN, "architecture: linear, cnn, resnet20 or resnet18")
	batch := flag.Int("batch", 64, "global batch size (a multiple of every device count)")
	devicesFlag := flag.String("devices", "1,2,4", "comma-separated device counts (or all)")
	steps := flag.Int("steps", 20, "training steps per device count (the first is not timed)")
	examples := flag.Int("examples", 2048, "synthetic training examples")
	jsonPath := flag.String("json", "", "append one JSON line per measurement to this file")
	flag.Parse()
	if err := run(*backend, *model, *batch, *devicesFlag, *steps, *examples, *jsonPath); err != nil {
		fmt.Fprintln(os.Stderr, "devices:", err)
		os.Exit(1)
	}
}

func run(backendName, arch string, batch int, devicesFlag string, steps, examples int, jsonPath string) error {
	if steps < 2 {
		return fmt.Errorf("-steps %d: at least 2 (the first step compiles and is not timed)", steps)
	}
	recs, err := data.SynthesizeRecords(data.CIFAR10(), data.SplitTrain,
		data.SynthOptions{Seed: 1, TrainSize: examples, TestSize: 100})
	if err != nil {
		return err
	}
	var out *json.Encoder
	if jsonPath != "" {
		f, err := os.OpenFile(jsonPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		out = json.NewEncoder(f)
	}
	var rows []Result
	for _, s := range strings.Split(devicesFlag, ",") {
		n, err := backends.ParseDevices(s)
		if err != nil {
			return err
		}
		r, ok, err := measure(backendName, arch, batch, steps, s, n, recs)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		rows = append(rows, r)
		if out != nil {
			if err := out.Encode(r); err != nil {
				return err
			}
		}
	}
	if len(rows) == 0 {
		return errors.New("no device count could run")
	}
	fmt.Printf("\n| backend | model | global batch | devices | per device | steps/s | images/s | vs 1 device |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %d | %d | %d | %.2f | %.0f | %.2fx |\n", r.Backend, r.Model, r.Batch, r.Devices, r.PerDevice,
			r.StepsPerSecond, r.ImagesPerSecond, r.StepsPerSecond/rows[0].StepsPerSecond)
	}
	return nil
}

// measure trains steps steps of arch on n devices (devices, as -devices gave it) and prints the
// speed; ok is false, with a line saying why, when the backend has fewer devices.
func measure(backendName, arch string, batch, steps int, devices string, n int, recs *data.Records) (r Result, ok bool, err error) {
	b, err := backends.NewWithDevices(backendName, n)
	var dce *backends.DeviceCountError
	if errors.As(err, &dce) {
		fmt.Printf("skip %s devices: %v\n", devices, err)
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, err
	}
	defer b.Finalize()
	began := time.Now()
	s := training.Defaults()
	s.Model.Arch, s.Compute.Devices, s.Run.Steps, s.Data.BatchSize, s.Run.Seed, s.Eval.SkipFinal = arch, n, steps, batch, 1, true
	res, err := training.Train(context.Background(), s, training.Env{Backend: b, Train: recs, Progress: training.ProgressOff})
	if err != nil {
		return Result{}, false, fmt.Errorf("%s devices: %w", devices, err)
	}
	timed := float64(steps-1) / res.StepsPerSecond
	r = Result{Backend: backends.Name(b), Model: arch, Devices: res.Devices, Batch: batch,
		PerDevice: batch / res.Devices, Steps: steps - 1, StepsPerSecond: res.StepsPerSecond,
		ImagesPerSecond: res.ImagesPerSecond, FinalLoss: res.Loss,
		SetupMS: float64(time.Since(began).Milliseconds()) - 1000*timed}
	fmt.Printf("%s, %s, batch %d on %d devices: %.2f steps/s, %.0f images/s\n", r.Backend, arch, batch, r.Devices,
		r.StepsPerSecond, r.ImagesPerSecond)
	return r, true, nil
}
