"""The full ResNet-18 check of issue 28 with real PyTorch, on real CIFAR-10 test images.

  python bench/interop/verify.py --data DIR --ckpt FILE --cifarlab BIN --logits BIN --out DIR [--compare 500] [--md FILE]

FILE is a kuangliu-style checkpoint ({'net': state_dict, 'acc', 'epoch'}, train_source.py).
BIN are the cifarlab CLI and bench/interop/logits built from this checkout. Steps:
 1. import:  cifarlab import --from FILE --arch resnet18 --dataset cifar10 --checkpoint OUT/run --check
             (the lab's test accuracy after import, next to the accuracy the file records);
 2. logits:  the first --compare test images through PyTorch (kuangliu's normalisation) and through
             the imported run (the lab's data pipeline; the run applies kuangliu's normalisation,
             which it records, at its model's input);
 3. export:  cifarlab export --run OUT/run --names pytorch-cifar and --names torchvision; PyTorch loads
             each with load_state_dict(safetensors.torch.load_file(F), strict=True) into ResNet18 /
             the torchvision-style resnet18, with the Normalize statistics from the file's metadata,
             and its logits are compared with the lab's; its test accuracy is measured in PyTorch;
 4. round trip (issue 35.6): the default export (the source's naming) compared with the .pth tensor
             by tensor (bytes), and put through the source pipeline's own transform (kuangliu's
             Normalize, not the metadata's) against the source model's logits; next to it, what the
             earlier import (kuangliu's std folded into conv1) gave in that same pipeline.
Logit differences are reported element by element as max |a-b| and max |a-b|/(1+|b|) (the Go tests'
measure, tolerance 1e-4 for a reordered float32 forward pass), with the arg-max agreement.
"""
import argparse, json, os, subprocess, time

import numpy as np
import torch
from safetensors.torch import load_file

import cifar
from models import KUANGLIU_MEAN, KUANGLIU_STD, ResNet18, normalize, tv_resnet18


def logits_of(net, pixels, mean, std, batch=250):
    net.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(pixels), batch):
            out.append(net(normalize(pixels[i:i + batch], mean, std)))
    return torch.cat(out)


def diff(a, b):
    d = (a - b).abs()
    return {"max_abs": d.max().item(), "max_rel": (d / (1 + b.abs())).max().item(),
            "argmax_agree": (a.argmax(1) == b.argmax(1)).float().mean().item()}


def sh(*cmd):
    t = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    print("$", " ".join(cmd), f"({time.time() - t:.0f}s)\n" + out, flush=True)
    return out, time.time() - t


def main():
    p = argparse.ArgumentParser()
    for a in ("--data", "--ckpt", "--cifarlab", "--logits", "--out"):
        p.add_argument(a, required=True)
    p.add_argument("--compare", type=int, default=500)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--md", default="")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    test_x, test_y = cifar.load(a.data, "test")
    ckpt = torch.load(a.ckpt, weights_only=True)
    src = ResNet18()
    src.load_state_dict(ckpt["net"])
    res = {"torch": torch.__version__, "ckpt": {k: v for k, v in ckpt.items() if k != "net"}, "test_images": len(test_x)}
    info = a.ckpt + ".json"
    if os.path.exists(info):
        res["training"] = json.load(open(info))

    run = os.path.join(a.out, "run")
    if os.path.exists(run):
        subprocess.run(["rm", "-rf", run], check=True)
    out, secs = sh(a.cifarlab, "import", "--from", a.ckpt, "--arch", "resnet18", "--dataset", "cifar10", "--checkpoint", run,
                   "--check", "--data", a.data, "--json")
    rep = json.loads(out)
    res["import"] = {"seconds_with_check": round(secs), "lab_test_accuracy": 100 * rep["eval"]["accuracy"],
                     "lab_examples": rep["eval"]["examples"], "file_acc": rep.get("Acc"), "source": rep["Source"]}

    n = a.compare
    pix = test_x[:n]
    imgs = os.path.join(a.out, "images.bin")
    with open(imgs, "wb") as f:
        f.write(pix.numpy().tobytes())
    lab_file = os.path.join(a.out, "lab_logits.f32")
    sh(a.logits, "--run", run, "--images", imgs, "--out", lab_file)
    lab = torch.from_numpy(np.fromfile(lab_file, dtype="<f4").reshape(n, -1))
    torch_src = logits_of(src, pix, KUANGLIU_MEAN, KUANGLIU_STD)
    res["import"]["logits_vs_pytorch"] = diff(lab, torch_src)

    res["export"] = {}
    for names, make in (("pytorch-cifar", ResNet18), ("torchvision", tv_resnet18)):
        st = os.path.join(a.out, f"export-{names}.safetensors")
        sh(a.cifarlab, "export", "--run", run, "--names", names, "--out", st)
        from safetensors import safe_open
        with safe_open(st, "pt") as f:
            meta = f.metadata()
        mean = tuple(float(x) for x in meta["normalize_mean"].split(","))
        std = tuple(float(x) for x in meta["normalize_std"].split(","))
        net = make()
        net.load_state_dict(load_file(st), strict=True)
        exp = logits_of(net, pix, mean, std)
        r = {"metadata": meta, "logits_vs_lab": diff(exp, lab), "logits_vs_source": diff(exp, torch_src)}
        if names == "pytorch-cifar":
            t = time.time()
            full = logits_of(net, test_x, mean, std)
            r["pytorch_test_accuracy"] = 100 * (full.argmax(1) == test_y).float().mean().item()
            r["accuracy_seconds"] = round(time.time() - t)
        res["export"][names] = r
    res["roundtrip"] = roundtrip(a, run, ckpt["net"], src, pix, torch_src)
    with open(os.path.join(a.out, "verify.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))
    if a.md:
        write_md(res, a.md, n)


LAB_STD = (0.2470, 0.2435, 0.2616)


def roundtrip(a, run, sd, src, pix, torch_src):
    """The default export against the file: bytes per tensor, and logits through the source pipeline."""
    st = os.path.join(a.out, "export-default.safetensors")
    sh(a.cifarlab, "export", "--run", run, "--out", st)
    back = load_file(st)
    same = [k for k in sd if k in back and back[k].dtype == sd[k].dtype and back[k].shape == sd[k].shape
            and back[k].contiguous().numpy().tobytes() == sd[k].contiguous().numpy().tobytes()]
    net = ResNet18()
    net.load_state_dict(back, strict=True)
    exp = logits_of(net, pix, KUANGLIU_MEAN, KUANGLIU_STD)  # the source pipeline's own transform
    # What the earlier import exported: conv1 scaled by lab std / kuangliu std (in float64, once).
    folded = {k: v.clone() for k, v in sd.items()}
    scale = torch.tensor([l / s for l, s in zip(LAB_STD, KUANGLIU_STD)], dtype=torch.float64).view(1, 3, 1, 1)
    folded["conv1.weight"] = (sd["conv1.weight"].double() * scale).float()
    before_equal = sum(folded[k].numpy().tobytes() == sd[k].contiguous().numpy().tobytes() for k in sd)
    old = ResNet18()
    old.load_state_dict(folded, strict=True)
    before = logits_of(old, pix, KUANGLIU_MEAN, KUANGLIU_STD)
    peak = torch_src.abs().max().item()
    return {"tensors": len(sd), "tensors_equal_bytes": len(same), "before_equal_bytes": before_equal, "keys_equal": sorted(back) == sorted(sd),
            "after": diff(exp, torch_src), "before": diff(before, torch_src),
            "peak": peak, "before_rel_to_peak": (before - torch_src).abs().max().item() / peak,
            "after_rel_to_peak": (exp - torch_src).abs().max().item() / peak}


def write_md(r, path, n):
    imp, ex = r["import"], r["export"]
    tr = r.get("training", {})
    lines = [
        "# PyTorch interop: a real ResNet-18 in and out (issues 28 and 35.6)",
        "",
        "Produced by `bench/interop/run.sh` (train_source.py, then verify.py) on this machine's CPU with",
        f"PyTorch {r['torch']} (bench/requirements-torch.txt), real CIFAR-10 test images ({r['test_images']}, the",
        "shared subset's whole test split; JPEG-decoded, see ../shared/data/README.md). Nothing here runs in CI.",
        "",
        "## The source model",
        "",
        f"kuangliu/pytorch-cifar's `ResNet18()` (bench/interop/models.py), trained briefly on the CPU: {tr.get('train_seconds', '?')} s,",
        f"{tr.get('steps', '?')} SGD steps of {tr.get('batch', '?')} images ({tr.get('images', '?')} images, {tr.get('threads', '?')} threads on a shared",
        "2-core machine), main.py's augmentation and normalisation. Saved as main.py saves it:",
        "`torch.save({'net': net.state_dict(), 'acc': acc, 'epoch': epoch}, 'ckpt.pth')` (45 MB, not committed).",
        "The short training only has to make accuracy mean something (10% is chance); on a loaded machine",
        "(this run: 9 engineers' jobs on 2 cores) it may reach few steps, which the comparisons do not need.",
        "",
        "## Import: `cifarlab import --from ckpt.pth --arch resnet18 --dataset cifar10 --checkpoint RUN --check`",
        "",
        "| | value |",
        "| --- | --- |",
        f"| test accuracy in PyTorch (recorded in the file) | {imp['file_acc']:.2f}% |",
        f"| test accuracy in the lab after import ({imp['lab_examples']} images, XLA CPU) | {imp['lab_test_accuracy']:.2f}% |",
        f"| logits, lab vs PyTorch, first {n} test images: max abs difference | {imp['logits_vs_pytorch']['max_abs']:.3g} |",
        f"| same, max abs difference / (1+abs(PyTorch)) (tolerance 1e-4) | {imp['logits_vs_pytorch']['max_rel']:.3g} |",
        f"| arg-max agreement | {100 * imp['logits_vs_pytorch']['argmax_agree']:.1f}% |",
        f"| normalisation the run records and applies at its model's input | mean {imp['source']['Mean']}, std {imp['source']['Std']} |",
        f"| import + check wall time | {imp['seconds_with_check']} s |",
        "",
        "## Export: `cifarlab export --run RUN --names NAMES --out F.safetensors`, loaded in PyTorch with `strict=True`",
        "",
        "| names | PyTorch model | logits vs the lab: max abs | max abs / (1+abs) | arg-max agreement | test accuracy in PyTorch |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for names, model in (("pytorch-cifar", "ResNet18()"), ("torchvision", "resnet18, 3x3 stem, no max-pool")):
        e = ex[names]
        acc = f"{e['pytorch_test_accuracy']:.2f}%" if "pytorch_test_accuracy" in e else "(same weights)"
        lines.append(f"| {names} | {model} | {e['logits_vs_lab']['max_abs']:.3g} | {e['logits_vs_lab']['max_rel']:.3g} | "
                     f"{100 * e['logits_vs_lab']['argmax_agree']:.1f}% | {acc} |")
    rt = r["roundtrip"]
    lines += ["", f"The export's metadata: `{json.dumps(ex['pytorch-cifar']['metadata'], sort_keys=True)}`.", "",
              "## Import then export, no training: the source pipeline unchanged (issue 35.6)",
              "",
              "`cifarlab export --run RUN --out F.safetensors` (the source's naming, the default for an imported run),",
              "loaded into kuangliu's `ResNet18()` with `strict=True` and fed the source pipeline's own",
              "`transforms.Normalize(KUANGLIU_MEAN, KUANGLIU_STD)`, against the source model:",
              "",
              "| | before (std folded into conv1) | after (the run keeps kuangliu's normalisation) |",
              "| --- | --- | --- |",
              f"| tensors equal to the .pth's, byte for byte | {rt['before_equal_bytes']} of {rt['tensors']} | "
              f"{rt['tensors_equal_bytes']} of {rt['tensors']} |",
              f"| logits, max abs difference | {rt['before']['max_abs']:.3g} | {rt['after']['max_abs']:.3g} |",
              f"| same, relative to the largest logit | {100 * rt['before_rel_to_peak']:.1f}% | {100 * rt['after_rel_to_peak']:.3g}% |",
              f"| arg-max agreement, first {n} test images | {100 * rt['before']['argmax_agree']:.1f}% | {100 * rt['after']['argmax_agree']:.1f}% |",
              "",
              "The exported model expects the run's own statistics (kuangliu's, printed by export and stored as",
              "`transforms`), which is what the source pipeline already feeds it. The largest |logit| of the source",
              f"model on these images is {rt.get('peak', float('nan')):.3g} (a model trained this briefly has large logits), hence",
              "the absolute differences above; the relative ones are the measure.", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
