"""``sporeling.core.ops``: MindSpore's functional interface.

Each family lives in its own module; this package re-exports their public names (each
module's ``__all__``). Private modules (``_core``, ``_elementwise``...) hold the primitives
the rest are built on.
"""

import sys as _sys

from .. import _hooks
from ..autograd import grad, jvp, stop_gradient, value_and_grad, vjp, vmap  # noqa: F401
from ._compare import *  # noqa: F403
from ._core import *  # noqa: F403
from ._elementwise import *  # noqa: F403
from ._indexing import *  # noqa: F403
from ._join import *  # noqa: F403
from ._matmul import *  # noqa: F403
from ._taylor import derivative, jet  # noqa: F401
from ._tensor_methods import install as _install_tensor_methods
from .activation import *  # noqa: F403
from .array import *  # noqa: F403
from .comparison import *  # noqa: F403
from .complex_numbers import *  # noqa: F403
from .deprecated import ALIASES as _ALIASES
from .linalg import *  # noqa: F403
from .loss import *  # noqa: F403
from .math import *  # noqa: F403
from .misc import *  # noqa: F403
from .nn import *  # noqa: F403
from .random import *  # noqa: F403
from .reduction import *  # noqa: F403
from .scatter import *  # noqa: F403
from .sparse import *  # noqa: F403

for _old, _fn in _ALIASES.items():
    globals().setdefault(_old, _fn)
_install_tensor_methods(_sys.modules[__name__])

# MindSpore's collective primitive classes (ops.AllReduce(op, group)(x), ...) live in
# sporeling.core.communication, which adds them here when it is imported (ops is the lower
# layer and does not import it; ``import sporeling.core`` imports both).

# MindSpore's operator classes and module paths (ops.operations as P, ops.composite as C,
# ops.functional as F); imported last, they are built from the functional ops above.
from . import composite, functional, operations  # noqa: E402, F401
from .composite import GradOperation, HyperMap, MultitypeFuncGraph  # noqa: E402, F401
from .primitive import Primitive, PrimitiveWithInfer, constexpr, prim_attr_register  # noqa: E402, F401
from .shard_api import shard  # noqa: E402, F401

for _name in operations.__all__:  # MindSpore 2.x: ops.MatMul is ops.operations.MatMul
    globals().setdefault(_name, getattr(operations, _name))

from . import batching  # noqa: E402  (vmap's batching rules, installed on the primitives)

_hooks.ops.register(  # vmap (in autograd, the lower layer) runs through these
    run_batched=batching.run_batched,
    unbatchable=batching.Unbatchable,
    move_axis=batching.move_axis,
    stack=stack,  # noqa: F405
)
