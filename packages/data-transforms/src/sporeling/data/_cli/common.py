"""Helpers shared by the `sporeling-data` subcommands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from sporeling.data.cli import ERROR, CliError

SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def open_target(target: str) -> tuple[Any, dict[str, Any] | None, str]:
    """(dataset, spec or None, description) for a spec file or a data path."""
    from sporeling.data._cli import spec as specs

    if Path(target).suffix.lower() in SPEC_SUFFIXES:
        spec = specs.load_spec(target)
        return specs.build(spec), spec, f"spec {target}"
    kind, ds = specs.source_for_path(target)
    return ds, None, f"{kind} at {target}"


def open_spec(target: str) -> tuple[Any, dict[str, Any]]:
    from sporeling.data._cli import spec as specs

    if Path(target).suffix.lower() not in SPEC_SUFFIXES:
        raise CliError(f"expected a spec file (.yaml, .yml or .json), got {target!r}")
    spec = specs.load_spec(target)
    return specs.build(spec), spec


def is_batched(spec: dict[str, Any] | None) -> bool:
    steps = (spec or {}).get("pipeline") or []
    return any(isinstance(s, dict) and "batch" in s for s in steps)


def epochs(ds: Any) -> Any:
    """Rows (lists of NumPy arrays) epoch after epoch; raises if an epoch yields nothing."""
    it = ds.create_tuple_iterator(output_numpy=True, num_epochs=-1)
    while True:
        seen = False
        for row in it:
            seen = True
            yield [np.asarray(v) for v in row]
        if not seen:
            raise CliError("the pipeline produced no rows (empty dataset?)", ERROR)


def describe(value: np.ndarray) -> str:
    """A one-line summary of one column value."""
    if value.dtype.kind in "SUO":
        text = value.item() if value.ndim == 0 else value.tolist()
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        s = repr(text)
        return s if len(s) <= 70 else s[:67] + "..."
    if value.size <= 8:
        return f"{value.tolist()!r} ({value.dtype})"
    v = value.astype(np.float64)
    return (
        f"shape {tuple(value.shape)} {value.dtype}, min {v.min():.4g} max {v.max():.4g} "
        f"mean {v.mean():.4g}"
    )


def emit(data: dict[str, Any], as_json: bool, text: str) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n" if as_json else text)
