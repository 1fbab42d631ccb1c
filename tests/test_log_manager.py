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
The bad-input cases at the end each leave a populated log directory behind them, which is opened again
to check that every record written before the error is still there.  Tests that append run on both
kernel twins (``impl``); those about locks only once.

Kafka tests not ported:

- ``testLogRecoveryMetrics``, ``testLogRecoveryMetricsShouldBeRemovedAfterLogRecovered``: the Yammer gauges
  ``remainingLogsToRecover`` and ``remainingSegmentsToRecover`` and their registration, which is all they
  check; kafkalog has no metrics registry (recovery progress goes to ``Log``'s ``recovery_progress``).
- ``testMetricsAreRemovedWhenMovingCurrentToFutureLog``: moving a replica to another log dir
  (``maybeUpdatePreferredLogDir``, creating a future log, ``replaceCurrentWithFutureLog``) is the replica
  manager's alter-log-dirs machinery, not ported, and what the test checks is Yammer metrics.
- ``testCheckpointLogStartOffsetForRemoteTopic``: remote (tiered) storage: the highest offset in remote
  storage and the local log start offset of a topic with remote.storage.enable.
- ``testIsStrayKraftReplicaWithEmptyImage``, ``testIsStrayKraftReplicaInImage``,
  ``testIsStrayKraftReplicaInImageWithRemoteReplicas``, ``testIsStrayKraftMissingTopicId``: stray detection
  from a KRaft metadata image (TopicsImage, replica assignments, topic ids); kafkalog takes any ``is_stray``
  predicate instead (testLoadLogRenameLogThatShouldBeStray).
- ``testFindStrayReplicasInEmptyLAIR``, ``testFindNoStrayReplicasInFullLAIR``,
  ``testFindSomeStrayReplicasInFullLAIR``, ``testTopicRecreationInFullLAIR``: stray detection from a
  controller's full LeaderAndIsr request (ZooKeeper-to-KRaft migration) by topic id; no controller here.
"""

from __future__ import annotations

import base64
import fcntl
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import kafkalog
from kafkalog.config import LogConfig
from kafkalog.config_def import ConfigError
from kafkalog.errors import (
    InvalidRecordError,
    KafkaLogError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from kafkalog.log import Log
from kafkalog.manager import INITIAL_TASK_DELAY_MS, LogManager, wait_for_all_to_complete
from kafkalog.meta_properties import DIRECTORY_ID_LOST, DIRECTORY_ID_UNASSIGNED
from kafkalog.record import MemoryRecords
from kafkalog.scheduler import SYSTEM_TIME, KafkaScheduler, MockTime
from kafkalog.segment import LogSegment
from kafkalog.topic import InvalidTopicError, TopicPartition, parse_topic_partition_name

MAX_LOG_AGE_MS = 10 * 60 * 1000
NAME = "kafka"
LOG_CONFIG = LogConfig({"segment.bytes": 1024, "segment.index.bytes": 4096, "retention.ms": MAX_LOG_AGE_MS})
RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: The size of ``singleton(b"test")``: a v2 batch header (61) and one 11-byte record.
SET_SIZE = 72
#: The checkpoint period of the tests that sleep through retention.ms (see ``any_twin_manager``).
LONG_TASK_PERIOD_MS = 10**9
#: The directory of the ``kafkalog`` package, for the child processes.
PACKAGE_ROOT = str(Path(kafkalog.__file__).resolve().parent.parent)

ManagerFactory = Callable[..., LogManager]


def singleton(value: bytes, key: bytes | None = None) -> MemoryRecords:
    """Kafka's ``TestUtils.singletonRecords``: one v2 record without a timestamp."""
    return MemoryRecords.with_records([(key, value)])


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """An offset checkpoint file, parsed here (spec §2.9) rather than with kafkalog's reader."""
    lines = path.read_text().splitlines()
    assert lines[0] == "0"
    count = int(lines[1])
    entries = {}
    for line in lines[2:]:
        topic, partition, offset = line.split()
        entries[TopicPartition(topic, int(partition))] = int(offset)
    assert len(entries) == count
    return entries


def record_tuples(log: Log) -> list[tuple[Any, ...]]:
    return [r.as_tuple() for r in log.records()]


class SyncCounter:
    """Counts the fsyncs kafkalog asks for (see :func:`no_disk_sync`)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fd: int) -> None:
        os.fstat(fd)  # a bad descriptor still fails, as fsync would
        self.calls += 1


@pytest.fixture(autouse=True)
def no_disk_sync(monkeypatch: pytest.MonkeyPatch) -> SyncCounter:
    """``os.fsync`` checks its descriptor and counts, without waiting for the disk.

    No test here cuts the power, so what reaches the platter is not observable; an fsync costs about 4 ms on
    the test machines and the retention and checkpoint cases ask for hundreds.  The counter lets a test check
    that a flush was asked for."""
    counter = SyncCounter()
    monkeypatch.setattr(os, "fsync", counter)
    return counter


@pytest.fixture
def mock_time() -> MockTime:
    return MockTime()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "kafka-logs"


@pytest.fixture
def any_twin_manager(mock_time: MockTime, log_dir: Path) -> Iterator[ManagerFactory]:
    """Kafka's ``createLogManager``: the test's clock and scheduler and TestUtils' task periods.  Every
    manager made is shut down at the end (a second shutdown does nothing).  Tests that move the clock by
    the ten minutes of retention pass a long ``checkpoint_ms``: 120 checkpoint writes would check nothing
    there.  On the live twin only: for the tests whose point is not the records (locks, directories)."""
    made: list[LogManager] = []

    def make(log_dirs: Any = None, topic_configs: Any = None, default_config: LogConfig = LOG_CONFIG,
             recovery_threads: int = 1, checkpoint_ms: int = 10000, is_stray: Any = None) -> LogManager:
        manager = LogManager(log_dirs if log_dirs is not None else [log_dir], default_config, topic_configs,
                             recovery_threads_per_data_dir=recovery_threads, flush_check_ms=1000,
                             flush_recovery_offset_checkpoint_ms=checkpoint_ms,
                             flush_start_offset_checkpoint_ms=checkpoint_ms, retention_check_ms=1000,
                             scheduler=mock_time.scheduler, time=mock_time, is_stray=is_stray)
        made.append(manager)
        return manager

    yield make
    for manager in made:
        manager.shutdown()


@pytest.fixture
def make_manager(any_twin_manager: ManagerFactory, impl: ModuleType) -> ManagerFactory:
    """:func:`any_twin_manager` on each kernel twin in turn."""
    return any_twin_manager


@pytest.fixture
def manager(make_manager: ManagerFactory) -> LogManager:
    """Kafka's ``setUp``: a started manager over one directory."""
    manager = make_manager()
    manager.startup()
    return manager


def append_many(log: Log, count: int, key: bytes | None = None) -> int:
    """``count`` singleton appends; the last offset appended."""
    last = -1
    for _ in range(count):
        last = log.append_as_leader(singleton(b"test", key), leader_epoch=0).last_offset
    return last


def materialize_indexes(log: Log) -> None:
    """Kafka's ``s.offsetIndex(); s.timeIndex()``: open every lazy index so its file exists."""
    for segment in log.log_segments():
        assert segment.offset_index.base_offset == segment.base_offset
        assert segment.time_index.base_offset == segment.base_offset


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
    assert sorted(p.name for p in log.dir.iterdir()) == [
        "00000000000000000200.index", "00000000000000000200.log", "00000000000000000200.timeindex"]
    assert len(list(log.dir.iterdir())) == log.number_of_segments * 3, "Files should have been deleted"
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
    assert log.size() == 6 * segment_bytes
    mock_time.sleep(log.config.file_delete_delay_ms + 1)
    materialize_indexes(log)
    assert len(list(log.dir.iterdir())) == log.number_of_segments * 3, "Files should have been deleted"
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
        "00000000000000000200.index", "00000000000000000200.log", "00000000000000000200.timeindex"]


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
    from kafkalog.manager import LogManager
    try:
        manager = LogManager(sys.argv[1])
    except KafkaStorageError as e:
        print("KafkaStorageError:", e)
        sys.exit(3)
    manager.shutdown()
    print("opened")
""")

_HOLD_LOCK = textwrap.dedent("""
    import sys
    from kafkalog.manager import LogManager
    manager = LogManager(sys.argv[1])
    print("locked", len(manager.all_logs()), flush=True)
    sys.stdin.readline()
    manager.shutdown()
    print("released", flush=True)
""")


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    return env


def test_second_process_cannot_open_a_locked_dir(log_dir: Path) -> None:
    """testTwoLogManagersUsingSameDirFails across processes: the flock on ``.lock`` holds for another process
    while this one's manager is open (the reverse, and the release at shutdown, are in
    ``test_directory_locked_by_another_process``)."""
    with LogManager(log_dir) as manager:
        manager.get_or_create_log(TopicPartition(NAME, 0)).append_as_leader(singleton(b"test"))
        child = subprocess.run([sys.executable, "-c", _TRY_OPEN, str(log_dir)], capture_output=True,
                               text=True, env=_child_env(), timeout=60)
        assert child.returncode == 3, child.stderr
        assert child.stdout.startswith("KafkaStorageError: Failed to acquire lock on file .lock in ")
        assert "another process or thread is using this directory" in child.stdout
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
                if not path.name.startswith(active):
                    files[path] = (path.stat().st_mtime_ns, path.read_bytes())
        return files

    before = inactive_files()
    assert len(before) == 3 * sum(len(bases) - 1 for bases in segments.values())
    recovered: list[Path] = []
    real_recover = LogSegment.recover

    def counting_recover(segment: LogSegment) -> int:
        recovered.append(segment.log.file)
        return real_recover(segment)

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


def _open_paths(under: Path) -> list[str]:
    """The files under ``under`` this process holds open (descriptors and mappings both own one)."""
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(under.resolve())):
            paths.append(target)
    return sorted(paths)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_shutdown_with_deletions_pending_releases_their_files(make_manager: ManagerFactory,
                                                              log_dir: Path) -> None:
    """Segments that retention removed wait file.delete.delay.ms for their files to go.  A shutdown before
    that must still release them (Kafka's scheduler drops the delayed delete at shutdown and the next load
    removes the ``.deleted`` files, testOpenDeletesObsoleteFiles); records past the start offset all stay."""
    manager = make_manager()
    manager.startup()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(log, 40)
    assert [s.base_offset for s in log.log_segments()] == [0, 14, 28]
    removed = log.log_segments()[:2]
    assert log.maybe_increment_log_start_offset(28)
    assert log.delete_old_segments() == 2
    deleted = sorted(p.name for p in log.dir.glob("*.deleted"))
    assert deleted == [f"{base:020d}.{ext}.deleted"
                       for base in (0, 14) for ext in ("index", "log", "timeindex")]
    try:
        manager.shutdown()
        assert _open_paths(log_dir) == [], "shutdown left files of deleted segments open"
    finally:
        for segment in removed:
            segment.close_handlers()
    assert sorted(p.name for p in log.dir.glob("*.deleted")) == deleted
    reopened = make_manager()
    log = reopened.get_log(TopicPartition(NAME, 0))
    assert log is not None
    assert list(log.dir.glob("*.deleted")) == []
    assert (log.log_start_offset, log.log_end_offset) == (28, 40)
    assert [r.offset for r in log.records()] == list(range(28, 40))
    reopened.shutdown()
    assert _open_paths(log_dir) == []


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


# --- bad input: each error is a clear kafkalog error and nothing on disk is lost ---------------------------

POPULATED_CONFIGS = {"compacted": {"cleanup.policy": "compact"}, "small": {"max.message.bytes": "100"}}


def _populate(manager: LogManager) -> dict[TopicPartition, list[tuple[Any, ...]]]:
    """Records in three topics (one compacted, one with a 100-byte message limit) over several segments."""
    for topic, partitions in (("plain", 2), ("compacted", 1), ("small", 1)):
        for partition in range(partitions):
            log = manager.get_or_create_log(TopicPartition(topic, partition))
            for i in range(25):
                value = b"%s-%d-%d" % (topic.encode(), partition, i)
                key = b"key-%d" % (i % 4)
                log.append_as_leader(MemoryRecords.with_records([(key, value, 1_700_000_000_000 + i)]))
    assert manager.get_log(TopicPartition("plain", 0)).number_of_segments > 1
    return {tp: record_tuples(log) for tp, log in manager.logs_by_topic_partition().items()}


@pytest.fixture
def populated(make_manager: ManagerFactory) -> tuple[LogManager, dict[TopicPartition, list[tuple[Any, ...]]]]:
    manager = make_manager(topic_configs=POPULATED_CONFIGS)
    manager.startup()
    return manager, _populate(manager)


def _assert_intact(make_manager: ManagerFactory, live: LogManager | None,
                   expected: dict[TopicPartition, list[tuple[Any, ...]]]) -> None:
    """Shut ``live`` down, open the directory again and compare every record."""
    if live is not None:
        live.shutdown()
    reopened = make_manager(topic_configs=POPULATED_CONFIGS)
    logs = reopened.logs_by_topic_partition()
    assert set(logs) == set(expected)
    for tp, records in expected.items():
        assert len(records) >= 25
        assert record_tuples(logs[tp]) == records
    reopened.shutdown()


BAD_TOPIC_CONFIGS = [
    ({"plain": {"segment.byte": "1024"}}, "Unknown topic config name: segment.byte"),
    ({"plain": {"segment.bytes": "-1"}},
     "Invalid value -1 for configuration segment.bytes: Value must be at least 14"),
    ({"plain": {"cleanup.policy": "Compact"}}, "Invalid value 'Compact' for configuration cleanup.policy"),
    ({"plain": {"retention.ms": "ten minutes"}}, "retention.ms"),
    ({"plain": {"segment.bytes": 1.5}}, "segment.bytes"),
]


def test_bad_topic_config(make_manager: ManagerFactory, populated: Any) -> None:
    """An unknown property or a bad value in ``topic_configs`` is a ConfigError naming it, raised before the
    directory is touched (here while another manager holds it, and again once it is free)."""
    manager, expected = populated
    for configs, message in BAD_TOPIC_CONFIGS:
        with pytest.raises(ConfigError, match=message):
            make_manager(topic_configs=configs)
    manager.shutdown()
    for configs, message in BAD_TOPIC_CONFIGS:
        with pytest.raises(ConfigError, match=message):
            make_manager(topic_configs=configs)
    _assert_intact(make_manager, None, expected)


ILLEGAL_TOPICS = [
    ("..", "'..' is not allowed"),
    (".", "'.' is not allowed"),
    ("../escape", "contains one or more characters other than"),
    ("bad topic", "contains one or more characters other than"),
    ("", "the empty string is not allowed"),
    ("x" * 250, "longer than the max allowed length 249"),
]


def test_illegal_topic_name(make_manager: ManagerFactory, populated: Any, log_dir: Path,
                            tmp_path: Path) -> None:
    """Illegal topics (``..`` among them) are an InvalidTopicError from ``get_or_create_log`` and from
    ``topic_configs``, and no directory appears, inside the log directory or next to it."""
    manager, expected = populated
    entries_before = sorted(p.name for p in log_dir.iterdir())
    outside_before = sorted(p.name for p in tmp_path.iterdir())
    for topic, reason in ILLEGAL_TOPICS:
        with pytest.raises(InvalidTopicError, match=f"Topic name is invalid: .*{reason}"):
            manager.get_or_create_log(TopicPartition(topic, 0))
        with pytest.raises(InvalidTopicError, match=f"Topic name is invalid: .*{reason}"):
            make_manager(topic_configs={topic: {"retention.ms": "1000"}})
    with pytest.raises(KafkaLogError, match="Invalid partition -1 for topic plain"):
        manager.get_or_create_log(TopicPartition("plain", -1))
    assert sorted(p.name for p in log_dir.iterdir()) == entries_before
    assert sorted(p.name for p in tmp_path.iterdir()) == outside_before
    assert len(manager.all_logs()) == 4
    _assert_intact(make_manager, manager, expected)


def test_directory_locked_by_another_process(any_twin_manager: ManagerFactory, log_dir: Path) -> None:
    make_manager = any_twin_manager
    manager = make_manager(topic_configs=POPULATED_CONFIGS)
    expected = _populate(manager)
    manager.shutdown()
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(log_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env())
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked 4\n"
        with pytest.raises(KafkaStorageError,
                           match=r"Failed to acquire lock on file \.lock in .*another process"):
            make_manager()
    finally:
        out, err = holder.communicate("\n", timeout=60)
    assert (holder.returncode, out) == (0, "released\n"), err
    _assert_intact(make_manager, None, expected)


def test_batch_over_max_message_bytes(make_manager: ManagerFactory, populated: Any) -> None:
    manager, expected = populated
    log = manager.get_log(TopicPartition("small", 0))
    end, size = log.log_end_offset, log.size()
    big = MemoryRecords.with_records([(b"key", b"x" * 200, 1_700_000_000_100)])
    with pytest.raises(RecordTooLargeError, match="exceeds the maximum configured value of 100"):
        log.append_as_leader(big)
    assert (log.log_end_offset, log.size()) == (end, size)
    assert record_tuples(log) == expected[TopicPartition("small", 0)]
    # A follower takes what its leader accepted: appendAsFollower skips the size check (ignoreRecordSize).
    follower_batch = MemoryRecords.with_records([(b"key", b"x" * 200, 1_700_000_000_100)], base_offset=end)
    assert log.append_as_follower(follower_batch).last_offset == end
    expected[TopicPartition("small", 0)].append((end, 1_700_000_000_100, b"key", b"x" * 200, []))
    _assert_intact(make_manager, manager, expected)


def test_unkeyed_record_on_compacted_topic(make_manager: ManagerFactory, populated: Any) -> None:
    manager, expected = populated
    log = manager.get_log(TopicPartition("compacted", 0))
    end, size = log.log_end_offset, log.size()
    batch = MemoryRecords.with_records([(b"key", b"keyed", 1), (None, b"unkeyed", 2)])
    with pytest.raises(InvalidRecordError, match="Compacted topic cannot accept message without key"):
        log.append_as_leader(batch)
    assert (log.log_end_offset, log.size()) == (end, size)
    _assert_intact(make_manager, manager, expected)


def test_offset_out_of_range_on_read(make_manager: ManagerFactory, populated: Any) -> None:
    manager, expected = populated
    log = manager.get_log(TopicPartition("plain", 0))
    assert log.log_end_offset == 25
    for offset in (-1, 26, 1000):
        with pytest.raises(OffsetOutOfRangeError,
                           match=f"Received request for offset {offset} for partition plain-0"):
            log.read(offset, 1024)
    assert log.read(25, 1024).records.size_in_bytes() == 0
    log.high_watermark = 10
    log.maybe_increment_log_start_offset(5)
    with pytest.raises(OffsetOutOfRangeError, match="starting from offset: 5"):
        log.read(4, 1024)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(11)
    assert [r.offset for r in log.records()] == list(range(5, 10))  # up to the high watermark
    assert log.read(10, 1 << 20).records.size_in_bytes() > 0  # a follower's read goes on to the log end
    # The start offset moved (and is checkpointed at shutdown), but no record was deleted from disk.
    manager.shutdown()
    expected_after = dict(expected)
    reopened = make_manager(topic_configs=POPULATED_CONFIGS)
    assert reopened.get_log(TopicPartition("plain", 0)).log_start_offset == 5
    reopened.shutdown()
    on_disk = [r.as_tuple() for path in sorted((manager.log_dirs[0] / "plain-0").glob("*.log"))
               for r in MemoryRecords(path.read_bytes()).records()]
    assert on_disk == expected_after[TopicPartition("plain", 0)]


def test_the_kraft_metadata_log_and_the_remote_index_cache_are_not_loaded(make_manager: ManagerFactory,
                                                                          log_dir: Path) -> None:
    """LogManagerTest.testLoadLogsSkipRemoteIndexCache, and the same for the metadata log: Kafka 3.8's
    ``loadLogs`` skips ``__cluster_metadata-0`` (the Raft layer owns it) and tiered storage's
    ``remote-log-index-cache``: neither becomes a log, gets files, or enters a checkpoint."""
    metadata = log_dir / "__cluster_metadata-0"
    metadata.mkdir(parents=True)
    (log_dir / "remote-log-index-cache").mkdir()
    manager = make_manager()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(log, 3)
    assert [tp for tp in manager.logs_by_topic_partition()] == [TopicPartition(NAME, 0)]
    manager.shutdown()
    assert list(metadata.iterdir()) == [] and list((log_dir / "remote-log-index-cache").iterdir()) == []
    assert read_checkpoint(log_dir / RECOVERY_POINT_FILE) == {TopicPartition(NAME, 0): 3}


def test_retention_with_a_cleaner_pauses_the_deletable_logs_and_leaves_compacted_ones_to_it(
        make_manager: ManagerFactory, mock_time: MockTime) -> None:
    """Kafka 3.8's ``cleanupLogs`` with a cleaner: ``pauseCleaningForNonCompactedPartitions`` gives the logs
    retention works on (not the compacted ones, ``compact,delete`` included: the cleaner threads apply
    theirs), paused for the cleaner while it runs and resumed after."""
    from kafkalog.cleaner_config import CleanerConfig
    from kafkalog.cleaner_manager import LogCleaningPaused

    topics = {"plain": {"cleanup.policy": "delete"}, "both": {"cleanup.policy": "compact,delete"}}
    manager = LogManager(make_manager().log_dirs[0].parent / "with-cleaner", LOG_CONFIG, topics,
                         CleanerConfig.from_enable(True), scheduler=mock_time.scheduler, time=mock_time)
    try:
        logs = {topic: manager.get_or_create_log(TopicPartition(topic, 0)) for topic in topics}
        for log in logs.values():
            for i in range(30):
                log.append_as_leader(singleton(b"x" * 100, f"k{i}".encode()), leader_epoch=0)
            log.high_watermark = log.log_end_offset
            for segment in log.log_segments():
                segment.set_last_modified(mock_time.milliseconds())
            assert log.number_of_segments > 1
        assert manager.cleaner is not None
        states = []
        real = Log.delete_old_segments

        def observing(log: Log) -> int:
            states.append((log.topic_partition.topic,
                           manager.cleaner.cleaner_manager.cleaning_state(log.topic_partition)))
            return real(log)

        mock_time.sleep(MAX_LOG_AGE_MS + 1)
        Log.delete_old_segments = observing  # type: ignore[method-assign]
        try:
            deleted = manager.cleanup_logs()
        finally:
            Log.delete_old_segments = real  # type: ignore[method-assign]
        assert deleted > 0
        assert [topic for topic, _state in states] == ["plain"]
        assert isinstance(states[0][1], LogCleaningPaused)
        assert manager.cleaner.cleaner_manager.cleaning_state(TopicPartition("plain", 0)) is None  # resumed
        assert logs["both"].log_start_offset == 0  # left to the cleaner threads
    finally:
        manager.shutdown()


# --- Kafka 3.8's LogManagerTest: deletion, directories, shutdown -----------------------------------------


def test_delete_log_keeps_the_log_readable_until_its_files_are_deleted(manager: LogManager,
                                                                       mock_time: MockTime) -> None:
    """Kafka 3.8's ``asyncDelete`` renames the directory and leaves the log open: a reader holding it reads
    on, from the renamed files, until ``deleteLogs`` deletes it file.delete.delay.ms later (kafkalog closed
    it at once, so that reader got an error)."""
    tp = TopicPartition(NAME, 0)
    log = manager.get_or_create_log(tp)
    append_many(log, 40)
    assert log.number_of_segments > 1
    expected = record_tuples(log)
    removed = manager.delete_log(tp)
    assert removed is log and manager.get_log(tp) is None
    assert removed.dir.name.endswith("-delete") and removed.dir.is_dir()
    assert record_tuples(removed) == expected
    fetched = removed.read(0, 10_000).records
    assert [r.offset for r in fetched.records()][:5] == [0, 1, 2, 3, 4]
    assert manager.has_logs_to_be_deleted
    mock_time.sleep(manager.default_config.file_delete_delay_ms - 1)
    assert record_tuples(removed) == expected, "deleted before file.delete.delay.ms"
    mock_time.sleep(1)
    assert not manager.has_logs_to_be_deleted
    assert removed.log_segments() == []
    assert not removed.dir.exists()
    assert [p for p in removed.dir.parent.iterdir() if p.is_dir()] == []


def test_metrics_exist_when_log_is_recreated_before_deletion(manager: LogManager, mock_time: MockTime) -> None:
    """testMetricsExistWhenLogIsRecreatedBeforeDeletion, without its Yammer metrics (kafkalog has none): a
    partition deleted and created again before the old log's files go has two logs, and deleting the old
    one's files leaves the new one alone."""
    tp = TopicPartition("metric-test", 0)
    manager.get_or_create_log(tp)
    removed = manager.delete_log(tp)
    assert removed is not None
    recreated = manager.get_or_create_log(tp)
    assert recreated is not removed
    append_many(recreated, 3)
    mock_time.sleep(LOG_CONFIG.file_delete_delay_ms + 1)
    assert removed.log_segments() == []
    assert manager.get_log(tp) is recreated
    assert [r.offset for r in recreated.records()] == [0, 1, 2]


def test_paths_in_messages_are_the_real_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """A directory that is not a partition's, given by a relative path, is named by its real path in
    LogManager's warning and in Log's error (both named it as if it were in the current directory)."""
    (tmp_path / "data" / "not_a_partition").mkdir(parents=True)
    (tmp_path / "sub" / "bad").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with caplog.at_level("WARNING", logger="kafkalog.manager"):
        LogManager("data").shutdown()
    real = str((tmp_path / "data" / "not_a_partition").resolve())
    warnings = [r.getMessage() for r in caplog.records if "not_a_partition" in r.getMessage()]
    assert len(warnings) == 1
    assert f"Found directory {real}, 'not_a_partition' is not in the form" in warnings[0]
    with pytest.raises(KafkaLogError) as info:
        Log(os.path.join("sub", "bad"))
    assert f"Found directory {(tmp_path / 'sub' / 'bad').resolve()}, 'bad' is not" in str(info.value)


def test_create_log_with_invalid_log_dir(make_manager: ManagerFactory, log_dir: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    """testCreateLogWithInvalidLogDir: a log dir the file system refuses (a NUL in its path) is offline and
    the manager serves the other; a new log goes there.  (Kafka's default ``isNew = false`` refuses to create
    a log while a directory is offline, since the replica may be in it: checked too.)"""
    manager = make_manager([log_dir, "\0"])
    manager.startup()
    assert manager.log_dirs == [log_dir.resolve()]
    assert manager.has_offline_log_dirs()
    assert [p.name for p in manager.offline_log_dirs] == ["\0"]
    assert any("Failed to create or validate data directory" in r.getMessage() for r in caplog.records)
    with pytest.raises(KafkaStorageError, match=r"because log directories .* are offline"):
        manager.get_or_create_log(TopicPartition(NAME, 0))
    log = manager.get_or_create_log(TopicPartition(NAME, 0), is_new=True)
    assert (log_dir / f"{NAME}-0").is_dir()
    assert log.append_as_leader(singleton(b"test"), leader_epoch=0).last_offset == 0
    with pytest.raises(KafkaStorageError, match="None of the specified log dirs"):
        make_manager(["\0"])


def test_create_log_with_log_dir_fallback(make_manager: ManagerFactory, log_dir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """testCreateLogWithLogDirFallback: when making the partition directory fails in a log dir, the next
    candidate is tried, until one works."""
    dirs = [log_dir / str(i) for i in range(5)]
    manager = make_manager(dirs)
    manager.startup()
    broken: set[Path] = set()
    real = LogManager._create_log_directory

    def failing_half(self: LogManager, parent: Path, name: str) -> Path:
        if parent in broken or len(broken) < len(dirs) // 2:
            broken.add(parent)
            raise KafkaStorageError("broken dir")
        return real(self, parent, name)

    monkeypatch.setattr(LogManager, "_create_log_directory", failing_half)
    manager.get_or_create_log(TopicPartition(NAME, 0), is_new=True)
    assert len(broken) == len(dirs) // 2
    holding = [d for d in dirs if (d / f"{NAME}-0").exists()]
    assert len(holding) == 1, "More than one log file created"
    assert holding[0].resolve() not in broken


def test_handling_exceptions_during_shutdown(make_manager: ManagerFactory, tmp_path: Path) -> None:
    """testHandlingExceptionsDuringShutdown: closing a log of the first directory fails (Kafka deletes the
    partition directory, which makes the producer snapshot written at close fail; kafkalog writes no snapshot,
    so the flush fails here as a disk error would make it).  Shutdown still closes everything and returns
    after all of it; the first directory gets no clean-shutdown marker (nor checkpoints), the second does.
    (Kafka's broker epoch in the markers is not ported.)"""
    dir1, dir2 = tmp_path / "one", tmp_path / "two"
    manager = make_manager([dir1, dir2])
    assert len(manager.log_dirs) == 2
    manager.startup()
    log1 = manager.get_or_create_log(TopicPartition(NAME, 0))
    log2 = manager.get_or_create_log(TopicPartition(NAME, 1))
    assert (dir1 / f"{NAME}-0").exists() and (dir2 / f"{NAME}-1").exists()
    for log, value in ((log1, b"test1"), (log2, b"test2")):
        log.append_as_leader(singleton(value), leader_epoch=0)
        log.append_as_leader(singleton(value), leader_epoch=0)

    def failing_flush(*args: Any, **kwargs: Any) -> None:
        raise KafkaStorageError(f"Error while flushing log for {NAME}-0: simulated disk failure")

    log1.flush = failing_flush  # type: ignore[method-assign]
    manager.shutdown()
    assert not (dir1 / CLEAN_SHUTDOWN_FILE).exists()
    assert not (dir1 / RECOVERY_POINT_FILE).exists()
    assert (dir2 / CLEAN_SHUTDOWN_FILE).exists()
    assert read_checkpoint(dir2 / RECOVERY_POINT_FILE) == {TopicPartition(NAME, 1): 2}
    assert _open_paths(tmp_path) == []  # the failed log's files were released too
    del log1.flush
    reopened = make_manager([dir1, dir2])  # the locks are free; the first directory is recovered
    assert [r.value for r in reopened.get_log(TopicPartition(NAME, 0)).records()] == [b"test1"] * 2


def test_clean_shutdown_file_when_shutdown_called_before_startup_complete(
        make_manager: ManagerFactory, log_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """testCleanShutdownFileWhenShutdownCalledBeforeStartupComplete, as it applies here: a directory whose
    logs were not all loaded must not be marked clean.  Kafka 3.x loads in ``startup``, which a shutdown can
    interrupt; kafkalog loads in the constructor, as 0.10.1 did, so the loading is interrupted by an error
    after the first log instead, and the constructor raises: the marker removed at the start of loading is
    not written back, the loaded log's files are released, and the next open recovers both logs."""
    manager = make_manager()
    manager.startup()
    for partition in (0, 1):
        manager.get_or_create_log(TopicPartition(NAME, partition)).append_as_leader(singleton(b"test1"))
    manager.shutdown()
    assert (log_dir / CLEAN_SHUTDOWN_FILE).exists()
    (log_dir / CLEAN_SHUTDOWN_FILE).unlink()  # an unclean shutdown

    loaded: list[TopicPartition] = []
    real = LogManager._load_log

    def interrupted(self: LogManager, log_dir_: Path, tp: TopicPartition, *args: Any) -> Log:
        if loaded:
            raise KafkaStorageError("loading interrupted")
        loaded.append(tp)
        return real(self, log_dir_, tp, *args)

    monkeypatch.setattr(LogManager, "_load_log", interrupted)
    with pytest.raises(KafkaStorageError, match="loading interrupted"):
        make_manager()
    assert loaded == [TopicPartition(NAME, 0)]
    assert not (log_dir / CLEAN_SHUTDOWN_FILE).exists()
    assert _open_paths(log_dir) == []
    monkeypatch.setattr(LogManager, "_load_log", real)
    reopened = make_manager()
    assert sorted(tp.partition for tp in reopened.logs_by_topic_partition()) == [0, 1]
    reopened.shutdown()
    assert (log_dir / CLEAN_SHUTDOWN_FILE).exists()


def test_load_log_rename_log_that_should_be_stray(make_manager: ManagerFactory, tmp_path: Path) -> None:
    """testLoadLogRenameLogThatShouldBeStray: ``loadLog`` asks ``is_stray`` once, and a log it rejects has its
    directory renamed ``<topic>-<partition>.<uuid>-stray``."""
    log_dir = tmp_path / "stray-test"
    manager = make_manager([log_dir])
    tp = TopicPartition("test-stray-topic", 0)
    log = manager.get_or_create_log(tp)
    # Kafka's test loads the directory a second time while its log is open; a partition has one writer here,
    # so the first is closed and forgotten before the load.
    manager._logs.pop(tp).close()
    asked: list[Log] = []

    def provided_is_stray(candidate: Log) -> bool:
        asked.append(candidate)
        return True

    stray = manager._load_log(log.dir, tp, True, {}, {}, provided_is_stray)
    assert len(asked) == 1
    assert any(p.name.startswith("test-stray-topic") and p.name.endswith("-stray") for p in log_dir.iterdir())
    assert manager.stray_logs() == {tp: stray}
    assert parse_topic_partition_name(stray.dir) == tp


def test_stray_and_future_dirs_are_loaded_apart(make_manager: ManagerFactory, tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """Kafka 3.8's ``loadLog`` by directory name: a ``-stray`` directory is set aside (never served), a
    ``-future`` one (a copy being moved to another log dir) is the partition's future log, beside its current
    log (kafkalog loaded both as current logs and failed on the duplicate); an ``is_stray`` rejecting a log
    at load renames it ``-stray``.  Future logs are flushed, checkpointed and closed with the others."""
    first, second = tmp_path / "a", tmp_path / "b"
    manager = make_manager([first])
    for topic in ("kept", "moved", "unwanted"):
        append_many(manager.get_or_create_log(TopicPartition(topic, 0)), 3)
    manager.shutdown()
    shutil.copytree(first / "kept-0", first / "kept-0.0123456789abcdef0123456789abcdef-stray")
    shutil.copytree(first / "moved-0", second / "moved-0.0123456789abcdef0123456789abcdef-future")

    reopened = make_manager([first, second], is_stray=lambda log: log.topic_partition.topic == "unwanted")
    assert sorted(tp.topic for tp in reopened.logs_by_topic_partition()) == ["kept", "moved"]
    assert sorted(tp.topic for tp in reopened.stray_logs()) == ["kept", "unwanted"]
    current = reopened.get_log(TopicPartition("moved", 0))
    future = reopened.get_log(TopicPartition("moved", 0), is_future=True)
    assert future is not None and current is not None and future is not current
    assert future.dir.parent == second.resolve() and current.dir.parent == first.resolve()
    assert [r.offset for r in future.records()] == [0, 1, 2]
    assert len(reopened.all_logs()) == 3
    assert any("Loaded stray log" in r.getMessage() for r in caplog.records)
    assert next(p.name for p in first.iterdir() if p.name.startswith("unwanted")).endswith("-stray")
    reopened.shutdown()
    assert read_checkpoint(first / RECOVERY_POINT_FILE) == {TopicPartition("kept", 0): 3,
                                                            TopicPartition("moved", 0): 3}
    assert read_checkpoint(second / RECOVERY_POINT_FILE) == {TopicPartition("moved", 0): 3}
    assert _open_paths(tmp_path) == []


def write_meta_properties(directory: Path, directory_id: str | None = None) -> None:
    """Kafka's ``writeMetaProperties``: version 0, the test's cluster id and node id, and the directory id."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["#", "#Mon Jan 01 00:00:00 UTC 2024", "cluster.id=IVT1Seu3QjacxS7oBTKhDQ", "node.id=1", "version=0"]
    if directory_id is not None:
        lines.append(f"directory.id={directory_id}")
    (directory / "meta.properties").write_text("\n".join(lines) + "\n")


def random_directory_id() -> str:
    """Kafka's ``DirectoryId.random()``: a random Uuid in its base64 form."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def test_load_directory_ids(make_manager: ManagerFactory, tmp_path: Path) -> None:
    """testLoadDirectoryIds: the ``directory.id`` of each ``meta.properties``; none without one or without the
    file."""
    dirs = [tmp_path / f"d{i}" for i in range(5)]
    write_meta_properties(dirs[0])
    write_meta_properties(dirs[1], "ZwkGXjB0TvSF6mjVh6gO7Q")
    dirs[2].mkdir()  # no meta.properties
    write_meta_properties(dirs[3], "kQfNPJ2FTHq_6Qlyyv6Jqg")
    write_meta_properties(dirs[4])
    manager = make_manager(dirs)
    assert manager.directory_id(dirs[0]) is None
    assert manager.directory_id(dirs[1]) == "ZwkGXjB0TvSF6mjVh6gO7Q"
    assert manager.directory_id(dirs[2]) is None
    assert manager.directory_id(dirs[3]) == "kQfNPJ2FTHq_6Qlyyv6Jqg"
    assert manager.directory_ids_set == {"ZwkGXjB0TvSF6mjVh6gO7Q", "kQfNPJ2FTHq_6Qlyyv6Jqg"}
    assert manager.directory_path("kQfNPJ2FTHq_6Qlyyv6Jqg") == dirs[3].resolve()
    assert (dirs[1] / "meta.properties").read_text().count("directory.id") == 1  # read, never written
    manager.shutdown()
    write_meta_properties(dirs[4], "not a uuid")
    with pytest.raises(KafkaStorageError, match=r"Unable to read directory\.id as a Uuid"):
        make_manager(dirs)


def test_create_log_on_targeted_log_directory(make_manager: ManagerFactory, tmp_path: Path) -> None:
    """testCreateLogOnTargetedLogDirectory: a new log goes to the directory whose id is asked for."""
    target = random_directory_id()
    dirs = [tmp_path / f"d{i}" for i in range(5)]
    write_meta_properties(dirs[0])
    write_meta_properties(dirs[1], target)
    dirs[2].mkdir()
    write_meta_properties(dirs[3], random_directory_id())
    write_meta_properties(dirs[4])
    manager = make_manager(dirs)
    log = manager.get_or_create_log(TopicPartition(NAME, 0), target_log_directory_id=target)
    assert len(manager.log_dirs) == 5
    assert (dirs[1] / f"{NAME}-0").exists()
    assert log.dir.parent == dirs[1].resolve()
    log.append_as_leader(singleton(b"test"), leader_epoch=0)


def test_create_log_with_targeted_log_directory_set_as_unassigned(manager: LogManager, log_dir: Path) -> None:
    """testCreateLogWithTargetedLogDirectorySetAsUnassigned: DirectoryId.UNASSIGNED picks the next directory."""
    log = manager.get_or_create_log(TopicPartition(NAME, 0), target_log_directory_id=DIRECTORY_ID_UNASSIGNED)
    assert len(manager.log_dirs) == 1
    assert (log_dir / f"{NAME}-0").exists()
    assert manager.directory_id(log.dir.parent) != DIRECTORY_ID_UNASSIGNED
    log.append_as_leader(singleton(b"test"), leader_epoch=0)


def test_create_log_with_targeted_log_directory_set_as_unknown_without_any_offline_directories(
        manager: LogManager, log_dir: Path) -> None:
    """testCreateLogWithTargetedLogDirectorySetAsUnknownWithoutAnyOfflineDirectories: DirectoryId.LOST picks
    the next directory too."""
    log = manager.get_or_create_log(TopicPartition(NAME, 0), target_log_directory_id=DIRECTORY_ID_LOST)
    assert len(manager.log_dirs) == 1
    assert (log_dir / f"{NAME}-0").exists()
    assert manager.directory_id(log.dir.parent) != random_directory_id()
    log.append_as_leader(singleton(b"test"), leader_epoch=0)


class _FakeFuture:
    def __init__(self, counter: list[int], fails: bool) -> None:
        self.counter, self.fails = counter, fails

    def result(self) -> bool:
        self.counter[0] += 1
        if self.fails:
            raise RuntimeError("failed")
        return True


def test_wait_for_all_to_complete() -> None:
    """testWaitForAllToComplete: every job is waited for, each failure reported, and the result says whether
    all succeeded."""
    invoked = [0]
    success, failure = _FakeFuture(invoked, False), _FakeFuture(invoked, True)
    failures: list[BaseException] = []
    assert not wait_for_all_to_complete([success, failure], failures.append)
    assert (invoked[0], len(failures)) == (2, 1)
    assert not wait_for_all_to_complete([failure, success], failures.append)
    assert (invoked[0], len(failures)) == (4, 2)
    assert wait_for_all_to_complete([success, success], failures.append)
    assert (invoked[0], len(failures)) == (6, 2)
    assert not wait_for_all_to_complete([failure, failure], failures.append)
    assert (invoked[0], len(failures)) == (8, 4)
    assert all(isinstance(e, RuntimeError) for e in failures)


def test_shutdown_with_zero_file_delete_delay_ms(tmp_path: Path) -> None:
    """testShutdownWithZeroFileDeleteDelayMs: with file.delete.delay.ms 0 and nothing to delete, the
    kafka-delete-logs task reschedules itself after 1 ms (not 0, which would spin), and the manager and then
    its scheduler shut down within 5 s each.  Kafka starts the scheduler after making the manager and before
    ``startup``, which loads the logs; kafkalog loads in the constructor, so the scheduler starts first."""
    scheduler = KafkaScheduler(1, "log-manager-test")
    scheduler.startup()
    manager = LogManager([tmp_path / "logs"], LogConfig({"file.delete.delay.ms": "0"}),
                         flush_check_ms=1000, flush_recovery_offset_checkpoint_ms=10000,
                         flush_start_offset_checkpoint_ms=10000, retention_check_ms=1000,
                         initial_task_delay_ms=0, scheduler=scheduler, time=SYSTEM_TIME)
    try:
        manager.startup()
        for stop in (manager.shutdown, scheduler.shutdown):
            stopper = threading.Thread(target=stop, daemon=True)
            stopper.start()
            stopper.join(5)
            assert not stopper.is_alive(), f"{stop.__qualname__} did not finish within 5 s"
    finally:
        manager.shutdown()
        scheduler.shutdown()


# --- Kafka 3.8's LogManagerTest: configuration changes -----------------------------------------------------


class _ConfigSpy:
    """Counts the reads of each topic's overrides (Kafka's spied ``MockConfigRepository.topicConfig``)."""

    def __init__(self, manager: LogManager, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads: list[str] = []
        real = manager._topic_config_overrides

        def counting(topic: str) -> Any:
            self.reads.append(topic)
            return real(topic)

        monkeypatch.setattr(manager, "_topic_config_overrides", counting)


class _LogStub:
    """Kafka's ``mock(classOf[UnifiedLog])``: records the configs it is given."""

    def __init__(self) -> None:
        self.configs: list[LogConfig] = []

    def update_config(self, config: LogConfig) -> LogConfig:
        self.configs.append(config)
        return config


def test_topic_config_change_updates_log_config(make_manager: ManagerFactory,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """testTopicConfigChangeUpdatesLogConfig: a topic's config changed while its log is created is fetched
    again (once) when the creation finishes; another topic's is not."""
    manager = make_manager()
    spy = _ConfigSpy(manager, monkeypatch)
    one, two = TopicPartition("test-topic-one", 1), TopicPartition("test-topic-two", 1)
    log_one, log_two = _LogStub(), _LogStub()
    manager.initializing_log(one)
    manager.initializing_log(two)
    manager.topic_config_updated("test-topic-one")
    manager.finished_initializing_log(one, log_one)  # type: ignore[arg-type]
    manager.finished_initializing_log(two, log_two)  # type: ignore[arg-type]
    assert spy.reads == ["test-topic-one"]
    assert log_one.configs == [LOG_CONFIG] and log_two.configs == []
    assert manager.partitions_initializing == {}


def test_config_change_gets_cleaned_up(make_manager: ManagerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """testConfigChangeGetsCleanedUp: a creation that failed (no log) leaves nothing behind and reads no
    config."""
    manager = make_manager()
    spy = _ConfigSpy(manager, monkeypatch)
    tp = TopicPartition("test-topic", 1)
    manager.initializing_log(tp)
    manager.finished_initializing_log(tp, None)
    assert manager.partitions_initializing == {}
    assert spy.reads == []


def test_broker_config_change_delivered_to_all_logs(make_manager: ManagerFactory,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """testBrokerConfigChangeDeliveredToAllLogs: a broker config change reloads every log being created."""
    manager = make_manager()
    spy = _ConfigSpy(manager, monkeypatch)
    one, two = TopicPartition("test-topic-one", 1), TopicPartition("test-topic-two", 1)
    manager.initializing_log(one)
    manager.initializing_log(two)
    manager.broker_config_updated()
    manager.finished_initializing_log(one, _LogStub())  # type: ignore[arg-type]
    manager.finished_initializing_log(two, _LogStub())  # type: ignore[arg-type]
    assert sorted(spy.reads) == ["test-topic-one", "test-topic-two"]


def test_topic_config_change_stop_cleaning_if_compact_is_removed(make_manager: ManagerFactory,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """testTopicConfigChangeStopCleaningIfCompactIsRemoved: turning ``compact`` into ``delete`` updates every
    log of the topic and aborts their cleaning, once each."""
    manager = make_manager()
    tp0, tp1 = TopicPartition("topic", 0), TopicPartition("topic", 1)
    old_config = LogConfig.from_props(LOG_CONFIG.to_props(), {"cleanup.policy": "compact"})
    log0 = manager.get_or_create_log(tp0)
    log0.update_config(old_config)
    log1 = manager.get_or_create_log(tp1)
    log1.update_config(old_config)
    assert set(manager.logs_by_topic("topic")) == {log0, log1}
    updated: list[str] = []
    aborted: list[TopicPartition] = []
    real_updated = manager.topic_config_updated
    monkeypatch.setattr(manager, "topic_config_updated", lambda topic: (updated.append(topic), real_updated(topic)))
    monkeypatch.setattr(manager, "abort_cleaning", aborted.append)
    manager.update_topic_config("topic", {"cleanup.policy": "delete"}, is_remote_log_storage_system_enabled=False)
    assert log0.config.delete and log1.config.delete
    assert not log0.config.compact and not log1.config.compact
    assert updated == ["topic"]
    assert sorted(aborted) == [tp0, tp1]


def test_config_changes_with_no_log_getting_initialized(manager: LogManager) -> None:
    """testConfigChangesWithNoLogGettingInitialized."""
    manager.broker_config_updated()
    manager.topic_config_updated("test-topic")
    assert manager.partitions_initializing == {}


def test_update_topic_config_applies_to_live_and_new_logs(make_manager: ManagerFactory, mock_time: MockTime) -> None:
    """What a user of ``update_topic_config`` expects: the live logs of the topic take the new overrides
    (on the current defaults) at once, the next log of the topic gets them, other topics keep theirs, and
    an invalid change raises and changes nothing."""
    manager = make_manager(topic_configs={"other": {"retention.ms": "5000"}})
    manager.startup()
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    other = manager.get_or_create_log(TopicPartition("other", 0))
    assert log.config.retention_ms == MAX_LOG_AGE_MS
    manager.update_topic_config(NAME, {"retention.ms": "1000"})
    assert log.config.retention_ms == 1000
    assert log.config.segment_size == 1024  # the defaults stay under the overrides
    assert log.config.overridden_configs == {"retention.ms"}
    assert manager.get_or_create_log(TopicPartition(NAME, 1)).config.retention_ms == 1000
    assert other.config.retention_ms == 5000
    with pytest.raises(ConfigError, match=r"retention\.ms"):
        manager.update_topic_config(NAME, {"retention.ms": "soon"})
    with pytest.raises(ConfigError, match="Tiered Storage functionality is disabled"):
        manager.update_topic_config(NAME, {"remote.storage.enable": "true"})
    assert log.config.retention_ms == 1000
    # the new retention applies on the next pass
    append_many(log, 40)
    log.high_watermark = log.log_end_offset
    for segment in log.log_segments():
        segment.set_last_modified(mock_time.milliseconds())
    mock_time.sleep(INITIAL_TASK_DELAY_MS)
    assert log.number_of_segments == 1
    manager.update_topic_config(NAME, {})
    assert log.config == LOG_CONFIG


def test_reconfigure_default_log_config_keeps_each_logs_overrides(make_manager: ManagerFactory) -> None:
    """``reconfigure_default_log_config`` (with the rest of Kafka's ``DynamicLogConfig.reconfigure``): every
    log takes the new defaults under its own overrides, and new logs get them."""
    manager = make_manager(topic_configs={"small": {"segment.bytes": "2048"}})
    plain = manager.get_or_create_log(TopicPartition("plain", 0))
    small = manager.get_or_create_log(TopicPartition("small", 0))
    new_defaults = LogConfig({**LOG_CONFIG.to_props(), "retention.ms": "1234", "segment.bytes": "4096"})
    manager.reconfigure_default_log_config(new_defaults)
    assert manager.current_default_config is new_defaults
    assert (plain.config.retention_ms, plain.config.segment_size) == (1234, 4096)
    assert (small.config.retention_ms, small.config.segment_size) == (1234, 2048)
    assert manager.get_or_create_log(TopicPartition("small", 1)).config.segment_size == 2048
    assert manager.get_or_create_log(TopicPartition("plain", 1)).config.retention_ms == 1234


# --- issue 15: opening succeeds whatever recovery does; partition dirs that are no topic -------------------

#: 1 KiB segments and the broker's own scheduler (the manager's, started by the manager).
SMALL_SEGMENTS = LogConfig({"segment.bytes": 1024, "segment.index.bytes": 4096})


def _segmented_log(root: Path) -> list[int]:
    """A log of ``NAME-0`` over at least four segments, shut down cleanly; returns their base offsets."""
    with LogManager(root, SMALL_SEGMENTS) as manager:
        log = manager.get_or_create_log(TopicPartition(NAME, 0))
        while log.number_of_segments < 4:
            append_many(log, 5)
        return [s.base_offset for s in log.log_segments()]


def _unclean(root: Path, recovery_point: int = 0) -> None:
    """Make the last shutdown an unclean one, with the recovery point at ``recovery_point``."""
    (root / CLEAN_SHUTDOWN_FILE).unlink()
    (root / RECOVERY_POINT_FILE).write_text(f"0\n1\n{NAME} 0 {recovery_point}\n")


def test_open_succeeds_when_recovery_deletes_segments_after_a_corrupt_one(impl: ModuleType, tmp_path: Path) -> None:
    """Issue 15, defect 6: recovery cuts a corrupt middle segment and deletes the segments after it, which
    it does in the background (``delete-file``, after ``file.delete.delay.ms``); the manager's own scheduler
    was not started until ``startup``, so the open failed with SchedulerStateError.  Kafka's broker starts
    its scheduler before the logs load; the manager now starts its own in the constructor."""
    root = tmp_path / "logs"
    bases = _segmented_log(root)
    _unclean(root)
    middle = root / f"{NAME}-0" / f"{bases[1]:020d}.log"
    data = bytearray(middle.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's record: its CRC no longer matches
    middle.write_bytes(bytes(data))

    manager = LogManager(root, SMALL_SEGMENTS)
    try:
        log = manager.get_log(TopicPartition(NAME, 0))
        assert log.log_end_offset == bases[1]
        assert [s.base_offset for s in log.log_segments()] == bases[:2]
        assert log.load_report.deleted_segments == bases[2:]
        assert [r.offset for r in log.records()] == list(range(bases[1]))
        append_many(log, 1)
    finally:
        manager.shutdown()
    # The deletions still waiting at shutdown are finished by the next open: no .deleted file stays.
    with LogManager(root, SMALL_SEGMENTS) as reopened:
        assert [r.offset for r in reopened.get_log(TopicPartition(NAME, 0)).records()] == list(range(bases[1] + 1))
        assert not [p.name for p in (root / f"{NAME}-0").iterdir() if p.name.endswith(".deleted")]


def test_open_succeeds_when_the_log_start_checkpoint_is_past_the_log_end(impl: ModuleType, tmp_path: Path) -> None:
    """Issue 15, defect 6: a log start offset checkpointed above the log end (segments deleted by hand) makes
    recovery delete every segment in the background and start an empty one at the checkpoint."""
    root = tmp_path / "logs"
    _segmented_log(root)
    _unclean(root)
    (root / LOG_START_OFFSET_FILE).write_text(f"0\n1\n{NAME} 0 10000\n")
    with LogManager(root, SMALL_SEGMENTS) as manager:
        log = manager.get_log(TopicPartition(NAME, 0))
        assert (log.log_start_offset, log.log_end_offset, log.number_of_segments) == (10000, 10000, 1)
    with LogManager(root, SMALL_SEGMENTS) as reopened:
        assert reopened.get_log(TopicPartition(NAME, 0)).log_end_offset == 10000
        assert sorted(p.name for p in (root / f"{NAME}-0").iterdir()) == [
            "00000000000000010000.index", "00000000000000010000.log", "00000000000000010000.timeindex"]


def test_a_manager_used_without_startup_rolls(tmp_path: Path) -> None:
    """Issue 15, defect 6: a roll schedules a flush of the old segment; a manager whose background tasks
    were never started (no ``startup``) failed on every roll."""
    manager = LogManager(tmp_path / "logs", SMALL_SEGMENTS)
    try:
        log = manager.get_or_create_log(TopicPartition(NAME, 0))
        while log.number_of_segments < 3:
            append_many(log, 5)
        end = log.log_end_offset
    finally:
        manager.shutdown()
    with LogManager(tmp_path / "logs", SMALL_SEGMENTS) as reopened:
        assert reopened.get_log(TopicPartition(NAME, 0)).log_end_offset == end


def test_a_given_scheduler_must_run_before_the_logs_load(tmp_path: Path) -> None:
    """A broker starts its scheduler before its LogManager loads; kafkalog loads in the constructor, so a
    scheduler given to a writable manager must be running then: one that is not is refused up front, before
    any lock is taken or file touched, rather than failing whenever recovery or a roll schedules a task."""
    from kafkalog.scheduler import SchedulerStateError

    scheduler = KafkaScheduler(1, "given-")
    with pytest.raises(SchedulerStateError, match="must be started before"):
        LogManager(tmp_path / "logs", SMALL_SEGMENTS, scheduler=scheduler)
    assert not (tmp_path / "logs" / ".lock").exists()
    scheduler.startup()
    try:
        with LogManager(tmp_path / "logs", SMALL_SEGMENTS, scheduler=scheduler) as manager:
            append_many(manager.get_or_create_log(TopicPartition(NAME, 0)), 40)
        assert scheduler.is_started  # the caller's scheduler is the caller's to stop
    finally:
        scheduler.shutdown()
    LogManager(tmp_path / "logs", read_only=True, scheduler=KafkaScheduler(1)).shutdown()  # a reader schedules nothing


@pytest.mark.parametrize("name", [b"my topic-0", b"t\xff-0", b"t" * 250 + b"-0"])
def test_partition_dirs_that_are_no_topic_are_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                      name: bytes) -> None:
    """Issue 15, defect 8: a directory named ``<topic>-<partition>`` whose topic Kafka does not allow (a space,
    a byte that is not UTF-8, a name longer than 249 characters) was loaded, and then no checkpoint could
    list it, so the whole directory's recovery points and its clean-shutdown marker were not written.  It is
    skipped at load with a warning (Kafka's ``loadLog`` refuses it: ``Topic.validate``), and left as it is."""
    root = tmp_path / "logs"
    with LogManager(root, SMALL_SEGMENTS) as manager:
        append_many(manager.get_or_create_log(TopicPartition(NAME, 0)), 3)
    stranger = os.path.join(os.fsencode(root), name)
    shutil.copytree(os.fsencode(root / f"{NAME}-0"), stranger)
    before = sorted(os.listdir(stranger))
    for read_only in (True, False):
        with LogManager(root, SMALL_SEGMENTS, read_only=read_only) as manager:
            assert list(manager.logs_by_topic_partition()) == [TopicPartition(NAME, 0)]
        assert "is not a partition directory" in caplog.text and "Topic name is invalid" in caplog.text
        caplog.clear()
    assert (root / CLEAN_SHUTDOWN_FILE).exists()
    assert read_checkpoint(root / RECOVERY_POINT_FILE) == {TopicPartition(NAME, 0): 3}
    assert sorted(os.listdir(stranger)) == before
