package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/kernel"
	"github.com/stretchr/testify/require"
)

// repoForTest is the checkout the tests run in; the commands need its built tools.
func repoForTest(t *testing.T) kernel.Repo {
	t.Helper()
	repo, err := kernel.FindRepo("../..")
	require.NoError(t, err)
	return repo
}

// requireTools skips (or, in CI, fails) when kernel/setup.sh has not built the pinned tools.
func requireTools(t *testing.T, repo kernel.Repo) {
	t.Helper()
	if _, err := os.Stat(repo.Tool("gonb")); err == nil {
		return
	}
	if ci := strings.ToLower(os.Getenv("CI")); ci != "" && ci != "false" && ci != "0" {
		t.Fatalf("CI: %s is missing: kernel/setup.sh must run before the tests", repo.Tool("gonb"))
	}
	t.Skipf("%s is missing: run bash kernel/setup.sh", repo.Tool("gonb"))
}

func TestKernelCommandUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"kernel"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "usage: cifarlab kernel install [--user | --prefix DIR | --jupyter-data-dir DIR] [flags]\n")
	require.Equal(t, "cifarlab kernel: expected a sub-command: install or uninstall\n", stderr.String())

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 2, run([]string{"kernel", "install", "--user", "--prefix", "/x"}, &stdout, &stderr))
	require.Equal(t, "cifarlab kernel: --user cannot be combined with --prefix or --jupyter-data-dir\n", stderr.String())

	stderr.Reset()
	require.Equal(t, 1, run([]string{"kernel", "uninstall", "--jupyter-data-dir", t.TempDir()}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "cifarlab kernel: no cifarlab kernel manifest at ")
}

func TestKernelInstallPrefixJSONAndUninstall(t *testing.T) {
	repo := repoForTest(t)
	requireTools(t, repo)
	prefix := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"kernel", "install", "--prefix", prefix, "--repo", repo.Dir, "--cuda-backend", "xla:cuda", "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var res kernel.InstallResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	dataDir := filepath.Join(prefix, "share", "jupyter")
	require.Equal(t, dataDir, res.DataDir)
	require.Len(t, res.Kernels, 2)
	require.Equal(t, kernel.CPUKernel, res.Kernels[0].Name)
	require.Equal(t, kernel.CUDAKernel, res.Kernels[1].Name)
	require.Equal(t, "xla:cuda", res.Kernels[1].Spec.Env["GOMLX_BACKEND"])
	require.FileExists(t, filepath.Join(dataDir, "kernels", "cifarlab-cuda", "kernel.json"))

	stdout.Reset()
	require.Equal(t, 0, run([]string{"kernel", "uninstall", "--prefix", prefix}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "removed "+filepath.Join(dataDir, "kernels", "cifarlab-cpu", "kernel.json")+"\n")
	entries, err := os.ReadDir(prefix)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestDoctorCommand(t *testing.T) {
	repo := repoForTest(t)
	requireTools(t, repo)
	empty := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"doctor", "--json", "--repo", repo.Dir, "--jupyter-data-dir", empty, "--data", t.TempDir()}, &stdout, &stderr)
	var report kernel.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &report), stdout.String())
	status := map[string]kernel.Status{}
	for _, c := range report.Checks {
		status[c.Name] = c.Status
		if c.Status != kernel.StatusOK {
			require.NotEmpty(t, c.Fix, "check %q has no fix", c.Name)
		}
	}
	require.Equal(t, kernel.StatusOK, status["go"])
	require.Equal(t, kernel.StatusOK, status["gonb"])
	require.Equal(t, kernel.StatusOK, status["gopls"])
	require.Equal(t, kernel.StatusOK, status["backend go (pure Go)"])
	require.Equal(t, kernel.StatusAbsent, status["data cifar10"])
	require.Equal(t, kernel.StatusAbsent, status["data cifar100"])
	if status["jupyter"] == kernel.StatusOK {
		// Jupyter is there but the empty data dir has no cifarlab kernels: required, so exit 1.
		require.Equal(t, kernel.StatusFail, status["kernelspec cifarlab-cpu"])
		require.Equal(t, kernel.StatusFail, status["kernelspec cifarlab-cuda"])
	}
	require.False(t, report.OK)
	require.Equal(t, 1, code)
	require.Equal(t, "cifarlab doctor: required items are missing (see the checklist)\n", stderr.String())

	// With the kernels installed there, everything required is in place (when the lab venv is).
	require.Equal(t, 0, run([]string{"kernel", "install", "--jupyter-data-dir", empty, "--repo", repo.Dir}, &bytes.Buffer{}, &stderr), stderr.String())
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"doctor", "--repo", repo.Dir, "--jupyter-data-dir", empty, "--data", t.TempDir()}, &stdout, &stderr)
	if _, err := os.Stat(filepath.Join(repo.VenvDir(), "bin", "jupyter")); err != nil {
		t.Skipf("no lab venv: the rest needs Jupyter (%s)", stdout.String())
	}
	require.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "[ ok ] kernelspec cifarlab-cpu")
	require.Contains(t, stdout.String(), "[ ok ] kernelspec cifarlab-cuda")
	require.Contains(t, stdout.String(), "[ ok ] jupyterlab                 JupyterLab ")
	require.True(t, strings.HasSuffix(stdout.String(), "doctor: everything required is in place\n"), stdout.String())
}

func TestLabCommandFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"lab", "--no-token", "--token", "abc"}, &stdout, &stderr))
	require.Equal(t, "cifarlab lab: --no-token and --token exclude each other\n", stderr.String())
	stderr.Reset()
	require.Equal(t, 1, run([]string{"lab", "--repo", t.TempDir()}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "cifarlab lab: cifarlab repository not found: --repo=")
}
