package labproc

import (
	"runtime"
	"runtime/debug"
)

// ReleaseMemory gives back to the system the memory the process freed: Go's heap (a garbage
// collection, and the freed spans returned: debug.FreeOSMemory; buffers of XLA that only Go's
// finalizers free go with it, so it collects twice), and the C heap, where XLA's buffers and
// programs live (glibc keeps what they freed in its arenas until malloc_trim).
func ReleaseMemory() {
	runtime.GC()
	runtime.GC() // the cleanups of the first collection (PJRT buffers, executables) have run
	debug.FreeOSMemory()
	trimCHeap()
}
