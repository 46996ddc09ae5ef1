"""Which data a notebook's outputs come from: its metadata names it, and its expectations may
depend on it.

A notebook says which datasets its cells read in its metadata, "cifarlab": {"datasets":
["cifar100"]}. After a run, nbcheck.py asks `cifarlab verify --status --json` what the data
folder ($CIFARLAB_DATA, as the cells read it) holds for each, and writes the answer into the
metadata, one line per dataset, without the folder's path:

    "cifarlab": {"data": ["cifar10: real, unverified (binary layout, 20000 train / 10000 test images)"]}

so that a committed notebook says which data its outputs are from, and --check-only knows it.

An expectation whose numbers hold on one kind of data only says so with "data":

    {"regex": "test accuracy ([0-9.]+)%", "min": 30, "data": "synthetic"}
    {"regex": "test accuracy ([0-9.]+)%", "min": 2, "data": "real"}
    {"regex": "CIFAR-10 run: .*accuracy ([0-9.]+)%", "min": 20, "data": "cifar10:real"}

"synthetic" and "real" hold when every dataset of the notebook is of that kind (real: verified
or not); "DATASET:KIND" when that dataset is. An expectation without "data" holds on any data.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

META_KEY = "cifarlab"
SYNTHETIC, REAL = "synthetic", "real"
REAL_KINDS = ("real, verified", "real, unverified")


def cifarlab_binary(checkout: str) -> str:
    return os.path.join(checkout, ".bin", "cifarlab")


def data_status(checkout: str, datasets: list[str], data_dir: str | None = None) -> list[dict[str, Any]]:
    """What the data folder (data_dir, else $CIFARLAB_DATA as the cells read it) holds for each
    of datasets: `cifarlab verify --status --json`'s entries. Raises RuntimeError with what to
    do when the cifarlab command is missing or fails."""
    binary = cifarlab_binary(checkout)
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"{binary} not found: run kernel/setup.sh (it builds the cifarlab command)")
    out = []
    for dataset in datasets:
        cmd = [binary, "verify", "--status", "--json", "--dataset", dataset]
        if data_dir:
            cmd += ["--data", data_dir]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {res.stderr.strip() or res.stdout.strip()}")
        out.extend(json.loads(res.stdout))
    return out


def datasets_of(nb: Any) -> list[str]:
    return list(nb.metadata.get(META_KEY, {}).get("datasets", []))


def kinds_from_lines(lines: list[str]) -> dict[str, str]:
    """The kind of each dataset named by the metadata's data lines: "synthetic", "real" or
    "none" (what the line says after "DATASET: ")."""
    kinds = {}
    for line in lines:
        dataset, _, rest = line.partition(": ")
        if rest.startswith(REAL_KINDS):
            kinds[dataset] = REAL
        elif rest.startswith(SYNTHETIC):
            kinds[dataset] = SYNTHETIC
        else:
            kinds[dataset] = "none"
    return kinds


def kinds_of(nb: Any) -> dict[str, str] | None:
    """The kinds of the notebook's data, from its metadata; None when it names none."""
    lines = nb.metadata.get(META_KEY, {}).get("data")
    return kinds_from_lines(lines) if lines else None


def applies(exp: Any, kinds: dict[str, str] | None) -> tuple[bool, str | None]:
    """Whether expectation exp holds on data of these kinds, and a problem when its "data" is
    not understood or the kinds are not known."""
    if not isinstance(exp, dict) or "data" not in exp:
        return True, None
    want = exp["data"]
    if not isinstance(want, str) or want.count(":") > 1:
        return False, f'bad "data" in expectation {exp!r}: want "synthetic", "real" or "DATASET:KIND"'
    if kinds is None:
        return False, (f"expectation {exp!r} depends on the data, but the notebook does not say which data it ran on "
                       '(its metadata "cifarlab": {"data": [...]}, which nbcheck.py writes after a run)')
    dataset, _, kind = want.rpartition(":")
    if kind not in (SYNTHETIC, REAL):
        return False, f'bad "data" in expectation {exp!r}: the kind is "synthetic" or "real"'
    if dataset:
        if dataset not in kinds:
            return False, f"expectation {exp!r} names {dataset}, which the notebook's data does not: {sorted(kinds)}"
        return kinds[dataset] == kind, None
    return bool(kinds) and all(k == kind for k in kinds.values()), None
