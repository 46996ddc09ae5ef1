package checkpoints

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProblem: a checkpoint is complete when its .json parses and names its variables, and its
// .bin exists; what is wrong with an incomplete one is said.
func TestProblem(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, json string
		bin        bool
		want       string
	}{
		{"complete", `{"Variables": [{"ParameterName": "/w"}]}`, true, ""},
		{"empty", ``, true, "its .json is empty"},
		{"truncated", `{"Variables": [{"Param`, true, "its .json does not parse: unexpected end of JSON input"},
		{"novars", `{"Params": []}`, true, "its .json lists no variables"},
		{"nobin", `{"Variables": []}`, false, "its .bin is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(dir, "checkpoint-"+tc.name)
			require.NoError(t, os.WriteFile(base+".json", []byte(tc.json), 0o644))
			if tc.bin {
				require.NoError(t, os.WriteFile(base+".bin", []byte("data"), 0o644))
			}
			require.Equal(t, tc.want, problem(base))
		})
	}
	require.Contains(t, problem(filepath.Join(dir, "checkpoint-gone")), "no such file or directory")
}
