"""The numerical-gradient helper every op test relies on must itself be right."""

import numpy as np

from sporeling.core import ops
from sporeling_testing.gradcheck import numerical_vjp


def test_numerical_vjp_of_a_transposed_input_is_not_zero():
    # A transposed view is Fortran-ordered: the helper's flat views of it were copies, so
    # every derivative it wrote was lost and it returned zeros.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((5, 3)).T  # (3, 5), not C-contiguous
    cot = rng.standard_normal((4, 5))
    grads = numerical_vjp(lambda x, y: ops.matmul(x.T, y), [a, b], [cot], wrt=[0, 1])
    np.testing.assert_allclose(grads[0], b @ cot.T, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grads[1], a @ cot, rtol=1e-6, atol=1e-8)
