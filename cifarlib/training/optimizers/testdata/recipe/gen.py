"""Writes airbench94.json: what airbench 0.1.8's own code computes, for TestTriangle*,
TestNesterov* and TestLookahead* (cifarlib/training/optimizers). Run with a Python that has torch (CI never
runs it; the JSON is committed):

    python gen.py  # from this folder; e.g. bench/.venv-torch/bin/python

The triangle and the optimiser set-up are copied from airbench 0.1.8's utils.py (train), and
LookaheadState is imported from it when airbench is importable, else copied.
"""
import json
import math

import torch

try:
    from airbench.utils import LookaheadState
except Exception:  # airbench's utils imports torchvision
    class LookaheadState:
        def __init__(self, net):
            self.net_ema = {k: v.clone() for k, v in net.state_dict().items()}

        def update(self, net, decay):
            for ema_param, net_param in zip(self.net_ema.values(), net.state_dict().values()):
                if net_param.dtype in (torch.half, torch.float):
                    ema_param.lerp_(net_param, 1-decay)
                    net_param.copy_(ema_param)


def triangle(steps, start=0, end=0, peak=0.5):
    xp = torch.tensor([0, int(peak * steps), steps])
    fp = torch.tensor([start, 1, end])
    x = torch.arange(1+steps)
    m = (fp[1:] - fp[:-1]) / (xp[1:] - xp[:-1])
    b = fp[:-1] - (m * xp[:-1])
    indices = torch.sum(torch.ge(x[:, None], xp[None, :]), 1) - 1
    indices = torch.clamp(indices, 0, len(m) - 1)
    return m[indices] * x + b[indices]


out = {"triangle": {}}
for steps in (2, 4, 5, 7, 10, 97, 480):
    out["triangle"][str(steps)] = [float(v) for v in triangle(steps, start=0.2, end=0.07, peak=0.23)]

# The optimiser: airbench's param groups and decoupled hyper-parameters, on three tensors: a
# batch-norm bias, a weight and a whitening bias frozen after whiten_steps steps
# (requires_grad False: PyTorch skips it), for `steps` steps of fixed pseudo-random gradients
# of the summed loss, under the triangle schedule.
torch.manual_seed(0)
learning_rate, momentum, weight_decay, bias_scaler, batch_size = 11.5, 0.85, 0.0153, 64.0, 8
steps, whiten_steps = 6, 3
kilostep_scale = 1024 * (1 + 1 / (1 - momentum))
lr = learning_rate / kilostep_scale
wd = weight_decay * batch_size / kilostep_scale
lr_biases = lr * bias_scaler
params = {
    "norm_bias": torch.randn(4),
    "weight": torch.randn(2, 3),
    "whiten_bias": torch.randn(3),
}
initial = {k: v.flatten().tolist() for k, v in params.items()}
ps = {k: torch.nn.Parameter(v.clone()) for k, v in params.items()}
optimizer = torch.optim.SGD([dict(params=[ps["norm_bias"]], lr=lr_biases, weight_decay=wd/lr_biases),
                             dict(params=[ps["weight"], ps["whiten_bias"]], lr=lr, weight_decay=wd/lr)],
                            momentum=momentum, nesterov=True)
schedule = triangle(steps, start=0.2, end=0.07, peak=0.23)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: schedule[i])
grads, after = [], []
for step in range(steps):
    ps["whiten_bias"].requires_grad = step < whiten_steps
    g = {k: torch.randn_like(v) for k, v in ps.items()}
    grads.append({k: v.flatten().tolist() for k, v in g.items()})
    optimizer.zero_grad(set_to_none=True)
    for k, p in ps.items():
        if p.requires_grad:
            p.grad = g[k].clone()
    optimizer.step()
    scheduler.step()
    after.append({k: p.detach().flatten().tolist() for k, p in ps.items()})
out["nesterov"] = dict(learning_rate=learning_rate, momentum=momentum, weight_decay=weight_decay,
                       bias_scaler=bias_scaler, batch_size=batch_size, steps=steps, whiten_steps=whiten_steps,
                       initial=initial, grads=grads, after=after)

# Lookahead: a "net" of a weight and a running mean, set to pseudo-random values after each
# step, with airbench's updates every 5 steps and at the last step (train's loop).
total = 12
net = torch.nn.Module()
net.w = torch.nn.Parameter(torch.randn(3))
net.register_buffer("running_mean", torch.randn(2))
net.register_buffer("num_batches_tracked", torch.tensor(0))
start = {k: v.flatten().tolist() for k, v in net.state_dict().items() if v.dtype == torch.float}
state = LookaheadState(net)
alpha_schedule = 0.95**5 * (torch.arange(total+1) / total)**3
trained, result = [], []
for step in range(1, total+1):
    with torch.no_grad():
        net.w.copy_(torch.randn(3))
        net.running_mean.copy_(torch.randn(2))
    trained.append({k: v.flatten().tolist() for k, v in net.state_dict().items() if v.dtype == torch.float})
    if step % 5 == 0:
        state.update(net, decay=alpha_schedule[step].item())
    if step >= total:
        state.update(net, decay=1.0)
    result.append({k: v.flatten().tolist() for k, v in net.state_dict().items() if v.dtype == torch.float})
out["lookahead"] = dict(total=total, start=start, trained=trained, result=result)

with open("airbench94.json", "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
