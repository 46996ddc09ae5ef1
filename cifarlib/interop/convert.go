package interop

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib"
	"github.com/cifarlab/cifarlab/internal/torchfile"
)

// Normalization is the input normalisation a model expects: transforms.Normalize(Mean, Std)
// after ToTensor(), on pixel values scaled to [0, 1].
type Normalization struct {
	Mean, Std [3]float32
}

// AirbenchNormalization is airbench's (utils.py CIFAR_MEAN, CIFAR_STD), the lab's CIFAR-10
// statistics.
var AirbenchNormalization = Normalization{Mean: [3]float32{0.4914, 0.4822, 0.4465}, Std: [3]float32{0.2470, 0.2435, 0.2616}}

// PytorchCIFARNormalization is kuangliu/pytorch-cifar's (main.py): the lab's CIFAR-10 means
// with different standard deviations.
var PytorchCIFARNormalization = Normalization{Mean: [3]float32{0.4914, 0.4822, 0.4465}, Std: [3]float32{0.2023, 0.1994, 0.2010}}

// String formats it as the PyTorch line: transforms.Normalize((m, m, m), (s, s, s)).
func (n Normalization) String() string {
	f := func(v [3]float32) string {
		return fmt.Sprintf("(%s, %s, %s)", fmtFloat(v[0]), fmtFloat(v[1]), fmtFloat(v[2]))
	}
	return "transforms.Normalize(" + f(n.Mean) + ", " + f(n.Std) + ")"
}

// fmtFloat prints a float32 statistic with the fewest digits that read back the same.
func fmtFloat(v float32) string { return fmt.Sprint(v) }

// Variable is one lab variable: its path in the model's scope, shape and float32 values.
type Variable struct {
	Path   string
	Shape  []int
	Values []float32
}

// converted is a state_dict turned into the lab's variables.
type converted struct {
	names      Names
	variables  []Variable
	batches    int64 // the largest num_batches_tracked
	batchNorms int   // the batch-norm layers
}

// detectNames picks the naming of a ResNet-18 state_dict from its keys.
func detectNames(arch string, keys []string) Names {
	if arch == "cnn" || arch == cifarlib.ArchAirbench94 {
		return DefaultNames(arch)
	}
	for _, k := range keys {
		if k == "fc.weight" || strings.Contains(k, ".downsample.") {
			return NamesTorchvision
		}
	}
	return NamesPytorchCIFAR
}

// modelClass is the PyTorch class a naming is, for load_state_dict's message.
func modelClass(names Names) string {
	switch names {
	case NamesTorchvision:
		return "ResNet"
	case NamesCNNTwin:
		return "LabCNN"
	case NamesAirbench94:
		return "Sequential"
	}
	return "ResNet18"
}

// refuseShapes refuses, by name, the ResNets that have no exact lab equivalent.
func refuseShapes(sd *StateDict) error {
	if t, ok := sd.Tensors["conv1.weight"]; ok && len(t.Shape) == 4 && t.Shape[2] == 7 && t.Shape[3] == 7 {
		return &RefusalError{File: sd.File, Kind: ErrStem7x7, Detail: fmt.Sprintf("conv1.weight is %v: an ImageNet stem (7x7 stride 2, "+
			"then max-pool), which the lab's CIFAR ResNet-18 (3x3 stride 1, no max-pool) cannot reproduce; fine-tune a CIFAR "+
			"ResNet-18 in PyTorch (model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False); model.maxpool = nn.Identity()) or train "+
			"in the lab", torchfile.ShapeString(t.Shape))}
	}
	_, final := sd.Tensors["bn.weight"]
	_, stem := sd.Tensors["bn1.weight"]
	if final && !stem {
		return &RefusalError{File: sd.File, Kind: ErrPreAct, Detail: "the keys bn.* without bn1.* are a pre-activation ResNet " +
			"(kuangliu's PreActResNet18: batch norm and ReLU before each convolution), a different function from the lab's " +
			"post-activation ResNet-18; import a ResNet18() state_dict instead"}
	}
	return nil
}

// checkKeys compares the state_dict with the model's keys as load_state_dict(strict=True)
// does.
func checkKeys(sd *StateDict, ps []param, names Names, numClasses int) error {
	e := &LoadStateDictError{File: sd.File, Model: modelClass(names)}
	want := torchKeys(ps)
	for _, p := range ps {
		t, ok := sd.Tensors[p.torch]
		if !ok {
			e.Missing = append(e.Missing, p.torch)
			continue
		}
		if !slices.Equal(t.Shape, p.shape) {
			e.Sizes = append(e.Sizes, SizeMismatch{Key: p.torch, Checkpoint: t.Shape, Want: p.shape})
		}
	}
	for _, k := range sd.Keys {
		if !hasKey(want, k) {
			e.Unexpected = append(e.Unexpected, k)
		}
	}
	if len(e.Missing)+len(e.Unexpected)+len(e.Sizes) == 0 {
		return nil
	}
	head := ps[len(ps)-1].torch
	if len(e.Missing)+len(e.Unexpected) == 0 {
		if t := sd.Tensors[head]; len(t.Shape) >= 1 && t.Shape[0] != numClasses { // the head's last tensor: its bias, or airbench's weight
			e.Hint = fmt.Sprintf("The file's head has %d outputs, the model's %d: import it with the dataset it was trained on "+
				"(dataset cifar100 for 100 classes; ImportOptions.Spec), then move it to another dataset by a transfer "+
				"(lab.Transfer; training.Settings.Transfer.From, the setting from).",
				t.Shape[0], numClasses)
		}
	} else if hint := depthHint(sd.Keys); hint != "" {
		e.Hint = hint
	} else if arch, other := matchingNaming(sd.Keys); other != "" && other != names {
		e.Hint = fmt.Sprintf("The file has the keys of %s's %s: import it with --arch %s --names %s (ImportOptions{Arch: %q, Names: %q}).",
			other, modelClass(other), arch, other, arch, other)
	}
	return e
}

// matchingNaming finds the architecture and naming whose keys are exactly keys, if any.
func matchingNaming(keys []string) (string, Names) {
	for _, c := range []struct {
		arch  string
		names Names
	}{{"resnet18", NamesPytorchCIFAR}, {"resnet18", NamesTorchvision}, {"cnn", NamesCNNTwin}, {cifarlib.ArchAirbench94, NamesAirbench94}} {
		ps, _ := keyMap(c.arch, c.names, 10)
		if len(ps) != len(keys) {
			continue
		}
		all := true
		for _, p := range ps {
			all = all && hasKey(keys, p.torch)
		}
		if all {
			return c.arch, c.names
		}
	}
	return "", ""
}

// convertStateDict turns sd into the lab variables of arch with numClasses outputs, every
// tensor a permutation of the file's values (nothing folded: the source's normalisation src is
// the run's, applied at the model's input). names "" detects the naming.
func convertStateDict(sd *StateDict, arch string, names Names, numClasses int, src Normalization) (*converted, error) {
	if names == "" {
		names = detectNames(arch, sd.Keys)
	}
	if err := refuseShapes(sd); err != nil {
		return nil, err
	}
	ps, err := keyMap(arch, names, numClasses)
	if err != nil {
		return nil, err
	}
	if err := checkKeys(sd, ps, names, numClasses); err != nil {
		return nil, err
	}
	c := &converted{names: names}
	for ch := range 3 {
		if !(src.Std[ch] > 0) {
			return nil, &RefusalError{File: sd.File, Kind: ErrNormalization, Detail: fmt.Sprintf("std %v must be positive", src.Std)}
		}
	}
	for i, p := range ps {
		t := sd.Tensors[p.torch]
		v := Variable{Path: p.lab, Shape: p.labShape()}
		if p.kind == kindBatches {
			n, err := batchesTracked(sd.File, p.torch, t)
			if err != nil {
				return nil, err
			}
			c.batches, c.batchNorms = max(c.batches, n), c.batchNorms+1
			v.Shape = []int{channelsOf(ps, i)}
			v.Values = make([]float32, v.Shape[0])
			for j := range v.Values {
				v.Values[j] = float32(n)
			}
			c.variables = append(c.variables, v)
			continue
		}
		w, err := floatValues(sd.File, p.torch, t)
		if err != nil {
			return nil, err
		}
		switch p.kind {
		case kindConv:
			v.Values = convToLab(w, p.shape)
		case kindLinear, kindFlattenLinear:
			v.Values = linearToLab(w, p.shape, p.kind == kindFlattenLinear)
		default:
			v.Values = w
		}
		c.variables = append(c.variables, v)
	}
	return c, nil
}

// floatValues reads a parameter: float32, and float16/bfloat16 (which widen exactly) only.
func floatValues(file, key string, t *torchfile.Tensor) ([]float32, error) {
	switch t.DType {
	case torchfile.Float32, torchfile.Float16, torchfile.BFloat16:
		return t.Float32()
	}
	return nil, &RefusalError{File: file, Kind: ErrDType, Detail: fmt.Sprintf("%s is %s, which is not handled (float32, float16 and "+
		"bfloat16 convert exactly): save it with model.float().state_dict()", key, t.DType)}
}

// batchesTracked reads a num_batches_tracked: an integer scalar.
func batchesTracked(file, key string, t *torchfile.Tensor) (int64, error) {
	if t.DType.IsFloat() || t.DType == torchfile.Bool {
		return 0, &RefusalError{File: file, Kind: ErrDType, Detail: fmt.Sprintf("%s is %s: PyTorch writes an int64 count", key, t.DType)}
	}
	v, err := t.Int64()
	if err != nil || len(v) != 1 || v[0] < 0 || v[0] > math.MaxInt32 {
		return 0, &RefusalError{File: file, Kind: ErrDType, Detail: fmt.Sprintf("%s is not a non-negative count: %v", key, v)}
	}
	return v[0], nil
}
