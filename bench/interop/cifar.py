"""CIFAR-10 in the official binary layout (cifar-10-batches-bin/), as uint8 CHW tensors."""
import os

import numpy as np
import torch


def load(root, split):
    """Images [N, 3, 32, 32] uint8 and labels [N] int64 of split "train" or "test"."""
    folder = os.path.join(root, "cifar-10-batches-bin")
    names = ["test_batch.bin"] if split == "test" else [f"data_batch_{i}.bin" for i in range(1, 6)]
    raw = np.concatenate([np.fromfile(os.path.join(folder, n), dtype=np.uint8).reshape(-1, 3073) for n in names])
    return torch.from_numpy(raw[:, 1:].reshape(-1, 3, 32, 32).copy()), torch.from_numpy(raw[:, 0].astype(np.int64))
