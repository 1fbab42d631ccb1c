"""LogManager against Kafka's LogManagerTest (core 3.8.0 and 0.10.1.1), spec §2.1, §3.16-3.17, §7.10.

The managers are built as Kafka's ``TestUtils.createLogManager`` builds them: a :class:`MockTime` whose
scheduler runs the background tasks (retention every second, the flusher every second, the checkpoints
every ten seconds, all first run :data:`INITIAL_TASK_DELAY_MS` after ``startup``), so a test moves the
clock with ``mock_time.sleep`` and the tasks that came due run in the test's thread.  The default topic
configuration is the test's ``logConfig``: 1 KiB segments, 4 KiB indexes, ten minutes of retention.

What differs from Kafka's test, and why:

* kafkalog writes no producer snapshot, leader-epoch checkpoint or ``partition.metadata``: a log directory
  holds three files per segment (``.log``, ``.index``, ``.timeindex``) where Kafka counts four plus one;
* ``cleanup.policy=compact,delete``: Kafka 3.8's ``LogManager.cleanupLogs`` skips every compacted log and
  the cleaner threads run ``deleteOldSegments`` on them after each pass, which for ``compact,delete`` applies
  time and size retention (``UnifiedLog.deleteOldSegments``).  These tests' managers run without a cleaner,
  and kafkalog's then applies that retention itself, so a broker's observable behaviour is checked: the
  expired segments of a ``compact,delete`` log go, those of a ``compact`` log stay (Kafka's own test never
  started its manager, so it asserted nothing either way); with a cleaner, retention leaves compacted logs
  to it, as Kafka 3.8 does (``test_retention_with_a_cleaner_...``);
* the overly long topic is the longest legal one (249 characters): kafkalog's ``create_log`` checks topic
  names, which Kafka leaves to the controller, so Kafka's 253 ``x`` are an :class:`InvalidTopicError` here;
* ``.kafka_cleanshutdown`` is the empty marker of Kafka <= 3.6 (there is no broker epoch to record);
* ``os.fsync`` only checks its descriptor (:func:`no_disk_sync`).

Added to Kafka's cases: the lock seen from a second process, the checkpoint tasks driven by the clock, a
restart reading back the log start offset, and a shutdown while deleted segments wait for their delay.
The bad-input cases (``test_log_manager_bad_input.py``) each leave a populated log directory behind them,
which is opened again
to check that every record written before the error is still there.  Tests that append run on both
kernel twins (``impl``); those about locks only once.

Kafka tests not ported:

- ``testLogRecoveryMetrics``, ``testLogRecoveryMetricsShouldBeRemovedAfterLogRecovered``: the Yammer gauges
  ``remainingLogsToRecover`` and ``remainingSegmentsToRecover`` and their registration, which is all they
  check; kafkalog has no metrics registry (recovery progress goes to ``Log``'s ``recovery_progress``).
- ``testCheckpointLogStartOffsetForRemoteTopic``: remote (tiered) storage: the highest offset in remote
  storage and the local log start offset of a topic with remote.storage.enable.
- ``testIsStrayKraftReplicaWithEmptyImage``, ``testIsStrayKraftReplicaInImage``,
  ``testIsStrayKraftReplicaInImageWithRemoteReplicas``, ``testIsStrayKraftMissingTopicId``: stray detection
  from a KRaft metadata image (TopicsImage, replica assignments, topic ids); kafkalog takes any ``is_stray``
  predicate instead (testLoadLogRenameLogThatShouldBeStray).
- ``testFindStrayReplicasInEmptyLAIR``, ``testFindNoStrayReplicasInFullLAIR``,
  ``testFindSomeStrayReplicasInFullLAIR``, ``testTopicRecreationInFullLAIR``: stray detection from a
  controller's full LeaderAndIsr request (ZooKeeper-to-KRaft migration) by topic id; no controller here.

The 3.8.0 cases about deletion, directories, shutdown and configuration changes are in
``test_log_manager_dirs.py``; the managers and fixtures shared by the three files are in this folder's
``conftest.py`` and :mod:`tests.support.manager_utils`.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kafkalog.checkpoint import LEADER_EPOCH_CHECKPOINT_FILE
from kafkalog.errors import (
    KafkaStorageError,
    OffsetOutOfRangeError,
)
from kafkalog.log import Log
from kafkalog.manager.log_manager import (
    INITIAL_TASK_DELAY_MS,
    LogManager,
)
from kafkalog.producer_state import ProducerStateManagerConfig
from kafkalog.record import MemoryRecords
from kafkalog.scheduler import MockTime
from kafkalog.segment import LogSegment
from kafkalog.topic import TopicPartition, parse_topic_partition_name
from tests.support.manager_utils import (
    CLEAN_SHUTDOWN_FILE,
    LOG_CONFIG,
    LOG_START_OFFSET_FILE,
    LONG_TASK_PERIOD_MS,
    MAX_LOG_AGE_MS,
    NAME,
    RECOVERY_POINT_FILE,
    SET_SIZE,
    ManagerFactory,
    SyncCounter,
    append_many,
    child_env,
    materialize_indexes,
    open_paths,
    read_checkpoint,
    record_tuples,
    singleton,
)

# --- Kafka's LogManagerTest -------------------------------------------------------------------------------


def test_create_log(manager: LogManager, log_dir: Path) -> None:
    """testCreateLog: the directory appears and takes an append."""
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    assert manager.log_dirs == [log_dir.resolve()]
    assert (log_dir / f"{NAME}-0").is_dir()
    assert log.dir == log_dir.resolve() / f"{NAME}-0"
    info = log.append_as_leader(singleton(b"test"), leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (0, 0)
    assert [(r.offset, r.key, r.value) for r in log.records()] == [(0, None, b"test")]
    assert manager.get_or_create_log(TopicPartition(NAME, 0)) is log
    assert manager.get_log(TopicPartition(NAME, 0)) is log
    assert manager.all_logs() == [log]


def test_get_non_existent_log(manager: LogManager, log_dir: Path) -> None:
    """testGetNonExistentLog: no log, and no directory made by asking."""
    assert manager.get_log(TopicPartition(NAME, 0)) is None
    assert not (log_dir / f"{NAME}-0").exists()
    assert manager.all_logs() == []


def test_cleanup_expired_segments(make_manager: ManagerFactory, mock_time: MockTime) -> None:
    """testCleanupExpiredSegments: the retention task deletes every segment older than retention.ms."""
    manager = make_manager(checkpoint_ms=LONG_TASK_PERIOD_MS)
    manager.startup()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    offset = append_many(log, 200)
    assert offset == 199
    assert log.number_of_segments > 1
    log.high_watermark = log.log_end_offset
    for segment in log.log_segments():
        segment.set_last_modified(mock_time.milliseconds())

    mock_time.sleep(MAX_LOG_AGE_MS + 1)
    assert log.number_of_segments == 1, "Now there should only be only one segment in the index."
    assert log.active_segment.base_offset == 200
    assert log.log_start_offset == 200
    mock_time.sleep(log.config.file_delete_delay_ms + 1)
    materialize_indexes(log)
    # A log file, two indexes, the producer snapshot taken when the last segment rolled and the leader-epoch
    # checkpoint (Kafka's numberOfSegments * 4 + 1).
    assert sorted(p.name for p in log.dir.iterdir()) == [
        "00000000000000000200.index", "00000000000000000200.log", "00000000000000000200.snapshot",
        "00000000000000000200.timeindex", "leader-epoch-checkpoint"]
    assert len(list(log.dir.iterdir())) == log.number_of_segments * 4 + 1, "Files should have been deleted"
    assert log.read(offset + 1, 1024).records.size_in_bytes() == 0, "Should get empty fetch off new log."
    with pytest.raises(OffsetOutOfRangeError, match="starting from offset: 200"):
        log.read(0, 1024)
    info = log.append_as_leader(singleton(b"test"), leader_epoch=0)
    assert info.last_offset == 200
    assert list(log.records()) == []  # a consumer sees nothing past the high watermark, still 200
    log.high_watermark = log.log_end_offset
    assert [(r.offset, r.value) for r in log.records()] == [(200, b"test")]


def test_cleanup_segments_to_maintain_size(make_manager: ManagerFactory, mock_time: MockTime) -> None:
    """testCleanupSegmentsToMaintainSize: 20 segments of 10 sets, retention.bytes 50 sets + 10 bytes."""
    assert singleton(b"test").size_in_bytes() == SET_SIZE
    segment_bytes = 10 * SET_SIZE
    manager = make_manager(topic_configs={NAME: {"segment.bytes": str(segment_bytes),
                                                 "retention.bytes": str(5 * 10 * SET_SIZE + 10)}})
    manager.startup()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    assert log.config.segment_size == segment_bytes
    assert log.config.retention_ms == MAX_LOG_AGE_MS
    offset = 0
    for _ in range(200):
        info = log.append_as_leader(singleton(b"test"), leader_epoch=0)
        offset = info.first_offset
    log.high_watermark = log.log_end_offset
    assert log.number_of_segments == 200 * SET_SIZE // segment_bytes == 20

    # The first retention check finds nothing expired but deletes the oldest 14 segments for size.
    mock_time.sleep(INITIAL_TASK_DELAY_MS)
    assert log.number_of_segments == 6, "Now there should be exactly 6 segments"
    assert [s.base_offset for s in log.log_segments()] == [140, 150, 160, 170, 180, 190]
    assert log.log_start_offset == 140
    assert log.size == 6 * segment_bytes
    mock_time.sleep(log.config.file_delete_delay_ms + 1)
    materialize_indexes(log)
    assert len(list(log.dir.iterdir())) == log.number_of_segments * 4 + 1, "Files should have been deleted"
    assert log.read(offset + 1, 1024).records.size_in_bytes() == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1024)
    assert log.append_as_leader(singleton(b"test"), leader_epoch=0).last_offset == 200


def _run_retention_on_policy(make_manager: ManagerFactory, mock_time: MockTime,
                             policy: str) -> tuple[Log, int]:
    """Kafka's ``testDoesntCleanLogs(policy)`` with the manager started: 200 keyed sets, every segment's
    file made "now", then retention.ms passes.  Returns the log and its segment count before."""
    manager = make_manager(topic_configs={NAME: {"cleanup.policy": policy}},
                           checkpoint_ms=LONG_TASK_PERIOD_MS)
    manager.startup()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    assert append_many(log, 200, key=b"test") == 199
    num_segments = log.number_of_segments
    assert num_segments > 1, "There should be more than one segment now."
    log.high_watermark = log.log_end_offset
    for segment in log.log_segments():
        segment.set_last_modified(mock_time.milliseconds())
    mock_time.sleep(MAX_LOG_AGE_MS + 1)
    return log, num_segments


def test_doesnt_clean_logs_with_compact_policy(make_manager: ManagerFactory, mock_time: MockTime) -> None:
    """testDoesntCleanLogsWithCompactPolicy: a compacted log keeps its expired segments."""
    log, num_segments = _run_retention_on_policy(make_manager, mock_time, "compact")
    assert log.config.compact and not log.config.delete
    assert log.number_of_segments == num_segments, "number of segments shouldn't have changed"
    assert log.log_start_offset == 0
    # What the cleaner calls after a pass: for compact only the log start offset counts.
    assert log.delete_old_segments() == 0
    assert [r.offset for r in log.records()] == list(range(200))


def test_compact_delete_policy_applies_time_retention(make_manager: ManagerFactory,
                                                      mock_time: MockTime) -> None:
    """testDoesntCleanLogsWithCompactDeletePolicy, as Kafka 3.8 behaves: ``compact,delete`` logs are
    time-retention cleaned (by the cleaner's ``deleteOldSegments`` in Kafka; kafkalog has no cleaner yet)."""
    log, num_segments = _run_retention_on_policy(make_manager, mock_time, "compact,delete")
    assert log.config.compact and log.config.delete
    assert num_segments == 16  # 13 keyed sets of 76 bytes fill a 1 KiB segment
    assert log.number_of_segments == 1
    assert log.active_segment.base_offset == 200
    assert log.log_start_offset == 200
    assert record_tuples(log) == []
    mock_time.sleep(log.config.file_delete_delay_ms + 1)
    materialize_indexes(log)
    assert sorted(p.name for p in log.dir.iterdir()) == [
        "00000000000000000200.index", "00000000000000000200.log", "00000000000000000200.snapshot",
        "00000000000000000200.timeindex", "leader-epoch-checkpoint"]


def test_compact_delete_policy_applies_size_retention(make_manager: ManagerFactory,
                                                      mock_time: MockTime) -> None:
    """UnifiedLog.deleteOldSegments on a ``compact,delete`` log applies retention.bytes too (the sizes of
    testCleanupSegmentsToMaintainSize with keyed sets: 10 sets of 76 bytes per segment)."""
    keyed_size = singleton(b"test", b"test").size_in_bytes()
    assert keyed_size == SET_SIZE + 4
    segment_bytes = 10 * keyed_size
    manager = make_manager(topic_configs={NAME: {"cleanup.policy": "compact,delete",
                                                 "segment.bytes": str(segment_bytes),
                                                 "retention.bytes": str(5 * segment_bytes + 10)}})
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(log, 100, key=b"test")
    assert log.number_of_segments == 10
    assert log.delete_old_segments() == 4
    assert [s.base_offset for s in log.log_segments()] == [40, 50, 60, 70, 80, 90]
    assert log.log_start_offset == 40
    assert [r.offset for r in log.records()] == list(range(40, 100))
    assert sorted(p.name for p in log.dir.glob("*.log.deleted"))[0] == "00000000000000000000.log.deleted"
    mock_time.sleep(log.config.file_delete_delay_ms)
    assert sorted(p.name for p in log.dir.glob("*.log*")) == [f"{b:020d}.log" for b in range(40, 100, 10)]


def test_time_based_flush(make_manager: ManagerFactory, mock_time: MockTime) -> None:
    """testTimeBasedFlush: the flusher flushes a log whose flush.ms has passed, not one whose has not."""
    manager = make_manager(topic_configs={NAME: {"flush.ms": "1000"}})
    manager.startup()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    lazy = manager.get_or_create_log(TopicPartition("lazy", 0))
    last_flush = log.last_flush_time
    lazy_last_flush = lazy.last_flush_time
    append_many(log, 200)
    append_many(lazy, 5)
    assert log.unflushed_messages() > 0
    mock_time.sleep(INITIAL_TASK_DELAY_MS)
    assert log.last_flush_time != last_flush, "Time based flush should have been triggered"
    assert log.last_flush_time == last_flush + INITIAL_TASK_DELAY_MS
    assert log.recovery_point == log.log_end_offset == 200
    assert log.unflushed_messages() == 0
    # The default flush.ms is Long.MAX: the flusher leaves that log alone.
    assert lazy.last_flush_time == lazy_last_flush
    assert lazy.recovery_point == 0 and lazy.unflushed_messages() == 5


def test_least_loaded_assignment(make_manager: ManagerFactory, tmp_path: Path) -> None:
    """testLeastLoadedAssignment: new logs go to the directory holding the fewest."""
    dirs = [tmp_path / "d0", tmp_path / "d1", tmp_path / "d2"]
    manager = make_manager(dirs)
    for partition in range(20):
        manager.get_or_create_log(TopicPartition("test", partition))
        assert len(manager.all_logs()) == partition + 1, "We should have created the right number of logs"
        counts = [len(logs) for logs in manager.logs_by_dir().values()]
        assert max(counts) <= min(counts) + 1, "Load should balance evenly"
    assert sorted(len(list(d.iterdir())) for d in dirs) == [1 + 6, 1 + 7, 1 + 7]  # .lock and the partitions
    assert sorted(manager.logs_by_dir()) == sorted(d.resolve() for d in dirs)


def test_two_log_managers_using_same_dir_fails(manager: LogManager, log_dir: Path) -> None:
    """testTwoLogManagersUsingSameDirFails: the ``.lock`` of the first refuses a second in this process."""
    with pytest.raises(KafkaStorageError, match=r"Failed to acquire lock on file \.lock"):
        LogManager(log_dir)
    # The failed attempt did not disturb the first manager's lock or logs.
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    assert log.append_as_leader(singleton(b"test"), leader_epoch=0).last_offset == 0


_TRY_OPEN = textwrap.dedent("""
    import sys
    from kafkalog.errors import KafkaStorageError
    from kafkalog.manager.log_manager import LogManager
    try:
        manager = LogManager(sys.argv[1])
    except KafkaStorageError as e:
        print("KafkaStorageError:", e)
        sys.exit(3)
    manager.shutdown()
    print("opened")
""")





def test_second_process_cannot_open_a_locked_dir(log_dir: Path) -> None:
    """testTwoLogManagersUsingSameDirFails across processes: the flock on ``.lock`` holds for another process
    while this one's manager is open (the reverse, and the release at shutdown, are in
    ``test_directory_locked_by_another_process``)."""
    with LogManager(log_dir) as manager:
        manager.get_or_create_log(TopicPartition(NAME, 0)).append_as_leader(singleton(b"test"))
        child = subprocess.run([sys.executable, "-c", _TRY_OPEN, str(log_dir)], capture_output=True,
                               text=True, env=child_env(), timeout=60)
        assert child.returncode == 3, child.stderr
        assert child.stdout.startswith("KafkaStorageError: Failed to acquire lock on file .lock in ")
        assert "A Kafka instance in another process is using this directory: it is held by process " in child.stdout
        assert [r.value for r in manager.get_log(TopicPartition(NAME, 0)).records()] == [b"test"]


def test_lock_is_an_exclusive_flock_released_by_shutdown(log_dir: Path) -> None:
    """testLock: while the manager is open nobody else can flock ``.lock``; after shutdown anyone can."""
    manager = LogManager(log_dir)
    try:
        with open(log_dir / ".lock", "rb") as f, pytest.raises(BlockingIOError):
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        manager.shutdown()
    with open(log_dir / ".lock", "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    with LogManager(log_dir) as again:
        assert again.all_logs() == []


def _verify_checkpoint_recovery(topic_partitions: list[TopicPartition], manager: LogManager,
                                log_dir: Path) -> None:
    """Kafka's ``verifyCheckpointRecovery``: 50 sets in each log, flush, checkpoint, read the file."""
    logs = [manager.get_or_create_log(tp) for tp in topic_partitions]
    for log in logs:
        append_many(log, 50)
        log.flush()
    manager.checkpoint_recovery_point_offsets()
    checkpoints = read_checkpoint(log_dir / RECOVERY_POINT_FILE)
    for tp, log in zip(topic_partitions, logs, strict=True):
        assert checkpoints[tp] == log.recovery_point == 50, "Recovery point should equal checkpoint"
    assert set(checkpoints) == set(topic_partitions)


def test_checkpoint_recovery_points(manager: LogManager, log_dir: Path) -> None:
    """testCheckpointRecoveryPoints."""
    _verify_checkpoint_recovery([TopicPartition("test-a", 1), TopicPartition("test-b", 1)], manager, log_dir)


def test_recovery_point_checkpoint_task(manager: LogManager, log_dir: Path, mock_time: MockTime) -> None:
    """The kafka-recovery-point-checkpoint task writes what the logs flushed: after 30 s, then every 10 s."""
    log = manager.get_or_create_log(TopicPartition("test-a", 1))
    append_many(log, 30)
    log.flush()
    assert not (log_dir / RECOVERY_POINT_FILE).exists()
    mock_time.sleep(INITIAL_TASK_DELAY_MS)
    assert read_checkpoint(log_dir / RECOVERY_POINT_FILE) == {TopicPartition("test-a", 1): 30}
    append_many(log, 5)
    log.flush()
    mock_time.sleep(9999)
    assert read_checkpoint(log_dir / RECOVERY_POINT_FILE) == {TopicPartition("test-a", 1): 30}
    mock_time.sleep(1)
    assert read_checkpoint(log_dir / RECOVERY_POINT_FILE) == {TopicPartition("test-a", 1): 35}


def test_checkpoint_for_only_affected_logs(manager: LogManager, log_dir: Path) -> None:
    """testCheckpointForOnlyAffectedLogs: checkpointing one directory writes all of its logs."""
    tps = [TopicPartition("test-a", 0), TopicPartition("test-a", 1), TopicPartition("test-a", 2),
           TopicPartition("test-b", 0), TopicPartition("test-b", 1)]
    logs = [manager.get_or_create_log(tp) for tp in tps]
    for log in logs:
        append_many(log, 50)
        log.flush()
    manager.checkpoint_logs_in_dir(log_dir.resolve())
    assert read_checkpoint(log_dir / RECOVERY_POINT_FILE) == {
        tp: log.recovery_point for tp, log in zip(tps, logs, strict=True)}


def test_recovery_directory_mapping_with_trailing_slash(make_manager: ManagerFactory, tmp_path: Path) -> None:
    """testRecoveryDirectoryMappingWithTrailingSlash."""
    manager = make_manager([str(tmp_path / "with-slash") + os.sep])
    manager.startup()
    assert manager.log_dirs == [(tmp_path / "with-slash").resolve()]
    _verify_checkpoint_recovery([TopicPartition("test-a", 1)], manager, manager.log_dirs[0])


def test_recovery_directory_mapping_with_relative_directory(make_manager: ManagerFactory, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """testRecoveryDirectoryMappingWithRelativeDirectory."""
    monkeypatch.chdir(tmp_path)
    manager = make_manager([os.path.join("data", "relative-logs")])
    manager.startup()
    assert manager.log_dirs == [(tmp_path / "data" / "relative-logs").resolve()]
    assert manager.log_dirs[0].is_absolute()
    _verify_checkpoint_recovery([TopicPartition("test-a", 1)], manager, tmp_path / "data" / "relative-logs")


def test_file_references_after_async_delete(manager: LogManager, mock_time: MockTime) -> None:
    """testFileReferencesAfterAsyncDelete: after the rename to ``-delete`` the segment's files point into the
    renamed directory, and it is deleted file.delete.delay.ms later."""
    tp = TopicPartition(NAME, 0)
    log = manager.get_or_create_log(tp)
    active = log.active_segment
    log_name = active.log.file.name
    index_name = active.offset_index.path.name
    time_index_name = active.time_index.path.name
    index_files_before = [p for p in log.dir.iterdir() if p.name.endswith("index")]
    assert sorted(p.name for p in index_files_before) == [index_name, time_index_name]

    removed = manager.delete_log(tp)
    assert removed is log
    assert manager.get_log(tp) is None
    removed_segment = removed.active_segment
    assert removed.dir.name.startswith(f"{NAME}-0.") and removed.dir.name.endswith("-delete")
    assert parse_topic_partition_name(removed.dir.name) == tp
    assert removed_segment.log.file == removed.dir / log_name
    assert removed_segment.offset_index.path == removed.dir / index_name
    assert removed_segment.time_index.path == removed.dir / time_index_name
    files_after = [removed_segment.offset_index.path, removed_segment.time_index.path]
    for before in index_files_before:
        after = [p for p in files_after if p.name == before.name]
        assert len(after) == 1, f"Could not find index file {before.name} after the delete"
        assert after[0] != before, "File reference was not updated in index"
        assert after[0].exists() and not before.exists()

    mock_time.sleep(INITIAL_TASK_DELAY_MS)
    assert manager.has_logs_to_be_deleted, "Logs deleted too early"
    assert removed.dir.exists(), "Logs deleted too early"
    mock_time.sleep(manager.default_config.file_delete_delay_ms - INITIAL_TASK_DELAY_MS)
    assert not manager.has_logs_to_be_deleted, "Logs not deleted"
    assert not removed.dir.exists(), "Logs not deleted"
    assert sorted(p.name for p in removed.dir.parent.iterdir() if p.is_dir()) == []


def test_create_and_delete_overly_long_topic(manager: LogManager, log_dir: Path, mock_time: MockTime) -> None:
    """testCreateAndDeleteOverlyLongTopic: ``<topic>-0.<uuid>-delete`` of a 249-character topic would be 291
    characters; the topic part is cut so the renamed directory fits 255 (LocalLog.logDeleteDirName)."""
    topic = "x" * 249
    tp = TopicPartition(topic, 0)
    log = manager.get_or_create_log(tp)
    assert log.dir.name == f"{topic}-0"
    log.append_as_leader(singleton(b"test"), leader_epoch=0)
    removed = manager.delete_log(tp)
    assert removed is not None and manager.get_log(tp) is None
    name = removed.dir.name
    assert len(name) == 255
    assert name.endswith("-delete")
    parsed = parse_topic_partition_name(name)
    assert parsed.partition == 0 and topic.startswith(parsed.topic)
    assert [p.name for p in log_dir.iterdir() if p.is_dir()] == [name]
    mock_time.sleep(manager.default_config.file_delete_delay_ms)
    assert [p.name for p in log_dir.iterdir() if p.is_dir()] == []


def test_checkpoint_log_start_offset_for_normal_topic(manager: LogManager, log_dir: Path,
                                                      mock_time: MockTime) -> None:
    """testCheckpointLogStartOffsetForNormalTopic: a start offset inside the log is checkpointed until the
    segments below it are deleted, then the entry goes."""
    tp = TopicPartition("test", 0)
    log = manager.get_or_create_log(tp)
    for _ in range(50):
        offset = log.append_as_leader(singleton(b"test"), leader_epoch=0).last_offset
        if offset != 0 and offset % 10 == 0:
            log.roll()
    assert [s.base_offset for s in log.log_segments()] == [0, 11, 21, 31, 41]
    log.high_watermark = 49

    log_start_offset = 31
    assert log.maybe_increment_log_start_offset(log_start_offset)
    manager.checkpoint_log_start_offsets()
    assert log.number_of_segments == 5
    assert read_checkpoint(log_dir / LOG_START_OFFSET_FILE).get(tp, -1) == log_start_offset

    log.delete_old_segments()
    assert log.number_of_segments == 2
    assert log.log_start_offset == log_start_offset
    manager.checkpoint_log_start_offsets()
    assert read_checkpoint(log_dir / LOG_START_OFFSET_FILE).get(tp, -1) == -1
    mock_time.sleep(log.config.file_delete_delay_ms)
    assert sorted(p.name for p in log.dir.glob("*.log")) == [
        "00000000000000000031.log", "00000000000000000041.log"]


def test_log_start_offset_survives_restart(make_manager: ManagerFactory, mock_time: MockTime,
                                           log_dir: Path) -> None:
    """The kafka-log-start-offset-checkpoint task writes the start offset and a new manager reads it back."""
    manager = make_manager()
    manager.startup()
    tp = TopicPartition("test", 0)
    log = manager.get_or_create_log(tp)
    append_many(log, 20)
    log.maybe_increment_log_start_offset(7)
    assert not (log_dir / LOG_START_OFFSET_FILE).exists()
    mock_time.sleep(INITIAL_TASK_DELAY_MS)
    assert read_checkpoint(log_dir / LOG_START_OFFSET_FILE) == {tp: 7}
    manager.shutdown()
    reopened = make_manager()
    log = reopened.get_log(tp)
    assert log is not None
    assert (log.log_start_offset, log.log_end_offset) == (7, 20)
    assert [r.offset for r in log.records()] == list(range(7, 20))
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 1024)


def test_clean_shutdown_marker_and_no_recovery_on_reopen(make_manager: ManagerFactory, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         no_disk_sync: SyncCounter) -> None:
    """testCleanShutdownFileWithBrokerEpoch (without the epoch) and LogLoaderTest's testCleanShutdownFile:
    shutdown leaves ``.kafka_cleanshutdown`` in every directory, the next open removes it and recovers no
    segment (the files of the rolled segments are not touched); without the marker the segments past the
    recovery point are recovered."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = make_manager(dirs)
    manager.startup()
    tps = [TopicPartition(NAME, 0), TopicPartition(NAME, 1)]
    for tp in tps:
        log = manager.get_or_create_log(tp)
        for i in range(60):
            log.append_as_leader(MemoryRecords.with_records([(b"k%d" % i, b"v%d" % i, 1_000_000 + i)]))
    assert [log.dir.parent for log in manager.all_logs()] == [d.resolve() for d in dirs]
    expected = {tp: record_tuples(log) for tp, log in manager.logs_by_topic_partition().items()}
    segments = {tp: [s.base_offset for s in log.log_segments()]
                for tp, log in manager.logs_by_topic_partition().items()}
    assert all(len(bases) > 2 for bases in segments.values())
    syncs = no_disk_sync.calls
    manager.shutdown()
    assert no_disk_sync.calls > syncs  # the logs, checkpoints and directories were flushed
    for d, tp in zip(dirs, tps, strict=True):
        assert (d / CLEAN_SHUTDOWN_FILE).exists()
        assert read_checkpoint(d / RECOVERY_POINT_FILE) == {tp: 60}

    def inactive_files() -> dict[Path, tuple[int, bytes]]:
        files = {}
        for d, tp in zip(dirs, tps, strict=True):
            active = f"{segments[tp][-1]:020d}."
            for path in (d / str(tp)).iterdir():
                if not path.name.startswith(active) and path.name != LEADER_EPOCH_CHECKPOINT_FILE:
                    files[path] = (path.stat().st_mtime_ns, path.read_bytes())
        return files

    before = inactive_files()
    # Per partition: three files per inactive segment, the producer snapshot each roll took at an inactive
    # segment's base (all but the first), and the one the clean close took at the log end.
    assert len(before) == sum(3 * (len(bases) - 1) + (len(bases) - 2) + 1 for bases in segments.values())
    recovered: list[Path] = []
    real_recover = LogSegment.recover

    def counting_recover(segment: LogSegment, *args: Any) -> int:
        recovered.append(segment.log.file)
        return real_recover(segment, *args)

    monkeypatch.setattr(LogSegment, "recover", counting_recover)
    reopened = make_manager(dirs)
    assert not any((d / CLEAN_SHUTDOWN_FILE).exists() for d in dirs)
    assert recovered == []
    assert inactive_files() == before
    for tp, log in reopened.logs_by_topic_partition().items():
        assert record_tuples(log) == expected[tp]
        assert log.recovery_point == log.log_end_offset == 60
        assert [s.base_offset for s in log.log_segments()] == segments[tp]
    reopened.shutdown()

    # Without the marker (an unclean shutdown) the segment holding the recovery point and those after it
    # are recovered: here the active segments only, the checkpoint being at the log end.
    for d in dirs:
        (d / CLEAN_SHUTDOWN_FILE).unlink()
    unclean = make_manager(dirs)
    assert sorted(recovered) == sorted(d.resolve() / str(tp) / f"{segments[tp][-1]:020d}.log"
                                       for d, tp in zip(dirs, tps, strict=True))
    for tp, log in unclean.logs_by_topic_partition().items():
        assert record_tuples(log) == expected[tp]


def test_shutdown_writes_the_indexes_of_a_just_rolled_empty_segment(make_manager: ManagerFactory, log_dir: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """Kafka 3.x's shutdown flushes with ``forceFlushActiveSegment``: a log rolled just before shutdown has
    an empty active segment whose lazy indexes were never opened, and the flush writes them, so the next
    start finds every index and rebuilds nothing (0.10.1's ``flush()`` stopped at the recovery point)."""
    manager = make_manager()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(log, 10, key=b"k")
    log.roll()
    active = log.active_segment.base_offset
    assert active == 10 and log.recovery_point == 10
    manager.shutdown()
    for suffix in (".log", ".index", ".timeindex"):
        assert (log_dir / f"{NAME}-0" / f"{active:020d}{suffix}").exists(), suffix
    caplog.clear()
    reopened = make_manager()
    log = reopened.get_log(TopicPartition(NAME, 0))
    assert log is not None and log.log_end_offset == 10
    assert log.load_report.rebuilt_indexes == [] and log.load_report.recovered_segments == []
    assert not [r for r in caplog.records if r.levelname == "ERROR"]




@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_shutdown_with_deletions_pending_finishes_them(make_manager: ManagerFactory, log_dir: Path) -> None:
    """Segments that retention removed wait file.delete.delay.ms for their files to go.  A shutdown before that
    deletes them, and their producer snapshots, and leaves no file open (kafkalog's: Kafka's scheduler drops the
    delayed delete at shutdown and its next load removes the ``.deleted`` files, testOpenDeletesObsoleteFiles);
    records past the start offset all stay."""
    manager = make_manager()
    manager.startup()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(log, 40)
    assert [s.base_offset for s in log.log_segments()] == [0, 14, 28]
    removed = log.log_segments()[:2]
    assert log.maybe_increment_log_start_offset(28)
    assert log.delete_old_segments() == 2
    deleted = sorted(p.name for p in log.dir.glob("*.deleted"))
    # The producer snapshot the roll at 14 took goes with its segment (the first segment has none).
    assert deleted == [f"{base:020d}.{ext}.deleted"
                       for base, exts in ((0, ("index", "log", "timeindex")),
                                          (14, ("index", "log", "snapshot", "timeindex"))) for ext in exts]
    try:
        manager.shutdown()
        assert open_paths(log_dir) == [], "shutdown left files of deleted segments open"
    finally:
        for segment in removed:
            segment.close_handlers()
    assert list(log.dir.glob("*.deleted")) == []
    assert log.undeleted_files == []
    reopened = make_manager()
    log = reopened.get_log(TopicPartition(NAME, 0))
    assert log is not None
    assert list(log.dir.glob("*.deleted")) == []
    assert (log.log_start_offset, log.log_end_offset) == (28, 40)
    assert [r.offset for r in log.records()] == list(range(28, 40))
    reopened.shutdown()
    assert open_paths(log_dir) == []


def test_shutdown_closes_every_log_and_releases_the_lock(make_manager: ManagerFactory, log_dir: Path) -> None:
    """After shutdown the directory can be locked again and the logs refuse writes."""
    manager = make_manager()
    manager.startup()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(log, 3)
    manager.shutdown()
    with pytest.raises(KafkaStorageError, match="closed"):
        log.append_as_leader(singleton(b"late"), leader_epoch=0)
    with LogManager(log_dir) as again:
        reopened = again.get_log(TopicPartition(NAME, 0))
        assert reopened is not None
        assert [r.value for r in reopened.records()] == [b"test"] * 3


def test_logs_take_the_managers_producer_state_settings(tmp_path: Path, mock_time: MockTime) -> None:
    """kafkalog's: the broker's producer-state settings reach every log the manager opens or creates (Kafka's
    ``LogManager`` hands its ``ProducerStateManagerConfig``, ``maxTransactionTimeoutMs`` and
    ``producerIdExpirationCheckIntervalMs`` to ``UnifiedLog``): a producer idle 200 ms is forgotten by the check
    that runs every 100 ms, in a created log and in the same log reopened."""
    config = ProducerStateManagerConfig(200, False)
    for _ in range(2):
        with LogManager(tmp_path / "logs", scheduler=mock_time.scheduler, time=mock_time,
                        producer_state_manager_config=config, max_transaction_timeout_ms=60_000,
                        producer_id_expiration_check_interval_ms=100) as manager:
            log = manager.get_or_create_log(TopicPartition(NAME, 0))
            assert log.producer_state_manager.producer_state_manager_config is config
            assert log.producer_state_manager.max_transaction_timeout_ms == 60_000
            pid = 7 + log.log_end_offset
            log.append_as_leader(MemoryRecords.with_records([(None, b"v", mock_time.milliseconds())],
                                                            producer_id=pid, producer_epoch=0, base_sequence=0))
            assert set(log.active_producers_with_last_sequence()) == {pid}
            mock_time.sleep(300)
            assert log.active_producers_with_last_sequence() == {}


def test_metrics_are_removed_when_moving_current_to_future_log(make_manager: ManagerFactory, tmp_path: Path,
                                                                mock_time: MockTime) -> None:
    """Kafka's ``LogManagerTest.testMetricsAreRemovedWhenMovingCurrentToFutureLog``, with the manager's logs in
    place of their Yammer metrics (kafkalog has no metrics registry; a log's metrics are there while the log is):
    a current log in the first dir and a future log in the second (``maybeUpdatePreferredLogDir``, then
    ``getOrCreateLog`` and ``getOrCreateLog(isFuture)``) are two logs of the partition; after
    ``replaceCurrentWithFutureLog`` one, the future one gone; and after ``file.delete.delay.ms`` still one, the
    former current's directory deleted."""
    dir1, dir2 = (tmp_path / "dir1").resolve(), (tmp_path / "dir2").resolve()
    manager = make_manager([dir1, dir2])
    manager.startup()
    tp = TopicPartition("future-log", 0)

    def logs_of_partition() -> list[Log]:
        return [log for log in manager.all_logs() if log.topic_partition == tp]

    manager.maybe_update_preferred_log_dir(tp, str(dir1))
    current = manager.get_or_create_log(tp)
    manager.maybe_update_preferred_log_dir(tp, str(dir2))
    future = manager.get_or_create_log(tp, is_future=True)
    assert len(logs_of_partition()) == 2
    assert current.dir.parent == dir1 and future.dir.parent == dir2 and future.is_future

    manager.replace_current_with_future_log(tp)
    assert logs_of_partition() == [future]
    assert manager.get_log(tp) is future and manager.get_log(tp, is_future=True) is None
    assert not future.is_future and future.dir == dir2 / "future-log-0"

    deleted_dir = current.dir
    assert deleted_dir.name.endswith("-delete")
    mock_time.sleep(LOG_CONFIG.file_delete_delay_ms + 1)
    assert logs_of_partition() == [future]
    assert not deleted_dir.exists()
