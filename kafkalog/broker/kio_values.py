"""Building kio's message dataclasses from field values, at whichever version a request came in.

kio (Aiven's generated protocol classes) has one module per API version, each with its own dataclasses whose
fields are that version's.  A handler answers every version from the same values, so :func:`build` is the one way
the broker makes a kio entity (a request, a response, or a struct nested in one: ``build(cls, name=value, ...)``),
with one contract:

- **only the version's fields**: a value for a field the class has not got is dropped (Kafka's generated
  ``write`` writes only the fields of the version it writes; the callers pass only what Kafka sets);
- **defaults**: a field not given takes its kio default; where kio has none, ``throttle_time`` is 0, an array is
  empty and a nullable string is ``None`` (any other field without a value is the caller's mistake, a
  ``TypeError`` from the class);
- **kio types from plain values**: each value is converted to the field's kio type when it is not one already:
  ``int`` to ``i32`` and its kin (a value out of the type's range is a ``TypeError``), ``int`` milliseconds to
  ``i32Timedelta``/``i64Timedelta``, ``int`` to ``ErrorCode``, a string to a ``uuid.UUID``, a mapping to the
  nested dataclass and an iterable to the field's tuple; a value already of the field's type (a nested entity
  built before, a ``timedelta``, an ``ErrorCode``) is kept as it is, so that a record set's bytes are never
  copied.

A second builder, :func:`kafka_data`, answers a different need: an entity as Kafka's generated ``...Data`` class is
after ``new`` and a few setters, every field not given at the default Kafka's generator gives it (the schema's
default, else 0, ``""``, false, an empty array, a zero UUID, null records).  It takes kio values as they are,
converting nothing; the error responses (:mod:`kafkalog.broker.error_responses`) are made with it, because Kafka's
are made that way, so their bytes are Kafka's.

What a field's conversion is depends only on the class, so it is worked out once a class (:func:`_plan`).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.serial._implicit_defaults import get_implicit_default
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64, i64Timedelta

__all__ = ["build", "field_names", "kafka_data", "ms"]

T = TypeVar("T")

_Convert = Callable[[Any], Any]


def _interval(kind: Any) -> _Convert:
    # kio's integer types check their range in isinstance, so a plain int in range passes as it is.
    return lambda v: v if isinstance(v, kind) else kind(v)


def _milliseconds(kind: Any) -> _Convert:
    return lambda v: v if isinstance(v, datetime.timedelta) else kind.parse(datetime.timedelta(milliseconds=int(v)))


def _as(kind: type) -> _Convert:
    return lambda v: v if isinstance(v, kind) else kind(v)


_CONVERT: dict[str, _Convert] = {
    "int8": _interval(i8), "int16": _interval(i16), "int32": _interval(i32), "int64": _interval(i64),
    "timedelta_i32": _milliseconds(i32Timedelta), "timedelta_i64": _milliseconds(i64Timedelta),
    "error_code": ErrorCode,
    "bool": bool, "string": _as(str), "bytes": _as(bytes), "records": _as(bytes),
    "uuid": lambda v: v if isinstance(v, uuid.UUID) else uuid.UUID(str(v)),
}


def ms(value: datetime.timedelta | int) -> int:
    """A kio ``i32Timedelta`` / ``i64Timedelta`` (or a plain number) as whole milliseconds."""
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    return int(value)


_field_names: dict[type[Any], frozenset[str]] = {}


def field_names(cls: type[Any]) -> frozenset[str]:
    """The fields a kio class (one version of one message or struct) has."""
    names = _field_names.get(cls)
    if names is None:
        names = _field_names[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return names


def _optional_args(field_type: Any) -> tuple[Any, ...]:
    """The members of ``X | None`` (or ``Optional[X]``), else ``(field_type,)``."""
    if isinstance(field_type, types.UnionType) or typing.get_origin(field_type) is typing.Union:
        return typing.get_args(field_type)
    return (field_type,)


def _entity(cls: Any) -> _Convert:
    """A nested struct: built from a mapping, kept when already built."""
    return lambda v: build(cls, **v) if isinstance(v, Mapping) else v


def _converter(f: dataclasses.Field[Any]) -> _Convert | None:
    """How a value of field ``f`` becomes its kio type (``None``: kept as given, ``None`` included)."""
    kind = next((a for a in _optional_args(f.type) if a is not type(None)), f.type)
    if typing.get_origin(kind) is tuple:
        element = typing.get_args(kind)[0]
        convert = _entity(element) if dataclasses.is_dataclass(element) else _CONVERT.get(f.metadata.get(
            "kafka_type", ""))
        if convert is None:
            return lambda v: None if v is None else tuple(v)
        return lambda v: None if v is None else tuple(map(convert, v))  # type: ignore[arg-type]
    convert = _entity(kind) if dataclasses.is_dataclass(kind) else _CONVERT.get(f.metadata.get("kafka_type", ""))
    if convert is None:
        return None
    return lambda v: None if v is None else convert(v)


_NO_DEFAULT: Any = object()


def _fallback(f: dataclasses.Field[Any]) -> Any:
    """The value of a field the caller did not give and kio has no default for (:data:`_NO_DEFAULT`: none)."""
    if f.name == "throttle_time":
        return _CONVERT[f.metadata["kafka_type"]](0)
    if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
        return _NO_DEFAULT
    members = _optional_args(f.type)
    if any(typing.get_origin(a) is tuple for a in members):
        return ()
    if f.metadata.get("kafka_type") == "string" and type(None) in members:
        return None
    return _NO_DEFAULT


_Plan = tuple[tuple[str, _Convert | None, Any], ...]
_plans: dict[type[Any], _Plan] = {}


def _plan(cls: type[Any]) -> _Plan:
    """Each field of ``cls``: its name, its conversion and its fallback value (worked out once a class: kio has a
    few hundred)."""
    plan = _plans.get(cls)
    if plan is None:
        plan = _plans[cls] = tuple((f.name, _converter(f), _fallback(f)) for f in dataclasses.fields(cls))
    return plan


def build(cls: type[T], /, **values: Any) -> T:
    """An instance of the kio class ``cls`` from ``values``, by field name (the contract is the module docstring's:
    only ``cls``'s fields, defaults where none is given, each value converted to its kio type)."""
    kwargs: dict[str, Any] = {}
    for name, convert, fallback in _plan(cls):
        if name in values:
            value = values[name]
            kwargs[name] = value if convert is None else convert(value)
        elif fallback is not _NO_DEFAULT:
            kwargs[name] = fallback
    return cls(**kwargs)


@functools.cache
def _defaults(cls: type) -> tuple[tuple[str, Callable[[], Any]], ...]:
    """Each field of the kio entity ``cls`` and how to make the value Kafka's generated class starts it with."""
    made: list[tuple[str, Callable[[], Any]]] = []
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            made.append((field.name, functools.partial(lambda v: v, field.default)))
            continue
        kind = classify_field(field)
        kafka_type = field.metadata.get("kafka_type")
        if isinstance(kind, EntityTupleField | PrimitiveTupleField):
            made.append((field.name, tuple))
        elif isinstance(kind, EntityField):
            made.append((field.name, functools.partial(kafka_data, kind.type_)))
        elif kafka_type == "records":
            made.append((field.name, lambda: None))
        elif kafka_type == "error_code":
            made.append((field.name, lambda: ErrorCode.none))
        elif kafka_type == "bool":
            made.append((field.name, lambda: False))
        else:
            made.append((field.name, functools.partial(get_implicit_default, kind.type_)))
    return tuple(made)


def kafka_data(cls: type, **fields: Any) -> Any:
    """An instance of the kio entity ``cls`` as Kafka's generated ``...Data`` class is after ``new`` and the setters
    of ``fields``: every other field at its default.  A name ``cls`` has not got (a field of another version) is
    left out, as a generated writer leaves out a field its version has not got."""
    return cls(**{name: fields[name] if name in fields else make() for name, make in _defaults(cls)})
