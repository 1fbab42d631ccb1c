"""LogManager under Kafka's failure model (3.8.0 ``LogDirFailureChannel``, ``LogManager.loadLogs`` and
``handleLogDirFailure``): an I/O error takes its log dir offline, the manager stops serving that dir and the
others go on.

Kafka's LogManagerTest has no case of its own for this (its offline dirs are those that fail validation,
testCreateLogWithInvalidLogDir, in ``test_log_manager_dirs.py``; a load that fails is LogLoaderTest's
testLogRecoveryIsCalledUponBrokerCrash, in ``tests/log/test_log_loader.py``): these cases check what a broker
does, each with a real error rather than a mocked one.  Files no ``open()`` can open stand for a failing disk: a
UNIX socket where a file belongs (``ENXIO``), a directory where a file is written (``EISDIR``), the transaction
index pointed at its partition directory (Kafka's own trick in UnifiedLogTest).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import socket
from pathlib import Path

import pytest

from kafkalog.checkpoint import CLEANER_OFFSET_CHECKPOINT_FILE, LEADER_EPOCH_CHECKPOINT_FILE
from kafkalog.errors import KafkaStorageError
from kafkalog.fsutil import DirLock
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import ControlRecordType
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition
from tests.support.log_test_utils import append_end_txn_marker_as_leader, append_transactional_as_leader
from tests.support.manager_utils import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_FILE,
    NAME,
    RECOVERY_POINT_FILE,
    ManagerFactory,
    append_many,
    open_paths,
    read_checkpoint,
    singleton,
)


def socket_in_place_of(path: Path) -> None:
    """A UNIX socket at ``path``: a file that every ``open()`` refuses (``ENXIO``), as a failing disk would.
    Bound by a relative name, so a long path does not matter."""
    path.unlink(missing_ok=True)
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(path.name)
    finally:
        os.chdir(cwd)


def three_logs(manager: LogManager, a: Path, b: Path, count: int = 3) -> dict[int, Log]:
    """Partitions 0, 1 and 2 of ``NAME``, placed by the manager (the dir holding the fewest logs first): 0 and 2
    in ``a``, 1 in ``b``; ``count`` records each."""
    logs = {p: manager.get_or_create_log(TopicPartition(NAME, p)) for p in range(3)}
    assert [logs[p].dir.parent for p in range(3)] == [a.resolve(), b.resolve(), a.resolve()]
    for log in logs.values():
        append_many(log, count)
    return logs


def values(log: Log) -> list[bytes | None]:
    return [r.value for r in log.records()]


def test_load_logs_takes_a_failing_dir_offline_and_loads_the_rest(make_manager: ManagerFactory, tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Kafka 3.8's ``loadLogs``: an I/O error while a log loads is logged, every other log and dir loads, then
    the failure channel takes that dir offline and the manager stops serving it: its logs that did load are let
    go, its lock released, no checkpoint or clean-shutdown marker written there.  Once the disk is mended, the
    dir loads again, recovered (the marker was taken before loading)."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = make_manager([a, b])
    three_logs(manager, a, b)
    manager.shutdown()
    checkpoints = {name: (a / name).read_bytes() for name in (RECOVERY_POINT_FILE, LOG_START_OFFSET_FILE)}
    checkpoint = a / f"{NAME}-0" / LEADER_EPOCH_CHECKPOINT_FILE
    socket_in_place_of(checkpoint)
    with caplog.at_level(logging.ERROR):
        manager = make_manager([a, b])
    assert manager.offline_log_dirs == [a.resolve()] and manager.has_offline_log_dirs()
    assert manager.log_dirs == [b.resolve()]
    assert manager.get_log(TopicPartition(NAME, 0)) is None and manager.get_log(TopicPartition(NAME, 2)) is None
    assert [log.topic_partition for log in manager.all_logs()] == [TopicPartition(NAME, 1)]
    assert values(manager.get_log(TopicPartition(NAME, 1))) == [b"test"] * 3  # type: ignore[arg-type]
    # Reported by the checkpoint as it failed, then by the loader once every dir was loaded, as in Kafka.
    reported = [r.getMessage() for r in caplog.records if r.name == "kafkalog.log_dir_failure_channel"]
    assert len(reported) == 2 and reported[0].startswith(f"Error while reading checkpoint file {checkpoint}: ")
    assert reported[1] == f"Error while loading log dir {a.resolve()}"
    assert open_paths(a) == []  # partition 2 loaded, then was let go
    DirLock(a, holder="the test").release()  # the manager's lock of the failed dir is released
    manager.startup()
    manager.shutdown()
    assert not (a / CLEAN_SHUTDOWN_FILE).exists() and (b / CLEAN_SHUTDOWN_FILE).exists()
    assert {name: (a / name).read_bytes() for name in checkpoints} == checkpoints
    checkpoint.unlink()
    manager = make_manager([a, b])
    assert manager.offline_log_dirs == []
    for p in range(3):
        log = manager.get_log(TopicPartition(NAME, p))
        assert log is not None and values(log) == [b"test"] * 3
        assert log.had_clean_shutdown is (p == 1)


def test_a_failed_log_dir_is_taken_out_of_service_and_the_others_go_on(
        make_manager: ManagerFactory, tmp_path: Path, mock_time: MockTime) -> None:
    """An I/O error in one log's append (its transaction index write, as in UnifiedLogTest's
    testAppendToTransactionIndexFailure) takes the log dir offline: every log of that dir refuses its files at
    once and the manager's views leave them out; its next operation takes the dir out of service (Kafka:
    ``handleLogDirFailure``); the other dir is served, gets the new logs and the checkpoints, and the only
    clean-shutdown marker.  Reopened, the failed dir is recovered, the abort that failed to be indexed included."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = make_manager([a, b])
    manager.startup()
    logs = three_logs(manager, a, b)
    manager.checkpoint_recovery_point_offsets()
    manager.checkpoint_log_start_offsets()
    checkpoints = {name: (a / name).read_bytes() for name in (RECOVERY_POINT_FILE, LOG_START_OFFSET_FILE)}
    failing = logs[0]
    append_transactional_as_leader(failing, 1, 0, mock_time)(2)
    failing.active_segment.txn_index.rename_to(failing.dir)
    with pytest.raises(KafkaStorageError,
                       match=re.escape(f"Error while appending records to {NAME}-0 in dir {a.resolve()}")):
        append_end_txn_marker_as_leader(failing, 1, 0, ControlRecordType.ABORT, mock_time.milliseconds())

    with pytest.raises(KafkaStorageError, match=re.escape(f"The log dir {a.resolve()} is already offline")):
        logs[2].append_as_leader(singleton(b"more"), leader_epoch=0)
    assert manager.offline_log_dirs == [a.resolve()] and manager.log_dirs == [b.resolve()]
    assert manager.get_log(TopicPartition(NAME, 0)) is None and manager.get_log(TopicPartition(NAME, 2)) is None
    assert list(manager.logs_by_dir()) == [b.resolve()]
    assert logs[1].append_as_leader(singleton(b"more"), leader_epoch=0).last_offset == 3

    # Kafka's default isNew=false refuses a log that may be in the offline dir; a new one goes to the live dir.
    with pytest.raises(KafkaStorageError, match=r"because log directories .* are offline"):
        manager.get_or_create_log(TopicPartition(NAME, 3))
    assert logs[0].local_log.is_memory_mapped_buffer_closed and logs[2].local_log.is_memory_mapped_buffer_closed
    assert open_paths(a) == []
    DirLock(a, holder="the test").release()
    created = manager.get_or_create_log(TopicPartition(NAME, 3), is_new=True)
    assert created.dir.parent == b.resolve()
    manager.handle_log_dir_failure(a.resolve())  # a second time: nothing more to do

    mock_time.sleep(manager.flush_recovery_offset_checkpoint_ms + manager.initial_task_delay_ms)
    assert read_checkpoint(b / RECOVERY_POINT_FILE) == {TopicPartition(NAME, 1): logs[1].recovery_point,
                                                        TopicPartition(NAME, 3): 0}
    assert {name: (a / name).read_bytes() for name in checkpoints} == checkpoints
    manager.shutdown()
    assert not (a / CLEAN_SHUTDOWN_FILE).exists() and (b / CLEAN_SHUTDOWN_FILE).exists()

    manager = make_manager([a, b])
    reopened = manager.get_log(TopicPartition(NAME, 0))
    assert reopened is not None and not reopened.had_clean_shutdown
    assert reopened.log_end_offset == 6  # 3 records, 2 of the transaction, and its marker
    assert [txn.producer_id for txn in reopened.collect_aborted_transactions(0, reopened.log_end_offset)] == [1]
    assert values(manager.get_log(TopicPartition(NAME, 2))) == [b"test"] * 3  # type: ignore[arg-type]


def test_a_failed_checkpoint_write_takes_its_log_dir_offline(make_manager: ManagerFactory, tmp_path: Path) -> None:
    """Kafka: the checkpoint files report their I/O errors to the failure channel (``OffsetCheckpointFile``):
    the write that fails is logged, its dir goes offline, and the other dirs are checkpointed."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = make_manager([a, b])
    three_logs(manager, a, b)
    (a / f"{RECOVERY_POINT_FILE}.tmp").mkdir()  # the checkpoint is written there first: no open() can
    manager.checkpoint_recovery_point_offsets()
    assert manager.offline_log_dirs == [a.resolve()]
    assert read_checkpoint(b / RECOVERY_POINT_FILE) == {TopicPartition(NAME, 1): 0}
    assert (a / RECOVERY_POINT_FILE).read_bytes() == b""  # made empty when opened, as Kafka's CheckpointFile does
    manager.checkpoint_log_start_offsets()  # skips the offline dir
    assert not (a / LOG_START_OFFSET_FILE).exists() and (b / LOG_START_OFFSET_FILE).exists()


def test_create_log_takes_a_dir_it_cannot_use_offline(make_manager: ManagerFactory, tmp_path: Path) -> None:
    """Kafka's ``createLogDirectory``: a partition directory that cannot be made takes its log dir offline (and
    the log goes to the next dir, testCreateLogWithLogDirFallback)."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = make_manager([a, b])
    (a / f"{NAME}-0").write_bytes(b"in the way")  # a file where the directory goes
    log = manager.get_or_create_log(TopicPartition(NAME, 0), is_new=True)
    assert log.dir.parent == b.resolve()
    assert manager.offline_log_dirs == [a.resolve()]
    assert (a / f"{NAME}-0").read_bytes() == b"in the way"


def test_a_deletion_whose_rename_fails_takes_the_dir_offline_and_lets_the_log_go(
        make_manager: ManagerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's ``asyncDelete``: the log leaves the manager, then its directory is renamed ``-delete``; a rename
    that fails (here ``EIO``, from a patched ``os.replace``: no real fault fails a rename on demand) takes the log
    dir offline (``renameDir``'s handler), and the log, in no map any more, has its files released."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = make_manager([a, b])
    logs = three_logs(manager, a, b)
    real_replace = os.replace

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        if str(target).endswith("-delete"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KafkaStorageError, match=re.escape(f"Error while renaming dir for {NAME}-0 in log dir "
                                                          f"{a.resolve()}: ")):
        manager.delete_log(TopicPartition(NAME, 0))
    monkeypatch.setattr(os, "replace", real_replace)
    assert logs[0].local_log.is_memory_mapped_buffer_closed
    assert manager.offline_log_dirs == [a.resolve()] and manager.get_log(TopicPartition(NAME, 0)) is None
    assert (a / f"{NAME}-0").is_dir()
    manager.checkpoint_recovery_point_offsets()  # the manager's next operation takes the dir out of service
    assert open_paths(a) == []


def test_the_cleaner_takes_a_dir_it_cannot_write_offline_and_cleans_no_more_there(
        make_manager: ManagerFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's ``CleanerThread.cleanLog``: an I/O error while a log is cleaned takes its dir offline; the cleaner
    goes on with the logs of the other dirs, cleans that dir's logs no more and writes no checkpoint there
    (``LogCleanerManager.handleLogDirFailure``).  The error: a directory where the cleaner's ``.cleaned``
    segment goes."""
    a, b = tmp_path / "a", tmp_path / "b"
    topic = "compacted"
    manager = make_manager([a, b], topic_configs={topic: {"cleanup.policy": "compact"}})
    logs = [manager.get_or_create_log(TopicPartition(topic, p)) for p in range(2)]
    assert [log.dir.parent for log in logs] == [a.resolve(), b.resolve()]
    for log in logs:
        append_many(log, 40, key=b"key")
    segments = [s.base_offset for s in logs[0].log_segments()]
    (logs[0].dir / "00000000000000000000.log.cleaned").mkdir()
    with caplog.at_level(logging.ERROR, logger="kafkalog.log_dir_failure_channel"):
        stats = manager.compact()
    assert [s.topic_partition for s in stats] == [TopicPartition(topic, 1)]
    assert [r.getMessage() for r in caplog.records] == [
        f"Failed to clean up log for {topic}-0 in dir {a.resolve()} due to IOException"]
    assert manager.offline_log_dirs == [a.resolve()]
    assert (a / CLEANER_OFFSET_CHECKPOINT_FILE).read_bytes() == b""  # as made, empty, with the cleaner
    assert read_checkpoint(b / CLEANER_OFFSET_CHECKPOINT_FILE) == {TopicPartition(topic, 1): 39}
    assert manager.compact() == []  # the failed dir is out of service now: nothing of it is cleaned
    assert manager._compactor is not None
    assert manager._compactor.cleaner_manager.all_cleaner_checkpoints() == {TopicPartition(topic, 1): 39}
    assert [s.base_offset for s in logs[0].log_segments()] == segments


def test_the_last_log_dir_failing_leaves_a_manager_serving_nothing(make_manager: ManagerFactory, log_dir: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """Kafka stops the broker when its last log dir fails; the manager serves nothing from then on, says so at the
    CRITICAL level, and shuts down without writing anything."""
    manager = make_manager([log_dir])
    log = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(log, 2)
    with caplog.at_level(logging.CRITICAL, logger="kafkalog.manager"):
        manager.log_dir_failure_channel.maybe_add_offline_log_dir(str(log_dir.resolve()), "the disk is gone",
                                                                  OSError(5, "Input/output error"))
        manager.checkpoint_recovery_point_offsets()
    assert [r.getMessage() for r in caplog.records] == [
        f"Shutdown broker because all log dirs in {log_dir.resolve()} have failed"]
    assert manager.log_dirs == [] and manager.all_logs() == []
    with pytest.raises(KafkaStorageError, match="No log directories available"):
        manager.get_or_create_log(TopicPartition(NAME, 1), is_new=True)
    manager.shutdown()
    assert sorted(p.name for p in log_dir.iterdir()) == [".lock", f"{NAME}-0"]


def test_a_manager_whose_dirs_all_fail_to_load_raises(make_manager: ManagerFactory, log_dir: Path) -> None:
    """No log dir left after loading: the constructor raises what took each offline (a broker stops), and releases
    everything it opened."""
    manager = make_manager([log_dir])
    three_logs_dir = manager.get_or_create_log(TopicPartition(NAME, 0))
    append_many(three_logs_dir, 2)
    manager.shutdown()
    checkpoint = log_dir / f"{NAME}-0" / LEADER_EPOCH_CHECKPOINT_FILE
    socket_in_place_of(checkpoint)
    with pytest.raises(KafkaStorageError, match=re.escape(f"None of the log dirs {log_dir.resolve()} can be used: "
                                                          f"Error while loading log dir {log_dir.resolve()}: ")
                       + ".*" + re.escape(str(checkpoint))):
        make_manager([log_dir])
    assert open_paths(log_dir) == []
    DirLock(log_dir, holder="the test").release()
