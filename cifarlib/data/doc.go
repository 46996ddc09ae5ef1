// Package data holds the CIFAR-10/100 data: specs (CIFAR10, CIFAR100), records and their
// readers and writer for the binary layout and torchvision's python layout (pickles decoded
// with gopickle, nothing executed; see DetectLayout), a verified downloader with safe archive
// extraction, a synthetic data generator writing the same format, host datasets and batches
// (NewDataset, Records.Batch), normalisation and CIFAR-100's superclasses. A label outside the
// head is a *LabelRangeError, raised here by the host checks and used by the guards.
//
// It is stage 2 of the module's pipeline (see internal/layers): it knows no model and no
// backend, and imports only internal plumbing (never cifarlib, backends, runs, training, nb).
package data
