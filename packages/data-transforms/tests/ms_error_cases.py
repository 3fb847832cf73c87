"""Bad arguments from MindSpore's dataset and MindRecord tests, as calls that work on both
``mindspore.dataset`` and ``sporeling.data``.

``make_ms_fixtures.py errors`` runs every case with MindSpore and records the exception
class it raises (``data/ms_errors.json``); ``test_ms_errors.py`` runs them here and checks
that Sporeling raises the same class (by name, anywhere in its MRO) and that the message
also names what the case lists. Plain Python, no pytest: it runs in MindSpore's environment.
"""

from __future__ import annotations

import os

import numpy as np

# case -> (call(ds, mindrecord, tmp, data_dir), words Sporeling's message must contain)
CASES: dict = {}


def case(*words: str):
    def add(fn):
        CASES[fn.__name__] = (fn, words)
        return fn

    return add


def _gen():
    for i in range(6):
        yield (np.array([i]),)


def _g(ds):
    return ds.GeneratorDataset(_gen, ["data"])


def _run(d) -> None:
    for _ in d.create_dict_iterator(num_epochs=1, output_numpy=True):
        pass


def _mnist(data: str) -> str:
    return os.path.join(data, "sources", "fashion")


# ---- sources: sampler / shuffle / shards (test_datasets_mnist.py and others) --------------
@case("sampler and shuffle cannot be specified at the same time", "shuffle=False")
def sampler_with_shuffle(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), shuffle=False, sampler=ds.PKSampler(3))


@case("sampler and sharding cannot be specified at the same time", "num_shards=2")
def sampler_with_shards(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), sampler=ds.PKSampler(3), num_shards=2, shard_id=0)


@case("sampler and num_samples cannot be specified at the same time", "num_samples=2")
def sampler_with_num_samples(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), sampler=ds.SequentialSampler(), num_samples=2)


@case("not an instance of a sampler", "int")
def use_sampler_int(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data)).use_sampler(1)


@case("sampler", "str")
def sampler_str(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), sampler="sampler")


@case("num_shards is specified and currently requires shard_id as well", "num_shards=10")
def num_shards_without_shard_id(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), num_shards=10)


@case("shard_id is specified but num_shards is not", "shard_id=0")
def shard_id_without_num_shards(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), shard_id=0)


@case("shard_id", "5")
def shard_id_out_of_range(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), num_shards=5, shard_id=5)


@case("shard_id", "'0'")
def shard_id_str(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), num_shards=2, shard_id="0")


@case("num_parallel_workers", "0")
def workers_zero(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), num_parallel_workers=0)


@case("num_parallel_workers", "65536")
def workers_too_many(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), num_parallel_workers=65536)


@case("usage", "validation")
def usage_unknown(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), usage="validation")


@case("usage", "int")
def usage_int(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), usage=1)


@case("dataset_dir")
def dataset_dir_missing(ds, mr, tmp, data):
    ds.MnistDataset(os.path.join(tmp, "no_such_dir"))


@case("num_samples", "-1")
def num_samples_negative(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), num_samples=-1)


@case("shuffle", "'true'")
def source_shuffle_str(ds, mr, tmp, data):
    ds.MnistDataset(_mnist(data), shuffle="true")


@case("shuffle", "'x'")
def text_shuffle_str(ds, mr, tmp, data):
    ds.TextFileDataset(os.path.join(data, "tiny_shakespeare.txt"), shuffle="x")


# ---- samplers (test_sampler.py) ----------------------------------------------------------
@case("replacement", "'a'")
def random_sampler_replacement_str(ds, mr, tmp, data):
    ds.RandomSampler(replacement="a")


@case("num_samples", "-1")
def random_sampler_num_samples_negative(ds, mr, tmp, data):
    ds.RandomSampler(num_samples=-1)


@case("start_index", "-1")
def sequential_start_negative(ds, mr, tmp, data):
    ds.SequentialSampler(start_index=-1).parse()


@case("shard_id", "2")
def distributed_shard_id_out_of_range(ds, mr, tmp, data):
    ds.DistributedSampler(2, 2).parse()


@case("num_shards", "0")
def distributed_zero_shards(ds, mr, tmp, data):
    ds.DistributedSampler(0, 0).parse()


@case("offset must be no more than num_shards(4)", "offset=5")
def distributed_offset_too_big(ds, mr, tmp, data):
    ds.DistributedSampler(4, 0, shuffle=False, offset=5).parse()


@case("weights vector must not be empty")
def weighted_empty(ds, mr, tmp, data):
    ds.WeightedRandomSampler([], 2).parse()


@case("weights vector must not contain negative numbers", "-0.1")
def weighted_negative(ds, mr, tmp, data):
    ds.WeightedRandomSampler([1, 0.5, -0.1], 2).parse()


@case("elements of weights vector must not be all zero")
def weighted_all_zero(ds, mr, tmp, data):
    ds.WeightedRandomSampler([0.0, 0, 0], 2).parse()


@case("weights", "str")
def weighted_str(ds, mr, tmp, data):
    ds.WeightedRandomSampler(["a"], 2)


@case("weights", "tuple")
def weighted_tuple(ds, mr, tmp, data):
    ds.WeightedRandomSampler((0.9, 0.8, 1.1))


@case("num_val", "0")
def pk_num_val_zero(ds, mr, tmp, data):
    ds.PKSampler(0).parse()


@case("num_val", "'3'")
def pk_num_val_str(ds, mr, tmp, data):
    ds.PKSampler("3")


@case("class_column", "1")
def pk_class_column_int(ds, mr, tmp, data):
    ds.PKSampler(3, class_column=1)


@case("num_class")
def pk_num_class(ds, mr, tmp, data):
    ds.PKSampler(3, num_class=2)


@case("already has a child")
def add_child_twice(ds, mr, tmp, data):
    s = ds.SequentialSampler()
    s.add_child(ds.SequentialSampler())
    s.add_child(ds.SequentialSampler())


@case("indices", "5")
def subset_index_out_of_range(ds, mr, tmp, data):
    _run(ds.NumpySlicesDataset([1, 2], ["a"], sampler=ds.SubsetSampler([5])))


# ---- pipeline operations (test_batch.py, test_repeat.py, test_shuffle.py, ...) -----------
@case("batch_size", "0")
def batch_zero(ds, mr, tmp, data):
    _g(ds).batch(0)


@case("batch_size", "2147483648")
def batch_too_big(ds, mr, tmp, data):
    _g(ds).batch(2**31)


@case("batch_size", "'2'")
def batch_str(ds, mr, tmp, data):
    _g(ds).batch("2")


@case("drop_remainder", "'x'")
def batch_drop_remainder_str(ds, mr, tmp, data):
    _g(ds).batch(2, drop_remainder="x")


@case("num_parallel_workers", "0")
def batch_workers_zero(ds, mr, tmp, data):
    _g(ds).batch(2, num_parallel_workers=0)


@case("count", "0")
def repeat_zero(ds, mr, tmp, data):
    _g(ds).repeat(0)


@case("count", "-2")
def repeat_minus_two(ds, mr, tmp, data):
    _g(ds).repeat(-2)


@case("count", "'2'")
def repeat_str(ds, mr, tmp, data):
    _g(ds).repeat("2")


@case("count", "0")
def take_zero(ds, mr, tmp, data):
    _g(ds).take(0)


@case("count", "-2")
def take_minus_two(ds, mr, tmp, data):
    _g(ds).take(-2)


@case("count", "-1")
def skip_negative(ds, mr, tmp, data):
    _g(ds).skip(-1)


@case("buffer_size", "0")
def shuffle_zero(ds, mr, tmp, data):
    _g(ds).shuffle(0)


@case("buffer_size", "1")
def shuffle_one(ds, mr, tmp, data):
    _g(ds).shuffle(1)


@case("buffer_size", "2147483648")
def shuffle_too_big(ds, mr, tmp, data):
    _g(ds).shuffle(2**31)


@case("buffer_size", "'2'")
def shuffle_buffer_str(ds, mr, tmp, data):
    _g(ds).shuffle("2")


@case("Invalid column", "nope")
def project_unknown_column(ds, mr, tmp, data):
    _run(_g(ds).project(["nope"]))


@case("columns", "should not be empty")
def project_empty(ds, mr, tmp, data):
    _g(ds).project([])


@case("Invalid column", "nope")
def rename_unknown_column(ds, mr, tmp, data):
    _run(_g(ds).rename(["nope"], ["x"]))


@case("duplicate column", "data")
def zip_duplicate_columns(ds, mr, tmp, data):
    _run(ds.zip((_g(ds), _g(ds))))


@case("Datasets")
def zip_not_tuple(ds, mr, tmp, data):
    ds.zip(_g(ds))


@case("column name", "other")
def concat_other_columns(ds, mr, tmp, data):
    _run(_g(ds) + ds.GeneratorDataset(_gen, ["other"]))


@case("Invalid column", "nope")
def map_unknown_column(ds, mr, tmp, data):
    _run(_g(ds).map(lambda x: x, input_columns=["nope"]))


@case("operations", "int")
def map_not_callable(ds, mr, tmp, data):
    _g(ds).map(1)


@case("output_columns")
def map_output_count(ds, mr, tmp, data):
    _run(_g(ds).map(lambda x: (x, x), input_columns=["data"]))


@case("ZeroDivisionError")
def map_function_raises(ds, mr, tmp, data):
    _run(_g(ds).map(lambda x: 1 / 0))


@case("ZeroDivisionError")
def generator_raises(ds, mr, tmp, data):
    _run(ds.GeneratorDataset(lambda: (1 / 0 for _ in range(2)), ["a"]))


# ---- vision / transforms (test_*.py of the ops) -----------------------------------------
def _vision(ds):
    import importlib

    return importlib.import_module(ds.__name__ + ".vision")


def _transforms(ds):
    import importlib

    return importlib.import_module(ds.__name__ + ".transforms")


@case("size", "-1")
def resize_negative(ds, mr, tmp, data):
    _vision(ds).Resize(-1)


@case("interpolation", "'x'")
def resize_interpolation_str(ds, mr, tmp, data):
    _vision(ds).Resize(4, interpolation="x")


@case("mean[0]", "[0, 255]", "300")
def normalize_mean_out_of_range(ds, mr, tmp, data):
    _vision(ds).Normalize([300, 2, 3], [1, 1, 1])


@case("std", "0")
def normalize_std_zero(ds, mr, tmp, data):
    _vision(ds).Normalize([1, 2, 3], [0, 1, 1])


@case("prob", "'a'")
def flip_prob_str(ds, mr, tmp, data):
    _vision(ds).RandomHorizontalFlip("a")


@case("prob", "1.5")
def flip_prob_out_of_range(ds, mr, tmp, data):
    _vision(ds).RandomHorizontalFlip(1.5)


@case("distortion_scale", "2")
def perspective_distortion_int(ds, mr, tmp, data):
    _vision(ds).RandomPerspective(2)


@case("scale")
def random_resized_crop_scale(ds, mr, tmp, data):
    _vision(ds).RandomResizedCrop(4, scale=(1.0, 0.5))


@case("HWC2CHW", "(4,)")
def hwc2chw_on_1d(ds, mr, tmp, data):
    _vision(ds).HWC2CHW()(np.zeros((4,), np.uint8))


@case("Duplicate")
def duplicate_two_inputs(ds, mr, tmp, data):
    _transforms(ds).Duplicate()(1, 2)


@case("prob", "2")
def random_apply_prob(ds, mr, tmp, data):
    _transforms(ds).RandomApply([_vision(ds).Invert()], prob=2)


@case("num_classes", "-1")
def one_hot_negative(ds, mr, tmp, data):
    _transforms(ds).OneHot(-1)


# ---- split (test_split.py) ---------------------------------------------------------------
def _n(ds, **kw):
    return ds.NumpySlicesDataset(list(range(10)), ["data"], **kw)


@case("sizes cannot be empty")
def split_empty(ds, mr, tmp, data):
    _n(ds).split([])


@case("sizes", "'ab'")
def split_str(ds, mr, tmp, data):
    _n(ds).split("ab")


@case("list of int or list of float", "0.5")
def split_mixed(ds, mr, tmp, data):
    _n(ds).split([0.5, 5])


@case("Sum of split sizes 6 is not equal to dataset size 10")
def split_ints_wrong_sum(ds, mr, tmp, data):
    _n(ds).split([3, 3])


@case("negative or zero", "[0, 10]")
def split_zero(ds, mr, tmp, data):
    _n(ds).split([0, 10])


@case("do not sum up to 1")
def split_fractions_wrong_sum(ds, mr, tmp, data):
    _n(ds).split([0.2, 0.3])


@case("outside the range (0, 1]")
def split_fraction_out_of_range(ds, mr, tmp, data):
    _n(ds).split([1.1, -0.1])


@case("Split percentage 0.05 is too small")
def split_fraction_rounds_to_zero(ds, mr, tmp, data):
    _n(ds, num_samples=3).split([0.95, 0.05])


@case("randomize", "'x'")
def split_randomize_str(ds, mr, tmp, data):
    _n(ds).split([5, 5], randomize="x")


@case("should not be sharded before split")
def split_sharded(ds, mr, tmp, data):
    ds.NumpySlicesDataset(list(range(10)), ["d"], num_shards=2, shard_id=0).split([3, 2])


# ---- config (test_config.py) -------------------------------------------------------------
@case("seed", "-1")
def config_seed_negative(ds, mr, tmp, data):
    ds.config.set_seed(-1)


@case("seed", "'1'")
def config_seed_str(ds, mr, tmp, data):
    ds.config.set_seed("1")


@case("num_parallel_workers", "0")
def config_workers_zero(ds, mr, tmp, data):
    ds.config.set_num_parallel_workers(0)


@case("size", "0")
def config_prefetch_zero(ds, mr, tmp, data):
    ds.config.set_prefetch_size(0)


# ---- MindDataset (test_minddataset_exception.py) -----------------------------------------
def _mixed(data: str) -> str:
    return os.path.join(data, "ms_mixed.mindrecord0")


@case("does not exist")
def mind_file_missing(ds, mr, tmp, data):
    ds.MindDataset(os.path.join(tmp, "none.mindrecord"))


@case("columns_list", "int")
def mind_columns_list_int(ds, mr, tmp, data):
    ds.MindDataset(_mixed(data), columns_list=1)


@case("num_padded is specified but padded_sample is not")
def mind_num_padded_without_sample(ds, mr, tmp, data):
    ds.MindDataset(_mixed(data), num_padded=2)


# ---- FileWriter (test_mindrecord_exception.py) -------------------------------------------
def _w(mr, tmp, **kw):
    return mr.FileWriter(os.path.join(tmp, "w.mindrecord"), overwrite=True, **kw)


@case("Parameter shard_num's value: 1001 should between 1 and 1000.")
def writer_shard_num_1001(ds, mr, tmp, data):
    mr.FileWriter(os.path.join(tmp, "a.mindrecord"), 1001)


@case("Parameter shard_num's type is not int.", "'20'")
def writer_shard_num_str(ds, mr, tmp, data):
    mr.FileWriter(os.path.join(tmp, "a.mindrecord"), "20")


@case("Parameter shard_num is None.")
def writer_shard_num_none(ds, mr, tmp, data):
    mr.FileWriter(os.path.join(tmp, "a.mindrecord"), None)


@case("Parameter overwrite's type is not bool.", "1")
def writer_overwrite_int(ds, mr, tmp, data):
    mr.FileWriter(os.path.join(tmp, "a.mindrecord"), 4, 1)


@case("is not string", "1")
def writer_file_name_int(ds, mr, tmp, data):
    mr.FileWriter(1)


@case("Schema format is error", "empty")
def writer_schema_empty(ds, mr, tmp, data):
    _w(mr, tmp).add_schema({}, "d")


@case("Schema format is error", "'a'", "int8")
def writer_schema_bad_type(ds, mr, tmp, data):
    _w(mr, tmp).add_schema({"a": {"type": "int8"}}, "d")


@case("Schema format is error", "a-b")
def writer_schema_bad_name(ds, mr, tmp, data):
    _w(mr, tmp).add_schema({"a-b": {"type": "int32"}}, "d")


@case("Schema format is error", "'a'", "bytes")
def writer_schema_bytes_with_shape(ds, mr, tmp, data):
    _w(mr, tmp).add_schema({"a": {"type": "bytes", "shape": [2]}}, "d")


@case("Failed to get meta info", "add_schema")
def writer_index_without_schema(ds, mr, tmp, data):
    _w(mr, tmp).add_index(["label"])


@case("'index_fields' expect list type", "'id'")
def writer_index_not_list(ds, mr, tmp, data):
    w = _w(mr, tmp)
    w.add_schema({"id": {"type": "int32"}}, "d")
    w.add_index("id")


@case("'index field' expect str type", "1")
def writer_index_item_int(ds, mr, tmp, data):
    w = _w(mr, tmp)
    w.add_schema({"id": {"type": "int32"}}, "d")
    w.add_index([1])


@case("Failed to set field a since it's not primitive type")
def writer_index_array_field(ds, mr, tmp, data):
    w = _w(mr, tmp)
    w.add_schema({"a": {"type": "int32", "shape": [2]}}, "d")
    w.add_index(["a"])


@case("'raw_data' expect list type", "dict")
def writer_rows_not_list(ds, mr, tmp, data):
    w = _w(mr, tmp)
    w.add_schema({"id": {"type": "int32"}}, "d")
    w.write_raw_data({"id": 1})


@case("'raw_data item' expect dict type", "int")
def writer_row_not_dict(ds, mr, tmp, data):
    w = _w(mr, tmp)
    w.add_schema({"id": {"type": "int32"}}, "d")
    w.write_raw_data([1])


@case("mindrecord files already exist", "overwrite=True")
def writer_file_exists(ds, mr, tmp, data):
    path = os.path.join(tmp, "exists.mindrecord")
    with open(path, "w") as f:
        f.write("just for test")
    w = mr.FileWriter(path)
    w.add_schema({"id": {"type": "int32"}}, "d")
    w.write_raw_data([{"id": 1}])
    w.commit()


# ---- rows FileWriter.write_raw_data skips (MindSpore's _verify_based_on_schema) ----------
SKIP_SCHEMA = {
    "id": {"type": "int32"},
    "f": {"type": "float32"},
    "s": {"type": "string"},
    "b": {"type": "bytes"},
    "a": {"type": "int64", "shape": [2]},
    "v": {"type": "float32", "shape": [-1]},
}


def skip_rows() -> list[dict]:
    """Rows 0..21, each changing one thing of a valid row: MindSpore writes some, skips others."""

    def row(i, drop=None, **changes):
        r = {
            "id": i,
            "f": 1.5,
            "s": "x",
            "b": b"ab",
            "a": np.array([1, 2], np.int64),
            "v": np.array([1.0], np.float32),
        }
        r.update(changes)
        r.pop(drop, None)
        return r

    return [
        row(0),
        row(1, drop="id"),  # a missing field
        row(2, f=3),  # an int for a float field
        row(3, id=2.0),  # a float for an int field
        row(4, id=np.int64(4)),  # a NumPy scalar of another type
        row(5, id=np.int32(5)),  # ... of the field's type
        row(6, s=b"x"),  # bytes for a string
        row(7, b="ab"),  # a string for bytes
        row(8, a=np.array([1, 2], np.int32)),  # an array of another dtype
        row(9, a=np.array([1, 2, 3], np.int64)),  # another size
        row(10, a=[1, 2]),  # a list, not an array
        row(11, v=np.array([1.0, 2.0, 3.0], np.float32)),  # any length for a -1 shape
        row(12, v=np.array([1.0], np.float64)),
        row(13, extra=5),  # a field outside the schema (ignored)
        row(14, id=True),
        row(15, f=np.float32(2.5)),
        row(16, f=np.float64(2.5)),
        row(17, b=bytearray(b"q")),
        row(18, a=np.array([[1], [2]], np.int64)),  # reshapes to the field's shape
        row(19, id=None),
        row(20, id=np.array(3, np.int32)),  # a 0-d array for a scalar field
        row(21),
    ]
