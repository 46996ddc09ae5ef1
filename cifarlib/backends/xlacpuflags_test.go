package backends

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cifarlab/cifarlab/internal/compilecache"
	"github.com/cifarlab/cifarlab/internal/plugins"
	"github.com/cifarlab/cifarlab/internal/testenv"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// TestXLACPUFlagsReachXLA: New("cpu") sets plugins.XLACPUFlags before the plugin starts, and XLA
// compiles with them: a convolution's forward pass and both gradients are plain convolutions
// (Eigen's), none in a YNNPACK fusion, in the optimised module XLA dumps. With the user's own
// value of the flag (YNNPACK for convolutions), the same program's convolutions are YNNPACK
// fusions (as they are by default): the check sees the flag's effect, and the user's value wins. XLA reads $XLA_FLAGS
// once per process, so each case runs in a child process.
func TestXLACPUFlagsReachXLA(t *testing.T) {
	const childEnv = "CIFARLAB_TEST_CHILD"
	if os.Getenv(childEnv) == "xla-cpu-flags" {
		compileConvolutionGradients(t)
		return
	}
	cpu := testenv.XLACPUPluginOrSkip(t).Path
	run := func(userFlags string) (string, string) { return runWithXLAFlags(t, childEnv, cpu, userFlags) }
	flags, module := run("")
	require.Contains(t, flags, strings.Join(plugins.XLACPUFlags, " "), "New set the lab's flags after the user's")
	all, ynn := convolutionsIn(module)
	require.Equal(t, 3, all, "forward, input gradient and kernel gradient:\n%s", module)
	require.Zero(t, ynn, "no convolution is a YNNPACK fusion:\n%s", module)

	own := plugins.FlagYnnFusionType + "=LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION"
	flags, module = run(own)
	require.Contains(t, flags, own)
	require.NotContains(t, flags, plugins.XLACPUFlags[0], "the user's value of the flag is kept")
	all, ynn = convolutionsIn(module)
	require.Equal(t, 3, all)
	require.Positive(t, ynn, "YNNPACK fusions, as the user asked (XLA keeps the smallest on Eigen):\n%s", module)
}

// compileConvolutionGradients is TestXLACPUFlagsReachXLA's child: New("cpu"), then a
// convolution and its gradients compiled and run, saying the flags it ran with.
func compileConvolutionGradients(t *testing.T) {
	b, err := New("cpu")
	require.NoError(t, err)
	os.Stdout.WriteString("\nFLAGS " + os.Getenv("XLA_FLAGS") + "\n")
	exec := graph.MustNewExec(b, func(x, k *graph.Node) []*graph.Node {
		y := graph.Convolve(x, k).PadSame().Done()
		loss := graph.ReduceAllSum(graph.Mul(y, y))
		return graph.Gradient(loss, x, k)
	})
	x := make([]float32, 4*16*16*64)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	k := make([]float32, 3*3*64*64)
	for i := range k {
		k[i] = float32(i%5) - 2
	}
	exec.MustExec(tensors.FromFlatDataAndDimensions(x, 4, 16, 16, 64), tensors.FromFlatDataAndDimensions(k, 3, 3, 64, 64))
	os.Stdout.WriteString("\nRAN\n")
}

// convolutionsIn counts the convolutions of the optimised module, and those inside a
// computation that a YNNPACK fusion calls.
func convolutionsIn(module string) (all, ynn int) {
	ynnBodies := map[string]bool{}
	for _, m := range regexp.MustCompile(`calls=%([\w.\-]+), backend_config=\{"fusion_config":\{"kind":"__ynn_fusion"`).FindAllStringSubmatch(module, -1) {
		ynnBodies[m[1]] = true
	}
	current := ""
	for _, line := range strings.Split(module, "\n") {
		if m := regexp.MustCompile(`^(?:ENTRY )?%([\w.\-]+) `).FindStringSubmatch(line); m != nil {
			current = m[1]
		}
		if strings.Contains(line, " convolution(") {
			all++
			if ynnBodies[current] {
				ynn++
			}
		}
	}
	return all, ynn
}

// runWithXLAFlags runs TestXLACPUFlagsReachXLA's child (childEnv set) with the XLA CPU plugin
// cpu and userFlags in $XLA_FLAGS, and returns the flags it ran with and the optimised module
// XLA dumped.
func runWithXLAFlags(t *testing.T, childEnv, cpu, userFlags string) (flags string, module string) {
	dump := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestXLACPUFlagsReachXLA$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XLA_FLAGS=") && !strings.HasPrefix(kv, compilecache.DirEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// XLA must compile to dump the module: with the compile cache, a program that an earlier run
	// compiled is loaded (the dump flags are not part of its key).
	cmd.Env = append(cmd.Env, childEnv+"=xla-cpu-flags", plugins.XLACPUEnv+"="+cpu, compilecache.DirEnv+"=off",
		"XLA_FLAGS="+strings.TrimSpace("--xla_dump_to="+dump+" --xla_dump_hlo_as_text "+userFlags))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "\nRAN\n")
	flags = regexp.MustCompile(`\nFLAGS ([^\n]*)\n`).FindStringSubmatch(string(out))[1]
	files, err := filepath.Glob(filepath.Join(dump, "*cpu_after_optimizations.txt"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one program compiled and dumped")
	text, err := os.ReadFile(files[0])
	require.NoError(t, err)
	return flags, string(text)
}
