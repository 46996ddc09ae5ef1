package kernel

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// checkKernelSpec verifies one cifarlab kernelspec as Jupyter lists it: its gonb exists,
// the PATH it sets finds go, goimports and gopls, --go_work names a checkout, and its GOPROXY
// is the cells' proxy (cellGoProxy) of gt, the go command now on PATH, with pins of its own
// (cellPinsOf; a warning otherwise).
func checkKernelSpec(repo Repo, name string, specs map[string]listedSpec, gt goTools) Check {
	c := Check{Name: "kernelspec " + name, Required: true}
	fix := "cifarlab kernel install"
	ls, ok := specs[name]
	if !ok {
		names := slices.Sorted(maps.Keys(specs))
		c.Status, c.Detail, c.Fix = StatusFail, "not installed (Jupyter lists: "+strings.Join(names, ", ")+")", fix
		return c
	}
	s := ls.Spec
	goWork := specGoWork(s)
	detail := fmt.Sprintf("%q in %s, GOMLX_BACKEND=%s", s.DisplayName, ls.ResourceDir, s.Env[gomlxBackendEnv])
	if problems := specProblems(s, goWork, gt); len(problems) > 0 {
		c.Status, c.Detail, c.Fix = StatusFail, detail+": "+strings.Join(problems, "; "), fix
		return c
	}
	c.Status, c.Detail = StatusOK, detail
	if repo.Dir != "" && goWork != repo.Dir {
		c.Status = StatusWarn
		c.Detail += "; compiles against " + goWork + ", not " + repo.Dir
		c.Fix = fix + " (from this checkout)"
	}
	gt.CellPins = cellPinsOf(s.Env["GOPROXY"])
	if want := cellGoProxy(gt); want != "" && s.Env["GOPROXY"] != want {
		c.Status = StatusWarn
		c.Detail += fmt.Sprintf("; its GOPROXY %q is not the cells' proxy for this go command's GOMODCACHE and GOPROXY (%q): "+
			"cells would look for modules in another cache or proxy than go does", s.Env["GOPROXY"], want)
		if c.Fix == "" {
			c.Fix = fix
		}
	}
	return c
}

// specGoWork is the checkout a kernelspec's cells compile against: its (last) --go_work.
func specGoWork(s KernelSpec) string {
	goWork := ""
	for _, a := range s.Argv {
		if v, ok := strings.CutPrefix(a, "--go_work="); ok {
			goWork = v
		}
	}
	return goWork
}

// specProblems lists what keeps a kernelspec from working: a missing kernel binary or gonb, a
// PATH without go, goimports or gopls, no checkout in --go_work (goWork), another toolchain than
// gt's (go.mod's toolchain line), a missing plugin file.
func specProblems(s KernelSpec, goWork string, gt goTools) []string {
	var problems []string
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
	if goWork == "" {
		problems = append(problems, "no --go_work: cells would not import this repository's cifarlib")
	} else if !isRepo(goWork) {
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
	return append(problems, specPluginProblems(s)...)
}

// specPluginProblems: a GOMLX_BACKEND naming a missing plugin file, a PJRT_PLUGIN_LIBRARY_PATH
// without a loadable plugin (a link whose pip package went away does not count).
func specPluginProblems(s KernelSpec) []string {
	var problems []string
	if b := s.Env[gomlxBackendEnv]; strings.HasPrefix(b, "xla:/") && !fileExists(strings.SplitN(strings.TrimPrefix(b, "xla:"), ",", 2)[0]) {
		problems = append(problems, "GOMLX_BACKEND names a missing plugin: "+b)
	}
	if dirs := s.Env[pjrtPluginPathEnv]; dirs != "" {
		found := false
		for _, d := range filepath.SplitList(dirs) {
			m, _ := filepath.Glob(filepath.Join(d, "pjrt_c_api_*_plugin.so"))
			for _, p := range m {
				found = found || fileExists(p)
			}
		}
		if !found {
			problems = append(problems, pjrtPluginPathEnv+"="+dirs+" holds no loadable plugin file (was the pip package removed? re-run cifarlab kernel install)")
		}
	}
	return problems
}

// withOwner adds to a kernelspec's check which checkout the kernel belongs to, and turns it
// into a warning, with the command that removes the other checkout's kernelspec, when
// notebooks would start another checkout's kernel.
func withOwner(c Check, o owner, repo Repo) Check {
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

func onPath(tool, path string) bool {
	for _, d := range filepath.SplitList(path) {
		if d != "" && isExecutable(filepath.Join(d, tool)) {
			return true
		}
	}
	return false
}
