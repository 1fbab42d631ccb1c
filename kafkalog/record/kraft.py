"""The KRaft control records a snapshot or a ``__cluster_metadata`` log holds, read into Kafka's JSON.

Kafka's ``DumpLogSegments`` prints these control records as the JSON of their generated message classes
(``SnapshotHeaderRecordJsonConverter`` and friends, clients ``common/message/*.json``).  Each value is a
flexible-version message (version 0), big-endian, ending in a tagged-field section:

- ``SnapshotHeaderRecord`` (type 3): ``int16 version, int64 lastContainedLogTimestamp``
- ``SnapshotFooterRecord`` (type 4): ``int16 version``
- ``KRaftVersionRecord`` (type 5): ``int16 version, int16 kRaftVersion``
- ``VotersRecord`` (type 6): ``int16 version``, then a compact array of voters, each ``int32 voterId,
  uuid voterDirectoryId``, a compact array of endpoints (``compact string name, compact string host,
  uint16 port``, tagged fields) and a ``kRaftVersionFeature`` struct (``int16 minSupportedVersion,
  int16 maxSupportedVersion``, tagged fields), then the voter's tagged fields.

A compact array or string stores its length plus one as an unsigned varint (0 means null).  Tagged
fields are read and skipped.  The JSON keys and their order are those of Kafka's converters; a UUID is
written in Kafka's URL-safe base64 without padding.  Kafka 3.9 named the voter's UUID field
``VoterDirectoryId`` (the name this module writes); pre-release schemas called it ``VoterUuid``.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from typing import Any

from .._java_utf8 import JAVA_UTF8
from ..errors import InvalidRecordError
from .types import ControlRecordType

__all__ = ["kraft_control_json", "unsigned_varint"]

_LABELS = {
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


class _Reader:
    """Reads one message's fields in order; any read past the end is an :class:`InvalidRecordError`."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise InvalidRecordError(f"{self.what} is truncated: needs {n} bytes at byte {self.pos} of "
                                     f"{len(self.data)}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def uint16(self) -> int:
        return int(struct.unpack(">H", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uvarint(self) -> int:
        value = unsigned_varint(self._take)
        if value is None:
            raise InvalidRecordError(f"{self.what} has a varint longer than 5 bytes at byte {self.pos}")
        return value

    def compact_length(self) -> int:
        """A compact array or string length; null (0) is not valid in these messages."""
        n = self.uvarint() - 1
        if n < 0:
            raise InvalidRecordError(f"{self.what} has a null where a value is required (byte {self.pos})")
        return n

    def compact_string(self) -> str:
        return self._take(self.compact_length()).decode("utf-8", JAVA_UTF8)

    def uuid(self) -> str:
        return base64.urlsafe_b64encode(self._take(16)).decode("ascii").rstrip("=")

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


def unsigned_varint(take: Callable[[int], bytes]) -> int | None:
    """An unsigned varint (7 bits a byte, low bits first) of at most 5 bytes, read a byte at a time through
    ``take(1)``; ``None`` when a fifth byte still says more follow (Kafka: ``ByteUtils.readUnsignedVarint``)."""
    value = 0
    for shift in range(0, 35, 7):
        byte = take(1)[0]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
    return None


def _voters(reader: _Reader) -> dict[str, Any]:
    out: dict[str, Any] = {"version": reader.int16(), "voters": []}
    for _ in range(reader.compact_length()):
        voter: dict[str, Any] = {"voterId": reader.int32(), "voterDirectoryId": reader.uuid(), "endpoints": []}
        for _ in range(reader.compact_length()):
            endpoint = {"name": reader.compact_string(), "host": reader.compact_string(), "port": reader.uint16()}
            reader.tagged_fields()
            voter["endpoints"].append(endpoint)
        voter["kRaftVersionFeature"] = {"minSupportedVersion": reader.int16(),
                                        "maxSupportedVersion": reader.int16()}
        reader.tagged_fields()
        reader.tagged_fields()
        out["voters"].append(voter)
    return out


def _parse(control_type: ControlRecordType, reader: _Reader) -> dict[str, Any]:
    if control_type is ControlRecordType.SNAPSHOT_HEADER:
        out: dict[str, Any] = {"version": reader.int16(), "lastContainedLogTimestamp": reader.int64()}
    elif control_type is ControlRecordType.SNAPSHOT_FOOTER:
        out = {"version": reader.int16()}
    elif control_type is ControlRecordType.KRAFT_VERSION:
        out = {"version": reader.int16(), "kRaftVersion": reader.int16()}
    else:
        out = _voters(reader)
    reader.tagged_fields()
    return out


def kraft_control_json(control_type: ControlRecordType, value: bytes | None) -> tuple[str, str] | None:
    """``(label, json)`` for a KRaft snapshot or voters control record, as ``DumpLogSegments`` prints it
    (``SnapshotHeader {"version":0,...}``); ``None`` for any other control type.

    Raises :class:`InvalidRecordError` when the value is missing or cut short.
    """
    label = _LABELS.get(control_type)
    if label is None:
        return None
    if value is None:
        raise InvalidRecordError(f"{label} control record has no value")
    reader = _Reader(value, f"{label} control record")
    return label, json.dumps(_parse(control_type, reader), separators=(",", ":"))
