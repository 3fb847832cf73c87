"""``set_auto_parallel_context``: how a job is split over devices (MindSpore's keys).

The settings are plain values read by the parallel machinery: ``TrainOneStepCell`` adds a
gradient reducer under ``DATA_PARALLEL``/``HYBRID_PARALLEL``, optimizers shard their state
with ``enable_parallel_optimizer``, ``comm_fusion`` bounds the gradient buckets.

>>> from sporeling.core import set_auto_parallel_context, get_auto_parallel_context, ParallelMode
>>> set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True)
>>> get_auto_parallel_context("parallel_mode")
'data_parallel'
>>> reset_auto_parallel_context()
"""

from __future__ import annotations

import copy
from typing import Any

from ..errors import check_bool, check_int

__all__ = [
    "ParallelMode",
    "set_auto_parallel_context",
    "get_auto_parallel_context",
    "reset_auto_parallel_context",
]


class ParallelMode:
    """The values of ``parallel_mode``."""

    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"
    MODE_LIST = [STAND_ALONE, DATA_PARALLEL, HYBRID_PARALLEL, SEMI_AUTO_PARALLEL, AUTO_PARALLEL]


_SEARCH_MODES = ("recursive_programming", "dynamic_programming", "sharding_propagation")
_FUSION_KEYS = ("allreduce", "allgather", "reducescatter")
_FUSION_MODES = ("auto", "size", "index")

_DEFAULTS: dict[str, Any] = {
    "parallel_mode": ParallelMode.STAND_ALONE,
    "device_num": 1,
    "global_rank": 0,
    "gradients_mean": False,
    "gradient_fp32_sync": True,
    "loss_repeated_mean": True,
    "full_batch": False,
    "dataset_strategy": "data_parallel",
    "search_mode": "dynamic_programming",
    "auto_parallel_search_mode": "dynamic_programming",
    "parameter_broadcast": False,
    "strategy_ckpt_load_file": "",
    "strategy_ckpt_save_file": "",
    "pipeline_stages": 1,
    "grad_accumulation_step": 1,
    "enable_parallel_optimizer": False,
    "parallel_optimizer_config": {
        "gradient_accumulation_shard": True,
        "parallel_optimizer_threshold": 64,
    },
    "enable_alltoall": False,
    "all_reduce_fusion_config": [],
    "comm_fusion": {},
    "optimizer_weight_shard_size": -1,
}

_SETTINGS: dict[str, Any] = copy.deepcopy(_DEFAULTS)
_EXPLICIT: set[str] = set()  # keys the user set (device_num/global_rank default to the job)
_JOB = {"rank": 0, "size": 1, "inited": False}


def _err(key: str, value: Any, expected: str, exc: type[Exception] = ValueError) -> Exception:
    return exc(f"set_auto_parallel_context: argument '{key}' expected {expected}, got {value!r}")


def _check_bool(key: str, value: Any) -> bool:
    return check_bool("set_auto_parallel_context", key, value)


def _check_int(key: str, value: Any, lo: int, hi: int) -> int:
    return check_int("set_auto_parallel_context", key, value, lo, hi)


def _check_fusion(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _err("comm_fusion", value, "a dict such as {'allreduce': {'mode': 'size', "
                   "'config': 32}}", TypeError)  # fmt: skip
    out = {}
    for k, v in value.items():
        if k not in _FUSION_KEYS:
            raise _err("comm_fusion", value, f"keys among {list(_FUSION_KEYS)}")
        if not isinstance(v, dict) or v.get("mode", "auto") not in _FUSION_MODES:
            raise _err("comm_fusion", value, f"{k!r}: {{'mode': one of {list(_FUSION_MODES)}, "
                       "'config': ...}")  # fmt: skip
        mode = v.get("mode", "auto")
        cfg = v.get("config")
        if mode == "size" and (
            isinstance(cfg, bool) or not isinstance(cfg, (int, float)) or cfg <= 0
        ):
            raise _err("comm_fusion", value, f"{k!r} in 'size' mode: a positive 'config' in MB")
        if mode == "index" and (
            not isinstance(cfg, (list, tuple)) or not all(isinstance(i, int) for i in cfg)
        ):
            raise _err("comm_fusion", value, f"{k!r} in 'index' mode: a list of int indices")
        out[k] = {"mode": mode, "config": cfg}
    return out


def _check(key: str, value: Any) -> Any:
    if key == "parallel_mode":
        if not isinstance(value, str) or value.lower() not in ParallelMode.MODE_LIST:
            raise _err(key, value, f"one of {ParallelMode.MODE_LIST}")
        return value.lower()
    if key == "device_num":
        return _check_int(key, value, 1, 4096)
    if key == "global_rank":
        return _check_int(key, value, 0, 4095)
    if key in ("pipeline_stages", "grad_accumulation_step"):
        return _check_int(key, value, 1, 1 << 20)
    if key == "optimizer_weight_shard_size":
        if isinstance(value, bool) or not isinstance(value, int) or value == 0 or value < -1:
            raise _err(key, value, "-1 (the whole data-parallel group) or a positive int")
        return value
    if key in ("search_mode", "auto_parallel_search_mode"):
        if value not in _SEARCH_MODES:
            raise _err(key, value, f"one of {list(_SEARCH_MODES)}")
        raise ValueError(
            f"set_auto_parallel_context: argument {key!r} ({value!r}) is not supported: "
            "Sporeling does no strategy search. Under AUTO_PARALLEL and SEMI_AUTO_PARALLEL, ops "
            "without a shard strategy run data parallel (weight gradients averaged over the "
            "ranks); give strategies with Primitive.shard(...) and leave search_mode unset"
        )
    if key == "dataset_strategy":
        if value not in ("data_parallel", "full_batch") and not isinstance(value, tuple):
            raise _err(key, value, "'data_parallel', 'full_batch' or a tuple of shard tuples")
        return value
    if key in ("strategy_ckpt_load_file", "strategy_ckpt_save_file"):
        if not isinstance(value, str):
            raise _err(key, value, "a path (str)", TypeError)
        return value
    if key == "parallel_optimizer_config":
        if not isinstance(value, dict):
            raise _err(key, value, "a dict", TypeError)
        merged = dict(_SETTINGS[key])
        for k, v in value.items():
            if k == "gradient_accumulation_shard":
                merged[k] = _check_bool(f"{key}.{k}", v)
            elif k == "parallel_optimizer_threshold":
                merged[k] = _check_int(f"{key}.{k}", v, 0, 1 << 30)
            else:
                raise _err(key, value, "keys 'gradient_accumulation_shard' and "
                           "'parallel_optimizer_threshold'")  # fmt: skip
        return merged
    if key == "all_reduce_fusion_config":
        if not isinstance(value, list) or not all(isinstance(i, int) for i in value):
            raise _err(key, value, "a list of int parameter indices", TypeError)
        return list(value)
    if key == "comm_fusion":
        return _check_fusion(value)
    return _check_bool(key, value)


def set_auto_parallel_context(**kwargs: Any) -> None:
    """Set parallel settings by MindSpore's keys (see the module docstring).

    Unknown keys raise ``ValueError`` listing the known ones.
    """
    checked = {}
    for key, value in kwargs.items():
        if key not in _DEFAULTS:
            raise ValueError(
                f"set_auto_parallel_context: unknown argument {key!r}; known arguments are "
                f"{sorted(_DEFAULTS)}"
            )
        checked[key] = _check(key, value)
    if "full_batch" in checked and "dataset_strategy" not in checked:
        checked["dataset_strategy"] = "full_batch" if checked["full_batch"] else "data_parallel"
    if (
        _JOB["inited"]
        and "device_num" in checked
        and checked.get("parallel_mode", _SETTINGS["parallel_mode"]) == "data_parallel"
        and checked["device_num"] != _JOB["size"]
    ):
        raise ValueError(
            f"set_auto_parallel_context: argument 'device_num' expected the number of "
            f"processes in the job ({_JOB['size']}) for data_parallel, got {checked['device_num']}"
        )
    _SETTINGS.update(checked)
    _EXPLICIT.update(checked)


def get_auto_parallel_context(attr_key: str) -> Any:
    """One setting by name; ``device_num``/``global_rank`` default to the job's size/rank."""
    if attr_key not in _DEFAULTS:
        raise ValueError(
            f"get_auto_parallel_context: unknown argument {attr_key!r}; known arguments are "
            f"{sorted(_DEFAULTS)}"
        )
    if attr_key == "device_num" and attr_key not in _EXPLICIT:
        return _JOB["size"]
    if attr_key == "global_rank" and attr_key not in _EXPLICIT:
        return _JOB["rank"]
    return copy.deepcopy(_SETTINGS[attr_key])


def reset_auto_parallel_context() -> None:
    """Every setting back to its default."""
    _SETTINGS.clear()
    _SETTINGS.update(copy.deepcopy(_DEFAULTS))
    _EXPLICIT.clear()


def _on_init(rank: int, size: int) -> None:
    """Called by ``communication.init``: the job's rank and size become the defaults."""
    _JOB.update(rank=rank, size=size, inited=True)


def snapshot() -> dict[str, Any]:
    """Every setting (for the cross-rank consistency check)."""
    return {k: get_auto_parallel_context(k) for k in sorted(_DEFAULTS) if k != "global_rank"}
