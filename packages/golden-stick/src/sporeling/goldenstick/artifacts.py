"""Compressed-model folders: what ``sporeling-gs`` writes and reads back.

Every folder has ``meta.json`` (the kind, the model name, the algorithm's config) and an
exported model (see :mod:`.export`) that loads with ``sporeling-core-runtime`` alone: SCOP
folders hold ``pruned.py`` + ``pruned.safetensors``; SimQAT/SLB folders hold
``compressed.py`` + ``compressed.safetensors`` (int8 or bit-packed weights) +
``sporeling_gs_runtime.py`` (the deploy layers).
"""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

from sporeling.core import nn

from .export import export_network
from .quantization import QuantDtype

__all__ = ["save_quantized", "load_compressed", "weights_file"]


def _json_config(config: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, QuantDtype) else v) for k, v in config.items()}


def save_quantized(net: nn.Cell, directory: str, kind: str, model: str, config: dict) -> str:
    """Export a converted (int8 or packed) network and its meta data; returns the weights."""
    paths = export_network(net, directory, "compressed")
    write_meta(directory, kind, model, config)
    return paths["checkpoint"]


def write_meta(directory: str, kind: str, model: str, config: dict) -> None:
    meta = {"kind": kind, "model": model, "config": _json_config(config)}
    with open(os.path.join(directory, "meta.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1)


def weights_file(directory: str) -> str:
    for name in ("pruned.safetensors", "compressed.safetensors"):
        if os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    raise FileNotFoundError(f"no compressed weights in {directory}")


def load_module(path: str) -> Any:
    """The exported description ``path`` as a module (it imports no golden stick)."""
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"load_compressed: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_compressed(directory: str) -> tuple[nn.Cell, dict[str, Any]]:
    """The compressed network of a folder (eval mode) and its meta data."""
    with open(os.path.join(directory, "meta.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    kind = meta["kind"]
    if kind not in ("scop", "simqat", "slb"):
        raise ValueError(f"load_compressed: unknown kind {kind!r} in {directory}/meta.json")
    name = "pruned" if kind == "scop" else "compressed"
    return load_module(os.path.join(directory, f"{name}.py")).load(), meta
