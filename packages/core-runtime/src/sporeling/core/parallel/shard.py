"""``Primitive.shard(in_strategy)`` for semi-auto parallel: operator classes in MindSpore's
form (``MatMul().shard(((1, mp), (mp, 1)))``) that split their work over the ranks and
insert the collectives that give back the unsharded result.

Each input tensor gets a tuple of how many ways each of its dimensions is split, as in
MindSpore. The ranks form a device matrix over the op's *loop dimensions* (for
``MatMul`` with ``((a, b), (b, c))``: rows ``a``, contraction ``b``, columns ``c``); rank
``r < a*b*c`` computes the block of the output its coordinates pick from its blocks of the
inputs, and ranks beyond ``a*b*c`` (MindSpore's repeated calculation) compute nothing.

Semantics here: inputs and outputs of a sharded op are *full* tensors, identical on every
rank (MindSpore's ``full_batch=True``); the op's arithmetic and its input blocks are
sharded. The output blocks are assembled by one all-reduce of the zero-padded blocks
(which also sums partial products over a split contraction), and backward takes each
rank's block of the output gradient and all-reduces the padded input-gradient blocks, so
values and gradients equal the unsharded op's. Without communication (or on one rank)
the ops run unsharded.

Supported set (anything else raises ``ValueError`` naming the op and the strategy):

* ``MatMul(transpose_a=False, transpose_b=False)``: ``((a, b), (b, c))`` (transposed
  inputs give their strategies in their own layout).
* ``BatchMatMul(transpose_a=False, transpose_b=False)``: inputs of equal rank ``n >= 3``;
  batch dimensions split alike, contraction split alike.
* ``Gather()``: ``(input_params, input_indices, axis)``, strategy
  ``((p_0, ..., p_k), (i_0, ..., i_m))`` — the params split on any of their dimensions
  (including the gathered ``axis``: each rank looks up its rows, others give zeros) and
  the indices on any of theirs.
* elementwise ``Add``, ``Sub``, ``Mul``, ``RealDiv``, ``Maximum``, ``Minimum`` (two
  inputs of one shape, one strategy for both) and ``ReLU``, ``Tanh``, ``Sigmoid``,
  ``Exp``, ``Neg``, ``Square`` (one input).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from .._primitive import Primitive, ShapedArray
from ..tensor import Tensor
from .tensor_parallel import _collective, group_rank_size

__all__ = [
    "ShardedPrimitive",
    "MatMul",
    "BatchMatMul",
    "Gather",
    "Add",
    "Sub",
    "Mul",
    "RealDiv",
    "Maximum",
    "Minimum",
    "ReLU",
    "Tanh",
    "Sigmoid",
    "Exp",
    "Neg",
    "Square",
]

Slices = tuple[tuple[int, int], ...]


# ---- the two boundary primitives ------------------------------------------------------------


def _block_abstract(x: ShapedArray, *, block: Slices, group: str | None) -> ShapedArray:
    return ShapedArray(tuple(b - a for a, b in block), x.dtype)


def _block_impl(xp: Any, x: Any, *, block: Slices, group: str | None) -> Any:
    return xp.ascontiguousarray(x[tuple(slice(a, b) for a, b in block)])


def _pad_abstract(
    x: ShapedArray, *, block: Slices, shape: tuple[int, ...], group: str | None
) -> ShapedArray:
    return ShapedArray(shape, x.dtype)


def _pad_impl(xp: Any, x: Any, *, block: Slices, shape: tuple[int, ...], group: str | None) -> Any:
    out = xp.zeros(shape, x.dtype)
    if x is not None and all(b > a for a, b in block):
        out[tuple(slice(a, b) for a, b in block)] = x
    if group_rank_size(group)[1] > 1:
        out = _collective("allreduce", out, group)
    return out


# take_block: forward the block (no communication), backward pad + all-reduce
# place_block: forward pad + all-reduce, backward the block
take_block_p = Primitive(
    "shard_take_block",
    "opaque",
    _block_abstract,
    impl=_block_impl,
    vjp=lambda g, x, *, out, block, group: (
        lambda: place_block_p.bind(g, block=block, shape=x.shape, group=group),
    ),
)
place_block_p: Primitive = Primitive(
    "shard_place_block",
    "opaque",
    _pad_abstract,
    impl=_pad_impl,
    vjp=lambda g, x, *, out, block, shape, group: (
        lambda: take_block_p.bind(g, block=block, group=group),
    ),
)


# ---- the sharded operator base -------------------------------------------------------------


def _check_strategy(name: str, in_strategy: Any, n_inputs: int) -> tuple[tuple[int, ...], ...]:
    ok = isinstance(in_strategy, (tuple, list)) and len(in_strategy) == n_inputs
    if ok:
        for s in in_strategy:
            if not isinstance(s, (tuple, list)) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in s
            ):
                ok = False
    if not ok:
        raise ValueError(
            f"{name}.shard: in_strategy expected a tuple of {n_inputs} tuples of positive ints "
            f"(one split count per input dimension), got {in_strategy!r}"
        )
    return tuple(tuple(int(v) for v in s) for s in in_strategy)


def _check_full_batch(name: str) -> None:
    """Sharded ops take whole, rank-identical inputs: refuse per-rank batches under the
    auto-parallel modes instead of mixing them silently."""
    from . import context as _ctx

    mode = _ctx.get_auto_parallel_context("parallel_mode")
    if mode in ("semi_auto_parallel", "auto_parallel") and (
        _ctx.get_auto_parallel_context("dataset_strategy") != "full_batch"
    ):
        raise ValueError(
            f"{name}.shard: a shard strategy under {mode} needs full_batch=True here (every "
            "rank holding the whole batch); call set_auto_parallel_context(full_batch=True), "
            "or drop the strategy to run the op data parallel"
        )


class ShardedPrimitive:
    """Base of the operator classes: ``op.shard(in_strategy)`` then ``op(*inputs)``.

    A subclass gives ``n_inputs``, ``spec(shapes)`` — one string of loop-dimension letters
    per input and one for the output (like an einsum) — and ``compute(*blocks)``.
    """

    n_inputs = 1
    name = "Primitive"

    def __init__(self) -> None:
        self.in_strategy: tuple[tuple[int, ...], ...] | None = None
        self.group: str | None = None

    def shard(self, in_strategy: Any, out_strategy: Any = None) -> ShardedPrimitive:
        """Set the split counts of each input's dimensions; returns ``self``."""
        if out_strategy is not None:
            raise ValueError(
                f"{self.name}.shard: out_strategy is not supported; outputs are assembled "
                "(replicated) on every rank"
            )
        self.in_strategy = _check_strategy(self.name, in_strategy, self.n_inputs)
        return self

    def set_group(self, group: str | None) -> ShardedPrimitive:
        """Shard over ``group`` instead of the world."""
        self.group = group
        return self

    def spec(self, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str]:
        raise NotImplementedError(f"{type(self).__name__} must define spec(shapes)")

    def compute(self, *args: Any, **kwargs: Any) -> Tensor:
        """The op on this rank's blocks: the ``n_inputs`` tensors, then any extra positional
        inputs. Each subclass gives its own signature (``(*args: Any, **kwargs: Any)`` lets
        mypy accept any of them as an override)."""
        raise NotImplementedError(f"{type(self).__name__} must define compute(...)")

    def __call__(self, *inputs: Any) -> Tensor:
        tensors = [x if isinstance(x, Tensor) else Tensor(x) for x in inputs[: self.n_inputs]]
        if len(tensors) != self.n_inputs:
            raise TypeError(f"{self.name}: expected {self.n_inputs} tensor inputs")
        rank, size = group_rank_size(self.group)
        if self.in_strategy is None or size == 1:
            return self.compute(*tensors, *inputs[self.n_inputs :])
        _check_full_batch(self.name)
        shapes = [t.shape for t in tensors]
        in_specs, out_spec = self.spec(shapes)
        splits = self._loop_splits(in_specs, shapes)
        total = 1
        for v in splits.values():
            total *= v
        if size % total:
            raise ValueError(
                f"{self.name}.shard: the strategy {self.in_strategy} uses {total} devices, which "
                f"does not divide the {size} ranks of the group"
            )
        letters = list(splits)
        coords: dict[str, int] = {}
        if rank < total:
            rem = rank
            for letter in reversed(letters):  # row-major: the last loop dim varies fastest
                coords[letter] = rem % splits[letter]
                rem //= splits[letter]
        sizes = {
            c: n
            for spec, shape in zip(in_specs, shapes, strict=True)
            for c, n in zip(spec, shape, strict=True)
        }
        blocks = []
        for t, spec in zip(tensors, in_specs, strict=True):
            blocks.append(
                take_block_p.bind(
                    t, block=self._block(spec, t.shape, splits, coords), group=self.group
                )
            )
        out = self.compute(*blocks, *inputs[self.n_inputs :])
        out_shape = tuple(sizes[c] for c in out_spec)
        out_block = self._block(out_spec, out_shape, splits, coords)
        if rank >= total:  # repeated calculation: contribute zeros
            out = out * 0
        return place_block_p.bind(out, block=out_block, shape=out_shape, group=self.group)

    def _loop_splits(
        self, in_specs: list[str], shapes: Sequence[tuple[int, ...]]
    ) -> dict[str, int]:
        assert self.in_strategy is not None
        splits: dict[str, int] = {}
        for i, (spec, shape, strat) in enumerate(
            zip(in_specs, shapes, self.in_strategy, strict=True)
        ):
            if len(strat) != len(shape):
                raise ValueError(
                    f"{self.name}.shard: input {i} has {len(shape)} dims (shape {shape}) but its "
                    f"strategy {strat} has {len(strat)}"
                )
            for dim, (c, n, k) in enumerate(zip(spec, shape, strat, strict=True)):
                if c in splits and splits[c] != k:
                    raise ValueError(
                        f"{self.name}.shard: strategy {self.in_strategy} splits the same "
                        f"dimension '{c}' {splits[c]} and {k} ways; they must agree"
                    )
                if n % k:
                    raise ValueError(
                        f"{self.name}.shard: input {i} dim {dim} has length {n}, which does "
                        f"not divide into {k} parts (strategy {strat})"
                    )
                splits[c] = k
        return splits

    @staticmethod
    def _block(
        spec: str, shape: tuple[int, ...], splits: dict[str, int], coords: dict[str, int]
    ) -> Slices:
        if not coords:
            return tuple((0, 0) for _ in shape)
        out = []
        for c, n in zip(spec, shape, strict=True):
            per = n // splits.get(c, 1)
            i = coords.get(c, 0)
            out.append((i * per, (i + 1) * per))
        return tuple(out)


# ---- operators --------------------------------------------------------------------------------


class MatMul(ShardedPrimitive):
    """``MatMul(transpose_a=False, transpose_b=False)``: ``x @ y`` on 2-d inputs."""

    n_inputs = 2
    name = "MatMul"

    def __init__(self, transpose_a: bool = False, transpose_b: bool = False) -> None:
        super().__init__()
        self.transpose_a, self.transpose_b = bool(transpose_a), bool(transpose_b)

    def spec(self, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str]:
        if any(len(s) != 2 for s in shapes):
            raise ValueError(f"{self.name}: inputs must be 2-d, got shapes {shapes}")
        return ["km" if self.transpose_a else "mk", "nk" if self.transpose_b else "kn"], "mn"

    def compute(self, x: Tensor, y: Tensor) -> Tensor:
        if self.transpose_a:
            x = ops.transpose(x, (1, 0))
        if self.transpose_b:
            y = ops.transpose(y, (1, 0))
        return ops.matmul(x, y)


class BatchMatMul(MatMul):
    """``BatchMatMul(transpose_a=False, transpose_b=False)`` on inputs of equal rank >= 3."""

    name = "BatchMatMul"

    def spec(self, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str]:
        n = len(shapes[0])
        if n < 3 or len(shapes[1]) != n or shapes[0][:-2] != shapes[1][:-2]:
            raise ValueError(
                f"{self.name}: the sharded form needs inputs of one rank >= 3 with equal batch "
                f"dims, got shapes {shapes}"
            )
        batch = "abcdefgh"[: n - 2]
        x = batch + ("km" if self.transpose_a else "mk")
        y = batch + ("nk" if self.transpose_b else "kn")
        return [x, y], batch + "mn"

    def compute(self, x: Tensor, y: Tensor) -> Tensor:
        perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
        if self.transpose_a:
            x = ops.transpose(x, perm)
        if self.transpose_b:
            y = ops.transpose(y, perm)
        return ops.matmul(x, y)


class Gather(ShardedPrimitive):
    """``Gather()(input_params, input_indices, axis)``: ``take(params, indices, axis)``;
    ids outside the (local) rows give zeros, as sharded lookups need."""

    n_inputs = 2
    name = "Gather"
    _axis = 0
    _offset = 0

    def __call__(self, input_params: Any, input_indices: Any, axis: int = 0) -> Tensor:
        params = input_params if isinstance(input_params, Tensor) else Tensor(input_params)
        ax = int(axis) % max(params.ndim, 1)
        self._axis = ax
        self._params_rows = params.shape[ax]
        return super().__call__(params, input_indices)

    def spec(self, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str]:
        p, i = shapes
        letters = iter("abcdefghijklmnopqrstuvwxyz")
        pspec = [next(letters) for _ in p]
        ispec = [next(letters) for _ in i]
        # the gathered axis of params is replaced by the indices' dims in the output
        self._row_letter = pspec[self._axis]
        out = pspec[: self._axis] + ispec + pspec[self._axis + 1 :]
        return ["".join(pspec), "".join(ispec)], "".join(out)

    def _block(self, spec, shape, splits, coords):  # type: ignore[override]
        block = ShardedPrimitive._block(spec, shape, splits, coords)
        row = getattr(self, "_row_letter", None)
        if row is not None and row in spec and coords:
            self._offset = block[spec.index(row)][0]
        return block

    def compute(self, params: Tensor, indices: Tensor) -> Tensor:
        ax, rows = self._axis, params.shape[self._axis]
        ids = indices - self._offset if self._offset else indices
        inside = ops.logical_and(ids >= 0, ids < rows)
        safe = ops.select(inside, ids, ops.zeros_like(ids))
        out = ops.gather(params, safe, ax)
        mask_shape = (1,) * ax + tuple(indices.shape) + (1,) * (params.ndim - ax - 1)
        mask = ops.reshape(ops.cast(inside, out.dtype), mask_shape)
        self._offset = 0
        return out * mask


class _Elementwise(ShardedPrimitive):
    fn: Callable[..., Tensor]

    def spec(self, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str]:
        if any(s != shapes[0] for s in shapes):
            raise ValueError(
                f"{self.name}: the sharded form needs inputs of one shape, got {list(shapes)}"
            )
        letters = "abcdefghijklmnop"[: len(shapes[0])]
        return [letters] * len(shapes), letters

    def compute(self, *xs: Tensor) -> Tensor:
        return type(self).fn(*xs)


def _elementwise(name: str, fn: Callable[..., Tensor], n: int) -> type[_Elementwise]:
    doc = f"``{name}()``: elementwise ``ops.{fn.__name__}`` on {n} input(s)."
    return type(
        name, (_Elementwise,), {"name": name, "n_inputs": n, "fn": staticmethod(fn), "__doc__": doc}
    )


Add = _elementwise("Add", ops.add, 2)
Sub = _elementwise("Sub", ops.sub, 2)
Mul = _elementwise("Mul", ops.mul, 2)
RealDiv = _elementwise("RealDiv", ops.div, 2)
Maximum = _elementwise("Maximum", ops.maximum, 2)
Minimum = _elementwise("Minimum", ops.minimum, 2)
ReLU = _elementwise("ReLU", ops.relu, 1)
Tanh = _elementwise("Tanh", ops.tanh, 1)
Sigmoid = _elementwise("Sigmoid", ops.sigmoid, 1)
Exp = _elementwise("Exp", ops.exp, 1)
Neg = _elementwise("Neg", ops.neg, 1)
Square = _elementwise("Square", ops.square, 1)
