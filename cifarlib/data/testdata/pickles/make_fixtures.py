#!/usr/bin/env python3
"""Writes CIFAR pickles in torchvision's layout (cifar-10-batches-py, cifar-100-python) for
cifarlib's tests, with Python's own pickle module and NumPy.

    make_fixtures.py fixtures OUTDIR
        the small fixtures committed in cifarlib/data/testdata/pickles (good files in both
        protocols, meta files, hostile and malformed files); TestPickleFixturesUpToDate
        regenerates them and compares byte for byte.
    make_fixtures.py convert BINROOT OUTROOT [--protocol 2|4]
        converts a binary-layout folder (cifar-10-batches-bin, cifar-100-binary, e.g. written by
        `cifarlab synth`) to the python layout, record for record.

The official files were written by Python 2's cPickle with protocol 2: their keys and byte
strings are Python 2 `str`, which cPickle writes with SHORT_BINSTRING / BINSTRING, and the
array is rebuilt by numpy.core.multiarray._reconstruct. Python 3's pickle writes `bytes` under
protocol 2 as a call of the global _codecs.encode instead (not what the official files hold),
so Py2Pickler below (pickle's pure-Python pickler) writes bytes with Python 2's opcodes and
names the globals as NumPy did under Python 2. Protocol 4 files are written by the standard
pickler, as modern NumPy and Python do (numpy._core.multiarray, STACK_GLOBAL, FRAME, BINBYTES).
"""
import io
import os
import pickle
import struct
import sys

import numpy as np

try:  # NumPy 2
    from numpy._core.multiarray import _reconstruct
except ImportError:  # NumPy 1
    from numpy.core.multiarray import _reconstruct

IMAGE_BYTES = 3072


class Py2Pickler(pickle._Pickler):
    """Protocol 2 as Python 2's cPickle wrote the CIFAR files."""

    dispatch = pickle._Pickler.dispatch.copy()

    def save_py2_str(self, obj):
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch[bytes] = save_py2_str

    GLOBALS = {
        id(_reconstruct): b"cnumpy.core.multiarray\n_reconstruct\n",
        id(np.ndarray): b"cnumpy\nndarray\n",
        id(np.dtype): b"cnumpy\ndtype\n",
    }

    def save_global(self, obj, name=None):
        text = self.GLOBALS.get(id(obj))
        if text is None:
            return super().save_global(obj, name)
        self.write(text)
        self.memoize(obj)

    def reducer_override(self, obj):
        if isinstance(obj, np.ndarray):
            return (_reconstruct, (np.ndarray, (0,), b"b"),
                    (1, obj.shape, obj.dtype, False, obj.tobytes()))
        if isinstance(obj, np.dtype):
            return (np.dtype, (obj.str[1:].encode(), 0, 1), (3, b"|", None, None, None, -1, -1, 0))
        return NotImplemented


def py2_dumps(obj):
    buf = io.BytesIO()
    Py2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def dumps(obj, protocol):
    return py2_dumps(obj) if protocol == 2 else pickle.dumps(obj, protocol=protocol)


def key(name, protocol):
    """Python 2 str keys (bytes here) for protocol 2, str keys for protocol 4."""
    return name.encode() if protocol == 2 else name


def text(s, protocol):
    return s.encode() if protocol == 2 else s


def batch(dataset, pixels, labels, protocol, label="training batch 1 of 5"):
    """A batch dict. labels: a list (CIFAR-10) or a pair of lists (coarse, fine)."""
    n = pixels.shape[0]
    d = {key("batch_label", protocol): text(label, protocol)}
    if dataset == "cifar10":
        d[key("labels", protocol)] = list(labels)
    else:
        d[key("fine_labels", protocol)] = list(labels[1])
        d[key("coarse_labels", protocol)] = list(labels[0])
    d[key("data", protocol)] = pixels
    d[key("filenames", protocol)] = [text("img_%05d.png" % i, protocol) for i in range(n)]
    return d


CIFAR10_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def meta(dataset, fine, coarse, protocol):
    if dataset == "cifar10":
        return {key("num_cases_per_batch", protocol): 10000,
                key("label_names", protocol): [text(s, protocol) for s in fine],
                key("num_vis", protocol): IMAGE_BYTES}
    return {key("fine_label_names", protocol): [text(s, protocol) for s in fine],
            key("coarse_label_names", protocol): [text(s, protocol) for s in coarse]}


def pattern(n):
    """The pixels and labels of cifarlib's testRecords(spec, n) (records_test.go)."""
    i = np.arange(n).reshape(n, 1)
    p = np.arange(IMAGE_BYTES).reshape(1, IMAGE_BYTES)
    pixels = ((31 * i + 7 * p) % 256).astype(np.uint8)
    c10 = [k % 10 for k in range(n)]
    c100 = ([k % 20 for k in range(n)], [(7 * k + 3) % 100 for k in range(n)])
    return pixels, c10, c100


class Evil:
    """Pickles as a call of an arbitrary global: what the reader must refuse."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def fixtures(out):
    os.makedirs(out, exist_ok=True)
    pixels, c10, c100 = pattern(2)
    files = {}
    for proto in (2, 4):
        files["cifar10_p%d" % proto] = dumps(batch("cifar10", pixels, c10, proto), proto)
        files["cifar100_p%d" % proto] = dumps(batch("cifar100", pixels, c100, proto, "training batch 1 of 1"), proto)
    # Protocol 4 with bytes keys (a dict re-saved by Python 3 without decoding its keys).
    d = {k.encode(): v for k, v in batch("cifar10", pixels, c10, 4).items()}
    files["cifar10_p4_bytes_keys"] = pickle.dumps(d, protocol=4)
    files["cifar10_meta"] = py2_dumps(meta("cifar10", CIFAR10_NAMES, None, 2))
    fine = ["fine%02d" % k for k in range(100)]
    coarse = ["coarse%02d" % k for k in range(20)]
    files["cifar100_meta"] = py2_dumps(meta("cifar100", fine, coarse, 2))
    files["cifar100_meta_p4"] = pickle.dumps(meta("cifar100", fine, coarse, 4), protocol=4)

    # Hostile: globals that would execute code in Python.
    files["evil_os_system_p0"] = b"cos\nsystem\n(S'echo pwned'\ntR."
    files["evil_posix_system_p2"] = pickle.dumps(Evil(os.system, "echo pwned"), protocol=2)
    files["evil_eval_p4"] = pickle.dumps(Evil(eval, "print('pwned')"), protocol=4)
    # Hostile: globals gopickle resolves before FindClass.
    files["evil_ordereddict_p4"] = pickle.dumps({"data": __import__("collections").OrderedDict()}, protocol=4)
    files["evil_copy_reg_p2"] = b"\x80\x02ccopy_reg\n_reconstructor\nq\x00."
    # Python 3's own protocol 2: bytes through the _codecs.encode global.
    files["py3_protocol2"] = pickle.dumps(batch("cifar10", pixels[:1], c10[:1], 4), protocol=2)

    # Malformed.
    good = files["cifar10_p2"]
    files["truncated"] = good[: len(good) * 3 // 5]
    files["wrong_shape"] = dumps(batch("cifar10", pixels.reshape(2, 3, 32, 32), c10, 2), 2)
    files["wrong_dtype"] = dumps(batch("cifar10", pixels[:, :1536].view(np.uint16), c10, 2), 2)
    files["label_out_of_range"] = dumps(batch("cifar10", pixels, [3, 10], 2), 2)
    files["fine_label_out_of_range"] = dumps(batch("cifar100", pixels, ([1, 2], [5, 100]), 2), 2)
    d = batch("cifar10", pixels, c10, 2)
    d[b"label"] = d.pop(b"labels")
    files["wrong_keys"] = dumps(d, 2)
    files["label_count"] = dumps(batch("cifar10", pixels, c10[:1], 2), 2)
    d = batch("cifar10", pixels, c10, 2)
    d[b"labels"] = [b"3", b"4"]
    files["label_not_int"] = dumps(d, 2)
    files["not_a_dict"] = py2_dumps([pixels])
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name + ".pkl"), "wb") as f:
            f.write(data)


def convert(src, dst, protocol):
    """Rewrites the binary-layout folders under src as python-layout folders under dst."""
    layouts = [
        ("cifar10", "cifar-10-batches-bin", "cifar-10-batches-py", 1,
         [("data_batch_%d.bin" % k, "data_batch_%d" % k) for k in range(1, 6)] + [("test_batch.bin", "test_batch")],
         "batches.meta"),
        ("cifar100", "cifar-100-binary", "cifar-100-python", 2, [("train.bin", "train"), ("test.bin", "test")], "meta"),
    ]
    for dataset, bin_dir, py_dir, label_bytes, files, meta_name in layouts:
        if not os.path.isdir(os.path.join(src, bin_dir)):
            continue
        os.makedirs(os.path.join(dst, py_dir), exist_ok=True)
        for bin_name, py_name in files:
            raw = np.fromfile(os.path.join(src, bin_dir, bin_name), dtype=np.uint8)
            recs = raw.reshape(-1, label_bytes + IMAGE_BYTES)
            pixels = np.ascontiguousarray(recs[:, label_bytes:])
            if label_bytes == 1:
                labels = [int(v) for v in recs[:, 0]]
            else:
                labels = ([int(v) for v in recs[:, 0]], [int(v) for v in recs[:, 1]])
            with open(os.path.join(dst, py_dir, py_name), "wb") as f:
                f.write(dumps(batch(dataset, pixels, labels, protocol, py_name), protocol))
        fine = CIFAR10_NAMES if dataset == "cifar10" else ["fine%02d" % k for k in range(100)]
        coarse = None if dataset == "cifar10" else ["coarse%02d" % k for k in range(20)]
        with open(os.path.join(dst, py_dir, meta_name), "wb") as f:
            f.write(dumps(meta(dataset, fine, coarse, protocol), protocol))


def main(argv):
    if len(argv) == 2 and argv[0] == "fixtures":
        fixtures(argv[1])
    elif len(argv) in (3, 5) and argv[0] == "convert":
        protocol = int(argv[4]) if len(argv) == 5 and argv[3] == "--protocol" else 2
        convert(argv[1], argv[2], protocol)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
