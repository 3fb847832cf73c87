"""Annotated image sources: ManifestDataset, VOCDataset, CocoDataset (MindSpore's columns).

Images come as their file's bytes (1-D uint8) or, with ``decode=True``, RGB HWC uint8.
Annotations are parsed once when the dataset is built (JSON with :mod:`json`, VOC XML with
:mod:`xml.etree.ElementTree`, which does not fetch external entities); a file that does not
parse is an error naming it.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.sources import MappableSource
from .vision_sources import _check_dir, decode_image, read_file

__all__ = ["ManifestDataset", "VOCDataset", "CocoDataset"]


def _image(path: Path, decode: bool) -> np.ndarray:
    data = read_file(path)
    return decode_image(data, path) if decode else data


def _no_cache(where: str, **kwargs: Any) -> None:
    for name, value in kwargs.items():
        if value is not None:
            raise ValueError(f"{where}: argument '{name}' is not supported (pass None)")


class ManifestDataset(MappableSource):
    """Rows of a manifest file: one JSON object per line with ``source`` (the image),
    ``usage`` and ``annotation`` (a list of ``{"name": class}``); columns ``image`` and
    ``label`` (the int32 id of the row's class, or a 1-D array of ids for several). Ids
    come from ``class_indexing`` or, by default, the sorted class names of the rows of
    ``usage``.
    """

    def __init__(
        self,
        dataset_file: str,
        usage: str = "train",
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        class_indexing: dict[str, int] | None = None,
        decode: bool = False,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        where = type(self).__name__
        _no_cache(where, cache=cache)
        if not isinstance(dataset_file, (str, os.PathLike)) or not os.path.isfile(dataset_file):
            raise ValueError(f"{where}: argument 'dataset_file' {dataset_file!r} is not a file")
        if usage not in ("train", "eval", "inference"):
            raise ValueError(
                f"{where}: argument 'usage' expected 'train', 'eval' or 'inference', got {usage!r}"
            )
        rows: list[tuple[Path, list[str]]] = []
        folder = Path(dataset_file).parent
        with open(dataset_file, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                    source = item["source"]
                    names = [a["name"] for a in item.get("annotation", [])]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise ValueError(
                        f"{where}: {dataset_file} line {lineno} is not a manifest entry: {exc}"
                    ) from None
                if item.get("usage", "train").lower() != usage:
                    continue
                path = Path(source)
                rows.append((path if path.is_absolute() else folder / path, names))
        if class_indexing is None:
            names = sorted({n for _, ns in rows for n in ns})
            class_indexing = {n: i for i, n in enumerate(names)}
        elif not isinstance(class_indexing, dict):
            raise TypeError(f"{where}: argument 'class_indexing' expected a dict {{name: id}}")
        unknown = sorted({n for _, ns in rows for n in ns} - set(class_indexing))
        if unknown:
            raise ValueError(f"{where}: classes {unknown} are not in class_indexing")
        self.class_indexing = dict(class_indexing)
        self._rows = rows
        self.decode = bool(decode)
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def get_col_names(self) -> list[str]:
        return ["image", "label"]

    def get_class_indexing(self) -> dict[str, int]:
        return dict(self.class_indexing)

    def num_classes(self) -> int:
        return len(self.class_indexing)

    def _num_rows(self) -> int:
        return len(self._rows)

    def _origin(self, index: int) -> Any:
        return str(self._rows[index][0])

    def _load(self, index: int) -> tuple[Any, ...]:
        path, names = self._rows[index]
        ids = np.array([self.class_indexing[n] for n in names], np.int32)
        label = ids[0] if len(ids) == 1 else ids  # MindSpore: a scalar for one class
        return _image(path, self.decode), np.asarray(label)


def _voc_objects(path: Path) -> list[dict[str, Any]]:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ValueError(f"VOCDataset: cannot parse {path}: {exc}") from None
    out = []
    for obj in root.iter("object"):
        name = obj.findtext("name")
        box = obj.find("bndbox")
        if name is None or box is None:
            raise ValueError(f"VOCDataset: {path}: an <object> lacks <name> or <bndbox>")
        try:
            xmin, ymin, xmax, ymax = (
                float(box.findtext(k, "")) for k in ("xmin", "ymin", "xmax", "ymax")
            )
        except ValueError:
            raise ValueError(f"VOCDataset: {path}: a <bndbox> has a non-number") from None
        if not (xmin > 0 and ymin > 0 and xmax > xmin and ymax > ymin):
            raise ValueError(
                f"VOCDataset: {path}: invalid bndbox {[xmin, ymin, xmax, ymax]} (coordinates are "
                "1-based: xmin, ymin > 0 and xmax > xmin, ymax > ymin)"
            )
        out.append(
            {
                "name": name.strip(),
                "bbox": [xmin, ymin, xmax - xmin, ymax - ymin],
                "difficult": int(obj.findtext("difficult", "0") or 0),
                "truncated": int(obj.findtext("truncated", "0") or 0),
            }
        )
    return out


class VOCDataset(MappableSource):
    """PASCAL VOC: ``task='Segmentation'`` gives ``image``, ``target`` (the class PNG);
    ``task='Detection'`` gives ``image``, ``bbox`` (float32 [N, 4]: xmin, ymin, width,
    height), ``label``, ``difficult``, ``truncate`` (uint32 [N, 1]). ``usage`` names the
    list in ``ImageSets/<Segmentation|Main>/<usage>.txt``. Detection ids come from
    ``class_indexing`` or the sorted names in the annotations.
    """

    def __init__(
        self,
        dataset_dir: str,
        task: str = "Segmentation",
        usage: str = "train",
        class_indexing: dict[str, int] | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        decode: bool = False,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
        extra_metadata: bool = False,
        decrypt: Any = None,
    ) -> None:
        where = type(self).__name__
        _no_cache(where, cache=cache, decrypt=decrypt)
        root = _check_dir(where, dataset_dir)
        if task not in ("Segmentation", "Detection"):
            raise ValueError(
                f"{where}: argument 'task' expected 'Segmentation' or 'Detection', got {task!r}"
            )
        if task == "Segmentation" and class_indexing is not None:
            raise ValueError(f"{where}: class_indexing is only for task='Detection'")
        listing = (
            root
            / "ImageSets"
            / ("Segmentation" if task == "Segmentation" else "Main")
            / f"{usage}.txt"
        )
        if not listing.is_file():
            raise ValueError(f"{where}: {listing} does not exist (usage={usage!r})")
        ids = [line.strip() for line in listing.read_text().splitlines() if line.strip()]
        self.task, self.decode, self._root, self._ids = task, bool(decode), root, ids
        self.extra_metadata = bool(extra_metadata)
        if task == "Detection":
            self._objects = [_voc_objects(root / "Annotations" / f"{i}.xml") for i in ids]
            names = sorted({o["name"] for objs in self._objects for o in objs})
            if class_indexing is None:
                class_indexing = {n: k for k, n in enumerate(names)}
            missing = [n for n in names if n not in class_indexing]
            if missing:
                raise ValueError(f"{where}: classes {missing} are not in class_indexing")
            self.class_indexing = dict(class_indexing)
        else:
            self.class_indexing = {}
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def get_col_names(self) -> list[str]:
        if self.task == "Segmentation":
            return ["image", "target"]
        return ["image", "bbox", "label", "difficult", "truncate"]

    def get_class_indexing(self) -> dict[str, int]:
        if self.task != "Detection":
            raise RuntimeError("VOCDataset.get_class_indexing: only for task='Detection'")
        return dict(self.class_indexing)

    def _num_rows(self) -> int:
        return len(self._ids)

    def _origin(self, index: int) -> Any:
        return str(self._root / "JPEGImages" / f"{self._ids[index]}.jpg")

    def _load(self, index: int) -> tuple[Any, ...]:
        image = _image(self._root / "JPEGImages" / f"{self._ids[index]}.jpg", self.decode)
        if self.task == "Segmentation":
            target = _image(
                self._root / "SegmentationClass" / f"{self._ids[index]}.png", self.decode
            )
            return image, target
        objs = self._objects[index]
        bbox = np.array([o["bbox"] for o in objs], np.float32).reshape(-1, 4)
        label = np.array([[self.class_indexing[o["name"]]] for o in objs], np.uint32).reshape(-1, 1)
        difficult = np.array([[o["difficult"]] for o in objs], np.uint32).reshape(-1, 1)
        truncate = np.array([[o["truncated"]] for o in objs], np.uint32).reshape(-1, 1)
        return image, bbox, label, difficult, truncate


_COCO_COLUMNS = {
    "Detection": ["image", "bbox", "category_id", "iscrowd"],
    "Stuff": ["image", "segmentation", "iscrowd"],
    "Keypoint": ["image", "keypoints", "num_keypoints"],
    "Panoptic": ["image", "bbox", "category_id", "iscrowd", "area"],
}


class CocoDataset(MappableSource):
    """COCO: images of ``annotation_file``'s ``images`` list (file order) with their
    annotations. Columns by ``task``: Detection ``bbox`` (float32 [N, 4]), ``category_id``,
    ``iscrowd`` (uint32 [N, 1]); Stuff ``segmentation`` (float32 [N, L], polygons padded
    with -1), ``iscrowd``; Keypoint ``keypoints`` (float32 [N, 51]), ``num_keypoints``;
    Panoptic (``segments_info``) ``bbox``, ``category_id``, ``iscrowd``, ``area``.
    """

    def __init__(
        self,
        dataset_dir: str,
        annotation_file: str,
        task: str = "Detection",
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        decode: bool = False,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
        extra_metadata: bool = False,
        decrypt: Any = None,
    ) -> None:
        where = type(self).__name__
        _no_cache(where, cache=cache, decrypt=decrypt)
        root = _check_dir(where, dataset_dir)
        if task not in _COCO_COLUMNS:
            raise ValueError(
                f"{where}: argument 'task' expected one of {list(_COCO_COLUMNS)}, got {task!r}"
            )
        try:
            with open(annotation_file, encoding="utf-8") as f:
                doc = json.load(f)
            images = doc["images"]
            per_image: dict[Any, list[dict[str, Any]]] = {img["id"]: [] for img in images}
            if task == "Panoptic":
                for ann in doc["annotations"]:
                    per_image.setdefault(ann["image_id"], []).extend(ann.get("segments_info", []))
            else:
                for ann in doc.get("annotations", []):
                    per_image.setdefault(ann["image_id"], []).append(ann)
            self._files = [img["file_name"] for img in images]
            self._anns = [per_image[img["id"]] for img in images]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{where}: cannot read COCO annotations {annotation_file}: {exc}"
            ) from None
        self._categories = {c["id"]: c.get("name", "") for c in doc.get("categories", [])}
        self.task, self.decode, self._root = task, bool(decode), root
        super().__init__(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def get_col_names(self) -> list[str]:
        return list(_COCO_COLUMNS[self.task])

    def get_class_indexing(self) -> dict[str, list[int]]:
        return {name: [cid, cid] for cid, name in self._categories.items()}

    def _num_rows(self) -> int:
        return len(self._files)

    def _origin(self, index: int) -> Any:
        return str(self._root / self._files[index])

    def _load(self, index: int) -> tuple[Any, ...]:
        image = _image(self._root / self._files[index], self.decode)
        anns = self._anns[index]

        def column(key: str, dtype: Any, width: int = 1) -> np.ndarray:
            return np.array([a.get(key, 0) for a in anns], dtype).reshape(-1, width)

        if self.task in ("Detection", "Panoptic"):
            bbox = np.array([a["bbox"] for a in anns], np.float32).reshape(-1, 4)
            out = [image, bbox, column("category_id", np.uint32), column("iscrowd", np.uint32)]
            if self.task == "Panoptic":
                out.append(column("area", np.uint32))
            return tuple(out)
        if self.task == "Keypoint":
            kp = np.array([a["keypoints"] for a in anns], np.float32).reshape(-1, 51)
            return image, kp, column("num_keypoints", np.uint32)
        polygons = []
        for a in anns:
            seg = a.get("segmentation", [])
            if isinstance(seg, dict):  # run-length encoded (iscrowd): its counts
                polygons.append([float(v) for v in seg.get("counts", [])])
            else:
                polygons.append([float(v) for poly in seg for v in poly])
        width = max((len(p) for p in polygons), default=0)
        seg_arr = np.full((len(polygons), width), -1.0, np.float32)
        for k, p in enumerate(polygons):
            seg_arr[k, : len(p)] = p
        return image, seg_arr, column("iscrowd", np.uint32)
