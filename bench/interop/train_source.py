"""Trains kuangliu/pytorch-cifar's ResNet18 briefly on CIFAR-10 (CPU) and saves it the way
pytorch-cifar's main.py does: torch.save({'net': net.state_dict(), 'acc': acc, 'epoch': epoch}, FILE).

  python bench/interop/train_source.py --data DIR --out FILE [--minutes 3] [--threads 2]

The training is short on purpose (the machine is shared): enough for an accuracy well above
chance, so that the import's accuracy comparison means something. Augmentation as main.py:
random crop with 4 pixels of padding and horizontal flips; SGD, momentum 0.9, weight decay 5e-4.
"""
import argparse, json, time

import torch
import torch.nn.functional as F

import cifar
from models import KUANGLIU_MEAN, KUANGLIU_STD, ResNet18, normalize


def augment(x, g):
    """Random crop (padding 4) and horizontal flip of a uint8 batch [N, 3, 32, 32]."""
    n = x.shape[0]
    padded = F.pad(x, (4, 4, 4, 4))
    dy = torch.randint(0, 9, (n,), generator=g)
    dx = torch.randint(0, 9, (n,), generator=g)
    out = torch.stack([padded[i, :, dy[i]:dy[i] + 32, dx[i]:dx[i] + 32] for i in range(n)])
    flip = torch.rand(n, generator=g) < 0.5
    out[flip] = out[flip].flip(3)
    return out


def evaluate(net, images, labels, mean=KUANGLIU_MEAN, std=KUANGLIU_STD, batch=500):
    """Test accuracy in percent, inputs normalised with mean and std."""
    net.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(images), batch):
            logits = net(normalize(images[i:i + batch], mean, std))
            correct += (logits.argmax(1) == labels[i:i + batch]).sum().item()
    return 100.0 * correct / len(images)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--minutes", type=float, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    train_x, train_y = cifar.load(a.data, "train")
    test_x, test_y = cifar.load(a.data, "test")
    net = ResNet18()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    start, steps, seen = time.time(), 0, 0
    net.train()
    while time.time() - start < a.minutes * 60:
        idx = torch.randint(0, len(train_x), (a.batch,), generator=g)
        x = normalize(augment(train_x[idx], g), KUANGLIU_MEAN, KUANGLIU_STD)
        loss = F.cross_entropy(net(x), train_y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps, seen = steps + 1, seen + a.batch
        if steps % 20 == 0:
            print(f"step {steps} loss {loss.item():.3f} ({time.time() - start:.0f}s)", flush=True)
    train_s = time.time() - start
    acc = evaluate(net, test_x, test_y)
    torch.save({"net": net.state_dict(), "acc": acc, "epoch": 0}, a.out)
    info = {"steps": steps, "images": seen, "train_seconds": round(train_s), "threads": a.threads, "batch": a.batch,
            "torch_test_accuracy": acc, "torch": torch.__version__}
    with open(a.out + ".json", "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
