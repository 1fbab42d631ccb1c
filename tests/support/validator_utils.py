"""Helpers of the LogValidator tests (tests/log/test_validator*.py, test_log_append_info.py): Kafka's fixed
inputs (a fixed now, the producer fields of its check* methods) and its check* / verify*
helpers, and builders of the batches the cases validate.
"""

from __future__ import annotations

import struct
from typing import Any

from kafkalog import MemoryRecords, TimestampType
from kafkalog.log.validator import (
    LogValidator,
    MetricsCounter,
    RecordValidationStats,
    ValidationResult,
)
from kafkalog.record import (
    CompressionType,
    DefaultRecordBatch,
    LegacyRecordBatch,
)
from kafkalog.record.batch import _range_crc32c
from kafkalog.record.compression import compress
from kafkalog.record.legacy import legacy_entry

NOW = 1_700_000_000_000
TP = "topic-0"
VALUES = [b"hello", b"there", b"beautiful"]
OFFSET = 1234567
# v2 producer fields of Kafka's checkNonCompressed / checkRecompression / checkCompressed
PRODUCER = {
    "producer_id": 1324,
    "producer_epoch": 10,
    "base_sequence": 984,
    "is_transactional": True,
    "partition_leader_epoch": 40,
}


def create_records(
    magic: int, timestamp: int = -1, codec: str = "none", values: list[bytes] | None = None
) -> MemoryRecords:
    """Kafka's ``createRecords``: null keys, one record per value, base offset 0, CreateTime."""
    return MemoryRecords.with_records(
        [(None, v, timestamp) for v in (values or VALUES)], magic=magic, compression=codec
    )


def validator(
    records: MemoryRecords,
    *,
    source: str = "none",
    target: str | None = None,
    to_magic: int = 2,
    timestamp_type: str = "CreateTime",
    before: int = 1000,
    after: int = 1000,
    partition_leader_epoch: int = -1,
    origin: str = "client",
    compacted: bool = False,
    now: int = NOW,
    ibp: str | None = None,
) -> LogValidator:
    """A ``LogValidator`` with the arguments Kafka's tests pass, named."""
    return LogValidator(
        records,
        now_ms=now,
        source_compression=source,
        target_compression=source if target is None else target,
        compacted_topic=compacted,
        to_magic=to_magic,
        timestamp_type=timestamp_type,
        timestamp_before_max_ms=before,
        timestamp_after_max_ms=after,
        partition_leader_epoch=partition_leader_epoch,
        origin=origin,
        topic_partition=TP,
        inter_broker_protocol_version=ibp,
    )


def check_offsets(records: MemoryRecords, base_offset: int) -> None:
    """Kafka's ``checkOffsets``: offsets counted up from ``base_offset``; here also every batch valid."""
    for batch in records.batches():
        batch.ensure_valid()
    offsets = [r.offset for r in records.records()]
    assert offsets, "Message set should not be empty"
    assert offsets == list(range(base_offset, base_offset + len(offsets)))


def values_of(records: MemoryRecords) -> list[bytes | None]:
    return [r.value for r in records.records()]


def wrapper(
    magic: int,
    inner: list[bytes],
    *,
    offset: int,
    codec: CompressionType = CompressionType.GZIP,
    timestamp: int = -1,
    timestamp_type_bit: int = 0,
) -> MemoryRecords:
    """One compressed v0/v1 wrapper around ``inner`` framed messages, as a (possibly buggy) producer wrote it
    (Kafka's tests use ``appendUncheckedWithOffset`` for these)."""
    value = compress(codec, b"".join(inner), magic=magic)
    return MemoryRecords(legacy_entry(offset, magic, int(codec) | timestamp_type_bit, timestamp, None, value))


def two_batches(magic: int, codec: str) -> MemoryRecords:
    """Kafka's ``createTwoBatchedRecords``: one record at offset 0, then two at 1 and 2."""
    first = MemoryRecords.with_records([(b"1", b"a", 10)], magic=magic, compression=codec)
    second = MemoryRecords.with_records(
        [(b"2", b"b", 11), (b"3", b"c", 12)], magic=magic, compression=codec, base_offset=1
    )
    return MemoryRecords(bytes(first.buffer) + bytes(second.buffer))


def set_int(records: MemoryRecords, position: int, value: int) -> MemoryRecords:
    """A copy of ``records`` with the int32 at ``position`` replaced (no CRC update, as Kafka's tests do)."""
    data = bytearray(records.buffer)
    struct.pack_into(">i", data, position, value)
    return MemoryRecords(data)


def check_log_append_time(batch: Any, now: int, base_timestamp: int) -> None:
    """Kafka's ``validateLogAppendTime``."""
    assert batch.is_valid()
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == now
    if isinstance(batch, DefaultRecordBatch):
        assert batch.base_timestamp == base_timestamp
    assert [r.timestamp for r in batch.records()] == [now] * len(batch.records())


def verify_record_validation_stats(
    stats: RecordValidationStats, num_converted: int, records: MemoryRecords, compressed: bool
) -> None:
    """Kafka's ``verifyRecordValidationStats``."""
    assert stats is not None, "Records processing info is null"
    assert stats.num_records_converted == num_converted
    if num_converted > 0:
        assert 0 <= stats.conversion_time_nanos <= 60 * 10**9, f"Conversion time not valid {stats}"
    original = records.size_in_bytes()
    if num_converted > 0 and compressed:
        assert stats.temporary_memory_bytes > original, f"Temp bytes too small, orig={original} {stats}"
    elif num_converted > 0 or compressed:
        assert stats.temporary_memory_bytes > 0, "Temp bytes not updated"
    else:
        assert stats.temporary_memory_bytes == 0


def validate_messages(
    records: MemoryRecords, magic: int, source: str, target: str, metrics: MetricsCounter | None = None
) -> ValidationResult:
    """Kafka's ``validateMessages``: a clock at 0, CreateTime within 1000 ms, inter-broker protocol 2.3."""
    return validator(
        records, source=source, target=target, to_magic=magic, now=0, ibp="2.3-IV1"
    ).validate_messages_and_assign_offsets(0, metrics)


def check_records_valid(batch: Any) -> None:
    """Kafka's ``record.ensureValid()`` over a batch: the inner messages of a v0/v1 wrapper have CRCs of their
    own; a v2 record has none (``DefaultRecord.ensureValid`` checks nothing)."""
    if isinstance(batch, LegacyRecordBatch):
        assert all(batch.record_validity())


def producer_fields(magic: int) -> dict[str, Any]:
    """The producer fields of Kafka's checkNonCompressed / checkRecompression / checkCompressed: set for v2,
    the "none" values below it."""
    return dict(PRODUCER) if magic >= 2 else {}


def check_batches_of(result: ValidationResult, stamps: list[int], fields: dict[str, Any]) -> None:
    """The per-batch loop of Kafka's checkNonCompressed / checkRecompression / checkCompressed."""
    seen = []
    for batch in result.valid_records.batches():
        assert batch.is_valid()
        assert batch.timestamp_type is TimestampType.CREATE_TIME
        if isinstance(batch, DefaultRecordBatch):
            assert batch.base_timestamp == stamps[0]
        assert batch.max_timestamp == max(r.timestamp for r in batch.records())
        assert batch.producer_epoch == fields.get("producer_epoch", -1)
        assert batch.producer_id == fields.get("producer_id", -1)
        assert batch.base_sequence == fields.get("base_sequence", -1)
        assert batch.is_transactional is fields.get("is_transactional", False)
        assert batch.partition_leader_epoch == fields.get("partition_leader_epoch", -1)
        check_records_valid(batch)
        seen += [r.timestamp for r in batch.records()]
    assert seen == stamps


def put_field(data: bytearray, fmt: str, at: int, value: int) -> bytearray:
    """``data`` with ``value`` packed big- or little-endian (``fmt``) at byte ``at``: a batch header's field set
    by hand (the one-batch kernels' tests bend one field at a time)."""
    struct.pack_into(fmt, data, at, value)
    return data


def with_crc(data: bytearray) -> bytearray:
    """``data``, a v2 batch, with its CRC-32C (bytes 17-20) made right again over bytes 21 to the end."""
    return put_field(data, ">I", 17, _range_crc32c(data, 21, len(data)))
