"""The log's leader-epoch cache (kafkalog.log.leader_epochs) against Kafka 3.8.0's UnifiedLogTest and LogLoaderTest,
then what the port adds: the checkpoint file at each call site, the flush without a running scheduler, a
read-only log, appends without an epoch, and the aborted transactions collected from the segments' indexes.

Logs are made as in ``tests/log/test_log.py`` (``create_log``: Kafka's ``createLog`` with a :class:`MockTime`
whose scheduler runs the checkpoint writes of the cache's truncations at once), under both kernel twins.
Kafka's ``epochCache(log)`` is ``log.leader_epoch_cache``; ``LogTestUtils.assertLeaderEpochCacheEmpty`` is
:func:`assert_leader_epoch_cache_empty`.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog import MemoryRecords
from kafkalog.checkpoint import LEADER_EPOCH_CHECKPOINT_FILE, EpochEntry, LeaderEpochCheckpoint
from kafkalog.errors import IllegalArgumentError
from kafkalog.leader_epoch_cache import LeaderEpochFileCache
from kafkalog.log import Log
from kafkalog.log.leader_epochs import OffsetAndEpoch
from kafkalog.scheduler import KafkaScheduler, MockTime
from kafkalog.topic import TopicPartition, log_delete_dir_name
from kafkalog.transaction_index import AbortedTxn
from tests.support.log_test_utils import LogFactory, config, singleton


def records(*values: bytes, base_offset: int = 0, magic: int = 2, partition_leader_epoch: int = -1) -> MemoryRecords:
    """Kafka's ``TestUtils.records``: one batch of records with these values."""
    return MemoryRecords.with_records([(None, v) for v in values], base_offset=base_offset, magic=magic,
                                      partition_leader_epoch=partition_leader_epoch)


def epoch_cache(log: Log) -> LeaderEpochFileCache:
    """Kafka's ``epochCache(log)``: ``log.leaderEpochCache.get``."""
    assert log.leader_epoch_cache is not None
    return log.leader_epoch_cache


def assert_leader_epoch_cache_empty(log: Log) -> None:
    """Kafka's ``LogTestUtils.assertLeaderEpochCacheEmpty``: no cache, no latest epoch, no checkpoint file."""
    assert log.leader_epoch_cache is None
    assert log.latest_epoch is None
    assert not LeaderEpochCheckpoint.new_file(log.dir).exists()


def checkpoint_entries(log: Log) -> list[EpochEntry]:
    return LeaderEpochCheckpoint(LeaderEpochCheckpoint.new_file(log.dir), read_only=True).read()


V1_FORMAT = {"segment_bytes": 1000, "index_interval_bytes": 1, "max_message_bytes": 65536,
             "message_format_version": "0.10.2"}


# --- Kafka's UnifiedLogTest ---------------------------------------------------------------------------


def test_truncate_to_end_offset_clears_epoch_cache(create_log: LogFactory) -> None:
    """testTruncateToEndOffsetClearsEpochCache: a truncation at or past the log end still removes an epoch a
    leader assigned at the log end without writing in it."""
    log = create_log(config())
    log.append_as_follower(records(b"a", b"b", base_offset=27, partition_leader_epoch=19))
    assert epoch_cache(log).latest_entry() == EpochEntry(19, 27)
    assert log.log_end_offset == 29

    def verify_truncation_clears_epoch_cache(epoch: int, truncation_offset: int) -> None:
        log.maybe_assign_epoch_start_offset(epoch, log.log_end_offset)  # becoming the leader
        assert epoch_cache(log).latest_entry() == EpochEntry(epoch, 29)
        assert log.log_end_offset == 29
        # then a follower again, truncating to an offset at or past the log end
        log.truncate_to(truncation_offset)
        assert epoch_cache(log).latest_entry() == EpochEntry(19, 27)
        assert log.log_end_offset == 29

    verify_truncation_clears_epoch_cache(20, log.log_end_offset)
    verify_truncation_clears_epoch_cache(24, log.log_end_offset + 1)
    assert checkpoint_entries(log) == [EpochEntry(19, 27)]


def test_write_leader_epoch_checkpoint_after_directory_rename(create_log: LogFactory, log_dir: Path) -> None:
    """testWriteLeaderEpochCheckpointAfterDirectoryRename: after a rename the cache writes to the checkpoint in
    the new directory."""
    log = create_log(config(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024))
    log.append_as_leader(records(b"foo"), leader_epoch=5)
    assert log.latest_epoch == 5

    log.rename_dir(log_delete_dir_name(TopicPartition("topic", 0)), True)
    log.append_as_leader(records(b"foo"), leader_epoch=10)
    assert log.latest_epoch == 10
    assert LeaderEpochCheckpoint.new_file(log.dir).exists()
    assert not LeaderEpochCheckpoint.new_file(log_dir).exists()
    assert checkpoint_entries(log) == [EpochEntry(5, 0), EpochEntry(10, 1)]


def test_leader_epoch_cache_cleared_after_downgrade_in_appended_messages(create_log: LogFactory) -> None:
    """testLeaderEpochCacheClearedAfterDowngradeInAppendedMessages: a v1 batch appended (a partial upgrade's
    regression) clears the cache."""
    log = create_log(config(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024))
    log.append_as_leader(records(b"foo"), leader_epoch=5)
    assert epoch_cache(log).latest_epoch() == 5

    log.append_as_follower(records(b"foo", base_offset=1, magic=1))
    assert epoch_cache(log).latest_epoch() is None
    assert checkpoint_entries(log) == []  # cleared and written


def test_leader_epoch_cache_cleared_after_dynamic_message_format_downgrade(create_log: LogFactory) -> None:
    """testLeaderEpochCacheClearedAfterDynamicMessageFormatDowngrade: a configuration with a format below v2
    drops the cache and deletes its checkpoint; a v1 append keeps it so."""
    log = create_log(config(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=64 * 1024))
    log.append_as_leader(records(b"foo"), leader_epoch=5)
    assert log.latest_epoch == 5

    log.update_config(config(**V1_FORMAT))
    assert_leader_epoch_cache_empty(log)

    log.append_as_leader(records(b"bar", magic=1), leader_epoch=5)
    assert_leader_epoch_cache_empty(log)


def test_leader_epoch_cache_created_after_message_format_upgrade(create_log: LogFactory) -> None:
    """testLeaderEpochCacheCreatedAfterMessageFormatUpgrade: a log opened below v2 has no cache; upgrading the
    format makes one, which the next append fills."""
    log = create_log(config(**V1_FORMAT))
    log.append_as_leader(records(b"bar", magic=1), leader_epoch=5)
    assert_leader_epoch_cache_empty(log)

    log.update_config(config(**{**V1_FORMAT, "message_format_version": "0.11.0"}))
    log.append_as_leader(records(b"foo"), leader_epoch=5)
    assert log.latest_epoch == 5


def test_follower_should_save_epoch_information_from_replicated_messages_to_the_epoch_cache(
        create_log: LogFactory) -> None:
    """followerShouldSaveEpochInformationFromReplicatedMessagesToTheEpochCache: a follower's batches assign the
    epoch they carry (each made at offset ``i`` with epoch 42, as Kafka's setLastOffset / setPartitionLeaderEpoch
    leave them)."""
    log = create_log(config())
    for i in range(50):
        log.append_as_follower(records(str(i).encode(), base_offset=i, partition_leader_epoch=42))
    assert log.latest_epoch == 42


def test_should_truncate_leader_epochs_when_deleting_segments(create_log: LogFactory) -> None:
    """shouldTruncateLeaderEpochsWhenDeletingSegments: deleting the first segment removes the epoch that
    started at its base."""
    size = singleton(b"test").size_in_bytes()
    log = create_log(config(segment_bytes=size * 5, retention_bytes=size * 10))
    cache = epoch_cache(log)
    for _ in range(15):  # three segments of five
        log.append_as_leader(singleton(b"test"), leader_epoch=0)

    cache.assign(0, 0)
    cache.assign(1, 5)
    cache.assign(2, 10)

    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments()
    assert cache.epoch_entries() == [EpochEntry(1, 5), EpochEntry(2, 10)]
    assert checkpoint_entries(log) == [EpochEntry(1, 5), EpochEntry(2, 10)]


def test_should_update_offset_for_leader_epochs_when_deleting_segments(create_log: LogFactory) -> None:
    """shouldUpdateOffsetForLeaderEpochsWhenDeletingSegments: the epoch the new log start offset falls in is
    moved up to start there."""
    size = singleton(b"test").size_in_bytes()
    log = create_log(config(segment_bytes=size * 5, retention_bytes=size * 10))
    cache = epoch_cache(log)
    for _ in range(15):
        log.append_as_leader(singleton(b"test"), leader_epoch=0)

    cache.assign(0, 0)
    cache.assign(1, 7)
    cache.assign(2, 10)

    log.update_high_watermark(log.log_end_offset)
    log.delete_old_segments()  # the first segment, up to offset 5
    assert cache.epoch_entries() == [EpochEntry(0, 5), EpochEntry(1, 7), EpochEntry(2, 10)]
    assert checkpoint_entries(log) == [EpochEntry(0, 5), EpochEntry(1, 7), EpochEntry(2, 10)]


def test_should_truncate_leader_epoch_checkpoint_file_when_truncating_log(create_log: LogFactory) -> None:
    """shouldTruncateLeaderEpochCheckpointFileWhenTruncatingLog: each truncation removes the epochs that started
    at or past it, a full truncation all of them."""
    def create_records(start_offset: int, epoch: int) -> MemoryRecords:
        return records(b"value", base_offset=start_offset, partition_leader_epoch=epoch)

    log = create_log(config(segment_bytes=10 * create_records(0, 0).size_in_bytes()))
    cache = epoch_cache(log)

    def append(epoch: int, start_offset: int, count: int) -> None:
        for i in range(count):
            log.append_as_follower(create_records(start_offset + i, epoch))

    # two segments of ten messages
    append(0, 0, 10)
    append(1, 10, 6)
    append(2, 16, 4)
    assert log.number_of_segments == 2
    assert log.log_end_offset == 20

    log.truncate_to(log.log_end_offset)  # no op
    assert len(cache.epoch_entries()) == 3

    log.truncate_to(11)
    assert len(cache.epoch_entries()) == 2

    log.truncate_to(10)
    assert len(cache.epoch_entries()) == 1

    log.truncate_to(0)
    assert len(cache.epoch_entries()) == 0
    assert checkpoint_entries(log) == []


# --- Kafka's LogLoaderTest ----------------------------------------------------------------------------


def test_log_recovers_for_leader_epoch(create_log: LogFactory) -> None:
    """LogLoaderTest.testLogRecoversForLeaderEpoch: entries removed from the cache come back when an unclean
    open recovers the segments."""
    log = create_log(config())
    leader_epoch_cache = epoch_cache(log)
    for offset, epoch in ((0, 1), (1, 2), (2, 2), (3, 3)):
        # Kafka's singletonRecordsWithLeaderEpoch
        log.append_as_follower(records(b"random", base_offset=offset, partition_leader_epoch=epoch))
    assert leader_epoch_cache.epoch_entries() == [EpochEntry(1, 0), EpochEntry(2, 1), EpochEntry(3, 3)]

    # deliberately remove some of the epoch entries
    leader_epoch_cache.truncate_from_end_async_flush(2)
    assert leader_epoch_cache.epoch_entries() != [EpochEntry(1, 0), EpochEntry(2, 1), EpochEntry(3, 3)]
    log.close()

    # reopen the log and recover from the beginning
    recovered_log = create_log(config(), had_clean_shutdown=False)
    assert epoch_cache(recovered_log).epoch_entries() == [EpochEntry(1, 0), EpochEntry(2, 1), EpochEntry(3, 3)]
    recovered_log.close()


def test_leader_epoch_cache_cleared_after_static_message_format_downgrade(create_log: LogFactory) -> None:
    """LogLoaderTest.testLeaderEpochCacheClearedAfterStaticMessageFormatDowngrade: reopened with a format below
    v2, the log has no cache and its checkpoint is deleted."""
    log = create_log(config(segment_bytes=1000, index_interval_bytes=1, max_message_bytes=65536))
    log.append_as_leader(records(b"foo"), leader_epoch=5)
    assert log.latest_epoch == 5
    log.close()

    reopened = create_log(config(**V1_FORMAT), had_clean_shutdown=False)
    assert_leader_epoch_cache_empty(reopened)
    reopened.append_as_leader(records(b"bar", magic=1), leader_epoch=5)
    assert_leader_epoch_cache_empty(reopened)


# --- what the port adds -------------------------------------------------------------------------------


def test_end_offset_for_epoch_and_latest_epoch(create_log: LogFactory) -> None:
    """``endOffsetForEpoch``: where an epoch ends (the next epoch's start, the log end for the latest), the
    epoch found for it; nothing for an undefined or future epoch, or without a cache."""
    log = create_log(config())
    assert log.latest_epoch is None
    assert log.end_offset_for_epoch(0) is None
    log.append_as_leader(records(b"a", b"b"), leader_epoch=2)
    log.append_as_leader(records(b"c"), leader_epoch=4)
    log.append_as_leader(records(b"d"), leader_epoch=4)
    assert log.latest_epoch == 4
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 2)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 2)  # the largest epoch not above 3
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(0, 1)  # below every epoch: the first start
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(4, 4)
    assert log.end_offset_for_epoch(5) is None
    assert log.end_offset_for_epoch(-1) is None
    log.update_config(config(message_format_version="0.10.2"))
    assert log.end_offset_for_epoch(2) is None and log.latest_epoch is None


def test_appends_without_an_epoch_assign_nothing(create_log: LogFactory) -> None:
    """kafkalog's default leader append stamps no epoch (-1) and assigns nothing, where Kafka's cache would
    refuse it; a leader's other negative epoch is refused as Kafka refuses it, before anything is written."""
    log = create_log(config())
    log.append(records(b"a"))
    log.append_as_leader(records(b"b"))
    assert log.log_end_offset == 2
    assert epoch_cache(log).epoch_entries() == []
    assert not LeaderEpochCheckpoint.new_file(log.dir).exists() or checkpoint_entries(log) == []
    with pytest.raises(IllegalArgumentError, match="invalid partition leader epoch"):
        log.append_as_leader(records(b"c"), leader_epoch=-2)
    assert log.log_end_offset == 2
    with pytest.raises(IllegalArgumentError):
        log.maybe_assign_epoch_start_offset(1, -1)


def test_a_batch_that_keeps_its_offsets_without_an_epoch_is_refused(create_log: LogFactory) -> None:
    """UnifiedLog.append (3.8.0) assigns the epoch of every v2 batch whose offsets it keeps, with no check of its
    own, and ``LeaderEpochFileCache.assign`` throws ``IllegalArgumentException`` for a negative epoch,
    ``NO_PARTITION_LEADER_EPOCH`` (-1) included: a follower's or a Raft leader's batch without an epoch is
    refused before anything is written.  The batches before it in the same append have assigned theirs by then,
    as in Kafka's loop."""
    log = create_log(config())
    log.append_as_leader(records(b"a"), leader_epoch=2)
    with pytest.raises(IllegalArgumentError,
                       match=r"invalid partition leader epoch entry EpochEntry\(epoch=-1, startOffset=1\)"):
        log.append_as_follower(records(b"b", base_offset=1))
    assert log.log_end_offset == 1

    with_epoch = records(b"c", base_offset=1, partition_leader_epoch=3)
    without = records(b"d", base_offset=2)
    with pytest.raises(IllegalArgumentError, match=r"EpochEntry\(epoch=-1, startOffset=2\)"):
        log.append_as_follower(MemoryRecords(bytes(with_epoch.buffer) + bytes(without.buffer)))
    assert log.log_end_offset == 1
    assert epoch_cache(log).epoch_entries() == [EpochEntry(2, 0), EpochEntry(3, 1)]

    with pytest.raises(IllegalArgumentError, match=r"EpochEntry\(epoch=-1, startOffset=1\)"):
        log.append_as_leader(records(b"e", base_offset=1), leader_epoch=-1, origin="raft_leader")
    assert log.log_end_offset == 1
    assert [batch.base_offset for batch in log.active_segment.batches()] == [0]

    log.append_as_follower(records(b"f", base_offset=1, partition_leader_epoch=3))
    assert log.log_end_offset == 2
    assert checkpoint_entries(log) == [EpochEntry(2, 0), EpochEntry(3, 1)]


def test_truncate_fully_and_start_at_clears_and_writes_the_checkpoint(create_log: LogFactory) -> None:
    log = create_log(config())
    log.append_as_leader(records(b"a"), leader_epoch=3)
    assert checkpoint_entries(log) == [EpochEntry(3, 0)]
    log.truncate_fully_and_start_at(100)
    assert epoch_cache(log).epoch_entries() == [] == checkpoint_entries(log)
    log.append_as_leader(records(b"b"), leader_epoch=4)
    assert checkpoint_entries(log) == [EpochEntry(4, 100)]
    log.truncate_to(50)  # below the first segment: a full truncation
    assert checkpoint_entries(log) == []


def test_loading_cuts_a_stale_checkpoint_to_the_log(create_log: LogFactory, log_dir: Path) -> None:
    """The truncations write the checkpoint later, so after a crash it may hold epochs past the log end or
    before the log start: loading cuts them (``truncateFromEndAsyncFlush(nextOffset)``,
    ``truncateFromStartAsyncFlush(logStartOffsetCheckpoint)``) and writes the file."""
    log = create_log(config())
    for offset, epoch in ((0, 1), (1, 2), (2, 3)):
        log.append_as_leader(records(b"x"), leader_epoch=epoch)
        assert log.log_end_offset == offset + 1
    log.close()
    LeaderEpochCheckpoint(LeaderEpochCheckpoint.new_file(log_dir)).write(
        [EpochEntry(1, 0), EpochEntry(2, 1), EpochEntry(3, 2), EpochEntry(7, 3), EpochEntry(8, 9)])
    reopened = create_log(config(), log_start_offset=1)
    assert epoch_cache(reopened).epoch_entries() == [EpochEntry(2, 1), EpochEntry(3, 2)]
    assert checkpoint_entries(reopened) == [EpochEntry(2, 1), EpochEntry(3, 2)]


def test_loading_clears_the_cache_when_the_log_ends_below_its_start(create_log: LogFactory, log_dir: Path) -> None:
    """``deleteSegmentsIfLogStartGreaterThanLogEnd``: every segment goes and the cache is cleared and written."""
    log = create_log(config())
    log.append_as_leader(records(b"x"), leader_epoch=1)
    log.close()
    reopened = create_log(config(), log_start_offset=10, had_clean_shutdown=False)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (10, 10)
    assert epoch_cache(reopened).epoch_entries() == [] == checkpoint_entries(reopened)


def test_truncations_write_at_once_without_a_running_scheduler(tmp_path: Path, impl: ModuleType) -> None:
    """A scheduler that is not running (never started, as here, or stopped) cannot write a truncation later,
    so the cache writes it at once, in the caller's thread."""
    scheduler = KafkaScheduler(1)
    log = Log(tmp_path / "topic-0", config(), scheduler=scheduler)
    try:
        log.append_as_leader(records(b"a"), leader_epoch=1)
        log.append_as_leader(records(b"b"), leader_epoch=2)
        log.truncate_to(1)
        assert checkpoint_entries(log) == [EpochEntry(1, 0)]
    finally:
        log.close()


def test_truncations_write_through_a_running_scheduler(tmp_path: Path, impl: ModuleType) -> None:
    """With its scheduler running, a truncation's checkpoint write is a task on it, as Kafka schedules it."""
    scheduler = KafkaScheduler(1)
    scheduler.startup()
    try:
        log = Log(tmp_path / "topic-0", config(), scheduler=scheduler)
        try:
            log.append_as_leader(records(b"a"), leader_epoch=1)
            log.append_as_leader(records(b"b"), leader_epoch=2)
            log.truncate_to(1)
            assert epoch_cache(log).epoch_entries() == [EpochEntry(1, 0)]
            deadline = time.monotonic() + 10
            while checkpoint_entries(log) != [EpochEntry(1, 0)] and time.monotonic() < deadline:
                time.sleep(0.01)
            assert checkpoint_entries(log) == [EpochEntry(1, 0)]
        finally:
            log.close()
    finally:
        scheduler.shutdown()


def test_a_read_only_log_reads_the_cache_and_writes_nothing(create_log: LogFactory, log_dir: Path) -> None:
    """A read-only log reads the broker's checkpoint, cuts it to the log in memory only, answers from it, and
    never writes or deletes the file, whatever its message format."""
    log = create_log(config())
    log.append_as_leader(records(b"a"), leader_epoch=1)
    log.append_as_leader(records(b"b"), leader_epoch=2)
    log.close()
    checkpoint = LeaderEpochCheckpoint.new_file(log_dir)
    LeaderEpochCheckpoint(checkpoint).write([EpochEntry(1, 0), EpochEntry(2, 1), EpochEntry(5, 7)])
    data = checkpoint.read_bytes()
    with Log(log_dir, read_only=True) as read_only:
        assert epoch_cache(read_only).epoch_entries() == [EpochEntry(1, 0), EpochEntry(2, 1)]
        assert read_only.latest_epoch == 2
        assert read_only.end_offset_for_epoch(1) == OffsetAndEpoch(1, 1)
    assert checkpoint.read_bytes() == data
    with Log(log_dir, config(message_format_version="0.10.2"), read_only=True) as old_format:
        assert old_format.leader_epoch_cache is None
    assert checkpoint.read_bytes() == data
    checkpoint.write_bytes(b"garbage\n")
    with Log(log_dir, read_only=True) as unreadable:
        assert unreadable.leader_epoch_cache is None
        assert unreadable.log_end_offset == 2
    assert checkpoint.read_bytes() == b"garbage\n"
    assert sorted(p.name for p in log_dir.iterdir() if p.name == LEADER_EPOCH_CHECKPOINT_FILE) == [
        LEADER_EPOCH_CHECKPOINT_FILE]


def test_a_checkpoint_a_broker_refuses_is_read_around_by_a_read_only_log(create_log: LogFactory,
                                                                         log_dir: Path) -> None:
    """A negative epoch in the checkpoint: ``LeaderEpochFileCache``'s constructor refuses it (Kafka:
    ``IllegalArgumentException``), so a writable open fails as a broker's load does; a read-only one reads the log
    without a cache, as it reads a checkpoint it cannot parse (and as a reader at a URL, which keeps no cache,
    reads it), with a warning.  ``kafkalog verify`` reports the line."""
    log = create_log(config())
    log.append_as_leader(records(b"a"), leader_epoch=1)
    log.close()
    checkpoint = LeaderEpochCheckpoint.new_file(log_dir)
    checkpoint.write_bytes(b"0\n2\n-1 0\n1 0\n")
    with Log(log_dir, read_only=True) as read_only:
        assert read_only.leader_epoch_cache is None
        assert read_only.log_end_offset == 1
    assert checkpoint.read_bytes() == b"0\n2\n-1 0\n1 0\n"
    with pytest.raises(IllegalArgumentError, match=r"invalid partition leader epoch entry EpochEntry\(epoch=-1"):
        create_log(config())


def test_collect_aborted_transactions_walks_the_segments(create_log: LogFactory, mock_time: MockTime) -> None:
    """``LocalLog.collectAbortedTransactions``: from the segment holding the start offset on, each segment's
    ``.txnindex`` is searched from the log start offset, until one's search is complete."""
    log = create_log(config(segment_bytes=200))
    while log.number_of_segments < 3:
        log.append_as_leader(records(b"v" * 20), leader_epoch=0)
    first, second, third = log.log_segments()[:3]
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []

    class Aborted:
        def __init__(self, producer_id: int, first_offset: int, last_offset: int) -> None:
            self.producer_id, self.first_offset, self.last_offset = producer_id, first_offset, last_offset
            self.is_aborted = True

    a = AbortedTxn(1, first.base_offset, first.base_offset + 1, second.base_offset)
    b = AbortedTxn(2, first.base_offset, second.base_offset + 1, third.base_offset + 1)
    c = AbortedTxn(3, third.base_offset, third.base_offset, log.log_end_offset)
    first.update_txn_index(Aborted(a.producer_id, a.first_offset, a.last_offset), a.last_stable_offset)
    second.update_txn_index(Aborted(b.producer_id, b.first_offset, b.last_offset), b.last_stable_offset)
    third.update_txn_index(Aborted(c.producer_id, c.first_offset, c.last_offset), c.last_stable_offset)

    beyond = log.log_end_offset + 10  # past every last stable offset: no search is complete
    assert log.collect_aborted_transactions(first.base_offset, beyond) == [a, b, c]
    # complete in the second segment: b's last stable offset reaches the upper bound
    assert log.collect_aborted_transactions(first.base_offset, third.base_offset) == [a, b]
    # from the second segment on (the range still starts at the log start offset, as in Kafka)
    assert log.collect_aborted_transactions(second.base_offset, beyond) == [b, c]
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(second.base_offset + 2)
    assert log.collect_aborted_transactions(second.base_offset, beyond) == [c]


def test_a_leaders_converted_append_assigns_the_leaders_epoch(create_log: LogFactory) -> None:
    """A leader's v1 records are written as v2 batches stamped with the leader's epoch, which the cache takes from
    the append's first offset; a follower's v1 batch (kept as it is) clears the cache again."""
    log = create_log(config())
    log.append_as_leader(records(b"a", b"b", magic=1), leader_epoch=7)
    batch = next(iter(log.read(0, 1000).records.batches()))
    assert (batch.magic, batch.partition_leader_epoch) == (2, 7)
    log.append_as_leader(records(b"c", magic=1), leader_epoch=8)
    assert epoch_cache(log).epoch_entries() == [EpochEntry(7, 0), EpochEntry(8, 2)]
    log.append_as_follower(records(b"d", base_offset=3, magic=1))
    assert epoch_cache(log).epoch_entries() == [] == checkpoint_entries(log)
