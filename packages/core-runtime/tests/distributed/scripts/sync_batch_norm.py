"""SyncBatchNorm under mpiexec -n N: each rank's share of the batch gives the full batch's
statistics (values, moving statistics and input gradients against NumPy float64)."""

import numpy as np

from sporeling.core import Tensor, grad, nn
from sporeling.core import communication as comm

comm.init()
rank, n = comm.get_rank(), comm.get_group_size()
rng = np.random.default_rng(0)
full = rng.standard_normal((2 * n, 3, 2, 2)) * 2.0 + 1.0  # same on every rank
u = rng.standard_normal(full.shape)
g, b = rng.standard_normal(3), rng.standard_normal(3)
mine = slice(2 * rank, 2 * rank + 2)

bn = nn.SyncBatchNorm(3, momentum=0.9).set_train()
assert bn.group is not None, "SyncBatchNorm did not find the communication group"
bn.gamma.set_data(Tensor(g))
bn.beta.set_data(Tensor(b))
x = Tensor(full[mine])
y = bn(x).asnumpy()

mu = full.mean((0, 2, 3), keepdims=True)
var = full.var((0, 2, 3), keepdims=True)
ref = (full - mu) / np.sqrt(var + 1e-5) * g[:, None, None] + b[:, None, None]
np.testing.assert_allclose(y, ref[mine], rtol=1e-10, atol=1e-10)
m = full.size // 3
np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.1 * mu.ravel(), rtol=1e-6)  # float32
np.testing.assert_allclose(
    bn.moving_variance.asnumpy(), 0.9 + 0.1 * var.ravel() * m / (m - 1), rtol=1e-6
)

# gradient of the global loss sum_r <u_r, y_r> w.r.t. this rank's input, against the
# analytic batch-norm input gradient over the full batch
dx = grad(lambda t: (bn(t) * Tensor(u[mine])).sum())(x).asnumpy()
xhat = (full - mu) / np.sqrt(var + 1e-5)
gy = u * g[:, None, None]
ref_dx = (
    gy - gy.mean((0, 2, 3), keepdims=True) - xhat * (gy * xhat).mean((0, 2, 3), keepdims=True)
) / np.sqrt(var + 1e-5)
np.testing.assert_allclose(dx, ref_dx[mine], rtol=1e-8, atol=1e-10)
comm.barrier()
print(f"rank {rank}: sync batch norm ok")
