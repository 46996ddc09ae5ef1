package nb

import (
	"fmt"
	"os"

	"github.com/cifarlab/cifarlab/cifarlib/internal/labproc"
)

// A cell whose own program the out-of-memory killer ended cannot say so: GoNB shows only
// "signal: killed". The kernel's next cell says it, before anything else: that memory ran out,
// the limit, and what to do (labproc.CellMemory compares the memory cgroup's counts with the
// previous cell's).
func init() {
	if inLabProcess || !InNotebook() || os.Getenv(labproc.GoNBTmpEnv) == "" {
		return
	}
	folder, err := labproc.Folder(os.Getenv(labproc.GoNBTmpEnv))
	if err != nil {
		return
	}
	if oom := labproc.CellMemory(folder); oom != nil {
		fmt.Fprintf(output(), "nb: %s since this notebook's previous cell began: the kernel's out-of-memory killer "+
			"ended a process of this kernel's machine or container; if the previous cell ended with \"signal: killed\", "+
			"it was that cell's program. To go on, %s\n", oom, oom.Advice())
	}
}
