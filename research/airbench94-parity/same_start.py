"""airbench94's first steps and the lab's from the same weights on the same batch (issue 37, item 2).

Where the lab's recipe ends lower than airbench's own code, this tells a difference in the step
itself (forward, gradients, optimizer, batch norm, lookahead) from one in everything around it
(initialisation, data order, augmentation). It:

  1. takes the first --n training images of airbench's train.pt (research/airbench94-parity/cifar10_to_pt.py)
     and writes them, with the first --n-test test images, in the lab's binary layout under OUT/data;
  2. makes airbench's make_net94 on the CPU in float32 (airbench_cpu.make_net94_cpu) from --seed,
     whitens its first layer from those images with airbench's init_whitening_conv, and saves the
     state_dict as OUT/init.pt;
  3. trains --steps steps of the whole --n images as one batch (no augmentation, so every step sees
     the same batch: the order inside a batch changes nothing but float rounding) with airbench's
     step as utils.train writes it: its param groups, SGD(momentum, nesterov=True), the triangle
     schedule over --steps, the loss summed with label smoothing, the whitening bias trained for
     whiten_bias_epochs steps (one step per epoch here) and, unless --no-lookahead, its
     LookaheadState every 5 steps and at the end; saves OUT/torch-K.pt after step K and the loss;
  4. with --lab CIFARLAB: imports OUT/init.pt as a lab run, trains it with the recipe on OUT/data
     for --steps steps at batch --n (augmentation off, the same lookahead), exports it with
     airbench's names, and prints, per tensor, how far the lab's step is from airbench's relative
     to the step's own size: max|lab - torch| / max|torch - init|.

    python research/airbench94-parity/same_start.py --data SCRATCH --out /tmp/same --steps 1 --no-lookahead --lab .bin/cifarlab
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import airbench_cpu  # noqa: E402  (make_net94_cpu: make_net94 without .half().cuda(), load_weights)
from airbench import lib_airbench94 as lib  # noqa: E402
from airbench import utils  # noqa: E402


def write_binary(path, images, labels):
    """CIFAR-10's binary layout: per image one label byte, then 3072 bytes in CHW order."""
    rec = torch.cat([labels.to(torch.uint8).view(-1, 1), images.permute(0, 3, 1, 2).reshape(len(labels), -1)], 1)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(rec.numpy().tobytes())
    os.replace(tmp, path)


def airbench_steps(images, labels, steps, lookahead, seed, out, dtype=torch.float32, tag="", init=None):
    """airbench's train() loop (utils.py) on one fixed batch; returns the losses. With dtype
    float64 it starts from OUT/init.pt instead (the reference for float32's rounding), and with
    init (a weights file, see airbench_cpu.load_weights) from those weights (saved as OUT/init.pt,
    no whitening)."""
    hyp = lib.hyp["opt"]
    torch.manual_seed(seed)
    model = airbench_cpu.make_net94_cpu().to(dtype)
    lookahead_state = utils.LookaheadState(model) if lookahead else None  # taken before whitening, as train()
    normalize = utils.T.Normalize(utils.CIFAR_MEAN.to(dtype), utils.CIFAR_STD.to(dtype))
    inputs = normalize(images.to(dtype).div(255).permute(0, 3, 1, 2))
    if dtype == torch.float32 and init is not None:
        airbench_cpu.load_weights(model, init)
        torch.save(model.state_dict(), os.path.join(out, "init.pt"))
    elif dtype == torch.float32:
        utils.init_whitening_conv(model[0], inputs[:5000])
        torch.save(model.state_dict(), os.path.join(out, "init.pt"))
    else:
        init = torch.load(os.path.join(out, "init.pt"))
        model.load_state_dict({k: v.to(dtype) if v.is_floating_point() else v for k, v in init.items()})

    momentum, batch_size = hyp["momentum"], len(labels)
    kilostep_scale = 1024 * (1 + 1 / (1 - momentum))
    lr = hyp["lr"] / kilostep_scale
    wd = hyp["weight_decay"] * batch_size / kilostep_scale
    lr_biases = lr * hyp["bias_scaler"]
    loss_fn = nn.CrossEntropyLoss(label_smoothing=hyp["label_smoothing"], reduction="none")
    norm_biases = [p for k, p in model.named_parameters() if "norm" in k and p.requires_grad]
    other_params = [p for k, p in model.named_parameters() if "norm" not in k and p.requires_grad]
    optimizer = torch.optim.SGD([dict(params=norm_biases, lr=lr_biases, weight_decay=wd / lr_biases),
                                 dict(params=other_params, lr=lr, weight_decay=wd / lr)],
                                momentum=momentum, nesterov=True)

    def triangle(steps, start=0, end=0, peak=0.5):
        xp = torch.tensor([0, int(peak * steps), steps])
        fp = torch.tensor([start, 1, end])
        x = torch.arange(1 + steps)
        m = (fp[1:] - fp[:-1]) / (xp[1:] - xp[:-1])
        b = fp[:-1] - (m * xp[:-1])
        indices = torch.sum(torch.ge(x[:, None], xp[None, :]), 1) - 1
        indices = torch.clamp(indices, 0, len(m) - 1)
        return m[indices] * x + b[indices]
    lr_schedule = triangle(steps, start=0.2, end=0.07, peak=0.23)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: lr_schedule[i])
    alpha_schedule = 0.95**5 * (torch.arange(steps + 1) / steps)**3

    losses = []
    model.train()
    for step in range(steps):
        model[0].bias.requires_grad = step < hyp["whiten_bias_epochs"]  # one step per epoch here
        outputs = model(inputs)
        loss = loss_fn(outputs, labels).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item() / batch_size)
        current = step + 1
        if lookahead_state is not None:
            if current % 5 == 0:
                lookahead_state.update(model, decay=alpha_schedule[current].item())
            if current >= steps:
                lookahead_state.update(model, decay=1.0)
    torch.save(model.state_dict(), os.path.join(out, f"torch{tag}-{steps}.pt"))
    return losses


def lab_steps(cifarlab, out, n, steps, lookahead):
    run = os.path.join(out, f"lab-run-{steps}")
    shutil.rmtree(run, ignore_errors=True)
    env = dict(os.environ, GOMLX_NO_AUTO_INSTALL="1")
    subprocess.run([cifarlab, "import", "--from", os.path.join(out, "init.pt"), "--checkpoint", run,
                    "--arch", "airbench94", "--dataset", "cifar10"], check=True, env=env)
    res = subprocess.run([cifarlab, "train", "--recipe", "airbench94", "--checkpoint", run, "--data",
                          os.path.join(out, "data"), "--dataset", "cifar10", "--steps", str(steps), "--batch", str(n),
                          "--augment=false", f"--lookahead={'true' if lookahead else 'false'}", "--backend", "cpu",
                          "--tta", "-1", "--eval-every", "-1", "--progress", "off", "--json"],
                         check=True, env=env, capture_output=True, text=True)
    result = json.loads(res.stdout)
    out_file = os.path.join(out, f"lab-{steps}.safetensors")
    subprocess.run([cifarlab, "export", "--run", run, "--names", "airbench94", "--out", out_file], check=True, env=env)
    return result, out_file


def compare(init, ref64, ref32, lab):
    """Per tensor: the step's size in float64, and how far PyTorch's float32 step and the lab's
    are from it, relative to that size (float32's rounding shows in the first ratio)."""
    got = airbench_cpu.load_safetensors(lab)
    print(f"{'tensor':<24} {'max|step|':>10} {'torch32':>9} {'lab':>9}")
    worst = [0.0, 0.0]
    for k, v in ref64.items():
        if not v.dtype.is_floating_point:
            continue
        if k not in got:
            print(f"{k:<24} missing in the lab's export")
            continue
        step = (v - init[k].double()).abs().max().item()
        if step == 0:
            continue
        ratios = [(x[k].double().reshape(v.shape) - v).abs().max().item() / step for x in (ref32, got)]
        worst = [max(w, r) for w, r in zip(worst, ratios)]
        print(f"{k:<24} {step:10.4g} {ratios[0]:9.2e} {ratios[1]:9.2e}")
    print(f"worst: torch float32 {worst[0]:.3g}, lab {worst[1]:.3g} (of the step, against float64)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="folder holding cifar10/train.pt and test.pt")
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=1024, help="training images: one batch")
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-lookahead", action="store_true")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--lab", help="a built cifarlab: also run the lab's steps and compare")
    ap.add_argument("--init", help="start from these weights (a state_dict .pt or a lab export .safetensors with "
                    "airbench94's names, e.g. a trained run) instead of a fresh whitened network")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(os.path.join(args.out, "data", "cifar-10-batches-bin"), exist_ok=True)
    train = torch.load(os.path.join(args.data, "cifar10", "train.pt"), map_location="cpu")
    test = torch.load(os.path.join(args.data, "cifar10", "test.pt"), map_location="cpu")
    images, labels = train["images"][:args.n], train["labels"][:args.n]
    bin_dir = os.path.join(args.out, "data", "cifar-10-batches-bin")
    for i, part in enumerate(torch.arange(args.n).chunk(5)):  # the layout's five training files
        write_binary(os.path.join(bin_dir, f"data_batch_{i + 1}.bin"), images[part], labels[part])
    write_binary(os.path.join(bin_dir, "test_batch.bin"), test["images"][:args.n_test], test["labels"][:args.n_test])
    with open(os.path.join(bin_dir, "batches.meta.txt"), "w") as f:
        f.write("\n".join(train["classes"]) + "\n")
    losses = airbench_steps(images, labels, args.steps, not args.no_lookahead, args.seed, args.out, init=args.init)
    print("airbench losses:", " ".join(f"{x:.6f}" for x in losses))
    losses = airbench_steps(images, labels, args.steps, not args.no_lookahead, args.seed, args.out, torch.float64, "64")
    print("airbench losses in float64:", " ".join(f"{x:.6f}" for x in losses))
    if args.lab:
        result, lab_file = lab_steps(os.path.abspath(args.lab), args.out, args.n, args.steps, not args.no_lookahead)
        print("lab result:", json.dumps({k: result.get(k) for k in ("final_loss", "loss", "steps") if k in result}))
        init = torch.load(os.path.join(args.out, "init.pt"))
        ref32 = torch.load(os.path.join(args.out, f"torch-{args.steps}.pt"))
        ref64 = torch.load(os.path.join(args.out, f"torch64-{args.steps}.pt"))
        compare(init, ref64, ref32, lab_file)


if __name__ == "__main__":
    main()
