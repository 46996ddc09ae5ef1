// Package interop carries models between PyTorch and the lab: Import reads a PyTorch
// state_dict (a torch.save zip file, torch >= 1.6, read with weights_only=True semantics, or a
// .safetensors file) of a CIFAR ResNet-18 (kuangliu/pytorch-cifar's or torchvision's naming), of
// the cnn's PyTorch twin or of airbench's make_net94 (airbench94; Keller Jordan,
// KellerJordan/cifar10-airbench, airbench 0.1.8), and writes a run folder that `cifarlab eval`, `diagnose --from` and
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
// Input normalisation: a model trained with other statistics than its dataset's (kuangliu's
// std (0.2023, 0.1994, 0.2010) against the lab's (0.2470, 0.2435, 0.2616)) keeps them: the run
// records them (training.CheckpointInfo.Input) and its model applies them at its input
// (cifarlib.Model.Input: the graph re-normalises the lab's data to them), so every tensor is the
// file's, a permutation of its values with nothing folded in. A file imported and exported
// without training therefore gives back its tensors bit for bit, under its own naming (Export's
// default for an imported run), and the source pipeline's own transforms.Normalize works
// unchanged. Export prints the transforms.Normalize(...) line the run expects (after fine-tuning
// too) and stores it in the file's metadata.
//
// What cannot map exactly is refused by name, never imported as a silently different model: a
// 7x7 ImageNet stem, a pre-activation ResNet, a dtype that does not widen exactly to float32.
// Key mismatches are reported in load_state_dict's words (Missing key(s), Unexpected key(s),
// size mismatch for NAME with both shapes; the first few keys and a count), with one line naming
// a ResNet of another depth (ResNet-34, -50, -101, -152).
package interop
