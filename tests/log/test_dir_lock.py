"""The log dir's ``.lock`` and ``.kafka_cleanshutdown`` seen from a second writer (issue 15, defects 1-3).

A log dir (one entry of ``log.dirs``) has one writer at a time, whatever opens it: a broker, a
:class:`~kafkalog.manager.log_manager.LogManager`, a :class:`~kafkalog.tools.log_dir_writer.LogDirWriter`, the
``recover`` and ``clean`` commands, or a plain writable :class:`~kafkalog.log.unified_log.Log` of one of its partitions.
 Each holds the ``.lock`` file with an ``flock`` and a POSIX record lock (``lockf``, what a broker's
 ``FileChannel.tryLock``
takes), so

* a second writer, in this process or another, gets a :class:`~kafkalog.errors.LogDirInUseError` that names
  the log dir and who holds it (defect 1); read-only opens never lock and never write;
* a failed attempt never closes a descriptor of the lock file while this process holds the lock: closing any
  descriptor of a file drops every POSIX lock the process has on it, which would let a broker in (defect 3);
* whoever opens a log dir for writing removes the clean-shutdown marker before loading, as Kafka's
  ``LogManager.loadLogs`` does, so a writer that dies is recovered by the next opener (defect 2).

The processes that must be refused, or must die mid-write, are real child processes (``python -c``).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from unittest import mock

import pytest

import kafkalog
from kafkalog.cli import main
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import KafkaStorageError
from kafkalog.filenames import CLEAN_SHUTDOWN_FILE, LOCK_FILE
from kafkalog.fsutil import DirLock
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.topic import TopicPartition

TP = TopicPartition("t", 0)
CONFIG = LogConfig({"segment.bytes": 4096, "segment.index.bytes": 4096})
PACKAGE_ROOT = str(Path(kafkalog.__file__).resolve().parent.parent)
CHILD_TIMEOUT_S = 60


def _env(twin: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env.pop("KAFKALOG_PURE_PYTHON", None)
    if twin == "python":
        env["KAFKALOG_PURE_PYTHON"] = "1"
    return env


def _child(code: str, *args: object, twin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], capture_output=True,
                          text=True, env=_env(twin), timeout=CHILD_TIMEOUT_S)


def _records(start: int, count: int) -> MemoryRecords:
    return MemoryRecords.with_records([(b"k%d" % o, b"v%d" % o, 1_700_000_000_000 + o)
                                       for o in range(start, start + count)])


def _values(log: Log) -> list[bytes | None]:
    return [r.value for r in log.records()]


# A child that opens a partition of a log dir for writing and appends one record.
_APPEND = """
    import sys
    from kafkalog.errors import LogDirInUseError
    from kafkalog.log import Log
    from kafkalog.record import MemoryRecords
    try:
        log = Log(sys.argv[1])
    except LogDirInUseError as e:
        print(type(e).__name__, e.path, e.pid, "|", e)
        sys.exit(3)
    log.append(MemoryRecords.with_records([(b"intruder", b"intruder")]))
    log.flush()
    log.close()
    print("appended")
"""

# A child that tries the lock a Kafka broker takes (FileChannel.tryLock: an fcntl record lock).
_BROKER_TRY_LOCK = """
    import fcntl, sys
    with open(sys.argv[1], "r+b") as f:
        try:
            fcntl.lockf(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            print("refused")
            sys.exit(3)
    print("locked")
"""


# --- defect 1: a writable Log takes the log dir's lock ----------------------------------------------------


def test_another_process_cannot_open_a_partition_for_writing_while_a_manager_holds_the_dir(tmp_path: Path) -> None:
    """Issue 15, defect 1: while a LogManager holds the log dir, ``Log(partition)`` in another process is
    refused with an error naming the dir and the holding process; the manager's flushed records stay."""
    root = tmp_path / "logs"
    with LogManager(root, CONFIG) as manager:
        log = manager.get_or_create_log(TP)
        log.append(_records(0, 3))
        log.flush()
        child = _child(_APPEND, root / str(TP))
        assert child.returncode == 3, (child.stdout, child.stderr)
        name, path, pid, _, message = child.stdout.split(" ", 4)
        assert name == "LogDirInUseError"
        assert Path(path) == root.resolve() / LOCK_FILE
        assert int(pid) == os.getpid()
        assert f"Failed to acquire lock on file .lock in {root.resolve()}" in message
        assert f"process {os.getpid()}" in message
        assert _values(log) == [b"v0", b"v1", b"v2"]
    with LogManager(root, CONFIG) as manager:
        assert _values(manager.get_log(TP)) == [b"v0", b"v1", b"v2"]


def test_a_standalone_log_in_the_managers_process_is_refused(tmp_path: Path) -> None:
    """In the manager's own process a second writer of its log dir is refused too, naming the manager; the
    manager's own logs (loaded and created) open under its lock without waiting for it."""
    root = tmp_path / "logs"
    with LogManager(root, CONFIG) as manager:
        manager.get_or_create_log(TP).append(_records(0, 2))
        with pytest.raises(KafkaStorageError, match=r"A Kafka instance in a thread of this process is using this "
                           r"directory: it is held by a LogManager in this process") as failure:
            Log(root / str(TP), CONFIG)
        assert failure.value.path == root.resolve() / LOCK_FILE
        with pytest.raises(KafkaStorageError, match="held by a LogManager"):
            Log(root / "other-0", CONFIG)
        assert not (root / "other-0").exists()
        manager.get_or_create_log(TopicPartition("t", 1)).append(_records(0, 1))
        # A read-only open is no writer: it takes no lock.
        with Log(root / str(TP), read_only=True) as reader:
            assert _values(reader) == [b"v0", b"v1"]
    with LogManager(root, CONFIG) as manager:
        assert sorted(str(tp) for tp in manager.logs_by_topic_partition()) == ["t-0", "t-1"]


def test_a_standalone_log_holds_the_dir_against_other_processes(tmp_path: Path) -> None:
    """A writable ``Log`` takes its log dir's lock for as long as it is open: another process can open no
    partition of that dir for writing, and a broker could not take the dir, until it closes.  Two writable
    logs of different partitions in one process share the hold."""
    root = tmp_path / "logs"
    first = Log(root / "t-0", CONFIG)
    second = Log(root / "t-1", CONFIG)
    try:
        assert _child(_APPEND, root / "t-2").returncode == 3
        assert _child(_BROKER_TRY_LOCK, root / LOCK_FILE).stdout == "refused\n"
        first.close()
        assert _child(_BROKER_TRY_LOCK, root / LOCK_FILE).stdout == "refused\n"
    finally:
        first.close()
        second.close()
    assert _child(_BROKER_TRY_LOCK, root / LOCK_FILE).stdout == "locked\n"
    child = _child(_APPEND, root / "t-2")
    assert child.stdout == "appended\n", child.stderr


def test_the_same_partition_twice_in_one_process_is_refused(tmp_path: Path) -> None:
    """Two writable ``Log`` objects of one partition are two writers even in one process: the second is
    refused until the first is closed."""
    root = tmp_path / "logs"
    with Log(root / "t-0", CONFIG) as log:
        log.append(_records(0, 1))
        with pytest.raises(KafkaStorageError, match="already open for writing in this process"):
            Log(root / "t-0", CONFIG)
        assert _values(log) == [b"v0"]
    with Log(root / "t-0", CONFIG) as log:
        assert _values(log) == [b"v0"]


def test_a_read_only_open_never_locks_or_writes(tmp_path: Path) -> None:
    """``read_only=True`` takes no lock and creates no file: it works while another process holds the dir,
    and on a dir that has no ``.lock``."""
    root = tmp_path / "logs"
    with LogManager(root, CONFIG) as manager:
        manager.get_or_create_log(TP).append(_records(0, 2))
    (root / LOCK_FILE).unlink()
    before = sorted(p.name for p in root.iterdir())
    with Log(root / str(TP), read_only=True) as reader, LogManager(root, read_only=True) as readers:
        assert _values(reader) == _values(readers.get_log(TP)) == [b"v0", b"v1"]
    assert sorted(p.name for p in root.iterdir()) == before


# --- defect 3: a failed attempt keeps the process's POSIX lock ---------------------------------------------


@pytest.mark.parametrize("second", ["LogManager", "DirLock", "LogDirWriter", "Log"])
def test_a_failed_second_attempt_keeps_the_posix_lock(tmp_path: Path, second: str) -> None:
    """Issue 15, defect 3: a second lock attempt in the holding process fails without closing a descriptor
    of ``.lock`` (which would drop the process's ``lockf`` lock): a broker's fcntl lock is still refused."""
    root = tmp_path / "logs"
    with LogManager(root, CONFIG) as manager:
        assert _child(_BROKER_TRY_LOCK, root / LOCK_FILE).stdout == "refused\n"
        attempts = {"LogManager": lambda: LogManager(root), "DirLock": lambda: DirLock(root),
                    "LogDirWriter": lambda: LogDirWriter(root), "Log": lambda: Log(root / "t-9")}
        for _ in range(2):
            with pytest.raises(KafkaStorageError, match=r"Failed to acquire lock on file \.lock"):
                attempts[second]()
        child = _child(_BROKER_TRY_LOCK, root / LOCK_FILE)
        assert child.stdout == "refused\n", child.stderr
        manager.get_or_create_log(TP).append(_records(0, 1))
    assert _child(_BROKER_TRY_LOCK, root / LOCK_FILE).stdout == "locked\n"


def test_a_lock_inherited_by_a_forked_child_is_not_released_by_it(tmp_path: Path) -> None:
    """A forked child inherits the lock's descriptor but holds no lock of its own: its attempts fail (the
    flock is the parent's) and releasing what it inherited does not unlock the parent's hold."""
    root = tmp_path / "logs"
    root.mkdir()
    lock = DirLock(root)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 0
            try:
                try:
                    DirLock(root)
                    code = 1
                except KafkaStorageError:
                    pass
                lock.release()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert _child(_BROKER_TRY_LOCK, root / LOCK_FILE).stdout == "refused\n"
        with pytest.raises(KafkaStorageError):
            DirLock(root)
    finally:
        lock.release()
    DirLock(root).release()


# --- defect 2: the clean-shutdown marker is removed by whoever opens for writing ----------------------------


# A child that opens the partition with plain Log(dir), appends until the log rolls and flushes, then dies
# with SIGKILL in the middle of writing the next batch: half of it reaches the new active segment, whose
# preallocated indexes hold no entry yet and so pass the checks of a load that trusts the marker.
_DIE_MID_WRITE = """
    import os, signal, sys
    from kafkalog.config.log_config import LogConfig
    from kafkalog.log import Log
    from kafkalog.record import MemoryRecords
    log = Log(sys.argv[1], LogConfig({"segment.bytes": 4096, "segment.index.bytes": 4096}))
    segments = log.number_of_segments
    while log.number_of_segments == segments:  # until a roll: the torn batch goes to a new segment
        assert log.log_end_offset < 1000
        start = log.log_end_offset
        log.append(MemoryRecords.with_records([(b"k%d" % o, b"v%d" % o, 1_700_000_000_000 + o)
                                               for o in range(start, start + 5)]))
    log.flush()
    print("flushed", log.log_end_offset, flush=True)
    real_pwrite = os.pwrite

    def torn(fd, data, offset):
        real_pwrite(fd, bytes(data)[: len(data) // 2], offset)
        os.kill(os.getpid(), signal.SIGKILL)

    os.pwrite = torn
    log.append(MemoryRecords.with_records([(b"torn", b"x" * 300, 1_700_000_000_000)]))
    print("not killed", flush=True)
"""


def test_a_writer_that_dies_after_a_clean_manager_shutdown_is_recovered(impl: ModuleType, tmp_path: Path) -> None:
    """Issue 15, defect 2: after a clean LogManager shutdown leaves ``.kafka_cleanshutdown``, a ``Log(dir)``
    process writes and dies mid-batch.  It removed the marker before loading, so the next opener recovers:
    the torn batch is cut, and records appended and flushed after it survive a later full recovery."""
    twin = "cython" if impl.IMPLEMENTATION == "cython" else "python"
    root = tmp_path / "logs"
    with LogManager(root, CONFIG) as manager:
        manager.get_or_create_log(TP).append(_records(0, 10))
    assert (root / CLEAN_SHUTDOWN_FILE).exists()

    child = subprocess.run([sys.executable, "-c", textwrap.dedent(_DIE_MID_WRITE), str(root / str(TP))],
                           capture_output=True, text=True, env=_env(twin), timeout=CHILD_TIMEOUT_S)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert child.stdout.startswith("flushed "), child.stdout
    flushed = int(child.stdout.split()[1])
    assert flushed > 10
    assert not (root / CLEAN_SHUTDOWN_FILE).exists()

    with LogManager(root, CONFIG) as manager:
        log = manager.get_log(TP)
        assert log.log_end_offset == flushed
        log.append(_records(flushed, 5))
        log.flush()
        expected = [r.as_tuple() for r in log.records()]
        assert [r[0] for r in expected] == list(range(flushed + 5))
    # A full recovery (from offset 0, as after a crash with no checkpoint) keeps every flushed record.
    (root / CLEAN_SHUTDOWN_FILE).unlink()
    with Log(root / str(TP), CONFIG, recovery_point=0) as recovered:
        assert [r.as_tuple() for r in recovered.records()] == expected


def test_a_standalone_writer_puts_the_marker_back_when_it_closes_cleanly(tmp_path: Path) -> None:
    """A ``Log(dir)`` that found the marker removes it while it writes and, closed cleanly (the last writable
    log of the dir in this process), puts it back, as a LogDirWriter does; one closed after an error (its
    handlers released) leaves it removed, so the next opener recovers."""
    root = tmp_path / "logs"
    with LogManager(root, CONFIG) as manager:
        manager.get_or_create_log(TP).append(_records(0, 3))
    marker = root / CLEAN_SHUTDOWN_FILE
    first = Log(root / "t-0", CONFIG)
    second = Log(root / "t-1", CONFIG)
    assert not marker.exists()
    assert first.had_clean_shutdown and second.had_clean_shutdown
    first.append(_records(3, 2))
    first.close()
    assert not marker.exists()
    second.close()
    assert marker.exists()

    log = Log(root / "t-0", CONFIG)
    assert log.had_clean_shutdown and not marker.exists()
    log.append(_records(5, 1))
    log.close_handlers()
    assert not marker.exists()
    with Log(root / "t-0", CONFIG) as reopened:
        assert not reopened.had_clean_shutdown
        assert [r.offset for r in reopened.records()] == list(range(6))
    assert not marker.exists()


@pytest.mark.parametrize("command", ["recover", "clean"])
def test_the_commands_take_the_marker_while_they_write_and_put_it_back(tmp_path: Path, command: str) -> None:
    """``kafkalog recover`` and ``kafkalog clean`` are writers of the log dir too: the marker is gone while
    they hold the partition open (a kill then makes the next opener recover), and back when they finish."""
    root = tmp_path / "logs"
    compacted = LogConfig({"segment.bytes": 4096, "segment.index.bytes": 4096, "cleanup.policy": "compact"})
    with LogManager(root, compacted) as manager:
        log = manager.get_or_create_log(TP)
        for start in range(0, 200, 10):
            log.append(MemoryRecords.with_records([(b"k%d" % (o % 7), b"v%d" % o) for o in range(start, start + 10)]))
    marker = root / CLEAN_SHUTDOWN_FILE
    seen: list[bool] = []
    real_close = Log.close

    def close(log: Log) -> None:
        seen.append(marker.exists())
        real_close(log)

    with mock.patch.object(Log, "close", close):
        # The log dir holds no KRaft metadata log to say the topic's policy: clean is told it.
        options = ["--config", "cleanup.policy=compact"] if command == "clean" else []
        status = main(["--no-progress", command, *options, str(root / str(TP))], stdout=io.StringIO(),
                      stderr=io.StringIO())
    assert status == 0
    assert seen and not any(seen)
    assert marker.exists()
