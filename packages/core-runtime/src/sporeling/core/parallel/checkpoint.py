"""Distributed checkpoints: each rank saves its shards with a layout description; a loader
reshards from any (dp, mp, optimizer-shard) layout to any other.

Layout
------
A :class:`ParallelLayout` is ``(dp, mp, optimizer_shard, mp_axes)`` over ``dp * mp`` ranks,
rank ``= dp_rank * mp + mp_rank`` (model-parallel groups are consecutive ranks, as
MindSpore and Megatron-LM place them). Each tensor is cut in two steps:

1. model parallel: if ``mp_axes`` names it, its axis (``axis``, or ``(axis, blocks)`` when
   each of ``blocks`` equal blocks of the axis is split, like attention's q/k/v rows) is
   split in ``mp`` equal parts and ``mp_rank`` keeps one; otherwise it is replicated;
2. optimizer shard: with ``optimizer_shard=True``, dim 0 of that part is split in ``dp``
   equal parts and ``dp_rank`` keeps one (a part whose dim 0 does not divide stays
   replicated over the data-parallel group, as MindSpore skips such parameters).

``mp_axes`` maps tensor names to axes; a name also matches tensors whose name ends with
``"." + name`` or is ``<prefix>.<name>`` (optimizer moments named after their parameter),
so the layout of ``weight`` covers ``moment1.weight``.

Files
-----
``<dir>/rank_<r>/<prefix><r>.ckpt`` (MindSpore's ``transform_checkpoints`` layout), each an
ordinary :func:`sporeling.core.save_checkpoint` file whose ``append`` metadata holds
``parallel_layout``: a JSON text with the layout and, per tensor, its global shape and the
``[start, stop)`` slice of every axis of the global tensor this file holds (blocked axes
are described on the global tensor reshaped to ``(..., blocks, n / blocks, ...)``).
Resharding copies bytes only, so any layout -> any layout -> back is exact.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tensor import Tensor
from ..train.serialization import load_checkpoint, load_checkpoint_metadata, save_checkpoint

__all__ = [
    "ParallelLayout",
    "layout_axes_of",
    "shard_tensors",
    "save_distributed_checkpoint",
    "save_layout_checkpoints",
    "load_distributed_checkpoint",
    "merge_checkpoints",
    "transform_checkpoints",
    "reshard_main",
]

LAYOUT_KEY = "parallel_layout"
LAYOUT_VERSION = 1

Axis = int | tuple[int, int]


def _axis_pair(name: str, ax: Any) -> tuple[int, int]:
    if isinstance(ax, (list, tuple)) and len(ax) == 2:
        return int(ax[0]), int(ax[1])
    if isinstance(ax, (int, np.integer)) and not isinstance(ax, bool):
        return int(ax), 1
    raise TypeError(f"ParallelLayout: mp_axes[{name!r}] expected an int or (axis, blocks)")


@dataclass(frozen=True)
class ParallelLayout:
    """How tensors are spread over ``dp * mp`` ranks (see the module docstring)."""

    dp: int = 1
    mp: int = 1
    optimizer_shard: bool = False
    mp_axes: Mapping[str, Axis] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for arg in ("dp", "mp"):
            v = getattr(self, arg)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(
                    f"ParallelLayout: argument '{arg}' expected an int >= 1, got {v!r}"
                )
        axes = {str(k): _axis_pair(k, v) for k, v in dict(self.mp_axes).items()}
        object.__setattr__(self, "mp_axes", axes)

    @property
    def world_size(self) -> int:
        return self.dp * self.mp

    def coords(self, rank: int) -> tuple[int, int]:
        """``(dp_rank, mp_rank)`` of a global rank."""
        if not 0 <= rank < self.world_size:
            raise ValueError(f"ParallelLayout: rank {rank} is outside [0, {self.world_size})")
        return divmod(rank, self.mp)

    def axis_of(self, name: str) -> tuple[int, int] | None:
        """The model-parallel ``(axis, blocks)`` of tensor ``name`` (None: replicated)."""
        if name in self.mp_axes:
            return self.mp_axes[name]  # type: ignore[return-value]
        for key, ax in self.mp_axes.items():
            if name.endswith("." + key):
                return ax  # type: ignore[return-value]
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "dp": self.dp,
            "mp": self.mp,
            "optimizer_shard": self.optimizer_shard,
            "mp_axes": {k: list(v) for k, v in self.mp_axes.items()},  # type: ignore[arg-type]
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ParallelLayout:
        axes = {k: tuple(v) for k, v in obj.get("mp_axes", {}).items()}
        return cls(int(obj["dp"]), int(obj["mp"]), bool(obj["optimizer_shard"]), axes)

    def with_shape(
        self, dp: int | None = None, mp: int | None = None, optimizer_shard: bool | None = None
    ) -> ParallelLayout:
        """The same tensor axes over another (dp, mp, optimizer_shard)."""
        return ParallelLayout(
            self.dp if dp is None else dp,
            self.mp if mp is None else mp,
            self.optimizer_shard if optimizer_shard is None else optimizer_shard,
            self.mp_axes,
        )

    # -- slices ---------------------------------------------------------------------------
    def blocked_shape(self, name: str, shape: Sequence[int]) -> tuple[int, ...]:
        """``shape`` with a blocked mp axis expanded to ``(blocks, n / blocks)``."""
        ax = self.axis_of(name)
        shape = tuple(int(s) for s in shape)
        if ax is None or ax[1] == 1:
            return shape
        axis, blocks = ax
        if shape[axis] % blocks:
            raise ValueError(
                f"ParallelLayout: tensor '{name}' axis {axis} ({shape[axis]}) does not divide "
                f"into {blocks} blocks"
            )
        return shape[:axis] + (blocks, shape[axis] // blocks) + shape[axis + 1 :]

    def slices(self, name: str, shape: Sequence[int], rank: int) -> list[tuple[int, int]]:
        """``[start, stop)`` per axis of the blocked global tensor that ``rank`` holds."""
        dp_rank, mp_rank = self.coords(rank)
        bshape = self.blocked_shape(name, shape)
        sl = [(0, s) for s in bshape]
        ax = self.axis_of(name)
        if ax is not None and self.mp > 1:
            axis = ax[0] + (1 if ax[1] > 1 else 0)
            if axis >= len(bshape):
                raise ValueError(f"ParallelLayout: tensor '{name}' has no axis {ax[0]}")
            n = bshape[axis]
            if n % self.mp:
                raise ValueError(
                    f"ParallelLayout: tensor '{name}' of shape {tuple(shape)}: axis {ax[0]} "
                    f"({n} per block) does not divide over mp={self.mp}"
                )
            per = n // self.mp
            sl[axis] = (mp_rank * per, (mp_rank + 1) * per)
        if self.optimizer_shard and self.dp > 1 and bshape:
            start, stop = sl[0]
            if (stop - start) % self.dp == 0 and stop > start:
                per = (stop - start) // self.dp
                sl[0] = (start + dp_rank * per, start + (dp_rank + 1) * per)
        return sl


def layout_axes_of(net: Any) -> dict[str, Axis]:
    """``{parameter name: mp axis}`` from the ``tensor_parallel_axes`` of the tensor-parallel
    layers in ``net`` (parameter names as ``net.parameters_and_names()`` gives them)."""
    out: dict[str, Axis] = {}
    params = dict(net.parameters_and_names())
    for cell_name, cell in net.cells_and_names():
        for attr, ax in getattr(cell, "tensor_parallel_axes", {}).items():
            key = (cell_name + "." if cell_name else "") + attr
            p = params.get(key)
            out[p.name if p is not None else key] = ax
    return out


def _take(arr: np.ndarray, name: str, layout: ParallelLayout, sl: list[tuple[int, int]]) -> Any:
    blocked = arr.reshape(layout.blocked_shape(name, arr.shape))
    part = blocked[tuple(slice(a, b) for a, b in sl)]
    return np.ascontiguousarray(part)


def _as_array(value: Any) -> np.ndarray:
    return np.asarray(value.asnumpy() if isinstance(value, Tensor) else value)


def shard_tensors(
    full: Mapping[str, Any], layout: ParallelLayout, rank: int
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Rank ``rank``'s pieces of the full tensors ``full`` and their layout record."""
    pieces: dict[str, np.ndarray] = {}
    record: dict[str, Any] = {}
    for name, value in full.items():
        arr = _as_array(value)
        sl = layout.slices(name, arr.shape, rank)
        part = _take(arr, name, layout, sl)
        pieces[name] = part.reshape(_local_shape(name, layout, arr.shape, sl))
        record[name] = {"global_shape": list(arr.shape), "slices": [list(s) for s in sl]}
    return pieces, record


def _local_shape(
    name: str, layout: ParallelLayout, shape: Sequence[int], sl: list[tuple[int, int]]
) -> tuple[int, ...]:
    """The piece's shape with a blocked axis folded back (blocks * part)."""
    ax = layout.axis_of(name)
    sizes = [b - a for a, b in sl]
    if ax is None or ax[1] == 1:
        return tuple(sizes)
    axis = ax[0]
    return tuple(sizes[:axis]) + (sizes[axis] * sizes[axis + 1],) + tuple(sizes[axis + 2 :])


def _meta(layout: ParallelLayout, rank: int, record: dict[str, Any]) -> str:
    return json.dumps(
        {
            "version": LAYOUT_VERSION,
            "layout": layout.to_json(),
            "rank": rank,
            "tensors": record,
        },
        sort_keys=True,
    )


def rank_file(directory: str, rank: int, prefix: str = "checkpoint_") -> str:
    return os.path.join(directory, f"rank_{rank}", f"{prefix}{rank}.ckpt")


def _write(path: str, pieces: Mapping[str, np.ndarray], meta: str, extra: Any = None) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    items = [{"name": n, "data": Tensor.from_numpy(a)} for n, a in pieces.items()]
    append: dict[str, Any] = {LAYOUT_KEY: meta}
    if extra:
        append.update(extra)
    save_checkpoint(items, path, append_dict=append)


def save_distributed_checkpoint(
    save_obj: Any,
    ckpt_file_name: str,
    layout: ParallelLayout,
    rank: int | None = None,
    global_shapes: Mapping[str, Sequence[int]] | None = None,
) -> None:
    """Save this rank's tensors (already its shards) with their layout description.

    ``save_obj`` is a Cell (its parameters by name) or ``{name: Tensor}``; ``rank`` defaults
    to the communication rank. ``global_shapes`` gives full shapes; by default they are
    derived from the shard shapes and the layout (exact when every split is even).
    """
    if rank is None:
        from .tensor_parallel import group_rank_size

        rank = group_rank_size(None)[0]
    if hasattr(save_obj, "parameters_and_names"):
        tensors = {p.name: p for _, p in save_obj.parameters_and_names()}
    elif isinstance(save_obj, Mapping):
        tensors = dict(save_obj)
    else:
        raise TypeError(
            "save_distributed_checkpoint: argument 'save_obj' expected a Cell or a dict of "
            f"Tensors, got {type(save_obj).__name__}"
        )
    pieces: dict[str, np.ndarray] = {}
    record: dict[str, Any] = {}
    for name, value in tensors.items():
        arr = _as_array(value)
        if global_shapes is not None and name in global_shapes:
            gshape = tuple(int(s) for s in global_shapes[name])
        else:
            gshape = _global_shape(name, layout, arr.shape, rank)
        sl = layout.slices(name, gshape, rank)
        want = _local_shape(name, layout, gshape, sl)
        if tuple(arr.shape) != want:
            raise ValueError(
                f"save_distributed_checkpoint: tensor '{name}' has shape {arr.shape}, but rank "
                f"{rank} of {layout} holds a {want} piece of the global {gshape}"
            )
        pieces[name] = np.ascontiguousarray(arr)
        record[name] = {"global_shape": list(gshape), "slices": [list(s) for s in sl]}
    _write(ckpt_file_name, pieces, _meta(layout, rank, record))


def _global_shape(
    name: str, layout: ParallelLayout, local: Sequence[int], rank: int
) -> tuple[int, ...]:
    shape = list(local)
    ax = layout.axis_of(name)
    if ax is not None and layout.mp > 1:
        shape[ax[0]] *= layout.mp
    if layout.optimizer_shard and layout.dp > 1 and shape:
        # shards of dim 0 only when it divides; a saved dim that was not sharded is ambiguous,
        # so pass global_shapes for such tensors
        candidate = list(shape)
        candidate[0] *= layout.dp
        sl = layout.slices(name, candidate, rank)
        if _local_shape(name, layout, candidate, sl) == tuple(local):
            shape = candidate
    return tuple(shape)


def save_layout_checkpoints(
    full: Mapping[str, Any],
    directory: str,
    layout: ParallelLayout,
    prefix: str = "checkpoint_",
) -> list[str]:
    """Write every rank's file of ``layout`` from full tensors (one process simulates all
    ranks); returns the file names."""
    files = []
    for rank in range(layout.world_size):
        pieces, record = shard_tensors(full, layout, rank)
        path = rank_file(directory, rank, prefix)
        _write(path, pieces, _meta(layout, rank, record))
        files.append(path)
    return files


def _read_layout(path: str) -> dict[str, Any]:
    meta = load_checkpoint_metadata(path)
    raw = meta["append"].get(LAYOUT_KEY)
    if not isinstance(raw, str):
        raise ValueError(
            f"checkpoint '{path}' has no '{LAYOUT_KEY}' record; it was not written by "
            "save_distributed_checkpoint / save_layout_checkpoints"
        )
    info = json.loads(raw)
    if info.get("version", 0) > LAYOUT_VERSION:
        raise ValueError(f"checkpoint '{path}': layout version {info['version']} is too new")
    return info


def _find_files(directory: str, prefix: str) -> list[str]:
    found = []
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"checkpoint directory '{directory}' does not exist")
    for entry in sorted(os.listdir(directory)):
        m = re.fullmatch(r"rank_(\d+)", entry)
        if m:
            path = rank_file(directory, int(m.group(1)), prefix)
            if os.path.isfile(path):
                found.append(path)
    if not found:
        raise FileNotFoundError(f"no '{prefix}<rank>.ckpt' files under '{directory}/rank_<rank>/'")
    return found


def merge_checkpoints(
    checkpoint_filenames: Sequence[str],
) -> tuple[dict[str, np.ndarray], ParallelLayout]:
    """Assemble the full tensors from every rank's file (checking every element is covered
    and replicated copies agree); returns them and the files' layout."""
    full: dict[str, np.ndarray] = {}
    covered: dict[str, np.ndarray] = {}
    layout: ParallelLayout | None = None
    for path in checkpoint_filenames:
        info = _read_layout(path)
        lay = ParallelLayout.from_json(info["layout"])
        if layout is None:
            layout = lay
        elif lay != layout:
            raise ValueError(f"checkpoint '{path}' has layout {lay}, the others {layout}")
        arrays = load_checkpoint(path)
        for name, rec in info["tensors"].items():
            piece = arrays[name].asnumpy()
            gshape = tuple(rec["global_shape"])
            bshape = lay.blocked_shape(name, gshape)
            if name not in full:
                full[name] = np.zeros(bshape, piece.dtype)
                covered[name] = np.zeros(bshape, bool)
            index = tuple(slice(a, b) for a, b in rec["slices"])
            piece = piece.reshape(full[name][index].shape)
            seen = covered[name][index]
            if seen.any() and not np.array_equal(full[name][index][seen], piece[seen]):
                raise ValueError(
                    f"merge_checkpoints: replicated copies of '{name}' disagree ('{path}')"
                )
            full[name][index] = piece
            covered[name][index] = True
    if layout is None:
        raise ValueError("merge_checkpoints: no checkpoint files given")
    for name, mask in covered.items():
        if not mask.all():
            raise ValueError(
                f"merge_checkpoints: {int((~mask).sum())} elements of '{name}' are in no file; "
                "a rank's checkpoint is missing"
            )
    out = {}
    for name, arr in full.items():
        info_shape = arr.shape
        ax = layout.axis_of(name)
        if ax is not None and ax[1] > 1:
            a = ax[0]
            info_shape = arr.shape[:a] + (arr.shape[a] * arr.shape[a + 1],) + arr.shape[a + 2 :]
        out[name] = arr.reshape(info_shape)
    return out, layout


def transform_checkpoints(
    src_checkpoints_dir: str,
    dst_checkpoints_dir: str,
    ckpt_prefix: str = "checkpoint_",
    dst_layout: ParallelLayout | None = None,
    *,
    dp: int | None = None,
    mp: int | None = None,
    optimizer_shard: bool | None = None,
) -> list[str]:
    """Reshard ``<src>/rank_*/<prefix><r>.ckpt`` into ``dst_layout`` (or the source's tensor
    axes with ``dp``/``mp``/``optimizer_shard`` replaced) under ``dst_checkpoints_dir``.

    MindSpore 2.x's ``transform_checkpoints`` with the layouts read from the files instead
    of strategy files. Returns the written files.
    """
    full, src = merge_checkpoints(_find_files(src_checkpoints_dir, ckpt_prefix))
    target = dst_layout or src.with_shape(dp, mp, optimizer_shard)
    return save_layout_checkpoints(full, dst_checkpoints_dir, target, ckpt_prefix)


def load_distributed_checkpoint(
    network: Any,
    checkpoint_filenames: Sequence[str],
    layout: ParallelLayout | None = None,
    rank: int | None = None,
    strict_load: bool = False,
) -> dict[str, Any]:
    """Load a distributed checkpoint of any layout into ``network``.

    The files' shards are merged, then cut for ``layout`` (default: unsharded) at ``rank``
    (default: the communication rank) and loaded with ``load_param_into_net``. Returns the
    ``{name: Parameter}`` dict that was loaded.
    """
    from ..tensor import Parameter
    from ..train.serialization import load_param_into_net

    full, _ = merge_checkpoints(checkpoint_filenames)
    target = layout or ParallelLayout()
    if rank is None:
        from .tensor_parallel import group_rank_size

        rank = group_rank_size(None)[0] % target.world_size
    pieces, _ = shard_tensors(full, target, rank)
    params = {n: Parameter(a, name=n) for n, a in pieces.items()}
    if network is not None:
        load_param_into_net(network, params, strict_load)
    return params


# ---- sporeling reshard --------------------------------------------------------------------


def reshard_main(argv: Sequence[str] | None = None) -> int:
    """``sporeling reshard SRC DST --dp D --mp M [--optimizer-shard]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="sporeling reshard",
        description="Reshard a distributed checkpoint (rank_<r>/<prefix><r>.ckpt files) from "
        "its layout to another (dp, mp, optimizer-shard) layout.",
    )
    parser.add_argument("src", help="source directory (rank_<r>/ subfolders)")
    parser.add_argument("dst", help="destination directory")
    parser.add_argument("--dp", type=int, default=None, help="target data-parallel size")
    parser.add_argument("--mp", type=int, default=None, help="target model-parallel size")
    shard = parser.add_mutually_exclusive_group()
    shard.add_argument(
        "--optimizer-shard",
        dest="optimizer_shard",
        action="store_true",
        default=None,
        help="shard dim 0 over the data-parallel group",
    )
    shard.add_argument("--no-optimizer-shard", dest="optimizer_shard", action="store_false")
    parser.add_argument("--prefix", default="checkpoint_", help="file prefix (checkpoint_)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="reload the result and verify it equals the source exactly",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    src_full, src_layout = merge_checkpoints(_find_files(args.src, args.prefix))
    target = src_layout.with_shape(args.dp, args.mp, args.optimizer_shard)
    files = save_layout_checkpoints(src_full, args.dst, target, args.prefix)
    print(
        f"resharded {len(src_full)} tensors from dp={src_layout.dp} mp={src_layout.mp} "
        f"optimizer_shard={src_layout.optimizer_shard} to dp={target.dp} mp={target.mp} "
        f"optimizer_shard={target.optimizer_shard}: {len(files)} files in {args.dst}"
    )
    if args.check:
        back, _ = merge_checkpoints(files)
        for name, arr in src_full.items():
            if not np.array_equal(back[name], arr):
                print(f"check failed: '{name}' differs after resharding")
                return 1
        print("check: the resharded checkpoint equals the source exactly")
    return 0
