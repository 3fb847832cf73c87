"""Make the MindSpore .ckpt test fixtures with real MindSpore, and read Sporeling's files back.

Run with a Python that has MindSpore (never a Sporeling dependency), e.g.::

    uv venv -p 3.11 /tmp/msvenv && VIRTUAL_ENV=/tmp/msvenv uv pip install mindspore
    /tmp/msvenv/bin/python make_ms_ckpt_fixtures.py \
        --sporeling-python .nox/tests-package-core-runtime/bin/python

It writes, next to itself:

``ms_small_net.ckpt``
    the parameters of :class:`SmallNet` (conv + batch norm + dense, BN statistics set to
    non-trivial values) with ``append_dict`` entries (an int, a float, a str);
``ms_small_net_crc.ckpt``
    the same with ``crc_check=True`` (MindSpore 2.x's CRC trailer);
``ms_dtypes.ckpt``
    one tensor of every dtype the format stores, and a 0-d one;
``ms_small_net.json``
    every entry's dtype, shape and values, the input and the network's eval-mode output.

With ``--sporeling-python`` it also has Sporeling write ``.ckpt`` files (format="ckpt", with
and without CRC) and loads them here with MindSpore, comparing every value; the result is
printed and kept in ``ms_readback.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

HERE = os.path.dirname(os.path.abspath(__file__))


class SmallNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="same", has_bias=True)
        self.bn = nn.BatchNorm2d(2)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(2 * 4 * 4, 3)

    def construct(self, x):
        return self.fc(self.flatten(self.relu(self.bn(self.conv(x)))))


def _entry(value):
    if isinstance(value, str):
        return {"str": value}
    arr = value.asnumpy()
    return {"dtype": str(arr.dtype), "shape": list(arr.shape), "values": arr.tolist()}


def make_fixtures():
    rng = np.random.default_rng(20260101)
    ms.set_seed(7)
    net = SmallNet()
    for p in net.get_parameters():
        p.set_data(Tensor(rng.standard_normal(p.shape).astype(np.float32)))
    net.bn.moving_variance.set_data(Tensor(rng.uniform(0.5, 2.0, (2,)).astype(np.float32)))
    append = {"epoch_num": 3, "lr": 0.125, "note": "trained on héllo"}
    ms.save_checkpoint(net, os.path.join(HERE, "ms_small_net.ckpt"), append_dict=append)
    ms.save_checkpoint(net, os.path.join(HERE, "ms_small_net_crc.ckpt"), crc_check=True)
    key = bytes(range(16))  # the tests' key
    dtype_items = [{"name": "w", "data": Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))}]
    for mode, tag in (("AES-GCM", "gcm"), ("AES-CBC", "cbc")):
        ms.save_checkpoint(
            dtype_items, os.path.join(HERE, f"ms_encrypted_{tag}.ckpt"), enc_key=key, enc_mode=mode
        )
    net.set_train(False)
    x = rng.standard_normal((2, 1, 4, 4)).astype(np.float32)
    y = net(Tensor(x)).asnumpy()

    dtypes = [
        ("f16", np.float16),
        ("f32", np.float32),
        ("f64", np.float64),
        ("i8", np.int8),
        ("i16", np.int16),
        ("i32", np.int32),
        ("i64", np.int64),
        ("u8", np.uint8),
        ("b", np.bool_),
    ]
    items = [
        {"name": n, "data": Tensor((np.arange(6) % 3 - 1).astype(t).reshape(2, 3))}
        for n, t in dtypes
    ]
    items.append({"name": "scalar", "data": Tensor(np.float32(2.5))})
    items.append({"name": "vec1", "data": Tensor(np.array([7], np.int32))})
    ms.save_checkpoint(items, os.path.join(HERE, "ms_dtypes.ckpt"))

    expected = {
        "mindspore_version": ms.__version__,
        "net": {
            k: _entry(v)
            for k, v in ms.load_checkpoint(os.path.join(HERE, "ms_small_net.ckpt")).items()
        },
        "dtypes": {
            k: _entry(v)
            for k, v in ms.load_checkpoint(os.path.join(HERE, "ms_dtypes.ckpt")).items()
        },
        "input": x.tolist(),
        "output": y.tolist(),
    }
    with open(os.path.join(HERE, "ms_small_net.json"), "w") as f:
        json.dump(expected, f, indent=1)
    for name in (
        "ms_small_net.ckpt",
        "ms_small_net_crc.ckpt",
        "ms_dtypes.ckpt",
        "ms_encrypted_gcm.ckpt",
        "ms_encrypted_cbc.ckpt",
    ):
        os.chmod(os.path.join(HERE, name), 0o644)  # MindSpore leaves its files read-only
    print("wrote ms_small_net.ckpt, ms_small_net_crc.ckpt, ms_dtypes.ckpt, ms_small_net.json")


_SPORELING_WRITER = r"""
import sys, numpy as np
from sporeling.core import Tensor, save_checkpoint
out = sys.argv[1]
items = [
    {"name": "w", "data": Tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 7)},
    {"name": "h", "data": Tensor(np.array([1.5, -2.0], np.float16))},
    {"name": "i", "data": Tensor(np.array([[1, -2, 3]], np.int64))},
    {"name": "b", "data": Tensor(np.array([True, False]))},
    {"name": "s", "data": Tensor(np.float64(3.25))},
]
append = {"epoch_num": 5, "lr": 0.5, "note": "from sporeling"}
save_checkpoint(items, out + "/sp.ckpt", format="ckpt", append_dict=append)
save_checkpoint(items, out + "/sp_crc.ckpt", format="ckpt", crc_check=True)
for mode in ("AES-GCM", "AES-CBC"):
    save_checkpoint(items, out + f"/sp_{mode}.ckpt", format="ckpt", enc_key=bytes(range(16)),
                    enc_mode=mode)
"""

_EXPECTED_FROM_SPORELING = {
    "w": (np.arange(12, dtype=np.float32).reshape(3, 4) / 7),
    "h": np.array([1.5, -2.0], np.float16),
    "i": np.array([[1, -2, 3]], np.int64),
    "b": np.array([True, False]),
    "s": np.float64(3.25),
    "epoch_num": np.int64(5),
    "lr": np.float32(0.5),
    "note": "from sporeling",
}


def read_sporeling_files(python):
    report = {"mindspore_version": ms.__version__, "files": {}}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([python, "-c", _SPORELING_WRITER, tmp], check=True)
        files = [("sp.ckpt", False, None), ("sp_crc.ckpt", True, None)]
        files += [(f"sp_{m}.ckpt", False, m) for m in ("AES-GCM", "AES-CBC")]
        for name, crc, mode in files:
            dec_key = bytes(range(16)) if mode else None
            loaded = ms.load_checkpoint(
                os.path.join(tmp, name), crc_check=crc, dec_key=dec_key, dec_mode=mode or "AES-GCM"
            )
            result = {}
            for key, want in _EXPECTED_FROM_SPORELING.items():
                if name != "sp.ckpt" and key in ("epoch_num", "lr", "note"):
                    continue
                got = loaded.get(key)
                if isinstance(want, str):
                    ok = got == want
                else:
                    arr = got.asnumpy() if got is not None else None
                    ok = (
                        arr is not None
                        and arr.dtype == want.dtype
                        and arr.shape == want.shape
                        and np.array_equal(arr, want)
                    )
                result[key] = "equal" if ok else f"DIFFERENT: {got!r}"
            report["files"][name] = result
    print(json.dumps(report, indent=1))
    with open(os.path.join(HERE, "ms_readback.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sporeling-python", help="a Python with sporeling-core-runtime installed")
    args = parser.parse_args()
    make_fixtures()
    if args.sporeling_python:
        read_sporeling_files(args.sporeling_python)
