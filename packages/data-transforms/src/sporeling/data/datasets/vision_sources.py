"""Image sources: ImageFolderDataset, MnistDataset (idx), Cifar10Dataset, Cifar100Dataset."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.sources import MappableSource

__all__ = [
    "ImageFolderDataset",
    "MnistDataset",
    "Cifar10Dataset",
    "Cifar100Dataset",
    "decode_image",
]


def _check_dir(where: str, dataset_dir: Any) -> Path:
    if not isinstance(dataset_dir, (str, os.PathLike)):
        raise TypeError(
            f"{where}: argument 'dataset_dir' expected a path, got {type(dataset_dir).__name__}"
        )
    path = Path(dataset_dir)
    if not path.is_dir():
        raise ValueError(f"{where}: dataset_dir {str(path)!r} is not a directory")
    return path


def _check_usage(where: str, usage: Any) -> str:
    usage = "all" if usage is None else usage
    if not isinstance(usage, str):
        raise TypeError(
            f"{where}: argument 'usage' expected 'train', 'test', 'all' or None, got "
            f"{type(usage).__name__} {usage!r}"
        )
    if usage not in ("train", "test", "all"):
        raise ValueError(
            f"{where}: argument 'usage' expected 'train', 'test', 'all' or None, got {usage!r}"
        )
    return str(usage)


def read_file(path: Any) -> np.ndarray:
    """A file's bytes as a writable 1-D uint8 array, read straight into it (one copy, not
    `read_bytes()` plus a copy out of the bytes object)."""
    with open(path, "rb", buffering=0) as f:
        out = np.empty(os.fstat(f.fileno()).st_size, np.uint8)
        view, got = out.data, 0
        while got < out.size:  # a read may return less than asked
            n = f.readinto(view[got:])
            if not n:
                break
            got += n
    return out if got == out.size else out[:got]


def decode_image(data: bytes | np.ndarray, origin: Any = None) -> np.ndarray:
    """Decode encoded image bytes with Pillow into an RGB HWC uint8 array.

    Corrupt or truncated data raises ``ValueError`` naming ``origin`` (the file).
    """
    from PIL import Image, UnidentifiedImageError

    raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
    try:
        with Image.open(io.BytesIO(raw)) as img:
            img.load()  # raises on truncated data (Image.LOAD_TRUNCATED_IMAGES stays False)
            rgb = img.convert("RGB")
        return np.asarray(rgb)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        name = f" {origin}" if origin is not None else ""
        raise ValueError(f"cannot decode image{name}: {type(exc).__name__}: {exc}") from exc


class ImageFolderDataset(MappableSource):
    """Images in ``dataset_dir/<class name>/<file>``; columns ``image`` and ``label``.

    Labels are the positions of the sorted class folder names (or ``class_indexing``, in
    which case only those folders are read). ``image`` holds the file's bytes (uint8, 1-D)
    unless ``decode=True`` (RGB HWC uint8). ``extensions`` (e.g. ``['.jpg', '.png']``,
    case-insensitive) filters files; None reads every non-hidden file. ``on_error`` decides
    what a file that cannot be read or decoded does: ``'raise'`` (default; the error names
    the file) or ``'skip'`` (the row is dropped, logged, and listed in ``iterator.skipped``).
    ``cache`` and ``decrypt`` are accepted for compatibility (must be None).
    """

    def __init__(
        self,
        dataset_dir: str | os.PathLike[str],
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        extensions: list[str] | None = None,
        class_indexing: dict[str, int] | None = None,
        decode: bool = False,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
        decrypt: Any = None,
        *,
        on_error: str = "raise",
    ) -> None:
        where = type(self).__name__
        root = _check_dir(where, dataset_dir)
        if not isinstance(decode, bool):
            raise TypeError(f"{where}: argument 'decode' expected a bool, got {decode!r}")
        for arg, value in (("cache", cache), ("decrypt", decrypt)):
            if value is not None:
                raise ValueError(
                    f"{where}: argument '{arg}' is not supported (pass None), got {value!r}"
                )
        exts = None
        if extensions is not None:
            if isinstance(extensions, str) or not isinstance(extensions, (list, tuple)):
                raise TypeError(
                    f"{where}: argument 'extensions' expected a list like ['.jpg'], got "
                    f"{extensions!r}"
                )
            exts = {e.lower() if e.startswith(".") else "." + e.lower() for e in extensions}
        folders = sorted(
            p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
        )
        if class_indexing is not None:
            if not isinstance(class_indexing, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                for k, v in class_indexing.items()
            ):
                raise TypeError(
                    f"{where}: argument 'class_indexing' expected a dict {{folder name: int}}, "
                    f"got {class_indexing!r}"
                )
            missing = [k for k in class_indexing if k not in folders]
            if missing:
                raise ValueError(
                    f"{where}: class_indexing names folders {missing} that are not in "
                    f"{str(root)!r} (found {folders})"
                )
            classes = dict(class_indexing)
        else:
            classes = {name: i for i, name in enumerate(folders)}
        files, labels = [], []
        for name in sorted(classes, key=lambda k: (classes[k], k)):
            for f in sorted((root / name).iterdir()):
                if not f.is_file() or f.name.startswith("."):
                    continue
                if exts is not None and f.suffix.lower() not in exts:
                    continue
                files.append(f)
                labels.append(classes[name])
        self._files = files
        self._labels = np.asarray(labels, dtype=np.int32)
        self.class_indexing = classes
        self.decode = decode
        super().__init__(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id, on_error
        )

    def get_col_names(self) -> list[str]:
        return ["image", "label"]

    def get_class_indexing(self) -> dict[str, int]:
        return dict(self.class_indexing)

    def num_classes(self) -> int:
        return len(set(self.class_indexing.values()))

    def _num_rows(self) -> int:
        return len(self._files)

    def _origin(self, index: int) -> Any:
        return str(self._files[index])

    def _load(self, index: int) -> tuple[Any, ...]:
        path = self._files[index]
        data = read_file(path)
        image = decode_image(data, path) if self.decode else data
        return image, self._labels[index]


# ---- MNIST ---------------------------------------------------------------------------------
_IDX_TYPES: dict[int, Any] = {
    0x08: np.uint8,
    0x09: np.int8,
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}


def _idx_header(path: Path, head: bytes, dims_bytes: bytes) -> tuple[np.dtype, tuple[int, ...]]:
    if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an idx file (magic bytes {head.hex()})")
    dims = np.frombuffer(dims_bytes, dtype=">u4").astype(np.int64)
    if len(dims) != head[3]:
        raise ValueError(f"{path}: truncated idx header")
    return np.dtype(_IDX_TYPES[head[2]]), tuple(int(d) for d in dims)


def read_idx(path: Path) -> np.ndarray:
    """An idx file (the MNIST format), checked: a read-only memory map, or for a ``.gz`` file
    (MNIST's published form) a read-only array of its decompressed bytes."""
    gz = path.suffix == ".gz"
    if gz:
        import gzip

        try:
            with gzip.open(path, "rb") as f:
                data = f.read()
        except (OSError, EOFError) as e:
            raise ValueError(f"{path}: not a readable gzip file ({e})") from None
        size = len(data)
    else:
        size = path.stat().st_size
        with open(path, "rb") as f:
            data = f.read(4)
            data += f.read(4 * data[3]) if len(data) == 4 else b""
    ndim = data[3] if len(data) >= 4 else 0
    dtype, shape = _idx_header(path, data[:4], data[4 : 4 + 4 * ndim])
    offset = 4 + 4 * ndim
    expected = offset + int(np.prod(shape)) * dtype.itemsize
    if size != expected:
        raise ValueError(
            f"{path}: idx header promises {expected} bytes for shape {list(shape)}, the "
            f"{'decompressed ' if gz else ''}file has {size}"
        )
    if gz:
        return np.frombuffer(data, dtype=dtype, offset=offset).reshape(shape)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)


def idx_file(root: Path, name: str) -> Path | None:
    """``root / name``, else its gzip'd ``name.gz``, else None (the uncompressed file wins,
    as MindSpore reads only that one)."""
    for candidate in (root / name, root / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


class MnistDataset(MappableSource):
    """MNIST idx files in ``dataset_dir``; columns ``image`` (28x28x1 uint8), ``label`` (uint32).

    Beyond MindSpore (which reads only the uncompressed files): where a file is missing, its
    gzip'd form as published (``train-images-idx3-ubyte.gz`` ...) is read instead.

    ``usage``: 'train' (train-images-idx3-ubyte, train-labels-idx1-ubyte), 'test' (t10k-*),
    'all' or None: test then train, as MindSpore orders them (it sorts the file names, and
    ``t10k-*`` comes before ``train-*``; checked against MindSpore 2.10).
    """

    _FILES = {
        "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
        "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
    }

    def __init__(
        self,
        dataset_dir: str | os.PathLike[str],
        usage: str | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        where = type(self).__name__
        root = _check_dir(where, dataset_dir)
        usage = _check_usage(where, usage)
        parts = ["test", "train"] if usage == "all" else [usage]  # MindSpore's sorted file names
        images, labels = [], []
        for part in parts:
            img_name, lbl_name = self._FILES[part]
            img_path, lbl_path = idx_file(root, img_name), idx_file(root, lbl_name)
            if img_path is None or lbl_path is None:
                if usage == "all":
                    continue
                raise ValueError(
                    f"{where}: usage={usage!r} needs {img_name} and {lbl_name} (or their "
                    f".gz) in {str(root)!r}"
                )
            imgs, lbls = read_idx(img_path), read_idx(lbl_path)
            if imgs.ndim != 3 or lbls.ndim != 1 or len(imgs) != len(lbls):
                raise ValueError(
                    f"{where}: {img_path.name} has shape {imgs.shape} and {lbl_path.name} "
                    f"{lbls.shape}; expected (N, rows, cols) images and N labels"
                )
            images.append(imgs)
            labels.append(lbls)
        if not images:
            raise ValueError(f"{where}: no MNIST idx files found in {str(root)!r}")
        self._images, self._labels = images, labels
        self._offsets = np.cumsum([0] + [len(x) for x in images])
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def get_col_names(self) -> list[str]:
        return ["image", "label"]

    def _num_rows(self) -> int:
        return int(self._offsets[-1])

    def _load(self, index: int) -> tuple[Any, ...]:
        part = int(np.searchsorted(self._offsets, index, side="right") - 1)
        i = index - int(self._offsets[part])
        image = np.array(self._images[part][i], dtype=np.uint8)[:, :, None]
        return image, np.uint32(self._labels[part][i])


# ---- CIFAR ---------------------------------------------------------------------------------
class _CifarBase(MappableSource):
    _label_bytes = 1
    _files: dict[str, list[str]] = {}
    _columns: list[str] = []

    def __init__(
        self,
        dataset_dir: str | os.PathLike[str],
        usage: str | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        where = type(self).__name__
        root = _check_dir(where, dataset_dir)
        usage = _check_usage(where, usage)
        parts = ["train", "test"] if usage == "all" else [usage]
        record = self._label_bytes + 3072
        chunks = []
        for part in parts:
            paths = [root / name for name in self._files[part]]
            found = [p for p in paths if p.is_file()]
            if not found and usage != "all":
                raise ValueError(
                    f"{where}: usage={usage!r} needs {[p.name for p in paths]} in {str(root)!r}"
                )
            for p in found:
                size = p.stat().st_size
                if size == 0 or size % record:
                    raise ValueError(
                        f"{where}: {p} has {size} bytes, not a whole number of {record}-byte "
                        "records; is it a CIFAR binary file of the right kind?"
                    )
                chunks.append(np.memmap(p, dtype=np.uint8, mode="r").reshape(-1, record))
        if not chunks:
            raise ValueError(f"{where}: no CIFAR binary files found in {str(root)!r}")
        self._chunks = chunks
        self._offsets = np.cumsum([0] + [len(c) for c in chunks])
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def get_col_names(self) -> list[str]:
        return list(self._columns)

    def _num_rows(self) -> int:
        return int(self._offsets[-1])

    def _record(self, index: int) -> np.ndarray:
        part = int(np.searchsorted(self._offsets, index, side="right") - 1)
        return np.asarray(self._chunks[part][index - int(self._offsets[part])])

    def _image(self, rec: np.ndarray) -> np.ndarray:
        # Stored as 3 planes of 32x32 (CHW, R then G then B); the column is HWC.
        return np.ascontiguousarray(rec[self._label_bytes :].reshape(3, 32, 32).transpose(1, 2, 0))


class Cifar10Dataset(_CifarBase):
    """CIFAR-10 binary files (data_batch_1..5.bin, test_batch.bin); ``image`` 32x32x3, ``label``."""

    _label_bytes = 1
    _files = {
        "train": [f"data_batch_{i}.bin" for i in range(1, 6)],
        "test": ["test_batch.bin"],
    }
    _columns = ["image", "label"]

    def _load(self, index: int) -> tuple[Any, ...]:
        rec = self._record(index)
        return self._image(rec), np.uint32(rec[0])


class Cifar100Dataset(_CifarBase):
    """CIFAR-100 binary files (train.bin, test.bin); ``image``, ``coarse_label``, ``fine_label``."""

    _label_bytes = 2
    _files = {"train": ["train.bin"], "test": ["test.bin"]}
    _columns = ["image", "coarse_label", "fine_label"]

    def _load(self, index: int) -> tuple[Any, ...]:
        rec = self._record(index)
        return self._image(rec), np.uint32(rec[0]), np.uint32(rec[1])
