"""Loading and recovering a Log against Kafka's LogLoaderTest (core 3.8.0; in LogTest for 0.10.1.1), spec
§3.10, §3.11, §3.18 and §7.7.

Logs are made as Kafka's ``LogLoaderTest.createLog`` makes them: in a directory ``topic-0``, with a
:class:`MockTime` whose scheduler runs the deferred deletions when the test sleeps, log start offset 0,
recovery point 0 and a clean last shutdown unless the test says otherwise (``had_clean_shutdown=False`` is
Kafka's ``lastShutdownClean = false``).  A crash is simulated as Kafka does: by closing the log (or only its
handles, ``close_handlers``) and opening it again unclean, after changing files by hand.

The split-crash cases (testRecoveryAfterCrashDuringSplitPhase1-5) build the on-disk state of each phase of
the ``.cleaned`` -> ``.swap`` -> live protocol by hand, as Kafka's test does: a real split, then renaming its
output back to ``.cleaned``/``.swap`` and the replaced segment's ``.deleted`` files back to live names.

Beyond Kafka's cases: a read-only open of a log left by a crash changes no byte and refuses every write, and a
log of 300 segments reopened after a clean close maps only the indexes it uses.

The leader-epoch cases (testLogRecoversForLeaderEpoch, testLeaderEpochCacheClearedAfterStaticMessageFormatDowngrade)
are in ``test_log_leader_epochs.py``.

Kafka tests not ported:

- ``testSkipLoadingIfEmptyProducerStateBeforeTruncation``,
  ``testSkipTruncateAndReloadIfOldMessageFormatAndNoCleanShutdown``,
  ``testSkipTruncateAndReloadIfOldMessageFormatAndCleanShutdown``,
  ``testSkipTruncateAndReloadIfNewMessageFormatAndCleanShutdown``: each counts the calls a mocked
  ProducerStateManager gets while the log loads (and appends and truncates), with stubbed answers a real manager
  does not give (a map end offset of 0 after two appends); the branches they cover (the upgrade shortcut, the
  skipped reload of an empty state) are checked on real logs by testInitializationOfProducerSnapshotsUpgradePath,
  testProducerSnapshotsRecoveryAfterUncleanShutdown* and testProducerIdMapTruncateToWithNoSnapshots.
- ``testLogStartOffsetWhenRemoteStorageIsEnabled``: the loader's remote-storage mode, where the log start
  offset is the checkpoint's even below the first local segment; kafkalog has no tiered storage (its other
  case, the first segment's base when the checkpoint is lower, is what test_open_deletes_obsolete_files and
  test_log_end_less_than_start_after_reopen rely on).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import kafkalog.log.unified_log
from kafkalog import MemoryRecords
from kafkalog.checkpoint import EpochEntry, LeaderEpochCheckpoint
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalArgumentError, KafkaStorageError, ReadOnlyError
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import (
    CLEAN_SHUTDOWN_FILE,
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    index_filename,
    log_filename,
    producer_snapshot_filename,
    time_index_filename,
    txn_index_filename,
)
from kafkalog.index import OffsetIndex
from kafkalog.log import Log
from kafkalog.log.loader import LoadedLogOffsets, LogLoader
from kafkalog.log.transactions import TransactionState
from kafkalog.log_dir_failure_channel import LogDirFailureChannel
from kafkalog.manager.log_manager import LogManager
from kafkalog.producer_state import DEFAULT_PRODUCER_ID_EXPIRATION_MS
from kafkalog.record import ControlRecordType
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from kafkalog.topic import TopicPartition, log_delete_dir_name
from kafkalog.transaction_index import AbortedTxn
from tests.support.log_test_utils import (
    LogFactory,
    append_end_txn_marker_as_leader,
    append_mixed_transactions,
    config,
    first_overflow_segment,
    initialize_log_dir_with_overflowed_segment,
    singleton,
)

INT32_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1

def first_batch(log: Log, offset: int, max_length: int = 100) -> Any:
    return next(iter(log.read(offset, max_length).records.batches()))


def segment_records(log: Log) -> list[tuple[Any, ...]]:
    """Every record of every segment, read from the files (Kafka: ``logSegments.flatMap(_.log.records)``)."""
    return [r.as_tuple() for segment in log.log_segments() for r in segment.log.records()]


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
def rng() -> random.Random:
    return random.Random(20240701)


# -- recovery to the right offset -----------------------------------------------------------------------


def append_random(log: Log, mock_time: MockTime, rng: random.Random, count: int, size: int) -> None:
    """``count`` records of ``size`` random bytes, timestamps ``now + i * 10``."""
    now = mock_time.milliseconds()
    for i in range(count):
        log.append_as_leader(singleton(rng.randbytes(size), timestamp=now + i * 10))


def test_log_recovers_to_correct_offset(create_log: LogFactory, mock_time: MockTime,
                                        rng: random.Random) -> None:
    num_messages = 100
    message_size = 100
    log_config = config(segment_bytes=7 * message_size, index_interval_bytes=3 * message_size,
                        segment_index_bytes=4096)
    log = create_log(log_config)
    append_random(log, mock_time, rng, num_messages, message_size)
    assert log.log_end_offset == num_messages
    active = log.active_segment
    last_index_offset = active.offset_index.last_offset
    num_index_entries = active.offset_index.entries
    last_offset = log.log_end_offset
    # after the segment is closed, the last time index entry is (largest timestamp -> last offset)
    last_time_index_offset = log.log_end_offset - 1
    last_time_index_timestamp = active.largest_timestamp()
    num_time_index_entries = active.time_index.entries + (
        0 if active.time_index.last_entry.offset == log.log_end_offset - 1 else 1)
    assert num_index_entries > 0
    log.close()

    def verify_recovered_log(log: Log, expected_recovery_point: int) -> None:
        assert log.recovery_point == expected_recovery_point
        assert log.log_end_offset == num_messages
        active = log.active_segment
        assert active.offset_index.last_offset == last_index_offset
        assert active.offset_index.entries == num_index_entries
        assert active.time_index.last_entry.timestamp == last_time_index_timestamp
        assert active.time_index.last_entry.offset == last_time_index_offset
        assert active.time_index.entries == num_time_index_entries

    log = create_log(log_config, recovery_point=last_offset, had_clean_shutdown=False)
    verify_recovered_log(log, last_offset)
    log.close()

    # the recovery point is not moved after an unclean shutdown until the log is flushed
    log = create_log(log_config, recovery_point=10, had_clean_shutdown=False)
    verify_recovered_log(log, 10)
    log.flush()
    verify_recovered_log(log, last_offset)
    log.close()


def append_timestamped(log: Log, mock_time: MockTime, rng: random.Random, count: int, magic: int = 2) -> int:
    """``count`` records of 10 random bytes, timestamps ``now + i * 10``; returns ``now``."""
    now = mock_time.milliseconds()
    for i in range(count):
        log.append_as_leader(singleton(rng.randbytes(10), timestamp=now + i * 10, magic=magic))
    return now


def assert_every_offset_and_timestamp_resolves(log: Log, now: int, num_messages: int) -> None:
    for i in range(num_messages):
        assert first_batch(log, i).last_offset == i
        found = log.find_offset_by_timestamp(now + i * 10)
        assert found is not None
        assert found.offset == (log.log_segments()[0].base_offset if i == 0 else i)


def test_index_rebuild(create_log: LogFactory, mock_time: MockTime, rng: random.Random) -> None:
    num_messages = 200
    log_config = config(segment_bytes=200, index_interval_bytes=1)
    log = create_log(log_config)
    now = append_timestamped(log, mock_time, rng, num_messages)
    index_files = [s.offset_index.file for s in log.log_segments()]
    time_index_files = [s.time_index.file for s in log.log_segments()]
    log.close()

    for path in index_files + time_index_files:
        path.unlink()

    log = create_log(log_config, had_clean_shutdown=False)
    assert log.log_end_offset == num_messages
    first = log.log_segments()[0]
    assert first.offset_index.entries > 0, "The index should have been rebuilt"
    assert first.time_index.entries > 0, "The time index should have been rebuilt"
    assert all(path.exists() for path in index_files + time_index_files)
    assert_every_offset_and_timestamp_resolves(log, now, num_messages)


def test_rebuild_time_index_for_old_messages(create_log: LogFactory, mock_time: MockTime,
                                             rng: random.Random) -> None:
    """Messages of format v0 (message.format.version 0.9.0) have no timestamps: the rebuilt time index is
    empty."""
    num_messages = 200
    log_config = config(segment_bytes=200, index_interval_bytes=1, message_format_version="0.9.0")
    log = create_log(log_config)
    append_timestamped(log, mock_time, rng, num_messages, magic=1)
    assert {b.magic for s in log.log_segments() for b in s.log.batches()} == {0}
    time_index_files = [s.time_index.file for s in log.log_segments()]
    log.close()

    for path in time_index_files:
        path.unlink()

    log = create_log(log_config, recovery_point=num_messages + 1, had_clean_shutdown=False)
    assert log.log_end_offset == num_messages
    for segment in log.log_segments()[:-1]:
        assert segment.time_index.entries == 0, "The time index should be empty"
        assert segment.time_index.file.stat().st_size == 0, "The time index file size should be 0"


def test_corrupt_index_rebuild(create_log: LogFactory, mock_time: MockTime, rng: random.Random) -> None:
    num_messages = 200
    log_config = config(segment_bytes=200, index_interval_bytes=1)
    log = create_log(log_config)
    now = append_timestamped(log, mock_time, rng, num_messages)
    index_files = [s.offset_index.file for s in log.log_segments()]
    time_index_files = [s.time_index.file for s in log.log_segments()]
    log.close()

    for path in index_files + time_index_files:
        path.write_bytes(b"  ")  # Kafka writes two spaces over each index

    # recovery point 0, so the segment recovery runs
    log = create_log(log_config, had_clean_shutdown=False)
    assert log.log_end_offset == num_messages
    assert_every_offset_and_timestamp_resolves(log, now, num_messages)


def test_corrupt_index_is_rebuilt_even_below_the_recovery_point(create_log: LogFactory, mock_time: MockTime,
                                                                rng: random.Random) -> None:
    """A corrupt index fails the sanity check at load, and the segment is recovered whatever the recovery
    point (spec §3.10 step 5)."""
    num_messages = 40
    log_config = config(segment_bytes=200, index_interval_bytes=1)
    log = create_log(log_config)
    now = append_timestamped(log, mock_time, rng, num_messages)
    index_files = [s.offset_index.file for s in log.log_segments()]
    log.close()
    for path in index_files:
        path.write_bytes(b"  ")

    log = create_log(log_config, recovery_point=num_messages, had_clean_shutdown=True)
    assert log.log_end_offset == num_messages
    assert all(p.stat().st_size % 8 == 0 for p in index_files)
    assert_every_offset_and_timestamp_resolves(log, now, num_messages)


def test_indexes_recovery_rebuilds_are_not_checked_at_load(create_log: LogFactory, mock_time: MockTime,
                                                           rng: random.Random) -> None:
    """3.8.0's LogSegment.sanityCheck skips the offset and time indexes, as recovery rebuilds those of every
    segment from the recovery point on whatever they hold.  kafkalog checks the others at load (0.10.1.1's check,
    kept for them): after an unclean shutdown only the segments wholly below the recovery point are checked,
    and each corrupt index is rebuilt once, by the check or by recovery."""
    num_messages = 40
    log_config = config(segment_bytes=200, index_interval_bytes=1)
    log = create_log(log_config)
    now = append_timestamped(log, mock_time, rng, num_messages)
    bases = [s.base_offset for s in log.log_segments()]
    assert len(bases) >= 4
    index_files = [s.offset_index.file for s in log.log_segments()]
    log.close()
    for path in index_files:
        path.write_bytes(b"  ")

    recovery_point = bases[2] + 1  # inside the third segment: recovery starts with it
    log = create_log(log_config, recovery_point=recovery_point, had_clean_shutdown=False)
    assert [base for base, _reason in log.load_report.rebuilt_indexes] == bases[:2]
    assert all("neither positive nor a multiple of 8" in reason for _base, reason in log.load_report.rebuilt_indexes)
    # The first two were recovered by their rebuild at load, the others by recovery: each listed once, cut by 0.
    assert log.load_report.recovered_segments == [(base, 0) for base in bases]
    assert log.log_end_offset == num_messages
    assert all(p.stat().st_size % 8 == 0 for p in index_files)
    assert_every_offset_and_timestamp_resolves(log, now, num_messages)


def test_bogus_index_segments_are_removed(create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    bogus_index1 = index_filename(log_dir, 0)
    bogus_time_index1 = time_index_filename(log_dir, 0)
    bogus_index2 = index_filename(log_dir, 5)
    bogus_time_index2 = time_index_filename(log_dir, 5)
    log_dir.mkdir()
    # the indexes are opened lazily, so the orphans must be made for the test
    bogus_index2.touch()
    bogus_time_index2.touch()

    def records() -> MemoryRecords:
        return singleton(b"test", timestamp=mock_time.milliseconds())

    log = create_log(config(segment_bytes=records().size_in_bytes() * 5, segment_index_bytes=1000,
                            index_interval_bytes=1))
    # touch the first segment's indexes, which are opened lazily
    assert log.log_segments()[0].offset_index.entries == 0
    assert log.log_segments()[0].time_index.entries == 0
    assert bogus_index1.stat().st_size > 0, "The first index file should be replaced with a larger file"
    assert bogus_time_index1.stat().st_size > 0
    assert not bogus_index2.exists(), "The second index file should have been deleted."
    assert not bogus_time_index2.exists(), "The second time index file should have been deleted."

    for _ in range(10):
        log.append_as_leader(records())
    assert log.log_end_offset == 10
    log.delete()
    assert not log_dir.exists()


def test_reopen_then_truncate(create_log: LogFactory, mock_time: MockTime) -> None:
    def records() -> MemoryRecords:
        return singleton(b"test", timestamp=mock_time.milliseconds())

    log_config = config(segment_bytes=records().size_in_bytes() * 5, segment_index_bytes=1000,
                        index_interval_bytes=10000)
    log = create_log(log_config)
    for _ in range(100):
        log.append_as_leader(records())
    log.close()
    log = create_log(log_config, had_clean_shutdown=False)
    assert log.number_of_segments == 20
    assert log.truncate_to(3) is True
    assert log.number_of_segments == 1, "All but one segment should be deleted."
    assert log.log_end_offset == 3, "Log end offset should be 3."
    assert [r.offset for r in log.records()] == [0, 1, 2]


def test_open_deletes_obsolete_files(create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    def records() -> MemoryRecords:
        return singleton(b"test", timestamp=mock_time.milliseconds() - 1000)

    log_config = config(segment_bytes=records().size_in_bytes() * 5, segment_index_bytes=1000,
                        retention_ms=999)
    log = create_log(log_config)
    for _ in range(100):
        log.append_as_leader(records())
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments() == 20
    # Kafka's close leaves the .deleted files to the next open; kafkalog's deletes them (its pending deletions),
    # so the files reach the open here as a crash leaves them: their deletion tasks never ran.
    log.close_handlers()
    assert sum(name.endswith(DELETED_FILE_SUFFIX) for name in names(log_dir)) >= 40
    log = create_log(log_config, had_clean_shutdown=False)
    assert log.number_of_segments == 1, "The deleted segments should be gone."
    assert not any(name.endswith(DELETED_FILE_SUFFIX) for name in names(log_dir))
    assert (log.log_start_offset, log.log_end_offset) == (100, 100)


def append_nonsense(path: Path, size: int, rng: random.Random) -> None:
    """Kafka's ``TestUtils.appendNonsenseToFile``."""
    with open(path, "ab") as f:
        f.write(bytes(rng.randrange(255) for _ in range(size)))


def test_corrupt_log(create_log: LogFactory, scratch: Path, mock_time: MockTime, rng: random.Random) -> None:
    log_config = config(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024)
    recovery_point = 50
    for round_ in range(10):
        directory = scratch / f"round{round_}" / "topic-0"
        log = create_log(log_config, directory)
        num_messages = 50 + rng.randrange(50)
        for _ in range(num_messages):
            log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
        records = segment_records(log)
        log.close()

        # garbage after the active segment's index and log
        active = log.active_segment
        append_nonsense(active.offset_index.file, rng.randrange(1024) + 1, rng)
        append_nonsense(active.log.file, rng.randrange(1024) + 1, rng)

        log = create_log(log_config, directory, log_start_offset=0, recovery_point=recovery_point,
                         had_clean_shutdown=False)
        assert log.log_end_offset == num_messages
        assert segment_records(log) == records
        assert log.active_segment.log.file.stat().st_size == log.active_segment.size()
        log.close()


def test_clean_shutdown_file(create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    log_config = config(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024)
    log = create_log(log_config)
    for _ in range(100):
        log.append_as_leader(singleton(b"test", timestamp=mock_time.milliseconds()))
    log.close()

    # a clean shutdown skips recovery even from recovery point 0: the recovery point is the log end offset
    log = create_log(log_config)
    assert log.log_end_offset == 100
    assert log.recovery_point == 100
    log.close()

    # closed cleanly, the lone log of this log dir wrote the marker (it speaks for every partition there);
    # without the flag the log looks for the marker in the parent directory
    assert (log_dir.parent / CLEAN_SHUTDOWN_FILE).is_file()
    (log_dir.parent / CLEAN_SHUTDOWN_FILE).unlink()
    log = create_log(log_config, had_clean_shutdown=None)
    assert (log.had_clean_shutdown, log.recovery_point, log.log_end_offset) == (False, 0, 100)
    log.close()
    (log_dir.parent / CLEAN_SHUTDOWN_FILE).write_text('{"version":0,"brokerEpoch":3}')
    log = create_log(log_config, had_clean_shutdown=None)
    assert (log.had_clean_shutdown, log.recovery_point, log.log_end_offset) == (True, 100, 100)


PAIRS = [[INT32_MAX + 2, INT32_MAX + 3], [INT32_MAX + 4, INT32_MAX + 5], [INT32_MAX + 6, INT32_MAX + 7]]


def check_over_compacted_log_recovery(create_log: LogFactory, log_dir: Path, magic: int, compression: str,
                                      batches: list[list[int]], bases: list[int], index_files: int) -> None:
    """Kafka's testOverCompactedLogRecovery*: a batch at 0, then ``batches`` appended as a follower, the active
    segment's base offset after each being ``bases``, each roll leaving a producer snapshot at the new
    segment's base; after closing, ``index_files`` offset indexes, each with a last offset."""
    log = create_log(config(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024))

    def records(offsets: list[int], codec: str) -> MemoryRecords:
        return MemoryRecords.with_records([(f"v{o}".encode(), f"k{o}".encode()) for o in offsets],
                                          magic=magic, compression=codec, base_offset=offsets[0],
                                          partition_leader_epoch=0 if magic == 2 else -1)

    log.append_as_follower(records([0], "none"))
    assert log.active_segment.base_offset == 0
    previous_base = 0
    for offsets, base in zip(batches, bases, strict=True):
        log.append_as_follower(records(offsets, compression))
        assert log.active_segment.base_offset == base
        if base != previous_base:
            assert producer_snapshot_filename(log_dir, base).exists()
        previous_base = base
    log.close()

    found = [p for p in log_dir.iterdir() if ".index" in p.name]
    assert len(found) == index_files
    for path in found:
        index = OffsetIndex(path, int(path.name.split(".")[0]))
        try:
            assert index.last_offset >= 0
        finally:
            index.close()


def test_over_compacted_log_recovery(create_log: LogFactory, log_dir: Path) -> None:
    """testOverCompactedLogRecovery: the roll after offset 0 starts a segment at Int.MaxValue + 2, which takes
    the next two batches too."""
    check_over_compacted_log_recovery(create_log, log_dir, 2, "none",
                                      [[INT32_MAX + 2], [INT32_MAX + 3], [INT32_MAX + 4]], [INT32_MAX + 2] * 3, 2)


def test_over_compacted_log_recovery_multi_record(create_log: LogFactory, log_dir: Path) -> None:
    check_over_compacted_log_recovery(create_log, log_dir, 2, "gzip", PAIRS, [INT32_MAX + 2] * 3, 2)


def test_over_compacted_log_recovery_multi_record_v1(create_log: LogFactory, log_dir: Path) -> None:
    """testOverCompactedLogRecoveryMultiRecordV1: a v1 wrapper gives only its last offset, so the first roll goes
    to max(1, lastOffset - Int.MaxValue) = 3, and the next one to Int.MaxValue + 4."""
    check_over_compacted_log_recovery(create_log, log_dir, 1, "gzip", PAIRS, [3, INT32_MAX + 4, INT32_MAX + 4], 3)


def test_load_partition_dir_with_no_segments_should_not_throw(create_log: LogFactory, scratch: Path) -> None:
    directory = scratch / log_delete_dir_name(TopicPartition("foo", 3))
    directory.mkdir()
    log = create_log(config(), directory)
    assert log.number_of_segments == 1
    assert log.log_end_offset == 0
    assert log.topic_partition == TopicPartition("foo", 3)


def test_delete_dir_loads_at_offset_zero_with_an_empty_epoch_cache(create_log: LogFactory, log_dir: Path) -> None:
    """LogLoader.load (3.8.0): a directory marked ``-delete`` is not recovered, even after an unclean shutdown,
    and loads as ``(recoveryPoint 0, nextOffset 0)`` whatever its segments hold, so
    ``truncateFromEndAsyncFlush(0)`` empties its leader-epoch cache; its segments stay as they are until the
    deletion."""
    log = create_log(config())
    for epoch in (1, 2):
        for value in (b"a", b"b", b"c"):
            log.append_as_leader(singleton(value), leader_epoch=epoch)
        log.roll()
    assert log.leader_epoch_cache is not None
    assert log.leader_epoch_cache.epoch_entries() == [EpochEntry(1, 0), EpochEntry(2, 3)]
    log.close()
    directory = log_dir.rename(log_dir.with_name(log_delete_dir_name(TopicPartition("topic", 0))))
    with log_filename(directory, 3).open("ab") as torn:
        torn.write(b"\x00\x00\x00\x00\x00\x00\x00\x09torn")  # what recovery would cut
    before = {name: (directory / name).read_bytes() for name in names(directory) if name.endswith(".log")}

    deleted = create_log(config(), directory, had_clean_shutdown=False)
    assert (deleted.log_start_offset, deleted.recovery_point, deleted.log_end_offset) == (0, 0, 0)
    assert [segment.base_offset for segment in deleted.log_segments()] == [0, 3, 6]
    # The close wrote every index (the active segment's empty ones too), and the torn tail of segment 3 stays.
    assert deleted.load_report.rebuilt_indexes == []
    assert deleted.load_report.recovered_segments == []
    assert deleted.leader_epoch_cache is not None
    assert deleted.leader_epoch_cache.epoch_entries() == []
    assert LeaderEpochCheckpoint(LeaderEpochCheckpoint.new_file(directory), read_only=True).read() == []
    assert {name: (directory / name).read_bytes() for name in before} == before


# -- offset overflow and the split protocol -------------------------------------------------------------


def keys_in_log(log: Log) -> list[int]:
    """Kafka's ``LogTestUtils.keysInLog``."""
    return [int(record.key) for segment in log.log_segments() for batch in segment.log.batches()
            if not batch.is_control for record in batch.records()
            if record.key is not None and record.value is not None]


def create_log_with_offset_overflow(create_log: LogFactory, log_dir: Path,
                                    log_config: LogConfig) -> tuple[Log, Any]:
    initialize_log_dir_with_overflowed_segment(log_dir)
    log = create_log(log_config, recovery_point=LONG_MAX)
    segment = first_overflow_segment(log)
    assert segment is not None, "Failed to create log with a segment which has overflowed offsets"
    return log, segment


def recover_and_check(create_log: LogFactory, log_dir: Path, log_config: LogConfig, expected_keys: list[int],
                      mock_time: MockTime) -> Log:
    """Kafka's ``LogTestUtils.recoverAndCheck``: open unclean, let the deferred deletions run, and check that
    no temporary file is left, the keys are the expected ones and no segment overflows."""
    recovered = create_log(log_config, had_clean_shutdown=False)
    mock_time.sleep(log_config.file_delete_delay_ms + 1)
    for name in names(log_dir):
        assert not name.endswith(DELETED_FILE_SUFFIX), f"Unexpected .deleted file {name} after recovery"
        assert not name.endswith(CLEANED_FILE_SUFFIX), f"Unexpected .cleaned file {name} after recovery"
        assert not name.endswith(SWAP_FILE_SUFFIX), f"Unexpected .swap file {name} after recovery"
    assert keys_in_log(recovered) == expected_keys
    assert first_overflow_segment(recovered) is None
    return recovered


OVERFLOW_CONFIG = {"index_interval_bytes": 1, "file_delete_delay_ms": 1000}
SPLIT_BASES = [0, INT32_MAX, 2 * INT32_MAX + 1, 3 * INT32_MAX]


def test_recovery_of_segment_with_offset_overflow(create_log: LogFactory, log_dir: Path,
                                                  mock_time: MockTime) -> None:
    log_config = config(**OVERFLOW_CONFIG)
    log, _ = create_log_with_offset_overflow(create_log, log_dir, log_config)
    expected_keys = keys_in_log(log)
    assert len(expected_keys) == 16
    log.close_handlers()

    # recovery splits the segment underneath
    recovered = recover_and_check(create_log, log_dir, log_config, expected_keys, mock_time)
    assert [s.base_offset for s in recovered.log_segments()] == SPLIT_BASES
    # running the split again is an error
    for segment in recovered.log_segments():
        with pytest.raises(IllegalArgumentError):
            recovered.split_overflowed_segment(segment)


def restore_deleted_files(directory: Path) -> list[str]:
    """Rename every ``.deleted`` file back to its live name, as if the crash came before that rename."""
    restored = []
    for path in sorted(directory.iterdir()):
        if path.name.endswith(DELETED_FILE_SUFFIX):
            target = path.with_name(path.name[: -len(DELETED_FILE_SUFFIX)])
            os.replace(path, target)
            restored.append(target.name)
    return restored


def check_recovery_after_crash_during_split(create_log: LogFactory, log_dir: Path, mock_time: MockTime,
                                            phase: int) -> None:
    """Kafka's testRecoveryAfterCrashDuringSplitPhase1-5 (spec §3.10 steps 1-4, §3.18): a crash in ``phase``
    of an overflow split, and the recovery that must end with the split done, no temporary file left and the
    keys all there.

    1. crash after the new segments were written as ``.cleaned``: the split is abandoned and redone;
    2. crash after the highest new segment was renamed ``.swap`` (the others still ``.cleaned``): a swap at or
       past the smallest ``.cleaned`` offset is an incomplete split, dropped; the split is redone;
    3. crash after every new segment became ``.swap`` but before the old one was renamed ``.deleted``: the
       swap is completed and the old segment, covered by the swaps' range, deleted;
    4. as 3, after the old segment's files were deleted;
    5. crash after the lower new segment went live but the higher one is still ``.swap``.
    """
    log_config = config(**OVERFLOW_CONFIG)
    log, segment_with_overflow = create_log_with_offset_overflow(create_log, log_dir, log_config)
    expected_keys = keys_in_log(log)
    num_segments_initial = log.number_of_segments
    assert num_segments_initial == 3

    new_segments = log.split_overflowed_segment(segment_with_overflow)
    assert [s.base_offset for s in new_segments] == SPLIT_BASES[1:3]
    old_base = segment_with_overflow.base_offset
    assert log_filename(log_dir, old_base, DELETED_FILE_SUFFIX).exists()

    if phase == 1:
        for segment in reversed(new_segments):
            segment.change_file_suffixes("", CLEANED_FILE_SUFFIX)
            segment.truncate_to(0)
        restored = restore_deleted_files(log_dir)
    elif phase == 2:
        for segment in reversed(new_segments):
            suffix = SWAP_FILE_SUFFIX if segment is new_segments[-1] else CLEANED_FILE_SUFFIX
            segment.change_file_suffixes("", suffix)
            segment.truncate_to(0)
        restored = restore_deleted_files(log_dir)
    elif phase == 3:
        for segment in reversed(new_segments):
            segment.change_file_suffixes("", SWAP_FILE_SUFFIX)
        restored = restore_deleted_files(log_dir)
        segment_with_overflow.truncate_to(0)
    elif phase == 4:
        for segment in reversed(new_segments):
            segment.change_file_suffixes("", SWAP_FILE_SUFFIX)
        for path in log_dir.iterdir():
            if path.name.endswith(DELETED_FILE_SUFFIX):
                path.unlink()
        restored = []
        segment_with_overflow.truncate_to(0)
    else:
        new_segments[-1].change_file_suffixes("", SWAP_FILE_SUFFIX)
        restored = []
        segment_with_overflow.truncate_to(0)
    if phase <= 3:
        assert log_filename(log_dir, old_base).name in restored

    on_disk = names(log_dir)
    if phase in (1, 2):
        assert log_filename(log_dir, new_segments[0].base_offset, CLEANED_FILE_SUFFIX).name in on_disk
    if phase >= 2:
        assert log_filename(log_dir, new_segments[-1].base_offset, SWAP_FILE_SUFFIX).name in on_disk
    log.close_handlers()

    recovered = recover_and_check(create_log, log_dir, log_config, expected_keys, mock_time)
    assert recovered.number_of_segments == num_segments_initial + 1
    assert [s.base_offset for s in recovered.log_segments()] == SPLIT_BASES
    assert recovered.log_end_offset == 4 * INT32_MAX
    recovered.close()


def test_recovery_after_crash_during_split_phase1(create_log: LogFactory, log_dir: Path,
                                                  mock_time: MockTime) -> None:
    check_recovery_after_crash_during_split(create_log, log_dir, mock_time, 1)


def test_recovery_after_crash_during_split_phase2(create_log: LogFactory, log_dir: Path,
                                                  mock_time: MockTime) -> None:
    check_recovery_after_crash_during_split(create_log, log_dir, mock_time, 2)


def test_recovery_after_crash_during_split_phase3(create_log: LogFactory, log_dir: Path,
                                                  mock_time: MockTime) -> None:
    check_recovery_after_crash_during_split(create_log, log_dir, mock_time, 3)


def test_recovery_after_crash_during_split_phase4(create_log: LogFactory, log_dir: Path,
                                                  mock_time: MockTime) -> None:
    check_recovery_after_crash_during_split(create_log, log_dir, mock_time, 4)


def test_recovery_after_crash_during_split_phase5(create_log: LogFactory, log_dir: Path,
                                                  mock_time: MockTime) -> None:
    check_recovery_after_crash_during_split(create_log, log_dir, mock_time, 5)


def test_swap_completion_deletes_every_file_named_for_an_offset_in_its_range(create_log: LogFactory,
                                                                            log_dir: Path) -> None:
    """LogLoader.load (3.8.0), the second pass of an interrupted swap's completion: every file whose name is an
    offset in ``[lowest swap base, highest swap's next offset)`` is deleted, whatever its suffix, the producer
    snapshots taken there included; files at the range's end, and names Kafka could not read as an offset, stay.
    (kafkalog also leaves ``5.unknown`` alone, a prefix Kafka would read as offset 5: its loader takes only the
    20 digits Kafka writes.)"""
    log = create_log(config())
    for segment_start in (0, 3, 6, 9):
        for value in (b"a", b"b", b"c"):
            log.append_as_leader(singleton(value + str(segment_start).encode()), leader_epoch=0)
        if segment_start < 9:
            log.roll()
    assert [segment.base_offset for segment in log.log_segments()] == [0, 3, 6, 9]
    log.close()
    assert all(producer_snapshot_filename(log_dir, offset).exists() for offset in (3, 6, 9, 12))
    # The cleaner's output for segments 3 and 6, made live up to the rename of its .swap: one segment at 3
    # holding both (the same batches, so the same records), the old segments not yet renamed .deleted.
    swap = log_filename(log_dir, 3, SWAP_FILE_SUFFIX)
    swap.write_bytes(log_filename(log_dir, 3).read_bytes() + log_filename(log_dir, 6).read_bytes())
    (log_dir / f"{6:020d}.unknown").write_bytes(b"x")  # any suffix goes
    (log_dir / "5.unknown").write_bytes(b"x")
    (log_dir / f"{7:020d}").write_bytes(b"x")  # no '.': Kafka's offsetFromFile cannot read it

    reopened = create_log(config())
    replaced = sorted(reopened.load_report.replaced_files)
    assert replaced == sorted([f"{offset:020d}{suffix}" for offset in (3, 6)
                               for suffix in (".index", ".log", ".snapshot", ".timeindex")] + [f"{6:020d}.unknown"])
    assert reopened.load_report.completed_swaps == [swap.name]
    assert not (log_dir / f"{6:020d}.unknown").exists()
    # The swapped-in segment came without indexes, so it was recovered, from a producer state rebuilt up to its
    # base: that rebuild wrote the snapshot at 3 anew, as Kafka's recoverSegment does.
    assert reopened.load_report.rebuilt_indexes == [(3, "offset index missing")]
    assert all(producer_snapshot_filename(log_dir, offset).exists() for offset in (3, 9, 12))
    assert not producer_snapshot_filename(log_dir, 6).exists()
    assert (log_dir / "5.unknown").exists() and (log_dir / f"{7:020d}").exists()
    assert [segment.base_offset for segment in reopened.log_segments()] == [0, 3, 9]
    assert reopened.log_end_offset == 12
    assert [record.value for record in reopened.records(0)] == [
        value + str(start).encode() for start in (0, 3, 6, 9) for value in (b"a", b"b", b"c")]


# -- log start and end ----------------------------------------------------------------------------------


def test_log_end_less_than_start_after_reopen(create_log: LogFactory, log_dir: Path,
                                              mock_time: MockTime) -> None:
    log_config = config()
    log = create_log(log_config)
    for i in range(5):
        log.append_as_leader(singleton(str(i).encode(), timestamp=mock_time.milliseconds()))
        log.roll()
    assert log.number_of_segments == 6

    start_offset = 4
    log.high_watermark = log.log_end_offset
    log.maybe_increment_log_start_offset(start_offset)
    assert log.log_end_offset > log.log_start_offset

    # garbage over a segment below the log start offset
    segment_to_force_truncation = log.log_segments()[1]
    segment_to_force_truncation.log.file.write_bytes(b"corruptRecord")
    log.close()

    # reopening truncates that segment and deletes every later one; what is left ends below the log start
    # offset, so it goes too and a single empty segment starts at the log start offset
    log = create_log(log_config, log_start_offset=start_offset, had_clean_shutdown=False)
    mock_time.sleep(log_config.file_delete_delay_ms)
    assert log.number_of_segments == 1
    assert log.log_start_offset == start_offset
    assert log.log_end_offset == start_offset
    only = log.log_segments()[0]
    assert only.base_offset == start_offset
    assert only.log.file.exists()
    assert index_filename(log_dir, start_offset).exists()
    assert time_index_filename(log_dir, start_offset).exists()
    assert names(log_dir) == [f"{start_offset:020d}{suffix}" for suffix in (".index", ".log", ".timeindex")] + [
        "leader-epoch-checkpoint"]


def test_recovery_point_after_a_clean_shutdown_whose_log_ends_below_its_start(
        create_log: LogFactory, log_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LogLoader.recoverLog (3.8.0): after a clean shutdown the recovery point is the log end offset only while the
    segments stay; when they all go because the log ends below its start offset, the loader answers
    ``min(recoveryPointCheckpoint, logEndOffset)``, and UnifiedLog's constructor raises it to the log start
    offset (``updateLogStartOffset``), so the log's is its new end, as before."""
    loaded: list[LoadedLogOffsets] = []

    class RecordingLoader(LogLoader):
        def load(self) -> LoadedLogOffsets:
            offsets = super().load()
            loaded.append(offsets)
            return offsets

    monkeypatch.setattr(kafkalog.log.unified_log, "LogLoader", RecordingLoader)
    log = create_log(config())
    for value in (b"a", b"b", b"c"):
        log.append_as_leader(singleton(value), leader_epoch=0)
    log.close()
    assert loaded == [LoadedLogOffsets(0, 0, 0)]

    reopened = create_log(config(), log_start_offset=10, recovery_point=2)
    assert reopened.load_report.deleted_segments == [0]
    assert loaded[-1] == LoadedLogOffsets(log_start_offset=10, recovery_point=2, next_offset=10)
    assert (reopened.log_start_offset, reopened.recovery_point, reopened.log_end_offset) == (10, 10, 10)
    reopened.close()

    # the segments stay: the log end offset
    again = create_log(config(), log_start_offset=10, recovery_point=2)
    assert loaded[-1] == LoadedLogOffsets(log_start_offset=10, recovery_point=10, next_offset=10)
    assert again.recovery_point == 10


def test_recovery_point_is_raised_to_the_log_start_offset(create_log: LogFactory, log_dir: Path) -> None:
    """UnifiedLog's constructor (3.8.0: ``updateLogStartOffset``, ``updateLocalLogStartOffset``): a recovery
    point below the log start offset is raised to it, nothing below the start being read again.  After an
    unclean shutdown with the recovery point checkpoint at 0, every segment is recovered and the loader answers
    0; the log's is its start offset."""
    log = create_log(config())
    for _segment in range(3):
        for value in (b"a", b"b", b"c"):
            log.append_as_leader(singleton(value), leader_epoch=0)
        log.roll()
    log.close_handlers()

    reopened = create_log(config(), log_start_offset=5, recovery_point=0, had_clean_shutdown=False)
    assert [base for base, _truncated in reopened.load_report.recovered_segments] == [0, 3, 6, 9]
    assert (reopened.log_start_offset, reopened.recovery_point, reopened.log_end_offset) == (5, 5, 9)
    assert [segment.base_offset for segment in reopened.log_segments()] == [0, 3, 6, 9]
    reopened.flush()
    assert reopened.recovery_point == 9


def test_recover_with_empty_active_segment(create_log: LogFactory, log_dir: Path, mock_time: MockTime,
                                           rng: random.Random) -> None:
    num_messages = 100
    message_size = 100
    log_config = config(segment_bytes=7 * message_size, index_interval_bytes=3 * message_size,
                        segment_index_bytes=4096)
    log = create_log(log_config)
    append_random(log, mock_time, rng, num_messages, message_size)
    assert log.log_end_offset == num_messages
    log.roll()
    log.flush()
    # the rolled-to segment is empty and its offset index was never opened, so it has no file yet
    assert not index_filename(log_dir, log.active_segment.base_offset).exists()
    last_offset = log.log_end_offset
    log.close_handlers()

    log = create_log(log_config, recovery_point=last_offset, had_clean_shutdown=False)
    assert log.recovery_point == last_offset
    assert log.log_end_offset == num_messages
    assert log.active_segment.time_index.entries == 0
    # loading made the empty active segment's index files
    assert index_filename(log_dir, last_offset).exists()
    log.active_segment.sanity_check(True)

    append_random(log, mock_time, rng, num_messages, message_size)
    log.roll()
    assert not index_filename(log_dir, log.active_segment.base_offset).exists()
    # Kafka's flush(true): up to the log end offset, the empty active segment included
    log.flush()
    log.active_segment.flush()
    assert index_filename(log_dir, log.active_segment.base_offset).exists()
    log.active_segment.sanity_check(True)
    last_offset = log.log_end_offset
    log.close_handlers()

    log = create_log(log_config, recovery_point=last_offset, had_clean_shutdown=False)
    assert log.recovery_point == last_offset
    assert log.log_end_offset == 2 * num_messages
    assert log.active_segment.time_index.entries == 0
    log.active_segment.sanity_check(True)
    log.close()


def test_sanity_check_without_offset_index_file(create_log: LogFactory, log_dir: Path) -> None:
    """LogSegment.sanityCheck (3.8) throws NoSuchFileException when the offset index file does not exist, as
    testRecoverWithEmptyActiveSegment checks on the segment a roll just made."""
    log = create_log()
    log.append_as_leader(singleton(b"a"))
    log.roll()
    active = log.active_segment
    assert not index_filename(log_dir, active.base_offset).exists()
    with pytest.raises(FileNotFoundError):
        active.sanity_check(True)


def test_corrupted_log_recovery_does_not_delete_producer_state_snapshots_post_recovery(
        create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    """testCorruptedLogRecoveryDoesNotDeleteProducerStateSnapshotsPostRecovery: a torn segment below the log start
    offset takes every segment with it, the log starts again, empty, at the log start offset, with no producer
    snapshot below it on disk or in memory, and the deletions scheduled by recovery, run later, touch neither the
    segments made since nor their snapshots."""
    log_config = config()
    log = create_log(log_config)

    def snapshot_file(offset: int) -> Path | None:
        snapshot = log.producer_state_manager.snapshot_file_for_offset(offset)
        return None if snapshot is None else snapshot.file

    # segments [0-0], [1-1], ..., [8-8] and an empty active one at 9
    for i in range(9):
        log.append_as_leader(singleton(str(i).encode(), timestamp=mock_time.milliseconds()), leader_epoch=0)
        log.roll()
    assert log.number_of_segments == 10
    assert log.log_start_offset == 0
    assert log.active_segment.base_offset == 9
    assert log.log_end_offset == 9
    for offset in range(1, 10):
        before_deletion = snapshot_file(offset)
        assert before_deletion is not None and before_deletion.exists()

    new_log_start_offset = 4
    log.high_watermark = log.log_end_offset
    log.maybe_increment_log_start_offset(new_log_start_offset)
    assert log.log_start_offset == 4
    assert log.log_end_offset == 9

    # garbage over the segment at 1, below the log start offset
    segment_to_force_truncation = log.log_segments()[1]
    assert segment_to_force_truncation.base_offset == 1
    segment_to_force_truncation.log.file.write_bytes(b"corruptRecord")
    log.close()

    # reopening truncates that segment and schedules the deletion of 2..9; 0 and 1 end below the log start
    # offset, so they go too, and one empty segment starts at 4
    log = create_log(log_config, log_start_offset=new_log_start_offset, had_clean_shutdown=False)
    assert log.number_of_segments == 1
    assert log.log_start_offset == 4
    assert log.active_segment.base_offset == 4
    assert log.log_end_offset == 4
    on_disk = [offset for offset in range(1, 5) if producer_snapshot_filename(log_dir, offset).exists()]
    assert on_disk == [], f"Found offsets with producer state snapshot files: {on_disk} while none were expected."
    in_memory = [offset for offset in range(1, 5) if snapshot_file(offset) is not None]
    assert in_memory == [], f"Found in-memory producer state snapshot files: {in_memory} while none were expected."

    # segments [4-4], ..., [8-8] and an empty active one at 9, made again under the names of deleted ones
    for i in range(5):
        log.append_as_leader(singleton(str(i).encode(), timestamp=mock_time.milliseconds()), leader_epoch=0)
        log.roll()
    assert log.active_segment.base_offset == 9
    assert log.log_end_offset == 9
    for offset in range(5, 10):
        before_deletion = snapshot_file(offset)
        assert before_deletion is not None and before_deletion.exists()

    # the deletions recovery scheduled run now: the new segments and their snapshots stay
    mock_time.sleep(log_config.file_delete_delay_ms)
    assert log.log_start_offset == new_log_start_offset
    assert log.log_end_offset == 9
    missing = [offset for offset in range(5, 10) if (file := snapshot_file(offset)) is None or not file.exists()]
    assert missing == [], f"Found offsets with missing producer state snapshot files: {missing}"
    assert not any(name.endswith(DELETED_FILE_SUFFIX) for name in names(log_dir)), \
        "Expected no files to be present with the deleted file suffix"
    assert [s.base_offset for s in log.log_segments()] == list(range(4, 10))
    assert all(s.log.file.exists() for s in log.log_segments())
    assert [r.value for r in log.records()] == [str(i).encode() for i in range(5)]


# -- which segments recovery reads ----------------------------------------------------------------------


def snapshot_offsets(log_dir: Path) -> set[int]:
    """Kafka's ``LogTestUtils.listProducerSnapshotOffsets``."""
    return {int(p.name.split(".", 1)[0]) for p in log_dir.glob("*.snapshot")}


def check_producer_snapshots_recovery_after_unclean_shutdown(create_log: LogFactory, log_dir: Path,
                                                             mock_time: MockTime,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             message_format_version: str | None) -> None:
    """Kafka's testProducerSnapshotsRecoveryAfterUncleanShutdown: reopened after a crash from a recovery point
    in the fourth-last segment (at its base, then one past it), the log recovers that segment and every later
    one; the producer state is rebuilt by reading the segments before the recovery point (v2; none for v1,
    whose upgrade shortcut reads nothing) and the active one (its next offset), and the producer snapshots are
    at the bases of the last four segments (last two for v1) and at the log end.

    Kafka wraps each segment in a Mockito spy; here ``LogSegment.read`` and ``LogSegment.recover`` are wrapped
    for the loads, which calls them through the same methods (``read_next_offset`` reads as Kafka's does).
    """
    props: dict[str, Any] = {"segment_bytes": 640}
    if message_format_version is not None:
        props["message_format_version"] = message_format_version
    log_config = config(**props)
    log = create_log(log_config)
    assert log.oldest_producer_snapshot_offset() is None
    for i in range(101):
        log.append_as_leader(MemoryRecords.with_records([(None, str(i).encode(), mock_time.milliseconds())]),
                             leader_epoch=0)
    assert log.number_of_segments >= 5
    segment_offsets = [s.base_offset for s in log.log_segments()]
    active_segment_offset = segment_offsets[-1]

    # the recovery point is past a segment's base and before the last two segments, with one segment between
    offset_for_segment_after_recovery_point = segment_offsets[-3]
    offset_for_recovery_point_segment = segment_offsets[-4]
    seg_offsets_before_recovery = {o for o in segment_offsets if o < offset_for_recovery_point_segment}
    seg_offsets_after_recovery = {o for o in segment_offsets if o >= offset_for_recovery_point_segment}
    recovery_point = offset_for_recovery_point_segment + 1
    assert recovery_point < offset_for_segment_after_recovery_point
    log.close()

    if log_config.record_version() < 2:
        expected_segments_with_reads = {active_segment_offset}
        expected_snapshot_offsets = set(segment_offsets[-2:]) | {log.log_end_offset}
    else:
        expected_segments_with_reads = seg_offsets_before_recovery | {active_segment_offset}
        expected_snapshot_offsets = set(segment_offsets[-4:]) | {log.log_end_offset}

    segments_with_reads: set[int] = set()
    recovered_segments: set[int] = set()
    read, recover = LogSegment.read, LogSegment.recover

    def intercepted_read(segment: LogSegment, *args: Any, **kwargs: Any) -> Any:
        segments_with_reads.add(segment.base_offset)
        return read(segment, *args, **kwargs)

    def intercepted_recover(segment: LogSegment, *args: Any) -> int:
        recovered_segments.add(segment.base_offset)
        return recover(segment, *args)

    def create_log_with_intercepted_reads(recovery_point: int) -> Log:
        with monkeypatch.context() as patch:
            patch.setattr(LogSegment, "read", intercepted_read)
            patch.setattr(LogSegment, "recover", intercepted_recover)
            return create_log(log_config, recovery_point=recovery_point, had_clean_shutdown=False)

    # Retain snapshots for the last 2 segments
    log.producer_state_manager.delete_snapshots_before(segment_offsets[-2])
    log = create_log_with_intercepted_reads(offset_for_recovery_point_segment)
    # all segments are read: the recovery point is behind the producer snapshots (pre KAFKA-5829 behaviour)
    assert segments_with_reads == expected_segments_with_reads
    assert recovered_segments == seg_offsets_after_recovery
    assert snapshot_offsets(log_dir) == expected_snapshot_offsets
    log.close()
    segments_with_reads.clear()
    recovered_segments.clear()

    # Only the snapshots before the recovery point segment's base go (post KAFKA-5829): no segment is read
    log.producer_state_manager.delete_snapshots_before(offset_for_recovery_point_segment)
    log = create_log_with_intercepted_reads(recovery_point)
    assert segments_with_reads == {active_segment_offset}
    assert recovered_segments == seg_offsets_after_recovery
    assert snapshot_offsets(log_dir) == expected_snapshot_offsets
    assert log.log_end_offset == 101
    log.close()


def test_producer_snapshots_recovery_after_unclean_shutdown_v1(create_log: LogFactory, log_dir: Path,
                                                               mock_time: MockTime,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """testProducerSnapshotsRecoveryAfterUncleanShutdownV1: with message format 0.10.0 (v1 batches)."""
    check_producer_snapshots_recovery_after_unclean_shutdown(create_log, log_dir, mock_time, monkeypatch, "0.10.0")


def test_producer_snapshots_recovery_after_unclean_shutdown_current_message_format(
        create_log: LogFactory, log_dir: Path, mock_time: MockTime, monkeypatch: pytest.MonkeyPatch) -> None:
    """testProducerSnapshotsRecoveryAfterUncleanShutdownCurrentMessageFormat: with the current format (v2)."""
    check_producer_snapshots_recovery_after_unclean_shutdown(create_log, log_dir, mock_time, monkeypatch, None)


def _one_record(producer_id: int, value: bytes, sequence: int, timestamp: int) -> MemoryRecords:
    return MemoryRecords.with_records([(None, value, timestamp)], producer_id=producer_id, producer_epoch=0,
                                      base_sequence=sequence)


def _producers_kept(log: Log, pid2: int) -> int:
    """Deleting records does not remove producer state: both producers are there, the second at sequence 0."""
    assert len(log.active_producers_with_last_sequence()) == 2
    retained_last_seq = log.active_producers_with_last_sequence().get(pid2)
    assert retained_last_seq is not None
    assert retained_last_seq == 0
    return retained_last_seq


def test_load_producers_after_delete_records_on_segment(create_log: LogFactory, mock_time: MockTime) -> None:
    """testLoadProducersAfterDeleteRecordsOnSegment: a log start offset moved to the second segment's base takes
    the first segment away but not its producer; the reload rebuilds the second producer only."""
    log_config = config(segment_bytes=2048 * 5)
    log = create_log(log_config)
    pid1, pid2 = 1, 2
    log.append_as_leader(_one_record(pid1, b"a", 0, mock_time.milliseconds()), leader_epoch=0)
    log.roll()
    log.append_as_leader(_one_record(pid2, b"b", 0, mock_time.milliseconds()), leader_epoch=0)
    assert log.number_of_segments == 2
    assert len(log.active_producers_with_last_sequence()) == 2

    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(1)
    log.delete_old_segments()

    assert log.number_of_segments == 1
    retained_last_seq = _producers_kept(log, pid2)
    log.close()

    # after reloading the log, the producer state of the deleted segment is not regenerated
    reloaded = create_log(log_config, log_start_offset=1, had_clean_shutdown=False)
    assert len(reloaded.active_producers_with_last_sequence()) == 1
    # (Kafka reads the closed log here, whose state the close left as it was)
    assert log.active_producers_with_last_sequence().get(pid2) == retained_last_seq
    assert (reloaded.log_start_offset, reloaded.log_end_offset) == (1, 2)


def test_load_producers_after_delete_records_mid_segment(create_log: LogFactory, mock_time: MockTime) -> None:
    """testLoadProducersAfterDeleteRecordsMidSegment: a log start offset moved inside the segment keeps both
    producers, before and after a reload."""
    log_config = config(segment_bytes=2048 * 5)
    log = create_log(log_config)
    pid1, pid2 = 1, 2
    log.append_as_leader(_one_record(pid1, b"a", 0, mock_time.milliseconds()), leader_epoch=0)
    log.append_as_leader(_one_record(pid2, b"b", 0, mock_time.milliseconds()), leader_epoch=0)
    assert len(log.active_producers_with_last_sequence()) == 2

    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(1)
    retained_last_seq = _producers_kept(log, pid2)
    log.close()

    # the log start offset did not pass a segment: the snapshots stay and the state is rebuilt
    reloaded = create_log(log_config, log_start_offset=1, had_clean_shutdown=False)
    assert len(reloaded.active_producers_with_last_sequence()) == 2
    assert log.active_producers_with_last_sequence().get(pid2) == retained_last_seq


def test_loading_log_keeps_largest_stray_producer_state_snapshot(create_log: LogFactory, log_dir: Path) -> None:
    """testLoadingLogKeepsLargestStrayProducerStateSnapshot: a stray snapshot inside the log goes at load; the
    largest one (the clean close's, past every segment base) stays."""
    log_config = config(segment_bytes=2048 * 5, retention_bytes=0, retention_ms=1000 * 60, file_delete_delay_ms=0)
    log = create_log(log_config)
    pid1 = 1
    log.append_as_leader(_one_record(pid1, b"a", 0, -1), leader_epoch=0)
    log.roll()
    log.append_as_leader(_one_record(pid1, b"b", 1, -1), leader_epoch=0)
    log.roll()
    log.append_as_leader(_one_record(pid1, b"c", 2, -1), leader_epoch=0)
    log.append_as_leader(_one_record(pid1, b"d", 3, -1), leader_epoch=0)

    log.close()
    assert log.number_of_segments == 3
    # two snapshots for the first two rolls, the last one written by the close
    assert snapshot_offsets(log_dir) == {1, 2, 4}
    # a stray snapshot inside the log, at 3
    producer_snapshot_filename(log_dir, 3).touch()
    assert snapshot_offsets(log_dir) == {1, 2, 3, 4}

    create_log(log_config, had_clean_shutdown=False)
    assert snapshot_offsets(log_dir) == {1, 2, 4}


def test_recover_after_non_monotonic_coordinator_epoch_write(create_log: LogFactory, mock_time: MockTime) -> None:
    """testRecoverAfterNonMonotonicCoordinatorEpochWrite: a coordinator epoch going backwards (KAFKA-9144) after
    the producer expired is taken by recovery, which keeps the latest write."""
    producer_id, coordinator_epoch, epoch = 1, 5, 0
    log_config = config(segment_bytes=1024 * 1024 * 5)
    log = create_log(log_config)
    first_append_timestamp = mock_time.milliseconds()
    append_end_txn_marker_as_leader(log, producer_id, epoch, ControlRecordType.ABORT, first_append_timestamp,
                                    coordinator_epoch=coordinator_epoch)
    entry = log.producer_state_manager.last_entry(producer_id)
    assert entry is not None and entry.last_timestamp == first_append_timestamp

    mock_time.sleep(DEFAULT_PRODUCER_ID_EXPIRATION_MS)
    assert log.producer_state_manager.last_entry(producer_id) is None

    second_append_timestamp = mock_time.milliseconds()
    append_end_txn_marker_as_leader(log, producer_id, epoch, ControlRecordType.ABORT, second_append_timestamp,
                                    coordinator_epoch=coordinator_epoch - 1)
    log.close()

    # recovery forced from the log start
    log = create_log(log_config, recovery_point=0, had_clean_shutdown=False)
    entry = log.producer_state_manager.last_entry(producer_id)
    assert entry is not None and entry.last_timestamp == second_append_timestamp
    log.close()


# -- transactions ---------------------------------------------------------------------------------------


#: Kafka's expected ``AbortedTxn(producerId, firstOffset, lastOffset, lastStableOffset)`` entries
#: (pid1, 0, 29, 8) and (pid2, 8, 74, 36), last stable offsets included.
EXPECTED_ABORTED = (AbortedTxn(1, 0, 29, 8), AbortedTxn(2, 8, 74, 36))


def reload_and_check_aborted_transactions(create_log: LogFactory, log_dir: Path, recovery_point: int,
                                          rebuilt: list[int]) -> None:
    """Reopen after a crash with segment.bytes 5 KiB and ``recovery_point``, and check the aborted transactions
    and that the offset indexes of ``rebuilt`` (deleted before) were made again and find every batch."""
    reloaded = create_log(config(segment_bytes=1024 * 5), recovery_point=recovery_point, had_clean_shutdown=False)
    assert reloaded.log_end_offset == 90
    # the .txnindex entries rebuilt by recovery, last stable offsets included (Kafka: allAbortedTransactions)
    assert [txn for s in reloaded.log_segments() for txn in s.txn_index.all_aborted_txns()] == list(EXPECTED_ABORTED)
    # and the control batches say the same
    assert TransactionState.of(reloaded).aborted == EXPECTED_ABORTED
    for base in rebuilt:
        assert index_filename(log_dir, base).exists()
        segment = reloaded.segments.get(base)
        assert segment is not None
        for batch in segment.log.batches():
            assert first_batch(reloaded, batch.last_offset).last_offset == batch.last_offset


def test_full_transaction_index_recovery(create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    """testFullTransactionIndexRecovery: every segment recovered (recovery point 0, offset and transaction
    indexes deleted): the rebuilt ``.txnindex`` entries are Kafka's, last stable offsets included."""
    log = create_log(config(segment_bytes=128 * 5))
    append_mixed_transactions(log, mock_time)
    bases = [s.base_offset for s in log.log_segments()]
    assert len(bases) > 1
    log.close()
    # delete every offset and transaction index to force recovery
    for base in bases:
        index_filename(log_dir, base).unlink(missing_ok=True)
        txn_index_filename(log_dir, base).unlink(missing_ok=True)

    reload_and_check_aborted_transactions(create_log, log_dir, 0, bases)


def test_recover_only_last_segment(create_log: LogFactory, log_dir: Path, mock_time: MockTime) -> None:
    """testRecoverOnlyLastSegment: only the last segment recovered (the recovery point at its base, its offset
    index deleted), the rebuilt ``.txnindex`` entries are Kafka's."""
    log = create_log(config(segment_bytes=128 * 5))
    append_mixed_transactions(log, mock_time)
    last_segment = log.log_segments()[-1]
    recovery_point = last_segment.base_offset
    assert recovery_point > 0
    log.close()
    index_filename(log_dir, recovery_point).unlink(missing_ok=True)
    txn_index_filename(log_dir, recovery_point).unlink(missing_ok=True)

    reload_and_check_aborted_transactions(create_log, log_dir, recovery_point, [recovery_point])


def test_recover_last_segment_with_no_snapshots(create_log: LogFactory, log_dir: Path,
                                                mock_time: MockTime) -> None:
    """testRecoverLastSegmentWithNoSnapshots: as testRecoverOnlyLastSegment with every producer snapshot deleted
    first, which makes the producer state rebuild from the start of the log."""
    log = create_log(config(segment_bytes=128 * 5))
    append_mixed_transactions(log, mock_time)
    for path in log_dir.glob("*.snapshot"):
        path.unlink()  # Kafka's deleteProducerSnapshotFiles
    last_segment = log.log_segments()[-1]
    recovery_point = last_segment.base_offset
    log.close()
    index_filename(log_dir, recovery_point).unlink(missing_ok=True)
    txn_index_filename(log_dir, recovery_point).unlink(missing_ok=True)

    reload_and_check_aborted_transactions(create_log, log_dir, recovery_point, [recovery_point])


# -- the log manager ------------------------------------------------------------------------------------


class InterceptingLogManager(LogManager):
    """Kafka's ``interceptedLogManager``: a log manager whose per-partition load records the clean-shutdown
    flag it is given, or raises the error it is told to."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.error: BaseException | None = None
        self.clean_shutdown_intercepted: bool | None = None
        super().__init__(*args, **kwargs)

    def _load_log(self, log_dir: Path, tp: TopicPartition, had_clean_shutdown: bool,
                  recovery_points: Mapping[TopicPartition, int], log_start_offsets: Mapping[TopicPartition, int],
                  is_stray: Callable[[Log], bool]) -> Log:
        if self.error is not None:
            raise self.error
        self.clean_shutdown_intercepted = had_clean_shutdown
        # Kafka's makes a new log every time; one log is opened once for writing here, so a reload reuses it.
        log = self._logs.get(tp)
        if log is None:
            log = super()._load_log(log_dir, tp, had_clean_shutdown, recovery_points, log_start_offsets, is_stray)
        return log


def test_log_recovery_is_called_upon_broker_crash(scratch: Path, mock_time: MockTime, impl: Any) -> None:
    """testLogRecoveryIsCalledUponBrokerCrash: the log manager tells each log whether the last shutdown was
    clean, removing the clean-shutdown file before it loads anything, so a crash (or an error) during loading
    makes the next load an unclean one.

    kafkalog's LogManager loads in its constructor; Kafka's ``loadLogs`` is ``_load_logs`` here, called again
    on the same manager as Kafka's test does.  The errors a load passes on: an I/O error (Kafka's
    ``IOException``, here an ``OSError``, or a ``KafkaStorageError`` made from one) takes the log dir offline
    through the ``LogDirFailureChannel``; one a handler reported already (Kafka's ``KafkaStorageException``
    caused by an ``IOException``, here a ``KafkaStorageError`` whose ``log_dir`` is set) is passed over; any
    other fails the load.
    """
    log_dir = scratch / "kafka-logs"
    marker = log_dir / CLEAN_SHUTDOWN_FILE
    topic_partition = TopicPartition("foo", 0)

    def make_manager(channel: LogDirFailureChannel | None = None) -> InterceptingLogManager:
        return InterceptingLogManager([log_dir], LogConfig(), recovery_threads_per_data_dir=4,
                                      flush_check_ms=1000, flush_recovery_offset_checkpoint_ms=10000,
                                      flush_start_offset_checkpoint_ms=10000, retention_check_ms=1000,
                                      scheduler=mock_time.scheduler, time=mock_time, log_dir_failure_channel=channel)

    manager = make_manager()
    try:
        manager.create_log(topic_partition)
        # load after a clean shutdown
        marker.write_text('{"version":0,"brokerEpoch":0}')
        manager.clean_shutdown_intercepted = False
        manager._load_logs(lambda _log: False)
        assert manager.clean_shutdown_intercepted is True, "Unexpected value intercepted for clean shutdown flag"
        assert not marker.exists(), "Clean shutdown file must not exist after loadLogs has completed"
        # load without the clean-shutdown file
        manager.clean_shutdown_intercepted = True
        manager._load_logs(lambda _log: False)
        assert manager.clean_shutdown_intercepted is False, "Unexpected value intercepted for clean shutdown flag"
        assert not marker.exists(), "Clean shutdown file must not exist after loadLogs has completed"
    finally:
        manager.shutdown()
    assert marker.exists()  # a clean shutdown leaves the file

    channel = LogDirFailureChannel(1)
    manager = make_manager(channel)
    offline_dir = str(log_dir.resolve())
    try:
        assert manager.clean_shutdown_intercepted is True
        assert not channel.has_offline_log_dir(offline_dir), "log dir should not be offline before load logs"
        # a clean-shutdown file, then an error while loading, so that loading does not complete
        marker.write_text('{"version":0,"brokerEpoch":0}')
        manager.error = RuntimeError("Simulated Runtime error")
        with pytest.raises(RuntimeError):
            manager._load_logs(lambda _log: False)
        assert not marker.exists(), "Clean shutdown file must not have existed"
        assert not channel.has_offline_log_dir(offline_dir), \
            "log dir should not turn offline when Runtime Exception thrown"

        # an error a handler reported already (it took the dir offline itself): passed over
        handled = KafkaStorageError("Simulated Kafka storage error with IOException cause")
        handled.log_dir = offline_dir
        handled.__cause__ = OSError(errno.EIO, "Simulated IO error")
        manager.error = handled
        manager._load_logs(lambda _log: False)

        manager.error = KafkaStorageError("Simulated Kafka storage error without IOException cause")
        with pytest.raises(KafkaStorageError):
            manager._load_logs(lambda _log: False)
        assert not channel.has_offline_log_dir(offline_dir), \
            "log dir should not turn offline when KafkaStorageException without IOException cause thrown"

        manager.error = OSError(errno.EIO, "Simulated IO error")
        manager._load_logs(lambda _log: False)
        assert channel.has_offline_log_dir(offline_dir), "the log dir should turn offline after IOException thrown"

        # no error on the next load: it knows the last shutdown was not clean
        manager.error = None
        manager.clean_shutdown_intercepted = True
        manager._load_logs(lambda _log: False)
        assert manager.clean_shutdown_intercepted is False, "Unexpected value for clean shutdown flag"
    finally:
        manager.shutdown()


# -- read-only opening and lazy indexes -----------------------------------------------------------------


def snapshot(directory: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``directory``: its size and SHA-256."""
    return {str(p.relative_to(directory)): (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("shutdown", ["close_handlers", "close"])
def test_read_only_open_changes_nothing(create_log: LogFactory, log_dir: Path, mock_time: MockTime,
                                        shutdown: str) -> None:
    """``Log(dir, read_only=True)`` over a log a crash left (``close_handlers``: the active segment's indexes
    still preallocated, as a live broker's are) or a clean close left: every record reads back, every write is
    refused, and no file changes by a byte."""
    log = create_log(config(segment_bytes=1024, index_interval_bytes=100, segment_index_bytes=4096))
    now = mock_time.milliseconds()
    written = []
    for i in range(60):
        batch = [(f"k{i}".encode(), f"value {i}".encode() * 3, now + i)]
        if i % 10 == 9:
            batch.append((f"k{i}b".encode(), None, now + i))
        log.append_as_leader(MemoryRecords.with_records(batch, compression="gzip" if i % 7 == 0 else "none"))
        written.extend((key, value, ts) for key, value, ts in batch)
    assert log.number_of_segments > 5
    end = log.log_end_offset
    getattr(log, shutdown)()
    before = snapshot(log_dir.parent)
    full_size = {"index": 4096, "timeindex": 4092}  # segment.index.bytes rounded down to whole entries
    preallocated = sorted(kind for name, (size, _) in before.items()
                          if full_size.get(kind := name.rsplit(".", 1)[-1]) == size)
    assert preallocated == (["index", "timeindex"] if shutdown == "close_handlers" else [])

    read_only = Log(log_dir, read_only=True)
    try:
        assert read_only.read_only
        assert read_only.number_of_segments == log.number_of_segments
        assert (read_only.log_start_offset, read_only.log_end_offset) == (0, end)
        records = list(read_only.records())
        assert [r.offset for r in records] == list(range(end))
        assert [(r.key, r.value, r.timestamp) for r in records] == written
        assert [r.offset for r in read_only.read(end - 3, 1024 * 1024).records.records()] == \
            list(range(end - 3, end))
        found = read_only.find_offset_by_timestamp(now + 30)
        assert found is not None
        assert found.offset == next(i for i, (_, _, ts) in enumerate(written) if ts >= now + 30) == 33

        with pytest.raises(ReadOnlyError):
            read_only.append_as_leader(singleton(b"x"))
        with pytest.raises(ReadOnlyError):
            read_only.append_as_follower(MemoryRecords.with_records([(None, b"x")], base_offset=end))
        with pytest.raises(ReadOnlyError):
            read_only.truncate_to(1)
        with pytest.raises(ReadOnlyError):
            read_only.truncate_fully_and_start_at(end)
        with pytest.raises(ReadOnlyError):
            read_only.roll()
        with pytest.raises(ReadOnlyError):
            read_only.delete_old_segments()
        with pytest.raises(ReadOnlyError):
            read_only.delete_segments(read_only.log_segments()[:1], "test")
        with pytest.raises(ReadOnlyError):
            read_only.delete()
        read_only.flush()  # nothing to flush: a no-op
        assert read_only.log_end_offset == end
    finally:
        read_only.close()
    assert snapshot(log_dir.parent) == before


def _live_log(create_log: LogFactory, mock_time: MockTime) -> tuple[Log, list[int]]:
    """A writer's log left open: three segments, the active one with index entries in preallocated files."""
    log = create_log(config(segment_bytes=600, index_interval_bytes=1, segment_index_bytes=4096))
    now = mock_time.milliseconds()
    timestamps = []
    for i in range(22):
        log.append_as_leader(singleton(f"value {i}".encode() * 4, timestamp=now + i))
        timestamps.append(now + i)
    assert log.number_of_segments >= 3
    active = log.active_segment
    assert active.time_index.entries > 1 and active.offset_index.entries > 1
    assert active.time_index.path.stat().st_size == 4092  # preallocated: segment.index.bytes in whole entries
    return log, timestamps


def test_read_only_open_of_a_live_log_reads_the_active_indexes_quietly(
        create_log: LogFactory, log_dir: Path, mock_time: MockTime, caplog: pytest.LogCaptureFixture) -> None:
    """A reader of a directory its writer holds open (a stream tailing a live log, a batch read of a running
    broker's dir) finds the active segment's indexes preallocated: entries, then zeros to the end.  That is the
    normal state of an active segment, not a failed check: nothing is logged, and the reader uses the live entries
    (the writer's), not an index emptied for it."""
    writer, timestamps = _live_log(create_log, mock_time)
    active = writer.active_segment
    caplog.set_level(logging.DEBUG, logger="kafkalog")
    with Log(log_dir, read_only=True) as reader:
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
        last = reader.active_segment
        assert (last.offset_index.entries, last.time_index.entries) == \
            (active.offset_index.entries, active.time_index.entries)
        assert last.time_index.last_entry == active.time_index.last_entry
        assert last.offset_index.lookup(writer.log_end_offset) == active.offset_index.lookup(writer.log_end_offset)
        for i, timestamp in enumerate(timestamps):
            found = reader.find_offset_by_timestamp(timestamp)
            assert found is not None and found.offset == i
        assert [r.offset for r in reader.records()] == list(range(writer.log_end_offset))


def test_read_only_open_survives_a_writer_cutting_the_first_batch_it_reads(
        create_log: LogFactory, log_dir: Path, mock_time: MockTime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The live-entries rule reads the last segment's first batch; a writer that truncates the file at that moment
    makes the read short (seen in ``test_read_only_log_survives_a_writer_truncating``).  The open goes on: with no
    first batch to vouch for a zero first slot, the slot ends the entries, and reads start at the segment's
    start."""
    writer, _timestamps = _live_log(create_log, mock_time)
    real_batches = FileMessageSet.batches

    def cut_under_the_reader(self: FileMessageSet, *args: Any, **kwargs: Any) -> Any:
        raise KafkaStorageError(f"Short read from {self.file}: 0 of 61 bytes at position 0")

    monkeypatch.setattr(FileMessageSet, "batches", cut_under_the_reader)
    with Log(log_dir, read_only=True) as reader:
        monkeypatch.setattr(FileMessageSet, "batches", real_batches)
        assert reader.active_segment.offset_index.entries <= writer.active_segment.offset_index.entries
        assert [r.offset for r in reader.records()] == list(range(writer.log_end_offset))


def test_read_only_open_warns_of_a_zeroed_entry_among_the_last_segments_entries(
        create_log: LogFactory, log_dir: Path, mock_time: MockTime, caplog: pytest.LogCaptureFixture) -> None:
    """What is really wrong is still said: a zero-filled slot of the last segment's time index followed by data
    is a zeroed entry among live ones, which no writer leaves; the segment is read without its indexes."""
    writer, timestamps = _live_log(create_log, mock_time)
    time_index = writer.active_segment.time_index
    entries = time_index.entries
    writer.close_handlers()  # a crash: the files stay preallocated
    with time_index.path.open("r+b") as f:
        f.seek((entries + 3) * 12)
        f.write((timestamps[-1] + 100).to_bytes(8, "big") + (1).to_bytes(4, "big"))
    caplog.set_level(logging.WARNING, logger="kafkalog")
    with Log(log_dir, read_only=True) as reader:
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1
        assert "fail their check" in warnings[0] and f"entry {entries} zero-filled" in warnings[0]
        assert f"entry {entries + 3} after it" in warnings[0]
        assert (reader.active_segment.offset_index.entries, reader.active_segment.time_index.entries) == (0, 0)
        assert [r.offset for r in reader.records()] == list(range(len(timestamps)))


def test_read_only_open_takes_a_zero_tail_only_on_the_last_segment(
        create_log: LogFactory, log_dir: Path, mock_time: MockTime, caplog: pytest.LogCaptureFixture) -> None:
    """A writer trims an index when its segment rolls, so an earlier segment's zero tail is not a writer's state:
    its slots all count, as in Kafka, and the time index fails Kafka's sanity check (its last timestamp, 0, is
    below its first), which a read-only open reports and reads around."""
    writer, timestamps = _live_log(create_log, mock_time)
    first = writer.log_segments()[0]
    assert first.time_index.entries > 0
    writer.close()
    with first.time_index.path.open("ab") as f:
        f.write(bytes(12 * 5))
    caplog.set_level(logging.WARNING, logger="kafkalog")
    with Log(log_dir, read_only=True) as reader:
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1
        assert str(first.log.file) in warnings[0] and "last timestamp is 0" in warnings[0]
        assert [r.offset for r in reader.records()] == list(range(len(timestamps)))


def test_many_segments_reopened_open_their_indexes_lazily(create_log: LogFactory, log_dir: Path,
                                                          mock_time: MockTime) -> None:
    log_config = config(segment_bytes=4096, index_interval_bytes=1, segment_index_bytes=4096)
    log = create_log(log_config)
    now = mock_time.milliseconds()
    for i in range(300):
        log.append_as_leader(MemoryRecords.with_records([(None, f"a{i}".encode(), now + 2 * i)]))
        log.append_as_leader(MemoryRecords.with_records([(None, f"b{i}".encode(), now + 2 * i + 1)]))
        log.roll()
    log.append_as_leader(MemoryRecords.with_records([(None, b"last", now + 600)]))
    assert log.number_of_segments == 301
    log.close()

    log = create_log(log_config, had_clean_shutdown=True)
    segments = log.log_segments()
    assert len(segments) == 301
    inactive = segments[:-1]
    assert not any(s._lazy_offset_index.is_loaded for s in inactive)
    assert not any(s._lazy_time_index.is_loaded for s in inactive)
    maps = Path("/proc/self/maps")
    if maps.exists():
        mapped = {line.split()[-1] for line in maps.read_text().splitlines()
                  if line.rstrip().endswith((".index", ".timeindex")) and str(log_dir) in line}
        assert len(mapped) <= 2, mapped  # the active segment's two indexes at most

    # a read opens the index of the segment it reads, and only that one
    assert [r.value for r in log.read(300, 1024).records.records()] == [b"a150", b"b150"]
    assert [s.base_offset for s in inactive if s._lazy_offset_index.is_loaded] == [300]
    found = log.find_offset_by_timestamp(now + 401)
    assert found is not None
    assert found.offset == 401

    values = [r.value for r in log.records()]
    assert values == [v for i in range(300) for v in (f"a{i}".encode(), f"b{i}".encode())] + [b"last"]
    for offset in (0, 1, 299, 598, 599, 600):
        assert next(iter(log.read(offset, 100).records.batches())).last_offset == offset
