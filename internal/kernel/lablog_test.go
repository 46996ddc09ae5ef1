package kernel

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// labOutput is what `jupyter lab` and one GoNB kernel printed here, from the start of the
// server to the kernel's shutdown (kernel/lab.sh's terminal before labLog), with an error of
// Jupyter's (its traceback), GoNB v0.11.5's double-stop panic after the signal that stopped it
// (routine: not shown) and a crash added; \x1b are GoNB's colour codes.
const labOutput = `[I 2026-12-06 08:31:11.343 LabApp] JupyterLab extension loaded from /repo/.venv/lib/python3.11/site-packages/jupyterlab
[I 2026-12-06 08:31:11.551 ServerApp] Jupyter Server 2.21.1 is running at:
[I 2026-12-06 08:31:11.551 ServerApp] http://127.0.0.1:39933/lab?token=...
[C 2026-12-06 08:31:11.552 ServerApp] 
    
    To access the server, open this file in a browser:
        file:///root/.local/share/jupyter/runtime/jpserver-13487-open.html
    Or copy and paste one of these URLs:
        http://127.0.0.1:39933/lab?token=abc
[W 2026-12-06 08:30:06.903 ServerApp] 403 POST /api/kernels (127.0.0.1): '_xsrf' argument missing from POST
I1206 08:31:12.663111   16348 main.go:187] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Logging to extra logger configured
I1206 08:31:12.663273   16348 main.go:189] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Info message
W1206 08:31:12.663279   16348 main.go:190] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Warning message
E1206 08:31:12.663282   16348 main.go:191] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Error message
I1206 08:31:12.664246   16348 main.go:222] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` kernel created
[I 2026-12-06 08:31:12.701 ServerApp] Kernel started: cf4b673b-d035-402f-92bf-8c56604e9491
[E 2026-12-06 08:31:20.001 ServerApp] Uncaught exception GET /api/kernels/x (127.0.0.1)
    Traceback (most recent call last):
      File "tornado/web.py", line 1790, in _execute
    KeyError: 'x'
E1206 08:31:21.000000   16348 goexec.go:181] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Failed to start ` + "`gopls`" + `: exec: "gopls": executable file not found in $PATH
[W 2026-12-06 08:31:30.000 ServerApp] AsyncIOLoopKernelRestarter: restarting kernel (1/5), keep random ports
[I 2026-12-06 08:31:43.657 ServerApp] Kernel shutdown: cf4b673b-d035-402f-92bf-8c56604e9491
I1206 08:31:46.159299   16348 kernel.go:199] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Signal terminated received.
E1206 08:31:46.159359   16348 kernel.go:205] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Signal terminated triggers kernel stop.
I1206 08:31:46.159711   16348 exec.go:179] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` killing gopls: 
goroutine 1 [running]:
github.com/janpfeifer/gonb/internal/util.GetStackTrace(...)
	/root/go/pkg/mod/github.com/janpfeifer/gonb@v0.11.5/internal/util/util.go:16
main.main()
	/root/go/pkg/mod/github.com/janpfeifer/gonb@v0.11.5/main.go:82 +0x1b6
I1206 08:31:46.160728   16348 main.go:261] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Exiting...
I1206 08:31:46.161000   16348 dispatcher.go:237] ` + "\x1b[7;39;32m[33424eec]\x1b[0m" + ` Shutting down in response to shutdown_request
panic: close of closed channel

goroutine 42 [running]:
github.com/janpfeifer/gonb/internal/kernel.(*Kernel).Stop(0x268f7c8563f0)
[C 2026-12-06 08:46:25.723 ServerApp] received signal 15, stopping
[I 2026-12-06 08:46:25.724 ServerApp] Shutting down 2 extensions
panic: runtime error: index out of range [3] with length 3

goroutine 7 [running]:
main.f()
`

// TestLabLogShowsOnlyErrors: of that output, the terminal gets Jupyter's error with its
// traceback, GoNB's real error, the restarted kernel and the crash, without colour codes; the
// log file gets every line, without colour codes. The pieces arrive in arbitrary chunks.
func TestLabLogShowsOnlyErrors(t *testing.T) {
	var file, term bytes.Buffer
	l := newLabLog(&file, &term)
	for rest := labOutput; rest != ""; {
		n := min(len(rest), 37)
		_, err := l.Write([]byte(rest[:n]))
		require.NoError(t, err)
		rest = rest[n:]
	}
	require.NoError(t, l.Close())
	require.Equal(t, strings.Join([]string{
		"[E 2026-12-06 08:31:20.001 ServerApp] Uncaught exception GET /api/kernels/x (127.0.0.1)",
		"    Traceback (most recent call last):",
		`      File "tornado/web.py", line 1790, in _execute`,
		"    KeyError: 'x'",
		"E1206 08:31:21.000000   16348 goexec.go:181] [33424eec] Failed to start `gopls`: exec: \"gopls\": executable file not found in $PATH",
		"[W 2026-12-06 08:31:30.000 ServerApp] AsyncIOLoopKernelRestarter: restarting kernel (1/5), keep random ports",
		"panic: runtime error: index out of range [3] with length 3",
		"",
		"goroutine 7 [running]:",
		"main.f()",
	}, "\n")+"\n", term.String())
	require.Equal(t, strings.Count(labOutput, "\n"), strings.Count(file.String(), "\n"), "every line in the file")
	require.NotContains(t, file.String(), "\x1b")
	require.Contains(t, file.String(), "killing gopls: \ngoroutine 1 [running]:\n")
}

// A critical message other than the banner is shown, also when nothing follows it for a while.
func TestLabLogShowsACriticalMessage(t *testing.T) {
	var file, term syncBuffer
	l := newLabLog(&file, &term)
	defer l.Close()
	_, err := l.Write([]byte("[C 2026-12-06 08:31:11.552 ServerApp] ERROR: the Jupyter server could not be started because port 8888 is not available.\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(term.String(), "port 8888 is not available") }, 5*time.Second, 20*time.Millisecond)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
