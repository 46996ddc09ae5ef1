package kernel

import (
	"context"
	"fmt"
	"go/version"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// Status is the outcome of one doctor check.
type Status string

const (
	// StatusOK: the item is present and works.
	StatusOK Status = "ok"
	// StatusAbsent: an optional item is missing (e.g. no GPU); the lab works without it.
	StatusAbsent Status = "absent"
	// StatusWarn: the item works but something is off (e.g. a kernel points at another checkout).
	StatusWarn Status = "warn"
	// StatusFail: the item is missing or broken.
	StatusFail Status = "fail"
)

// Check is one line of the doctor's checklist.
type Check struct {
	// Name names the item, e.g. "go", "gonb", "kernelspec cifarlab-cpu".
	Name string `json:"name"`
	// Status is the outcome and Detail what was found.
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Fix says how to repair a failing, absent or suspicious item.
	Fix string `json:"fix,omitempty"`
	// Required items make the doctor fail when their status is StatusFail.
	Required bool `json:"required"`
}

// Report is the doctor's checklist.
type Report struct {
	Checks []Check `json:"checks"`
	// OK is false when a required check failed.
	OK bool `json:"ok"`
}

// Probe adds checks that need more than this package knows (backends, CIFAR data).
type Probe func(ctx context.Context) []Check

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
	var r Report
	add := func(c Check) { r.Checks = append(r.Checks, c) }
	repo := opts.Repo

	if repo.Dir == "" {
		add(Check{Name: "repository", Status: StatusFail, Detail: fmt.Sprint(opts.RepoErr),
			Fix: "run inside the cifarlab checkout or set " + RepoEnv, Required: true})
	} else {
		add(Check{Name: "repository", Status: StatusOK, Detail: repo.Dir, Required: true})
	}
	add(checkGo(ctx, repo))
	add(checkGoEnv(ctx))
	if repo.Dir != "" {
		sts, err := CheckTools(repo)
		if err != nil {
			add(Check{Name: "notebook tools", Status: StatusFail, Detail: err.Error(), Fix: "restore tools/go.mod from git", Required: true})
		}
		for _, st := range sts {
			c := Check{Name: st.Name, Required: true, Detail: st.String()}
			if st.OK() {
				c.Status = StatusOK
			} else {
				c.Status = StatusFail
				c.Fix = fmt.Sprintf("cifarlab kernel install (or: cd %s && GOBIN=%s go install tool)", repo.ToolsModDir(), repo.BinDir())
			}
			add(c)
		}
	}

	jup, err := FindJupyter(repo)
	var specs map[string]ListedSpec
	if err != nil {
		add(Check{Name: "jupyter", Status: StatusFail, Detail: "not found", Fix: InstallHint, Required: true})
		add(Check{Name: "jupyterlab", Status: StatusFail, Detail: "not found", Fix: InstallHint, Required: true})
	} else {
		vs, verr := jup.Versions(ctx)
		switch {
		case verr != nil:
			add(Check{Name: "jupyter", Status: StatusFail, Detail: verr.Error(), Fix: InstallHint, Required: true})
		default:
			add(Check{Name: "jupyter", Status: StatusOK, Detail: fmt.Sprintf("jupyter_core %s, jupyter_client %s, jupyter_server %s (%s)",
				or(vs["jupyter_core"], "?"), or(vs["jupyter_client"], "?"), or(vs["jupyter_server"], "not installed"), jup.Bin), Required: true})
			if v := vs["jupyterlab"]; v != "" {
				add(Check{Name: "jupyterlab", Status: StatusOK, Detail: "JupyterLab " + v, Required: true})
			} else {
				add(Check{Name: "jupyterlab", Status: StatusFail, Detail: "not installed next to " + jup.Bin, Fix: InstallHint, Required: true})
			}
			if v := vs["nbclient"]; v != "" {
				add(Check{Name: "nbclient", Status: StatusOK, Detail: "nbclient " + v + " (executes notebooks in tests and CI)"})
			} else {
				add(Check{Name: "nbclient", Status: StatusAbsent, Detail: "not installed (only tests and CI need it)", Fix: InstallHint})
			}
		}
		var env []string
		if opts.DataDir != "" {
			env = append(env, DataDirEnv(opts.DataDir)...)
		}
		specs, err = jup.KernelSpecs(ctx, env...)
		if err != nil {
			add(Check{Name: "kernelspecs", Status: StatusFail, Detail: err.Error(), Fix: InstallHint, Required: true})
		}
	}
	if specs != nil {
		goTools, _ := FindGoTools(ctx, repo) // no go command or toolchain: checkGo has said so
		var env []string
		if opts.DataDir != "" {
			env = append(env, DataDirEnv(opts.DataDir)...)
		}
		owners, oerr := KernelOwners(ctx, jup, env...)
		for i, name := range []string{CPUKernel, CUDAKernel} {
			c := checkKernelSpec(repo, name, specs, goTools)
			if oerr == nil && repo.Dir != "" {
				c = withOwner(c, owners[i], repo)
			}
			add(c)
		}
	}

	if repo.Dir != "" {
		if gt, err := FindGoTools(ctx, repo); err == nil { // else checkGo has said why
			// The pins the CPU kernel's cells build with (both kernels of an install share them).
			gt.CellPins = CellPinsOf(specs[CPUKernel].Spec.Env["GOPROXY"])
			add(checkCellModules(ctx, repo, gt, os.TempDir()))
		}
	}
	add(checkXLACPUPlugin(repo))
	cudaPlugins := []string{}
	if p, err := plugins.CUDASitePlugin(); err != nil {
		add(Check{Name: "CUDA plugin", Status: StatusFail, Detail: err.Error(), Fix: "fix or unset $" + plugins.CUDASiteEnv})
	} else if p != "" {
		cudaPlugins = append(cudaPlugins, p)
	}
	if p, ok := plugins.FindFiles()["cuda"]; ok {
		cudaPlugins = append(cudaPlugins, p)
	}
	cudaPlugins = append(cudaPlugins, plugins.FindJaxCUDA(SitePackages(ctx, PythonCandidates(repo)))...)
	if len(cudaPlugins) > 0 {
		add(Check{Name: "CUDA plugin", Status: StatusOK, Detail: describeCUDAPlugins(cudaPlugins)})
		for _, c := range checkCUDALibs(cudaPluginToCheck(cudaPlugins), plugins.HasNvidiaGPU()) {
			add(c)
		}
	} else {
		add(Check{Name: "CUDA plugin", Status: StatusAbsent, Detail: "no CUDA PJRT plugin found (go-xla folders, pip's jax-cuda13-pjrt)",
			Fix: "on a GPU machine: bash kernel/setup.sh (jax-cuda13-pjrt and its NVIDIA wheels; setup installs them only where it finds a GPU, " +
				"CIFARLAB_CUDA=1 bash kernel/setup.sh installs them anyway), or set " + plugins.CUDASiteEnv +
				" to a site-packages that has them; then re-run cifarlab kernel install"})
	}
	if gpus, err := plugins.GPUs(ctx); err != nil {
		add(Check{Name: "GPUs", Status: StatusAbsent, Detail: "none visible: " + err.Error(), Fix: "optional: the CUDA kernel needs an NVIDIA GPU and its driver (nvidia-smi)"})
	} else if len(gpus) == 0 {
		add(Check{Name: "GPUs", Status: StatusAbsent, Detail: "nvidia-smi lists no GPU", Fix: "optional: check the NVIDIA driver"})
	} else {
		add(Check{Name: "GPUs", Status: StatusOK, Detail: strings.Join(gpus, "; ")})
	}

	for _, p := range opts.Probes {
		for _, c := range p(ctx) {
			add(c)
		}
	}
	r.OK = true
	for _, c := range r.Checks {
		if c.Required && c.Status == StatusFail {
			r.OK = false
		}
	}
	return r
}

// describeCUDAPlugins lists plugin files once each (links resolved), with the pip package and
// version of jax-cudaN-pjrt's: "jax-cuda13-pjrt 0.11.2 at SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so".
func describeCUDAPlugins(paths []string) string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		if pkg := plugins.JaxCUDAPackage(p); pkg != "" {
			p = pkg + " at " + p
		}
		out = append(out, p)
	}
	return strings.Join(out, ", ")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkGo says which Go builds the cells: the go command on PATH run with GOTOOLCHAIN=go.mod's
// toolchain line, as the kernelspecs run it (FindGoTools). It fails, with the fix, when there is
// no go command, when that toolchain cannot be had, or when the Go is older than go.mod's go line;
// it warns when the user's own GOTOOLCHAIN (exported, or the go command's default, e.g.
// GOTOOLCHAIN=local in GOROOT/go.env) would build with another Go in a terminal: the kernels pin
// their own, so notebooks are not affected.
func checkGo(ctx context.Context, repo Repo) Check {
	c := Check{Name: "go", Required: true}
	local, err := GoVersion(ctx)
	if err != nil {
		c.Status, c.Detail = StatusFail, err.Error()
		c.Fix = "install Go (https://go.dev/dl: any Go 1.21+ fetches go.mod's toolchain itself) and put it on PATH, then bash kernel/setup.sh"
		return c
	}
	var mod *GoMod
	if repo.Dir != "" {
		mod, _ = ReadGoMod(filepath.Join(repo.Dir, "go.mod"))
	}
	gt, err := FindGoTools(ctx, repo)
	if err != nil {
		c.Status, c.Detail = StatusFail, err.Error()
		c.Fix = fmt.Sprintf("bash kernel/setup.sh (it fetches %s through the Go module proxy), or install Go %s from https://go.dev/dl and put it first on PATH",
			gt.Toolchain, strings.TrimPrefix(gt.Toolchain, "go"))
		return c
	}
	cells := or(gt.Version, local)
	c.Detail = fmt.Sprintf("cells build with %s (%s", cells, gt.BinDir)
	if gt.Toolchain != "" {
		c.Detail += ", GOTOOLCHAIN=" + gt.Toolchain + " from go.mod's toolchain line"
	}
	c.Detail += ")"
	if cells != local {
		c.Detail += "; the go command on PATH is " + local
	}
	if mod != nil && mod.Go != "" {
		if version.Compare(cells, "go"+mod.Go) < 0 {
			c.Status = StatusFail
			c.Detail += fmt.Sprintf(", but go.mod needs go %s", mod.Go)
			c.Fix = fmt.Sprintf("add a toolchain line to go.mod (go mod edit -toolchain=go%s) and re-run bash kernel/setup.sh, or install Go %s or newer", mod.Go, mod.Go)
			return c
		}
		c.Detail += fmt.Sprintf(" (go.mod needs %s)", mod.Go)
	}
	c.Status = StatusOK
	if gt.Toolchain == "" {
		return c
	}
	// The user's own GOTOOLCHAIN: what `go build` in a terminal uses. Exported, it is reported
	// (the kernels replace it); it is a warning when a terminal's go build would run an older Go
	// than go.mod's toolchain: GOTOOLCHAIN=local (or +path) with an older go on PATH, or an older
	// release named exactly. goX+auto switches to the toolchain line by itself.
	user, source := os.Getenv("GOTOOLCHAIN"), "$GOTOOLCHAIN"
	if user == "" {
		source = "the go command's default (GOROOT/go.env or go env -w)"
		if out, err := exec.CommandContext(ctx, "go", "env", "GOTOOLCHAIN").Output(); err == nil {
			user = strings.TrimSpace(string(out))
		}
	}
	terminal := local
	if v, ok := strings.CutSuffix(user, "+path"); ok && strings.HasPrefix(v, "go") {
		terminal = v
	} else if strings.HasPrefix(user, "go") && !strings.HasSuffix(user, "+auto") {
		terminal = user
	}
	older := (user == "local" || user == "path" || strings.HasSuffix(user, "+path") || terminal == user) &&
		version.Compare(terminal, gt.Toolchain) < 0
	switch {
	case older:
		c.Status = StatusWarn
		c.Detail += fmt.Sprintf("; GOTOOLCHAIN=%s (%s) is not what the kernels use: they set GOTOOLCHAIN=%s, so notebooks build; "+
			"in a terminal, go build and go test here would run %s and fail", user, source, gt.Toolchain, terminal)
		c.Fix = fmt.Sprintf("nothing to do for the notebooks; in a terminal: export GOTOOLCHAIN=%s (as kernel/lab.sh and kernel/run-tests.sh do)", gt.Toolchain)
	case source == "$GOTOOLCHAIN" && user != gt.Toolchain:
		c.Detail += fmt.Sprintf("; your GOTOOLCHAIN=%s does not apply to the kernels: they set GOTOOLCHAIN=%s", user, gt.Toolchain)
	}
	return c
}

// checkKernelSpec verifies one cifarlab kernelspec as Jupyter lists it: its gonb exists,
// the PATH it sets finds go, goimports and gopls, --go_work names a checkout, and its GOPROXY
// is the cells' proxy (CellGoProxy) of gt, the go command now on PATH, with pins of its own
// (CellPinsOf; a warning otherwise).
func checkKernelSpec(repo Repo, name string, specs map[string]ListedSpec, gt GoTools) Check {
	c := Check{Name: "kernelspec " + name, Required: true}
	fix := "cifarlab kernel install"
	ls, ok := specs[name]
	if !ok {
		names := make([]string, 0, len(specs))
		for n := range specs {
			names = append(names, n)
		}
		sort.Strings(names)
		c.Status, c.Detail, c.Fix = StatusFail, "not installed (Jupyter lists: "+strings.Join(names, ", ")+")", fix
		return c
	}
	var problems []string
	s := ls.Spec
	if len(s.Argv) == 0 || !isExecutable(s.Argv[0]) {
		problems = append(problems, fmt.Sprintf("kernel binary %q missing", first(s.Argv)))
	} else if len(s.Argv) > 2 && s.Argv[1] == "--" && !isExecutable(s.Argv[2]) {
		problems = append(problems, fmt.Sprintf("gonb %q missing", s.Argv[2]))
	}
	path := strings.ReplaceAll(s.Env["PATH"], "${PATH}", os.Getenv("PATH"))
	for _, tool := range []string{"go", "goimports", "gopls"} {
		if !onPath(tool, path) {
			problems = append(problems, tool+" not on the kernel's PATH")
		}
	}
	goWork := ""
	for _, a := range s.Argv {
		if v, ok := strings.CutPrefix(a, "--go_work="); ok {
			goWork = v
		}
	}
	if goWork == "" {
		problems = append(problems, "no --go_work: cells would not import this repository's cifarlib")
	} else if !IsRepo(goWork) {
		problems = append(problems, "--go_work="+goWork+" is not a cifarlab checkout")
	}
	if gt.Toolchain != "" && s.Env["GOTOOLCHAIN"] != gt.Toolchain {
		goDir := strings.SplitN(s.Env["PATH"], string(os.PathListSeparator), 3)
		where := "the go command on its PATH"
		if len(goDir) > 1 {
			where = filepath.Join(goDir[1], "go")
		}
		problems = append(problems, fmt.Sprintf("its cells build without GOTOOLCHAIN=%s (go.mod's toolchain line): with %s as it is (GOTOOLCHAIN=%q)",
			gt.Toolchain, where, s.Env["GOTOOLCHAIN"]))
	}
	if b := s.Env[GoMLXBackendEnv]; strings.HasPrefix(b, "xla:/") && !fileExists(strings.SplitN(strings.TrimPrefix(b, "xla:"), ",", 2)[0]) {
		problems = append(problems, "GOMLX_BACKEND names a missing plugin: "+b)
	}
	if dirs := s.Env[PJRTPluginPathEnv]; dirs != "" {
		t := PJRTPluginPathEnv
		found := false
		for _, d := range filepath.SplitList(dirs) {
			m, _ := filepath.Glob(filepath.Join(d, "pjrt_c_api_*_plugin.so"))
			for _, p := range m {
				found = found || fileExists(p) // a link whose pip package went away does not count
			}
		}
		if !found {
			problems = append(problems, t+"="+dirs+" holds no loadable plugin file (was the pip package removed? re-run cifarlab kernel install)")
		}
	}
	detail := fmt.Sprintf("%q in %s, GOMLX_BACKEND=%s", s.DisplayName, ls.ResourceDir, s.Env[GoMLXBackendEnv])
	if len(problems) > 0 {
		c.Status, c.Detail, c.Fix = StatusFail, detail+": "+strings.Join(problems, "; "), fix
		return c
	}
	c.Status, c.Detail = StatusOK, detail
	if repo.Dir != "" && goWork != repo.Dir {
		c.Status = StatusWarn
		c.Detail += "; compiles against " + goWork + ", not " + repo.Dir
		c.Fix = fix + " (from this checkout)"
	}
	gt.CellPins = CellPinsOf(s.Env["GOPROXY"])
	if want := CellGoProxy(gt); want != "" && s.Env["GOPROXY"] != want {
		c.Status = StatusWarn
		c.Detail += fmt.Sprintf("; its GOPROXY %q is not the cells' proxy for this go command's GOMODCACHE and GOPROXY (%q): "+
			"cells would look for modules in another cache or proxy than go does", s.Env["GOPROXY"], want)
		if c.Fix == "" {
			c.Fix = fix
		}
	}
	return c
}

// withOwner adds to a kernelspec's check which checkout the kernel belongs to, and turns it
// into a warning, with the command that removes the other checkout's kernelspec, when
// notebooks would start another checkout's kernel.
func withOwner(c Check, o Owner, repo Repo) Check {
	if _, found := o.Used(); !found {
		return c
	}
	line, ok, fix := o.Describe(repo)
	if ok {
		c.Detail += "; belongs to this checkout"
		if n := len(o.Places) - 1; n > 0 {
			c.Detail += fmt.Sprintf(" (hides %d other kernelspec(s) of that name further down Jupyter's path)", n)
		}
		return c
	}
	used, _ := o.Used()
	c.Detail = strings.Replace(c.Detail, "; compiles against "+used.Repo+", not "+repo.Dir, "", 1) // said below, with the fix
	c.Detail += "; " + strings.TrimPrefix(line, o.Name+": ")
	if c.Status == StatusOK {
		c.Status = StatusWarn
	}
	c.Fix = fix
	return c
}

func first(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func onPath(tool, path string) bool {
	for _, d := range filepath.SplitList(path) {
		if d != "" && isExecutable(filepath.Join(d, tool)) {
			return true
		}
	}
	return false
}

// WriteText prints the report, one line per check, with the fix of each check that is not ok.
func (r Report) WriteText(w io.Writer) {
	marks := map[Status]string{StatusOK: " ok ", StatusAbsent: " -- ", StatusWarn: "warn", StatusFail: "FAIL"}
	for _, c := range r.Checks {
		line := fmt.Sprintf("[%s] %-26s %s", marks[c.Status], c.Name, c.Detail)
		if c.Status != StatusOK && c.Fix != "" {
			line += "  → fix: " + c.Fix
		}
		fmt.Fprintln(w, line)
	}
	if r.OK {
		fmt.Fprintln(w, "doctor: everything required is in place")
	} else {
		var failed []string
		for _, c := range r.Checks {
			if c.Required && c.Status == StatusFail {
				failed = append(failed, c.Name)
			}
		}
		fmt.Fprintf(w, "doctor: required items missing or broken: %s\n", strings.Join(failed, ", "))
	}
}

// checkXLACPUPlugin reports the XLA CPU plugin that backends.New("cpu") and the CPU
// kernel use (plugins.FindXLACPU), or its absence: optional, the pure-Go backend works.
func checkXLACPUPlugin(repo Repo) Check {
	loc, err := plugins.FindXLACPU(repo.Dir)
	switch {
	case err != nil:
		return Check{Name: "XLA CPU plugin", Status: StatusFail, Detail: err.Error(),
			Fix: "unset the variable or point it at pjrt_c_api_cpu_plugin.so"}
	case loc.Path != "":
		return Check{Name: "XLA CPU plugin", Status: StatusOK, Detail: loc.Path + " (" + loc.Source + ")"}
	}
	return Check{Name: "XLA CPU plugin", Status: StatusAbsent,
		Detail: "not found ($" + plugins.XLACPUEnv + ", go-xla's plugin folders, " + repo.VenvDir() +
			", $VIRTUAL_ENV); the CPU kernel uses the pure-Go backend",
		Fix: "optional: " + plugins.XLACPUInstallHint + "; then re-run cifarlab kernel install"}
}
