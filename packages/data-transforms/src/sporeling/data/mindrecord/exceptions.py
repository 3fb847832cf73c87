"""MindSpore's MindRecord exception classes (``mindspore.mindrecord.ParamValueError``, ...).

MindSpore's tests and scripts catch these by name, so ``FileWriter`` and ``MindPage`` raise
them for bad arguments and schemas, with MindSpore's wording followed by what Sporeling adds
(the argument, the value, what was expected). Each is also the built-in exception
Sporeling's other bad-input errors use (ValueError / TypeError / RuntimeError), so code that
catches those keeps working.
"""

from __future__ import annotations

__all__ = [
    "MindRecordException",
    "ParamValueError",
    "ParamTypeError",
    "MRMInvalidSchemaError",
    "MRMDefineIndexError",
    "MRMGetMetaError",
]


class MindRecordException(Exception):
    """Base class of MindSpore's MindRecord errors."""


class ParamValueError(MindRecordException, ValueError):
    """An argument with a bad value (MindSpore: "Invalid parameter value. ...")."""


class ParamTypeError(MindRecordException, TypeError):
    """An argument of the wrong type (MindSpore: "Invalid parameter type. ...")."""


class MRMInvalidSchemaError(MindRecordException, ValueError):
    """A schema ``add_schema`` refuses (MindSpore: "Schema format is error. ...")."""


class MRMDefineIndexError(MindRecordException, ValueError):
    """An index field ``add_index`` refuses (MindSpore: "Failed to define index field. ...")."""


class MRMGetMetaError(MindRecordException, RuntimeError):
    """A call that needs the schema before ``add_schema`` (MindSpore: "Failed to get meta
    info. ...")."""
