#!/usr/bin/env python3
"""Print the CUDA PJRT plugin of pip's jax-cuda13-pjrt (or -cuda12-) importable by this Python.

Prints the real path of SITE/jax_plugins/xla_cuda13/xla_cuda_plugin.so (newest CUDA first,
found through the import system, else by globbing sys.path) and exits 0; prints nothing and
exits 1 when there is none. Used by kernel/gpu-smoke.sh and bench/gpu.sh on the GPU machine;
stdlib only.
"""
import glob
import importlib.util
import os
import sys


def find():
    for name in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            spec = None
        if spec and spec.origin:
            p = os.path.join(os.path.dirname(spec.origin), "xla_cuda_plugin.so")
            if os.path.exists(p):
                return os.path.realpath(p)
    for d in sys.path:
        for p in sorted(glob.glob(os.path.join(d, "jax_plugins", "xla_cuda*", "xla_cuda_plugin.so")), reverse=True):
            return os.path.realpath(p)
    return None


if __name__ == "__main__":
    plugin = find()
    if not plugin:
        sys.exit(1)
    print(plugin)
