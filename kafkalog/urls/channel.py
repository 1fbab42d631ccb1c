"""Segment files read by range: a ``.log`` as a read-only :class:`~kafkalog.file_message_set.FileMessageSet`
over an object, and an index file as a read-only index over its bytes.

A read-only :class:`FileMessageSet` never maps its file: its scans and searches read the bytes they walk with
``pread`` (``_scan_by_reads``, ``_search_by_reads``) and hand them to the same kernels, and its batches and
chunks are built over bytes read.  :class:`RemoteChannel` is the channel such a set reads through when the file
is an object reached by URL: each ``pread`` is a ranged read (``fs.cat_file(path, start=, end=)``), so the scan,
decode and search kernels, the consumer view and every reader built on the set run unchanged.  Reads are
whole aligned blocks of :data:`READ_AHEAD_BYTES` (a run of missing blocks is one request), and up to
:data:`CACHE_BYTES` of them are kept, so a scan's 1 MiB steps cost one request per block, not one per step (an
object store charges per request and answers each after a round trip), and the chunked reads of the batches
that follow a scan find its blocks still there: each byte of a task's slice is fetched once.

An index is read whole with one ranged read and searched in memory (:func:`read_index`): Kafka's index lookup
is a binary search over the mapped file, which over an object store would be a request per probe.  A
preallocated index copied from a live broker (zeros past its entries) is read as a read-only local open reads
it: every whole entry counts, and one that fails its sanity check is ignored, the segment then read without
index (a scan from its start).

Objects are taken as immutable while read (a copied log dir, or tiered storage's uploaded segments): the size
is read once, when the set is opened.
"""

from __future__ import annotations

import mmap
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, TypeVar

from .._common import INT32_MAX
from ..errors import IllegalStateError, KafkaStorageError, ReadOnlyError, StorageNotFoundError
from ..file_channel import FileChannel
from ..file_message_set import FileMessageSet
from ..index import AbstractIndex
from .location import StorageLocation

__all__ = ["CACHE_BYTES", "READ_AHEAD_BYTES", "RangeReadable", "RemoteChannel", "open_remote_log", "read_index"]

#: The least a ranged read fetches (one block of the object, aligned): what a scan then walks without another
#: request.
READ_AHEAD_BYTES = 8 << 20
#: The blocks a set keeps, least recently used dropped first: a reader that scans a range and then reads its
#: batches (a Spark task's slice of up to ``maxPartitionBytes``, 128 MiB by default) fetches each byte once.
CACHE_BYTES = 128 << 20

_Index = TypeVar("_Index", bound=AbstractIndex)


class RangeReadable(Protocol):
    """What a :class:`RemoteChannel` reads from: an object of a known size read by byte range.  A
    :class:`~kafkalog.urls.location.StorageLocation` is one (a ``.log`` object as it is); a tiered-storage
    segment is another (:meth:`kafkalog.remote.RemoteSegment.open_log`: the original ``.log`` rebuilt from
    its chunks)."""

    @property
    def path(self) -> str: ...

    def size(self) -> int: ...

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)``; fewer only where the object ends."""
        ...


class RemoteChannel(FileChannel):
    """A read-only :class:`~kafkalog.file_channel.FileChannel` over an object: reads are ranged reads; there is
    no descriptor, no map and no write."""

    def __init__(self, location: RangeReadable, size: int | None = None, block_bytes: int = READ_AHEAD_BYTES,
                 cache_bytes: int = CACHE_BYTES) -> None:
        # No descriptor to open: FileChannel's constructor is not run, its read interface is overridden.
        self.path, self.location = Path(location.path), location
        self.writable = self.mappable = self._closed = False
        self._map = self.fd = None
        self.lock = threading.RLock()
        self._size = location.size() if size is None else size
        self._block_bytes = block_bytes
        self._cache_blocks = max(1, cache_bytes // block_bytes)
        # Block number -> its bytes (short, or empty, where the object ends), least recently used first.
        self._blocks: OrderedDict[int, bytes] = OrderedDict()

    def size(self) -> int:
        return self._size

    def mapped(self, end: int) -> mmap.mmap:
        raise IllegalStateError(f"{self.location} is read by range, never mapped")

    def drop_map(self) -> None:
        return None

    def pread_upto(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position``, fewer only where the object ends."""
        with self.lock:
            if self._closed:
                raise IllegalStateError(f"File {self.location} is closed")
            end = min(position + size, self._size)
            if position >= end:
                return b""
            step = self._block_bytes
            first, last = position // step, (end - 1) // step
            self._fetch(first, last)
            parts = [self._blocks[i] for i in range(first, last + 1)]
            for i in range(first, last + 1):
                self._blocks.move_to_end(i)
            data = parts[0] if len(parts) == 1 else b"".join(parts)
            offset = position - first * step
            # An object shorter than it was listed gives what is there.
            return data[offset:offset + (end - position)]

    def _fetch(self, first: int, last: int) -> None:
        """Have blocks ``first`` to ``last`` in the cache: each run of missing ones is one ranged read."""
        step = self._block_bytes
        i = first
        while i <= last:
            if i in self._blocks:
                i += 1
                continue
            j = i
            while j + 1 <= last and j + 1 not in self._blocks:
                j += 1
            data = self.location.read_range(i * step, min((j + 1) * step, self._size))
            for k in range(i, j + 1):
                self._blocks[k] = data[(k - i) * step:(k - i + 1) * step]
            i = j + 1
        # Evict the least recently used blocks, but never the ones this read needs.
        wanted = set(range(first, last + 1))
        for k in list(self._blocks):
            if len(self._blocks) <= max(self._cache_blocks, len(wanted)):
                break
            if k not in wanted:
                del self._blocks[k]

    def read_into(self, view: memoryview, position: int) -> int:
        data = self.pread_upto(position, view.nbytes)
        view[:len(data)] = data
        return len(data)

    def zeros_between(self, start: int, end: int) -> bool:
        position = start
        while position < min(end, self._size):
            piece = self.pread_upto(position, min(READ_AHEAD_BYTES, end - position))
            if not piece:
                return True
            if piece.count(0) != len(piece):
                return False
            position += len(piece)
        return True

    def write_at(self, data: object, position: int) -> int:
        raise ReadOnlyError(f"Cannot write to {self.location}: objects are read-only")

    def send(self, out_fd: int, position: int, count: int) -> int:
        # No descriptor to sendfile from: copy what the read returns.
        import os

        data = self.pread_upto(position, count)
        return os.write(out_fd, data)

    def truncate(self, size: int) -> None:
        raise ReadOnlyError(f"Cannot truncate {self.location}: objects are read-only")

    def set_length(self, size: int) -> None:
        raise ReadOnlyError(f"Cannot resize {self.location}: objects are read-only")

    def force(self) -> None:
        return None

    def close(self) -> None:
        with self.lock:
            self._closed = True
            self._blocks.clear()

    @property
    def closed(self) -> bool:
        return self._closed


def open_remote_log(location: RangeReadable, size: int | None = None) -> FileMessageSet:
    """The ``.log`` object at ``location`` (or any :class:`RangeReadable`) as a read-only set (``size``: its
    size when a listing gave it).

    Raises:
        StorageNotFoundError: there is no such object.
        KafkaStorageError: it is larger than a segment can be (2 GiB - 1).
    """
    channel = RemoteChannel(location, size)
    length = channel.size()
    if length > INT32_MAX:
        raise KafkaStorageError(f"The size of segment {location} ({length}) is larger than the maximum allowed "
                                f"segment size of {INT32_MAX} bytes")
    log = FileMessageSet(channel.path, writable=False, _channel=channel, _start=0, _end=length)
    log.is_slice = False  # it owns its channel: closing the set closes it
    return log


def read_index(kind: type[_Index], location: StorageLocation, base_offset: int, size: int | None = None) -> _Index:
    """The index object at ``location`` read with one ranged read (its whole entries), as a read-only index;
    a missing one reads as empty, as a read-only local open reads a missing index file.  The caller runs the
    sanity check (a read-only open ignores the indexes of a segment when either fails it).

    Raises:
        KafkaStorageError: the object cannot be read.
    """
    try:
        length = location.size() if size is None else size
    except StorageNotFoundError:
        length = 0
    if length > INT32_MAX:
        # Kafka's index sizes are ints (segment.index.bytes); an object this large is no index to read whole.
        raise KafkaStorageError(f"{location} is {length} bytes, larger than an index can be ({INT32_MAX})")
    data = location.read_range(0, length - length % kind.ENTRY_SIZE) if length else b""
    return kind.from_bytes(data, Path(location.path), base_offset)
