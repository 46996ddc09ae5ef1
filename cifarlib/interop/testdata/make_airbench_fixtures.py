"""Writes the test fixtures of cifarlib's airbench94 with airbench's own code and real PyTorch.

airbench is Keller Jordan's (KellerJordan/cifar10-airbench; PyPI's airbench 0.1.8, the version
cifarlib follows). Environment: bench/requirements-torch.txt plus torchvision and numpy (airbench's
utils.py imports torchvision), and `pip install --no-deps airbench==0.1.8`.

  CIFARLIB_TESTDATA/whitening_images.bin   16 smooth synthetic images, uint8 channel-planar
                                           (CIFAR's record layout), seeded
  CIFARLIB_TESTDATA/whitening_filters.json airbench's init_whitening_conv on them, normalised
                                           the lab's way, in float64 (airbench's get_patches and
                                           get_whitening_parameters on float64 patches): the
                                           eigenvalues (descending) and the 24 filters
                                           [24, 3, 2, 2]
  INTEROP_TESTDATA/keys_airbench94.json    [name, dtype, shape] of make_net94's state_dict
                                           (10 classes)
  INTEROP_TESTDATA/airbench94_logits.json  make_net94 (airbench's Conv, ConvGroup, BatchNorm, ...,
                                           on the CPU in float32) with every tensor of its
                                           state_dict set by formula_state_dict (the Go test
                                           builds the same values), on INTEROP_TESTDATA/images.bin
                                           normalised the lab's way: the logits in eval mode, and
                                           after one forward pass in train mode the logits and
                                           the running statistics of two batch norms

make_net94 itself ends in .half().cuda(); the network is built here as it builds it, minus that.

Usage: python cifarlib/interop/testdata/make_airbench_fixtures.py CIFARLIB_TESTDATA INTEROP_TESTDATA
"""
import json, math, os, sys

import torch
from torch import nn

from airbench import utils
from airbench.lib_airbench94 import BatchNorm, Conv, ConvGroup, Flatten, Mul, hyp

LAB_MEAN, LAB_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)  # cifarlib's CIFAR-10 statistics


def normalize(pixels):
    """[N, 3, 32, 32] uint8 to float32 as cifarlib's data pipeline computes it: in float64, the
    statistics being float32 values, rounded once to float32."""
    mean = torch.tensor(LAB_MEAN, dtype=torch.float32).double().view(1, 3, 1, 1)
    std = torch.tensor(LAB_STD, dtype=torch.float32).double().view(1, 3, 1, 1)
    return ((pixels.double() / 255 - mean) / std).float()


def net94(num_classes=10):
    """make_net94 (lib_airbench94.py) in float32 on the CPU."""
    widths, momentum = hyp['net']['widths'], hyp['net']['batchnorm_momentum']
    net = nn.Sequential(
        Conv(3, 24, 2, padding=0, bias=True),
        nn.GELU(),
        ConvGroup(24, widths['block1'], momentum),
        ConvGroup(widths['block1'], widths['block2'], momentum),
        ConvGroup(widths['block2'], widths['block3'], momentum),
        nn.MaxPool2d(3),
        Flatten(),
        nn.Linear(widths['block3'], num_classes, bias=False),
        Mul(hyp['net']['scaling_factor']),
    )
    net[0].weight.requires_grad = False
    return net


def formula(t, i):
    """Value i of tensor t (its index in the state_dict), in [-1, 1], exact in float64."""
    return ((i * 7919 + t * 104729) % 2001 - 1000) / 1000.0


def formula_state_dict(net):
    """Sets every tensor of net's state_dict from formula (cifarlib's airbenchFormulaValue)."""
    sd = net.state_dict()
    for t, (name, v) in enumerate(sd.items()):
        if name.endswith('num_batches_tracked'):
            v.fill_(7)
            continue
        f = torch.tensor([formula(t, i) for i in range(v.numel())], dtype=torch.float64)
        if name.endswith('running_var'):
            x = 1 + 0.5 * f
        elif name.endswith('running_mean') or name.endswith('bias'):
            x = 0.2 * f
        elif v.dim() == 1:  # a batch-norm weight
            x = 1 + 0.2 * f
        else:  # a convolution or the head: U(-1, 1) scaled to variance 1/fan_in
            x = math.sqrt(3 / (v.numel() // v.shape[0])) * f
        v.copy_(x.view(v.shape).float())


def smooth_images(n, seed):
    """n images of low-frequency colour fields plus noise: neighbouring pixels correlate, so the
    patch covariance has well separated eigenvalues."""
    g = torch.Generator().manual_seed(seed)
    low = torch.rand(n, 3, 5, 5, generator=g) * 255
    img = nn.functional.interpolate(low, size=(32, 32), mode='bilinear', align_corners=True)
    img = img + 12 * torch.randn(n, 3, 32, 32, generator=g)
    return img.round().clamp(0, 255).to(torch.uint8)


def whitening(out):
    pixels = smooth_images(16, 37)
    with open(os.path.join(out, 'whitening_images.bin'), 'wb') as f:
        f.write(bytes(pixels.reshape(-1).tolist()))
    x = normalize(pixels)
    patches = utils.get_patches(x, patch_shape=(2, 2)).double()  # exact: x is float32
    eigenvalues, eigenvectors = utils.get_whitening_parameters(patches)
    scaled = eigenvectors / torch.sqrt(eigenvalues + 5e-4)
    filters = torch.cat((scaled, -scaled))
    with open(os.path.join(out, 'whitening_filters.json'), 'w') as f:
        json.dump({'eigenvalues': eigenvalues.view(-1).tolist(), 'filters': filters.tolist()}, f)


def network(out):
    torch.manual_seed(0)
    net = net94()
    with open(os.path.join(out, 'keys_airbench94.json'), 'w') as f:
        json.dump([[k, str(v.dtype).removeprefix('torch.'), list(v.shape)] for k, v in net.state_dict().items()], f)
    formula_state_dict(net)
    with open(os.path.join(out, 'images.bin'), 'rb') as f:
        pixels = torch.tensor(list(f.read()), dtype=torch.uint8).view(-1, 3, 32, 32)
    x = normalize(pixels)
    with torch.no_grad():
        eval_logits = net.eval()(x)
        train_logits = net.train()(x)
    sd = net.state_dict()
    running = {k: sd[k].tolist() for k in ('2.norm1.running_mean', '2.norm1.running_var', '4.norm2.running_mean',
                                           '4.norm2.running_var', '4.norm2.num_batches_tracked')}
    with open(os.path.join(out, 'airbench94_logits.json'), 'w') as f:
        json.dump({'normalize': {'mean': LAB_MEAN, 'std': LAB_STD}, 'eval': eval_logits.tolist(),
                   'train': train_logits.tolist(), 'running': running}, f)


if __name__ == '__main__':
    whitening(sys.argv[1])
    network(sys.argv[2])
