"""Numba kernels of the replay buffers: a sum tree (with a min tree) and reservoir inserts.

The trees are flat arrays of ``2 * size`` (``size`` a power of two): node ``i`` has children
``2i`` and ``2i + 1``, leaf ``j`` sits at ``size + j``, the root at 1.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def tree_update(sum_tree, min_tree, leaves, values):  # pragma: no cover - jit
    """Set leaves[k] to values[k] in both trees, then repair their ancestors."""
    size = sum_tree.shape[0] // 2
    for k in range(leaves.shape[0]):
        i = size + leaves[k]
        sum_tree[i] = values[k]
        min_tree[i] = values[k]
        i //= 2
        while i >= 1:
            sum_tree[i] = sum_tree[2 * i] + sum_tree[2 * i + 1]
            min_tree[i] = min(min_tree[2 * i], min_tree[2 * i + 1])
            i //= 2


@nb.njit(cache=True)
def tree_find(sum_tree, prefixes, count, out):  # pragma: no cover - jit
    """out[k] = the first leaf whose inclusive prefix sum exceeds prefixes[k] (< count)."""
    size = sum_tree.shape[0] // 2
    for k in range(prefixes.shape[0]):
        p = prefixes[k]
        i = 1
        while i < size:
            left = sum_tree[2 * i]
            if p < left:
                i = 2 * i
            else:
                p -= left
                i = 2 * i + 1
        leaf = i - size
        # float round-off can walk past the last filled leaf (p == total): clamp to it
        out[k] = leaf if leaf < count else count - 1


@nb.njit(cache=True)
def reservoir_slots(seen, capacity, uniforms, out):  # pragma: no cover - jit
    """Algorithm R for len(uniforms) new items after ``seen`` items: out[k] is the slot the
    k-th item replaces, or -1 when it is dropped. Returns the new ``seen``."""
    for k in range(uniforms.shape[0]):
        if seen < capacity:
            out[k] = seen
        else:
            j = np.int64(uniforms[k] * (seen + 1))  # uniform in [0, seen]
            out[k] = j if j < capacity else -1
        seen += 1
    return seen
