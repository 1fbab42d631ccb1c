"""Reading Kafka's protocol messages: kio's types, read by a bounded reader of kafkalog's own.

The message types are kio's (``kio.schema.<api>.v<N>.request``/``.response``): frozen dataclasses generated from
Kafka's JSON message schemas, one module per version, whose fields carry what the wire format needs (``kafka_type``,
the tag of a tagged field, nullability in the annotation, the entity's ``__flexible__``).  Responses are written
by :mod:`~kafkalog.broker.wire_writer` (kio's bytes, from writers generated over the same types).

Requests are *not* read by kio's reader.  kio 0.6 reads with a compiled extension that allocates an array's
storage from its count before it reads one element, and a count of two billion in a 9-byte request makes the
allocation fail and the process abort (a Rust ``alloc`` failure is not an exception): one hostile frame would stop
the broker for every client.  :func:`entity_reader` reads the same types from the same introspection, in Python,
with Kafka's own bounds (``MessageDataGenerator.generateVariableLengthReader``, 3.8.0): an array or a string whose
length is larger than the bytes left fails before anything is allocated, so a request's decoding takes time and
memory in proportion to its size whatever it claims.  Any failure is a :class:`MalformedRequestError`, which
Kafka's ``RequestContext.parseRequest`` turns into a closed connection.

Wire format (all big-endian): a *legacy* (non-flexible) version carries a string's length as int16, bytes' and an
array's as int32 (-1 for null); a *flexible* one carries length + 1 as an unsigned varint (0 for null) and ends every
struct with tagged fields (a varint count, then for each a varint tag, a varint size and the value).  A nullable
struct (KIP-893) is an int8 marker, -1 for null, 1 for present.  The request header's ``client_id`` is a legacy
string even in the flexible header v2 (Kafka: ``RequestHeader.json``'s ``flexibleVersions: none`` on that field).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import struct
import types
import typing
import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from ..errors import KafkaLogError

__all__ = ["MalformedRequestError", "entity_reader", "read_nullable_legacy_string", "read_unsigned_varint",
           "skip_tagged_fields"]

#: A field reader: the value at ``pos`` in ``buf`` and the position after it.
FieldReader = Callable[[memoryview, int], tuple[Any, int]]

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT16 = struct.Struct(">H")
_FLOAT64 = struct.Struct(">d")
_UTC = datetime.UTC


class MalformedRequestError(KafkaLogError, ValueError):
    """A request's bytes do not read as the message its header names (Kafka: ``InvalidRequestException`` from
    ``RequestContext.parseRequest``; the broker closes the connection)."""


def _need(buf: memoryview, pos: int, n: int) -> None:
    if pos + n > len(buf):
        raise MalformedRequestError(f"Tried to read {n} byte(s) at position {pos}, but the message has only "
                                    f"{max(len(buf) - pos, 0)} left")


def read_unsigned_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most five bytes, as Kafka's ``ByteUtils.readUnsignedVarint`` reads one (a longer
    one is an error there too: "Varint is too long")."""
    value = 0
    for i in range(5):
        if pos >= len(buf):
            raise MalformedRequestError("A varint runs past the end of the message")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value, pos
    raise MalformedRequestError("A varint is longer than five bytes")


def _fixed(st: struct.Struct) -> FieldReader:
    size = st.size
    unpack = st.unpack_from

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            _need(buf, pos, size)
        return unpack(buf, pos)[0], pos + size
    return read


_read_int8 = _fixed(_INT8)
_read_int16 = _fixed(_INT16)
_read_int32 = _fixed(_INT32)
_read_int64 = _fixed(_INT64)
_read_uint16 = _fixed(_UINT16)
_read_float64 = _fixed(_FLOAT64)


def _read_uint32(buf: memoryview, pos: int) -> tuple[int, int]:
    _need(buf, pos, 4)
    return int.from_bytes(buf[pos:pos + 4], "big"), pos + 4


def _read_bool(buf: memoryview, pos: int) -> tuple[bool, int]:
    _need(buf, pos, 1)
    return buf[pos] != 0, pos + 1


def _read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    _need(buf, pos, 16)
    return uuid.UUID(bytes=bytes(buf[pos:pos + 16])), pos + 16


def _length(flexible: bool, wide: bool) -> FieldReader:
    """The length of a string (``wide`` False: int16 when legacy) or of bytes or an array (int32 when legacy); -1
    is null.  A compact length is the varint minus one."""
    if flexible:
        def compact(buf: memoryview, pos: int) -> tuple[int, int]:
            n, pos = read_unsigned_varint(buf, pos)
            return n - 1, pos
        return compact
    return _read_int32 if wide else _read_int16


def _sized(flexible: bool, wide: bool, nullable: bool, what: str, convert: Callable[[memoryview], Any]) -> FieldReader:
    read_length = _length(flexible, wide)

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_length(buf, pos)
        if n < 0:
            if nullable:
                return None, pos
            raise MalformedRequestError(f"non-nullable {what} was serialized as null")
        if n > len(buf) - pos:
            raise MalformedRequestError(f"Tried to read a {what} of {n} byte(s), but only {len(buf) - pos} "
                                        f"byte(s) remain")
        if what == "string" and not flexible and n > 0x7FFF:
            raise MalformedRequestError(f"string field of {n} byte(s) is longer than 32767")
        end = pos + n
        return convert(buf[pos:end]), end
    return read


def _utf8(view: memoryview) -> str:
    try:
        return str(view, "utf-8")
    except UnicodeDecodeError as e:
        raise MalformedRequestError(f"A string is not valid UTF-8: {e}") from None


#: A nullable string of int16 length: the request header's ``client_id`` in every header version.
read_nullable_legacy_string: FieldReader = _sized(False, False, True, "string", _utf8)


def skip_tagged_fields(buf: memoryview, pos: int) -> int:
    """Past the tagged fields at ``pos`` (a varint count, then each field's tag, size and value), none of which the
    reader knows; each must end within ``buf``.  The position after them."""
    count, pos = read_unsigned_varint(buf, pos)
    if count > len(buf) - pos:
        raise MalformedRequestError(f"Tried to read {count} tagged field(s), but there are only {len(buf) - pos} "
                                    "bytes remaining.")
    for _ in range(count):
        _, pos = read_unsigned_varint(buf, pos)
        size, pos = read_unsigned_varint(buf, pos)
        if pos + size > len(buf):
            raise MalformedRequestError(f"A tagged field of {size} byte(s) runs past the message's end")
        pos += size
    return pos


def _ms_timedelta(read: FieldReader) -> FieldReader:
    def as_timedelta(buf: memoryview, pos: int) -> tuple[Any, int]:
        value, pos = read(buf, pos)
        return datetime.timedelta(milliseconds=value), pos
    return as_timedelta


def _ms_datetime(read: FieldReader, nullable: bool) -> FieldReader:
    def as_datetime(buf: memoryview, pos: int) -> tuple[Any, int]:
        value, pos = read(buf, pos)
        if value == -1 and nullable:
            return None, pos
        try:
            return datetime.datetime.fromtimestamp(value / 1000, tz=_UTC), pos
        except (OverflowError, OSError, ValueError):
            raise MalformedRequestError(f"A timestamp of {value} ms is out of range") from None
    return as_datetime


def _error_code(buf: memoryview, pos: int) -> tuple[Any, int]:
    value, pos = _read_int16(buf, pos)
    try:
        return ErrorCode(value), pos
    except ValueError:
        raise MalformedRequestError(f"Unknown error code {value}") from None


def _primitive(kafka_type: str, flexible: bool, nullable: bool) -> FieldReader:
    fixed = {"int8": _read_int8, "int16": _read_int16, "int32": _read_int32, "int64": _read_int64,
             "uint16": _read_uint16, "uint32": _read_uint32, "float64": _read_float64, "bool": _read_bool,
             "uuid": _read_uuid, "error_code": _error_code}.get(kafka_type)
    if fixed is not None:
        return fixed
    if kafka_type == "string":
        return _sized(flexible, False, nullable, "string", _utf8)
    if kafka_type in ("bytes", "records"):
        return _sized(flexible, True, nullable, "byte array", bytes)
    if kafka_type == "timedelta_i32":
        return _ms_timedelta(_read_int32)
    if kafka_type == "timedelta_i64":
        return _ms_timedelta(_read_int64)
    if kafka_type == "datetime_i64":
        return _ms_datetime(_read_int64, nullable)
    raise TypeError(f"No reader for the Kafka type {kafka_type!r}")


def _array(item: FieldReader, flexible: bool, nullable: bool) -> FieldReader:
    read_length = _length(flexible, True)

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        n, pos = read_length(buf, pos)
        if n < 0:
            if nullable:
                return None, pos
            raise MalformedRequestError("non-nullable array was serialized as null")
        # Kafka's generated readers: every element takes at least one byte, so a count past the bytes left is a
        # lie, refused before anything is allocated for it.
        if n > len(buf) - pos:
            raise MalformedRequestError(f"Tried to allocate a collection of size {n}, but there are only "
                                        f"{len(buf) - pos} bytes remaining.")
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            value, pos = item(buf, pos)
            append(value)
        return tuple(items), pos
    return read


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0], True
    return annotation, False


def _field_reader(field: dataclasses.Field[Any], annotation: Any, flexible: bool, header_client_id: bool,
                  tagged: bool) -> FieldReader:
    if header_client_id:
        return _sized(False, False, True, "string", _utf8)
    inner, nullable = _unwrap_optional(annotation)
    nullable = nullable and not tagged
    if typing.get_origin(inner) is tuple:
        element = typing.get_args(inner)[0]
        if dataclasses.is_dataclass(element):
            return _array(_entity_reader(typing.cast(type, element), False), flexible, nullable)
        return _array(_primitive(field.metadata["kafka_type"], flexible, False), flexible, nullable)
    if dataclasses.is_dataclass(inner):
        return _entity_reader(typing.cast(type, inner), nullable)
    return _primitive(field.metadata["kafka_type"], flexible, nullable)


#: Kafka type -> (struct format, the conversion of the unpacked value ``{v}``, or None) of the fixed-size fields a
#: generated reader unpacks in runs: the same values the single-field readers above give.
_FIXED_READS: dict[str, tuple[str, str | None]] = {
    "int8": ("b", None), "int16": ("h", None), "int32": ("i", None), "int64": ("q", None), "uint16": ("H", None),
    "uint32": ("I", None), "float64": ("d", None), "bool": ("?", None), "error_code": ("h", "_error_code_of({v})"),
    "uuid": ("16s", "_UUID(bytes={v})"), "timedelta_i32": ("i", "_timedelta(milliseconds={v})"),
    "timedelta_i64": ("q", "_timedelta(milliseconds={v})"),
}


def _error_code_of(value: int) -> ErrorCode:
    try:
        return ErrorCode(value)
    except ValueError:
        raise MalformedRequestError(f"Unknown error code {value}") from None


def _read_tagged(buf: memoryview, pos: int, tagged: dict[int, tuple[str, FieldReader]],
                 defaults: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A flexible struct's tagged fields: each known one read within its declared size (which it must fill), each
    unknown one skipped, the rest left at their defaults."""
    count, pos = read_unsigned_varint(buf, pos)
    if count > len(buf) - pos:
        raise MalformedRequestError(f"Tried to read {count} tagged field(s), but there are only "
                                    f"{len(buf) - pos} bytes remaining.")
    values = dict(defaults)
    for _ in range(count):
        tag, pos = read_unsigned_varint(buf, pos)
        size, pos = read_unsigned_varint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise MalformedRequestError(f"A tagged field of {size} byte(s) runs past the message's end")
        known = tagged.get(tag)
        if known is not None:
            name, reader = known
            values[name], stop = reader(buf[:end], pos)
            if stop != end:
                raise MalformedRequestError(f"Tagged field {name} is {size} byte(s) long but its value "
                                            f"took {stop - pos}")
        pos = end
    return values, pos


@functools.cache
def _entity_reader(cls: type, nullable: bool) -> FieldReader:
    """The reader of ``cls`` (``nullable``: after its KIP-893 marker), as Python source generated from the type and
    compiled once: runs of fixed-size fields unpacked by one ``struct`` after one bounds check, every other field
    through its bounded reader, then the tagged fields (flexible versions), then the message built."""
    flexible = bool(cls.__flexible__)  # type: ignore[attr-defined]
    hints = typing.get_type_hints(cls)
    is_header = cls.__name__ == "RequestHeader"
    names: dict[str, Any] = {"_need": _need, "_I8": _INT8.unpack_from, "_error_code_of": _error_code_of,
                             "_UUID": uuid.UUID, "_timedelta": datetime.timedelta, "_read_tagged": _read_tagged,
                             "_cls": cls, "Malformed": MalformedRequestError}
    lines = ["def read(buf, pos):", "    size = len(buf)"]
    if nullable:
        lines += ["    if pos + 1 > size:", "        _need(buf, pos, 1)", "    marker = _I8(buf, pos)[0]",
                  "    pos += 1", "    if marker < 0:", "        return None, pos"]
    plain: list[str] = []  # the local variable of each plain field, in order
    run: list[tuple[str, str, str | None]] = []  # (variable, format, conversion) of fixed fields read together
    tagged: dict[int, tuple[str, FieldReader]] = {}
    defaults: dict[str, Any] = {}

    def flush() -> None:
        if not run:
            return
        unpack = struct.Struct(">" + "".join(fmt for _, fmt, _ in run))
        label = f"_unpack{len(names)}"
        names[label] = unpack.unpack_from
        lines.extend([f"    if pos + {unpack.size} > size:", f"        _need(buf, pos, {unpack.size})",
                      f"    {', '.join(var for var, _, _ in run)}, = {label}(buf, pos)", f"    pos += {unpack.size}"])
        lines.extend(f"    {var} = {convert.format(v=var)}" for var, _, convert in run if convert is not None)
        run.clear()

    for index, field in enumerate(dataclasses.fields(cls)):
        tag = field.metadata.get("tag")
        reader = _field_reader(field, hints[field.name], flexible, is_header and field.name == "client_id",
                               tag is not None)
        if tag is not None:
            tagged[int(tag)] = (field.name, reader)
            if field.default is not dataclasses.MISSING:
                defaults[field.name] = field.default
            elif field.default_factory is not dataclasses.MISSING:
                defaults[field.name] = field.default_factory()
            continue
        var = f"v{index}"
        plain.append(f"{field.name}={var}")
        inner, _ = _unwrap_optional(hints[field.name])
        fixed = None
        if not (is_header and field.name == "client_id") and typing.get_origin(inner) is not tuple \
                and not dataclasses.is_dataclass(inner):
            fixed = _FIXED_READS.get(field.metadata["kafka_type"])
        if fixed is not None:
            run.append((var, fixed[0], fixed[1]))
            continue
        flush()
        label = f"_field{index}"
        names[label] = reader
        lines.append(f"    {var}, pos = {label}(buf, pos)")
    flush()
    missing_tag_defaults = [name for name, _ in tagged.values() if name not in defaults]
    if missing_tag_defaults:
        from kio.serial._implicit_defaults import get_tagged_field_default
        by_name = {f.name: f for f in dataclasses.fields(cls)}
        for name in missing_tag_defaults:
            defaults[name] = get_tagged_field_default(by_name[name])
    arguments = ", ".join(plain)
    if flexible:
        names["_tagged"], names["_defaults"] = tagged, defaults
        lines.append("    tags, pos = _read_tagged(buf, pos, _tagged, _defaults)")
        arguments = f"{arguments}, **tags" if arguments else "**tags"
    lines += ["    try:", f"        return _cls({arguments}), pos", "    except (TypeError, ValueError) as e:",
              f"        raise Malformed(f'{cls.__name__}: {{e}}') from None"]
    exec(compile("\n".join(lines) + "\n", f"<request reader of {cls.__module__}.{cls.__name__}>", "exec"), names)
    read: FieldReader = names["read"]
    return read


def entity_reader(cls: type) -> Callable[[bytes | memoryview, int], tuple[Any, int]]:
    """A reader of ``cls`` (a kio entity): ``reader(buf, pos)`` is the entity at ``pos`` and the position after it.

    Raises :class:`MalformedRequestError` on bytes that do not read as ``cls``, before allocating more than the
    bytes could hold.
    """
    read = _entity_reader(cls, False)

    def read_entity(buf: bytes | memoryview, pos: int = 0) -> tuple[Any, int]:
        return read(buf if isinstance(buf, memoryview) else memoryview(buf), pos)
    return read_entity
