package data

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// archiveServer serves archive bytes at /<name>; behave may take over a request (given its
// 1-based number) and return true, else the archive is served normally.
type archiveServer struct {
	*httptest.Server
	requests atomic.Int32
}

func newArchiveServer(t *testing.T, archive []byte, behave func(n int, w http.ResponseWriter, r *http.Request) bool) *archiveServer {
	s := &archiveServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.requests.Add(1))
		if behave != nil && behave(n, w, r) {
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
		_, _ = w.Write(archive)
	}))
	t.Cleanup(s.Close)
	return s
}

// hijackWrite sends raw bytes on the connection and closes it abruptly.
func hijackWrite(t *testing.T, w http.ResponseWriter, raw []byte) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	require.NoError(t, err)
	_, _ = buf.Write(raw)
	_ = buf.Flush()
	_ = conn.Close()
}

// testArchive returns a small spec whose checksum is that of its good archive, and the archive.
func testArchive(t *testing.T, base Spec) (Spec, []byte) {
	spec := smallSpec(base)
	archive := gzipBytes(t, buildTar(t, goodEntries(spec)))
	spec.ArchiveSHA256 = sha256Hex(archive)
	return spec, archive
}

// requireNothingTaken checks that a failed download left no archive, no partial file and no data.
func requireNothingTaken(t *testing.T, root string, spec Spec) {
	t.Helper()
	require.Empty(t, listTree(t, root), "a failed download left files behind")
	require.ErrorIs(t, Verify(root, spec), ErrNotVerified)
}

func TestDownloadGoodArchive(t *testing.T) {
	spec, archive := testArchive(t, CIFAR100(LabelsFine))
	srv := newArchiveServer(t, archive, nil)
	root := t.TempDir()
	var progress bytes.Buffer
	url := srv.URL + "/cifar-100-binary.tar.gz"
	require.NoError(t, Download(context.Background(), root, spec, DownloadOptions{URL: url, Progress: &progress}))
	require.Equal(t, int32(1), srv.requests.Load())
	require.NoError(t, Verify(root, spec))
	require.Contains(t, progress.String(), "cifar-100-binary.tar.gz 100%")
	require.Contains(t, progress.String(), "extracting")

	kept, err := os.ReadFile(filepath.Join(root, spec.ArchiveName))
	require.NoError(t, err)
	require.True(t, bytes.Equal(archive, kept), "the verified archive is kept")
	require.ElementsMatch(t, []string{"cifar-100-binary.tar.gz", "cifar-100-binary", "cifar-100-binary/fine_label_names.txt",
		"cifar-100-binary/train.bin", "cifar-100-binary/test.bin", "cifar-100-binary/" + VerifiedMarker}, listTree(t, root))

	var info VerifiedInfo
	raw, err := os.ReadFile(filepath.Join(root, spec.Dir, VerifiedMarker))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &info))
	require.Equal(t, VerifiedInfo{Archive: "cifar-100-binary.tar.gz", SHA256: spec.ArchiveSHA256, URL: url,
		Files: map[string]int64{"train.bin": 2 * 3074, "test.bin": 3 * 3074}}, info)

	train, err := LoadSplit(root, spec, SplitTrain)
	require.NoError(t, err)
	want := testRecords(spec, 2)
	require.Equal(t, want.RawLabels, train.RawLabels)

	// Second call: verified data present, nothing fetched.
	progress.Reset()
	require.NoError(t, Download(context.Background(), root, spec, DownloadOptions{URL: url, Progress: &progress}))
	require.Equal(t, int32(1), srv.requests.Load())
	require.Contains(t, progress.String(), "verified data already present")

	// Prepare uses the verified data instead of synthesizing.
	dataRoot, synthetic, err := PrepareRoot(root, spec, SynthOptions{})
	require.NoError(t, err)
	require.False(t, synthetic)
	require.Equal(t, root, dataRoot)

	// A damaged data file is no longer verified, and Download repairs it from the kept archive.
	require.NoError(t, os.Truncate(filepath.Join(root, spec.Dir, "test.bin"), 10))
	require.ErrorContains(t, Verify(root, spec), "has 10 bytes")
	require.NoError(t, Download(context.Background(), root, spec, DownloadOptions{URL: url}))
	require.Equal(t, int32(1), srv.requests.Load())
	require.NoError(t, Verify(root, spec))
}

func TestDownloadWrongChecksum(t *testing.T) {
	spec, archive := testArchive(t, CIFAR10())
	srv := newArchiveServer(t, archive, nil)
	root := t.TempDir()
	want := spec.ArchiveSHA256
	spec.ArchiveSHA256 = sha256Hex([]byte("something else"))
	err := Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/a.tgz", Retries: 3, RetryWait: time.Millisecond})
	require.ErrorIs(t, err, ErrChecksum)
	require.ErrorContains(t, err, fmt.Sprintf("the %d bytes received have SHA-256 %s, want %s", len(archive), want, spec.ArchiveSHA256))
	require.Equal(t, int32(1), srv.requests.Load(), "a checksum mismatch is not retried")
	requireNothingTaken(t, root, spec)

	// The override option is the same as the spec's checksum.
	require.NoError(t, Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/a.tgz", SHA256: want}))
}

func TestDownloadTruncatedBody(t *testing.T) {
	spec, archive := testArchive(t, CIFAR10())
	half := archive[:len(archive)/2]
	tests := map[string]func(n int, w http.ResponseWriter, r *http.Request) bool{
		"content-length longer than body": func(n int, w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
			_, _ = w.Write(half)
			return true
		},
		"chunked body cut": func(n int, w http.ResponseWriter, r *http.Request) bool {
			hijackWrite(t, w, fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(half), half))
			return true
		},
		"no length, connection closed early": func(n int, w http.ResponseWriter, r *http.Request) bool {
			hijackWrite(t, w, append([]byte("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"), half...))
			return true
		},
	}
	for name, behave := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newArchiveServer(t, archive, behave)
			root := t.TempDir()
			err := Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/x"})
			require.Error(t, err)
			var de *DownloadError
			require.ErrorAs(t, err, &de)
			if name == "no length, connection closed early" {
				// Indistinguishable from a complete body on the wire: the checksum catches it.
				require.ErrorIs(t, err, ErrChecksum)
			} else {
				require.ErrorContains(t, err, "transfer interrupted after")
			}
			requireNothingTaken(t, root, spec)
		})
	}
}

func TestDownloadNotFoundAndOffline(t *testing.T) {
	spec, archive := testArchive(t, CIFAR10())
	srv := newArchiveServer(t, archive, func(n int, w http.ResponseWriter, r *http.Request) bool {
		http.NotFound(w, r)
		return true
	})
	root := t.TempDir()
	url := srv.URL + "/cifar-10-binary.tar.gz"
	err := Download(context.Background(), root, spec, DownloadOptions{URL: url, Retries: 2, RetryWait: time.Millisecond})
	var de *DownloadError
	require.ErrorAs(t, err, &de)
	require.Equal(t, http.StatusNotFound, de.StatusCode)
	require.Equal(t, int32(1), srv.requests.Load(), "a 404 is not retried")
	archivePath := filepath.Join(root, "cifar-10-binary.tar.gz")
	require.ErrorContains(t, err, "HTTP status 404 Not Found")
	require.ErrorContains(t, err, "If this machine is offline, download "+url)
	require.ErrorContains(t, err, "check that its SHA-256 is "+spec.ArchiveSHA256)
	require.ErrorContains(t, err, "and put it at "+archivePath)
	require.ErrorContains(t, err, "cifarlab download --dataset cifar10 --data "+root)
	requireNothingTaken(t, root, spec)

	// Offline: nothing listens.
	srv.Close()
	err = Download(context.Background(), root, spec, DownloadOptions{URL: url})
	require.ErrorAs(t, err, &de)
	require.Equal(t, 0, de.StatusCode)
	require.ErrorContains(t, err, "put it at "+archivePath)
	requireNothingTaken(t, root, spec)

	// Following the advice works without a network.
	require.NoError(t, os.WriteFile(archivePath, archive, 0o644))
	var progress bytes.Buffer
	require.NoError(t, Download(context.Background(), root, spec, DownloadOptions{URL: url, Progress: &progress}))
	require.Contains(t, progress.String(), "using "+archivePath+" (SHA-256 verified)")
	require.NoError(t, Verify(root, spec))
	var info VerifiedInfo
	raw, _ := os.ReadFile(filepath.Join(root, spec.Dir, VerifiedMarker))
	require.NoError(t, json.Unmarshal(raw, &info))
	require.Equal(t, "", info.URL)
}

func TestDownloadInterruptedThenRetried(t *testing.T) {
	spec, archive := testArchive(t, CIFAR10())
	cut := func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n > 1 {
			return false
		}
		raw := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(archive))
		hijackWrite(t, w, append(raw, archive[:len(archive)/2]...))
		return true
	}

	// Built-in retry.
	srv := newArchiveServer(t, archive, cut)
	root := t.TempDir()
	var progress bytes.Buffer
	require.NoError(t, Download(context.Background(), root, spec,
		DownloadOptions{URL: srv.URL + "/x", Retries: 1, RetryWait: time.Millisecond, Progress: &progress}))
	require.Equal(t, int32(2), srv.requests.Load())
	require.Contains(t, progress.String(), "attempt 1 failed")
	require.NoError(t, Verify(root, spec))

	// No retry: the first call fails and leaves nothing; calling again succeeds.
	srv = newArchiveServer(t, archive, cut)
	root = t.TempDir()
	err := Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/x"})
	require.ErrorContains(t, err, fmt.Sprintf("transfer interrupted after %d bytes", len(archive)/2))
	requireNothingTaken(t, root, spec)
	require.NoError(t, Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/x"}))
	require.NoError(t, Verify(root, spec))

	// A 503 is retried too.
	srv = newArchiveServer(t, archive, func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	root = t.TempDir()
	require.NoError(t, Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/x", Retries: 2, RetryWait: time.Millisecond}))
	require.Equal(t, int32(2), srv.requests.Load())
}

func TestDownloadHostileArchive(t *testing.T) {
	spec := smallSpec(CIFAR10())
	entries := append(goodEntries(spec), tarEntry{name: spec.Dir + "/readme.html", typ: tar.TypeSymlink, linkname: "/etc/shadow"})
	archive := gzipBytes(t, buildTar(t, entries))
	spec.ArchiveSHA256 = sha256Hex(archive) // checksum matches: extraction is the last line of defence
	srv := newArchiveServer(t, archive, nil)
	root := t.TempDir()
	err := Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/x"})
	require.ErrorIs(t, err, ErrUnsafeArchive)
	require.ErrorContains(t, err, "links are not allowed")
	require.Equal(t, []string{"cifar-10-binary.tar.gz"}, listTree(t, root), "nothing may be extracted from a refused archive")
	require.ErrorIs(t, Verify(root, spec), ErrNotVerified)
}

func TestDownloadReplacesSyntheticAndBadArchive(t *testing.T) {
	spec, archive := testArchive(t, CIFAR10())
	srv := newArchiveServer(t, archive, nil)
	root := t.TempDir()
	require.NoError(t, Synthesize(root, spec, SynthOptions{TrainSize: 10, TestSize: 3}))
	archivePath := filepath.Join(root, spec.ArchiveName)
	require.NoError(t, os.WriteFile(archivePath, []byte("corrupt leftover"), 0o644))
	var progress bytes.Buffer
	require.NoError(t, Download(context.Background(), root, spec, DownloadOptions{URL: srv.URL + "/x", Progress: &progress}))
	require.Contains(t, progress.String(), "downloading it again")
	require.Equal(t, int32(1), srv.requests.Load())
	_, err := os.Stat(filepath.Join(root, spec.Dir, SyntheticMarker))
	require.ErrorIs(t, err, os.ErrNotExist, "the synthetic marker must go when real data replaces it")
	require.NoError(t, Verify(root, spec))
	test, err := LoadSplit(root, spec, SplitTest)
	require.NoError(t, err)
	require.Equal(t, testRecords(spec, 3).Pixels, test.Pixels)
}

func TestDownloadCancelled(t *testing.T) {
	spec, archive := testArchive(t, CIFAR10())
	release := make(chan struct{})
	srv := newArchiveServer(t, archive, func(n int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
		_, _ = w.Write(archive[:100])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	root := t.TempDir()
	err := Download(ctx, root, spec, DownloadOptions{URL: srv.URL + "/x", Retries: 5, RetryWait: time.Millisecond})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.LessOrEqual(t, srv.requests.Load(), int32(1), "a cancelled download is not retried")
	requireNothingTaken(t, root, spec)
}
