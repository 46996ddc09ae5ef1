package kernel

import (
	"cmp"
	"context"
	"fmt"
	"os"
)

// DoctorOptions configure Doctor.
type DoctorOptions struct {
	// Repo is the checkout; a zero Repo (not found) makes the repository checks fail.
	Repo Repo
	// RepoErr is why the repository was not found, if it was not.
	RepoErr error
	// DataDir, when set, is the Jupyter data directory to look for the kernelspecs in
	// (passed to jupyter as JUPYTER_DATA_DIR); otherwise Jupyter's own search path is used.
	DataDir string
	// Probes run after the built-in checks, in order.
	Probes []Probe
}

// Doctor checks everything the lab needs and returns the checklist: Go (which release builds the
// cells), the pinned tools, Jupyter and JupyterLab, both kernelspecs, the module versions cells
// build with, the XLA plugins, the GPUs, and whatever
// the probes add.
func Doctor(ctx context.Context, opts DoctorOptions) Report {
	repo := opts.Repo
	checks := []Check{checkRepository(repo, opts.RepoErr), checkGo(ctx, repo), checkGoEnv(ctx)}
	checks = append(checks, checkPinnedTools(repo)...)
	jup, specs, jupyterChecks := checkJupyter(ctx, repo, opts.DataDir)
	checks = append(checks, jupyterChecks...)
	if specs != nil {
		checks = append(checks, checkKernelSpecs(ctx, repo, jup, specs, opts.DataDir)...)
	}
	if repo.Dir != "" {
		if gt, err := findGoTools(ctx, repo); err == nil { // else checkGo has said why
			// The pins the CPU kernel's cells build with (both kernels of an install share them).
			gt.CellPins = cellPinsOf(specs[CPUKernel].Spec.Env["GOPROXY"])
			checks = append(checks, checkCellModules(ctx, repo, gt, os.TempDir()))
		}
	}
	checks = append(checks, checkXLACPUPlugin(repo))
	checks = append(checks, checkCUDAPlugin(ctx, repo)...)
	checks = append(checks, checkGPUs(ctx))
	for _, p := range opts.Probes {
		checks = append(checks, p(ctx)...)
	}
	return newReport(checks)
}

// checkRepository says which checkout the doctor checks, or why none was found.
func checkRepository(repo Repo, repoErr error) Check {
	if repo.Dir == "" {
		return Check{Name: "repository", Status: StatusFail, Detail: fmt.Sprint(repoErr),
			Fix: "run inside the cifarlab checkout or set " + repoEnv, Required: true}
	}
	return Check{Name: "repository", Status: StatusOK, Detail: repo.Dir, Required: true}
}

// checkPinnedTools gives one line per pinned tool (checkTools), none without a checkout.
func checkPinnedTools(repo Repo) []Check {
	if repo.Dir == "" {
		return nil
	}
	var checks []Check
	sts, err := checkTools(repo)
	if err != nil {
		checks = append(checks, Check{Name: "notebook tools", Status: StatusFail, Detail: err.Error(), Fix: "restore tools/go.mod from git", Required: true})
	}
	for _, st := range sts {
		c := Check{Name: st.Name, Required: true, Detail: st.String(), Status: StatusOK}
		if !st.OK() {
			c.Status = StatusFail
			c.Fix = fmt.Sprintf("cifarlab kernel install (or: cd %s && GOBIN=%s go install tool)", repo.toolsModDir(), repo.binDir())
		}
		checks = append(checks, c)
	}
	return checks
}

// checkJupyter finds the jupyter the lab runs (findJupyter) and checks it, JupyterLab and
// nbclient, and the kernelspecs it lists with the data directory dataDir when given (nil when it
// cannot list them).
func checkJupyter(ctx context.Context, repo Repo, dataDir string) (jupyter, map[string]listedSpec, []Check) {
	jup, err := findJupyter(repo)
	if err != nil {
		return jup, nil, []Check{
			{Name: "jupyter", Status: StatusFail, Detail: "not found", Fix: installHint, Required: true},
			{Name: "jupyterlab", Status: StatusFail, Detail: "not found", Fix: installHint, Required: true},
		}
	}
	var checks []Check
	if vs, err := jup.Versions(ctx); err != nil {
		checks = append(checks, Check{Name: "jupyter", Status: StatusFail, Detail: err.Error(), Fix: installHint, Required: true})
	} else {
		checks = append(checks, checkJupyterVersions(jup, vs)...)
	}
	var env []string
	if dataDir != "" {
		env = append(env, dataDirEnv(dataDir)...)
	}
	specs, err := jup.KernelSpecs(ctx, env...)
	if err != nil {
		checks = append(checks, Check{Name: "kernelspecs", Status: StatusFail, Detail: err.Error(), Fix: installHint, Required: true})
	}
	return jup, specs, checks
}

// checkJupyterVersions says which Jupyter, JupyterLab and nbclient `jupyter --version` reports
// (vs); without JupyterLab the lab cannot start, without nbclient only the tests are missing.
func checkJupyterVersions(jup jupyter, vs map[string]string) []Check {
	checks := []Check{{Name: "jupyter", Status: StatusOK, Detail: fmt.Sprintf("jupyter_core %s, jupyter_client %s, jupyter_server %s (%s)",
		cmp.Or(vs["jupyter_core"], "?"), cmp.Or(vs["jupyter_client"], "?"), cmp.Or(vs["jupyter_server"], "not installed"), jup.Bin), Required: true}}
	if v := vs["jupyterlab"]; v != "" {
		checks = append(checks, Check{Name: "jupyterlab", Status: StatusOK, Detail: "JupyterLab " + v, Required: true})
	} else {
		checks = append(checks, Check{Name: "jupyterlab", Status: StatusFail, Detail: "not installed next to " + jup.Bin, Fix: installHint, Required: true})
	}
	if v := vs["nbclient"]; v != "" {
		checks = append(checks, Check{Name: "nbclient", Status: StatusOK, Detail: "nbclient " + v + " (executes notebooks in tests and CI)"})
	} else {
		checks = append(checks, Check{Name: "nbclient", Status: StatusAbsent, Detail: "not installed (only tests and CI need it)", Fix: installHint})
	}
	return checks
}

// checkKernelSpecs checks both cifarlab kernelspecs jup lists (specs; checkKernelSpec) and says
// which checkout each belongs to (withOwner).
func checkKernelSpecs(ctx context.Context, repo Repo, jup jupyter, specs map[string]listedSpec, dataDir string) []Check {
	gt, _ := findGoTools(ctx, repo) // no go command or toolchain: checkGo has said so
	var env []string
	if dataDir != "" {
		env = append(env, dataDirEnv(dataDir)...)
	}
	owners, oerr := kernelOwners(ctx, jup, env...)
	var checks []Check
	for i, name := range []string{CPUKernel, CUDAKernel} {
		c := checkKernelSpec(repo, name, specs, gt)
		if oerr == nil && repo.Dir != "" {
			c = withOwner(c, owners[i], repo)
		}
		checks = append(checks, c)
	}
	return checks
}
