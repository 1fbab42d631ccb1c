"""Building the records a validation rebuilds: Kafka's ``MemoryRecordsBuilder`` as ``LogValidator`` uses it.

Port of (Apache Kafka, tag 3.8.0) the builder calls of
``storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java``
(``convertAndAssignOffsetsNonCompressed`` and ``buildRecordsAndAssignOffsets``: ``MemoryRecords.builder(...)``,
``appendWithOffset`` per record, ``build()``, ``info()``, ``uncompressedBytesWritten()``) over
``clients/src/main/java/org/apache/kafka/common/record/MemoryRecordsBuilder.java``, with the builder's own
argument checks.  Split from :mod:`kafkalog.log.validator`, which calls it when records must be converted or
recompressed.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from .._common import MAGIC_V0, MAGIC_V2, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_TIMESTAMP
from ..errors import IllegalArgumentError
from ..record.batch import build_default_batch_sized
from ..record.compression import CompressionType
from ..record.legacy import build_legacy_message_set_sized
from ..record.memory import MemoryRecords
from ..record.records_util import record_batch_header_size_in_bytes
from ..record.types import TimestampType

__all__ = ["build_records", "check_builder_arguments"]

_HEADERS = attrgetter("headers")


def check_builder_arguments(magic: int, compression: CompressionType, is_transactional: bool) -> None:
    """The checks of Kafka's ``MemoryRecordsBuilder`` constructor, which a caller that makes its builder before
    validating (``LogValidator.convertAndAssignOffsetsNonCompressed``) meets first.

    Raises:
        IllegalArgumentError: a transactional or a zstd batch below magic 2.
    """
    if magic < MAGIC_V2:
        if is_transactional:
            raise IllegalArgumentError(f"Transactional records are not supported for magic {magic}")
        if compression is CompressionType.ZSTD:
            raise IllegalArgumentError(f"ZStandard compression is not supported for magic {magic}")


def build_records(
    records: list[Any],
    offsets: list[int],
    *,
    magic: int,
    compression: CompressionType,
    timestamp_type: TimestampType,
    log_append_time: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    is_transactional: bool,
    partition_leader_epoch: int,
    template: MemoryRecords,
) -> tuple[MemoryRecords, int, int, int]:
    """One batch (uncompressed v0/v1: one message per record) of ``records`` at ``offsets``; returns the
    records, their max timestamp, its shallow offset and the bytes written before compression (Kafka:
    ``MemoryRecords.builder(...)``, ``appendWithOffset(offset, record)`` per record, ``build()``,
    ``info()`` and ``uncompressedBytesWritten()``).

    The builder's own checks are made first, with Kafka's ``IllegalArgumentException`` messages.
    """
    check_builder_arguments(magic, compression, is_transactional)
    # appendWithOffset's checks of each record, and the largest timestamp and where it first is, which info()
    # reports.  The records themselves go to the encoders as they are.
    max_timestamp, index_of_max_timestamp = _checked_timestamps(records, magic)
    # MemoryRecordsBuilder.validateProducerState, at close()
    if is_transactional and producer_id == NO_PRODUCER_ID:
        raise IllegalArgumentError("Cannot write transactional messages without a valid producer ID")
    if producer_id != NO_PRODUCER_ID:
        if producer_epoch == NO_PRODUCER_EPOCH:
            raise IllegalArgumentError("Invalid negative producer epoch")
        if base_sequence < 0:
            raise IllegalArgumentError("Invalid negative sequence number used")
        if magic < MAGIC_V2:
            raise IllegalArgumentError(f"Idempotent messages are not supported for magic {magic}")

    def wrap(data: bytes) -> MemoryRecords:
        return MemoryRecords(data, max_batch_size=template.max_batch_size,
                             max_decompressed_size=template.max_decompressed_size)

    # uncompressedBytesWritten: the batch header, then every record as written before compression (a v2
    # record's deltas from the first offset and timestamp; a v0/v1 message with its frame).
    written = record_batch_header_size_in_bytes(magic, compression)
    if not records:
        return wrap(b""), NO_TIMESTAMP, -1, written
    base_offset = offsets[0]
    if magic == MAGIC_V2:
        data, records_size = build_default_batch_sized(
            records, base_offset=base_offset, compression=compression, timestamp_type=timestamp_type,
            log_append_time=log_append_time, producer_id=producer_id, producer_epoch=producer_epoch,
            base_sequence=base_sequence, is_transactional=is_transactional,
            partition_leader_epoch=partition_leader_epoch,
        )
    else:
        # v0 has no timestamp-type bit: Kafka writes the same bytes under either type.
        legacy_type = TimestampType.CREATE_TIME if magic == MAGIC_V0 else timestamp_type
        data, records_size = build_legacy_message_set_sized(
            records, magic=magic, base_offset=base_offset, compression=compression, timestamp_type=legacy_type,
            log_append_time=log_append_time if legacy_type is TimestampType.LOG_APPEND_TIME else None,
        )
    written += records_size
    # MemoryRecordsBuilder.info()
    last_offset = offsets[-1]
    one_batch = compression is not CompressionType.NONE or magic >= MAGIC_V2
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        return wrap(data), log_append_time, last_offset if one_batch else base_offset, written
    # v0 messages have no timestamp
    if magic == MAGIC_V0 or max_timestamp == NO_TIMESTAMP:
        return wrap(data), NO_TIMESTAMP, -1, written
    return wrap(data), max_timestamp, last_offset if one_batch else offsets[index_of_max_timestamp], written



def _checked_timestamps(records: list[Any], magic: int) -> tuple[int, int]:
    """``appendWithOffset``'s checks of ``records`` (Kafka: ``MemoryRecordsBuilder.appendWithOffset``, record by
    record: a negative timestamp other than -1, then headers below magic 2), and the largest timestamp with the
    index of the first record holding it (-1 and -1 when every timestamp is -1, or there is no record).

    The columns are read with builtins rather than a loop of Python statements a record (a rebuild's records
    are its whole cost here); the first record breaking a rule raises, as the record-by-record checks would:
    the earlier of the first bad timestamp and the first record with headers, the timestamp first in one
    record."""
    timestamps = [record.timestamp for record in records]
    first_bad = None
    if timestamps and min(timestamps) < NO_TIMESTAMP:
        first_bad = next(i for i, timestamp in enumerate(timestamps) if timestamp < NO_TIMESTAMP)
    if magic < MAGIC_V2 and any(map(_HEADERS, records)):
        with_headers = next(i for i, record in enumerate(records) if record.headers)
        if first_bad is None or with_headers < first_bad:
            raise IllegalArgumentError(f"Magic v{magic} does not support record headers")
    if first_bad is not None:
        raise IllegalArgumentError(f"Invalid negative timestamp {timestamps[first_bad]}")
    largest = max(timestamps, default=NO_TIMESTAMP)
    if largest == NO_TIMESTAMP:
        return NO_TIMESTAMP, -1
    return largest, timestamps.index(largest)
