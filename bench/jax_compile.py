#!/usr/bin/env python3
"""JAX's compile times for the lab's models on XLA CPU (bench/RESULTS-loop.md, issue 34 item 5).

The lab's cnn, resnet20 and ResNet-18 (cifarlib/arch_cnn.go, arch_resnet.go) in plain JAX, with the
lab's default train step (softmax cross-entropy, Adam at 0.001: training.Defaults()) and its
evaluation step (inference-mode forward, argmax, per-example loss: training/eval.go). For each
model the train step and the evaluation step are jitted and timed apart:
``jax.jit(f).lower(*args)`` (tracing to StableHLO) and ``.compile()`` (XLA), each in a fresh
process, with JAX's persistent compilation cache off. The variables are created eagerly first
and that time is reported, then the same initialisation is jitted, lowered and compiled as one
program (the counterpart of the lab's compiled variable initialisation).
Then each compiled step runs once, as a check that it is the model it claims to be (first-step
loss near ln 10, accuracy between 0 and 1).

    bench/.venv-jax/bin/python bench/jax_compile.py --models cnn,resnet20,resnet18 --repeats 3

prints one JSON line per process and a table of medians. Install bench/.venv-jax from
bench/requirements-jax.txt (bench/README.md).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# Pure JAX: no flax or optax, so the venv holds only jax's own dependencies and the traced graph
# is exactly the code below (no module-system tracing in the "lower" time).

NUM_CLASSES = 10
IMAGE = (32, 32, 3)
LEARNING_RATE = 1e-3  # training.Defaults(): Adam's default learning rate
ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-7  # GoMLX's optimizer.Adam defaults
BN_MOMENTUM, BN_EPS = 0.9, 1e-5  # cifarlib's batchNorm


def build(jax, jnp, lax):
    """Returns (init, apply) for each architecture, closed over the jax modules."""

    def conv(x, w, stride):
        # GoMLX's PadSame: (k-1)/2 zeros before and k/2 after each spatial axis whatever the
        # stride (JAX's "SAME" would put a stride-2 3x3's single pad after only).
        k = w.shape[0]
        pad = ((k - 1) // 2, k // 2)
        return lax.conv_general_dilated(x, w, (stride, stride), (pad, pad),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def max_pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def dense(p, x):
        return x @ p["w"] + p["b"]

    def batch_norm(p, s, x, train):
        if train:
            mean = jnp.mean(x, axis=(0, 1, 2))
            var = jnp.var(x, axis=(0, 1, 2))
            s = {"mean": BN_MOMENTUM * s["mean"] + (1 - BN_MOMENTUM) * mean,
                 "var": BN_MOMENTUM * s["var"] + (1 - BN_MOMENTUM) * var}
        else:
            mean, var = s["mean"], s["var"]
        y = (x - mean) * lax.rsqrt(var + BN_EPS) * p["scale"] + p["offset"]
        return y, s

    # --- initialisation (cifarlib/init.go: LeCun normal convs in the cnn, He normal in the
    # ResNets (GoMLX's default), PyTorch's nn.Linear default for the head, zero-scale residual BN)

    def normal(key, shape, std):
        return std * jax.random.normal(key, shape, jnp.float32)

    def head_init(key, fan_in):
        kw, kb = jax.random.split(key)
        bound = 1 / fan_in ** 0.5
        return {"w": jax.random.uniform(kw, (fan_in, NUM_CLASSES), jnp.float32, -bound, bound),
                "b": jax.random.uniform(kb, (NUM_CLASSES,), jnp.float32, -bound, bound)}

    def bn_init(c, zero_scale=False):
        scale = jnp.zeros(c) if zero_scale else jnp.ones(c)
        return {"scale": scale, "offset": jnp.zeros(c)}, {"mean": jnp.zeros(c), "var": jnp.ones(c)}

    def cnn_init(key):
        keys = jax.random.split(key, 4)
        params, cin = {}, IMAGE[2]
        for i, c in enumerate((16, 32, 64)):
            params[f"conv{i + 1}"] = {"w": normal(keys[i], (3, 3, cin, c), 1 / (9 * cin) ** 0.5),
                                      "b": jnp.zeros(c)}
            cin = c
        params["head"] = head_init(keys[3], 4 * 4 * 64)
        return params, {}

    def cnn_apply(params, state, x, train):
        for i in range(3):
            p = params[f"conv{i + 1}"]
            x = max_pool(jax.nn.relu(conv(x, p["w"], 1) + p["b"]))
        return dense(params["head"], x.reshape(x.shape[0], -1)), state

    def resnet(stem, stages, blocks, zero_pad):
        def plan():
            cin = stem
            for si, c in enumerate(stages):
                for bi in range(blocks):
                    stride = 2 if si > 0 and bi == 0 else 1
                    yield f"stage{si + 1}/block{bi + 1}", cin, c, stride
                    cin = c

        def init(key):
            key, k = jax.random.split(key)
            params = {"stem": {"w": normal(k, (3, 3, 3, stem), (2 / 27) ** 0.5)}}
            state = {}
            params["stem"]["bn"], state["stem"] = bn_init(stem)
            for name, cin, c, stride in plan():
                key, k1, k2, k3 = jax.random.split(key, 4)
                p = {"conv1": normal(k1, (3, 3, cin, c), (2 / (9 * cin)) ** 0.5),
                     "conv2": normal(k2, (3, 3, c, c), (2 / (9 * c)) ** 0.5)}
                s = {}
                p["bn1"], s["bn1"] = bn_init(c)
                p["bn2"], s["bn2"] = bn_init(c, zero_scale=True)
                if (stride != 1 or cin != c) and not zero_pad:
                    p["short"] = normal(k3, (1, 1, cin, c), (2 / cin) ** 0.5)
                    p["short_bn"], s["short_bn"] = bn_init(c)
                params[name], state[name] = p, s
            key, k = jax.random.split(key)
            params["head"] = head_init(k, stages[-1])
            return params, state

        def apply(params, state, x, train):
            new = {}
            y, new["stem"] = batch_norm(params["stem"]["bn"], state["stem"], conv(x, params["stem"]["w"], 1), train)
            x = jax.nn.relu(y)
            for name, cin, c, stride in plan():
                p, s, ns = params[name], state[name], {}
                y, ns["bn1"] = batch_norm(p["bn1"], s["bn1"], conv(x, p["conv1"], stride), train)
                y, ns["bn2"] = batch_norm(p["bn2"], s["bn2"], conv(jax.nn.relu(y), p["conv2"], 1), train)
                short = x
                if stride != 1 or cin != c:
                    if zero_pad:  # He et al.'s option A: strided identity, new channels zero
                        extra = c - cin
                        short = jnp.pad(x[:, ::stride, ::stride, :],
                                        ((0, 0), (0, 0), (0, 0), (extra // 2, extra - extra // 2)))
                    else:
                        short, ns["short_bn"] = batch_norm(p["short_bn"], s["short_bn"],
                                                           conv(x, p["short"], stride), train)
                x = jax.nn.relu(y + short)
                new[name] = ns
            x = jnp.mean(x, axis=(1, 2))
            return dense(params["head"], x), (new if train else state)

        return init, apply

    return {
        "cnn": (cnn_init, cnn_apply),
        "resnet20": resnet(16, (16, 32, 64), 3, True),
        "resnet18": resnet(64, (64, 128, 256, 512), 2, False),
    }


def steps(jax, jnp, apply):
    """The lab's train step (forward in training mode, softmax cross-entropy, Adam) and its
    evaluation step (inference-mode forward, predictions and per-example loss)."""

    def xent(logits, labels):
        return -jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=-1)[:, 0]

    def train_step(params, state, opt, images, labels):
        def loss_fn(p):
            logits, new_state = apply(p, state, images, True)
            return jnp.mean(xent(logits, labels)), (logits, new_state)

        (loss, (logits, new_state)), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        t = opt["step"] + 1
        m = jax.tree.map(lambda m, g: ADAM_B1 * m + (1 - ADAM_B1) * g, opt["m"], grads)
        v = jax.tree.map(lambda v, g: ADAM_B2 * v + (1 - ADAM_B2) * g * g, opt["v"], grads)
        tf = t.astype(jnp.float32)
        c1, c2 = 1 / (1 - ADAM_B1 ** tf), 1 / (1 - ADAM_B2 ** tf)
        params = jax.tree.map(lambda p, m, v: p - LEARNING_RATE * (m * c1) / (jnp.sqrt(v * c2) + ADAM_EPS),
                              params, m, v)
        accuracy = jnp.mean((jnp.argmax(logits, -1) == labels).astype(jnp.float32))
        return params, new_state, {"step": t, "m": m, "v": v}, loss, accuracy

    def eval_step(params, state, images, labels):
        logits, _ = apply(params, state, images, False)
        return jnp.argmax(logits, -1).astype(jnp.int32), xent(logits, labels)

    return train_step, eval_step


def timed(f):
    """f(), its wall time and the process's CPU time (all threads: XLA compiles in parallel)."""
    t, c = time.perf_counter(), time.process_time()
    r = f()
    return r, time.perf_counter() - t, time.process_time() - c


def measure(model, batch, eval_batch, run):
    """One process's measurement of one model; returns a dict."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # XLA CPU unless told otherwise
    t0 = time.perf_counter()
    import jax
    import jax.numpy as jnp
    from jax import lax
    jax.config.update("jax_enable_compilation_cache", False)
    out = {"model": model, "batch": batch, "eval_batch": eval_batch, "import_s": time.perf_counter() - t0}
    init, apply = build(jax, jnp, lax)[model]
    train_step, eval_step = steps(jax, jnp, apply)

    t = time.perf_counter()
    params, state = init(jax.random.key(0))
    opt = {"step": jnp.zeros((), jnp.int32), "m": jax.tree.map(jnp.zeros_like, params),
           "v": jax.tree.map(jnp.zeros_like, params)}
    jax.block_until_ready((params, state, opt))
    out["init_eager_s"] = time.perf_counter() - t
    out["parameters"] = sum(p.size for p in jax.tree.leaves(params))
    # The same initialisation as one jitted program, the counterpart of GoMLX's compiled
    # variable initialisation (the eager one above dispatches, and compiles, op by op).
    (lowered, out["init_lower_s"], out["init_lower_cpu_s"]) = timed(lambda: jax.jit(init).lower(jax.random.key(0)))
    (_, out["init_compile_s"], out["init_compile_cpu_s"]) = timed(lowered.compile)

    rng = jax.random.key(1)
    images = jax.random.normal(rng, (batch,) + IMAGE, jnp.float32)
    labels = jax.random.randint(rng, (batch,), 0, NUM_CLASSES, jnp.int32)
    eimages = jax.random.normal(rng, (eval_batch,) + IMAGE, jnp.float32)
    elabels = jax.random.randint(rng, (eval_batch,), 0, NUM_CLASSES, jnp.int32)
    jax.block_until_ready((images, labels, eimages, elabels))

    for name, fn, args in (("train", train_step, (params, state, opt, images, labels)),
                           ("eval", eval_step, (params, state, eimages, elabels))):
        (lowered, out[f"{name}_lower_s"], out[f"{name}_lower_cpu_s"]) = timed(lambda: jax.jit(fn).lower(*args))
        (compiled, out[f"{name}_compile_s"], out[f"{name}_compile_cpu_s"]) = timed(lowered.compile)
        out[f"{name}_stablehlo_ops"] = sum(1 for line in lowered.as_text().splitlines() if " = " in line)
        if run:
            t = time.perf_counter()
            res = jax.block_until_ready(compiled(*args))
            out[f"{name}_run_s"] = time.perf_counter() - t
            if name == "train":
                out["train_loss"], out["train_accuracy"] = float(res[3]), float(res[4])
            else:
                out["eval_loss"] = float(jnp.mean(res[1]))
    out["jax"], out["jaxlib"] = jax.__version__, jax.lib.__version__
    out["device"] = str(jax.devices()[0])
    out["loadavg"] = os.getloadavg()[0]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="cnn,resnet20,resnet18")
    ap.add_argument("--batch", type=int, default=64, help="training batch (RESULTS-loop's cells: 64)")
    ap.add_argument("--eval-batch", type=int, default=100, help="evaluation batch (training.DefaultEvalBatchSize: 100)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per model")
    ap.add_argument("--no-run", action="store_true", help="compile only; skip the one step of each program")
    ap.add_argument("--one", metavar="MODEL", help="measure one model in this process and print its JSON line")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(measure(a.one, a.batch, a.eval_batch, not a.no_run)), flush=True)
        return
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    rows = {}
    for r in range(a.repeats):  # interleaved: model by model, then again
        for model in a.models.split(","):
            cmd = [sys.executable, __file__, "--one", model, "--batch", str(a.batch), "--eval-batch", str(a.eval_batch)]
            if a.no_run:
                cmd.append("--no-run")
            t = time.perf_counter()
            line = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            res = json.loads(line)
            res["process_wall_s"] = time.perf_counter() - t
            print(json.dumps(res), flush=True)
            rows.setdefault(model, []).append(res)
    keys = ["init_eager_s", "init_lower_s", "init_compile_s", "train_lower_s", "train_compile_s", "eval_lower_s", "eval_compile_s", "process_wall_s"]
    print("\nmedians (s) over %d fresh processes; load average %s" % (a.repeats, " ".join("%.2f" % x for x in os.getloadavg())))
    print("| model | " + " | ".join(keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for model, rs in rows.items():
        print("| %s | " % model + " | ".join("%.2f" % statistics.median(r[k] for r in rs) for k in keys) + " |")


if __name__ == "__main__":
    main()
