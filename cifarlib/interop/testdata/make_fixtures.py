"""Writes the interop package's test fixtures with real PyTorch (bench/requirements-torch.txt):

  cnn_twin.pt          LabCNN's state_dict (torch.save, zip format), seeded initialisation
  images.bin           8 fixed synthetic images, uint8 channel-planar (CIFAR's record layout)
  cnn_twin_logits.json LabCNN's logits on them, normalised the lab's way (models.normalize)
  keys_*.json          [name, dtype, shape] of the state_dicts of kuangliu's ResNet18,
                       torchvision's resnet18 (CIFAR stem), a 7x7-stem torchvision resnet18 and
                       kuangliu's PreActResNet18: the names and shapes the key maps must accept
                       or refuse (the 45 MB weights themselves are not committed)

Usage: python cifarlib/interop/testdata/make_fixtures.py OUT_DIR   (OUT_DIR: the interop package's testdata)
"""
import json, os, sys

import torch
import torch.nn as nn

# The PyTorch definitions of the lab's models live with the interop benchmark (bench/interop).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "interop"))
from models import LAB_MEAN, LAB_STD, LabCNN, ResNet18, normalize, tv_resnet18


class PreActBlock(nn.Module):
    """kuangliu's PreActBlock (models/preact_resnet.py): BN-ReLU-conv twice, shortcut conv only."""

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False))


class PreActResNet18(nn.Module):
    """kuangliu's PreActResNet18's parameters (the forward pass is not needed here)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        planes_in, layers = 64, []
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(PreActBlock(planes_in, planes, stride), PreActBlock(planes, planes)))
            planes_in = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.bn = nn.BatchNorm2d(512)
        self.linear = nn.Linear(512, 10)


def keys(model):
    return [[k, str(v.dtype).removeprefix("torch."), list(v.shape)] for k, v in model.state_dict().items()]


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(28)
    cnn = LabCNN().eval()
    torch.save(cnn.state_dict(), os.path.join(out, "cnn_twin.pt"))
    g = torch.Generator().manual_seed(7)
    pixels = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=g)
    with open(os.path.join(out, "images.bin"), "wb") as f:
        f.write(bytes(pixels.reshape(-1).tolist()))
    with torch.no_grad():
        logits = cnn(normalize(pixels, LAB_MEAN, LAB_STD))
    with open(os.path.join(out, "cnn_twin_logits.json"), "w") as f:
        json.dump({"normalize": {"mean": LAB_MEAN, "std": LAB_STD}, "logits": logits.tolist()}, f)
    stem7 = tv_resnet18()
    stem7.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
    for name, model in (("kuangliu", ResNet18()), ("torchvision", tv_resnet18()), ("torchvision_7x7", stem7),
                        ("preact", PreActResNet18())):
        with open(os.path.join(out, f"keys_{name}.json"), "w") as f:
            json.dump(keys(model), f)


if __name__ == "__main__":
    main(sys.argv[1])
