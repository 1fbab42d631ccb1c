"""FileChannel: the open ``.log`` file that a :class:`~kafkalog.file_message_set.FileMessageSet` and its slices
share.

Kafka's ``FileRecords`` (``clients/src/main/java/org/apache/kafka/common/record/FileRecords.java``, 3.8.0; in
0.10.1.1 ``FileMessageSet``) holds a ``java.nio.channels.FileChannel`` and hands the same channel to every
slice it cuts; the JVM's channel does positional reads and writes, ``force``, ``truncate`` and
``transferTo``, and stays usable by a read already under way when another thread closes it.  This class is
that channel for kafkalog, and adds what Python's file objects have not got: the read-only mmap the scan
kernels walk in a writable set (lent to one kernel call at a time under :attr:`FileChannel.lock`, never
kept as a view: the mmap rule of the design), the refusal of files that are not regular files, and a count
of the calls using the descriptor, so a close never pulls it from under a read.

Invariants: the map, when there is one, covers no more than the file's bytes (it is replaced when the file
grows and dropped before it is truncated); a read-only channel never maps its file, and never writes,
truncates or renames it.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from .errors import IllegalStateError, KafkaStorageError
from .fsutil import data_regions, open_regular, storage_error

__all__ = ["FileChannel"]

#: The most bytes :meth:`FileChannel.zeros_between` reads at a time.
ZERO_CHECK_READ_BYTES = 1 << 20


class FileChannel:
    """The open ``.log`` file that a set and its slices share (Kafka: the ``FileChannel``).

    It owns the file descriptor, the read-only mmap the scan kernels walk, and the lock that orders map
    replacement against kernel calls.

    Whether the file is mapped at all (:attr:`mappable`): only when this process owns it (``writable``:
    the writer holds its log dir's lock, and every truncation goes through this channel, under its lock)
    and the file has no holes.  A read-only channel never maps: a writer in another process may cut the
    file at any moment, and a kernel that touched a mapped page past the new end would kill the process
    with SIGBUS, so its scans read the bytes with ``pread``
    (:meth:`~kafkalog.file_message_set.FileMessageSet.scan`), and a file cut under them reads shorter.  A
    sparse file (preallocated, or its preallocated tail after a crash) is not mapped either: on a full
    tmpfs even reading a hole through a map is a SIGBUS.

    The descriptor outlives :meth:`close` while a call is using it: every call that uses it counts itself
    in and out (:meth:`_acquire`), and the descriptor is closed by the last one out.  So a read that races
    the deletion of its segment completes on the file it started on, or, starting after the close, fails
    with :class:`IllegalStateError`; it never uses a closed descriptor, nor one the number of which was
    given to another file meanwhile.
    """

    def __init__(self, path: Path, writable: bool, *, _fd: int | None = None) -> None:
        self.path = path
        self.writable = writable
        self.lock = threading.RLock()
        self._map: mmap.mmap | None = None
        # The descriptor's users and the close that waits for them (_acquire / _release).
        self._fd_lock = threading.Lock()
        self._users = 0
        self._closing_fd: int | None = None
        self.fd: int | None = _fd
        if _fd is None:
            flags = os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY
            try:
                self.fd = open_regular(path, flags)
            except OSError as e:
                if isinstance(e, (FileNotFoundError, KafkaStorageError)):
                    raise
                raise storage_error(e, f"Error while opening {path}") from e
        #: Whether scans may walk a map of the file rather than read it (see the class docstring).
        self.mappable = writable and not self._has_holes()

    @classmethod
    def empty(cls, path: Path) -> FileChannel:
        """A read-only channel of no bytes, named ``path``, with no file of the file system behind it: an
        anonymous memory file (``memfd_create``), or where the platform has none an unnamed temporary file;
        either is a regular file of size 0 that nothing else can write."""
        memfd_create = getattr(os, "memfd_create", None)
        if memfd_create is not None:
            fd = memfd_create("kafkalog-empty", getattr(os, "MFD_CLOEXEC", 0))
        else:
            with tempfile.TemporaryFile() as f:
                fd = os.dup(f.fileno())
        return cls(path, writable=False, _fd=fd)

    def _has_holes(self) -> bool:
        """Whether the file has a hole before its end (``SEEK_HOLE``; never where the platform cannot tell)."""
        seek_hole = getattr(os, "SEEK_HOLE", None)
        fd = self.fd
        if seek_hole is None or fd is None:
            return False
        try:
            return os.lseek(fd, 0, seek_hole) < os.fstat(fd).st_size
        except OSError:
            return False

    def zeros_between(self, start: int, end: int) -> bool:
        """Whether every byte of ``[start, end)`` is zero: holes are stepped over
        (:func:`~kafkalog.fsutil.data_regions`) and the data between them read a piece at a time, so a sparse
        preallocated tail costs nothing to check."""
        fd = self._acquire()
        try:
            for position, stop in data_regions(fd, start, end):
                while position < stop:
                    piece = os.pread(fd, min(ZERO_CHECK_READ_BYTES, stop - position), position)
                    if not piece:
                        return True  # the file ends (cut by a writer) before ``end``
                    if piece.count(0) != len(piece):
                        return False
                    position += len(piece)
        except OSError as e:
            raise storage_error(e, f"Error while reading {self.path}") from e
        finally:
            self._release()
        return True

    def _acquire(self) -> int:
        """The descriptor, counted in use until :meth:`_release`; a closed channel raises."""
        with self._fd_lock:
            fd = self.fd
            if fd is None:
                raise IllegalStateError(f"File {self.path} is closed")
            self._users += 1
            return fd

    def _release(self) -> None:
        with self._fd_lock:
            self._users -= 1
            if self._users or self._closing_fd is None:
                return
            fd, self._closing_fd = self._closing_fd, None
        os.close(fd)

    def size(self) -> int:
        """The file's length on disk (Kafka: ``channel.size``)."""
        fd = self._acquire()
        try:
            return os.fstat(fd).st_size
        finally:
            self._release()

    def mapped(self, end: int) -> mmap.mmap:
        """A map covering at least ``[0, end)``; call with ``lock`` held and drop nothing it returns.  Only
        for a :attr:`mappable` channel.

        The file's length is checked every time and a range past its end is an error: touching a mapped
        page past the end of a file kills the process with SIGBUS.  (No other process cuts a file this
        process writes; a read-only channel, whose file another process may cut, never maps it.)
        """
        if not self.mappable:
            raise IllegalStateError(f"{self.path} is not mapped: it is read-only or sparse")
        # The lock held keeps close() (which takes it) from closing the descriptor under this call.
        fd = self.fd
        if fd is None:
            raise IllegalStateError(f"File {self.path} is closed")
        length = os.fstat(fd).st_size
        if length < end:
            self.drop_map()
            raise IllegalStateError(f"{self.path} is {length} bytes long, shorter than the {end} asked for")
        if self._map is None or len(self._map) < end or len(self._map) > length:
            self.drop_map()
            self._map = mmap.mmap(fd, length, access=mmap.ACCESS_READ)
        return self._map

    def drop_map(self) -> None:
        """Unmap, as before the file is truncated (a page past the end of a file must never be touched)."""
        with self.lock:
            if self._map is not None:
                self._map.close()
                self._map = None

    def pread(self, position: int, size: int) -> bytes:
        """``size`` bytes from ``position``; fewer (the file was cut) is a :class:`KafkaStorageError`."""
        data = self.pread_upto(position, size)
        if len(data) != size:
            raise KafkaStorageError(
                f"Short read from {self.path}: {len(data)} of {size} bytes at position {position}"
            )
        return data

    def pread_upto(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position``: fewer only where the file ends."""
        fd = self._acquire()
        try:
            data = os.pread(fd, size, position)
            if len(data) < size and data:
                # A single read stops at 2 GiB; read on to the end asked for, or of the file.
                parts = [data]
                got = len(data)
                while got < size:
                    more = os.pread(fd, size - got, position + got)
                    if not more:
                        break
                    parts.append(more)
                    got += len(more)
                data = b"".join(parts)
            return data
        except OSError as e:
            raise storage_error(e, f"Error while reading {size} bytes at position {position} of {self.path}") from e
        finally:
            self._release()

    def read_into(self, view: memoryview, position: int) -> int:
        """Fill ``view`` from ``position`` (``preadv``); returns the bytes read, fewer only where the file
        ends."""
        fd = self._acquire()
        try:
            got = 0
            while got < view.nbytes:
                n = os.preadv(fd, [view[got:]], position + got)
                if n == 0:
                    break
                got += n
            return got
        except OSError as e:
            raise storage_error(
                e, f"Error while reading {view.nbytes} bytes at position {position} of {self.path}") from e
        finally:
            self._release()

    def write_at(self, data: Any, position: int) -> int:
        """Write all of ``data`` at ``position``; an ``OSError`` (a full disk) is raised as it is, for the
        caller to undo what was written (:meth:`FileMessageSet.append`)."""
        fd = self._acquire()
        try:
            kind = type(data)
            if kind is bytearray or kind is bytes:
                # The whole buffer first, without making a view of it (a byte per item, so its length is its size).
                size = len(data)
                written = os.pwrite(fd, data, position) if size else 0
                if written == size:
                    return written
            else:
                written = -1
            with memoryview(data) as view:
                # The whole view first: a short write, the rare case, is resumed from a slice of it.
                if written < 0:
                    written = os.pwrite(fd, view, position) if view.nbytes else 0
                while written < view.nbytes:
                    with view[written:] as rest:
                        written += os.pwrite(fd, rest, position + written)
                return written
        finally:
            self._release()

    def send(self, out_fd: int, position: int, count: int) -> int:
        """``sendfile`` ``count`` bytes from ``position`` to ``out_fd``; returns the bytes sent."""
        fd = self._acquire()
        try:
            sent = 0
            while sent < count:
                n = os.sendfile(out_fd, fd, position + sent, count - sent)
                if n == 0:
                    break
                sent += n
            return sent
        finally:
            self._release()

    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes, dropping the map first (its tail would be past the end)."""
        with self.lock:
            self.drop_map()
            fd = self._acquire()
            try:
                os.ftruncate(fd, size)
            finally:
                self._release()
            self.mappable = self.writable and not self._has_holes()

    def set_length(self, size: int) -> None:
        """Set the file's length, as preallocation does (Kafka: ``RandomAccessFile.setLength``); the space
        is left sparse, as Java leaves it, so the file is read rather than mapped until it is trimmed."""
        self.truncate(size)

    def force(self) -> None:
        fd = self._acquire()
        try:
            os.fsync(fd)
        except OSError as e:
            raise storage_error(e, f"Error while flushing {self.path}") from e
        finally:
            self._release()

    def close(self) -> None:
        """Unmap and close; a call still using the descriptor keeps it open until it is done."""
        with self.lock:
            self.drop_map()
            with self._fd_lock:
                fd, self.fd = self.fd, None
                if fd is None:
                    return
                if self._users:
                    self._closing_fd = fd  # the last user closes it (_release)
                    return
            os.close(fd)

    @property
    def closed(self) -> bool:
        return self.fd is None
