package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib"
)

func init() {
	register(command{
		name:    "download",
		summary: "download, verify (SHA-256) and extract the official CIFAR-10/100 archive",
		run:     runDownload,
	})
}

func runDownload(args []string, stdout io.Writer) error {
	fs := newFlagSet("download", "--dataset cifar10|cifar100 [--data DIR] [--url URL] [--retries N] [--quiet]", stdout)
	dataset := fs.String("dataset", "", "dataset: cifar10 or cifar100 (required)")
	dataDir := fs.String("data", cifarlib.DefaultDataDir(), "data `DIR` to download into ($"+cifarlib.DataDirEnv+")")
	url := fs.String("url", "", "download from this mirror `URL` instead of the official address")
	sha := fs.String("sha256", "", "expected SHA-256 of the archive (default: the official checksum)")
	retries := fs.Int("retries", 2, "extra attempts after an interrupted transfer")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *dataset == "" {
		return &exitError{code: 2, err: fmt.Errorf("--dataset is required: cifar10 or cifar100")}
	}
	spec, err := cifarlib.SpecByName(*dataset, "")
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	opts := cifarlib.DownloadOptions{URL: *url, SHA256: *sha, Retries: *retries}
	if !*quiet {
		opts.Progress = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := cifarlib.Download(ctx, *dataDir, spec, opts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: verified data in %s\n", spec.Name, filepath.Join(*dataDir, spec.Dir))
	return nil
}
