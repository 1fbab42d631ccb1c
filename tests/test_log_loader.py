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

Not ported, because kafkalog keeps no producer state, leader-epoch cache or transaction index: the
producer-snapshot cases (testProducerSnapshotsRecoveryAfterUncleanShutdown*,
testSkipLoadingIfEmptyProducerStateBeforeTruncation, testSkipTruncateAndReload*,
testLoadProducersAfterDeleteRecords*, testLoadingLogKeepsLargestStrayProducerStateSnapshot,
testCorruptedLogRecoveryDoesNotDeleteProducerStateSnapshotsPostRecovery,
testLogRecoveryIsCalledUponBrokerCrash), the epoch cases (testLogRecoversForLeaderEpoch,
testLeaderEpochCacheClearedAfterStaticMessageFormatDowngrade,
testRecoverAfterNonMonotonicCoordinatorEpochWrite), the transaction-index cases
(testFullTransactionIndexRecovery, testRecoverOnlyLastSegment, testRecoverLastSegmentWithNoSnapshots) and the
remote-storage case (testLogStartOffsetWhenRemoteStorageIsEnabled). The producer-snapshot assertions of
testOverCompactedLogRecovery* are left out of their ports.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import Any

import pytest
from log_test_utils import (
    LogFactory,
    config,
    first_overflow_segment,
    initialize_log_dir_with_overflowed_segment,
    singleton,
)

from kafkalog import MemoryRecords
from kafkalog.config import LogConfig
from kafkalog.errors import IllegalArgumentError, ReadOnlyError
from kafkalog.filenames import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    index_filename,
    log_filename,
    time_index_filename,
)
from kafkalog.index import OffsetIndex
from kafkalog.log import CLEAN_SHUTDOWN_FILE, Log
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition, log_delete_dir_name

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
    log.close()
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

    # without the flag the log looks for the marker in the parent directory
    log = create_log(log_config, had_clean_shutdown=None)
    assert (log.had_clean_shutdown, log.recovery_point, log.log_end_offset) == (False, 0, 100)
    log.close()
    (log_dir.parent / CLEAN_SHUTDOWN_FILE).write_text('{"version":0,"brokerEpoch":3}')
    log = create_log(log_config, had_clean_shutdown=None)
    assert (log.had_clean_shutdown, log.recovery_point, log.log_end_offset) == (True, 100, 100)


PAIRS = [[INT32_MAX + 2, INT32_MAX + 3], [INT32_MAX + 4, INT32_MAX + 5], [INT32_MAX + 6, INT32_MAX + 7]]


@pytest.mark.parametrize(("magic", "compression", "batches", "bases", "index_files"), [
    # testOverCompactedLogRecovery: the roll after offset 0 starts a segment at Int.MaxValue + 2
    (2, "none", [[INT32_MAX + 2], [INT32_MAX + 3], [INT32_MAX + 4]], [INT32_MAX + 2] * 3, 2),
    # testOverCompactedLogRecoveryMultiRecord
    (2, "gzip", PAIRS, [INT32_MAX + 2] * 3, 2),
    # testOverCompactedLogRecoveryMultiRecordV1: a v1 wrapper gives only its last offset, so the first roll
    # goes to max(1, lastOffset - Int.MaxValue) = 3, and the next one to Int.MaxValue + 4
    (1, "gzip", PAIRS, [3, INT32_MAX + 4, INT32_MAX + 4], 3),
], ids=["single", "multi-record", "multi-record-v1"])
def test_over_compacted_log_recovery(create_log: LogFactory, log_dir: Path, magic: int, compression: str,
                                     batches: list[list[int]], bases: list[int], index_files: int) -> None:
    log = create_log(config(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024))

    def records(offsets: list[int], codec: str) -> MemoryRecords:
        return MemoryRecords.with_records([(f"v{o}".encode(), f"k{o}".encode()) for o in offsets],
                                          magic=magic, compression=codec, base_offset=offsets[0])

    log.append_as_follower(records([0], "none"))
    assert log.active_segment.base_offset == 0
    for offsets, base in zip(batches, bases, strict=True):
        log.append_as_follower(records(offsets, compression))
        assert log.active_segment.base_offset == base
    log.close()

    found = [p for p in log_dir.iterdir() if ".index" in p.name]
    assert len(found) == index_files
    for path in found:
        index = OffsetIndex(path, int(path.name.split(".")[0]))
        try:
            assert index.last_offset >= 0
        finally:
            index.close()


def test_load_partition_dir_with_no_segments_should_not_throw(create_log: LogFactory, scratch: Path) -> None:
    directory = scratch / log_delete_dir_name(TopicPartition("foo", 3))
    directory.mkdir()
    log = create_log(config(), directory)
    assert log.number_of_segments == 1
    assert log.log_end_offset == 0
    assert log.topic_partition == TopicPartition("foo", 3)


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


@pytest.mark.parametrize("phase", [1, 2, 3, 4, 5])
def test_recovery_after_crash_during_split(create_log: LogFactory, log_dir: Path, mock_time: MockTime,
                                           phase: int) -> None:
    """testRecoveryAfterCrashDuringSplitPhase1-5 (spec §3.10 steps 1-4, §3.18).

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
    assert names(log_dir) == [f"{start_offset:020d}{suffix}" for suffix in (".index", ".log", ".timeindex")]


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
                          if full_size.get(kind := name.rsplit(".", 1)[1]) == size)
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
