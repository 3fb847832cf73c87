"""Every registered op went through the steps of docs/adding-an-op.md.

With ``test_primitive_registry`` (a known kind, a scalar form for elementwise ops, true
compiler fields), this fails when a new primitive misses one of the places listed there:

* a backward rule, or an entry in :data:`NOT_DIFFERENTIABLE` saying why it has none;
* tests that drive it: its name (or ``<name>_p``) appears in the test suite, or
  :data:`TESTED_THROUGH` names the public op whose tests run it (a backward-only primitive is
  run by its forward op's gradient tests);
* a docstring on every public function of ``ops``.
"""

import inspect
import re
from pathlib import Path

from _core_registry import core_registry

import sporeling.core  # noqa: F401  (registers every op)
from sporeling.core import ops

#: the core's primitives (tests register their own in the same process)
REGISTRY = core_registry()
TESTS = Path(__file__).resolve().parent
_SOURCES = [p for p in TESTS.rglob("*.py") if p.name != Path(__file__).name]
_WORDS = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(p.read_text() for p in _SOURCES)))

#: primitives without a vjp, by reason
NOT_DIFFERENTIABLE = {
    # boolean or integer results
    "outputs are not floats": """equal not_equal greater greater_equal less less_equal
        isreal isfinite isnan isinf isclose argmax argmin reduce_all reduce_any logical_and
        logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor invert gcd lcm
        floor_div truncate_div population_count""",
    # piecewise constant: the gradient is zero wherever it exists
    "piecewise constant": "sign floor ceil round trunc _onehot_argmax",
    # draws and creations from params: no tensor input to differentiate
    "random draws": """_gumbel_noise _bernoulli_mask random_uniform random_standard_normal
        random_standard_laplace random_standard_gamma random_poisson random_categorical
        random_uniform_int""",
    "creation": "full eye linspace arange",
    # writes into state, run for their effect
    "effects": "assign_inplace optimizer_step param_scatter_inplace",
    # the coordinate gradient of grid sampling: the sampler's second-order terms in the
    # coordinates are not implemented (documented on ops.grid_sample)
    "second order not implemented": "bilinear_sample_coord_grad",
}

#: primitives whose name the tests do not use: the public op whose tests drive them
TESTED_THROUGH = {
    "comm_all_reduce": "all_reduce",
    "comm_all_gather": "all_gather",
    "comm_reduce_scatter": "reduce_scatter",
    "comm_broadcast": "broadcast",
    "comm_all_to_all": "all_to_all",
    "to_device": "to",  # Tensor.to(device)
    "_gumbel_noise": "gumbel_softmax",
    "_bernoulli_mask": "dropout",
    "_onehot_argmax": "gumbel_softmax",
    "lp_norm": "norm",
    "scatter_along_axis": "gather_elements",
    "class_pick": "cross_entropy",
    "class_put": "cross_entropy",
    "sparse_softmax_cross_entropy": "sparse_softmax_cross_entropy_with_logits",
    "conv_transpose": "conv2d",
    "conv_weight_grad": "conv2d",
    "resample_taps": "interpolate",
    "pool_scatter": "max_pool2d",
    "pool_gather": "max_pool2d",
    "max_pool": "max_pool2d",
    "avg_pool": "avg_pool2d",
    "avg_pool_grad": "avg_pool2d",
    "bilinear_sample": "grid_sample",
    "bilinear_sample_scatter": "grid_sample",
    "bilinear_sample_coord_grad": "grid_sample",
    "random_uniform": "uniform",
    "random_standard_laplace": "standard_laplace",
    "random_standard_gamma": "random_gamma",
    "random_poisson": "poisson",
    "random_uniform_int": "randint",
    "gather_grad": "gather",
    "tensor_scatter": "tensor_scatter_add",
    "param_scatter_inplace": "scatter_nd_update",  # a Parameter's scatter_*, index_add
    "unsorted_segment": "unsorted_segment_sum",
    "nn_embedding_lookup": "Embedding",
    "nn_embedding_scatter": "Embedding",
    # graph-mode control flow: the effectful forms and the loop's gradient
    "cond_effect": "cond",
    "while_loop_effect": "while_loop",
    # the node MicroBatchInterleaved puts on the caller's tape (parallel/interleave.py)
    "micro_batch_interleaved": "MicroBatchInterleaved",
}


def test_every_primitive_has_a_vjp_or_a_reason():
    listed = {n for names in NOT_DIFFERENTIABLE.values() for n in names.split()}
    without = {n for n, p in REGISTRY.items() if p.vjp is None}
    assert sorted(without - listed) == [], "add a vjp, or say why not in NOT_DIFFERENTIABLE"
    assert sorted(listed - without) == [], "these have a vjp now: remove them from the list"


def test_every_primitive_is_driven_by_tests():
    untested = sorted(n for n in REGISTRY if n not in _WORDS and f"{n}_p" not in _WORDS)
    assert untested == sorted(TESTED_THROUGH), (
        "test the new primitive (or name the public op whose tests run it in TESTED_THROUGH)"
    )
    assert [t for t in TESTED_THROUGH.values() if t not in _WORDS] == []


def test_every_public_op_function_has_a_docstring():
    fns = [n for n in dir(ops) if not n.startswith("_") and inspect.isfunction(getattr(ops, n))]
    assert len(fns) > 400
    assert [n for n in fns if not (getattr(ops, n).__doc__ or "").strip()] == []
