#!/usr/bin/env python3
"""PyTorch half of cifarlab's benchmark: the same models as cifarlib, timed the same way.

Mirrors bench/trainstep (Go): for each architecture and batch size it times one training step
(forward, cross-entropy, backward, plain SGD update with lr 0.01) and one inference forward pass
(eval mode, torch.inference_mode), skips the first --warmup steps, and reports the median of
--steps timed steps (stopping after --budget seconds once 3 are timed). One JSON line per
measurement goes to --json, in bench/trainstep's schema, plus a table on stdout.

The architectures copy cifarlib's (cifarlib/arch_cnn.go, cifarlib/arch_resnet.go):
  cnn       3 x [conv3x3 "same" with bias (16, 32, 64 channels), ReLU, max-pool 2x2], flatten
            (4*4*64), Linear(1024, 10).
  resnet20  He et al.'s CIFAR ResNet-20: conv3x3(16, no bias)-BN-ReLU stem, 3 stages x 3
            BasicBlocks at 16/32/64 channels (first block of stages 2-3 at stride 2), option-A
            shortcuts (strided identity, new channels zero-padded half before, half after),
            global average pool, Linear(64, 10).
  resnet18  CIFAR ResNet-18: conv3x3(64, stride 1, no bias)-BN-ReLU stem, no max-pool, 4 stages x
            2 BasicBlocks at 64/128/256/512 channels, 1x1 conv + BN projection shortcuts when the
            shape changes, global average pool, Linear(512, 10).
BasicBlock: conv3x3(stride)-BN-ReLU-conv3x3-BN, plus the shortcut, then ReLU. Batch norm has
momentum 0.1 (GoMLX's 0.9) and eps 1e-5. Images are NCHW float32 (PyTorch's native layout;
cifarlib uses NHWC); labels int64 in [0, 10).

Usage (bench/run.sh calls it):
  python bench/torch_cpu.py --threads 2 --models cnn,resnet20,resnet18 --batches 32,128 --json out.jsonl
  python bench/torch_cpu.py --device cuda --models resnet18 --batches 128,256     # bench/gpu.sh
  python bench/torch_cpu.py --device cuda --models resnet18 --precisions f32,bf16-mixed  # with and without autocast

--precisions bf16-mixed runs the forward pass and the loss under
torch.autocast(device_type, dtype=torch.bfloat16) (Lightning's precision="bf16-mixed"): float32
weights and optimizer, bfloat16 convolutions and matmuls, as cifarlib's --precision bf16-mixed.
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class CNN(nn.Module):
    """cifarlib's "cnn"."""

    def __init__(self, num_classes=10):
        super().__init__()
        layers, c_in = [], 3
        for c in (16, 32, 64):
            layers += [nn.Conv2d(c_in, c, 3, padding=1, bias=True), nn.ReLU(inplace=True), nn.MaxPool2d(2)]
            c_in = c
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(4 * 4 * 64, num_classes)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride, zero_pad_shortcut):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out, momentum=0.1, eps=1e-5)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out, momentum=0.1, eps=1e-5)
        self.stride, self.extra = stride, c_out - c_in
        self.zero_pad = zero_pad_shortcut and (stride != 1 or c_in != c_out)
        self.project = None
        if not zero_pad_shortcut and (stride != 1 or c_in != c_out):
            self.project = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                                         nn.BatchNorm2d(c_out, momentum=0.1, eps=1e-5))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.zero_pad:
            s = x[:, :, ::self.stride, ::self.stride]
            shortcut = F.pad(s, (0, 0, 0, 0, self.extra // 2, self.extra - self.extra // 2))
        elif self.project is not None:
            shortcut = self.project(x)
        else:
            shortcut = x
        return F.relu(y + shortcut)


class ResNet(nn.Module):
    """cifarlib's resnet builder: stem, stages of BasicBlocks, global average pool, head."""

    def __init__(self, stem, stages, blocks, zero_pad_shortcut, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, stem, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(stem, momentum=0.1, eps=1e-5), nn.ReLU(inplace=True))
        layers, c_in = [], stem
        for i, c in enumerate(stages):
            for b in range(blocks):
                layers.append(BasicBlock(c_in, c, 2 if (i > 0 and b == 0) else 1, zero_pad_shortcut))
                c_in = c
        self.blocks = nn.Sequential(*layers)
        self.head = nn.Linear(c_in, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean(dim=(2, 3)))


def build(arch):
    if arch == "cnn":
        return CNN()
    if arch == "resnet20":
        return ResNet(16, (16, 32, 64), 3, zero_pad_shortcut=True)
    if arch == "resnet18":
        return ResNet(64, (64, 128, 256, 512), 2, zero_pad_shortcut=False)
    raise SystemExit(f"torch_cpu.py: unknown model {arch!r}: use cnn, resnet20 or resnet18")


def num_params(m):
    return sum(p.numel() for p in m.parameters())


def batch_data(batch):
    """Deterministic batch like bench/trainstep's: sin-valued images in [-1, 1), labels (7i) mod 10."""
    i = torch.arange(batch * 3 * 32 * 32, dtype=torch.float64)
    images = (torch.sin(i * 0.0137) * 0.99).float().reshape(batch, 32, 32, 3).permute(0, 3, 1, 2).contiguous()
    labels = (torch.arange(batch) * 7) % 10
    return images, labels


def autocast(device, precision):
    """The autocast context of a precision: none for f32, bfloat16 autocast for bf16-mixed."""
    if precision == "bf16-mixed":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    if precision != "f32":
        raise ValueError(f"unknown precision {precision!r}: use f32 or bf16-mixed")
    return contextlib.nullcontext()


def measure(arch, batch, mode, args, device, precision="f32"):
    torch.manual_seed(1)
    model = build(arch).to(device)
    images_cpu, labels_cpu = batch_data(batch)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
        images_cpu = images_cpu.contiguous(memory_format=torch.channels_last)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    if mode == "train":
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)

        def step():
            x, y = images_cpu.to(device, non_blocking=True), labels_cpu.to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            with autocast(device, precision):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.item()  # waits for the step
    else:
        model.eval()

        def step():
            with torch.inference_mode(), autocast(device, precision):
                x = images_cpu.to(device, non_blocking=True)
                return float(model(x)[0, 0].item())

    first = None
    for w in range(args.warmup):
        t0 = time.perf_counter()
        step()
        sync()
        if w == 0:
            first = (time.perf_counter() - t0) * 1000
    times, value, begin = [], 0.0, time.perf_counter()
    while len(times) < args.steps and (len(times) < 3 or time.perf_counter() - begin < args.budget):
        t0 = time.perf_counter()
        value = step()
        sync()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    med = statistics.median(times)
    return {"steps": len(times), "median_ms": med, "min_ms": times[0], "max_ms": times[-1], "first_ms": first,
            "images_per_s": batch / (med / 1000), "loss": value if mode == "train" else None,
            "params": num_params(model)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="cnn,resnet20,resnet18")
    ap.add_argument("--batches", default="32,128")
    ap.add_argument("--modes", default="train,infer")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per measurement once 3 steps are timed")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave PyTorch's default)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--channels-last", action="store_true", help="use torch.channels_last memory format")
    ap.add_argument("--precisions", default="f32", help="f32 and/or bf16-mixed (torch.autocast to bfloat16), comma-separated")
    ap.add_argument("--json", default="", help="append one JSON line per measurement to this file")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    backend = "torch-" + device.type
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # what CIFAR training scripts set
        torch.set_float32_matmul_precision("high")  # TF32 like XLA CUDA's default; cuDNN convs use TF32 by default
        desc = f"PyTorch {torch.__version__} eager, {torch.cuda.get_device_name(0)}, cudnn.benchmark, TF32"
    else:
        desc = (f"PyTorch {torch.__version__} eager CPU, {torch.get_num_threads()} threads, "
                f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'default')}")
    print(f"torch_cpu.py: {desc}; steps={args.steps} warmup={args.warmup} budget={args.budget}s", flush=True)
    print(f"{'backend':<9} {'model':<9} {'batch':>5} {'mode':<5} {'steps':>6} {'median ms':>10} {'min ms':>10} "
          f"{'first ms':>10} {'images/s':>11}", flush=True)
    out = open(args.json, "a") if args.json else None
    for arch in [m for m in args.models.split(",") if m]:
        for batch in [int(b) for b in args.batches.split(",") if b]:
            for mode, precision in [(m, p) for m in args.modes.split(",") if m for p in args.precisions.split(",") if p]:
                r = {"framework": "torch", "backend": backend, "desc": desc, "model": arch, "batch": batch,
                     "mode": mode, "precision": precision, "threads": torch.get_num_threads(),
                     "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
                     "timed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                try:
                    r.update(measure(arch, batch, mode, args, device, precision))
                except Exception as e:  # report and go on (e.g. out of memory)
                    r["error"] = f"{type(e).__name__}: {e}"
                note = "" if precision == "f32" else "  " + precision
                if "error" in r:
                    print(f"{backend:<9} {arch:<9} {batch:>5} {mode:<5} ERROR: {r['error']}{note}", flush=True)
                else:
                    print(f"{backend:<9} {arch:<9} {batch:>5} {mode:<5} {r['steps']:>6} {r['median_ms']:>10.1f} "
                          f"{r['min_ms']:>10.1f} {r['first_ms']:>10.1f} {r['images_per_s']:>11.1f}{note}", flush=True)
                if out:
                    out.write(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n")
                    out.flush()
    if out:
        out.close()


if __name__ == "__main__":
    sys.exit(main())
