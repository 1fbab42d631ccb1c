"""Legacy messages, magic 0 and 1, and the compressed wrapper messages that hold a set of them.

Port of ``LegacyRecord.java``, ``AbstractLegacyRecordBatch.java`` and the legacy half of
``MemoryRecordsBuilder.java`` (clients, tag 3.8.0), which replaced ``kafka.message.Message`` and
``ByteBufferMessageSet`` of 0.10.1 with the same bytes.

One log entry = 12-byte frame + one message (big-endian)::

    0  offset      int64   the message's offset; for a wrapper, the offset of its LAST inner message
    8  size        int32   bytes of the message that follows
    12 crc         uint32  CRC-32 (IEEE) of bytes 16..end: magic through the value
    16 magic       int8    0 or 1
    17 attributes  int8    bits 0-2 codec (none, gzip, snappy, lz4), bit 3 LogAppendTime (v1)
    18 timestamp   int64   v1 only; -1 = none
       key size    int32   -1 = null key, then the key bytes
       value size  int32   -1 = null value (a tombstone), then the value bytes

A compressed set is one wrapper message whose key is null and whose value, decompressed, is a run of
framed uncompressed messages of the wrapper's magic.  Inner offsets are absolute in v0 and relative
(0..n-1) in v1, where the absolute offset of inner message ``i`` is
``wrapper offset - last inner relative offset + relative offset of i``.  A v1 wrapper's timestamp is
the largest inner timestamp (CreateTime) or the broker's append time (LogAppendTime, which every
inner record then reports).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import (
    HEADER_DTYPE,
    INT32_MAX,
    INT64_MAX,
    LEGACY_ATTRIBUTES_OFFSET,
    LEGACY_COMPRESSION_MASK,
    LEGACY_CRC_OFFSET,
    LEGACY_MAGIC_OFFSET,
    LEGACY_TIMESTAMP_OFFSET,
    LEGACY_TIMESTAMP_TYPE_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V0,
    MAGIC_V1,
    MIN_RECORD_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_OVERHEAD_V1,
    ScanStop,
    java_long,
)
from ..errors import (
    CorruptRecordError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidRecordError,
    UnsupportedCompressionError,
)
from . import batch as _batch
from .batch import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    RecordBatch,
    RecordColumns,
    RecordInput,
    normalize_records,
)
from .compression import CompressionType, compress, decompress, decompress_buffer
from .types import TimestampType, java_integer

__all__ = [
    "LegacyRecord",
    "LegacyRecordBatch",
    "build_legacy_message_set",
    "build_legacy_message_set_sized",
    "legacy_entry",
]

_FRAME = struct.Struct(">qi")
_MESSAGE_HEAD = struct.Struct(">IbB")  # crc, magic, attributes
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U8 = struct.Struct(">B")  # the attributes byte, as the setter writes it
_U32 = struct.Struct(">I")  # the CRC
_RECORD_HEAD = struct.Struct(">Ibb")  # crc, magic, attributes as LegacyRecord reads them (a Java byte is signed)
_KEY_SIZE_OFFSET_V0 = 6  # in the message: after crc, magic, attributes
_KEY_SIZE_OFFSET_V1 = 14  # and the timestamp
# Legacy messages have no headers; every column set of theirs shares this empty, read-only array.
_NO_HEADERS = np.empty(0, dtype=HEADER_DTYPE)
_NO_HEADERS.flags.writeable = False


def _message_crc(buf: Any, start: int, end: int) -> int:
    """The CRC-32 a legacy message stores: over ``buf[start:end]``, its magic byte to its end (Kafka:
    ``LegacyRecord.computeChecksum``).  The entry's and the record's views both compute it here."""
    with memoryview(buf) as whole, whole[start:end] as part:
        return int(_impl.core.crc32(part))


class _InnerSet(NamedTuple):
    """A compressed wrapper's inner message set, walked once (:meth:`LegacyRecordBatch._inner_set`)."""

    data: Any  #: the decompressed message set
    records: int  #: how many whole messages it holds
    first_offset: int  #: the first one's absolute offset
    absolute_base: int  #: what turns a stored inner offset into an absolute one (v1; 0 for v0)
    columns: RecordColumns | None  #: all of them, with absolute offsets, when one chunk held them
    end: int  #: where the messages of ``columns`` end in ``data``


class LegacyRecord:
    """One v0/v1 message seen as a record (Kafka: ``LegacyRecord``, as the ``BasicLegacyRecordBatch`` or
    ``ByteBufferLegacyRecordBatch`` that iteration hands out wraps it): its CRC, magic, attributes,
    timestamp, key and value, read from the bytes at once, with ``ensure_valid``, ``size_in_bytes``,
    ``computed_crc`` and ``is_compressed``.

    This is the validator's view of a message (:meth:`LegacyRecordBatch.legacy_records`), one object per
    message with Kafka's checks and error messages; readers of many records use the columnar decode of
    :class:`LegacyRecordBatch` instead.  Any magic but 0 is read with the v1 layout, as ``LegacyRecord``
    reads it, and the attributes are signed, as a Java byte is.  ``wrapper_timestamp``/``wrapper_type``
    are set for the v1 messages inside a wrapper, which report the wrapper's timestamp type (and its
    timestamp under LogAppendTime), as ``DeepRecordsIterator`` makes them.
    """

    __slots__ = ("_data", "_end", "_start", "attributes", "crc", "key", "magic", "offset", "own_timestamp",
                 "value", "wrapper_timestamp", "wrapper_type")

    def __init__(self, data: Any, start: int, size: int, offset: int) -> None:
        """Read the message of ``size`` bytes at ``data[start:]`` (its CRC first) whose frame said
        ``offset``."""
        end = start + size
        if size < MIN_RECORD_OVERHEAD:
            raise CorruptRecordError(
                f"Record is corrupt (crc could not be retrieved as the record is too small, size = {size})"
            )
        self._data = data
        self._start = start
        self._end = end
        self.offset = offset
        self.crc, self.magic, self.attributes = _RECORD_HEAD.unpack_from(data, start + LEGACY_CRC_OFFSET)
        # LegacyRecord reads any magic but 0 with the v1 layout.
        if self.magic == MAGIC_V0:
            self.own_timestamp = NO_TIMESTAMP
            key_size_at = start + _KEY_SIZE_OFFSET_V0
        else:
            if size < RECORD_OVERHEAD_V1:
                raise CorruptRecordError(
                    f"Invalid legacy record: {size} bytes cannot hold a v1 message header "
                    f"({RECORD_OVERHEAD_V1} bytes)"
                )
            self.own_timestamp = _I64.unpack_from(data, start + LEGACY_TIMESTAMP_OFFSET)[0]
            key_size_at = start + _KEY_SIZE_OFFSET_V1
        self.key, value_size_at = self._size_delimited(key_size_at, "key")
        self.value, _ = self._size_delimited(value_size_at, "value")
        self.wrapper_timestamp: int | None = None
        self.wrapper_type: TimestampType | None = None

    def _size_delimited(self, at: int, what: str) -> tuple[bytes | None, int]:
        """Kafka's ``Utils.sizeDelimited``: an int32 length (negative: null) and that many bytes."""
        if at + 4 > self._end:
            raise CorruptRecordError(f"Invalid legacy record: its {what} size runs past the record")
        length = _I32.unpack_from(self._data, at)[0]
        if length < 0:
            return None, at + 4
        if at + 4 + length > self._end:
            raise CorruptRecordError(
                f"Invalid legacy record: {what} size {length} runs past the record of "
                f"{self._end - self._start} bytes"
            )
        return bytes(self._data[at + 4:at + 4 + length]), at + 4 + length

    @property
    def timestamp(self) -> int:
        """Kafka's ``LegacyRecord.timestamp``: -1 in v0, the wrapper's under LogAppendTime, else its own."""
        if self.magic == MAGIC_V0:
            return NO_TIMESTAMP
        if self.wrapper_type is TimestampType.LOG_APPEND_TIME and self.wrapper_timestamp is not None:
            return self.wrapper_timestamp
        return int(self.own_timestamp)

    @property
    def timestamp_type(self) -> TimestampType:
        """Kafka's ``LegacyRecord.timestampType(magic, wrapperRecordTimestampType, attributes)``."""
        if self.magic == MAGIC_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.wrapper_type is not None:
            return self.wrapper_type
        if self.attributes & LEGACY_TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_compressed(self) -> bool:
        """Kafka: ``LegacyRecord.isCompressed``."""
        return bool(self.attributes & LEGACY_COMPRESSION_MASK)

    @property
    def size_in_bytes(self) -> int:
        """The message's bytes, without its frame (Kafka: ``LegacyRecord.sizeInBytes``)."""
        return self._end - self._start

    @property
    def headers(self) -> list[tuple[str, bytes | None]]:
        return []

    def computed_crc(self) -> int:
        """Kafka: ``LegacyRecord.computeChecksum``."""
        return _message_crc(self._data, self._start + LEGACY_MAGIC_OFFSET, self._end)

    def ensure_valid(self) -> None:
        """Kafka's ``LegacyRecord.ensureValid``."""
        computed = self.computed_crc()
        if computed != self.crc:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {self.crc}, computed crc = {computed})"
            )

    def __str__(self) -> str:
        """Kafka's ``AbstractLegacyRecordBatch.toString`` around ``LegacyRecord.toString``."""
        codec = self.attributes & LEGACY_COMPRESSION_MASK
        codec_name = CompressionType(codec).kafka_name if codec <= CompressionType.ZSTD else str(codec)
        key_size = 0 if self.key is None else len(self.key)
        value_size = 0 if self.value is None else len(self.value)
        timestamp = f"{self.timestamp_type}={self.timestamp}, " if self.magic > 0 else ""
        return (
            f"LegacyRecordBatch(offset={self.offset}, Record(magic={self.magic}, "
            f"attributes={self.attributes}, compression={codec_name}, crc={self.crc}, "
            f"{timestamp}key={key_size} bytes, value={value_size} bytes))"
        )


class LegacyRecordBatch(RecordBatch):
    """One top-level v0/v1 log entry seen as a batch (Kafka: ``AbstractLegacyRecordBatch``).

    An uncompressed message is a batch of one record; a wrapper is a batch of its inner messages.
    """

    __slots__ = ("_inner_info", "attributes", "crc", "magic", "offset", "timestamp")

    partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
    producer_id = NO_PRODUCER_ID
    producer_epoch = NO_PRODUCER_EPOCH
    base_sequence = NO_SEQUENCE

    def __init__(self, buf: Any, position: int, size_in_bytes: int,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, origin: int = 0) -> None:
        super().__init__(buf, position, size_in_bytes, max_decompressed_size, origin)
        self.offset, _size = _FRAME.unpack_from(buf, position)
        self.crc, self.magic, self.attributes = _MESSAGE_HEAD.unpack_from(buf, position + LOG_OVERHEAD)
        if self.magic not in (MAGIC_V0, MAGIC_V1):
            raise CorruptRecordError(f"Invalid magic {self.magic} for a legacy message", self.position)
        if self.magic == MAGIC_V1 and size_in_bytes < LOG_OVERHEAD + RECORD_OVERHEAD_V1:
            raise CorruptRecordError(f"v1 message of {size_in_bytes} bytes is too short", self.position)
        self.timestamp = (
            _I64.unpack_from(buf, position + LOG_OVERHEAD + 6)[0] if self.magic == MAGIC_V1 else NO_TIMESTAMP
        )
        self._inner_info: _InnerSet | None = None

    @property
    def is_compressed(self) -> bool:
        return bool(self.attributes & LEGACY_COMPRESSION_MASK)

    @property
    def compression(self) -> CompressionType:
        codec = self.attributes & LEGACY_COMPRESSION_MASK
        if codec > CompressionType.LZ4:
            raise UnsupportedCompressionError(
                f"Compression codec {codec} is not valid for magic {self.magic}", self.position
            )
        return CompressionType(codec)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == MAGIC_V0:
            return TimestampType.NO_TIMESTAMP_TYPE
        if self.attributes & LEGACY_TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:  # type: ignore[override]
        return int(self.timestamp)

    @property
    def last_offset(self) -> int:  # type: ignore[override]
        return int(self.offset)

    @property
    def base_offset(self) -> int:  # type: ignore[override]
        """The first record's offset: the entry's own for a plain message; needs decompression for a
        wrapper (Kafka: ``AbstractLegacyRecordBatch.baseOffset``)."""
        if not self.is_compressed:
            return int(self.offset)
        return self._inner_set().first_offset

    @property
    def count(self) -> int:
        return 1 if not self.is_compressed else self._inner_set().records

    def computed_crc(self) -> int:
        return _message_crc(self._buf, self._at + MAGIC_OFFSET, self._at + self.size_in_bytes)

    # -- rewriting the header in place (Kafka: AbstractLegacyRecordBatch.setLastOffset, setMaxTimestamp,
    # setPartitionLeaderEpoch, which ByteBufferLegacyRecordBatch implements), as the validator does to a
    # request's records.  They write the buffer the batch was read from, which must be writable, and keep
    # the batch's fields in step with it.

    def set_last_offset(self, offset: int) -> None:
        """Write ``offset`` in the entry's frame (for a wrapper: its last inner offset).  The frame is outside
        the message's CRC."""
        java_integer(offset, "offset", "the message's offset", "long")
        _I64.pack_into(self._buf, self._at, offset)
        self.offset = offset
        self._inner_info = None  # its absolute inner offsets count from the wrapper's

    def set_partition_leader_epoch(self, epoch: int) -> None:
        """Always refused: v0/v1 messages have no partition leader epoch."""
        raise IllegalStateError("Magic versions prior to 2 do not support partition leader epoch")

    def set_max_timestamp(self, timestamp_type: TimestampType, max_timestamp: int) -> None:
        """Set the v1 message's timestamp type bit and timestamp, then the CRC that covers both; nothing when
        neither changes.  The attributes keep the codec and take the new timestamp type.

        Raises:
            IllegalStateError: a v0 message, which has no timestamp.
        """
        if self.magic == MAGIC_V0:
            raise IllegalStateError("Cannot set timestamp for a record with magic = 0")
        java_integer(max_timestamp, "max_timestamp", "the message's timestamp", "long")
        if self.timestamp_type is timestamp_type and self.timestamp == max_timestamp:
            return
        attributes = self.attributes & LEGACY_COMPRESSION_MASK
        if timestamp_type is TimestampType.LOG_APPEND_TIME:
            attributes |= LEGACY_TIMESTAMP_TYPE_MASK
        message = self._at + LOG_OVERHEAD
        _U8.pack_into(self._buf, message + LEGACY_ATTRIBUTES_OFFSET, attributes)
        _I64.pack_into(self._buf, message + LEGACY_TIMESTAMP_OFFSET, max_timestamp)
        self.attributes, self.timestamp = attributes, max_timestamp
        self._inner_info = None  # a LogAppendTime wrapper's inner records report its timestamp
        self.crc = self.computed_crc()
        _U32.pack_into(self._buf, message + LEGACY_CRC_OFFSET, self.crc)

    def _own_columns(self) -> RecordColumns:
        try:
            rows = _impl.core.decode_legacy_records(self._buf, self._at, self._at + self.size_in_bytes)
        except CorruptRecordError as e:
            if self.position == self._at:
                raise
            raise e.at(self._in_log(e.position)) from e
        return RecordColumns(rows, _NO_HEADERS, self._buf)

    def _inner_data(self) -> Any:
        """The wrapper's value, decompressed: the inner message set."""
        own = self._own_columns()
        row = own.records[0]
        if int(row["value_len"]) < 0:
            raise InvalidRecordError("Found invalid compressed record set with null value", self.position)
        value_pos = int(row["value_pos"])
        value_end = value_pos + int(row["value_len"])
        codec = self.compression
        with memoryview(self._buf) as whole, whole[value_pos:value_end] as payload:
            try:
                return decompress_buffer(codec, payload, magic=self.magic, max_size=self._max_decompressed_size)
            except CorruptRecordError as e:
                raise e.at(self.position) from e

    def _walk_inner(self, data: Any, max_records: int) -> Iterator[tuple[npt.NDArray[Any], int, int]]:
        """The inner messages of ``data`` as they are framed, ``max_records`` at a time: ``(rows, start, end)``
        with the rows (offsets as stored) of the messages in ``data[start:end]``.

        Kafka's DataLogInputStream ends the inner set silently at a message cut short, so the walk stops where
        the last whole one ends; corrupt framing before that raises.  The batch scan finds where each run of
        ``max_records`` messages ends, the legacy decode reads them (and raises at bad framing).
        """
        total = len(data)
        position = 0
        while True:
            _rows, stop, reason = _impl.core.scan_batches(data, position, total, False, False, INT32_MAX,
                                                          max_records)
            end = stop if reason in (ScanStop.LIMIT, ScanStop.PARTIAL) else total
            try:
                rows = _impl.core.decode_legacy_records(data, position, end)
            except CorruptRecordError as e:
                raise e.at(self.position, note=f" (at byte {e.position} of the wrapper's decompressed "
                                               "message set)") from e
            yield rows, position, end
            if reason != ScanStop.LIMIT:
                return
            position = end

    def _inner_set(self) -> _InnerSet:
        """What a reader of a wrapper's inner messages needs to know first (Kafka's ``DeepRecordsIterator``,
        which for v1 reads every inner message before it returns one): how many there are, the offset to add
        to each, and that they are well formed.  One walk of the set a chunk at a time, so its memory is
        bounded whatever the count; the columns are kept when one chunk holds them all."""
        if self._inner_info is not None:
            return self._inner_info
        data = self._inner_data()
        count = 0
        first = last = 0
        lowest, highest = INT64_MAX, -1 - INT64_MAX
        compressed = False
        kept: npt.NDArray[Any] | None = None
        kept_end = 0
        for rows, _start, end in self._walk_inner(data, _batch.CHUNK_RECORDS):
            if not len(rows):
                continue
            offsets = rows["offset"]
            if count == 0:
                first = int(offsets[0])
                kept, kept_end = rows, end
            else:
                kept = None
            count += len(rows)
            last = int(offsets[-1])
            lowest, highest = min(lowest, int(offsets.min())), max(highest, int(offsets.max()))
            compressed = compressed or bool(np.any(rows["attributes"] & LEGACY_COMPRESSION_MASK))
        if count == 0:
            raise InvalidRecordError("Found invalid compressed record set with no inner records", self.position)
        # Inner magics are not required to match the wrapper's: Kafka's reader only checks that when asked
        # (ensureMatchingMagic), which its read path never does.
        if compressed:
            raise InvalidRecordError(
                "Compressed message set contains a compressed inner message", self.position
            )
        absolute_base = 0
        if self.magic == MAGIC_V1:
            if lowest < 0:
                raise InvalidRecordError(
                    f"Found invalid relative offset {lowest} in a compressed v1 message set: inner "
                    "offsets count from 0",
                    self.position,
                )
            if self.offset == 0:
                # librdkafka once wrote wrapper offset 0: the inner offsets are then taken as given.
                absolute_base = 0
            elif self.offset < last:
                raise InvalidRecordError(
                    f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{self.offset}' is less than the last inner message offset '{last}' and "
                    "it is not zero",
                    self.position,
                )
            else:
                absolute_base = int(self.offset) - last
            if absolute_base + highest > INT64_MAX:
                raise InvalidRecordError(
                    f"Found invalid inner offset {highest} in the compressed v1 message set at wrapper "
                    f"offset {self.offset}: its absolute offset does not fit a long",
                    self.position,
                )
        columns = None
        if kept is not None:
            columns = RecordColumns(self._absolute(kept, absolute_base), _NO_HEADERS, data)
        self._inner_info = _InnerSet(data, count, first + absolute_base, absolute_base, columns, kept_end)
        return self._inner_info

    def _absolute(self, rows: npt.NDArray[Any], absolute_base: int) -> npt.NDArray[Any]:
        """Inner rows as a reader sees them: absolute offsets (v1), the wrapper's LogAppendTime."""
        if self.magic == MAGIC_V1:
            rows["offset"] += absolute_base
            if self.attributes & LEGACY_TIMESTAMP_TYPE_MASK:
                rows["timestamp"] = self.timestamp
        return rows

    def _inner_chunks(self, max_records: int | None = None) -> Iterator[tuple[RecordColumns, int, int]]:
        """The inner messages with absolute offsets and reported timestamps (Kafka's ``DeepRecordsIterator``),
        ``max_records`` at a time: ``(columns, start, end)``, the messages being ``columns.data[start:end]``."""
        inner = self._inner_set()
        limit = _batch.CHUNK_RECORDS if max_records is None else max(max_records, 1)
        if inner.columns is not None and inner.records <= limit:
            yield inner.columns, 0, inner.end  # the first walk kept them
            return
        for rows, start, end in self._walk_inner(inner.data, limit):
            if len(rows):
                yield RecordColumns(self._absolute(rows, inner.absolute_base), _NO_HEADERS, inner.data), start, end

    def _inner_columns(self) -> RecordColumns:
        """All of the inner messages as one set of columns (see :meth:`_inner_chunks`)."""
        inner = self._inner_set()
        if inner.columns is not None:
            return inner.columns
        parts = [columns.records for columns, _start, _end in self._inner_chunks()]
        return RecordColumns(np.concatenate(parts), _NO_HEADERS, inner.data)

    def record_columns(self, *, check_crcs: bool = True) -> RecordColumns:
        if check_crcs:
            self.ensure_valid_deep()
        return self._inner_columns() if self.is_compressed else self._own_columns()

    def column_chunks(self, *, check_crcs: bool = True,
                      max_records: int | None = None) -> Iterator[RecordColumns]:
        if check_crcs:
            self.ensure_valid_deep()
        if not self.is_compressed:
            yield self._own_columns()
            return
        for columns, _start, _end in self._inner_chunks(max_records):
            yield columns

    def record_chunks(self, *, check_crcs: bool = True, max_records: int | None = None) -> Iterator[list[Any]]:
        for columns in self.column_chunks(check_crcs=check_crcs, max_records=max_records):
            yield self._records_from(columns)

    def validity_chunks(self, max_records: int | None = None) -> Iterator[npt.NDArray[np.bool_]]:
        """:meth:`record_validity` a chunk at a time, the chunks of :meth:`column_chunks`."""
        if not self.is_compressed:
            yield np.array([self.is_valid()])
            return
        data = self._inner_set().data
        for columns, start, end in self._inner_chunks(max_records):
            yield _validity(data, start, end, len(columns))

    def entry_chunks(self, max_records: int | None = None) -> Iterator[tuple[list[Any], list[int], list[bool]]]:
        """The records, unchecked, with each one's own CRC and whether it matches its bytes, a chunk at a time
        (Kafka's deep iterator yields each legacy message as a batch of its own, with its ``checksum`` and
        ``isValid``, which the dump tool prints)."""
        if not self.is_compressed:
            yield self._records_from(self._own_columns()), [int(self.crc)], [self.is_valid()]
            return
        data = self._inner_set().data
        for columns, start, end in self._inner_chunks(max_records):
            valid = _validity(data, start, end, len(columns))
            yield self._records_from(columns), columns.records["crc"].tolist(), valid.tolist()

    def ensure_valid_deep(self) -> None:
        self.ensure_valid()
        if not self.is_compressed:
            return
        at = 0
        for (columns, _start, _end), valid in zip(self._inner_chunks(), self.validity_chunks(), strict=True):
            bad = np.flatnonzero(~valid)
            if len(bad):
                inner = columns.records[int(bad[0])]
                raise CorruptRecordError(
                    f"Record is corrupt (inner message {at + int(bad[0])} of the wrapper, at offset "
                    f"{int(inner['offset'])}: stored crc = {int(inner['crc'])} does not match its bytes)",
                    self.position)
            at += len(valid)

    def record_validity(self) -> list[bool]:
        """Whether each record's own CRC matches its bytes, in record order.

        A plain message is its own record; a wrapper's inner messages each carry a CRC of their own,
        which Kafka's deep iterator exposes (``isValid`` of each inner ``AbstractLegacyRecordBatch``) and
        which a shallow check of the wrapper does not cover.  :meth:`validity_chunks` gives the same a chunk
        at a time.
        """
        return [bool(v) for chunk in self.validity_chunks() for v in chunk.tolist()]

    def records(self, *, check_crcs: bool = True) -> list[Any]:
        """The batch's records (see :meth:`RecordBatch.records`).  Each says its timestamp type as Kafka's
        ``LegacyRecord.timestampType`` does: a v1 wrapper's LogAppendTime holds for its inner messages,
        otherwise a message's own magic and attribute bit decide."""
        return self._records_from(self.record_columns(check_crcs=check_crcs))

    def _records_from(self, columns: RecordColumns) -> list[Any]:
        data = columns.data
        wrapper_append_time = (self.is_compressed and self.magic == MAGIC_V1
                               and bool(self.attributes & LEGACY_TIMESTAMP_TYPE_MASK))
        make = _impl.core.Record
        out = []
        for row in columns.records.tolist():
            offset, timestamp, key_pos, value_pos, key_len, value_len = row[:6]
            attributes, magic = row[9], row[10]
            if wrapper_append_time or (magic == MAGIC_V1 and attributes & LEGACY_TIMESTAMP_TYPE_MASK):
                timestamp_type = TimestampType.LOG_APPEND_TIME
            elif magic == MAGIC_V0:
                timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
            else:
                timestamp_type = TimestampType.CREATE_TIME
            out.append(make(
                offset,
                timestamp,
                None if key_len < 0 else bytes(data[key_pos:key_pos + key_len]),
                None if value_len < 0 else bytes(data[value_pos:value_pos + value_len]),
                [],
                timestamp_type,
            ))
        return out

    # -- the validator's view: one LegacyRecord per message (Kafka: AbstractLegacyRecordBatch.iterator)

    def legacy_records(self) -> Iterator[LegacyRecord]:
        """The entry's messages as :class:`LegacyRecord` objects, as Kafka's ``AbstractLegacyRecordBatch.iterator()``
        hands them to ``LogValidator``: an uncompressed message is its own one record, a wrapper's inner messages
        are read by :meth:`_deep_records` (``DeepRecordsIterator``)."""
        if not self.attributes & LEGACY_COMPRESSION_MASK:
            return iter([LegacyRecord(self._buf, self._at + LOG_OVERHEAD, self.size_in_bytes - LOG_OVERHEAD,
                                      self.last_offset)])
        return self._deep_records()

    def _deep_records(self) -> Iterator[LegacyRecord]:
        """The inner messages of this wrapper (Kafka: ``AbstractLegacyRecordBatch.DeepRecordsIterator``
        without ``ensureMatchingMagic``, as ``iterator(BufferSupplier)`` builds it), with the validator's error
        points: a wrapper magic or codec (zstd) a legacy wrapper cannot have, a null value, no inner message,
        a wrapper offset below the last inner one, an inner message itself compressed (when it is reached).

        Everything is decompressed and read before the first record is handed out (Kafka does it in the
        iterator's constructor, which this method is up to its ``return``); v1 inner offsets are made absolute
        from the wrapper's, wrapping as Java's long does.
        """
        wrapper = LegacyRecord(self._buf, self._at + LOG_OVERHEAD, self.size_in_bytes - LOG_OVERHEAD,
                               self.last_offset)
        wrapper_magic = wrapper.magic
        if wrapper_magic not in (MAGIC_V0, MAGIC_V1):
            raise InvalidRecordError(
                f"Invalid wrapper magic found in legacy deep record iterator {wrapper_magic}", self.position
            )
        codec_id = wrapper.attributes & LEGACY_COMPRESSION_MASK
        if codec_id == CompressionType.ZSTD:
            raise InvalidRecordError(
                f"Invalid wrapper compressionType found in legacy deep record iterator {wrapper_magic}",
                self.position,
            )
        if wrapper.value is None:
            raise InvalidRecordError(
                f"Found invalid compressed record set with null value (magic = {wrapper_magic})", self.position
            )
        try:
            data = decompress(codec_id, wrapper.value, magic=wrapper_magic, max_size=self._max_decompressed_size)
        except CorruptRecordError as e:
            raise e.at(self.position) from e

        # DataLogInputStream.nextBatch: a frame or message cut short ends the stream without an error.
        entries: list[LegacyRecord] = []
        pos = 0
        end = len(data)
        while end - pos >= LOG_OVERHEAD:
            offset, size = _FRAME.unpack_from(data, pos)
            if size < MIN_RECORD_OVERHEAD:
                raise CorruptRecordError(
                    f"Record size is less than the minimum record overhead ({MIN_RECORD_OVERHEAD})",
                    self.position,
                )
            if size > end - pos - LOG_OVERHEAD:
                break
            try:
                entry = LegacyRecord(data, pos + LOG_OVERHEAD, size, offset)
            except CorruptRecordError as e:
                raise e.at(self.position) from e
            if entry.magic == MAGIC_V1:
                entry.wrapper_timestamp = wrapper.timestamp
                entry.wrapper_type = wrapper.timestamp_type
            entries.append(entry)
            pos += LOG_OVERHEAD + size

        if not entries:
            raise InvalidRecordError("Found invalid compressed record set with no inner records", self.position)

        absolute_base_offset = -1
        if wrapper_magic == MAGIC_V1:
            last_offset_from_wrapper = self.last_offset
            if last_offset_from_wrapper == 0:
                # Some librdkafka versions write wrapper offset 0: the inner offsets are then taken as they are.
                absolute_base_offset = 0
            else:
                last_inner_offset = entries[-1].offset
                if last_offset_from_wrapper < last_inner_offset:
                    raise InvalidRecordError(
                        f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                        f"'{last_offset_from_wrapper}' is less than the last inner message offset "
                        f"'{last_inner_offset}' and it is not zero.",
                        self.position,
                    )
                absolute_base_offset = last_offset_from_wrapper - last_inner_offset

        def make_next() -> Iterator[LegacyRecord]:
            for entry in entries:
                if wrapper_magic == MAGIC_V1:
                    entry.offset = java_long(absolute_base_offset + entry.offset)
                if entry.is_compressed:
                    raise InvalidRecordError("Inner messages must not be compressed", self.position)
                yield entry

        return make_next()

    def __repr__(self) -> str:
        return (
            f"LegacyRecordBatch(offset={self.offset}, magic={self.magic}, "
            f"compression={self.compression.kafka_name}, timestamp_type={self.timestamp_type}, "
            f"timestamp={self.timestamp}, size={self.size_in_bytes}, position={self.position})"
        )


def _validity(data: Any, start: int, end: int, count: int) -> npt.NDArray[np.bool_]:
    """Whether each of the ``count`` messages framed in ``data[start:end]`` matches its own CRC."""
    rows, _stop, _reason = _impl.core.scan_batches(data, start, end, True, False, INT32_MAX, count)
    valid = np.zeros(count, dtype=bool)
    valid[:len(rows)] = rows["valid"] == 1
    return valid


# ---------------------------------------------------------------------------------------------------
# Building


def legacy_entry(offset: int, magic: int, attributes: int, timestamp: int, key: Any, value: Any) -> bytes:
    """One framed legacy message (Kafka: ``LegacyRecord.write`` behind the 12-byte log overhead)."""
    body = bytearray()
    body.append(magic)
    body.append(attributes & 0xFF)
    if magic == MAGIC_V1:
        body += _I64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _I32.pack(-1)
        else:
            data = bytes(field)
            body += _I32.pack(len(data))
            body += data
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return _FRAME.pack(offset, 4 + len(body)) + struct.pack(">I", crc) + bytes(body)


def build_legacy_message_set(
    records: Iterable[RecordInput],
    *,
    magic: int,
    base_offset: int = 0,
    compression: CompressionType | int | str = CompressionType.NONE,
    timestamp_type: TimestampType | int | str = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    offsets: Sequence[int] | None = None,
) -> bytes:
    """The bytes of a v0 or v1 message set, as Kafka's ``MemoryRecordsBuilder`` writes them.

    ``offsets`` gives each record's offset (increasing; the cleaner keeps the gaps compaction leaves),
    instead of ``base_offset + i``; inner offsets of a v1 wrapper are then relative to the first.

    With LogAppendTime each v1 message's timestamp is replaced by the append time, an inner message's
    too.  Uncompressed: one entry per record at offsets ``base_offset + i``.  Compressed: one wrapper
    at the last offset whose value holds the inner messages (absolute offsets for v0, relative for
    v1), whose timestamp is the inner maximum (CreateTime) or the append time (LogAppendTime).  v0 has no timestamps, so
    the timestamps given are dropped and LogAppendTime is refused.
    """
    data, _size = build_legacy_message_set_sized(
        records, magic=magic, base_offset=base_offset, compression=compression, timestamp_type=timestamp_type,
        log_append_time=log_append_time, offsets=offsets)
    return data


def build_legacy_message_set_sized(records: Iterable[RecordInput], *, magic: int, base_offset: int = 0,
                                   compression: CompressionType | int | str = CompressionType.NONE,
                                   timestamp_type: TimestampType | int | str = TimestampType.CREATE_TIME,
                                   log_append_time: int | None = None,
                                   offsets: Sequence[int] | None = None) -> tuple[bytes, int]:
    """:func:`build_legacy_message_set`'s bytes and the size of its messages before compression (all of
    them, uncompressed; a wrapper's inner messages): what Kafka's ``MemoryRecordsBuilder`` counts in
    ``uncompressedBytesWritten`` besides the wrapper, which a validation that rebuilds records reports."""
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"Legacy message sets have magic 0 or 1, not {magic}")
    codec = CompressionType.of(compression)
    if codec is CompressionType.ZSTD:
        raise UnsupportedCompressionError(f"ZStandard compression is not supported for magic {magic}")
    ts_type = TimestampType.of(timestamp_type)
    if magic == MAGIC_V0 and ts_type is TimestampType.LOG_APPEND_TIME:
        raise ValueError("Magic v0 messages carry no timestamp: LogAppendTime needs magic 1 or 2")
    log_append = ts_type is TimestampType.LOG_APPEND_TIME
    if log_append and log_append_time is None:
        raise ValueError("A LogAppendTime message set needs log_append_time")
    # Each field against its Java type in LegacyRecord (offsets and timestamps are longs), before any packing.
    java_integer(base_offset, "base_offset", "the message's offset", "long")
    if log_append_time is not None:
        java_integer(log_append_time, "log_append_time", "the message's timestamp", "long")
    keys, values, timestamps, headers = normalize_records(records)
    if any(headers):
        raise ValueError(f"Magic v{magic} does not support record headers")
    n = len(keys)
    if offsets is not None:
        if len(offsets) != n or any(b <= a for a, b in itertools.pairwise(offsets)):
            raise ValueError("offsets must give one increasing offset per record")
        absolute = list(offsets)
        if n:  # increasing: the first and the last bound them all
            java_integer(absolute[0], "offsets", "the message's offset", "long")
            java_integer(absolute[-1], "offsets", "the message's offset", "long")
    else:
        absolute = [base_offset + i for i in range(n)]
        if n and absolute[-1] > INT64_MAX:
            raise IllegalArgumentError(f"base_offset {base_offset}: the offset of message {n - 1}, {absolute[-1]}, "
                                       "does not fit a Java long")
    type_bit = LEGACY_TIMESTAMP_TYPE_MASK if (magic == MAGIC_V1 and log_append) else 0
    if magic == MAGIC_V0:
        timestamps = [NO_TIMESTAMP] * n
    encode = _impl.core.encode_legacy_messages
    if log_append and log_append_time is not None:
        # Kafka's appendLegacyRecord writes the append time into every message, inner ones of a wrapper too.
        timestamps = [log_append_time] * n
    if codec is CompressionType.NONE:
        out = encode(keys, values, timestamps, absolute, magic, type_bit)
        return out, len(out)
    if n == 0:
        return b"", 0
    first = absolute[0]
    inner = encode(keys, values, timestamps, absolute if magic == MAGIC_V0 else [o - first for o in absolute],
                   magic, type_bit)
    wrapper_timestamp = log_append_time if (log_append and log_append_time is not None) else max(timestamps)
    if magic == MAGIC_V0:
        wrapper_timestamp = NO_TIMESTAMP
    wrapper = legacy_entry(absolute[-1], magic, int(codec) | type_bit, wrapper_timestamp, None,
                           compress(codec, inner, magic=magic))
    return wrapper, len(inner)
