#!/usr/bin/env python3
"""airbench94's training step written in plain JAX, timed on XLA CPU: what the same network costs
on the same XLA when a JAX user writes it (issue 48 item 2: is XLA CPU itself the wall?).

The network is make_net94's (airbench 0.1.8, lib_airbench94.py; cifarlib/arch_airbench.go): the
2x2 whitening convolution (24 channels, weights fixed, bias trained), GELU, three ConvGroups
(conv3x3 without bias, MaxPool2d(2), BatchNorm(eps 1e-12, PyTorch momentum 0.4, scale fixed,
bias trained), GELU, conv3x3, BatchNorm, GELU) at widths 64/256/256, MaxPool2d(3), and a linear
head without bias scaled by 1/9; NHWC activations and HWIO kernels, as JAX writes them. The step
is airbench's: label-smoothed (0.2) cross-entropy summed over the batch, Nesterov SGD (momentum
0.85) with airbench's param groups (batch-norm biases at 64x the rate) and decoupled weight decay,
the running statistics updated; lookahead (airbench's EMA every 5 steps) is a second jitted
function called every 5th step, as airbench calls it. Max-pooling is `lax.reduce_window` (what
`flax.linen.max_pool` is; its gradient is XLA's select-and-scatter) or, with `--pool reshape`,
a reshape and a max over the window axes.

    JAX_PLATFORMS=cpu bench/.venv-jax/bin/python bench/jax_airbench.py --batch 1024 --steps 8
    ... --json out.json --xla-flags "--xla_cpu_..." --dump-hlo DIR (the optimised step, for xla_profile.py)

It prints the median step time (the lookahead's share spread over its 5 steps) and the time
per epoch at --steps-per-epoch steps (airbench's 20k subset: 19; the full 50k: 48).
"""

import argparse
import json
import os
import statistics
import time

WIDTHS = (64, 256, 256)
BN_EPS, BN_MOMENTUM = 1e-12, 0.4
SCALING = 1 / 9
LABEL_SMOOTHING = 0.2
MOMENTUM, LR, WD, BIAS_SCALER = 0.85, 11.5, 0.0153, 64.0
LOOKAHEAD_EVERY = 5


def build(jax, jnp, lax, pool_kind):
    def conv(x, w, pad):
        return lax.conv_general_dilated(x, w, (1, 1), pad, dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def max_pool(x, k):
        if pool_kind == "reshape":
            b, h, w, c = x.shape
            h2, w2 = h // k, w // k
            x = x[:, :h2 * k, :w2 * k, :].reshape(b, h2, k, w2, k, c)
            return x.max(axis=(2, 4))
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, k, k, 1), (1, k, k, 1), "VALID")

    def batch_norm(bias, state, x):
        mean = jnp.mean(x, axis=(0, 1, 2))
        var = jnp.var(x, axis=(0, 1, 2))
        n = x.shape[0] * x.shape[1] * x.shape[2]
        new = {"mean": (1 - BN_MOMENTUM) * state["mean"] + BN_MOMENTUM * lax.stop_gradient(mean),
               "var": (1 - BN_MOMENTUM) * state["var"] + BN_MOMENTUM * lax.stop_gradient(var) * n / (n - 1)}
        return (x - mean) * lax.rsqrt(var + BN_EPS) + bias, new

    def init(key, classes=10):
        def uniform(k, shape, fan_in):
            b = 1 / fan_in ** 0.5
            return jax.random.uniform(k, shape, jnp.float32, -b, b)

        keys = iter(jax.random.split(key, 16))
        params = {"whiten_b": jnp.zeros(24)}
        fixed = {"whiten_w": uniform(next(keys), (2, 2, 3, 24), 12)}
        state = {}
        cin = 24
        for i, w in enumerate(WIDTHS):
            params[f"b{i}"] = {"conv1": uniform(next(keys), (3, 3, cin, w), 9 * cin),
                               "conv2": uniform(next(keys), (3, 3, w, w), 9 * w),
                               "norm1": jnp.zeros(w), "norm2": jnp.zeros(w)}
            state[f"b{i}"] = {"norm1": {"mean": jnp.zeros(w), "var": jnp.ones(w)},
                              "norm2": {"mean": jnp.zeros(w), "var": jnp.ones(w)}}
            cin = w
        params["head"] = uniform(next(keys), (cin, classes), cin)
        return params, fixed, state

    def apply(params, fixed, state, x):
        x = jax.nn.gelu(conv(x, fixed["whiten_w"], "VALID") + params["whiten_b"], approximate=False)
        new = {}
        for i in range(len(WIDTHS)):
            p, s = params[f"b{i}"], state[f"b{i}"]
            x = max_pool(conv(x, p["conv1"], "SAME"), 2)
            x, n1 = batch_norm(p["norm1"], s["norm1"], x)
            x = jax.nn.gelu(x, approximate=False)
            x, n2 = batch_norm(p["norm2"], s["norm2"], conv(x, p["conv2"], "SAME"))
            x = jax.nn.gelu(x, approximate=False)
            new[f"b{i}"] = {"norm1": n1, "norm2": n2}
        x = max_pool(x, 3).reshape(x.shape[0], -1)
        return (x @ params["head"]) * SCALING, new

    def loss_fn(params, fixed, state, images, labels):
        logits, new = apply(params, fixed, state, images)
        logp = jax.nn.log_softmax(logits)
        nll = -jnp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
        smooth = -jnp.mean(logp, axis=1)
        loss = jnp.sum((1 - LABEL_SMOOTHING) * nll + LABEL_SMOOTHING * smooth)
        return loss, (new, logits)

    def train_step(params, fixed, state, buf, images, labels, factor):
        (loss, (new, logits)), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, fixed, state, images, labels)
        batch = images.shape[0]
        kilostep = 1024 * (1 + 1 / (1 - MOMENTUM))
        lr, wd = LR / kilostep, WD * batch / kilostep

        def update(path, p, g, b):
            name = jax.tree_util.keystr(path)
            lrg = lr * BIAS_SCALER if "norm" in name else lr
            wdg = wd / BIAS_SCALER if "norm" in name else wd
            d = g + (wdg / lrg) * p
            b = MOMENTUM * b + d
            return p - lrg * factor * (d + MOMENTUM * b), b

        out = jax.tree_util.tree_map_with_path(update, params, grads, buf)
        params = jax.tree.map(lambda t: t[0], out, is_leaf=lambda t: isinstance(t, tuple))
        buf = jax.tree.map(lambda t: t[1], out, is_leaf=lambda t: isinstance(t, tuple))
        acc = jnp.mean((jnp.argmax(logits, 1) == labels).astype(jnp.float32))
        return params, new, buf, loss / batch, acc

    def lookahead(ema, params, state, decay):
        return jax.tree.map(lambda e, w: e + (w - e) * (1 - decay), ema, (params, state))

    return init, train_step, lookahead


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=10, help="timed steps (a multiple of 5 spreads the lookahead evenly)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps-per-epoch", type=int, default=19, help="19: airbench's 20k subset at batch 1024; 48: the full 50k")
    ap.add_argument("--pool", choices=("reduce_window", "reshape"), default="reduce_window")
    ap.add_argument("--xla-flags", default="", help="added to XLA_FLAGS before JAX starts")
    ap.add_argument("--dump-hlo", help="write the train step's optimised HLO text here")
    ap.add_argument("--json", help="append the result as a JSON line to this file")
    a = ap.parse_args()
    if a.xla_flags:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + a.xla_flags).strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    from jax import lax
    import numpy as np
    jax.config.update("jax_enable_compilation_cache", False)

    init, train_step, lookahead = build(jax, jnp, lax, a.pool)
    params, fixed, state = init(jax.random.key(0))
    buf = jax.tree.map(jnp.zeros_like, params)
    ema = jax.tree.map(jnp.copy, (params, state))  # the step donates params and state
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.normal(0, 1, (a.batch, 32, 32, 3)).astype(np.float32))
    labels = jnp.asarray(rng.integers(0, 10, a.batch).astype(np.int32))
    step = jax.jit(train_step, donate_argnums=(0, 2, 3))
    la = jax.jit(lookahead)
    t = time.perf_counter()
    compiled = step.lower(params, fixed, state, buf, images, labels, jnp.float32(1)).compile()
    compile_s = time.perf_counter() - t
    if a.dump_hlo:
        with open(a.dump_hlo, "w") as f:
            f.write(compiled.as_text())

    times, la_times, losses = [], [], []
    for i in range(a.warmup + a.steps):
        t = time.perf_counter()
        params, state, buf, loss, acc = step(params, fixed, state, buf, images, labels, jnp.float32(1))
        loss.block_until_ready()
        dt = time.perf_counter() - t
        if (i + 1) % LOOKAHEAD_EVERY == 0:
            t = time.perf_counter()
            ema = la(ema, params, state, jnp.float32(0.5))
            params, state = jax.tree.map(jnp.copy, ema)
            jax.block_until_ready(params)
            if i >= a.warmup:
                la_times.append(time.perf_counter() - t)
        if i >= a.warmup:
            times.append(dt)
            losses.append(float(loss))
    step_s = statistics.median(times) + (sum(la_times) / len(times) if la_times else 0)
    out = {"framework": "jax", "jax": jax.__version__, "model": "airbench94", "batch": a.batch, "pool": a.pool,
           "xla_flags": os.environ.get("XLA_FLAGS", ""), "compile_s": compile_s,
           "step_ms": [x * 1e3 for x in times], "lookahead_ms": [x * 1e3 for x in la_times],
           "median_step_ms": step_s * 1e3, "epoch_s": step_s * a.steps_per_epoch,
           "steps_per_epoch": a.steps_per_epoch, "loss": losses[-1], "finite": bool(np.isfinite(losses).all()),
           "load": os.getloadavg()}
    print(f"jax airbench94 batch {a.batch} (pool {a.pool}): step {step_s * 1e3:.0f} ms (median of {len(times)}, "
          f"lookahead included), {out['epoch_s']:.1f} s per epoch of {a.steps_per_epoch} steps; compile {compile_s:.1f} s; "
          f"loss {losses[-1]:.3f}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
