"""Dev-only test helpers shared by every Sporeling package (not shipped).

* :mod:`.gradcheck` — finite-difference checks of vjps (first and second order).
* :mod:`.optable` — the op-record table driver: forward against a float64 NumPy reference,
  gradient checks, dtype coverage.
* :mod:`.pytest_plugin` — the ``gpu`` marker (skipped without a GPU) and the ``device``
  fixture (CPU, and the GPU path: a real GPU or the NumPy stand-in).
"""

from .gradcheck import check_grad, check_grad_grad, numerical_vjp
from .optable import OpRecord, check_backward, check_forward, make_inputs, records_params

__all__ = [
    "check_grad",
    "check_grad_grad",
    "numerical_vjp",
    "OpRecord",
    "check_forward",
    "check_backward",
    "make_inputs",
    "records_params",
]
