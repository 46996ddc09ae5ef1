package layers

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/repo"
	"github.com/stretchr/testify/require"
)

const module = "github.com/cifarlab/cifarlab/"

// allowed lists, for each package of the module, the packages of the module it may import
// directly (its non-test files). A package missing from the table fails the test: add it with
// the stage it belongs to.
var allowed = map[string][]string{
	"internal/atomicfile":       nil,
	"internal/compilecache":     {"internal/atomicfile"},
	"internal/archive":          nil,
	"internal/pickle":           nil,
	"internal/torchfile":        {"internal/pickle"},
	"internal/safetensors":      {"internal/atomicfile"},
	"internal/repo":             nil,
	"internal/proctree":         nil,
	"internal/oomkill":          nil,
	"internal/oomkill/oomtest":  {"internal/oomkill"},
	"internal/tfevents":         nil,
	"internal/plugins":          {"internal/repo"},
	"internal/tfevents/tbtest":  {"internal/repo", "internal/testenv"},
	"internal/testenv":          {"internal/plugins", "internal/repo"},
	"internal/slurmtest":        {"internal/testenv"},
	"cifarlib/internal/labtest": {"cifarlib/data", "cifarlib/backends"},
	"cifarlib/internal/labproc": {"internal/oomkill", "internal/proctree"},
	"internal/layers":           nil,
	"cifarlib/data":             {"internal/atomicfile", "internal/archive", "internal/pickle"},
	"cifarlib/backends":         {"internal/compilecache", "internal/plugins", "internal/repo"},
	"cifarlib":                  {"cifarlib/data", "cifarlib/backends", "internal/atomicfile", "internal/plugins"},
	"cifarlib/runs": {"cifarlib", "cifarlib/data", "cifarlib/backends", "internal/atomicfile",
		"internal/tfevents"},
	// training's own packages: its optimizers and schedules, and its checkpoints, below it.
	"cifarlib/training/optimizers":  {"cifarlib", "cifarlib/backends"},
	"cifarlib/training/checkpoints": {"cifarlib", "cifarlib/runs"},
	"cifarlib/training": {"cifarlib", "cifarlib/data", "cifarlib/backends", "cifarlib/runs", "cifarlib/training/optimizers",
		"cifarlib/training/checkpoints",
		"internal/atomicfile", "internal/tfevents", "internal/plugins"},
	"cifarlib/sweep": {"cifarlib/runs", "cifarlib/training", "internal/atomicfile", "internal/oomkill", "internal/proctree"},
	"cifarlib/interop": {"cifarlib", "cifarlib/data", "cifarlib/backends", "cifarlib/training",
		"internal/torchfile", "internal/safetensors"},
	"cifarlib/nb": {"cifarlib", "cifarlib/data", "cifarlib/backends", "cifarlib/runs", "cifarlib/training", "cifarlib/training/checkpoints",
		"cifarlib/interop", "cifarlib/sweep", "cifarlib/internal/labproc", "internal/proctree", "internal/repo"},
	"internal/kernel": {"cifarlib/backends", "internal/plugins", "internal/proctree", "internal/repo"},
	"cmd/cifarlab": {"cifarlib", "cifarlib/data", "cifarlib/backends", "cifarlib/runs", "cifarlib/training", "cifarlib/training/checkpoints",
		"cifarlib/interop", "cifarlib/sweep", "internal/kernel", "internal/compilecache", "internal/plugins", "internal/proctree", "internal/repo"},
	"bench/devices":                        {"cifarlib", "cifarlib/data", "cifarlib/backends", "cifarlib/training"},
	"bench/trainstep":                      {"cifarlib", "cifarlib/data", "cifarlib/backends", "internal/plugins"},
	"bench/loop":                           {"cifarlib/data", "cifarlib/nb", "cifarlib/runs", "cifarlib/training"},
	"bench/interop/logits":                 {"cifarlib/data", "cifarlib/backends", "cifarlib/training"},
	"research/airbench94-parity/labstream": {"cifarlib/data", "internal/atomicfile"},
	"bench/cifar10jpeg":                    nil,
	"docker/pjrtinstall":                   nil,
	"cmd/cifarlab-kernel":                  {"internal/oomkill", "internal/proctree"},
	"notebooks":                            nil,
	"docs":                                 nil,
}

// TestImportDirection lists every package of the module with `go list` and requires each
// import of the module's own packages to be in the package's allowed set: an import that
// reaches up a stage (or sideways between data and backends) fails with its name.
func TestImportDirection(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = repo.Dir()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	seen := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		allow, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the import table of internal/layers: add it with the packages it may import", pkg)
			continue
		}
		seen++
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if ok && !slices.Contains(allow, dep) {
				t.Errorf("%s imports %s, which its stage may not import (allowed: %s): move the code to the stage "+
					"that owns it, or pass the value down as a parameter", pkg, dep, strings.Join(allow, ", "))
			}
		}
	}
	require.Equal(t, len(allowed), seen, "every package of the table exists")
}

// installers are the packages that download PJRT plugins at run time: go-xla's installer, its
// opt-in auto-installer (since go-xla v0.4.5, still opt-in in v0.4.13) and GoMLX's backends/default, which imports it.
var installers = []string{"github.com/gomlx/go-xla/installer", "github.com/gomlx/go-xla/compute/xla/autoinstall",
	"github.com/gomlx/gomlx/backends/default"}

// TestNoPluginInstallerLinked: no package of the module links a plugin downloader except
// docker/pjrtinstall, whose job it is: the lab installs plugins with pip (kernel/setup.sh), and
// a cell that linked the installer would link net/http and the PyPI/GitHub clients for nothing
// (bench/RESULTS-cells.md). cifarlib imports go-xla's compute/xla directly for that reason.
func TestNoPluginInstallerLinked(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd.Dir = repo.Dir()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if fields[0] == module+"docker/pjrtinstall" {
			require.Contains(t, fields[1:], installers[0], "docker/pjrtinstall installs with go-xla's installer")
			continue
		}
		for _, dep := range fields[1:] {
			require.NotContains(t, installers, dep, "%s links %s: import github.com/gomlx/go-xla/compute/xla, not an installer", fields[0], dep)
		}
	}
}
