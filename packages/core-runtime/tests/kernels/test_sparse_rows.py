"""The embedding kernels against NumPy: lookups with zero rows outside the table, and the
grouped row sums of a lookup's gradient (bit-identical to ``np.add.at``: each id's rows added
in batch order)."""

from __future__ import annotations

import numpy as np
import pytest

from sporeling.core.kernels.cpu.sparse_rows import group_ids, lookup_rows, unique_row_sums


def reference_sums(rows, ids, vocab):
    ok = (ids >= 0) & (ids < vocab)
    ids, rows = ids[ok].astype(np.int64), rows[ok]
    if ids.size == 0:
        return np.zeros(0, np.int64), np.zeros((0, rows.shape[1]), rows.dtype)
    uniq, inverse = np.unique(ids, return_inverse=True)
    sums = np.zeros((uniq.size, rows.shape[1]), rows.dtype)
    np.add.at(sums, inverse.reshape(-1), rows)  # unbuffered: in batch order
    return uniq, sums


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("n", "vocab", "width"), [(0, 10, 3), (1, 5, 1), (997, 50, 4),
                                                   (5000, 1 << 40, 16), (300, 7, 2)])  # fmt: skip
def test_unique_row_sums_equal_add_at(dtype, n, vocab, width):
    rng = np.random.default_rng(n + width)
    high = min(vocab, 10_000)
    ids = rng.zipf(1.2, n).astype(np.int64) % (high + 3) - 1  # duplicates, -1 and >= vocab
    if vocab > high:  # huge ids: the hash must not depend on ids being small
        ids = np.where(ids >= 0, ids * 104_729_873, ids)
    rows = rng.standard_normal((n, width)).astype(dtype)
    uniq, sums = unique_row_sums(rows, ids, vocab)
    want_ids, want_sums = reference_sums(rows, ids, vocab)
    assert uniq.dtype == np.int64 and sums.dtype == dtype
    np.testing.assert_array_equal(uniq, want_ids)
    np.testing.assert_array_equal(sums, want_sums)  # the same additions in the same order


def test_unique_row_sums_all_out_of_range():
    uniq, sums = unique_row_sums(np.ones((4, 2), np.float32), np.array([-1, 9, 10, -5]), 9)
    assert uniq.shape == (0,) and sums.shape == (0, 2)


@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("low", [-3, 0])  # some ids outside the table, or none
def test_lookup_rows_zero_outside_the_table(ids_dtype, low):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((20, 5)).astype(np.float32)
    ids = rng.integers(low, 24 if low else 20, (6, 7)).astype(ids_dtype)
    got = lookup_rows(table, ids)
    ok = ((ids >= 0) & (ids < 20)).reshape(-1)
    want = np.zeros((ids.size, 5), np.float32)
    want[ok] = table[ids.reshape(-1)[ok]]
    np.testing.assert_array_equal(got, want)


def test_grouping_is_reused_only_for_equal_ids():
    """The wide and deep gradients share the batch's ids: the second reuses the grouping;
    a buffer refilled in place with other ids is grouped again."""
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 30, 200)
    rows = rng.standard_normal((200, 3)).astype(np.float32)
    first = group_ids(ids, 30)
    assert group_ids(ids.copy(), 30)[1] is first[1]  # equal values: reused
    assert group_ids(ids, 29)[1] is not first[1]  # another vocabulary: grouped again
    ids[:] = rng.integers(0, 30, 200)  # the same buffer, new ids
    uniq, sums = unique_row_sums(rows, ids, 30)
    want_ids, want_sums = reference_sums(rows, ids, 30)
    np.testing.assert_array_equal(uniq, want_ids)
    np.testing.assert_array_equal(sums, want_sums)
