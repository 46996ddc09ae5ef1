//go:build !cgo || !linux

package labproc

// trimCHeap does nothing: no glibc to trim.
func trimCHeap() {}
