package kernel

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

// cellModulesShown are the modules whose cell versions doctor names in its detail line.
var cellModulesShown = []string{"github.com/gomlx/gomlx", "github.com/gomlx/go-xla", "github.com/gomlx/compute", "github.com/janpfeifer/gonb"}

// checkCellModules says which module versions notebook cells build with and warns when a cell
// module has drifted from go.mod: when the cells' pinned proxy (gt.CellPins, the one the installed
// kernels name) pins other versions than the checkout's build list (go.mod changed since
// `cifarlab kernel install`), or is missing, and when the
// module of a running GoNB kernel of this checkout (tmpDir/gonb_*/, its go.work using the
// checkout) requires a newer version of a module of go.mod than go.mod selects (a cell ran
// `go get MODULE@VERSION`, or imports a module that requires it): its cells then build with that
// version.
func checkCellModules(ctx context.Context, repo Repo, gt goTools, tmpDir string) Check {
	c := Check{Name: "cell modules"}
	fix := "cifarlab kernel install"
	want, err := buildList(ctx, repo, gt)
	if err != nil {
		c.Status, c.Detail, c.Fix = StatusWarn, err.Error(), "go mod download in the checkout, then "+fix
		return c
	}
	var shown []string
	for _, m := range cellModulesShown {
		if v := want[m]; v != "" {
			shown = append(shown, strings.TrimPrefix(m, "github.com/")+" "+v)
		}
	}
	c.Status = StatusOK
	c.Detail = fmt.Sprintf("cells build with go.mod's versions of %d modules (%s), pinned by %s", len(want), strings.Join(shown, ", "), cmp.Or(gt.CellPins, "nothing"))
	var warnings []string
	pins, err := readCellProxy(gt.CellPins)
	switch {
	case gt.CellPins == "":
		warnings = append(warnings, "the kernels name no pinned proxy: cells take the newest version the module cache lists of any module they import")
	case err != nil || len(pins) == 0:
		warnings = append(warnings, fmt.Sprintf("no pinned proxy in %s: cells take the newest version the module cache lists of any module they import", gt.CellPins))
	default:
		if ds := drifts(want, pins, true); len(ds) > 0 {
			warnings = append(warnings, fmt.Sprintf("the pinned proxy differs from go.mod (changed since the kernels were installed): %s", joinDrifts(ds)))
		}
	}
	kernels, _ := filepath.Glob(filepath.Join(tmpDir, "gonb_*", "go.work"))
	sort.Strings(kernels)
	for _, work := range kernels {
		data, err := os.ReadFile(work)
		if err != nil || !strings.Contains(string(data), repo.Dir) {
			continue
		}
		mod, err := readGoMod(filepath.Join(filepath.Dir(work), "go.mod"))
		if err != nil {
			continue
		}
		var ds []drift
		for p, v := range mod.Require {
			if w, ok := want[p]; ok && semver.Compare(v, w) > 0 {
				ds = append(ds, drift{Path: p, Want: w, Have: v})
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i].Path < ds[j].Path })
		if len(ds) > 0 {
			warnings = append(warnings, fmt.Sprintf("the running kernel %s builds its cells with %s", filepath.Base(filepath.Dir(work)), joinDrifts(ds)))
			fix = "restart that kernel (Kernel > Restart), or remove the `go get` of the newer version from its notebook; " + fix + " if the pinned proxy differs"
		}
	}
	if len(warnings) > 0 {
		c.Status = StatusWarn
		c.Detail += "; but " + strings.Join(warnings, "; ")
		c.Fix = fix
	}
	return c
}

func joinDrifts(ds []drift) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, ", ")
}
