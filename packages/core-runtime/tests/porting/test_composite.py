"""``ops.composite`` (C): GradOperation (get_all / get_by_list / sens_param), HyperMap, Map,
MultitypeFuncGraph; ``ops.functional`` (F) names."""

import numpy as np
import pytest

from sporeling.core import (
    GRAPH_MODE,
    PYNATIVE_MODE,
    ParameterTuple,
    Tensor,
    float16,
    nn,
    set_context,
)
from sporeling.core.ops import composite as C
from sporeling.core.ops import functional as F
from sporeling.core.ops import operations as P

X = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
Y = np.array([[0.5, -2.0], [1.0, 4.0]], np.float32)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = nn.Dense(2, 2, weight_init="ones", bias_init="zeros").weight
        self.matmul = P.MatMul()

    def construct(self, x, y):
        return self.matmul(x * y, self.w)


@pytest.fixture(params=[PYNATIVE_MODE, GRAPH_MODE])
def mode(request):
    set_context(mode=request.param)
    yield request.param
    set_context(mode=PYNATIVE_MODE)


def test_grad_operation_variants(mode):
    net = Net()
    x, y = Tensor(X), Tensor(Y)
    ones = np.ones((2, 2), np.float32)
    gx = C.GradOperation()(net)(x, y)
    np.testing.assert_allclose(gx.asnumpy(), (ones @ np.ones((2, 2)).T) * Y)
    gx2, gy2 = C.GradOperation(get_all=True)(net)(x, y)
    np.testing.assert_allclose(gy2.asnumpy(), (ones @ np.ones((2, 2)).T) * X)
    weights = ParameterTuple(net.trainable_params())
    (gw,) = C.GradOperation(get_by_list=True)(net, weights)(x, y)
    np.testing.assert_allclose(gw.asnumpy(), (X * Y).T @ ones)
    sens = np.array([[1.0, 0.0], [0.0, 2.0]], np.float32)
    (ins, (gw3,)) = C.GradOperation(get_all=True, get_by_list=True, sens_param=True)(net, weights)(
        x, y, Tensor(sens)
    )
    np.testing.assert_allclose(gw3.asnumpy(), (X * Y).T @ sens)
    np.testing.assert_allclose(ins[0].asnumpy(), (sens @ np.ones((2, 2)).T) * Y)


def test_grad_operation_errors():
    with pytest.raises(TypeError, match="get_all"):
        C.GradOperation(get_all=1)
    with pytest.raises(ValueError, match="pass the weights"):
        C.GradOperation(get_by_list=True)(Net())


def test_hyper_map_and_map():
    hm = C.HyperMap()
    out = hm(lambda a, b: a * b, (Tensor(1.0), (Tensor(2.0), Tensor(3.0))), (2.0, (3.0, 4.0)))
    assert out[0].item() == 2.0 and out[1][1].item() == 12.0
    assert C.Map(lambda a: a + 1)([1, 2]) == [2, 3]
    with pytest.raises(ValueError, match="one length"):
        hm(lambda a, b: a, (1, 2), (1,))


def test_multitype_func_graph_dispatch():
    add = C.MultitypeFuncGraph("add")

    @add.register("Number", "Number")
    def _(a, b):
        return a + b

    @add.register("Tensor", "Tensor")
    def _(a, b):
        return F.tensor_add(a, b)

    assert add(1, 2) == 3
    assert add(Tensor(1.0), Tensor(2.0)).item() == 3.0
    with pytest.raises(TypeError, match="no implementation registered"):
        add("a", 1)
    with pytest.raises(ValueError, match="unknown type name"):
        add.register("Matrix")
    # the usual optimizer pattern: hyper_map over a MultitypeFuncGraph with a bound argument
    scale = C.MultitypeFuncGraph("scale")

    @scale.register("Number", "Tensor")
    def _(s, g):
        return g * s

    grads = (Tensor(np.ones(2, np.float32)), Tensor(np.ones(3, np.float32)))
    out = C.HyperMap()(F.partial(scale, 0.5), grads)
    assert [o.asnumpy().tolist() for o in out] == [[0.5, 0.5], [0.5, 0.5, 0.5]]


def test_functional_names():
    x = Tensor(X)
    assert F.depend(x, x * 2) is x
    assert F.dtype(x) == F.cast(x, F.dtype(x)).dtype
    assert F.mixed_precision_cast(float16, (x, 1))[0].dtype == float16
    np.testing.assert_allclose(F.stop_gradient(x).asnumpy(), X)
    assert F.shape(x) == (2, 2)
