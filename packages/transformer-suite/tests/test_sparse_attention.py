import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.transformer.modules import FixedSparseAttention
from sporeling.transformer.modules.sparse_attention import fixed_sparse_pattern
from sporeling_testing.gradcheck import check_grad


def reference(q, k, v, mask, heads, block, patterns):
    b, s, hid = q.shape
    d = hid // heads
    pat = fixed_sparse_pattern(heads, s, block, patterns)
    out = np.zeros_like(q)
    for h in range(heads):
        sl = slice(h * d, (h + 1) * d)
        sc = q[:, :, sl] @ k[:, :, sl].transpose(0, 2, 1) / np.sqrt(d)
        sc = sc + (1 - pat[h][None] * mask) * -10000.0
        p = np.exp(sc - sc.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[:, :, sl] = p @ v[:, :, sl]
    return out


def test_pattern_local_blocks_and_per_head_summary_columns():
    pat = fixed_sparse_pattern(2, 8, 4, 2)
    assert pat[0, 1, 0] and pat[0, 1, 3] and not pat[0, 1, 5]  # local block, not 5 (col 1)
    assert pat[0, 1, 7] and pat[0, 1, 6] and not pat[0, 1, 4]  # head 0: columns 2..3 of each block
    assert pat[0, 0, 6] and not pat[1, 0, 6] and pat[1, 0, 5] and pat[1, 0, 4]


def test_forward_matches_reference_and_gradients():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 8, 4)) for _ in range(3))
    mask = np.tril(np.ones((8, 8)))[None].repeat(2, 0)
    att = FixedSparseAttention(2, 2, 2, 4, seq_length=8, num_different_global_patterns=2)
    got = att(Tensor(q), Tensor(k), Tensor(v), Tensor(mask)).asnumpy()
    np.testing.assert_allclose(got, reference(q, k, v, mask, 2, 4, 2), rtol=1e-10, atol=1e-12)
    check_grad(lambda a, b_, c: att(a, b_, c, Tensor(mask)), [q, k, v])


def test_validation():
    with pytest.raises(ValueError, match="'seq_length' must be a multiple of 'block_size'"):
        FixedSparseAttention(2, 2, 2, 3, seq_length=8)
    att = FixedSparseAttention(2, 2, 2, 4, seq_length=8, num_different_global_patterns=2)
    x = Tensor(np.zeros((2, 7, 4)))
    with pytest.raises(ValueError, match=r"'q' must be \[2, 8, 4\], but got \[2, 7, 4\]"):
        att(x, x, x, Tensor(np.ones((2, 7, 7))))
