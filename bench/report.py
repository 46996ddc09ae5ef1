#!/usr/bin/env python3
"""Turns the JSON lines of bench/trainstep (GoMLX) and bench/torch_cpu.py (PyTorch) into a table
with ratios, printed and written as Markdown (bench/RESULTS.md). Standard library only.

  python3 bench/report.py --results bench/out/results.jsonl --meta bench/out/meta.json \
      --reference torch-cpu --out bench/RESULTS.md

The ratio of a GoMLX backend is its median time divided by the reference's (PyTorch) median time
for the same model, batch and mode: 1.0x is as fast as PyTorch, 10x is ten times slower.
Targets (issue 8) are checked when their rows are present:
  XLA CPU ResNet-18 train step <= 1.0x PyTorch CPU; go backend cnn train step <= 10x PyTorch CPU.
"""

import argparse
import json
import sys

TARGETS = [  # (backend, model, mode, max ratio, label)
    ("xla-cpu", "resnet18", "train", 1.0, "XLA CPU ResNet-18 train step <= 1.0x PyTorch CPU"),
    ("go", "cnn", "train", 10.0, "go backend cnn train step <= 10x PyTorch CPU"),
    ("go+simd", "cnn", "train", 10.0, "go backend (GOEXPERIMENT=simd build) cnn train step <= 10x PyTorch CPU"),
    ("cuda", "resnet18", "train", 1.0, "XLA CUDA ResNet-18 train step <= 1.0x PyTorch CUDA eager"),
]


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def fmt_ms(r):
    if r is None:
        return "-"
    if r.get("skipped"):
        return "skipped"
    if r.get("error"):
        return "error"
    return f"{r['median_ms']:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--meta", default="")
    ap.add_argument("--reference", default="torch-cpu", help="backend the ratios are relative to")
    ap.add_argument("--title", default="cifarlab benchmark: GoMLX backends vs PyTorch CPU")
    ap.add_argument("--out", default="", help="write Markdown here")
    args = ap.parse_args()
    rows = load(args.results)
    meta = json.load(open(args.meta)) if args.meta else {}

    # Latest measurement per (backend, model, batch, mode); for the reference, the fastest one
    # (run.sh times PyTorch under both OpenMP wait policies: spinning threads collapse on a loaded
    # machine, sleeping ones cost a little on an idle one; the better of the two is PyTorch's time).
    by = {}
    for r in rows:
        k = (r["backend"], r["model"], r["batch"], r["mode"])
        old = by.get(k)
        if (r["backend"] == args.reference and old is not None and old.get("steps", 0) > 0
                and (r.get("steps", 0) == 0 or old["median_ms"] <= r["median_ms"])):
            continue
        by[k] = r
    backends = []
    for r in rows:
        if r["backend"] != args.reference and r["backend"] not in backends:
            backends.append(r["backend"])
    keys = []
    for r in rows:
        k = (r["model"], r["batch"], r["mode"])
        if k not in keys:
            keys.append(k)
    order = {"cnn": 0, "resnet20": 1, "resnet18": 2}
    keys.sort(key=lambda k: (order.get(k[0], 9), k[0], k[1], k[2] != "train"))

    def measured(r):
        return r is not None and not r.get("skipped") and not r.get("error") and r.get("steps", 0) > 0

    def ratio(b, k):
        r, ref = by.get((b,) + k), by.get((args.reference,) + k)
        if not measured(r) or not measured(ref):
            return None
        return r["median_ms"] / ref["median_ms"]

    head = ["model", "batch", "mode", f"{args.reference} ms"]
    for b in backends:
        head += [f"{b} ms", f"{b} / {args.reference}"]
    table = []
    for k in keys:
        line = [k[0], str(k[1]), k[2], fmt_ms(by.get((args.reference,) + k))]
        for b in backends:
            q = ratio(b, k)
            line += [fmt_ms(by.get((b,) + k)), f"{q:.2f}x" if q is not None else "-"]
        table.append(line)

    widths = [max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(head)]
    text = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    text += ["  ".join(c.rjust(w) for c, w in zip(t, widths)) for t in table]

    verdicts = []
    for b, model, mode, limit, label in TARGETS:
        for k in keys:
            if k[0] == model and k[2] == mode:
                q = ratio(b, k)
                if q is not None:
                    ok = "met" if q <= limit else f"MISSED by {q / limit:.2f}x"
                    verdicts.append(f"{label}, batch {k[1]}: {q:.2f}x -> {ok}")

    print("\n".join(text))
    for v in verdicts:
        print("target:", v)

    if args.out:
        md = [f"# {args.title}", ""]
        if meta:
            md.append("| | |")
            md.append("|---|---|")
            for key in ["date", "machine", "cpu", "cores", "memory", "threads", "load_before", "load_during", "load_after",
                        "go", "gomlx", "go_xla", "xla_cpu_plugin", "torch", "python", "gpu", "command"]:
                if meta.get(key):
                    md.append(f"| {key.replace('_', ' ')} | {str(meta[key]).replace('|', '/')} |")
            md.append("")
        md.append("Median wall time of one step in milliseconds (warm-up/compilation excluded); ratio = GoMLX time / "
                  f"{args.reference} time (lower is better, 1.00x = as fast as PyTorch). train = forward, loss, "
                  "backward and a plain SGD update; infer = forward pass in inference mode.")
        md.append("")
        md.append("| " + " | ".join(head) + " |")
        md.append("|" + "|".join("---:" if i > 2 else "---" for i in range(len(head))) + "|")
        for t in table:
            md.append("| " + " | ".join(t) + " |")
        md.append("")
        if verdicts:
            md.append("Targets (issue 8):")
            md.append("")
            md += [f"- {v}" for v in verdicts]
            md.append("")
        notes = [r for r in rows if r.get("skipped") or r.get("error")]
        if notes:
            md.append("Skipped or failed:")
            md.append("")
            seen = set()
            for r in notes:
                msg = r.get("skipped") or ("error: " + r["error"])
                key = (r["backend"], r["model"], r["batch"], msg)
                if key not in seen:
                    seen.add(key)
                    md.append(f"- {r['backend']} {r['model']} batch {r['batch']}: {msg}")
            md.append("")
        md.append("Steps timed per measurement and first-step (compile) times are in the raw results, one JSON line "
                  "per measurement (bench/out/results.jsonl when run by bench/run.sh). Where the time goes and why "
                  "the targets are missed: bench/README.md, \"Findings\".")
        if meta.get("notes"):
            md += ["", meta["notes"]]
        with open(args.out, "w") as f:
            f.write("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
