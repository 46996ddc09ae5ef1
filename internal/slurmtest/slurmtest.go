// Package slurmtest starts a real single-node Slurm cluster for tests: Debian's slurmctld,
// slurmd and munge, run as plain processes (no systemd) from a temporary folder, with a
// partition of this machine's CPUs and two fake GPUs declared through gres, so that each job
// gets its own CUDA_VISIBLE_DEVICES. The daemons are stopped by the PIDs the test started.
//
// Slurm 22.05 (Debian 12) pitfalls this configuration avoids: no cgroup.conf (slurmd 22.05
// refuses the newer CgroupPlugin=disabled), proctrack/linuxproc and task/none instead;
// AuthInfo's cred_expire=5, or a requeued job waits the default 120 s before it runs again,
// and scheduler passes every second (sched_interval, bf_interval) rather than every 60 and 30 s;
// no slurmdbd, so sacct is off (squeue and the run folders are the source of truth).
package slurmtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cifarlab/cifarlab/internal/testenv"
)

// Packages are the Debian packages the cluster needs.
var Packages = []string{"slurmctld", "slurmd", "slurm-client", "munge"}

// binaries are the commands Start runs or the tests call.
var binaries = []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo"}

// GPUs is the number of fake GPUs of the node (gres gpu:2).
const GPUs = 2

// Partition is the cluster's only partition.
const Partition = "debug"

// Cluster is a running single-node Slurm cluster.
type Cluster struct {
	// Dir holds the configuration, the state, the logs and the munge key and socket.
	Dir string
	// Conf is the path of slurm.conf: Slurm's commands find it through $SLURM_CONF (Env).
	Conf string
	// Node is the node's name (this host's short name).
	Node string
	// InstallTime is how long installing the packages took (0 when they were there), StartTime
	// how long from starting munged to the node being idle.
	InstallTime, StartTime time.Duration

	procs []*exec.Cmd
}

// Env is the environment Slurm's commands (sbatch, squeue, scontrol) need to reach the
// cluster: os.Environ with SLURM_CONF set.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf)
}

// Install installs the Debian packages when a command is missing, and says how long it took.
// It needs root and apt-get; without them it returns an error that says what to install.
func Install() (time.Duration, error) {
	var missing []string
	for _, b := range binaries {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return 0, nil
	}
	how := "apt-get install -y --no-install-recommends " + strings.Join(Packages, " ") + " (kernel/setup.sh does it)"
	if os.Geteuid() != 0 {
		return 0, fmt.Errorf("slurmtest: %s missing and not root: %s", strings.Join(missing, ", "), how)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return 0, fmt.Errorf("slurmtest: %s missing and no apt-get: %s", strings.Join(missing, ", "), how)
	}
	start := time.Now()
	cmd := exec.Command("apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300", "install", "-y", "-q", "--no-install-recommends"}, Packages...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("slurmtest: %s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return time.Since(start), nil
}

// Start installs Slurm when missing (Install) and starts a cluster in a temporary folder,
// stopped when the test ends. Where Slurm cannot be installed the test is skipped with the
// reason, except in CI ($CI set), where it fails.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	installed, err := Install()
	if err != nil {
		if testenv.InCI() {
			tb.Fatal("CI: " + err.Error())
		}
		tb.Skip(err.Error())
	}
	c, err := start(tb.TempDir())
	if c != nil {
		tb.Cleanup(c.Stop)
	}
	if err != nil {
		tb.Fatal(err)
	}
	c.InstallTime = installed
	tb.Logf("slurmtest: cluster in %s (install %.1fs, idle after %.2fs)", c.Dir, installed.Seconds(), c.StartTime.Seconds())
	return c
}

// start writes the configuration into dir and starts munged, slurmctld and slurmd; it returns
// the cluster (to stop) with an error when the node does not become idle.
func start(dir string) (*Cluster, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	node, _, _ := strings.Cut(host, ".")
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Node: node}
	if err := c.writeConfig(); err != nil {
		return nil, err
	}
	begin := time.Now()
	munge := filepath.Join(dir, "munge")
	if err := c.spawn("munged", "munged", "-F", "--force", "--key-file="+filepath.Join(munge, "munge.key"),
		"--socket="+filepath.Join(munge, "munge.socket"), "--pid-file="+filepath.Join(munge, "munged.pid"),
		"--log-file="+filepath.Join(munge, "munged.log"), "--seed-file="+filepath.Join(munge, "seed")); err != nil {
		return c, err
	}
	if err := waitFor(10*time.Second, func() bool { _, err := os.Stat(filepath.Join(munge, "munge.socket")); return err == nil }); err != nil {
		return c, fmt.Errorf("slurmtest: munged did not open its socket: %s", c.logs())
	}
	if err := c.spawn("slurmctld", "slurmctld", "-D", "-f", c.Conf); err != nil {
		return c, err
	}
	if err := c.spawn("slurmd", "slurmd", "-D", "-f", c.Conf, "-N", c.Node); err != nil {
		return c, err
	}
	idle := func() bool {
		out, err := c.command("sinfo", "-h", "-N", "-o", "%T")
		return err == nil && strings.TrimSpace(out) == "idle"
	}
	if err := waitFor(60*time.Second, idle); err != nil {
		return c, fmt.Errorf("slurmtest: the node did not become idle within 60 s: %s", c.logs())
	}
	c.StartTime = time.Since(begin)
	return c, nil
}

// command runs a Slurm command against the cluster and returns its standard output.
func (c *Cluster) command(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env()
	out, err := cmd.Output()
	return string(out), err
}

// spawn starts a daemon in the foreground mode, its output in dir/name.out.
func (c *Cluster) spawn(name string, args ...string) error {
	out, err := os.Create(filepath.Join(c.Dir, name+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = c.Env(), out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("slurmtest: starting %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

// Stop cancels the cluster's jobs and waits (up to 30 s) until the queue is empty, so that no
// job step outlives slurmd, then stops the daemons the cluster started, by their PIDs, newest
// first (SIGTERM, then SIGKILL after 10 s), and waits for them.
func (c *Cluster) Stop() {
	if len(c.procs) == 3 {
		c.command("scancel", "--user=root")
		_ = waitFor(30*time.Second, func() bool { out, err := c.command("squeue", "-h"); return err == nil && strings.TrimSpace(out) == "" })
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		cmd := c.procs[i]
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	c.procs = nil
}

// logs is the tail of each daemon's output, for an error message.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, name := range []string{"munged", "slurmctld", "slurmd"} {
		data, _ := os.ReadFile(filepath.Join(c.Dir, name+".out"))
		if len(data) > 2000 {
			data = data[len(data)-2000:]
		}
		fmt.Fprintf(&b, "\n--- %s:\n%s", name, data)
	}
	return b.String()
}

// writeConfig writes the munge key and the fake GPU devices (writeMunge), slurm.conf on two free
// ports (slurmConf) and gres.conf.
func (c *Cluster) writeConfig() error {
	munge := filepath.Join(c.Dir, "munge")
	if sock := filepath.Join(munge, "munge.socket"); len(sock) > 100 {
		return fmt.Errorf("slurmtest: munge's socket path %s is longer than a Unix socket allows (108 bytes): use a shorter TMPDIR", sock)
	}
	if err := c.writeMunge(munge); err != nil {
		return err
	}
	ctld, err := freePort()
	if err != nil {
		return err
	}
	slurmd, err := freePort()
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.Conf, []byte(c.slurmConf(munge, ctld, slurmd)), 0o644); err != nil {
		return err
	}
	gres := fmt.Sprintf("AutoDetect=off\nNodeName=%s Name=gpu File=%s[0-%d]\n", c.Node, filepath.Join(c.Dir, "gpu"), GPUs-1)
	return os.WriteFile(filepath.Join(c.Dir, "gres.conf"), []byte(gres), 0o644)
}

// writeMunge makes the cluster's folders, munge's key in the folder munge and the fake GPU
// devices.
func (c *Cluster) writeMunge(munge string) error {
	for _, d := range []string{"state", "spool", "munge"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o755); err != nil {
			return err
		}
	}
	// munged wants its socket's folder searchable by all, and a private key.
	if err := os.Chmod(munge, 0o755); err != nil {
		return err
	}
	key := make([]byte, 1024)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return err
	}
	_, err = f.Read(key)
	f.Close()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(munge, "munge.key"), key, 0o400); err != nil {
		return err
	}
	// gres.conf's File= must be character devices: fake GPUs with /dev/null's numbers.
	for i := range GPUs {
		if err := mknodNull(filepath.Join(c.Dir, fmt.Sprintf("gpu%d", i))); err != nil {
			return fmt.Errorf("slurmtest: making the fake GPU devices: %w", err)
		}
	}
	return nil
}

// slurmConf is the cluster's slurm.conf: one node with the machine's CPUs and GPUs fake GPUs, one
// partition, munge authentication through the folder munge, slurmctld and slurmd on the ports
// ctld and slurmd, and a scheduler that looks every second.
func (c *Cluster) slurmConf(munge string, ctld, slurmd int) string {
	d := c.Dir
	return strings.Join([]string{
		"ClusterName=cifarlabtest",
		fmt.Sprintf("SlurmctldHost=%s(127.0.0.1)", c.Node),
		fmt.Sprintf("SlurmctldPort=%d", ctld),
		fmt.Sprintf("SlurmdPort=%d", slurmd),
		"SlurmUser=root",
		"SlurmdUser=root",
		"AuthType=auth/munge",
		"AuthInfo=socket=" + filepath.Join(munge, "munge.socket") + ",cred_expire=5",
		"CredType=cred/munge",
		"StateSaveLocation=" + filepath.Join(d, "state"),
		"SlurmdSpoolDir=" + filepath.Join(d, "spool"),
		"SlurmctldPidFile=" + filepath.Join(d, "slurmctld.pid"),
		"SlurmdPidFile=" + filepath.Join(d, "slurmd.pid"),
		"SlurmctldLogFile=" + filepath.Join(d, "slurmctld.log"),
		"SlurmdLogFile=" + filepath.Join(d, "slurmd.log"),
		"ProctrackType=proctrack/linuxproc",
		"TaskPlugin=task/none",
		"JobAcctGatherType=jobacct_gather/none",
		"AccountingStorageType=accounting_storage/none",
		"SelectType=select/cons_tres",
		"SelectTypeParameters=CR_Core",
		"MpiDefault=none",
		"ReturnToService=2",
		"SchedulerParameters=sched_min_interval=100000,sched_interval=1,bf_interval=1",
		"GresTypes=gpu",
		fmt.Sprintf("NodeName=%s NodeAddr=127.0.0.1 CPUs=%d Gres=gpu:%d State=UNKNOWN", c.Node, runtime.NumCPU(), GPUs),
		fmt.Sprintf("PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP", Partition, c.Node),
	}, "\n") + "\n"
}

// mknodNull makes a character device with /dev/null's numbers (1, 3).
func mknodNull(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3) // Linux's dev_t of major 1, minor 3
}

// freePort is a TCP port free on 127.0.0.1 right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitFor polls ok every 50 ms until it holds or the timeout passes.
func waitFor(timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
