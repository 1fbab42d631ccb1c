"""Layout constants and column types shared by the two kernel twins (``_core.pyx`` and ``_core_py``).

Byte positions follow Kafka's ``Records``, ``LegacyRecord`` and ``DefaultRecordBatch`` (clients,
tag 3.8.0); all integers on disk are big-endian.  Both twins import from here so that a position
changed in one place changes for both.

The batch scan and the record decode return numpy structured arrays with these dtypes.  The compiled
twin writes them through packed C structs of the same layout, so a field added here must be added, in
the same place, to the ``cdef packed struct`` declarations in ``_core.pyx``.
"""

from __future__ import annotations

import enum
import re
import struct
from typing import Self

import numpy as np

from .errors import InvalidRecordError

# --- framing common to every magic (Records.java) ------------------------------------------------
# Java's Integer and Long bounds, which Kafka's formats and checks are written in terms of.
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def java_long(value: int) -> int:
    """``value`` as Java's ``long`` arithmetic leaves it (two's complement, 64 bits): Kafka's offset and
    timestamp sums wrap instead of growing."""
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


OFFSET_OFFSET = 0
SIZE_OFFSET = 8
LOG_OVERHEAD = 12  # offset (int64) + size (int32)
MAGIC_OFFSET = 16  # the magic byte sits at the same place in v0, v1 and v2
HEADER_SIZE_UP_TO_MAGIC = 17

MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2
CURRENT_MAGIC = MAGIC_V2

# --- legacy messages, v0 and v1 (LegacyRecord.java); positions inside the message, after the frame --
LEGACY_CRC_OFFSET = 0
LEGACY_MAGIC_OFFSET = 4
LEGACY_ATTRIBUTES_OFFSET = 5
LEGACY_TIMESTAMP_OFFSET = 6  # v1 only
LEGACY_KEY_SIZE_OFFSET_V0 = 6
LEGACY_KEY_SIZE_OFFSET_V1 = 14
RECORD_OVERHEAD_V0 = 14  # crc + magic + attributes + key size + value size
RECORD_OVERHEAD_V1 = 22  # ... + timestamp
MIN_RECORD_OVERHEAD = RECORD_OVERHEAD_V0  # the smallest size field any entry may carry
LEGACY_COMPRESSION_MASK = 0x07
LEGACY_TIMESTAMP_TYPE_MASK = 0x08

# --- record batch v2 (DefaultRecordBatch.java); positions from the start of the batch ------------
BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

#: The record filter's word on a batch, a bit each, as ``filter_v2_batches`` takes it: keep it as a bare header
#: when no record of it is kept (Kafka: ``BatchRetention.RETAIN_EMPTY``); it is the marker of a transaction
#: none of whose batches is left (Kafka: ``BatchRetentionResult.containsMarkerForEmptyTxn``).
FILTER_RETAIN_EMPTY = 1
FILTER_EMPTY_TXN_MARKER = 2

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# The fewest bytes one v2 record can take: length, attributes, timestamp delta, offset delta, key
# length, value length and header count, one byte each.  Used to refuse a record count that the bytes
# cannot hold before anything is allocated for it.
MIN_V2_RECORD_SIZE = 7
MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


class NamedChoice(enum.StrEnum):
    """A Kafka Java enum whose members are written as their lower-case names (``AppendOrigin``,
    ``FetchIsolation``): members compare equal to those names, and :meth:`of` takes a member or a name in either
    case."""

    @classmethod
    def of(cls, value: object) -> Self:
        """The member ``value`` names; a :class:`ValueError` naming the choices for anything else."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value.lower())
            except ValueError:
                pass
        what = re.sub(r"(?<!^)(?=[A-Z])", " ", cls.__name__).lower()  # AppendOrigin -> "append origin"
        names = ", ".join(member.value for member in cls)
        raise ValueError(f"Unknown {what} {value!r}: expected one of {names}")


class ScanStop(enum.IntEnum):
    """Why the batch scan stopped.  Every reason but ``END`` and ``LIMIT`` leaves bytes unread; a reader
    ends quietly at ``PARTIAL`` (unless strict) and ``ZERO_TAIL``, and raises at the others."""

    END = 0  #: the range was consumed exactly
    PARTIAL = 1  #: the bytes left are the start of an entry that does not fit (a write cut short)
    SIZE_TOO_SMALL = 2  #: a size field below what the entry's magic needs
    TOO_LARGE = 3  #: a size field past the caller's limit
    BAD_MAGIC = 4  #: a magic byte other than 0, 1, 2
    BAD_CRC = 5  #: the stored CRC does not match the bytes (only when asked to stop on it)
    LIMIT = 6  #: the caller's batch limit was reached before the end
    #: every byte left is zero (a size field of 0, then zeros to the end): a preallocated segment that was
    #: not trimmed, or a file extended but never written; the end of the data, which recovery cuts off
    ZERO_TAIL = 7


class IndexKind(enum.IntEnum):
    """Which index and which half of its entries a search compares (Kafka's ``IndexSearchType``)."""

    OFFSET_KEY = 0  #: offset index, by offset (``base + int32`` at 0 of an 8-byte entry)
    OFFSET_VALUE = 1  #: offset index, by file position (``int32`` at 4)
    TIME_KEY = 2  #: time index, by timestamp (``int64`` at 0 of a 12-byte entry)
    TIME_VALUE = 3  #: time index, by offset (``base + int32`` at 8)


class RecordFate(enum.IntEnum):
    """What the offset map says of a record in the cleaner's retain pass: the key test of Kafka's
    ``Cleaner.shouldRetainRecord`` (``LogCleaner.scala``), one int8 a record as ``offset_map_latest_codes``
    returns it.  Whether a ``LATEST`` record is kept depends on its value: a tombstone goes once its delete
    horizon has passed."""

    NO_KEY = -1  #: the record has no key, so the map cannot say: dropped, and counted as invalid
    SUPERSEDED = 0  #: a later offset of its key is in the map: dropped
    LATEST = 1  #: the latest offset of its key: kept, unless a tombstone past its delete horizon
    PAST_MAP = 2  #: past the map's latest offset, so not deduplicated in this round: kept


INDEX_ENTRY_SIZE = {IndexKind.OFFSET_KEY: 8, IndexKind.OFFSET_VALUE: 8, IndexKind.TIME_KEY: 12,
               IndexKind.TIME_VALUE: 12}
#: Kafka's warm section: the last 8 KiB of an index, the pages appends and recent reads keep in memory.
WARM_SECTION_BYTES = 8192


#: One row per log entry found by the scan.  ``position`` is where its 12-byte frame starts and
#: ``size`` the whole entry (frame included).  For legacy entries ``base_offset`` and ``last_offset``
#: are both the frame's offset (for a compressed wrapper that is its last inner offset; the true base
#: needs decompression) and ``record_count`` is -1 for a wrapper.  ``valid`` is 1 or 0 when the CRC
#: was checked, -1 when it was not.
BATCH_DTYPE = np.dtype(
    [
        ("position", "i8"),
        ("size", "i4"),
        ("base_offset", "i8"),
        ("last_offset", "i8"),
        ("max_timestamp", "i8"),
        ("crc", "u4"),
        ("record_count", "i4"),
        ("attributes", "i2"),
        ("magic", "i1"),
        ("valid", "i1"),
    ],
    align=False,
)

#: One row per record found by the record decode.  Positions index the buffer handed to the kernel;
#: a length of -1 means null.  ``header_index``/``header_count`` select rows of the header columns.
#: ``crc``, ``attributes`` and ``magic`` are the legacy message's own (0 and 2 for v2 records).
RECORD_DTYPE = np.dtype(
    [
        ("offset", "i8"),
        ("timestamp", "i8"),
        ("key_pos", "i8"),
        ("value_pos", "i8"),
        ("key_len", "i4"),
        ("value_len", "i4"),
        ("header_index", "i4"),
        ("header_count", "i4"),
        ("crc", "u4"),
        ("attributes", "i1"),
        ("magic", "i1"),
        ("pad", "i2"),
    ],
    align=False,
)

#: One row per record header.  ``value_len`` is -1 for a null header value.
HEADER_DTYPE = np.dtype(
    [
        ("key_pos", "i8"),
        ("value_pos", "i8"),
        ("key_len", "i4"),
        ("value_len", "i4"),
    ],
    align=False,
)


# Kafka: ``TimestampType.java`` (clients, tag 3.8.0): bit 3 of a v1 message's or a v2 batch's attributes,
# and "none" for v0.  Defined here rather than in ``record.types`` because both kernel twins give it to
# every record they decode, and the record layer imports the twins.
class TimestampType(enum.IntEnum):
    """What a timestamp means (Kafka: ``TimestampType``); ``str()`` gives Kafka's name."""

    NO_TIMESTAMP_TYPE = -1  #: v0 messages carry no timestamp
    CREATE_TIME = 0  #: set by the producer
    LOG_APPEND_TIME = 1  #: set by the broker when it appended the batch

    @property
    def kafka_name(self) -> str:
        return _TIMESTAMP_NAMES[self]

    def __str__(self) -> str:
        return self.kafka_name

    @classmethod
    def of(cls, value: str | int | TimestampType) -> TimestampType:
        """Accepts Kafka's names (``"CreateTime"``), the enum names and the ids."""
        if isinstance(value, str):
            for member, name in _TIMESTAMP_NAMES.items():
                if value in (name, member.name, member.name.lower()):
                    return member
            raise ValueError(f"Unknown timestamp type {value!r}: expected CreateTime or LogAppendTime")
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"Unknown timestamp type id {value!r}") from None


_TIMESTAMP_NAMES = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


# Kafka: ``ControlRecordType.java`` (clients, tag 3.8.0).  Defined here rather than in ``record.types``, as
# TimestampType is, because both kernel twins give it to every control record they decode.  A control key is
# ``int16 version, int16 type``.
_CONTROL_KEY = struct.Struct(">hh")
CONTROL_RECORD_KEY_SIZE = _CONTROL_KEY.size
CURRENT_CONTROL_RECORD_KEY_VERSION = 0


class ControlRecordType(enum.IntEnum):
    """The type in a control record's key (Kafka: ``ControlRecordType``).  An ``int`` (its id, which it equals and
    compares as); ``str()`` and formatting give its name, ``ABORT``, ``COMMIT``, as Kafka's enum prints, and as
    :class:`~kafkalog.TimestampType` gives Kafka's name (a plain ``IntEnum`` would print the id)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    def __str__(self) -> str:
        return self.name

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
