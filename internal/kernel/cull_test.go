package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestImageConfigCullsIdleKernels starts a real Jupyter server with the workshop image's
// settings (docker/jupyter_server_config.py, found on Jupyter's config path as the image
// installs it, /usr/local/etc/jupyter) and short culling times, and two cifarlab kernels, each
// with a websocket open as a notebook tab has: one left idle is shut down once it has been idle
// for the timeout, tab or not; one running a 40-second cell is never culled while it runs, and is
// culled after it has been idle for the timeout.
func TestImageConfigCullsIdleKernels(t *testing.T) {
	repo := testRepo(t)
	py := requireLab(t, repo)
	jupyterDir := installKernels(t, repo)
	configDir := t.TempDir()
	body, err := os.ReadFile(filepath.Join(repo.Dir, "docker", "jupyter_server_config.py"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(configDir, "jupyter_server_config.py"), body, 0o644))
	port, err := freePort("127.0.0.1")
	require.NoError(t, err)
	const token, idle, every = "cull-test-token", 10, 2

	server := exec.Command(filepath.Join(repo.VenvDir(), "bin", "jupyter"), "server", "--no-browser", "--ip=127.0.0.1",
		"--port="+strconv.Itoa(port), "--ServerApp.port_retries=0", "--ServerApp.root_dir="+t.TempDir())
	if os.Geteuid() == 0 {
		server.Args = append(server.Args, "--allow-root")
	}
	server.Env = append(append(os.Environ(), dataDirEnv(jupyterDir)...), "JUPYTER_TOKEN="+token,
		"JUPYTER_CONFIG_PATH="+configDir, "JUPYTER_CONFIG_DIR="+t.TempDir(),
		"CIFARLAB_KERNEL_CULL_IDLE="+strconv.Itoa(idle), "CIFARLAB_KERNEL_CULL_EVERY="+strconv.Itoa(every))
	var log bytes.Buffer
	server.Stdout, server.Stderr = &log, &log
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, server.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-server.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = server.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-server.Process.Pid, syscall.SIGKILL)
			<-done
		}
		t.Logf("the server's log:\n%s", log.String())
	})
	base := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "api/status?token=" + token)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 2*time.Minute, 250*time.Millisecond, "the server did not answer")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const busySeconds = 40
	cmd := exec.CommandContext(ctx, py, filepath.Join(repo.Dir, "kernel", "testdata", "cull.py"), base, token, CPUKernel,
		strconv.Itoa(busySeconds), "240")
	cmd.Stderr = testWriter{t}
	out, err := cmd.Output()
	require.NoError(t, err)
	t.Logf("cull.py: %s", out)
	var res map[string]struct {
		LastListed  *float64 `json:"last_listed"`
		State       string   `json:"state"`
		Connections int      `json:"connections"`
		CellStarted *float64 `json:"cell_started"`
		CellEnded   *float64 `json:"cell_ended"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	idleK, busyK := res["idle"], res["busy"]
	require.NotNil(t, idleK.LastListed)
	require.Equal(t, 1, idleK.Connections, "its tab was open")
	require.NotNil(t, busyK.CellStarted, "the busy kernel's cell never started")
	require.NotNil(t, busyK.CellEnded, "the busy kernel was culled while its cell ran")
	// The idle kernel went while the busy one's cell still ran.
	require.Less(t, *idleK.LastListed, *busyK.CellEnded, "the idle kernel (tab open) was not culled before the busy one's cell ended")
	// The busy one was listed until its cell ended, then culled within the timeout, the check
	// interval and a margin for a loaded machine.
	require.NotNil(t, busyK.LastListed)
	require.GreaterOrEqual(t, *busyK.LastListed, *busyK.CellEnded)
	require.Less(t, *busyK.LastListed-*busyK.CellEnded, float64(idle+every+20), "culled once idle")
	require.Contains(t, log.String(), "Culling kernel", "the server's culler did it")
}
