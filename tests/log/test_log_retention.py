"""Log retention and deletion against Kafka's UnifiedLogTest (core 3.8.0) and LogTest (0.10.1.1): which segments
retention may delete and in what order it asks, retention run twice, deleting a log (closed, or after its
directory was renamed).

Logs are made as in ``tests/log/test_log.py`` (``create_log``: Kafka's ``createLog`` with a :class:`MockTime`,
under both kernel twins).  kafkalog's high watermark follows the log end offset until someone sets it, so
0.10.1.1's retention, which had no high watermark to respect, runs here as it did there.
"""

from __future__ import annotations

from pathlib import Path

from kafkalog import MemoryRecords
from kafkalog.log.segments import LogSegments
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from tests.support.log_test_utils import LogFactory, config, singleton


def one_record(mock_time: MockTime, value: bytes = b"a", timestamp_delta: int = 0) -> MemoryRecords:
    """Kafka's ``TestUtils.records(List(new SimpleRecord(mockTime.milliseconds + delta, value)))``."""
    return MemoryRecords.with_records([(None, value, mock_time.milliseconds() + timestamp_delta)])


def test_retention_idempotency(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=2048 * 5, retention_bytes=-1, retention_ms=900, file_delete_delay_ms=0))

    log.append_as_leader(one_record(mock_time, b"a", 100), leader_epoch=0)
    log.roll()
    log.append_as_leader(one_record(mock_time, b"b"), leader_epoch=0)
    log.roll()
    log.append_as_leader(one_record(mock_time, b"c", 100), leader_epoch=0)

    mock_time.sleep(901)

    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(1)
    assert log.delete_old_segments() == 2, \
        "Expecting two segment deletions as log start offset retention should unblock time based retention"
    assert log.delete_old_segments() == 0


def test_deletable_segments_filter(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=1024 * 1024))
    for _ in range(9):
        log.append_as_leader(one_record(mock_time), leader_epoch=0)
        log.roll()
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert log.number_of_segments == 10

    deletable = log.deletable_segments(lambda segment, _next: segment.base_offset <= 5)
    expected = [s for s in log.non_active_log_segments_from(0) if s.base_offset <= 5]
    assert len(expected) == 6
    assert deletable == expected

    deletable = log.deletable_segments(lambda _segment, _next: True)
    expected = log.non_active_log_segments_from(0)
    assert len(expected) == 9
    assert deletable == expected

    # the active segment too, once it holds a record below the high watermark
    log.append_as_leader(one_record(mock_time), leader_epoch=0)
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    deletable = log.deletable_segments(lambda _segment, _next: True)
    expected = log.log_segments()
    assert len(expected) == 10
    assert deletable == expected


def test_deletable_segments_iteration(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=1024 * 1024))
    for _ in range(9):
        log.append_as_leader(one_record(mock_time), leader_epoch=0)
        log.roll()
    log.maybe_increment_high_watermark(log.log_end_offset_metadata)
    assert log.number_of_segments == 10

    offset = 0

    def predicate(segment: LogSegment, next_segment: LogSegment | None) -> bool:
        nonlocal offset
        assert segment.base_offset == offset
        log_segments = LogSegments(log.topic_partition)
        for s in log.log_segments():
            log_segments.add(s)
        floor_segment = log_segments.floor_segment(offset)
        assert floor_segment is not None
        assert floor_segment is segment
        if offset == log.log_end_offset:
            assert next_segment is None
        else:
            assert next_segment is not None
            higher_segment = log_segments.higher_segment(segment.base_offset)
            assert higher_segment is not None
            assert higher_segment.base_offset == segment.base_offset + 1
            assert higher_segment is next_segment
        offset += 1
        return True

    deletable = log.deletable_segments(predicate)
    assert log.number_of_segments == 10
    assert deletable == log.non_active_log_segments_from(0)


def test_log_deletion_after_close(create_log: LogFactory, mock_time: MockTime) -> None:
    """testLogDeletionAfterClose: a closed log can still be deleted, and its leader-epoch cache is emptied."""
    def records() -> MemoryRecords:
        return singleton(b"test", timestamp=mock_time.milliseconds() - 1000)

    log = create_log(config(segment_bytes=records().size_in_bytes() * 5, segment_index_bytes=1000,
                            retention_ms=999))
    log.append_as_leader(records(), leader_epoch=0)
    assert log.number_of_segments == 1, "The deleted segments should be gone."
    assert log.leader_epoch_cache is not None
    assert len(log.leader_epoch_cache.epoch_entries()) == 1, "Epoch entries should have gone."

    log.close()
    log.delete()
    assert log.number_of_segments == 0, "The number of segments should be 0"
    assert log.leader_epoch_cache.epoch_entries() == [], "Epoch entries should have gone."
    assert not log.dir.exists()


def test_delete_old_segments_method(create_log: LogFactory, mock_time: MockTime) -> None:
    """LogTest.testDeleteOldSegmentsMethod (0.10.1.1): with retention.ms 0 and every segment's files older than
    that, retention leaves one (new) segment; a deleted log has no segments and retention deletes none."""
    def message_set() -> MemoryRecords:
        return singleton(b"test", magic=1)

    log = create_log(config(segment_bytes=message_set().size_in_bytes() * 5, segment_index_bytes=1000,
                            retention_ms=0, message_format_version="0.10.1"))
    for _ in range(100):
        log.append_as_leader(message_set())
    assert log.number_of_segments == 20

    # expire all segments: v1 messages without timestamps are aged by their files' modification time
    for segment in log.log_segments():
        segment.set_last_modified(mock_time.milliseconds() - 1000)
    log.delete_old_segments()
    assert log.number_of_segments == 1, "The deleted segments should be gone."
    assert log.log_start_offset == 100

    for _ in range(100):
        log.append_as_leader(message_set())

    log.delete()
    assert log.number_of_segments == 0, "The number of segments should be 0"
    assert log.delete_old_segments() == 0, "The number of deleted segments should be zero."


def test_renaming_dir_without_reinitialization(create_log: LogFactory, scratch: Path, mock_time: MockTime) -> None:
    """testRenamingDirWithoutReinitialization: the rename a topic deletion makes leaves the log without a
    leader-epoch cache.  Kafka also checks that the partition metadata file is gone; kafkalog keeps none."""
    log = create_log(config(segment_bytes=1024 * 1024))
    assert log.number_of_segments == 1, "The number of segments should be 1"

    new_dir = scratch / "kafka-123456"  # Kafka's TestUtils.randomPartitionLogDir makes it
    new_dir.mkdir()
    assert new_dir.exists()

    assert log.rename_dir(new_dir.name, False) is True
    assert log.leader_epoch_cache is None
    assert log.dir == new_dir
    assert log.log_end_offset == 0
    # appends still work
    log.append_as_leader(one_record(mock_time, b"value"), leader_epoch=0)
    assert log.log_end_offset == 1
    assert log.active_segment.log.file.parent == new_dir

    # and so does deletion
    log.delete()
    assert log.number_of_segments == 0, "The number of segments should be 0"
    assert not new_dir.exists()
