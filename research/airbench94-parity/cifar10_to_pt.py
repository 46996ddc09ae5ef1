"""Convert CIFAR-10 in the binary layout into airbench's cached files.

airbench's CifarLoader (airbench 0.1.8, utils.py) reads PATH/train.pt and PATH/test.pt, each a
torch.save of {'images': uint8 tensor N x 32 x 32 x 3 (NHWC, torchvision's dset.data),
'labels': int64 tensor N, 'classes': list of names}, and downloads the official archive when they
are missing. This script writes them from the binary layout the lab reads
(DIR/cifar-10-batches-bin/data_batch_1..5.bin, test_batch.bin, batches.meta.txt: records of one
label byte and 3072 pixel bytes, channel-major), in the same order as the lab, so that both sides
train on the same images:

    python research/airbench94-parity/cifar10_to_pt.py --data /work/c10real --out /tmp/parity/data/cifar10

The batches may hold fewer than 10000 records (a subset, e.g. 4000 each); whatever is present is
converted. The output goes to a scratch folder, never into the repository. Files are written to a
temporary name and renamed, so a failed run leaves no half-written file.
"""
import argparse
import os
import sys

import torch

RECORD = 1 + 32 * 32 * 3


def read_batches(paths):
    """Returns (images uint8 N x 32 x 32 x 3, labels int64 N) of the binary batch files."""
    images, labels = [], []
    for path in paths:
        with open(path, "rb") as f:
            raw = f.read()
        if len(raw) == 0 or len(raw) % RECORD != 0:
            sys.exit(f"cifar10_to_pt: {path}: {len(raw)} bytes is not a whole number of "
                     f"{RECORD}-byte CIFAR-10 records; is it a CIFAR-10 binary batch?")
        rec = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(-1, RECORD)
        lab = rec[:, 0].to(torch.int64)
        if int(lab.max()) > 9:
            bad = int((lab > 9).nonzero()[0, 0])
            sys.exit(f"cifar10_to_pt: {path}: record {bad} has label {int(lab[bad])}, CIFAR-10 has 0..9")
        images.append(rec[:, 1:].reshape(-1, 3, 32, 32).permute(0, 2, 3, 1).contiguous())
        labels.append(lab)
    return torch.cat(images), torch.cat(labels)


def save_atomic(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="folder holding cifar-10-batches-bin/")
    ap.add_argument("--out", required=True, help="folder to write train.pt and test.pt into (airbench's 'cifar10')")
    args = ap.parse_args()
    src = os.path.join(args.data, "cifar-10-batches-bin")
    if not os.path.isdir(src):
        sys.exit(f"cifar10_to_pt: no cifar-10-batches-bin/ in {args.data}; --data is the folder that holds it")
    with open(os.path.join(src, "batches.meta.txt")) as f:
        classes = [line.strip() for line in f if line.strip()]
    if len(classes) != 10:
        sys.exit(f"cifar10_to_pt: {src}/batches.meta.txt names {len(classes)} classes, CIFAR-10 has 10")
    train = [os.path.join(src, f"data_batch_{i}.bin") for i in range(1, 6)]
    train = [p for p in train if os.path.exists(p)]
    if not train:
        sys.exit(f"cifar10_to_pt: no data_batch_N.bin in {src}")
    os.makedirs(args.out, exist_ok=True)
    for name, paths in (("train", train), ("test", [os.path.join(src, "test_batch.bin")])):
        images, labels = read_batches(paths)
        save_atomic({"images": images, "labels": labels, "classes": classes},
                    os.path.join(args.out, name + ".pt"))
        counts = torch.bincount(labels, minlength=10).tolist()
        print(f"{name}.pt: {len(labels)} images from {len(paths)} file(s), per class {counts}")


if __name__ == "__main__":
    main()
