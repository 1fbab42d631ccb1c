"""LogValidator beyond Kafka's ``LogValidatorTest`` (and the cases of it about keys, magics and batch checks):
offsets assigned in place for every magic, conversion refusals, the target codec, timestamps at their bounds,
keys of compacted topics, magic mismatches and the per-batch checks.  Every test runs on both kernel twins
through ``impl``; the helpers are Kafka's ``check*`` methods, in :mod:`tests.support.validator_utils`.
"""

from __future__ import annotations

import struct
from types import ModuleType

import pytest

from kafkalog import MemoryRecords
from kafkalog._common import LOG_OVERHEAD
from kafkalog.append_origin import AppendOrigin
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import (
    CorruptRecordError,
    IllegalArgumentError,
    InvalidRecordError,
)
from kafkalog.log.validator import (
    InvalidTimestampError,
    MetricsCounter,
    RecordError,
    RecordValidationError,
    target_compression,
    validate_messages_and_assign_offsets,
)
from kafkalog.record import (
    CompressionType,
    ControlRecordType,
    EndTransactionMarker,
)
from kafkalog.record.batch import build_default_batch
from kafkalog.record.compression import compress
from kafkalog.record.legacy import legacy_entry
from kafkalog.record.records_util import (
    default_record_size_in_bytes,
    legacy_record_size_in_bytes,
    record_batch_header_size_in_bytes,
)
from tests.support.validator_utils import (
    NOW,
    OFFSET,
    TP,
    VALUES,
    check_log_append_time,
    check_offsets,
    create_records,
    set_int,
    two_batches,
    validate_messages,
    validator,
    values_of,
    wrapper,
)

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


def test_the_rebuild_checks_records_in_order_and_finds_the_first_largest_timestamp(impl: ModuleType) -> None:
    """``build_records`` (``MemoryRecordsBuilder.appendWithOffset`` a record at a time: a negative timestamp other
    than -1, then headers below magic 2): the first record breaking a rule decides the error; ``info()``'s max
    timestamp is the largest, at the first record holding it."""
    from kafkalog.log.validator_builder import build_records
    from kafkalog.record.types import TimestampType

    def build(magic: int, *records: tuple[int, list[tuple[str, bytes]]],
              compression: CompressionType = CompressionType.GZIP) -> tuple[int, int]:
        made = [impl.Record(n, timestamp, b"k", b"v", headers) for n, (timestamp, headers) in enumerate(records)]
        _data, max_timestamp, shallow, _written = build_records(
            made, list(range(len(made))), magic=magic, compression=compression,
            timestamp_type=TimestampType.CREATE_TIME, log_append_time=0, producer_id=-1, producer_epoch=-1,
            base_sequence=-1, is_transactional=False, partition_leader_epoch=-1, template=MemoryRecords(b""))
        return max_timestamp, shallow

    header = [("h", b"x")]
    with pytest.raises(IllegalArgumentError, match=r"^Magic v1 does not support record headers$"):
        build(1, (5, []), (6, header), (-7, []))
    with pytest.raises(IllegalArgumentError, match=r"^Invalid negative timestamp -7$"):
        build(1, (5, []), (-7, header))
    with pytest.raises(IllegalArgumentError, match=r"^Invalid negative timestamp -8$"):
        build(1, (-8, []), (-7, []), (6, header))
    with pytest.raises(IllegalArgumentError, match=r"^Invalid negative timestamp -7$"):
        build(2, (5, header), (-7, header))
    # One compressed wrapper: the shallow offset is the last; uncompressed v1 messages: the first of the largest.
    assert build(1, (5, []), (9, []), (9, []), (3, [])) == (9, 3)
    assert build(1, (5, []), (9, []), (9, []), (3, []), compression=CompressionType.NONE) == (9, 1)
    assert build(2, (5, header), (9, header), (-1, header)) == (9, 2)
    assert build(1, (-1, []), (-1, [])) == (-1, -1)


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


@pytest.mark.parametrize(("version", "codec"), [("0.9.0", "snappy"), ("0.10.2", "gzip"), ("3.0", "lz4")])
def test_v2_records_rebuilt_in_another_format_are_checked_record_by_record(
        impl: ModuleType, version: str, codec: str) -> None:
    """v2 records to convert or recompress are checked by the validate kernel, as those kept in place are:
    each missing key, then each timestamp out of bounds, with its index and absolute offset."""
    records = MemoryRecords.with_records(
        [(b"k", b"a", NOW), (None, b"b", NOW), (b"k", b"c", NOW - 5000), (None, b"d", NOW + 5000)],
        base_offset=7,
    )
    config = LogConfig({"cleanup.policy": "compact", "message.format.version": version, "compression.type": codec,
                        "message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "1000"})
    metrics = MetricsCounter()
    with pytest.raises(InvalidTimestampError) as caught:
        validate_messages_and_assign_offsets(records, 0, NOW, config, source_compression="none",
                                             topic_partition=TP, metrics=metrics)
    no_key = f"Compacted topic cannot accept message without key in topic partition {TP}"
    assert caught.value.record_errors == [
        RecordError(1, no_key),
        RecordError(2, f"Timestamp {NOW - 5000} of message with offset 9 is out of range. The timestamp should "
                       f"be within [{NOW - 1000}, {NOW + 1000}]"),
        RecordError(3, no_key),
    ]
    assert metrics.no_key_compacted_topic == 2


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


@pytest.mark.parametrize(("version", "codec"), [("0.9.0", "snappy"), ("0.10.2", "gzip"), ("0.10.2", "none"),
                                                ("3.0", "lz4")])
def test_rebuilt_records_count_their_bytes_as_kafkas_builder_does(
        impl: ModuleType, version: str, codec: str) -> None:
    """A rebuild reports what Kafka's validator sums over the records read (each ``sizeInBytes``) plus what
    its ``MemoryRecordsBuilder`` says it wrote before compression (``uncompressedBytesWritten``: the batch
    header and each record as encoded), computed here record by record."""
    rows = [(b"key-%d" % i, None if i % 5 == 2 else b"value-%d" % (i * i), NOW - 40 + i,
             [("h", b"x")] if i % 3 == 0 and version == "3.0" else None) for i in range(30)]
    records = MemoryRecords.with_records(rows, compression="gzip" if codec == "none" else "none")
    config = LogConfig({"message.format.version": version,
                        "compression.type": "uncompressed" if codec == "none" else codec})
    result = validate_messages_and_assign_offsets(records, 100, NOW, config,
                                                  source_compression="gzip" if codec == "none" else "none")
    magic = config.record_version()
    source = CompressionType.GZIP if codec == "none" else CompressionType.NONE
    read = record_batch_header_size_in_bytes(magic, source) + sum(
        default_record_size_in_bytes(i, t - rows[0][2], k, v, h or ()) for i, (k, v, t, h) in enumerate(rows))
    written = record_batch_header_size_in_bytes(magic, CompressionType.of(codec))
    if magic == 2:
        written += sum(default_record_size_in_bytes(i, t - rows[0][2], k, v, h or ())
                       for i, (k, v, t, h) in enumerate(rows))
    else:
        written += sum(LOG_OVERHEAD + legacy_record_size_in_bytes(magic, k, v) for k, v, _, _ in rows)
    assert result.record_validation_stats.temporary_memory_bytes == read + written
    assert result.record_validation_stats.num_records_converted == len(rows)
