"""``Tensor`` and ``Parameter``: a backend array plus what autograd needs to know.

A tensor owns one array (``numpy.ndarray`` on CPU, ``cupy.ndarray`` on GPU). When it was
produced by a recorded op it points at that op's autograd node (``_node``) and its output
index (``_index``); leaves that gradients flow to have ``requires_grad`` set. Operators
and methods (``x + y``, ``x.sum()``...) are attached from :mod:`sporeling.core.ops` by
:mod:`sporeling.core.ops._tensor_methods` (installed when ``ops`` is imported).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtype as _dt
from ._backend import CPU, Device, device_of, get_device

__all__ = ["Tensor", "Parameter"]


def _infer_numpy(data: Any, dtype: _dt.DType | None) -> np.ndarray:
    """Host array for Python/NumPy input, with MindSpore's default dtypes."""
    if dtype is not None:
        return np.asarray(data, dtype=dtype.np)
    if isinstance(data, np.ndarray):
        return data
    cat = _dt.scalar_category(data)
    if cat is not None and not isinstance(data, np.generic):
        return np.asarray(data, dtype=_dt.result_type(data).np)
    arr = np.asarray(data)
    if arr.dtype == np.float64 and not isinstance(data, np.generic):
        arr = arr.astype(np.float32)  # Python floats default to float32 as in MindSpore
    elif arr.dtype == np.complex128 and not isinstance(data, np.generic):
        arr = arr.astype(np.complex64)  # and Python complex numbers to complex64
    elif arr.dtype.kind in "iu" and not isinstance(data, np.generic) and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "biufc":
        raise TypeError(
            f"Tensor: argument 'input_data' expected numbers, bools or arrays of them, "
            f"got elements of type {arr.dtype}"
        )
    return arr


class Tensor:
    """An n-dimensional array on a device, usable with every Sporeling op.

    ``Tensor(input_data=None, dtype=None, shape=None, init=None, device=None)``: from a
    scalar, a nested list, a NumPy/CuPy array or another Tensor; or, with ``shape`` and
    ``init`` (``"zeros"``, ``"ones"`` or a callable ``init(shape, dtype) -> array``),
    filled by the initializer. A NumPy array is copied, as in MindSpore
    (``Tensor.from_numpy`` shares it instead); another Tensor's array is shared.

    >>> Tensor([[1.0, 2.0]]).shape
    (1, 2)
    """

    __slots__ = ("_data", "_device", "_node", "_index", "_requires_grad", "grad", "__weakref__")
    _data: Any  # numpy.ndarray or cupy.ndarray
    _device: Device
    _node: Any  # the tape node (autograd.tape.Node) that produced this tensor, or None
    _index: int  # which output of that node
    _requires_grad: bool
    grad: Tensor | None
    __array_priority__ = 100  # NumPy defers to our operators in `ndarray + Tensor`

    def __init__(
        self,
        input_data: Any = None,
        dtype: Any = None,
        shape: Any = None,
        init: Any = None,
        *,
        device: str | Device | None = None,
    ) -> None:
        dt = None if dtype is None else _dt.to_dtype(dtype)
        dev = get_device(device) if device is not None else None
        borrowed = False  # data is the caller's NumPy array (or a view of it)
        if input_data is None and init is None and shape is not None:
            # MindSpore's Tensor(shape=[None, 3], dtype=...): an input signature, no data
            from ._placeholder import Placeholder

            self._data = Placeholder(shape, (dt or _dt.float32).np)
            self._device, self._node, self._index = dev or get_device(None), None, 0
            self._requires_grad, self.grad = False, None
            return
        if input_data is None:
            if shape is None or init is None:
                raise ValueError("Tensor: give 'input_data', or both 'shape' and 'init'")
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            dt = dt or _dt.float32
            if init == "zeros":
                host = np.zeros(shape, dt.np)
            elif init == "ones":
                host = np.ones(shape, dt.np)
            elif callable(init):
                host = np.asarray(init(shape, dt), dtype=dt.np)
            else:
                raise ValueError(
                    f"Tensor: argument 'init' expected 'zeros', 'ones' or a callable, got {init!r}"
                )
            data: Any = host
        elif isinstance(input_data, Tensor):
            data = input_data._data if dt is None else input_data._data.astype(dt.np)
            dev = dev or input_data._device
        elif hasattr(input_data, "__cuda_array_interface__"):
            data = input_data if dt is None else input_data.astype(dt.np)
            dev = dev or device_of(input_data)
        else:
            data = _infer_numpy(input_data, dt)
            # MindSpore copies a NumPy array into a new Tensor (``Tensor.from_numpy``
            # shares): the caller may reuse or change its array afterwards.
            borrowed = isinstance(input_data, np.ndarray) and np.may_share_memory(data, input_data)
        if dev is None:
            dev = get_device(None)
        if borrowed and dev is CPU:
            data = data.copy()
        if shape is not None and input_data is not None:
            data = data.reshape(tuple(shape) if not isinstance(shape, int) else (shape,))
        _dt.from_numpy(data.dtype)  # reject unsupported element types early
        self._data = (
            dev.asarray(data) if dev is not CPU or not isinstance(data, np.ndarray) else data
        )
        self._device = dev
        self._node = None
        self._index = 0
        self._requires_grad = False
        self.grad = None

    @staticmethod
    def from_numpy(array: np.ndarray) -> Tensor:
        """A Tensor that shares ``array``'s memory, as MindSpore's ``Tensor.from_numpy``.

        ``Tensor(array)`` copies; this does not (a non-C-contiguous array is first made
        contiguous, which copies it), so writes through either side show in the other.
        On a GPU default device the data is copied to the device.
        """
        if not isinstance(array, np.ndarray):
            raise TypeError(
                "Tensor.from_numpy: argument 'array' expected a numpy.ndarray, "
                f"got {type(array).__name__}"
            )
        _dt.from_numpy(array.dtype)  # reject unsupported element types early
        data = array if array.flags.c_contiguous else np.ascontiguousarray(array)
        dev = get_device(None)
        return Tensor._wrap(data if dev is CPU else dev.asarray(data), dev)

    @classmethod
    def _wrap(cls, data: Any, device: Device, node: Any = None, index: int = 0) -> Tensor:
        """Fast internal constructor around an array already on ``device``."""
        t = object.__new__(Tensor)
        t._data = data
        t._device = device
        t._node = node
        t._index = index
        t._requires_grad = False
        t.grad = None
        return t

    # attached at import time: backward by autograd.tape, the rest by ops._tensor_methods
    if TYPE_CHECKING:
        T: Tensor

        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        # elementwise, as in NumPy: a Tensor rather than object's bool
        def __eq__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __getitem__(self, index: Any) -> Tensor: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...
        def backward(self, gradient: Any = None, retain_graph: bool = True) -> None: ...
        def to(self, device: str | Device) -> Tensor: ...  # this tensor on another device
        def move_to(self, device: str | Device) -> Tensor: ...

    # ---- metadata -----------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def dtype(self) -> _dt.DType:
        return _dt.from_numpy(self._data.dtype)

    @property
    def ndim(self) -> int:
        return int(self._data.ndim)

    @property
    def size(self) -> int:
        return int(self._data.size)

    @property
    def itemsize(self) -> int:
        return int(self._data.itemsize)

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    @property
    def device(self) -> str:
        """``"CPU"`` or ``"GPU"``."""
        return self._device.name

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._requires_grad = bool(value)

    def requires_grad_(self, value: bool = True) -> Tensor:
        self._requires_grad = bool(value)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    def dim(self) -> int:
        return self.ndim

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return int(self._data.shape[0])

    # ---- conversion ---------------------------------------------------------------
    def asnumpy(self) -> np.ndarray:
        """The data as a NumPy array (a copy when the tensor is on the GPU)."""
        data = self._data
        return data if isinstance(data, np.ndarray) else data.get()

    numpy = asnumpy

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.asnumpy()
        return arr if dtype is None else arr.astype(dtype)

    def item(self, *index: int) -> Any:
        return self.asnumpy().item(*index)

    def tolist(self) -> Any:
        return self.asnumpy().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self.dtype.category != 1:
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.item())

    def cpu(self) -> Tensor:
        return self.to("CPU")

    def gpu(self) -> Tensor:
        return self.to("GPU")

    def detach(self) -> Tensor:
        """Same data, cut from the autograd graph."""
        return Tensor._wrap(self._data, self._device)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        if type(self._data).__name__ == "Placeholder":
            return f"Tensor(shape={list(self._data.shape)}, dtype={self.dtype})"
        body = np.array2string(self.asnumpy(), separator=", ", prefix="Tensor(")
        extra = ", device=GPU" if self._device.kind == "gpu" else ""
        grad = ", requires_grad=True" if self._requires_grad else ""
        return f"Tensor({body}, dtype={self.dtype}{extra}{grad})"

    __str__ = __repr__

    def __deepcopy__(self, memo: Any) -> Tensor:
        out = Tensor._wrap(self._data.copy(), self._device)
        out._requires_grad = self._requires_grad
        return out

    # In-place updates rebind this tensor to a new value; the old value stays in the graph.
    def _rebind(self, new: Tensor) -> Tensor:
        if new._device is not self._device:
            raise ValueError("in-place update: value is on another device")
        self._data = new._data
        self._node = new._node
        self._index = new._index
        return self

    def assign_value(self, value: Any) -> Tensor:
        """Replace the contents (MindSpore's ``Tensor.assign_value``); not differentiable."""
        value = value if isinstance(value, Tensor) else Tensor(value, dtype=self.dtype)
        if tuple(value.shape) != self.shape:
            raise ValueError(
                f"assign_value: argument 'value' expected shape {self.shape}, got {value.shape}"
            )
        self._data = self._device.asarray(value._data).astype(self._data.dtype, copy=False)
        self._node = None
        return self


class Parameter(Tensor):
    """A trainable, named tensor: ``Parameter(default_input, name=None, requires_grad=True)``."""

    __slots__ = ("name", "layerwise_parallel", "__dict__")

    def __init__(
        self,
        default_input: Any,
        name: str | None = None,
        requires_grad: bool = True,
        layerwise_parallel: bool = False,
        *,
        device: str | Device | None = None,
    ) -> None:
        if isinstance(default_input, Tensor):
            super().__init__(default_input, device=device or default_input._device)
            self._data = self._data.copy() if self._data is default_input._data else self._data
        else:
            # a NumPy input is copied (Tensor's rule): in-place updates (assign, the
            # optimizers) must not write into the caller's array
            super().__init__(default_input, device=device)
        self.name = name if name is not None else "Parameter"
        self._requires_grad = bool(requires_grad)
        self.layerwise_parallel = layerwise_parallel

    @property
    def data(self) -> Parameter:
        return self

    def set_data(self, data: Any) -> Parameter:
        """Replace the value (shape may change, as MindSpore allows); keeps name and flags."""
        if isinstance(data, Tensor):
            self._data = self._device.asarray(data._data).astype(data._data.dtype, copy=True)
        else:  # a new Tensor copies a NumPy array: no second copy
            self._data = Tensor(data, dtype=self.dtype, device=self._device)._data
        self._node = None
        return self

    def clone(self, init: str = "same") -> Parameter:
        return Parameter(
            Tensor._wrap(self._data.copy(), self._device), self.name, self._requires_grad
        )

    def __repr__(self) -> str:
        return (
            f"Parameter(name={self.name}, shape={self.shape}, dtype={self.dtype}, "
            f"requires_grad={self._requires_grad})"
        )

    __str__ = __repr__
