"""Small file-system helpers the log and the log manager share."""

from __future__ import annotations

import errno
import fcntl
import logging
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

from .errors import KafkaStorageError, LogDirInUseError
from .filenames import CLEAN_SHUTDOWN_FILE, LOCK_FILE
from .topic import CLUSTER_METADATA_TOPIC_NAME, InvalidPartitionDirError, parse_topic_partition_name

__all__ = [
    "DirLock",
    "LogDirHold",
    "allocate",
    "clean_shutdown_marker_present",
    "data_regions",
    "describe_file_kind",
    "fsync_dir",
    "hold_log_dir",
    "interrupts_deferred",
    "open_regular",
    "raise_open_file_limit",
    "read_regular",
    "storage_error",
    "work_directory",
]

logger = logging.getLogger(__name__)


def storage_error(error: OSError, doing: str) -> KafkaStorageError:
    """``error``, a foreign ``OSError`` (``IsADirectoryError``, ``PermissionError``, a full disk...), as the
    :class:`KafkaStorageError` of ``doing`` (Kafka: ``maybeHandleIOException`` wrapping an ``IOException`` in a
    ``KafkaStorageException``), keeping its ``errno`` and ``filename``: the message names the file, and a full
    disk (or quota) is said in words, so a reader knows to make room.  A :class:`KafkaStorageError` is returned
    as it is; the caller re-raises the other kafkalog errors."""
    if isinstance(error, KafkaStorageError):
        return error
    if error.errno is None:
        return KafkaStorageError(f"{doing}: {error}")
    reason = error.strerror or os.strerror(error.errno)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        reason += " (the disk or the quota is full: free space, then retry)"
    if error.filename is None:
        return KafkaStorageError(error.errno, f"{doing}: {reason}")
    return KafkaStorageError(error.errno, f"{doing}: {reason}", error.filename)


def _kind_of_mode(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a regular file" if stat.S_ISREG(mode) else f"a file of mode {stat.filemode(mode)}"


def data_regions(fd: int, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The ``[from, to)`` pieces of ``[start, end)`` of a file that hold data, in order: its holes (never
    written, never allocated: they read as zeros) are stepped over with ``SEEK_DATA`` / ``SEEK_HOLE``, so a
    sparse preallocated file costs a seek or two.  Where the file system cannot tell, the whole range is one
    piece.  A hole to the end of the file ends the iteration."""
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    position = start
    while position < end:
        if seek_data is None or seek_hole is None:
            yield position, end
            return
        try:
            first = os.lseek(fd, position, seek_data)
            last = min(os.lseek(fd, first, seek_hole), end)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return  # no data from position to the end of the file
            yield position, end  # the file system cannot tell: all of it, as data
            return
        if first >= end:
            return
        yield first, last
        position = last


def describe_file_kind(path: str | os.PathLike[str]) -> str:
    """What ``path`` is, for a message: "a directory", "a FIFO", "a socket", "a character device", "a symbolic
    link to nothing", "a regular file"."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a symbolic link to nothing" if os.path.islink(path) else "missing"
    except OSError as e:
        return f"not to be looked at ({e.strerror})"
    return _kind_of_mode(mode)


def _not_regular(path: str | os.PathLike[str], mode: int) -> KafkaStorageError:
    return KafkaStorageError(f"{path} is {_kind_of_mode(mode)}, not a regular file: kafkalog reads and writes only "
                             "regular files")


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
        raise storage_error(e, f"Error while allocating {length} bytes at {offset} for {what} {path}") from e


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


#: Serialises taking and releasing dir locks in this process (re-entrant: a shared hold takes a lock inside it).
_registry_lock = threading.RLock()
#: The lock files this process holds, by (st_dev, st_ino), and who holds each (Java keeps the same table,
#: ``FileLockTable``, and its ``tryLock`` throws ``OverlappingFileLockException`` from it).  A second attempt
#: is refused from this table before it opens the file: closing *any* descriptor of a file drops every POSIX
#: record lock the process has on it, so opening the file and closing it again on failure would let a broker
#: in.
_held: dict[tuple[int, int], DirLock] = {}


def _forget_held_locks_in_child() -> None:
    """After ``fork``: the child holds no record lock (those are not inherited) and shares the parent's
    flocks, so it must neither trust nor release the parent's entries."""
    global _registry_lock
    _registry_lock = threading.RLock()
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held_locks_in_child)


def _file_key(path: Path) -> tuple[int, int] | None:
    """The identity of the file at ``path`` (``None`` when there is none), found without opening it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise storage_error(e, f"Cannot check the lock file of {path.parent}") from e
    return st.st_dev, st.st_ino


def _lock_owner(fd: int) -> int | None:
    """The process holding a record lock, or else an flock, on the file of ``fd``, as Linux's ``/proc/locks``
    reports it; ``None`` where that is not known."""
    st = os.fstat(fd)
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    owners: dict[str, int] = {}
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            for line in table:
                fields = line.split()
                # "1: POSIX  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"; a waiter's line has "->" after the number
                if len(fields) >= 6 and fields[1] != "->" and fields[5] == device and fields[4].isdigit():
                    owners.setdefault(fields[1], int(fields[4]))
    except OSError:
        return None
    return owners.get("POSIX", owners.get("FLOCK"))


def _describe_process(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read(4096).replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return f"process {pid}"
    if len(command) > 160:
        command = command[:157] + "..."
    return f"process {pid} ({command})" if command else f"process {pid}"


def clean_shutdown_marker_present(directory: str | os.PathLike[str]) -> bool:
    """Whether the log dir ``directory`` holds the clean-shutdown marker (Kafka:
    ``CleanShutdownFileHandler.exists``).

    Raises:
        KafkaStorageError: ``.kafka_cleanshutdown`` is there but is no regular file (a directory, a FIFO), or
            cannot be looked at: neither trusted nor ignored, since a writer would go on to remove it.
    """
    path = Path(directory) / CLEAN_SHUTDOWN_FILE
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as e:
        raise storage_error(e, f"Cannot check the clean shutdown marker of {path.parent}") from e
    if not stat.S_ISREG(st.st_mode):
        raise KafkaStorageError(f"The clean shutdown marker {path} is not a regular file ({describe_file_kind(path)}):"
                                " move it away to open the log dir for writing")
    return True


class DirLock:
    """The ``.lock`` file of a log dir, held exclusively (Kafka: ``FileLock`` in ``LogManager.lockLogDirs``).

    Two locks are taken on it: a POSIX record lock (``lockf``), which is what a Kafka broker's
    ``FileChannel.tryLock`` takes on Linux, so a running broker and kafkalog exclude each other; and an
    ``flock``, which, unlike a record lock, also excludes a second holder in the same process.  ``holder`` says
    who holds it (``"a LogManager"``), for the error a second writer gets.  A writable ``Log`` opened in this
    process without a lock while this one is held opens under it, unless ``admit_logs`` is false: a
    LogManager or a LogDirWriter opens its logs itself, and a log opened behind its back would escape its
    checkpoints and its clean-shutdown marker.

    A second attempt in this process is refused from a table of the lock files the process holds, before the
    file is opened: a record lock belongs to the process, and closing any descriptor of the file, as a failed
    attempt must, would drop it.  A forked child holds none of its parent's locks, and releasing one it
    inherited does not unlock the parent's.

    The lock also keeps the log dir's writers' books (the :class:`~kafkalog.log.unified_log.Log` objects opened for
    writing under it, see :func:`hold_log_dir`) and the clean-shutdown marker: whoever opens the log dir for
    writing removes the marker before loading (:meth:`take_clean_shutdown_marker`), as Kafka's
    ``LogManager.loadLogs`` does, and a writer whose logs all closed cleanly may put it back
    (:meth:`restore_clean_shutdown_marker`).

    Raises:
        LogDirInUseError: another holder, in this process or another, has the lock; the message names the dir
            and the holder (in another process: its pid and command line, from ``/proc/locks``).
        KafkaStorageError: the lock file cannot be opened or locked (a directory in its place, no permission,
            a missing log dir).
    """

    def __init__(self, directory: str | os.PathLike[str], holder: str = "a kafkalog writer", *,
                 admit_logs: bool = True) -> None:
        self.directory = Path(os.path.realpath(directory))
        self.path = self.directory / LOCK_FILE
        self.holder = holder
        self.admit_logs = admit_logs
        self._pid = os.getpid()
        self._file: BinaryIO | None = None
        self._key: tuple[int, int] | None = None
        # Whether the marker was there when taken (None: not taken yet) and its bytes, to put back.
        self._marker: bool | None = None
        self._marker_content = b""
        # The partition dirs open for writing under this lock, those closed after an error since, and every one
        # opened (so loaded, and recovered if it had to be) since the marker was taken.
        self._writers: set[Path] = set()
        self._unclean: set[Path] = set()
        self._loaded: set[Path] = set()
        # A hold shared by the standalone writable logs of this process (released with its last writer).
        self._shared = False
        with _registry_lock:
            self._acquire()

    def _in_use(self, who: str, pid: int | None, *, here: bool) -> LogDirInUseError:
        """Kafka's message for a held lock, which cannot tell whether the holder is another process or a thread
        of its own, made to say which it is: ``here`` when it is a holder in this process."""
        where = "a thread of this process" if here else "another process"
        return LogDirInUseError(
            f"Failed to acquire lock on file {LOCK_FILE} in {self.directory}. A Kafka instance in {where} is "
            f"using this directory: it is held by {who}.", self.path, who, pid)

    def _acquire(self) -> None:
        key = _file_key(self.path)
        other = _held.get(key) if key is not None else None
        if other is not None:
            raise self._in_use(f"{other.describe()} in this process ({os.getpid()})", os.getpid(), here=True)
        try:
            file = open(self.path, "a+b")  # noqa: SIM115 - held until release
        except OSError as e:
            raise storage_error(e, f"Cannot open the lock file of log dir {self.directory}") from e
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            owner = _lock_owner(file.fileno()) if e.errno in (errno.EAGAIN, errno.EACCES) else None
            # This process holds no lock on the file (the table says so), so closing it drops none.
            file.close()
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise storage_error(e, f"Cannot lock the lock file of log dir {self.directory}") from e
            raise self._in_use(_describe_process(owner) if owner is not None else "a process /proc/locks does not name",
                               owner, here=False) from None
        st = os.fstat(file.fileno())
        self._key = (st.st_dev, st.st_ino)
        self._file = file
        _held[self._key] = self

    @classmethod
    def _for_standalone_log(cls, directory: Path) -> DirLock:
        """The lock a writable log opened without one holds ``directory`` with: the lock this process holds
        on it if that admits logs, else a lock the standalone writable logs of this process share, taken if
        no one in this process holds the directory."""
        with _registry_lock:
            key = _file_key(directory / LOCK_FILE)
            held = _held.get(key) if key is not None else None
            if held is not None and (held._shared or held.admit_logs):
                return held
            lock = cls(directory, holder="a writable Log")  # refused when held here by a LogManager
            lock._shared = True
            return lock

    @property
    def held(self) -> bool:
        """Whether this lock is still held (not released, and by this process)."""
        return self._file is not None and self._pid == os.getpid()

    def describe(self) -> str:
        """Who holds the lock, for messages: the holder, and the logs open for writing under a shared hold."""
        if self._shared and self._writers:
            return f"{self.holder} of {', '.join(sorted(p.name for p in self._writers))}"
        return self.holder

    def covers(self, log_dir: str | os.PathLike[str]) -> bool:
        """Whether this is the lock of the log dir ``log_dir``."""
        return self.held and os.path.realpath(log_dir) == str(self.directory)

    def release(self) -> None:
        """Unlock and close the file; a second call does nothing.  In a forked child the lock (the parent's)
        is not unlocked: the child only closes its copy of the descriptor."""
        with _registry_lock:
            file, self._file = self._file, None
            if file is None:
                return
            try:
                if self._pid == os.getpid():
                    if self._key is not None and _held.get(self._key) is self:
                        del _held[self._key]
                    fcntl.lockf(file.fileno(), fcntl.LOCK_UN)
                    fcntl.flock(file.fileno(), fcntl.LOCK_UN)
            finally:
                file.close()

    def __enter__(self) -> DirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"DirLock({str(self.directory)!r}, holder={self.holder!r}{'' if self.held else ', released'})"

    # -- the clean-shutdown marker --------------------------------------------------------------------------

    def take_clean_shutdown_marker(self) -> bool:
        """Remove the log dir's clean-shutdown marker, durably, and say whether it was there (Kafka: the
        start of ``LogManager.loadLogs``: a crash from here on is an unclean shutdown).  The logs opened for
        writing under this lock later are told what the last call found (the file is gone by then).

        Raises:
            KafkaStorageError: the marker is no regular file, or cannot be read or removed.
        """
        with _registry_lock:
            marker = self.directory / CLEAN_SHUTDOWN_FILE
            present = clean_shutdown_marker_present(self.directory)
            if present:
                try:
                    with open(marker, "rb") as f:
                        self._marker_content = f.read(4096)  # Kafka 3.7+: {"version":0,"brokerEpoch":N}
                except OSError as e:  # kept for putting back only: Kafka's loadLogs does not read it either
                    logger.debug("Could not read %s: %s", marker, e)
                    self._marker_content = b""
                try:
                    marker.unlink()
                except OSError as e:
                    raise storage_error(e, f"Cannot remove the clean shutdown marker of {self.directory}") from e
                fsync_dir(self.directory)
            self._marker = present
            self._loaded.clear()
            return present

    def restore_clean_shutdown_marker(self) -> bool:
        """Write the marker back when no log is open for writing under this lock and none was closed after an
        error (whose next open must recover), and either :meth:`take_clean_shutdown_marker` found it (its bytes
        are put back) or every partition dir of the log dir was opened for writing under this lock since, so
        loaded and recovered if it had to be: Kafka 3.8's rule in ``LogManager.shutdown`` (``hadCleanShutdown``
        or ``loadLogsCompleted``), which lets a lone :class:`~kafkalog.log.unified_log.Log` closed cleanly reopen
        without
        recovery and never vouches for a partition nobody recovered.  Returns whether it wrote the marker.

        Raises:
            KafkaStorageError: the marker could not be written.
        """
        with _registry_lock:
            if self._marker is None or self._writers or self._unclean or not self.held:
                return False
            if not self._marker and not self._every_partition_loaded():
                return False
            self._write_marker()
            return True

    def put_back_clean_shutdown_marker(self) -> bool:
        """Write back, byte for byte, the marker :meth:`take_clean_shutdown_marker` removed, whatever the
        writers' books say; returns whether it did (not when the marker was not there to take, or was put back
        already).  For a command whose writer failed part way and that made sure itself that the next open
        recovers whatever the failure left half done (``kafkalog recover``, which removes the offset index of
        each segment it changed: every open, clean or not, recovers a segment without one); the other
        partitions of the log dir, which nobody touched, keep the clean start the broker left them.

        Raises:
            KafkaStorageError: the marker could not be written.
        """
        with _registry_lock:
            if not self._marker or not self.held:
                return False
            self._write_marker()
            return True

    def _write_marker(self) -> None:
        marker = self.directory / CLEAN_SHUTDOWN_FILE
        try:
            with open(marker, "wb") as f:
                f.write(self._marker_content)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise storage_error(e, f"Cannot write the clean shutdown marker of {self.directory}") from e
        fsync_dir(self.directory)
        self._marker = None  # a later writer under this lock takes it again

    def _every_partition_loaded(self) -> bool:
        """Whether every partition dir of the log dir (a directory named as one, as a LogManager loads them;
        the KRaft metadata log is the Raft layer's) was opened under this lock since the marker was taken."""
        try:
            entries = [entry for entry in self.directory.iterdir() if entry.is_dir()]
        except OSError as e:
            logger.warning("Cannot list %s (%s): not writing its clean shutdown marker", self.directory, e)
            return False
        for entry in entries:
            try:
                topic = parse_topic_partition_name(entry).topic
            except InvalidPartitionDirError:
                continue
            if topic != CLUSTER_METADATA_TOPIC_NAME and entry not in self._loaded:
                return False
        return True

    # -- the writers' books (see hold_log_dir) --------------------------------------------------------------

    def _open_writer(self, partition_dir: Path) -> bool:
        with _registry_lock:
            if not self.held:
                raise KafkaStorageError(f"The lock of {self.directory} was released: {partition_dir} cannot be "
                                        "opened for writing under it")
            if partition_dir in self._writers:
                raise LogDirInUseError(f"The log {partition_dir} is already open for writing in this process "
                                       f"({os.getpid()}): close it first", self.path, self.describe(), os.getpid())
            marker = self._marker if self._marker is not None else self.take_clean_shutdown_marker()
            had_clean_shutdown = marker and partition_dir not in self._unclean
            self._writers.add(partition_dir)
            self._loaded.add(partition_dir)
            return had_clean_shutdown

    def _close_writer(self, partition_dir: Path, clean: bool) -> None:
        with _registry_lock:
            self._writers.discard(partition_dir)
            if clean:
                self._unclean.discard(partition_dir)
            else:
                self._unclean.add(partition_dir)
            if self._shared and not self._writers:
                try:
                    self.restore_clean_shutdown_marker()
                except KafkaStorageError as e:
                    logger.warning("%s: the next open of %s recovers its logs", e, self.directory)
                finally:
                    self.release()

    def _move_writer(self, old: Path, new: Path) -> None:
        with _registry_lock:
            if old in self._writers:
                self._writers.discard(old)
                self._writers.add(new)
            if old in self._unclean:
                self._unclean.discard(old)
                self._unclean.add(new)
            if old in self._loaded:
                self._loaded.discard(old)
                self._loaded.add(new)


class LogDirHold:
    """What a writable :class:`~kafkalog.log.unified_log.Log` holds of its log dir while it is open: a place in the
    books
    of the log dir's :class:`DirLock` (see :func:`hold_log_dir`)."""

    def __init__(self, lock: DirLock, partition_dir: Path, had_clean_shutdown: bool) -> None:
        self.lock = lock
        self.partition_dir = partition_dir
        #: Whether the log dir's marker said the last shutdown was clean (and this log was not closed after an
        #: error since, in this process).
        self.had_clean_shutdown = had_clean_shutdown
        self._released = False

    def moved(self, new_dir: str | os.PathLike[str]) -> None:
        """The partition dir was renamed, in the same log dir."""
        new = self.lock.directory / Path(new_dir).name
        self.lock._move_writer(self.partition_dir, new)
        self.partition_dir = new

    def release(self, clean: bool) -> None:
        """Leave the books: ``clean`` when the log was flushed and closed (or deleted); otherwise its next open
        in this process recovers it.  The last writer of a shared hold puts the marker back if it may, and
        unlocks.  A second call does nothing."""
        if self._released:
            return
        self._released = True
        self.lock._close_writer(self.partition_dir, clean)


def hold_log_dir(partition_dir: str | os.PathLike[str], dir_lock: DirLock | None = None) -> LogDirHold:
    """Hold the log dir of ``partition_dir`` (its parent) for a :class:`~kafkalog.log.unified_log.Log` opened for
    writing.

    ``dir_lock`` is the lock of that log dir that the caller holds (a LogManager's, a LogDirWriter's, the
    ``recover`` command's); without one, the log opens under the lock this process holds on the log dir if
    that admits logs (a plain :class:`DirLock`), and otherwise the standalone writable logs of this process
    share a lock of their own, taken with the first and released with the last, which removes the
    clean-shutdown marker before the first loads and puts it back when the last closes, if every one closed
    cleanly.  The log dir is created if
    missing.  A partition can be open for writing once at a time.

    Raises:
        LogDirInUseError: another writer holds the log dir (another process, a LogManager of this one), or
            the partition is already open for writing in this process.
        KafkaStorageError: the log dir cannot be created or locked, or ``dir_lock`` is not its lock.
    """
    path = Path(partition_dir)
    if dir_lock is None:
        try:
            path.absolute().parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise storage_error(e, f"Cannot create the log dir of {path}") from e
    log_dir = Path(os.path.realpath(path.absolute().parent))
    key = log_dir / path.absolute().name
    if dir_lock is None:
        lock = DirLock._for_standalone_log(log_dir)
    else:
        if not dir_lock.covers(log_dir):
            raise KafkaStorageError(f"{dir_lock!r} is not the held lock of {log_dir}, the log dir of {path}")
        lock = dir_lock
    try:
        had_clean_shutdown = lock._open_writer(key)
    except BaseException:
        if lock._shared and not lock._writers:
            lock.release()
        raise
    return LogDirHold(lock, key, had_clean_shutdown)


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
