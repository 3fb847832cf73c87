"""Every function of MindSpore 1.8's functional interface (reference section 8) exists.

The lists follow the r1.8 ``mindspore.ops.functional`` page's groups; the test fails with
the names that are missing, so a gap can never go unnoticed.
"""

import pytest

from sporeling.core import ops

NN = """adaptive_avg_pool2d avg_pool2d ctc_greedy_decoder deformable_conv2d dropout2d dropout3d
flatten interpolate kl_div lrn max_pool3d pad padding"""
LOSS = "cross_entropy nll_loss smooth_l1_loss binary_cross_entropy_with_logits"
ACTIVATION = """fast_gelu gumbel_softmax hardshrink hardswish log_softmax mish selu soft_shrink
softsign celu tanh"""
SAMPLING_DISTANCE = "grid_sample uniform_candidate_sampler cdist"
ELEMENTWISE = """abs acos acosh add addn asin asinh atan atan2 atanh bernoulli bessel_i0 bessel_i0e
bessel_i1 bessel_i1e bessel_j0 bessel_j1 bessel_k0 bessel_k0e bessel_k1 bessel_k1e bessel_y0
bessel_y1 bitwise_and bitwise_or bitwise_xor ceil cos cosh deg2rad div erf erfc exp exp2 expm1
floor floor_div floor_mod hypot inplace_add inplace_sub inplace_update inv invert isreal lcm gcd
ldexp lerp log log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or mul neg pow
rad2deg round sin sinh sub tan trunc truncate_div truncate_mod xdivy xlogy"""
REDUCTION = """amax amin argmin cummax cummin logsumexp mean prod norm sparse_segment_mean max
min"""
COMPARISON = """equal ne ge gt le less maximum minimum isfinite isnan isclose approximate_equal
intopk same_type_shape"""
LINALG = "matmul baddbmm mv outer ger renorm matrix_solve batch_dot dot tensor_dot stft"
CREATION = "eye fill fills ones ones_like zeros_like linspace range arange narrow"
RANDOM = """standard_normal standard_laplace uniform random_gamma gamma poisson multinomial normal
laplace"""
ARRAY = """broadcast_to concat stack unstack split reshape expand_dims squeeze transpose tile gather
gather_d gather_elements gather_nd masked_fill masked_select index_fill nonzero one_hot select
meshgrid diag matrix_diag matrix_diag_part matrix_set_diag matrix_band_part reverse_sequence
slice space_to_batch_nd batch_to_space_nd col2im adaptive_max_pool2d unique unique_consecutive
unique_with_pad top_k population_count shape rank size dyn_shape scatter_nd scatter_nd_add
scatter_nd_sub scatter_nd_mul scatter_nd_div scatter_nd_max scatter_nd_min tensor_scatter_add
tensor_scatter_sub tensor_scatter_mul tensor_scatter_div tensor_scatter_min
tensor_scatter_elements unsorted_segment_min unsorted_segment_max unsorted_segment_prod"""
CONVERSION = "scalar_cast scalar_to_array scalar_to_tensor tuple_to_array"
PARAMETER = """assign assign_add assign_sub index_add scatter_add scatter_mul scatter_div
scatter_max scatter_min scatter_update scatter_nd_update"""
DIFFERENTIAL = "grad value_and_grad jvp vjp vmap stop_gradient"
SPARSE = "dense_to_sparse_coo dense_to_sparse_csr csr_to_coo csr_mul csr_div csr_mv csr_reduce_sum"
OTHER = """depend partial typeof isinstance_ issubclass_ isconstant in_dict not_in_dict print_
scalar_add scalar_sub scalar_mul scalar_div scalar_floordiv scalar_mod scalar_pow scalar_gt
scalar_lt scalar_ge scalar_le scalar_eq scalar_ne scalar_uadd scalar_usub scalar_log bool_and
bool_or bool_not bool_eq string_eq string_concat shape_mul clip_by_value clip_by_global_norm
count_nonzero repeat_elements sequence_mask"""

GROUPS = {
    "nn": NN,
    "loss": LOSS,
    "activation": ACTIVATION,
    "sampling/distance": SAMPLING_DISTANCE,
    "elementwise": ELEMENTWISE,
    "reduction": REDUCTION,
    "comparison": COMPARISON,
    "linalg": LINALG,
    "creation": CREATION,
    "random": RANDOM,
    "array": ARRAY,
    "conversion": CONVERSION,
    "parameter": PARAMETER,
    "differential": DIFFERENTIAL,
    "sparse": SPARSE,
    "other": OTHER,
}
ALL_NAMES = sorted({n for text in GROUPS.values() for n in text.split()})


def test_inventory_size():
    assert len(ALL_NAMES) == 281  # the names listed above, without repeats


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_functional_name_exists(group):
    missing = [n for n in GROUPS[group].split() if not callable(getattr(ops, n, None))]
    assert not missing, f"ops is missing {len(missing)} {group} functions: {missing}"


def test_deprecated_aliases_map_to_replacements():
    from sporeling.core import Tensor
    from sporeling.core.ops.deprecated import DEPRECATED_ALIASES

    for old, new in DEPRECATED_ALIASES.items():
        assert callable(getattr(ops, old, None)), old
        assert callable(getattr(ops, new, None)), f"{old} -> {new}: replacement missing"
    assert ops.tensor_add(Tensor([1.0]), Tensor([2.0])).tolist() == [3.0]
    assert ops.pows(Tensor([2.0]), 3).tolist() == [8.0]
