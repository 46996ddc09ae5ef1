package interop

import (
	"fmt"
	"slices"

	"github.com/cifarlab/cifarlab/cifarlib"
)

// Names is a PyTorch naming of a model's state_dict keys.
type Names string

// The namings import and export know.
const (
	// NamesPytorchCIFAR is kuangliu/pytorch-cifar's ResNet18(): conv1, bn1,
	// layerN.M.{conv1,bn1,conv2,bn2}, layerN.0.shortcut.{0,1}, linear.
	NamesPytorchCIFAR Names = "pytorch-cifar"
	// NamesTorchvision is torchvision's resnet18 with the CIFAR stem (3x3 stride-1 conv1, no
	// max-pool): the shortcut is layerN.0.downsample.{0,1} and the head fc.
	NamesTorchvision Names = "torchvision"
	// NamesCNNTwin is the lab's cnn's PyTorch twin (bench/interop/models.py LabCNN): conv1,
	// conv2, conv3 (with bias) and head.
	NamesCNNTwin Names = "cnn-twin"
	// NamesAirbench94 is airbench's make_net94 (Keller Jordan, KellerJordan/cifar10-airbench,
	// airbench 0.1.8's lib_airbench94.py), an nn.Sequential: 0 (the whitening Conv2d, with
	// bias), 2, 3 and 4 (the ConvGroups: conv1, norm1, conv2, norm2) and 7 (the Linear head,
	// no bias); 1, 5, 6 and 8 (GELU, MaxPool2d, Flatten, Mul) have no parameters.
	NamesAirbench94 Names = "airbench94"
)

// kind says how a tensor changes between PyTorch's layout and the lab's.
type kind int

const (
	// kindConv: PyTorch [out, in, kh, kw] <-> the lab's [kh, kw, in, out].
	kindConv kind = iota
	// kindLinear: PyTorch [out, in] <-> the lab's [in, out].
	kindLinear
	// kindFlattenLinear: kindLinear whose inputs are flattened C x H x W in PyTorch and
	// H x W x C in the lab (the cnn's head: 64 channels of 4 x 4).
	kindFlattenLinear
	// kindVector: the same [n] on both sides (biases, batch-norm scale, offset, statistics).
	kindVector
	// kindBatches: PyTorch's int64 scalar num_batches_tracked <-> GoMLX's float32 [n] avg_weight.
	kindBatches
)

// param is one tensor of the state_dict and the lab's variable it maps to.
type param struct {
	torch string
	lab   string
	kind  kind
	shape []int // PyTorch's shape
}

// labShape is the lab variable's shape.
func (p param) labShape() []int {
	s := p.shape
	switch p.kind {
	case kindConv:
		return []int{s[2], s[3], s[1], s[0]}
	case kindLinear, kindFlattenLinear:
		return []int{s[1], s[0]}
	case kindBatches:
		return nil // set by the caller from the layer's channels
	}
	return s
}

// keyMap lists, in PyTorch's state_dict order, the tensors of arch ("resnet18", "cnn" or
// "airbench94") in a
// naming with a head of numClasses outputs.
func keyMap(arch string, names Names, numClasses int) ([]param, error) {
	switch {
	case arch == "cnn" && names == NamesCNNTwin:
		return cnnKeys(numClasses), nil
	case arch == "resnet18" && (names == NamesPytorchCIFAR || names == NamesTorchvision):
		return resnet18Keys(names, numClasses), nil
	case arch == cifarlib.ArchAirbench94 && names == NamesAirbench94:
		return airbench94Keys(numClasses), nil
	}
	return nil, fmt.Errorf("interop: architecture %q has no PyTorch naming %q: use resnet18 with the names %s or %s, cnn with %s, "+
		"or airbench94 with %s (--arch, --names; ImportOptions.Arch, Names)", arch, names, NamesPytorchCIFAR, NamesTorchvision,
		NamesCNNTwin, NamesAirbench94)
}

// DefaultNames is the naming export uses for an architecture when none is given.
func DefaultNames(arch string) Names {
	switch arch {
	case "cnn":
		return NamesCNNTwin
	case cifarlib.ArchAirbench94:
		return NamesAirbench94
	}
	return NamesPytorchCIFAR
}

// cnnKeys is LabCNN's state_dict.
func cnnKeys(numClasses int) []param {
	var ps []param
	in := 3
	for i, out := range []int{16, 32, 64} {
		name := fmt.Sprintf("conv%d", i+1)
		ps = append(ps,
			param{name + ".weight", "/cnn/" + name + "/conv/weights", kindConv, []int{out, in, 3, 3}},
			param{name + ".bias", "/cnn/" + name + "/conv/biases", kindVector, []int{out}})
		in = out
	}
	return append(ps,
		param{"head.weight", "/cnn/head/dense/weights", kindFlattenLinear, []int{numClasses, 4 * 4 * 64}},
		param{"head.bias", "/cnn/head/dense/biases", kindVector, []int{numClasses}})
}

// batchNorm lists a BatchNorm2d's five tensors.
func batchNorm(torch, lab string, n int) []param {
	lab += "/batch_normalization/"
	return []param{
		{torch + ".weight", lab + "scale", kindVector, []int{n}},
		{torch + ".bias", lab + "offset", kindVector, []int{n}},
		{torch + ".running_mean", lab + "mean", kindVector, []int{n}},
		{torch + ".running_var", lab + "variance", kindVector, []int{n}},
		{torch + ".num_batches_tracked", lab + "avg_weight", kindBatches, []int{}},
	}
}

// resnet18Keys is the CIFAR ResNet-18's state_dict in either naming.
func resnet18Keys(names Names, numClasses int) []param {
	shortcut, head := "shortcut", "linear"
	if names == NamesTorchvision {
		shortcut, head = "downsample", "fc"
	}
	ps := []param{{"conv1.weight", "/resnet18/stem/conv/conv/weights", kindConv, []int{64, 3, 3, 3}}}
	ps = append(ps, batchNorm("bn1", "/resnet18/stem/bn", 64)...)
	in := 64
	for stage, out := range []int{64, 128, 256, 512} {
		for block := range 2 {
			t := fmt.Sprintf("layer%d.%d.", stage+1, block)
			l := fmt.Sprintf("/resnet18/stage%d/block%d/", stage+1, block+1)
			ps = append(ps, param{t + "conv1.weight", l + "conv1/conv/weights", kindConv, []int{out, in, 3, 3}})
			ps = append(ps, batchNorm(t+"bn1", l+"bn1", out)...)
			ps = append(ps, param{t + "conv2.weight", l + "conv2/conv/weights", kindConv, []int{out, out, 3, 3}})
			ps = append(ps, batchNorm(t+"bn2", l+"bn2", out)...)
			if block == 0 && in != out {
				ps = append(ps, param{t + shortcut + ".0.weight", l + "shortcut_conv/conv/weights", kindConv, []int{out, in, 1, 1}})
				ps = append(ps, batchNorm(t+shortcut+".1", l+"shortcut_bn", out)...)
			}
			in = out
		}
	}
	return append(ps,
		param{head + ".weight", "/resnet18/head/dense/weights", kindLinear, []int{numClasses, 512}},
		param{head + ".bias", "/resnet18/head/dense/biases", kindVector, []int{numClasses}})
}

// airbench94Keys is make_net94's state_dict (see NamesAirbench94), with a head of numClasses
// outputs (make_net94's is 10). Its batch norms' weights are the lab's fixed scales.
func airbench94Keys(numClasses int) []param {
	const l = "/" + cifarlib.ArchAirbench94 + "/"
	ps := []param{
		{"0.weight", cifarlib.AirbenchWhiteningVariable, kindConv, []int{cifarlib.AirbenchWhitenWidth, 3, 2, 2}},
		{"0.bias", l + cifarlib.AirbenchScopeWhiten + "/conv/biases", kindVector, []int{cifarlib.AirbenchWhitenWidth}},
	}
	in := cifarlib.AirbenchWhitenWidth
	for i, out := range cifarlib.AirbenchWidths {
		t := fmt.Sprintf("%d.", i+2)
		b := l + cifarlib.AirbenchBlocks[i] + "/"
		ps = append(ps, param{t + "conv1.weight", b + cifarlib.AirbenchScopeConv1 + "/conv/weights", kindConv, []int{out, in, 3, 3}})
		ps = append(ps, batchNorm(t+"norm1", b+cifarlib.AirbenchScopeNorm1, out)...)
		ps = append(ps, param{t + "conv2.weight", b + cifarlib.AirbenchScopeConv2 + "/conv/weights", kindConv, []int{out, out, 3, 3}})
		ps = append(ps, batchNorm(t+"norm2", b+cifarlib.AirbenchScopeNorm2, out)...)
		in = out
	}
	return append(ps, param{"7.weight", l + cifarlib.AirbenchScopeHead + "/dense/weights", kindLinear, []int{numClasses, in}})
}

// channelsOf is the channel count of the layer a num_batches_tracked belongs to (the size of
// its sibling running_mean).
func channelsOf(ps []param, i int) int {
	for _, p := range ps {
		if p.lab == ps[i].lab[:len(ps[i].lab)-len("avg_weight")]+"mean" {
			return p.shape[0]
		}
	}
	return 0
}

// torchKeys is the list of PyTorch names of ps.
func torchKeys(ps []param) []string {
	keys := make([]string, len(ps))
	for i, p := range ps {
		keys[i] = p.torch
	}
	return keys
}

// hasKey says whether keys holds k.
func hasKey(keys []string, k string) bool { return slices.Contains(keys, k) }
