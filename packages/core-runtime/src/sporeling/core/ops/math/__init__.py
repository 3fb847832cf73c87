"""Elementwise math: trigonometric and hyperbolic functions, exponentials and logarithms,
rounding, integer division and remainders, bitwise and logical ops, the error function and
Bessel functions of order 0 and 1 (MindSpore 1.8 names and arguments).

Dtypes: float-only ops promote integer/bool inputs to float32; integer ops (gcd, lcm,
bitwise ops, invert) reject floating inputs; logical ops need bool inputs. Rounding ops
(floor, ceil, round, trunc) return integer inputs unchanged. Ops that are piecewise
constant (rounding, sign, integer division, comparisons) have zero gradient, as in
MindSpore.

The special functions run as Numba kernels on the CPU (:mod:`..kernels.cpu.special`), as
CuPy's ``cupyx.scipy.special`` kernels on a GPU, and as array expressions of the same
approximations otherwise (:mod:`..kernels.gpu.special`); none needs SciPy.

One module per family: :mod:`.transcendental`, :mod:`.special`, :mod:`.rounding`,
:mod:`.binary`, :mod:`.integer`, :mod:`.logical`, :mod:`.misc`.
"""

from .binary import *  # noqa: F403
from .binary import __all__ as _binary
from .integer import *  # noqa: F403
from .integer import __all__ as _integer
from .logical import *  # noqa: F403
from .logical import __all__ as _logical
from .misc import *  # noqa: F403
from .misc import __all__ as _misc
from .rounding import *  # noqa: F403
from .rounding import __all__ as _rounding
from .special import *  # noqa: F403
from .special import __all__ as _special
from .transcendental import *  # noqa: F403
from .transcendental import __all__ as _transcendental

__all__ = [*_transcendental, *_rounding, *_special, *_binary, *_integer, *_logical, *_misc]
