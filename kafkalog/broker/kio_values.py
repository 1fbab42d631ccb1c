"""Building kio's response dataclasses from plain values, at whichever version the request came in.

kio (Aiven's generated protocol classes) has one module per API version, each with its own dataclasses whose
fields are that version's.  A coordinator answers every version with the same values, so :func:`build` takes a
mapping of field names to plain values (``int`` milliseconds, ``int`` error codes, ``str``, ``bytes``, lists of
mappings for nested structs) and keeps the fields the version's class has: a value for a field the version lacks
is dropped (Kafka's generated ``write`` drops it too when it is the default; the callers pass only what Kafka
sets), a field not given takes its kio default, and ``throttle_time`` is 0 unless given.  Each value is
converted to the field's kio type (``i32``, ``i32Timedelta``, ``ErrorCode``, nested dataclasses, tuples).
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from collections.abc import Mapping
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64, i64Timedelta

__all__ = ["build", "field_names", "ms"]

T = TypeVar("T")

_CONVERT: dict[str, Any] = {
    "int8": i8, "int16": i16, "int32": i32, "int64": i64,
    "timedelta_i32": lambda v: i32Timedelta.parse(datetime.timedelta(milliseconds=int(v))),
    "timedelta_i64": lambda v: i64Timedelta.parse(datetime.timedelta(milliseconds=int(v))),
    "error_code": ErrorCode,
    "bool": bool, "string": str, "bytes": bytes, "records": bytes,
    "uuid": lambda v: v if isinstance(v, uuid.UUID) else uuid.UUID(str(v)),
}


def ms(value: datetime.timedelta | int) -> int:
    """A kio ``i32Timedelta`` / ``i64Timedelta`` (or a plain number) as whole milliseconds."""
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    return int(value)


def field_names(cls: type[Any]) -> set[str]:
    """The fields a kio class (one version of one message or struct) has."""
    return {f.name for f in dataclasses.fields(cls)}


def _element_class(field_type: Any) -> Any:
    """The element type of ``tuple[X, ...]`` (or ``tuple[X, ...] | None``)."""
    if isinstance(field_type, types.UnionType) or typing.get_origin(field_type) is typing.Union:
        field_type = next(a for a in typing.get_args(field_type) if a is not type(None))
    return typing.get_args(field_type)[0]


def _is_tuple(field_type: Any) -> bool:
    if isinstance(field_type, types.UnionType) or typing.get_origin(field_type) is typing.Union:
        return any(typing.get_origin(a) is tuple for a in typing.get_args(field_type))
    return typing.get_origin(field_type) is tuple


def _convert(f: dataclasses.Field[Any], value: Any) -> Any:
    if value is None:
        return None
    if _is_tuple(f.type):
        element = _element_class(f.type)
        if dataclasses.is_dataclass(element):
            return tuple(build(element, item) for item in value)  # type: ignore[arg-type]
        convert = _CONVERT[f.metadata["kafka_type"]]
        return tuple(convert(item) for item in value)
    if dataclasses.is_dataclass(f.type):
        return build(f.type, value)  # type: ignore[arg-type]
    return _CONVERT[f.metadata["kafka_type"]](value)


def build(cls: type[T], values: Mapping[str, Any]) -> T:
    """An instance of the kio class ``cls`` holding ``values`` (module docstring)."""
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in values:
            kwargs[f.name] = _convert(f, values[f.name])
        elif f.name == "throttle_time":
            kwargs[f.name] = _convert(f, 0)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            if _is_tuple(f.type):
                kwargs[f.name] = ()
            elif f.metadata.get("kafka_type") == "string" and (
                    isinstance(f.type, types.UnionType) and type(None) in typing.get_args(f.type)):
                kwargs[f.name] = None
    return cls(**kwargs)
