// Package tbtest reads TensorBoard event files back with TensorBoard's own Python reader
// (EventAccumulator, from PyPI's tensorboard in the lab's .venv): the tests' check that what
// internal/tfevents writes is what TensorBoard shows.
package tbtest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/cifarlab/cifarlab/internal/testenv"
)

// Point is one scalar as TensorBoard read it: its step and its value (a float32).
type Point struct {
	Step  int64
	Value float32
}

// Python returns the lab venv's python with TensorBoard. Without it the test is skipped with
// what to install, except in CI ($CI set), where it fails.
func Python(tb testing.TB) string {
	tb.Helper()
	dir := repo.Dir()
	py := filepath.Join(dir, ".venv", "bin", "python")
	out, err := exec.Command(py, "-c", "import tensorboard.backend.event_processing.event_accumulator").CombinedOutput()
	if err == nil {
		return py
	}
	msg := "TensorBoard's reader is missing from " + py + " (" + strings.TrimSpace(string(out)) + "): run `bash kernel/setup.sh`, " +
		"which installs kernel/requirements-tensorboard.txt"
	if testenv.InCI() {
		tb.Fatal("CI: " + msg)
	}
	tb.Skip(msg)
	return ""
}

// ReadScalars reads the scalars of the runs (sub-folders) of logdir, or of logdir itself when
// runs is empty and it has no sub-folders, with TensorBoard's EventAccumulator:
// run -> tag -> points in the order TensorBoard keeps them.
func ReadScalars(tb testing.TB, logdir string, runs ...string) map[string]map[string][]Point {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "testdata", "read_events.py")
	cmd := exec.Command(Python(tb), append([]string{script, logdir}, runs...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("read_events.py %s: %v\n%s", logdir, err, stderr.String())
	}
	var raw map[string]map[string][][2]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		tb.Fatalf("read_events.py output: %v\n%s", err, out)
	}
	got := map[string]map[string][]Point{}
	for run, tags := range raw {
		got[run] = map[string][]Point{}
		for tag, pts := range tags {
			for _, p := range pts {
				step, err1 := strconv.ParseInt(string(p[0]), 10, 64)
				var s string
				err2 := json.Unmarshal(p[1], &s)
				v, err3 := strconv.ParseFloat(s, 64)
				if err1 != nil || err2 != nil || err3 != nil || float64(float32(v)) != v {
					tb.Fatalf("read_events.py: run %s tag %s: point %s is not a step and a float32", run, tag, p)
				}
				got[run][tag] = append(got[run][tag], Point{Step: step, Value: float32(v)})
			}
		}
	}
	return got
}

// ReadTexts reads the text summaries of the run folder runDir with TensorBoard's
// EventAccumulator: tag -> the texts in step order.
func ReadTexts(tb testing.TB, runDir string) map[string][]string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "testdata", "read_texts.py")
	cmd := exec.Command(Python(tb), script, runDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("read_texts.py %s: %v\n%s", runDir, err, stderr.String())
	}
	var raw map[string][][2]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		tb.Fatalf("read_texts.py output: %v\n%s", err, out)
	}
	got := map[string][]string{}
	for tag, events := range raw {
		for _, e := range events {
			var text string
			if err := json.Unmarshal(e[1], &text); err != nil {
				tb.Fatalf("read_texts.py: tag %s: %s is not a step and a text", tag, e)
			}
			got[tag] = append(got[tag], text)
		}
	}
	return got
}
