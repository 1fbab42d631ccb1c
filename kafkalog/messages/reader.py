"""Kafka's generated message classes, driven at run time by Kafka's own JSON message schemas.

Kafka describes every record it keeps in its internal topics (``__consumer_offsets``,
``__transaction_state``, ``__cluster_metadata``) as a JSON *message schema*, and its build generates from
each one a Java class (``read``/``write``) and a ``*JsonConverter`` (``write`` to a Jackson tree).  This
module does what those generated classes do, without generating code: it loads the schema and walks it.
It ports, at tag 3.8.0:

- ``generator/.../MessageDataGenerator.java`` ``generateClassReader`` and ``generateVariableLengthReader``
  (the byte format, and the exceptions a generated ``read`` throws, with their messages);
- ``generator/.../JsonConverterGenerator.java`` ``generateWrite`` (which fields a converter writes, under
  which names, as which JSON node);
- Jackson's ``JsonNode.toString`` for the nodes those converters build (:func:`to_json`).

The schemas are vendored, unchanged, in ``schemas/`` beside this module (Apache-2.0, see NOTICE): the group
coordinator's records (``group-coordinator/src/main/resources/common/message``), the transaction log's
(``core/.../common/message/TransactionLog*.json``), the consumer protocol's embedded subscription and
assignment (``clients/.../ConsumerProtocol*.json``), every KRaft metadata record
(``metadata/src/main/resources/common/metadata``), and the ``__remote_log_metadata`` topic's records
(``storage/src/main/resources/message/Remote*.json``).

The byte format, all big-endian:

- ``int8``/``int16``/``int32``/``int64``, ``uint16``/``uint32``, ``float64`` (IEEE), ``bool`` (one byte,
  non-zero is true), ``uuid`` (two int64, shown in Kafka's URL-safe base64 without padding);
- in a *flexible* version (the schema's ``flexibleVersions``): strings, bytes and arrays carry their length
  plus one as an unsigned varint (0 is null), and every struct ends with a tagged-field section (a varint
  count, then per field a varint tag, a varint size and the value); fields with ``taggedVersions`` live
  only there, and a converter writes them only when they differ from their default;
- otherwise: a string's length is an int16, a bytes' or an array's an int32, -1 being null.

Which fields a version has, whether it is flexible, whether a field may be null: Kafka's generated code
decides each with an ``if`` on ``_version`` that the generator (``VersionConditional``) writes only for the
bounds that narrow the versions the code can run at.  So a message read at a version outside its
``validVersions`` is not refused: a message's own reader checks no version at all, a field of versions ``3+``
in a message of ``0-4`` is read for any version from 3 up (9 too), one of ``0-2`` for any version up to 2;
only an inline struct's reader refuses a version past its message's highest (``Can't read version 9 of
MemberMetadata``).  :func:`_generated_test` is that ``if``, and the reader applies it where the generated code
does, with the same narrowed ranges, so an out-of-range version reads as Kafka reads it.

A field absent from a version reads as its default and the converter leaves it out.  Decoding failures raise
:class:`MessageReadError` with the message Kafka's reader throws (``Can't read version 9 of MemberMetadata``,
``non-nullable field name was serialized as null``, ``Error reading byte array of 12 byte(s): only 3 byte(s)
available``); where Java throws a ``BufferUnderflowException``, whose message is ``null``, the message is
``null`` too, as Kafka's tool prints it.  Strings are Java's: malformed UTF-8 replaced as Java replaces it
(:mod:`kafkalog._java_utf8`).

Every count and length is bounded by the bytes left before anything is read or allocated for it, so a
record's decoding takes time and memory in proportion to its size whatever its bytes claim:

- a length or a count is a Java ``int``: an unsigned varint past 2^31 - 1 is negative, and a compact
  length's "minus one" wraps as Java's does (a varint of 2^31 is a length of 2^31 - 1, not a null); a
  negative length is a null, as in Kafka's readers (Kafka writes -1, its readers take any negative);
- a string longer than 0x7FFF, bytes or an array longer than the bytes left fail before they are read
  (Kafka's own checks and messages);
- an unknown tagged field of negative size fails (``Error reading byte array of -6 byte(s): a negative
  size``).  Kafka fails there too, with ``NegativeArraySizeException``, whose message is only the number;
  kafkalog words it as its other byte-array failures, so the dump's ``Error at offset N, skipping.`` line
  says why;
- a tagged-field count larger than the bytes left could hold (each field is at least a one-byte tag and a
  one-byte size) fails before the first field is read: ``Tried to read 2147483647 tagged field(s), but
  there are only 6 bytes remaining.``  Kafka's generated loop reads on until a field fails (at the end of
  its buffer, ``BufferUnderflowException``, ``null``; or, for the record above, whose first field has size
  -6, ``NegativeArraySizeException``, ``-6``, as the dump oracle shows); the record fails either way, here
  at once and said plainly (a difference docs/cli.rst lists).  A negative count (a varint past 2^31 - 1)
  reads no field, as Kafka's loop does.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from importlib import resources
from typing import Any

from .._java_utf8 import JAVA_UTF8
from ..errors import IllegalArgumentError, KafkaLogError
from ..record.kraft import unsigned_varint

__all__ = ["FieldSpec", "MessageReadError", "MessageSchema", "Reader", "StructSpec", "java_double",
           "read_api_message", "read_version_prefix", "schema", "schema_names", "to_json"]

_SCHEMA_DIR = "schemas"  # beside this module, shipped as package data
_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString()
_NO_VERSIONS = (0, -1)  # Kafka's Versions.NONE


class MessageReadError(KafkaLogError, ValueError):
    """A message's bytes do not read as its schema says (Kafka: the ``RuntimeException`` a generated
    ``read`` throws)."""


# -- versions --------------------------------------------------------------------------------------

def _versions(text: str | None) -> tuple[int, int]:
    """A schema version range (``"0+"``, ``"1-3"``, ``"2"``, ``"none"``) as ``(lowest, highest)``."""
    if text is None or text == "none":
        return _NO_VERSIONS
    text = str(text).strip()
    if text.endswith("+"):
        return int(text[:-1]), 0x7FFF
    if "-" in text:
        low, high = text.split("-", 1)
        return int(low), int(high)
    return int(text), int(text)


def _intersect(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Kafka: ``Versions.intersect``."""
    low, high = max(a[0], b[0]), min(a[1], b[1])
    return (low, high) if low <= high else _NO_VERSIONS


def _subtract(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """Kafka: ``Versions.subtract``; a difference of two ranges, which no schema has (Kafka's generator fails
    on it), is refused."""
    if b[0] <= a[0]:
        if b[1] >= a[1]:
            return _NO_VERSIONS
        return a if b[1] < a[0] else (b[1] + 1, a[1])
    if b[1] >= a[1]:
        return a if b[0] - 1 < 0 or b[0] - 1 >= a[1] else (a[0], b[0] - 1)
    raise MessageReadError(f"versions {a} less {b} are two ranges")


def _generated_test(containing: tuple[int, int], possible: tuple[int, int], version: int) -> bool:
    """Whether Kafka's generated code, which can run at the versions ``possible``, takes the branch for the
    versions ``containing`` at ``version`` (Kafka: ``VersionConditional.generate``): the test is written only for
    the bounds of ``containing`` that cut into ``possible``, so a version outside ``possible`` passes the bound
    that was not written."""
    (c_low, c_high), (p_low, p_high) = containing, possible
    if p_low < c_low:
        if p_high > c_high:
            return c_low <= version <= c_high
        return version >= c_low if p_high >= c_low else False
    if p_high >= c_low and p_low <= c_high:
        return version <= c_high if p_high > c_high else True
    return False


# -- the schema --------------------------------------------------------------------------------------

_PRIMITIVES = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid",
                         "string", "bytes", "records"})


@dataclass
class FieldSpec:
    """One field of a struct (Kafka: ``FieldSpec``)."""

    name: str
    type: str  # "int32", "string", "[]int32", "[]Struct", "Struct", ...
    versions: tuple[int, int]
    nullable: tuple[int, int]
    tagged: tuple[int, int]
    tag: int | None
    default: Any
    flexible: tuple[int, int] | None  # the field's own flexibleVersions, when it has one
    default_null: bool = False  # the schema's default is "null"
    struct: StructSpec | None = None  # the element struct of a struct or struct-array field

    @property
    def json_name(self) -> str:
        """Kafka: ``FieldSpec.camelCaseName`` (the name with its first letter lower-cased)."""
        return self.name[:1].lower() + self.name[1:]

    @property
    def element(self) -> str:
        return self.type[2:] if self.type.startswith("[]") else self.type

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")


@dataclass
class StructSpec:
    """A struct: the message itself, an inline struct or a common struct (Kafka: ``StructSpec``)."""

    name: str
    versions: tuple[int, int]
    fields: list[FieldSpec] = field(default_factory=list)
    #: A common struct's class is generated for its own versions; an inline one's for its parent's.
    common: bool = False


@dataclass
class MessageSchema:
    """One message schema file, parsed (Kafka: ``MessageSpec``)."""

    name: str
    api_key: int | None
    valid: tuple[int, int]
    flexible: tuple[int, int]
    root: StructSpec

    def read(self, data: bytes | memoryview, version: int, *, pos: int = 0) -> tuple[dict[str, Any], int]:
        """The message at ``data[pos:]`` read as ``version``: its JSON tree (as :meth:`Reader.message` gives
        it) and the position after it."""
        reader = Reader(data, pos, self)
        return reader.message(version), reader.pos


def _strip_comments(text: str) -> str:
    """Kafka's schema files are JSON with ``//`` comments (its parser allows them); drop the comments, and
    only outside strings."""
    out = []
    in_string = escaped = False
    i = 0
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _parse_default(type_name: str, raw: Any) -> Any:
    """A field's default as the value a reader would hold (Kafka: ``FieldSpec.fieldDefault``)."""
    if type_name.startswith("[]"):
        return None if raw == "null" else []
    if raw == "null":
        return None
    if type_name == "bool":
        return str(raw).lower() == "true" if raw is not None else False
    if type_name in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return 0 if raw in (None, "") else int(str(raw), 0)
    if type_name == "float64":
        return 0.0 if raw in (None, "") else float(raw)
    if type_name == "uuid":
        return raw or _ZERO_UUID
    if type_name == "string":
        return "" if raw is None else str(raw)
    if type_name == "bytes":
        return b""
    return None  # a struct: compared field by field, see Reader._is_default


def _field(raw: dict[str, Any], commons: dict[str, dict[str, Any]],
           structs: dict[str, StructSpec]) -> FieldSpec:
    versions = _versions(raw.get("versions"))
    spec = FieldSpec(
        name=raw["name"], type=raw["type"].strip(), versions=versions,
        nullable=_versions(raw.get("nullableVersions")), tagged=_versions(raw.get("taggedVersions")),
        # Kafka's schema reader takes a tag written as a JSON string ("0", in RegisterBrokerRecord) as the number.
        tag=None if raw.get("tag") is None else int(raw["tag"]), default=None,
        flexible=_versions(raw["flexibleVersions"]) if "flexibleVersions" in raw else None)
    spec.default = _parse_default(spec.type, raw.get("default"))
    spec.default_null = raw.get("default") == "null"
    element = spec.element
    if element not in _PRIMITIVES:
        if "fields" in raw:
            spec.struct = _struct(element, versions, raw["fields"], commons, structs)
        elif element in structs:
            spec.struct = structs[element]
        elif element in commons:
            common = commons[element]
            spec.struct = _struct(element, _versions(common.get("versions", "0+")), common["fields"], commons,
                                  structs)
            spec.struct.common = True
        else:
            raise MessageReadError(f"schema field {spec.name} has unknown type {spec.type}")
    return spec


def _struct(name: str, versions: tuple[int, int], fields: list[dict[str, Any]],
            commons: dict[str, dict[str, Any]], structs: dict[str, StructSpec]) -> StructSpec:
    spec = StructSpec(name, versions)
    structs[name] = spec  # before the fields: a struct may be named again further down
    spec.fields = [_field(f, commons, structs) for f in fields]
    return spec


def _schema_dir() -> Any:
    return resources.files(__package__ or "kafkalog.messages").joinpath(_SCHEMA_DIR)


@functools.cache
def schema(name: str) -> MessageSchema:
    """The vendored message schema in the file ``<name>.json`` (``"OffsetCommitValue"``, ``"TopicRecord"``, ...),
    parsed once."""
    text = _schema_dir().joinpath(f"{name}.json").read_text(encoding="utf-8")
    raw = json.loads(_strip_comments(text))
    commons = {c["name"]: c for c in raw.get("commonStructs", [])}
    valid = _versions(raw.get("validVersions"))
    root = _struct(raw["name"], valid, raw["fields"], commons, {})
    return MessageSchema(raw["name"], raw.get("apiKey"), valid, _versions(raw.get("flexibleVersions")), root)


def schema_names() -> list[str]:
    """The names of every vendored schema."""
    return sorted(p.name[:-5] for p in _schema_dir().iterdir() if p.name.endswith(".json"))


# -- reading -------------------------------------------------------------------------------------

#: The least a tagged field takes: a one-byte varint tag and a one-byte varint size (an empty value).
_MIN_TAGGED_FIELD_SIZE = 2


def _java_int(value: int) -> int:
    """``value`` as a Java ``int`` holds it (two's complement, 32 bits)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


_FIXED = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
          "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"), "int64": struct.Struct(">q"),
          "float64": struct.Struct(">d")}


class Reader:
    """Reads one message of a schema; :meth:`message` yields what the message's ``*JsonConverter.write``
    would build, as plain Python (dict, list, str, int, float, bool, None, and ``bytes`` for Kafka's
    ``BinaryNode``), keys in schema order."""

    def __init__(self, data: bytes | memoryview, pos: int, message: MessageSchema) -> None:
        self.data = bytes(data)
        if not 0 <= pos <= len(self.data):
            raise IllegalArgumentError(f"position {pos} is outside the message's {len(self.data)} bytes")
        self.pos = pos
        self.schema = message

    # -- primitives (Kafka: ByteBufferAccessor) --

    @property
    def remaining(self) -> int:
        """The bytes left to read (Kafka: ``Readable.remaining``)."""
        return len(self.data) - self.pos

    def _take(self, n: int) -> bytes:
        # Never backwards: a reader whose position can move back can loop for ever over the same bytes.
        if n < 0:
            raise MessageReadError(f"Error reading byte array of {n} byte(s): a negative size")
        if n > self.remaining:
            # java.nio.BufferUnderflowException, whose getMessage() is null
            raise MessageReadError("null")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def _array(self, n: int) -> bytes:
        """Kafka: ``ByteBufferAccessor.readArray``, which fails on a size past the bytes left and (in
        ``new byte[n]``) on a negative one."""
        remaining = self.remaining
        if n > remaining:
            raise MessageReadError(f"Error reading byte array of {n} byte(s): only {remaining} byte(s) available")
        return self._take(n)

    def _fixed(self, type_name: str) -> Any:
        codec = _FIXED[type_name]
        return codec.unpack(self._take(codec.size))[0]

    def uvarint(self) -> int:
        """Kafka: ``ByteUtils.readUnsignedVarint`` (at most 5 bytes; the result is a Java int)."""
        value = unsigned_varint(self._take)
        if value is None:
            raise MessageReadError("Varint is too long, the most significant bit in the 5th byte is set")
        return _java_int(value)

    def _primitive(self, type_name: str) -> Any:
        if type_name == "bool":
            return self._take(1)[0] != 0
        if type_name == "uuid":
            return base64.urlsafe_b64encode(self._take(16)).decode("ascii").rstrip("=")
        return self._fixed(type_name)

    # -- variable length (Kafka: generateVariableLengthReader) --

    def _length(self, kind: str, flexible: bool) -> int:
        if flexible:
            # readUnsignedVarint() - 1 in Java int arithmetic: 2^31 (Integer.MIN_VALUE) less one wraps to
            # Integer.MAX_VALUE, a length the checks below refuse, not a null.
            return _java_int(self.uvarint() - 1)
        return int(self._fixed("int16" if kind == "string" else "int32"))

    def _variable(self, spec: FieldSpec, version: int, flexible: bool, name: str, nullable: bool,
                  parent: tuple[int, int], element_type: str | None = None) -> Any:
        type_name = element_type or spec.type
        kind = "array" if type_name.startswith("[]") else type_name
        length = self._length(kind, flexible)
        if length < 0:
            if not nullable:
                raise MessageReadError(f"non-nullable field {name} was serialized as null")
            return None
        if kind == "string":
            if length > 0x7FFF:
                raise MessageReadError(f"string field {name} had invalid length {length}")
            return self._array(length).decode("utf-8", JAVA_UTF8)
        if kind in ("bytes", "records"):
            return self._array(length)
        remaining = self.remaining
        if length > remaining:
            raise MessageReadError(f"Tried to allocate a collection of size {length}, but there are only "
                                   f"{remaining} bytes remaining.")
        element = type_name[2:]
        out: list[Any] = []
        for _ in range(length):
            if element in ("string", "bytes"):
                out.append(self._variable(spec, version, flexible, f"{name} element", False, parent, element))
            elif spec.struct is not None:
                out.append(self._struct(spec.struct, parent, version))
            else:
                out.append(self._primitive(element))
        return out

    def _value(self, spec: FieldSpec, possible: tuple[int, int], version: int, tagged: bool,
               parent: tuple[int, int]) -> Any:
        """A field's value, read by code that runs at the versions ``possible``; ``parent`` is the versions the
        class of a struct it holds is generated for."""
        nullable = _generated_test(spec.nullable, possible, version)
        if spec.struct is not None and not spec.is_array:
            if nullable:
                present = self.uvarint() > 0 if tagged else self._fixed("int8") >= 0
                if not present:
                    return None
            return self._struct(spec.struct, parent, version)
        if spec.is_array or spec.type in ("string", "bytes", "records"):
            # Tagged fields always use the flexible encoding.
            flexible = tagged or _generated_test(spec.flexible if spec.flexible is not None else self.schema.flexible,
                                                 possible, version)
            return self._variable(spec, version, flexible, spec.json_name, nullable, parent)
        return self._primitive(spec.type)

    # -- structs (Kafka: generateClassReader, then JsonConverterGenerator.generateWrite) --

    def message(self, version: int) -> dict[str, Any]:
        """Kafka: ``new <Message>(readable, version)`` then ``<Message>JsonConverter.write(message, version)``."""
        root = self.schema.root
        return self._struct(root, root.versions, version)

    def _struct(self, spec: StructSpec, parent: tuple[int, int], version: int) -> dict[str, Any]:
        """A struct whose class is generated for the versions ``parent`` (a message's: its valid versions; an
        inline struct's: where its parent's code runs; a common struct's: its own)."""
        if spec.common:
            parent = spec.versions
        if not _generated_test(parent, spec.versions, version):
            raise MessageReadError(f"Can't read version {version} of {spec.name}")
        current = _intersect(parent, spec.versions)  # the versions this struct's code runs at
        values: dict[str, Any] = {}
        for f in spec.fields:
            mandatory = _subtract(f.versions, f.tagged)
            if _generated_test(mandatory, current, version):
                values[f.name] = self._value(f, _intersect(current, mandatory), version, False, current)
        flexible = _intersect(current, self.schema.flexible)
        if _generated_test(self.schema.flexible, current, version):
            by_tag = {f.tag: f for f in spec.fields
                      if f.tag is not None and _intersect(f.versions, f.tagged) != _NO_VERSIONS}
            count = self.uvarint()
            if count > self.remaining // _MIN_TAGGED_FIELD_SIZE:
                raise MessageReadError(f"Tried to read {count} tagged field(s), but there are only {self.remaining} "
                                       "bytes remaining.")
            for _ in range(count):  # a negative count reads none, as Kafka's loop does
                tag = self.uvarint()
                size = self.uvarint()
                known = by_tag.get(tag)
                if known is None:
                    self._array(size)  # an unknown tagged field: kept by Kafka, never printed
                    continue
                tagged = _intersect(known.versions, known.tagged)
                if not _generated_test(tagged, flexible, version):
                    raise MessageReadError(f"Tag {tag} is not valid for version {version}")
                values[known.name] = self._value(known, _intersect(flexible, tagged), version, True, current)
        # The converter (JsonConverterGenerator.generateWrite), generated for the same versions.
        out: dict[str, Any] = {}
        for f in spec.fields:
            if not _generated_test(f.versions, current, version):
                continue
            value = values.get(f.name, f.default)  # a field the reader skipped holds its default
            if _generated_test(f.tagged, _intersect(current, f.versions), version) and (
                    f.name not in values or self._is_default(f, value, version)):
                continue  # a tagged field a converter leaves out: absent, or at its default
            out[f.json_name] = value
        return out

    def _is_default(self, spec: FieldSpec, value: Any, version: int) -> bool:
        """Kafka: ``FieldSpec.generateNonDefaultValueCheck``, negated."""
        if spec.struct is not None and not spec.is_array:
            if value is None:
                return spec.default_null
            if spec.default_null:
                return False
            return all(f.json_name not in value or self._is_default(f, value[f.json_name], version)
                       for f in spec.struct.fields)
        if isinstance(spec.default, float):
            return isinstance(value, float) and value == spec.default
        return bool(value == spec.default)


# -- framed records (Kafka: AbstractApiMessageSerde) --------------------------------------------------------

def _unsigned_short(reader: Reader, entity: str) -> int:
    """Kafka: ``AbstractApiMessageSerde.unsignedIntToShort``."""
    try:
        value = reader.uvarint()
    except MessageReadError as e:
        raise MessageReadError(f"Error while reading {entity}") from e
    if value > 0x7FFF:
        raise MessageReadError(f"Value for {entity} was too large.")
    return value


def read_version_prefix(data: bytes, what: str) -> int:
    """The ``int16`` version in front of a version-prefixed message (the frame
    :func:`~kafkalog.messages.writer.write_version_prefixed` writes: every ``__consumer_offsets`` and
    ``__transaction_state`` key and value); the message follows at byte 2.  ``what`` names the buffer in the error
    (``"key"``, ``"value"``).

    Kafka: ``CoordinatorRecordSerde.readVersion`` (group-coordinator, 3.8.0), and its message.

    Raises:
        MessageReadError: fewer than two bytes.
    """
    if len(data) < 2:
        raise MessageReadError(f"Could not read version from {what}'s buffer.")
    return int(struct.unpack_from(">h", data)[0])


def read_api_message(value: bytes | None, schemas: Mapping[int, str]) -> tuple[int, int, dict[str, Any]]:
    """A record framed as ``uvarint frame version (1)``, ``uvarint apiKey``, ``uvarint version``, then the
    message of that api key (``schemas`` maps api keys to schema names): ``(apiKey, version, message)``.

    Kafka: ``AbstractApiMessageSerde.read`` (server-common, 3.8.0), the frame of ``__cluster_metadata``'s
    records and of ``__remote_log_metadata``'s (``BytesApiMessageSerde``), with its messages; an unknown api
    key is the ``UnsupportedVersionException`` the generated ``MetadataRecordType.fromId`` throws, as
    ``MetadataParseException(e)`` words it.  A record without a value fails where Kafka's does: its
    ``ByteBufferAccessor`` over a null buffer throws at the first read, the frame version's.
    """
    if value is None:
        raise MessageReadError("Error while reading frame version")
    reader = Reader(value, 0, schema(next(iter(schemas.values()))))
    frame_version = _unsigned_short(reader, "frame version")
    if frame_version == 0:
        raise MessageReadError("Could not deserialize metadata record with frame version 0. Note that upgrades "
                               "from the preview release of KRaft in 2.8 to newer versions are not supported.")
    if frame_version != 1:
        raise MessageReadError(f"Could not deserialize metadata record due to unknown frame version "
                               f"{frame_version}(only frame version 1 is supported)")
    api_key = _unsigned_short(reader, "type")
    version = _unsigned_short(reader, "version")
    if api_key not in schemas:
        raise MessageReadError(f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata "
                               f"id {api_key}")
    try:
        data, end = schema(schemas[api_key]).read(value, version, pos=reader.pos)
    except MessageReadError as e:
        raise MessageReadError(f"Failed to deserialize record with type {api_key}") from e
    if end < len(value):
        raise MessageReadError(f"Found {len(value) - end} byte(s) of garbage after {api_key}")
    return api_key, version, data


# -- Jackson's JsonNode.toString ------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _string(text: str) -> str:
    # Jackson escapes quote, backslash and the control characters (these short forms, the rest as \\u00XX,
    # upper-case hex); everything else, non-ASCII included, is written as it is.
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04X}"), text) + '"'


def java_double(value: float) -> str:
    """Java's ``Double.toString`` (how Jackson writes a ``DoubleNode``): ``1.0``, ``1.5E7``, ``1.0E-4``; NaN
    and the infinities quoted, as Jackson's default ``QUOTE_NON_NUMERIC_NUMBERS`` writes them.  The digits
    are the shortest that read back as the same double (Java 19+; older JVMs may print a longer tail)."""
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(abs(value))
        return sign + (text if "." in text else text + ".0")
    _sign, digits, exponent = Decimal(repr(abs(value))).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    scale = len(digits) + exponent - 1
    return f"{sign}{text[0]}.{text[1:] or '0'}E{scale}"


def to_json(value: Any) -> str:
    """A converter's tree as Jackson's ``JsonNode.toString`` writes it: no spaces, keys in order, binary as
    standard base64 with padding, doubles as Java prints them."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bytes | bytearray):
        return '"' + base64.b64encode(value).decode("ascii") + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string(k)}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    raise TypeError(f"not a JSON node: {value!r}")
