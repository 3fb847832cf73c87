"""Dataset readers on small files written here, and the example models' shapes."""

import gzip
import lzma

import numpy as np
import pytest

from sporeling.core import Tensor
from sporeling.goldenstick.datasets import load_cifar10, load_data, load_mnist
from sporeling.goldenstick.models import build_model


def _idx(path, arr, magic):
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in arr.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(header + arr.tobytes())


def test_mnist_idx(tmp_path):
    imgs = np.random.default_rng(0).integers(0, 256, (3, 28, 28)).astype(np.uint8)
    _idx(tmp_path / "train-images-idx3-ubyte.gz", imgs, 2051)
    _idx(tmp_path / "train-labels-idx1-ubyte.gz", np.array([7, 0, 3], np.uint8), 2049)
    x, y = load_mnist(str(tmp_path))
    assert x.shape == (3, 1, 32, 32) and y.tolist() == [7, 0, 3]
    np.testing.assert_allclose(x[1, 0, 2:30, 2:30], (imgs[1] / 255.0 - 0.1307) / 0.3081, rtol=1e-5)
    assert x[0, 0, 0, 0] == pytest.approx(-0.1307 / 0.3081)


def test_cifar_records_plain_and_xz(tmp_path):
    rec = np.zeros((2, 3073), np.uint8)
    rec[:, 0] = [4, 9]
    rec[1, 1 + 1024] = 255  # green plane, first pixel
    (tmp_path / "data_batch_1.bin").write_bytes(rec.tobytes())
    with lzma.open(tmp_path / "data_batch_2.bin.xz", "wb") as fh:
        fh.write(rec.tobytes())
    x, y = load_cifar10(str(tmp_path), (1, 2))
    assert x.shape == (4, 3, 32, 32) and y.tolist() == [4, 9, 4, 9]
    assert x[1, 1, 0, 0] > 1.0 > x[1, 0, 0, 0]
    xs, ys = load_data(f"cifar10:{tmp_path}@2", (3, 32, 32))
    assert xs.shape == (2, 3, 32, 32)


@pytest.mark.parametrize("name,shape", [("lenet5", (1, 32, 32)), ("resnet8", (3, 32, 32))])
def test_models_run(name, shape):
    net = build_model(name)
    assert net(Tensor(np.zeros((2, *shape), np.float32))).shape == (2, 10)
    with pytest.raises(ValueError, match="'name'"):
        build_model("vgg16")
