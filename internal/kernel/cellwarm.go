package kernel

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// cellImports are the packages a notebook cell imports from the checkout: the story's core, the
// stages the cells name (data, backends, runs, training, interop) and the notebook package. A
// cell-like module importing them all has the build list of every notebook's cells.
var cellImports = []string{modulePath + "/cifarlib", modulePath + "/cifarlib/data", modulePath + "/cifarlib/backends",
	modulePath + "/cifarlib/runs", modulePath + "/cifarlib/training", modulePath + "/cifarlib/interop", modulePath + "/cifarlib/nb"}

// writeCellModule writes, into the empty folder dir, a module like the one GoNB builds a cell in:
// a main package importing cellImports from repo (a replace, as GoNB's go.work adds to the
// cell's go.mod), with the checkout's go.sum.
func writeCellModule(dir string, repo Repo) error {
	sum, err := os.ReadFile(filepath.Join(repo.Dir, "go.sum"))
	if err != nil {
		return err
	}
	var imports strings.Builder
	for _, p := range cellImports {
		fmt.Fprintf(&imports, "\t_ %q\n", p)
	}
	files := map[string]string{
		"go.mod":  "module cell\n\ngo 1.26\n\nrequire " + modulePath + " v0.0.0\n\nreplace " + modulePath + " => " + repo.Dir + "\n",
		"go.sum":  string(sum),
		"main.go": "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cellGoGet runs, in the cell module dir, the `go get` GoNB runs before it builds each cell,
// with the kernels' go command (gt) and the cells' module proxy (cellGoProxy, with gt.CellPins)
// and the environment env added; -x makes the go command print every request it sends
// ("# get https://..."). It returns the combined output.
func cellGoGet(ctx context.Context, dir string, gt goTools, env ...string) (string, error) {
	cmd := exec.CommandContext(ctx, gt.Go(), "get", "-x")
	cmd.Dir = dir
	cmd.Env = append(gt.Env(), "GOFLAGS=-mod=mod -modcacherw", "GOWORK=off")
	if proxy := cellGoProxy(gt); proxy != "" {
		cmd.Env = append(cmd.Env, "GOPROXY="+proxy)
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("go get in a cell module: %w\n%s", err, out)
	}
	return string(out), nil
}

// warmCellGet runs a cell's `go get` once (cellGoGet in a cell module of repo), so that the
// module cache holds every answer a cell's `go get` needs: the version lists and go.mod files of
// the cell's modules, and the checksum database's answers for the newest go.mod of each one
// that the checkout's go.sum does not pin (a newer version another project put in the module
// cache). Without it the user's first cell waits on sum.golang.org for them. Install runs it;
// it returns the number of network requests the warm-up made.
func warmCellGet(ctx context.Context, repo Repo, gt goTools) (requests int, err error) {
	dir, err := os.MkdirTemp("", "cifarlab-cell-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if err := writeCellModule(dir, repo); err != nil {
		return 0, err
	}
	out, err := cellGoGet(ctx, dir, gt)
	return len(networkRequests(out)), err
}

// networkRequests returns the network requests in the output of `go get -x`: its lines
// "# get https://..." (and http://), without the lines that report their answers.
func networkRequests(goGetOutput string) []string {
	var reqs []string
	for _, line := range strings.Split(goGetOutput, "\n") {
		if (strings.HasPrefix(line, "# get https://") || strings.HasPrefix(line, "# get http://")) && !strings.Contains(line, ": ") {
			reqs = append(reqs, strings.TrimPrefix(line, "# get "))
		}
	}
	return reqs
}
