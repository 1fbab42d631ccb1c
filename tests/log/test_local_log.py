"""The segment-level log operations against Kafka's LocalLogTest (core 3.8.0,
``core/src/test/scala/unit/kafka/log/LocalLogTest.scala``).

Kafka 3.x splits the log in two: ``LocalLog`` (the segments, their files and directory) under ``UnifiedLog``
(offsets, producer state, the high watermark, the lock).  kafkalog does too: a :class:`~kafkalog.log.unified_log.Log`
holds a :class:`~kafkalog.log.local_log.LocalLog` (``log.local_log``).  These tests drive ``LocalLog``'s methods
that ``Log`` also offers through ``Log``, under the same names (``roll``, ``read``, ``flush``, ``truncate_to``,
``truncate_fully_and_start_at``, ``rename_dir``, ``update_config``, ``close``, ``close_handlers`` and
``non_active_log_segments_from``), and LocalLog's package-private ones on ``log.local_log``
(``remove_and_delete_segments``, ``create_and_delete_segment``, ``delete_all_segments``, ``delete_empty_dir``,
``mark_flushed``, ``check_if_memory_mapped_buffer_closed``), with ``delete_segment_files`` a function of
:mod:`kafkalog.log.local_log` as it is of the ``LocalLog`` object.

The log is made as Kafka's ``createLocalLogWithActiveSegment`` makes it: one empty segment at 0, default
configuration, a :class:`MockTime` whose scheduler runs the deferred deletions when the test sleeps, for
partition ``test_topic-1``.  Kafka's ``appendRecords`` writes a batch at a given offset straight to the active
segment; here that is a follower append (``append_as_follower``), which keeps the batch's offsets.

Two differences follow from ``Log`` being ``UnifiedLog`` too, and the tests say where they matter:

* ``Log.roll`` is ``UnifiedLog.roll``, which flushes the segments before the new one in the background
  (at once, with the mock scheduler); ``LocalLog.roll`` does not, so Kafka's recovery point stays 0 where
  kafkalog's has moved to the last roll.  The truncation tests check what Kafka's check about it: that
  truncating never moves the recovery point up, only down to the new end;
* an append to a closed log fails before it reaches the file, with :class:`KafkaStorageError` (what
  ``UnifiedLog``'s ``maybeHandleIOException`` makes of the ``ClosedChannelException`` ``LocalLog`` meets).

The directory-name cases (``testParseTopicPartitionName*``, ``testLogDeleteDirName``) are in log/test_topic.py
with the rest of :mod:`kafkalog.topic`; ``testRollEmptyActiveSegment`` and
``testRollSegmentErrorWhenNextOffsetIsIllegal`` are in test_log.py with the other roll cases.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kafkalog.log.local_log
from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalStateError, KafkaStorageError
from kafkalog.fetch import FetchDataInfo, LogOffsetMetadata
from kafkalog.filenames import (
    DELETED_FILE_SUFFIX,
    index_filename,
    log_filename,
    offset_from_file,
    time_index_filename,
    txn_index_filename,
)
from kafkalog.fsutil import DirLock, fsync_dir
from kafkalog.log import Log
from kafkalog.log.local_log import LocalLog, LogTruncation, SegmentDeletionReason, delete_segment_files
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from kafkalog.topic import TopicPartition
from kafkalog.transaction_index import AbortedTxn, read_aborted_txns
from tests.support.log_test_utils import config

TOPIC_PARTITION = TopicPartition("test_topic", 1)

KeyValue = tuple[str, str]


@pytest.fixture
def log(scratch: Path, mock_time: MockTime, create_log: Any) -> Iterator[Log]:
    """Kafka's ``createLocalLogWithActiveSegment(config = LogTestUtils.createLogConfig())``, opened under its log
    dir's lock, so that its close is ``LocalLog.close``'s: nothing flushed (these tests delete segment files the
    map still holds, as Kafka's do)."""
    with DirLock(scratch) as lock:
        made: Log = create_log(config(), scratch / "kafka-1", topic_partition=TOPIC_PARTITION, dir_lock=lock)
        yield made
        with contextlib.suppress(KafkaStorageError):
            made.close()


def records(kvs: Iterable[KeyValue], timestamp: int) -> list[tuple[bytes, bytes, int]]:
    """Kafka's ``kvsToRecords``: each pair as a record with the given timestamp."""
    return [(key.encode(), value.encode(), timestamp) for key, value in kvs]


def append_records(log: Log, batch: list[tuple[bytes | None, bytes, int]], initial_offset: int = 0) -> None:
    """Kafka's ``appendRecords``: the records in one batch at ``initial_offset``, appended as they are."""
    log.append_as_follower(MemoryRecords.with_records(batch, base_offset=initial_offset,
                                                      partition_leader_epoch=0))


def read_records(log: Log, start_offset: int = 0, max_length: int | None = None,
                 max_offset_metadata: LogOffsetMetadata | None = None) -> FetchDataInfo:
    """Kafka's ``readRecords``: at most the active segment's size, no minimum of one message, bounded by the
    log end offset unless told."""
    return log.read(start_offset, log.active_segment.size() if max_length is None else max_length,
                    max_offset_metadata if max_offset_metadata is not None else log.log_end_offset_metadata,
                    min_one_message=False)


def records_to_kvs(fetch: FetchDataInfo) -> list[KeyValue]:
    """Kafka's ``recordsToKvs``: a missing key or value reads as ""."""
    return [((r.key or b"").decode(), (r.value or b"").decode()) for r in fetch.records.records()]


def a_record(mock_time: MockTime) -> list[tuple[bytes | None, bytes, int]]:
    """``new SimpleRecord(mockTime.milliseconds, "a".getBytes)``."""
    return [(None, b"a", mock_time.milliseconds())]


def test_log_delete_segments_success(log: Log, mock_time: MockTime) -> None:
    append_records(log, a_record(mock_time))
    log.roll()
    assert log.number_of_segments == 2
    assert any(log.dir.iterdir())
    segments_before_delete = log.log_segments()
    deleted_segments = log.local_log.delete_all_segments()
    assert log.segments.is_empty()
    assert deleted_segments == segments_before_delete
    with pytest.raises(KafkaStorageError):
        log.local_log.check_if_memory_mapped_buffer_closed()
    assert log.dir.exists()


def test_log_delete_dir_success_when_empty_and_failure_when_non_empty(log: Log, mock_time: MockTime) -> None:
    append_records(log, a_record(mock_time))
    log.roll()
    assert log.number_of_segments == 2
    assert any(log.dir.iterdir())

    with pytest.raises(IllegalStateError):
        log.local_log.delete_empty_dir()
    assert log.dir.exists()

    log.local_log.delete_all_segments()
    log.local_log.delete_empty_dir()
    assert not log.dir.exists()


def test_update_config(log: Log) -> None:
    old_config = log.config
    assert log.config == old_config

    new_config = config(segment_bytes=old_config.segment_size + 1)
    assert log.update_config(new_config) is old_config  # UnifiedLog.updateConfig gives the old one back
    assert log.config == new_config
    assert log.config != old_config


def test_update_config_warns_of_a_downgraded_format(log: Log, caplog: pytest.LogCaptureFixture) -> None:
    """LocalLog.updateConfig's warning when the message format goes down."""
    log.update_config(LogConfig({"message.format.version": "0.10.2"}))
    assert "Record format version has been downgraded from V2 to V1." in caplog.text


def test_log_dir_rename_to_new_dir(log: Log, scratch: Path, mock_time: MockTime) -> None:
    append_records(log, a_record(mock_time))
    log.roll()
    assert log.number_of_segments == 2
    old_dir = log.dir
    new_log_dir = scratch / "kafka-2"
    new_log_dir.mkdir()  # TestUtils.randomPartitionLogDir makes the directory; the rename replaces it
    assert log.rename_dir(new_log_dir.name) is True
    assert not old_dir.exists()
    assert new_log_dir.exists()
    assert log.dir == new_log_dir
    assert log.parent_dir == str(new_log_dir.parent)
    assert log.parent_dir == str(log.dir.parent)
    for segment in log.log_segments():
        assert segment.log.file.parent == new_log_dir
    assert log.number_of_segments == 2
    # the files are still the log's: it reads and appends in the new directory
    assert records_to_kvs(read_records(log, max_length=1000)) == [("", "a")]
    append_records(log, a_record(mock_time), initial_offset=1)
    assert log_filename(new_log_dir, 1).stat().st_size == log.active_segment.size() > 0


def test_log_dir_rename_to_existing_dir(log: Log) -> None:
    assert log.rename_dir(log.dir.name) is False


def test_log_flush(log: Log, mock_time: MockTime) -> None:
    assert log.recovery_point == 0
    assert log.last_flush_time == mock_time.milliseconds()

    append_records(log, a_record(mock_time))
    mock_time.sleep(1)
    new_segment = log.roll()
    log.flush(new_segment.base_offset)
    log.local_log.mark_flushed(new_segment.base_offset)
    assert log.recovery_point == 1
    assert log.last_flush_time == mock_time.milliseconds()


def test_log_append(log: Log, mock_time: MockTime) -> None:
    fetch_before_append = read_records(log, max_length=1)
    assert list(fetch_before_append.records.records()) == []

    mock_time.sleep(1)
    key_values = [("abc", "ABC"), ("de", "DE")]
    append_records(log, records(key_values, mock_time.milliseconds()))
    assert log.log_end_offset == 2
    assert log.recovery_point == 0
    fetch = read_records(log)
    assert len(list(fetch.records.records())) == 2
    assert records_to_kvs(fetch) == key_values


def test_log_close_success(log: Log, mock_time: MockTime) -> None:
    key_values = [("abc", "ABC"), ("de", "DE")]
    append_records(log, records(key_values, mock_time.milliseconds()))
    log.close()
    with pytest.raises(KafkaStorageError):
        append_records(log, records(key_values, mock_time.milliseconds()), initial_offset=2)


def test_log_close_idempotent(log: Log) -> None:
    log.close()
    # closing again is harmless
    log.close()


def test_log_close_failure_when_in_memory_buffer_closed(log: Log, mock_time: MockTime) -> None:
    append_records(log, records([("abc", "ABC"), ("de", "DE")], mock_time.milliseconds()))
    log.close_handlers()
    with pytest.raises(KafkaStorageError):
        log.close()


def test_log_close_handlers(log: Log, mock_time: MockTime) -> None:
    key_values = [("abc", "ABC"), ("de", "DE")]
    append_records(log, records(key_values, mock_time.milliseconds()))
    log.close_handlers()
    with pytest.raises(KafkaStorageError):
        append_records(log, records(key_values, mock_time.milliseconds()), initial_offset=2)


def test_log_close_handlers_idempotent(log: Log) -> None:
    log.close_handlers()
    # releasing the files again is harmless
    log.close_handlers()


def ten_segments(log: Log, mock_time: MockTime) -> list[LogSegment]:
    """One record at each offset 0..8, each followed by a roll: nine one-record segments and an empty one."""
    for offset in range(9):
        append_records(log, a_record(mock_time), initial_offset=offset)
        log.roll()
    assert log.number_of_segments == 10
    return log.log_segments()


class RecordingDeletionReason(SegmentDeletionReason):
    """Kafka's ``TestDeletionReason``: remembers the segments it was told about."""

    def __init__(self, log: LocalLog) -> None:
        super().__init__(log)
        self.deleted_segments: list[LogSegment] = []

    def log_reason(self, to_delete: list[LogSegment]) -> None:
        self.deleted_segments = list(to_delete)


def check_remove_and_delete_segments(log: Log, mock_time: MockTime, async_delete: bool) -> None:
    to_delete = ten_segments(log, mock_time)
    reason = RecordingDeletionReason(log.local_log)
    log.local_log.remove_and_delete_segments(to_delete, async_delete, reason)
    if async_delete:
        mock_time.sleep(log.config.file_delete_delay_ms + 1)
    assert log.segments.is_empty()
    assert reason.deleted_segments == to_delete
    for segment in to_delete:
        assert segment.deleted()


def test_remove_and_delete_segments_sync(log: Log, mock_time: MockTime) -> None:
    check_remove_and_delete_segments(log, mock_time, async_delete=False)


def test_remove_and_delete_segments_async(log: Log, mock_time: MockTime) -> None:
    check_remove_and_delete_segments(log, mock_time, async_delete=True)


def check_delete_segment_files(log: Log, mock_time: MockTime, async_delete: bool) -> None:
    to_delete = ten_segments(log, mock_time)
    delete_segment_files(to_delete, async_delete, log.dir, log.topic_partition, log.config, log.scheduler)
    if async_delete:
        for segment in to_delete:
            assert not segment.deleted()
            assert segment.has_suffix(DELETED_FILE_SUFFIX)
        mock_time.sleep(log.config.file_delete_delay_ms + 1)
    for segment in to_delete:
        assert segment.deleted()


def test_delete_segment_files_sync(log: Log, mock_time: MockTime) -> None:
    check_delete_segment_files(log, mock_time, async_delete=False)


def test_delete_segment_files_async(log: Log, mock_time: MockTime) -> None:
    check_delete_segment_files(log, mock_time, async_delete=True)


def test_create_and_delete_segment(log: Log, mock_time: MockTime) -> None:
    append_records(log, a_record(mock_time))
    new_offset = log.active_segment.base_offset + 1
    old_active_segment = log.active_segment
    new_active_segment = log.local_log.create_and_delete_segment(new_offset, log.active_segment, async_delete=True,
                                                                 reason=LogTruncation(log.local_log))
    assert log.number_of_segments == 1
    assert log.active_segment is new_active_segment
    assert log.active_segment is not old_active_segment
    assert old_active_segment.has_suffix(DELETED_FILE_SUFFIX)
    assert log.active_segment.base_offset == new_offset
    assert log.recovery_point == 0
    assert log.log_end_offset == new_offset
    fetch = read_records(log, start_offset=new_offset)
    assert list(fetch.records.records()) == []


def test_truncate_fully_and_start_at(log: Log, mock_time: MockTime) -> None:
    """testTruncateFullyAndStartAt: every segment goes, one empty segment starts at 10, and the recovery point
    is not moved up to 10.

    Kafka's recovery point is 0 here, as ``LocalLog.roll`` never flushed; kafkalog's rolls flushed up to the
    last roll (8), and truncating keeps ``min(8, 10)``.  Kafka's both versions keep the minimum."""
    record = a_record(mock_time)
    for offset in range(8):
        append_records(log, record, initial_offset=offset)
        if offset % 2 != 0:
            log.roll()
    for offset in range(8, 13):
        append_records(log, a_record(mock_time), initial_offset=offset)
    assert log.number_of_segments == 5
    assert log.active_segment.base_offset != 10
    recovery_point = log.recovery_point
    assert recovery_point == 8  # the roll at 8 flushed everything before it
    expected = log.log_segments()
    deleted = log.truncate_fully_and_start_at(10)
    assert deleted == expected
    assert log.number_of_segments == 1
    assert log.active_segment.base_offset == 10
    assert log.recovery_point == min(recovery_point, 10) == 8
    assert log.log_end_offset == 10
    fetch = read_records(log, start_offset=10)
    assert list(fetch.records.records()) == []


def test_truncate_fully_and_start_at_never_raises_the_recovery_point(log: Log, mock_time: MockTime) -> None:
    """As Kafka's LocalLog keeps it (0 after truncating to 10, with nothing flushed): truncating forward from an
    unflushed log leaves the recovery point where it was."""
    for offset in range(5):
        append_records(log, a_record(mock_time), initial_offset=offset)
    assert log.recovery_point == 0
    log.truncate_fully_and_start_at(10)
    assert log.recovery_point == 0
    assert (log.log_start_offset, log.log_end_offset) == (10, 10)


def test_when_fetch_offset_higher_than_max_offset(log: Log, mock_time: MockTime) -> None:
    record = a_record(mock_time)
    for offset in range(5):
        append_records(log, record, initial_offset=offset)
        if offset % 2 != 0:
            log.roll()
    assert log.number_of_segments == 3

    # case 0: the start offset is below the max offset
    fetch = read_records(log, start_offset=3, max_offset_metadata=LogOffsetMetadata(4, 4, 0))
    assert len(list(fetch.records.records())) == 1
    assert fetch.fetch_offset_metadata == LogOffsetMetadata(3, 2, 69)

    # case 1: the start offset is the max offset
    fetch = read_records(log, start_offset=4, max_offset_metadata=LogOffsetMetadata(4, 4, 0))
    assert list(fetch.records.records()) == []
    assert fetch.fetch_offset_metadata == LogOffsetMetadata(4, 4, 0)

    # case 2: the start offset is past the max offset
    fetch = read_records(log, start_offset=5, max_offset_metadata=LogOffsetMetadata(4, 4, 0))
    assert list(fetch.records.records()) == []
    assert fetch.fetch_offset_metadata == LogOffsetMetadata(5, 4, 69)

    # case 3: below the max offset, but the max offset knows only its offset
    fetch = read_records(log, start_offset=3, max_offset_metadata=LogOffsetMetadata(4, -1, -1))
    assert list(fetch.records.records()) == []
    assert fetch.fetch_offset_metadata == LogOffsetMetadata(3, 2, 69)

    # case 4: below the max offset, whose segment is below the start offset's
    fetch = read_records(log, start_offset=3, max_offset_metadata=LogOffsetMetadata(4, 0, 40))
    assert list(fetch.records.records()) == []
    assert fetch.fetch_offset_metadata == LogOffsetMetadata(3, 2, 69)


def test_truncate_to(log: Log, mock_time: MockTime) -> None:
    """LocalLogTest.testTruncateTo: the segments past the target go (to ``.deleted``), the active one is cut,
    and the recovery point comes down to the new end (Kafka's stays 0, as its rolls never flushed; kafkalog's
    rolls flushed up to 12)."""
    for offset in range(12):
        append_records(log, a_record(mock_time), initial_offset=offset)
        if offset % 3 == 2:
            log.roll()
    assert log.number_of_segments == 5
    assert log.log_end_offset == 12

    expected = log.log_segments(9, log.log_end_offset + 1)
    before = log.log_segments()
    assert log.recovery_point == 12
    # truncate to an offset before the base offset of the active segment
    assert log.truncate_to(7) is True
    deleted = [s for s in before if s.has_suffix(DELETED_FILE_SUFFIX)]
    assert deleted == expected
    assert not any(log.segments.get(s.base_offset) is s for s in deleted)
    assert log.number_of_segments == 3
    assert log.active_segment.base_offset == 6
    assert log.recovery_point == 7
    assert log.log_end_offset == 7
    fetch = read_records(log, start_offset=6)
    assert len(list(fetch.records.records())) == 1
    assert records_to_kvs(fetch) == [("", "a")]

    # the active segment still takes appends
    append_records(log, a_record(mock_time), initial_offset=7)
    assert log.log_end_offset == 8


def test_non_active_segments_from(log: Log, mock_time: MockTime) -> None:
    for i in range(5):
        append_records(log, records([(str(i), str(i))], mock_time.milliseconds()), initial_offset=i)
        log.roll()

    def non_active_base_offsets_from(start_offset: int) -> list[int]:
        found = [s.base_offset for s in log.segments.non_active_log_segments_from(start_offset)]
        assert [s.base_offset for s in log.non_active_log_segments_from(start_offset)] == found
        return found

    assert log.active_segment.base_offset == 5
    assert non_active_base_offsets_from(0) == list(range(5))
    assert non_active_base_offsets_from(5) == []
    assert non_active_base_offsets_from(2) == list(range(2, 5))
    assert non_active_base_offsets_from(6) == []


def test_offset_from_file(scratch: Path) -> None:
    offset = 23423423
    assert offset_from_file(log_filename(scratch, offset)) == offset
    assert offset_from_file(index_filename(scratch, offset)) == offset
    assert offset_from_file(time_index_filename(scratch, offset)) == offset


def test_new_segments_after_roll(log: Log, mock_time: MockTime) -> None:
    assert log.number_of_segments == 1, "Log begins with a single empty segment."

    # rolling the empty active segment at its own base offset makes it again
    new_segment = log.roll()
    assert new_segment.base_offset == 0
    assert log.number_of_segments == 1
    assert log.log_end_offset == 0

    append_records(log, records([("k1", "v1")], mock_time.milliseconds()))

    new_segment = log.roll()
    assert new_segment.base_offset == 1
    assert log.number_of_segments == 2
    assert log.log_end_offset == 1

    append_records(log, records([("k2", "v2")], mock_time.milliseconds()), initial_offset=1)

    new_segment = log.roll(1)
    assert new_segment.base_offset == 2
    assert log.number_of_segments == 3
    assert log.log_end_offset == 2


def test_flushing_non_existent_dir(log: Log, mock_time: MockTime, monkeypatch: pytest.MonkeyPatch) -> None:
    """testFlushingNonExistentDir: a flush that would fsync the directory does not fail when the directory is
    gone (renamed meanwhile for deletion, say).

    Kafka's roll leaves the new segment unflushed, so its ``flush(newSegment.baseOffset)`` reaches the
    directory; kafkalog's roll has flushed up to there already, so the flush here also takes in the new
    segment (``including_offset``), which is what makes it sync the directory.
    """
    append_records(log, a_record(mock_time))
    mock_time.sleep(1)
    new_segment = log.roll()

    # simulate the directory being renamed concurrently
    monkeypatch.setattr(log.local_log, "dir", Path("__NON_EXISTENT__"))
    synced: list[Path] = []

    def recording_fsync_dir(path: Any) -> None:
        synced.append(Path(path))
        fsync_dir(path)

    monkeypatch.setattr(kafkalog.log.local_log, "fsync_dir", recording_fsync_dir)
    log.flush(new_segment.base_offset)
    log.flush(new_segment.base_offset, including_offset=True)
    assert synced == [Path("__NON_EXISTENT__")]
    assert log.recovery_point == new_segment.base_offset


def test_roll_segment_that_already_exists(log: Log, mock_time: MockTime) -> None:
    """LocalLogTest.testRollSegmentThatAlreadyExists (UnifiedLogTest's case of that name is in test_log.py)."""
    assert log.number_of_segments == 1, "Log begins with a single empty segment."

    # rolling the empty active segment at its own base offset makes it again
    log.roll(0)
    assert log.number_of_segments == 1, "Expect 1 segment after roll() empty segment with base offset."

    # the active segment takes appends
    key_values1 = [("k1", "v1")]
    append_records(log, records(key_values1, mock_time.milliseconds()))
    assert log.active_segment.base_offset == 0
    key_values2 = [("k2", "v2")]
    append_records(log, records(key_values2, mock_time.milliseconds() + 10), initial_offset=1)
    assert log.log_end_offset == 2, "Expect two records in the log"
    read_result = read_records(log)
    assert len(list(read_result.records.records())) == 2
    assert records_to_kvs(read_result) == key_values1 + key_values2

    # a roll leaves the active segment empty
    log.roll()
    assert log.active_segment.base_offset == 2, "Expect base offset of active segment to be LEO"
    assert log.number_of_segments == 2, "Expect two segments."
    assert log.log_end_offset == 2


class _Aborted:
    """A completed, aborted transaction as ``LogSegment.update_txn_index`` takes it (Kafka: ``CompletedTxn``)."""

    is_aborted = True

    def __init__(self, producer_id: int, first_offset: int, last_offset: int) -> None:
        self.producer_id, self.first_offset, self.last_offset = producer_id, first_offset, last_offset


@pytest.mark.parametrize("cleaned_has_entries", [False, True], ids=["no-new-index", "new-index"])
def test_replace_segments_swaps_the_txn_index(log: Log, mock_time: MockTime, cleaned_has_entries: bool) -> None:
    """``replaceSegments`` renames each segment's ``.txnindex`` with it: the old segment's goes ``.deleted`` and
    then away, the cleaned one's (if any) becomes the live one, so no stale index survives a swap (before, the
    old ``.txnindex`` stayed under the live name over the new segment)."""
    for i in range(3):
        append_records(log, records([(f"k{i}", f"v{i}")], mock_time.milliseconds()), initial_offset=i)
    old = log.active_segment
    old.update_txn_index(_Aborted(1, 0, 1), 2)
    log.roll()
    live = txn_index_filename(log.dir, 0)
    assert live.exists()

    cleaned = log.create_cleaned_segment(0)
    cleaned.append_from_file(old.log, 0)
    if cleaned_has_entries:
        cleaned.update_txn_index(_Aborted(7, 0, 2), 3)
    cleaned.flush()
    log.replace_segments([cleaned], [old])
    assert log.log_segments()[0] is cleaned
    assert cleaned.txn_index.file == live
    assert live.exists() == cleaned_has_entries
    mock_time.sleep(log.config.file_delete_delay_ms + 1)
    assert not any(p.name.endswith((".deleted", ".cleaned", ".swap")) for p in log.dir.iterdir())
    expected = [AbortedTxn(7, 0, 2, 3)] if cleaned_has_entries else []
    assert log.collect_aborted_transactions(0, log.log_end_offset + 1) == expected
    assert (read_aborted_txns(live) if live.exists() else []) == expected
