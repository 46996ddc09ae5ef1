"""Trains the lab's cnn twin (models.LabCNN) in PyTorch and saves its state_dict: the "PyTorch
CIFAR-10 model" notebook 07 imports (notebooks/pytorch/cnn_twin_cifar10.pt, 139 KB).

  cifarlab synth --dataset cifar10 --seed 0 --out DIR     # the notebooks' synthetic data (nb.Open's default)
  python notebooks/pytorch/train_twin.py --data DIR --out notebooks/pytorch/cnn_twin_cifar10.pt

It trains on the data's training split with the lab's normalisation (the twin's), Adam 1e-3,
batch 64, for --steps steps, and saves {'net': state_dict, 'acc': test accuracy, 'epoch': epochs}
as kuangliu's main.py does, so that the import shows the wrapper and the recorded accuracy.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

# The PyTorch definitions of the lab's models and the CIFAR reader live with the interop
# benchmark (bench/interop).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "interop"))
import cifar
from models import LAB_MEAN, LAB_STD, LabCNN, normalize
from train_source import evaluate


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    train_x, train_y = cifar.load(a.data, "train")
    test_x, test_y = cifar.load(a.data, "test")
    net = LabCNN()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for step in range(a.steps):
        idx = torch.randint(0, len(train_x), (64,), generator=g)
        loss = F.cross_entropy(net(normalize(train_x[idx], LAB_MEAN, LAB_STD)), train_y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    acc = evaluate(net, test_x, test_y, LAB_MEAN, LAB_STD)
    epochs = a.steps * 64 // len(train_x)
    torch.save({"net": net.state_dict(), "acc": acc, "epoch": epochs}, a.out)
    print(f"loss {loss.item():.3f}, test accuracy {acc:.2f}% on {len(test_x)} images, saved {a.out}")


if __name__ == "__main__":
    main()
