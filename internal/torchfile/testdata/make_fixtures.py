"""Writes the torchfile test fixtures with real PyTorch (bench/requirements-torch.txt).

Run from this folder: python make_fixtures.py. The files are committed; CI never installs torch.
  state_dict.pt   float32/float64/float16/bfloat16/int64/bool tensors, a transposed view, a view
                  with a storage offset sharing its storage, a scalar; expected.json holds their
                  values as PyTorch reads them back.
  checkpoint.pt   {'net': BatchNorm2d(2).state_dict(), 'acc': 93.5, 'epoch': 3}
  parameter.pt    {'w': nn.Parameter} (torch._utils._rebuild_parameter)
  legacy.pt       the pre-1.6 format (_use_new_zipfile_serialization=False)
  torchscript.pt  torch.jit.save of a Linear
  complex.pt      a complex64 tensor (a dtype not handled)
  evil_*.pt       hostile files: see HOSTILE below.
"""
import collections, io, json, os, zipfile

import torch


class Evil:
    """Pickles as os.system('echo pwned'): what weights_only=True exists to refuse."""

    def __reduce__(self):
        return (os.system, ("echo pwned",))


class Plain:
    """A plain Python object: protocol 2 pickles it with NEWOBJ."""


def save(obj, name, **kw):
    torch.save(obj, name, **kw)


def rewrite(src, dst, change):
    """Copies a torch zip entry by entry (stored, as torch writes), change(name, data) -> data."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info.filename))
            if data is not None:
                zout.writestr(info.filename, data)


def patch_pickle(src, dst, old, new):
    def change(name, data):
        if name.endswith("/data.pkl"):
            assert data.count(old) == 1, (src, old, data.count(old))
            return data.replace(old, new)
        return data
    rewrite(src, dst, change)


def main():
    g = torch.Generator().manual_seed(0)
    base = torch.arange(12, dtype=torch.float32) * 0.5 - 2
    sd = collections.OrderedDict()
    sd["conv.weight"] = torch.randn(4, 3, 3, 3, generator=g)
    sd["double"] = torch.randn(5, generator=g, dtype=torch.float64)
    sd["half"] = torch.tensor([1.5, -2.25, 65504.0], dtype=torch.float16)
    sd["bf16"] = torch.tensor([3.140625, -0.5], dtype=torch.bfloat16)
    sd["transposed"] = base.reshape(3, 4).t()
    sd["offset_view"] = base[2:8]
    sd["num_batches_tracked"] = torch.tensor(1234567890123, dtype=torch.int64)
    sd["mask"] = torch.tensor([True, False, True])
    save(sd, "state_dict.pt")
    back = torch.load("state_dict.pt", weights_only=True)
    expected = {k: {"dtype": str(v.dtype).removeprefix("torch."), "shape": list(v.shape),
                    "values": v.reshape(-1).to(torch.int64 if v.dtype == torch.bool else v.dtype).tolist()} for k, v in back.items()}
    expected["conv.weight"]["values"] = [float(x) for x in back["conv.weight"].reshape(-1).tolist()]
    with open("expected.json", "w") as f:
        json.dump(expected, f, indent=1)

    bn = torch.nn.BatchNorm2d(2)
    save({"net": bn.state_dict(), "acc": 93.5, "epoch": 3}, "checkpoint.pt")
    save({"w": torch.nn.Parameter(torch.ones(2, 2))}, "parameter.pt")
    save({"w": torch.ones(2)}, "legacy.pt", _use_new_zipfile_serialization=False)
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), "torchscript.pt")
    save({"w": torch.zeros(2, dtype=torch.complex64)}, "complex.pt")  # a dtype not handled

    # HOSTILE: each must be refused with a clear error.
    save({"w": torch.ones(2), "x": Evil()}, "evil_os_system.pt")  # GLOBAL posix.system
    save({"w": torch.ones(2), "x": Plain()}, "evil_plain_object.pt")  # GLOBAL __main__.Plain, then NEWOBJ
    save({"a": torch.zeros(2, 3)}, "_small.pt")
    patch_pickle("_small.pt", "evil_size_overrun.pt", b"QK\x00K\x02K\x03\x86", b"QK\x00K\x05K\x03\x86")
    patch_pickle("_small.pt", "evil_stride_overrun.pt", b"K\x03K\x01\x86", b"K\x03K\x02\x86")
    patch_pickle("_small.pt", "evil_offset_overrun.pt", b"QK\x00K\x02K\x03\x86", b"QK\x01K\x02K\x03\x86")
    patch_pickle("_small.pt", "evil_numel.pt", b"K\x06t", b"K\x07t")  # declares 7 elements, entry holds 6
    rewrite("_small.pt", "evil_short_entry.pt",
            lambda n, d: d[:-4] if n.endswith("/data/0") else d)  # entry shorter than the 6 declared
    rewrite("_small.pt", "evil_path.pt",
            lambda n, d: d.replace(b"X\x01\x00\x00\x000", b"X\x05\x00\x00\x00../..") if n.endswith("/data.pkl") else d)
    with open("state_dict.pt", "rb") as f:
        data = f.read()
    with open("evil_truncated.pt", "wb") as f:
        f.write(data[: len(data) // 2])
    os.remove("_small.pt")


if __name__ == "__main__":
    main()
