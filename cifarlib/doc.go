// Package cifarlib is a GoMLX library for CIFAR-10/100 experiments that refuses to let a
// classifier head and its labels disagree silently.
//
// It provides CIFAR-10/100 loaders for the real binary format and for torchvision's python
// layout (pickles decoded with gopickle, nothing executed; see DetectLayout, ReadPickle), a
// verified downloader,
// a synthetic data generator writing the same format, a model factory whose head is sized
// from the dataset, guarded losses that turn a head/label mismatch into a clear Go error,
// shape inspection, backend selection (XLA CUDA, CPU) and a training loop built on GoMLX's.
//
// The steps of the debugging story are one call each: a batch of Records as tensors
// (Records.Batch), the logits of a model for its weights (Model.Logits, Trained.Logits), the
// loss of every example under GoMLX's plain and cifarlib's guarded loss (Model.Losses), one
// guarded or logged loss step (Model.LossOn), label statistics (Records.LabelStats), the usual
// shape mistakes (ShapeMistakes). Train's result and LoadCheckpoint's carry the trained model
// (Trained). The story's move itself, a trained run carried to another dataset, is
// TrainConfig.From (backbone carried bit for bit, a new head; see transfer.go), with the
// dataset-switch checklist in DiagnoseRun. Package nb puts them in notebook cells.
package cifarlib
