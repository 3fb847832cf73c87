"""julia kernels: the func string is validated without Julia; running needs juliacall."""

import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.customop import Custom
from sporeling.customop._julia import JULIA_HINT, julia_available

JL = """
module AddMod
export add
function add(a, b, c)
    c .= a .+ b
end
end
"""


@pytest.fixture
def jl_file(tmp_path):
    path = tmp_path / "add.jl"
    path.write_text(JL)
    return path


def test_func_string_validation(jl_file):
    with pytest.raises(ValueError, match="'file.jl:Module:function'"):
        Custom(f"{jl_file}:add", out_shape=(1,), out_dtype="float32", func_type="julia")
    with pytest.raises(ValueError, match="does not define `module Other`"):
        Custom(f"{jl_file}:Other:add", out_shape=(1,), out_dtype="float32", func_type="julia")
    with pytest.raises(ValueError, match="does not define `function sub`"):
        Custom(f"{jl_file}:AddMod:sub", out_shape=(1,), out_dtype="float32", func_type="julia")
    with pytest.raises(FileNotFoundError):
        Custom("/no/such.jl:AddMod:add", out_shape=(1,), out_dtype="float32", func_type="julia")


@pytest.mark.skipif(julia_available(), reason="juliacall is installed")
def test_missing_julia_says_how_to_get_it(jl_file):
    op = Custom(f"{jl_file}:AddMod:add", out_shape=lambda a, b: a, out_dtype=lambda a, b: a,
                func_type="julia")  # fmt: skip
    x = Tensor(np.ones(2, np.float32))
    with pytest.raises(RuntimeError, match=r"pip install 'sporeling-custom-op\[julia\]'"):
        op(x, x)


@pytest.mark.skipif(not julia_available(), reason=JULIA_HINT)
def test_julia_elementwise_and_column_major(jl_file, tmp_path):
    op = Custom(f"{jl_file}:AddMod:add", out_shape=lambda a, b: a, out_dtype=lambda a, b: a,
                func_type="julia")  # fmt: skip
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(op(Tensor(a), Tensor(a)).asnumpy(), a + a)
    shape_jl = tmp_path / "shape.jl"
    shape_jl.write_text(
        "module ShapeMod\nfunction first_dim(a, out)\n    out .= size(a, 1)\nend\nend\n"
    )
    op2 = Custom(f"{shape_jl}:ShapeMod:first_dim", out_shape=(1,), out_dtype="float32",
                 func_type="julia")  # fmt: skip
    # Row-major (2, 3) arrives in Julia as 3 x 2, as MindSpore documents.
    assert op2(Tensor(a)).tolist() == [3.0]
