//go:build !goexperiment.simd

package main

// simdBuild is true when the program was built with GOEXPERIMENT=simd, which enables the pure-Go
// backend's AVX2/AVX-512 matmul kernels (compute's files tagged goexperiment.simd).
const simdBuild = false
