package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/cifarlab/cifarlab/internal/kernel"
	"github.com/stretchr/testify/require"
)

// pythonLayoutData writes synthetic CIFAR-100 data with `cifarlab synth` and has Python
// (cifarlib/data/testdata/pickles/make_fixtures.py, NumPy from the repository venv) rewrite it in
// torchvision's layout. Without the venv the test is skipped; a venv without NumPy fails.
func pythonLayoutData(t *testing.T) (binRoot, pyRoot string) {
	t.Helper()
	python, err := filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "python"))
	require.NoError(t, err)
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no venv python at %s (run kernel/setup.sh)", python)
	}
	binRoot, pyRoot = t.TempDir(), t.TempDir()
	code, _, stderr := runDataCmd(t, "synth", "--dataset", "cifar100", "--out", binRoot, "--train", "200", "--test", "100", "--seed", "5")
	require.Equal(t, 0, code, stderr)
	script := filepath.Join("..", "..", "cifarlib", "data", "testdata", "pickles", "make_fixtures.py")
	out, err := exec.Command(python, script, "convert", binRoot, pyRoot).CombinedOutput()
	require.NoError(t, err, "%s (kernel/setup.sh installs NumPy from kernel/requirements-test.txt)", out)
	return binRoot, pyRoot
}

func TestInspectAndDiagnosePythonLayout(t *testing.T) {
	binRoot, pyRoot := pythonLayoutData(t)
	code, stdout, stderr := runDataCmd(t, "inspect", "--dataset", "cifar100", "--data", pyRoot, "--json")
	require.Equal(t, 0, code, stderr)
	var got inspectReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Equal(t, "python", got.Layout)
	require.Equal(t, filepath.Join(pyRoot, "cifar-100-python"), got.Dir)
	require.Equal(t, "unverified", got.Source, "synthetic pickles are not the official files")
	code, stdout, stderr = runDataCmd(t, "inspect", "--dataset", "cifar100", "--data", binRoot, "--json")
	require.Equal(t, 0, code, stderr)
	var want inspectReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &want))
	require.Equal(t, []string{"train"}, got.Splits[0].Files)
	require.Equal(t, []string{"test"}, got.Splits[1].Files)
	for k := range want.Splits {
		require.Equal(t, want.Splits[k].Records, got.Splits[k].Records)
		require.Equal(t, want.Splits[k].Histogram, got.Splits[k].Histogram)
		require.Equal(t, want.Splits[k].Mean, got.Splits[k].Mean)
	}

	code, stdout, stderr = runDataCmd(t, "inspect", "--dataset", "cifar100", "--labels", "coarse", "--data", pyRoot)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "data:     "+filepath.Join(pyRoot, "cifar-100-python")+" [unverified, python layout]", strings.Split(stdout, "\n")[1])

	t.Setenv("GOMLX_NO_AUTO_INSTALL", "1")
	code, stdout, stderr = runDataCmd(t, "diagnose", "--dataset", "cifar100", "--data", pyRoot, "--model", "linear", "--head", "10", "--batch", "8")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "MISMATCH: the head has 10 outputs but cifar100 has 100 classes")
	require.Contains(t, stdout, "Data: "+filepath.Join(pyRoot, "cifar-100-python")+" (python layout)\n")
}

func TestDownloadCommandPythonFormat(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	dataDir := t.TempDir()
	code, stdout, stderr := runDataCmd(t, "download", "--dataset", "cifar10", "--format", "python", "--data", dataDir,
		"--url", srv.URL+"/cifar-10-python.tar.gz", "--retries", "0", "--quiet")
	require.Equal(t, 1, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "HTTP status 404")
	require.Contains(t, stderr, "check that its SHA-256 is 6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce, and put it at "+
		filepath.Join(dataDir, "cifar-10-python.tar.gz"))

	code, _, stderr = runDataCmd(t, "download", "--dataset", "cifar100", "--format", "hdf5", "--data", dataDir)
	require.Equal(t, 2, code)
	require.Equal(t, "cifarlab download: data: unknown data format \"hdf5\": use \"binary\" or \"python\"\n", stderr)

	code, stdout, _ = runDataCmd(t, "download", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "cifar-100-python.tar.gz -> cifar-100-python/ (train, test, meta)")
	require.Contains(t, stdout, "-format string")

	require.Equal(t, "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
		data.CIFAR100(data.LabelsFine).InLayout(data.LayoutPython).ArchiveSHA256)
}

// TestDoctorDataPythonLayout checks the doctor's data line on torchvision's layout: real but
// unverified (synthetic pickles without their marker fail torchvision's MD5 pins), a warning whose
// fix is `cifarlab verify`, which says why; then verified through a marker as `cifarlab download
// --format python` writes it, naming the layout.
func TestDoctorDataPythonLayout(t *testing.T) {
	_, pyRoot := pythonLayoutData(t)
	spec := data.CIFAR100(data.LabelsFine).InLayout(data.LayoutPython)
	check := func() kernel.Check {
		for _, c := range probeData(pyRoot)(context.Background()) {
			if c.Name == "data cifar100" {
				return c
			}
		}
		t.Fatal("no cifar100 data check")
		return kernel.Check{}
	}
	c := check()
	require.Equal(t, kernel.StatusWarn, c.Status, "unverified real data is a note, not a failure")
	require.False(t, c.Required)
	require.Equal(t, "cifar100: real, unverified (python layout, in "+filepath.Join(pyRoot, "cifar-100-python")+
		"): not checked against the official checksums; check it with: cifarlab verify --data "+pyRoot+" --dataset cifar100", c.Detail)
	require.Equal(t, "cifarlab verify --data "+pyRoot+" --dataset cifar100 (offline; add --archive FILE for the binary layout)", c.Fix)
	code, stdout, stderr := runDataCmd(t, "verify", "--data", pyRoot, "--dataset", "cifar100")
	require.Equal(t, 1, code, stdout)
	require.Contains(t, stdout, "  real data, but NOT verifiable as the official files: ")
	require.Contains(t, stdout, "cifar-100-python/train has MD5 ")
	require.Contains(t, stdout, "(torchvision's pin)")
	require.Equal(t, "cifarlab verify: cifar100 in "+filepath.Join(pyRoot, "cifar-100-python")+": not the official files\n", stderr)

	info := data.VerifiedInfo{Archive: spec.ArchiveName, SHA256: spec.ArchiveSHA256, Files: map[string]int64{}}
	for _, name := range []string{"train", "test", "meta"} {
		fi, err := os.Stat(filepath.Join(pyRoot, spec.Dir, name))
		require.NoError(t, err)
		info.Files[name] = fi.Size()
	}
	raw, err := json.Marshal(info)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(pyRoot, spec.Dir, data.VerifiedMarker), raw, 0o644))
	c = check()
	require.Equal(t, kernel.StatusOK, c.Status)
	require.Equal(t, "cifar100: real, verified (python layout, in "+filepath.Join(pyRoot, "cifar-100-python")+")", c.Detail)
}
