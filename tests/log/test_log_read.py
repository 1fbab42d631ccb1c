"""Log lookups against Kafka's UnifiedLogTest (core 3.8.0): the segments of an offset range, offsets by
timestamp (with Kafka's special timestamps), and the segments' first batch timestamps.

Logs are made as in ``tests/log/test_log.py`` (``create_log``: Kafka's ``createLog`` with a :class:`MockTime`,
under both kernel twins).  The special timestamps are answered with the leader-epoch cache's epochs, as in
Kafka; a log below message format v2 has no cache and answers them without one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalog import MemoryRecords
from kafkalog.errors import IllegalArgumentError
from kafkalog.file_message_set import TimestampAndOffset
from kafkalog.log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    UNKNOWN_TIMESTAMP,
    Log,
)
from kafkalog.log.validator import UnsupportedForMessageFormatError
from kafkalog.scheduler import SYSTEM_TIME, MockTime
from kafkalog.segment import LogSegment
from tests.support.log_test_utils import LogFactory, config, singleton

LONG_MAX = 2**63 - 1


def test_log_segments_call_correct(create_log: LogFactory, mock_time: MockTime) -> None:
    def records() -> MemoryRecords:
        return singleton(b"test", timestamp=mock_time.milliseconds())

    def segment_offsets(log: Log, from_offset: int, to_offset: int) -> list[int]:
        return [segment.base_offset for segment in log.log_segments(from_offset, to_offset)]

    msg_per_seg = 10
    log = create_log(config(segment_bytes=msg_per_seg * records().size_in_bytes()))  # 10 messages a segment
    assert log.number_of_segments == 1, "There should be exactly 1 segment."

    for _ in range(2 * msg_per_seg + 2):
        log.append_as_leader(records(), leader_epoch=0)
    assert log.number_of_segments == 3, "There should be exactly 3 segments."

    # from == to: nothing
    assert segment_offsets(log, 10, 10) == []
    assert segment_offsets(log, 15, 15) == []

    assert segment_offsets(log, 0, 21) == [0, 10, 20]
    assert segment_offsets(log, 1, 5) == [0]
    assert segment_offsets(log, 13, 21) == [10, 20]
    assert segment_offsets(log, 13, 17) == [10]

    # from > to is an error
    with pytest.raises(IllegalArgumentError):
        log.log_segments(10, 0)


def test_fetch_offset_by_timestamp_includes_leader_epoch(create_log: LogFactory, mock_time: MockTime) -> None:
    """testFetchOffsetByTimestampIncludesLeaderEpoch: a search by timestamp answers with the leader epoch of the
    record's batch, the special timestamps with the leader-epoch cache's (earliest, earliest local: the first
    epoch; latest: the latest, which a leader change assigns directly)."""
    log = create_log(config(segment_bytes=200, index_interval_bytes=1))
    assert log.fetch_offset_by_timestamp(0) is None

    first_timestamp = mock_time.milliseconds()
    first_leader_epoch = 0
    log.append_as_leader(singleton(os.urandom(10), timestamp=first_timestamp), leader_epoch=first_leader_epoch)

    second_timestamp = first_timestamp + 1
    second_leader_epoch = 1
    log.append_as_leader(singleton(os.urandom(10), timestamp=second_timestamp), leader_epoch=second_leader_epoch)

    assert log.fetch_offset_by_timestamp(first_timestamp) == \
        TimestampAndOffset(first_timestamp, 0, first_leader_epoch)
    assert log.fetch_offset_by_timestamp(second_timestamp) == \
        TimestampAndOffset(second_timestamp, 1, second_leader_epoch)

    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == \
        TimestampAndOffset(UNKNOWN_TIMESTAMP, 0, first_leader_epoch)
    assert log.fetch_offset_by_timestamp(EARLIEST_LOCAL_TIMESTAMP) == \
        TimestampAndOffset(UNKNOWN_TIMESTAMP, 0, first_leader_epoch)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == \
        TimestampAndOffset(UNKNOWN_TIMESTAMP, 2, second_leader_epoch)

    # The cache can be updated directly after a leader change; the latest offset then carries the new epoch.
    log.maybe_assign_epoch_start_offset(2, 2)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == TimestampAndOffset(UNKNOWN_TIMESTAMP, 2, 2)


def test_fetch_offset_by_timestamp_with_max_timestamp_includes_timestamp(create_log: LogFactory,
                                                                         mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=200, index_interval_bytes=1))
    assert log.fetch_offset_by_timestamp(0) is None

    first_timestamp = mock_time.milliseconds()
    leader_epoch = 0
    log.append_as_leader(singleton(os.urandom(10), timestamp=first_timestamp), leader_epoch=leader_epoch)
    second_timestamp = first_timestamp + 1
    log.append_as_leader(singleton(os.urandom(10), timestamp=second_timestamp), leader_epoch=leader_epoch)
    log.append_as_leader(singleton(os.urandom(10), timestamp=first_timestamp), leader_epoch=leader_epoch)

    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == TimestampAndOffset(second_timestamp, 1, leader_epoch)


def test_fetch_offset_by_timestamp_after_retention_and_for_old_formats(create_log: LogFactory,
                                                                      mock_time: MockTime) -> None:
    """UnifiedLog.fetchOffsetByTimestamp: a search never answers below the log start offset, the special
    timestamps follow the log start and end offsets (the earliest with the first cached epoch, moved to the new
    log start), the max timestamp of a batch is that of its first record holding it, and a v0 log (no timestamps,
    no epoch cache) refuses a search by timestamp but answers the special ones, without an epoch."""
    now = mock_time.milliseconds()
    log = create_log(config(segment_bytes=1024 * 1024, index_interval_bytes=1))
    for i in range(10):
        log.append_as_leader(singleton(b"v", timestamp=now + i), leader_epoch=3)
    # a batch whose max timestamp is held by its second and third records: the second is the answer
    log.append_as_leader(MemoryRecords.with_records([(None, b"x", now + 20), (None, b"y", now + 50),
                                                     (None, b"z", now + 50)]), leader_epoch=4)
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == TimestampAndOffset(now + 50, 11, 4)
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(5)
    assert log.fetch_offset_by_timestamp(now) == TimestampAndOffset(now + 5, 5, 3)
    assert log.fetch_offset_by_timestamp(now + 21) == TimestampAndOffset(now + 50, 11, 4)
    assert log.fetch_offset_by_timestamp(now + 51) is None
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == TimestampAndOffset(UNKNOWN_TIMESTAMP, 5, 3)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == TimestampAndOffset(UNKNOWN_TIMESTAMP, 13, 4)

    v0 = create_log(config(message_format_version="0.9.0"), directory=log.dir.parent / "v0-0")
    v0.append_as_leader(singleton(b"old", magic=0))
    with pytest.raises(UnsupportedForMessageFormatError):
        v0.fetch_offset_by_timestamp(now)
    with pytest.raises(UnsupportedForMessageFormatError):
        v0.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert v0.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == TimestampAndOffset(UNKNOWN_TIMESTAMP, 0, None)
    assert v0.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == TimestampAndOffset(UNKNOWN_TIMESTAMP, 1, None)


def test_get_first_batch_timestamp_for_segments(create_log: LogFactory, log_dir: Path) -> None:
    log = create_log(config())

    # Kafka's LogTestUtils.createSegment(offset, logDir, indexIntervalBytes = 10, Time.SYSTEM)
    seg1 = LogSegment.open(log_dir, 1, config(index_interval_bytes=10), SYSTEM_TIME)
    seg2 = LogSegment.open(log_dir, 2, config(index_interval_bytes=10), SYSTEM_TIME)
    try:
        segments = [seg1, seg2]
        assert log.get_first_batch_timestamp_for_segments(segments) == [LONG_MAX, LONG_MAX]

        seg1.append(1, 1000, 1, MemoryRecords.with_records([(None, b"one", 1000)], base_offset=1))
        seg2.append(2, 2000, 1, MemoryRecords.with_records([(None, b"two", 2000)], base_offset=2))
        assert log.get_first_batch_timestamp_for_segments(segments) == [1000, 2000]
    finally:
        seg1.close()
        seg2.close()


def test_first_batch_timestamp_without_a_timestamp_is_long_max(create_log: LogFactory, log_dir: Path) -> None:
    """LogSegment.getFirstBatchTimestamp: a first batch with no timestamp (-1) counts as none, ``Long.MAX``,
    whether the segment learnt it from its first append or reads it back from the file."""
    log = create_log(config())
    segment = LogSegment.open(log_dir, 5, config(index_interval_bytes=10), SYSTEM_TIME)
    try:
        segment.append(5, -1, 5, MemoryRecords.with_records([(None, b"five")], base_offset=5))
        assert log.get_first_batch_timestamp_for_segments([segment]) == [LONG_MAX]
    finally:
        segment.close()
    reopened = LogSegment.open(log_dir, 5, config(index_interval_bytes=10), SYSTEM_TIME, file_already_exists=True)
    try:
        assert reopened.get_first_batch_timestamp() == LONG_MAX
    finally:
        reopened.close()


@pytest.mark.parametrize("zeros", [4096, 1 << 20])
def test_read_only_log_ends_at_a_zero_filled_tail(create_log: LogFactory, log_dir: Path, zeros: int) -> None:
    """A broker's preallocated active segment (``preallocate=true``) holds zeros after its last batch until the
    broker trims it at a clean shutdown: a read-only open of a live or crashed broker's dir reads the records up
    to there, consumer view and deep iteration alike, and no error."""
    log = create_log(config(segment_bytes=2 * 1024 * 1024))
    for i in range(5):
        log.append(singleton(f"v{i}".encode(), key=b"k", timestamp=1_000 + i))
    log.close()
    (segment,) = log_dir.glob("*.log")
    os.truncate(segment, segment.stat().st_size + zeros)
    with Log(log_dir, read_only=True) as reader:
        assert [r.value for r in reader.records()] == [f"v{i}".encode() for i in range(5)]
        assert reader.log_end_offset == 5
        (only,) = reader.log_segments()
        assert [r.value for r in only.log.records()] == [f"v{i}".encode() for i in range(5)]
        fetched = reader.read(3, 1 << 20)
        assert [r.offset for r in fetched.records.records()] == [3, 4]
