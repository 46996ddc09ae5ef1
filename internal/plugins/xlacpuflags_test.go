package plugins

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSetXLACPUFlags: the lab's XLA CPU flags are appended after the user's $XLA_FLAGS, and a flag
// the user sets keeps the user's value.
func TestSetXLACPUFlags(t *testing.T) {
	ours := XLACPUFlags[0]
	for _, tc := range []struct {
		name, before, after string
		added               []string
	}{
		{"unset", "", ours, []string{ours}},
		{"other flags first", "--xla_cpu_enable_fast_math=false", "--xla_cpu_enable_fast_math=false " + ours, []string{ours}},
		{"the user's value wins", FlagYnnFusionType + "=LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION",
			FlagYnnFusionType + "=LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION", nil},
		{"a name that only starts the same is another flag", FlagYnnFusionType + "_x=1", FlagYnnFusionType + "_x=1 " + ours, []string{ours}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XLA_FLAGS", tc.before)
			added, err := SetXLACPUFlags()
			require.NoError(t, err)
			require.Equal(t, tc.added, added)
			require.Equal(t, tc.after, os.Getenv("XLA_FLAGS"))
			again, err := SetXLACPUFlags()
			require.NoError(t, err)
			require.Empty(t, again, "a second call adds nothing")
			require.Equal(t, tc.after, os.Getenv("XLA_FLAGS"))
		})
	}
}
