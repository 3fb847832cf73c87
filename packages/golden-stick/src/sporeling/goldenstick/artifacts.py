"""Compressed-model folders: what ``sporeling-gs`` writes and reads back.

Every folder has ``meta.json`` (the kind, the model name, the algorithm's config). SCOP
folders hold ``pruned.py`` + ``pruned.safetensors`` (plain Sporeling, see
:mod:`.export`); SimQAT/SLB folders hold ``compressed.safetensors`` (int8 or bit-packed
weights), rebuilt here from the model and the config.
"""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

from sporeling.core import load_checkpoint, load_param_into_net, nn, save_checkpoint

from .models import build_model
from .quantization import QuantDtype, SimulatedQuantizationAwareTraining, SlbQuantAwareTraining
from .quantization.int8 import convert_to_int8

__all__ = ["save_quantized", "load_compressed", "weights_file"]


def _json_config(config: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, QuantDtype) else v) for k, v in config.items()}


def _from_json(config: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (QuantDtype(v) if isinstance(v, str) and v in QuantDtype.__members__ else v)
        for k, v in config.items()
    }


def save_quantized(net: nn.Cell, directory: str, kind: str, model: str, config: dict) -> str:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "compressed.safetensors")
    save_checkpoint(net, path)
    meta = {"kind": kind, "model": model, "config": _json_config(config)}
    with open(os.path.join(directory, "meta.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1)
    return path


def write_meta(directory: str, kind: str, model: str, config: dict) -> None:
    meta = {"kind": kind, "model": model, "config": _json_config(config)}
    with open(os.path.join(directory, "meta.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1)


def weights_file(directory: str) -> str:
    for name in ("pruned.safetensors", "compressed.safetensors"):
        if os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    raise FileNotFoundError(f"no compressed weights in {directory}")


def load_compressed(directory: str) -> tuple[nn.Cell, dict[str, Any]]:
    """The compressed network of a folder (eval mode) and its meta data."""
    with open(os.path.join(directory, "meta.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    kind = meta["kind"]
    if kind == "scop":
        spec = importlib.util.spec_from_file_location(
            "pruned", os.path.join(directory, "pruned.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.load(), meta
    config = _from_json(meta["config"])
    net = build_model(meta["model"])
    if kind == "simqat":
        net = convert_to_int8(SimulatedQuantizationAwareTraining(config).apply(net), strict=False)
    elif kind == "slb":
        algo = SlbQuantAwareTraining(config)
        net = algo.convert(algo.apply(net))
    else:
        raise ValueError(f"load_compressed: unknown kind {kind!r} in {directory}/meta.json")
    missing, _ = load_param_into_net(
        net, load_checkpoint(os.path.join(directory, "compressed.safetensors"))
    )
    if missing:
        raise ValueError(f"load_compressed: parameters missing from the checkpoint: {missing}")
    net.set_train(False)
    return net, meta
