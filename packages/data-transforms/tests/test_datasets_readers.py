"""Readers on small files written here in real formats (idx, CIFAR binary, JPEG/PNG, CSV, text)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from PIL import Image

import sporeling.data as ds


def rows(dataset, **kw):
    return [tuple(r) for r in dataset.create_tuple_iterator(num_epochs=1, output_numpy=True, **kw)]


# ---- MNIST idx ---------------------------------------------------------------------------
def write_idx(path, array, code=0x08):
    with open(path, "wb") as f:
        f.write(bytes([0, 0, code, array.ndim]))
        f.write(struct.pack(f">{array.ndim}I", *array.shape))
        f.write(array.astype(array.dtype.newbyteorder(">")).tobytes())


@pytest.fixture
def mnist_dir(tmp_path):
    rng = np.random.default_rng(0)
    train = rng.integers(0, 256, (7, 28, 28), dtype=np.uint8)
    test = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    write_idx(tmp_path / "train-images-idx3-ubyte", train)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.arange(7, dtype=np.uint8))
    write_idx(tmp_path / "t10k-images-idx3-ubyte", test)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.arange(3, dtype=np.uint8) + 10)
    return tmp_path, train, test


def test_mnist_usage_and_content(mnist_dir):
    root, train, test = mnist_dir
    d = ds.MnistDataset(str(root), usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "label"] and d.get_dataset_size() == 7
    out = rows(d)
    assert out[3][0].shape == (28, 28, 1) and out[3][0].dtype == np.uint8
    np.testing.assert_array_equal(out[3][0][:, :, 0], train[3])
    assert out[3][1].dtype == np.uint32 and int(out[3][1]) == 3
    test_rows = rows(ds.MnistDataset(root, usage="test", shuffle=False))
    assert [int(r[1]) for r in test_rows] == [10, 11, 12]
    np.testing.assert_array_equal(test_rows[2][0][:, :, 0], test[2])
    every = ds.MnistDataset(root, shuffle=False)  # usage=None: all
    assert every.get_dataset_size() == 10
    assert [int(r[1]) for r in rows(every)] == [10, 11, 12, 0, 1, 2, 3, 4, 5, 6]  # test first


def test_mnist_reads_gzipped_idx(tmp_path, mnist_dir):
    """MNIST as published (``.gz``) reads as the uncompressed files; where both exist the
    uncompressed one wins (MindSpore reads only those); a bad .gz names the file."""
    import gzip

    root, train, test = mnist_dir
    packed = tmp_path / "packed"
    packed.mkdir()
    for name in ["train-images-idx3-ubyte", "train-labels-idx1-ubyte"]:
        (packed / f"{name}.gz").write_bytes(gzip.compress((root / name).read_bytes()))
    d = ds.MnistDataset(packed, usage="train", shuffle=False)
    assert d.get_dataset_size() == 7
    for got, want in zip(rows(d), rows(ds.MnistDataset(root, usage="train", shuffle=False))):
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] and got[1].dtype == np.uint32
    every = ds.MnistDataset(packed, shuffle=False)  # no t10k files: 'all' is the train part
    assert [int(r[1]) for r in rows(every)] == list(range(7))
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte and .*\.gz"):
        ds.MnistDataset(packed, usage="test")
    # both forms present: the uncompressed file is read
    other = np.full_like(train, 9)
    write_idx(packed / "train-images-idx3-ubyte", other)
    np.testing.assert_array_equal(rows(ds.MnistDataset(packed, usage="train"))[0][0], 9)
    (packed / "train-images-idx3-ubyte").unlink()
    # a truncated payload and a file that is not gzip
    blob = (root / "train-images-idx3-ubyte").read_bytes()
    (packed / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(blob[:-5]))
    with pytest.raises(ValueError, match="promises .* decompressed file has"):
        ds.MnistDataset(packed, usage="train")
    (packed / "train-images-idx3-ubyte.gz").write_bytes(blob)
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz: not a readable gzip"):
        ds.MnistDataset(packed, usage="train")


def test_mnist_shuffle_num_samples(mnist_dir):
    root, *_ = mnist_dir
    ds.config.set_seed(3)
    d = ds.MnistDataset(root, usage="all", num_samples=6)
    labels = [int(r[1]) for r in rows(d)]
    assert len(labels) == 6 == d.get_dataset_size()
    assert len(set(labels)) == 6


def test_mnist_bad_files(tmp_path, mnist_dir):
    root, *_ = mnist_dir
    with pytest.raises(ValueError, match="usage"):
        ds.MnistDataset(root, usage="valid")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train-images-idx3-ubyte").write_bytes(
        b"\x00\x00\x08\x03" + struct.pack(">3I", 5, 28, 28)
    )
    write_idx(bad / "train-labels-idx1-ubyte", np.arange(5, dtype=np.uint8))
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.*bytes"):
        ds.MnistDataset(bad, usage="train")
    with pytest.raises(ValueError, match="t10k-images"):
        ds.MnistDataset(bad, usage="test")
    with pytest.raises(ValueError, match="not a directory"):
        ds.MnistDataset(tmp_path / "missing")


# ---- CIFAR binary --------------------------------------------------------------------------
def test_cifar10(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (5, 32, 32, 3), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    records = [
        np.concatenate([[lab], img.transpose(2, 0, 1).ravel()]) for lab, img in zip(labels, images)
    ]
    np.asarray(records[:3], np.uint8).tofile(tmp_path / "data_batch_1.bin")
    np.asarray(records[3:4], np.uint8).tofile(tmp_path / "data_batch_2.bin")
    np.asarray(records[4:], np.uint8).tofile(tmp_path / "test_batch.bin")
    train = ds.Cifar10Dataset(tmp_path, usage="train", shuffle=False)
    assert train.get_dataset_size() == 4 and train.get_col_names() == ["image", "label"]
    out = rows(train)
    for k in range(4):
        np.testing.assert_array_equal(out[k][0], images[k])
        assert out[k][1].dtype == np.uint32 and int(out[k][1]) == labels[k]
    test = rows(ds.Cifar10Dataset(tmp_path, usage="test"))
    np.testing.assert_array_equal(test[0][0], images[4])
    assert ds.Cifar10Dataset(tmp_path).get_dataset_size() == 5
    (tmp_path / "data_batch_3.bin").write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match="data_batch_3.bin.*3073-byte"):
        ds.Cifar10Dataset(tmp_path, usage="train")


def test_cifar100(tmp_path):
    rng = np.random.default_rng(2)
    images = rng.integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
    recs = [
        np.concatenate([[k, 10 + k], img.transpose(2, 0, 1).ravel()])
        for k, img in enumerate(images)
    ]
    np.asarray(recs, np.uint8).tofile(tmp_path / "train.bin")
    d = ds.Cifar100Dataset(tmp_path, usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "coarse_label", "fine_label"]
    out = rows(d)
    np.testing.assert_array_equal(out[2][0], images[2])
    assert (int(out[2][1]), int(out[2][2])) == (2, 12)
    with pytest.raises(ValueError, match="test.bin"):
        ds.Cifar100Dataset(tmp_path, usage="test")


# ---- ImageFolder ---------------------------------------------------------------------------
@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {}
    for cls, ext in (("cat", "png"), ("dog", "jpg")):
        (tmp_path / cls).mkdir()
        for i in range(3):
            a = rng.integers(0, 256, (8 + i, 10, 3), dtype=np.uint8)
            path = tmp_path / cls / f"{i}.{ext}"
            Image.fromarray(a).save(path, quality=95)
            arrays[str(path)] = a
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    return tmp_path, arrays


def test_image_folder_bytes_and_labels(folder):
    root, arrays = folder
    d = ds.ImageFolderDataset(root, extensions=[".png", ".JPG"], shuffle=False)
    assert d.get_dataset_size() == 6 and d.num_classes() == 2
    out = rows(d)
    assert [int(r[1]) for r in out] == [0, 0, 0, 1, 1, 1]
    assert out[0][0].dtype == np.uint8 and out[0][0].ndim == 1
    assert out[0][0][:4].tobytes() == b"\x89PNG"
    assert out[3][0][:2].tobytes() == b"\xff\xd8"  # JPEG SOI


def test_image_folder_decode(folder):
    root, arrays = folder
    d = ds.ImageFolderDataset(root, extensions=["png", "jpg"], decode=True, shuffle=False)
    out = rows(d)
    np.testing.assert_array_equal(out[1][0], arrays[str(root / "cat" / "1.png")])
    with Image.open(root / "dog" / "2.jpg") as img:  # lossy: compare with Pillow's decode
        np.testing.assert_array_equal(out[5][0], np.asarray(img.convert("RGB")))


def test_image_folder_class_indexing(folder):
    root, _ = folder
    d = ds.ImageFolderDataset(root, class_indexing={"dog": 7}, extensions=[".jpg"], shuffle=False)
    assert [int(r[1]) for r in rows(d)] == [7, 7, 7]
    with pytest.raises(ValueError, match="bird"):
        ds.ImageFolderDataset(root, class_indexing={"bird": 0})


def corrupt_folder(folder):
    root, _ = folder
    good = (root / "cat" / "0.png").read_bytes()
    (root / "cat" / "3.png").write_bytes(good[: len(good) // 2])  # truncated
    (root / "dog" / "3.jpg").write_bytes(b"\xff\xd8\xff\xe0garbage")  # corrupt
    return root


def test_image_folder_corrupt_raise_names_file(folder):
    root = corrupt_folder(folder)
    d = ds.ImageFolderDataset(root, extensions=[".png", ".jpg"], decode=True, shuffle=False)
    with pytest.raises(ds.PipelineError, match=r"3\.png") as info:
        rows(d)
    assert info.value.origin.endswith("3.png")


@pytest.mark.parametrize("workers", [1, 3])
def test_image_folder_corrupt_skip(folder, workers, caplog):
    root = corrupt_folder(folder)
    d = ds.ImageFolderDataset(
        root,
        extensions=[".png", ".jpg"],
        decode=True,
        shuffle=False,
        on_error="skip",
        num_parallel_workers=workers,
    )
    it = d.create_tuple_iterator(num_epochs=1, output_numpy=True)
    out = list(it)
    assert len(out) == 6
    skipped = sorted(o.rsplit("/", 1)[-1] for o, _ in it.skipped)
    assert skipped == ["3.jpg", "3.png"]
    assert "3.png" in caplog.text


def test_decode_in_map_skip_names_file(folder):
    root = corrupt_folder(folder)
    from sporeling.data.datasets import decode_image

    d = ds.ImageFolderDataset(root, extensions=[".png", ".jpg"], shuffle=False)
    bad = d.map(decode_image, input_columns="image")
    with pytest.raises(ds.PipelineError, match=r"row 3 .*file .*3\.png"):
        rows(bad)
    ok = d.map(decode_image, input_columns="image", on_error="skip")
    it = ok.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert len(list(it)) == 6 and len(it.skipped) == 2


def test_image_folder_bad_args(folder, tmp_path):
    root, _ = folder
    with pytest.raises(TypeError, match="extensions"):
        ds.ImageFolderDataset(root, extensions=".jpg")
    with pytest.raises(ValueError, match="on_error"):
        ds.ImageFolderDataset(root, on_error="ignore")
    with pytest.raises(ValueError, match="not a directory"):
        ds.ImageFolderDataset(tmp_path / "nope")
    with pytest.raises(ValueError, match="argument 'cache' is not supported"):
        ds.ImageFolderDataset(root, cache=object())
    with pytest.raises(ValueError, match="argument 'decrypt' is not supported"):
        ds.ImageFolderDataset(root, decrypt=lambda data: data)


# ---- CSV / text ------------------------------------------------------------------------------
def test_csv_header_types_defaults(tmp_path):
    (tmp_path / "a.csv").write_text('id,score,name\n1,0.5,ann\n2,,bob\n\n3,1.5,"c,d"\n')
    (tmp_path / "b.csv").write_text("id,score,name\r\n4,2.5,eve\r\n")
    d = ds.CSVDataset(
        [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")],
        column_defaults=[0, -1.0, "?"],
        shuffle=False,
    )
    assert d.get_col_names() == ["id", "score", "name"] and d.get_dataset_size() == 4
    out = rows(d)
    assert [int(r[0]) for r in out] == [1, 2, 3, 4]
    assert out[0][0].dtype == np.int32 and out[0][1].dtype == np.float32
    assert [float(r[1]) for r in out] == [0.5, -1.0, 1.5, 2.5]
    assert [str(r[2]) for r in out] == ["ann", "bob", "c,d", "eve"]


def test_csv_names_delim_and_errors(tmp_path):
    (tmp_path / "x.tsv").write_text("1\tfoo\n2\tbar\nxx\tbaz\n")
    d = ds.CSVDataset(
        str(tmp_path / "*.tsv"), field_delim="\t", column_names=["n", "s"], shuffle=False
    )
    out = rows(d.take(2))
    assert [(str(a), str(b)) for a, b in out] == [("1", "foo"), ("2", "bar")]
    typed = ds.CSVDataset(
        str(tmp_path / "x.tsv"),
        "\t",
        column_defaults=[0, ""],
        column_names=["n", "s"],
        shuffle=False,
    )
    with pytest.raises(ds.PipelineError, match=r"x\.tsv.*'n' value 'xx' is not a valid int"):
        rows(typed)
    with pytest.raises(ValueError, match="column_defaults"):
        ds.CSVDataset(str(tmp_path / "x.tsv"), "\t", column_defaults=[0], column_names=["n", "s"])
    with pytest.raises(ValueError, match="field_delim"):
        ds.CSVDataset(str(tmp_path / "x.tsv"), field_delim="ab")
    with pytest.raises(ValueError, match="no file matches"):
        ds.CSVDataset(str(tmp_path / "*.nothing"))


def test_textfile_shuffle_modes_and_shards(tmp_path):
    for k in range(3):
        (tmp_path / f"f{k}.txt").write_text("".join(f"line {k}-{i}\n" for i in range(4)))
    files = sorted(str(p) for p in tmp_path.glob("*.txt"))
    plain = ds.TextFileDataset(files, shuffle=False)
    assert plain.get_col_names() == ["text"] and plain.get_dataset_size() == 12
    texts = [str(r[0]) for r in rows(plain)]
    assert texts[:2] == ["line 0-0", "line 0-1"]
    ds.config.set_seed(5)
    for mode in (ds.Shuffle.GLOBAL, ds.Shuffle.FILES, ds.Shuffle.INFILE, True):
        got = [str(r[0]) for r in rows(ds.TextFileDataset(files, shuffle=mode))]
        assert sorted(got) == sorted(texts)
    files_mode = [str(r[0]) for r in rows(ds.TextFileDataset(files, shuffle=ds.Shuffle.FILES))]
    # whole files stay together, in order
    for chunk in range(3):
        part = files_mode[chunk * 4 : chunk * 4 + 4]
        assert part == sorted(part, key=lambda s: int(s.split("-")[1]))
    shards = [
        [str(r[0]) for r in rows(ds.TextFileDataset(files, num_shards=5, shard_id=s))]
        for s in range(5)
    ]
    assert sorted(sum(shards, [])) == sorted(texts)
    with pytest.raises(TypeError, match="shuffle"):  # MindSpore's type
        ds.TextFileDataset(files, shuffle="yes")


# ---- Generator / NumpySlices ---------------------------------------------------------------
def test_generator_sources():
    def gen():
        for i in range(5):
            yield np.array([i, i]), np.float32(i / 2)

    d = ds.GeneratorDataset(gen, column_names=["a", "b"])
    assert d.get_dataset_size() == 5
    out = rows(d)
    assert [int(r[0][1]) for r in out] == [0, 1, 2, 3, 4] and out[1][1].dtype == np.float32
    # iterable (re-iterable) source and column_types
    d2 = ds.GeneratorDataset(
        [[1, 2], [3, 4], [5, 6]], ["x", "y"], column_types=[np.float64, np.int8]
    )
    out = rows(d2.project("y"))
    assert sorted(int(r[0]) for r in out) == [2, 4, 6]
    out = rows(
        ds.GeneratorDataset(
            [[1, 2], [3, 4], [5, 6]], ["x", "y"], column_types=[np.float64, np.int8], shuffle=False
        )
    )
    assert out[2][0].dtype == np.float64 and out[2][1].dtype == np.int8 and int(out[2][1]) == 6
    assert d2.get_dataset_size() == 3

    class Access:
        def __getitem__(self, i):
            return (np.full((2,), i),)

        def __len__(self):
            return 4

    d3 = ds.GeneratorDataset(Access(), ["v"], shuffle=False, num_samples=3)
    assert [int(r[0][0]) for r in rows(d3)] == [0, 1, 2]

    class OnlyIter:
        def __iter__(self):
            return iter([(np.int64(7),), (np.int64(8),)])

    assert [int(r[0]) for r in rows(ds.GeneratorDataset(OnlyIter(), "n"))] == [7, 8]
    inferred = ds.GeneratorDataset(gen)
    assert inferred.get_col_names() == ["column_0", "column_1"]


def test_generator_errors():
    def gen():
        yield (np.int64(1), np.int64(2))

    with pytest.raises(TypeError, match="source"):
        ds.GeneratorDataset(5, ["a"])
    with pytest.raises(ValueError, match="random-access"):
        ds.GeneratorDataset(gen, ["a", "b"], shuffle=True)
    with pytest.raises(ds.PipelineError, match="row 0.*gave 2 value"):
        rows(ds.GeneratorDataset(gen, ["a"]))
    with pytest.raises(RuntimeError, match="requires shard_id as well"):  # MindSpore's type
        ds.GeneratorDataset([1, 2], ["a"], num_shards=2)
    with pytest.raises(ValueError, match="shard_id"):
        ds.GeneratorDataset([1, 2], ["a"], num_shards=2, shard_id=2)
    with pytest.raises(RuntimeError, match="sampler and shuffle cannot be specified"):
        ds.GeneratorDataset([1, 2], ["a"], shuffle=True, sampler=ds.SequentialSampler())
    with pytest.raises(TypeError, match="num_parallel_workers"):
        ds.GeneratorDataset([1, 2], ["a"], num_parallel_workers="2")


def test_numpy_slices_forms():
    d = ds.NumpySlicesDataset([[1, 2], [3, 4], [5, 6]], shuffle=False)
    assert d.get_col_names() == ["column_0"]
    assert [r[0].tolist() for r in rows(d)] == [[1, 2], [3, 4], [5, 6]]
    t = ds.NumpySlicesDataset(
        (np.arange(3), np.arange(3) * 10), column_names=["a", "b"], shuffle=False
    )
    assert [int(r[1]) for r in rows(t)] == [0, 10, 20]
    dd = ds.NumpySlicesDataset({"u": [1, 2], "v": [3.0, 4.0]}, shuffle=False)
    assert dd.get_col_names() == ["u", "v"]
    with pytest.raises(ValueError, match="same length"):
        ds.NumpySlicesDataset({"u": [1, 2], "v": [3.0]})
    with pytest.raises(ValueError, match="column_names"):
        ds.NumpySlicesDataset((np.arange(3), np.arange(3)), column_names=["a"])
    with pytest.raises(TypeError, match="data"):
        ds.NumpySlicesDataset(5)
