"""Writing a response message: kio's wire format, from writers generated once per message type.

kio's :func:`kio.serial.entity_writer` writes a message field by field through closures into a ``BytesIO``, a
varint a byte at a time, every integer through its phantom type's range check and ``struct.pack`` of its own; the
record bytes of a Fetch are copied into the buffer and copied again out of it.  :func:`entity_writer` writes the
same bytes (``tests/broker/test_wire_writer.py`` holds them equal for every response version the broker answers)
from Python source generated from the same introspection kio uses (kio's field classification, schema types,
tags and tag defaults), compiled once per type:

- the fixed-size fields that follow one another (int8 ... int64, uint*, float64, bool, error codes, UUIDs, the
  millisecond timedeltas and datetimes) are packed by one ``struct.Struct`` per run;
- a message is a list of byte strings, joined once when the frame is complete; a ``bytes`` or ``records`` value
  is put in the list as it is, so a Fetch's segment bytes are copied once, into the frame;
- a tagged field is written only when it differs from its default (kio's rule: the field's default, or the
  implicit default of its type when it has none), in tag order, each as its tag, its size and its value.

The wire format is the one :mod:`~kafkalog.broker.codec` reads: legacy versions carry a string's length as int16,
bytes' and an array's as int32, -1 for null; flexible ones carry length + 1 as an unsigned varint, 0 for null, and
end each struct with its tagged fields; a nullable struct is an int8 marker, -1 for null and 1 for present
(KIP-893).  Out-of-range values fail with :class:`struct.error` where kio's range checks fail (a handler's bug,
never a client's bytes).
"""

from __future__ import annotations

import dataclasses
import functools
import struct
import uuid
from collections.abc import Callable
from typing import Any

from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

__all__ = ["Parts", "entity_writer", "uvarint"]

#: What a generated writer appends to: the message's byte strings, in order.
Parts = list[Any]

_ZERO_UUID = uuid.UUID(int=0).bytes
_SMALL_VARINTS = [bytes((i,)) for i in range(128)]


def uvarint(value: int) -> bytes:
    """``value`` (0 or more) as Kafka's unsigned varint: seven bits a byte, low bits first, the high bit set on
    every byte but the last."""
    if value < 128:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


#: Kafka type -> (struct format, the expression of the value written, from ``{v}``), for fixed-size fields.
_FIXED: dict[str, tuple[str, str]] = {
    "int8": ("b", "{v}"), "int16": ("h", "{v}"), "int32": ("i", "{v}"), "int64": ("q", "{v}"),
    "uint8": ("B", "{v}"), "uint16": ("H", "{v}"), "uint32": ("I", "{v}"), "uint64": ("Q", "{v}"),
    "float64": ("d", "{v}"), "bool": ("?", "{v}"), "error_code": ("h", "{v}.value"),
    "uuid": ("16s", "(_ZERO_UUID if {v} is None else {v}.bytes)"),
    "timedelta_i32": ("i", "round({v}.total_seconds() * 1000)"),
    "timedelta_i64": ("q", "round({v}.total_seconds() * 1000)"),
    "datetime_i64": ("q", "round({v}.timestamp() * 1000)"),
}
_NULLABLE_DATETIME = "(-1 if {v} is None else round({v}.timestamp() * 1000))"


class _Source:
    """The lines of one generated module and the names its code refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"_ZERO_UUID": _ZERO_UUID, "uvarint": uvarint, "_SMALL": _SMALL_VARINTS,
                                      "_I16": struct.Struct(">h").pack, "_I32": struct.Struct(">i").pack,
                                      "_join": b"".join}
        self._count = 0

    def name(self, prefix: str, value: Any) -> str:
        self._count += 1
        label = f"{prefix}{self._count}"
        self.names[label] = value
        return label

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _fixed_format(kafka_type: str, optional: bool) -> tuple[str, str] | None:
    if kafka_type == "datetime_i64" and optional:
        return "q", _NULLABLE_DATETIME
    if kafka_type in _FIXED and (not optional or kafka_type == "uuid"):
        return _FIXED[kafka_type]
    return None


def _emit_sized(src: _Source, indent: int, v: str, kafka_type: str, flexible: bool, optional: bool) -> None:
    """A string, bytes or records value ``v``: its length, then its bytes (``bytes``/``records`` as they are)."""
    encode = kafka_type == "string"
    if optional:
        src.emit(indent, f"if {v} is None:")
        null = "b'\\x00'" if flexible else ("b'\\xff\\xff'" if encode else "b'\\xff\\xff\\xff\\xff'")
        src.emit(indent + 1, f"a({null})")
        src.emit(indent, "else:")
        indent += 1
    if encode:
        src.emit(indent, f"_b = {v}.encode() if {v}.__class__ is str else {v}")
    else:
        src.emit(indent, f"_b = {v}")
    if flexible:
        src.emit(indent, "_n = len(_b) + 1")
        src.emit(indent, "a(_SMALL[_n] if _n < 128 else uvarint(_n))")
    else:
        src.emit(indent, f"a({'_I16' if encode else '_I32'}(len(_b)))")
    src.emit(indent, "a(_b)")


def _emit_value(src: _Source, indent: int, v: str, field: dataclasses.Field[Any], flexible: bool,
                is_tag: bool) -> None:
    """The code writing the value ``v`` of ``field`` (not a tagged field's tag and size: its value alone)."""
    optional = False if is_tag else is_optional(field)
    kind = classify_field(field)
    if kind.is_array:
        src.emit(indent, f"if {v} is None:")
        src.emit(indent + 1, "a(b'\\x00')" if flexible else "a(b'\\xff\\xff\\xff\\xff')")
        src.emit(indent, "else:")
        if flexible:
            src.emit(indent + 1, f"_n = len({v}) + 1")
            src.emit(indent + 1, "a(_SMALL[_n] if _n < 128 else uvarint(_n))")
        else:
            src.emit(indent + 1, f"a(_I32(len({v})))")
        item = f"_x{indent}"
        src.emit(indent + 1, f"for {item} in {v}:")
        if isinstance(kind, EntityTupleField):
            writer = src.name("_entity", _parts_writer(kind.type_, False))
            src.emit(indent + 2, f"{writer}(a, {item})")
        else:
            assert isinstance(kind, PrimitiveTupleField)
            _emit_primitive(src, indent + 2, item, get_schema_field_type(field), flexible, False)
        return
    if isinstance(kind, EntityField):
        writer = src.name("_entity", _parts_writer(kind.type_, optional))
        src.emit(indent, f"{writer}(a, {v})")
        return
    assert isinstance(kind, PrimitiveField)
    _emit_primitive(src, indent, v, get_schema_field_type(field), flexible, optional)


def _emit_primitive(src: _Source, indent: int, v: str, kafka_type: str, flexible: bool, optional: bool) -> None:
    fixed = _fixed_format(kafka_type, optional)
    if fixed is not None:
        fmt, expression = fixed
        pack = src.name("_pack", struct.Struct(">" + fmt).pack)
        src.emit(indent, f"a({pack}({expression.format(v=v)}))")
    elif kafka_type in ("string", "bytes", "records"):
        _emit_sized(src, indent, v, kafka_type, flexible, optional)
    else:
        raise NotImplementedError(f"No writer for the Kafka type {kafka_type!r} (optional={optional})")


@functools.cache
def _parts_writer(cls: type, nullable: bool) -> Callable[[Callable[[Any], None], Any], None]:
    """``write(append, entity)``: ``cls``'s bytes passed to ``append`` piece by piece (a marker first when
    ``nullable``)."""
    flexible = bool(cls.__flexible__)  # type: ignore[attr-defined]
    src = _Source()
    src.emit(0, "def write(a, e):")
    if nullable:
        src.emit(1, "if e is None:")
        src.emit(2, "a(b'\\xff')")
        src.emit(2, "return")
        src.emit(1, "a(b'\\x01')")
    run: list[tuple[str, str]] = []  # the fixed-size fields waiting to be packed together

    def flush() -> None:
        if run:
            pack = src.name("_pack", struct.Struct(">" + "".join(fmt for fmt, _ in run)).pack)
            src.emit(1, f"a({pack}({', '.join(expression for _, expression in run)}))")
            run.clear()

    tagged: list[tuple[int, dataclasses.Field[Any]]] = []
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        if tag is not None:
            tagged.append((int(tag), field))
            continue
        v = f"e.{field.name}"
        kind = classify_field(field)
        fixed = (_fixed_format(get_schema_field_type(field), is_optional(field))
                 if isinstance(kind, PrimitiveField) else None)
        if fixed is not None:
            run.append((fixed[0], fixed[1].format(v=v)))
            continue
        flush()
        src.emit(1, f"_v = {v}")
        _emit_value(src, 1, "_v", field, flexible, False)
    flush()
    if tagged and not flexible:
        raise ValueError(f"{cls.__name__} has tagged fields but is not flexible")
    if flexible:
        if not tagged:
            src.emit(1, "a(b'\\x00')")
        else:
            src.emit(1, "_tags = []")
            for number, field in sorted(tagged, key=lambda t: t[0]):
                default = src.name("_default", field.default)
                implicit = src.name("_implicit", get_tagged_field_default(field))
                missing = field.default is dataclasses.MISSING
                src.emit(1, f"_t = e.{field.name}")
                # kio's test for a default value, kept as it is (== on both)
                skip = f"_t == {default}" + (f" or _t == {implicit}" if missing else "")
                src.emit(1, f"if not ({skip}):")
                src.emit(2, "_p = []")
                src.emit(2, "_outer, a = a, _p.append")
                _emit_value(src, 2, "_t", field, flexible, True)
                src.emit(2, "a = _outer")
                src.emit(2, "_value = _join(_p)")
                src.emit(2, f"_tags.append(uvarint({number}) + uvarint(len(_value)) + _value)")
            src.emit(1, "a(uvarint(len(_tags)))")
            src.emit(1, "for _t in _tags:")
            src.emit(2, "a(_t)")
    namespace = dict(src.names)
    exec(compile("\n".join(src.lines) + "\n", f"<wire writer of {cls.__module__}.{cls.__name__}>", "exec"),
         namespace)
    write: Callable[[Callable[[Any], None], Any], None] = namespace["write"]
    return write


def entity_writer(cls: type) -> Callable[[Parts, Any], None]:
    """``write(parts, entity)``: the bytes of ``entity`` (a ``cls``, a kio message type) appended to ``parts``, a
    list whose ``b"".join`` is what kio's writer writes for it."""
    write = _parts_writer(cls, False)

    def write_entity(parts: Parts, entity: Any) -> None:
        write(parts.append, entity)
    return write_entity
