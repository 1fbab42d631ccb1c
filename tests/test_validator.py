"""Append-time validation: Kafka's ``LogValidatorTest`` (core/src/test/scala/unit/kafka/log, tag 3.8.0) and
the shallow pass of ``UnifiedLog.append`` (``analyzeAndValidateRecords``, ``trimInvalidBytes``).

Every test runs on both kernel twins through ``impl``.  Each of Kafka's 59 cases has a test of its name (the
V0/V1/V2 variants apart, through the shared ``check_*`` helpers as Kafka's ``check*`` methods); the tests
after them go beyond Kafka's.  Kafka's cases use ``System.currentTimeMillis``; here ``now`` is a fixed
instant so that messages can be compared whole.  After every successful validation the output is checked
the way Kafka's tests check it: every batch passes ``ensure_valid`` and decodes to the records given, with
offsets counted up from the offset the validator started at, and ``RecordValidationStats`` as Kafka's
``verifyRecordValidationStats`` checks them.

Kafka's meters are a :class:`~kafkalog.validator.MetricsCounter` here; where Kafka's test also counts the
meters registered in the Yammer registry (``testMisMatchMagic``,
``testNonIncreasingOffsetRecordBatchHasMetricsLogged``), that part is left out: kafkalog has no metrics
registry.  Compression levels are not an input of kafkalog's validator (the target is a codec), so
``testDifferentLevelDoesNotCauseRecompression`` builds the producer's level-9 and level-1 gzip batches by hand
and checks that the level-9 one is kept byte for byte.
"""

from __future__ import annotations

import gzip
import struct
from types import ModuleType
from typing import Any

import pytest
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

from kafkalog import MemoryRecords, TimestampType, _impl
from kafkalog.append_info import (
    LogAppendInfo,
    OffsetsOutOfOrderError,
    analyze_and_validate_records,
    trim_invalid_bytes,
)
from kafkalog.config import LogConfig
from kafkalog.errors import (
    CorruptRecordError,
    IllegalArgumentError,
    InvalidRecordError,
    RecordTooLargeError,
    UnsupportedCompressionError,
)
from kafkalog.record import (
    CompressionType,
    ControlRecordType,
    DefaultRecordBatch,
    EndTransactionMarker,
    LegacyRecordBatch,
)
from kafkalog.record.batch import build_default_batch
from kafkalog.record.compression import compress, decompress
from kafkalog.record.convert import (
    default_record_size_in_bytes,
    legacy_record_size_in_bytes,
    record_batch_header_size_in_bytes,
)
from kafkalog.record.legacy import legacy_entry
from kafkalog.validator import (
    AppendOrigin,
    InvalidTimestampError,
    LogValidator,
    MetricsCounter,
    RecordError,
    RecordValidationError,
    RecordValidationStats,
    UnsupportedForMessageFormatError,
    ValidationResult,
    target_compression,
    validate_messages_and_assign_offsets,
)

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


# ---------------------------------------------------------------------------------------------------------
# LogAppendTime


def check_log_append_time_non_compressed(magic: int) -> None:
    """Kafka's ``checkLogAppendTimeNonCompressed``: the timestamps are overwritten in place."""
    records = create_records(magic, timestamp=1234)
    count = len(list(records.records()))
    result = validator(
        records, to_magic=magic, timestamp_type="LogAppendTime"
    ).validate_messages_and_assign_offsets(0)
    assert result.next_offset == count
    assert len(list(result.valid_records.records())) == count, "message set size should not change"
    if magic >= 1:
        for batch in result.valid_records.batches():
            check_log_append_time(batch, NOW, 1234)
            check_records_valid(batch)
    assert result.max_timestamp == (-1 if magic == 0 else NOW)
    assert result.message_size_maybe_changed is False
    # under LogAppendTime: v1 names its first single-message batch, v2 its one batch's last offset
    assert result.shallow_offset_of_max_timestamp == {0: -1, 1: 0, 2: 2}[magic]
    verify_record_validation_stats(result.record_validation_stats, 0, records, compressed=False)
    check_offsets(result.valid_records, 0)


def test_log_append_time_non_compressed_v0(impl: ModuleType) -> None:
    check_log_append_time_non_compressed(0)


def test_log_append_time_non_compressed_v1(impl: ModuleType) -> None:
    check_log_append_time_non_compressed(1)


def test_log_append_time_non_compressed_v2(impl: ModuleType) -> None:
    check_log_append_time_non_compressed(2)


def check_log_append_time_with_recompression(to_magic: int) -> None:
    """Kafka's ``checkLogAppendTimeWithRecompression``: a gzip v0 set rebuilt in the log's magic."""
    records = create_records(0, codec="gzip")
    result = validator(
        records, source="gzip", to_magic=to_magic, timestamp_type="LogAppendTime"
    ).validate_messages_and_assign_offsets(0)
    assert len(list(result.valid_records.records())) == 3, "message set size should not change"
    batches = list(result.valid_records.batches())
    assert len(batches) == 1
    for batch in batches:
        check_log_append_time(batch, NOW, -1)
        check_records_valid(batch)
        assert batch.magic == to_magic
    assert batches[0].is_valid(), "MessageSet should still valid"
    assert result.max_timestamp == NOW
    assert result.shallow_offset_of_max_timestamp == 2
    assert result.message_size_maybe_changed is True
    verify_record_validation_stats(result.record_validation_stats, 3, records, compressed=True)
    check_offsets(result.valid_records, 0)


def test_log_append_time_with_recompression_v1(impl: ModuleType) -> None:
    check_log_append_time_with_recompression(1)


def test_log_append_time_with_recompression_v2(impl: ModuleType) -> None:
    check_log_append_time_with_recompression(2)


def check_log_append_time_without_recompression(magic: int) -> None:
    """Kafka's ``checkLogAppendTimeWithoutRecompression``: only the header changes, the CRC follows."""
    records = create_records(magic, timestamp=1234, codec="gzip")
    result = validator(
        records, source="gzip", to_magic=magic, timestamp_type="LogAppendTime"
    ).validate_messages_and_assign_offsets(0)
    assert len(list(result.valid_records.records())) == 3, "message set size should not change"
    batches = list(result.valid_records.batches())
    assert len(batches) == 1
    check_log_append_time(batches[0], NOW, 1234)
    check_records_valid(batches[0])
    assert batches[0].is_valid(), "MessageSet should still valid"
    assert result.max_timestamp == NOW
    assert result.shallow_offset_of_max_timestamp == 2
    assert result.message_size_maybe_changed is False
    assert result.valid_records.size_in_bytes() == records.size_in_bytes()
    verify_record_validation_stats(result.record_validation_stats, 0, records, compressed=True)
    check_offsets(result.valid_records, 0)


def test_log_append_time_without_recompression_v1(impl: ModuleType) -> None:
    check_log_append_time_without_recompression(1)


def test_log_append_time_without_recompression_v2(impl: ModuleType) -> None:
    check_log_append_time_without_recompression(2)


def test_log_append_time_uncompressed_v2_sets_the_attribute_and_crc(impl: ModuleType) -> None:
    """The bit and the max timestamp are under the v2 CRC: both change, and the CRC is recomputed."""
    records = create_records(2, timestamp=1234)
    old = next(records.batches())
    assert old.timestamp_type is TimestampType.CREATE_TIME
    result = validator(
        records, timestamp_type="LogAppendTime", partition_leader_epoch=3
    ).validate_messages_and_assign_offsets(50)
    batch = next(result.valid_records.batches())
    assert batch.attributes == 0x08
    assert batch.crc != old.crc
    assert (batch.base_offset, batch.last_offset, batch.partition_leader_epoch) == (50, 52, 3)
    check_log_append_time(batch, NOW, 1234)


# ---------------------------------------------------------------------------------------------------------
# CreateTime, in place and rebuilt


def check_non_compressed(magic: int) -> None:
    """Kafka's ``checkNonCompressed``: uncompressed records of the log's magic, validated in place."""
    stamps = [NOW - 1, NOW + 1, NOW]  # the record at offset 1 holds the max timestamp
    fields = producer_fields(magic)
    records = MemoryRecords.with_records(
        [(None, v, t) for v, t in zip(VALUES, stamps, strict=True)], magic=magic, **fields
    )
    result = validator(
        records, to_magic=magic, partition_leader_epoch=fields.get("partition_leader_epoch", -1)
    ).validate_messages_and_assign_offsets(0)
    check_batches_of(result, stamps, fields)
    assert result.next_offset == 3
    assert result.max_timestamp == NOW + 1
    # v2: one batch, its last offset; v1: three single-message batches, the one holding the max
    assert len(list(records.batches())) == (1 if magic >= 2 else 3)
    assert result.shallow_offset_of_max_timestamp == (2 if magic >= 2 else 1)
    assert result.message_size_maybe_changed is False
    verify_record_validation_stats(result.record_validation_stats, 0, records, compressed=False)
    check_offsets(result.valid_records, 0)


def test_non_compressed_v1(impl: ModuleType) -> None:
    check_non_compressed(1)


def test_non_compressed_v2(impl: ModuleType) -> None:
    check_non_compressed(2)


def check_recompression(magic: int) -> None:
    """Kafka's ``checkRecompression``: uncompressed records into one gzip batch of the same magic."""
    stamps = [NOW - 1, NOW + 1, NOW]
    fields = producer_fields(magic)
    records = MemoryRecords.with_records(
        [(None, v, t) for v, t in zip(VALUES, stamps, strict=True)], magic=magic, **fields
    )
    # v2 is one batch, v1 a single-message batch per record
    assert len(list(records.batches())) == (1 if magic >= 2 else 3)
    result = validator(
        records, source="none", target="gzip", to_magic=magic,
        partition_leader_epoch=fields.get("partition_leader_epoch", -1),
    ).validate_messages_and_assign_offsets(0)
    check_batches_of(result, stamps, fields)
    assert result.max_timestamp == NOW + 1
    # compressed, v1 and v2 alike are one batch: the shallow offset of the max timestamp is its last offset
    batches = list(result.valid_records.batches())
    assert len(batches) == 1
    assert batches[0].compression is CompressionType.GZIP
    assert result.shallow_offset_of_max_timestamp == 2
    assert result.message_size_maybe_changed is True
    verify_record_validation_stats(result.record_validation_stats, 3, records, compressed=True)
    check_offsets(result.valid_records, 0)
    assert values_of(result.valid_records) == VALUES


def test_recompression_v1(impl: ModuleType) -> None:
    check_recompression(1)


def test_recompression_v2(impl: ModuleType) -> None:
    check_recompression(2)


def check_compressed(magic: int) -> None:
    """Kafka's ``checkCompressed``: same codec and magic, so only the header is rewritten."""
    stamps = [NOW - 1, NOW + 1, NOW]
    fields = producer_fields(magic)
    records = MemoryRecords.with_records(
        [(None, v, t) for v, t in zip(VALUES, stamps, strict=True)], magic=magic, compression="gzip", **fields
    )
    original = bytes(records.buffer)
    result = validator(
        records, source="gzip", to_magic=magic, partition_leader_epoch=fields.get("partition_leader_epoch", -1)
    ).validate_messages_and_assign_offsets(0)
    check_batches_of(result, stamps, fields)
    assert result.max_timestamp == NOW + 1
    assert result.shallow_offset_of_max_timestamp == 2
    assert result.message_size_maybe_changed is False
    verify_record_validation_stats(result.record_validation_stats, 0, records, compressed=True)
    check_offsets(result.valid_records, 0)
    # everything the CRC covers is byte for byte the producer's: the payload was not recompressed
    header = 12 if magic == 1 else 17
    out = bytes(result.valid_records.buffer)
    assert len(out) == len(original)
    assert out[header:] == original[header:]


def test_compressed_v1(impl: ModuleType) -> None:
    check_compressed(1)


def test_compressed_v2(impl: ModuleType) -> None:
    check_compressed(2)


def test_compressed_in_place_rewrites_the_frame_offset(impl: ModuleType) -> None:
    """In place, the offset lands in the frame (v1: the wrapper's last offset; v2: the base offset)."""
    for magic, frame_offset in ((1, OFFSET + 2), (2, OFFSET)):
        records = create_records(magic, timestamp=NOW, codec="gzip")
        result = validator(records, source="gzip", to_magic=magic).validate_messages_and_assign_offsets(OFFSET)
        assert struct.unpack_from(">q", bytes(result.valid_records.buffer))[0] == frame_offset
        assert result.shallow_offset_of_max_timestamp == OFFSET + 2
        check_offsets(result.valid_records, OFFSET)


def check_create_time_up_conversion_from_v0(to_magic: int) -> None:
    """Kafka's ``checkCreateTimeUpConversionFromV0``: v0 messages have no timestamp, so -1."""
    records = create_records(0, codec="gzip")
    result = validator(records, source="gzip", to_magic=to_magic).validate_messages_and_assign_offsets(0)
    for batch in result.valid_records.batches():
        assert batch.is_valid()
        assert batch.magic == to_magic
        if isinstance(batch, DefaultRecordBatch):
            assert batch.base_timestamp == -1
        assert batch.max_timestamp == -1
        assert batch.timestamp_type is TimestampType.CREATE_TIME
        assert (batch.producer_epoch, batch.producer_id, batch.base_sequence) == (-1, -1, -1)
    assert [r.timestamp for r in result.valid_records.records()] == [-1, -1, -1]
    assert result.max_timestamp == -1
    assert result.shallow_offset_of_max_timestamp == -1
    assert result.message_size_maybe_changed is True
    verify_record_validation_stats(result.record_validation_stats, 3, records, compressed=True)
    check_offsets(result.valid_records, 0)


def test_create_time_up_conversion_v0_to_v1(impl: ModuleType) -> None:
    check_create_time_up_conversion_from_v0(1)


def test_create_time_up_conversion_v0_to_v2(impl: ModuleType) -> None:
    check_create_time_up_conversion_from_v0(2)


def test_create_time_up_conversion_v1_to_v2(impl: ModuleType) -> None:
    records = create_records(1, timestamp=NOW, codec="gzip")
    result = validator(records, source="gzip", to_magic=2).validate_messages_and_assign_offsets(0)
    for batch in result.valid_records.batches():
        assert isinstance(batch, DefaultRecordBatch)
        assert batch.is_valid()
        assert (batch.base_timestamp, batch.max_timestamp) == (NOW, NOW)
        assert batch.timestamp_type is TimestampType.CREATE_TIME
        assert (batch.producer_epoch, batch.producer_id, batch.base_sequence) == (-1, -1, -1)
    assert result.max_timestamp == NOW
    assert result.shallow_offset_of_max_timestamp == 2, "Offset of max timestamp should be the last offset 2."
    assert result.message_size_maybe_changed is True
    verify_record_validation_stats(result.record_validation_stats, 3, records, compressed=True)
    check_offsets(result.valid_records, 0)


def test_record_validation_stats_count_what_the_builder_wrote(impl: ModuleType) -> None:
    """The temporary bytes are Kafka's: in place, the batch header plus every record as it is before
    compression (the decompressed payload); rebuilt, that plus the new batch before compression, which for
    an uncompressed result is the result itself."""
    for magic in (1, 2):
        records = create_records(magic, timestamp=NOW, codec="gzip", values=[b"k" * 300, b"", b"x"])
        batch = next(records.batches())
        header = 61 if magic == 2 else 12 + 22
        with memoryview(records.buffer) as view:
            # a v2 batch's records follow its header; a v1 wrapper's value follows its null key
            decompressed = decompress("gzip", bytes(view[header:]), magic=magic, max_size=1 << 20)
        assert batch.compression is CompressionType.GZIP
        result = validator(records, source="gzip", to_magic=magic).validate_messages_and_assign_offsets(0)
        assert result.record_validation_stats == RecordValidationStats(header + len(decompressed), 0, 0)
        # rebuilt uncompressed, the new bytes count in full
        rebuilt = validator(
            create_records(magic, timestamp=NOW, codec="gzip", values=[b"k" * 300, b"", b"x"]),
            source="gzip", target="none", to_magic=magic,
        ).validate_messages_and_assign_offsets(0)
        stats = rebuilt.record_validation_stats
        assert stats.num_records_converted == 3
        assert stats.temporary_memory_bytes == header + len(decompressed) + rebuilt.valid_records.size_in_bytes()
    # converted uncompressed: the converted buffer
    records = create_records(2, timestamp=NOW)
    result = validator(records, to_magic=1).validate_messages_and_assign_offsets(0)
    assert result.record_validation_stats.temporary_memory_bytes == result.valid_records.size_in_bytes()
    assert result.record_validation_stats.num_records_converted == 3


def test_record_sizes_match_what_the_builders_write(impl: ModuleType) -> None:
    """The sizes the stats add up are the bytes the builders write: a v2 record with any deltas, key, value
    and headers, and a v0/v1 message."""
    rows = [(None, b"v", 5, None), (b"k" * 200, None, 5 + 10**6, [("h", b"x" * 70), ("\u00e9", None)]),
            (b"", b"", -1, [])]
    offsets = [0, 64, 9000]
    data = build_default_batch(rows, offset_deltas=offsets)
    total = record_batch_header_size_in_bytes(2, CompressionType.NONE) + sum(
        default_record_size_in_bytes(o, r[2] - rows[0][2], r[0], r[1], r[3] or ()) for r, o in zip(rows, offsets,
                                                                                                   strict=True))
    assert total == len(data)
    for magic in (0, 1):
        message = legacy_entry(0, magic, 0, -1, b"key", b"value")
        assert len(message) == 12 + legacy_record_size_in_bytes(magic, b"key", b"value")
        assert record_batch_header_size_in_bytes(magic, CompressionType.GZIP) == (34 if magic else 26)
        assert record_batch_header_size_in_bytes(magic, CompressionType.NONE) == 0


# ---------------------------------------------------------------------------------------------------------
# Offset assignment and format conversion


def test_absolute_offset_assignment_non_compressed(impl: ModuleType) -> None:
    records = create_records(0)
    check_offsets(records, 0)
    result = validator(records, to_magic=0).validate_messages_and_assign_offsets(OFFSET)
    check_offsets(result.valid_records, OFFSET)
    assert values_of(result.valid_records) == VALUES


def test_absolute_offset_assignment_compressed(impl: ModuleType) -> None:
    records = create_records(0, codec="gzip")
    check_offsets(records, 0)
    result = validator(records, source="gzip", to_magic=0).validate_messages_and_assign_offsets(OFFSET)
    check_offsets(result.valid_records, OFFSET)
    assert values_of(result.valid_records) == VALUES


def check_relative_offset_assignment(magic: int, codec: str) -> None:
    """Kafka's testRelativeOffsetAssignment*: records of the log's magic, offsets from 1234567."""
    records = create_records(magic, timestamp=NOW, codec=codec)
    check_offsets(records, 0)
    result = validator(
        records, source=codec, to_magic=magic, before=5000, after=5000
    ).validate_messages_and_assign_offsets(OFFSET)
    check_offsets(result.valid_records, OFFSET)
    assert values_of(result.valid_records) == VALUES
    assert result.message_size_maybe_changed is False


def test_relative_offset_assignment_non_compressed_v1(impl: ModuleType) -> None:
    check_relative_offset_assignment(1, "none")


def test_relative_offset_assignment_non_compressed_v2(impl: ModuleType) -> None:
    check_relative_offset_assignment(2, "none")


def test_relative_offset_assignment_compressed_v1(impl: ModuleType) -> None:
    check_relative_offset_assignment(1, "gzip")


def test_relative_offset_assignment_compressed_v2(impl: ModuleType) -> None:
    check_relative_offset_assignment(2, "gzip")


def check_offset_assignment_after_conversion(
    from_magic: int, codec: str, to_magic: int, timestamp: int = -1
) -> None:
    """Kafka's testOffsetAssignmentAfter{Up,Down}Conversion*: up-conversion under LogAppendTime (1000 ms
    bounds), down-conversion under CreateTime (5000 ms); offsets from 1234567.  Beyond Kafka's checks: the
    stats (Kafka checks them for the conversions from v0), the values, magic, codec, batches and
    timestamps."""
    up = to_magic > from_magic
    records = create_records(from_magic, timestamp=timestamp, codec=codec)
    check_offsets(records, 0)
    bound = 1000 if up else 5000
    result = validator(
        records, source=codec, to_magic=to_magic, timestamp_type="LogAppendTime" if up else "CreateTime",
        before=bound, after=bound,
    ).validate_messages_and_assign_offsets(OFFSET)
    check_offsets(result.valid_records, OFFSET)
    verify_record_validation_stats(result.record_validation_stats, 3, records, compressed=codec != "none")
    assert values_of(result.valid_records) == VALUES
    batches = list(result.valid_records.batches())
    assert {b.magic for b in batches} == {to_magic}
    assert {b.compression.kafka_name for b in batches} == {codec}
    # uncompressed v0/v1 is one message per record; everything else one batch
    assert len(batches) == (3 if codec == "none" and to_magic < 2 else 1)
    stamps = [r.timestamp for r in result.valid_records.records()]
    if to_magic == 0:
        assert stamps == [-1] * 3
    elif up:
        for batch in batches:
            check_log_append_time(batch, NOW, timestamp)
    else:
        assert stamps == [timestamp] * 3
    assert result.message_size_maybe_changed is True
    assert result.next_offset == OFFSET + 3


def test_offset_assignment_after_up_conversion_v0_to_v1_non_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(0, "none", 1)


def test_offset_assignment_after_up_conversion_v0_to_v2_non_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(0, "none", 2)


def test_offset_assignment_after_up_conversion_v0_to_v1_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(0, "gzip", 1)


def test_offset_assignment_after_up_conversion_v0_to_v2_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(0, "gzip", 2)


def test_offset_assignment_after_down_conversion_v1_to_v0_non_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(1, "none", 0, NOW)


def test_offset_assignment_after_down_conversion_v1_to_v0_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(1, "gzip", 0, NOW)


def test_offset_assignment_after_up_conversion_v1_to_v2_non_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(1, "none", 2)


def test_offset_assignment_after_up_conversion_v1_to_v2_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(1, "gzip", 2)


def test_offset_assignment_after_down_conversion_v2_to_v1_non_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(2, "none", 1, NOW)


def test_offset_assignment_after_down_conversion_v2_to_v1_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(2, "gzip", 1, NOW)


def test_offset_assignment_after_down_conversion_v2_to_v0_non_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(2, "none", 0, NOW)


def test_offset_assignment_after_down_conversion_v2_to_v0_compressed(impl: ModuleType) -> None:
    check_offset_assignment_after_conversion(2, "gzip", 0, NOW)


def check_down_conversion_of_producer_batch_not_permitted(transactional: bool) -> None:
    records = MemoryRecords.with_records(
        [(None, v) for v in VALUES], producer_id=1344, producer_epoch=16, base_sequence=0,
        is_transactional=transactional,
    )
    kind = "Transactional" if transactional else "Idempotent"
    with pytest.raises(
        UnsupportedForMessageFormatError, match=rf"^{kind} records cannot be used with magic version 1$"
    ):
        validator(
            records, source="gzip", to_magic=1, before=5000, after=5000
        ).validate_messages_and_assign_offsets(OFFSET)


def test_down_conversion_of_transactional_records_not_permitted(impl: ModuleType) -> None:
    check_down_conversion_of_producer_batch_not_permitted(True)


def test_down_conversion_of_idempotent_records_not_permitted(impl: ModuleType) -> None:
    check_down_conversion_of_producer_batch_not_permitted(False)


def v2_batch_by_hand(payload: bytes, *, count: int, last_offset_delta: int, codec: CompressionType) -> bytes:
    """A v2 batch around a records section made by hand (``payload``, compressed with ``codec`` already),
    with a valid CRC: what Kafka's tests write with ``appendUncheckedWithOffset`` or a builder at another
    compression level."""
    data = bytearray(61 + len(payload))
    struct.pack_into(">qiibIhiqqqhii", data, 0, 0, len(data) - 12, -1, 2, 0, int(codec), last_offset_delta,
                     -1, -1, -1, -1, -1, count)
    data[61:] = payload
    struct.pack_into(">I", data, 17, _impl.core.crc32c(bytes(data[21:])))
    return bytes(data)


def test_validation_of_batches_with_non_sequential_inner_offsets(impl: ModuleType) -> None:
    """20 records appended unchecked at offset 0: v2 is strict (a last offset delta of 0 for 20 records is
    refused), v0 and v1 wrappers are rebuilt with offsets 0..19, as old clients need."""
    values = [b"%d" % i for i in range(20)]
    body = bytes(impl.encode_v2_records([-1] * 20, [None] * 20, values, None, -1, [0] * 20))
    v2 = MemoryRecords(v2_batch_by_hand(compress("gzip", body, magic=2), count=20, last_offset_delta=0,
                                        codec=CompressionType.GZIP))
    with pytest.raises(
        InvalidRecordError, match=r"Inconsistent batch offset range \[0, 0\] and count of records 20"
    ):
        validate_messages(v2, 2, "gzip", "gzip")
    for magic in (0, 1):
        inner = [legacy_entry(0, magic, 0, -1, None, value) for value in values]
        records = wrapper(magic, inner, offset=0)
        result = validate_messages(records, magic, "gzip", "gzip")
        assert [r.offset for r in result.valid_records.records()] == list(range(20))
        assert values_of(result.valid_records) == values
        assert result.message_size_maybe_changed is True


def test_v1_wrapper_with_offset_zero_keeps_inner_offsets(impl: ModuleType) -> None:
    """librdkafka once wrote wrapper offset 0: the inner offsets are taken as they are, and in place."""
    inner = [legacy_entry(i, 1, 0, NOW, None, v) for i, v in enumerate(VALUES)]
    records = wrapper(1, inner, offset=0)
    result = validator(records, source="gzip", to_magic=1).validate_messages_and_assign_offsets(10)
    assert result.message_size_maybe_changed is False
    check_offsets(result.valid_records, 10)
    assert next(result.valid_records.batches()).last_offset == 12


def test_v1_wrapper_offset_below_last_inner_offset(impl: ModuleType) -> None:
    inner = [legacy_entry(i, 1, 0, NOW, None, v) for i, v in enumerate(VALUES)]
    records = wrapper(1, inner, offset=1)
    with pytest.raises(
        InvalidRecordError,
        match=(
            r"^Found invalid wrapper offset in compressed v1 message set, wrapper offset '1' is less "
            r"than the last inner message offset '2' and it is not zero\."
        ),
    ):
        validator(records, source="gzip", to_magic=1).validate_messages_and_assign_offsets(0)


# ---------------------------------------------------------------------------------------------------------
# Recompression and the target codec


def test_different_codec_causes_recompression(impl: ModuleType) -> None:
    """The result is what a producer writing lz4 writes (kafkalog writes lz4 at Kafka's default level, where
    Kafka's test asks the topic for lz4's lowest; compression levels are not an input of the validator)."""
    values = [b"some" * 256, b"data" * 256]
    records = create_records(2, codec="gzip", values=values)
    result = validator(records, source="gzip", target="lz4").validate_messages_and_assign_offsets(0)
    assert bytes(result.valid_records.buffer) == bytes(create_records(2, codec="lz4", values=values).buffer)
    assert result.message_size_maybe_changed is True


def test_different_level_does_not_cause_recompression(impl: ModuleType) -> None:
    """A batch already in the target codec is kept byte for byte, whatever level it was written at: a
    producer's gzip at level 9 on a topic whose gzip level is 1.  (kafkalog's validator takes the target
    codec only, so the topic's level is not passed; what is checked is that nothing is recompressed.)"""
    values = [b"some" * 256, b"data" * 256]

    def gzip_at_level(level: int) -> MemoryRecords:
        """The batch a producer with ``compression.gzip.level`` = ``level`` writes (no key, no timestamp)."""
        plain = build_default_batch([(None, v, -1) for v in values])
        return MemoryRecords(v2_batch_by_hand(gzip.compress(plain[61:], compresslevel=level, mtime=0),
                                              count=2, last_offset_delta=1, codec=CompressionType.GZIP))

    gzip_max, gzip_min = gzip_at_level(9), gzip_at_level(1)
    assert bytes(gzip_max.buffer) != bytes(gzip_min.buffer)
    assert values_of(gzip_max) == values_of(gzip_min) == values
    result = validator(
        gzip_max, source="gzip", target="gzip", before=5000, after=5000
    ).validate_messages_and_assign_offsets(0)
    assert bytes(result.valid_records.buffer) == bytes(gzip_max.buffer)
    assert bytes(result.valid_records.buffer) != bytes(gzip_min.buffer)
    assert result.message_size_maybe_changed is False


def test_z_std_compressed_with_unavailable_ibp_version(impl: ModuleType) -> None:
    """testZStdCompressedWithUnavailableIBPVersion: a topic compressing to zstd refuses appends under an
    inter-broker protocol older than 2.1 (kafkalog takes the version as an argument of the validator)."""
    records = create_records(2, timestamp=1234)
    run = validator(records, source="none", target="zstd", timestamp_type="LogAppendTime", ibp="2.0-IV1")
    with pytest.raises(
        UnsupportedCompressionError,
        match=r"^Produce requests to inter.broker.protocol.version < 2.1 broker are not allowed to use "
        r"ZStandard compression$",
    ):
        run.validate_messages_and_assign_offsets(0)
    # from 2.1 on, and by default (the newest version), zstd is written
    for version in ("2.1-IV0", "2.1", "3.8", None):
        result = LogValidator(
            create_records(2, timestamp=1234), now_ms=NOW, source_compression="none", target_compression="zstd",
            timestamp_type="LogAppendTime", inter_broker_protocol_version=version,
        ).validate_messages_and_assign_offsets(0)
        assert next(result.valid_records.batches()).compression is CompressionType.ZSTD
    with pytest.raises(ValueError, match=r"^Version 2\.x is not a valid version$"):
        LogValidator(records, now_ms=NOW, source_compression="none", target_compression="zstd",
                     inter_broker_protocol_version="2.x")


# ---------------------------------------------------------------------------------------------------------
# Timestamps


def check_invalid_create_time(magic: int, codec: str, to_magic: int) -> InvalidTimestampError:
    """Kafka's testInvalidCreateTime*: every record 1001 ms in the past, against a 1000 ms bound."""
    records = create_records(magic, timestamp=NOW - 1001, codec=codec)
    with pytest.raises(RecordValidationError) as caught:
        validator(records, source=codec, to_magic=to_magic).validate_messages_and_assign_offsets(0)
    error = caught.value
    assert isinstance(error, InvalidTimestampError)
    assert error.detail == "One or more records have been rejected due to invalid timestamp"
    # uncompressed v1 is three batches: the first one fails alone
    count = 1 if (magic == 1 and codec == "none") else 3
    assert [e.batch_index for e in error.record_errors] == list(range(count))
    assert error.record_errors[0] == RecordError(
        0,
        f"Timestamp {NOW - 1001} of message with offset 0 is out of range. The timestamp should be within "
        f"[{NOW - 1000}, {NOW + 1000}]",
    )
    return error


def test_invalid_create_time_non_compressed_v1(impl: ModuleType) -> None:
    check_invalid_create_time(1, "none", 1)


def test_invalid_create_time_non_compressed_v2(impl: ModuleType) -> None:
    check_invalid_create_time(2, "none", 2)


def test_invalid_create_time_compressed_v1(impl: ModuleType) -> None:
    check_invalid_create_time(1, "gzip", 1)


def test_invalid_create_time_compressed_v2(impl: ModuleType) -> None:
    """As Kafka's test, v2 records to a v1 log."""
    check_invalid_create_time(2, "gzip", 1)


def test_invalid_timestamp_exception_has_batch_index(impl: ModuleType) -> None:
    """Every rejected record of the batch is reported, with its index."""
    error = check_invalid_create_time(2, "gzip", 1)
    assert len(error.record_errors) == 3
    assert all(e.message is not None for e in error.record_errors)


def check_timestamp_out_of_bounds(past: bool) -> None:
    before, after = 24 * 60 * 60 * 1000, 60 * 60 * 1000
    timestamp = NOW - before - 5 * 60 * 1000 if past else NOW + after + 5 * 60 * 1000
    records = create_records(2, timestamp=timestamp, codec="gzip")
    with pytest.raises(RecordValidationError) as caught:
        validator(records, source="gzip", before=before, after=after).validate_messages_and_assign_offsets(0)
    assert isinstance(caught.value, InvalidTimestampError)
    assert len(caught.value.record_errors) == 3
    assert f"[{NOW - before}, {NOW + after}]" in str(caught.value.record_errors[2].message)


def test_record_with_past_timestamp_is_rejected(impl: ModuleType) -> None:
    """Five minutes before a 24-hour bound."""
    check_timestamp_out_of_bounds(past=True)


def test_record_with_future_timestamp_is_rejected(impl: ModuleType) -> None:
    """Five minutes after a one-hour bound."""
    check_timestamp_out_of_bounds(past=False)


# ---------------------------------------------------------------------------------------------------------
# Beyond Kafka's cases: offsets in place for every magic, conversion refusals, the target codec,
# timestamps at the bounds


@pytest.mark.parametrize("codec", ["none", "gzip"])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_offset_assignment_every_magic(impl: ModuleType, magic: int, codec: str) -> None:
    stamps = [NOW - 1, NOW + 1, NOW]
    records = MemoryRecords.with_records(
        [(b"k%d" % i, v, t) for i, (v, t) in enumerate(zip(VALUES, stamps, strict=True))],
        magic=magic,
        compression=codec,
    )
    before = bytes(records.buffer)
    result = validator(records, source=codec, to_magic=magic).validate_messages_and_assign_offsets(OFFSET)
    check_offsets(result.valid_records, OFFSET)
    assert (result.next_offset, result.last_offset) == (OFFSET + 3, OFFSET + 2)
    out = list(result.valid_records.records())
    assert [r.key for r in out] == [b"k0", b"k1", b"k2"]
    assert values_of(result.valid_records) == VALUES
    assert [r.timestamp for r in out] == ([-1] * 3 if magic == 0 else stamps)
    assert {b.magic for b in result.valid_records.batches()} == {magic}
    assert {b.compression.kafka_name for b in result.valid_records.batches()} == {codec}
    # only a compressed v0 set is rebuilt: its inner offsets are absolute
    assert result.message_size_maybe_changed is (magic == 0 and codec == "gzip")
    assert result.max_timestamp == (-1 if magic == 0 else NOW + 1)
    assert result.log_append_time == NOW
    assert bytes(records.buffer) == before, "read-only input must not change"


def test_in_place_rewrites_a_writable_buffer(impl: ModuleType) -> None:
    """Kafka rewrites the request buffer in place; a writable buffer is rewritten, not copied."""
    data = bytearray(create_records(2, timestamp=NOW).buffer)
    records = MemoryRecords(data)
    result = validator(records, partition_leader_epoch=7).validate_messages_and_assign_offsets(OFFSET)
    assert result.valid_records.buffer is data
    assert struct.unpack_from(">qiib", data, 0) == (OFFSET, len(data) - 12, 7, 2)
    check_offsets(result.valid_records, OFFSET)


def test_down_conversion_with_headers_is_refused(impl: ModuleType) -> None:
    """MemoryRecordsBuilder: legacy messages have no headers."""
    records = MemoryRecords.with_records([(b"k", b"v", NOW, [("h", b"x")])])
    with pytest.raises(IllegalArgumentError, match=r"^Magic v1 does not support record headers$"):
        validator(records, to_magic=1).validate_messages_and_assign_offsets(0)


@pytest.mark.parametrize(
    ("broker", "source", "expected"),
    [
        ("producer", "snappy", CompressionType.SNAPPY),
        ("producer", "none", CompressionType.NONE),
        ("uncompressed", "gzip", CompressionType.NONE),
        ("zstd", "none", CompressionType.ZSTD),
        ("lz4", "gzip", CompressionType.LZ4),
    ],
)
def test_target_compression(impl: ModuleType, broker: str, source: str, expected: CompressionType) -> None:
    assert target_compression(LogConfig({"compression.type": broker}), source) is expected


def test_broker_compression_from_config(impl: ModuleType) -> None:
    """The module function takes the target codec, magic and timestamp type from the log's config."""
    records = create_records(2, timestamp=NOW)
    config = LogConfig({"compression.type": "snappy", "message.timestamp.type": "LogAppendTime"})
    result = validate_messages_and_assign_offsets(records, 40, NOW, config, source_compression="none")
    batch = next(result.valid_records.batches())
    assert batch.compression is CompressionType.SNAPPY
    check_log_append_time(batch, NOW, NOW)
    check_offsets(result.valid_records, 40)
    assert result.next_offset == 43

    config = LogConfig({"compression.type": "uncompressed", "message.format.version": "0.10.2"})
    result = validate_messages_and_assign_offsets(
        create_records(2, NOW, "lz4"), 5, NOW, config, source_compression="lz4"
    )
    assert [(b.magic, b.compression.kafka_name) for b in result.valid_records.batches()] == [(1, "none")] * 3
    check_offsets(result.valid_records, 5)


def test_timestamps_at_the_bounds_are_accepted(impl: ModuleType) -> None:
    records = MemoryRecords.with_records(
        [(None, b"a", NOW - 1000), (None, b"b", NOW + 1000), (None, b"c", -1)]
    )
    result = validator(records).validate_messages_and_assign_offsets(0)
    assert result.max_timestamp == NOW + 1000
    check_offsets(result.valid_records, 0)


def test_unbounded_upper_bound_prints_as_java_long(impl: ModuleType) -> None:
    """Kafka computes ``now + after`` in Java long arithmetic; with the default bound it wraps."""
    records = create_records(2, timestamp=NOW - 5000)
    with pytest.raises(InvalidTimestampError) as caught:
        validator(records, after=2**63 - 1).validate_messages_and_assign_offsets(0)
    wrapped = NOW + 2**63 - 1 - 2**64
    assert str(caught.value.record_errors[0].message).endswith(f"[{NOW - 1000}, {wrapped}]")


def test_producer_log_append_time_on_log_append_time_topic(impl: ModuleType) -> None:
    """validateTimestamp: a producer may not set LogAppendTime (checked when the topic is not CreateTime)."""
    records = MemoryRecords.with_records(
        [(b"k", b"hello", 5)], timestamp_type="LogAppendTime", log_append_time=77
    )
    with pytest.raises(InvalidTimestampError) as caught:
        validator(records, timestamp_type="LogAppendTime").validate_messages_and_assign_offsets(0)
    assert caught.value.record_errors == [
        RecordError(
            0,
            "Invalid timestamp type in message DefaultRecord(offset=0, timestamp=77, key=1 bytes, "
            "value=5 bytes). "
            "Producer should not set timestamp type to LogAppendTime.",
        )
    ]

    legacy = MemoryRecords.with_records(
        [(b"k", b"hello", 5)], magic=1, timestamp_type="LogAppendTime", log_append_time=77
    )
    crc = next(legacy.batches()).crc
    with pytest.raises(InvalidTimestampError) as caught:
        validator(legacy, to_magic=1, timestamp_type="LogAppendTime").validate_messages_and_assign_offsets(0)
    assert caught.value.record_errors[0].message == (
        f"Invalid timestamp type in message LegacyRecordBatch(offset=0, Record(magic=1, attributes=8, "
        f"compression=none, crc={crc}, LogAppendTime=77, key=1 bytes, value=5 bytes)). "
        "Producer should not set "
        "timestamp type to LogAppendTime."
    )


# ---------------------------------------------------------------------------------------------------------
# Keys, magics and batch checks


@pytest.mark.parametrize(("magic", "codec"), [(2, "none"), (2, "gzip"), (1, "none"), (1, "gzip")])
def test_compacted_topic_without_key_is_rejected(impl: ModuleType, magic: int, codec: str) -> None:
    records = MemoryRecords.with_records(
        [(b"k", b"a", NOW), (None, b"b", NOW), (None, b"c", NOW)], magic=magic, compression=codec
    )
    metrics = MetricsCounter()
    config = LogConfig(
        {"cleanup.policy": "compact", "message.format.version": "0.10.2" if magic == 1 else "3.0"}
    )
    with pytest.raises(InvalidRecordError) as caught:
        validate_messages_and_assign_offsets(
            records, 0, NOW, config, source_compression=codec, topic_partition=TP, metrics=metrics
        )
    error = caught.value
    assert isinstance(error, RecordValidationError)
    assert not isinstance(error, InvalidTimestampError)
    message = f"Compacted topic cannot accept message without key in topic partition {TP}"
    # uncompressed v1: the second message is a batch of its own, and fails alone
    expected = (
        [RecordError(0, message)]
        if (magic == 1 and codec == "none")
        else [RecordError(1, message), RecordError(2, message)]
    )
    assert error.record_errors == expected
    shown = ", ".join(f"RecordError(batchIndex={e.batch_index}, message='{message}')" for e in expected)
    assert error.detail == (
        f"One or more records have been rejected due to {len(expected)} record errors in total, and only "
        f"showing the first three errors at most: [{shown}]"
    )
    assert metrics.no_key_compacted_topic == len(expected)


def test_compacted_topic_with_keys_and_tombstones(impl: ModuleType) -> None:
    """Keys are all a compacted topic asks for: a tombstone (null value) is accepted, on any topic."""
    records = MemoryRecords.with_records([(b"a", b"1", NOW), (b"a", None, NOW)])
    for policy in ("compact", "delete"):
        result = validate_messages_and_assign_offsets(
            records, 3, NOW, LogConfig({"cleanup.policy": policy}), source_compression="none"
        )
        assert values_of(result.valid_records) == [b"1", None]
        check_offsets(result.valid_records, 3)


def test_three_errors_at_most_in_the_message(impl: ModuleType) -> None:
    records = create_records(2, timestamp=NOW, values=[b"%d" % i for i in range(5)])
    with pytest.raises(RecordValidationError) as caught:
        validator(records, compacted=True).validate_messages_and_assign_offsets(0)
    assert len(caught.value.record_errors) == 5
    assert "due to 5 record errors in total" in caught.value.detail
    assert caught.value.detail.count("RecordError(") == 3


def records_with_invalid_inner_magic(batch_magic: int, record_magic: int) -> MemoryRecords:
    """Kafka's ``recordsWithInvalidInnerMagic``: a gzip wrapper of ``batch_magic`` around 20 messages of
    ``record_magic`` (key and value their index) at offsets 1234567, 1234568, ..."""
    inner = [legacy_entry(OFFSET + i, record_magic, 0, -1, b"%d" % i, b"%d" % i) for i in range(20)]
    return wrapper(batch_magic, inner, offset=OFFSET + 19)


def test_mis_match_magic(impl: ModuleType) -> None:
    """Inner messages of the other magic are invalid records, counted on the invalid-magic meter (Kafka also
    checks that the Yammer registry holds one such meter: metrics plumbing kafkalog does not have)."""
    for batch_magic, record_magic in ((0, 1), (1, 0)):
        metrics = MetricsCounter()
        with pytest.raises(RecordValidationError) as caught:
            validate_messages(records_with_invalid_inner_magic(batch_magic, record_magic), batch_magic, "gzip",
                              "gzip", metrics)
        assert not isinstance(caught.value, InvalidTimestampError)
        first = str(caught.value.record_errors[0].message)
        assert first.startswith(f"Record LegacyRecordBatch(offset={OFFSET}, Record(magic={record_magic}, ")
        assert first.endswith(f"'s magic does not match outer magic {batch_magic} in topic partition {TP}")
        assert metrics.invalid_magic == 20


def test_invalid_record_exception_has_batch_index(impl: ModuleType) -> None:
    """All 20 inner messages of the wrong magic are reported, each with its index."""
    with pytest.raises(RecordValidationError) as caught:
        validate_messages(records_with_invalid_inner_magic(0, 1), 0, "gzip", "gzip")
    error = caught.value
    assert isinstance(error, InvalidRecordError)
    assert not isinstance(error, InvalidTimestampError)
    assert len(error.record_errors) == 20
    assert [e.batch_index for e in error.record_errors] == list(range(20))
    assert all(e is not None and e.message is not None for e in error.record_errors)


def test_batch_with_invalid_records_and_invalid_timestamp(impl: ModuleType) -> None:
    """Kafka: testBatchWithInvalidRecordsAndInvalidTimestamp: the timestamp error takes precedence."""
    inner = [legacy_entry(0, 1, 0, 1200, None, b"timestamp")]
    inner += [legacy_entry(30 * (i + 1), 0, 0, -1, None, b"%d" % i) for i in range(5)]
    records = wrapper(1, inner, offset=150)
    with pytest.raises(InvalidTimestampError) as caught:
        validator(records, source="gzip", to_magic=0, now=0).validate_messages_and_assign_offsets(0)
    assert len(caught.value.record_errors) == 6
    assert caught.value.record_errors[0].message == (
        "Timestamp 1200 of message with offset 0 is out of range. "
        "The timestamp should be within [-1000, 1000]"
    )
    assert "magic does not match outer magic 1" in str(caught.value.record_errors[5].message)


def test_corrupt_inner_message_of_a_wrapper(impl: ModuleType) -> None:
    """validateRecord checks the CRC of each inner message of a v0/v1 wrapper (LegacyRecord.ensureValid)."""
    good = [legacy_entry(i, 1, 0, NOW, None, v) for i, v in enumerate(VALUES)]
    bad = bytearray(good[1])
    bad[-1] ^= 0xFF
    stored = struct.unpack_from(">I", bad, 12)[0]
    records = wrapper(1, [good[0], bytes(bad), good[2]], offset=2)
    with pytest.raises(CorruptRecordError) as caught:
        validator(records, source="gzip", to_magic=1).validate_messages_and_assign_offsets(0)
    assert caught.value.detail.startswith(f"Record is corrupt (stored crc = {stored}, computed crc = ")
    assert caught.value.position == 0


def test_compressed_inner_message_is_refused(impl: ModuleType) -> None:
    nested = legacy_entry(0, 1, 1, NOW, None, compress("gzip", b"", magic=1))
    records = wrapper(1, [nested], offset=0)
    with pytest.raises(InvalidRecordError, match=r"^Inner messages must not be compressed"):
        validator(records, source="gzip", to_magic=1).validate_messages_and_assign_offsets(0)


def test_empty_wrapper_is_refused(impl: ModuleType) -> None:
    records = wrapper(1, [], offset=0)
    with pytest.raises(
        InvalidRecordError, match=r"^Found invalid compressed record set with no inner records"
    ):
        validator(records, source="gzip", to_magic=1).validate_messages_and_assign_offsets(0)


@pytest.mark.parametrize(
    ("last_offset_delta", "count", "valid"),
    [
        (2, 3, True),
        (0, 3, False),
        (15, 3, False),
        (-3, 3, False),
        (2, -3, False),
        (2, 6, False),
        (2, 0, False),
        (-3, -2, False),
        (5, 6, False),
        (1, 2, False),
    ],
)
def test_invalid_offset_range_and_record_count(
    impl: ModuleType, last_offset_delta: int, count: int, valid: bool
) -> None:
    """Kafka: testInvalidOffsetRangeAndRecordCount (the last two: consistent, but not what the batch
    holds)."""
    records = set_int(set_int(create_records(2, timestamp=1234), 57, count), 23, last_offset_delta)
    run = validator(
        records, source="gzip", timestamp_type="LogAppendTime"
    ).validate_messages_and_assign_offsets
    if valid:
        result = run(0)
        check_offsets(result.valid_records, 0)
        check_log_append_time(next(result.valid_records.batches()), NOW, 1234)
    else:
        with pytest.raises(InvalidRecordError):
            run(0)


def test_invalid_offset_range_messages(impl: ModuleType) -> None:
    base = create_records(2, timestamp=NOW)
    cases = [
        (
            set_int(base, 23, -3),
            r"^Batch has an invalid offset range: \[0, -3\] in topic partition topic-0 \(at position 0\)$",
        ),
        (
            set_int(base, 57, 0),
            r"^Invalid reported count for record batch: 0 in topic partition topic-0 \(at position 0\)$",
        ),
        (
            set_int(base, 57, 6),
            r"^Inconsistent batch offset range \[0, 2\] and count of records 6 in topic partition topic-0 "
            r"\(at position 0\)$",
        ),
    ]
    for records, message in cases:
        metrics = MetricsCounter()
        with pytest.raises(InvalidRecordError, match=message):
            validator(records).validate_messages_and_assign_offsets(0, metrics)
        assert metrics.invalid_offset_or_sequence == 1


def test_non_increasing_offset_record_batch_has_metrics_logged(impl: ModuleType) -> None:
    """A v2 batch with offsets 0, 2, 3 whose last offset is then set to 2 (base offset -1): an offset range
    that does not match the count, counted on the invalid-offset meter."""
    data = bytearray(build_default_batch([(None, v, -1) for v in VALUES], offset_deltas=[0, 2, 3]))
    struct.pack_into(">q", data, 0, 2 - 3)  # Kafka's setLastOffset(2)
    metrics = MetricsCounter()
    with pytest.raises(InvalidRecordError, match=r"^Inconsistent batch offset range \[-1, 2\]"):
        validator(
            MemoryRecords(data), source="gzip", to_magic=0, before=5000, after=5000
        ).validate_messages_and_assign_offsets(0, metrics)
    assert metrics.invalid_offset_or_sequence == 1


def check_batch_without_records_not_allowed(source: str, target: str) -> None:
    """Kafka's ``testBatchWithoutRecordsNotAllowed``: a v2 header claiming offsets 0..5 and no record."""
    data = build_default_batch(
        [],
        last_offset_delta=5,
        producer_id=1324,
        producer_epoch=10,
        base_sequence=984,
        is_transactional=True,
        partition_leader_epoch=40,
    )
    with pytest.raises(InvalidRecordError, match=r"^Invalid reported count for record batch: 0"):
        validator(
            MemoryRecords(data), source=source, target=target, before=5000, after=5000
        ).validate_messages_and_assign_offsets(OFFSET)


def test_compressed_batch_without_records_not_allowed(impl: ModuleType) -> None:
    check_batch_without_records_not_allowed("gzip", "gzip")


def test_uncompressed_batch_without_records_not_allowed(impl: ModuleType) -> None:
    check_batch_without_records_not_allowed("none", "none")


def test_recompressed_batch_without_records_not_allowed(impl: ModuleType) -> None:
    check_batch_without_records_not_allowed("none", "gzip")


def test_control_records_not_allowed_from_clients(impl: ModuleType) -> None:
    """Kafka: testControlRecordsNotAllowedFromClients."""
    records = MemoryRecords.with_end_transaction_marker(
        23423, 5, EndTransactionMarker(ControlRecordType.COMMIT, 0), timestamp=NOW
    )
    with pytest.raises(
        InvalidRecordError,
        match=r"^Clients are not allowed to write control records in topic "
        r"partition topic-0 \(at position 0\)$",
    ):
        validator(records, before=5000, after=5000).validate_messages_and_assign_offsets(OFFSET)


def test_control_records_not_compressed(impl: ModuleType) -> None:
    """Kafka: testControlRecordsNotCompressed: a coordinator's marker stays uncompressed under snappy."""
    records = MemoryRecords.with_end_transaction_marker(
        23423, 5, EndTransactionMarker(ControlRecordType.COMMIT, 0), timestamp=NOW
    )
    result = validator(
        records, source="none", target="snappy", origin="coordinator", before=5000, after=5000
    ).validate_messages_and_assign_offsets(OFFSET)
    batches = list(result.valid_records.batches())
    assert len(batches) == 1
    batch = batches[0]
    assert batch.compression is CompressionType.NONE
    assert batch.is_control and batch.is_transactional
    assert batch.end_transaction_marker() == EndTransactionMarker(ControlRecordType.COMMIT, 0)
    assert result.message_size_maybe_changed is False
    check_offsets(result.valid_records, OFFSET)


def test_idempotent_batch_without_sequence(impl: ModuleType) -> None:
    records = MemoryRecords.with_records([(None, b"v", NOW)], producer_id=5, producer_epoch=1)
    metrics = MetricsCounter()
    with pytest.raises(
        InvalidRecordError,
        match=r"^Invalid sequence number -1 in record batch with producerId 5 "
        r"in topic partition topic-0 \(at position 0\)$",
    ):
        validator(records).validate_messages_and_assign_offsets(0, metrics)
    assert metrics.invalid_offset_or_sequence == 1


def test_batches_of_different_magics(impl: ModuleType) -> None:
    """validateBatch: every batch must have the first batch's magic."""
    v1 = create_records(1, NOW)
    mixed = MemoryRecords(bytes(v1.buffer) + bytes(create_records(0).buffer))
    metrics = MetricsCounter()
    # the first v0 message follows the three v1 ones
    at = v1.size_in_bytes()
    with pytest.raises(
        InvalidRecordError,
        match=r"^Batch magic 0 is not the same as the first batch's magic byte "
        rf"1 in topic partition topic-0 \(at position {at}\)$",
    ):
        validator(mixed, to_magic=1).validate_messages_and_assign_offsets(0, metrics)
    assert metrics.invalid_magic == 1


@pytest.mark.parametrize(
    ("magic", "source", "target"),
    [
        (0, "gzip", "gzip"),
        (1, "gzip", "gzip"),
        (2, "gzip", "gzip"),
        (0, "gzip", "none"),
        (1, "gzip", "none"),
        (2, "gzip", "none"),
        (2, "none", "none"),
        (2, "none", "gzip"),
    ],
)
def test_only_one_batch(impl: ModuleType, magic: int, source: str, target: str) -> None:
    """Kafka: testOnlyOneBatch: a v2 or compressed request holds one batch."""
    with pytest.raises(InvalidRecordError, match=r"^Compressed outer record has more than one batch$"):
        validator(
            two_batches(magic, source), source=source, target=target, to_magic=magic
        ).validate_messages_and_assign_offsets(0)


@pytest.mark.parametrize(("magic", "target"), [(0, "none"), (1, "none"), (0, "gzip"), (1, "gzip")])
def test_allow_multi_batch(impl: ModuleType, magic: int, target: str) -> None:
    """Kafka: testAllowMultiBatch: uncompressed v0/v1 messages are one batch each."""
    result = validator(
        two_batches(magic, "none"), source="none", target=target, to_magic=magic, now=11
    ).validate_messages_and_assign_offsets(7)
    check_offsets(result.valid_records, 7)
    assert values_of(result.valid_records) == [b"a", b"b", b"c"]


def test_no_batches_at_all(impl: ModuleType) -> None:
    with pytest.raises(InvalidRecordError, match=r"^Record batch has no batches at all$"):
        validator(MemoryRecords(b"")).validate_messages_and_assign_offsets(0)


def test_metrics_counter_and_origins(impl: ModuleType) -> None:
    assert AppendOrigin.of("CLIENT") is AppendOrigin.CLIENT
    assert AppendOrigin.of(AppendOrigin.RAFT_LEADER) == "raft_leader"
    with pytest.raises(ValueError, match="Unknown append origin 'leader'"):
        AppendOrigin.of("leader")
    # non-client origins skip the client-only checks: a coordinator may write a sequence-less batch
    records = MemoryRecords.with_records([(None, b"v", NOW)], producer_id=5, producer_epoch=1)
    result = validator(records, origin="replication").validate_messages_and_assign_offsets(9)
    check_offsets(result.valid_records, 9)


# ---------------------------------------------------------------------------------------------------------
# The shallow pass: analyze_and_validate_records and trim_invalid_bytes


def test_client_v2_batch_needs_base_offset_zero(impl: ModuleType) -> None:
    records = MemoryRecords.with_records([(None, b"v", NOW)], base_offset=5)
    with pytest.raises(
        InvalidRecordError,
        match=r"^The baseOffset of the record batch in the append to topic-0 "
        r"should be 0, but it is 5 \(at position 0\)$",
    ):
        analyze_and_validate_records(records, LogConfig(), topic_partition=TP)
    info = analyze_and_validate_records(records, LogConfig(), origin="replication")
    assert (info.first_offset, info.last_offset) == (5, 5)
    # only v2 is checked, for old clients
    legacy = MemoryRecords.with_records([(None, b"v", NOW)], magic=1, base_offset=5)
    assert analyze_and_validate_records(legacy, LogConfig()).last_offset == 5


def test_batch_too_large(impl: ModuleType) -> None:
    records = create_records(2, timestamp=NOW)
    size = records.size_in_bytes()
    metrics = MetricsCounter()
    config = LogConfig({"max.message.bytes": size - 1})
    with pytest.raises(RecordTooLargeError) as caught:
        analyze_and_validate_records(records, config, topic_partition=TP, metrics=metrics)
    assert caught.value.detail == (
        f"The record batch size in the append to topic-0 is {size} bytes which exceeds "
        f"the maximum configured value of {size - 1}."
    )
    assert metrics.bytes_rejected == size
    # the follower's append skips the check
    info = analyze_and_validate_records(records, config, ignore_record_size=True)
    assert info.valid_bytes == size
    assert analyze_and_validate_records(records, LogConfig({"max.message.bytes": size})).valid_bytes == size


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_crc_failure(impl: ModuleType, magic: int) -> None:
    good = create_records(magic, timestamp=NOW)
    data = bytearray(good.buffer)
    data[-1] ^= 0x01  # the last value byte of the last entry
    records = MemoryRecords(data)
    last = list(records.batches())[-1]
    metrics = MetricsCounter()
    with pytest.raises(CorruptRecordError) as caught:
        analyze_and_validate_records(records, LogConfig(), topic_partition=TP, metrics=metrics)
    assert caught.value.detail == f"Record is corrupt (stored crc = {last.crc}) in topic partition topic-0."
    assert caught.value.position == last.position
    assert metrics.invalid_checksums == 1


def test_offsets_not_monotonic(impl: ModuleType) -> None:
    first = MemoryRecords.with_records([(None, b"a", NOW), (None, b"b", NOW)], base_offset=5)
    second = MemoryRecords.with_records([(None, b"c", NOW)], base_offset=3)
    records = MemoryRecords(bytes(first.buffer) + bytes(second.buffer))
    info = analyze_and_validate_records(records, LogConfig(), origin="replication")
    assert info.offsets_monotonic is False
    assert (info.first_offset, info.last_offset, info.last_offset_of_first_batch) == (5, 3, 6)
    with pytest.raises(
        OffsetsOutOfOrderError, match=r"^Out of order offsets found in append to topic-0: \[5, 6, 3\]$"
    ):
        analyze_and_validate_records(
            records, LogConfig(), origin="replication", require_offsets_monotonic=True, topic_partition=TP
        )
    ordered = MemoryRecords(bytes(second.buffer) + bytes(first.buffer))
    info = analyze_and_validate_records(
        ordered, LogConfig(), origin="replication", require_offsets_monotonic=True
    )
    assert info.offsets_monotonic is True
    assert info.num_messages == 4


def test_analyze_sums_up_the_append(impl: ModuleType) -> None:
    """First offset (v2), last offset, max timestamp and the last offset of its batch (the first batch to hold
    it), valid bytes, batches, leader epoch, and the source codec: the last compressed batch's."""
    parts = [
        MemoryRecords.with_records(
            [(None, b"a", 10), (None, b"b", 30)], base_offset=0, compression="gzip", partition_leader_epoch=1
        ),
        MemoryRecords.with_records([(None, b"c", 30)], base_offset=2, partition_leader_epoch=1),
        MemoryRecords.with_records(
            [(None, b"d", 20)], base_offset=3, compression="lz4", partition_leader_epoch=2
        ),
        MemoryRecords.with_records([(None, b"e", 5)], base_offset=4, partition_leader_epoch=2),
    ]
    records = MemoryRecords(b"".join(bytes(p.buffer) for p in parts))
    info = analyze_and_validate_records(records, LogConfig(), origin="replication", log_start_offset=0)
    assert info == LogAppendInfo(
        first_offset=0,
        last_offset=4,
        max_timestamp=30,
        shallow_offset_of_max_timestamp=1,
        log_append_time=-1,
        log_start_offset=0,
        source_compression=CompressionType.LZ4,
        target_compression=CompressionType.LZ4,
        shallow_count=4,
        valid_bytes=records.size_in_bytes(),
        offsets_monotonic=True,
        last_offset_of_first_batch=1,
        record_errors=[],
        last_leader_epoch=2,
    )
    assert info.num_messages == 5
    assert info.first_or_last_offset_of_first_batch == 0
    config = LogConfig({"compression.type": "gzip"})
    assert analyze_and_validate_records(records, config, origin="replication").target_compression is (
        CompressionType.GZIP
    )


def test_analyze_legacy_first_offset_unknown(impl: ModuleType) -> None:
    """A v0/v1 wrapper holds its last offset, so the shallow pass leaves the first offset unknown."""
    records = create_records(1, timestamp=NOW, codec="snappy")
    info = analyze_and_validate_records(records, LogConfig())
    assert info.first_offset is None
    assert (info.last_offset, info.last_offset_of_first_batch, info.first_or_last_offset_of_first_batch) == (
        2,
        2,
        2,
    )
    assert info.num_messages == 0
    assert info.source_compression is CompressionType.SNAPPY
    assert info.last_leader_epoch is None
    assert (info.max_timestamp, info.shallow_offset_of_max_timestamp) == (NOW, 2)


def test_partial_trailing_batch_is_trimmed(impl: ModuleType) -> None:
    whole = create_records(2, timestamp=NOW)
    size = whole.size_in_bytes()
    records = MemoryRecords(bytes(whole.buffer) + bytes(whole.buffer)[:30])
    info = analyze_and_validate_records(records, LogConfig())
    assert (info.valid_bytes, info.shallow_count) == (size, 1)
    trimmed = trim_invalid_bytes(records, info)
    assert bytes(trimmed.buffer) == bytes(whole.buffer)
    result = validate_messages_and_assign_offsets(
        trimmed, 8, NOW, LogConfig(), source_compression=info.source_compression
    )
    check_offsets(result.valid_records, 8)
    assert trim_invalid_bytes(whole, analyze_and_validate_records(whole, LogConfig())) is whole


def test_trim_negative_valid_bytes(impl: ModuleType) -> None:
    records = create_records(2)
    with pytest.raises(
        CorruptRecordError,
        match=r"^Cannot append record batch with illegal length -1 to log for "
        r"topic-0\. A possible cause is a corrupted produce request\.$",
    ):
        trim_invalid_bytes(records, LogAppendInfo.unknown(), topic_partition=TP)


def test_analyze_empty_records(impl: ModuleType) -> None:
    info = analyze_and_validate_records(MemoryRecords(b""), LogConfig(), log_start_offset=12)
    assert (info.valid_bytes, info.shallow_count, info.first_offset, info.last_offset) == (0, 0, None, -1)
    assert (info.max_timestamp, info.offsets_monotonic, info.log_start_offset) == (-1, True, 12)
    unknown = LogAppendInfo.unknown(7, [RecordError(0, "x")])
    assert (unknown.valid_bytes, unknown.log_start_offset, unknown.record_errors) == (
        -1,
        7,
        [RecordError(0, "x")],
    )
    assert str(RecordError(3)) == "RecordError(batchIndex=3, message=null)"


def test_raft_leader_epoch(impl: ModuleType) -> None:
    records = MemoryRecords.with_records([(None, b"v", NOW)], partition_leader_epoch=4, base_offset=9)
    with pytest.raises(
        InvalidRecordError, match=r"^Append from Raft leader did not set the batch epoch correctly"
    ):
        analyze_and_validate_records(records, LogConfig(), origin="raft_leader", leader_epoch=5)
    info = analyze_and_validate_records(records, LogConfig(), origin=AppendOrigin.RAFT_LEADER, leader_epoch=4)
    assert (info.first_offset, info.last_leader_epoch) == (9, 4)


def test_leader_append_end_to_end(impl: ModuleType) -> None:
    """The leader's sequence: analyze, trim, validate; the result is what the log appends."""
    config = LogConfig({"compression.type": "zstd", "message.timestamp.type": "LogAppendTime"})
    records = MemoryRecords.with_records(
        [(b"k%d" % i, v, NOW - 5) for i, v in enumerate(VALUES)], compression="gzip"
    )
    info = analyze_and_validate_records(records, config, topic_partition=TP)
    assert (info.source_compression, info.target_compression) == (CompressionType.GZIP, CompressionType.ZSTD)
    result = validate_messages_and_assign_offsets(
        trim_invalid_bytes(records, info),
        100,
        NOW,
        config,
        source_compression=info.source_compression,
        partition_leader_epoch=6,
        topic_partition=TP,
    )
    assert isinstance(result, ValidationResult)
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp, result.next_offset) == (
        NOW,
        102,
        103,
    )
    batch = next(result.valid_records.batches())
    assert (batch.compression, batch.partition_leader_epoch) == (CompressionType.ZSTD, 6)
    check_log_append_time(batch, NOW, NOW - 5)
    check_offsets(result.valid_records, 100)
    # what the log appends passes the shallow pass of a follower
    again = analyze_and_validate_records(result.valid_records, config, origin="replication")
    assert (again.first_offset, again.last_offset, again.max_timestamp) == (100, 102, NOW)


@pytest.mark.parametrize("codec", ["none", "gzip"])
@pytest.mark.parametrize("magic", [1, 2])
def test_in_place_output_read_by_aiokafka(impl: ModuleType, magic: int, codec: str) -> None:
    """An independent reader (aiokafka) accepts the rewritten headers: CRCs, the LogAppendTime bit and
    the offsets."""
    records = create_records(magic, timestamp=5, codec=codec)
    result = validator(
        records, source=codec, to_magic=magic, timestamp_type="LogAppendTime", partition_leader_epoch=3
    ).validate_messages_and_assign_offsets(70)
    assert result.message_size_maybe_changed is False
    source = AioMemoryRecords(bytes(result.valid_records.buffer))
    seen = []
    while source.has_next():
        batch = source.next_batch()
        assert batch.validate_crc()
        seen += [(r.offset, r.timestamp, r.timestamp_type, r.value) for r in batch]
    assert seen == [(70 + i, NOW, 1, v) for i, v in enumerate(VALUES)]


def test_v2_create_time_max_timestamp_is_repaired(impl: ModuleType) -> None:
    """assignOffsetsNonCompressed sets the batch's max timestamp from its records (re-sealing the CRC) when
    the producer wrote a wrong one."""
    good = create_records(2, timestamp=NOW)
    data = bytearray(good.buffer)
    struct.pack_into(">q", data, 35, NOW - 7)  # a wrong maxTimestamp ...
    struct.pack_into(">I", data, 17, impl.crc32c(bytes(data[21:])))  # ... under a valid CRC
    result = validator(MemoryRecords(bytes(data))).validate_messages_and_assign_offsets(0)
    assert bytes(result.valid_records.buffer) == bytes(good.buffer)
    assert result.max_timestamp == NOW


def test_conversion_decodes_every_record_before_checking_batches(impl: ModuleType) -> None:
    """convertAndAssignOffsetsNonCompressed sizes its buffer from every decoded record first, so a count the
    records do not fill fails in the decode, before validateBatch could compare it with the offsets."""
    records = set_int(create_records(2, timestamp=NOW), 57, 6)
    with pytest.raises(InvalidRecordError, match=r"^Incorrect declared batch size"):
        validator(records, to_magic=1).validate_messages_and_assign_offsets(0)
    # in place (no conversion) the batch check comes first
    with pytest.raises(InvalidRecordError, match=r"^Inconsistent batch offset range \[0, 2\]"):
        validator(records, to_magic=2).validate_messages_and_assign_offsets(0)
