// Command labcell is a notebook cell of the lab as a program (bench/gpu.sh stage 13, run by
// bench/gonbsim as GoNB runs a cell): `var lab = nb.Open(data.CIFAR10())`, then what the cell
// does, then one line "labcell: {json}" with the cell's program start to its end, when the first
// step of a Fit ended (from the run's timeline, counted from the program start), and whether a
// PJRT plugin was mapped into the cell's program (a client was created in it).
//
//	labcell -cell open                                  # a lab cell that computes nothing
//	labcell -cell fit -model cnn -steps 50 -batch 128   # lab.Fit: in the kernel's lab process
//
// It uses only what the lab had before issue 48 item 4 (nb.Open, lab.Fit, runs.ProcessStart), so
// that gpu.sh builds it from the code before and after it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/nb"
	"github.com/cifarlab/cifarlab/cifarlib/runs"
	"github.com/cifarlab/cifarlab/cifarlib/training"
)

var lab = nb.Open(data.CIFAR10()) // the notebook's first cell, declared in every cell's program

func main() {
	cell := flag.String("cell", "open", "open (a cell that computes nothing) or fit (lab.Fit)")
	model := flag.String("model", "cnn", "architecture of the fit cell")
	steps := flag.Int("steps", 50, "training steps of the fit cell")
	batch := flag.Int("batch", 128, "batch size of the fit cell")
	run := flag.String("run", "labcell", "run name of the fit cell")
	flag.Parse()
	report := map[string]any{"cell": *cell}
	switch *cell {
	case "open":
		fmt.Println(lab.Arch)
	case "fit":
		res := nb.Must(lab.Fit(*run, training.Config{Model: *model, Steps: *steps, BatchSize: *batch, Seed: 1,
			EvalEvery: training.EvalOff, SkipFinalEval: true}))
		for _, e := range res.Timeline.Events {
			if e.Phase == runs.PhaseFirstStep {
				report["first_step_s"] = e.End().Seconds()
			}
		}
		compile, _ := res.Timeline.Total(runs.PhaseCompile)
		report["compile_s"] = compile.Seconds()
		report["timeline"] = res.Timeline.Short()
	default:
		nb.Check(fmt.Errorf("labcell: -cell %q: use open or fit", *cell))
	}
	start, _ := runs.ProcessStart()
	report["program_s"] = time.Since(start).Seconds()
	maps, _ := os.ReadFile("/proc/self/maps")
	report["pjrt_mapped"] = strings.Contains(string(maps), "pjrt")
	status, _ := os.ReadFile("/proc/self/status") // the cell's own peak resident memory
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			report["rss_peak_mib"] = kb / 1024
		}
	}
	b, _ := json.Marshal(report)
	fmt.Printf("labcell: %s\n", b)
}
