"""Pipeline specs of the `sporeling-data` command: a YAML (or JSON) file -> a dataset.

A spec names a source and the pipeline steps, in order::

    seed: 1                                   # optional: config.set_seed(1)
    source:
      ImageFolderDataset:                     # any dataset class of sporeling.data
        dataset_dir: images                   # relative paths: from the spec's folder
        shuffle: false
    pipeline:
      - map:
          operations:
            - Decode                          # an op without arguments: its name
            - RandomResizedCrop: {size: 224}  # keyword arguments
            - RandomHorizontalFlip: [0.5]     # positional arguments
            - Normalize: {mean: [123.7, 116.3, 103.5], std: [58.4, 57.1, 57.4]}
            - HWC2CHW
          input_columns: [image]
          num_parallel_workers: 2
      - batch: {batch_size: 32, drop_remainder: true}
    bench: {batches: 50, warmup: 2}           # defaults of `sporeling-data bench`

Ops are looked up in `sporeling.data.vision`, then `sporeling.data.transforms`; a
`per_batch_map` may be an op too (`per_batch_map: {BatchRandomResizedCrop: {size: 224}}`).
Strings such as "Inter.BILINEAR" or "ImageBatchFormat.NCHW" become those enum members.
Every pipeline step is a method of the dataset (`map`, `batch`, `shuffle`, `repeat`,
`take`, `skip`, `project`, `rename`) with its keyword arguments.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sporeling.data.cli import MISSING_EXTRA, SPEC_ERROR, CliError

#: Source arguments holding paths, resolved against the spec's folder.
PATH_ARGS = ("dataset_dir", "dataset_file", "dataset_files", "path")
#: Dataset methods a pipeline step may call.
STEPS = ("map", "batch", "shuffle", "repeat", "take", "skip", "project", "rename")
#: Enum classes of `sporeling.data.vision` that strings like "Inter.LINEAR" may name.
ENUMS = ("Inter", "Border", "ImageBatchFormat", "ConvertMode", "SliceMode", "AutoAugmentPolicy")


def load_spec(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a spec file: JSON when it ends in .json, else YAML (needs the [cli] extra)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read spec {str(p)!r}: {exc.strerror or exc}", SPEC_ERROR) from None
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CliError(f"spec {str(p)!r} is not valid JSON: {exc}", SPEC_ERROR) from None
    else:
        try:
            import yaml  # type: ignore[import-untyped, unused-ignore]
        except ImportError:
            raise CliError(
                "reading a YAML spec needs PyYAML, which is not installed: "
                "pip install 'sporeling-data-transforms[cli]' (or write the spec as .json)",
                MISSING_EXTRA,
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CliError(f"spec {str(p)!r} is not valid YAML: {exc}", SPEC_ERROR) from None
    if not isinstance(data, dict):
        raise CliError(
            f"spec {str(p)!r} must be a mapping with 'source' (and 'pipeline'), "
            f"got {type(data).__name__}",
            SPEC_ERROR,
        )
    unknown = sorted(set(data) - {"seed", "source", "pipeline", "bench", "grid"})
    if unknown:
        raise CliError(
            f"spec {str(p)!r}: unknown key(s) {unknown}; expected seed, source, pipeline, "
            "bench, grid",
            SPEC_ERROR,
        )
    data["_dir"] = str(p.resolve().parent)
    return data


def _one_entry(value: Any, what: str) -> tuple[str, Any]:
    """`Name` or `{Name: args}` -> (Name, args)."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and len(value) == 1:
        name, args = next(iter(value.items()))
        return str(name), args
    raise CliError(
        f"{what} must be a name or a mapping with one name, e.g. {{RandomCrop: {{size: 32}}}}, "
        f"got {value!r}",
        SPEC_ERROR,
    )


def _enum_value(value: Any) -> Any:
    """'Inter.BILINEAR' -> sporeling.data.vision.Inter.BILINEAR (lists and dicts recursed)."""
    if isinstance(value, list):
        return [_enum_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _enum_value(v) for k, v in value.items()}
    if isinstance(value, str) and value.count(".") == 1:
        enum, member = value.split(".")
        if enum in ENUMS:
            import sporeling.data.vision as vision

            cls = getattr(vision, enum, None)
            if cls is None:
                return member  # the batch ops accept member names as strings
            try:
                return cls[member]
            except KeyError:
                raise CliError(
                    f"unknown enum member {value!r}; {enum} has {[m.name for m in cls]}",
                    SPEC_ERROR,
                ) from None
    return value


def _call(factory: Any, name: str, args: Any, what: str) -> Any:
    args = _enum_value(args)
    try:
        if args is None:
            return factory()
        if isinstance(args, dict):
            return factory(**args)
        if isinstance(args, list):
            return factory(*args)
        return factory(args)
    except (TypeError, ValueError) as exc:
        raise CliError(f"{what} {name}({args!r}): {exc}", SPEC_ERROR) from None


def make_op(value: Any) -> Any:
    """An op from its spec entry (a name, or {name: args})."""
    name, args = _one_entry(value, "an operation")
    import sporeling.data.transforms as transforms
    import sporeling.data.vision as vision
    from sporeling.data.vision import batch

    for module in (vision, transforms, batch):
        factory = getattr(module, name, None)
        if factory is not None and callable(factory):
            return _call(factory, name, args, "operation")
    raise CliError(
        f"unknown operation {name!r}: not in sporeling.data.vision nor sporeling.data.transforms",
        SPEC_ERROR,
    )


def make_source(value: Any, base_dir: str) -> Any:
    """The source dataset from `source: {ClassName: {args}}`."""
    name, args = _one_entry(value, "source")
    import sporeling.data as data

    factory = getattr(data, name, None)
    if factory is None:
        import sporeling.data.datasets as datasets

        factory = getattr(datasets, name, None)
    if factory is None or not callable(factory):
        raise CliError(
            f"unknown source {name!r}: not a dataset class of sporeling.data", SPEC_ERROR
        )
    if isinstance(args, dict):
        args = dict(args)
        for key in PATH_ARGS:
            if key in args:
                args[key] = _resolve_paths(args[key], base_dir)
    return _call(factory, name, args, "source")


def _resolve_paths(value: Any, base_dir: str) -> Any:
    if isinstance(value, list):
        return [_resolve_paths(v, base_dir) for v in value]
    if isinstance(value, str):
        p = Path(os.path.expanduser(value))
        return str(p if p.is_absolute() else Path(base_dir) / p)
    return value


def build(spec: dict[str, Any]) -> Any:
    """The dataset a spec describes (applies `seed` first)."""
    if "source" not in spec:
        raise CliError(
            "spec has no 'source' (e.g. source: {ImageFolderDataset: {...}})", SPEC_ERROR
        )
    if spec.get("seed") is not None:
        from sporeling.data import config

        config.set_seed(spec["seed"])
    ds = make_source(spec["source"], spec.get("_dir", "."))
    steps = spec.get("pipeline") or []
    if not isinstance(steps, list):
        raise CliError("'pipeline' must be a list of steps (- map: {...})", SPEC_ERROR)
    for i, step in enumerate(steps):
        name, args = _one_entry(step, f"pipeline step {i}")
        if name not in STEPS:
            raise CliError(
                f"pipeline step {i}: unknown step {name!r}; choose from {STEPS}", SPEC_ERROR
            )
        args = dict(args) if isinstance(args, dict) else args
        if name == "map" and isinstance(args, dict):
            ops = args.get("operations")
            ops = ops if isinstance(ops, list) else [ops]
            args["operations"] = [make_op(op) for op in ops]
        if name == "batch" and isinstance(args, dict) and args.get("per_batch_map") is not None:
            args["per_batch_map"] = make_op(args["per_batch_map"])
        ds = _call(getattr(ds, name), name, args, f"pipeline step {i}:")
    return ds


def source_for_path(path: str) -> Any:
    """A dataset for a data path, guessing the reader from what is there."""
    p = Path(path)
    import sporeling.data as data

    def reader(name: str) -> Any:
        cls = getattr(data, name, None)
        if cls is None:
            raise CliError(f"sporeling.data has no {name} (yet) to read {path!r}")
        return cls

    if p.is_file():
        suffix = p.suffix.lower()
        if suffix == ".csv":
            return "CSVDataset", reader("CSVDataset")(dataset_files=[str(p)], shuffle=False)
        if suffix in (".txt", ".text"):
            return "TextFileDataset", reader("TextFileDataset")(
                dataset_files=[str(p)], shuffle=False
            )
        if suffix in (".npy", ".npz"):
            import numpy as np

            loaded = np.load(p)
            if suffix == ".npz":
                arrays = {k: loaded[k] for k in loaded.files}
                ds = reader("NumpySlicesDataset")(arrays, column_names=list(arrays), shuffle=False)
            else:
                ds = reader("NumpySlicesDataset")(loaded, column_names=["data"], shuffle=False)
            return "NumpySlicesDataset", ds
        raise CliError(
            f"cannot tell the format of {path!r}: give a folder (image folder, MNIST, CIFAR), "
            "a .csv, .txt, .npy or .npz file, or a spec (.yaml, .json)"
        )
    if not p.is_dir():
        raise CliError(f"{path!r} does not exist")
    names = {f.name for f in p.iterdir()}
    if any("idx3-ubyte" in n or "idx1-ubyte" in n for n in names):
        return "MnistDataset", reader("MnistDataset")(str(p), shuffle=False)
    if any(n.startswith("data_batch_") and n.endswith(".bin") for n in names) or (
        "test_batch.bin" in names
    ):
        return "Cifar10Dataset", reader("Cifar10Dataset")(str(p), shuffle=False)
    if {"train.bin", "test.bin"} & names:
        return "Cifar100Dataset", reader("Cifar100Dataset")(str(p), shuffle=False)
    if any(f.is_dir() for f in p.iterdir()):
        return "ImageFolderDataset", reader("ImageFolderDataset")(str(p), shuffle=False)
    raise CliError(
        f"cannot tell the format of folder {path!r}: expected class subfolders of images, "
        "MNIST idx files or CIFAR binary batches"
    )
