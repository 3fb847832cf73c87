"""Every construct the Hybrid DSL forbids is rejected with MindSpore's error type, a stable
code, and the offending line."""
# ruff: noqa: F821 - Hybrid DSL intrinsics (output_tensor, parallel, ...) are injected

import inspect

import bad_kernels as bk
import pytest

from sporeling.customop import DSLTypeError, DSLValueError, HybridDSLError, kernel

CASES = [
    (bk.k_while, TypeError, "hybrid-while"),
    (bk.k_break, TypeError, "hybrid-break"),
    (bk.k_continue, TypeError, "hybrid-continue"),
    (bk.k_tensorised, ValueError, "hybrid-tensorised"),
    (bk.k_unknown_call, ValueError, "hybrid-unsupported-call"),
    (bk.k_bad_function, ValueError, "hybrid-unsupported-call"),
    (bk.k_redefine, ValueError, "hybrid-redefinition"),
    (bk.k_scalar_scope, ValueError, "hybrid-scalar-scope"),
    (bk.k_loop_var, ValueError, "hybrid-loop-var"),
    (bk.k_slice, ValueError, "hybrid-slice"),
    (bk.k_attribute, ValueError, "hybrid-attribute"),
    (bk.k_shape_index, ValueError, "hybrid-shape-index"),
    (bk.k_unreturned, ValueError, "hybrid-unreturned-output"),
    (bk.k_return_scalar, ValueError, "hybrid-return-value"),
    (bk.k_pow, ValueError, "hybrid-operator"),
    (bk.k_iterator, ValueError, "hybrid-loop-iterator"),
    (bk.k_comprehension, ValueError, "hybrid-unsupported-call"),
    (bk.k_try, TypeError, "hybrid-unsupported-statement"),
    (bk.k_lambda, ValueError, "hybrid-unsupported-call"),
    (bk.k_method, ValueError, "hybrid-unsupported-call"),
    (bk.k_global, ValueError, "hybrid-undefined-name"),
    (bk.k_output_in_loop, ValueError, "hybrid-output-scope"),
    (bk.k_tuple_unpack, ValueError, "hybrid-assign"),
    (bk.k_early_return, ValueError, "hybrid-early-return"),
    (bk.k_varargs, ValueError, "hybrid-arguments"),
    (bk.k_import, TypeError, "hybrid-unsupported-statement"),
    (bk.k_print, ValueError, "hybrid-unsupported-call"),
    (bk.k_for_else, TypeError, "hybrid-for-else"),
]


def _bad_line(fn):
    lines, start = inspect.getsourcelines(fn)
    (offset,) = [i for i, line in enumerate(lines) if "# BAD" in line]
    return start + offset


@pytest.mark.parametrize("fn,exc,code", CASES, ids=[c[0].__name__ for c in CASES])
def test_forbidden_construct(fn, exc, code):
    with pytest.raises(exc) as info:
        kernel(fn)
    err = info.value
    assert isinstance(err, HybridDSLError)
    assert isinstance(err, DSLTypeError if exc is TypeError else DSLValueError)
    assert err.code == code, str(err)
    assert err.lineno == _bad_line(fn), str(err)
    assert err.func == fn.__name__
    text = str(err)
    assert f"hybrid kernel '{fn.__name__}'" in text and "# BAD" in text
    assert bk.__file__ in text


def test_valid_kernel_features_pass():
    def ok(a, b):
        """Docstrings, with-scopes, if/else, casts and intrinsics are allowed."""
        c = output_tensor((a.shape[0],), "float32")
        tmp = allocate((2,), a.dtype)
        n = a.shape[0]
        with attr("key", 1):
            for i in parallel(n):
                x = float32(a[i]) + b[i]
                if x > 0.0:
                    c[i] = sqrt(x) + ceil_div(int32(5), int32(2))
                else:
                    c[i] = -x if x < -1.0 else power(x, 2.0)
        tmp[0] = 1.0
        return c

    k = kernel(ok)
    assert k.info.outputs == ["c"] and k.info.temps == ["tmp"]
