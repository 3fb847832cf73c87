"""Zero-copy read access to a decoded PIL image's pixels, for the fused decode + crop.

`np.asarray(pil_image)` copies the whole image twice (Pillow's `tobytes` packs its
4-byte RGBX pixels to RGB in 64 KB pieces, then joins them): ~15 % of the cost of
decoding a JPEG, for pixels most of which the crop throws away. Pillow >= 11.2 exports
its storage through the Arrow C data interface (`Image.__arrow_c_array__`): one
fixed-size list of 4 uint8 per pixel for multi-band modes, one uint8 per pixel for "L".
`pixels` reads that export's buffer address with ctypes and wraps it in a read-only
NumPy view; the view keeps the export alive, and the export holds a reference on the
image memory until its capsule is released.

Falls back to a copy when the export is missing or not one plain buffer (older Pillow,
or images above Pillow's 16 MB block size, which it stores in several blocks).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from PIL import Image

__all__ = ["pixels"]


class _ArrowSchema(ctypes.Structure):
    pass


class _ArrowArray(ctypes.Structure):
    pass


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(_ArrowSchema))),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]
_ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(_ArrowArray))),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _plain_uint8(array: _ArrowArray, schema: _ArrowSchema, length: int) -> int | None:
    """The data address of a null-free uint8 array of `length` values, else None."""
    if schema.format != b"C" or array.length != length or array.offset != 0:
        return None
    if array.n_buffers != 2 or array.null_count != 0:
        return None
    address = array.buffers[1]
    return int(address) if address else None


def _view(im: Image.Image) -> np.ndarray | None:
    export = getattr(im, "__arrow_c_array__", None)
    if export is None:
        return None
    try:
        schema_capsule, array_capsule = export()
    except Exception:  # several memory blocks, or a mode without an export
        return None
    schema = _ArrowSchema.from_address(_get_pointer(schema_capsule, b"arrow_schema"))
    array = _ArrowArray.from_address(_get_pointer(array_capsule, b"arrow_array"))
    w, h = im.size
    if im.mode == "L":
        address = _plain_uint8(array, schema, w * h)
        shape: tuple[int, ...] = (h, w)
    else:
        if schema.format != b"+w:4" or array.n_children != 1 or array.length != w * h:
            return None
        if array.offset != 0 or schema.n_children != 1:
            return None
        address = _plain_uint8(array.children[0].contents, schema.children[0].contents, w * h * 4)
        shape = (h, w, 4)
    if address is None:
        return None
    owner = _Export(shape, address, (schema_capsule, array_capsule, im))
    return np.asarray(owner)


class _Export:
    """Owns an Arrow export of an image: the NumPy view made from its array interface
    keeps it (and so the image's memory) alive. No ctypes array type per image size (a
    new type costs ~100 us and ctypes caches each one forever)."""

    def __init__(self, shape: tuple[int, ...], address: int, keep: Any) -> None:
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": "|u1",
            "data": (address, True),
        }
        self._keep = keep


def pixels(im: Image.Image) -> np.ndarray:
    """A read-only array of the pixels of a loaded "RGB" or "L" image.

    "RGB" gives an (H, W, 4) view of Pillow's storage whose 4th channel is padding (use
    the first 3), "L" an (H, W) view; the view keeps the image memory alive. Without a
    usable Arrow export, a copy of shape (H, W, 3) / (H, W).
    """
    if im.mode not in ("RGB", "L"):
        raise ValueError(f"pixels: expected an 'RGB' or 'L' image, got mode {im.mode!r}.")
    view = _view(im)
    return view if view is not None else np.asarray(im)
