//go:build cgo && linux

package labproc

// #include <malloc.h>
import "C"

// trimCHeap returns the free memory of glibc's heap, every arena's, to the system.
func trimCHeap() { C.malloc_trim(0) }
