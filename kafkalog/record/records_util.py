"""Down-converting batches for a reader of an older format, and what conversion costs: the part of
conversion below :class:`~kafkalog.record.memory.MemoryRecords`, which both it and
:mod:`kafkalog.record.convert` build on.

Ports of (Apache Kafka, tag 3.8.0, ``clients/src/main/java/org/apache/kafka/common/record/``):

* ``RecordsUtil.java``: ``downConvert`` and ``convertRecordBatch`` (:func:`down_convert_batches`); Kafka's
  returns ``MemoryRecords``, this one the bytes, so that ``MemoryRecords.downConvert`` can build on it
  without the record buffer and the conversion importing each other;
* ``ConvertedRecords.java`` and ``RecordValidationStats.java`` (:class:`ConvertedRecords`,
  :class:`RecordValidationStats`);
* the size accounting of ``MemoryRecordsBuilder.uncompressedBytesWritten``:
  ``AbstractRecords.recordBatchHeaderSizeInBytes``, ``DefaultRecord.sizeInBytes`` and
  ``LegacyRecord.recordSize`` (:func:`record_batch_header_size_in_bytes`,
  :func:`default_record_size_in_bytes`, :func:`legacy_record_size_in_bytes`).

The rules of ``downConvert`` are in :mod:`kafkalog.record.convert`'s docstring.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from .._common import (
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
)
from ..errors import IllegalArgumentError, UnsupportedCompressionError
from .batch import RecordBatch
from .compression import CompressionType
from .legacy import build_legacy_message_set
from .types import TimestampType

__all__ = [
    "ConvertedRecords",
    "RecordValidationStats",
    "default_record_size_in_bytes",
    "down_convert_batches",
    "legacy_record_size_in_bytes",
    "record_batch_header_size_in_bytes",
]


R = TypeVar("R", covariant=True)


@dataclass(frozen=True)
class RecordValidationStats:
    """What validating or converting records cost (Kafka: ``RecordValidationStats``), for the broker's
    conversion metrics.

    ``temporary_memory_bytes`` counts the bytes held on the side: zero for uncompressed records kept as they
    are, the converted buffer's size for converted ones, the decompressed size for compressed ones, and both
    for compressed records that were converted.  ``num_records_converted`` counts the records rebuilt and
    ``conversion_time_nanos`` the time spent rebuilding them.
    """

    temporary_memory_bytes: int = 0
    num_records_converted: int = 0
    conversion_time_nanos: int = 0

    EMPTY: ClassVar[RecordValidationStats]

    def add(self, other: RecordValidationStats) -> RecordValidationStats:
        """The sum of both (Kafka's ``add``, which updates in place; these stats are immutable)."""
        return RecordValidationStats(self.temporary_memory_bytes + other.temporary_memory_bytes,
                                     self.num_records_converted + other.num_records_converted,
                                     self.conversion_time_nanos + other.conversion_time_nanos)

    def __str__(self) -> str:
        return (f"RecordValidationStats(temporaryMemoryBytes={self.temporary_memory_bytes}, "
                f"numRecordsConverted={self.num_records_converted}, "
                f"conversionTimeNanos={self.conversion_time_nanos})")


RecordValidationStats.EMPTY = RecordValidationStats()


@dataclass(frozen=True)
class ConvertedRecords(Generic[R]):
    """Records after a conversion, with what it cost (Kafka: ``ConvertedRecords``)."""

    records: R
    record_conversion_stats: RecordValidationStats


# ---------------------------------------------------------------------------------------------------------
# Sizes (MemoryRecordsBuilder.uncompressedBytesWritten)


def _size_of_varlong(value: int) -> int:
    """Bytes of ``value`` as a zig-zag varint (Kafka: ``ByteUtils.sizeOfVarint`` / ``sizeOfVarlong``)."""
    zigzag = (value << 1) ^ (value >> 63)
    return max(1, (zigzag.bit_length() + 6) // 7)


def default_record_size_in_bytes(offset_delta: int, timestamp_delta: int, key: bytes | None,
                                 value: bytes | None, headers: Sequence[tuple[str, bytes | None]]) -> int:
    """Bytes of one v2 record, its length varint included (Kafka: ``DefaultRecord.sizeInBytes``)."""
    body = 1 + _size_of_varlong(timestamp_delta) + _size_of_varlong(offset_delta)
    for field in (key, value):
        body += 1 if field is None else _size_of_varlong(len(field)) + len(field)
    body += _size_of_varlong(len(headers))
    for header_key, header_value in headers:
        encoded = header_key.encode()
        body += _size_of_varlong(len(encoded)) + len(encoded)
        body += 1 if header_value is None else _size_of_varlong(len(header_value)) + len(header_value)
    return body + _size_of_varlong(body)


def legacy_record_size_in_bytes(magic: int, key: bytes | None, value: bytes | None) -> int:
    """Bytes of one v0/v1 message without its 12-byte frame (Kafka: ``LegacyRecord.recordSize``)."""
    overhead = RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1
    return overhead + (0 if key is None else len(key)) + (0 if value is None else len(value))


def record_batch_header_size_in_bytes(magic: int, compression: CompressionType) -> int:
    """The bytes a batch spends before its records: the v2 header, a v0/v1 wrapper's frame and message
    header, nothing for uncompressed v0/v1 messages (Kafka: ``AbstractRecords.recordBatchHeaderSizeInBytes``)."""
    if magic > MAGIC_V1:
        return RECORD_BATCH_OVERHEAD
    if compression is not CompressionType.NONE:
        return LOG_OVERHEAD + (RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1)
    return 0


# ---------------------------------------------------------------------------------------------------------
# RecordsUtil.downConvert


def _is_compressed(batch: RecordBatch) -> bool:
    return batch.compression is not CompressionType.NONE


def down_convert_batches(batches: Iterable[RecordBatch], to_magic: int, first_offset: int, *,
                         nanoseconds: Callable[[], int] = time.monotonic_ns) -> ConvertedRecords[bytes]:
    """``batches`` in ``to_magic`` or older, for a reader of that format, as the bytes of a message set
    (Kafka: ``RecordsUtil.downConvert``, which wraps them in ``MemoryRecords``: here
    :meth:`MemoryRecords.down_convert <kafkalog.record.memory.MemoryRecords.down_convert>` and
    :func:`kafkalog.record.convert.down_convert` do); see :mod:`kafkalog.record.convert` for the rules.

    ``first_offset`` (the fetch offset) only matters for an uncompressed batch newer than a v0/v1 target:
    its records before it are left out.  The stats count the source batches' bytes and the rebuilt batches'
    uncompressed bytes as temporary memory, and the records rebuilt.

    Raises:
        UnsupportedCompressionError: a zstd batch for a v0/v1 reader.
    """
    start = nanoseconds()
    plan: list[tuple[RecordBatch, list[Any] | None, int]] = []
    for batch in batches:
        if to_magic < MAGIC_V2:
            if batch.is_control:
                continue
            if batch.compression is CompressionType.ZSTD:
                raise UnsupportedCompressionError(
                    "Down-conversion of zstandard-compressed batches is not supported", batch.position)
        if batch.magic <= to_magic:
            plan.append((batch, None, -1))
            continue
        records = [record for record in batch.records()
                   if to_magic > MAGIC_V1 or _is_compressed(batch) or record.offset >= first_offset]
        if not records:
            continue
        both_v2 = batch.magic >= MAGIC_V2 and to_magic >= MAGIC_V2
        base_offset = batch.base_offset if both_v2 else records[0].offset
        plan.append((batch, records, base_offset))

    out = bytearray()
    temporary_memory_bytes = 0
    num_records_converted = 0
    for batch, kept, base_offset in plan:
        temporary_memory_bytes += batch.size_in_bytes
        if kept is None:
            out += batch.raw_bytes()
        else:
            data, uncompressed_bytes = _convert_record_batch(to_magic, batch, kept, base_offset)
            out += data
            temporary_memory_bytes += uncompressed_bytes
            num_records_converted += len(kept)
    stats = RecordValidationStats(temporary_memory_bytes, num_records_converted, nanoseconds() - start)
    return ConvertedRecords(bytes(out), stats)


def _convert_record_batch(to_magic: int, batch: RecordBatch, records: list[Any], base_offset: int
                          ) -> tuple[bytes, int]:
    """One batch's ``records`` rebuilt in ``to_magic`` with the batch's codec and timestamp type; returns
    the bytes and ``uncompressedBytesWritten`` (Kafka: ``RecordsUtil.convertRecordBatch``)."""
    if to_magic >= MAGIC_V2:
        # Only reachable for a batch newer than v2, which no Kafka writes.
        raise IllegalArgumentError(f"Cannot down-convert a v{batch.magic} batch to v{to_magic}")
    timestamp_type = batch.timestamp_type
    log_append_time = batch.max_timestamp if timestamp_type is TimestampType.LOG_APPEND_TIME else None
    compression = batch.compression
    # v0 has no timestamp type: the builder writes the same bytes whatever type it is given.
    if to_magic == MAGIC_V0 or timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
        timestamp_type, log_append_time = TimestampType.CREATE_TIME, None
    data = build_legacy_message_set(
        [(record.key, record.value, record.timestamp) for record in records], magic=to_magic,
        compression=compression, timestamp_type=timestamp_type, log_append_time=log_append_time,
        offsets=[record.offset for record in records], base_offset=base_offset,
    )
    written = record_batch_header_size_in_bytes(to_magic, compression) + sum(
        LOG_OVERHEAD + legacy_record_size_in_bytes(to_magic, record.key, record.value) for record in records)
    return data, written
