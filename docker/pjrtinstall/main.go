// Command pjrtinstall installs the XLA PJRT plugins for the cifarlab Docker image at pinned
// versions, using the installer library of github.com/gomlx/go-xla (the version pinned in this
// repository's go.mod, verified by go.sum).
//
// go-xla's own command-line installer (github.com/gomlx/go-xla/cmd/pjrt_installer) is a separate
// module with an interactive front end; this program calls the same library functions
// non-interactively and refuses "latest", so an image build is reproducible:
//
//	pjrtinstall -plugin cpu -version v0.114.0 -path /usr/local/lib/go-xla [-sha256 HEX]
//	pjrtinstall -plugin cuda13 -version 0.11.2 -path /usr/local/lib/go-xla [-sha256 HEX]
//
// The CPU plugin comes from the github.com/gomlx/pjrt-cpu-binaries release of that version
// (GitHub publishes no checksum for it, so pin one with -sha256); the CUDA plugin and NVIDIA
// libraries come from the jax-cuda13-pjrt wheel on PyPI, whose SHA-256 go-xla checks against
// PyPI's digest. With -sha256 the installed plugin library must have exactly that SHA-256.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gomlx/go-xla/installer"
)

// request is one validated installation request.
type request struct {
	plugin  string // "cpu", "cuda12" or "cuda13"
	version string // an exact release, never "latest"
	path    string // the go-xla plugin directory, e.g. /usr/local/lib/go-xla
	sha256  string // expected SHA-256 (lower-case hex) of the installed plugin, or ""
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "pjrtinstall: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	req, err := parseArgs(args, stdout)
	if err != nil {
		return err
	}
	switch req.plugin {
	case "cpu":
		platform := runtime.GOOS + "_" + runtime.GOARCH
		err = installer.CPUInstall(platform, req.version, req.path, false, installer.Verbose)
	default:
		err = installer.CudaInstall(req.plugin, req.version, req.path, false, installer.Verbose)
	}
	if err != nil {
		return fmt.Errorf("installing PJRT plugin %s %s into %s: %w", req.plugin, req.version, req.path, err)
	}
	lib := pluginFile(req)
	sum, err := fileSHA256(lib)
	if err != nil {
		return fmt.Errorf("plugin %s %s was reported installed, but: %w", req.plugin, req.version, err)
	}
	if req.sha256 != "" && sum != req.sha256 {
		return fmt.Errorf("%s: SHA-256 is %s, want %s (pinned for %s %s); refusing the plugin",
			lib, sum, req.sha256, req.plugin, req.version)
	}
	pinned := "pinned and verified"
	if req.sha256 == "" {
		pinned = "NOT pinned: pass -sha256 " + sum + " to pin it"
	}
	fmt.Fprintf(stdout, "pjrtinstall: %s %s -> %s\npjrtinstall: sha256 %s (%s)\n", req.plugin, req.version, lib, sum, pinned)
	return nil
}

// parseArgs parses and validates the command line.
func parseArgs(args []string, stdout io.Writer) (request, error) {
	fs := flag.NewFlagSet("pjrtinstall", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var req request
	fs.StringVar(&req.plugin, "plugin", "", `plugin to install: "cpu", "cuda13" or "cuda12"`)
	fs.StringVar(&req.version, "version", "", `exact release: pjrt-cpu-binaries tag for "cpu" (e.g. v0.114.0), jax-cudaNN-pjrt version for CUDA (e.g. 0.11.2)`)
	fs.StringVar(&req.path, "path", "/usr/local/lib/go-xla", "go-xla plugin directory (CUDA goes into its nvidia/ subdirectory)")
	fs.StringVar(&req.sha256, "sha256", "", "expected SHA-256 of the installed plugin library (hex); empty prints it without checking")
	if err := fs.Parse(args); err != nil {
		return request{}, err
	}
	if fs.NArg() != 0 {
		return request{}, fmt.Errorf("unexpected arguments %q: every setting is a flag (see -h)", fs.Args())
	}
	switch req.plugin {
	case "cpu", "cuda12", "cuda13":
	case "":
		return request{}, errors.New(`-plugin is required: "cpu", "cuda13" or "cuda12"`)
	default:
		return request{}, fmt.Errorf(`-plugin %q is not one of "cpu", "cuda13", "cuda12"`, req.plugin)
	}
	if req.version == "" || req.version == "latest" {
		return request{}, fmt.Errorf(`-version must be an exact release for %s, got %q: "latest" would make the image unreproducible`, req.plugin, req.version)
	}
	if req.plugin == "cpu" && !strings.HasPrefix(req.version, "v") {
		return request{}, fmt.Errorf(`-version %q for cpu must be a pjrt-cpu-binaries tag such as "v0.114.0"`, req.version)
	}
	if req.plugin != "cpu" && strings.HasPrefix(req.version, "v") {
		return request{}, fmt.Errorf(`-version %q for %s must be a PyPI version such as "0.11.2" (no leading "v")`, req.version, req.plugin)
	}
	if !filepath.IsAbs(req.path) {
		return request{}, fmt.Errorf("-path %q must be absolute", req.path)
	}
	req.sha256 = strings.ToLower(req.sha256)
	if req.sha256 != "" {
		if b, err := hex.DecodeString(req.sha256); err != nil || len(b) != sha256.Size {
			return request{}, fmt.Errorf("-sha256 %q is not 64 hexadecimal digits", req.sha256)
		}
	}
	return req, nil
}

// pluginFile is where go-xla's installer puts the plugin library for req.
func pluginFile(req request) string {
	if req.plugin == "cpu" {
		return filepath.Join(req.path, fmt.Sprintf("pjrt_c_api_cpu_%s_plugin.so", req.version))
	}
	return filepath.Join(req.path, "nvidia", installer.NVIDIAPJRTPluginFileName)
}

// fileSHA256 returns the lower-case hex SHA-256 of a regular file.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
