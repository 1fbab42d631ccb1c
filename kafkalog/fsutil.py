"""Small file-system helpers the log and the log manager share."""

from __future__ import annotations

import fcntl
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import BinaryIO

from .checkpoint import LOCK_FILE
from .errors import KafkaStorageError

__all__ = ["DirLock", "fsync_dir", "interrupts_deferred", "raise_open_file_limit", "work_directory"]


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory, so that new files and renames in it survive a crash (Kafka: ``Utils.flushDir``).

    Where a platform cannot open or sync a directory this does nothing, as Kafka's does.
    """
    try:
        fd = os.open(Path(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def raise_open_file_limit() -> None:
    """Raise the soft limit on open files to the hard limit.

    Every segment keeps its log file open, as a broker's does, and the usual default soft limit (1024) is
    smaller than a broker's logs need; brokers are run with a raised limit for the same reason.
    """
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard or hard == resource.RLIM_INFINITY:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass


class DirLock:
    """The ``.lock`` file of a log dir, held exclusively (Kafka: ``FileLock`` in ``LogManager.lockLogDirs``).

    Two locks are taken on it: a POSIX record lock (``lockf``), which is what a Kafka broker's
    ``FileChannel.tryLock`` takes on Linux, so a running broker and kafkalog exclude each other; and an
    ``flock``, which, unlike a record lock, also excludes a second holder in the same process.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / LOCK_FILE
        self._file: BinaryIO | None = open(self.path, "a+b")  # noqa: SIM115 - held until release
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            self._file = None
            raise KafkaStorageError(
                f"Failed to acquire lock on file {LOCK_FILE} in {Path(directory)}. A Kafka instance in another "
                "process or thread is using this directory.") from None

    def release(self) -> None:
        if self._file is None:
            return
        try:
            fcntl.lockf(self._file.fileno(), fcntl.LOCK_UN)
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
        finally:
            self._file.close()
            self._file = None

    def __enter__(self) -> DirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) that arrives inside the block until the block ends, then raise it.

    For steps that must not stop halfway: a segment's index rebuild, a segment swap.  Only the main
    thread receives signals, so elsewhere (and where the handler is not Python's own) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    received: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if received:
        raise KeyboardInterrupt


@contextmanager
def work_directory(path: str | os.PathLike[str] | None, prefix: str) -> Iterator[Path]:
    """``path``, made if missing and kept afterwards; or, for ``None``, a new temporary directory named
    ``prefix...`` that is removed with everything in it on exit (the demos' ``--dir``)."""
    if path is not None:
        Path(path).mkdir(parents=True, exist_ok=True)
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)
