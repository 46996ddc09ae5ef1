package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cifarlab/cifarlab/cifarlib/data"

	"github.com/stretchr/testify/require"
)

func writeFileForTest(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }

// officialSizeArchive builds a gzip tar in the official CIFAR-10 layout with files of the
// official sizes (all-zero records: label 0, black images) and returns it with its SHA-256.
func officialSizeArchive(t *testing.T) ([]byte, string) {
	t.Helper()
	spec := data.CIFAR10()
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		tw := tar.NewWriter(zw)
		_ = tw.WriteHeader(&tar.Header{Name: spec.Dir + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		zeros := make([]byte, 1<<20)
		for _, name := range append(append([]string(nil), spec.TrainFiles...), spec.TestFiles...) {
			size := int64(10000 * spec.RecordBytes())
			_ = tw.WriteHeader(&tar.Header{Name: spec.Dir + "/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size})
			for left := size; left > 0; left -= int64(len(zeros)) {
				_, _ = tw.Write(zeros[:min(left, int64(len(zeros)))])
			}
		}
		_ = tw.Close()
		_ = zw.Close()
		_ = pw.Close()
	}()
	archive, err := io.ReadAll(pr)
	require.NoError(t, err)
	sum := sha256.Sum256(archive)
	return archive, hex.EncodeToString(sum[:])
}

func TestDownloadCommand(t *testing.T) {
	archive, sum := officialSizeArchive(t)
	var requests int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
		_, _ = w.Write(archive)
	}))
	defer srv.Close()
	data := t.TempDir()
	args := []string{"download", "--dataset", "cifar10", "--data", data, "--url", srv.URL + "/cifar-10-binary.tar.gz", "--sha256", sum, "--quiet"}
	code, stdout, stderr := runDataCmd(t, args...)
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stderr)
	require.Equal(t, "cifar10: verified data in "+filepath.Join(data, "cifar-10-batches-bin")+"\n", stdout)
	require.Equal(t, 1, requests)

	// Again: nothing to do.
	code, _, stderr = runDataCmd(t, args...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 1, requests)

	code, stdout, stderr = runDataCmd(t, "inspect", "--dataset", "cifar10", "--data", data, "--json")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, `"records": 50000`)
	require.Contains(t, stdout, `"records": 10000`)
	require.Contains(t, stdout, `"histogram": [
        50000,`)
}

func TestDownloadCommandOfflineAndErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/cifar-100-binary.tar.gz"
	srv.Close() // offline: nothing listens
	data := t.TempDir()
	code, stdout, stderr := runDataCmd(t, "download", "--dataset", "cifar100", "--data", data, "--url", url, "--retries", "0", "--quiet")
	require.Equal(t, 1, code)
	require.Empty(t, stdout)
	archive := filepath.Join(data, "cifar-100-binary.tar.gz")
	require.Contains(t, stderr, "cifarlab download: data: downloading the cifar100 archive from "+url+" failed")
	require.Contains(t, stderr, "check that its SHA-256 is 58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec, and put it at "+archive)
	require.Contains(t, stderr, "`cifarlab synth --dataset cifar100 --out DIR`")
	entries, err := os.ReadDir(data)
	require.NoError(t, err)
	require.Empty(t, entries)

	code, _, stderr = runDataCmd(t, "download", "--data", data)
	require.Equal(t, 2, code)
	require.Equal(t, "cifarlab download: --dataset is required: cifar10 or cifar100\n", stderr)
}
