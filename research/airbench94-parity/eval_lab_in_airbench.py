"""Evaluate a lab run's airbench94 weights with airbench's own code (a parity diagnostic).

`cifarlab export --run RUN --names airbench94 --out W.safetensors` writes the run's weights and
batch-norm statistics with make_net94's names; this loads them into airbench 0.1.8's make_net94
(on the CPU in f32, as airbench_cpu.py makes it) and runs airbench's evaluate() on DATA/cifar10/
test.pt at TTA levels 0 and 2. Equal accuracies to the lab's own evaluation say the lab's
evaluation is airbench's, and any gap to airbench's own runs comes from the trained weights.

    python research/airbench94-parity/eval_lab_in_airbench.py --weights W.safetensors --data /tmp/cifarlab-recipe

The weights are read by airbench_cpu.load_weights (no safetensors package needed).
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import airbench_cpu as ac  # noqa: E402  (its CPU patches, loader and load_weights)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True, help="the lab's export (.safetensors), or a state_dict saved by torch (.pt)")
    ap.add_argument("--data", required=True, help="folder holding cifar10/test.pt")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--tta-levels", default="0,2", help="TTA levels to evaluate (default %(default)s)")
    ap.add_argument("--recompute-bn", action="store_true",
                    help="also evaluate after replacing the batch norms' running statistics by the population statistics "
                         "of the (un-augmented) training images under the same weights: a check of the running statistics")
    args = ap.parse_args()
    ac.patch_for_cpu()
    torch.set_num_threads(args.threads)
    net = ac.load_weights(ac.make_net94_cpu(), args.weights)  # .pt: airbench_cpu.py --save-final
    os.chdir(args.data)
    test = ac.Loader("cifar10", train=False, batch_size=2000)
    levels = [int(x) for x in args.tta_levels.split(",")]
    res = {f"tta{lvl}": ac.utils.evaluate(net, test, tta_level=lvl) for lvl in levels}
    if args.recompute_bn:
        train = ac.Loader("cifar10", train=True, batch_size=1000)
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.reset_running_stats()
                m.momentum = None  # cumulative average over the batches below
        net.train()
        with torch.no_grad():
            for x in train.normalize(train.images).split(1000):
                net(x)
        res.update({f"tta{lvl}_population_bn": ac.utils.evaluate(net, test, tta_level=lvl) for lvl in levels})
    print(json.dumps(res))


if __name__ == "__main__":
    main()
