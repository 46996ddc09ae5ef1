#!/usr/bin/env python3
"""Find the float spread of cifarlib's comparisons before CI does.

Runs the float-comparison tests on XLA's CPU plugin under settings that change how it
rounds (vector width, thread count, device count) and which weights are drawn (seeds, since
another draw puts other pre-activations near a ReLU kink), collects every "spread:" line the
tests log (cifarlib/numbers_test.go: "spread: TEST/WHAT MEASURED <= TOLERANCE") and prints,
per comparison, the largest spread over all settings next to its tolerance.

Usage (from the repository root, after kernel/setup.sh):
    .venv/bin/python bench/spread.py [--quick] [--write bench/RESULTS-spread.md]

--quick runs the default setting only. A setting's test failure is reported (its spread lines
still count) and makes the exit status 1. Standard library only.
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import re
import subprocess
import sys
import time

# The comparisons of two computations of one function (the rest of the suite compares exact
# values or algebraic identities).
TESTS = (
    "^(TestXLACPUMatchesGo|TestIm2colConvolutionMatchesConvolve|TestMaxPool2x2MatchesMaxPool|"
    "TestLayerOpsShareVariables|TestLayerOpsSameGradients|TestDevicesSameAsOneDevice|"
    "TestDevicesCheckpoints|TestDevicesLossOnLastShard)$"
)

# name, extra environment, command prefix. XLA_FLAGS change the CPU code XLA generates;
# taskset + GOMAXPROCS=1 give XLA's intra-op thread pool one core (it sizes itself from the
# process's CPU affinity), so its reductions are split differently.
SETTINGS = [
    ("default", {}, []),
    ("isa AVX2", {"XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}, []),
    ("isa SSE4_2", {"XLA_FLAGS": "--xla_cpu_max_isa=SSE4_2"}, []),
    ("one core", {"GOMAXPROCS": "1"}, ["taskset", "-c", "0"]),
    ("8 devices", {"CIFARLAB_SPREAD_DEVICES": "8"}, []),
    ("seed 6", {"CIFARLAB_SPREAD_SEED": "6"}, []),
    ("seed 9", {"CIFARLAB_SPREAD_SEED": "9"}, []),
]

SPREAD_RE = re.compile(r"spread: (\S+) (\S+) <= (\S+)")


def normalise(name: str) -> str:
    """A comparison's name without what varies by setting: the worst variable's path."""
    name = re.sub(r"/variables_/\S+$", "/variables", name)
    name = re.sub(r"/gradient_/\S+$", "/gradient", name)
    return name


def run_setting(repo: str, plugin: str, env_extra: dict, prefix: list) -> tuple[int, str, float]:
    env = dict(os.environ)
    env.update({"GOMLX_BACKEND": "xla:" + plugin, "CIFARLAB_REQUIRE_XLA_CPU": "1", "GOMLX_NO_AUTO_INSTALL": "1"})
    env.update(env_extra)
    cmd = prefix + ["go", "test", "-count=1", "-timeout", "30m", "-v", "-run", TESTS, "./cifarlib"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the default setting only")
    ap.add_argument("--write", metavar="FILE", help="write the Markdown report there")
    args = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    plugins = sorted(glob.glob(os.path.join(repo, ".venv/lib/python3*/site-packages/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so")))
    if not plugins:
        sys.stderr.write("spread.py: the XLA CPU plugin is not in .venv: run kernel/setup.sh first\n")
        return 2
    settings = SETTINGS[:1] if args.quick else SETTINGS
    worst: dict[str, tuple[float, float, str]] = {}
    failed = []
    for name, env_extra, prefix in settings:
        rc, out, secs = run_setting(repo, plugins[-1], env_extra, prefix)
        lines = SPREAD_RE.findall(out)
        print(f"{name}: {len(lines)} comparisons, exit {rc}, {secs:.0f} s", flush=True)
        if rc != 0 or not lines:
            failed.append(name)
            sys.stdout.write("\n".join(l for l in out.splitlines() if "FAIL" in l or "Error" in l) + "\n")
        for test, measured, tol in lines:
            key, m, t = normalise(test), float(measured), float(tol)
            if key not in worst or m / t > worst[key][0] / worst[key][1]:
                worst[key] = (m, t, name)
    rows = ["| comparison | largest spread | tolerance | spread/tolerance | where |", "|---|---:|---:|---:|---|"]
    for key in sorted(worst):
        m, t, where = worst[key]
        rows.append(f"| `{key}` | {m:.3g} | {t:.3g} | {m / t:.2g} | {where} |")
    table = "\n".join(rows)
    print(table)
    if args.write:
        cpu = "unknown CPU"
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
        except (OSError, StopIteration):
            pass
        flags = ""
        try:
            with open("/proc/cpuinfo") as f:
                have = next(l for l in f if l.startswith("flags")).split()
            flags = ", ".join(x for x in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if x in have)
        except (OSError, StopIteration):
            pass
        text = (
            "# Float spread of cifarlib's comparisons (bench/spread.py)\n\n"
            f"Machine: {cpu} ({flags}), {os.cpu_count()} cores, {platform.system()}; "
            f"{time.strftime('%Y-%m-%d', time.gmtime())}. XLA CPU plugin: lammps-jax-pjrt-cpu from `.venv`.\n\n"
            "Settings: " + "; ".join(f"{n} ({' '.join(p + [f'{k}={v}' for k, v in e.items()]) or 'as CI runs'})" for n, e, p in settings) + ".\n"
            + (f"\nFailed settings: {', '.join(failed)}.\n" if failed else "")
            + "\nEach row is the largest spread a comparison showed over the settings, next to its tolerance "
            "(the derivations are in cifarlib/numbers_test.go and at each test). For variables and "
            "gradients the spread is normwise: ||got-want|| / ||want|| (or / ||update|| for trained weights).\n\n"
            + table + "\n"
        )
        tmp = args.write + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.write)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
