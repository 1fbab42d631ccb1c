"""Kafka's generated ``write`` for its JSON message schemas: a message tree in, its bytes out.

The inverse of :mod:`kafkalog.messages.reader`.  It ports, at tag 3.8.0, what
``generator/.../MessageDataGenerator.java`` generates for ``write(Writable, ObjectSerializationCache, short)``
(``generateClassWriter``, ``generateVariableLengthWriter``) and for the tagged-field section, and
``common/protocol/MessageUtil.toVersionPrefixedBytes`` (:func:`write_version_prefixed`), the framing of every
``__consumer_offsets`` and ``__transaction_state`` key and value: an ``int16`` version, then the message.

The message is the tree the reader returns (``Reader.message``): a ``dict`` keyed by each field's JSON name
(``group``, ``protocolType``, ``currentStateTimestamp``), nested dicts for structs, lists for arrays, ``bytes``
for ``bytes`` fields, ``str`` for strings and for a ``uuid`` (Kafka's URL-safe base64, 22 characters), ``int``,
``float`` and ``bool``.  A field missing from the dict takes its schema default, as a field a Java caller never
set does.  The byte format is the reader's (see its module docstring): big-endian fixed-width integers; in a
flexible version compact lengths (length plus one as an unsigned varint, 0 for null) and a tagged-field section
at the end of every struct, tags ascending; otherwise ``int16`` string lengths and ``int32`` bytes and array
lengths, -1 for null.

What Kafka's generated writer refuses, this refuses with :class:`MessageWriteError` and Kafka's words:

- a field that the version does not have, holding something other than its default: ``Attempted to write a
  non-default group at version 0`` (Kafka's ``UnsupportedVersionException``);
- a null in a field not nullable at the version: ``non-nullable field leader was serialized as null`` (Kafka
  throws a ``NullPointerException`` while measuring the message);
- a string longer than 32767 UTF-8 bytes: ``'metadata' field is too long to be serialized``;
- a version outside the message's ``validVersions``: ``Can't write version 9 of GroupMetadataValue``.  Here
  kafkalog is stricter than the generated code (whose ``write`` tests only the bounds a field narrows, see the
  reader), because a writer that produced bytes no reader of that version takes would lose data quietly;
- a number that does not fit its type, which Java's types make impossible: ``Value 70000 of field generation
  does not fit int32``.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from typing import Any

from ..errors import KafkaLogError
from .reader import FieldSpec, MessageSchema, StructSpec, schema

__all__ = ["MessageWriteError", "write_message", "write_version_prefixed"]

_INT_RANGES = {"int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
               "uint16": (0, (1 << 16) - 1), "int32": (-(1 << 31), (1 << 31) - 1),
               "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
_FIXED = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
          "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"), "int64": struct.Struct(">q"),
          "float64": struct.Struct(">d")}
_MAX_STRING = 0x7FFF


class MessageWriteError(KafkaLogError, ValueError):
    """A message that Kafka's generated ``write`` would refuse (Kafka: ``UnsupportedVersionException``,
    ``RuntimeException``, ``NullPointerException`` from ``addSize``)."""


def _in(versions: tuple[int, int], version: int) -> bool:
    return versions[0] <= version <= versions[1]


def _uvarint(value: int) -> bytes:
    """Kafka: ``ByteUtils.writeUnsignedVarint`` (7 bits a byte, low first)."""
    out = bytearray()
    value &= 0xFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_message(message: MessageSchema | str, data: Mapping[str, Any], version: int) -> bytes:
    """``data`` written as ``version`` of ``message`` (a schema, or the name of a vendored one, as
    :func:`~kafkalog.messages.reader.schema` takes): Kafka's generated ``<Message>.write``.

    Raises:
        MessageWriteError: what Kafka's writer refuses (module docstring).
    """
    spec = schema(message) if isinstance(message, str) else message
    if not _in(spec.valid, version):
        raise MessageWriteError(f"Can't write version {version} of {spec.name}")
    out = bytearray()
    _Writer(spec, version).struct(out, spec.root, data)
    return bytes(out)


def write_version_prefixed(message: MessageSchema | str, data: Mapping[str, Any], version: int) -> bytes:
    """Kafka: ``MessageUtil.toVersionPrefixedBytes``: ``int16 version`` then the message at that version (the
    frame of every ``__consumer_offsets`` and ``__transaction_state`` key and value)."""
    if not -(1 << 15) <= version < (1 << 15):
        raise MessageWriteError(f"Version {version} does not fit int16")
    return struct.pack(">h", version) + write_message(message, data, version)


class _Writer:
    """Writes one message at one version."""

    def __init__(self, message: MessageSchema, version: int) -> None:
        self.schema = message
        self.version = version
        self.flexible = _in(message.flexible, version)

    # -- structs (Kafka: generateClassWriter) --

    def struct(self, out: bytearray, spec: StructSpec, data: Mapping[str, Any]) -> None:
        version = self.version
        if spec.common and not _in(spec.versions, version):
            raise MessageWriteError(f"Can't write version {version} of {spec.name}")
        if not isinstance(data, Mapping):
            raise MessageWriteError(f"struct {spec.name} must be a mapping of its fields, not {type(data).__name__}")
        tagged: list[tuple[int, FieldSpec, Any]] = []
        for f in spec.fields:
            present = f.json_name in data
            value = data[f.json_name] if present else self._default(f)
            if not _in(f.versions, version):
                if present and not self._is_default(f, value):
                    raise MessageWriteError(f"Attempted to write a non-default {f.json_name} at version {version}")
                continue
            if _in(f.tagged, version):
                if f.tag is None:
                    raise MessageWriteError(f"tagged field {f.json_name} of {spec.name} has no tag")
                if present and not self._is_default(f, value):
                    tagged.append((f.tag, f, value))
                continue
            self.value(out, f, value, tagged=False)
        if self.flexible:
            tagged.sort(key=lambda t: t[0])
            out += _uvarint(len(tagged))
            for tag, f, value in tagged:
                body = bytearray()
                self.value(body, f, value, tagged=True)
                out += _uvarint(tag)
                out += _uvarint(len(body))
                out += body
        elif tagged:
            raise MessageWriteError(f"Tagged fields were set, but version {version} of {self.schema.name} does not "
                                    "support tagged fields.")

    @staticmethod
    def _default(f: FieldSpec) -> Any:
        if f.struct is not None and not f.is_array:
            return None if f.default_null else {}
        return [] if f.default == [] else f.default

    def _is_default(self, f: FieldSpec, value: Any) -> bool:
        """Kafka: ``FieldSpec.generateNonDefaultValueCheck``, negated."""
        if f.struct is not None and not f.is_array:
            if value is None:
                return f.default_null
            if f.default_null:
                return False
            return all(g.json_name not in value or self._is_default(g, value[g.json_name]) for g in f.struct.fields)
        if f.is_array:
            return value is None if f.default_null else (value is not None and len(value) == 0)
        if f.type == "bytes" or f.type == "records":
            return value is not None and len(value) == 0 and not f.default_null
        return bool(value == f.default)

    # -- fields (Kafka: generateVariableLengthWriter and the fixed-width writers) --

    def value(self, out: bytearray, f: FieldSpec, value: Any, *, tagged: bool) -> None:
        version = self.version
        nullable = _in(f.nullable, version)
        if f.struct is not None and not f.is_array:
            if value is None:
                if not nullable:
                    raise MessageWriteError(f"non-nullable field {f.json_name} was serialized as null")
                out += _uvarint(0) if tagged else b"\xff"
                return
            if nullable:
                out += _uvarint(1) if tagged else b"\x01"
            self.struct(out, f.struct, value)
            return
        if f.is_array or f.type in ("string", "bytes", "records"):
            flexible = tagged or _in(f.flexible if f.flexible is not None else self.schema.flexible, version)
            self.variable(out, f, f.type, value, flexible=flexible, nullable=nullable, name=f.json_name)
            return
        self.primitive(out, f.type, value, f.json_name)

    def primitive(self, out: bytearray, type_name: str, value: Any, name: str) -> None:
        if type_name == "bool":
            if not isinstance(value, bool):
                raise MessageWriteError(f"Value {value!r} of field {name} is not a bool")
            out.append(1 if value else 0)
        elif type_name == "uuid":
            try:
                raw = base64.urlsafe_b64decode(str(value) + "==")
            except (binascii.Error, ValueError) as e:
                raise MessageWriteError(f"Value {value!r} of field {name} is not a uuid") from e
            if len(raw) != 16:
                raise MessageWriteError(f"Value {value!r} of field {name} is not a uuid")
            out += raw
        elif type_name == "float64":
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise MessageWriteError(f"Value {value!r} of field {name} is not a float64")
            out += _FIXED["float64"].pack(float(value))
        else:
            low, high = _INT_RANGES[type_name]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise MessageWriteError(f"Value {value!r} of field {name} does not fit {type_name}")
            out += _FIXED[type_name].pack(value)

    def _length(self, out: bytearray, kind: str, length: int, flexible: bool) -> None:
        if flexible:
            out += _uvarint(length + 1)
        else:
            out += _FIXED["int16" if kind == "string" else "int32"].pack(length)

    def variable(self, out: bytearray, f: FieldSpec, type_name: str, value: Any, *, flexible: bool,
                 nullable: bool, name: str) -> None:
        kind = "array" if type_name.startswith("[]") else type_name
        if value is None:
            if not nullable:
                raise MessageWriteError(f"non-nullable field {name} was serialized as null")
            self._length(out, kind, -1, flexible)
            return
        if kind == "string":
            if not isinstance(value, str):
                raise MessageWriteError(f"Value {value!r} of field {name} is not a string")
            encoded = value.encode("utf-8", "replace")  # Java writes an unpaired surrogate as "?"
            if len(encoded) > _MAX_STRING:
                raise MessageWriteError(f"'{name}' field is too long to be serialized")
            self._length(out, kind, len(encoded), flexible)
            out += encoded
            return
        if kind in ("bytes", "records"):
            if not isinstance(value, bytes | bytearray | memoryview):
                raise MessageWriteError(f"Value of field {name} is not bytes but {type(value).__name__}")
            self._length(out, kind, len(value), flexible)
            out += value
            return
        if isinstance(value, str | bytes | Mapping):
            raise MessageWriteError(f"Value of field {name} is not a list but {type(value).__name__}")
        items = list(value)
        self._length(out, kind, len(items), flexible)
        element = type_name[2:]
        for item in items:
            if element in ("string", "bytes"):
                self.variable(out, f, element, item, flexible=flexible, nullable=False, name=f"{name} element")
            elif f.struct is not None:
                self.struct(out, f.struct, item)
            else:
                self.primitive(out, element, item, f"{name} element")
