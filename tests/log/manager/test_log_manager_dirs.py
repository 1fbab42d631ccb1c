"""Kafka 3.8.0's LogManagerTest cases about deletion, directories and shutdown, and about configuration
changes, against :class:`kafkalog.manager.log_manager.LogManager` (managers and fixtures in this folder's
``conftest.py``).
"""

from __future__ import annotations

import base64
import errno
import os
import shutil
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from kafkalog.config.config_def import ConfigError
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import (
    KafkaLogError,
    KafkaStorageError,
)
from kafkalog.log import Log
from kafkalog.manager.log_manager import INITIAL_TASK_DELAY_MS, LogManager, wait_for_all_to_complete
from kafkalog.manager.meta_properties import DIRECTORY_ID_LOST, DIRECTORY_ID_UNASSIGNED
from kafkalog.scheduler import SYSTEM_TIME, KafkaScheduler, MockTime
from kafkalog.topic import TopicPartition, parse_topic_partition_name
from tests.support.manager_utils import (
    CLEAN_SHUTDOWN_FILE,
    LOG_CONFIG,
    MAX_LOG_AGE_MS,
    NAME,
    RECOVERY_POINT_FILE,
    ManagerFactory,
    append_many,
    open_paths,
    read_checkpoint,
    record_tuples,
    singleton,
)

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


def test_handling_exceptions_during_shutdown(make_manager: ManagerFactory, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """testHandlingExceptionsDuringShutdown: closing a log of the first directory fails with an I/O error, which
    takes that directory offline.  Shutdown still closes everything and returns after all of it; the first
    directory gets no clean-shutdown marker (nor checkpoints), the second does.  Kafka deletes the partition
    directory, so that the producer snapshot written at close fails; kafkalog skips a snapshot it cannot write at
    close (its choice, see ``take_snapshot_if_possible``), so here the flush's fsync of that log's files fails
    (``EIO``).  (Kafka's broker epoch in the markers is not ported.)"""
    dir1, dir2 = tmp_path / "one", tmp_path / "two"
    manager = make_manager([dir1, dir2])
    assert len(manager.log_dirs) == 2
    manager.startup()
    log1 = manager.get_or_create_log(TopicPartition(NAME, 0))
    log2 = manager.get_or_create_log(TopicPartition(NAME, 1))
    assert (dir1 / f"{NAME}-0").exists() and (dir2 / f"{NAME}-1").exists()
    for log, value in ((log1, b"test1"), (log2, b"test2")):
        log.append_as_leader(singleton(value), leader_epoch=0)
        log.take_producer_snapshot()
        log.append_as_leader(singleton(value), leader_epoch=0)

    counted_fsync = os.fsync

    def fsync(fd: int) -> None:
        if any(os.path.samestat(os.fstat(fd), path.stat()) for path in log1.dir.iterdir()):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        counted_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    manager.shutdown()
    assert not (dir1 / CLEAN_SHUTDOWN_FILE).exists()
    assert not (dir1 / RECOVERY_POINT_FILE).exists()
    assert (dir2 / CLEAN_SHUTDOWN_FILE).exists()
    assert read_checkpoint(dir2 / RECOVERY_POINT_FILE) == {TopicPartition(NAME, 1): 2}
    assert manager.offline_log_dirs == [dir1.resolve()]  # kafkalog's: what the failed close did
    assert open_paths(tmp_path) == []  # the failed log's files were released too
    monkeypatch.setattr(os, "fsync", counted_fsync)
    reopened = make_manager([dir1, dir2])  # the locks are free; the first directory is recovered
    assert reopened.offline_log_dirs == []
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
    assert open_paths(log_dir) == []
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
    assert open_paths(tmp_path) == []


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
