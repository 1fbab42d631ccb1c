"""Odd shapes of a log dir: a directory where a file belongs, a file that cannot be read (issue 15, defect 10).

Every error kafkalog raises is a :class:`~kafkalog.errors.KafkaLogError`: a directory named like an index, the
``.lock`` file or the clean-shutdown marker, a segment or a partition dir this process may not read, a
partition dir that is a file, must not escape as ``IsADirectoryError``, ``PermissionError`` or
``FileExistsError`` from deep inside the loader.  Each case gets a
:class:`~kafkalog.errors.KafkaStorageError` that names the path (and keeps the ``errno`` of the failure), from
``Log`` and from ``LogManager``, writable and read-only, and the files are left as they were.  A Kafka broker
fails the same way (its ``IOException`` takes the log dir offline).

The unreadable files are made so for the nobody user: as root (which reads any file) the opener runs in a
forked child that drops to uid 65534.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.checkpoint import RECOVERY_POINT_CHECKPOINT_FILE, OffsetCheckpoint
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import KafkaLogError, KafkaStorageError
from kafkalog.filenames import CLEAN_SHUTDOWN_FILE, LOCK_FILE
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import MemoryRecords
from kafkalog.topic import TopicPartition

TP = TopicPartition("t", 0)
CONFIG = LogConfig({"segment.bytes": 1024, "segment.index.bytes": 4096})
NOBODY = 65534


@pytest.fixture
def root() -> Iterator[Path]:
    """A log dir that the nobody user can reach (``tmp_path`` is private to root)."""
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(tempfile.gettempdir())
    top = Path(tempfile.mkdtemp(prefix="kafkalog-shapes-", dir=base))
    os.chmod(top, 0o755)
    try:
        yield top / "logs"
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _build(root: Path) -> list[str]:
    """``t-0`` over a few segments, shut down cleanly; the names of its segments' ``.log`` files."""
    with LogManager(root, CONFIG) as manager:
        log = manager.get_or_create_log(TP)
        while log.number_of_segments < 3:
            log.append(MemoryRecords.with_records([(b"k", b"v" * 50)]))
    return sorted(p.name for p in (root / str(TP)).glob("*.log"))


def _openers(root: Path) -> dict[str, Callable[[], object]]:
    partition = root / str(TP)
    return {
        "Log": lambda: Log(partition, CONFIG),
        "Log unclean": lambda: Log(partition, CONFIG, had_clean_shutdown=False),
        "Log read-only": lambda: Log(partition, read_only=True),
        "LogManager": lambda: LogManager(root, CONFIG),
        "LogManager read-only": lambda: LogManager(root, read_only=True),
    }


def _outcome(open_: Callable[[], object]) -> str:
    """``ok``, or the class of the error and whether it is kafkalog's, then its message."""
    try:
        opened = open_()
    except Exception as e:
        return f"{type(e).__name__} {isinstance(e, KafkaLogError)} {e}"
    close = getattr(opened, "shutdown", None) or opened.close
    close()
    return "ok"


def _snapshot(root: Path, writer: bool = False) -> dict[str, tuple[bool, bytes]]:
    """The log dir's files and their bytes; for a writer, without the marker, which a writer takes before it
    loads anything (as Kafka's ``loadLogs`` does) and does not put back when loading fails."""
    files = {}
    for path in sorted(root.rglob("*")):
        if path.name == LOCK_FILE or (writer and path.name == CLEAN_SHUTDOWN_FILE):
            continue
        files[str(path.relative_to(root))] = (path.is_dir(), b"" if path.is_dir() else path.read_bytes())
    return files


def _snapshot_of(snapshot: dict[str, tuple[bool, bytes]], writer: bool) -> dict[str, tuple[bool, bytes]]:
    return {name: file for name, file in snapshot.items() if not (writer and name == CLEAN_SHUTDOWN_FILE)}


def _assert_refused(outcome: str, path: Path) -> None:
    name, ours, message = outcome.split(" ", 2)
    assert ours == "True", outcome
    assert name in ("KafkaStorageError", "LogDirInUseError"), outcome
    assert str(path) in message, outcome


def _in_a_directory_place(path: Path) -> None:
    if path.exists():
        path.unlink()
    path.mkdir()
    (path / "inside").write_bytes(b"x")


@pytest.mark.parametrize("which", ["first .index", "last .index", "first .timeindex", "middle .log", "last .log",
                                   "orphan .index"])
def test_a_directory_named_like_a_segment_file(impl: ModuleType, root: Path, which: str) -> None:
    """A directory where a segment's ``.log``, ``.index`` or ``.timeindex`` belongs: every opener refuses the
    log with a KafkaStorageError naming it, and removes nothing (a directory named like a ``.log`` was
    skipped, and the indexes of its segment deleted as orphans, leaving the log to roll into it later)."""
    logs = _build(root)
    position, suffix = which.split(" ")
    base = {"first": logs[0], "middle": logs[1], "last": logs[-1], "orphan": "00000000000000099999.log"}[position]
    target = root / str(TP) / base.replace(".log", suffix)
    _in_a_directory_place(target)
    before = _snapshot(root)
    for label, open_ in sorted(_openers(root).items(), key=lambda item: "read-only" not in item[0]):
        outcome = _outcome(open_)
        _assert_refused(outcome, target)
        assert "not a regular file" in outcome, (label, outcome)
        writer = "read-only" not in label
        assert _snapshot(root, writer) == _snapshot_of(before, writer), label


def test_a_directory_in_place_of_the_lock_or_the_marker(root: Path) -> None:
    """``.lock`` or ``.kafka_cleanshutdown`` a directory: the writers refuse with the path; the readers, which
    touch neither, open the log dir."""
    _build(root)
    for name in (LOCK_FILE, CLEAN_SHUTDOWN_FILE):
        target = root / name
        kept = target.with_name(name + ".kept")
        if target.exists():
            target.rename(kept)
        _in_a_directory_place(target)
        for label, open_ in _openers(root).items():
            outcome = _outcome(open_)
            if "read-only" in label:
                assert outcome == "ok", (name, label, outcome)
            else:
                _assert_refused(outcome, target)
        shutil.rmtree(target)
        if kept.exists():
            kept.rename(target)


def test_a_file_in_place_of_the_partition_dir(root: Path) -> None:
    """``Log(dir)`` where ``dir`` is a file: a KafkaStorageError naming it, the file untouched."""
    _build(root)
    partition = root / "u-0"
    partition.write_bytes(b"not a partition")
    for read_only in (False, True):
        _assert_refused(_outcome(lambda: Log(partition, CONFIG, read_only=read_only)), partition)  # noqa: B023
    assert partition.read_bytes() == b"not a partition"


def _as_nobody(open_: Callable[[], object]) -> str:
    """:func:`_outcome` of ``open_`` as a user without root's right to read any file."""
    if os.geteuid() != 0:
        return _outcome(open_)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            try:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                text = _outcome(open_)
            except BaseException as e:  # reported to the parent
                text = f"child failed: {type(e).__name__} {e}"
            os.write(write, text.encode("utf-8", "replace"))
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def _give_to_nobody(root: Path) -> None:
    if os.geteuid() != 0:
        return
    for path in [root, *root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)


@pytest.mark.parametrize("which", ["segment .log", "segment .index", "segment .timeindex", "partition dir",
                                   "marker", "lock"])
def test_a_file_that_cannot_be_read(impl: ModuleType, root: Path, which: str) -> None:
    """A segment file, the partition dir or the lock that this user may not read (mode 000): a
    KafkaStorageError naming it, from every opener that needs it (a reader needs no lock), and nothing
    changed.  An unreadable marker is no obstacle: a writer removes it without reading it, as Kafka does."""
    logs = _build(root)
    partition = root / str(TP)
    target = {"segment .log": partition / logs[0], "segment .index": partition / logs[0].replace(".log", ".index"),
              "segment .timeindex": partition / logs[0].replace(".log", ".timeindex"), "partition dir": partition,
              "marker": root / CLEAN_SHUTDOWN_FILE, "lock": root / LOCK_FILE}[which]
    target.touch()
    _give_to_nobody(root)
    os.chmod(target, 0)
    try:
        # Checked: every file but the target, and the marker, which a writer takes before it loads.
        before = {p: p.stat().st_mtime_ns for p in root.rglob("*")
                  if p != target and p.parent != target and p.name != CLEAN_SHUTDOWN_FILE}
        for label, open_ in _openers(root).items():
            outcome = _as_nobody(open_)
            if which == "marker" or ("read-only" in label and which == "lock"):
                assert outcome == "ok", (label, outcome)
            else:
                _assert_refused(outcome, target)
                assert {p: p.stat().st_mtime_ns for p in before} == before, label
    finally:
        os.chmod(target, 0o755 if target.is_dir() else 0o644)


def test_an_unreadable_checkpoint_is_reset_as_kafka_does(root: Path) -> None:
    """An unreadable ``recovery-point-offset-checkpoint``: the manager logs it and recovers from offset 0, as
    Kafka's ``loadLogs`` does; the checkpoint reader itself raises a KafkaStorageError with the path."""
    _build(root)
    checkpoint = root / RECOVERY_POINT_CHECKPOINT_FILE
    _give_to_nobody(root)
    os.chmod(checkpoint, 0)
    try:
        outcome = _as_nobody(lambda: OffsetCheckpoint(checkpoint).read())
        _assert_refused(outcome, checkpoint)
        assert _as_nobody(lambda: LogManager(root, CONFIG, read_only=True)) == "ok"
    finally:
        os.chmod(checkpoint, 0o644)


def test_a_roll_in_a_partition_dir_that_cannot_be_written(impl: ModuleType, root: Path) -> None:
    """A roll whose new segment cannot be created (the partition dir made read-only under an open log): a
    KafkaStorageError naming the file, and the log dir goes offline (Kafka: ``maybeHandleIOException``): the
    log refuses its files from then on, closing it releases them and raises, and the log opened again goes on."""
    _build(root)
    partition = root / str(TP)
    new_segment = partition / f"{_end_offset(root):020d}.log"
    _give_to_nobody(root)

    def roll() -> Log:
        log = Log(partition, CONFIG)
        try:
            end = log.log_end_offset
            os.chmod(partition, 0o555)
            try:
                log.roll()
            finally:
                os.chmod(partition, 0o755)
        except BaseException as failure:
            assert log.log_end_offset == end and log.active_segment.base_offset < end
            assert log.is_log_dir_offline
            for refused in (lambda: log.append(MemoryRecords.with_records([(b"k", b"after")])), log.close):
                try:
                    refused()
                except KafkaStorageError as e:
                    assert "already offline due to a previous IO exception" in str(e), e
                else:
                    raise AssertionError("a log whose log dir is offline wrote to it") from failure
            assert log.local_log.is_memory_mapped_buffer_closed
            with Log(partition, CONFIG) as reopened:
                reopened.append(MemoryRecords.with_records([(b"k", b"after")]))
            raise
        return log

    _assert_refused(_as_nobody(roll), new_segment)


def _end_offset(root: Path) -> int:
    with Log(root / str(TP), read_only=True) as log:
        return log.log_end_offset
