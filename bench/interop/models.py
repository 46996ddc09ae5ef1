"""PyTorch definitions of the models cifarlab imports and exports (bench/interop).

LabCNN        the twin of cifarlab's "cnn" architecture, key for key;
ResNet18      kuangliu/pytorch-cifar's ResNet18() (models/resnet.py): keys conv1, bn1,
              layerN.M.{conv1,bn1,conv2,bn2}, layerN.0.shortcut.{0,1}, linear;
tv_resnet18   torchvision.models.resnet18 with the CIFAR stem (conv1 3x3 stride 1, maxpool an
              Identity): keys downsample.{0,1}, fc. torchvision itself is not needed.

All three equal cifarlab's models function for function: "same" 3x3 convolutions with padding
1 (GoMLX pads (k-1)/2 before and k/2 after, PyTorch's padding=1 at stride 1 and 2 alike), batch
norm with eps 1e-5 and momentum 0.1 (GoMLX's 0.9 is the same average), global average pooling.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

# The normalisation each model expects (transforms.Normalize(mean, std) after ToTensor()).
LAB_MEAN, LAB_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)  # cifarlab's CIFAR-10 statistics
KUANGLIU_MEAN, KUANGLIU_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)  # pytorch-cifar's main.py


class LabCNN(nn.Module):
    """The PyTorch twin of cifarlab's "cnn": three 3x3 convolutions (16, 32, 64 channels, with
    bias, "same" padding), each followed by ReLU and a 2x2 max-pool, then flatten and a Linear
    head of 4*4*64 = 1024 inputs.

    Flatten order: PyTorch flattens the [N, 64, 4, 4] activations channel-major (C x H x W),
    cifarlab its [N, 4, 4, 64] ones height-major (H x W x C). The weights are the same function;
    `cifarlab import`/`export` permute the 1024 inputs of head.weight between the two orders (and
    transpose it: cifarlab stores [in, out], PyTorch [out, in]). Convolution weights go between
    PyTorch's [out, in, kh, kw] and cifarlab's [kh, kw, in, out].

    Input: images normalised with transforms.Normalize(LAB_MEAN, LAB_STD).
    """

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.head = nn.Linear(4 * 4 * 64, num_classes)

    def forward(self, x):
        for conv in (self.conv1, self.conv2, self.conv3):
            x = F.max_pool2d(F.relu(conv(x)), 2)
        return self.head(torch.flatten(x, 1))


class BasicBlock(nn.Module):
    """kuangliu's BasicBlock: conv3x3-BN-ReLU-conv3x3-BN plus the shortcut (a 1x1 conv + BN
    when the shape changes), then ReLU."""

    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """kuangliu/pytorch-cifar's ResNet18(): 3x3 stride-1 stem, no max-pool, four stages of two
    BasicBlocks (64, 128, 256, 512), 4x4 average pooling (global on 32x32 inputs), `linear`.
    Input: transforms.Normalize(KUANGLIU_MEAN, KUANGLIU_STD)."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.in_planes = 64
        self.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.layer1 = self._make_layer(64, 1)
        self.layer2 = self._make_layer(128, 2)
        self.layer3 = self._make_layer(256, 2)
        self.layer4 = self._make_layer(512, 2)
        self.linear = nn.Linear(512, num_classes)

    def _make_layer(self, planes, stride):
        layers = []
        for s in (stride, 1):
            layers.append(BasicBlock(self.in_planes, planes, s))
            self.in_planes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = F.avg_pool2d(out, 4).flatten(1)
        return self.linear(out)


class TVBasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock: the shortcut projection is `downsample`."""

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class TVResNet18(nn.Module):
    """torchvision.models.resnet18(num_classes=...) after the usual CIFAR surgery:
    model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False); model.maxpool = nn.Identity()."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.Identity()
        self.inplanes = 64
        self.layer1 = self._make_layer(64, 1)
        self.layer2 = self._make_layer(128, 2)
        self.layer3 = self._make_layer(256, 2)
        self.layer4 = self._make_layer(512, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def _make_layer(self, planes, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes))
        layers = [TVBasicBlock(self.inplanes, planes, stride, downsample), TVBasicBlock(planes, planes)]
        self.inplanes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def tv_resnet18(num_classes=10):
    """torchvision-style CIFAR ResNet-18 (see TVResNet18)."""
    return TVResNet18(num_classes)


def normalize(pixels, mean, std):
    """The lab's normalisation of uint8 CHW images [N, 3, 32, 32]: (v/255 - mean)/std computed in
    float64 from the float32 statistics and rounded to float32 (cifarlib.NewNormalizer), so both
    sides see the same inputs bit for bit."""
    x = pixels.to(torch.float64) / 255
    m = torch.tensor(mean, dtype=torch.float32).to(torch.float64).view(1, 3, 1, 1)
    s = torch.tensor(std, dtype=torch.float32).to(torch.float64).view(1, 3, 1, 1)
    return ((x - m) / s).to(torch.float32)
