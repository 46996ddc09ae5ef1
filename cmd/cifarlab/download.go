package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

func init() {
	register(command{
		name:    "download",
		summary: "download, verify (SHA-256) and extract the official CIFAR-10/100 archive (binary or python layout)",
		run:     runDownload,
	})
}

func runDownload(args []string, stdout io.Writer) error {
	fs := newFlagSet("download", "--dataset cifar10|cifar100 [--format binary|python] [--data DIR] [--url URL] [--retries N] [--quiet]\n\n"+
		"Every command reads either layout of the official data and says which it found:\n"+
		"  binary  cifar-10-binary.tar.gz -> cifar-10-batches-bin/, cifar-100-binary.tar.gz -> cifar-100-binary/\n"+
		"  python  cifar-10-python.tar.gz -> cifar-10-batches-py/ (data_batch_1..5, test_batch, batches.meta),\n"+
		"          cifar-100-python.tar.gz -> cifar-100-python/ (train, test, meta): the pickles torchvision and\n"+
		"          Keras download. A folder torchvision already downloaded works as it is: point --data (or\n"+
		"          $"+data.DirEnv+") at the folder holding cifar-10-batches-py/ or cifar-100-python/.\n"+
		"The archive is checked against its official SHA-256 and every file (for the python layout, every\n"+
		"pickle, decoded without executing anything) before it is installed.\n", stdout)
	dataset := fs.String("dataset", "", "dataset: cifar10 or cifar100 (required)")
	format := fs.String("format", "binary", "archive to fetch: binary (cifar-*-binary.tar.gz) or python (cifar-*-python.tar.gz, torchvision's pickles)")
	dataDir := fs.String("data", data.DefaultDir(), "data `DIR` to download into ($"+data.DirEnv+")")
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
	spec, err := data.SpecByName(*dataset, "")
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	layout, err := data.ParseLayout(*format)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	opts := data.DownloadOptions{URL: *url, SHA256: *sha, Retries: *retries, Layout: layout}
	if !*quiet {
		opts.Progress = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := data.Download(ctx, *dataDir, spec, opts); err != nil {
		return err
	}
	dir := filepath.Join(*dataDir, spec.InLayout(layout).Dir)
	if layout == data.LayoutPython {
		fmt.Fprintf(stdout, "%s: verified data in %s (python layout)\n", spec.Name, dir)
	} else {
		fmt.Fprintf(stdout, "%s: verified data in %s\n", spec.Name, dir)
	}
	return nil
}
