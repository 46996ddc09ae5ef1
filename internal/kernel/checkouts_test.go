package kernel

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cloneWithVenv clones repo's committed HEAD into a temporary folder and gives the clone what
// kernel/setup.sh would: .bin with the pinned tools (links to repo's) and a venv .venv of its
// own. The venv is made without pip and reaches the lab venv's packages through a .pth file,
// with the same console scripts pip writes (jupyter, jupyter-kernelspec): its sys.prefix, and
// so the share/jupyter folder Jupyter searches, is the clone's own, as in a real setup.
func cloneWithVenv(t *testing.T, repo Repo, py, name string) Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	run(t, "", nil, "git", "clone", "-q", repo.Dir, dir)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".bin"), 0o755))
	for _, tool := range pinnedTools {
		target, err := filepath.EvalSymlinks(repo.Tool(tool.Name))
		require.NoError(t, err)
		require.NoError(t, os.Symlink(target, filepath.Join(dir, ".bin", tool.Name)))
	}
	venv := filepath.Join(dir, ".venv")
	run(t, "", nil, py, "-m", "venv", "--without-pip", venv)
	site := strings.TrimSpace(run(t, "", nil, py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"))
	cloneSite := strings.TrimSpace(run(t, "", nil, filepath.Join(venv, "bin", "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"))
	require.NoError(t, os.WriteFile(filepath.Join(cloneSite, "lab-venv.pth"), []byte(site+"\n"), 0o644))
	for script, call := range map[string]string{
		"jupyter":            "from jupyter_core.command import main",
		"jupyter-kernelspec": "from jupyter_client.kernelspecapp import KernelSpecApp\nmain = KernelSpecApp.launch_instance",
	} {
		body := "#!" + filepath.Join(venv, "bin", "python") + "\nimport sys\n" + call + "\nsys.exit(main())\n"
		require.NoError(t, os.WriteFile(filepath.Join(venv, "bin", script), []byte(body), 0o755))
	}
	return Repo{Dir: dir}
}

// run runs a command and returns its standard output; it fails the test on an error.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s:\n%s%s", name, strings.Join(args, " "), out, stderr.String())
	return string(out) + stderr.String()
}

// TestEachCheckoutStartsItsOwnKernel sets up two clones one after the other, as two users'
// copies (a workshop copy and a development copy) would be, each with `cifarlab kernel
// install` and its own venv, and asks each clone's real Jupyter (`jupyter kernelspec list
// --json`) which kernel its notebooks start: its own, also when the other clone has written a
// user-level kernelspec. When a kernelspec of the other clone comes first on Jupyter's path
// (a user-level one from an older setup, with a Jupyter that searches the user's folder
// before the venv's), the lab's and doctor's check warns, names the other checkout and gives
// the command that removes it; after that command the clone's own kernel is used again.
func TestEachCheckoutStartsItsOwnKernel(t *testing.T) {
	repo := testRepo(t)
	py := requireLab(t, repo)
	bin := cifarlabBinary(t, repo)
	a := cloneWithVenv(t, repo, py, "a")
	b := cloneWithVenv(t, repo, py, "b")
	user := filepath.Join(t.TempDir(), "xdg")
	userData := filepath.Join(user, "jupyter")
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case jupyterDataDirEnv, "JUPYTER_PATH", "JUPYTER_PREFER_ENV_PATH", "VIRTUAL_ENV", repoEnv:
			continue // the user's own choices: this test checks the defaults
		}
		env = append(env, kv)
	}
	env = append(env, "XDG_DATA_HOME="+user)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	for _, k := range []string{jupyterDataDirEnv, "JUPYTER_PATH", "JUPYTER_PREFER_ENV_PATH"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	install := func(c Repo, args ...string) string {
		return run(t, c.Dir, env, bin, append([]string{"kernel", "install", "--repo", c.Dir, "--cpu-backend", "go"}, args...)...)
	}
	owners := func(c Repo, extraEnv ...string) []owner {
		jup, err := findJupyter(c)
		require.NoError(t, err)
		require.Equal(t, filepath.Join(c.VenvDir(), "bin", "jupyter"), jup.Bin)
		o, err := kernelOwners(context.Background(), jup, extraEnv...)
		require.NoError(t, err)
		require.Len(t, o, 2)
		return o
	}
	// requireOwn checks what the clone's real Jupyter lists, and the lab's check of it.
	requireOwn := func(c Repo, extraEnv ...string) {
		t.Helper()
		jup, err := findJupyter(c)
		require.NoError(t, err)
		specs, err := jup.KernelSpecs(context.Background(), extraEnv...)
		require.NoError(t, err)
		for _, name := range []string{CPUKernel, CUDAKernel} {
			ls, ok := specs[name]
			require.True(t, ok, "%s: jupyter kernelspec list has no %s: %v", c.Dir, name, specs)
			require.Equal(t, kernelDir(filepath.Join(c.VenvDir(), "share", "jupyter"), name), ls.ResourceDir)
			require.Equal(t, c.Dir, ls.Spec.Metadata.Cifarlab.Repo)
			require.Contains(t, ls.Spec.Argv, "--go_work="+c.Dir)
		}
		for _, o := range owners(c, extraEnv...) {
			line, ok, fix := o.Describe(c)
			require.True(t, ok, "%s: %s (fix %s)", c.Dir, line, fix)
			require.Contains(t, line, "this checkout ("+c.Dir+")")
		}
	}

	out := install(a)
	require.Contains(t, out, "Jupyter data directory "+filepath.Join(a.VenvDir(), "share", "jupyter")+" (the venv "+a.VenvDir())
	out = install(b)
	require.Contains(t, out, filepath.Join(b.VenvDir(), "share", "jupyter"))
	requireOwn(a) // before, b's setup had rewritten the one user-level kernelspec a's lab used
	requireOwn(b)
	require.NoDirExists(t, kernelDir(userData, CPUKernel), "nothing was written to the user's folder")

	// b also installs user-level kernels (--user, as an older setup did): a's Jupyter, which
	// searches its venv first, still starts a's.
	out = install(b, "--user")
	require.Contains(t, out, kernelDir(userData, CPUKernel))
	requireOwn(a)

	// A Jupyter that searches the user's folder first (JUPYTER_PREFER_ENV_PATH=0; so does one
	// whose venv the user does not own) would start b's kernels in a's lab: warned, with the fix.
	stale := owners(a, "JUPYTER_PREFER_ENV_PATH=0")
	for _, o := range stale {
		used, found := o.Used()
		require.True(t, found)
		require.Equal(t, kernelDir(userData, o.Name), used.Dir)
		line, ok, fix := o.Describe(a)
		require.False(t, ok, line)
		require.Equal(t, fmt.Sprintf("%s: notebooks would start the kernel of ANOTHER checkout, %s (kernelspec %s; this checkout's is further down Jupyter's path)",
			o.Name, b.Dir, used.Dir), line)
		require.Equal(t, "cifarlab kernel uninstall --jupyter-data-dir "+userData, fix, "b's install left a manifest there")
	}
	// doctor's kernelspec line says the same.
	jup, err := findJupyter(a)
	require.NoError(t, err)
	specs, err := jup.KernelSpecs(context.Background(), "JUPYTER_PREFER_ENV_PATH=0")
	require.NoError(t, err)
	c := withOwner(checkKernelSpec(a, CPUKernel, specs, goTools{}), stale[0], a)
	require.Equal(t, StatusWarn, c.Status, c.Detail)
	require.Contains(t, c.Detail, "notebooks would start the kernel of ANOTHER checkout, "+b.Dir)
	require.Equal(t, "cifarlab kernel uninstall --jupyter-data-dir "+userData, c.Fix)

	// The fix, run as printed: a's own kernels are used again.
	args := strings.Fields(c.Fix)[1:]
	run(t, a.Dir, env, bin, args...)
	requireOwn(a, "JUPYTER_PREFER_ENV_PATH=0")

	// A clone without kernels of its own, with another checkout's user-level ones left over:
	// the fix removes them and installs its own.
	install(b, "--user")
	run(t, a.Dir, env, bin, "kernel", "uninstall", "--repo", a.Dir)
	o := owners(a)[0]
	line, ok, fix := o.Describe(a)
	require.False(t, ok)
	require.Contains(t, line, "this checkout has none on Jupyter's path")
	require.Equal(t, "cifarlab kernel uninstall --jupyter-data-dir "+userData+" && cifarlab kernel install", fix)
}
