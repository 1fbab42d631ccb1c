"""The shallow pass of UnifiedLog.append (Kafka 3.8.0 UnifiedLog.analyzeAndValidateRecords and
trimInvalidBytes, which make a LogAppendInfo): what it reads from the batch headers, what it refuses,
and the invalid bytes it trims.  Every test runs on both kernel twins through impl.
"""

from __future__ import annotations

import struct
from types import ModuleType

import pytest
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

from kafkalog import MemoryRecords
from kafkalog.append_origin import AppendOrigin
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
)
from kafkalog.log.append_info import (
    LogAppendInfo,
    OffsetsOutOfOrderError,
    analyze_and_validate_records,
    trim_invalid_bytes,
)
from kafkalog.log.validator import (
    MetricsCounter,
    RecordError,
    ValidationResult,
    validate_messages_and_assign_offsets,
)
from kafkalog.record import (
    CompressionType,
)
from tests.support.validator_utils import (
    NOW,
    TP,
    VALUES,
    check_log_append_time,
    check_offsets,
    create_records,
    set_int,
    validator,
)

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
