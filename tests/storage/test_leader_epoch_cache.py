"""The leader-epoch cache (kafkalog.leader_epoch_cache): Kafka 3.8.0 ``LeaderEpochFileCacheTest`` (core,
``kafka.server.epoch``) whole, then what the port adds: the checkpoint bytes, the asynchronous flush through the
scheduler, bad input, threads, and the golden folder's ``leader-epoch-checkpoint`` files rebuilt byte for byte.

Kafka's ``LeaderEpochCheckpointFileWithFailureHandlerTest`` is ported in ``test_checkpoint.py``
(``test_leader_epoch_persist_overwrite_and_recreate``).  Kafka's ``OptionalInt`` / ``Optional`` are ``None`` or
the value here, and ``endOffsetFor``'s ``Map.Entry`` a tuple.
"""

from __future__ import annotations

import itertools
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalog.checkpoint import LEADER_EPOCH_CHECKPOINT_FILE, EpochEntry, LeaderEpochCheckpoint
from kafkalog.errors import IllegalArgumentError, ReadOnlyError
from kafkalog.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochAndOffset,
    LeaderEpochFileCache,
)
from kafkalog.scheduler import MockScheduler, MockTime, ScheduledTask
from kafkalog.topic import TopicPartition

TP = TopicPartition("TestTopic", 5)
UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


@pytest.fixture
def mock_time() -> MockTime:
    return MockTime()


@pytest.fixture
def checkpoint(tmp_path: Path) -> LeaderEpochCheckpoint:
    """Kafka: ``new LeaderEpochCheckpointFile(TestUtils.tempFile(), ...)``."""
    (tmp_path / "part-0").mkdir()
    return LeaderEpochCheckpoint(tmp_path / "part-0" / LEADER_EPOCH_CHECKPOINT_FILE)


@pytest.fixture
def cache(checkpoint: LeaderEpochCheckpoint, mock_time: MockTime) -> LeaderEpochFileCache:
    return LeaderEpochFileCache(TP, checkpoint, mock_time.scheduler)


def _three(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 6)
    cache.assign(3, 8)
    cache.assign(4, 11)


def _three_truncated(cache: LeaderEpochFileCache, *, start: int | None = None,
                     end: int | None = None) -> list[EpochEntry]:
    """Kafka's setting of the truncation tests: epochs 2, 3, 4 from offsets 6, 8, 11, then one truncation."""
    _three(cache)
    if start is not None:
        cache.truncate_from_start_async_flush(start)
    if end is not None:
        cache.truncate_from_end_async_flush(end)
    return cache.epoch_entries()


# -- Kafka's LeaderEpochFileCacheTest ------------------------------------------------------------------------


def test_previous_epoch(cache: LeaderEpochFileCache) -> None:
    assert cache.previous_epoch() is None
    cache.assign(2, 10)
    assert cache.previous_epoch() is None
    cache.assign(4, 15)
    assert cache.previous_epoch() == 2
    cache.assign(10, 20)
    assert cache.previous_epoch() == 4
    cache.truncate_from_end_async_flush(18)
    assert cache.previous_epoch() == 2


def test_should_add_epoch_and_message_offset_to_cache(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 10)
    log_end_offset = 11
    assert cache.latest_epoch() == 2
    assert cache.epoch_entries()[0] == EpochEntry(2, 10)
    assert cache.end_offset_for(2, log_end_offset) == (2, log_end_offset)


def test_should_return_log_end_offset_if_latest_epoch_requested(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 11)
    cache.assign(2, 12)
    log_end_offset = 14
    assert cache.end_offset_for(2, log_end_offset) == (2, log_end_offset)


def test_should_return_undefined_offset_if_undefined_epoch_requested(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 11)
    cache.assign(3, 12)
    # a bootstrapping follower asks for UNDEFINED_EPOCH of a cache that is not empty
    assert cache.end_offset_for(UNDEFINED_EPOCH, 0) == UNDEFINED


def test_should_not_overwrite_log_end_offset_for_a_leader_epoch_once_it_has_been_assigned(
        cache: LeaderEpochFileCache) -> None:
    log_end_offset = 9
    cache.assign(2, log_end_offset)
    cache.assign(2, 10)
    assert cache.epoch_entries()[0].start_offset == log_end_offset
    assert cache.epoch_entries() == [EpochEntry(2, 9)]


def test_should_enforce_monotonically_increasing_start_offsets(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 9)
    cache.assign(3, 9)  # a new epoch at the same offset replaces the old one
    assert cache.epoch_entries() == [EpochEntry(3, 9)]


def test_should_not_overwrite_offset_for_a_leader_epoch_once_it_has_been_assigned(
        cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 6)
    cache.assign(2, 10)
    assert cache.epoch_entries()[0].start_offset == 6


def test_should_return_unsupported_if_no_epoch_recorded(cache: LeaderEpochFileCache) -> None:
    assert cache.end_offset_for(0, 0) == UNDEFINED


def test_should_return_unsupported_if_no_epoch_recorded_and_undefined_epoch_requested(
        cache: LeaderEpochFileCache) -> None:
    # a follower on an older message format asks for UNDEFINED_EPOCH of an empty cache
    assert cache.end_offset_for(UNDEFINED_EPOCH, 73) == UNDEFINED


def test_should_return_first_epoch_if_requested_epoch_less_than_first_epoch(cache: LeaderEpochFileCache) -> None:
    cache.assign(5, 11)
    cache.assign(6, 12)
    cache.assign(7, 13)
    assert cache.end_offset_for(4, 0) == (4, 11)


def test_should_truncate_if_matching_epoch_but_earlier_starting_offset(cache: LeaderEpochFileCache) -> None:
    cache.assign(5, 11)
    cache.assign(6, 12)
    cache.assign(7, 13)
    cache.assign(7, 12)  # epoch 7 starts earlier: epoch 6 goes
    assert cache.end_offset_for(5, 0) == (5, 12)
    assert cache.end_offset_for(6, 0) == (5, 12)


def test_should_get_first_offset_of_subsequent_epoch_when_offset_requested_for_previous_epoch(
        cache: LeaderEpochFileCache) -> None:
    for epoch, offset in ((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)):
        cache.assign(epoch, offset)
    assert cache.end_offset_for(2, 17) == (2, 15)


def test_should_return_next_available_epoch_if_there_is_no_exact_epoch_for_the_one_requested(
        cache: LeaderEpochFileCache) -> None:
    cache.assign(0, 10)
    cache.assign(2, 13)
    cache.assign(4, 17)
    assert cache.end_offset_for(1, 0) == (0, 13)
    assert cache.end_offset_for(2, 0) == (2, 17)
    assert cache.end_offset_for(3, 0) == (2, 17)


def test_should_not_update_epoch_and_start_offset_if_it_did_not_change(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 6)
    cache.assign(2, 7)
    assert len(cache.epoch_entries()) == 1
    assert cache.epoch_entries()[0] == EpochEntry(2, 6)


def test_should_return_invalid_offset_if_epoch_is_requested_which_is_not_currently_tracked(
        cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 100)
    assert cache.end_offset_for(3, 100) == UNDEFINED


def test_should_support_epochs_that_do_not_start_from_zero(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 6)
    log_end_offset = 7
    assert cache.end_offset_for(2, log_end_offset) == (2, log_end_offset)
    assert len(cache.epoch_entries()) == 1
    assert cache.epoch_entries()[0] == EpochEntry(2, 6)


def test_should_persist_epochs_between_instances(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    cache = LeaderEpochFileCache(TP, LeaderEpochCheckpoint(path), MockTime().scheduler)
    cache.assign(2, 6)
    cache2 = LeaderEpochFileCache(TP, LeaderEpochCheckpoint(path), MockTime().scheduler)
    assert len(cache2.epoch_entries()) == 1
    assert cache2.epoch_entries()[0] == EpochEntry(2, 6)


def test_should_enforce_monotonically_increasing_epochs(cache: LeaderEpochFileCache) -> None:
    cache.assign(1, 5)
    cache.assign(2, 6)
    # An epoch in the past with a later offset: the log is already inconsistent, and the cache truncates to
    # the point of conflict so that epochs and offsets keep increasing together.
    cache.assign(1, 7)
    log_end_offset = 8
    assert cache.latest_epoch() == 1
    assert cache.end_offset_for(1, log_end_offset) == (1, 8)
    assert cache.end_offset_for(2, log_end_offset) == UNDEFINED
    assert cache.epoch_entries()[0] == EpochEntry(1, 7)


def test_should_enforce_offsets_increase_monotonically(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 6)
    cache.assign(3, 5)  # the epoch goes forward, the offset back: the last assignment wins
    assert cache.epoch_entries()[0] == EpochEntry(3, 5)


def test_should_increase_and_track_epochs_as_leaders_change_many_times(cache: LeaderEpochFileCache) -> None:
    log_end_offset = 0
    cache.assign(0, 0)
    cache.assign(1, 0)
    assert cache.latest_epoch() == 1
    assert cache.end_offset_for(1, log_end_offset) == (1, 0)
    assert cache.end_offset_for(0, log_end_offset) == (0, 0)
    log_end_offset = 5  # five messages in epoch 1
    assert cache.end_offset_for(1, log_end_offset) == (1, 5)
    assert cache.end_offset_for(0, log_end_offset) == (0, 0)
    cache.assign(2, 5)
    log_end_offset = 10
    assert cache.end_offset_for(2, log_end_offset) == (2, 10)
    assert cache.end_offset_for(1, log_end_offset) == (1, 5)
    assert cache.end_offset_for(0, log_end_offset) == (0, 0)


def test_should_increase_and_track_epochs_as_follower_receives_many_messages(cache: LeaderEpochFileCache) -> None:
    # three messages per epoch, each assigning its epoch at its offset; the end of the latest epoch is the log end
    for epoch in (0, 1, 2):
        for offset in range(3 * epoch, 3 * epoch + 3):
            cache.assign(epoch, offset)
        log_end_offset = 3 * epoch + 3
        assert cache.latest_epoch() == epoch
        assert cache.end_offset_for(epoch, log_end_offset) == (epoch, log_end_offset)
    assert log_end_offset == 9
    # an older epoch ends where the next one starts
    assert cache.end_offset_for(0, log_end_offset) == (0, 3)
    assert cache.end_offset_for(1, log_end_offset) == (1, 6)


def test_should_drop_entries_on_epoch_boundary_when_removing_latest_entries(cache: LeaderEpochFileCache) -> None:
    assert _three_truncated(cache, end=8) == [EpochEntry(2, 6)]  # inclusive: epochs 3 and 4 go


def test_should_preserve_reset_offset_on_clear_earliest_if_one_exists(cache: LeaderEpochFileCache) -> None:
    assert _three_truncated(cache, start=8) == [EpochEntry(3, 8), EpochEntry(4, 11)]


def test_should_update_saved_offset_when_offset_to_clear_to_is_between_epochs(cache: LeaderEpochFileCache) -> None:
    assert _three_truncated(cache, start=9) == [EpochEntry(3, 9), EpochEntry(4, 11)]  # epoch 3 stays, now from 9


def test_should_not_clear_anything_if_offset_to_early(cache: LeaderEpochFileCache) -> None:
    assert _three_truncated(cache, start=1) == [EpochEntry(2, 6), EpochEntry(3, 8), EpochEntry(4, 11)]


def test_should_not_clear_anything_if_offset_to_first_offset(cache: LeaderEpochFileCache) -> None:
    assert _three_truncated(cache, start=6) == [EpochEntry(2, 6), EpochEntry(3, 8), EpochEntry(4, 11)]


def test_should_retain_latest_epoch_on_clear_all_earliest(cache: LeaderEpochFileCache) -> None:
    assert _three_truncated(cache, start=11) == [EpochEntry(4, 11)]


def test_should_update_offset_between_epoch_boundaries_on_clear_earliest(cache: LeaderEpochFileCache) -> None:
    assert _three_truncated(cache, start=9) == [EpochEntry(3, 9), EpochEntry(4, 11)]


def test_should_update_offset_between_epoch_boundaries_on_clear_earliest2(cache: LeaderEpochFileCache) -> None:
    cache.assign(0, 0)
    cache.assign(1, 7)
    cache.assign(2, 10)
    cache.truncate_from_start_async_flush(5)
    assert cache.epoch_entries() == [EpochEntry(0, 5), EpochEntry(1, 7), EpochEntry(2, 10)]


def test_should_retain_latest_epoch_on_clear_all_earliest_and_update_its_offset(
        cache: LeaderEpochFileCache) -> None:
    assert _three_truncated(cache, start=15) == [EpochEntry(4, 15)]


def test_should_drop_entries_between_epoch_boundary_when_removing_newest(cache: LeaderEpochFileCache) -> None:
    _three(cache)
    cache.truncate_from_end_async_flush(9)
    assert cache.latest_epoch() == 3
    assert cache.epoch_entries() == [EpochEntry(2, 6), EpochEntry(3, 8)]


def test_should_clear_all_entries(cache: LeaderEpochFileCache) -> None:
    _three(cache)
    cache.clear_and_flush()
    assert len(cache.epoch_entries()) == 0


def test_should_not_reset_epoch_history_head_if_undefined_passed(cache: LeaderEpochFileCache) -> None:
    _three(cache)
    cache.truncate_from_start_async_flush(UNDEFINED_EPOCH_OFFSET)
    assert len(cache.epoch_entries()) == 3


def test_should_not_reset_epoch_history_tail_if_undefined_passed(cache: LeaderEpochFileCache) -> None:
    _three(cache)
    cache.truncate_from_end_async_flush(UNDEFINED_EPOCH_OFFSET)
    assert len(cache.epoch_entries()) == 3


def test_should_fetch_latest_epoch_of_empty_cache(cache: LeaderEpochFileCache) -> None:
    assert cache.latest_epoch() is None


def test_should_fetch_end_offset_of_empty_cache(cache: LeaderEpochFileCache) -> None:
    assert cache.end_offset_for(7, 0) == UNDEFINED


def test_should_clear_earliest_on_empty_cache(cache: LeaderEpochFileCache) -> None:
    cache.truncate_from_start_async_flush(7)
    assert cache.epoch_entries() == []


def test_should_clear_latest_on_empty_cache(cache: LeaderEpochFileCache) -> None:
    cache.truncate_from_end_async_flush(7)
    assert cache.epoch_entries() == []


def test_find_previous_epoch(cache: LeaderEpochFileCache) -> None:
    assert cache.previous_epoch(2) is None
    cache.assign(2, 10)
    assert cache.previous_epoch(2) is None
    cache.assign(4, 15)
    assert cache.previous_epoch(4) == 2
    cache.assign(10, 20)
    assert cache.previous_epoch(10) == 4
    cache.truncate_from_end_async_flush(18)
    latest = cache.latest_epoch()
    assert latest is not None
    assert cache.previous_epoch(latest) == 2


def test_find_previous_entry(cache: LeaderEpochFileCache) -> None:
    assert cache.previous_entry(2) is None
    cache.assign(2, 10)
    assert cache.previous_entry(2) is None
    cache.assign(4, 15)
    assert cache.previous_entry(4) == EpochEntry(2, 10)
    cache.assign(10, 20)
    assert cache.previous_entry(10) == EpochEntry(4, 15)
    cache.truncate_from_end_async_flush(18)
    latest = cache.latest_epoch()
    assert latest is not None
    assert cache.previous_entry(latest) == EpochEntry(2, 10)


def test_find_next_epoch(cache: LeaderEpochFileCache) -> None:
    cache.assign(0, 0)
    cache.assign(1, 100)
    cache.assign(2, 200)
    assert cache.next_epoch(-1) == 0
    assert cache.next_epoch(0) == 1
    assert cache.next_epoch(1) == 2
    assert cache.next_epoch(2) is None
    assert cache.next_epoch(100) is None


def test_get_epoch_entry(cache: LeaderEpochFileCache) -> None:
    cache.assign(2, 100)
    cache.assign(3, 500)
    cache.assign(5, 1000)
    assert cache.epoch_entry(2) == EpochEntry(2, 100)
    assert cache.epoch_entry(3) == EpochEntry(3, 500)
    assert cache.epoch_entry(5) == EpochEntry(5, 1000)


def test_should_fetch_epoch_for_given_offset(cache: LeaderEpochFileCache) -> None:
    cache.assign(0, 10)
    cache.assign(1, 20)
    cache.assign(5, 30)
    assert cache.epoch_for_offset(25) == 1
    assert cache.epoch_for_offset(20) == 1
    assert cache.epoch_for_offset(30) == 5
    assert cache.epoch_for_offset(50) == 5
    assert cache.epoch_for_offset(5) is None


def test_should_write_checkpoint_on_truncation(cache: LeaderEpochFileCache,
                                               checkpoint: LeaderEpochCheckpoint) -> None:
    _three(cache)
    cache.truncate_from_end_async_flush(11)
    cache.truncate_from_start_async_flush(8)
    assert checkpoint.read() == [EpochEntry(3, 8)]


# -- beyond Kafka's tests -----------------------------------------------------------------------------------


def test_checkpoint_bytes_follow_every_assign(cache: LeaderEpochFileCache, checkpoint: LeaderEpochCheckpoint) -> None:
    assert checkpoint.file.read_bytes() == b""  # opening writes nothing
    cache.assign(0, 0)
    assert checkpoint.file.read_bytes() == b"0\n1\n0 0\n"
    cache.assign(0, 5)  # no change, no write
    cache.assign(3, 1944)
    assert checkpoint.file.read_bytes() == b"0\n2\n0 0\n3 1944\n"
    cache.clear()
    assert checkpoint.file.read_bytes() == b"0\n2\n0 0\n3 1944\n"  # clear leaves the file
    cache.clear_and_flush()
    assert checkpoint.file.read_bytes() == b"0\n0\n"


def test_truncations_flush_through_the_scheduler(tmp_path: Path) -> None:
    """The truncations write the checkpoint as a scheduled task named ``leader-epoch-cache-flush-<tp>``;
    until it runs the file keeps the older (longer) list, which a reload truncates again."""
    time = MockTime()
    ran: list[str] = []

    class RecordingScheduler(MockScheduler):
        def schedule(self, name: str, fun: Callable[[], object], delay_ms: int = 0,
                     period_ms: int = -1) -> ScheduledTask:
            ran.append(name)
            return super().schedule(name, fun, delay_ms + 10, period_ms)

    checkpoint = LeaderEpochCheckpoint(tmp_path / "cp")
    scheduler = RecordingScheduler(time)
    cache = LeaderEpochFileCache(TP, checkpoint, scheduler)
    _three(cache)
    cache.truncate_from_end_async_flush(11)
    assert ran == ["leader-epoch-cache-flush-TestTopic-5"]
    assert checkpoint.read() == [EpochEntry(2, 6), EpochEntry(3, 8), EpochEntry(4, 11)]
    cache.truncate_from_end_async_flush(100)  # nothing removed, nothing scheduled
    cache.truncate_from_start_async_flush(5)
    assert len(ran) == 1
    time.sleep(10)
    scheduler.tick()
    assert checkpoint.read() == [EpochEntry(2, 6), EpochEntry(3, 8)]
    # Truncating from an entry's own start offset removes and puts it back: a flush, of an unchanged list.
    cache.truncate_from_start_async_flush(6)
    assert len(ran) == 2
    time.sleep(10)
    scheduler.tick()
    assert checkpoint.read() == [EpochEntry(2, 6), EpochEntry(3, 8)]
    # A flush that finds the partition directory gone is no error (writeForTruncation).
    cache.truncate_from_start_async_flush(7)
    shutil.rmtree(tmp_path)
    time.sleep(10)
    scheduler.tick()
    assert cache.epoch_entries() == [EpochEntry(2, 7), EpochEntry(3, 8)]


def test_reading_the_checkpoint_assigns_each_entry(tmp_path: Path, mock_time: MockTime) -> None:
    """Opening assigns each line without writing: entries out of order are resolved as assign resolves them,
    and the file stays as it was until the next write."""
    path = tmp_path / "cp"
    path.write_bytes(b"0\n4\n1 0\n2 10\n5 20\n3 15\n")
    cache = LeaderEpochFileCache(TP, LeaderEpochCheckpoint(path), mock_time.scheduler)
    assert cache.epoch_entries() == [EpochEntry(1, 0), EpochEntry(2, 10), EpochEntry(3, 15)]
    assert path.read_bytes() == b"0\n4\n1 0\n2 10\n5 20\n3 15\n"
    path.write_bytes(b"0\n1\n-1 0\n")
    with pytest.raises(IllegalArgumentError, match=r"Received invalid partition leader epoch entry "
                                                   r"EpochEntry\(epoch=-1, startOffset=0\)"):
        LeaderEpochFileCache(TP, LeaderEpochCheckpoint(path), mock_time.scheduler)


@pytest.mark.parametrize("epoch, offset", [(-1, 0), (0, -1), (1 << 31, 0), (0, 1 << 63), ("1", 0), (0, "1"),
                                           (0, 1.0)])
def test_invalid_entries_are_refused(cache: LeaderEpochFileCache, checkpoint: LeaderEpochCheckpoint,
                                     epoch: int, offset: int) -> None:
    cache.assign(0, 0)
    with pytest.raises(IllegalArgumentError):
        cache.assign(epoch, offset)
    with pytest.raises(IllegalArgumentError):
        cache.assign_all([EpochEntry(epoch, offset)])
    assert cache.epoch_entries() == [EpochEntry(0, 0)]
    assert checkpoint.read() == [EpochEntry(0, 0)]


def test_assign_all_writes_once(cache: LeaderEpochFileCache, checkpoint: LeaderEpochCheckpoint) -> None:
    cache.assign_all([EpochEntry(0, 0), EpochEntry(2, 5), (2, 7), EpochEntry(4, 9)])
    assert checkpoint.read() == cache.epoch_entries() == [EpochEntry(0, 0), EpochEntry(2, 5), EpochEntry(4, 9)]
    assert cache.earliest_entry() == EpochEntry(0, 0)
    assert cache.latest_entry() == EpochEntry(4, 9)
    assert cache.non_empty()
    assert cache.epoch_with_offsets() == {0: 0, 2: 5, 4: 9}
    assert cache.epoch_entry(1) is None and cache.epoch_entry(7) is None
    cache.assign_all([])  # no entries, no write
    assert checkpoint.read() == cache.epoch_entries()


def test_epoch_entries_in_range_and_with_checkpoint(cache: LeaderEpochFileCache, tmp_path: Path) -> None:
    _three(cache)
    assert cache.epoch_entries_in_range(7, 11) == [EpochEntry(2, 7), EpochEntry(3, 8)]
    assert cache.epoch_entries_in_range(-1, 9) == [EpochEntry(2, 6), EpochEntry(3, 8)]
    assert cache.epoch_entries_in_range(12, 20) == [EpochEntry(4, 12)]
    assert cache.epoch_entries() == [EpochEntry(2, 6), EpochEntry(3, 8), EpochEntry(4, 11)]  # a copy was cut
    other_path = tmp_path / "other"
    other_path.write_bytes(b"0\n1\n9 99\n")
    other = cache.with_checkpoint(LeaderEpochCheckpoint(other_path))
    assert other.epoch_entries() == cache.epoch_entries()
    assert other_path.read_bytes() == b"0\n1\n9 99\n"  # neither read nor written
    other.assign(5, 20)
    assert other_path.read_bytes() == b"0\n4\n2 6\n3 8\n4 11\n5 20\n"
    assert cache.latest_epoch() == 4


def test_a_read_only_checkpoint_serves_lookups_and_refuses_writes(tmp_path: Path, mock_time: MockTime) -> None:
    """Over a read-only checkpoint (how a read-only log opens a broker's directory) the cache answers, and a
    change that must be written fails with :class:`ReadOnlyError`; as in Kafka, when the write fails the
    change has already been made in memory."""
    path = tmp_path / LEADER_EPOCH_CHECKPOINT_FILE
    path.write_bytes(b"0\n2\n0 0\n3 1944\n")
    cache = LeaderEpochFileCache(TP, LeaderEpochCheckpoint(path, read_only=True), mock_time.scheduler)
    assert cache.end_offset_for(0, 2000) == (0, 1944)
    assert cache.epoch_for_offset(2000) == 3
    with pytest.raises(ReadOnlyError):
        cache.assign(4, 2000)
    assert cache.latest_epoch() == 4
    with pytest.raises(ReadOnlyError):
        cache.truncate_from_end_async_flush(2000)  # the flush runs at once on the mock scheduler
    assert path.read_bytes() == b"0\n2\n0 0\n3 1944\n"
    assert LeaderEpochFileCache(TP, LeaderEpochCheckpoint(tmp_path / "none", read_only=True),
                                mock_time.scheduler).epoch_entries() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [LEADER_EPOCH_CHECKPOINT_FILE]


def test_end_offset_for_is_an_epoch_and_offset(cache: LeaderEpochFileCache) -> None:
    cache.assign(3, 7)
    result = cache.end_offset_for(3, 12)
    assert result == EpochAndOffset(3, 12) and result.epoch == 3 and result.end_offset == 12


def test_concurrent_assigns_keep_epochs_increasing(cache: LeaderEpochFileCache,
                                                   checkpoint: LeaderEpochCheckpoint) -> None:
    """Writers racing on one cache: whatever the interleaving, the entries increase in epoch and offset, and
    the file holds a state the cache was in (the last one, since every write holds the lock)."""

    def writer(first: int) -> None:
        for i in range(first, 80, 4):
            cache.assign(i, i * 10)
            cache.latest_epoch()
            cache.end_offset_for(i // 2, i * 10)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    entries = cache.epoch_entries()
    assert entries and all(a.epoch < b.epoch and a.start_offset < b.start_offset
                           for a, b in itertools.pairwise(entries))
    assert checkpoint.read() == entries


# -- golden data ---------------------------------------------------------------------------------------------


def _golden_epoch_files(golden: Path) -> list[Path]:
    return sorted(p for p in golden.rglob(LEADER_EPOCH_CHECKPOINT_FILE) if p.is_file())


def test_golden_checkpoints_rebuilt_by_assign(golden: Path, tmp_path: Path) -> None:
    """Every broker-written ``leader-epoch-checkpoint``: opening a copy gives its entries, and assigning them
    one by one to a new cache writes the broker's bytes."""
    compared = 0
    for n, path in enumerate(_golden_epoch_files(golden)):
        data = path.read_bytes()
        copy = tmp_path / f"{n}.copy"
        shutil.copyfile(path, copy)
        entries = LeaderEpochFileCache(TP, LeaderEpochCheckpoint(copy), MockTime().scheduler).epoch_entries()
        assert entries == LeaderEpochCheckpoint(path, read_only=True).read()
        assert copy.read_bytes() == data
        if not entries:
            continue  # a file the broker never wrote; a cache has nothing to assign
        rebuilt = tmp_path / f"{n}.rebuilt"
        cache = LeaderEpochFileCache(TP, LeaderEpochCheckpoint(rebuilt), MockTime().scheduler)
        for epoch, start_offset in entries:
            cache.assign(epoch, start_offset)
        assert rebuilt.read_bytes() == data, path
        compared += 1
    # every file with entries, by an independent look at its count line
    assert compared == sum(1 for p in _golden_epoch_files(golden) if p.read_bytes()[2:4] not in (b"", b"0\n")) > 0


def test_golden_epochs_agree_with_the_batches(golden: Path, tmp_path: Path) -> None:
    """The broker's cache against the log it describes.  Rebuilt from the batches as ``LogSegment.recover``
    does (a v2 batch with an epoch above the latest assigns it at its base offset), then truncated to the log's
    offsets as ``LogLoader`` does, the cache equals the broker's byte for byte wherever the log still holds the
    batch that opened its first epoch; elsewhere (compacted or deleted heads, epochs begun with no write) it
    differs.  And every batch from the broker's first entry on falls, by the broker's cache, in the epoch
    stamped on it."""
    from kafkalog.log import Log

    exact = checked = 0
    for n, path in enumerate(_golden_epoch_files(golden)):
        broker = LeaderEpochFileCache(TP, LeaderEpochCheckpoint(path, read_only=True), MockTime().scheduler)
        rebuilt_file = tmp_path / f"{n}.rebuilt"
        rebuilt = LeaderEpochFileCache(TP, LeaderEpochCheckpoint(rebuilt_file), MockTime().scheduler)
        first_batch: int | None = None
        earliest = broker.earliest_entry()
        with Log(path.parent, read_only=True) as log:
            for segment in log.log_segments():
                for batch in segment.batches():
                    if batch.magic < 2 or batch.partition_leader_epoch < 0:
                        continue
                    first_batch = batch.base_offset if first_batch is None else first_batch
                    # Below the broker's first entry the log start has moved on (deleteRecords) and the cache
                    # knows no epoch.
                    if earliest is not None and batch.base_offset >= earliest.start_offset:
                        assert broker.epoch_for_offset(batch.base_offset) == batch.partition_leader_epoch, path
                        checked += 1
                    latest = rebuilt.latest_epoch()
                    if latest is None or batch.partition_leader_epoch > latest:
                        rebuilt.assign(batch.partition_leader_epoch, batch.base_offset)
            rebuilt.truncate_from_end_async_flush(log.log_end_offset)
            rebuilt.truncate_from_start_async_flush(log.log_start_offset)
        if first_batch is not None and earliest is not None and earliest.start_offset == first_batch:
            assert rebuilt_file.read_bytes() == path.read_bytes(), path
            exact += 1
    assert exact > len(_golden_epoch_files(golden)) // 2
    assert checked > 1000, (exact, checked)
