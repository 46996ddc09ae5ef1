package kernel

import (
	"context"
	"fmt"
	"io"
)

// ensureKernels installs the kernels (Install) when Jupyter, with the data directory dataDir
// when given, does not list both ready (kernelsReady): into dataDir, else DefaultDataDir. It
// reports whether it installed them; progress says where and why.
func ensureKernels(ctx context.Context, jup jupyter, repo Repo, dataDir string, progress io.Writer) (bool, error) {
	ready, err := kernelsReady(ctx, jup, repo, dataDir)
	if err != nil || ready {
		return false, err
	}
	dir, why := dataDir, "--jupyter-data-dir"
	if dir == "" {
		if dir, why, err = DefaultDataDir(repo); err != nil {
			return false, err
		}
	}
	fmt.Fprintf(progress, "installing the cifarlab kernels into %s (%s)\n", dir, why)
	if _, err := Install(ctx, InstallOptions{Repo: repo, DataDir: dir, Log: progress}); err != nil {
		return false, fmt.Errorf("installing the kernels: %w", err)
	}
	return true, nil
}

// kernelsReady reports whether Jupyter lists both cifarlab kernels, each running an
// existing gonb, compiling against repo, with the cells' module proxy of this go command
// (cellGoProxy).
func kernelsReady(ctx context.Context, jup jupyter, repo Repo, dataDir string) (bool, error) {
	var env []string
	if dataDir != "" {
		env = append(env, dataDirEnv(dataDir)...)
	}
	specs, err := jup.KernelSpecs(ctx, env...)
	if err != nil {
		return false, err
	}
	gt, _ := findGoTools(ctx, repo)
	for _, name := range []string{CPUKernel, CUDAKernel} {
		if c := checkKernelSpec(repo, name, specs, gt); c.Status != StatusOK {
			return false, nil
		}
	}
	return true, nil
}

// ownerWarnings says, on progress, which checkout each kernel belongs to as the server (with the
// environment env) will start it, and returns a warning, with the fix, for each kernel that is
// another checkout's.
func ownerWarnings(ctx context.Context, jup jupyter, repo Repo, env []string, progress io.Writer) ([]string, error) {
	owners, err := kernelOwners(ctx, jup, env...)
	if err != nil {
		return nil, err
	}
	var warnings []string
	for _, o := range owners {
		line, ok, fix := o.Describe(repo)
		if ok {
			fmt.Fprintf(progress, "kernel %s\n", line)
		} else {
			fmt.Fprintf(progress, "WARNING: kernel %s\n  fix: %s\n", line, fix)
			warnings = append(warnings, line+"; fix: "+fix)
		}
	}
	return warnings, nil
}
