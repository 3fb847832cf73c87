"""The ``set_context`` keys of MindSpore 1.8 (and 2.x) that have nothing to act on here.

``set_context`` accepts each of them, stores the value (``get_context`` returns it) and
warns once per key that it has no effect, so a ported script runs and says what it lost.
Keys in :data:`ALREADY` describe what Sporeling always does (eager ops are synchronous,
so ``pynative_synchronize=True`` is the behaviour already): accepted without a warning.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["NO_EFFECT", "ALREADY", "accept"]

NO_EFFECT: dict[str, Any] = {
    # graphs, dumps and profiling (MindSpore's own tooling)
    "save_graphs": False,
    "save_graphs_path": ".",
    "enable_dump": False,
    "save_dump_path": ".",
    "print_file_path": "",
    "env_config_path": "",
    "enable_profiling": False,
    "profiling_options": "",
    "reserve_class_name_in_scope": True,
    "precompile_only": False,
    "enable_compile_cache": False,
    "compile_cache_path": ".",
    "load_compile_cache": False,
    "support_binary": False,
    "check_bprop": False,
    "max_call_depth": 1000,
    "graph_kernel_flags": "",
    "auto_tune_mode": "NO_TUNE",
    "aoe_tune_mode": "",
    "jit_syntax_level": "",
    "jit_config": None,
    # memory and device knobs of Ascend/GPU runtimes
    "max_device_memory": "1024GB",
    "variable_memory_max_size": "",
    "mempool_block_size": "1GB",
    "memory_optimize_level": "O0",
    "memory_offload": "OFF",
    "enable_reduce_precision": True,
    "disable_format_transform": False,
    "op_timeout": 1800,
    "runtime_num_threads": 30,
    "inter_op_parallel_num": 0,
    "enable_sparse": False,
    "grad_for_scalar": False,
    "deterministic": "OFF",
    "ascend_config": None,
    "gpu_config": None,
    "enable_auto_mixed_precision": False,
    "variable_memory_max_size_mb": 0,
}

ALREADY: dict[str, Any] = {"pynative_synchronize": True}

_WARNED: set[str] = set()


def accept(key: str, value: Any) -> None:
    """Warn once for a key without effect (setting an ``ALREADY`` key to True is silent)."""
    if key in ALREADY and value == ALREADY[key]:
        return
    if key in _WARNED:
        return
    _WARNED.add(key)
    what = (
        f"{key}={value!r} is accepted but has no effect in Sporeling"
        if key in NO_EFFECT
        else f"{key}={value!r}: Sporeling always runs as with {key}={ALREADY[key]!r}"
    )
    warnings.warn(f"set_context: {what}", UserWarning, stacklevel=3)
