package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExportResultPythonLine: the PyTorch line of an export's summary is Python that loads the
// file when pasted: a literal path as it is, a notebook's $CIFARLAB_DATA path through
// os.path.expandvars (checked with the real Python when there is one).
func TestExportResultPythonLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "run é.safetensors")
	for _, c := range []struct{ file, want string }{
		{file, `model.load_state_dict(safetensors.torch.load_file("` + strings.ReplaceAll(file, "é", `\u00e9`) + `"))`},
		{"$CIFARLAB_DATA/run é.safetensors",
			`import os; model.load_state_dict(safetensors.torch.load_file(os.path.expandvars("$CIFARLAB_DATA/run \u00e9.safetensors")))`},
	} {
		r := &ExportResult{File: c.file, Run: "r", Arch: "cnn", NumClasses: 10, Tensors: 8, Names: NamesCNNTwin}
		line := strings.Split(r.String(), "\n")[1]
		require.Equal(t, "PyTorch: "+c.want+", with inputs normalised by", line)

		python, err := exec.LookPath("python3")
		if err != nil {
			continue
		}
		// The expression Python evaluates, with the model and safetensors replaced by a print.
		expr := strings.TrimPrefix(c.want, "import os; ")
		expr = strings.Replace(expr, "model.load_state_dict(safetensors.torch.load_file(", "print((", 1)
		cmd := exec.Command(python, "-c", "import os; "+expr)
		cmd.Env = append(os.Environ(), "CIFARLAB_DATA="+dir, "PYTHONIOENCODING=utf-8")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, file+"\n", string(out), "Python reads the path the lab wrote")
	}
}
