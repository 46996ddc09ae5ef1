package kernel

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// startedLab is a `cifarlab lab` process started by a test.
type startedLab struct {
	cmd     *exec.Cmd
	pid     int // the JupyterLab server's pid (leader of its own process group)
	url     string
	base    string
	token   string
	startup string // what cifarlab printed up to "press Ctrl-C to stop"
	stdout  strings.Builder
	stderr  syncBuffer // what the terminal shows of the server's log (not with --quiet)
	exited  chan error
	outDone chan struct{}
}

var (
	reLabPid = regexp.MustCompile(`JupyterLab \(pid (\d+)\) is serving `)
	reLabURL = regexp.MustCompile(`open: (http://127\.0\.0\.1:\d+/)lab(?:\?token=([0-9a-f]+))?`)
)

// startLab runs the real `cifarlab lab --quiet` and waits for it to print the URL.
func startLab(t *testing.T, bin string, args ...string) *startedLab {
	t.Helper()
	return startLabTerminal(t, bin, append([]string{"--quiet"}, args...)...)
}

// startLabTerminal runs the real `cifarlab lab` with args and waits for it to print the URL;
// its stderr is kept (startedLab.stderr).
func startLabTerminal(t *testing.T, bin string, args ...string) *startedLab {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"lab"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l := &startedLab{cmd: cmd, exited: make(chan error, 1), outDone: make(chan struct{})}
	cmd.Stderr = &l.stderr
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() { // never leak a server, whatever the test did
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if l.pid > 0 {
			_ = syscall.Kill(-l.pid, syscall.SIGKILL)
		}
	})
	deadline := time.After(5 * time.Minute)
	for !strings.HasSuffix(l.stdout.String(), "press Ctrl-C to stop\n") {
		select {
		case line, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				t.Fatalf("cifarlab lab exited (%v) before it was ready:\n%s%s", err, l.stdout.String(), l.stderr.String())
			}
			l.stdout.WriteString(line + "\n")
			if m := reLabPid.FindStringSubmatch(line); m != nil {
				l.pid, _ = strconv.Atoi(m[1])
			}
			if m := reLabURL.FindStringSubmatch(line); m != nil {
				l.url, l.base, l.token = m[0][len("open: "):], m[1], m[2]
			}
		case <-deadline:
			t.Fatalf("cifarlab lab printed no URL within 5 minutes:\n%s%s", l.stdout.String(), l.stderr.String())
		}
	}
	require.NotZero(t, l.pid, l.stdout.String())
	require.NotEmpty(t, l.url, l.stdout.String())
	l.startup = l.stdout.String()
	go func() {
		for line := range lines {
			l.stdout.WriteString(line + "\n")
		}
		close(l.outDone)
	}()
	go func() { l.exited <- cmd.Wait() }()
	return l
}

// stop sends Ctrl-C's signal to cifarlab and checks that it and the whole server process
// group are gone and the port is closed.
func (l *startedLab) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, l.cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-l.exited:
		require.NoError(t, err, "cifarlab lab exit status after Ctrl-C")
	case <-time.After(60 * time.Second):
		t.Fatal("cifarlab lab did not exit within 60 s of SIGINT")
	}
	<-l.outDone
	require.Contains(t, l.stdout.String(), "stopping JupyterLab")
	err := syscall.Kill(-l.pid, 0)
	require.True(t, errors.Is(err, syscall.ESRCH), "the server's process group %d is still alive (%v)", l.pid, err)
	_, err = net.DialTimeout("tcp", strings.TrimSuffix(strings.TrimPrefix(l.base, "http://"), "/"), time.Second)
	require.Error(t, err, "the port still answers after stop")
}

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

// TestLabServesOnlyWithToken starts the real `cifarlab lab` on a free port with an empty
// Jupyter data directory: it must install the kernels, answer only requests carrying the
// token, and leave nothing running after Ctrl-C.
func TestLabServesOnlyWithToken(t *testing.T) {
	repo := testRepo(t)
	requireLab(t, repo)
	bin := cifarlabBinary(t, repo)
	dataDir := filepath.Join(t.TempDir(), "jupyter")
	notebooks := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notebooks, "hello.ipynb"), []byte(`{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`), 0o644))

	lab := startLab(t, bin, "--port", "0", "--notebooks", notebooks, "--jupyter-data-dir", dataDir, "--repo", repo.Dir)
	require.Contains(t, lab.startup, "installing the cifarlab kernels into "+dataDir+" (--jupyter-data-dir)\n")
	require.Contains(t, lab.startup, "kernel cifarlab-cpu: this checkout ("+repo.Dir+"), from "+kernelDir(dataDir, CPUKernel)+"\n")
	require.Contains(t, lab.startup, "kernel cifarlab-cuda: this checkout ("+repo.Dir+"), from "+kernelDir(dataDir, CUDAKernel)+"\n")
	require.NotContains(t, lab.startup, "WARNING")
	require.Contains(t, lab.startup, "JupyterLab (pid "+strconv.Itoa(lab.pid)+") is serving "+notebooks+"\n")
	require.Len(t, lab.token, 48)
	require.Equal(t, lab.base+"lab?token="+lab.token, lab.url)

	code, _, _ := get(t, lab.base+"api/status")
	require.Equal(t, http.StatusForbidden, code, "API without token")
	code, _, _ = get(t, lab.base+"api/status?token=0123")
	require.Equal(t, http.StatusForbidden, code, "API with a wrong token")
	code, loc, _ := get(t, lab.base+"lab")
	require.Equal(t, http.StatusFound, code, "page without token")
	require.Equal(t, "/login?next=%2Flab", strings.TrimPrefix(loc, strings.TrimSuffix(lab.base, "/")))

	code, _, body := get(t, lab.base+"api/status?token="+lab.token)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"started"`)
	code, _, _ = get(t, lab.url)
	require.Equal(t, http.StatusOK, code, "JupyterLab page with token")
	code, _, body = get(t, lab.base+"api/contents?token="+lab.token)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"name": "hello.ipynb"`)
	code, _, body = get(t, lab.base+"api/kernelspecs?token="+lab.token)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `"cifarlab-cpu"`)
	require.Contains(t, body, `"cifarlab-cuda"`)
	require.Contains(t, body, `"display_name": "Go (cifarlab, CPU)"`)

	lab.stop(t)
}

func TestLabWithoutToken(t *testing.T) {
	repo := testRepo(t)
	requireLab(t, repo)
	bin := cifarlabBinary(t, repo)
	dataDir := installKernels(t, repo)
	lab := startLab(t, bin, "--port", "0", "--no-token", "--notebooks", t.TempDir(), "--jupyter-data-dir", dataDir, "--repo", repo.Dir)
	require.NotContains(t, lab.startup, "installing the cifarlab kernels", "they were installed already")
	require.Contains(t, lab.startup, "warning: token authentication is off\n")
	require.Equal(t, lab.base+"lab", lab.url)
	code, _, _ := get(t, lab.base+"api/status")
	require.Equal(t, http.StatusOK, code)
	lab.stop(t)
}

// Without JupyterLab, `cifarlab lab` says how to install it.
func TestLabWithoutJupyterSaysHowToInstall(t *testing.T) {
	repo := testRepo(t)
	if !fileExists(filepath.Join(repo.Dir, ".bin", "gonb")) && !testenv.InCI() {
		t.Skip("needs the Go toolchain only, but builds cifarlab: run kernel/setup.sh first")
	}
	bin := cifarlabBinary(t, repo)
	fake := fakeRepo(t) // no .venv
	cmd := exec.Command(bin, "lab", "--repo", fake.Dir, "--port", "0")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(mustGoBin(t)))
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "cifarlab lab: JupyterLab is missing: jupyter not found (not in "+fake.VenvDir()+", not on PATH): "+installHint+"\n")
}
