"""kafkalog.cleaner.manager: choosing the log to clean, the cleaning states, the cleaner checkpoints (the
cleaner's configuration is in ``test_cleaner_config.py``).

The cases port Kafka 3.8.0 ``core/src/test/scala/unit/kafka/log/LogCleanerManagerTest.scala`` (same names in
snake_case; values as there), ``testLogToClean`` and ``testLogToCleanWithUncleanableSection`` of
``LogCleanerTest.scala``, and add the blocking of ``abort_and_pause_cleaning`` with a second thread, the
``max.compaction.lag.ms`` selection, the checkpoint file bytes, read-only mode and the gauges.  A writable log's
last stable offset comes from its producer state, as in Kafka; a read-only log's from its transactional batch
headers (``test_last_stable_offset_follows_the_log``).

Tests that build logs (and so read records) take the ``impl`` fixture and run once per kernel twin.

Kafka tests not ported:

- ``testLogsWithSegmentsToDeleteShouldNotConsiderCleanupPolicyCompactLogs``: 0.10.1.1's; later Kafka reversed it
  (3.8.0's ``deletableLogs`` takes every compacted log, as one may hold segments below its log start offset), and
  kafkalog follows 3.8.0: its testLogsWithSegmentsToDeleteShouldConsiderCleanupPolicyCompactLogs is ported here.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import pathlib
import threading
import time as wall_time
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import NoReturn

import pytest

from kafkalog.checkpoint import CLEANER_OFFSET_CHECKPOINT_FILE, OffsetCheckpoint
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.cleaner.manager import (
    LogCleanerManager,
    LogCleaningAborted,
    LogCleaningAbortedError,
    LogCleaningError,
    LogCleaningInProgress,
    LogCleaningPaused,
    LogCleaningState,
    LogToClean,
    OffsetsToClean,
    PreCleanStats,
    calculate_cleanable_bytes,
    cleanable_offsets,
    max_compaction_delay,
)
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalArgumentError, IllegalStateError, KafkaLogError, ReadOnlyError
from kafkalog.log import Log
from kafkalog.log_dir_failure_channel import LogDirFailureChannel
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition

TOPIC_PARTITION = TopicPartition("log", 0)
TOPIC_PARTITION2 = TopicPartition("log2", 0)
OFFSET = 999
START_MS = 1_400_000_000_000  # Tue May 13 16:53:20 UTC 2014, Kafka's MockTime start


def singleton_records(value: bytes | None, key: bytes | None = None, timestamp: int = -1) -> MemoryRecords:
    """Kafka's ``TestUtils.singletonRecords``: one record, v2, no timestamp by default."""
    return MemoryRecords.with_records([(key, value, timestamp)])


class Env:
    """Kafka's test fixture: two log dirs in a temporary dir, a mock clock, and the logs made (closed at the end)."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.time = MockTime(current_time_ms=START_MS, current_high_res_time_ns=1000)
        self.log_dir = tmp_path / "kafka-1"
        self.log_dir2 = tmp_path / "kafka-2"
        self.log_dir.mkdir()
        self.log_dir2.mkdir()
        self.logs: list[Log] = []
        # Kafka's LogCleanerManagerTest logConfig: segment 1024, index 1024, compact.
        self.log_props: dict[str, object] = {"segment.bytes": 1024, "segment.index.bytes": 1024,
                                             "cleanup.policy": "compact"}

    def open_log(self, directory: pathlib.Path, config: LogConfig) -> Log:
        log = Log(directory, config, scheduler=self.time.scheduler, time=self.time)
        self.logs.append(log)
        return log

    def create_log(self, segment_size: int, cleanup_policy: str, tp: TopicPartition = TOPIC_PARTITION,
                   directory: pathlib.Path | None = None) -> Log:
        """Kafka: ``createLog`` (a low-retention config, min.cleanable.dirty.ratio 0.05)."""
        return self.open_log((directory or self.log_dir) / str(tp),
                             create_low_retention_log_config(segment_size, cleanup_policy))

    def make_log(self, overrides: Mapping[str, object], tp: TopicPartition = TOPIC_PARTITION) -> Log:
        """Kafka: ``makeLog(config = LogConfig.fromProps(logConfig.originals, overrides))``."""
        return self.open_log(self.log_dir / str(tp), LogConfig({**self.log_props, **overrides}))

    def append_records(self, log: Log, num_records: int) -> None:
        """Kafka: ``appendRecords``: keys ``key-<offset>``, values ``value-<offset>``, then the high watermark
        moves to the log end."""
        start = log.log_end_offset
        log.append(MemoryRecords.with_records(
            [(f"key-{o}".encode(), f"value-{o}".encode(), self.time.milliseconds())
             for o in range(start, start + num_records)]))
        log.high_watermark = log.log_end_offset

    def write_records(self, log: Log, num_batches: int, records_per_batch: int, batches_per_segment: int) -> None:
        """Kafka: ``writeRecords``."""
        for i in range(num_batches):
            self.append_records(log, records_per_batch)
            if i % batches_per_segment == 0:
                log.roll()
        log.roll()

    def setup_increasingly_filthy_logs(self, partitions: list[TopicPartition], start_num_batches: int,
                                       batch_increment: int) -> dict[TopicPartition, Log]:
        """Kafka: ``setupIncreasinglyFilthyLogs``."""
        logs: dict[TopicPartition, Log] = {}
        num_batches = start_num_batches
        for tp in partitions:
            log = self.create_log(2048, "compact", tp)
            logs[tp] = log
            self.write_records(log, num_batches, records_per_batch=1, batches_per_segment=5)
            num_batches += batch_increment
        return logs

    def append_single(self, log: Log, timestamp: int) -> None:
        """Kafka's ``records(key, value, timestamp)`` with key = value = the log end offset."""
        offset = str(log.log_end_offset).encode()
        log.append(MemoryRecords.with_records([(offset, offset, timestamp)]))

    def close(self) -> None:
        self.time.scheduler.shutdown()  # runs the pending deferred deletes, which close their segments
        for log in self.logs:
            log.close()


def create_low_retention_log_config(segment_size: int, cleanup_policy: str) -> LogConfig:
    """Kafka: ``createLowRetentionLogConfig``."""
    return LogConfig({"segment.bytes": segment_size, "retention.ms": 1, "cleanup.policy": cleanup_policy,
                      "min.cleanable.dirty.ratio": 0.05})


class LogCleanerManagerMock(LogCleanerManager):
    """Kafka's ``LogCleanerManagerMock``: checkpoints in a dict instead of files."""

    def __init__(self, log_dirs: list[pathlib.Path], logs: Mapping[TopicPartition, Log],
                 cleaner_checkpoints: dict[TopicPartition, int]) -> None:
        super().__init__(log_dirs, logs, None)
        self.cleaner_checkpoints = cleaner_checkpoints

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        return dict(self.cleaner_checkpoints)

    def update_checkpoints(self, data_dir: object, partition_to_update: tuple[TopicPartition, int] | None = None,
                           partition_to_remove: TopicPartition | None = None) -> None:
        assert partition_to_remove is None, "partitionToRemove argument with value not yet handled"
        if partition_to_update is None:
            raise IllegalArgumentError("partitionToUpdateOrAdd==None argument not yet handled")
        tp, offset = partition_to_update
        self.cleaner_checkpoints[tp] = offset


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip ``fsync``: these tests roll hundreds of segments (each roll flushes its predecessor) and durability
    is not what they check; without it the module spends most of its time waiting for the disk."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@pytest.fixture
def env(tmp_path: pathlib.Path) -> Iterator[Env]:
    environment = Env(tmp_path)
    try:
        yield environment
    finally:
        environment.close()


def create_cleaner_manager(env: Env, log: Log) -> LogCleanerManager:
    """Kafka: ``createCleanerManager``: the log under ``TOPIC_PARTITION``, both log dirs."""
    return LogCleanerManager([env.log_dir, env.log_dir2], {TOPIC_PARTITION: log}, None, env.time)


def create_cleaner_manager_mock(env: Env, logs: Mapping[TopicPartition, Log],
                                checkpoints: dict[TopicPartition, int]) -> LogCleanerManagerMock:
    """Kafka: ``createCleanerManagerMock``."""
    return LogCleanerManagerMock([env.log_dir], logs, checkpoints)


WISHING_WELL = [TopicPartition("wishing-well", i) for i in range(3)]


# --- grabFilthiestCompactedLog ----------------------------------------------------------------------------------


def test_grab_filthiest_compacted_log_throws_exception(impl: ModuleType, env: Env,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    tp = TopicPartition("A", 1)
    log_segment_size = singleton_records(b"test").size_in_bytes() * 10
    log = env.create_log(log_segment_size, "compact", tp)
    env.write_records(log, num_batches=2 * 2, records_per_batch=10, batches_per_segment=2)

    # Throw an error where the first batch timestamps are read, as Kafka's LogMock does.
    def fail() -> int:
        raise IllegalStateError("Error!")

    for segment in log.log_segments():
        monkeypatch.setattr(segment, "get_first_batch_timestamp", fail)
    cleaner_manager = create_cleaner_manager_mock(env, {tp: log}, {tp: 1})

    with pytest.raises(LogCleaningError) as raised:
        cleaner_manager.grab_filthiest_compacted_log(env.time)
    assert raised.value.log is log
    assert isinstance(raised.value.__cause__, IllegalStateError)
    assert str(raised.value) == f"Failed to calculate log cleaning stats for partition {tp}"
    assert cleaner_manager.cleaning_state(tp) is None


def test_grab_filthiest_compacted_log_returns_log_with_dirtiest_ratio(impl: ModuleType, env: Env) -> None:
    # setup logs with cleanable range: [20, 20], [20, 25], [20, 30]
    logs = env.setup_increasingly_filthy_logs(WISHING_WELL, start_num_batches=20, batch_increment=5)
    checkpoints = {tp: 20 for tp in WISHING_WELL}
    cleaner_manager = create_cleaner_manager_mock(env, logs, checkpoints)

    filthiest_log = cleaner_manager.grab_filthiest_compacted_log(env.time)
    assert filthiest_log is not None
    assert filthiest_log.topic_partition == WISHING_WELL[2]
    assert filthiest_log.log.topic_partition == WISHING_WELL[2]
    assert filthiest_log.first_dirty_offset == 20
    assert filthiest_log.first_uncleanable_offset == 30
    assert filthiest_log.need_compaction_now is False
    assert cleaner_manager.cleaning_state(WISHING_WELL[2]) is LogCleaningInProgress
    assert cleaner_manager.cleaning_state(WISHING_WELL[1]) is None
    # the dirtiest ratio is the chosen one
    assert cleaner_manager.dirtiest_log_cleanable_ratio == filthiest_log.cleanable_ratio
    assert cleaner_manager.max_dirty_percent == int(100 * filthiest_log.cleanable_ratio)


def test_grab_filthiest_compacted_log_ignores_uncleanable_partitions(impl: ModuleType, env: Env) -> None:
    logs = env.setup_increasingly_filthy_logs(WISHING_WELL, start_num_batches=20, batch_increment=5)
    cleaner_manager = create_cleaner_manager_mock(env, logs, {tp: 20 for tp in WISHING_WELL})

    cleaner_manager.mark_partition_uncleanable(str(logs[WISHING_WELL[2]].dir.parent), WISHING_WELL[2])

    filthiest_log = cleaner_manager.grab_filthiest_compacted_log(env.time)
    assert filthiest_log is not None
    assert filthiest_log.topic_partition == WISHING_WELL[1]
    assert filthiest_log.log.topic_partition == WISHING_WELL[1]


def test_grab_filthiest_compacted_log_ignores_in_progress_partitions(impl: ModuleType, env: Env) -> None:
    logs = env.setup_increasingly_filthy_logs(WISHING_WELL, start_num_batches=20, batch_increment=5)
    cleaner_manager = create_cleaner_manager_mock(env, logs, {tp: 20 for tp in WISHING_WELL})

    cleaner_manager.set_cleaning_state(WISHING_WELL[2], LogCleaningInProgress)

    filthiest_log = cleaner_manager.grab_filthiest_compacted_log(env.time)
    assert filthiest_log is not None
    assert filthiest_log.topic_partition == WISHING_WELL[1]
    assert filthiest_log.log.topic_partition == WISHING_WELL[1]


def test_grab_filthiest_compacted_log_ignores_both_in_progress_partitions_and_uncleanable_partitions(
        impl: ModuleType, env: Env) -> None:
    logs = env.setup_increasingly_filthy_logs(WISHING_WELL, start_num_batches=20, batch_increment=5)
    cleaner_manager = create_cleaner_manager_mock(env, logs, {tp: 20 for tp in WISHING_WELL})

    cleaner_manager.set_cleaning_state(WISHING_WELL[2], LogCleaningInProgress)
    cleaner_manager.mark_partition_uncleanable(str(logs[WISHING_WELL[1]].dir.parent), WISHING_WELL[1])

    assert cleaner_manager.grab_filthiest_compacted_log(env.time) is None
    # tp0 ([20, 20]) was considered but has nothing cleanable
    assert cleaner_manager.dirtiest_log_cleanable_ratio == 0.0


def test_dirty_offset_reset_if_larger_than_end_offset(impl: ModuleType, env: Env) -> None:
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    checkpoints = {tp: 200}
    cleaner_manager = create_cleaner_manager_mock(env, logs, checkpoints)

    filthiest_log = cleaner_manager.grab_filthiest_compacted_log(env.time)
    assert filthiest_log is not None
    assert filthiest_log.first_dirty_offset == 0
    assert checkpoints[tp] == 0  # the invalid checkpoint was rewritten


def test_dirty_offset_reset_if_smaller_than_start_offset(impl: ModuleType, env: Env) -> None:
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    logs[tp].maybe_increment_log_start_offset(10)
    cleaner_manager = create_cleaner_manager_mock(env, logs, {tp: 0})

    filthiest_log = cleaner_manager.grab_filthiest_compacted_log(env.time)
    assert filthiest_log is not None
    assert filthiest_log.first_dirty_offset == 10


def test_log_start_offset_larger_than_active_segment_base_offset(impl: ModuleType, env: Env) -> None:
    tp = TopicPartition("foo", 0)
    log = env.create_log(2048, "compact", tp)
    logs = {tp: log}
    env.append_records(log, num_records=3)
    env.append_records(log, num_records=3)
    env.append_records(log, num_records=3)
    assert log.number_of_segments == 1

    log.maybe_increment_log_start_offset(2)
    cleaner_manager = create_cleaner_manager_mock(env, logs, {tp: 0})

    # The active segment is uncleanable and hence not filthy from the POV of the CleanerManager.
    assert cleaner_manager.grab_filthiest_compacted_log(env.time) is None


def test_dirty_offset_larger_than_active_segment_base_offset(impl: ModuleType, env: Env) -> None:
    # It is possible in the case of an unclean leader election for the checkpoint dirty offset to get ahead of
    # the active segment base offset, but still be within the range of the log.
    tp = TopicPartition("foo", 0)
    log = env.create_log(2048, "compact", tp)
    env.append_records(log, num_records=3)
    env.append_records(log, num_records=3)
    assert log.number_of_segments == 1
    assert log.active_segment.base_offset == 0

    cleaner_manager = create_cleaner_manager_mock(env, {tp: log}, {tp: 3})

    # These segments are uncleanable and hence not filthy
    assert cleaner_manager.grab_filthiest_compacted_log(env.time) is None


# --- deletableLogs / pauseCleaningForNonCompactedPartitions -----------------------------------------------------


def test_logs_with_segments_to_delete_should_not_consider_cleanup_policy_delete_logs(impl: ModuleType,
                                                                                     env: Env) -> None:
    records = singleton_records(b"test")
    log = env.create_log(records.size_in_bytes() * 5, "delete")
    cleaner_manager = create_cleaner_manager(env, log)
    assert len(cleaner_manager.deletable_logs()) == 0, "should have 0 logs ready to be deleted"


def test_logs_with_segments_to_delete_should_consider_cleanup_policy_compact_delete_logs(impl: ModuleType,
                                                                                         env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact,delete")
    cleaner_manager = create_cleaner_manager(env, log)
    deletable = cleaner_manager.deletable_logs()
    assert deletable == [(TOPIC_PARTITION, log)], "should have 1 logs ready to be deleted"
    assert cleaner_manager.cleaning_state(TOPIC_PARTITION) is LogCleaningInProgress
    # in progress now: not offered again
    assert cleaner_manager.deletable_logs() == []


def test_logs_with_segments_to_delete_should_consider_cleanup_policy_compact_logs(impl: ModuleType,
                                                                                  env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact")
    cleaner_manager = create_cleaner_manager(env, log)
    assert len(cleaner_manager.deletable_logs()) == 1, "should have 1 logs ready to be deleted"


def test_logs_under_cleanup_ineligible_for_compaction(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "delete")
    cleaner_manager = create_cleaner_manager(env, log)

    log.append(records)
    log.roll()
    log.append(singleton_records(b"test", key=b"test"))
    log.high_watermark = 2

    # simulate cleanup thread working on the log partition
    deletable_log = cleaner_manager.pause_cleaning_for_non_compacted_partitions()
    assert len(deletable_log) == 1, "should have 1 logs ready to be deleted"
    assert cleaner_manager.cleaning_state(TOPIC_PARTITION) == LogCleaningPaused(1)

    # change cleanup policy from delete to compact
    log_props: dict[str, object] = {"segment.bytes": log.config.segment_size, "retention.ms": log.config.retention_ms,
                                    "cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0}
    log.config = LogConfig(log_props)

    # log cleanup inprogress, the log is not available for compaction
    assert cleaner_manager.grab_filthiest_compacted_log(env.time) is None, "should have 0 logs ready to be compacted"

    # log cleanup finished, and log can be picked up for compaction
    cleaner_manager.resume_cleaning([tp for tp, _ in deletable_log])
    cleanable2 = cleaner_manager.grab_filthiest_compacted_log(env.time)
    assert cleanable2 is not None, "should have 1 logs ready to be compacted"
    assert (cleanable2.first_dirty_offset, cleanable2.first_uncleanable_offset) == (0, 1)

    # update cleanup policy to delete
    log.config = LogConfig({**log_props, "cleanup.policy": "delete"})

    # compaction in progress, should have 0 log eligible for log cleanup
    assert len(cleaner_manager.pause_cleaning_for_non_compacted_partitions()) == 0, \
        "should have 0 logs ready to be deleted"

    # compaction done, should have 1 log eligible for log cleanup
    cleaner_manager.done_deleting([cleanable2.topic_partition])
    assert len(cleaner_manager.pause_cleaning_for_non_compacted_partitions()) == 1, \
        "should have 1 logs ready to be deleted"


def test_logs_with_segments_to_delete_should_not_consider_uncleanable_partitions(impl: ModuleType,
                                                                                 env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact")
    cleaner_manager = create_cleaner_manager(env, log)
    cleaner_manager.mark_partition_uncleanable(str(log.dir.parent), TOPIC_PARTITION)
    assert len(cleaner_manager.deletable_logs()) == 0, "should have 0 logs ready to be deleted"


# --- checkpoints ------------------------------------------------------------------------------------------------


def test_update_checkpoints_should_add_offset_to_partition(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact")
    cleaner_manager = create_cleaner_manager(env, log)

    # expect the checkpoint offset is not the expectedOffset before doing updateCheckpoints
    assert cleaner_manager.all_cleaner_checkpoints().get(TOPIC_PARTITION, 0) != OFFSET

    cleaner_manager.update_checkpoints(env.log_dir, partition_to_update=(TOPIC_PARTITION, OFFSET))
    # expect the checkpoint offset is now updated to the expected offset after doing updateCheckpoints
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == OFFSET
    # in Kafka's text format, in the data dir
    assert (env.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).read_bytes() == b"0\n1\nlog 0 999\n"


def test_update_checkpoints_should_remove_partition_data(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact")
    cleaner_manager = create_cleaner_manager(env, log)

    # write some data into the cleaner-offset-checkpoint file
    cleaner_manager.update_checkpoints(env.log_dir, partition_to_update=(TOPIC_PARTITION, OFFSET))
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == OFFSET

    # updateCheckpoints should remove the topicPartition data in the logDir
    cleaner_manager.update_checkpoints(env.log_dir, partition_to_remove=TOPIC_PARTITION)
    assert TOPIC_PARTITION not in cleaner_manager.all_cleaner_checkpoints()
    assert (env.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).read_bytes() == b"0\n0\n"


def test_update_checkpoints_drops_partitions_without_log(impl: ModuleType, env: Env) -> None:
    log = env.create_log(1024, "compact")
    cleaner_manager = create_cleaner_manager(env, log)
    OffsetCheckpoint(env.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).write(
        {TopicPartition("gone", 3): 7, TOPIC_PARTITION: 5})
    assert cleaner_manager.all_cleaner_checkpoints() == {TopicPartition("gone", 3): 7, TOPIC_PARTITION: 5}

    cleaner_manager.update_checkpoints(env.log_dir, partition_to_update=(TOPIC_PARTITION2, 11))
    assert OffsetCheckpoint(env.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).read() == \
        {TOPIC_PARTITION: 5, TOPIC_PARTITION2: 11}


def test_handle_log_dir_failure_should_remove_dir_and_data(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact")
    cleaner_manager = create_cleaner_manager(env, log)

    # write some data into the cleaner-offset-checkpoint file in logDir and logDir2
    cleaner_manager.update_checkpoints(env.log_dir, partition_to_update=(TOPIC_PARTITION, OFFSET))
    cleaner_manager.update_checkpoints(env.log_dir2, partition_to_update=(TOPIC_PARTITION2, OFFSET))
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == OFFSET
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION2] == OFFSET

    cleaner_manager.handle_log_dir_failure(str(env.log_dir.absolute()))
    # verify the partition data in logDir is gone, and data in logDir2 is still there
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION2] == OFFSET
    assert TOPIC_PARTITION not in cleaner_manager.all_cleaner_checkpoints()
    # the failed dir's checkpoint can no longer be written
    with pytest.raises(IllegalArgumentError, match="No cleaner checkpoint file for log dir"):
        cleaner_manager.update_checkpoints(env.log_dir, partition_to_update=(TOPIC_PARTITION, 1))


def test_maybe_truncate_checkpoint_should_truncate_data(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact")
    cleaner_manager = create_cleaner_manager(env, log)
    lower_offset = 1
    higher_offset = 1000

    # write some data into the cleaner-offset-checkpoint file in logDir
    cleaner_manager.update_checkpoints(env.log_dir, partition_to_update=(TOPIC_PARTITION, OFFSET))
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == OFFSET

    # we should not truncate the checkpoint data for checkpointed offset <= the given offset (higherOffset)
    cleaner_manager.maybe_truncate_checkpoint(env.log_dir, TOPIC_PARTITION, higher_offset)
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == OFFSET
    # we should truncate the checkpoint data for checkpointed offset > the given offset (lowerOffset)
    cleaner_manager.maybe_truncate_checkpoint(env.log_dir, TOPIC_PARTITION, lower_offset)
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == lower_offset


def test_maybe_truncate_checkpoint_ignores_non_compacted_and_missing_logs(impl: ModuleType, env: Env) -> None:
    log = env.create_log(1024, "delete")
    cleaner_manager = create_cleaner_manager(env, log)
    cleaner_manager.update_checkpoints(env.log_dir, partition_to_update=(TOPIC_PARTITION, OFFSET))
    cleaner_manager.maybe_truncate_checkpoint(env.log_dir, TOPIC_PARTITION, 1)
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == OFFSET  # only compacted logs
    with pytest.raises(IllegalArgumentError, match="No log for partition log2-0"):
        cleaner_manager.maybe_truncate_checkpoint(env.log_dir, TOPIC_PARTITION2, 1)


def test_alter_checkpoint_dir_should_remove_data_in_src_dir_and_add_in_new_dir(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact")
    cleaner_manager = create_cleaner_manager(env, log)

    # write some data into the cleaner-offset-checkpoint file in logDir
    cleaner_manager.update_checkpoints(env.log_dir, partition_to_update=(TOPIC_PARTITION, OFFSET))
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == OFFSET

    cleaner_manager.mark_partition_uncleanable(env.log_dir, TOPIC_PARTITION)
    cleaner_manager.alter_checkpoint_dir(TOPIC_PARTITION, env.log_dir, env.log_dir2)
    # verify we still can get the partition offset after alterCheckpointDir
    # This data should locate in logDir2, not logDir
    assert cleaner_manager.all_cleaner_checkpoints()[TOPIC_PARTITION] == OFFSET
    assert OffsetCheckpoint(env.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).read() == {}
    assert OffsetCheckpoint(env.log_dir2 / CLEANER_OFFSET_CHECKPOINT_FILE).read() == {TOPIC_PARTITION: OFFSET}
    # the uncleanable mark moved too
    assert cleaner_manager.uncleanable_partitions(env.log_dir) == set()
    assert cleaner_manager.uncleanable_partitions(env.log_dir2) == {TOPIC_PARTITION}

    # force delete the logDir2 from checkpoints, so that the partition data should also be deleted
    cleaner_manager.handle_log_dir_failure(str(env.log_dir2.absolute()))
    assert TOPIC_PARTITION not in cleaner_manager.all_cleaner_checkpoints()


def test_all_cleaner_checkpoints_skips_unreadable_file(impl: ModuleType, env: Env,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    log = env.create_log(1024, "compact")
    channel = LogDirFailureChannel()
    cleaner_manager = LogCleanerManager([env.log_dir, env.log_dir2], {TOPIC_PARTITION: log}, channel, env.time)
    cleaner_manager.update_checkpoints(env.log_dir2, partition_to_update=(TOPIC_PARTITION, 42))
    (env.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).write_bytes(b"7\n0\n")  # unknown version

    with caplog.at_level(logging.ERROR):
        assert cleaner_manager.all_cleaner_checkpoints() == {TOPIC_PARTITION: 42}
    assert f"Failed to access checkpoint file {CLEANER_OFFSET_CHECKPOINT_FILE} in dir" in caplog.text
    assert channel.offline_log_dirs() == [str(env.log_dir.absolute())]
    [reported] = [r for r in caplog.records if r.name == "kafkalog.log_dir_failure_channel"]
    assert "Unrecognised version:7" in reported.getMessage()


# --- concurrent pause / abort -----------------------------------------------------------------------------------


def test_concurrent_log_cleanup_and_log_truncation(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "delete")
    cleaner_manager = create_cleaner_manager(env, log)

    # log cleanup starts
    paused_partitions = cleaner_manager.pause_cleaning_for_non_compacted_partitions()
    # Log truncation happens due to unclean leader election
    cleaner_manager.abort_and_pause_cleaning(log.topic_partition)
    assert cleaner_manager.cleaning_state(log.topic_partition) == LogCleaningPaused(2)
    cleaner_manager.resume_cleaning([log.topic_partition])
    assert cleaner_manager.cleaning_state(log.topic_partition) == LogCleaningPaused(1)
    # log cleanup finishes and pausedPartitions are resumed
    cleaner_manager.resume_cleaning([tp for tp, _ in paused_partitions])

    assert cleaner_manager.cleaning_state(log.topic_partition) is None


def test_concurrent_log_cleanup_and_topic_deletion(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "delete")
    cleaner_manager = create_cleaner_manager(env, log)

    # log cleanup starts
    paused_partitions = cleaner_manager.pause_cleaning_for_non_compacted_partitions()
    # Broker processes StopReplicaRequest with delete=true
    cleaner_manager.abort_cleaning(log.topic_partition)
    assert cleaner_manager.cleaning_state(log.topic_partition) == LogCleaningPaused(1)
    # log cleanup finishes and pausedPartitions are resumed
    cleaner_manager.resume_cleaning([tp for tp, _ in paused_partitions])

    assert cleaner_manager.cleaning_state(log.topic_partition) is None


def wait_until(condition: object, timeout: float = 5.0) -> bool:
    deadline = wall_time.monotonic() + timeout
    while wall_time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        wall_time.sleep(0.005)
    return False


def test_abort_and_pause_cleaning_waits_for_the_cleaner(tmp_path: pathlib.Path) -> None:
    tp = TOPIC_PARTITION
    manager = LogCleanerManager([tmp_path], {}, None, MockTime(current_time_ms=START_MS))
    manager.set_cleaning_state(tp, LogCleaningInProgress)  # as grab_filthiest_compacted_log leaves it
    returned = threading.Event()

    def pause() -> None:
        manager.abort_and_pause_cleaning(tp)
        returned.set()

    waiter = threading.Thread(target=pause)
    waiter.start()
    try:
        assert wait_until(lambda: manager.cleaning_state(tp) is LogCleaningAborted)
        wall_time.sleep(0.25)  # longer than the 100 ms wait: it re-checks and keeps waiting
        assert not returned.is_set()
        assert waiter.is_alive()
        # the cleaner thread notices, stops, and reports
        with pytest.raises(LogCleaningAbortedError):
            manager.check_cleaning_aborted(tp)
        manager.done_cleaning(tp, tmp_path, 5)
        assert returned.wait(5.0)
    finally:
        waiter.join(5.0)
    assert not waiter.is_alive()
    assert manager.cleaning_state(tp) == LogCleaningPaused(1)
    assert manager.all_cleaner_checkpoints() == {}  # an aborted round does not checkpoint
    manager.check_cleaning_aborted(tp)  # paused, not aborted: no error
    assert manager.is_cleaning_in_state_paused(tp)

    # resume after pause: cleaning may go on
    manager.resume_cleaning([tp])
    assert manager.cleaning_state(tp) is None


def test_abort_cleaning_waits_then_resumes(tmp_path: pathlib.Path) -> None:
    tp = TOPIC_PARTITION
    manager = LogCleanerManager([tmp_path], {}, None, MockTime(current_time_ms=START_MS))
    manager.set_cleaning_state(tp, LogCleaningInProgress)
    finished = threading.Event()

    def abort() -> None:
        manager.abort_cleaning(tp)
        finished.set()

    waiter = threading.Thread(target=abort)
    waiter.start()
    try:
        assert wait_until(lambda: manager.is_cleaning_in_state(tp, LogCleaningAborted))
        assert not finished.is_set()
        manager.done_deleting(tp)  # a retention pass ends the same way
        assert finished.wait(5.0)
    finally:
        waiter.join(5.0)
    assert manager.cleaning_state(tp) is None


def test_abort_and_pause_of_idle_partition_does_not_block(tmp_path: pathlib.Path) -> None:
    manager = LogCleanerManager([tmp_path], {}, None, MockTime(current_time_ms=START_MS))
    started = wall_time.monotonic()
    manager.abort_and_pause_cleaning(TOPIC_PARTITION)
    manager.abort_and_pause_cleaning(TOPIC_PARTITION)
    assert wall_time.monotonic() - started < 1.0
    assert manager.cleaning_state(TOPIC_PARTITION) == LogCleaningPaused(2)
    assert manager.is_cleaning_in_state(TOPIC_PARTITION, LogCleaningPaused(2))
    assert not manager.is_cleaning_in_state(TOPIC_PARTITION, LogCleaningPaused(1))
    assert manager.is_cleaning_in_states(TOPIC_PARTITION, [LogCleaningInProgress, LogCleaningPaused(2)])
    manager.resume_cleaning(TOPIC_PARTITION)  # a single partition is accepted too
    manager.resume_cleaning([TOPIC_PARTITION])
    assert manager.cleaning_state(TOPIC_PARTITION) is None


def test_state_transition_errors(tmp_path: pathlib.Path) -> None:
    manager = LogCleanerManager([tmp_path], {}, None, MockTime(current_time_ms=START_MS))
    with pytest.raises(IllegalStateError) as raised:
        manager.resume_cleaning([TOPIC_PARTITION])
    assert str(raised.value) == "Compaction for partition log-0 cannot be resumed since it is not paused."

    manager.set_cleaning_state(TOPIC_PARTITION, LogCleaningInProgress)
    with pytest.raises(IllegalStateError) as raised:
        manager.resume_cleaning([TOPIC_PARTITION])
    assert str(raised.value) == \
        "Compaction for partition log-0 cannot be resumed since it is in LogCleaningInProgress state."

    manager.set_cleaning_state(TOPIC_PARTITION, LogCleaningAborted)
    with pytest.raises(IllegalStateError) as raised:
        manager.abort_and_pause_cleaning(TOPIC_PARTITION)
    assert str(raised.value) == \
        "Compaction for partition log-0 cannot be aborted and paused since it is in LogCleaningAborted state."
    with pytest.raises(LogCleaningAbortedError):
        manager.check_cleaning_aborted(TOPIC_PARTITION)
    assert issubclass(LogCleaningAbortedError, KafkaLogError)
    with pytest.raises(IllegalArgumentError):
        manager.set_cleaning_state(TOPIC_PARTITION, "LogCleaningPaused")  # type: ignore[arg-type]


def test_cleaning_state_values() -> None:
    assert repr(LogCleaningInProgress) == "LogCleaningInProgress"
    assert repr(LogCleaningAborted) == "LogCleaningAborted"
    assert repr(LogCleaningPaused(3)) == "LogCleaningPaused(3)"
    assert LogCleaningPaused(2) == LogCleaningPaused(2)
    assert LogCleaningPaused(2) != LogCleaningPaused(1)
    assert LogCleaningInProgress != LogCleaningAborted
    assert LogCleaningState.InProgress is LogCleaningInProgress
    assert LogCleaningState.Aborted is LogCleaningAborted
    assert LogCleaningState.Paused(1) == LogCleaningPaused(1)
    assert all(isinstance(s, LogCleaningState)
               for s in (LogCleaningInProgress, LogCleaningAborted, LogCleaningPaused(1)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        LogCleaningPaused(1).paused_count = 2  # type: ignore[misc]


# --- cleanableOffsets -------------------------------------------------------------------------------------------


def test_cleanable_offsets_for_none(impl: ModuleType, env: Env) -> None:
    log = env.make_log({"segment.bytes": 1024})
    while log.number_of_segments < 8:
        env.append_single(log, env.time.milliseconds())
    log.high_watermark = 50

    offsets = LogCleanerManager.cleanable_offsets(log, 0, env.time.milliseconds())
    assert offsets.first_dirty_offset == 0, "The first cleanable offset starts at the beginning of the log."
    assert log.high_watermark == 50
    assert log.high_watermark == log.last_stable_offset, \
        "The high watermark equals the last stable offset as no transactions are in progress"
    assert offsets.first_uncleanable_dirty_offset == log.last_stable_offset, \
        "The first uncleanable offset is bounded by the last stable offset."
    assert offsets.force_update_checkpoint is False
    assert offsets == (0, 50, False)


def test_undecided_transactional_data_not_cleanable(impl: ModuleType, env: Env) -> None:
    """Data of a transaction not yet decided (no marker, or a marker not yet below the high watermark) bounds
    the cleanable range at the transaction's first offset, whatever the compaction lag; once the marker is
    below the high watermark the segment is cleanable at once, and the marker's own segment after the lag.
    The marker is appended as the coordinator appends it, and the log's producer state says the last stable
    offset, as in Kafka."""
    compaction_lag = 60 * 60 * 1000
    log = env.make_log({"segment.bytes": 1024, "min.compaction.lag.ms": compaction_lag})
    producer_id, producer_epoch, sequence = 15, 0, 0
    now = env.time.milliseconds()
    log.append_as_leader(MemoryRecords.with_records(
        [(b"1", b"a", now), (b"2", b"b", now)], producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=sequence, is_transactional=True), 0)
    log.append_as_leader(MemoryRecords.with_records(
        [(b"3", b"c", now)], producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=sequence + 2,
        is_transactional=True), 0)
    log.roll()
    log.high_watermark = 3

    env.time.sleep(compaction_lag + 1)
    # although the compaction lag has been exceeded, the undecided data should not be cleaned
    offsets = cleanable_offsets(log, 0, env.time.milliseconds())
    assert offsets.first_dirty_offset == 0
    assert offsets.first_uncleanable_dirty_offset == 0

    log.append_as_leader(MemoryRecords.with_end_transaction_marker(
        producer_id, producer_epoch, EndTransactionMarker(ControlRecordType.ABORT, 15),
        timestamp=env.time.milliseconds()), 0, origin="coordinator")
    log.roll()
    # (the marker at offset 3 is not below a high watermark of 3: still undecided)
    assert cleanable_offsets(log, 0, env.time.milliseconds()).first_uncleanable_dirty_offset == 0
    log.high_watermark = 4

    # the first segment should now become cleanable immediately
    offsets = cleanable_offsets(log, 0, env.time.milliseconds())
    assert offsets.first_dirty_offset == 0
    assert offsets.first_uncleanable_dirty_offset == 3

    env.time.sleep(compaction_lag + 1)

    # the second segment becomes cleanable after the compaction lag
    offsets = cleanable_offsets(log, 0, env.time.milliseconds())
    assert offsets.first_dirty_offset == 0
    assert offsets.first_uncleanable_dirty_offset == 4


def test_last_stable_offset_follows_the_log(impl: ModuleType, env: Env) -> None:
    """The first unstable offset is summed up per segment and kept: it follows appends to the active segment, a
    segment swapped in by the cleaner, a truncation followed by appends that bring the segment back to its size,
    the high watermark falling inside a segment, and retention moving the log start offset past an open
    transaction's first offset (Kafka raises the first unstable offset to the log start offset).  This is the
    header-scan path, a read-only log's; a writable log answers from its producer state, checked against it
    where the two agree (the producer state never reopens a transaction when the high watermark is set back)."""
    from kafkalog.cleaner.manager import _last_stable_offset as from_state
    from kafkalog.cleaner.manager import _last_stable_offset_from_headers as _last_stable_offset

    log = env.make_log({"segment.bytes": 1024})

    def txn(pid: int, key: bytes) -> None:
        log.append_as_leader(MemoryRecords.with_records(
            [(key, key, env.time.milliseconds())], producer_id=pid, producer_epoch=0, base_sequence=0,
            is_transactional=True), 0)

    def marker(pid: int, control_type: ControlRecordType) -> None:
        log.append_as_follower(MemoryRecords.with_end_transaction_marker(
            pid, 0, EndTransactionMarker(control_type, 0), base_offset=log.log_end_offset,
            timestamp=env.time.milliseconds(), partition_leader_epoch=0))

    def plain(key: bytes) -> None:
        log.append_as_leader(MemoryRecords.with_records([(key, key, env.time.milliseconds())]), 0)

    plain(b"a")            # 0
    txn(1, b"b")           # 1: producer 1 opens
    assert _last_stable_offset(log) == from_state(log) == 1  # the high watermark follows the log end: 2
    plain(b"c")            # 2
    marker(1, ControlRecordType.COMMIT)   # 3
    assert _last_stable_offset(log) == from_state(log) == 4
    log.roll()
    txn(2, b"d")           # 4: producer 2 opens, in the second segment
    plain(b"e")            # 5
    assert _last_stable_offset(log) == 4
    log.high_watermark = 4
    assert _last_stable_offset(log) == 4
    log.high_watermark = 3  # the COMMIT at 3 is not below the high watermark: producer 1 is undecided again
    assert _last_stable_offset(log) == 1
    log.high_watermark = None
    # truncate below the open transaction and append as many bytes again, without a transaction
    size = log.active_segment.size()
    log.truncate_to(4)
    plain(b"x")            # 4
    plain(b"y")            # 5
    assert log.active_segment.size() <= size
    assert _last_stable_offset(log) == from_state(log) == 6
    txn(3, b"f")           # 6
    log.roll()
    plain(b"g")            # 7
    assert _last_stable_offset(log) == 6
    # the log start offset passes the transaction's first offset (its segment is deleted): Kafka's first
    # unstable offset is raised to the log start offset, and so the last stable offset
    log.high_watermark = 7
    log.maybe_increment_log_start_offset(7)
    log.high_watermark = None
    assert _last_stable_offset(log) == 7
    assert log.delete_old_segments() == 2
    # with the segments gone, kafkalog no longer sees producer 3's transaction (module docstring of
    # kafkalog.log.transactions): the log is stable up to its end
    assert _last_stable_offset(log) == log.log_end_offset == 8


def test_cleanable_offsets_active_segment(impl: ModuleType, env: Env) -> None:
    log = env.make_log({"segment.bytes": 1024})
    while log.number_of_segments < 8:
        env.append_single(log, env.time.milliseconds())
    log.high_watermark = log.log_end_offset

    offsets = cleanable_offsets(log, 0, env.time.milliseconds())
    assert offsets.first_dirty_offset == 0, "The first cleanable offset starts at the beginning of the log."
    assert offsets.first_uncleanable_dirty_offset == log.active_segment.base_offset, \
        "The first uncleanable offset begins with the active segment."
    assert log.active_segment.base_offset < log.log_end_offset


def test_cleanable_offsets_for_time(impl: ModuleType, env: Env) -> None:
    compaction_lag = 60 * 60 * 1000
    log = env.make_log({"segment.bytes": 1024, "min.compaction.lag.ms": compaction_lag})

    t0 = env.time.milliseconds()
    while log.number_of_segments < 4:
        env.append_single(log, t0)
    active_seg_at_t0 = log.active_segment

    env.time.sleep(compaction_lag + 1)
    t1 = env.time.milliseconds()
    while log.number_of_segments < 8:
        env.append_single(log, t1)
    log.high_watermark = log.log_end_offset

    offsets = cleanable_offsets(log, 0, env.time.milliseconds())
    assert offsets.first_dirty_offset == 0, "The first cleanable offset starts at the beginning of the log."
    assert offsets.first_uncleanable_dirty_offset == active_seg_at_t0.base_offset, \
        "The first uncleanable offset begins with the second block of log entries."
    assert 0 < active_seg_at_t0.base_offset < log.active_segment.base_offset


def test_cleanable_offsets_for_short_time(impl: ModuleType, env: Env) -> None:
    compaction_lag = 60 * 60 * 1000
    log = env.make_log({"segment.bytes": 1024, "min.compaction.lag.ms": compaction_lag})

    t0 = env.time.milliseconds()
    while log.number_of_segments < 8:
        env.append_single(log, t0)
    log.high_watermark = log.log_end_offset

    env.time.sleep(compaction_lag + 1)

    offsets = cleanable_offsets(log, 0, env.time.milliseconds())
    assert offsets.first_dirty_offset == 0, "The first cleanable offset starts at the beginning of the log."
    assert offsets.first_uncleanable_dirty_offset == log.active_segment.base_offset, \
        "The first uncleanable offset begins with active segment."


def test_cleanable_offsets_needs_checkpoint_reset(impl: ModuleType, env: Env) -> None:
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    logs[tp].maybe_increment_log_start_offset(10)

    offsets = cleanable_offsets(logs[tp], 15, env.time.milliseconds())
    assert not offsets.force_update_checkpoint, "Checkpoint offset should not be reset if valid"
    assert offsets.first_dirty_offset == 15

    logs[tp].maybe_increment_log_start_offset(20)
    offsets = cleanable_offsets(logs[tp], 15, env.time.milliseconds())
    assert offsets.force_update_checkpoint, "Checkpoint offset needs to be reset if less than log start offset"
    assert offsets.first_dirty_offset == 20

    offsets = cleanable_offsets(logs[tp], 25, env.time.milliseconds())
    assert offsets.force_update_checkpoint, "Checkpoint offset needs to be reset if greater than log end offset"
    assert offsets.first_dirty_offset == 20


def test_cleanable_offsets_without_checkpoint_and_warnings(impl: ModuleType, env: Env,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    log = logs[tp]
    log.maybe_increment_log_start_offset(6)
    # no checkpoint: from the log start offset, not forced
    assert cleanable_offsets(log, None, env.time.milliseconds()) == OffsetsToClean(6, 20, False)
    with caplog.at_level(logging.WARNING, logger="kafkalog.cleaner.manager"):
        assert cleanable_offsets(log, 3, env.time.milliseconds()) == OffsetsToClean(6, 20, True)
        assert cleanable_offsets(log, 21, env.time.milliseconds()) == OffsetsToClean(6, 20, True)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "Resetting first dirty offset of foo-0 to log start offset 6 since the checkpointed offset 3 is invalid.",
        "The last checkpoint dirty offset for partition foo-0 is 21, which is larger than the log end offset 20. "
        "Resetting to the log start offset 6.",
    ]
    # compact,delete logs reset below the start without a warning
    caplog.clear()
    log.config = LogConfig({"segment.bytes": 2048, "cleanup.policy": "compact,delete"})
    with caplog.at_level(logging.WARNING, logger="kafkalog.cleaner.manager"):
        assert cleanable_offsets(log, 3, env.time.milliseconds()) == OffsetsToClean(6, 20, True)
    assert caplog.records == []


def test_cleanable_offsets_uncleanable_below_first_dirty(impl: ModuleType, env: Env) -> None:
    # a checkpoint past the high watermark: the range is empty, never inverted
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    logs[tp].high_watermark = 8
    assert cleanable_offsets(logs[tp], 12, env.time.milliseconds()) == OffsetsToClean(12, 12, False)


# --- doneCleaning / doneDeleting --------------------------------------------------------------------------------


def test_done_cleaning(impl: ModuleType, env: Env) -> None:
    log = env.make_log({"segment.bytes": 1024})
    while log.number_of_segments < 8:
        env.append_single(log, env.time.milliseconds())
    cleaner_manager = create_cleaner_manager(env, log)
    data_dir = log.dir.parent

    with pytest.raises(IllegalStateError, match=r"State for partition log-0 should exist\."):
        cleaner_manager.done_cleaning(TOPIC_PARTITION, data_dir, 1)

    cleaner_manager.set_cleaning_state(TOPIC_PARTITION, LogCleaningPaused(1))
    with pytest.raises(IllegalStateError) as raised:
        cleaner_manager.done_cleaning(TOPIC_PARTITION, data_dir, 1)
    assert str(raised.value) == "In-progress partition log-0 cannot be in LogCleaningPaused(1) state."

    cleaner_manager.set_cleaning_state(TOPIC_PARTITION, LogCleaningInProgress)
    end_offset = 1
    cleaner_manager.done_cleaning(TOPIC_PARTITION, data_dir, end_offset)
    assert cleaner_manager.cleaning_state(TOPIC_PARTITION) is None
    assert TOPIC_PARTITION in cleaner_manager.all_cleaner_checkpoints()
    assert cleaner_manager.all_cleaner_checkpoints().get(TOPIC_PARTITION) == end_offset

    cleaner_manager.set_cleaning_state(TOPIC_PARTITION, LogCleaningAborted)
    cleaner_manager.done_cleaning(TOPIC_PARTITION, data_dir, 7)
    assert cleaner_manager.cleaning_state(TOPIC_PARTITION) == LogCleaningPaused(1)
    assert cleaner_manager.all_cleaner_checkpoints() == {TOPIC_PARTITION: end_offset}


def test_done_deleting(impl: ModuleType, env: Env) -> None:
    records = singleton_records(b"test", key=b"test")
    log = env.create_log(records.size_in_bytes() * 5, "compact,delete")
    cleaner_manager = create_cleaner_manager(env, log)
    tp = TopicPartition("log", 0)

    with pytest.raises(IllegalStateError, match=r"State for partition log-0 should exist\."):
        cleaner_manager.done_deleting([tp])

    cleaner_manager.set_cleaning_state(tp, LogCleaningPaused(1))
    with pytest.raises(IllegalStateError, match=r"cannot be in LogCleaningPaused\(1\) state"):
        cleaner_manager.done_deleting([tp])

    cleaner_manager.set_cleaning_state(tp, LogCleaningInProgress)
    cleaner_manager.done_deleting([tp])
    assert cleaner_manager.cleaning_state(tp) is None

    cleaner_manager.set_cleaning_state(tp, LogCleaningAborted)
    cleaner_manager.done_deleting([tp])
    assert cleaner_manager.cleaning_state(tp) == LogCleaningPaused(1)


def test_checkpoint_updated_for_invalid_offset_no_cleaning(impl: ModuleType, env: Env) -> None:
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    logs[tp].maybe_increment_log_start_offset(20)
    checkpoints = {tp: 15}
    cleaner_manager = create_cleaner_manager_mock(env, logs, checkpoints)

    assert cleaner_manager.grab_filthiest_compacted_log(env.time) is None, "Log should not be selected for cleaning"
    assert checkpoints[tp] == 20, "Unselected log should have checkpoint offset updated"


def test_checkpoint_updated_for_invalid_offset_not_selected(impl: ModuleType, env: Env) -> None:
    tp0 = TopicPartition("foo", 0)
    tp1 = TopicPartition("foo", 1)
    # create two logs, one with an invalid offset, and one that is dirtier than the log with an invalid offset
    logs = env.setup_increasingly_filthy_logs([tp0, tp1], start_num_batches=20, batch_increment=5)
    logs[tp0].maybe_increment_log_start_offset(15)
    checkpoints = {tp0: 10, tp1: 5}
    cleaner_manager = create_cleaner_manager_mock(env, logs, checkpoints)

    filthiest_log = cleaner_manager.grab_filthiest_compacted_log(env.time)
    assert filthiest_log is not None
    assert filthiest_log.topic_partition == tp1, "Dirtier log should be selected"
    assert checkpoints[tp0] == 15, "Unselected log should have checkpoint offset updated"


def test_checkpoint_reset_written_to_file(impl: ModuleType, env: Env) -> None:
    # the real (file) path of the forced checkpoint update
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    logs[tp].maybe_increment_log_start_offset(20)
    manager = LogCleanerManager([env.log_dir], logs, None, env.time)
    manager.update_checkpoints(env.log_dir, partition_to_update=(tp, 15))
    assert manager.grab_filthiest_compacted_log() is None
    assert (env.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).read_bytes() == b"0\n1\nfoo 0 20\n"


# --- max.compaction.lag.ms --------------------------------------------------------------------------------------


def test_max_compaction_lag_makes_log_cleanable_now(impl: ModuleType, env: Env) -> None:
    tp = TopicPartition("lagging", 0)
    max_lag = 10_000
    config = LogConfig({"segment.bytes": 1024, "cleanup.policy": "compact", "max.compaction.lag.ms": max_lag})
    log = env.open_log(env.log_dir / str(tp), config)
    t0 = env.time.milliseconds()
    for _ in range(10):
        env.append_single(log, t0)
        log.roll()
    # one record per segment; offsets 0..8 clean, [9, 10) dirty: a ratio far below 0.5
    manager = LogCleanerManagerMock([env.log_dir], {tp: log}, {tp: 9})
    stats = PreCleanStats()
    assert manager.grab_filthiest_compacted_log(env.time, stats) is None
    assert (stats.max_compaction_delay_ms, stats.delayed_partitions, stats.cleanable_partitions) == (0, 0, 0)
    assert max_compaction_delay(log, 9, env.time.milliseconds()) == 0

    env.time.sleep(max_lag + 250)
    now = env.time.milliseconds()
    assert max_compaction_delay(log, 9, now) == now - max_lag - t0 == 250
    stats = PreCleanStats()
    chosen = manager.grab_filthiest_compacted_log(env.time, stats)
    assert chosen is not None
    assert chosen.need_compaction_now is True
    assert chosen.cleanable_ratio < log.config.min_cleanable_ratio
    assert (chosen.first_dirty_offset, chosen.first_uncleanable_offset) == (9, 10)
    assert (stats.max_compaction_delay_ms, stats.delayed_partitions, stats.cleanable_partitions) == (250, 1, 1)
    assert manager.time_of_last_run == now


def test_max_compaction_delay_ignores_missing_timestamps(impl: ModuleType, env: Env) -> None:
    log = env.make_log({"max.compaction.lag.ms": 1})
    for i in range(3):
        log.append(singleton_records(b"v", key=str(i).encode()))  # timestamp -1
        log.roll()
    env.time.sleep(1000)
    assert max_compaction_delay(log, 0, env.time.milliseconds()) == 0
    env.append_single(log, 5)  # a first batch timestamp > 0, in the active segment: not dirty yet
    assert max_compaction_delay(log, 0, env.time.milliseconds()) == 0
    log.roll()
    assert max_compaction_delay(log, 0, env.time.milliseconds()) == env.time.milliseconds() - 1 - 5


# --- LogToClean (LogCleanerTest) --------------------------------------------------------------------------------


def make_six_segment_log(env: Env) -> Log:
    log = env.make_log({"segment.bytes": 100})
    # create 6 segments with only one message in each segment
    for _ in range(6):
        log.append(singleton_records(bytes(25), key=b"1"))
    assert log.number_of_segments == 6
    return log


def test_log_to_clean(impl: ModuleType, env: Env) -> None:
    log = make_six_segment_log(env)
    log_to_clean = LogToClean(TopicPartition("test", 0), log, log.active_segment.base_offset,
                              log.active_segment.base_offset)
    assert log_to_clean.total_bytes == log.size - log.active_segment.size(), \
        "Total bytes of LogToClean should equal size of all segments excluding the active segment"
    assert log_to_clean.cleanable_bytes == 0
    assert log_to_clean.cleanable_ratio == 0.0


def test_log_to_clean_with_uncleanable_section(impl: ModuleType, env: Env) -> None:
    log = make_six_segment_log(env)
    # segments [0,1] are clean; segments [2, 3] are cleanable; segments [4,5] are uncleanable
    segs = log.log_segments()
    log_to_clean = LogToClean(TopicPartition("test", 0), log, segs[2].base_offset, segs[4].base_offset)

    expected_clean_size = sum(s.size() for s in segs[:2])
    expected_cleanable_size = sum(s.size() for s in segs[2:4])
    assert log_to_clean.clean_bytes == expected_clean_size, \
        "Uncleanable bytes of LogToClean should equal size of all segments prior the one containing first dirty"
    assert log_to_clean.cleanable_bytes == expected_cleanable_size, (
        "Cleanable bytes of LogToClean should equal size of all segments from the one containing first dirty "
        "offset to the segment prior to the one with the first uncleanable offset")
    assert log_to_clean.dirty_bytes == expected_cleanable_size
    assert log_to_clean.total_bytes == expected_clean_size + expected_cleanable_size, \
        "Total bytes should be the sum of the clean and cleanable segments"
    assert log_to_clean.cleanable_ratio == pytest.approx(
        expected_cleanable_size / (expected_clean_size + expected_cleanable_size), abs=1e-6), \
        "Total cleanable ratio should be the ratio of cleanable size to clean plus cleanable"
    assert log_to_clean.first_uncleanable_offset == segs[4].base_offset == 4


def test_log_to_clean_counts_segment_of_first_dirty_offset_twice(impl: ModuleType, env: Env) -> None:
    # whole segments: the segment holding the first dirty offset is both clean and cleanable (spec pitfall 10)
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    log = logs[tp]
    sizes = {s.base_offset: s.size() for s in log.log_segments()}
    assert list(sizes) == [0, 1, 6, 11, 16, 20]
    ltc = LogToClean(tp, log, 8, 14)
    assert ltc.clean_bytes == sizes[0] + sizes[1] + sizes[6]
    # the uncleanable offset is rounded down to the base of the segment holding it
    assert ltc.first_uncleanable_offset == 11
    assert ltc.cleanable_bytes == sizes[6]
    assert ltc.total_bytes == sizes[0] + sizes[1] + 2 * sizes[6]
    assert calculate_cleanable_bytes(log, 8, 14) == (11, sizes[6])
    assert calculate_cleanable_bytes(log, 8, 16) == (16, sizes[6] + sizes[11])
    assert calculate_cleanable_bytes(log, 8, 100) == (20, sizes[6] + sizes[11] + sizes[16])


def test_log_to_clean_ordering_and_empty_log(impl: ModuleType, env: Env) -> None:
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    log = logs[tp]
    low = LogToClean(tp, log, 16, 20)
    high = LogToClean(tp, log, 0, 20)
    assert high.cleanable_ratio == 1.0
    assert 0 < low.cleanable_ratio < 1
    assert low < high and high > low and low <= low and high >= low
    assert (low.compare(high), high.compare(low), low.compare(low)) == (-1, 1, 0)
    assert max([low, high, low]) is high
    assert low == LogToClean(tp, log, 16, 20, False)
    assert low != LogToClean(tp, log, 16, 20, True)
    assert repr(low) == "LogToClean(foo-0, foo-0, 16, 20, False)"

    empty = env.create_log(1024, "compact", TopicPartition("empty", 0))
    nothing = LogToClean(TopicPartition("empty", 0), empty, 0, 0)
    assert (nothing.clean_bytes, nothing.cleanable_bytes, nothing.total_bytes) == (0, 0, 0)
    assert math.isnan(nothing.cleanable_ratio)  # Java's 0 / 0.0
    assert nothing.compare(high) == 0 and high.compare(nothing) == 0


# --- read-only, gauges, uncleanable partitions ------------------------------------------------------------------


def test_read_only_manager_never_writes(impl: ModuleType, env: Env) -> None:
    tp = TopicPartition("foo", 0)
    logs = env.setup_increasingly_filthy_logs([tp], start_num_batches=20, batch_increment=5)
    manager = LogCleanerManager([env.log_dir], logs, None, env.time, read_only=True)
    checkpoint_file = env.log_dir / CLEANER_OFFSET_CHECKPOINT_FILE
    assert not checkpoint_file.exists()
    assert manager.all_cleaner_checkpoints() == {}
    chosen = manager.grab_filthiest_compacted_log()
    assert chosen is not None and chosen.first_dirty_offset == 0
    assert manager.cleaning_state(tp) is LogCleaningInProgress  # the state machine works read-only
    with pytest.raises(ReadOnlyError, match="the log cleaner manager is read-only"):
        manager.done_cleaning(tp, env.log_dir, 20)
    assert not checkpoint_file.exists()
    assert manager.cleaning_state(tp) is LogCleaningInProgress

    # a broker's checkpoint is read; an invalid one is not rewritten
    OffsetCheckpoint(checkpoint_file).write({tp: 99})
    before = checkpoint_file.read_bytes()
    manager.done_deleting([tp])
    chosen = manager.grab_filthiest_compacted_log()
    assert chosen is not None and chosen.first_dirty_offset == 0
    assert checkpoint_file.read_bytes() == before
    with pytest.raises(ReadOnlyError):
        manager.update_checkpoints(env.log_dir, partition_to_remove=tp)
    with pytest.raises(ReadOnlyError):
        manager.maybe_truncate_checkpoint(env.log_dir, tp, 5)
    manager.maybe_truncate_checkpoint(env.log_dir, tp, 100)  # nothing to write: no error
    assert checkpoint_file.read_bytes() == before


def test_uncleanable_partitions_and_gauges(impl: ModuleType, env: Env) -> None:
    logs = env.setup_increasingly_filthy_logs(WISHING_WELL, start_num_batches=20, batch_increment=5)
    live_logs = dict(logs)
    manager = LogCleanerManager([env.log_dir, env.log_dir2], lambda: live_logs, None, env.time)
    assert manager.uncleanable_partitions_count(env.log_dir) == 0
    assert manager.uncleanable_bytes(env.log_dir) == 0

    manager.mark_partition_uncleanable(env.log_dir, WISHING_WELL[1])
    manager.mark_partition_uncleanable(str(env.log_dir), WISHING_WELL[2])
    assert manager.uncleanable_partitions(env.log_dir) == {WISHING_WELL[1], WISHING_WELL[2]}
    assert manager.uncleanable_partitions_count(env.log_dir) == 2
    assert manager.uncleanable_partitions_count(env.log_dir2) == 0
    # no checkpoints: everything below the active segment of each is cleanable
    expected = sum(calculate_cleanable_bytes(live_logs[tp], 0, live_logs[tp].active_segment.base_offset)[1]
                   for tp in WISHING_WELL[1:])
    assert manager.uncleanable_bytes(env.log_dir) == expected > 0

    chosen = manager.grab_filthiest_compacted_log()
    assert chosen is not None and chosen.topic_partition == WISHING_WELL[0]
    assert manager.max_dirty_percent == 100
    env.time.sleep(1234)
    assert manager.time_since_last_run_ms == 1234

    # a deleted partition is forgotten by the maintenance pass, and so is a dir left empty
    del live_logs[WISHING_WELL[1]]
    manager.maintain_uncleanable_partitions()
    assert manager.uncleanable_partitions(env.log_dir) == {WISHING_WELL[2]}
    del live_logs[WISHING_WELL[2]]
    manager.maintain_uncleanable_partitions()
    assert manager.uncleanable_partitions(env.log_dir) == set()
    assert manager.uncleanable_partitions_count(env.log_dir) == 0


def test_done_cleaning_in_unknown_dir(impl: ModuleType, env: Env) -> None:
    log = env.create_log(1024, "compact")
    manager = create_cleaner_manager(env, log)
    manager.set_cleaning_state(TOPIC_PARTITION, LogCleaningInProgress)
    with pytest.raises(IllegalArgumentError, match="No cleaner checkpoint file for log dir"):
        manager.done_cleaning(TOPIC_PARTITION, env.log_dir / "elsewhere", 3)
    assert manager.cleaning_state(TOPIC_PARTITION) is LogCleaningInProgress  # as in Kafka: state kept
    # a relative or differently spelt path to the same dir is the same dir
    manager.done_cleaning(TOPIC_PARTITION, env.log_dir / "log-0" / "..", 3)
    assert manager.all_cleaner_checkpoints() == {TOPIC_PARTITION: 3}


# --- the cleaner thread's failures (Kafka 3.8: cleanFilthiestLog / tryCleanFilthiestLog) --------------------------


def _two_compacted_logs(tmp_path: pathlib.Path, time: MockTime) -> dict[TopicPartition, Log]:
    config = LogConfig({"cleanup.policy": "compact,delete", "segment.bytes": 300, "retention.ms": 600_000})
    logs = {}
    for partition in range(2):
        log = Log(tmp_path / f"t-{partition}", config, time=time, scheduler=time.scheduler)
        for i in range(20):
            log.append(MemoryRecords.with_records([(b"k%d" % (i % 3), b"v" * 20, time.milliseconds())]))
        log.roll()
        logs[log.topic_partition] = log
    return logs


def test_a_failing_retention_hands_every_log_back_and_marks_only_its_own_uncleanable(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog.cleaner import CleanerThread, LogCleaner

    time = MockTime(current_time_ms=1_700_000_000_000)
    logs = _two_compacted_logs(tmp_path, time)
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [tmp_path], logs, time=time)
    manager = cleaner.cleaner_manager
    failing = TopicPartition("t", 0)
    retention = Log.delete_old_segments

    def failing_retention(log: Log) -> int:
        if log.topic_partition == failing:
            raise OSError("the disk said no")
        return retention(log)

    monkeypatch.setattr(Log, "delete_old_segments", failing_retention)
    try:
        assert CleanerThread(0, cleaner).try_clean_filthiest_log() is False
        # both logs taken for retention were handed back, the one after the failure too
        assert manager.cleaning_state(TopicPartition("t", 0)) is None
        assert manager.cleaning_state(TopicPartition("t", 1)) is None
        assert manager.uncleanable_partitions(tmp_path) == {failing}
        # the healthy log is still chosen; the failing one no longer is
        assert [tp for tp, _log in manager.deletable_logs()] == [TopicPartition("t", 1)]
    finally:
        for log in logs.values():
            log.close()


def test_any_error_while_cleaning_marks_the_partition_uncleanable(tmp_path: pathlib.Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only kafkalog's own errors: Kafka wraps every exception of ``cleanLog`` in a LogCleaningException."""
    from kafkalog.cleaner import Cleaner, CleanerThread, LogCleaner

    time = MockTime(current_time_ms=1_700_000_000_000)
    logs = _two_compacted_logs(tmp_path, time)
    cleaner = LogCleaner(CleanerConfig(dedupe_buffer_size=1 << 20), [tmp_path], logs, time=time)

    def broken_clean(self: Cleaner, cleanable: LogToClean) -> NoReturn:
        raise ValueError("a bug")

    monkeypatch.setattr(Cleaner, "clean", broken_clean)
    try:
        thread = CleanerThread(0, cleaner)
        assert thread.try_clean_filthiest_log() is False
        assert thread.try_clean_filthiest_log() is False
        # each failing log was handed back (no state left) and set aside
        assert cleaner.cleaner_manager.uncleanable_partitions(tmp_path) == set(logs)
        assert all(cleaner.cleaner_manager.cleaning_state(tp) is None for tp in logs)
        assert thread.try_clean_filthiest_log() is False  # nothing left to choose
    finally:
        for log in logs.values():
            log.close()
