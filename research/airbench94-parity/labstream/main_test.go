package main

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"
	"github.com/stretchr/testify/require"
)

// writeLayout writes a small CIFAR-10 binary layout (perFile random records in each of the five
// training files, 4 in the test file) under root.
func writeLayout(t *testing.T, root string, perFile int) {
	dir := filepath.Join(root, "cifar-10-batches-bin")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	rng := rand.New(rand.NewPCG(1, 2))
	record := func(n int) []byte {
		b := make([]byte, n*(1+data.ImageBytes))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		for i := 0; i < n; i++ {
			b[i*(1+data.ImageBytes)] = byte(i % 10)
		}
		return b
	}
	for _, f := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), record(perFile), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test_batch.bin"), record(4), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "batches.meta.txt"),
		[]byte("airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n"), 0o644))
}

// TestWriteIsTheTrainingStream: the file holds, batch after batch, the images and labels the
// training data set yields for the seed (airbench's augmentation), and nothing else.
func TestWriteIsTheTrainingStream(t *testing.T) {
	root := t.TempDir()
	writeLayout(t, root, 5) // 25 records: 6 batches of 4 per epoch, one record dropped
	out := filepath.Join(t.TempDir(), "s3.batches")
	n, err := write(root, 3, 2, 4, out)
	require.NoError(t, err)
	require.Equal(t, 12, n)

	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	record := 4*data.ImageBytes*4 + 4*4
	require.Len(t, raw, n*record)

	train, _, _, err := data.LoadPrepared(root, data.CIFAR10(), data.SynthOptions{})
	require.NoError(t, err)
	ds, err := data.NewDataset("train", train, data.DatasetOptions{BatchSize: 4, Shuffle: true, Seed: 3, Epochs: 2,
		DropRemainder: true, Augment: true, Augmentation: data.AugmentAltFlip})
	require.NoError(t, err)
	k := 0
	for hb, err := range ds.HostBatches() {
		require.NoError(t, err)
		chunk := raw[k*record : (k+1)*record]
		images := make([]float32, len(hb.Images))
		labels := make([]int32, len(hb.Labels))
		require.NoError(t, binary.Read(bytes.NewReader(chunk[:4*data.ImageBytes*4]), binary.LittleEndian, images))
		require.NoError(t, binary.Read(bytes.NewReader(chunk[4*data.ImageBytes*4:]), binary.LittleEndian, labels))
		require.Equal(t, hb.Images, images, "batch %d", k)
		require.Equal(t, hb.Labels, labels, "batch %d", k)
		k++
	}
	require.Equal(t, n, k)

	// Another seed is another stream.
	other := filepath.Join(t.TempDir(), "s4.batches")
	_, err = write(root, 4, 2, 4, other)
	require.NoError(t, err)
	raw4, err := os.ReadFile(other)
	require.NoError(t, err)
	require.NotEqual(t, raw, raw4)
}

// TestWriteRefusesSyntheticData: a folder without real CIFAR-10 gets an error and no file.
func TestWriteRefusesSyntheticData(t *testing.T) {
	root := t.TempDir()
	_, err := data.Prepare(root, data.CIFAR10(), data.SynthOptions{TrainSize: 8, TestSize: 4})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "s0.batches")
	_, err = write(root, 0, 1, 4, out)
	require.ErrorContains(t, err, "no real CIFAR-10")
	require.NoFileExists(t, out)
}
