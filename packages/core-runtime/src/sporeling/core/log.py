"""``mindspore.log``: the framework logger, configured by MindSpore's ``GLOG_*`` variables.

``GLOG_v`` sets the level (0 debug, 1 info, 2 warning, the default, 3 error, 4 critical),
``GLOG_logtostderr`` (default 1) logs to standard error, otherwise ``GLOG_log_dir`` names
a directory for ``sporeling.log``. Scripts call ``log.info(...)``, ``log.warning(...)``
and ``log.get_level()`` as with MindSpore. Messages go to the ``sporeling`` logger of the
standard :mod:`logging` module, so applications can also configure it there.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

__all__ = ["debug", "info", "warning", "error", "critical", "get_level", "get_log_config"]

LOGGER_NAME = "sporeling"
_GLOG_TO_LEVEL = {
    "0": logging.DEBUG,
    "1": logging.INFO,
    "2": logging.WARNING,
    "3": logging.ERROR,
    "4": logging.CRITICAL,
}
_LEVEL_TO_GLOG = {v: k for k, v in _GLOG_TO_LEVEL.items()}
_FORMAT = (
    "[%(levelname)s] SPORELING(%(process)d,%(threadName)s):%(asctime)s "
    "[%(filename)s:%(lineno)d] %(message)s"
)
_lock = threading.Lock()
_configured: dict[str, str] | None = None


def _config() -> dict[str, str]:
    level = os.environ.get("GLOG_v", "2")  # noqa: SIM112 - MindSpore's names
    if level not in _GLOG_TO_LEVEL:
        raise ValueError(f"sporeling.core.log: GLOG_v expected one of 0-4, got {level!r}")
    to_stderr = os.environ.get("GLOG_logtostderr", "1")  # noqa: SIM112
    if to_stderr not in ("0", "1"):
        raise ValueError(f"sporeling.core.log: GLOG_logtostderr expected 0 or 1, got {to_stderr!r}")
    config = {"GLOG_v": level, "GLOG_logtostderr": to_stderr}
    if to_stderr == "0":
        folder = os.environ.get("GLOG_log_dir")  # noqa: SIM112
        if not folder:
            raise ValueError(
                "sporeling.core.log: GLOG_logtostderr=0 needs GLOG_log_dir, the log directory"
            )
        config["GLOG_log_dir"] = folder
    return config


def _get_logger() -> logging.Logger:
    """The ``sporeling`` logger, set up from the environment on first use."""
    global _configured
    logger = logging.getLogger(LOGGER_NAME)
    if _configured is not None:
        return logger
    with _lock:
        if _configured is None:
            config = _config()
            logger.setLevel(_GLOG_TO_LEVEL[config["GLOG_v"]])
            if config["GLOG_logtostderr"] == "1":
                handler: logging.Handler = logging.StreamHandler(sys.stderr)
            else:
                os.makedirs(config["GLOG_log_dir"], exist_ok=True)
                handler = logging.FileHandler(os.path.join(config["GLOG_log_dir"], "sporeling.log"))
            handler.setFormatter(logging.Formatter(_FORMAT))
            logger.addHandler(handler)
            _configured = config
    return logger


def _log(level: int, msg: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    kwargs.setdefault("stacklevel", 3)  # the caller's file and line, not this module's
    _get_logger().log(level, msg, *args, **kwargs)


def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at DEBUG (shown with ``GLOG_v=0``)."""
    _log(logging.DEBUG, msg, args, kwargs)


def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at INFO (shown with ``GLOG_v<=1``)."""
    _log(logging.INFO, msg, args, kwargs)


def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at WARNING (shown by default)."""
    _log(logging.WARNING, msg, args, kwargs)


def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at ERROR."""
    _log(logging.ERROR, msg, args, kwargs)


def critical(msg: Any, *args: Any, **kwargs: Any) -> None:
    """Log at CRITICAL."""
    _log(logging.CRITICAL, msg, args, kwargs)


def get_level() -> str:
    """The level as MindSpore's ``GLOG_v`` digit: ``'0'`` debug ... ``'4'`` critical."""
    level = _get_logger().getEffectiveLevel()
    return _LEVEL_TO_GLOG.get(level, "2")


def get_log_config() -> dict[str, str]:
    """The ``GLOG_*`` settings in effect (as MindSpore returns them)."""
    _get_logger()
    assert _configured is not None
    return dict(_configured)
