package kernel

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// api calls Jupyter's REST API of lab with its token and returns the status and body.
func (l *startedLab) api(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, l.base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "token "+l.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestLabTerminalShowsOnlyTheURLAndErrors starts the real `cifarlab lab` (as kernel/lab.sh does,
// its server log not turned off), starts a CPU kernel and shuts it down through Jupyter's REST
// API, as opening and closing a notebook does, and stops the lab: the terminal shows cifarlab's
// lines (the URL, the log file named once) and nothing of the server's or GoNB's routine
// messages (Jupyter's [I]/[W] entries, GoNB's logger self-test with its colour codes, the
// goroutine dump after "killing gopls:"); the log file named has all of them, without colour codes.
func TestLabTerminalShowsOnlyTheURLAndErrors(t *testing.T) {
	repo := testRepo(t)
	requireLab(t, repo)
	bin := cifarlabBinary(t, repo)
	dataDir := installKernels(t, repo)
	logDir := t.TempDir()
	lab := startLabTerminal(t, bin, "--port", "0", "--notebooks", t.TempDir(), "--jupyter-data-dir", dataDir, "--repo", repo.Dir, "--log-dir", logDir)
	m := regexp.MustCompile(`(?m)^log: (\S+) \(JupyterLab's and the kernels' messages; their errors also show here\)$`).FindStringSubmatch(lab.startup)
	require.NotNil(t, m, lab.startup)
	logFile := m[1]
	require.Equal(t, filepath.Join(logDir, "lab-"+strings.TrimSuffix(lab.base[strings.LastIndex(lab.base, ":")+1:], "/")+".log"), logFile)

	code, body := lab.api(t, "POST", "api/kernels", `{"name": "`+CPUKernel+`"}`)
	require.Equal(t, http.StatusCreated, code, body)
	var k struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &k))
	logged := func(text string) func() bool {
		return func() bool { b, _ := os.ReadFile(logFile); return strings.Contains(string(b), text) }
	}
	require.Eventually(t, logged("kernel created"), 2*time.Minute, 200*time.Millisecond, "GoNB never started")
	require.Eventually(t, logged("gopls -listen"), 2*time.Minute, 200*time.Millisecond, "GoNB never started gopls")
	code, body = lab.api(t, "DELETE", "api/kernels/"+k.ID, "")
	require.Equal(t, http.StatusNoContent, code, body)
	// GoNB ends with "Exiting...", or, when the SIGTERM that jupyter_client sends a kernel still
	// alive after its shutdown_request arrives while GoNB handles that request, with GoNB v0.11.5's
	// panic on stopping twice (close of closed channel): either way it wrote its last line.
	ended := func() bool { return logged("Exiting...")() || logged(gonbStopPanic)() }
	if !assert.Eventually(t, ended, 2*time.Minute, 200*time.Millisecond) {
		b, _ := os.ReadFile(logFile)
		t.Fatalf("GoNB never ended; the log:\n%s", b)
	}
	lab.stop(t)

	terminal := lab.stdout.String() + lab.stderr.String()
	t.Logf("the terminal:\n%s", terminal)
	require.Equal(t, 1, strings.Count(terminal, logFile), "the log file is named once")
	require.Contains(t, terminal, "open: "+lab.url+"\n")
	for _, noise := range []string{"Info message", "Warning message", "Error message", "killing gopls", "goroutine ", "\x1b[",
		"[I ", "[W ", "kernel created", "Kernel started", "Kernel shutdown", "To access the server"} {
		require.NotContains(t, terminal, noise)
	}
	require.Empty(t, lab.stderr.String(), "nothing went wrong, so the server showed nothing")

	b, err := os.ReadFile(logFile)
	require.NoError(t, err)
	log := string(b)
	wants := []string{"Kernel started: " + k.ID, "Kernel shutdown: " + k.ID, "Error message"}
	if strings.Contains(log, gonbStopPanic) { // GoNB's double stop: its trace is in the log
		wants = append(wants, gonbStopPanic+"\n\ngoroutine ")
	} else {
		wants = append(wants, "killing gopls: \ngoroutine ", "Exiting...")
	}
	for _, want := range wants {
		require.Contains(t, log, want)
	}
	require.NotContains(t, log, "\x1b[", "the log has no colour codes")
}
