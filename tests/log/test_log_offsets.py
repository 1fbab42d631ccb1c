"""Log offsets against Kafka's UnifiedLogTest (core 3.8.0): the high watermark (as leader and follower), reads
bounded by it or by the log end offset, offset metadata, the log start offset, the offsets listener.

Logs are made as in ``tests/log/test_log.py`` (``create_log``: Kafka's ``createLog`` with a :class:`MockTime`,
under both kernel twins).  Kafka's high watermark starts at the log start offset; kafkalog's follows the log
end offset until someone sets it (see :attr:`kafkalog.log.unified_log.Log.high_watermark`).  The tests that rely on
Kafka's initial high watermark of 0 therefore set it to 0 first, with ``update_high_watermark(0)``, and say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalog import MemoryRecords
from kafkalog.errors import IllegalArgumentError
from kafkalog.fetch import LogOffsetMetadata
from kafkalog.filenames import offset_from_file_name, producer_snapshot_filename
from kafkalog.log import Log
from kafkalog.scheduler import MockTime
from tests.support.log_test_utils import INT32_MAX, LogFactory, assert_valid_log_offset_metadata, config, singleton


def three_records(mock_time: MockTime, base_offset: int = 0, leader_epoch: int = 0) -> MemoryRecords:
    """The three keyed records (``a``, ``b``, ``c`` -> ``value``) of Kafka's ``records(offset)`` helpers."""
    now = mock_time.milliseconds()
    return MemoryRecords.with_records([(key, b"value", now) for key in (b"a", b"b", b"c")],
                                      base_offset=base_offset, partition_leader_epoch=leader_epoch)


def values(*items: bytes) -> MemoryRecords:
    """Kafka's ``TestUtils.records(List(new SimpleRecord("0".getBytes), ...))``: no key, no timestamp."""
    return MemoryRecords.with_records([(None, value) for value in items])


class MockLogOffsetsListener:
    """Kafka's ``MockLogOffsetsListener``: remembers the last high watermark it was told, -1 when none."""

    def __init__(self) -> None:
        self.high_watermark = -1

    def on_high_watermark_updated(self, offset: int) -> None:
        self.high_watermark = offset

    def verify(self, expected_high_watermark: int = -1) -> None:
        """The callbacks since the last verification: the last value told, or -1 for none."""
        assert self.high_watermark == expected_high_watermark, "Unexpected high watermark"
        self.high_watermark = -1


# -- the high watermark ---------------------------------------------------------------------------------


def test_high_watermark_maintenance(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=1024 * 1024))

    def assert_high_watermark(offset: int) -> None:
        assert log.high_watermark == offset
        assert_valid_log_offset_metadata(log, log.fetch_offset_snapshot().high_watermark)

    # High watermark initialized to 0 (kafkalog: pinned there, as it would otherwise follow the appends)
    assert_high_watermark(0)
    assert log.update_high_watermark(0) == 0

    # not changed by an append
    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    assert_high_watermark(0)

    # updated as leader
    assert log.maybe_increment_high_watermark(LogOffsetMetadata(1)) is not None
    assert_high_watermark(1)

    # cannot be updated past the log end offset
    assert log.update_high_watermark(5) == 3
    assert_high_watermark(3)

    # updated as follower
    log.append_as_follower(three_records(mock_time, base_offset=3))
    log.update_high_watermark(6)
    assert_high_watermark(6)

    # adjusted by truncation
    log.truncate_to(3)
    assert_high_watermark(3)

    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    assert_high_watermark(3)
    assert log.log_end_offset == 6
    assert log.log_start_offset == 0

    # full truncation resets it too
    log.truncate_fully_and_start_at(4)
    assert log.log_end_offset == 4
    assert log.log_start_offset == 4
    assert_high_watermark(4)


def test_maybe_increment_high_watermark_past_log_end_offset_fails(create_log: LogFactory,
                                                                 mock_time: MockTime) -> None:
    """UnifiedLog.maybeIncrementHighWatermark: moving the high watermark past the log end offset is an
    IllegalArgumentException; an equal or lower offset in the same segment is no move."""
    log = create_log(config(segment_bytes=1024 * 1024))
    log.update_high_watermark(0)
    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    with pytest.raises(IllegalArgumentError):
        log.maybe_increment_high_watermark(LogOffsetMetadata(4))
    old = log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert old is not None and old.message_offset == 0
    assert log.maybe_increment_high_watermark(LogOffsetMetadata(2)) is None
    assert log.maybe_increment_high_watermark(log.log_end_offset_metadata) is None
    assert log.high_watermark == 3


def test_maybe_update_high_watermark_as_follower(create_log: LogFactory) -> None:
    log = create_log(config())
    for i in range(100):
        log.append_as_leader(singleton(f"test{i}".encode()), leader_epoch=0)
    log.update_high_watermark(0)  # Kafka's initial high watermark

    assert log.maybe_update_high_watermark(99) == 99
    assert log.maybe_update_high_watermark(99) is None

    assert log.maybe_update_high_watermark(100) == 100
    assert log.maybe_update_high_watermark(100) is None

    # bound by the log end offset
    assert log.maybe_update_high_watermark(101) is None


def test_segment_deletion_with_high_watermark_initialization(create_log: LogFactory,
                                                             mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=512, segment_index_bytes=1000, retention_ms=999))
    expired = mock_time.milliseconds() - 1000
    for i in range(100):
        log.append_as_leader(singleton(f"test{i}".encode(), timestamp=expired), leader_epoch=0)

    initial_high_watermark = log.update_high_watermark(25)
    assert initial_high_watermark == 25

    initial_num_segments = log.number_of_segments
    log.delete_old_segments()
    assert log.number_of_segments < initial_num_segments
    assert log.log_start_offset <= initial_high_watermark


# -- reads bounded by the log end offset or the high watermark ------------------------------------------


def assert_non_empty_fetch(log: Log, offset: int, upper_bound: int, max_offset: int | None) -> None:
    """Kafka's ``assertNonEmptyFetch``: ``max_offset`` None is ``FetchIsolation.LOG_END``, the high watermark
    ``FetchIsolation.HIGH_WATERMARK``; every record read is below ``upper_bound``."""
    fetch = log.read(offset, INT32_MAX, max_offset=max_offset, min_one_message=True)
    assert not fetch.first_entry_incomplete
    assert fetch.records.size_in_bytes() > 0
    # whole batches are read: every record of them is below the bound when the last one is
    assert all(batch.last_offset < upper_bound for batch in fetch.records.batches())
    assert fetch.fetch_offset_metadata.message_offset == offset
    assert_valid_log_offset_metadata(log, fetch.fetch_offset_metadata)


def assert_empty_fetch(log: Log, offset: int, max_offset: int | None) -> None:
    """Kafka's ``assertEmptyFetch``."""
    fetch = log.read(offset, INT32_MAX, max_offset=max_offset, min_one_message=True)
    assert not fetch.first_entry_incomplete
    assert fetch.records.size_in_bytes() == 0
    assert fetch.fetch_offset_metadata.message_offset == offset
    assert_valid_log_offset_metadata(log, fetch.fetch_offset_metadata)


def test_fetch_up_to_log_end_offset(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=1024 * 1024))
    log.append_as_leader(values(b"0", b"1", b"2"), leader_epoch=0)
    log.append_as_leader(values(b"3", b"4"), leader_epoch=0)
    for offset in range(log.log_start_offset, log.log_end_offset):
        assert_non_empty_fetch(log, offset, log.log_end_offset, None)


def test_fetch_up_to_high_watermark(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=1024 * 1024))
    log.append_as_leader(values(b"0", b"1", b"2"), leader_epoch=0)
    log.append_as_leader(values(b"3", b"4"), leader_epoch=0)
    log.update_high_watermark(0)  # Kafka's initial high watermark

    def assert_high_watermark_bounded_fetches() -> None:
        for offset in range(log.log_start_offset, log.high_watermark):
            assert_non_empty_fetch(log, offset, log.high_watermark, log.high_watermark)
        for offset in range(log.high_watermark, log.log_end_offset + 1):
            assert_empty_fetch(log, offset, log.high_watermark)

    assert_high_watermark_bounded_fetches()
    log.update_high_watermark(3)
    assert_high_watermark_bounded_fetches()
    log.update_high_watermark(5)
    assert_high_watermark_bounded_fetches()


# -- offset metadata and the log start offset -----------------------------------------------------------


def test_convert_to_offset_metadata_does_not_throw_offset_out_of_range_error(create_log: LogFactory) -> None:
    """testConvertToOffsetMetadataDoesNotThrowOffsetOutOfRangeError, on a log without remote storage.

    Kafka's test moves the *local* log start offset to 31 by uploading three segments to remote storage and
    then sets the log start offset to 15 from the remote tier; kafkalog has no remote storage, so the log
    start offset itself is moved to 31 (deleteRecords, then retention takes the same three segments).  Each of
    Kafka's four cases is kept: inside the log (its position), below the start (Kafka's offsets 29 and 14:
    below the local log start offset and below the log start offset) and past the end give the bare offset.
    """
    log = create_log(config(file_delete_delay_ms=0))
    for _ in range(50):
        info = log.append_as_leader(singleton(b"test"), leader_epoch=0)
        if info.last_offset != 0 and info.last_offset % 10 == 0:
            log.roll()
    assert log.number_of_segments == 5
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(31)
    log.delete_old_segments()
    assert log.number_of_segments == 2
    assert log.log_start_offset == 31

    # offset in the log: log start offset < offset < log end offset
    assert log.maybe_convert_to_offset_metadata(35) == LogOffsetMetadata(35, 31, 288)
    # offset below the log start offset
    assert log.maybe_convert_to_offset_metadata(29) == LogOffsetMetadata(29, -1, -1)
    # offset past the log end offset
    assert log.maybe_convert_to_offset_metadata(log.log_end_offset + 1) == \
        LogOffsetMetadata(log.log_end_offset + 1, -1, -1)
    # offset well below the log start offset
    assert log.maybe_convert_to_offset_metadata(14) == LogOffsetMetadata(14, -1, -1)


def test_log_reinitialize_after_manual_delete(create_log: LogFactory) -> None:
    # a log whose data is gone but whose start offset is not 0
    log = create_log(config(), log_start_offset=500)
    assert log.log_start_offset == 500
    assert log.log_end_offset == 500


def test_truncate_fully_and_start(create_log: LogFactory) -> None:
    """testTruncateFullyAndStart: truncating fully to offset 2 with log start offset 1, after a reopen that left
    the first unstable offset (3, an open transaction's) without a segment position, clears it and the producers."""
    cfg = config(segment_bytes=1024 * 1024)
    log = create_log(cfg)
    producer_id, producer_epoch, sequence = 17, 10, 0
    log.append_as_leader(values(b"0", b"1", b"2"), leader_epoch=0)
    log.append_as_leader(MemoryRecords.with_records([(None, b"3"), (None, b"4")], producer_id=producer_id,
                                                    producer_epoch=producer_epoch, base_sequence=sequence,
                                                    is_transactional=True),
                         leader_epoch=0)
    assert log.first_unstable_offset == 3
    # closed and reopened, so the first unstable offset's segment position is unknown when the log is truncated
    log.close()

    reopened = create_log(cfg)
    assert reopened.producer_state_manager.first_unstable_offset() == LogOffsetMetadata(3)
    reopened.truncate_fully_and_start_at(2, 1)
    assert reopened.first_unstable_offset is None
    assert dict(reopened.producer_state_manager.active_producers()) == {}
    assert reopened.log_start_offset == 1
    assert reopened.log_end_offset == 2
    assert reopened.number_of_segments == 1
    assert reopened.active_segment.base_offset == 2


def test_offset_from_producer_snapshot_file(tmp_path: Path) -> None:
    offset = 23423423
    snapshot_file = producer_snapshot_filename(tmp_path, offset)
    assert snapshot_file.name == "00000000000023423423.snapshot"
    assert offset_from_file_name(snapshot_file) == offset


# -- the offsets listener -------------------------------------------------------------------------------


def test_log_offsets_listener(create_log: LogFactory, mock_time: MockTime) -> None:
    listener = MockLogOffsetsListener()
    listener.verify()

    log = create_log(config(segment_bytes=1024 * 1024), log_offsets_listener=listener)
    listener.verify(expected_high_watermark=0)
    log.update_high_watermark(0)  # kafkalog: pinned at Kafka's initial 0, which the listener hears again
    listener.verify(expected_high_watermark=0)

    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    listener.verify()  # appends do not move a high watermark below the log end offset

    log.maybe_increment_high_watermark(LogOffsetMetadata(4))
    listener.verify(expected_high_watermark=4)

    log.truncate_to(3)
    listener.verify(expected_high_watermark=3)

    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    log.truncate_fully_and_start_at(4)
    listener.verify(expected_high_watermark=4)


def test_update_log_offsets_listener(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=1024 * 1024))
    log.update_high_watermark(0)  # Kafka's initial high watermark

    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    log.maybe_increment_high_watermark(LogOffsetMetadata(2))
    log.maybe_increment_log_start_offset(1)

    listener = MockLogOffsetsListener()
    listener.verify()

    log.set_log_offsets_listener(listener)
    listener.verify()  # still empty: the listener is not called when it is set

    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    log.maybe_increment_high_watermark(LogOffsetMetadata(4))
    listener.verify(expected_high_watermark=4)


def test_listener_hears_a_high_watermark_that_follows_the_log_end_offset(create_log: LogFactory,
                                                                        mock_time: MockTime) -> None:
    """kafkalog's addition: while nobody has set the high watermark it follows the log end offset, and the
    listener hears every move; once set it moves only as Kafka's does."""
    listener = MockLogOffsetsListener()
    log = create_log(config(segment_bytes=1024 * 1024), log_offsets_listener=listener)
    listener.verify(expected_high_watermark=0)
    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    listener.verify(expected_high_watermark=3)
    log.truncate_to(1)
    listener.verify(expected_high_watermark=1)
    log.high_watermark = 1
    listener.verify(expected_high_watermark=1)
    log.append_as_leader(three_records(mock_time), leader_epoch=0)
    listener.verify()
    log.high_watermark = None
    listener.verify(expected_high_watermark=4)
    assert log.high_watermark == 4
    log.close()
    listener.verify()


def test_offset_snapshot(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=1024 * 1024 * 5))
    # Kafka's appendAsFollower(log, records, leaderEpoch = 5): the batch carries epoch 5
    log.append_as_follower(MemoryRecords.with_records([(None, b"a"), (None, b"b"), (None, b"c")],
                                                      partition_leader_epoch=5))

    log.update_high_watermark(2)
    offsets = log.fetch_offset_snapshot()
    assert offsets.high_watermark.message_offset == 2
    assert not offsets.high_watermark.message_offset_only

    offsets = log.fetch_offset_snapshot()
    assert offsets.high_watermark.message_offset == 2
    assert not offsets.high_watermark.message_offset_only
    # kafkalog's addition: the rest of the snapshot
    assert offsets.log_start_offset == 0
    assert offsets.log_end_offset == log.log_end_offset_metadata
    assert offsets.last_stable_offset == offsets.high_watermark  # no transactions: Kafka's too


def test_no_op_when_remote_log_storage_is_disabled(create_log: LogFactory) -> None:
    """testNoOpWhenRemoteLogStorageIsDisabled: without remote storage, moving the log start offset moves it."""
    log = create_log(config())
    for i in range(100):
        log.append_as_leader(singleton(f"test{i}".encode()), leader_epoch=0)

    log.update_high_watermark(90)
    log.maybe_increment_log_start_offset(20)
    assert log.log_start_offset == 20


def test_a_high_watermark_in_no_batch_moves_to_the_log_end_when_fetched(create_log: LogFactory) -> None:
    """A truncation inside a batch leaves the log end offset there, past the last batch kept: a high watermark
    between the two is in no batch, its metadata is the log end's, and fetching it (for a read bounded by the
    high watermark) makes that the high watermark, as Kafka 3.9.2's fetchHighWatermarkMetadata caches what it
    converted (found by the oracle, 3.9.2 seed 9194)."""
    log = create_log(config(segment_bytes=1024 * 1024))
    log.append_as_leader(values(*(b"%d" % i for i in range(8))), leader_epoch=0)
    log.append_as_leader(values(*(b"%d" % i for i in range(8, 16))), leader_epoch=0)
    log.truncate_to(13)
    assert log.log_end_offset == 13
    log.update_high_watermark(9)
    assert log.high_watermark == 9
    log.read(2, 60, isolation="high_watermark")
    assert log.high_watermark == 13
    assert log.fetch_high_watermark_metadata().message_offset == 13
    log.update_high_watermark(5)  # inside the batch kept: its own offset
    assert log.fetch_high_watermark_metadata().message_offset == 5
    assert log.high_watermark == 5


def test_a_high_watermark_set_at_the_log_end_is_not_moved_when_fetched(create_log: LogFactory) -> None:
    """A high watermark set at (or past) the log end takes the log end's metadata, with its position, and is not
    converted again: a later truncation that leaves it in no batch does not move it (Kafka converts only a
    high watermark that knows no position; found by the oracle, 3.9.2 seed 1046)."""
    log = create_log(config(segment_bytes=1024 * 1024))
    log.append_as_leader(values(b"0"), leader_epoch=0)
    log.update_high_watermark(6)  # past the log end: the log end's metadata, 1
    assert log.high_watermark == 1
    log.append_as_follower(MemoryRecords.with_records([(None, b"%d" % i, 0) for i in range(5)], base_offset=8,
                                                      partition_leader_epoch=0))
    log.truncate_to(7)
    assert log.log_end_offset == 7
    log.read(0, 200, isolation="high_watermark")
    assert log.high_watermark == 1
