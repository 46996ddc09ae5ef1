package interop

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kuangliuResNet lists the state_dict keys of kuangliu/pytorch-cifar's ResNet with blocks per
// stage (models/resnet.py: BasicBlock, or Bottleneck with expansion 4), as PyTorch orders them.
func kuangliuResNet(blocks []int, bottleneck bool) []torchKey {
	f32 := func(name string, shape ...int) torchKey { return torchKey{Name: name, DType: "float32", Shape: shape} }
	bn := func(name string, n int) []torchKey {
		return []torchKey{f32(name+".weight", n), f32(name+".bias", n), f32(name+".running_mean", n), f32(name+".running_var", n),
			{Name: name + ".num_batches_tracked", DType: "int64", Shape: []int{}}}
	}
	keys := append([]torchKey{f32("conv1.weight", 64, 3, 3, 3)}, bn("bn1", 64)...)
	expansion := 1
	if bottleneck {
		expansion = 4
	}
	in := 64
	for s, planes := range []int{64, 128, 256, 512} {
		for b := range blocks[s] {
			p := fmt.Sprintf("layer%d.%d.", s+1, b)
			out := planes * expansion
			if bottleneck {
				keys = append(keys, f32(p+"conv1.weight", planes, in, 1, 1))
				keys = append(keys, bn(p+"bn1", planes)...)
				keys = append(keys, f32(p+"conv2.weight", planes, planes, 3, 3))
				keys = append(keys, bn(p+"bn2", planes)...)
				keys = append(keys, f32(p+"conv3.weight", out, planes, 1, 1))
				keys = append(keys, bn(p+"bn3", out)...)
			} else {
				keys = append(keys, f32(p+"conv1.weight", planes, in, 3, 3))
				keys = append(keys, bn(p+"bn1", planes)...)
				keys = append(keys, f32(p+"conv2.weight", planes, planes, 3, 3))
				keys = append(keys, bn(p+"bn2", planes)...)
			}
			if b == 0 && (s > 0 || in != out) {
				keys = append(keys, f32(p+"shortcut.0.weight", out, in, 1, 1))
				keys = append(keys, bn(p+"shortcut.1", out)...)
			}
			in = out
		}
	}
	return append(keys, f32("linear.weight", 10, 512*expansion), f32("linear.bias", 10))
}

// Other depths of kuangliu's ResNet are named in one line with what the lab imports, and the
// PyTorch-like key lists stay short: the first few keys and a count.
func TestImportNamesOtherDepths(t *testing.T) {
	require.Equal(t, readKeys(t, "kuangliu"), kuangliuResNet([]int{2, 2, 2, 2}, false), "the generator gives kuangliu's ResNet18 keys")
	for _, tc := range []struct {
		name       string
		blocks     []int
		bottleneck bool
		want       string
	}{
		{"resnet34", []int{3, 4, 6, 3}, false, "This is a ResNet-34 (3/4/6/3 BasicBlocks per stage), not a ResNet-18 (BasicBlocks 2/2/2/2)"},
		{"resnet50", []int{3, 4, 6, 3}, true, "This is a ResNet-50 (3/4/6/3 Bottleneck blocks (conv1/conv2/conv3) per stage), not a ResNet-18"},
		{"resnet101", []int{3, 4, 23, 3}, true, "This is a ResNet-101 (3/4/23/3 Bottleneck blocks"},
		{"odd", []int{1, 1, 1, 1}, false, "This is a ResNet with 1/1/1/1 BasicBlocks, not a ResNet-18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			keys := kuangliuResNet(tc.blocks, tc.bottleneck)
			file, _ := writeKeys(t, dir, tc.name, keys)
			_, err := Import(file, filepath.Join(dir, "run"), ImportOptions{})
			var le *LoadStateDictError
			require.ErrorAs(t, err, &le)
			msg := err.Error()
			require.Contains(t, msg, tc.want)
			require.Contains(t, msg, "the lab imports the CIFAR ResNet-18 (--arch resnet18")
			lines := strings.Split(msg, "\n")
			require.Equal(t, 1, strings.Count(msg, "This is "), "said in one line")
			for _, line := range lines {
				require.LessOrEqual(t, len(line), 600, "a bounded line: %q", line)
				require.LessOrEqual(t, strings.Count(line, `"layer`), maxListedKeys, line)
			}
			if len(le.Unexpected) > maxListedKeys {
				require.Contains(t, msg, fmt.Sprintf("(%d more, %d in all)", len(le.Unexpected)-maxListedKeys, len(le.Unexpected)))
			}
		})
	}
}

// quoteKeys lists every key up to the bound, then the first ones and a count.
func TestQuoteKeys(t *testing.T) {
	require.Equal(t, `"a", "b"`, quoteKeys([]string{"a", "b"}))
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	require.Equal(t, `"k0", "k1", "k2", "k3", "k4", "k5", ... (2 more, 8 in all)`, quoteKeys(keys))
	require.Equal(t, `"k0", "k1", "k2", "k3", "k4", "k5"`, quoteKeys(keys[:6]))
}
