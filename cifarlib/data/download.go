package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
)

// DownloadOptions controls Download. The zero value downloads the official archive quietly.
type DownloadOptions struct {
	// URL overrides spec.ArchiveURL (a mirror, or a test server).
	URL string
	// SHA256 overrides spec.ArchiveSHA256, the hex checksum the archive must have (tests).
	SHA256 string
	// Progress receives a progress bar and status lines; nil prints nothing.
	Progress io.Writer
	// Client makes the request; nil uses http.DefaultClient. Cancel with the context.
	Client *http.Client
	// Retries is the number of extra attempts after a failed transfer (network error,
	// interrupted or truncated body, HTTP 5xx). A 404 or a wrong checksum is not retried.
	Retries int
	// RetryWait is the pause before each retry; 0 means 2 seconds.
	RetryWait time.Duration
	// Layout selects the archive: LayoutBinary (default: cifar-10-binary.tar.gz,
	// cifar-100-binary.tar.gz) or LayoutPython (cifar-10-python.tar.gz, cifar-100-python.tar.gz,
	// the pickles torchvision reads), with the same checks.
	Layout Layout
}

// DownloadError reports a failed download. Its message says how to proceed offline: which
// file to fetch elsewhere and where to put it.
type DownloadError struct {
	// Dataset, URL and Archive (the local path the archive must have) describe the download.
	Dataset, URL, Archive, SHA256, Root string
	// StatusCode is the HTTP status of the response, or 0 if none arrived.
	StatusCode int
	// Err is the underlying error.
	Err error
	// transient marks failures worth retrying (network errors, interrupted bodies, HTTP 5xx).
	transient bool
}

// Error implements error.
func (e *DownloadError) Error() string {
	return fmt.Sprintf("data: downloading the %s archive from %s failed: %v. "+
		"If this machine is offline, download %s on another machine, check that its SHA-256 is %s, "+
		"and put it at %s; then run `cifarlab download --dataset %s --data %s` again, which verifies "+
		"and extracts it. To work without the real data, use synthetic data: `cifarlab synth --dataset %s --out DIR`",
		e.Dataset, e.URL, e.Err, e.URL, e.SHA256, e.Archive, e.Dataset, e.Root, e.Dataset)
}

// Unwrap returns the underlying error.
func (e *DownloadError) Unwrap() error { return e.Err }

// retryable reports whether a failed attempt is worth repeating.
func (e *DownloadError) retryable() bool {
	if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		return false
	}
	return e.transient
}

// Download fetches and installs the official archive of spec into root, so that
// LoadSplit(root, spec, ...) and Verify(root, spec) work. It does nothing when Verify already
// passes. An archive already at root/spec.ArchiveName (for example copied there by hand on an
// offline machine) is used if its SHA-256 matches. Otherwise the archive is downloaded to a
// temporary file, its SHA-256 checked, and only then renamed to root/spec.ArchiveName: a
// partial or corrupt download is never taken for a complete one. The archive is extracted
// with strict checks (see extractTar) and the VerifiedMarker is written last.
func Download(ctx context.Context, root string, spec Spec, opts DownloadOptions) error {
	if err := checkSpec(spec); err != nil {
		return err
	}
	if opts.Layout == LayoutPython {
		spec = spec.InLayout(LayoutPython)
	}
	if opts.SHA256 != "" {
		spec.ArchiveSHA256 = opts.SHA256
	}
	spec.ArchiveSHA256 = strings.ToLower(spec.ArchiveSHA256)
	url := spec.ArchiveURL
	if opts.URL != "" {
		url = opts.URL
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if Verify(root, spec) == nil {
		fmt.Fprintf(progress, "%s: verified data already present in %s\n", spec.Name, filepath.Join(root, spec.Dir))
		return nil
	}
	if e := folderItself(root, spec); e != nil { // it would download into a folder one level too deep
		return e
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("data: creating data folder: %w", err)
	}
	archive := filepath.Join(root, spec.ArchiveName)
	source := url
	if sum, err := fileSHA256(archive); err == nil {
		if sum == spec.ArchiveSHA256 {
			fmt.Fprintf(progress, "%s: using %s (SHA-256 verified)\n", spec.Name, archive)
			return install(archive, root, spec, "", progress)
		}
		fmt.Fprintf(progress, "%s: %s has SHA-256 %s, want %s: downloading it again\n", spec.Name, archive, sum, spec.ArchiveSHA256)
		if err := os.Remove(archive); err != nil {
			return fmt.Errorf("data: removing bad archive: %w", err)
		}
	}
	if err := fetchWithRetries(ctx, opts, url, archive, root, spec, progress); err != nil {
		return err
	}
	return install(archive, root, spec, source, progress)
}

// fetchWithRetries fetches url to archive, again after a transient failure up to
// opts.Retries times, opts.RetryWait apart (default 2 s).
func fetchWithRetries(ctx context.Context, opts DownloadOptions, url, archive, root string, spec Spec, progress io.Writer) error {
	wait := opts.RetryWait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	for attempt := 0; ; attempt++ {
		err := fetch(ctx, opts.Client, url, archive, spec, progress)
		if err == nil {
			return nil
		}
		var de *DownloadError
		if !errors.As(err, &de) || !de.retryable() || attempt >= opts.Retries {
			if de != nil {
				de.Root = root
			}
			return err
		}
		fmt.Fprintf(progress, "%s: attempt %d failed (%v); retrying in %v\n", spec.Name, attempt+1, de.Err, wait)
		select {
		case <-ctx.Done():
			return &DownloadError{Dataset: spec.Name, URL: url, Archive: archive, SHA256: spec.ArchiveSHA256, Root: root, Err: ctx.Err()}
		case <-time.After(wait):
		}
	}
}

// fetch downloads url to a temporary file next to archive, checks its SHA-256 and renames
// it to archive. On any error the temporary file is removed.
func fetch(ctx context.Context, client *http.Client, url, archive string, spec Spec, progress io.Writer) error {
	fail := func(status int, transient bool, err error) error {
		return &DownloadError{Dataset: spec.Name, URL: url, Archive: archive, SHA256: spec.ArchiveSHA256,
			StatusCode: status, Err: err, transient: transient}
	}
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fail(0, false, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fail(0, true, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(resp.StatusCode, resp.StatusCode >= 500, fmt.Errorf("HTTP status %s", resp.Status))
	}
	return saveFetched(resp, archive, spec, progress, fail)
}

// saveFetched writes resp's body to a temporary file next to archive, checks its length and
// SHA-256, and renames it to archive; on any error the temporary file is removed (fail words a
// transfer's error).
func saveFetched(resp *http.Response, archive string, spec Spec, progress io.Writer, fail func(int, bool, error) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(archive), "."+filepath.Base(archive)+".part-*")
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	bar := progressbar.NewOptions64(resp.ContentLength,
		progressbar.OptionSetWriter(progress),
		progressbar.OptionSetDescription(filepath.Base(archive)),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(progress) }),
	)
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, hash, bar), resp.Body)
	if err != nil {
		return fail(resp.StatusCode, true, fmt.Errorf("transfer interrupted after %d bytes: %w", n, err))
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fail(resp.StatusCode, true, fmt.Errorf("transfer truncated: got %d of %d bytes", n, resp.ContentLength))
	}
	_ = bar.Finish()
	if sum := hex.EncodeToString(hash.Sum(nil)); sum != spec.ArchiveSHA256 {
		return fail(resp.StatusCode, false, fmt.Errorf("%w: the %d bytes received have SHA-256 %s, want %s", ErrChecksum, n, sum, spec.ArchiveSHA256))
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if err := os.Rename(tmp.Name(), archive); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}

// install extracts a verified archive into root and writes the VerifiedMarker.
func install(archive, root string, spec Spec, url string, progress io.Writer) error {
	f, err := os.Open(archive)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(progress, "%s: extracting %s into %s\n", spec.Name, archive, filepath.Join(root, spec.Dir))
	files, err := extractTarGz(f, root, spec)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, spec.Dir)
	if err := os.Remove(filepath.Join(dir, SyntheticMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("data: %w", err)
	}
	info := VerifiedInfo{Archive: spec.ArchiveName, SHA256: spec.ArchiveSHA256, URL: url, Files: files}
	if err := writeJSONAtomic(filepath.Join(dir, VerifiedMarker), info); err != nil {
		return err
	}
	return Verify(root, spec)
}

// fileSHA256 returns the hex SHA-256 of a file.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
