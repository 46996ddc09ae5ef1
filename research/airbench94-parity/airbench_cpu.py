"""airbench94 (PyPI airbench 0.1.8) run by its own code: on the CPU in float32 (the default), or
on a GPU as written (--device cuda: fp16, CUDA events, nothing patched).

It runs airbench's train() (airbench/utils.py) with lib_airbench94's make_net94 and hyp, their
method unchanged. With --device cpu it patches only what stops them running on a CPU in f32:

  1. torch.cuda.Event and torch.cuda.synchronize (train() times its phases with CUDA events):
     replaced by CpuEvent, a wall clock (time.perf_counter) with the same record()/elapsed_time()
     interface, and a no-op synchronize.
  2. make_net94's `net.half().cuda()`: nn.Module.half and nn.Module.cuda are the identity while
     make_net94 runs, so the network stays float32 on the CPU (its BatchNorm .float() is a no-op).
  3. CifarLoader (utils.py): its device (gpu=0, i.e. torch.load(map_location=cuda:0)) becomes the
     CPU, and its images, which __init__ makes as `images.half() / 255`, are made again in float32
     by the same expression with .float(). utils.CifarLoader is replaced by this subclass, so the
     test loader train() makes is the CPU one too.

Instrumentation only, on both devices (no change to what is computed): every elapsed_time() of
train()'s timer is kept, in order (the whitening initialisation, each epoch's training, the final
TTA evaluation); utils.evaluate is wrapped to time each evaluation (after a synchronize on CUDA),
and utils.print_training_details to keep each printed row (train_loss, train_acc, val_acc,
tta_val_acc); the loader keeps the labels of its last batch (for --first-steps). The seed is set
with torch.manual_seed before the loaders are made (airbench sets none). On the CPU,
torch.set_num_threads(--threads). On CUDA, --warmup runs airbench's own warm-up first
(utils.train with run='warmup', as warmup94 does: the whitening and one step, which includes
cuDNN's autotuning), timed apart.

The data is airbench's cached format: DATA/cifar10/{train,test}.pt (research/airbench94-parity/cifar10_to_pt.py
writes them from the lab's binary layout); train() opens the test set at the relative path
'cifar10', so the script runs from DATA.

    OMP_WAIT_POLICY=PASSIVE python research/airbench94-parity/airbench_cpu.py --data /tmp/parity/data \
        --epochs 2 --seed 0 --json /tmp/parity/airbench-s0.json
    python research/airbench94-parity/airbench_cpu.py --device cuda --warmup --data DIR --seed 0 --json R.json

--save-init FILE saves the network's state_dict right after the whitening initialisation,
--save-final FILE the trained one, and --first-steps N the training loss of the first N steps,
for comparing with the lab step by step. --init-weights FILE starts from given initial weights
(the lab's, exported) and --replay FILE trains on given batches (the lab's stream for a seed,
written by research/airbench94-parity/labstream) in place of the loader's draws: together they separate the
training code, the initial weights and the data stream.
"""
import argparse
import json
import os
import platform
import struct
import subprocess
import sys
import time

import torch
from torch import nn

import airbench
from airbench import lib_airbench94 as lib
from airbench import utils

ELAPSED = []  # seconds of each elapsed_time() call of train()'s timer, in order


# --- patch 1 (CPU): CUDA events -> wall clock ---------------------------------------------------
class CpuEvent:
    """torch.cuda.Event(enable_timing=True) on the CPU: record() reads the wall clock."""

    def __init__(self, enable_timing=True):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return 1e3 * (end.t - self.t)


# --- patch 2 (CPU): make_net94 without .half().cuda() -------------------------------------------
def make_net94_cpu():
    half, cuda = nn.Module.half, nn.Module.cuda
    nn.Module.half = lambda self, *a, **k: self
    nn.Module.cuda = lambda self, *a, **k: self
    try:
        net = lib.make_net94()
    finally:
        nn.Module.half, nn.Module.cuda = half, cuda
    return net


# --- weights ------------------------------------------------------------------------------------
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32}


def load_safetensors(path):
    """A .safetensors file (the lab's `cifarlab export`) as a dict of tensors, read with the
    standard library and torch (8-byte header length, JSON header, raw little-endian tensors), so
    no safetensors package is needed; nothing in it is executed."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        sys.exit(f"{path}: header of {n} bytes is longer than the file")
    header = json.loads(raw[8:8 + n])
    body = memoryview(raw)[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        if not (0 <= lo <= hi <= len(body)):
            sys.exit(f"{path}: tensor {name} lies outside the file")
        out[name] = torch.frombuffer(bytearray(body[lo:hi]), dtype=DTYPES[t["dtype"]]).reshape(t["shape"]).clone()
    return out


def load_weights(net, path):
    """Loads path into net (make_net94's): a state_dict saved by torch (.pt, .pth) or the lab's
    export (.safetensors, airbench94's names); every key but num_batches_tracked must be there."""
    if path.endswith((".pt", ".pth")):
        state = torch.load(path, map_location="cpu", weights_only=True)
    else:
        state = load_safetensors(path)
    missing, unexpected = net.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        sys.exit(f"{path}: keys missing {missing}, unexpected {unexpected}")
    return net


# --- patch 3 (CPU): CifarLoader on the CPU in float32 -------------------------------------------
class Loader(utils.CifarLoader):
    """airbench's CifarLoader; on the CPU (DEVICE) its images are float32."""

    def __init__(self, path, train=True, batch_size=500, aug=None, drop_last=None, shuffle=None,
                 altflip=False, gpu=0):
        gpu = "cpu" if DEVICE == "cpu" else gpu
        super().__init__(path, train=train, batch_size=batch_size, aug=aug, drop_last=drop_last,
                         shuffle=shuffle, altflip=altflip, gpu=gpu)
        if DEVICE == "cpu":
            data = torch.load(os.path.join(path, "train.pt" if train else "test.pt"), map_location="cpu")
            self.images = (data["images"].float() / 255).permute(0, 3, 1, 2).to(memory_format=torch.channels_last)

    def __iter__(self):
        # Instrumentation: keeps the labels of the batch last yielded (for --first-steps).
        replay = REPLAY is not None and self.shuffle and self.batch_size == REPLAY.batch
        for inputs, labels in (REPLAY.epoch(self) if replay else super().__iter__()):
            self.last_labels = labels
            yield inputs, labels


class Replay:
    """--replay FILE: training batches written by research/airbench94-parity/labstream (the lab's own stream),
    yielded in place of the training loader's draws. Each batch is BATCH float32 NHWC images,
    already normalised and augmented, then BATCH int32 labels, little-endian. The file is mapped,
    not read whole; nothing in it is executed."""

    def __init__(self, path, batch):
        import numpy as np
        self.np, self.path, self.batch = np, path, batch
        self.record = batch * 32 * 32 * 3 * 4 + batch * 4
        size = os.path.getsize(path)
        if size == 0 or size % self.record:
            sys.exit(f"airbench_cpu: --replay {path}: {size} bytes is not a whole number of batches of {batch} "
                     f"({self.record} bytes each); write it with research/airbench94-parity/labstream --batch {batch}")
        self.batches = size // self.record
        self.raw = np.memmap(path, dtype=np.uint8, mode="r")

    def epoch(self, loader):
        """One epoch of batches for loader (airbench's CifarLoader, whose epoch counter it advances
        as CifarLoader.__iter__ does)."""
        np, e, steps = self.np, loader.epoch, len(loader)
        loader.epoch += 1
        if (e + 1) * steps > self.batches:
            sys.exit(f"airbench_cpu: --replay {self.path} holds {self.batches} batches, and epoch {e + 1} needs "
                     f"{(e + 1) * steps}: write it with more --epochs")
        pixels = self.batch * 32 * 32 * 3
        for k in range(e * steps, (e + 1) * steps):
            chunk = self.raw[k * self.record:(k + 1) * self.record]
            images = np.frombuffer(chunk, dtype="<f4", count=pixels).reshape(self.batch, 32, 32, 3)
            labels = np.frombuffer(chunk, dtype="<i4", count=self.batch, offset=pixels * 4).astype(np.int64)
            if labels.min() < 0 or labels.max() >= len(loader.classes):
                sys.exit(f"airbench_cpu: --replay {self.path}: batch {k} has a label outside [0, {len(loader.classes)}), "
                         f"so it is not CIFAR-10's stream")
            # NCHW with channels-last memory, as CifarLoader's images are.
            yield torch.from_numpy(images.copy()).permute(0, 3, 1, 2), torch.from_numpy(labels)


DEVICE = "cpu"
REPLAY = None  # a Replay, with --replay


def patch_for_cpu():
    torch.cuda.Event = CpuEvent
    torch.cuda.synchronize = lambda device=None: None


# --- instrumentation ----------------------------------------------------------------------------
EVALS = []  # (tta_level, seconds, accuracy)
ROWS = []   # the rows train() prints
_evaluate, _print_details = utils.evaluate, utils.print_training_details


def timed_evaluate(model, loader, tta_level=0):
    torch.cuda.synchronize()
    t = time.perf_counter()
    acc = _evaluate(model, loader, tta_level)  # .item() inside waits for the result
    EVALS.append((tta_level, time.perf_counter() - t, acc))
    return acc


def keep_row(variables, is_final_entry):
    ROWS.append({k: variables.get(k) for k in ("epoch", "train_loss", "train_acc", "val_acc",
                                               "tta_val_acc", "total_time_seconds")})
    _print_details(variables, is_final_entry)


def instrument():
    event = torch.cuda.Event

    class KeptEvent(event):
        def elapsed_time(self, end):
            ms = super().elapsed_time(end)
            ELAPSED.append(ms / 1e3)
            return ms
    torch.cuda.Event = KeptEvent
    utils.evaluate = timed_evaluate
    utils.print_training_details = keep_row
    utils.CifarLoader = Loader


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return "?"


def main():
    global DEVICE, REPLAY
    ap = argparse.ArgumentParser(description="airbench94 (airbench 0.1.8's code) on the CPU in float32, or on CUDA as written")
    ap.add_argument("--data", required=True, help="folder holding cifar10/train.pt and test.pt (cifar10_to_pt.py)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--epochs", type=float, default=lib.hyp["opt"]["train_epochs"],
                    help="training epochs (airbench's schedules are over the total steps; default %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads (torch.set_num_threads)")
    ap.add_argument("--warmup", action="store_true", help="run airbench's warm-up (run='warmup') first, timed apart")
    ap.add_argument("--json", help="write the result here (atomically)")
    ap.add_argument("--save-init", help="save the state_dict after the whitening initialisation")
    ap.add_argument("--first-steps", type=int, default=0, help="also record the loss of the first N steps")
    ap.add_argument("--save-final", help="save the trained network's state_dict (what train() returns)")
    ap.add_argument("--init-weights", help="start from these whitened initial weights (a state_dict .pt, or a lab "
                    "export .safetensors with airbench94's names) instead of make_net94's draws and "
                    "init_whitening_conv: the lab's initialisation trained by airbench's code")
    ap.add_argument("--tta-level", type=int, default=lib.hyp["net"]["tta_level"],
                    help="test-time augmentation of the final evaluation (0: none, 1: flip, 2: flip and translate; default %(default)s)")
    ap.add_argument("--data-seed", type=int, help="draw the data (flips, shifts, shuffles) from this seed, the network "
                    "still from --seed: another stream of airbench's own, for the same initial weights")
    ap.add_argument("--replay", help="train on these batches (research/airbench94-parity/labstream: the lab's own stream for a seed) "
                    "instead of the loader's draws; with --init-weights, only the training code differs from the lab's run")
    args = ap.parse_args()
    DEVICE = args.device
    # train() reads 'cifar10' relative to the data folder, so the script changes into it: the
    # paths given are made absolute first.
    for k in ("json", "save_init", "save_final", "init_weights", "replay"):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    if not os.path.exists(os.path.join(args.data, "cifar10", "train.pt")):
        sys.exit(f"airbench_cpu: no cifar10/train.pt in {args.data}; write it with "
                 f"research/airbench94-parity/cifar10_to_pt.py --data DIR --out {args.data}/cifar10")
    if DEVICE == "cuda" and not torch.cuda.is_available():
        sys.exit("airbench_cpu: --device cuda, but torch sees no CUDA GPU (torch.cuda.is_available() is False)")
    if DEVICE == "cpu":
        patch_for_cpu()
        torch.set_num_threads(args.threads)
    instrument()
    torch.manual_seed(args.seed)
    os.chdir(args.data)
    test_images = len(torch.load(os.path.join("cifar10", "test.pt"), map_location="cpu")["labels"])
    load_before = os.getloadavg()

    hyp = lib.hyp
    make_base = make_net94_cpu if DEVICE == "cpu" else lib.make_net94

    def train(loader, make_net, run):
        return utils.train(loader, args.epochs, hyp["opt"]["label_smoothing"], hyp["opt"]["lr"],
                           hyp["opt"]["bias_scaler"], hyp["opt"]["momentum"], hyp["opt"]["weight_decay"],
                           hyp["opt"]["whiten_bias_epochs"], args.tta_level, make_net, run=run,
                           verbose=True)

    def new_loader():
        # As train94 makes it when given no loader.
        return Loader("cifar10", train=True, batch_size=hyp["opt"]["batch_size"], aug=hyp["aug"], altflip=True)

    warmup_s = None
    if args.warmup:
        t = time.perf_counter()
        train(new_loader(), make_base, "warmup")
        torch.cuda.synchronize()
        warmup_s = time.perf_counter() - t
        ELAPSED.clear()
        EVALS.clear()
        ROWS.clear()
        torch.manual_seed(args.seed)

    if args.replay:
        REPLAY = Replay(args.replay, hyp["opt"]["batch_size"])
    train_loader = new_loader()
    if args.init_weights:
        # The network is drawn as make_net94 draws it (so the data's random draws follow the same
        # ones), then replaced by the given weights; the whitening initialisation is skipped.
        drawn = make_base

        def make_base():
            return load_weights(drawn(), args.init_weights)
        utils.init_whitening_conv = lambda layer, train_set, eps=5e-4: None
    make_net = make_base
    first_losses = []
    if args.save_init or args.first_steps:
        # Observe the first steps and the initial weights without changing the computation: a
        # forward hook on the net sees the outputs; the loss is recomputed from them as train()
        # computes it (label smoothing, summed), divided by the batch size.
        def make_net():
            net = make_base()
            loss_fn = nn.CrossEntropyLoss(label_smoothing=hyp["opt"]["label_smoothing"])
            state = {"saved": False}

            def hook(module, inputs, output):
                if not module.training:
                    return
                if args.save_init and not state["saved"]:
                    # The first training forward runs after init_whitening_conv.
                    torch.save({k: v.detach().clone() for k, v in module.state_dict().items()}, args.save_init)
                    state["saved"] = True
                if len(first_losses) < args.first_steps:
                    first_losses.append(float(loss_fn(output.detach().float(), train_loader.last_labels)))
                    print(f"step {len(first_losses)}: loss {first_losses[-1]:.4f}", file=sys.stderr, flush=True)
            net.register_forward_hook(hook)
            return net

    if args.data_seed is not None:
        # train() draws nothing between make_net() and the loader's first epoch, so reseeding
        # right after the network is made changes the data's draws alone.
        seeded = make_net

        def make_net():
            net = seeded()
            torch.manual_seed(args.data_seed)
            return net

    t0 = time.perf_counter()
    model = train(train_loader, make_net, args.seed)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    if args.save_final:
        torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, args.save_final)

    epochs_rows = [r for r in ROWS if r["epoch"] != "eval"]
    final = [r for r in ROWS if r["epoch"] == "eval"][0]
    per_epoch_eval = [e for e in EVALS if e[0] == 0]
    tta = EVALS[-1]  # the final evaluation, at --tta-level
    steps_per_epoch = len(train_loader)
    out = {
        "side": "airbench",
        "device": DEVICE,
        "code": f"airbench {getattr(airbench, '__version__', '0.1.8')} utils.train + lib_airbench94.make_net94/hyp"
                + (", CPU f32 patches (see header)" if DEVICE == "cpu" else ", as written (fp16)"),
        "seed": args.seed,
        "data_seed": args.data_seed,
        "init_weights": args.init_weights,
        "replay": args.replay,
        "epochs": args.epochs,
        "steps_per_epoch": steps_per_epoch,
        "total_steps": -(-int(round(steps_per_epoch * args.epochs * 1e6)) // int(1e6)),
        "batch_size": hyp["opt"]["batch_size"],
        "train_images": len(train_loader.images),
        "test_images": test_images,
        "threads": args.threads if DEVICE == "cpu" else None,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "torch": torch.__version__ + (" (" + torch.backends.cpu.get_cpu_capability() + ")" if DEVICE == "cpu" else ""),
        "gpu": torch.cuda.get_device_name(0) if DEVICE == "cuda" else None,
        "cpu": sh("lscpu | sed -n 's/^Model name: *//p' | head -1"),
        "nproc": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "warmup_s": warmup_s,
        "whiten_init_s": ELAPSED[0],
        "epochs_log": [
            {"epoch": r["epoch"], "train_time_s": ELAPSED[1 + i], "eval_time_s": per_epoch_eval[i][1],
             "train_loss": r["train_loss"], "train_acc": r["train_acc"], "val_acc": r["val_acc"]}
            for i, r in enumerate(epochs_rows)
        ],
        "val_acc": epochs_rows[-1]["val_acc"],
        "tta_level": tta[0],
        "tta_val_acc": final["tta_val_acc"],
        "tta_eval_time_s": tta[1],
        "total_time_seconds": final["total_time_seconds"],
        "wall_s": wall,
        "python": platform.python_version(),
    }
    if args.first_steps:
        out["first_losses"] = first_losses
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, args.json)
    print(json.dumps({k: out[k] for k in ("seed", "epochs", "val_acc", "tta_val_acc", "total_time_seconds")}))


if __name__ == "__main__":
    main()
