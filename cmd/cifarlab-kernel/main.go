// Command cifarlab-kernel runs a Jupyter kernel (GoNB) so that nothing it started outlives it.
//
//	cifarlab-kernel -- REPO/.bin/gonb --kernel {connection_file} --go_work=REPO
//
// The cifarlab kernelspecs start GoNB through it. GoNB starts gopls in a process group of its
// own (so that Jupyter's interrupts do not reach it) and kills it only when GoNB itself shuts
// down cleanly; when Jupyter kills the kernel's process group (a restart or shutdown that did
// not finish in time, or a killed kernel), gopls, and any process a cell started in its own
// group or session, is re-parented to init and runs on.
//
// cifarlab-kernel gives every process of the kernel an environment variable naming this kernel
// (CIFARLAB_KERNEL_GUARD=PID-RANDOM), starts GoNB with it in a process group of its own (GoNB
// dies with cifarlab-kernel: PR_SET_PDEATHSIG), passes on SIGTERM, SIGHUP, SIGINT and SIGQUIT,
// and exits with GoNB's status.
// A guard process, in a session of its own so that a signal to the kernel's group does not
// reach it, waits for cifarlab-kernel to end, however it ends (a pipe only cifarlab-kernel
// holds reaches end of file, even on SIGKILL), then ends every process that carries the
// variable and their descendants: SIGTERM, and SIGKILL 3 s later. Processes that leave the
// kernel's group or session on purpose (setsid) are ended too; only a process that clears its
// environment and whose parent has already gone escapes.
//
// GoNB starts gopls with every kernel, though it asks it something only when a cell asks for a
// completion or an inspection: cifarlab-kernel puts itself first on GoNB's PATH under the name
// gopls (a link in a folder of its own, removed with the kernel), and as gopls it answers GoNB's
// handshake and starts the real gopls only at the first request (lazygopls.go).
// CIFARLAB_LAZY_GOPLS=0 in the kernel's environment turns that off.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/cifarlab/cifarlab/internal/oomkill"
	"github.com/cifarlab/cifarlab/internal/proctree"
)

// GuardEnv is the variable that marks a kernel's processes (proctree.GuardEnv).
const GuardEnv = proctree.GuardEnv

// guardFlag starts the guard: cifarlab-kernel --guard MARKER (the pipe is file descriptor 3).
const guardFlag = "--guard"

// guardPipe is the write end of the guard's pipe, kept referenced so that no finalizer
// closes it while the kernel runs.
var guardPipe *os.File

// grace is how long the guard waits after SIGTERM before SIGKILL.
const grace = 3 * time.Second

func main() {
	if filepath.Base(os.Args[0]) == "gopls" { // the lazy gopls (lazygopls.go)
		os.Exit(lazyGopls(os.Args[1:]))
	}
	args := os.Args[1:]
	if len(args) >= 2 && args[0] == guardFlag {
		guard(args[1], args[2:]...)
		return
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: cifarlab-kernel -- KERNEL [ARGS...] (e.g. REPO/.bin/gonb --kernel {connection_file} --go_work=REPO)")
		os.Exit(2)
	}
	os.Exit(supervise(args))
}

// supervise starts the guard and the kernel, passes signals on and returns the kernel's exit
// status (128+N when a signal N ended it).
func supervise(argv []string) int {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		fmt.Fprintln(os.Stderr, "cifarlab-kernel:", err)
		return 1
	}
	marker := GuardEnv + "=" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	env := append(os.Environ(), marker)
	// gopls only when a cell asks for it (lazygopls.go); its folder goes with the kernel.
	goplsDir, env, err := setUpLazyGopls(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cifarlab-kernel: the lazy gopls:", err, "(GoNB starts gopls itself)")
	}
	if goplsDir != "" {
		defer os.RemoveAll(goplsDir)
	}
	if err := startGuard(marker, goplsDir); err != nil {
		fmt.Fprintln(os.Stderr, "cifarlab-kernel:", err)
		return 1
	}
	return runKernel(argv, env)
}

// startGuard starts the guard of the processes marked with marker, which also removes goplsDir
// (when set), however this process ends. It reads a pipe until this process's end closes its
// write end (os.Pipe's descriptors are close-on-exec, so the kernel does not hold it).
func startGuard(marker, goplsDir string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	g := exec.Command(self, guardFlag, marker)
	if goplsDir != "" {
		g.Args = append(g.Args, goplsDir) // removed by the guard too, however this process ends
	}
	g.ExtraFiles = []*os.File{r}
	g.Stderr = os.Stderr
	g.SysProcAttr = proctree.Session()
	if err := g.Start(); err != nil {
		return fmt.Errorf("starting the guard: %w", err)
	}
	r.Close()
	go func() { _ = g.Wait() }() // reaped if it ends early; it normally outlives us
	guardPipe = w                // held open (not finalized) until this process exits
	return nil
}

// runKernel runs the kernel argv with env in a process group of its own, passes on the signals
// this process gets, and returns its exit status, saying on stderr when the kernel was killed for
// memory.
func runKernel(argv, env []string) int {
	// PR_SET_PDEATHSIG fires when the thread that forked the child ends: keep this one.
	runtime.LockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// GoNB gets a process group of its own, so that a signal Jupyter sends to the kernel's group
	// reaches it once, passed on by this process, and not twice (GoNB stops on the first
	// SIGTERM and may panic on a second one).
	cmd.SysProcAttr = proctree.Group(syscall.SIGKILL)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	memory := oomkill.Take()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "cifarlab-kernel:", err)
		return 1
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "cifarlab-kernel:", err)
	}
	if oom := oomkill.Check(memory, err); oom != nil {
		// Jupyter shows only that the kernel died; its log (this stderr) says why.
		fmt.Fprintf(os.Stderr, "cifarlab-kernel: the kernel (pid %d) was killed because %s; to go on, %s\n",
			cmd.Process.Pid, oom, oom.Advice())
	}
	return proctree.ExitStatus(err)
}

// guard waits for the supervisor to end, then ends the kernel's processes and removes the
// folders it was given (the lazy gopls's).
func guard(marker string, remove ...string) {
	defer func() {
		for _, dir := range remove {
			os.RemoveAll(dir)
		}
	}()
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	pipe := os.NewFile(3, "guard")
	var buf [1]byte
	for {
		if _, err := pipe.Read(buf[:]); err != nil {
			break
		}
	}
	// Two rounds: a process may fork while the first round ends its parent.
	for round := 0; round < 2; round++ {
		procs, err := proctree.List()
		if err != nil {
			fmt.Fprintln(os.Stderr, "cifarlab-kernel guard:", err)
			return
		}
		found := proctree.Find(procs, marker)
		if len(found) == 0 {
			return
		}
		for _, p := range proctree.End(found, grace) {
			fmt.Fprintf(os.Stderr, "cifarlab-kernel guard: %s did not end\n", p)
		}
	}
}
