package tbtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/testenv"
)

// ChromiumPath is Debian's Chromium (apt-get install chromium; kernel/setup.sh installs it).
const ChromiumPath = "/usr/bin/chromium"

// Serve starts the lab venv's `tensorboard --logdir logdir` on a free local port, waits until it
// answers, and returns its URL; the server is stopped when the test ends. Without TensorBoard
// the test is skipped (fails in CI), as with Python.
func Serve(tb testing.TB, logdir string) string {
	tb.Helper()
	py := Python(tb)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(py), "tensorboard"), "--logdir", logdir,
		"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--reload_interval", "1")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("starting tensorboard: %v", err)
	}
	tb.Cleanup(func() { cancel(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(url + "/data/runs")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("tensorboard did not answer on %s in 90s: %v\n%s", url, err, log.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Runs returns the runs a TensorBoard server lists (its /data/runs), once it lists want of
// them (it loads the folder in the background), or what it lists after 60 s.
func Runs(tb testing.TB, url string, want int) []string {
	tb.Helper()
	var runs []string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		resp, err := http.Get(url + "/data/runs")
		if err != nil {
			tb.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&runs)
		resp.Body.Close()
		if err != nil {
			tb.Fatalf("tensorboard %s/data/runs: %v", url, err)
		}
		if len(runs) >= want {
			break
		}
	}
	return runs
}

// Chromium returns the path of Chromium; without it the test is skipped (fails in CI).
func Chromium(tb testing.TB) string {
	tb.Helper()
	if _, err := os.Stat(ChromiumPath); err == nil {
		return ChromiumPath
	}
	msg := ChromiumPath + " is missing: apt-get install chromium (kernel/setup.sh does it)"
	if testenv.InCI() {
		tb.Fatal("CI: " + msg)
	}
	tb.Skip(msg)
	return ""
}
