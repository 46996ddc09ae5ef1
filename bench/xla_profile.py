#!/usr/bin/env python3
"""Where an XLA CPU program's time goes, per HLO op: the lab's own program, profiled by XLA.

The lab runs on PyPI's lammps-jax-pjrt-cpu 0.11.2 through go-xla, which binds no profiler. This
script takes the program the lab compiles (its HLO module before optimisation, dumped by the
lab's process with XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_proto"), compiles it with
jaxlib 0.11.2's CPU client (the XLA the plugin was built from), runs it on synthetic inputs of
the module's parameter shapes and reads XLA's own per-thunk trace (--xla_cpu_enable_xprof_traceme:
one event per executed thunk, named by its HLO op). It prints each op of the optimised module
with its time per step, its share of the summed op time, what it is (a convolution's role and
shape, a dot, a loop fusion's root) and, for convolutions and dots, its GFLOP/s; then the
totals per kind. Thunks that XLA runs concurrently overlap, so the summed op time can exceed the
step's wall time; both are printed.

    XLA_FLAGS="--xla_dump_to=/tmp/d --xla_dump_hlo_as_proto --xla_dump_hlo_module_re=Trainer" \\
        cifarlab train --recipe airbench94 --steps 1 --data DATA --backend cpu --no-eval ...
    bench/.venv-jax/bin/python bench/xla_profile.py /tmp/d/module_0000.Trainer_1.before_optimizations.hlo.pb
    bench/.venv-jax/bin/python bench/xla_profile.py M.pb --xla-flags "--xla_cpu_..." --json out.json

The inputs are synthetic: floats drawn as N(0, 1/fan-in) for kernels, 1 for vectors (batch-norm
scales and variances must be positive), N(0, 1) for anything else; integers 1 (the global step)
or, for a [batch, 1] tensor, labels in [0, 10). The time of a dense program does not depend on
the values, as long as they stay finite (checked on the outputs).
"""

import argparse
import collections
import glob
import json
import os
import re
import sys
import tempfile
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hlo", help="the HLO module before optimisation, as a serialized HloModuleProto (.hlo.pb)")
    ap.add_argument("--steps", type=int, default=5, help="timed runs (wall time per step: their median)")
    ap.add_argument("--profile-steps", type=int, default=3, help="runs traced for the per-op profile")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first")
    ap.add_argument("--xla-flags", default="", help="more XLA_FLAGS for this compile (the profile flag is added)")
    ap.add_argument("--top", type=int, default=30, help="ops listed (the totals per kind cover all)")
    ap.add_argument("--batch", type=int, default=0, help="the batch size (0: the first dimension of the [B, 32, 32, 3] input)")
    ap.add_argument("--num-classes", type=int, default=10, help="label range of an integer [batch, 1] input")
    ap.add_argument("--json", help="write the table and totals as JSON")
    ap.add_argument("--dump-optimized", help="write the optimised module's text here")
    return ap.parse_args()


def note(msg):
    print(f"xla_profile: {msg}", file=sys.stderr, flush=True)


def module_proto(data):
    """The HloModuleProto in data: XLA's --xla_dump_hlo_as_proto writes an HloProto, whose field 1
    is the module (a bare HloModuleProto is returned as it is)."""
    def varint(i):
        v, shift = 0, 0
        while True:
            b = data[i]
            v |= (b & 0x7F) << shift
            i += 1
            if b < 0x80:
                return v, i
            shift += 7

    key, i = varint(0)
    if key == (1 << 3) | 2:  # field 1, length-delimited: HloProto.hlo_module
        n, i = varint(i)
        if i + n <= len(data):
            inner = data[i:i + n]
            # an HloModuleProto starts with its name (field 1, a string): printable
            if inner[0] == (1 << 3) | 2 and inner[2:2 + min(inner[1], 8)].isascii():
                return inner
    return data


def entry_parameters(optimized):
    """[(numpy dtype, dims)] of the entry computation's parameters, from the module's header."""
    import numpy as np
    head = optimized.split("\n", 1)[0]
    layout = re.search(r"entry_computation_layout=\{\((.*)\)->", head).group(1)
    kinds = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "s64": np.int64, "u32": np.uint32,
             "u8": np.uint8, "pred": np.bool_, "bf16": np.float32, "s8": np.int8}
    out = []
    for dt, dims in re.findall(r"(\w+)\[([\d,]*)\]", layout):
        out.append((np.dtype(kinds[dt]), tuple(int(d) for d in dims.split(",") if d)))
    return out


# ---------------------------------------------------------------------------- the optimised module

INSTR = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = (\(.*?\)|\S+?)(?:\{[\d,]*\})? ([\w\-]+)\((.*?)\)(.*)$")
COMP = re.compile(r"^(?:ENTRY )?%([\w.\-]+) ")
DIMS = re.compile(r"^\w+\[([\d,]*)\]")


def dims_of(shape):
    m = DIMS.match(shape)
    return [int(d) for d in m.group(1).split(",") if d] if m else []


def product(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def parse_module(text):
    """{computation: [instruction]} and the entry computation's name. An instruction is a dict:
    name, shape, opcode, operands (names), raw (the operand text), rest, root."""
    comps, cur, entry = {}, None, None
    for line in text.splitlines():
        if not line.startswith(" ") and line.endswith("{") and COMP.match(line):
            cur = COMP.match(line).group(1)
            comps[cur] = []
            if line.startswith("ENTRY"):
                entry = cur
            continue
        if line.startswith("}"):
            cur = None
            continue
        m = INSTR.match(line) if cur else None
        if m:
            name, shape, opcode, raw, rest = m.groups()
            comps[cur].append({"name": name, "shape": shape, "opcode": opcode, "raw": raw,
                               "operands": re.findall(r"%([\w.\-]+)", raw), "rest": rest,
                               "root": line.lstrip().startswith("ROOT")})
    return comps, entry


def conv_role(conv, fusion, body, entry_params, batch):
    """A convolution's role in a training step, as GoMLX writes the gradients: the kernel
    gradient is a convolution whose output is a kernel (its first dimension is not the batch);
    a forward convolution takes an entry parameter (a variable) as its kernel; the input
    gradient takes a transposed kernel."""
    out = dims_of(conv["shape"])
    if not out or out[0] != batch:
        return "conv grad kernel"
    rhs = conv["operands"][1]
    if fusion is None:
        return "conv forward" if rhs in entry_params else "conv grad input"
    p = next((i for i in body if i["name"] == rhs and i["opcode"] == "parameter"), None)
    if p is None:
        return "conv grad input"
    idx = int(p["raw"])
    return "conv forward" if fusion["operands"][idx] in entry_params else "conv grad input"


def describe(comps, entry, batch):
    """{entry op name: {kind, role, what, flops}} for every op of the entry computation."""
    shapes = {i["name"]: i["shape"] for c in comps.values() for i in c}
    entry_params = {i["name"] for i in comps[entry] if i["opcode"] == "parameter"}
    out = {}
    for ins in comps[entry]:
        info = {"kind": ins["opcode"], "role": ins["opcode"], "what": ins["shape"].split("{")[0], "flops": 0}
        called = re.search(r"calls=%([\w.\-]+)", ins["rest"])
        body = comps.get(called.group(1), []) if called else []
        if ins["opcode"] == "fusion":
            lib = re.search(r'"kind":"__(\w+)"', ins["rest"])
            kind = re.search(r"kind=(\w+)", ins["rest"])
            info["kind"] = lib.group(1) if lib else kind.group(1) if kind else "fusion"
        convs = [ins] if ins["opcode"] == "convolution" else [i for i in body if i["opcode"] == "convolution"]
        dots = [ins] if ins["opcode"] == "dot" else [i for i in body if i["opcode"] == "dot"]
        extra = len([i for i in body if i["opcode"] not in ("parameter", "convolution", "dot")])
        if convs:
            c = convs[0]
            window = re.search(r"size=([\dx]+)", c["rest"]).group(1)
            lhs_labels = re.search(r"dim_labels=(\w+)_", c["rest"]).group(1)
            lhs = dims_of(shapes.get(c["operands"][0], ""))
            o = dims_of(c["shape"])
            cin = lhs[lhs_labels.index("f")] if lhs else 0
            role = conv_role(c, ins if body else None, body, entry_params, batch)
            info.update(role=role, flops=2 * product(o) * product(int(w) for w in window.split("x")) * cin,
                        what=f"{role}: {lhs} window {window} -> {o}" + (f" +{extra} fused ops" if extra else ""))
        elif dots:
            d = dots[0]
            o, lhs = dims_of(d["shape"]), dims_of(shapes.get(d["operands"][0], ""))
            m = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", d["rest"])
            k = product(lhs[int(i)] for i in m.group(1).split(",")) if m and m.group(1) and lhs else 0
            info.update(role="dot", flops=2 * product(o) * k, what=f"dot -> {o}, contracting {k}"
                        + (f" +{extra} fused ops" if extra else ""))
        elif body:
            root = next((i for i in body if i["root"]), body[-1])
            ops = collections.Counter(i["opcode"] for i in body if i["opcode"] != "parameter")
            if "reduce" in ops or "reduce-window" in ops:
                main = "reduce"
            elif set(ops) <= {"transpose", "copy", "bitcast", "reshape"}:
                main = "transpose/copy"
            elif "select-and-scatter" in ops or "scatter" in ops:
                main = "scatter"
            else:
                main = "elementwise"
            info.update(role=main, what=f"{main} -> {root['shape'].split('{')[0]} ({sum(ops.values())} ops)")
        out[ins["name"]] = info
    return out


def op_times(profile, runs):
    """Per HLO op, the milliseconds per run from XLA's thunk trace: (busy, wall).

    busy: from the thunk's start to its completion. A thunk that finishes asynchronously (a
    parallel loop, an Eigen convolution) records its completion as an "end: OP" event linked by
    a flow id; without one, the thunk's own event is its extent. wall: each instant of a run
    shared equally among the thunks in progress then, so the ops' wall times add up to the
    time any thunk was running (concurrent thunks split it)."""
    starts, ends = [], {}
    for plane in profile.planes:
        for line in plane.lines:
            for e in line.events:
                st = dict(e.stats)
                if e.name.startswith("end: ") and "_c" in st:
                    ends[st["_c"]] = e.start_ns + e.duration_ns
                elif "hlo_op" in st:
                    starts.append((st["hlo_op"], st.get("run_id"), e.start_ns, e.start_ns + e.duration_ns, st.get("_p")))
    spans = collections.defaultdict(list)  # run -> [(start, end, op)]
    busy = collections.defaultdict(float)
    for op, run, t0, t1, flow in starts:
        t1 = max(t1, ends.get(flow, t1))
        spans[run].append((t0, t1, op))
        busy[op] += (t1 - t0) / 1e6 / runs
    wall = collections.defaultdict(float)
    for run, sp in spans.items():
        points = sorted({t for s in sp for t in s[:2]})
        for lo, hi in zip(points, points[1:]):
            active = [op for t0, t1, op in sp if t0 <= lo and t1 >= hi]
            for op in active:
                wall[op] += (hi - lo) / len(active) / 1e6 / runs
    return busy, wall


# ---------------------------------------------------------------------------------------- main

def main():
    a = parse_args()
    flags = (os.environ.get("XLA_FLAGS", "") + " " + a.xla_flags + " --xla_cpu_enable_xprof_traceme=true").strip()
    os.environ["XLA_FLAGS"] = flags
    import numpy as np
    import jax
    import jax.extend
    from jax._src.lib import xla_client as xc
    from jax.profiler import ProfileData
    jax.config.update("jax_enable_x64", True)  # the step counter is s64

    proto = module_proto(open(a.hlo, "rb").read())
    backend = jax.extend.backend.get_backend("cpu")
    device = backend.local_devices()[0]
    t0 = time.perf_counter()
    exe = backend.compile_and_load(xc._xla.mlir.hlo_to_stablehlo(proto), xc.DeviceList((device,)), xc.CompileOptions())
    compile_s = time.perf_counter() - t0
    optimized = exe.hlo_modules()[0].to_string()
    if a.dump_optimized:
        with open(a.dump_optimized, "w") as f:
            f.write(optimized)
    shapes = entry_parameters(optimized)

    rng = np.random.default_rng(0)
    batch = a.batch or next((s[0] for dt, s in shapes if len(s) == 4 and s[1:] == (32, 32, 3)), 0)
    args = []
    for dt, s in shapes:
        if dt.kind == "f":
            if len(s) == 4 and s[0] <= 7:  # a kernel [kh, kw, cin, cout]
                v = rng.normal(0, 1 / np.sqrt(s[0] * s[1] * s[2]), s)
            elif len(s) == 1:
                v = np.ones(s)
            elif len(s) == 0:
                v = np.array(1.0)
            else:
                v = rng.normal(0, 1, s)
        elif dt.kind in "iu":
            v = rng.integers(0, a.num_classes, s) if len(s) == 2 and s[1] == 1 else np.ones(s)
        elif dt.kind == "b":
            v = np.zeros(s, bool)
        else:
            v = np.zeros(s)
        args.append(jax.device_put(np.asarray(v, dt), device))

    def step():
        res = exe.execute_sharded(args).disassemble_into_single_device_arrays()
        for r in res:
            for x in r:
                x.block_until_ready()
        return res

    note(f"compiled in {compile_s:.1f} s; running")
    for _ in range(a.warmup):
        res = step()
    bad = [i for i, r in enumerate(res) if r[0].dtype.kind == "f" and not np.all(np.isfinite(np.asarray(r[0])))]
    walls = []
    for _ in range(a.steps):
        t = time.perf_counter()
        step()
        walls.append(time.perf_counter() - t)
    walls.sort()
    wall = walls[len(walls) // 2]

    note(f"timed {a.steps} runs: median {wall:.2f} s; tracing {a.profile_steps}")
    d = tempfile.mkdtemp(prefix="xla_profile-")
    jax.profiler.start_trace(d)
    t = time.perf_counter()
    for _ in range(a.profile_steps):
        step()
    traced_wall = (time.perf_counter() - t) / a.profile_steps
    jax.profiler.stop_trace()
    pb = glob.glob(d + "/**/*.xplane.pb", recursive=True)[0]
    per_op, wall_op = op_times(ProfileData.from_file(pb), a.profile_steps)
    comps, entry = parse_module(optimized)
    info = describe(comps, entry, batch)
    total = sum(wall_op.values())
    rows = []
    for op, ms in sorted(wall_op.items(), key=lambda kv: -kv[1]):
        i = info.get(op, {"kind": "?", "role": "?", "what": "", "flops": 0})
        busy = per_op[op]
        rows.append({"op": op, "ms": ms, "busy_ms": busy, "share": ms / total if total else 0, "kind": i["kind"],
                     "role": i["role"], "what": i["what"], "flops": i["flops"],
                     "gflops": i["flops"] / (busy / 1e3) / 1e9 if i["flops"] and busy else None})
    kinds = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])
    for r in rows:
        k = kinds[r["role"]]
        k[0] += r["ms"]
        k[1] += r["busy_ms"]
        k[2] += 1
        k[3] += r["flops"]

    load = " ".join(open("/proc/loadavg").read().split()[:3])
    print(f"# {os.path.basename(a.hlo)}: batch {batch}, {len(shapes)} parameters, compile {compile_s:.1f} s")
    print(f"# XLA_FLAGS={flags}")
    print(f"# jax {jax.__version__} ({backend.platform_version}), {len(backend.local_devices())} CPU devices; load {load}")
    print(f"# wall per step: median {wall * 1e3:.0f} ms of {a.steps} (min {walls[0] * 1e3:.0f}); traced runs {traced_wall * 1e3:.0f} ms;"
          f" ops in progress {total:.0f} ms of them" + (f"; NON-FINITE outputs {bad}" if bad else ""))
    print("# ms: the op's share of the traced run's time (concurrent ops split it); busy: its start to its completion")
    print(f"{'op':28s} {'ms':>7s} {'share':>6s} {'busy':>7s} {'GFLOP/s':>8s}  what")
    for r in rows[:a.top]:
        g = f"{r['gflops']:.1f}" if r["gflops"] else ""
        print(f"{r['op'][:28]:28s} {r['ms']:7.1f} {100 * r['share']:5.1f}% {r['busy_ms']:7.1f} {g:>8s}  {r['what'][:100]}")
    print(f"\n{'kind':24s} {'ops':>4s} {'ms':>7s} {'share':>6s} {'busy':>7s} {'GFLOP/s':>8s}")
    for role, (ms, busy, n, fl) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        g = f"{fl / (busy / 1e3) / 1e9:.1f}" if fl and busy else ""
        print(f"{role[:24]:24s} {n:4d} {ms:7.1f} {100 * ms / total:5.1f}% {busy:7.1f} {g:>8s}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"hlo": a.hlo, "batch": batch, "xla_flags": flags, "wall_ms": wall * 1e3,
                       "walls_ms": [w * 1e3 for w in walls], "traced_wall_ms": traced_wall * 1e3,
                       "op_total_ms": total, "compile_s": compile_s, "nonfinite_outputs": bad, "load": load,
                       "ops": rows, "kinds": {k: {"ms": v[0], "busy_ms": v[1], "ops": v[2], "flops": v[3]}
                                              for k, v in kinds.items()}}, f, indent=1)

if __name__ == "__main__":
    sys.exit(main())
