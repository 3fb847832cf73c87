"""YAML run configs with command-line overrides (``section.key=value``), as the 1.8 suite's
``model``/``parallel_config``/``moe_config``/``recompute_config``/``speed_up``/``optimizer``
sections, plus ``data``, ``train`` and ``generate`` for this suite's runner."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

__all__ = ["load_config", "apply_overrides", "builtin_configs"]


def builtin_configs() -> list[str]:
    """Names of the configs shipped in ``sporeling/transformer/configs``."""
    root = resources.files("sporeling.transformer") / "configs"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


def _read(path_or_name: str) -> dict[str, Any]:
    p = Path(path_or_name)
    if p.exists():
        text = p.read_text()
    else:
        res = resources.files("sporeling.transformer") / "configs" / f"{path_or_name}.yaml"
        if not res.is_file():
            raise FileNotFoundError(
                f"config {path_or_name!r}: no such file and no built-in config of that name "
                f"(built-in: {builtin_configs()})"
            )
        text = res.read_text()
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError(f"config {path_or_name!r}: expected a mapping at the top, got {data!r}")
    return data


def apply_overrides(cfg: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """``["model.num_layers=2", "train.max_iters=10"]``: values parsed as YAML scalars."""
    out = copy.deepcopy(cfg)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r}: expected section.key=value")
        key, raw = item.split("=", 1)
        parts = key.strip().split(".")
        node = out
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise ValueError(f"override {item!r}: {part!r} is not a section")
            node = nxt
        node[parts[-1]] = _scalar(raw)
    return out


def _scalar(raw: str) -> Any:
    """A YAML scalar, with ``1e-3`` read as a number (YAML 1.1 wants ``1.0e-3``)."""
    value = yaml.safe_load(raw)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def load_config(path_or_name: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    return apply_overrides(_read(path_or_name), overrides)
