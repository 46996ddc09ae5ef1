package kernel

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// InstallOptions configure Install.
type InstallOptions struct {
	// Repo is the repository the kernels compile against.
	Repo Repo
	// DataDir is the Jupyter data directory; kernelspecs go to DataDir/kernels/NAME.
	// See DataDirFor.
	DataDir string
	// Backends steers the backend of each kernel (zero value: detect).
	Backends BackendOptions
	// SkipTools skips building the pinned tools and the kernel supervisor when they exist.
	SkipTools bool
	// Log receives progress lines (nil: discard).
	Log io.Writer
}

// InstalledKernel describes one kernelspec written by Install.
type InstalledKernel struct {
	Name    string     `json:"name"`
	Dir     string     `json:"dir"`
	Spec    KernelSpec `json:"spec"`
	Changed bool       `json:"changed"`
}

// InstallResult is what Install did.
type InstallResult struct {
	DataDir    string            `json:"data_dir"`
	Kernels    []InstalledKernel `json:"kernels"`
	ToolsBuilt bool              `json:"tools_built"`
	Manifest   string            `json:"manifest"`
}

// Install builds the pinned tools when needed and writes the CPU and CUDA kernelspecs into
// opts.DataDir. Running it again rewrites only what changed and keeps one manifest.
//
// Its steps: find the go command the kernels build with (findGoTools), ensure what REPO/.bin
// must hold (ensureBinaries), pin the cells' module versions beside the kernelspecs
// (installCellPins), choose each kernel's backend and make its kernelspec (newKernels), write
// them (tracker.writeKernel), run the cells' first go get ahead (warmCellGet), and save the
// manifest (tracker.save).
func Install(ctx context.Context, opts InstallOptions) (*InstallResult, error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if opts.DataDir == "" {
		return nil, errors.New("kernel install: no Jupyter data directory given")
	}
	res := &InstallResult{DataDir: opts.DataDir, Manifest: manifestPath(opts.DataDir)}
	gt, err := findGoTools(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	if res.ToolsBuilt, err = ensureBinaries(ctx, opts.Repo, gt.Toolchain, opts.SkipTools, log); err != nil {
		return nil, err
	}
	tr, err := openManifest(opts.DataDir, opts.Repo)
	if err != nil {
		return nil, err
	}
	if gt.CellPins, err = installCellPins(ctx, opts.Repo, opts.DataDir, gt, tr, log); err != nil {
		return nil, err
	}
	kernels, err := newKernels(ctx, opts, gt)
	if err != nil {
		return nil, err
	}
	for _, k := range kernels {
		ik, err := tr.writeKernel(k)
		if err != nil {
			return nil, err
		}
		res.Kernels = append(res.Kernels, ik)
		state := "unchanged"
		if ik.Changed {
			state = "written"
		}
		fmt.Fprintf(log, "%s %q -> %s (%s; GOMLX_BACKEND=%s: %s)\n", k.name, k.spec.DisplayName, k.dir, state, k.b.GoMLX, k.b.Reason)
	}
	// The cells' first `go get`, run now: what it asks of the network (checksums of newer
	// go.mod files that other projects left in the module cache) is fetched at install, not by
	// the user's first cell. Offline, the first cell asks instead.
	if n, err := warmCellGet(ctx, opts.Repo, gt); err != nil {
		fmt.Fprintf(log, "warning: could not run the cells' go get ahead (the first cell will): %v\n", err)
	} else {
		fmt.Fprintf(log, "cells' go get warmed: %d network requests now, none left for the first cell\n", n)
	}
	if err := tr.save(res.Manifest); err != nil {
		return nil, err
	}
	return res, nil
}

// kernelFiles is one kernelspec Install writes: its name, folder and kernel.json, and the
// backend whose links it needs.
type kernelFiles struct {
	name, dir string
	spec      KernelSpec
	b         backend
}

// newKernels chooses the backend of each kernel (chooseCPUBackend, chooseCUDABackend, which
// links pip's CUDA plugin from DATA/cifarlab/pjrt-cuda) and makes its kernelspec.
func newKernels(ctx context.Context, opts InstallOptions, gt goTools) ([]kernelFiles, error) {
	cpu, err := chooseCPUBackend(opts.Repo, opts.Backends)
	if err != nil {
		return nil, fmt.Errorf("CPU kernel: %w", err)
	}
	cuda, err := chooseCUDABackend(ctx, opts.Repo, filepath.Join(opts.DataDir, "cifarlab", "pjrt-cuda"), opts.Backends)
	if err != nil {
		return nil, fmt.Errorf("CUDA kernel: %w", err)
	}
	return []kernelFiles{
		{name: CPUKernel, dir: kernelDir(opts.DataDir, CPUKernel), spec: newKernelSpec(opts.Repo, "cpu", gt, cpu), b: cpu},
		{name: CUDAKernel, dir: kernelDir(opts.DataDir, CUDAKernel), spec: newKernelSpec(opts.Repo, "cuda", gt, cuda), b: cuda},
	}, nil
}

// writeKernel writes k's folder, its backend's links, its kernel.json and logo, recording them
// in the manifest; Changed says whether a file was written.
func (t *tracker) writeKernel(k kernelFiles) (InstalledKernel, error) {
	if err := t.mkdirAll(k.dir); err != nil {
		return InstalledKernel{}, err
	}
	for _, l := range k.b.Links {
		if err := t.symlink(l); err != nil {
			return InstalledKernel{}, err
		}
	}
	data, err := json.MarshalIndent(k.spec, "", "  ")
	if err != nil {
		return InstalledKernel{}, err
	}
	changed, err := t.writeFile(filepath.Join(k.dir, "kernel.json"), append(data, '\n'))
	if err != nil {
		return InstalledKernel{}, err
	}
	logoChanged, err := t.writeFile(filepath.Join(k.dir, "logo-svg.svg"), []byte(logoSVG))
	if err != nil {
		return InstalledKernel{}, err
	}
	return InstalledKernel{Name: k.name, Dir: k.dir, Spec: k.spec, Changed: changed || logoChanged}, nil
}

// logoSVG is the kernels' launcher icon: a CIFAR-like 3x3 tile grid with "Go".
const logoSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
<rect width="64" height="64" rx="8" fill="#00ADD8"/>
<g fill="#ffffff" opacity="0.35"><rect x="6" y="6" width="16" height="16"/><rect x="42" y="6" width="16" height="16"/><rect x="24" y="42" width="16" height="16"/></g>
<text x="32" y="41" font-family="sans-serif" font-size="26" font-weight="bold" text-anchor="middle" fill="#ffffff">Go</text>
</svg>
`

// installCellPins makes the cells' pinned module proxy (cellpins.go) of the checkout's go.mod and
// go.sum beside the kernelspecs of dataDir (ensureCellProxy), so that every cell builds with
// go.mod's versions of the modules the checkout requires, and records it in the manifest. It
// writes nothing when that build list's folder is there (a user-level install over an image's
// checkout writes only into the user's data directory). It returns the folder.
func installCellPins(ctx context.Context, repo Repo, dataDir string, gt goTools, tr *tracker, log io.Writer) (string, error) {
	mods, err := buildList(ctx, repo, gt)
	if err != nil {
		return "", err
	}
	if err := tr.mkdirAll(filepath.Join(dataDir, "cifarlab", cellPinsFolder)); err != nil {
		return "", err
	}
	pins, written, err := ensureCellProxy(dataDir, gt.ModCache, mods)
	if err != nil {
		return "", err
	}
	tr.man.Trees = []string{pins}
	state := "there already"
	if written {
		state = "written"
	}
	fmt.Fprintf(log, "cells build with %s and go.mod's versions of %d modules (pinned in %s: %s)\n", cmp.Or(gt.Version, "the go command on PATH"), len(mods), pins, state)
	// Where installs before this one wrote the pins: inside the checkout.
	if legacy := filepath.Join(repo.binDir(), cellPinsFolder); dirExists(legacy) {
		if err := os.RemoveAll(legacy); err == nil {
			fmt.Fprintf(log, "removed %s (the cells' pins now live with the kernelspecs)\n", legacy)
		}
	}
	return pins, nil
}
