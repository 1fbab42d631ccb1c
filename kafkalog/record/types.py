"""The small value types of Kafka's record classes: timestamp types, control records, and the Java integer
types every field of a record's header is declared with.

A port of ``EndTransactionMarker.java`` (clients, ``org.apache.kafka.common.record``, tag 3.8.0), and the
home of the ports of ``TimestampType.java`` and ``ControlRecordType.java``, which live in ``kafkalog._common``
because both kernel twins hand them out on the records they decode (the kernels sit below this layer).

A Java caller cannot hand Kafka's builders a producer epoch past a ``short`` or a coordinator epoch past an
``int``: the types forbid it.  A Python caller can, so every builder checks each header field it is given
with :func:`java_integer` first, and a value out of its type's range is an
:class:`~kafkalog.errors.IllegalArgumentError` naming the argument and the field, never a ``struct.error``
from deep inside the packing nor a batch that reads back as other numbers.

Control records (v2 only) live alone in a batch whose attributes have the control bit (0x20) set.
Their key is 4 bytes, ``int16 version, int16 type``; an ABORT or COMMIT marker's value is 6 bytes,
``int16 version, int32 coordinator epoch``.  Types 2..6 (LEADER_CHANGE and the KRaft snapshot and
voter records) carry KRaft structures this layer does not interpret; any other type is UNKNOWN.
"""

from __future__ import annotations

import operator
import struct
from typing import NamedTuple

from .._common import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    ControlRecordType,
    TimestampType,
)
from ..errors import IllegalArgumentError, InvalidRecordError

__all__ = ["ControlRecordType", "EndTransactionMarker", "TimestampType", "java_integer"]


_END_TXN_VALUE = struct.Struct(">hi")
CURRENT_END_TXN_MARKER_VERSION = 0


#: Java's integer types, by name: the least and the greatest value of each.
_JAVA_INTEGERS = {"byte": (-(2**7), 2**7 - 1), "short": (-(2**15), 2**15 - 1), "int": (INT32_MIN, INT32_MAX),
                  "long": (INT64_MIN, INT64_MAX)}


def java_integer(value: object, name: str, field: str, java_type: str) -> int:
    """``value``, given as the argument ``name`` for Kafka's ``field``, which Kafka declares a Java
    ``java_type`` (``byte``, ``short``, ``int`` or ``long``): the integer itself when it fits.

    Raises:
        TypeError: ``value`` is not an integer (numpy's integers are).
        IllegalArgumentError: it does not fit the type, e.g. ``producer_epoch 32768 does not fit the batch
            header's producerEpoch, a Java short (-32768 to 32767)``.
    """
    try:
        number = operator.index(value)  # type: ignore[arg-type]  # anything with __index__, numpy's too
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    low, high = _JAVA_INTEGERS[java_type]
    if not low <= number <= high:
        raise IllegalArgumentError(f"{name} {number} does not fit {field}, a Java {java_type} ({low} to {high})")
    return number


class EndTransactionMarker(NamedTuple):
    """An ABORT or COMMIT marker (Kafka: ``EndTransactionMarker``): the control record a transaction
    coordinator writes to end a transaction."""

    control_type: ControlRecordType
    coordinator_epoch: int

    def record_key(self) -> bytes:
        return self.control_type.record_key()

    def record_value(self) -> bytes:
        """Kafka: ``EndTransactionMarker.serializeValue`` (``int16`` version 0, ``int32`` coordinator epoch).

        Raises:
            IllegalArgumentError: a coordinator epoch past a Java ``int`` (Kafka's field is one).
        """
        epoch = java_integer(self.coordinator_epoch, "coordinator_epoch", "the end transaction marker's "
                             "coordinatorEpoch", "int")
        return _END_TXN_VALUE.pack(CURRENT_END_TXN_MARKER_VERSION, epoch)

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
