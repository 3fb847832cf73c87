"""Checkpoints: round trips, metadata, loading rules, integrity checks, pickles refused, atomicity,
and resuming training from a checkpoint giving the uninterrupted run's parameters bit for bit."""

from __future__ import annotations

import json
import os
import pickle
import zipfile

import numpy as np
import pytest

from sporeling.core import Parameter, Tensor, nn, ops, random_state, value_and_grad
from sporeling.core import load_checkpoint as top_load
from sporeling.core.train import serialization as ser
from sporeling.core.train.serialization import (
    CheckpointError,
    ParameterMismatchError,
    load_checkpoint,
    load_checkpoint_metadata,
    load_param_into_net,
    save_checkpoint,
)

# ---- helpers -------------------------------------------------------------------------------


class Dense(nn.Cell):
    """y = x @ W.T + b, written with Parameters only (independent of nn.layers)."""

    def __init__(self, n_in: int, n_out: int, seed: int) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        w = (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)
        self.weight = Parameter(Tensor(w), name="weight")
        self.bias = Parameter(Tensor(np.zeros(n_out, np.float32)), name="bias")

    def construct(self, x: Tensor) -> Tensor:
        return ops.matmul(x, self.weight.T) + self.bias


class MLP(nn.Cell):
    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.fc1 = Dense(4, 8, seed)
        self.fc2 = Dense(8, 3, seed + 1)

    def construct(self, x: Tensor) -> Tensor:
        h = ops.relu(self.fc1(x))
        h, _ = ops.dropout(h, p=0.25, training=self.training)  # draws from random_state
        return self.fc2(h)


class Momentum(nn.Cell):
    """A hand-written momentum optimizer whose state are Parameters named moments.<name>."""

    def __init__(self, params: list[Parameter], lr: float = 0.1, momentum: float = 0.9) -> None:
        super().__init__(auto_prefix=False)
        self.parameters = list(params)
        self.lr = lr
        self.momentum = momentum
        self.moments = []
        for i, p in enumerate(self.parameters):
            m = Parameter(Tensor(np.zeros(p.shape, np.float32)), name=f"moments.{p.name}")
            m.requires_grad = False
            setattr(self, f"moment{i}", m)
            self.moments.append(m)
        self.global_step = Parameter(Tensor(np.array(0, np.int32)), name="global_step")
        self.global_step.requires_grad = False

    def construct(self, grads: tuple[Tensor, ...]) -> bool:
        for p, m, g in zip(self.parameters, self.moments, grads, strict=True):
            v = self.momentum * m.asnumpy() + g.asnumpy()
            m.set_data(Tensor(v.astype(np.float32)))
            p.set_data(Tensor((p.asnumpy() - self.lr * v).astype(np.float32)))
        self.global_step.set_data(Tensor(np.array(int(self.global_step) + 1, np.int32)))
        return True


class TrainStep(nn.Cell):
    def __init__(self, net: nn.Cell, opt: nn.Cell) -> None:
        super().__init__(auto_prefix=False)
        self.network = net
        self.optimizer = opt
        self.weights = opt.parameters

    def construct(self, x: Tensor, y: Tensor) -> Tensor:
        def loss_fn(x: Tensor, y: Tensor) -> Tensor:
            return ops.reduce_mean(ops.square(self.network(x) - y))

        loss, grads = value_and_grad(loss_fn, None, self.weights)(x, y)
        self.optimizer(grads)
        return loss


def _write(path, obj, **kw):
    save_checkpoint(obj, str(path), **kw)
    return str(path)


def _bytes_of(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# ---- round trips ---------------------------------------------------------------------------

DTYPES = [
    np.float16,
    np.float32,
    np.float64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.bool_,
]
SHAPES = [(), (0,), (1,), (5,), (2, 3), (2, 0, 4), (3, 1, 2, 2)]


def test_round_trip_all_dtypes_and_shapes(tmp_path):
    rng = np.random.default_rng(7)
    items = []
    for dt in DTYPES:
        for shape in SHAPES:
            if np.dtype(dt).kind == "f":
                arr = rng.standard_normal(shape).astype(dt)
            elif dt is np.bool_:
                arr = rng.random(shape) > 0.5
            else:
                info = np.iinfo(dt)
                arr = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
            name = f"t.{np.dtype(dt).name}.{'x'.join(map(str, shape)) or 'scalar'}"
            items.append({"name": name, "data": Tensor(arr)})
    path = _write(tmp_path / "all.ckpt", items)
    loaded = load_checkpoint(path)
    assert list(loaded) == [it["name"] for it in items]  # save order is kept
    for it in items:
        p = loaded[it["name"]]
        assert isinstance(p, Parameter) and p.name == it["name"]
        want = it["data"].asnumpy()
        got = p.asnumpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()  # bit-exact, incl. -0.0 and NaN payloads
        assert got.flags.writeable


def test_special_floats_bit_exact(tmp_path):
    arr = np.array([np.nan, -0.0, np.inf, -np.inf, np.finfo(np.float32).tiny / 2], np.float32)
    path = _write(tmp_path / "f.ckpt", [{"name": "x", "data": Tensor(arr)}])
    assert load_checkpoint(path)["x"].asnumpy().tobytes() == arr.tobytes()


def test_cell_round_trip_names_requires_grad_and_load_into_net(tmp_path):
    net = MLP(seed=1)
    net.fc2.bias.requires_grad = False
    path = _write(tmp_path / "net.ckpt", net)
    loaded = load_checkpoint(path)
    assert list(loaded) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert loaded["fc2.bias"].requires_grad is False
    assert loaded["fc1.weight"].requires_grad is True
    other = MLP(seed=99)
    assert load_param_into_net(other, loaded) == ([], [])
    for (n1, p1), (n2, p2) in zip(net.parameters_and_names(), other.parameters_and_names()):
        assert n1 == n2 and np.array_equal(p1.asnumpy(), p2.asnumpy())
    # load_checkpoint(net=...) loads too; values are copies, not shared buffers
    third = MLP(seed=5)
    load_checkpoint(path, net=third)
    third.fc1.weight.set_data(Tensor(np.zeros((8, 4), np.float32)))
    assert np.array_equal(net.fc1.weight.asnumpy(), other.fc1.weight.asnumpy())


def test_optimizer_state_in_train_network_checkpoint(tmp_path):
    net = MLP()
    opt = Momentum(net.trainable_params())
    step = TrainStep(net, opt)
    random_state.set_seed(3)
    net.set_train()
    x = Tensor(np.ones((2, 4), np.float32))
    y = Tensor(np.zeros((2, 3), np.float32))
    step(x, y)
    path = _write(tmp_path / "train.ckpt", step)
    loaded = load_checkpoint(path)
    assert {"moments.fc1.weight", "moments.fc2.bias", "global_step"} <= set(loaded)
    assert int(loaded["global_step"]) == 1
    assert np.array_equal(loaded["moments.fc1.weight"].asnumpy(), opt.moment0.asnumpy())


def test_save_accepts_parameter_list_and_loaded_dict(tmp_path):
    net = MLP()
    p1 = _write(tmp_path / "a.ckpt", net.trainable_params())
    d = load_checkpoint(p1)
    p2 = _write(tmp_path / "b.ckpt", d)
    assert list(load_checkpoint(p2)) == list(d)


def test_suffix_appended_like_mindspore(tmp_path):
    save_checkpoint([{"name": "a", "data": Tensor([1.0])}], str(tmp_path / "model"))
    assert os.listdir(tmp_path) == ["model.ckpt"]
    save_checkpoint([{"name": "a", "data": Tensor([1.0])}], str(tmp_path / "m.safetensors"))
    assert sorted(os.listdir(tmp_path)) == ["m.safetensors", "model.ckpt"]


def test_top_level_exports():
    import sporeling.core as core

    assert core.save_checkpoint is save_checkpoint
    assert top_load is load_checkpoint
    assert core.load_param_into_net is load_param_into_net


def test_plain_safetensors_file_from_another_tool_loads(tmp_path):
    from safetensors.numpy import save_file

    path = str(tmp_path / "hf.safetensors")
    save_file({"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, path, metadata={"a": "b"})
    loaded = load_checkpoint(path)
    assert loaded["w"].asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert load_checkpoint_metadata(path)["epoch"] is None


# ---- metadata and append_dict ---------------------------------------------------------------


def test_metadata_append_dict_and_rng_state(tmp_path):
    random_state.set_seed(11)
    ops.uniform((3,), Tensor(0.0), Tensor(1.0))  # advance the generator
    state = random_state.get_rng_state()
    append = {
        "epoch_num": 4,
        "step_num": 40,
        "lr": 0.125,
        "note": "hello",
        "flag": True,
        "big": 2**62,
        "inf": float("inf"),
        "extra": Tensor(np.array([1, 2, 3], np.int32)),
    }
    path = _write(tmp_path / "m.ckpt", MLP(), append_dict=append)
    meta = load_checkpoint_metadata(path)
    assert meta["epoch"] == 4 and meta["step"] == 40
    assert meta["format_version"] == ser.FORMAT_VERSION
    from sporeling.core import __version__

    assert meta["sporeling_version"] == __version__
    assert meta["rng_state"] == json.loads(json.dumps(state))
    assert meta["append"] == {
        "epoch_num": 4,
        "step_num": 40,
        "lr": 0.125,
        "note": "hello",
        "flag": True,
        "big": 2**62,
        "inf": float("inf"),
    }
    assert meta["tensors"]["extra"] == ((3,), "int32")
    loaded = load_checkpoint(path)
    assert loaded["note"] == "hello"  # strings stay strings (MindSpore)
    assert isinstance(loaded["lr"], Parameter) and float(loaded["lr"]) == 0.125
    assert int(loaded["epoch_num"]) == 4 and bool(loaded["flag"]) is True
    assert loaded["big"].asnumpy().item() == 2**62
    assert loaded["extra"].asnumpy().tolist() == [1, 2, 3]
    # restoring the RNG state repeats the draws
    a = ops.uniform((4,), Tensor(0.0), Tensor(1.0)).asnumpy()
    random_state.set_rng_state(meta["rng_state"])
    b = ops.uniform((4,), Tensor(0.0), Tensor(1.0)).asnumpy()
    assert np.array_equal(a, b)


def test_metadata_is_json_strings_in_safetensors_header(tmp_path):
    path = _write(tmp_path / "m.ckpt", MLP(), append_dict={"epoch_num": 1})
    data = _bytes_of(path)
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    meta = header["__metadata__"]
    assert set(meta) == set(ser._META_KEYS)
    assert all(isinstance(v, str) for v in meta.values())
    assert json.loads(meta["format"]) == "sporeling.checkpoint"


def test_append_dict_errors(tmp_path):
    net = MLP()
    with pytest.raises(TypeError, match=r"append_dict\['bad'\]"):
        save_checkpoint(net, str(tmp_path / "a.ckpt"), append_dict={"bad": [1, 2]})
    with pytest.raises(ValueError, match="fc1.weight"):
        save_checkpoint(net, str(tmp_path / "a.ckpt"), append_dict={"fc1.weight": 1})
    with pytest.raises(TypeError, match="append_dict"):
        save_checkpoint(net, str(tmp_path / "a.ckpt"), append_dict=[1])
    assert os.listdir(tmp_path) == []


def test_save_argument_errors(tmp_path):
    net = MLP()
    with pytest.raises(TypeError, match="save_obj"):
        save_checkpoint(3, str(tmp_path / "a.ckpt"))
    with pytest.raises(TypeError, match="save_obj"):
        save_checkpoint([1, 2], str(tmp_path / "a.ckpt"))
    with pytest.raises(TypeError, match="ckpt_file_name"):
        save_checkpoint(net, 5)
    with pytest.raises(TypeError, match="async_save"):
        save_checkpoint(net, str(tmp_path / "a.ckpt"), async_save="yes")
    with pytest.raises(ValueError, match="enc_key.*not supported"):
        save_checkpoint(net, str(tmp_path / "a.ckpt"), enc_key=b"0123456789abcdef")
    with pytest.raises(FileNotFoundError, match="directory"):
        save_checkpoint(net, str(tmp_path / "missing" / "a.ckpt"))
    with pytest.raises(ValueError, match="both named 'w'"):
        save_checkpoint(
            [{"name": "w", "data": Tensor([1.0])}, {"name": "w", "data": Tensor([2.0])}],
            str(tmp_path / "a.ckpt"),
        )


def test_async_save_writes_a_snapshot(tmp_path):
    import threading

    p = Parameter(Tensor(np.arange(4, dtype=np.float32)), name="p")
    path = str(tmp_path / "async.ckpt")
    save_checkpoint([p], path, async_save=True)
    for t in threading.enumerate():
        if t.name == ser.ASYNC_THREAD_NAME:
            t.join()
    assert load_checkpoint(path)["p"].asnumpy().tolist() == [0, 1, 2, 3]


# ---- loading rules ---------------------------------------------------------------------------


def test_filter_and_specify_prefix(tmp_path):
    path = _write(tmp_path / "m.ckpt", MLP(), append_dict={"epoch_num": 1})
    assert list(load_checkpoint(path, filter_prefix="fc1")) == [
        "fc2.weight",
        "fc2.bias",
        "epoch_num",
    ]
    assert list(load_checkpoint(path, specify_prefix="fc1")) == ["fc1.weight", "fc1.bias"]
    assert list(load_checkpoint(path, specify_prefix=["fc", "epoch"], filter_prefix=("fc2",))) == [
        "fc1.weight",
        "fc1.bias",
        "epoch_num",
    ]
    with pytest.raises(ValueError, match="empty"):
        load_checkpoint(path, specify_prefix="nothing")
    with pytest.raises(TypeError, match="filter_prefix"):
        load_checkpoint(path, filter_prefix=3)
    with pytest.raises(ValueError, match="specify_prefix"):
        load_checkpoint(path, specify_prefix=[""])
    with pytest.raises(ValueError, match="dec_key.*not supported"):
        load_checkpoint(path, dec_key=b"k" * 16)
    with pytest.raises(TypeError, match="net"):
        load_checkpoint(path, net="net")
    with pytest.raises(TypeError, match="strict_load"):
        load_checkpoint(path, strict_load=1)


def test_load_param_into_net_reports_both_lists():
    net = MLP()
    params = {
        "fc1.weight": Parameter(Tensor(np.ones((8, 4), np.float32)), name="fc1.weight"),
        "unused": Parameter(Tensor([1.0]), name="unused"),
        "note": "a string",
    }
    not_loaded, ckpt_not_loaded = load_param_into_net(net, params)
    assert not_loaded == ["fc1.bias", "fc2.weight", "fc2.bias"]
    assert ckpt_not_loaded == ["unused", "note"]
    assert np.array_equal(net.fc1.weight.asnumpy(), np.ones((8, 4), np.float32))


def test_load_param_into_net_strips_a_prefix_unless_strict():
    src = MLP(seed=3)
    wrapped = {
        "backbone." + p.name: Parameter(Tensor(p.asnumpy()), name="backbone." + p.name)
        for p in src.get_parameters()
    }
    strict_net = MLP(seed=4)
    not_loaded, _ = load_param_into_net(strict_net, wrapped, strict_load=True)
    assert len(not_loaded) == 4
    net = MLP(seed=4)
    not_loaded, ckpt_not_loaded = load_param_into_net(net, wrapped)
    assert not_loaded == [] and ckpt_not_loaded == []
    assert np.array_equal(net.fc2.weight.asnumpy(), src.fc2.weight.asnumpy())


def test_dtype_conversion_and_mismatch_errors():
    net = MLP()
    as64 = {"fc1.bias": Parameter(Tensor(np.full(8, 0.5, np.float64)), name="fc1.bias")}
    load_param_into_net(net, as64)  # float64 -> float32 when not strict
    assert net.fc1.bias.dtype == net.fc1.weight.dtype
    assert net.fc1.bias.asnumpy().tolist() == [0.5] * 8
    with pytest.raises(ParameterMismatchError, match="(?i)'fc1.bias'.*float32.*float64"):
        load_param_into_net(net, as64, strict_load=True)
    ints = {"fc1.bias": Parameter(Tensor(np.zeros(8, np.int32)), name="fc1.bias")}
    with pytest.raises(ParameterMismatchError, match="(?i)'fc1.bias'.*int32"):
        load_param_into_net(net, ints)
    shape = {"fc2.weight": Parameter(Tensor(np.zeros((3, 9), np.float32)), name="fc2.weight")}
    with pytest.raises(ParameterMismatchError, match=r"'fc2.weight'.*\(3, 8\).*\(3, 9\)"):
        load_param_into_net(net, shape)
    with pytest.raises(RuntimeError):  # MindSpore raises RuntimeError here
        load_param_into_net(net, shape)
    with pytest.raises(ValueError):  # ... and it is a ValueError for Sporeling's conventions
        load_param_into_net(net, shape)
    with pytest.raises(ParameterMismatchError, match="'fc1.bias'.*str"):
        load_param_into_net(net, {"fc1.bias": "text"})
    with pytest.raises(TypeError, match="net"):
        load_param_into_net({}, {})
    with pytest.raises(TypeError, match="parameter_dict"):
        load_param_into_net(net, [])
    with pytest.raises(TypeError, match="parameter_dict"):
        load_param_into_net(net, {"fc1.bias": 3})


def test_load_checkpoint_mismatch_names_parameter(tmp_path):
    path = _write(tmp_path / "m.ckpt", MLP())

    class Other(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = Dense(4, 5, 0)

    with pytest.raises(ParameterMismatchError, match="fc1.weight"):
        load_checkpoint(path, net=Other())


# ---- integrity -------------------------------------------------------------------------------


def test_missing_and_directory(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist") as info:
        load_checkpoint(str(tmp_path / "nope.ckpt"))
    assert info.value.code == "checkpoint-not-found"
    assert "nope.ckpt" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(CheckpointError, match="directory"):
        load_checkpoint(str(tmp_path))


def test_every_truncation_is_detected(tmp_path):
    path = _write(tmp_path / "m.ckpt", MLP(), append_dict={"epoch_num": 2})
    data = _bytes_of(path)
    for cut in range(len(data)):
        with pytest.raises(CheckpointError) as info:
            ser._read(path, data[:cut])
        assert str(path) in str(info.value)
    # through the public API, with a message that says so
    with open(path, "r+b") as f:
        f.truncate(len(data) - 10)
    with pytest.raises(CheckpointError, match="truncated") as info:
        load_checkpoint(path)
    assert info.value.code == "checkpoint-truncated"


@pytest.mark.parametrize("mask", [0x01, 0x80, 0xFF])
def test_every_flipped_byte_is_detected(tmp_path, mask):
    items = [
        {"name": "w", "data": Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))},
        {"name": "flag", "data": Tensor(np.array(True))},
        {"name": "i", "data": Tensor(np.array([1, -2], np.int16))},
    ]
    path = _write(tmp_path / "m.ckpt", items, append_dict={"epoch_num": 1, "note": "x"})
    data = bytearray(_bytes_of(path))
    ser._read(path, bytes(data))  # the intact file reads
    for i in range(len(data)):
        data[i] ^= mask
        with pytest.raises(CheckpointError):
            ser._read(path, bytes(data))
        data[i] ^= mask


def test_corrupt_tensor_bytes_message(tmp_path):
    path = _write(tmp_path / "m.ckpt", [{"name": "w", "data": Tensor(np.zeros(16, np.float32))}])
    data = bytearray(_bytes_of(path))
    data[-3] ^= 0x10
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(CheckpointError, match=r"tensor 'w' are corrupt \(SHA-256") as info:
        load_checkpoint(path)
    assert info.value.code == "checkpoint-corrupt"


def test_bad_header_and_garbage(tmp_path):
    cases = {
        "empty.ckpt": b"",
        "short.ckpt": b"abc",
        "huge.ckpt": (2**40).to_bytes(8, "little") + b"{}",
        "notjson.ckpt": (4).to_bytes(8, "little") + b"{abc",
        "list.ckpt": (2).to_bytes(8, "little") + b"[]",
        "text.ckpt": b"hello world, this is not a checkpoint",
        "proto.ckpt": b"\n\x0bconv.weight\x12\x04",
    }
    for name, payload in cases.items():
        (tmp_path / name).write_bytes(payload)
        with pytest.raises(CheckpointError, match=name):
            load_checkpoint(str(tmp_path / name))
    with pytest.raises(CheckpointError, match="MindSpore protobuf"):
        load_checkpoint(str(tmp_path / "proto.ckpt"))


def test_newer_format_version_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(ser, "FORMAT_VERSION", 99)
    path = _write(tmp_path / "m.ckpt", MLP())
    monkeypatch.undo()
    with pytest.raises(CheckpointError, match="format version 99.*upgrade") as info:
        load_checkpoint(path)
    assert info.value.code == "checkpoint-newer-format"


class _Evil:
    """Unpickling this calls open(marker, 'w'): proof of code execution if it happens."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_pickle_payload_is_refused_and_not_executed(tmp_path, protocol):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Evil(str(marker)), protocol=protocol)
    path = tmp_path / "evil.ckpt"
    path.write_bytes(payload)
    with pytest.raises(CheckpointError, match="pickle") as info:
        load_checkpoint(str(path))
    assert not marker.exists()
    if protocol >= 2:
        assert info.value.code == "checkpoint-pickle-refused"
        assert "never unpickles" in str(info.value)
    with pytest.raises(CheckpointError):
        load_checkpoint_metadata(str(path))
    with pytest.raises(CheckpointError):
        load_checkpoint(str(path), net=MLP())
    assert not marker.exists()
    # the control: the payload really does run code when unpickled
    f = pickle.loads(payload)
    f.close()
    assert marker.exists()


def test_torch_style_zip_is_refused_and_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(_Evil(str(marker)), protocol=2))
    with pytest.raises(CheckpointError, match="zip archive") as info:
        load_checkpoint(str(path))
    assert info.value.code == "checkpoint-pickle-refused"
    assert not marker.exists()


def test_pickle_module_is_never_used(tmp_path, monkeypatch):
    """No load path reaches pickle: loading works with pickle's loaders disabled."""

    def boom(*a, **k):
        raise AssertionError("pickle used")

    path = _write(tmp_path / "m.ckpt", MLP(), append_dict={"epoch_num": 1, "n": "s"})
    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, boom)
    load_checkpoint(path, net=MLP())
    load_checkpoint_metadata(path)


# ---- atomic writes ---------------------------------------------------------------------------


def test_crash_mid_write_keeps_previous_checkpoint(tmp_path, monkeypatch):
    net = MLP(seed=1)
    path = _write(tmp_path / "m.ckpt", net, append_dict={"epoch_num": 1})
    before = _bytes_of(path)
    real = ser._write_payload

    def crash(tmp, arrays, metadata):
        real(tmp, arrays, metadata)  # the temporary file is written in full ...
        with open(tmp, "r+b") as f:  # ... then half of it is lost as the "process dies"
            f.truncate(os.path.getsize(tmp) // 2)
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(ser, "_write_payload", crash)
    net2 = MLP(seed=2)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(net2, path, append_dict={"epoch_num": 2})
    monkeypatch.undo()
    assert _bytes_of(path) == before
    assert os.listdir(tmp_path) == ["m.ckpt"]  # no temporary file left behind
    assert load_checkpoint_metadata(path)["epoch"] == 1
    # and a successful save replaces it whole
    save_checkpoint(net2, path, append_dict={"epoch_num": 2})
    assert load_checkpoint_metadata(path)["epoch"] == 2
    assert os.listdir(tmp_path) == ["m.ckpt"]


def test_write_is_fsynced_and_renamed(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(
        os,
        "replace",
        lambda a, b: (calls.append(("replace", os.path.dirname(a))), real_replace(a, b))[1],
    )
    path = _write(tmp_path / "m.ckpt", MLP())
    monkeypatch.undo()
    # file fsync, then rename from the same directory, then directory fsync
    assert calls == ["fsync", ("replace", str(tmp_path)), "fsync"]
    assert load_checkpoint(path)


# ---- resume equivalence ----------------------------------------------------------------------

N_SAMPLES, BATCH, EPOCHS = 24, 4, 3
STEPS_PER_EPOCH = N_SAMPLES // BATCH


def _data():
    rng = np.random.default_rng(123)
    x = rng.standard_normal((N_SAMPLES, 4)).astype(np.float32)
    y = rng.standard_normal((N_SAMPLES, 3)).astype(np.float32)
    return x, y


def _batches(epoch: int):
    """A shuffled epoch: the order depends only on (data seed, epoch), as dataset shuffles do."""
    x, y = _data()
    order = np.random.default_rng([99, epoch]).permutation(N_SAMPLES)
    for i in range(STEPS_PER_EPOCH):
        idx = order[i * BATCH : (i + 1) * BATCH]
        yield Tensor(x[idx]), Tensor(y[idx])


def _fresh(init_seed: int = 0):
    """New objects, as a restarted process builds them."""
    net = MLP(seed=init_seed)
    opt = Momentum(net.trainable_params(), lr=0.05)
    step = TrainStep(net, opt)
    net.set_train()
    return net, opt, step


def _train(step, start_global: int, stop_global: int, on_step=None):
    g = 0
    for epoch in range(EPOCHS):
        for x, y in _batches(epoch):
            g += 1
            if g <= start_global:
                continue  # already trained before the checkpoint
            if g > stop_global:
                return
            step(x, y)
            if on_step is not None:
                on_step(epoch + 1, g)


@pytest.mark.parametrize("k", [STEPS_PER_EPOCH + 2, STEPS_PER_EPOCH])  # mid-epoch, epoch end
def test_resume_from_checkpoint_is_bit_identical(tmp_path, k):
    total = EPOCHS * STEPS_PER_EPOCH
    random_state.set_seed(2024)
    net_a, _, step_a = _fresh()
    _train(step_a, 0, total)
    reference = {p.name: p.asnumpy().copy() for p in step_a.get_parameters()}

    # interrupted run: train to k, save, and keep training to make sure nothing leaks back
    random_state.set_seed(2024)
    _, _, step_b = _fresh()
    path = str(tmp_path / "resume.ckpt")

    def save_at_k(epoch: int, g: int) -> None:
        if g == k:
            save_checkpoint(step_b, path, append_dict={"epoch_num": epoch, "step_num": g})

    _train(step_b, 0, total, on_step=save_at_k)

    # "restart": new objects, a different seed, then load everything back
    random_state.set_seed(7)
    net_c, opt_c, step_c = _fresh(init_seed=42)  # other initial weights: the load must win
    meta = load_checkpoint_metadata(path)
    assert meta["step"] == k and meta["epoch"] == (k - 1) // STEPS_PER_EPOCH + 1
    param_not_load, ckpt_not_load = load_param_into_net(step_c, load_checkpoint(path))
    assert param_not_load == [] and ckpt_not_load == ["epoch_num", "step_num"]
    assert int(opt_c.global_step) == k
    random_state.set_rng_state(meta["rng_state"])
    _train(step_c, meta["step"], total)

    resumed = {p.name: p.asnumpy() for p in step_c.get_parameters()}
    assert resumed.keys() == reference.keys()
    for name, value in reference.items():
        assert resumed[name].tobytes() == value.tobytes(), name
    assert int(opt_c.global_step) == total


def test_resume_without_rng_state_differs(tmp_path):
    """The control: without restoring the RNG the dropout masks differ, so would the result."""
    total = EPOCHS * STEPS_PER_EPOCH
    k = STEPS_PER_EPOCH + 1
    random_state.set_seed(5)
    _, _, step_a = _fresh()
    _train(step_a, 0, total)
    random_state.set_seed(5)
    _, _, step_b = _fresh()
    path = str(tmp_path / "r.ckpt")
    _train(step_b, 0, k)
    save_checkpoint(step_b, path)
    random_state.set_seed(6)
    _, _, step_c = _fresh()
    load_checkpoint(path, net=step_c)
    _train(step_c, k, total)
    a = step_a.network.fc1.weight.asnumpy()
    c = step_c.network.fc1.weight.asnumpy()
    assert not np.array_equal(a, c)
