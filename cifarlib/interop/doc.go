// Package interop carries models between PyTorch and the lab: Import reads a PyTorch
// state_dict (a torch.save zip file, torch >= 1.6, read with weights_only=True semantics, or a
// .safetensors file) of a CIFAR ResNet-18 (kuangliu/pytorch-cifar's or torchvision's naming) or
// of the cnn's PyTorch twin, and writes a run folder that `cifarlab eval`, `diagnose --from` and
// `train --from` accept like any other run; Export writes a run's model as a safetensors file
// with PyTorch's names and layouts, which model.load_state_dict(safetensors.torch.load_file(FILE))
// loads with strict=True.
//
// Layouts: convolutions are [out, in, kh, kw] in PyTorch and [kh, kw, in, out] in the lab, linear
// weights [out, in] and [in, out]; the cnn's head also permutes its 1024 inputs between PyTorch's
// channel-major flatten and the lab's height-major one. Batch-norm statistics are carried, and
// GoMLX's moving-average weight (avg_weight) is set from num_batches_tracked, so that fine-tuning
// starts from the imported statistics instead of replacing them at the first step.
//
// Input normalisation: a model trained with other standard deviations than the lab's (kuangliu's
// (0.2023, 0.1994, 0.2010) against the lab's (0.2470, 0.2435, 0.2616); the means are equal) is
// imported by folding the ratio into the first convolution's input channels. That is exact: the
// convolution is linear in its input and its zero padding is zero in either normalisation, so
// the imported run needs no statistics of its own and every tool that reads runs (eval, diagnose,
// transfer to CIFAR-100 with that dataset's statistics) uses it unchanged. Different means cannot
// be folded exactly (a constant offset meets the zero padding at the borders) and are refused.
// Export writes the weights for the run's own statistics and says so: it prints the
// transforms.Normalize(...) line and stores it in the file's metadata.
//
// What cannot map exactly is refused by name, never imported as a silently different model: a
// 7x7 ImageNet stem, a pre-activation ResNet, a dtype that does not widen exactly to float32.
// Key mismatches are reported in load_state_dict's words (Missing key(s), Unexpected key(s),
// size mismatch for NAME with both shapes).
package interop
