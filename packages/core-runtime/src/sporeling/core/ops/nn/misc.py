"""CTC greedy decoding, uniform candidate sampling and channel dropout."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...errors import check_int, op_error
from ...tensor import Tensor
from .._core import cast
from ._common import _LAYOUT, _check_ndim, _const, _float, _tensor

# ---- CTC greedy decoding, candidate sampling --------------------------------------------


def ctc_greedy_decoder(inputs: Any, sequence_length: Any, merge_repeated: bool = True) -> Any:
    """Greedy (best-path) CTC decoding of logits (max_time, batch, num_classes); the blank is
    class num_classes - 1. Returns (decoded_indices (total, 2), decoded_values (total,),
    decoded_shape (2,), log_probability (batch, 1)); the first three are int64 and
    log_probability is minus the sum of each step's best logit."""
    op = "ctc_greedy_decoder"
    x = _float(op, "inputs", inputs)
    _check_ndim(op, "inputs", x, (3,), "max_time, batch_size, num_classes")
    sl = _tensor(op, "sequence_length", sequence_length)
    t_max, batch, ncls = x.shape
    if sl.dtype.category != 1 or sl.shape != (batch,):
        raise op_error(op, "sequence_length", sl, f"an integer tensor of shape ({batch},)")
    # The output length depends on the data, so decoding runs on host values (like masks).
    logits = x.asnumpy()
    lens = sl.asnumpy().astype(np.int64)
    if np.any(lens < 0) or np.any(lens > t_max):
        raise op_error(op, "sequence_length", lens.tolist(), f"values in [0, {t_max}]")
    blank = ncls - 1
    indices: list[tuple[int, int]] = []
    values: list[int] = []
    logp = np.zeros((batch, 1), np.float64)
    longest = 0
    for b in range(batch):
        steps = logits[: lens[b], b, :]
        best = np.argmax(steps, axis=1) if lens[b] else np.zeros(0, np.int64)
        logp[b, 0] = -np.sum(np.max(steps, axis=1)) if lens[b] else 0.0
        prev = -1
        pos = 0
        for cls in best.tolist():
            if cls != blank and not (merge_repeated and cls == prev):
                indices.append((b, pos))
                values.append(cls)
                pos += 1
            prev = cls
        longest = max(longest, pos)
    dev = x._device
    return (
        Tensor(np.asarray(indices, np.int64).reshape(-1, 2), device=dev),
        Tensor(np.asarray(values, np.int64), device=dev),
        Tensor(np.asarray([batch, longest], np.int64), device=dev),
        Tensor(logp.astype(x.dtype.np), device=dev),
    )


def uniform_candidate_sampler(
    true_classes: Any,
    num_true: int,
    num_sampled: int,
    unique: bool,
    range_max: int,
    seed: int = 0,
    remove_accidental_hits: bool = False,
) -> Any:
    """Sample ``num_sampled`` classes uniformly from [0, range_max) (without repeats when
    ``unique``). Returns (sampled_candidates, true_expected_count (batch, num_true),
    sampled_expected_count (num_sampled,)); expected counts are num_tries * p, or
    1 - (1 - p) ** num_tries when unique (p = 1 / range_max). With
    ``remove_accidental_hits`` classes in ``true_classes`` are never sampled. ``seed`` 0
    draws from the global generator."""
    from ...random_state import generator

    op = "uniform_candidate_sampler"
    tc = _tensor(op, "true_classes", true_classes)
    num_true = check_int(op, "num_true", num_true, 1)
    num_sampled = check_int(op, "num_sampled", num_sampled, 1)
    range_max = check_int(op, "range_max", range_max, 1)
    seed = check_int(op, "seed", seed, 0)
    for name, v in (("unique", unique), ("remove_accidental_hits", remove_accidental_hits)):
        if not isinstance(v, (bool, np.bool_)):
            raise op_error(op, name, v, "a bool", TypeError)
    if tc.ndim != 2 or tc.shape[1] != num_true or tc.dtype.category != 1:
        raise op_error(op, "true_classes", tc, f"an integer tensor of shape (batch, {num_true})")
    true_np = tc.asnumpy().astype(np.int64)
    if np.any(true_np < 0) or np.any(true_np >= range_max):
        raise op_error(op, "true_classes", tc, f"values in [0, {range_max})")
    pool = np.arange(range_max)
    if remove_accidental_hits:
        pool = np.setdiff1d(pool, true_np)
    if unique and num_sampled > len(pool):
        raise op_error(
            op, "num_sampled", num_sampled, f"at most the {len(pool)} classes available when unique"
        )
    if len(pool) == 0:
        raise op_error(op, "true_classes", tc, "to leave some class to sample")
    rng = np.random.default_rng(seed) if seed else generator(tc._device)
    draw = lambda k: pool[np.asarray(rng.integers(0, len(pool), k)).astype(np.int64)]  # noqa: E731
    if unique:
        picked: list[int] = []
        seen: set[int] = set()
        tries = 0
        while len(picked) < num_sampled:
            for v in draw(num_sampled).tolist():
                tries += 1
                if v not in seen:
                    seen.add(v)
                    picked.append(v)
                    if len(picked) == num_sampled:
                        break
        sampled = np.asarray(picked, np.int64)
    else:
        sampled = draw(num_sampled)
        tries = num_sampled
    p = 1.0 / len(pool)
    expected = tries * p if tries == num_sampled else -math.expm1(tries * math.log1p(-p))
    dev = tc._device
    return (
        Tensor(sampled.astype(tc.dtype.np), device=dev),
        Tensor(np.full(tc.shape, expected, np.float32), device=dev),
        Tensor(np.full((num_sampled,), expected, np.float32), device=dev),
    )


# ---- channel dropout -----------------------------------------------------------------------


def _dropout_nd(op: str, nd: int, x: Any, p: Any) -> tuple[Tensor, Tensor]:
    from ...random_state import generator

    t = _tensor(op, "x", x)
    _check_ndim(op, "x", t, (nd + 2,), _LAYOUT[nd])
    if isinstance(p, bool) or not isinstance(p, (float, int)):
        raise op_error(op, "p", p, "a float", TypeError)
    if not 0.0 <= p <= 1.0:
        raise op_error(op, "p", p, "a float in [0.0, 1.0]")
    if t.dtype.category == 0:
        raise op_error(op, "x", t, "a numeric tensor", TypeError)
    dev = t._device
    keep = generator(dev).random(t.shape[:2] + (1,) * nd) >= p
    mask = Tensor(dev.xp.broadcast_to(keep, t.shape).copy(), device=dev)
    if p >= 1.0:
        return t * 0, mask
    scale = _const(t, np.asarray(1.0 / (1.0 - p)), t.dtype if t.dtype.category == 2 else None)
    out = t * cast(mask, t.dtype) * scale if t.dtype.category == 2 else t * cast(mask, t.dtype)
    return out, mask


def dropout2d(x: Any, p: float = 0.5) -> tuple[Tensor, Tensor]:
    """Zero whole channels of (N, C, H, W) with probability ``p`` and scale the rest by
    1 / (1 - p); returns (output, mask) with a bool mask shaped like ``x``."""
    return _dropout_nd("dropout2d", 2, x, p)


def dropout3d(x: Any, p: float = 0.5) -> tuple[Tensor, Tensor]:
    """Channel dropout for (N, C, D, H, W); see :func:`dropout2d`."""
    return _dropout_nd("dropout3d", 3, x, p)
