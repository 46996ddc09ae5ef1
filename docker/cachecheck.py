#!/usr/bin/env python3
"""What a run of notebook 01 did with the compile cache (docs/compile-cache.md): its training cell's
timeline says, per program, `loaded PROGRAM from the cache S s` or `compile PROGRAM S s`.

    cachecheck.py EXECUTED.ipynb [--expect=loaded|compiled]

checks the executed notebook (docker/test.sh: the image's shared layer must serve its training
cell: every program loaded, none compiled), and prints what the cell did. docker/hub/loadtest.py
uses training_cell() on the outputs it collects over the kernel's websocket. Standard library only.
"""

import json
import re
import sys

# A timeline entry: "loaded train step from the cache 0.05 s", "loaded evaluation from the cache
# (validation) 0.01 s", "compile evaluation (validation) 0.3 s".
LOADED = re.compile(r"^loaded (.+?) from the cache( \(.+\))? ([0-9.]+) s$")
COMPILED = re.compile(r"^compile (.+) ([0-9.]+) s$")
# The cell's own line: run "01-unguarded": trained 150 steps in 5.8s (...)
TRAINED = re.compile(r'run "[^"]+": trained \d+ steps in ([0-9.]+)s')


def output_text(outputs):
    """Everything a cell's outputs say as text: streams, and text/plain of displays and results."""
    parts = []
    for o in outputs:
        if o.get("output_type") == "stream":
            parts.append(o.get("text", ""))
        else:
            plain = o.get("data", {}).get("text/plain", "")
            parts.append(plain)
    return "\n".join("".join(p) if isinstance(p, list) else p for p in parts)


def training_cell(outputs):
    """What a training cell's timeline says of its programs, from the cell's outputs: None when
    the cell printed no timeline, else {"loaded": {program: s}, "compiled": {program: s}, "trained": s}."""
    text = output_text(outputs)
    line = next((ln for ln in text.splitlines() if ln.startswith("timeline: ")), None)
    if line is None:
        return None
    got = {"loaded": {}, "compiled": {}, "trained": None}
    for entry in line.removeprefix("timeline: ").split(" · "):
        entry = entry.strip()
        if m := LOADED.match(entry):
            got["loaded"][m.group(1) + (m.group(2) or "")] = float(m.group(3))
        elif m := COMPILED.match(entry):
            got["compiled"][m.group(1)] = float(m.group(2))
    if m := TRAINED.search(text):
        got["trained"] = float(m.group(1))
    return got


def problems(got, expect="loaded"):
    """Why a training cell's programs were not what expect says: "loaded" (every program from the
    cache, the train step among them, none compiled) or "compiled" (none from the cache)."""
    if got is None:
        return ["no training cell with a timeline (\"timeline: ...\") in the notebook's outputs"]
    if expect == "loaded":
        out = []
        if got["compiled"]:
            out.append("it compiled " + ", ".join(f"{p} ({s:g} s)" for p, s in got["compiled"].items()))
        if "train step" not in got["loaded"]:
            out.append("its timeline does not say `loaded train step from the cache`")
        return out
    if got["loaded"] or not got["compiled"]:
        return [f"expected every program compiled, none loaded: loaded {sorted(got['loaded'])}, compiled {sorted(got['compiled'])}"]
    return []


def describe(got):
    """One line for people: what the cell loaded and compiled, and how long it trained."""
    def part(kind, progs):
        return f"{kind} {len(progs)} programs in {sum(progs.values()):.2f} s ({', '.join(progs)})" if progs else f"{kind} none"
    trained = f"; trained in {got['trained']:g} s" if got.get("trained") is not None else ""
    return f"{part('loaded from the cache', got['loaded'])}; {part('compiled', got['compiled'])}{trained}"


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--expect=")]
    expect = next((a.split("=", 1)[1] for a in argv[1:] if a.startswith("--expect=")), "loaded")
    if len(args) != 1 or expect not in ("loaded", "compiled"):
        print(__doc__, file=sys.stderr)
        return 2
    nb = json.load(open(args[0]))
    got = None
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code" and (got := training_cell(cell.get("outputs", []))) is not None:
            break
    bad = problems(got, expect)
    if bad:
        print(f"cachecheck: {args[0]}: the training cell's programs were not {expect}: " + "; ".join(bad), file=sys.stderr)
        return 1
    print(f"the training cell {describe(got)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
