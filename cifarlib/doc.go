// Package cifarlib is a GoMLX library for CIFAR-10/100 experiments that refuses to let a
// classifier head and its labels disagree silently.
//
// It provides CIFAR-10/100 loaders for the real binary format, a verified downloader,
// a synthetic data generator writing the same format, a model factory whose head is sized
// from the dataset, guarded losses that turn a head/label mismatch into a clear Go error,
// shape inspection, backend selection (XLA CUDA, CPU) and a training loop built on GoMLX's.
package cifarlib
