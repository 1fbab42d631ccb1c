"""Record batches: the interface every magic shares, and the v2 batch (magic 2) with its builder.

Port of ``RecordBatch.java``, ``DefaultRecordBatch.java`` and the v2 half of
``MemoryRecordsBuilder.java`` (clients, ``org.apache.kafka.common.record``, tag 3.8.0).

v2 batch layout (big-endian; positions from the start of the batch; 61-byte header)::

    0  baseOffset            int64   offset of the first record
    8  batchLength           int32   bytes after this field (the batch is 12 + batchLength long)
    12 partitionLeaderEpoch  int32   not covered by the CRC, so a broker can stamp it in place
    16 magic                 int8    2
    17 crc                   uint32  CRC-32C of bytes 21..end
    21 attributes            int16   0-2 codec, 3 LogAppendTime, 4 transactional, 5 control,
                                     6 baseTimestamp holds the delete horizon (set by the cleaner)
    23 lastOffsetDelta       int32   lastOffset - baseOffset (kept by compaction)
    27 baseTimestamp         int64   first record's timestamp, or the delete horizon
    35 maxTimestamp          int64   max record timestamp, or the broker's append time
    43 producerId            int64   -1 when none
    51 producerEpoch         int16   -1 when none
    53 baseSequence          int32   -1 when none
    57 recordsCount          int32
    61 records               the records, or one compressed stream of them

Invariants a reader relies on: the CRC covers every byte the producer wrote except the leader epoch;
``lastOffset`` may exceed the last record's offset after compaction; an emptied batch may remain as a
header with ``recordsCount`` 0 so producer state survives cleaning.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Self

import numpy.typing as npt

from .. import _impl
from .._common import (
    ATTRIBUTES_OFFSET,
    BASE_OFFSET_OFFSET,
    BASE_SEQUENCE_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG_MASK,
    INT32_MAX,
    INT64_MAX,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MAX_TIMESTAMP_OFFSET,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    PARTITION_LEADER_EPOCH_OFFSET,
    PRODUCER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from ..errors import CorruptRecordError, IllegalArgumentError, InvalidRecordError
from .compression import CompressionType, compress, decompress_buffer
from .types import ControlRecordType, EndTransactionMarker, TimestampType, java_integer

__all__ = [
    "CHUNK_RECORDS",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "DefaultRecordBatch",
    "RecordBatch",
    "RecordColumns",
    "RecordInput",
    "build_default_batch",
    "build_default_batch_sized",
    "encode_default_batch",
    "increment_sequence",
    "normalize_records",
    "write_empty_header",
]

#: The most bytes one batch may decompress to before the reader gives up (a decompression bomb).
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024

#: The most records one kernel call decodes out of one batch when it is read in chunks
#: (:meth:`RecordBatch.record_chunks`, :meth:`RecordBatch.column_chunks`, and through them every deep read
#: of :class:`~kafkalog.record.MemoryRecords`): 64 Ki records are 3.5 MiB of columns or a few MiB of
#: objects.  A batch's record count is bounded only by its size (a few hundred bytes of gzip expand to a
#: million 7-byte records), so this, not the count, is what bounds the memory of a deep read, with the
#: decompressed bytes (at most ``max_decompressed_size``).  Kafka's consumer reads a compressed batch one
#: record at a time from the decompression stream for the same reason.
CHUNK_RECORDS = 1 << 16

#: What the builders accept per record: ``(key, value)``, ``(key, value, timestamp)`` or
#: ``(key, value, timestamp, headers)``, or any object with those four attributes.
RecordInput = Any

# The 61-byte header in one pack, field after field from BASE_OFFSET_OFFSET to RECORDS_COUNT_OFFSET, the CRC
# (at CRC_OFFSET) written as 0 until the bytes it covers are in place.
_HEADER = struct.Struct(">qiibIhiqqqhii")
# Single header fields (the in-place setters, write_empty_header), precompiled: a format string is parsed on
# every call.
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence``: add, wrapping past ``Integer.MAX_VALUE`` to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def _range_crc32c(buf: Any, start: int, end: int) -> int:
    """CRC-32C of ``buf[start:end]`` through views released on return (the mmap rule)."""
    with memoryview(buf) as whole, whole[start:end] as part:
        return int(_impl.core.crc32c(part))


@dataclass(frozen=True)
class RecordColumns:
    """The records of a batch as columns (the record-decode kernel's output).

    ``records`` is a :data:`~kafkalog._common.RECORD_DTYPE` array and ``headers`` a
    :data:`~kafkalog._common.HEADER_DTYPE` array; their positions index ``data``, which is the
    buffer the records were decoded from (the decompressed bytes for a compressed batch).  One set of
    columns may hold the records of several batches (``MemoryRecords.record_columns``).
    """

    records: npt.NDArray[Any]
    headers: npt.NDArray[Any]
    data: Any
    #: For columns of several batches: the records of batch ``i`` are ``records[starts[i]:starts[i+1]]``.
    starts: npt.NDArray[Any] | None = None
    #: The scan rows (:data:`~kafkalog._common.BATCH_DTYPE`) of those batches, when the columns came from
    #: :meth:`MemoryRecords.record_columns`: the batch-level facts (attributes, producer, timestamp type).
    batches: npt.NDArray[Any] | None = None

    def __len__(self) -> int:
        return len(self.records)

    def key(self, i: int) -> bytes | None:
        row = self.records[i]
        n = int(row["key_len"])
        return None if n < 0 else bytes(self.data[int(row["key_pos"]):int(row["key_pos"]) + n])

    def value(self, i: int) -> bytes | None:
        row = self.records[i]
        n = int(row["value_len"])
        return None if n < 0 else bytes(self.data[int(row["value_pos"]):int(row["value_pos"]) + n])



class RecordBatch:
    """What every batch offers, whatever its magic (Kafka: ``RecordBatch``).

    A batch is a view of ``size_in_bytes`` bytes in a buffer; it keeps a reference to the buffer object
    (never a memoryview of it), so the batch does not pin an mmap.  ``position`` is where the batch
    sits in its log: the buffer offset plus ``origin``, for a batch read from a file in chunks.
    """

    __slots__ = ("_at", "_buf", "_max_decompressed_size", "position", "size_in_bytes")

    magic: int

    def __init__(self, buf: Any, position: int, size_in_bytes: int,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, origin: int = 0) -> None:
        self._buf = buf
        self._at = position
        self.position = origin + position
        self.size_in_bytes = size_in_bytes
        self._max_decompressed_size = max_decompressed_size

    def _in_log(self, buffer_position: int | None) -> int | None:
        """A position in the batch's buffer as a position in its log."""
        return None if buffer_position is None else buffer_position + self.position - self._at

    def over(self, buf: Any) -> Self:
        """This batch as read from ``buf``, a copy of the buffer it was read from (the same bytes at the same
        places): a new batch of the same kind at the same position, whose header is read again from ``buf``
        and whose records are read from ``buf`` from then on.  What a batch found by a walk of one buffer
        becomes when the buffer is copied, without walking the copy (the leader's append copies a read-only
        buffer before it rewrites the headers, :meth:`MemoryRecords.writable
        <kafkalog.record.memory.MemoryRecords.writable>`)."""
        return type(self)(buf, self._at, self.size_in_bytes, self._max_decompressed_size, self.position - self._at)

    # Subclasses define these.
    base_offset: int
    last_offset: int
    max_timestamp: int
    crc: int
    attributes: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> CompressionType:
        return CompressionType.of(self.attributes & COMPRESSION_CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        raise NotImplementedError

    @property
    def is_transactional(self) -> bool:
        return False

    @property
    def is_control(self) -> bool:
        return False

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        return NO_SEQUENCE

    @property
    def delete_horizon_ms(self) -> int | None:
        return None

    @property
    def count(self) -> int:
        """How many records the batch holds (a legacy wrapper is decompressed to tell)."""
        raise NotImplementedError

    @property
    def control_type(self) -> ControlRecordType | None:
        """For a control batch, the type its one record's key names; ``None`` for a data batch (a property,
        as :attr:`is_control` and a record's ``control_type`` are; Kafka reads it from the record)."""
        return None

    def end_transaction_marker(self) -> EndTransactionMarker | None:
        """The ABORT/COMMIT marker of a transaction-marker batch, else ``None``."""
        return None

    def computed_crc(self) -> int:
        raise NotImplementedError

    # Kafka's MutableRecordBatch: the header fields the leader's append rewrites in place (see the subclasses).

    def set_last_offset(self, offset: int) -> None:
        raise NotImplementedError

    def set_partition_leader_epoch(self, epoch: int) -> None:
        raise NotImplementedError

    def set_max_timestamp(self, timestamp_type: TimestampType, max_timestamp: int) -> None:
        raise NotImplementedError

    def is_valid(self) -> bool:
        """Whether the stored CRC matches the bytes (Kafka: ``isValid``)."""
        return self.computed_crc() == self.crc

    def ensure_valid(self) -> None:
        """Raise :class:`CorruptRecordError` unless the batch is valid (Kafka: ``ensureValid``)."""
        computed = self.computed_crc()
        if computed != self.crc:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {self.crc}, computed crc = {computed})", self.position
            )

    def records(self, *, check_crcs: bool = True) -> list[Any]:
        """The batch's records, decompressed and decoded, as :class:`~kafkalog.record.Record`.

        With ``check_crcs`` (the default, a consumer's ``check.crcs=true``) the batch's CRC is checked
        first, and a legacy wrapper's inner messages' CRCs too: a mismatch is a
        :class:`~kafkalog.errors.CorruptRecordError` at the batch's position.  ``check_crcs=False`` reads
        whatever the bytes say, for forensic tools.
        """
        raise NotImplementedError

    def record_columns(self, *, check_crcs: bool = True) -> RecordColumns:
        """The batch's records as columns, without a Python object per record (``check_crcs`` as for
        :meth:`records`)."""
        raise NotImplementedError

    def record_chunks(self, *, check_crcs: bool = True, max_records: int | None = None) -> Iterator[list[Any]]:
        """The records of :meth:`records`, in lists of at most ``max_records`` (default :data:`CHUNK_RECORDS`),
        decoded as they are asked for: memory bounded by the chunk (and the decompressed bytes), whatever the
        batch's record count.  The batch is checked (``check_crcs``) before the first chunk; a malformed record
        raises once the chunks before it are handed out.  Kafka: the consumer's streaming iteration of a batch
        (``DefaultRecordBatch.streamingIterator``)."""
        raise NotImplementedError

    def column_chunks(self, *, check_crcs: bool = True,
                      max_records: int | None = None) -> Iterator[RecordColumns]:
        """The columns of :meth:`record_columns`, at most ``max_records`` records (default
        :data:`CHUNK_RECORDS`) at a time, as :meth:`record_chunks`; every chunk's ``data`` is the same
        buffer."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[Any]:
        return itertools.chain.from_iterable(self.record_chunks())

    def ensure_valid_deep(self) -> None:
        """What a consumer with ``check.crcs=true`` checks before it returns a batch's records: the
        batch's CRC (Kafka: ``RecordBatch.ensureValid``), and for a legacy wrapper each inner message's
        own (``LegacyRecord.ensureValid``, which the consumer runs on every legacy record)."""
        self.ensure_valid()

    def raw_bytes(self) -> bytes:
        """A copy of the batch's bytes, frame included."""
        return bytes(self._buf[self._at:self._at + self.size_in_bytes])


class DefaultRecordBatch(RecordBatch):
    """A v2 record batch (Kafka: ``DefaultRecordBatch``).  See the module docstring for the layout."""

    __slots__ = (
        "_count",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "crc",
        "last_offset_delta",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
    )

    magic = MAGIC_V2

    def __init__(self, buf: Any, position: int, size_in_bytes: int,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, origin: int = 0) -> None:
        super().__init__(buf, position, size_in_bytes, max_decompressed_size, origin)
        if size_in_bytes < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch size {size_in_bytes} is smaller than the v2 header "
                f"({RECORD_BATCH_OVERHEAD} bytes)",
                self.position,
            )
        (self.base_offset, _length, self.partition_leader_epoch, _magic, self.crc, self.attributes,
         self.last_offset_delta, self.base_timestamp, self.max_timestamp, self.producer_id,
         self.producer_epoch, self.base_sequence, self._count) = _HEADER.unpack_from(buf, position)

    @property
    def count(self) -> int:
        """``recordsCount`` from the header (Kafka: ``DefaultRecordBatch.countOrNull``)."""
        return int(self._count)

    @property
    def last_offset(self) -> int:  # type: ignore[override]
        return int(self.base_offset + self.last_offset_delta)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The cleaner's delete horizon when attribute bit 6 is set (Kafka 3.1+, KIP-534), else ``None``."""
        return int(self.base_timestamp) if self.has_delete_horizon else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    def computed_crc(self) -> int:
        start = self._at + ATTRIBUTES_OFFSET
        return _range_crc32c(self._buf, start, self._at + self.size_in_bytes)

    # -- rewriting the header in place (Kafka: DefaultRecordBatch.setLastOffset, setPartitionLeaderEpoch,
    # setMaxTimestamp), as the validator does to a request's records.  They write the buffer the batch was
    # read from, which must be writable, and keep the batch's fields in step with it.

    def set_last_offset(self, offset: int) -> None:
        """Make ``offset`` the batch's last offset: its base offset becomes ``offset - lastOffsetDelta`` (in
        Java ``long`` arithmetic).  The base offset is outside the CRC, which stays as it is."""
        java_integer(offset, "offset", "the batch's last offset", "long")
        base_offset = (offset - self.last_offset_delta + (1 << 63)) % (1 << 64) - (1 << 63)
        _I64.pack_into(self._buf, self._at, base_offset)
        self.base_offset = base_offset

    def set_partition_leader_epoch(self, epoch: int) -> None:
        """Stamp the leader's epoch; it is outside the CRC, which stays as it is."""
        _check_header_fields(partition_leader_epoch=epoch)
        _I32.pack_into(self._buf, self._at + PARTITION_LEADER_EPOCH_OFFSET, epoch)
        self.partition_leader_epoch = epoch

    def set_max_timestamp(self, timestamp_type: TimestampType, max_timestamp: int) -> None:
        """Set the timestamp type bit and the max timestamp, then the CRC that covers both; nothing when
        neither changes.  The attributes are computed afresh, as Kafka's ``computeAttributes`` does: codec,
        timestamp type, transactional, control and delete-horizon bits."""
        _check_header_fields(max_timestamp=max_timestamp)
        if self.timestamp_type is timestamp_type and self.max_timestamp == max_timestamp:
            return
        attributes = self.attributes & COMPRESSION_CODEC_MASK
        if timestamp_type is TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        attributes |= self.attributes & (TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK | DELETE_HORIZON_FLAG_MASK)
        _I16.pack_into(self._buf, self._at + ATTRIBUTES_OFFSET, attributes)
        _I64.pack_into(self._buf, self._at + MAX_TIMESTAMP_OFFSET, max_timestamp)
        self.attributes, self.max_timestamp = attributes, max_timestamp
        self.crc = self.computed_crc()
        _U32.pack_into(self._buf, self._at + CRC_OFFSET, self.crc)

    def _records_bytes(self) -> tuple[Any, int, int]:
        """Where the records are: the batch's own bytes, or a decompressed copy."""
        start = self._at + RECORD_BATCH_OVERHEAD
        end = self._at + self.size_in_bytes
        codec = self.attributes & COMPRESSION_CODEC_MASK
        if codec == CompressionType.NONE:
            return self._buf, start, end
        with memoryview(self._buf) as whole, whole[start:end] as compressed:
            try:
                data = decompress_buffer(codec, compressed, magic=MAGIC_V2, max_size=self._max_decompressed_size)
            except CorruptRecordError as e:
                raise e.at(self.position) from e
        return data, 0, len(data)

    def _append_time(self) -> int | None:
        return int(self.max_timestamp) if self.attributes & TIMESTAMP_TYPE_MASK else None

    def _decode(self, kernel: Any) -> tuple[Any, Any]:
        """Run a record-decode kernel over this batch's records; returns (kernel result, data)."""
        data, start, end = self._records_bytes()
        try:
            result = kernel(data, start, end, self.count, self.base_offset, self.base_timestamp,
                            self._append_time())
        except CorruptRecordError as e:
            raise self._located(e, data) from e
        return result, data

    def _located(self, error: CorruptRecordError, data: Any) -> CorruptRecordError:
        """A decode error of this batch's records, placed in its log.

        In an uncompressed batch a bad record's position is already a position in the buffer.  In a
        compressed one it is a position in the decompressed stream, which means nothing to someone
        looking at the file, so the error is raised again at the batch, naming the stream offset.
        """
        if data is self._buf:
            return error if self.position == self._at else error.at(self._in_log(error.position))
        return error.at(self.position, note=f" (at byte {error.position} of the decompressed records of the "
                                            f"{self.compression.kafka_name} batch)")

    def _chunks(self, kernel: Any, max_records: int | None) -> Iterator[tuple[Any, Any]]:
        """Run a chunk kernel over this batch's records, ``max_records`` at a time; yields (kernel result less
        the stop position, data).  Always one call at least: an empty batch's bytes are checked too."""
        data, start, end = self._records_bytes()
        left = self.count
        limit = CHUNK_RECORDS if max_records is None else max(max_records, 1)
        append_time = self._append_time()
        position = start
        while True:
            take = min(left, limit)
            try:
                *result, position = kernel(data, position, end, left, self.base_offset, self.base_timestamp,
                                           append_time, max_records=take)
            except CorruptRecordError as e:
                raise self._located(e, data) from e
            yield result, data
            left -= take
            if left <= 0:
                return

    def records(self, *, check_crcs: bool = True) -> list[Any]:
        if check_crcs:
            self.ensure_valid()
        kernel = partial(_impl.core.decode_v2_record_objects, is_control=self.is_control)
        records: list[Any] = self._decode(kernel)[0]
        return records

    def record_columns(self, *, check_crcs: bool = True) -> RecordColumns:
        if check_crcs:
            self.ensure_valid()
        (records, headers), data = self._decode(_impl.core.decode_v2_records)
        return RecordColumns(records, headers, data)

    def record_chunks(self, *, check_crcs: bool = True, max_records: int | None = None) -> Iterator[list[Any]]:
        if check_crcs:
            self.ensure_valid()
        kernel = partial(_impl.core.decode_v2_record_objects_chunk, is_control=self.is_control)
        for (records,), _data in self._chunks(kernel, max_records):
            yield records

    def column_chunks(self, *, check_crcs: bool = True,
                      max_records: int | None = None) -> Iterator[RecordColumns]:
        if check_crcs:
            self.ensure_valid()
        for (records, headers), data in self._chunks(_impl.core.decode_v2_records_chunk, max_records):
            yield RecordColumns(records, headers, data)

    @property
    def control_type(self) -> ControlRecordType | None:
        if not self.is_control:
            return None
        records = self.records(check_crcs=False)
        if not records:
            raise InvalidRecordError("Control batch holds no record", self.position)
        return ControlRecordType.parse(records[0].key)

    def end_transaction_marker(self) -> EndTransactionMarker | None:
        control_type = self.control_type
        if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return None
        record = self.records(check_crcs=False)[0]
        return EndTransactionMarker.deserialize(record.key, record.value)

    def __repr__(self) -> str:
        return (
            f"DefaultRecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.count}, compression={self.compression.kafka_name}, "
            f"timestamp_type={self.timestamp_type}, max_timestamp={self.max_timestamp}, "
            f"size={self.size_in_bytes}, position={self.position})"
        )


# ---------------------------------------------------------------------------------------------------
# Building


def normalize_records(records: Iterable[RecordInput]) -> tuple[list[Any], list[Any], list[int], list[Any]]:
    """Split record inputs into key, value, timestamp and header columns, checking their types (the
    ``split_records`` kernel: a record is ``(key, value[, timestamp[, headers]])`` or an object with
    those attributes)."""
    columns: tuple[list[Any], list[Any], list[int], list[Any]] = _impl.core.split_records(records)
    return columns


def build_default_batch(
    records: Iterable[RecordInput],
    *,
    base_offset: int = 0,
    compression: CompressionType | int | str = CompressionType.NONE,
    timestamp_type: TimestampType | int | str = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    delete_horizon_ms: int | None = None,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
) -> bytes:
    """The bytes of one v2 batch, as Kafka's ``MemoryRecordsBuilder`` writes them.

    ``baseTimestamp`` is the first record's timestamp (or the delete horizon, with bit 6 set);
    ``maxTimestamp`` the largest record timestamp, or ``log_append_time`` for a LogAppendTime batch,
    which Kafka requires.  Offsets are ``base_offset + i`` unless ``offset_deltas`` gives them (the
    cleaner keeps gaps); ``last_offset_delta`` overrides the last delta, as the cleaner does to keep
    a batch's original last offset.  An empty batch has base and max timestamp -1.
    """
    if offset_deltas is None:
        data, _size = build_default_batch_sized(
            records, base_offset=base_offset, compression=compression, timestamp_type=timestamp_type,
            log_append_time=log_append_time, producer_id=producer_id, producer_epoch=producer_epoch,
            base_sequence=base_sequence, is_transactional=is_transactional, is_control=is_control,
            partition_leader_epoch=partition_leader_epoch, delete_horizon_ms=delete_horizon_ms,
            last_offset_delta=last_offset_delta)
        return data
    codec, ts_type = _checked_batch_arguments(
        compression, timestamp_type, log_append_time, is_transactional, producer_id, base_offset=base_offset,
        producer_epoch=producer_epoch, base_sequence=base_sequence, partition_leader_epoch=partition_leader_epoch,
        delete_horizon_ms=delete_horizon_ms)
    keys, values, timestamps, headers = normalize_records(records)
    return encode_default_batch(
        keys, values, timestamps, headers, base_offset=base_offset, compression=codec,
        timestamp_type=ts_type, log_append_time=log_append_time, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, is_transactional=is_transactional,
        is_control=is_control, partition_leader_epoch=partition_leader_epoch,
        delete_horizon_ms=delete_horizon_ms, offset_deltas=offset_deltas, last_offset_delta=last_offset_delta)


def build_default_batch_sized(records: Iterable[RecordInput], *, base_offset: int = 0,
                              compression: CompressionType | int | str = CompressionType.NONE,
                              timestamp_type: TimestampType | int | str = TimestampType.CREATE_TIME,
                              log_append_time: int | None = None, producer_id: int = NO_PRODUCER_ID,
                              producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                              is_transactional: bool = False, is_control: bool = False,
                              partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                              delete_horizon_ms: int | None = None,
                              last_offset_delta: int | None = None) -> tuple[bytes, int]:
    """:func:`build_default_batch` with offsets ``base_offset + i`` (the producer's path), and the size of
    its records section before compression: what Kafka's ``MemoryRecordsBuilder`` counts in
    ``uncompressedBytesWritten`` besides the batch header, which a validation that rebuilds records
    reports."""
    codec, ts_type = _checked_batch_arguments(
        compression, timestamp_type, log_append_time, is_transactional, producer_id, base_offset=base_offset,
        producer_epoch=producer_epoch, base_sequence=base_sequence, partition_leader_epoch=partition_leader_epoch,
        delete_horizon_ms=delete_horizon_ms)
    # The records checked and encoded in one kernel call, with no columns in between.
    body, n, first_timestamp, max_timestamp = _impl.core.encode_v2_record_inputs(records, delete_horizon_ms)
    data = _frame_default_batch(
        body, n, first_timestamp if delete_horizon_ms is None else delete_horizon_ms, max_timestamp,
        n - 1 if n else 0, base_offset=base_offset, compression=codec, timestamp_type=ts_type,
        log_append_time=log_append_time, producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, is_transactional=is_transactional, is_control=is_control,
        partition_leader_epoch=partition_leader_epoch, delete_horizon_ms=delete_horizon_ms,
        last_offset_delta=last_offset_delta)
    return data, len(body)


#: The builders' arguments that become a v2 batch header's fields: the field (``DefaultRecordBatch``) and its
#: Java type.
_HEADER_FIELDS = {
    "base_offset": ("baseOffset", "long"),
    "partition_leader_epoch": ("partitionLeaderEpoch", "int"),
    "last_offset_delta": ("lastOffsetDelta", "int"),
    "delete_horizon_ms": ("baseTimestamp", "long"),
    "log_append_time": ("maxTimestamp", "long"),
    "max_timestamp": ("maxTimestamp", "long"),
    "producer_id": ("producerId", "long"),
    "producer_epoch": ("producerEpoch", "short"),
    "base_sequence": ("baseSequence", "int"),
}


def _check_header_fields(**values: int | None) -> None:
    """Each argument given (``None``: not given) against the Java type of the header field it becomes: an
    :class:`~kafkalog.errors.IllegalArgumentError` naming both when it does not fit, before anything is
    packed (:func:`~kafkalog.record.types.java_integer`)."""
    for name, value in values.items():
        if value is not None:
            field, java_type = _HEADER_FIELDS[name]
            java_integer(value, name, f"the batch header's {field}", java_type)


def _checked_batch_arguments(compression: CompressionType | int | str, timestamp_type: TimestampType | int | str,
                             log_append_time: int | None, is_transactional: bool, producer_id: int, *,
                             base_offset: int, producer_epoch: int, base_sequence: int, partition_leader_epoch: int,
                             delete_horizon_ms: int | None) -> tuple[CompressionType, TimestampType]:
    """The codec and timestamp type of a batch to build, its arguments checked: first each header field
    against its Java type (:func:`_check_header_fields`), then ``MemoryRecordsBuilder``'s rules."""
    _check_header_fields(base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                         producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                         log_append_time=log_append_time, delete_horizon_ms=delete_horizon_ms)
    codec = CompressionType.of(compression)
    ts_type = TimestampType.of(timestamp_type)
    if ts_type is TimestampType.NO_TIMESTAMP_TYPE:
        raise ValueError("A v2 batch has a timestamp type: CreateTime or LogAppendTime")
    if ts_type is TimestampType.LOG_APPEND_TIME and log_append_time is None:
        raise ValueError("A LogAppendTime batch needs log_append_time")
    if is_transactional and producer_id == NO_PRODUCER_ID:
        raise ValueError("Cannot write a transactional batch without a valid producer id")
    return codec, ts_type


def _compute_attributes(compression: CompressionType, timestamp_type: TimestampType, is_transactional: bool,
                        is_control: bool, is_delete_horizon_set: bool) -> int:
    """A v2 batch's attributes (Kafka: ``DefaultRecordBatch.computeAttributes``): the codec in the low three
    bits, then the timestamp type, transactional, control and delete-horizon flags."""
    attributes = int(compression)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if is_delete_horizon_set:
        attributes |= DELETE_HORIZON_FLAG_MASK
    return attributes


def encode_default_batch(
    keys: Sequence[Any],
    values: Sequence[Any],
    timestamps: Sequence[int],
    headers: Sequence[Any] | None,
    *,
    base_offset: int,
    compression: CompressionType,
    timestamp_type: TimestampType,
    log_append_time: int | None,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    is_transactional: bool,
    is_control: bool,
    partition_leader_epoch: int,
    delete_horizon_ms: int | None,
    offset_deltas: Sequence[int] | None,
    last_offset_delta: int | None,
) -> bytes:
    """The bytes of one v2 batch from columns already checked (the second half of
    :func:`build_default_batch`; the cleaner calls it with columns it decoded itself)."""
    codec = compression
    ts_type = timestamp_type
    n = len(keys)
    if offset_deltas is not None:
        if len(offset_deltas) != n:
            raise ValueError("offset_deltas must give one delta per record")
        if any(b <= a for a, b in itertools.pairwise(offset_deltas)):
            raise ValueError("offset_deltas must increase strictly")
    if n == 0:
        base_timestamp = NO_TIMESTAMP
        max_timestamp = NO_TIMESTAMP
        computed_last_delta = 0
    else:
        base_timestamp = timestamps[0]
        max_timestamp = max(timestamps)
        computed_last_delta = offset_deltas[-1] if offset_deltas is not None else n - 1
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    body = _impl.core.encode_v2_records(timestamps, keys, values, headers,
                                  base_timestamp if n else 0, offset_deltas)
    return _frame_default_batch(
        body, n, base_timestamp, max_timestamp, computed_last_delta, base_offset=base_offset, compression=codec,
        timestamp_type=ts_type, log_append_time=log_append_time, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, is_transactional=is_transactional,
        is_control=is_control, partition_leader_epoch=partition_leader_epoch, delete_horizon_ms=delete_horizon_ms,
        last_offset_delta=last_offset_delta)


def _frame_default_batch(
    body: bytes, n: int, base_timestamp: int, max_timestamp: int, computed_last_delta: int, *,
    base_offset: int, compression: CompressionType, timestamp_type: TimestampType, log_append_time: int | None,
    producer_id: int, producer_epoch: int, base_sequence: int, is_transactional: bool, is_control: bool,
    partition_leader_epoch: int, delete_horizon_ms: int | None, last_offset_delta: int | None,
) -> bytes:
    """A records section of ``n`` records framed as a v2 batch (Kafka:
    ``MemoryRecordsBuilder.writeDefaultBatchHeader``): compressed if asked, the 61-byte header written, the
    CRC-32C computed over the attributes on."""
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        assert log_append_time is not None
        max_timestamp = log_append_time
    last_delta = computed_last_delta if last_offset_delta is None else last_offset_delta
    _check_header_fields(last_offset_delta=last_delta)
    if base_offset + last_delta > INT64_MAX:
        # Kafka's long would wrap, and the batch would read back with a last offset below its base offset.
        raise IllegalArgumentError(f"base_offset {base_offset}: the batch's last offset {base_offset + last_delta} "
                                   "does not fit a Java long")
    if compression is not CompressionType.NONE:
        body = compress(compression, body, magic=MAGIC_V2)
    attributes = _compute_attributes(compression, timestamp_type, is_transactional, is_control,
                                     delete_horizon_ms is not None)
    size = RECORD_BATCH_OVERHEAD + len(body)
    header = bytearray(RECORD_BATCH_OVERHEAD)
    _HEADER.pack_into(
        header, 0, base_offset, size - LOG_OVERHEAD, partition_leader_epoch, MAGIC_V2, 0, attributes, last_delta,
        base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, n,
    )
    # The CRC runs on from the header's attributes into the body, so the body is copied once, by the join.
    crc = _impl.core.crc32c(body, _range_crc32c(header, ATTRIBUTES_OFFSET, RECORD_BATCH_OVERHEAD))
    _U32.pack_into(header, CRC_OFFSET, crc)
    return b"".join((header, body))


def write_empty_header(*, base_offset: int, last_offset: int, producer_id: int, producer_epoch: int,
                       base_sequence: int, partition_leader_epoch: int, timestamp_type: TimestampType,
                       timestamp: int, is_transactional: bool, is_control: bool) -> bytes:
    """A v2 batch header with no records (Kafka: ``DefaultRecordBatch.writeEmptyHeader``): what the cleaner
    keeps of a producer's last batch when every record of it is gone, so the producer's offsets, epoch and
    sequence survive compaction.  Uncompressed, base timestamp -1, ``timestamp`` as the max timestamp,
    ``lastOffsetDelta`` from ``last_offset``, 0 records; the CRC covers the attributes to the end."""
    _check_header_fields(base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                         max_timestamp=timestamp, producer_id=producer_id, producer_epoch=producer_epoch,
                         base_sequence=base_sequence)
    java_integer(last_offset - base_offset, "last_offset - base_offset", "the batch header's lastOffsetDelta", "int")
    attributes = _compute_attributes(CompressionType.NONE, timestamp_type, is_transactional, is_control, False)
    out = bytearray(RECORD_BATCH_OVERHEAD)
    _I64.pack_into(out, BASE_OFFSET_OFFSET, base_offset)
    _I32.pack_into(out, LENGTH_OFFSET, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD)
    _I32.pack_into(out, PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)
    out[MAGIC_OFFSET] = MAGIC_V2
    _I16.pack_into(out, ATTRIBUTES_OFFSET, attributes)
    _I32.pack_into(out, LAST_OFFSET_DELTA_OFFSET, last_offset - base_offset)
    _I64.pack_into(out, BASE_TIMESTAMP_OFFSET, NO_TIMESTAMP)
    _I64.pack_into(out, MAX_TIMESTAMP_OFFSET, timestamp)
    _I64.pack_into(out, PRODUCER_ID_OFFSET, producer_id)
    _I16.pack_into(out, PRODUCER_EPOCH_OFFSET, producer_epoch)
    _I32.pack_into(out, BASE_SEQUENCE_OFFSET, base_sequence)
    _I32.pack_into(out, RECORDS_COUNT_OFFSET, 0)
    _U32.pack_into(out, CRC_OFFSET, _range_crc32c(out, ATTRIBUTES_OFFSET, RECORD_BATCH_OVERHEAD))
    return bytes(out)

