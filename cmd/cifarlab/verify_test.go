package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/cifarlab/cifarlab/internal/kernel"
	"github.com/stretchr/testify/require"
)

// copiedSubset writes a real-layout binary CIFAR-10 folder with no record of any kind, as a
// copied or converted subset has (the records are synthetic images, but nothing marks them so).
func copiedSubset(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, data.Synthesize(root, data.CIFAR10(), data.SynthOptions{TrainSize: 50, TestSize: 20}))
	require.NoError(t, os.Remove(filepath.Join(root, "cifar-10-batches-bin", data.SyntheticMarker)))
	return root
}

// TestVerifyCommand: a copied subset is said to be real but unverified, verify says it is NOT
// the official files and why (exit 1), a wrong archive is refused by its SHA-256, a dataset that
// is not there is not verified, --status says
// each dataset's one line (--json: with its image counts, a line without paths, and an error
// for a split that does not load), and a folder with nothing in it is no data to verify.
func TestVerifyCommand(t *testing.T) {
	root := copiedSubset(t)
	dir := filepath.Join(root, "cifar-10-batches-bin")
	code, stdout, stderr := runDataCmd(t, "verify", "--data", root)
	require.Equal(t, 1, code, stdout)
	require.Equal(t, "cifar10: real, unverified (binary layout, in "+dir+"): a subset or a conversion, not the official files (50 training and 20 test images; "+
		"the official files hold 50000 and 10000), so no official checksum covers it and `cifarlab verify` can only confirm that; it is used as real data"+
		"\n  real data, but NOT verifiable as the official files: data: not the official files: "+
		filepath.Join(dir, "data_batch_1.bin")+" has 30730 bytes (10 images), the official file 30730000 bytes (10000 images) "+
		"(a subset or a conversion, not the official archive's files): the lab uses them as real, unverified data; for the official files run "+
		"`cifarlab download --dataset cifar10 --data DIR`\n", stdout)
	require.Equal(t, "cifarlab verify: cifar10 in "+dir+": not the official files\n", stderr)
	require.NoFileExists(t, filepath.Join(dir, data.VerifiedMarker))

	bad := filepath.Join(t.TempDir(), "cifar-10-binary.tar.gz")
	require.NoError(t, os.WriteFile(bad, []byte("not the archive"), 0o644))
	code, stdout, _ = runDataCmd(t, "verify", "--data", root, "--dataset", "cifar10", "--archive", bad)
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "  not verified: data: "+bad+": SHA-256 mismatch: it has SHA-256 ")
	require.Contains(t, stdout, "the official cifar-10-binary.tar.gz has c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd")

	code, _, stderr = runDataCmd(t, "verify", "--data", root, "--dataset", "cifar100", "--archive", bad)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "cifarlab verify: cifar100 in "+root+": not verified")

	code, stdout, stderr = runDataCmd(t, "verify", "--data", root, "--status")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, data.StateOf(root, data.CIFAR10()).String()+"\n"+data.StateOf(root, data.CIFAR100(data.LabelsFine)).String()+"\n", stdout)

	code, stdout, stderr = runDataCmd(t, "verify", "--data", root, "--status", "--json")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, `[{"dataset": "cifar10", "kind": "real, unverified", "layout": "binary", "train_images": 50, "test_images": 20,
		"line": "cifar10: real, unverified (binary layout, 50 train / 20 test images)"},
		{"dataset": "cifar100", "kind": "none", "train_images": 0, "test_images": 0, "line": "cifar100: no data"}]`, stdout)
	synth := t.TempDir()
	require.NoError(t, data.Synthesize(synth, data.CIFAR100(data.LabelsFine), data.SynthOptions{TrainSize: 30, TestSize: 10}))
	code, stdout, stderr = runDataCmd(t, "verify", "--data", synth, "--status", "--json", "--dataset", "cifar100")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, `[{"dataset": "cifar100", "kind": "synthetic", "layout": "binary", "train_images": 30, "test_images": 10,
		"line": "cifar100: synthetic (binary layout, 30 train / 10 test images)"}]`, stdout)
	require.NoError(t, os.Truncate(filepath.Join(dir, "test_batch.bin"), 100))
	code, _, stderr = runDataCmd(t, "verify", "--data", root, "--status", "--json")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "cifar10: real, unverified, but its test split does not load: ")
	code, _, stderr = runDataCmd(t, "verify", "--data", root, "--json")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--json goes with --status")

	empty := t.TempDir()
	code, _, stderr = runDataCmd(t, "verify", "--data", empty)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "cifarlab verify: --data "+empty+" holds no real CIFAR data to verify: cifar10: no data in "+empty)
}

// TestDoctorDataUnverified: doctor's data line is the same one line, and real data with no
// download record is a warning whose fix is verify, never a failure asking for a download.
func TestDoctorDataUnverified(t *testing.T) {
	root := copiedSubset(t)
	checks := probeData(root)(context.Background())
	require.Len(t, checks, 2)
	require.Equal(t, kernel.Check{Name: "data cifar10", Status: kernel.StatusWarn, Detail: data.StateOf(root, data.CIFAR10()).String(),
		Fix: "cifarlab verify --data " + root + " --dataset cifar10 (offline; add --archive FILE for the binary layout)"}, checks[0])
	require.Equal(t, kernel.StatusAbsent, checks[1].Status)
	require.Equal(t, "optional: cifarlab download --dataset cifar100 --data "+root, checks[1].Fix)
}
