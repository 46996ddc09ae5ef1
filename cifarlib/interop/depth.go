package interop

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// blockKey matches a residual block's convolution: layerN.M.convK.weight.
var blockKey = regexp.MustCompile(`^layer([1-9])\.(\d+)\.conv([1-3])\.weight$`)

// knownDepths names the ResNets of the torchvision/kuangliu family by their blocks per stage.
var knownDepths = []struct {
	name       string
	bottleneck bool
	blocks     []int
}{
	{"ResNet-18", false, []int{2, 2, 2, 2}},
	{"ResNet-34", false, []int{3, 4, 6, 3}},
	{"ResNet-50", true, []int{3, 4, 6, 3}},
	{"ResNet-101", true, []int{3, 4, 23, 3}},
	{"ResNet-152", true, []int{3, 8, 36, 3}},
}

// resnetDepth reads a ResNet's depth from its state_dict keys: its blocks per stage, and
// whether they are bottlenecks (a conv3 in each block). name is the known model it is
// ("ResNet-34"), or a description; "" when the keys are no such ResNet.
func resnetDepth(keys []string) (name string, blocks []int, bottleneck bool) {
	for _, k := range keys {
		m := blockKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		stage, _ := strconv.Atoi(m[1])
		block, _ := strconv.Atoi(m[2])
		if block > 1000 {
			continue
		}
		for len(blocks) < stage {
			blocks = append(blocks, 0)
		}
		blocks[stage-1] = max(blocks[stage-1], block+1)
		bottleneck = bottleneck || m[3] == "3"
	}
	if len(blocks) == 0 {
		return "", nil, false
	}
	for _, d := range knownDepths {
		if d.bottleneck == bottleneck && slices.Equal(d.blocks, blocks) {
			return d.name, blocks, bottleneck
		}
	}
	kind := "BasicBlocks"
	if bottleneck {
		kind = "Bottleneck blocks"
	}
	return fmt.Sprintf("a ResNet with %s %s", joinInts(blocks), kind), blocks, bottleneck
}

// depthHint is the one line that names a ResNet of another depth than the lab's ResNet-18,
// or "" when the keys are a ResNet-18's (or no ResNet's).
func depthHint(keys []string) string {
	name, blocks, bottleneck := resnetDepth(keys)
	if name == "" || name == "ResNet-18" {
		return ""
	}
	kind := "BasicBlocks"
	if bottleneck {
		kind = "Bottleneck blocks (conv1/conv2/conv3)"
	}
	what := fmt.Sprintf("a %s (%s %s per stage)", name, joinInts(blocks), kind)
	if !strings.HasPrefix(name, "ResNet-") {
		what = name
	}
	return fmt.Sprintf("This is %s, not a ResNet-18 (BasicBlocks 2/2/2/2): the lab imports the CIFAR "+
		"ResNet-18 (--arch resnet18: kuangliu's ResNet18, or torchvision's resnet18 with a 3x3 stem) and the cnn twin (--arch cnn); "+
		"train a ResNet-18 in PyTorch, or train in the lab (the model resnet18 or resnet20).", what)
}

// joinInts formats blocks per stage as "3/4/6/3".
func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, "/")
}

// maxListedKeys bounds the keys LoadStateDictError lists per kind (PyTorch lists them all: a
// ResNet-50's Unexpected line alone runs to kilobytes).
const maxListedKeys = 6

// quoteKeys lists keys as PyTorch does ("a", "b"), the first maxListedKeys of them and the count
// of the rest.
func quoteKeys(keys []string) string {
	shown := keys[:min(len(keys), maxListedKeys)]
	q := make([]string, len(shown))
	for i, k := range shown {
		q[i] = strconv.Quote(k)
	}
	s := strings.Join(q, ", ")
	if rest := len(keys) - len(shown); rest > 0 {
		s += fmt.Sprintf(", ... (%d more, %d in all)", rest, len(keys))
	}
	return s
}
