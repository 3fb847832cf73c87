"""Regression tests for the data-transforms defects of the hardening issue (#20)."""

import numpy as np
import pytest
from PIL import Image

from sporeling.data import vision
from sporeling.data.vision import Inter


@pytest.mark.parametrize("factor", [2, 3])
@pytest.mark.parametrize("as_pil", [False, True])
def test_resize_area_integer_downscale_is_the_block_mean(factor, as_pil):
    rng = np.random.default_rng(factor)
    img = rng.integers(0, 256, (8 * factor, 6 * factor, 3), dtype=np.uint8)
    ref = img.reshape(8, factor, 6, factor, 3).astype(np.float64).mean((1, 3))
    src = Image.fromarray(img) if as_pil else img
    out = np.asarray(vision.Resize((8, 6), Inter.AREA)(src)).astype(np.float64)
    assert np.abs(out - ref).max() <= 0.5
    np.testing.assert_array_equal(out, np.floor(ref + 0.5))


def test_resize_area_float_input_is_the_exact_block_mean():
    img = np.random.default_rng(1).random((8, 6)).astype(np.float32)
    out = vision.Resize((4, 3), Inter.AREA)(img)
    np.testing.assert_allclose(out, img.reshape(4, 2, 3, 2).mean((1, 3)), rtol=1e-6)


def test_generator_function_that_raises_gives_a_pipeline_error_with_the_row():
    from sporeling.data import GeneratorDataset, PipelineError

    def gen():
        yield (np.int64(1),)
        yield (np.int64(2),)
        raise RuntimeError("bad row")

    got = []
    with pytest.raises(PipelineError, match=r"GeneratorDataset: cannot read row 2: RuntimeError"):
        for row in GeneratorDataset(gen, column_names=["a"]).create_tuple_iterator(
            output_numpy=True
        ):
            got.append(int(row[0]))
    assert got == [1, 2]
