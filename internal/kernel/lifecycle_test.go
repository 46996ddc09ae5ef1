package kernel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/proctree"
	"github.com/stretchr/testify/require"
)

// guardEnv is cmd/cifarlab-kernel's marker variable (GuardEnv there).
const guardEnv = "CIFARLAB_KERNEL_GUARD"

// kernelProcs returns the processes of the kernel whose kernelspec process (the supervisor,
// as Jupyter started it) is pid, and its marker: the supervisor's descendants and every
// process carrying the marker GoNB got, wherever it went (a new session, re-parented to init).
func kernelProcs(t *testing.T, pid int) ([]proctree.Proc, string) {
	t.Helper()
	procs, err := proctree.List()
	require.NoError(t, err)
	marker := ""
	for _, p := range procs {
		if p.PPid == pid && p.Comm == "gonb" {
			env, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/environ")
			require.NoError(t, err)
			for kv := range strings.SplitSeq(string(env), "\x00") {
				if strings.HasPrefix(kv, guardEnv+"=") {
					marker = kv
				}
			}
		}
	}
	require.NotEmpty(t, marker, "no gonb child of the kernel's process %d with %s", pid, guardEnv)
	return proctree.Find(procs, marker, pid), marker
}

// requireGone waits until none of procs runs and no process carries the marker.
func requireGone(t *testing.T, procs []proctree.Proc, marker, after string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var left []string
		for _, p := range procs {
			if p.Alive() {
				left = append(left, p.String())
			}
		}
		all, err := proctree.List()
		require.NoError(t, err)
		for _, p := range proctree.Find(all, marker) {
			left = append(left, p.String()+" (marked)")
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, the kernel's processes still run 20 s later: %s", after, strings.Join(left, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKernelLeavesNoProcess starts the real CPU kernel with jupyter_client, runs a cell that
// starts a process in a session of its own (as a lab process outliving cells does), and ends
// the kernel as Jupyter does: a graceful shutdown, a restart, SIGTERM to the kernel's process
// group (Jupyter's next step when a shutdown request is not answered in time), and SIGKILL to the
// kernel's process. Afterwards no process of that kernel may run: not GoNB, not its gopls (which GoNB
// starts in a process group of its own, so that Jupyter's signals to the kernel's group never
// reach it), not the cell's process, not the supervisor's guard. The processes are found by
// the process tree and by the marker the supervisor gives them, so the kernels of tests
// running at the same time are not counted.
func TestKernelLeavesNoProcess(t *testing.T) {
	repo := testRepo(t)
	py := requireLab(t, repo)
	jupyterDir := installKernels(t, repo)
	dir := t.TempDir()
	cell := filepath.Join(dir, "cell.go")
	require.NoError(t, os.WriteFile(cell, []byte("import (\n\t\"fmt\"\n\t\"os/exec\"\n\t\"syscall\"\n)\n\n%%\n"+
		"cmd := exec.Command(\"sleep\", \"600\")\ncmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}\n"+
		"if err := cmd.Start(); err != nil {\n\tpanic(err)\n}\nfmt.Println(\"started\", cmd.Process.Pid)\n"), 0o644))

	for _, mode := range []string{"shutdown", "restart", "sigterm", "kill"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, py, filepath.Join(repo.Dir, "kernel", "testdata", "lifecycle.py"), CPUKernel, mode, cell)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), dataDirEnv(jupyterDir)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			defer func() {
				stdin.Close()
				_ = cmd.Wait()
			}()
			lines := bufio.NewScanner(stdout)
			next := func(v any) {
				t.Helper()
				if !lines.Scan() {
					cancel()
					_ = cmd.Wait()
					t.Fatalf("lifecycle.py stopped (%v); its output:\n%s", lines.Err(), stderr.String())
				}
				require.NoError(t, json.Unmarshal(lines.Bytes(), v), lines.Text())
			}
			var started struct {
				Pid  int    `json:"pid"`
				Cell string `json:"cell"`
				Text string `json:"text"`
			}
			next(&started)
			require.Equal(t, "ok", started.Cell, started.Text)
			procs, marker := kernelProcs(t, started.Pid)
			comms := map[string]proctree.Proc{}
			for _, p := range procs {
				comms[p.Comm] = p
			}
			require.Contains(t, comms, "gopls", "GoNB starts gopls with each kernel: %v", procs)
			require.Contains(t, comms, "sleep", "the cell's process: %v", procs)
			sid := func(pid int) int {
				data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				require.NoError(t, err)
				f := strings.Fields(string(data)[strings.LastIndexByte(string(data), ')')+1:])
				n, err := strconv.Atoi(f[3]) // state, ppid, pgrp, session
				require.NoError(t, err)
				return n
			}
			require.NotEqual(t, sid(started.Pid), sid(comms["sleep"].Pid), "the cell's process left the kernel's session")
			t.Logf("kernel %d runs %d processes: %v", started.Pid, len(procs), procs)

			_, err = io.WriteString(stdin, "\n")
			require.NoError(t, err)
			var ended struct {
				Ended string `json:"ended"`
				Pid   int    `json:"pid"`
				Code  *int   `json:"code"`
			}
			next(&ended)
			if mode == "sigterm" {
				require.NotNil(t, ended.Code)
				require.Equal(t, 0, *ended.Code, "GoNB stops cleanly on one SIGTERM, passed on once by the supervisor")
			}
			requireGone(t, procs, marker, mode)
			if mode == "restart" {
				require.NotZero(t, ended.Pid)
				procs, marker = kernelProcs(t, ended.Pid)
				_, err = io.WriteString(stdin, "\n")
				require.NoError(t, err)
				next(&ended)
				requireGone(t, procs, marker, "the restarted kernel's shutdown")
			}
			_, err = io.WriteString(stdin, "\n")
			require.NoError(t, err)
		})
	}
}
