"""Replay buffers of MindSpore RL 0.5 on preallocated arrays: uniform, prioritized, reservoir.

Every buffer stores one array per element of a transition (``shapes``/``types`` are the
config's ``data_shape``/``data_type``). ``insert(exp)`` takes a list with one value per
element: either one transition (each value of shape ``shapes[i]``) or a batch (each of shape
``(k, *shapes[i])``, the same ``k`` for all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sporeling.core import Tensor, get_seed
from sporeling.core import dtype as _dtype

from . import _buffer_kernels as K


def _as_np(x: Any) -> np.ndarray:
    return x.asnumpy() if isinstance(x, Tensor) else np.asarray(x)


class _Storage:
    def __init__(
        self, cls: str, capacity: int, shapes: Sequence[Any], types: Sequence[Any]
    ) -> None:
        if (
            isinstance(capacity, bool)
            or not isinstance(capacity, (int, np.integer))
            or capacity < 1
        ):
            raise ValueError(f"{cls}: capacity expected an int >= 1, got {capacity!r}")
        if len(shapes) != len(types):
            raise ValueError(
                f"{cls}: {len(shapes)} shapes but {len(types)} types; give one dtype per shape"
            )
        self.cls = cls
        self.capacity = int(capacity)
        self.shapes = [tuple(int(d) for d in s) for s in shapes]
        self.dtypes = [np.dtype(_dtype.to_dtype(t, "types").np) for t in types]
        self.data = [np.zeros((self.capacity, *s), t) for s, t in zip(self.shapes, self.dtypes)]

    def batch(self, exp: Sequence[Any]) -> list[np.ndarray]:
        """Normalise one transition or a batch to arrays of shape (k, *shape_i)."""
        if len(exp) != len(self.shapes):
            raise ValueError(
                f"{self.cls}.insert: expected {len(self.shapes)} elements (one per data_shape), "
                f"got {len(exp)}"
            )
        out, k = [], None
        for i, (x, shape) in enumerate(zip(exp, self.shapes)):
            a = _as_np(x)
            if a.shape == shape:
                a = a[None]
            elif a.shape[1:] != shape:
                raise ValueError(
                    f"{self.cls}.insert: element {i} expected shape {shape} or (k, *{shape}), "
                    f"got {a.shape}"
                )
            if k is None:
                k = a.shape[0]
            elif a.shape[0] != k:
                raise ValueError(
                    f"{self.cls}.insert: element {i} holds {a.shape[0]} transitions, element 0 "
                    f"holds {k}"
                )
            out.append(a.astype(self.dtypes[i], copy=False))
        return out

    def write(self, slots: np.ndarray, rows: list[np.ndarray]) -> None:
        for store, row in zip(self.data, rows):
            store[slots] = row

    def gather(self, idx: np.ndarray) -> list[np.ndarray]:
        return [store[idx] for store in self.data]


def _seeded(seed: int | None) -> np.random.Generator:
    if seed is None or seed == 0:
        seed = get_seed()
    return np.random.default_rng(seed)


class UniformReplayBuffer:
    """A ring of ``capacity`` transitions; ``sample()`` draws ``sample_size`` with replacement,
    uniformly, and returns one Tensor per element of shape ``(sample_size, *shape_i)``."""

    def __init__(
        self,
        sample_size: int,
        capacity: int,
        shapes: Sequence[Any],
        types: Sequence[Any],
        seed: int | None = None,
    ) -> None:
        self._store = _Storage(type(self).__name__, capacity, shapes, types)
        if isinstance(sample_size, bool) or int(sample_size) < 1:
            raise ValueError(
                f"{type(self).__name__}: sample_size expected an int >= 1, got {sample_size!r}"
            )
        self.sample_size = int(sample_size)
        self.capacity = self._store.capacity
        self.rng = _seeded(seed)
        self.count = 0
        self.head = 0  # the slot the next transition goes to

    def insert(self, exp: Sequence[Any]) -> bool:
        rows = self._store.batch(exp)
        k = rows[0].shape[0]
        if k > self.capacity:  # only the newest `capacity` survive
            rows = [r[-self.capacity :] for r in rows]
            self.head = (self.head + k - self.capacity) % self.capacity
            k = self.capacity
        slots = (self.head + np.arange(k)) % self.capacity
        self._store.write(slots, rows)
        self.head = int((self.head + k) % self.capacity)
        self.count = min(self.count + k, self.capacity)
        return True

    def sample_indices(self) -> np.ndarray:
        if self.count == 0:
            raise RuntimeError(f"{type(self).__name__}.sample: the buffer is empty")
        return self.rng.integers(0, self.count, self.sample_size)

    def sample_np(self) -> list[np.ndarray]:
        return self._store.gather(self.sample_indices())

    def sample(self) -> list[Tensor]:
        return [Tensor(a) for a in self.sample_np()]

    def get_item(self, index: int) -> list[Tensor]:
        """The transition at ``index``, counted from the oldest one held."""
        if not -self.count <= index < self.count:
            raise IndexError(f"{type(self).__name__}.get_item: index {index} of {self.count}")
        index %= self.count
        start = self.head if self.count == self.capacity else 0
        slot = (start + index) % self.capacity
        return [Tensor(a[slot]) for a in self._store.data]

    def get_data_np(self) -> list[np.ndarray]:
        """Every held transition, oldest first."""
        start = self.head if self.count == self.capacity else 0
        order = (start + np.arange(self.count)) % self.capacity
        return self._store.gather(order)

    def size(self) -> int:
        return self.count

    def full(self) -> bool:
        return self.count == self.capacity

    def reset(self) -> bool:
        self.count = 0
        self.head = 0
        return True


class PriorityReplayBuffer:
    """Prioritized experience replay (Schaul et al. 2016) on a Numba sum tree.

    A transition of priority ``p`` is drawn with probability ``p^alpha / sum_j p_j^alpha``
    (one draw per equal slice of the total: stratified, as 0.5's kernel); new transitions get
    the largest priority seen so far. ``sample(beta)`` returns ``(indices, weights, *elements)``
    with importance weights ``(N P(i))^-beta / max_j (N P(j))^-beta``.
    """

    def __init__(
        self,
        alpha: float,
        capacity: int,
        sample_size: int,
        shapes: Sequence[Any],
        types: Sequence[Any],
        seed0: int = 0,
        seed1: int = 0,
    ) -> None:
        self._store = _Storage(type(self).__name__, capacity, shapes, types)
        if not alpha >= 0:
            raise ValueError(f"PriorityReplayBuffer: alpha expected >= 0, got {alpha!r}")
        self.alpha = float(alpha)
        self.capacity = self._store.capacity
        self.sample_size = int(sample_size)
        size = 1
        while size < self.capacity:
            size *= 2
        self.sum_tree = np.zeros(2 * size, np.float64)
        self.min_tree = np.full(2 * size, np.inf, np.float64)
        self.max_priority = 1.0
        self.rng = _seeded(seed0 or seed1 or None)
        self.count = 0
        self.head = 0

    def insert(self, *transition: Any) -> int:
        """Insert one transition or a batch: ``insert(s, a, r, s2)`` or ``insert([...])``."""
        exp = transition[0] if len(transition) == 1 else transition
        rows = self._store.batch(exp)
        k = rows[0].shape[0]
        slots = (self.head + np.arange(k)) % self.capacity
        self._store.write(slots, rows)
        pri = np.full(k, self.max_priority**self.alpha)
        K.tree_update(self.sum_tree, self.min_tree, slots.astype(np.int64), pri)
        self.head = int((self.head + k) % self.capacity)
        self.count = min(self.count + k, self.capacity)
        return self.count

    def sample_indices(self, beta: float) -> tuple[np.ndarray, np.ndarray]:
        if self.count == 0:
            raise RuntimeError("PriorityReplayBuffer.sample: the buffer is empty")
        total = self.sum_tree[1]
        seg = total / self.sample_size
        prefixes = (np.arange(self.sample_size) + self.rng.random(self.sample_size)) * seg
        idx = np.empty(self.sample_size, np.int64)
        K.tree_find(self.sum_tree, prefixes, self.count, idx)
        size = self.sum_tree.shape[0] // 2
        p = self.sum_tree[size + idx] / total
        p_min = self.min_tree[1] / total
        weights = (p / p_min) ** (-float(beta))  # == (N p)^-beta / (N p_min)^-beta
        return idx, weights.astype(np.float32)

    def sample_np(self, beta: float) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        idx, w = self.sample_indices(beta)
        return idx, w, self._store.gather(idx)

    def sample(self, beta: float = 0.4) -> tuple[Tensor, ...]:
        idx, w, data = self.sample_np(beta)
        return (Tensor(idx), Tensor(w), *(Tensor(d) for d in data))

    def update_priorities(self, indices: Any, priorities: Any) -> bool:
        idx = _as_np(indices).astype(np.int64).reshape(-1)
        pri = _as_np(priorities).astype(np.float64).reshape(-1)
        if idx.shape != pri.shape:
            raise ValueError(
                f"PriorityReplayBuffer.update_priorities: {idx.size} indices but {pri.size} "
                f"priorities"
            )
        if np.any(pri <= 0) or not np.all(np.isfinite(pri)):
            raise ValueError(
                "PriorityReplayBuffer.update_priorities: priorities must be > 0 and finite"
            )
        if np.any((idx < 0) | (idx >= self.count)):
            raise IndexError(
                f"PriorityReplayBuffer.update_priorities: an index is outside [0, {self.count})"
            )
        self.max_priority = max(self.max_priority, float(pri.max()))
        K.tree_update(self.sum_tree, self.min_tree, idx, pri**self.alpha)
        return True

    def size(self) -> int:
        return self.count

    def full(self) -> bool:
        return self.count == self.capacity

    def reset(self) -> bool:
        self.sum_tree[:] = 0.0
        self.min_tree[:] = np.inf
        self.max_priority = 1.0
        self.count = self.head = 0
        return True


class ReservoirReplayBuffer:
    """A uniform sample of *everything ever inserted* (Vitter's Algorithm R): after ``n``
    inserts each one is held with probability ``capacity / n``. Used by NFSP-style methods."""

    def __init__(
        self,
        capacity: int,
        sample_size: int,
        shapes: Sequence[Any],
        types: Sequence[Any],
        seed0: int = 0,
        seed1: int = 0,
    ) -> None:
        self._store = _Storage(type(self).__name__, capacity, shapes, types)
        self.capacity = self._store.capacity
        self.sample_size = int(sample_size)
        self.rng = _seeded(seed0 or seed1 or None)
        self.seen = 0

    def insert(self, *transition: Any) -> bool:
        exp = transition[0] if len(transition) == 1 else transition
        rows = self._store.batch(exp)
        k = rows[0].shape[0]
        slots = np.empty(k, np.int64)
        self.seen = K.reservoir_slots(self.seen, self.capacity, self.rng.random(k), slots)
        keep = slots >= 0
        # a later item of the same batch may replace an earlier one: write in order
        for i in np.flatnonzero(keep):
            self._store.write(slots[i : i + 1], [r[i : i + 1] for r in rows])
        return True

    def size(self) -> int:
        return min(self.seen, self.capacity)

    def full(self) -> bool:
        return self.seen >= self.capacity

    def sample_np(self) -> list[np.ndarray]:
        if self.seen == 0:
            raise RuntimeError("ReservoirReplayBuffer.sample: the buffer is empty")
        return self._store.gather(self.rng.integers(0, self.size(), self.sample_size))

    def sample(self) -> list[Tensor]:
        return [Tensor(a) for a in self.sample_np()]

    def reset(self) -> bool:
        self.seen = 0
        return True
