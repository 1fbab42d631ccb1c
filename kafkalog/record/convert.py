"""What validating and converting records cost, and the sizes that count it.

Ports of (Apache Kafka, tag 3.8.0, ``clients/src/main/java/org/apache/kafka/common/record/``):

* ``RecordValidationStats.java`` and ``ConvertedRecords.java`` (:class:`RecordValidationStats`,
  :class:`ConvertedRecords`);
* the size accounting of ``MemoryRecordsBuilder.uncompressedBytesWritten``:
  ``AbstractRecords.recordBatchHeaderSizeInBytes``, ``DefaultRecord.sizeInBytes`` and
  ``LegacyRecord.recordSize`` (:func:`record_batch_header_size_in_bytes`,
  :func:`default_record_size_in_bytes`, :func:`legacy_record_size_in_bytes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from .._common import (
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
)
from .compression import CompressionType

__all__ = [
    "ConvertedRecords",
    "RecordValidationStats",
    "default_record_size_in_bytes",
    "legacy_record_size_in_bytes",
    "record_batch_header_size_in_bytes",
]

R = TypeVar("R")


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
