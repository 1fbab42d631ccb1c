"""Append-time validation: Kafka's ``LogValidatorTest`` (core/src/test/scala/unit/kafka/log, tag 3.8.0) and
the shallow pass of ``UnifiedLog.append`` (``analyzeAndValidateRecords``, ``trimInvalidBytes``).

Every test runs on both kernel twins through ``impl``.  Each of Kafka's 59 cases has a test of its name (the
V0/V1/V2 variants apart, through the shared ``check_*`` helpers as Kafka's ``check*`` methods, in
:mod:`tests.support.validator_utils`): the cases about timestamps, offsets, conversion and recompression here,
those about keys, magics and batch checks in ``test_validator_checks.py`` with the tests that go beyond
Kafka's; the shallow pass is in ``test_log_append_info.py``.  Kafka's cases use
``System.currentTimeMillis``; here ``now`` is a fixed
instant so that messages can be compared whole.  After every successful validation the output is checked
the way Kafka's tests check it: every batch passes ``ensure_valid`` and decodes to the records given, with
offsets counted up from the offset the validator started at, and ``RecordValidationStats`` as Kafka's
``verifyRecordValidationStats`` checks them.

Kafka's meters are a :class:`~kafkalog.log.validator.MetricsCounter` here; where Kafka's test also counts the
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

import pytest

from kafkalog import MemoryRecords, TimestampType, _impl
from kafkalog.errors import (
    IllegalArgumentError,
    InvalidRecordError,
    UnsupportedCompressionError,
)
from kafkalog.log.validator import (
    InvalidTimestampError,
    LogValidator,
    RecordError,
    RecordValidationError,
    RecordValidationStats,
    UnsupportedForMessageFormatError,
)
from kafkalog.record import (
    CompressionType,
    ControlRecordType,
    DefaultRecordBatch,
    EndTransactionMarker,
)
from kafkalog.record.batch import build_default_batch
from kafkalog.record.compression import compress, decompress
from kafkalog.record.legacy import legacy_entry
from kafkalog.record.records_util import (
    default_record_size_in_bytes,
    legacy_record_size_in_bytes,
    record_batch_header_size_in_bytes,
)
from tests.support.validator_utils import (
    NOW,
    OFFSET,
    VALUES,
    check_batches_of,
    check_log_append_time,
    check_offsets,
    check_records_valid,
    create_records,
    producer_fields,
    validate_messages,
    validator,
    values_of,
    verify_record_validation_stats,
    wrapper,
)

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


@pytest.mark.parametrize("control", [False, True])
def test_non_compressed_down_conversion_of_transactional_records_fails_in_the_builder(impl: ModuleType,
                                                                                      control: bool) -> None:
    """LogValidator.convertAndAssignOffsetsNonCompressed (3.9.2) makes its v0/v1 ``MemoryRecordsBuilder`` before it
    validates a batch, and the builder refuses a transactional batch below magic 2 with an
    ``IllegalArgumentException``: an uncompressed transactional batch (a transaction marker too) converted down
    fails there, not with the ``UnsupportedForMessageFormatException`` of validateBatch, which the compressed path
    meets (found by the oracle: ``tests/oracle/scenarios/marker-below-magic-2.json``)."""
    if control:
        records = MemoryRecords.with_end_transaction_marker(
            1344, 16, EndTransactionMarker(ControlRecordType.COMMIT, 3), timestamp=NOW, partition_leader_epoch=0)
        origin = "coordinator"
    else:
        records = MemoryRecords.with_records([(None, v) for v in VALUES], producer_id=1344, producer_epoch=16,
                                             base_sequence=0, is_transactional=True)
        origin = "client"
    with pytest.raises(IllegalArgumentError, match=r"^Transactional records are not supported for magic 0$"):
        validator(records, source="none", to_magic=0, before=5000, after=5000,
                  origin=origin).validate_messages_and_assign_offsets(OFFSET)


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
