"""MindSpore's protobuf .ckpt: files written by real MindSpore (tests/train/data, made by
make_ms_ckpt_fixtures.py) read here and loaded into the same network, files written here read
back, the convert-ckpt command, and a bad-input sweep (truncated, bit-flipped, wrong magic,
huge declared sizes, pickles): every case a CheckpointError, nothing allocated beyond the file.
"""

from __future__ import annotations

import json
import os
import pickle
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from sporeling.core import Tensor, nn
from sporeling.core.cli import main as cli_main
from sporeling.core.train import protobuf_wire as wire
from sporeling.core.train.mindspore_ckpt import read_mindspore_ckpt
from sporeling.core.train.serialization import (
    CheckpointError,
    load_checkpoint,
    load_param_into_net,
    save_checkpoint,
)

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "ms_small_net.json").read_text())


class SmallNet(nn.Cell):
    """The network of make_ms_ckpt_fixtures.py, with MindSpore's parameter names."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode="same", has_bias=True)
        self.bn = nn.BatchNorm2d(2)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(2 * 4 * 4, 3)

    def construct(self, x):
        return self.fc(self.flatten(self.relu(self.bn(self.conv(x)))))


def _check_entry(name, got, want):
    if "str" in want:
        assert got == want["str"], name
        return
    arr = got.asnumpy()
    assert str(arr.dtype) == want["dtype"], name
    assert list(arr.shape) == want["shape"], name
    np.testing.assert_array_equal(arr, np.array(want["values"], dtype=want["dtype"]), name)


@pytest.mark.parametrize("fixture", ["ms_small_net.ckpt", "ms_small_net_crc.ckpt"])
def test_reads_mindspore_files(fixture):
    params = load_checkpoint(str(DATA / fixture))
    expected = EXPECTED["net"]
    if fixture == "ms_small_net_crc.ckpt":  # saved without append_dict
        expected = {k: v for k, v in expected.items() if k not in ("epoch_num", "lr", "note")}
    assert list(params) == list(expected)
    for name, want in expected.items():
        _check_entry(name, params[name], want)


def test_reads_every_dtype_mindspore_writes():
    params = load_checkpoint(str(DATA / "ms_dtypes.ckpt"))
    assert list(params) == list(EXPECTED["dtypes"])
    for name, want in EXPECTED["dtypes"].items():
        _check_entry(name, params[name], want)
    assert params["scalar"].shape == () and params["vec1"].shape == (1,)


def test_mindspore_checkpoint_runs_in_the_same_network():
    net = SmallNet()
    not_loaded, unused = load_param_into_net(net, load_checkpoint(str(DATA / "ms_small_net.ckpt")))
    assert not_loaded == [] and sorted(unused) == ["epoch_num", "lr", "note"]
    net.set_train(False)
    out = net(Tensor(np.array(EXPECTED["input"], np.float32))).asnumpy()
    np.testing.assert_allclose(out, np.array(EXPECTED["output"]), rtol=1e-5, atol=1e-5)


def test_load_checkpoint_with_net_and_filters():
    net = SmallNet()
    params = load_checkpoint(str(DATA / "ms_small_net.ckpt"), net=net, filter_prefix="bn.")
    assert not any(k.startswith("bn.") for k in params)
    np.testing.assert_array_equal(net.fc.weight.asnumpy(), params["fc.weight"].asnumpy())


@pytest.mark.parametrize("crc", [False, True])
def test_round_trip_every_dtype(tmp_path, crc):
    arrays = {
        "f16": np.array([1.5, -2.0], np.float16),
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 3,
        "f64": np.array([[np.pi]]),
        "i8": np.array([-128, 127], np.int8),
        "u8": np.arange(4, dtype=np.uint8),
        "i16": np.array([-3], np.int16),
        "u16": np.array([65535], np.uint16),
        "i32": np.array([1, -1], np.int32),
        "u32": np.array([4_000_000_000], np.uint32),
        "i64": np.array([-(2**62)], np.int64),
        "u64": np.array([2**63], np.uint64),
        "b": np.array([True, False]),
        "scalar": np.float32(2.5),
        "empty": np.zeros((2, 0), np.float32),
    }
    path = str(tmp_path / "all.ckpt")
    items = [{"name": k, "data": Tensor(np.asarray(v))} for k, v in arrays.items()]
    save_checkpoint(items, path, format="ckpt", crc_check=crc, append_dict={"e": 2, "s": "ü"})
    loaded = load_checkpoint(path)
    assert list(loaded) == [*arrays, "e", "s"]
    for name, want in arrays.items():
        got = loaded[name].asnumpy()
        assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want), name
        np.testing.assert_array_equal(got, want)
    assert loaded["e"].asnumpy().dtype == np.int64 and int(loaded["e"].asnumpy()) == 2
    assert loaded["s"] == "ü"
    assert (Path(path).read_bytes()[-17:-10] == b"crc_num") == crc


def test_save_ckpt_of_a_network_loads_back_into_it(tmp_path):
    src, dst = SmallNet(), SmallNet()
    load_param_into_net(src, load_checkpoint(str(DATA / "ms_small_net.ckpt")))
    path = str(tmp_path / "net.ckpt")
    save_checkpoint(src, path, format="ckpt")
    load_param_into_net(dst, load_checkpoint(path), strict_load=True)
    for (name, a), (_, b) in zip(src.parameters_and_names(), dst.parameters_and_names()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy(), name)


def test_sliced_parameters_are_joined():
    # MindSpore splits a big parameter into consecutive entries with one tag and full dims.
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    raw = arr.tobytes()
    data = _value(b"w", _tensor([3, 4], b"Float32", raw[:20]))
    data += _value(b"w", _tensor([3, 4], b"Float32", raw[20:]))
    data += _value(b"s", _tensor([0], b"str", np.array("hi").tobytes()))
    arrays, strings = read_mindspore_ckpt("x.ckpt", data)
    np.testing.assert_array_equal(arrays["w"], arr)
    assert strings == {"s": "hi"}


def test_save_argument_errors(tmp_path):
    item = [{"name": "w", "data": Tensor(np.zeros(2, np.float32))}]
    with pytest.raises(ValueError, match="'format' expected 'safetensors' or 'ckpt'"):
        save_checkpoint(item, str(tmp_path / "a.ckpt"), format="onnx")
    with pytest.raises(ValueError, match="crc_check"):
        save_checkpoint(item, str(tmp_path / "a.ckpt"), crc_check=True)
    with pytest.raises(TypeError, match="crc_check"):
        save_checkpoint(item, str(tmp_path / "a.ckpt"), format="ckpt", crc_check="yes")


# ---- convert-ckpt -------------------------------------------------------------------------


def test_convert_ckpt_both_ways(tmp_path, capsys):
    st = str(tmp_path / "net.safetensors")
    back = str(tmp_path / "back.ckpt")
    assert cli_main(["convert-ckpt", str(DATA / "ms_small_net.ckpt"), st, "--check"]) == 0
    assert "check: 11 entries equal" in capsys.readouterr().out
    assert Path(st).read_bytes()[8:9] == b"{"  # a safetensors file
    assert cli_main(["convert-ckpt", st, back, "--check"]) == 0
    original = load_checkpoint(str(DATA / "ms_small_net.ckpt"))
    again = load_checkpoint(back)
    assert list(again) == list(original)
    for name, value in original.items():
        if isinstance(value, str):
            assert again[name] == value
        else:
            np.testing.assert_array_equal(again[name].asnumpy(), value.asnumpy())


def test_convert_ckpt_errors(tmp_path, capsys):
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"\n\x05ab")
    assert cli_main(["convert-ckpt", str(bad), str(tmp_path / "o.safetensors")]) == 1
    assert "truncated" in capsys.readouterr().err
    src = str(DATA / "ms_small_net.ckpt")
    assert cli_main(["convert-ckpt", src, str(tmp_path / "o.bin")]) == 1
    assert "ending .ckpt or .safetensors" in capsys.readouterr().err


# ---- bad input ----------------------------------------------------------------------------


def _load(path):
    try:
        return load_checkpoint(str(path))
    except CheckpointError as exc:
        assert str(path) in str(exc)
        return exc


def _parse(data):
    """The sweeps' fast path: the bytes through the reader load_checkpoint uses (no file, no
    Parameters); a CheckpointError or the entries' names."""
    from sporeling.core.train import serialization as ser

    try:
        ckpt = ser._read("sweep.ckpt", data)
    except CheckpointError as exc:
        assert "sweep.ckpt" in str(exc)
        return exc
    return list(ckpt.arrays) + list(ckpt.meta.get("append", {}))


def test_every_truncation_is_an_error_or_a_whole_entry_prefix(tmp_path):
    # Protobuf has no end marker: a cut exactly between two entries is a valid, shorter file
    # (MindSpore reads it too); a cut anywhere else is a CheckpointError.
    data = (DATA / "ms_small_net.ckpt").read_bytes()
    full = load_checkpoint(str(DATA / "ms_small_net.ckpt"))
    boundaries, errors = 0, 0
    for n in range(len(data)):
        got = _parse(data[:n])
        if isinstance(got, CheckpointError):
            errors += 1
            continue
        boundaries += 1
        # a cut right after a tensor keeps the tensors before it (str entries come last)
        assert set(got) <= set(full) and len(got) < len(full)
    assert boundaries == len(full) - 1 and errors == len(data) - boundaries
    assert boundaries == len(full) - 1 and errors == len(data) - boundaries


def test_every_truncation_of_a_crc_file_is_an_error(tmp_path):
    data = (DATA / "ms_small_net_crc.ckpt").read_bytes()
    outcomes = []
    for n in range(1, len(data) - 17):  # the trailer kept, so the CRC is checked
        outcomes.append(isinstance(_parse(data[:n] + data[-17:]), CheckpointError))
    assert all(outcomes)


def test_every_bit_flip_of_a_crc_file_is_an_error(tmp_path):
    data = (DATA / "ms_small_net_crc.ckpt").read_bytes()
    for i in range(len(data)):
        for mask in (0x01, 0x80):
            flipped = bytearray(data)
            flipped[i] ^= mask
            assert isinstance(_parse(bytes(flipped)), CheckpointError), (i, mask)
    path = tmp_path / "flip.ckpt"  # and once through a file
    path.write_bytes(bytes(flipped))
    assert isinstance(_load(path), CheckpointError)


def test_bit_flips_without_crc_never_escape_as_other_errors(tmp_path):
    # Without a CRC a flip inside tensor bytes is undetectable (as in MindSpore); every
    # flip in the structure must still be a CheckpointError, never another exception.
    data = (DATA / "ms_small_net.ckpt").read_bytes()
    errors = 0
    for i in range(len(data)):
        flipped = bytearray(data)
        flipped[i] ^= 0x04
        errors += isinstance(_parse(bytes(flipped)), CheckpointError)
    assert errors > 50


def _value(tag: bytes, tensor: bytes) -> bytes:
    body = b"\n" + wire.varint(len(tag)) + tag + b"\x12" + wire.varint(len(tensor)) + tensor
    return b"\n" + wire.varint(len(body)) + body


def _tensor(dims, ttype: bytes, content: bytes) -> bytes:
    out = b"".join(b"\x08" + wire.varint(d) for d in dims)
    out += b"\x12" + wire.varint(len(ttype)) + ttype
    return out + b"\x1a" + wire.varint(len(content)) + content


HOSTILE = {
    "huge_value_len.ckpt": (b"\n" + wire.varint(2**40) + b"\n\x01w", "truncated"),
    "huge_content_len.ckpt": (
        _value(b"w", _tensor([4], b"Float32", b""))[:-1] + b"\x1a" + wire.varint(2**62),
        "truncated",
    ),
    "huge_dims.ckpt": (_value(b"w", _tensor([2**40, 2**40], b"Float32", b"\0" * 16)), "needs"),
    "negative_dim.ckpt": (_value(b"w", _tensor([-4], b"Float32", b"\0" * 16)), "negative"),
    "many_dims.ckpt": (_value(b"w", _tensor([1] * 100, b"Float32", b"\0" * 4)), "more than 64"),
    "bad_type.ckpt": (_value(b"w", _tensor([1], b"Object", b"\0" * 4)), "tensor_type 'Object'"),
    "no_content.ckpt": (_value(b"w", b"\x08\x01\x12\x07Float32"), "no tensor_content"),
    "no_tensor.ckpt": (b"\n\x03\n\x01w", "has no tensor"),
    "bad_utf8_tag.ckpt": (_value(b"\xff\xfe", _tensor([1], b"Float32", b"\0" * 4)), "UTF-8"),
    "long_varint.ckpt": (b"\n" + b"\xff" * 11, "longer than 10"),
    "group.ckpt": (b"\n\x02\x0b\x0c", "wire type 3"),
    "dup.ckpt": (_value(b"w", _tensor([1], b"Float32", b"\0" * 4)) * 2, None),
    "map.ckpt": (b"\n\x05\n\x01w\x1a\x00", "MapParameter"),
    "bad_str.ckpt": (_value(b"s", _tensor([0], b"str", b"abc")), "UTF-32"),
    "bad_crc.ckpt": (
        _value(b"w", _tensor([1], b"Float32", b"\0" * 4)) + b"crc_num" + bytes(10),
        "CRC",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_are_clear_errors_within_the_file_size(tmp_path, name):
    payload, message = HOSTILE[name]
    path = tmp_path / name
    path.write_bytes(payload)
    tracemalloc.start()
    try:
        got = _load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    if name == "dup.ckpt":  # consecutive entries with one tag are slices: joined, then checked
        assert isinstance(got, CheckpointError) and "needs 4 bytes" in str(got)
    else:
        assert isinstance(got, CheckpointError), got
        assert message in str(got), str(got)
    assert peak < 64 * 1024, peak  # nothing sized by the declared lengths


def test_wrong_magic_and_pickles_under_a_ckpt_name(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    cases = {
        "pickle.ckpt": pickle.dumps(Evil(), protocol=4),
        "pickle0.ckpt": pickle.dumps(Evil(), protocol=0),
        "magic.ckpt": b"\x0b" + (DATA / "ms_small_net.ckpt").read_bytes()[1:],
    }
    for name, payload in cases.items():
        (tmp_path / name).write_bytes(payload)
        assert isinstance(_load(tmp_path / name), CheckpointError), name
    assert not marker.exists()
    assert os.path.getsize(DATA / "ms_small_net.ckpt") < 4096  # the fixtures stay small


# ---- encryption (MindSpore's enc_key / dec_key) --------------------------------------------

KEY = bytes(range(16))  # the key make_ms_ckpt_fixtures.py encrypted the fixtures with


@pytest.mark.parametrize(("mode", "tag"), [("AES-GCM", "gcm"), ("AES-CBC", "cbc")])
def test_reads_mindspore_encrypted_files(mode, tag):
    pytest.importorskip("cryptography")
    path = str(DATA / f"ms_encrypted_{tag}.ckpt")
    got = load_checkpoint(path, dec_key=KEY, dec_mode=mode)
    np.testing.assert_array_equal(got["w"].asnumpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(CheckpointError, match=f"encrypted with {mode}; pass dec_key") as info:
        load_checkpoint(path)
    assert info.value.code == "checkpoint-encrypted"
    with pytest.raises(CheckpointError, match="wrong dec_key or a corrupt file"):
        load_checkpoint(path, dec_key=bytes(16), dec_mode=mode)
    other = "AES-CBC" if mode == "AES-GCM" else "AES-GCM"
    with pytest.raises(CheckpointError, match=f"encrypted with {mode}, not {other}"):
        load_checkpoint(path, dec_key=KEY, dec_mode=other)


@pytest.mark.parametrize("mode", ["AES-GCM", "AES-CBC"])
def test_encrypted_round_trip_and_damage(tmp_path, mode):
    pytest.importorskip("cryptography")
    path = str(tmp_path / "e.ckpt")
    items = [{"name": "w", "data": Tensor(np.linspace(0, 1, 40, dtype=np.float32))}]
    save_checkpoint(items, path, format="ckpt", enc_key=KEY * 2, enc_mode=mode)  # AES-256
    assert Path(path).read_bytes()[:4] in (b"\xd8\x5e\x3a\x7f", b"\xd9\x5e\x3a\x7f")
    got = load_checkpoint(path, dec_key=KEY * 2, dec_mode=mode)
    np.testing.assert_array_equal(got["w"].asnumpy(), items[0]["data"].asnumpy())
    data = Path(path).read_bytes()
    for cut in (3, 30, len(data) - 1):
        Path(path).write_bytes(data[:cut])
        with pytest.raises(CheckpointError):
            load_checkpoint(path, dec_key=KEY * 2, dec_mode=mode)
    if mode == "AES-GCM":  # the tag covers every byte
        for i in range(4, len(data), 7):
            flipped = bytearray(data)
            flipped[i] ^= 1
            Path(path).write_bytes(bytes(flipped))
            with pytest.raises(CheckpointError):
                load_checkpoint(path, dec_key=KEY * 2, dec_mode=mode)


def test_encryption_argument_errors(tmp_path):
    item = [{"name": "w", "data": Tensor(np.zeros(2, np.float32))}]
    path = str(tmp_path / "a.ckpt")
    with pytest.raises(ValueError, match="enc_key.*not supported for safetensors"):
        save_checkpoint(item, path, enc_key=KEY)
    with pytest.raises(ValueError, match="length 16, 24 or 32"):
        save_checkpoint(item, path, format="ckpt", enc_key=b"short")
    with pytest.raises(ValueError, match="enc_mode' expected one of"):
        save_checkpoint(item, path, format="ckpt", enc_key=KEY, enc_mode="SM4-CBC")
    with pytest.raises(ValueError, match="cannot be used together"):
        save_checkpoint(item, path, format="ckpt", enc_key=KEY, crc_check=True)
    save_checkpoint(item, path, format="ckpt")
    with pytest.raises(ValueError, match="not an encrypted MindSpore checkpoint"):
        load_checkpoint(path, dec_key=KEY)


def test_model_checkpoint_writes_mindspore_ckpt(tmp_path):
    pytest.importorskip("cryptography")
    from sporeling.core.train import CheckpointConfig, ModelCheckpoint
    from sporeling.core.train.callback import RunContext

    class Bag(dict):
        __getattr__ = dict.__getitem__

    net = SmallNet()
    for fmt, extra in (("ckpt", {"crc_check": True}), ("ckpt", {"enc_key": KEY})):
        config = CheckpointConfig(
            save_checkpoint_steps=1, keep_checkpoint_max=1, format=fmt, **extra
        )
        folder = tmp_path / ("crc" if "crc_check" in extra else "enc")
        cb = ModelCheckpoint(prefix="m", directory=str(folder), config=config)
        params = Bag(train_network=net, batch_num=1, epoch_num=1, cur_step_num=1, cur_epoch_num=1)
        ctx = RunContext(params)
        cb.on_train_begin(ctx)
        cb.on_train_step_end(ctx)
        cb.on_train_end(ctx)
        (path,) = list(folder.iterdir())
        data = path.read_bytes()
        if "crc_check" in extra:
            assert data[-17:-10] == b"crc_num"
            loaded = load_checkpoint(str(path))
        else:
            loaded = load_checkpoint(str(path), dec_key=KEY)
        np.testing.assert_array_equal(loaded["fc.weight"].asnumpy(), net.fc.weight.asnumpy())
    with pytest.raises(ValueError, match="crc_check"):
        CheckpointConfig(crc_check=True)
    with pytest.raises(ValueError, match="'format'"):
        CheckpointConfig(format="onnx")


def test_convert_encrypted(tmp_path, capsys):
    pytest.importorskip("cryptography")
    key_file = tmp_path / "key.bin"
    key_file.write_bytes(KEY)
    src = str(DATA / "ms_encrypted_cbc.ckpt")
    out = str(tmp_path / "plain.safetensors")
    args = ["convert-ckpt", src, out, "--dec-key-file", str(key_file), "--dec-mode", "AES-CBC"]
    assert cli_main([*args, "--check"]) == 0
    enc = str(tmp_path / "again.ckpt")
    assert cli_main(["convert-ckpt", out, enc, "--enc-key-file", str(key_file), "--check"]) == 0
    assert "check: 1 entries equal" in capsys.readouterr().out
    assert load_checkpoint(enc, dec_key=KEY)["w"].shape == (2, 3)
