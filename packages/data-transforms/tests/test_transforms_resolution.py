"""MindSpore 1.8's implementation-resolution rule, eager choice, legacy mixing."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from sporeling.data import vision
from sporeling.data.transforms import Compose, TypeCast, resolve_operations
from sporeling.data.transforms._base import LEGACY_MIX_ERROR, run_chain
from sporeling.data.vision import c_transforms, py_transforms


def _img(h=16, w=20):
    return (np.arange(h * w * 3) % 251).astype(np.uint8).reshape(h, w, 3)


def _plan(ops):
    """[(implementation, [op class names])] of the resolved chain."""
    out = []
    for r in resolve_operations(ops):
        if isinstance(r, Compose):
            out.append(("PY", [type(t).__name__ for t in r.transforms]))
        else:
            out.append((r.implementation, [type(r.op).__name__]))
    return out


def test_first_dual_op_defaults_to_c():
    assert _plan([vision.Resize(8), vision.Invert()]) == [("C", ["Resize"]), ("C", ["Invert"])]


def test_after_topil_dual_ops_go_py_and_are_grouped():
    plan = _plan([vision.Decode(), vision.ToPIL(), vision.Resize(8), vision.RandomHorizontalFlip()])
    assert plan == [("C", ["Decode"]), ("PY", ["ToPIL", "Resize", "RandomHorizontalFlip"])]


def test_decode_to_pil_is_py_and_tonumpy_switches_back_to_c():
    ops = [
        vision.Decode(to_pil=True),
        vision.Resize(8),
        vision.ToNumpy(),
        vision.Invert(),
        vision.HWC2CHW(),
    ]
    assert _plan(ops) == [
        ("PY", ["Decode", "Resize"]),
        ("C", ["ToNumpy"]),
        ("C", ["Invert"]),
        ("C", ["HWC2CHW"]),
    ]


def test_python_only_op_followed_by_dual_op_goes_py():
    plan = _plan(
        [vision.Resize(8), vision.Grayscale(3), vision.Invert(), vision.Normalize([0], [1])]
    )
    assert plan == [("C", ["Resize"]), ("PY", ["Grayscale", "Invert"]), ("C", ["Normalize"])]


def test_plain_callables_are_python_and_compose_is_unrolled():
    def double(x):
        return x

    plan = _plan([Compose([vision.Resize(8), vision.Invert()]), double, vision.Invert()])
    assert plan == [("C", ["Resize"]), ("C", ["Invert"]), ("PY", ["function", "Invert"])]


def test_resolved_chain_converts_formats_between_ops():
    img = _img()
    chain = resolve_operations(
        [
            vision.Resize((8, 10)),
            vision.ToPIL(),
            vision.RandomHorizontalFlip(1.0),
            vision.Invert(),
            vision.Normalize([0.0] * 3, [255.0] * 3),
            vision.HWC2CHW(),
        ]
    )
    (out,) = run_chain(chain, (img,))
    ref = 255 - vision.Resize((8, 10))(img)[:, ::-1]
    np.testing.assert_allclose(out, ref.transpose(2, 0, 1) / 255.0, atol=1e-6)
    assert out.dtype == np.float32


def test_py_op_after_totensor_gets_the_array():
    # RandomErasing (Python-only) after ToTensor works on the CHW array without conversions.
    chain = resolve_operations(
        [vision.Decode(to_pil=True), vision.ToTensor(), vision.RandomErasing(prob=1.0, value=0)]
    )
    import io

    buf = io.BytesIO()
    Image.fromarray(_img(32, 32)).save(buf, format="PNG")
    (out,) = run_chain(chain, (np.frombuffer(buf.getvalue(), np.uint8),))
    assert out.shape == (3, 32, 32) and out.dtype == np.float32
    assert (out == 0).any()


def test_py_resolved_dual_op_on_float_array_uses_numpy_path():
    # A Python function makes the next dual op PY; a float array has no PIL form, so the
    # op runs its NumPy path instead of failing.
    chain = resolve_operations([lambda x: x, vision.Resize((4, 4))])
    x = np.random.default_rng(0).random((8, 8, 3)).astype(np.float32)
    (out,) = run_chain(chain, (x,))
    assert out.shape == (4, 4, 3) and out.dtype == np.float32


def test_python_only_op_converts_arrays_to_pil():
    x = np.random.default_rng(0).random((8, 8)).astype(np.float32)
    out = vision.Grayscale()(x)
    assert isinstance(out, Image.Image) and out.size == (8, 8)


def test_eager_choice_follows_the_input():
    img = _img()
    op = vision.Resize((8, 10))
    assert isinstance(op(img), np.ndarray)
    assert isinstance(op(Image.fromarray(img)), Image.Image)
    # C-only ops accept PIL input and return arrays; PY-only ops accept arrays.
    assert isinstance(vision.HWC2CHW()(Image.fromarray(img)), np.ndarray)
    assert isinstance(vision.Grayscale()(img), Image.Image)
    # Legacy modules pin the implementation whatever the input.
    assert isinstance(py_transforms.Resize((8, 10))(img), Image.Image)
    assert isinstance(c_transforms.Resize((8, 10))(Image.fromarray(img)), np.ndarray)


def test_mixing_legacy_and_unified_raises():
    with pytest.raises(RuntimeError, match=LEGACY_MIX_ERROR):
        resolve_operations([c_transforms.Decode(), vision.Resize(8)])
    with pytest.raises(RuntimeError, match=LEGACY_MIX_ERROR):
        resolve_operations([vision.Decode(), py_transforms.ToTensor()])
    with pytest.raises(RuntimeError, match=LEGACY_MIX_ERROR):
        Compose([c_transforms.Resize(8), vision.Invert()])
    # Legacy alone (C and PY legacy together) and legacy with plain functions are fine.
    resolve_operations([c_transforms.Decode(), py_transforms.ToPIL(), lambda x: x])


def test_legacy_py_normalize_is_chw():
    x = np.ones((3, 4, 5), np.float32)
    out = py_transforms.Normalize([1.0, 0.0, 0.0], [1.0, 1.0, 2.0])(x)
    np.testing.assert_allclose(out[:, 0, 0], [0.0, 1.0, 0.5])


def test_resolve_rejects_non_callables_and_empty():
    with pytest.raises(TypeError, match="map: every operation must be a transform or a callable"):
        resolve_operations([vision.Invert(), 3])
    with pytest.raises(ValueError, match="must not be empty"):
        resolve_operations([])


def test_typecast_in_chain():
    chain = resolve_operations([vision.Invert(), TypeCast(np.float32)])
    (out,) = run_chain(chain, (_img(),))
    assert out.dtype == np.float32
