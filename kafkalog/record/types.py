"""The small value types of Kafka's record classes: timestamp types and control records.

Ports of ``ControlRecordType.java`` and ``EndTransactionMarker.java`` (clients,
``org.apache.kafka.common.record``, tag 3.8.0), and the home of ``TimestampType.java``'s port, which lives
in ``kafkalog._common`` because both kernel twins hand it out on every record they decode.

Control records (v2 only) live alone in a batch whose attributes have the control bit (0x20) set.
Their key is 4 bytes, ``int16 version, int16 type``; an ABORT or COMMIT marker's value is 6 bytes,
``int16 version, int32 coordinator epoch``.  Types 2..6 (LEADER_CHANGE and the KRaft snapshot and
voter records) carry KRaft structures this layer does not interpret; any other type is UNKNOWN.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from .._common import TimestampType
from ..errors import InvalidRecordError

__all__ = ["ControlRecordType", "EndTransactionMarker", "TimestampType"]


_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")
CONTROL_RECORD_KEY_SIZE = _CONTROL_KEY.size
CURRENT_CONTROL_RECORD_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VERSION = 0


class ControlRecordType(enum.IntEnum):
    """The type in a control record's key (Kafka: ``ControlRecordType``)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def parse(cls, key: bytes | None) -> ControlRecordType:
        """The type a control record's key names (Kafka: ``ControlRecordType.parse``).

        A key shorter than 4 bytes or with a negative version is invalid; a newer version is read as
        version 0, and a type this port does not know is ``UNKNOWN``, not an error, as in Kafka.
        """
        if key is None or len(key) < CONTROL_RECORD_KEY_SIZE:
            size = 0 if key is None else len(key)
            raise InvalidRecordError(
                f"Invalid record size for a control record key: expected at least "
                f"{CONTROL_RECORD_KEY_SIZE} bytes, found {size}"
            )
        version, type_id = _CONTROL_KEY.unpack_from(key)
        if version < 0:
            raise InvalidRecordError(f"Invalid version found for control record: {version}")
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN

    @staticmethod
    def type_id(key: bytes) -> int:
        """The raw type number in a control key, for reporting an UNKNOWN type (``UNKNOWN(n)``)."""
        return int(_CONTROL_KEY.unpack_from(key)[1])

    def record_key(self) -> bytes:
        """The 4-byte key of a control record of this type (version 0)."""
        if self is ControlRecordType.UNKNOWN:
            raise ValueError("Cannot write a control record of type UNKNOWN")
        return _CONTROL_KEY.pack(CURRENT_CONTROL_RECORD_KEY_VERSION, int(self))


class EndTransactionMarker(NamedTuple):
    """An ABORT or COMMIT marker (Kafka: ``EndTransactionMarker``): the control record a transaction
    coordinator writes to end a transaction."""

    control_type: ControlRecordType
    coordinator_epoch: int

    def record_key(self) -> bytes:
        return self.control_type.record_key()

    def record_value(self) -> bytes:
        return _END_TXN_VALUE.pack(CURRENT_END_TXN_MARKER_VERSION, self.coordinator_epoch)

    @classmethod
    def deserialize(cls, key: bytes | None, value: bytes | None) -> EndTransactionMarker:
        """Read a marker from a control record's key and value.

        Kafka: ``EndTransactionMarker.deserialize``.
        """
        control_type = ControlRecordType.parse(key)
        if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            raise InvalidRecordError(
                f"Invalid control record type for an end transaction marker: {control_type.name}"
            )
        if value is None or len(value) < _END_TXN_VALUE.size:
            raise InvalidRecordError(
                f"Invalid end transaction marker value: expected {_END_TXN_VALUE.size} bytes, found "
                f"{0 if value is None else len(value)}"
            )
        version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
        if version < 0:
            raise InvalidRecordError(f"Invalid version found for end transaction marker: {version}")
        return cls(control_type, coordinator_epoch)
