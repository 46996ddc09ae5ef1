"""bench/RESULTS-recipe.md from bench/recipe/run.sh's results (stdlib only).

Reads, for each seed S of --seeds, OUT/airbench-eE-sS.json (bench/recipe/airbench_cpu.py) and
OUT/lab-eE-sS/ (result.json: `cifarlab train --json`; run/run.json with its timeline;
run/history.json with the validation after each epoch; meta.json: load and the command), and
writes the comparison: test accuracy with and without TTA (mean +- sample std over the seeds), the
difference and whether it is within 1 point, time per epoch, the machine and the data. Where
OUT holds abdata-eE-sS.json and abstream-eE-sS.json (airbench_cpu.py --data-seed, --replay), it
adds the data streams compared with airbench's code and initial weights held fixed.

With --full it writes only the full-size section (the published recipe, 9.9 epochs of all
50,000 training images): both means against the 0.3-point target, each seed, the time per epoch at
the steady pace and the whole run, into --md between its markers (the rest of the file is kept;
a report without --full keeps that section in turn). It refuses results that ran on fewer images.

    python3 bench/recipe/report.py --out-dir bench/out/recipe --epochs 2 --seeds "0 1 2" \
        --data /work/c10real --md bench/RESULTS-recipe.md
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

NS = 1e-9


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return "?"


def mean_std(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None, 0
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else float("nan")), len(xs)


def pct(m, s, n):
    if m is None:
        return "n/a"
    return f"{100 * m:.2f} +- {100 * s:.2f} (n={n})" if not math.isnan(s) else f"{100 * m:.2f} (n={n})"


def secs(m, s, n):
    if m is None:
        return "n/a"
    return f"{m:.1f} +- {s:.1f}" if n > 1 and not math.isnan(s) else f"{m:.1f}"


# Student's t, 97.5th percentile, for 1-30 degrees of freedom (standard tables).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    """The two-sided 95% quantile of Student's t with df degrees of freedom (df may be fractional,
    as Welch's is: rounded down, which widens the interval); beyond 30, 1.96 + 2.4/df, within
    0.002 of the table at 40, 60 and 120."""
    df = max(1, int(df))
    return T975[df - 1] if df <= 30 else 1.96 + 2.4 / df


def airbench_side(path):
    d = json.load(open(path))
    epochs = d["epochs_log"]
    return {
        "val_acc": d["val_acc"],
        "tta_val_acc": d["tta_val_acc"],
        "epoch_s": sum(e["train_time_s"] for e in epochs) / d["epochs"],
        "epoch_times": [e["train_time_s"] for e in epochs],
        "val_eval_s": statistics.fmean(ts) if (ts := [e["eval_time_s"] for e in epochs if e["eval_time_s"] is not None]) else None,
        "note": d.get("source"),
        "tta_eval_s": d["tta_eval_time_s"],
        "setup_s": d["whiten_init_s"],
        "compile_s": None,
        "warmup_s": d.get("warmup_s"),
        "time_to_acc_s": d["total_time_seconds"],
        # the steady pace, as the lab's Result.EpochTime: the steps after the first epoch, per step, times an epoch's steps
        "steady_epoch_s": (sum(e["train_time_s"] for e in epochs[1:]) / (d["total_steps"] - d["steps_per_epoch"]) * d["steps_per_epoch"]
                           if d["total_steps"] > d["steps_per_epoch"] else None),
        "wall_s": d.get("wall_s"),
        "per_epoch_val": [e["val_acc"] for e in epochs],
        "total_steps": d["total_steps"],
        "load": (d["load_before"][0], d["load_after"][0]),
        "train_images": d.get("train_images"),
        "test_images": d.get("test_images"),
        "steps_per_epoch": d.get("steps_per_epoch"),
        "gpu": d.get("gpu"),
        "torch": d["torch"],
        "threads": d["threads"],
    }


def lab_side(folder, epochs):
    res = json.load(open(os.path.join(folder, "result.json")))
    run = json.load(open(os.path.join(folder, "run", "run.json")))
    hist = json.load(open(os.path.join(folder, "run", "history.json")))
    meta = json.load(open(os.path.join(folder, "meta.json")))
    tl = run.get("timeline") or {}
    ev = tl.get("events", [])

    def total(phase, program=None):
        return sum(e["duration_ns"] for e in ev if e["phase"] == phase and (program is None or e.get("program") == program)) * NS

    steps = res["end_step"] - res["start_step"]
    train_s = total("first_step") + total("steps")
    vals = [(p["step"], p["eval"]["accuracy"]) for p in hist.get("points", []) if p.get("eval") and p["eval"].get("examples", 0) >= 10000 - 1]
    vals_all = [(p["step"], p["eval"]) for p in hist.get("points", []) if p.get("eval")]
    last_val = vals_all[-1][1]["accuracy"] if vals_all and vals_all[-1][0] == res["end_step"] else None
    validations = [e["duration_ns"] * NS for e in ev if e["phase"] == "validation"]
    return {
        "val_acc": last_val,
        "tta_val_acc": res["eval"]["accuracy"],
        "tta_level": res["eval"].get("tta"),
        "epoch_s": train_s / epochs if steps else None,
        "epoch_times": [],
        "val_eval_s": statistics.fmean(validations) if validations else None,
        "tta_eval_s": total("eval"),
        "setup_s": total("backend") + total("data"),
        "compile_s": total("compile"),
        "compile_train_s": total("compile", "train step"),
        "warmup_s": total("backend") + total("compile"),
        "time_to_acc_s": train_s + total("eval"),
        "per_epoch_val": [a for _, a in vals],
        "total_steps": steps,
        "load": tuple(float(meta[k].split()[0]) for k in ("load_before", "load_after")),
        # Result.EpochTime: the steps after the first, per step, times an epoch's steps
        "steady_epoch_s": (total("steps") / n * (res["data"]["train_images"] // res["batch_size"])
                           if (n := sum(e.get("count", 0) for e in ev if e["phase"] == "steps")) else None),
        "train_images": res["data"].get("train_images"),
        "test_images": res["data"].get("test_images"),
        "subset": res["data"].get("subset"),
        "commit": meta.get("commit"),
        "backend": res.get("backend"),
        "precision": res.get("precision"),
        "command": meta.get("command"),
        "wall_s": run.get("wall_time_ns", 0) * NS,
    }


def streams_section(out_dir, epochs, seeds, ab):
    """The data streams, with the code and the initial weights held fixed: airbench's code from its
    own initialisation for seed S, trained on its own stream for S (airbench-eE-sS), on another of
    its own streams (abdata-eE-sS: --data-seed 1000+S) and on the lab's stream for S (abstream-eE-sS:
    --replay of bench/recipe/labstream). Empty when no abstream or abdata result is there."""
    rows, other, lab, lab_other = [], [], [], []

    def acc(name, s):
        p = os.path.join(out_dir, f"{name}-e{epochs}-s{s}.json")
        return json.load(open(p))["val_acc"] if os.path.exists(p) else None
    extra = sorted({f.split("-s")[-1][:-5] for f in os.listdir(out_dir)
                    if f.startswith(("abstream-", "abdata-")) and f.endswith(".json")}, key=int)
    for s in extra:
        a = ab[s]["val_acc"] if s in ab else acc("airbench", s)
        d, l = acc("abdata", s), acc("abstream", s)
        if a is None:
            continue
        f = lambda x: "" if x is None else f"{100 * x:.2f}"
        rows.append(f"| {s} | {f(a)} | {f(d)} | {f(l)} |")
        if d is not None:
            other.append((a, d))
        if l is not None:
            lab.append((a, l))
        if l is not None and d is not None:
            lab_other.append((d, l))
    if not rows:
        return []

    def paired(pairs, what):
        """pairs: (a, b) per seed; what: "b minus a"."""
        if len(pairs) < 2:
            return f"- {what}: {len(pairs)} seed(s), too few for a spread."
        diffs = [100 * (b - a) for a, b in pairs]
        m, sd = statistics.fmean(diffs), statistics.stdev(diffs)
        se, t = sd / math.sqrt(len(diffs)), t975(len(diffs) - 1)
        return (f"- {what}: {m:+.2f} points over {len(diffs)} seeds (standard error {se:.2f}; "
                f"95% interval {m - t * se:+.2f} to {m + t * se:+.2f}, Student's t); means "
                f"{100 * statistics.fmean(b for _, b in pairs):.2f} and {100 * statistics.fmean(a for a, _ in pairs):.2f}.")
    return ["", "## The data streams, with airbench's code and initial weights held fixed", "",
            "Test accuracy without TTA (%) of airbench's own `train()` from its own initialisation for seed S "
            "(`make_net94` drawn from `torch.manual_seed(S)`), trained on three streams of batches: its own for seed S; "
            "another of its own (`--data-seed 1000+S`: the flips, shifts and shuffles drawn from another seed after the "
            "network is made); and the lab's for seed S (`--replay`: the batches `cifarlab train --recipe airbench94 "
            "--seed S` trains on, written by `bench/recipe/labstream`). Only the stream changes along a row.", "",
            "| seed S | its own stream | another of its own | the lab's stream |", "|---|---:|---:|---:|"] + rows + \
        ["", paired(other, "another of airbench's own streams minus its own"),
         paired(lab, "the lab's stream minus airbench's own"),
         paired(lab_other, "the lab's stream minus another of airbench's own")]


FULL_BEGIN = "<!-- full size: begin (bench/recipe/report.py --full writes this section; a report without --full keeps it) -->"
FULL_END = "<!-- full size: end -->"


def splice(text, section):
    """text with its full-size section replaced by section (markers included), or with section put
    after its title when it has none; section "" removes nothing and adds nothing."""
    if FULL_BEGIN in text and FULL_END in text:
        head, rest = text.split(FULL_BEGIN, 1)
        return head + section + rest.split(FULL_END, 1)[1]
    if not section:
        return text
    title, _, body = text.partition("\n\n")
    return title + "\n\n" + section + "\n\n" + body


def kept_section(path):
    """The full-size section of the file at path, markers included ("" when none)."""
    if not path or not os.path.exists(path):
        return ""
    text = open(path).read()
    if FULL_BEGIN not in text or FULL_END not in text:
        return ""
    return FULL_BEGIN + text.split(FULL_BEGIN, 1)[1].split(FULL_END, 1)[0] + FULL_END


def full_section(args, seeds, ab, lab, missing):
    """The full-size section: the published recipe on all 50,000 training images. Exits naming
    the result that ran on fewer (a subset is never reported as full size)."""
    for name, side in (("airbench", ab), ("lab", lab)):
        for s, v in side.items():
            if (v.get("train_images"), v.get("test_images")) != (50000, 10000) or v.get("subset"):
                sys.exit(f"report.py --full: {name} seed {s} ran on {v.get('train_images')} training and "
                         f"{v.get('test_images')} test images ({v.get('subset') or 'not the whole CIFAR-10'}), not all "
                         f"50,000 and 10,000: it is no full-size result; run it on the whole data set (FULL=1 bench/recipe/run.sh)")
    f = lambda x: "n/a" if x is None else f"{100 * x:.2f}"
    t = lambda x: "n/a" if x is None else f"{x:.1f}"
    stats = {k: (mean_std([ab[s][k] for s in ab]), mean_std([lab[s][k] for s in lab]))
             for k in ("val_acc", "tta_val_acc", "steady_epoch_s", "epoch_s", "wall_s")}
    rows = [("test accuracy, no TTA (%)", "val_acc", pct), ("test accuracy, TTA level 2 (%)", "tta_val_acc", pct),
            ("time per epoch at the steady pace (s)", "steady_epoch_s", secs),
            ("time per epoch, all training steps (s)", "epoch_s", secs), ("whole run (s)", "wall_s", secs)]
    any_ab, any_lab = next(iter(ab.values()), {}), next(iter(lab.values()), {})
    lines = [FULL_BEGIN, "## Full size: the published recipe, 9.9 epochs of all 50,000 training images", "",
             f"Real CIFAR-10, all 50,000 training and 10,000 test images (`{args.data}`, written by `bench/cifar10jpeg` from the "
             "JPEG mirror; its pixels are the 20k subset's for the images they share), airbench94 as published: 9.9 epochs "
             f"({any_ab.get('total_steps', '?')} steps of 1024), TTA level 2 for the final evaluation, seeds {', '.join(seeds)}; "
             "the lab's `cifarlab train --recipe airbench94` against airbench 0.1.8's own `train()` on the CPU in f32 "
             "(issue 48, item 1). The target: the lab's mean within 0.3 points of airbench's.", "",
             "| | airbench 0.1.8 (PyTorch CPU, f32) | the lab (XLA CPU, f32) |", "|---|---:|---:|"]
    for what, key, fmt in rows:
        lines.append(f"| {what} | {fmt(*stats[key][0])} | {fmt(*stats[key][1])} |")
    lines += ["", "Mean +- sample standard deviation over the seeds. Time per epoch at the steady pace is the lab's "
              "`Result.EpochTime()` (the steps after the first, per step, times the 48 steps of an epoch; no compile, no "
              "evaluation) and airbench's measured the same way from its own per-epoch timer (the epochs after the first, per "
              "step, times 48); all training steps is each side's whole training time over 9.9 epochs. The whole run is "
              "airbench's `train()` from start to end (whitening, training, per-epoch evaluations, the final TTA "
              "evaluation) and the lab's run wall time (the same parts, plus the backend, data loading and XLA compiles).", ""]
    for key, what in (("val_acc", "without TTA"), ("tta_val_acc", "with TTA")):
        (ma, sa, na), (mb, sb, nb) = stats[key]
        if ma is None or mb is None:
            lines.append(f"- {what}: not measured on both sides yet.")
            continue
        d = 100 * (mb - ma)
        ok = "within 0.3 points: the target is met" if abs(d) <= 0.3 else "MORE than 0.3 points apart: the target is missed"
        ci = ""
        if na > 1 and nb > 1:
            va, vb = (100 * sa) ** 2 / na, (100 * sb) ** 2 / nb
            df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
            se = math.sqrt(va + vb)
            ci = f" (standard error {se:.2f}; 95% interval {d - t975(df) * se:+.2f} to {d + t975(df) * se:+.2f}, Welch's t on {df:.0f} degrees of freedom)"
        lines.append(f"- {what}: lab - airbench = {d:+.2f} points{ci}, {na} airbench and {nb} lab seeds: {ok}.")
    (ea, _, _), (el, _, _) = stats["steady_epoch_s"]
    if ea and el:
        lines.append(f"- time per epoch at the steady pace: the lab takes {el / ea:.2f}x airbench's (the loads differ: see each seed).")
    lines += ["", "| seed | side | no TTA | TTA | per-epoch validation | s/epoch, steady | s/epoch, all steps | whole run (s) | "
              "load (1 min) before, after | code |", "|---|---|---:|---:|---|---:|---:|---:|---|---|"]
    for s in seeds:
        for name, side in (("airbench", ab), ("lab", lab)):
            if s not in side:
                lines.append(f"| {s} | {name} | missing | | | | | | | |")
                continue
            v = side[s]
            code = f"torch {v['torch']}" if name == "airbench" else f"cifarlab {v.get('commit') or '?'}, {v.get('backend')}"
            lines.append(f"| {s} | {name} | {f(v['val_acc'])} | {f(v['tta_val_acc'])} | {', '.join(f(x) for x in v['per_epoch_val'])} | "
                         f"{t(v['steady_epoch_s'])} | {t(v['epoch_s'])} | {t(v['wall_s'])} | {v['load'][0]:.1f}, {v['load'][1]:.1f} | {code} |")
    if missing:
        lines += ["", "Missing results: " + ", ".join(f"`{m}`" for m in missing)]
    cpu = sh("lscpu | sed -n 's/^Model name: *//p' | head -1")
    lines += ["", f"Machine: {cpu}, {os.cpu_count()} cores, shared with other engineers' work: the load average (1 min) is each "
              "seed's before and after; the seeds ran one at a time under `nice`, so the times are upper bounds and their ratio "
              f"approximate. airbench: torch {any_ab.get('torch', '?')}, {any_ab.get('threads', '?')} threads. The lab: "
              f"{any_lab.get('backend', '?')}, precision {any_lab.get('precision', '?')}.", "",
              "```",
              f"FULL=1 NICE=15 EPOCHS=9.9 SEEDS=S SIDES=airbench DATA={args.data} OUT=/work/runs/full RESULTS= bash bench/recipe/run.sh",
              f"FULL=1 NICE=15 EPOCHS=9.9 SEEDS=S SIDES=lab DATA={args.data} OUT=/work/runs/full RESULTS= bash bench/recipe/run.sh",
              f"python3 bench/recipe/report.py --full --out-dir /work/runs/full --epochs 9.9 --seeds \"{args.seeds}\" --data {args.data} --md bench/RESULTS-recipe.md",
              "```", FULL_END]
    return "\n".join(lines)


def write_md(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--epochs", required=True)
    ap.add_argument("--seeds", required=True)
    ap.add_argument("--data", default="/work/c10real")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--notes", help="a Markdown file appended as it is (findings written after reading the results)")
    ap.add_argument("--md")
    ap.add_argument("--full", action="store_true", help="write only the full-size section into --md (see the header)")
    ap.add_argument("--time-seeds", help="the seeds whose times enter the time rows, e.g. those run alone on a quiet "
                    "machine (default: all); the per-seed table shows every seed's time and load")
    args = ap.parse_args()
    epochs = float(args.epochs)
    seeds = args.seeds.split()
    ab, lab, missing = {}, {}, []
    for s in seeds:
        p = os.path.join(args.out_dir, f"airbench-e{args.epochs}-s{s}.json")
        if os.path.exists(p):
            ab[s] = airbench_side(p)
        else:
            missing.append(p)
        f = os.path.join(args.out_dir, f"lab-e{args.epochs}-s{s}")
        if os.path.exists(os.path.join(f, "result.json")):
            lab[s] = lab_side(f, epochs)
        else:
            missing.append(f + "/result.json")

    if args.full:
        section = full_section(args, seeds, ab, lab, missing)
        if args.md:
            write_md(args.md, splice(open(args.md).read() if os.path.exists(args.md) else "# The airbench94 recipe\n\n", section))
        print(section)
        return

    time_seeds = set(args.time_seeds.split()) if args.time_seeds else set(seeds)
    timing_keys = {"epoch_s", "val_eval_s", "tta_eval_s", "compile_s", "time_to_acc_s", "warmup_s"}

    def stat(side, key):
        return mean_std([side[s][key] for s in side if key not in timing_keys or s in time_seeds])

    rows = []
    keys = [("val_acc", "test accuracy, no TTA (%)", pct), ("tta_val_acc", "test accuracy, TTA level 2 (%)", pct)]
    if args.device == "cuda":
        keys += [("time_to_acc_s", "time to the final accuracy (s): whitening, training, final TTA evaluation", secs),
                 ("warmup_s", "warm-up apart (s): airbench's warm-up run; the lab's backend and XLA compiles", secs)]
    keys += [("epoch_s", "training time per epoch (s)", secs), ("val_eval_s", "evaluation of the test split, no TTA (s)", secs),
             ("tta_eval_s", "final evaluation with TTA (s)", secs), ("compile_s", "XLA compiles, all programs (s)", secs)]
    for key, what, fmt in keys:
        a, b = stat(ab, key), stat(lab, key)
        rows.append((what, fmt(*a), fmt(*b), a, b))

    verdict = []
    for key, what in (("val_acc", "without TTA"), ("tta_val_acc", "with TTA")):
        (ma, sa, na), (mb, sb, nb) = stat(ab, key), stat(lab, key)
        if ma is None or mb is None:
            verdict.append(f"- {what}: not measured on both sides yet.")
            continue
        d = 100 * (mb - ma)
        se = 100 * math.sqrt((sa ** 2 if na > 1 else 0) / na + (sb ** 2 if nb > 1 else 0) / nb)
        ok = "within 1 point" if abs(d) <= 1 else ("the lab is LOWER by more than 1 point" if d < 0 else "the lab is higher by more than 1 point")
        se_what = "standard error of the difference" if na > 1 and nb > 1 else \
            f"standard error from {'airbench' if na > 1 else 'the lab'}'s seeds only: the other side has one"
        ci = ""
        if na > 1 and nb > 1:
            # Welch: the two sides' spreads may differ; Welch-Satterthwaite degrees of freedom.
            va, vb = (100 * sa) ** 2 / na, (100 * sb) ** 2 / nb
            df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
            t = t975(df)
            ci = f"; 95% interval {d - t * se:+.2f} to {d + t * se:+.2f}, Welch's t on {df:.0f} degrees of freedom"
        verdict.append(f"- {what}: lab - airbench = {d:+.2f} points ({se_what}, {se:.2f}{ci}; {na} airbench and {nb} lab seeds): {ok}.")
    ratio = None
    (ea, _, _), (el, _, _) = stat(ab, "epoch_s"), stat(lab, "epoch_s")
    if ea and el:
        ratio = el / ea

    cpu = sh("lscpu | sed -n 's/^Model name: *//p' | head -1")
    isa = sh("grep -m1 -o -w -E 'avx512f' /proc/cpuinfo || grep -m1 -o -w avx2 /proc/cpuinfo")
    any_ab = next(iter(ab.values()), {})
    any_lab = next(iter(lab.values()), {})
    loads = [v["load"] for v in list(ab.values()) + list(lab.values())]
    gpu = args.device == "cuda"
    ntrain, ntest = any_ab.get("train_images"), any_ab.get("test_images")
    spe = any_ab.get("steps_per_epoch")
    where = f"on the GPU ({any_ab.get('gpu') or '?'})" if gpu else "on the CPU"
    ab_head = "airbench 0.1.8 (PyTorch CUDA, fp16 as written)" if gpu else "airbench 0.1.8 (PyTorch CPU, f32)"
    lab_head = f"the lab (XLA CUDA, {any_lab.get('precision', '?')})" if gpu else "the lab (XLA CPU, f32)"
    lines = [
        f"# The airbench94 recipe: the lab against airbench's own code, {where}",
        "",
        f"## {args.epochs} epochs of {ntrain:,} training images" if ntrain else f"## {args.epochs} epochs",
        "",
        f"Real CIFAR-10, {args.epochs} epochs, seeds {', '.join(seeds)}: the lab's `cifarlab train --recipe airbench94` "
        f"against airbench 0.1.8's own `train()`, `make_net94` and `hyp` "
        + ("as written (fp16, CUDA), " if gpu else "run on the CPU in f32 ")
        + "(`bench/recipe/airbench_cpu.py`), on the same images (issue 37, item " + ("3" if gpu else "2") + ").",
        "",
        f"| | {ab_head} | {lab_head} |",
        "|---|---:|---:|",
    ]
    for what, a, b, _, _ in rows:
        lines.append(f"| {what} | {a} | {b} |")
    timed = "" if time_seeds >= set(seeds) else f" The time rows are over seeds {', '.join(sorted(time_seeds, key=int))} only (run alone; the others overlapped other work)."
    lines += ["", "Mean +- sample standard deviation over the seeds." + timed + " Time per epoch is the training steps only "
              "(airbench: its own timer around each epoch's loop; the lab: the timeline's first step and steps, "
              "compiles apart), divided by the epochs."
              + (" Time to the final accuracy is airbench's own `total_time_seconds` (whitening initialisation, "
                 "training, the final TTA evaluation; not the per-epoch evaluations), and for the lab the same parts of "
                 "its timeline (first step, steps, final evaluation), its XLA compiles reported apart with the warm-up." if gpu else ""), ""]
    lines += verdict
    if ratio:
        lines.append(f"- time per epoch: the lab takes {ratio:.2f}x airbench's.")
    lines += ["", "Per seed:", "", "| seed | side | no TTA | TTA | per-epoch validation | s/epoch | load (1 min) before, after |", "|---|---|---:|---:|---|---:|---|"]
    for s in seeds:
        for name, side in (("airbench", ab), ("lab", lab)):
            if s not in side:
                lines.append(f"| {s} | {name} | missing | | | | |")
                continue
            v = side[s]
            f = lambda x: "n/a" if x is None else f"{100 * x:.2f}"
            lines.append(f"| {s} | {name} | {f(v['val_acc'])} | {f(v['tta_val_acc'])} | "
                         f"{', '.join(f(x) for x in v['per_epoch_val'])} | {v['epoch_s']:.2f} | {v['load'][0]:.1f}, {v['load'][1]:.1f} |")
    notes = [f"- airbench seed {s}: {ab[s]['note']}." for s in seeds if s in ab and ab[s].get("note")]
    if notes:
        lines += [""] + notes
    if missing:
        lines += ["", "Missing results: " + ", ".join(f"`{m}`" for m in missing)]
    lo = min((l for p in loads for l in p), default=0)
    hi = max((l for p in loads for l in p), default=0)
    lines += ["", "## Machine and data", ""]
    if gpu:
        lines.append(f"- GPU: {any_ab.get('gpu') or '?'}; host CPU {cpu}, {os.cpu_count()} cores.")
        lines.append(f"- airbench: torch {any_ab.get('torch', '?')}, as written (fp16 network, cudnn.benchmark), after its own warm-up run.")
    else:
        lines.append(f"- CPU: {cpu} ({isa}), {os.cpu_count()} cores, shared with other work: the load average (1 min) was "
                     f"{lo:.1f}-{hi:.1f} at the start and end of these runs (per seed in the table above), so the times are upper "
                     "bounds and their ratio approximate.")
        lines.append(f"- airbench: torch {any_ab.get('torch', '?')}, {any_ab.get('threads', '?')} threads, OMP_WAIT_POLICY=PASSIVE, under nice.")
    lines.append(f"- the lab: {any_lab.get('backend', '?')}, precision {any_lab.get('precision', '?')}, under nice.")
    lines.append(f"- data: `{args.data}`: real CIFAR-10 decoded from JPEGs (not the official archive: pixel values differ slightly; "
                 "the 20k/10k real subset of ../shared/data" + (", of which the GPU stage carries the first 12,000 training and 5,000 test images" if gpu else "")
                 + f"): {ntrain} training and {ntest} test images, binary layout. airbench reads "
                 "the same images converted to its `cifar10/train.pt`/`test.pt` by `bench/recipe/cifar10_to_pt.py`.")
    if spe:
        lines.append(f"- {args.epochs} epochs of {spe} steps of 1024 images (the last partial batch of each epoch dropped, as airbench does): "
                     f"{any_ab.get('total_steps', '?')} steps. The recipe's schedules (learning-rate triangle, lookahead) are defined over "
                     "the total steps, so a shorter run is airbench94 compressed (airbench's `epochs` argument does the same); "
                     "the whitening bias trains for its 3 epochs on both sides (airbench's `whiten_bias_epochs`" + (", i.e. throughout)." if epochs <= 3 else ")."))
    lines += [
        "",
        "## Commands",
        "",
        "```",
        ("GPU_STAGES=12 bash bench/gpu.sh   # after bash bench/gpu.sh --build-recipe /work/c10real here; it runs:\n" if gpu else "")
        + f"{'DEVICE=cuda ' if gpu else ''}EPOCHS={args.epochs} SEEDS=\"{args.seeds}\" DATA={args.data} bash bench/recipe/run.sh",
        f"# airbench: python bench/recipe/cifar10_to_pt.py --data {args.data} --out SCRATCH/cifar10",
        f"#           {'' if gpu else 'OMP_WAIT_POLICY=PASSIVE '}nice python bench/recipe/airbench_cpu.py "
        + ("--device cuda --warmup" if gpu else f"--device cpu --threads {any_ab.get('threads', 2)}")
        + f" --data SCRATCH --epochs {args.epochs} --seed S --json OUT/airbench-e{args.epochs}-sS.json",
        f"# lab:      nice {any_lab.get('command', 'cifarlab train --recipe airbench94 ...')}",
        "```",
    ]
    lines += streams_section(args.out_dir, args.epochs, seeds, ab)
    if args.notes:
        lines += ["", open(args.notes).read().rstrip()]
    text = "\n".join(lines) + "\n"
    if args.md:
        write_md(args.md, splice(text, kept_section(args.md)))
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
