package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// placed is one kernelspec of a cifarlab kernel's name found on Jupyter's data path.
type placed struct {
	// Dir is the kernelspec's folder (DATA/kernels/NAME) and Data the data folder holding it.
	Dir, Data string
	// Repo is the checkout it runs (its metadata, else its --go_work); "" when unreadable.
	Repo string
}

// owner says which checkout a cifarlab kernel of a given name belongs to, as a Jupyter with
// the same environment would start it.
type owner struct {
	// Name is the kernel's name (CPUKernel, CUDAKernel).
	Name string
	// Places are the kernelspecs of that name along Jupyter's data path, in its order: the
	// first is the one notebooks start, the others are hidden by it.
	Places []placed
}

// Used is the kernelspec notebooks start (the first on the path), and false when none is.
func (o owner) Used() (placed, bool) {
	if len(o.Places) == 0 {
		return placed{}, false
	}
	return o.Places[0], true
}

// kernelOwners lists, for each cifarlab kernel, the kernelspecs of its name on the data path
// of jup (`jupyter --paths` with extraEnv, e.g. JUPYTER_DATA_DIR=...), first the one Jupyter
// uses.
func kernelOwners(ctx context.Context, jup jupyter, extraEnv ...string) ([]owner, error) {
	path, err := jup.DataPath(ctx, extraEnv...)
	if err != nil {
		return nil, err
	}
	var out []owner
	for _, name := range []string{CPUKernel, CUDAKernel} {
		o := owner{Name: name}
		for _, data := range path {
			dir := kernelDir(data, name)
			raw, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
			if err != nil {
				continue
			}
			o.Places = append(o.Places, placed{Dir: dir, Data: data, Repo: specRepo(raw)})
		}
		out = append(out, o)
	}
	return out, nil
}

// specRepo is the checkout a kernel.json runs: metadata.cifarlab.repo, else --go_work.
func specRepo(raw []byte) string {
	var s KernelSpec
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	if s.Metadata.Cifarlab.Repo != "" {
		return s.Metadata.Cifarlab.Repo
	}
	for _, a := range s.Argv {
		if v, ok := strings.CutPrefix(a, "--go_work="); ok {
			return v
		}
	}
	return ""
}

// Describe says, in one line, which checkout the kernel belongs to for repo's lab, and
// whether it is another checkout's (ok false), with the fix: the command that removes the
// other checkout's kernelspec that comes first on Jupyter's path, and installs this one's
// when it is not further down.
func (o owner) Describe(repo Repo) (line string, ok bool, fix string) {
	used, found := o.Used()
	if !found {
		return o.Name + ": not installed", false, "cifarlab kernel install"
	}
	if used.Repo == repo.Dir {
		line = fmt.Sprintf("%s: this checkout (%s), from %s", o.Name, repo.Dir, used.Dir)
		if len(o.Places) > 1 {
			line += fmt.Sprintf(" (hides %d other kernelspec(s) of that name further down Jupyter's path)", len(o.Places)-1)
		}
		return line, true, ""
	}
	other := used.Repo
	if other == "" {
		other = "an unreadable kernel.json"
	}
	mine := false
	for _, p := range o.Places[1:] {
		mine = mine || p.Repo == repo.Dir
	}
	where := "this checkout's is further down Jupyter's path"
	if !mine {
		where = "this checkout has none on Jupyter's path"
	}
	line = fmt.Sprintf("%s: notebooks would start the kernel of ANOTHER checkout, %s (kernelspec %s; %s)", o.Name, other, used.Dir, where)
	if man, err := readManifest(used.Data); err == nil && man.Repo == used.Repo {
		fix = "cifarlab kernel uninstall --jupyter-data-dir " + used.Data
	} else {
		fix = "rm -r " + used.Dir
	}
	if !mine {
		fix += " && cifarlab kernel install"
	}
	return line, false, fix
}
