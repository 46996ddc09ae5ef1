package kernel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeBinaryCIFAR10 writes a small CIFAR-10 folder in the official binary format (per record
// a label byte and 3072 channel-planar pixels) into root/cifar-10-batches-bin, with perFile
// records in each of the five training files and test records in test_batch.bin, and no
// record of a download or of synthesis: a real-layout folder as a copy of the data has.
func writeBinaryCIFAR10(t *testing.T, root string, perFile, test int) {
	t.Helper()
	dir := filepath.Join(root, "cifar-10-batches-bin")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	write := func(name string, n, seed int) {
		body := make([]byte, 0, n*3073)
		for i := range n {
			body = append(body, byte((i+seed)%10))
			for p := range 3072 {
				body = append(body, byte((31*(i+seed)+7*p)%256))
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), body, 0o644))
	}
	for k := 1; k <= 5; k++ {
		write("data_batch_"+string(rune('0'+k))+".bin", perFile, k*perFile)
	}
	write("test_batch.bin", test, 0)
}

// TestNotebookUsesUnverifiedRealData runs a notebook's first cell and a training cell through
// the real CPU kernel with $CIFARLAB_DATA holding a real-layout folder that has no download
// record: the first cell says "real, unverified" in its one data line (never synthetic), the lab
// holds the folder's images, and the run trains on them and records them as real.
func TestNotebookUsesUnverifiedRealData(t *testing.T) {
	repo := testRepo(t)
	jupyterDir := installKernels(t, repo)
	dir := t.TempDir()
	writeBinaryCIFAR10(t, filepath.Join(dir, "data"), 12, 20)
	cells := []string{
		"import (\n\t\"github.com/cifarlab/cifarlab/cifarlib/data\"\n\t\"github.com/cifarlab/cifarlab/cifarlib/nb\"\n" +
			"\t\"github.com/cifarlab/cifarlab/cifarlib/training\"\n)\n\n" +
			"var lab = nb.Open(data.CIFAR10())\n\n%%\nfmt.Println(lab)",
		"%%\ns := lab.Settings()\ns.Run.Steps, s.Data.BatchSize, s.Run.Seed = 3, 8, 1\nres := nb.Must(lab.Fit(\"real\", s))\nfmt.Println(\"trained on:\", res.Data)",
	}
	out := runCells(t, repo, jupyterDir, dir, "interrupt_cells.py", []string{CPUKernel, "-1", ""}, cells...)
	res := cellResults(t, out, len(cells))
	require.Equal(t, "ok", res[0].Status, res[0].Text)
	require.Contains(t, res[0].Text, "\ndata:    cifar10: real, unverified (binary layout, in $CIFARLAB_DATA/cifar-10-batches-bin): "+
		"a subset or a conversion, not the official files (60 training and 20 test images; the official files hold 50000 and 10000), "+
		"so no official checksum covers it and `cifarlab verify` can only confirm that; it is used as real data\n")
	require.Contains(t, res[0].Text, "\nimages:  60 training and 20 test images of cifar10 (10 classes)\n", "the folder's images, not 5000 synthetic ones")
	require.NotContains(t, res[0].Text, "SYNTHETIC")
	require.NoDirExists(t, filepath.Join(dir, "data", "synthetic"), "no synthetic stand-in was made")

	require.Equal(t, "ok", res[1].Status, res[1].Text)
	require.Contains(t, res[1].Text, "trained on: cifar10 (real, unverified), binary layout, 60 train / 20 test images, subset: 60 of 50,000 training images and 20 of 10,000 test images, in $CIFARLAB_DATA/cifar-10-batches-bin\n")
}
