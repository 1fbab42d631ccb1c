"""Small file-system helpers the log and the log manager share."""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import BinaryIO

from .checkpoint import LOCK_FILE
from .errors import KafkaStorageError

__all__ = [
    "DirLock",
    "allocate",
    "fsync_dir",
    "interrupts_deferred",
    "open_regular",
    "raise_open_file_limit",
    "read_regular",
    "storage_error",
    "work_directory",
]

_FILE_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def _not_regular(path: str | os.PathLike[str], mode: int) -> KafkaStorageError:
    kind = next((name for test, name in _FILE_KINDS if test(mode)), f"a file of type {stat.S_IFMT(mode):o}")
    return KafkaStorageError(f"{path} is {kind}, not a regular file: kafkalog reads and writes only regular files")


def open_regular(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """``os.open(path, flags, mode)`` for a log's own files: never blocks, and opens regular files only.

    A FIFO named like a segment would block an ``open`` for reading until a writer came.  So the file is
    opened with ``O_NONBLOCK`` (an open of a FIFO then returns at once) and ``O_NOCTTY``, its type is
    checked on the descriptor (``fstat``), and ``O_NONBLOCK`` is cleared again before the descriptor is
    returned.  An open the system refuses (a socket cannot be opened; a directory cannot be opened for
    writing) is checked by name, to say what the file is.  A missing file raises ``FileNotFoundError`` as
    ``os.open`` does (unless ``flags`` create it).

    Raises:
        KafkaStorageError: the path is a FIFO, socket, device or directory, naming it and its type.
    """
    nonblock = getattr(os, "O_NONBLOCK", 0)
    extra = nonblock | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | extra, mode)
    except FileNotFoundError:
        raise
    except OSError as e:
        try:
            st = os.stat(path)
        except OSError:
            raise e from None
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode) from e
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode)
        if nonblock:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file, opened as :func:`open_regular` opens it (never blocking on a FIFO).

    Raises:
        KafkaStorageError: the path is not a regular file.
        FileNotFoundError: it does not exist.
    """
    fd = open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def storage_error(what: str, path: str | os.PathLike[str], error: OSError) -> KafkaStorageError:
    """A :class:`KafkaStorageError` for ``error``, raised while doing ``what`` to ``path``; a full disk
    (or quota) is said in words, so a reader knows to make room."""
    reason = os.strerror(error.errno) if error.errno is not None else str(error)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        reason += " (the disk or the quota is full: free space, then retry)"
    return KafkaStorageError(f"Error while {what} {path}: {reason}")


def allocate(fd: int, offset: int, length: int, path: str | os.PathLike[str], what: str) -> None:
    """Give ``[offset, offset + length)`` of the file blocks of its own (``posix_fallocate``), never
    changing a byte of it nor growing it past its end.

    A page of a sparse file that a map touches must have a block behind it: writing it through the map
    on a full disk, or even reading it on a full tmpfs, kills the process with SIGBUS.  Allocated first,
    the page is safe, and a full disk is this call's error instead.  Where the platform has no
    ``posix_fallocate`` nothing is done.

    Raises:
        KafkaStorageError: the blocks could not be had (a full disk: ENOSPC), naming ``path``.
    """
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is None or length <= 0:
        return
    try:
        fallocate(fd, offset, length)
    except OSError as e:
        raise storage_error(f"allocating {length} bytes at {offset} for {what}", path, e) from e


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
