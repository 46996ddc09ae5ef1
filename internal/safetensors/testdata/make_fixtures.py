"""Writes python.safetensors with the real safetensors package (kernel/requirements-test.txt:
safetensors + numpy, hash-pinned), and expected.json with the values it holds.

Run from this folder with the repository venv: ../../../.venv/bin/python make_fixtures.py
"""
import json

import numpy as np
from safetensors.numpy import save_file

tensors = {
    "conv.weight": (np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3) - 20) / 7,
    "bn.running_var": np.array([0.5, 2.0], dtype=np.float32),
    "bn.num_batches_tracked": np.array(1234567890123, dtype=np.int64),
    "half": np.array([1.5, -2.25, 65504.0], dtype=np.float16),
    "double": np.array([1 / 3, -2.5], dtype=np.float64),
    "mask": np.array([True, False]),
    "empty": np.zeros((0, 4), dtype=np.float32),
}
save_file(tensors, "python.safetensors", metadata={"format": "pt", "source": "make_fixtures.py"})
with open("expected.json", "w") as f:
    json.dump({k: {"shape": list(v.shape), "values": v.reshape(-1).astype(np.float64).tolist()} for k, v in tensors.items()},
              f, indent=1)
