"""Log against Kafka's UnifiedLogTest (core 3.8.0) and LogTest (0.10.1.1 / 0.10.2.2), spec §3.12-3.18, §7.6.

Logs are made as Kafka's ``UnifiedLogTest.createLog`` makes them: in a directory ``topic-0`` with a
:class:`MockTime` (whose scheduler runs the asynchronous flushes and deletions when the test sleeps), from
log start offset 0 and recovery point 0, after a clean shutdown.  ``singleton`` is Kafka's
``TestUtils.singletonRecords``: one v2 record, no compression, no key and no timestamp unless given.  Every
test runs on both kernel twins (``impl``).

Where kafkalog differs from Kafka by design the test says so:

* the high watermark follows the log end offset until someone sets it (Kafka starts it at the log start
  offset), so the tests that rely on Kafka's initial high watermark of 0 set it to 0 first;
* ``flush()`` is Kafka's ``flush(false)`` (up to the log end offset, the active segment excluded when it is
  empty); ``read(..., max_offset=hw)`` is Kafka's ``FetchIsolation.HIGH_WATERMARK`` read.

The leader-epoch cache's own cases of UnifiedLogTest are in ``test_log_leader_epochs.py``.  More of UnifiedLogTest
is ported in ``test_log_append.py``, ``test_log_offsets.py``, ``test_log_read.py`` and ``test_log_retention.py``.

The producer-state cases (duplicates, sequences and epochs, snapshots, the first unstable and last stable
offsets, transaction verification, coordinator fencing) are in ``test_log_producer_state.py``, which lists those
it does not port.

Kafka tests not ported:

- ``UnifiedLogTest.testLogFlushesPartitionMetadataOnAppend``, ``UnifiedLogTest.testLogFlushesPartitionMetadataOnClose``,
  ``UnifiedLogTest.testLogRecoversTopicId``, ``UnifiedLogTest.testNoOpWhenKeepPartitionMetadataFileIsFalse``,
  ``UnifiedLogTest.testLogFailsWhenInconsistentTopicIdSet``,
  ``UnifiedLogTest.testTopicIdTransfersAfterDirectoryRename``,
  ``UnifiedLogTest.testTopicIdFlushesBeforeDirectoryRename``: topic ids and the ``partition.metadata`` file that
  holds them, which kafkalog leaves alone (issue 20).
- ``UnifiedLogTest.testFetchOffsetByTimestampFromRemoteStorage``,
  ``UnifiedLogTest.testRemoteLogStorageIsDisabledOnInternalAndRemoteLogMetadataTopic``,
  ``UnifiedLogTest.testStartOffsetsRemoteLogStorageIsEnabled``,
  ``UnifiedLogTest.testActiveSegmentDeletionDueToRetentionTimeBreachWithRemoteStorage``,
  ``UnifiedLogTest.testSegmentDeletionEnabledBeforeUploadToRemoteTierWhenLogStartOffsetMovedAhead``,
  ``UnifiedLogTest.testIncrementLocalLogStartOffsetAfterLocalLogDeletion``: remote (tiered) storage, its
  ``RemoteLogManager`` and the local log start offset it keeps apart from the log start offset; kafkalog's
  logs are local only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.checkpoint import EpochEntry
from kafkalog.cleaner import compact
from kafkalog.errors import (
    IllegalArgumentError,
    KafkaLogError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from kafkalog.fetch import EMPTY_RECORDS, FetchDataInfo
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import DELETED_FILE_SUFFIX, index_filename, log_filename, time_index_filename
from kafkalog.fsutil import DirLock
from kafkalog.log import Log
from kafkalog.log.append_info import OffsetsOutOfOrderError
from kafkalog.log.validator import RecordValidationError
from kafkalog.scheduler import MockTime
from tests.support.log_test_utils import (
    LogFactory,
    config,
    create_empty_logs,
    first_overflow_segment,
    initialize_log_dir_with_overflowed_segment,
    singleton,
)

INT32_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024

def first_batch(fetch: FetchDataInfo) -> Any:
    return next(iter(fetch.records.batches()))


def first_record(fetch: FetchDataInfo) -> Any:
    return next(iter(fetch.records.records()))


def all_records(log: Log) -> list[tuple[Any, ...]]:
    """Kafka's ``UnifiedLogTest.allRecords``: every record of every segment, read from the files."""
    return [record.as_tuple() for segment in log.log_segments() for record in segment.log.records()]


# -- rolling --------------------------------------------------------------------------------------------


def test_time_based_log_roll_during_append(create_log: LogFactory, mock_time: MockTime) -> None:
    segment_ms = 1 * 60 * 60
    log = create_log(config(segment_ms=segment_ms))
    assert log.number_of_segments == 1, "Log begins with a single empty segment."

    # records without a timestamp roll by the wall clock
    mock_time.sleep(segment_ms + 1)
    log.append_as_leader(singleton(b"test"))
    assert log.number_of_segments == 1, "Log doesn't roll if doing so creates an empty segment."
    log.append_as_leader(singleton(b"test"))
    assert log.number_of_segments == 2, "Log rolls on this append since time has expired."
    for num_segments in range(3, 5):
        mock_time.sleep(segment_ms + 1)
        log.append_as_leader(singleton(b"test"))
        assert log.number_of_segments == num_segments

    # a record with a timestamp into a segment whose first batch has none: still the wall clock
    timestamp = mock_time.milliseconds() + segment_ms + 1
    log.append_as_leader(singleton(b"test", timestamp=timestamp))
    assert log.number_of_segments == 4, "the roll is based on the wall clock"

    # records with timestamps roll by the first batch's timestamp
    mock_time.sleep(segment_ms + 1)
    log.append_as_leader(singleton(b"test", timestamp=timestamp))
    assert log.number_of_segments == 5, "A new segment should have been rolled out"
    mock_time.sleep(segment_ms + 1)
    log.append_as_leader(singleton(b"test", timestamp=timestamp))
    assert log.number_of_segments == 5, "the roll depends on the timestamp of the first message"
    log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
    assert log.number_of_segments == 6, "the timestamp in the message makes the segment expire"

    # an empty append never rolls
    num_segments = log.number_of_segments
    mock_time.sleep(segment_ms + 1)
    info = log.append_as_leader(MemoryRecords(b""))
    assert info.shallow_count == 0
    assert log.number_of_segments == num_segments
    assert log.log_end_offset == 8


def test_time_based_log_roll_jitter(create_log: LogFactory, mock_time: MockTime) -> None:
    max_jitter = 20 * 60
    segment_ms = 1 * 60 * 60
    log = create_log(config(segment_ms=segment_ms, segment_jitter_ms=max_jitter))
    assert log.number_of_segments == 1
    log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
    jitter = log.active_segment.rolling_jitter_ms
    assert 0 <= jitter < max_jitter

    mock_time.sleep(segment_ms - max_jitter)
    log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
    assert log.number_of_segments == 1, "no roll earlier than segment.ms - max jitter"
    mock_time.sleep(max_jitter - jitter + 1)
    log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
    assert log.number_of_segments == 2, "roll after segment.ms less the segment's random jitter"


def test_size_based_log_roll(create_log: LogFactory, mock_time: MockTime) -> None:
    set_size = singleton(b"test", timestamp=mock_time.milliseconds()).size_in_bytes()
    assert set_size == 72
    msg_per_seg = 10
    log = create_log(config(segment_bytes=msg_per_seg * (set_size - 1)))
    assert log.number_of_segments == 1
    for _ in range(msg_per_seg + 1):
        log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
    assert log.number_of_segments == 2, "There should be exactly 2 segments."
    assert [s.base_offset for s in log.log_segments()] == [0, 9]


def test_roll_segment_that_already_exists(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_ms=1 * 60 * 60))
    assert log.number_of_segments == 1

    # rolling the empty active segment at its own base offset recreates it
    log.roll(0)
    assert log.number_of_segments == 1
    assert log.active_segment.base_offset == 0

    now = mock_time.milliseconds()
    log.append_as_follower(MemoryRecords.with_records([(b"k1", b"v1", now)], base_offset=0,
                                                      partition_leader_epoch=0))
    assert log.number_of_segments == 1
    assert log.active_segment.base_offset == 0
    log.append_as_follower(MemoryRecords.with_records([(b"k2", b"v2", now + 10)], base_offset=1,
                                                      partition_leader_epoch=0))
    assert log.log_end_offset == 2
    assert first_batch(log.read(0, 1)).last_offset == 0
    assert first_batch(log.read(1, 1)).last_offset == 1

    log.roll()
    assert log.active_segment.base_offset == 2, "the active segment's base offset is the LEO"
    assert log.number_of_segments == 2

    # a full offset index forces a roll of the empty active segment on the next append
    log.active_segment.offset_index.resize(0)
    log.append_as_follower(MemoryRecords.with_records([(b"k3", b"v3", now + 12)], base_offset=2,
                                                      partition_leader_epoch=0))
    assert log.active_segment.offset_index.max_entries > 1
    assert first_batch(log.read(2, 1)).last_offset == 2
    assert log.number_of_segments == 2


def test_roll_empty_active_segment(create_log: LogFactory, log_dir: Path, mock_time: MockTime,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """LocalLogTest.testRollEmptyActiveSegment: the empty active segment is replaced, the old one deleted.

    As Kafka 3.8 does it (``createAndDeleteSegment``): the new segment takes the old one's place in the map
    before the old one goes, so a reader never finds the log without an active segment; the sizes of the map
    after each change to it during the roll are recorded to show it.
    """
    log = create_log()
    old_active = log.active_segment
    sizes: list[int] = []
    for name in ("add", "remove", "clear"):
        change = getattr(log.segments, name)

        def recorded(*args: Any, _change: Any = change) -> Any:
            result = _change(*args)
            sizes.append(len(log.segments))
            return result

        monkeypatch.setattr(log.segments, name, recorded)
    log.roll()
    monkeypatch.undo()
    assert sizes == [1]  # one change: the new segment put in the old one's place
    assert log.number_of_segments == 1
    assert log.active_segment is not old_active
    assert log.active_segment.base_offset == 0
    assert any(log_dir.iterdir())
    assert old_active.has_suffix(DELETED_FILE_SUFFIX)
    assert log_filename(log_dir, 0).exists()
    assert log_filename(log_dir, 0, DELETED_FILE_SUFFIX).exists()
    mock_time.sleep(log.config.file_delete_delay_ms)
    assert old_active.deleted()
    assert log_filename(log_dir, 0).exists()


def test_roll_segment_error_when_next_offset_is_illegal(create_log: LogFactory) -> None:
    """LocalLogTest.testRollSegmentErrorWhenNextOffsetIsIllegal: a roll below the active segment fails."""
    log = create_log()
    log.append_as_leader(MemoryRecords.with_records([(b"k1", b"v1"), (b"k2", b"v2"), (b"k3", b"v3")]))
    assert log.active_segment.base_offset == 0
    assert log.log_end_offset == 3
    log.roll()
    assert log.active_segment.base_offset == 3
    log._update_log_end_offset(1)  # Kafka: updateLogEndOffset(1L), to set the error up
    with pytest.raises(KafkaLogError):
        log.roll()
    assert [s.base_offset for s in log.log_segments()] == [0, 3]


def test_log_roll_after_log_handler_closed(create_log: LogFactory) -> None:
    log = create_log()
    log.close_handlers()
    with pytest.raises(KafkaStorageError):
        log.roll(1)


def test_an_append_rolled_to_a_new_segment_creates_its_index_files(create_log: LogFactory,
                                                                    mock_time: MockTime) -> None:
    """LogSegment.append (3.9.2) checks the last offset against the offset index (``canConvertToRelativeOffset``
    asks the index's ``canAppendOffset``), which opens it, and compares the timestamp with ``maxTimestampSoFar``,
    which opens the time index: the segment an append rolls to has both files once the append is written, though
    the roll itself opened neither (found by the oracle: ``tests/oracle/scenarios/rolled-segment-index-files.json``)."""
    log = create_log(config(segment_bytes=150))
    log.append_as_leader(singleton(b"x" * 40, timestamp=mock_time.milliseconds()), leader_epoch=0)
    log.append_as_leader(singleton(b"y" * 40, timestamp=mock_time.milliseconds()), leader_epoch=0)
    assert [s.base_offset for s in log.log_segments()] == [0, 1]
    assert index_filename(log.dir, 1).is_file()
    assert time_index_filename(log.dir, 1).is_file()


def test_close_leaves_the_recovery_point_where_the_last_flush_left_it(create_log: LogFactory, log_dir: Path,
                                                                      mock_time: MockTime) -> None:
    """UnifiedLog.close (3.9.2): a producer snapshot at the log end, then ``LocalLog.close`` (each segment's file
    forced and closed); the log itself is not flushed, so the recovery point stays where the last flush left it,
    and a clean reopen at that recovery point reads every record.  It is ``LogManager.shutdown`` that flushes
    each log before closing it (found by the oracle: the ``end`` state's ``recoveryPoint``).  So is a log opened
    under its log dir's lock (``dir_lock``), whose holder is that manager; a log that holds its dir itself flushes
    at close (:func:`test_a_log_holding_its_dir_itself_flushes_at_close_as_its_own_manager`)."""
    with DirLock(log_dir.parent) as lock:
        log = create_log(config(segment_bytes=200), dir_lock=lock)
        for i in range(6):
            log.append_as_leader(singleton(b"v%d" % i, timestamp=mock_time.milliseconds()), leader_epoch=0)
        log.flush()
        flushed = log.recovery_point
        log.append_as_leader(singleton(b"late", timestamp=mock_time.milliseconds()), leader_epoch=0)
        assert 0 < flushed < log.log_end_offset
        log.close()
        assert log.recovery_point == flushed
        reopened = create_log(config(segment_bytes=200), recovery_point=flushed, dir_lock=lock)
        assert reopened.log_end_offset == 7
        assert [r.value for r in reopened.records()] == [b"v%d" % i for i in range(6)] + [b"late"]
        reopened.close()


def test_a_log_holding_its_dir_itself_flushes_at_close_as_its_own_manager(
        create_log: LogFactory, log_dir: Path, mock_time: MockTime, caplog: pytest.LogCaptureFixture) -> None:
    """A log opened without ``dir_lock`` is its own LogManager: its close puts the clean-shutdown marker back, so
    it first does what ``LogManager.shutdown`` does to each log, ``flush(true)``.  The recovery point reaches the
    log end, and an empty active segment (just rolled) gets the index files a broker's shutdown leaves, trimmed to
    0 bytes; the next open finds them and logs no "Could not find offset index file" (Kafka logs that, at ERROR,
    only for a segment whose index really is missing, as it still is below)."""
    log = create_log(config(segment_bytes=200))
    log.append_as_leader(singleton(b"v", timestamp=mock_time.milliseconds()), leader_epoch=0)
    log.roll()
    assert log.active_segment.size() == 0
    assert not index_filename(log_dir, 1).exists()  # the lazy index of the new segment: no file yet
    log.close()
    assert log.recovery_point == log.log_end_offset == 1
    assert index_filename(log_dir, 1).stat().st_size == 0
    assert time_index_filename(log_dir, 1).stat().st_size == 0
    caplog.set_level(logging.INFO, logger="kafkalog")
    reopened = create_log(config(segment_bytes=200))
    assert not [r for r in caplog.records if "Could not find offset index file" in r.getMessage()]
    assert reopened.load_report.rebuilt_indexes == []
    assert [r.value for r in reopened.records()] == [b"v"]
    reopened.close()

    index_filename(log_dir, 0).unlink()  # really missing, on a segment that holds a batch
    caplog.clear()
    again = create_log(config(segment_bytes=200))
    missing = [r for r in caplog.records if "Could not find offset index file" in r.getMessage()]
    assert len(missing) == 1 and missing[0].levelno == logging.ERROR
    assert str(log_dir / "00000000000000000000.log") in missing[0].getMessage()
    assert again.load_report.rebuilt_indexes == [(0, "offset index missing")]

def _compacted_with_deletions_pending(create_log: LogFactory, mock_time: MockTime) -> Log:
    """A compacted log whose replaced segments wait as ``.deleted`` files, ``file.delete.delay.ms`` a day away,
    and two segments removed by retention, the second one's producer snapshot waiting too."""
    log = create_log(config(segment_bytes=300, cleanup_policy="compact,delete", file_delete_delay_ms=86_400_000,
                            min_cleanable_dirty_ratio=0.0))
    for i in range(40):
        log.append_as_leader(MemoryRecords.with_records([(b"k%d" % (i % 3), b"v%d" % i, mock_time.milliseconds())],
                                                        producer_id=7, producer_epoch=0, base_sequence=i),
                             leader_epoch=0)
    assert compact(log)
    log.high_watermark = log.log_end_offset
    assert log.maybe_increment_log_start_offset(log.log_segments()[2].base_offset)
    assert log.delete_old_segments() == 2
    waiting = sorted(p.name for p in log.dir.glob("*.deleted"))
    assert any(name.endswith(".log.deleted") for name in waiting)
    assert any(name.endswith(".snapshot.deleted") for name in waiting)
    return log


def test_close_finishes_the_deletions_it_scheduled(create_log: LogFactory, mock_time: MockTime) -> None:
    """Kafka's close leaves the ``.deleted`` files to the broker's next start (its scheduler drops the delayed
    "delete-file" and "delete-producer-snapshot" tasks at shutdown); kafkalog's close deletes them, however far
    ``file.delete.delay.ms`` is, so a compaction that ends with a close does not leave the disk doubled.  The
    tasks, should they run later, find nothing left to do."""
    log = _compacted_with_deletions_pending(create_log, mock_time)
    kept = [(r.offset, r.value) for r in log.records()]
    log.close()
    assert list(log.dir.glob("*.deleted")) == []
    assert log.undeleted_files == []
    mock_time.sleep(86_400_001)  # the tasks' time comes: they run, and delete nothing more
    reopened = create_log(log.config)
    assert reopened.load_report.removed_files == []
    assert [(r.offset, r.value) for r in reopened.records()] == kept


def test_close_says_which_files_it_could_not_delete(create_log: LogFactory, mock_time: MockTime,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A waiting file that cannot be deleted (here a directory stands at its name, which no unlink removes) is
    named in a warning, with the reason, and in ``undeleted_files``; the other files still go, and the close
    succeeds."""
    log = _compacted_with_deletions_pending(create_log, mock_time)
    victim = next(log.dir.glob("*.log.deleted"))
    victim.rename(victim.with_name(victim.name + ".moved"))
    victim.mkdir()
    (victim / "inside").write_bytes(b"x")
    caplog.set_level(logging.WARNING, logger="kafkalog")
    log.close()
    assert [(f.path, "Is a directory" in f.reason) for f in log.undeleted_files] == [(victim, True)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(victim) in warnings[0] and "Is a directory" in warnings[0]
    assert sorted(p.name for p in log.dir.glob("*.deleted")) == [victim.name]


# -- appending and reading ------------------------------------------------------------------------------


def test_load_empty_log(create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    create_empty_logs(log_dir, 0)
    log = create_log()
    info = log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
    assert (info.first_offset, info.last_offset) == (0, 0)
    assert log.log_end_offset == 1
    assert first_record(log.read(0, 4096)).value == b"test"


def test_append_and_read_with_sequential_offsets(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=71))
    values = [str(i).encode() for i in range(0, 100, 2)]
    for value in values:
        log.append_as_leader(singleton(value))
    assert log.number_of_segments == len(values)
    for i, value in enumerate(values):
        batch = first_batch(log.read(i, 1))
        assert batch.last_offset == i, "Offset read should match order appended."
        record = batch.records()[0]
        assert record.key is None
        assert record.value == value
    assert list(log.read(len(values), 100).records.batches()) == [], \
        "Reading beyond the last message returns nothing."


MESSAGE_IDS = [*range(50), *range(50, 200, 7)]


def append_non_sequential(log: Log) -> list[bytes]:
    """Follower appends of one record each at the offsets of ``MESSAGE_IDS`` (gaps after 49)."""
    values = [str(i).encode() for i in MESSAGE_IDS]
    for offset, value in zip(MESSAGE_IDS, values, strict=True):
        log.append_as_follower(MemoryRecords.with_records([(None, value)], base_offset=offset,
                                                          partition_leader_epoch=0))
    return values


def next_id_index(offset: int) -> int:
    return next(i for i, message_id in enumerate(MESSAGE_IDS) if message_id >= offset)


def test_append_and_read_with_non_sequential_offsets(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=72))
    values = append_non_sequential(log)
    assert log.log_end_offset == MESSAGE_IDS[-1] + 1
    for i in range(50, max(MESSAGE_IDS)):
        idx = next_id_index(i)
        record = first_record(log.read(i, 100))
        assert record.offset == MESSAGE_IDS[idx], "Offset read should match message id."
        assert (record.key, record.value, record.timestamp) == (None, values[idx], NO_TIMESTAMP)


def test_read_at_log_gap(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=300))
    while log.number_of_segments == 1:
        log.append_as_leader(singleton(b"42"))
    # cut all but one message off the first segment: offsets 1.. are then only in the second segment
    log.log_segments()[0].truncate_to(1)
    assert first_batch(log.read(1, 200)).last_offset == log.log_end_offset - 1


def test_read_with_min_message(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=72))
    values = append_non_sequential(log)
    for i in range(50, max(MESSAGE_IDS)):
        idx = next_id_index(i)
        for max_length in (1, 100000, 100):
            record = first_record(log.read(i, max_length))
            assert record.offset == MESSAGE_IDS[idx]
            assert record.value == values[idx]


def test_read_with_too_small_max_length(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=72))
    append_non_sequential(log)
    for i in range(50, max(MESSAGE_IDS)):
        empty = log.read(i, 0, min_one_message=False)
        assert empty.records is EMPTY_RECORDS
        assert empty.records.size_in_bytes() == 0
        # one byte of the batch, flagged incomplete (how fetch v2 and older learn the batch is too big)
        fetch = log.read(i, 1, min_one_message=False)
        assert fetch.first_entry_incomplete
        assert isinstance(fetch.records, FileMessageSet)
        assert fetch.records.size_in_bytes() == 1


def test_read_out_of_range(create_log: LogFactory, log_dir: Path) -> None:
    create_empty_logs(log_dir, 1024)
    log = create_log(config(segment_bytes=1024))
    assert (log.log_start_offset, log.log_end_offset) == (1024, 1024)
    log.append_as_leader(singleton(b"42"))
    assert log.read(1025, 1000).records.size_in_bytes() == 0, "Reading at the LEO gives 0 bytes"
    assert first_record(log.read(1024, 1000)).offset == 1024
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1000)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1026, 1000)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1023, 1000)


def test_log_rolls(create_log: LogFactory, mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=100))
    num_messages = 100
    now = mock_time.milliseconds()
    message_sets = [singleton(str(i).encode(), timestamp=now) for i in range(num_messages)]
    for records in message_sets:
        log.append_as_leader(records)
    log.flush()
    assert log.number_of_segments == num_messages

    offset = 0
    for i in range(num_messages):
        head = first_batch(log.read(offset, 1024 * 1024))
        assert head.last_offset == offset
        expected = next(iter(message_sets[i].records()))
        actual = head.records()[0]
        assert actual.as_tuple()[1:] == expected.as_tuple()[1:]  # key, value, timestamp and headers
        offset = head.last_offset + 1
    assert list(log.read(num_messages, 1024 * 1024).records.records()) == [], "Should be no more messages"
    # the roll flushed the previous segments (asynchronously: the mock scheduler ran it)
    assert log.recovery_point >= log.active_segment.base_offset


def test_high_watermark_bounded_read_after_segment_roll(create_log: LogFactory, mock_time: MockTime) -> None:
    """UnifiedLogTest.testHighWatermarkMetadataUpdatedAfterSegmentRoll, reading up to the high watermark."""
    log = create_log(config(segment_bytes=1024 * 1024))
    now = mock_time.milliseconds()
    records = MemoryRecords.with_records([(key, b"value", now) for key in (b"a", b"b", b"c")])

    def assert_fetch(fetch_offset: int, expected_size: int, expected_offsets: list[int]) -> None:
        fetch = log.read(fetch_offset, 2048, max_offset=log.high_watermark, min_one_message=False)
        assert fetch.records.size_in_bytes() == expected_size
        assert [r.offset for r in fetch.records.records()] == expected_offsets

    log.high_watermark = 0  # Kafka's initial high watermark
    log.append_as_leader(records)
    assert_fetch(0, 0, [])
    log.high_watermark = log.log_end_offset
    assert_fetch(0, records.size_in_bytes(), [0, 1, 2])
    log.roll()
    assert_fetch(0, records.size_in_bytes(), [0, 1, 2])
    log.append_as_leader(records)
    assert_fetch(3, 0, [])


def test_compressed_messages(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=110))
    log.append_as_leader(MemoryRecords.with_records([(None, b"hello"), (None, b"there")], compression="gzip"))
    log.append_as_leader(MemoryRecords.with_records([(None, b"alpha"), (None, b"beta")], compression="gzip"))

    def read(offset: int) -> Any:
        return first_record(log.read(offset, 4096))

    # a read inside a compressed batch returns the batch's first record
    assert read(0).offset == 0
    assert read(1).offset == 0
    assert read(2).offset == 2
    assert read(3).offset == 2
    assert [r.value for r in log.records()] == [b"hello", b"there", b"alpha", b"beta"]


def test_append_message_with_null_payload(create_log: LogFactory) -> None:
    log = create_log()
    log.append_as_leader(singleton(None))
    head = first_record(log.read(0, 4096))
    assert head.offset == 0
    assert head.value is None, "Message payload should be null."


def test_append_with_out_of_order_offsets_throws_exception(create_log: LogFactory,
                                                            mock_time: MockTime) -> None:
    log = create_log()
    now = mock_time.milliseconds()
    buffer = b"".join(
        bytes(MemoryRecords.with_records([(b"key", b"value")], base_offset=offset,
                                         timestamp_type="LogAppendTime", log_append_time=now,
                                         producer_id=1, producer_epoch=0, base_sequence=0,
                                         partition_leader_epoch=0).buffer)
        for offset in (0, 1, 3, 2, 4))
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(MemoryRecords(buffer))
    assert log.log_end_offset == 0
    assert log.size == 0


def test_append_below_expected_offset_throws_exception(create_log: LogFactory) -> None:
    log = create_log()
    for value in (b"0", b"1"):
        log.append_as_leader(MemoryRecords.with_records([(None, value)]))
    for magic in (0, 1, 2):
        for compression in ("none", "lz4"):
            invalid = MemoryRecords.with_records([(None, b"1")], magic=magic, compression=compression)
            with pytest.raises(UnexpectedAppendOffsetError, match="less than the next offset"):
                log.append_as_follower(invalid)
    assert log.log_end_offset == 2


def test_message_set_size_check(create_log: LogFactory) -> None:
    """testMessageSetSizeCheck: an append larger than segment.bytes is Kafka's RecordBatchTooLargeException, not
    the RecordTooLargeException of a batch past max.message.bytes."""
    message_set = MemoryRecords.with_records([(None, b"You"), (None, b"bethe")])
    log = create_log(config(segment_bytes=message_set.size_in_bytes() - 1))
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_leader(message_set)
    assert log.log_end_offset == 0


def test_message_size_check(create_log: LogFactory) -> None:
    first = MemoryRecords.with_records([(None, b"You"), (None, b"bethe")])
    second = MemoryRecords.with_records([(None, b"change (I need more bytes)... blah blah blah."),
                                         (None, b"More padding boo hoo")])
    log = create_log(config(max_message_bytes=second.size_in_bytes() - 1))
    log.append_as_leader(first)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(second)
    assert log.log_end_offset == 2


def test_message_size_check_in_append_as_follower(create_log: LogFactory) -> None:
    """A follower does not check max.message.bytes: the leader accepted the batch (UnifiedLog.appendAsFollower
    passes ignoreRecordSize = true)."""
    first = MemoryRecords.with_records([(None, b"You"), (None, b"bethe")], base_offset=0,
                                       partition_leader_epoch=0)
    second = MemoryRecords.with_records([(None, b"change (I need more bytes)... blah blah blah."),
                                         (None, b"More padding boo hoo")], base_offset=5,
                                        partition_leader_epoch=0)
    log = create_log(config(max_message_bytes=second.size_in_bytes() - 1))
    log.append_as_follower(first)
    log.append_as_follower(second)
    assert log.log_end_offset == 7


def test_compacted_topic_constraints(create_log: LogFactory) -> None:
    keyed = (b"and here it is", b"this message has a key")
    another_keyed = (b"another key", b"this message also has a key")
    unkeyed = (None, b"this message does not have a key")
    log = create_log(config(cleanup_policy="compact"))
    prefix = "Compacted topic cannot accept message without key"

    for records, batch_index in (([unkeyed, keyed], 0), ([unkeyed], 0), ([keyed, unkeyed], 1)):
        compression = "gzip" if batch_index == 1 else "none"
        with pytest.raises(RecordValidationError) as caught:
            log.append_as_leader(MemoryRecords.with_records(records, compression=compression))
        assert len(caught.value.record_errors) == 1
        assert caught.value.record_errors[0].batch_index == batch_index
        assert caught.value.record_errors[0].message.startswith(prefix)
    assert log.log_end_offset == 0

    log.append_as_leader(MemoryRecords.with_records([keyed]))
    log.append_as_leader(MemoryRecords.with_records([keyed, another_keyed]))
    log.append_as_leader(MemoryRecords.with_records([keyed], compression="gzip"))
    assert log.log_end_offset == 4


# -- truncation -----------------------------------------------------------------------------------------


def test_truncate_to(create_log: LogFactory, mock_time: MockTime) -> None:
    def records() -> MemoryRecords:
        return singleton(b"test", timestamp=mock_time.milliseconds())

    set_size = records().size_in_bytes()
    msg_per_seg = 10
    log = create_log(config(segment_bytes=msg_per_seg * set_size))
    assert log.number_of_segments == 1
    for _ in range(msg_per_seg):
        log.append_as_leader(records())
    assert log.number_of_segments == 1
    assert log.log_end_offset == msg_per_seg

    last_offset = log.log_end_offset
    size = log.size
    assert log.truncate_to(log.log_end_offset) is False  # keep the entire log
    assert (log.log_end_offset, log.size) == (last_offset, size)
    assert log.truncate_to(log.log_end_offset + 1) is False  # beyond the end
    assert (log.log_end_offset, log.size) == (last_offset, size)
    assert log.truncate_to(msg_per_seg // 2) is True  # somewhere in between
    assert log.log_end_offset == msg_per_seg // 2
    assert log.size < size
    assert log.truncate_to(0) is True  # the entire log
    assert (log.log_end_offset, log.size) == (0, 0)

    for _ in range(msg_per_seg):
        log.append_as_leader(records())
    assert (log.log_end_offset, log.size) == (last_offset, size)
    log.truncate_fully_and_start_at(log.log_end_offset - (msg_per_seg - 1))
    assert (log.log_end_offset, log.size) == (last_offset - (msg_per_seg - 1), 0)
    assert log.log_start_offset == 1

    for _ in range(msg_per_seg):
        log.append_as_leader(records())
    assert log.log_end_offset > msg_per_seg
    assert log.size == size
    assert log.truncate_to(0) is True  # before the first offset of the log
    assert (log.log_end_offset, log.size) == (0, 0)
    assert log.log_start_offset == 0
    with pytest.raises(IllegalArgumentError):
        log.truncate_to(-1)


def test_index_resizing_at_truncation(create_log: LogFactory, mock_time: MockTime) -> None:
    set_size = singleton(b"test", timestamp=mock_time.milliseconds()).size_in_bytes()
    msg_per_seg = 10
    log = create_log(config(segment_bytes=msg_per_seg * set_size, index_interval_bytes=set_size - 1))
    assert log.number_of_segments == 1
    for i in range(1, msg_per_seg + 1):
        log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds() + i))
    assert log.number_of_segments == 1

    mock_time.sleep(msg_per_seg)
    for i in range(1, msg_per_seg + 1):
        log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds() + i))
    assert log.number_of_segments == 2
    expected_entries = msg_per_seg - 1
    first = log.log_segments()[0]
    assert first.offset_index.max_entries == expected_entries
    assert first.time_index.max_entries == expected_entries

    log.truncate_to(0)
    assert log.number_of_segments == 1
    first = log.log_segments()[0]
    assert first.offset_index.max_entries == log.config.max_index_size // 8 == DEFAULT_MAX_INDEX_SIZE // 8
    assert first.time_index.max_entries == log.config.max_index_size // 12

    mock_time.sleep(msg_per_seg)
    for i in range(1, msg_per_seg + 1):
        log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds() + i))
    assert log.number_of_segments == 1


# -- retention and deletion -----------------------------------------------------------------------------


def test_that_garbage_collecting_segments_doesnt_change_offset(create_log: LogFactory, log_dir: Path,
                                                               mock_time: MockTime) -> None:
    for messages_to_append in (0, 1, 25):
        log = create_log(config(segment_bytes=100, retention_ms=0))
        for i in range(messages_to_append):
            log.append_as_leader(singleton(str(i).encode(), timestamp=mock_time.milliseconds() - 10))
        curr_offset = log.log_end_offset
        assert curr_offset == messages_to_append

        log.high_watermark = curr_offset
        log.delete_old_segments()
        assert log.log_end_offset == curr_offset, "Deleting segments shouldn't change the logEndOffset"
        assert log.number_of_segments == 1, "We should still have one segment left"
        assert log.delete_old_segments() == 0, "Further collection shouldn't delete anything"
        assert log.log_end_offset == curr_offset
        assert log.log_start_offset == curr_offset
        info = log.append_as_leader(singleton(b"hello", timestamp=mock_time.milliseconds()))
        assert info.first_offset == curr_offset, "the next append gets the log end offset"

        log.delete()
        mock_time.sleep(log.config.file_delete_delay_ms + 1)


def test_async_delete(create_log: LogFactory, mock_time: MockTime) -> None:
    def records() -> MemoryRecords:
        return singleton(b"test", timestamp=mock_time.milliseconds() - 1000)

    async_delete_ms = 1000
    log = create_log(config(segment_bytes=records().size_in_bytes() * 5, segment_index_bytes=1000,
                            index_interval_bytes=10000, retention_ms=999,
                            file_delete_delay_ms=async_delete_ms))
    for _ in range(100):
        log.append_as_leader(records())
    assert log.number_of_segments == 20

    segments = log.log_segments()
    old_files = [s.log.file for s in segments] + [s.offset_index.file for s in segments]
    assert all(f.exists() for f in old_files)

    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments() == 20
    assert log.number_of_segments == 1, "Only one segment should remain."
    assert log.active_segment.base_offset == 100
    deleted_files = [s.log.file for s in segments] + [s.offset_index.file for s in segments]
    assert all(f.name.endswith(DELETED_FILE_SUFFIX) for f in deleted_files), "files should end in .deleted"
    assert all(f.exists() for f in deleted_files), "The .deleted files should still be there."
    assert not any(f.exists() for f in old_files), "The original file should be gone."

    mock_time.sleep(async_delete_ms - 1)
    assert all(f.exists() for f in deleted_files), "not before file.delete.delay.ms"
    mock_time.sleep(2)
    assert not any(f.exists() for f in deleted_files), "Files should all be gone."


def test_delete_old_segments(create_log: LogFactory, mock_time: MockTime) -> None:
    def records() -> MemoryRecords:
        return singleton(b"test", timestamp=mock_time.milliseconds() - 1000)

    log = create_log(config(segment_bytes=records().size_in_bytes() * 5, segment_index_bytes=1000,
                            retention_ms=999))
    for _ in range(100):
        log.append_as_leader(records(), leader_epoch=0)

    log.maybe_assign_epoch_start_offset(0, 40)
    log.maybe_assign_epoch_start_offset(1, 90)

    # nothing is deleted while the high watermark is still at Kafka's initial 0
    log.high_watermark = 0
    num_segments = log.number_of_segments
    assert log.delete_old_segments() == 0
    assert log.number_of_segments == num_segments
    assert log.log_start_offset == 0

    # only segments wholly below the high watermark go
    for hw in range(25, 31):
        log.high_watermark = hw
        log.delete_old_segments()
        assert log.log_start_offset <= hw
        for segment in log.log_segments():
            fetch = segment.read(segment.base_offset, INT32_MAX)
            offsets = [r.offset for r in fetch.records.records()] if fetch is not None else []
            if offsets:
                assert offsets[-1] >= hw

    # expire all segments
    log.high_watermark = log.log_end_offset
    log.delete_old_segments()
    assert log.number_of_segments == 1, "The deleted segments should be gone."
    assert log.log_start_offset == 100
    assert log.leader_epoch_cache is not None
    assert len(log.leader_epoch_cache.epoch_entries()) == 1, "Epoch entries should have gone."
    assert log.leader_epoch_cache.epoch_entries()[0] == EpochEntry(1, 100), \
        "Epoch entry should be the latest epoch and the leo."

    for _ in range(100):
        log.append_as_leader(records(), leader_epoch=0)
    log.delete()
    assert log.number_of_segments == 0
    assert log.delete_old_segments() == 0, "The number of deleted segments should be zero."
    assert log.leader_epoch_cache.epoch_entries() == [], "Epoch entries should have gone."


def test_log_deletion_after_delete_records(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=singleton(b"test").size_in_bytes() * 5))
    for _ in range(15):
        log.append_as_leader(singleton(b"test"))
    assert log.number_of_segments == 3
    assert log.log_start_offset == 0
    log.high_watermark = log.log_end_offset

    for start, segments in ((1, 3), (6, 2), (15, 1)):
        assert log.maybe_increment_log_start_offset(start) is True
        log.delete_old_segments()
        assert log.number_of_segments == segments
        assert log.log_start_offset == start
    with pytest.raises(OffsetOutOfRangeError):
        log.read(14, 100)


def test_cannot_increment_log_start_offset_past_high_watermark(create_log: LogFactory) -> None:
    log = create_log(config(segment_bytes=512, segment_index_bytes=1000, retention_ms=999))
    for i in range(100):
        log.append_as_leader(singleton(f"test{i}".encode()))
    log.high_watermark = 25
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(26)
    assert log.maybe_increment_log_start_offset(25) is True
    assert log.log_start_offset == 25


def test_cannot_delete_segments_at_or_above_high_watermark(create_log: LogFactory,
                                                            mock_time: MockTime) -> None:
    log = create_log(config(segment_bytes=512, segment_index_bytes=1000, retention_ms=999))
    expired = mock_time.milliseconds() - 1000
    for i in range(100):
        log.append_as_leader(singleton(f"test{i}".encode(), timestamp=expired))
    assert log.number_of_segments > 5
    log.high_watermark = 0  # Kafka's initial high watermark
    assert (log.high_watermark, log.log_start_offset, log.log_end_offset) == (0, 0, 100)

    for hw in range(101):
        log.high_watermark = hw
        assert log.high_watermark == hw
        log.delete_old_segments()
        assert log.log_start_offset <= hw
        segments = log.log_segments()
        if segments:
            assert log.log_start_offset <= segments[0].base_offset <= hw
        for segment in segments[1:]:
            assert segment.base_offset > hw
            assert segment.base_offset >= log.log_start_offset

    assert log.log_start_offset == 100
    assert log.number_of_segments == 1
    assert log.active_segment.size() == 0


def test_should_delete_size_based_segments(create_log: LogFactory) -> None:
    size = singleton(b"test").size_in_bytes()
    log = create_log(config(segment_bytes=size * 5, retention_bytes=size * 10))
    for _ in range(15):
        log.append_as_leader(singleton(b"test"))
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments() == 1
    assert log.number_of_segments == 2, "should have 2 segments"
    assert log.log_start_offset == 5


def test_should_not_delete_size_based_segments_when_under_retention_size(create_log: LogFactory) -> None:
    size = singleton(b"test").size_in_bytes()
    log = create_log(config(segment_bytes=size * 5, retention_bytes=size * 15))
    for _ in range(15):
        log.append_as_leader(singleton(b"test"))
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments() == 0
    assert log.number_of_segments == 3, "should have 3 segments"


def test_should_delete_time_based_segments_ready_to_be_deleted(create_log: LogFactory) -> None:
    size = singleton(b"test", timestamp=10).size_in_bytes()
    log = create_log(config(segment_bytes=size * 5, retention_ms=10000))
    for _ in range(15):
        log.append_as_leader(singleton(b"test", timestamp=10))
    log.high_watermark = log.log_end_offset
    log.delete_old_segments()
    assert log.number_of_segments == 1, "There should be 1 segment remaining"
    assert log.log_start_offset == 15


def test_should_not_delete_time_based_segments_when_none_ready_to_be_deleted(create_log: LogFactory,
                                                                             mock_time: MockTime) -> None:
    size = singleton(b"test", timestamp=mock_time.milliseconds()).size_in_bytes()
    log = create_log(config(segment_bytes=size * 5, retention_ms=10000000))
    for _ in range(15):
        log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments() == 0
    assert log.number_of_segments == 3, "There should be 3 segments remaining"


def test_should_not_delete_segments_when_policy_does_not_include_delete(create_log: LogFactory,
                                                                        mock_time: MockTime) -> None:
    size = singleton(b"test", key=b"test", timestamp=10).size_in_bytes()
    log = create_log(config(segment_bytes=size * 5, retention_ms=10000, cleanup_policy="compact"))
    for _ in range(15):
        log.append_as_leader(singleton(b"test", key=b"test", timestamp=10))
    # the oldest segment is older than retention.ms
    log.log_segments()[0].set_last_modified(mock_time.milliseconds() - 20000)
    segments = log.number_of_segments
    assert segments == 3
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments() == 0
    assert log.number_of_segments == segments


def test_should_delete_segments_ready_to_be_deleted_when_cleanup_policy_is_compact_and_delete(
        create_log: LogFactory) -> None:
    size = singleton(b"test", key=b"test", timestamp=10).size_in_bytes()
    log = create_log(config(segment_bytes=size * 5, retention_ms=10000, cleanup_policy="compact,delete"))
    for _ in range(15):
        log.append_as_leader(singleton(b"test", key=b"test", timestamp=10))
    log.high_watermark = log.log_end_offset
    log.delete_old_segments()
    assert log.number_of_segments == 1, "There should be 1 segment remaining"


def test_should_delete_start_offset_breached_segments_when_policy_does_not_include_delete(
        create_log: LogFactory) -> None:
    records_per_segment = 5
    size = singleton(b"test", key=b"test", timestamp=10).size_in_bytes()
    log = create_log(config(segment_bytes=size * records_per_segment, retention_ms=10000,
                            cleanup_policy="compact"))
    for _ in range(15):
        log.append_as_leader(singleton(b"test", key=b"test", timestamp=10))
    assert log.number_of_segments == 3
    log.high_watermark = log.log_end_offset
    log.maybe_increment_log_start_offset(records_per_segment)
    log.delete_old_segments()
    assert log.number_of_segments == 2, "There should be 2 segments remaining"
    segments = log.log_segments()
    assert segments[0].base_offset <= log.log_start_offset
    assert all(s.base_offset > log.log_start_offset for s in segments[1:])


# -- offset overflow ------------------------------------------------------------------------------------


def test_split_on_offset_overflow(create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    initialize_log_dir_with_overflowed_segment(log_dir)
    log = create_log(config(index_interval_bytes=1, file_delete_delay_ms=1000), recovery_point=LONG_MAX)
    segment = first_overflow_segment(log)
    assert segment is not None, "At least one segment must have offset overflow"
    assert segment.base_offset == INT32_MAX
    before = all_records(log)
    assert len(before) == 16

    new_segments = log.split_overflowed_segment(segment)
    assert [s.base_offset for s in new_segments] == [INT32_MAX, 2 * INT32_MAX + 1]
    assert log.number_of_segments == 4
    assert [s.base_offset for s in log.log_segments()] == [0, INT32_MAX, 2 * INT32_MAX + 1, 3 * INT32_MAX]
    assert all_records(log) == before
    assert first_overflow_segment(log) is None
    assert not any(p.name.endswith((".cleaned", ".swap")) for p in log_dir.iterdir())
    mock_time.sleep(1001)
    assert not any(p.name.endswith(DELETED_FILE_SUFFIX) for p in log_dir.iterdir())
    with pytest.raises(IllegalArgumentError):
        log.split_overflowed_segment(log.log_segments()[1])


@pytest.mark.parametrize(("segment_base", "batches"), [
    # every batch of the segment overflows: one new segment
    (0, [(INT32_MAX + 1, [b"a"]), (INT32_MAX + 2, [b"b"])]),
    # the only batch's first offset fits but its last does not
    (0, [(INT32_MAX - 1, [b"a", b"b", b"c"])]),
], ids=["degenerate", "out-of-range-batch-last-offset"])
def test_degenerate_segment_split(create_log: LogFactory, log_dir: Path, segment_base: int,
                                  batches: list[tuple[int, list[bytes]]]) -> None:
    """testDegenerateSegmentSplit and UnifiedLogTest.testDegenerateSegmentSplitWithOutOfRangeBatchLastOffset: a
    segment whose every batch overflows, or whose only batch's last offset does, splits into one segment."""
    log_dir.mkdir()
    with FileMessageSet.open(log_filename(log_dir, segment_base)) as file:
        for base_offset, values in batches:
            file.append(MemoryRecords.with_records([(None, v) for v in values], base_offset=base_offset,
                                                   partition_leader_epoch=0))
    index_filename(log_dir, segment_base).touch()
    time_index_filename(log_dir, segment_base).touch()
    log = create_log(config(index_interval_bytes=1, file_delete_delay_ms=1000), recovery_point=LONG_MAX)
    segment = first_overflow_segment(log)
    assert segment is not None
    before = all_records(log)
    log.split_overflowed_segment(segment)
    assert log.number_of_segments == 1
    assert log.active_segment.base_offset == batches[0][0]
    assert all_records(log) == before
    assert first_overflow_segment(log) is None


def test_a_reader_never_finds_the_log_without_an_active_segment_or_with_a_stale_start(
        create_log: LogFactory, mock_time: MockTime) -> None:
    """Kafka 3.x's orders: ``truncateFullyAndStartAt`` adds the new segment before the last old one leaves
    (``createAndDeleteSegment``), and ``deleteSegments`` moves the log start offset before the segments leave
    the map.  Checked at every removal from the segment map, as a concurrent reader would see it."""
    log = create_log(config(segment_bytes=300, retention_ms=60_000))
    now = mock_time.milliseconds()
    for i in range(40):
        # the first records are older than retention.ms: their segments are deleted by time
        log.append_as_leader(singleton(f"value {i}".encode(), timestamp=now - 120_000 if i < 12 else now),
                             leader_epoch=0)
    assert log.number_of_segments > 3
    seen: list[tuple[int, int, int]] = []
    remove = log.segments.remove

    def watching(base_offset: int) -> None:
        seen.append((base_offset, len(log.segments), log.log_start_offset))
        remove(base_offset)

    log.segments.remove = watching  # type: ignore[method-assign]
    log.high_watermark = log.log_end_offset
    deleted = log.delete_old_segments()
    assert deleted >= 1 and log.log_start_offset > 0
    # at every removal the start offset had already moved past the removed segments
    assert len(seen) == deleted and all(start == log.log_start_offset for _base, _count, start in seen)
    seen.clear()
    log.truncate_fully_and_start_at(100)
    assert seen and all(count >= 2 for _base, count, _start in seen)  # one always stays after the removal
    assert [s.base_offset for s in log.log_segments()] == [100] and log.log_end_offset == 100
    # the same base offset: the old files become .deleted before the new ones take their names
    log.append_as_leader(singleton(b"again", timestamp=mock_time.milliseconds()), leader_epoch=0)
    log.truncate_fully_and_start_at(100)
    assert [s.base_offset for s in log.log_segments()] == [100] and log.log_end_offset == 100
    assert log.active_segment.size() == 0 and log.dir.joinpath(f"{100:020d}.log.deleted").exists()
    mock_time.sleep(log.config.file_delete_delay_ms + 1)
    assert sorted(p.name for p in log.dir.glob("*.deleted")) == []
