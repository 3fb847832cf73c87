"""aot kernels with MindSpore's ABI: a small C++ file compiled by the test, then cached."""

import numpy as np
import pytest

from sporeling.core import Tensor, grad, ops
from sporeling.customop import Custom
from sporeling.customop._aot import compile_source

SRC = r"""
#include <cstdint>
#include <cstring>
extern "C" int add_scaled(int nparam, void** params, int* ndims, int64_t** shapes,
                          const char** dtypes, void* stream, void* extra) {
    if (nparam != 3 || std::strcmp(dtypes[0], "float32") != 0) return 1;
    const float* a = static_cast<const float*>(params[0]);
    const float* b = static_cast<const float*>(params[1]);
    float* c = static_cast<float*>(params[2]);
    int64_t n = 1;
    for (int i = 0; i < ndims[0]; ++i) n *= shapes[0][i];
    for (int64_t i = 0; i < n; ++i) c[i] = a[i] + 2.0f * b[i];
    return 0;
}
"""


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "add_scaled.cc"
    path.write_text(SRC)
    return path


def test_aot_cc_compiled_and_called(source):
    op = Custom(f"{source}:add_scaled", out_shape=lambda a, b: a, out_dtype=lambda a, b: a,
                func_type="aot", bprop=lambda a, b, out, dout: (dout, dout * 2))  # fmt: skip
    a = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = Tensor(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(op(a, b).asnumpy(), a.asnumpy() + 2)
    ga, gb = grad(lambda x, y: ops.reduce_sum(op(x, y)), grad_position=(0, 1))(a, b)
    assert ga.tolist() == [[1.0] * 3] * 2 and gb.tolist() == [[2.0] * 3] * 2


def test_aot_compile_cache_is_content_addressed(source, tmp_path):
    first = compile_source(source)
    mtime = first.stat().st_mtime_ns
    assert compile_source(source) == first and first.stat().st_mtime_ns == mtime
    other = tmp_path / "copy" / "add_scaled.cc"
    other.parent.mkdir()
    other.write_text(SRC)
    assert compile_source(other) == first  # same content, same library
    source.write_text(SRC.replace("2.0f", "3.0f"))
    assert compile_source(source) != first


def test_aot_kernel_error_code_and_bad_specs(source):
    op = Custom(f"{source}:add_scaled", out_shape=lambda a, b: a, out_dtype=lambda a, b: a,
                func_type="aot")  # fmt: skip
    x = Tensor(np.ones(2, np.float64))
    with pytest.raises(RuntimeError, match="returned error code 1"):
        op(x, x)
    with pytest.raises(ValueError, match="no function 'missing'"):
        Custom(f"{source}:missing", out_shape=(1,), out_dtype="float32", func_type="aot")
    with pytest.raises(ValueError, match="'path/file.so:function'"):
        Custom(str(source), out_shape=(1,), out_dtype="float32", func_type="aot")
    with pytest.raises(FileNotFoundError):
        Custom("/nonexistent/lib.so:f", out_shape=(1,), out_dtype="float32", func_type="aot")
    bad = source.with_name("bad.cc")
    bad.write_text("this is not C++")
    with pytest.raises(RuntimeError, match="compiling .*bad.cc failed"):
        Custom(f"{bad}:f", out_shape=(1,), out_dtype="float32", func_type="aot")


@pytest.mark.gpu
def test_aot_cu_on_gpu(tmp_path):
    cu = tmp_path / "add.cu"
    cu.write_text(
        r"""
#include <cstdint>
__global__ void k(const float* a, float* c, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + 1.0f;
}
extern "C" int add_one(int nparam, void** params, int* ndims, int64_t** shapes,
                       const char** dtypes, void* stream, void* extra) {
    int64_t n = 1;
    for (int i = 0; i < ndims[0]; ++i) n *= shapes[0][i];
    k<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        (const float*)params[0], (float*)params[1], n);
    return 0;
}
"""
    )
    op = Custom(f"{cu}:add_one", out_shape=lambda s: s, out_dtype=lambda d: d, func_type="aot")
    x = Tensor(np.arange(4, dtype=np.float32)).to("GPU")
    assert op(x).asnumpy().tolist() == [1.0, 2.0, 3.0, 4.0]
