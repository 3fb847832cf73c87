"""The ``algorithm_config`` schema of MindSpore Reinforcement 0.5 and its validation.

A config is a dict of components. Each component says which class to build (``type``) and
with what (``params``); :func:`validate_config` checks the whole dict before anything is
built, so that a typo or a missing key is reported at once with its path, e.g.
``algorithm_config['actor']['type']: expected a class, got str 'DQNActor'``.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, type_name

REQUIRED_COMPONENTS = (
    "actor",
    "learner",
    "policy_and_network",
    "collect_environment",
    "eval_environment",
)
OPTIONAL_COMPONENTS = ("replay_buffer", "agent")

# key -> (checker name, required?)
_SCHEMA: dict[str, dict[str, tuple[str, bool]]] = {
    "policy_and_network": {"type": ("class", True), "params": ("dict", False)},
    "collect_environment": {
        "type": ("class", True),
        "params": ("dict", False),
        "number": ("positive_int", False),
        "num_parallel": ("positive_int", False),
        "backend": ("env_backend", False),
    },
    "actor": {
        "type": ("class", True),
        "params": ("dict", False),
        "number": ("positive_int", False),
        "policies": ("str_list", False),
        "networks": ("str_list", False),
        "share_env": ("bool", False),
        "environment": ("bool", False),
        "eval_environment": ("bool", False),
    },
    "learner": {
        "type": ("class", True),
        "params": ("dict", False),
        "number": ("positive_int", False),
        "networks": ("str_list", False),
    },
    "replay_buffer": {
        "type": ("class", False),
        "params": ("dict", False),
        "number": ("positive_int", False),
        "capacity": ("positive_int", True),
        "sample_size": ("positive_int", False),
        "data_shape": ("shape_list", True),
        "data_type": ("list", True),
        "multi_type_replaybuffer": ("dict", False),
    },
    "agent": {"number": ("positive_int", False), "type": ("class", False)},
}
_SCHEMA["eval_environment"] = dict(_SCHEMA["collect_environment"])


def _where(*path: str) -> str:
    return "algorithm_config" + "".join(f"[{p!r}]" for p in path)


def _check_value(kind: str, value: Any, where: str) -> None:
    def fail(expected: str) -> None:
        raise ConfigError(f"{where}: expected {expected}, got {type_name(value)} {value!r}")

    if kind == "class":
        if not inspect.isclass(value):
            fail("a class (the component is built as Type(params))")
    elif kind == "dict":
        if not isinstance(value, Mapping):
            fail("a dict")
    elif kind == "positive_int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            fail("an int >= 1")
    elif kind == "env_backend":
        if value not in ("thread", "process"):
            fail("'thread' or 'process' (how MultiEnvironmentWrapper steps the environments)")
    elif kind == "bool":
        if not isinstance(value, bool):
            fail("True or False")
    elif kind == "str_list":
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            fail("a list of attribute names (str)")
    elif kind == "list":
        if not isinstance(value, (list, tuple)):
            fail("a list")
    elif kind == "shape_list":
        ok = isinstance(value, (list, tuple)) and all(
            isinstance(s, (list, tuple))
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in s)
            for s in value
        )
        if not ok:
            fail("a list of shapes, e.g. [(4,), (1,), (1,), (4,)]")
    else:  # pragma: no cover - schema typo
        raise AssertionError(kind)


def _unknown(keys: Any, allowed: Any, where: str) -> None:
    for key in keys:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), list(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(
                f"{where}: unknown key {key!r}{hint} (allowed: {', '.join(sorted(allowed))})"
            )


def validate_config(config: Any) -> dict[str, Any]:
    """Check ``config`` against the schema; return it unchanged, or raise :class:`ConfigError`.

    >>> validate_config({"actor": {}})
    Traceback (most recent call last):
    ...
    sporeling.rl.errors.ConfigError: algorithm_config: missing compulsory key 'learner' ...
    """
    if not isinstance(config, Mapping):
        raise ConfigError(f"algorithm_config: expected a dict, got {type_name(config)}")
    for name in REQUIRED_COMPONENTS:
        if name not in config:
            raise ConfigError(
                f"algorithm_config: missing compulsory key {name!r} (compulsory: "
                f"{', '.join(REQUIRED_COMPONENTS)}; optional: {', '.join(OPTIONAL_COMPONENTS)})"
            )
    _unknown(config, (*REQUIRED_COMPONENTS, *OPTIONAL_COMPONENTS), "algorithm_config")
    for name, component in config.items():
        where = _where(name)
        if not isinstance(component, Mapping):
            raise ConfigError(f"{where}: expected a dict, got {type_name(component)}")
        schema = _SCHEMA[name]
        _unknown(component, schema, where)
        for key, (kind, required) in schema.items():
            if key in component:
                _check_value(kind, component[key], _where(name, key))
            elif required:
                raise ConfigError(f"{where}: missing compulsory key {key!r}")
    buffer = config.get("replay_buffer")
    if buffer is not None:
        if len(buffer["data_shape"]) != len(buffer["data_type"]):
            raise ConfigError(
                f"{_where('replay_buffer')}: data_shape has {len(buffer['data_shape'])} entries "
                f"but data_type has {len(buffer['data_type'])}; give one dtype per shape"
            )
        from sporeling.core import dtype as _dtype

        for i, t in enumerate(buffer["data_type"]):
            try:
                _dtype.to_dtype(t)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"{_where('replay_buffer', 'data_type')}[{i}]: expected a dtype such as "
                    f"sporeling.core.float32, got {t!r}"
                ) from None
    return dict(config)
