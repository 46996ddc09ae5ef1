package training

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/cifarlib/backends"
	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/cifarlib/internal/labtest"
	"github.com/cifarlab/cifarlab/cifarlib/runs"

	"github.com/stretchr/testify/require"
)

// BenchmarkTrainCNN measures training steps of the cnn model on the pure-Go backend (or the
// backend named by $CIFARLAB_BENCH_BACKEND, e.g. "cpu" for XLA's CPU plugin), at batch 32 and 128 (GoMLX's train.Loop, guarded loss, host guard, Adam). The first step of each run,
// which compiles the graph, is not timed. Besides ns/op (per step) it reports steps/s,
// images/s, the process's peak resident memory (VmHWM, a high-water mark over the whole
// benchmark binary) and the memory the Go runtime obtained from the OS (MemStats.Sys).
//
//	go test -run '^$' -bench BenchmarkTrainCNN -benchtime 5x ./cifarlib
func BenchmarkTrainCNN(b *testing.B) {
	for _, batch := range []int{32, 128} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchmarkTrain(b, cifarlib.ArchCNN, batch) })
	}
}

func benchmarkTrain(b *testing.B, arch string, batch int) {
	b.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	name := os.Getenv("CIFARLAB_BENCH_BACKEND")
	if name == "" {
		name = backends.Go
	}
	backend, err := backends.New(name)
	require.NoError(b, err)
	train, _ := labtest.TrainTestRecords(b, data.CIFAR10(), 4*batch, 1, 1)
	var timedFrom time.Time
	s := Defaults()
	s.Model.Arch, s.Run.Steps, s.Data.BatchSize, s.Eval.SkipFinal, s.Record.HistoryEvery = arch, b.N+1, batch, true, 1
	env := Env{Train: train, Backend: backend, Progress: ProgressOff, OnPoint: func(p runs.HistoryPoint) error {
		if p.Step == 1 {
			b.ResetTimer()
			timedFrom = time.Now()
		}
		return nil
	}}
	res, err := Train(context.Background(), s, env)
	b.StopTimer()
	require.NoError(b, err)
	require.Equal(b, b.N+1, res.EndStep)
	elapsed := time.Since(timedFrom).Seconds()
	b.ReportMetric(float64(b.N)/elapsed, "steps/s")
	b.ReportMetric(float64(b.N*batch)/elapsed, "images/s")
	if hwm, ok := benchPeakRSS(); ok {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Sys)/(1<<20), "go-sys-MiB")
}

// benchPeakRSS returns VmHWM from /proc/self/status, in bytes (Linux only).
func benchPeakRSS() (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
