"""FileMessageSet: the ``.log`` file of a segment, or a slice of one.

Port of ``kafka/log/FileMessageSet.scala`` (Kafka 0.10.1.1) with the behaviour of its successor
``clients/.../record/FileRecords.java`` (3.8.0) where the spec marks it: ``search_for`` matches on a
batch's last offset (modern ``searchForOffsetWithSize``), slices refuse a start past the end, appends
refuse to grow the file past 2 GiB - 1.

The file is a concatenation of log entries (kafka-log-spec §1) with no header.  A set is the whole
file (``start`` 0, ``end`` its logical size) or a slice ``[start, end)`` of it sharing the same open
file; slices never change.  With ``preallocate`` a new file is created at ``init_file_size`` bytes but
its logical size starts at 0; ``close`` and ``trim`` cut the file back to the logical size, and after a
crash the zero tail is found by recovery (a size field of 0 is corrupt).

How it reads.  Walking entries (``search_for``, ``scan``, iteration) is the kernels' work.  A writable set's
kernels walk a read-only mmap of the file held by the shared :class:`~kafkalog.file_channel.FileChannel`: a
kernel gets the mmap object for the length of one call, under the channel lock, and no view of it is kept
(the mmap rule), so the map can be replaced when the file grows and dropped before the file is truncated.  A
read-only set (``writable=False``) never maps its file: another process (the broker, a ``Log``) may cut it
at any moment, and a mapped page touched past the new end kills the reader with SIGBUS, so its kernels walk
the bytes read with ``pread``, 1 MiB at a time (:func:`_scan_by_reads`), and a file cut under them reads
shorter.  Batches handed to the caller are built over ``bytes`` read with ``pread`` in bounded chunks, never
over the map.  A read-only set never writes, truncates or renames its file.

Failures.  A full disk during an append is a :class:`KafkaStorageError` that says so, and the bytes the
failed write left are cut off again (no part of a failed append is ever read or recovered as data).  A
file that is not a regular file (a FIFO, a socket, a device) is refused when it is opened, naming it:
opening a FIFO would block.  A read racing the close of its file (a segment deleted by retention)
completes on the file it started on, or fails with :class:`IllegalStateError`.

For a reader of an older message format the set converts itself: ``down_convert`` (3.x
``FileRecords.downConvert``), ``to_message_format`` and ``is_magic_value_in_all_wrapper_messages`` (0.10.1),
over :mod:`kafkalog.record.convert`.
"""

from __future__ import annotations

import itertools
import os
import struct
import sys
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from . import _impl
from ._common import (
    BATCH_DTYPE,
    HEADER_SIZE_UP_TO_MAGIC,
    INT32_MAX,
    INT64_MAX,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MIN_RECORD_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
    ScanStop,
)
from .errors import (
    ConcurrentTruncationError,
    CorruptRecordError,
    IllegalArgumentError,
    IllegalStateError,
    KafkaLogError,
    KafkaStorageError,
    ReadOnlyError,
    RecordTooLargeError,
)
from .file_channel import FileChannel
from .fsutil import storage_error
from .record import MemoryRecords, Record, RecordBatch, ScanResult
from .record.batch import DEFAULT_MAX_DECOMPRESSED_SIZE, DefaultRecordBatch, RecordColumns
from .record.convert import down_convert, to_message_format
from .record.legacy import LegacyRecordBatch
from .record.records_util import ConvertedRecords, RecordValidationStats

__all__ = ["ChunkBuffer", "FileMessageSet", "LogOffsetPosition", "TimestampAndOffset"]

#: The most bytes ``batches()`` reads into memory at once.
READ_CHUNK_BYTES = 4 * 1024 * 1024
#: The size of the chunks :meth:`FileMessageSet.memory_chunks` reads.
MEMORY_CHUNK_BYTES = 8 * 1024 * 1024
#: Batches ``search_for_timestamp`` looks at per step of its walk.
_SEARCH_STEP_BATCHES = 256
#: A v2 batch header's producer id and epoch, adjacent (``producer_fields`` read by reads).
_PRODUCER_FIELDS = struct.Struct(">qh")
#: Where a v2 batch header holds its partition leader epoch (after the base offset and the length).
_LEADER_EPOCH_OFFSET = 12
_T = TypeVar("_T")


class LogOffsetPosition(NamedTuple):
    """Where a batch is: its last ``offset``, file ``position`` and ``size``.

    Kafka: ``FileRecords.LogOffsetPosition``.
    """

    offset: int
    position: int
    size: int


class TimestampAndOffset(NamedTuple):
    """A record found by timestamp (Kafka: ``FileRecords.TimestampAndOffset``), with the partition leader
    epoch of its batch when the batch has one (``None``: Kafka's ``Optional.empty()``)."""

    timestamp: int
    offset: int
    leader_epoch: int | None = None


def maybe_leader_epoch(leader_epoch: int) -> int | None:
    """A batch's partition leader epoch, ``None`` when it has none (Kafka: ``FileRecords.maybeLeaderEpoch``)."""
    return None if leader_epoch == NO_PARTITION_LEADER_EPOCH else leader_epoch


#: How much a scan of a file that is not mapped reads at a time (more when one entry is larger).
SCAN_READ_BYTES = 1 << 20
#: What a search in a file that is not mapped reads first: a search starts at an index entry, and the
#: offset it looks for is most often within an index interval (4 KiB by default) of it.
SEARCH_READ_BYTES = 64 << 10


def _whole_entry_size(data: bytes | memoryview, position: int) -> int:
    """The size of the entry at ``position`` of ``data`` with its log overhead; the overhead alone when
    ``data`` ends inside its header (the next read then holds the size field, at least)."""
    if len(data) - position < LOG_OVERHEAD:
        return LOG_OVERHEAD
    return LOG_OVERHEAD + int.from_bytes(data[position + 8:position + 12], "big", signed=True)


def _scanned_reads(channel: FileChannel, start: int, end: int, read_bytes: int, check_crc: bool,
                   stop_on_invalid: bool, max_entry_size: int, max_batches: int, buffer: ChunkBuffer
                   ) -> Generator[tuple[int, memoryview, npt.NDArray[Any]], None, tuple[int, ScanStop]]:
    """The batch-scan kernel over ``[start, end)`` of a file that is not mapped, walked one read of about
    ``read_bytes`` at a time: yields ``(file position of the read, the bytes read, the rows of the whole
    entries in them)`` for every read that holds some (row positions relative to the read; the bytes are
    ``buffer``'s, overwritten by the next read), and returns the scan's stop position and reason, the same as
    one kernel call over a map of the file.

    A read that ends inside an entry (the kernel's ``PARTIAL`` at the end of the bytes read) or between two
    (``END``) before ``end`` is followed by the next read, from that entry, at least as large as the entry.
    A read that comes back short was cut by a writer: what was read is what the scan sees, ending there
    (a shorter read, never a fault).  Memory: one read of the largest entry or ``read_bytes``.
    """
    position = max(start, 0)  # as the kernel takes a negative start
    want = read_bytes
    while True:
        length = max(min(want, end - position), 0)
        view = buffer.view(length)
        got = channel.read_into(view, position) if length else 0
        rows, stop, code = _impl.core.scan_batches(view, 0, got, check_crc, stop_on_invalid, max_entry_size,
                                                   max(max_batches, 0))
        stop = int(stop)
        reason = ScanStop(code)
        if reason is ScanStop.ZERO_TAIL and got == length and position + length < end \
                and not channel.zeros_between(position + length, end):
            # Zeros to the end of this read are no tail when the file goes on with data.
            reason = ScanStop.SIZE_TOO_SMALL
        more = reason in (ScanStop.END, ScanStop.PARTIAL) and got == length and position + length < end
        want = read_bytes
        if more and reason is ScanStop.PARTIAL:
            want = max(read_bytes, _whole_entry_size(view, stop))
        if len(rows):
            max_batches -= len(rows)
            yield position, view[:got], rows
        if not more:
            return position + stop, reason
        # The read ended before the set: go on from where the kernel stopped, with the whole next entry.
        position += stop


def _scan_by_reads(channel: FileChannel, start: int, end: int, check_crc: bool, stop_on_invalid: bool,
                   max_entry_size: int, max_batches: int) -> tuple[npt.NDArray[Any], int, ScanStop]:
    """The batch-scan kernel over ``[start, end)`` of a file that is not mapped, :data:`SCAN_READ_BYTES` read
    at a time (:func:`_scanned_reads`): the same rows, stop and reason as one kernel call over a map of the
    file.  Memory: the rows, and one read of the largest entry or 1 MiB."""
    parts: list[npt.NDArray[Any]] = []
    reads = _scanned_reads(channel, start, end, SCAN_READ_BYTES, check_crc, stop_on_invalid, max_entry_size,
                           max_batches, ChunkBuffer())
    while True:
        try:
            position, _data, rows = next(reads)
        except StopIteration as done:
            stop, reason = done.value
            break
        rows["position"] += position
        parts.append(rows)
    if len(parts) == 1:
        return parts[0], stop, reason
    return (np.concatenate(parts) if parts else np.empty(0, dtype=BATCH_DTYPE)), stop, reason


def _search_by_reads(channel: FileChannel, start: int, end: int,
                     target_offset: int) -> tuple[int, int, int, int, int]:
    """The search kernel (``search_for_offset``) over ``[start, end)`` of a file that is not mapped, with
    the answer of one kernel call over a map: reads of :data:`SEARCH_READ_BYTES`, growing fourfold up to
    :data:`SCAN_READ_BYTES`, each going on where the last ended, as :func:`_scan_by_reads` does."""
    position = max(start, 0)  # as the kernel takes a negative start
    want = SEARCH_READ_BYTES
    while True:
        length = max(min(want, end - position), 0)
        data = channel.pread_upto(position, length) if length else b""
        found, size, last_offset, stop, code = _impl.core.search_for_offset(data, 0, len(data), target_offset)
        if found >= 0:
            return position + found, size, last_offset, position + stop, code
        reason = ScanStop(code)
        if reason is ScanStop.ZERO_TAIL and len(data) == length and position + length < end \
                and not channel.zeros_between(position + length, end):
            return -1, 0, -1, position + stop, int(ScanStop.SIZE_TOO_SMALL)
        if (reason in (ScanStop.END, ScanStop.PARTIAL) and len(data) == length
                and position + length < end):
            want = min(want * 4, SCAN_READ_BYTES)
            if reason is ScanStop.PARTIAL:
                want = max(want, _whole_entry_size(data, stop))
            position += stop
            continue
        return -1, 0, -1, position + stop, code


class ChunkBuffer:
    """One buffer that successive chunks of a read are read into (``FileMessageSet.memory_chunks(reuse=)``),
    across segments: reading each 4 MiB chunk into fresh memory page-faults it in anew and made the file read
    ~5x the cost of the copy itself (issue 18's profile of ``Log.records()``)."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def view(self, size: int) -> memoryview:
        """A view of the first ``size`` bytes, overwriting what the last view showed."""
        if size > len(self._buffer):
            # A new buffer, not a resize: the last chunk handed out may still be viewing the old one.  Sized
            # for the chunk (a small log's read allocates little), a quarter more when it grows again.
            self._buffer = bytearray(max(size, len(self._buffer) * 5 // 4))
        return memoryview(self._buffer)[:size]



class _FreshBuffer(ChunkBuffer):
    """A :class:`ChunkBuffer` whose every view is new memory: for chunks a caller keeps."""

    __slots__ = ()

    def view(self, size: int) -> memoryview:
        return memoryview(bytearray(size))


class KeptChunkBuffers(ChunkBuffer):
    """Buffers for chunks whose bytes a caller may keep (columns that point into them): a chunk is read into a
    buffer of the pool only when no view of it is left (its reference count says no one else holds it), else
    into new memory.  A reader holding the columns of one chunk while the next is read (a ``for`` loop's
    variable) is served by two buffers in turn; one that keeps every chunk gets new memory each time, and what
    it keeps is never overwritten.  New memory is left unfilled (``numpy.empty``, which the allocator may serve
    from memory freed before, without faulting it in again): the read fills what is used."""

    __slots__ = ("_pool",)

    #: The buffers kept for reuse: one being read, one the caller still holds.
    POOL = 2

    def __init__(self) -> None:
        super().__init__()
        self._pool: list[npt.NDArray[np.uint8]] = []

    def view(self, size: int) -> memoryview:
        pool = self._pool
        for i in range(len(pool)):
            # Two references: the pool's and getrefcount's argument; any more is a view still alive.
            if sys.getrefcount(pool[i]) <= 2:
                if len(pool[i]) < size:
                    pool[i] = np.empty(max(size, len(pool[i]) * 5 // 4), dtype=np.uint8)
                return pool[i].data[:size]
        fresh = np.empty(size, dtype=np.uint8)
        if len(pool) < self.POOL:
            pool.append(fresh)
        return fresh.data


def _chunk_spans(rows: npt.NDArray[Any], chunk_bytes: int) -> Iterator[tuple[int, int, int, int]]:
    """``(file position, size, first row, row past the last)`` of the chunks that cut the entries of scan
    ``rows`` into runs of about ``chunk_bytes`` (an entry larger than that is a run of its own)."""
    ends = rows["position"] + rows["size"]
    i, n = 0, len(rows)
    while i < n:
        start = int(rows["position"][i])
        j = int(np.searchsorted(ends, start + chunk_bytes, side="right"))
        j = min(max(j, i + 1), n)
        yield start, int(ends[j - 1]) - start, i, j
        i = j


class FileMessageSet:
    """A ``.log`` file, or a slice of one (Kafka: ``FileMessageSet`` / ``FileRecords``).

    ``FileMessageSet(path)`` opens an existing file; :meth:`open` creates one.  Iterating gives the
    batches (shallow); :meth:`records` the records (deep).
    """

    def __init__(self, path: str | os.PathLike[str], *, file_already_exists: bool = True,
                 init_file_size: int = 0, preallocate: bool = False, writable: bool = True,
                 _channel: FileChannel | None = None, _start: int = 0, _end: int | None = None) -> None:
        self._file = path if isinstance(path, Path) else Path(path)
        self.is_slice = _channel is not None
        self.writable = writable
        self.start = _start
        #: How many times :meth:`truncate_to` removed bytes: with the size, it tells a reader that caches
        #: what it scanned whether the bytes it saw are still there (a truncation followed by appends can
        #: bring the size back).  kafkalog's; Kafka has no need of it.
        self.truncations = 0
        if _channel is not None:
            # A slice (Kafka: isSlice = true): a fixed window of a file another set owns.
            assert _end is not None
            self._channel = _channel
            self._size = _end - _start
            return
        if not writable and not file_already_exists:
            raise ReadOnlyError(f"Cannot create {self._file}: the set was opened read-only")
        if file_already_exists and not self._file.exists():
            raise KafkaStorageError(f"Log file {self._file} does not exist")
        self._channel = FileChannel(self._file, writable)
        try:
            if writable and preallocate and not file_already_exists:
                self._channel.set_length(init_file_size)
                end = 0
            else:
                end = INT32_MAX
            length = self._channel.size()
            if length > INT32_MAX:
                raise KafkaStorageError(
                    f"The size of segment {self._file} ({length}) is larger than the maximum allowed segment "
                    f"size of {INT32_MAX} bytes"
                )
        except BaseException:
            self._channel.close()
            raise
        self._size = min(length, end) - _start

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, file_already_exists: bool = False, init_file_size: int = 0,
             preallocate: bool = False, writable: bool = True) -> FileMessageSet:
        """Open or create a log file (Kafka: ``FileRecords.open``)."""
        return cls(path, file_already_exists=file_already_exists, init_file_size=init_file_size,
                   preallocate=preallocate, writable=writable)

    @classmethod
    def absent(cls, path: str | os.PathLike[str]) -> FileMessageSet:
        """A read-only, empty set named ``path``, a file that does not exist and is not created.

        kafkalog's, for a read-only open of a partition dir that holds no segment: a broker would create
        an empty segment there, a read-only open reads as that segment would.  The set reads an empty
        anonymous file (:meth:`~kafkalog.file_channel.FileChannel.empty`: zero bytes, no map); its name is
        ``path``, for messages.
        """
        channel = FileChannel.empty(Path(path))
        empty = cls(path, writable=False, _channel=channel, _start=0, _end=0)
        empty.is_slice = False  # it owns its channel: closing the set closes it
        return empty

    # -- what it is ---------------------------------------------------------------------------------

    @property
    def file(self) -> Path:
        return self._file

    @property
    def channel(self) -> FileChannel:
        return self._channel

    @property
    def end(self) -> int:
        return self.start + self._size

    def size_in_bytes(self) -> int:
        """The logical size: bytes of entries, not the preallocated length (Kafka: ``sizeInBytes``)."""
        return self._size

    def __len__(self) -> int:
        return self._size

    def last_modified(self) -> float:
        """The file's modification time, in milliseconds since the epoch; 0 when the file is gone, as
        Java's ``File.lastModified`` answers."""
        try:
            return os.stat(self._file).st_mtime * 1000.0
        except FileNotFoundError:
            return 0.0

    def set_last_modified(self, ms: int) -> None:
        self._check_writable("touch")
        os.utime(self._file, (ms / 1000.0, ms / 1000.0))

    def _check_writable(self, what: str) -> None:
        if self._channel.fd is None:  # closed
            raise IllegalStateError(f"Log file {self._file} is closed")
        if not self.writable:
            raise ReadOnlyError(f"Cannot {what} {self._file}: it was opened read-only")
        if self.is_slice:
            raise IllegalStateError(f"Cannot {what} a slice of {self._file}")

    def __repr__(self) -> str:
        return (f"FileMessageSet(file={str(self._file)!r}, start={self.start}, size={self._size}"
                f"{', slice' if self.is_slice else ''}{'' if self.writable else ', read-only'})")

    # -- slices and reads ---------------------------------------------------------------------------

    def read(self, position: int, size: int) -> FileMessageSet:
        """A slice of ``size`` bytes from ``position`` of this set (Kafka 0.10.1 ``read``, modern ``slice``).

        The end is clamped to the set's end; a negative position or size, or a start past the end, is an
        :class:`IllegalArgumentError`.
        """
        current = self._size
        if position < 0:
            raise IllegalArgumentError(f"Invalid position: {position} in read from {self}")
        if position > current:
            raise IllegalArgumentError(f"Slice from position {position} exceeds end position of {self}")
        if size < 0:
            raise IllegalArgumentError(f"Invalid size: {size} in read from {self}")
        end = self.start + position + size
        if end > self.start + current:
            end = self.start + current
        return FileMessageSet(self._file, writable=self.writable, _channel=self._channel,
                              _start=self.start + position, _end=end)

    slice = read

    def read_bytes(self, position: int = 0, size: int | None = None) -> bytes:
        """The set's bytes, read from the file: all of them, or ``size`` bytes from ``position`` (relative to
        the set's start, as every position of this class is), fewer where the set ends first.

        The positional form is how code outside the class reads a batch it found by a scan or an index
        lookup (Kafka: ``FileRecords.readInto(buffer, position)``), without reaching for the file underneath.
        A negative position or size, or a position past the end, is an :class:`IllegalArgumentError`.
        """
        if position == 0 and size is None:
            return self._channel.pread(self.start, self._size) if self._size else b""
        current = self._size
        if position < 0 or position > current:
            raise IllegalArgumentError(f"Invalid position: {position} in read from {self}")
        if size is None:
            size = current - position
        elif size < 0:
            raise IllegalArgumentError(f"Invalid size: {size} in read from {self}")
        size = min(size, current - position)
        return self._channel.pread(self.start + position, size) if size else b""

    def read_into(
        self, buffer: bytearray | memoryview, relative_position: int
    ) -> bytearray | memoryview:
        """Fill ``buffer`` from ``relative_position`` of this set (Kafka: ``readInto``)."""
        with memoryview(buffer) as view:
            n = min(view.nbytes, max(self._size - relative_position, 0))
            view[:n] = self._channel.pread(self.start + relative_position, n)
        return buffer

    def to_memory_records(self) -> MemoryRecords:
        """The set's bytes as :class:`MemoryRecords` (a copy, independent of the file)."""
        return MemoryRecords(self.read_bytes())

    # -- conversion for older readers ----------------------------------------------------------------

    def is_magic_value_in_all_wrapper_messages(self, expected_magic: int) -> bool:
        """Whether every entry (a wrapper counts as one) has ``expected_magic`` (0.10.1:
        ``isMagicValueInAllWrapperMessages``, asked before a fetch is sent as it is to a reader of that
        format).

        As 0.10.1 walks the file: a partial entry at the end counts when its magic byte is there and is
        ignored otherwise; an entry whose size field is below the 14-byte minimum is an error.  The walk is
        the batch-scan kernel's; an entry the kernel stops at (a size too small for its magic, an unknown
        magic) is judged by its magic byte alone, as 0.10.1 judged every entry, and the walk goes on after it.

        Raises:
            IllegalStateError: an entry whose size field is below the minimum message overhead.
        """
        position = 0
        while True:
            result = self.scan(check_crc=False, stop_on_invalid=False, starting_position=position)
            if np.any(result.batches["magic"] != expected_magic):
                return False
            stop = result.stop_position
            remaining = self.end - stop
            if result.stop_reason in (ScanStop.END, ScanStop.LIMIT, ScanStop.ZERO_TAIL) or \
                    remaining < LOG_OVERHEAD:
                return True
            if result.stop_reason is ScanStop.PARTIAL:
                if remaining <= MAGIC_OFFSET:
                    return True  # 0.10.1 reads no magic byte for it, and the walk ends
                return self._channel.pread(stop + MAGIC_OFFSET, 1)[0] == expected_magic
            size = int.from_bytes(self._channel.pread(stop + 8, 4), "big", signed=True)
            if size < MIN_RECORD_OVERHEAD:
                raise IllegalStateError(f"Invalid message size: {size}")
            if self._channel.pread(stop + MAGIC_OFFSET, 1)[0] != expected_magic:
                return False
            position = stop + LOG_OVERHEAD + size - self.start

    def has_matching_magic(self, magic: int) -> bool:
        """Whether every batch has ``magic`` (Kafka 3.x: ``AbstractRecords.hasMatchingMagic``); reads the
        batches as :meth:`batches` does, so corrupt framing before a mismatch raises."""
        result = self.scan(check_crc=False, stop_on_invalid=False)
        if np.any(result.batches["magic"] != magic):
            return False
        self._raise_for(result.stop_reason, result.stop_position, INT32_MAX)
        return True

    def down_convert(self, to_magic: int, first_offset: int, *,
                     nanoseconds: Callable[[], int] = time.monotonic_ns
                     ) -> ConvertedRecords[FileMessageSet | MemoryRecords]:
        """The set's batches in ``to_magic`` or older, for a reader of that format (Kafka 3.x:
        ``FileRecords.downConvert`` over ``RecordsUtil.downConvert``; see :mod:`kafkalog.record.convert`).

        When no record had to be converted, the set itself comes back, with empty stats: it was already in
        the reader's format, or it holds no whole batch (a fetch smaller than its first batch, which an old
        consumer then reports as a message too large for its fetch size).
        """
        converted = down_convert(self.batches(), to_magic, first_offset, nanoseconds=nanoseconds)
        if converted.record_conversion_stats.num_records_converted == 0:
            return ConvertedRecords(self, RecordValidationStats.EMPTY)
        return converted

    def to_message_format(self, to_magic: int) -> FileMessageSet | MemoryRecords:
        """Every message of the set in ``to_magic`` (0 or 1), offsets kept (0.10.1: ``toMessageFormat``; see
        :func:`kafkalog.record.convert.to_message_format`).  The set itself when it holds bytes but no whole
        message (0.10.1: "the message is too large"); empty records for an empty set."""
        converted = to_message_format(self.batches(), to_magic)
        if converted is None:
            return self if self._size > 0 else MemoryRecords(b"")
        return converted

    def write_to(self, destination: Any, write_position: int, size: int) -> int:
        """Copy ``size`` bytes from ``write_position`` of this set to ``destination`` (a file object or a
        socket), with ``os.sendfile`` when it has a file descriptor; returns the bytes written, no more than
        the set holds past ``write_position`` (Kafka: ``writeTo``).

        Raises:
            ConcurrentTruncationError: the file was truncated below the set's end since the set was made
                (Kafka's "has been truncated during write"): what the set promised is no longer there.
            IllegalArgumentError: a negative position or size.
        """
        if write_position < 0 or size < 0:
            raise IllegalArgumentError(f"Invalid write of {size} bytes from position {write_position}")
        # Ensure that the underlying size has not changed.
        new_size = min(self._channel.size(), self.end) - self.start
        old_size = self._size
        if new_size < old_size:
            path = str(self._file.absolute())
            raise ConcurrentTruncationError(
                f"Size of FileMessageSet {path} has been truncated during write: old size {old_size}, new size "
                f"{new_size}",
                path, old_size, new_size,
            )
        count = max(0, min(size, old_size - write_position))
        position = self.start + write_position
        fileno = getattr(destination, "fileno", None)
        if fileno is not None and hasattr(os, "sendfile"):
            try:
                out_fd = fileno()
            except (OSError, ValueError):
                out_fd = None
            if out_fd is not None:
                if hasattr(destination, "flush"):
                    destination.flush()
                return self._channel.send(out_fd, position, count)
        data = self._channel.pread(position, count)
        destination.write(data)
        return count

    # -- writing ------------------------------------------------------------------------------------

    def append(self, records: MemoryRecords | bytes | bytearray | memoryview) -> int:
        """Write ``records`` at the end of the file; returns the bytes written (Kafka: ``append``)."""
        self._check_writable("append to")
        data = records.buffer if isinstance(records, MemoryRecords) else records
        kind = type(data)
        if kind is bytearray or kind is bytes:  # a byte per item: no view needed to know the size
            return self._append_bytes(data, len(data))
        with memoryview(data) as view:
            return self._append_bytes(view, view.nbytes)

    def _append_bytes(self, data: bytes | bytearray | memoryview, size: int) -> int:
        """:meth:`append` of ``data``, ``size`` bytes, a buffer of bytes."""
        if size > INT32_MAX - self._size:
            raise IllegalArgumentError(
                f"Append of size {size} bytes is too large for segment with current file position at "
                f"{self._size}"
            )
        position = self.start + self._size
        try:
            written = self._channel.write_at(data, position)
        except OSError as e:
            self._undo_write(position, size)
            raise storage_error(
                e, f"Error while appending {size} bytes at position {position} to {self._file}") from e
        self._size += written
        return written

    def _undo_write(self, position: int, size: int) -> None:
        """Cut off what a failed write of ``size`` bytes at ``position`` left (part of a batch, or whole
        batches of an append that as a whole failed), so no byte of it is read, or recovered after a crash,
        as data.  A preallocated file (longer than the write could have made it) gets its length back,
        sparse.  Cutting a file never needs space on the disk."""
        with self._channel.lock:
            try:
                length = self._channel.size()
                if length > position:
                    self._channel.truncate(position)
                    if length > position + size:
                        self._channel.set_length(length)
            except KafkaLogError:
                raise
            except OSError as e:
                raise storage_error(e, f"Error while cutting back to {position} bytes, after a failed append, "
                                                   f"{self._file}") from e

    def flush(self) -> None:
        """fsync the file (Kafka: ``flush``, ``channel.force(true)``)."""
        if self.writable and not self._channel.closed:
            self._channel.force()

    def truncate_to(self, target_size: int) -> int:
        """Cut the file to ``target_size`` bytes; returns the bytes removed (Kafka: ``truncateTo``).

        The file is only cut when it is longer than ``target_size`` (a preallocated tail included).
        """
        self._check_writable("truncate")
        original = self._size
        if target_size > original or target_size < 0:
            raise KafkaLogError(
                f"Attempt to truncate log segment {self._file} to {target_size} bytes failed, size of this "
                f"log segment is {original} bytes."
            )
        # The file and the size are cut together under the channel's lock, which scans take to read the end:
        # a reader never maps an end the file no longer reaches.
        with self._channel.lock:
            if target_size < self._channel.size():
                self._channel.truncate(target_size)
                self._size = target_size
            if target_size < original:
                self.truncations += 1
        return original - target_size

    def trim(self) -> None:
        """Cut a preallocated file to its logical size (Kafka: ``trim``)."""
        self.truncate_to(self._size)

    def close(self) -> None:
        """Flush, trim and close (Kafka: ``close``); closing twice is harmless.  A slice closes nothing."""
        if self.is_slice or self._channel.closed:
            return
        try:
            if self.writable:
                self.flush()
                self.trim()
        finally:
            self._channel.close()

    def close_handlers(self) -> None:
        """Close the file without flushing or trimming (Kafka: ``closeHandlers``)."""
        if not self.is_slice:
            self._channel.close()

    def delete(self) -> bool:
        """Close and delete the file; ``False`` if it was already gone (Kafka: ``deleteIfExists``).
        A closed set can still be deleted; a read-only one or a slice never."""
        if not self.writable:
            raise ReadOnlyError(f"Cannot delete {self._file}: it was opened read-only")
        if self.is_slice:
            raise IllegalStateError(f"Cannot delete a slice of {self._file}")
        self.close_handlers()
        try:
            self._file.unlink()
        except FileNotFoundError:
            return False
        return True

    def rename_to(self, path: str | os.PathLike[str]) -> None:
        """Rename the file atomically (Kafka: ``renameTo``); the new name is kept even if the rename fails.
        A closed set can be renamed, as in Kafka (deleting a closed log renames its files ``.deleted``)."""
        if not self.writable:
            raise ReadOnlyError(f"Cannot rename {self._file}: it was opened read-only")
        if self.is_slice:
            raise IllegalStateError(f"Cannot rename a slice of {self._file}")
        target = Path(path)
        try:
            os.replace(self._file, target)
        finally:
            self._file = target
            self._channel.path = target

    def update_parent_dir(self, parent: str | os.PathLike[str]) -> None:
        """Point at the same file name in another directory, after the directory was renamed."""
        self._file = Path(parent) / self._file.name
        self._channel.path = self._file

    def __enter__(self) -> FileMessageSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- walking the entries ------------------------------------------------------------------------

    def scan(self, *, check_crc: bool = True, stop_on_invalid: bool = True, starting_position: int = 0,
             max_entry_size: int = INT32_MAX, max_batches: int | None = None) -> ScanResult:
        """Run the batch-scan kernel over the set from ``starting_position`` (positions in the file),
        stopping after ``max_batches`` batches when given.

        The engine of recovery and of iteration; see ``_core_py.scan.scan_batches`` for its rules.
        """
        batches, stop, reason = self._scan_from(self.start + starting_position, check_crc, stop_on_invalid,
                                                max_entry_size, INT64_MAX if max_batches is None else max_batches)
        return ScanResult(batches, stop, reason)

    def _scan_from(self, start: int, check_crc: bool, stop_on_invalid: bool, max_entry_size: int,
                   max_batches: int) -> tuple[npt.NDArray[Any], int, ScanStop]:
        """The batch-scan kernel from file position ``start`` to the set's end: over the map, under the
        channel lock, when the channel is mappable; else over the bytes read (:func:`_scan_by_reads`)."""
        channel = self._channel
        if not channel.mappable:
            return _scan_by_reads(channel, start, self.end, check_crc, stop_on_invalid, max_entry_size,
                                  max_batches)
        with channel.lock:
            # The end is read under the lock that truncate_to holds while it cuts the file and the size.
            end = self.end
            if start >= end:
                return np.empty(0, dtype=BATCH_DTYPE), start, ScanStop.END
            batches, stop, reason = _impl.core.scan_batches(channel.mapped(end), start, end, check_crc,
                                                            stop_on_invalid, max_entry_size, max_batches)
        return batches, int(stop), ScanStop(reason)

    def raise_for_stop(self, scan: ScanResult, max_entry_size: int = INT32_MAX) -> None:
        """Raise Kafka's error for what ended ``scan`` (a :meth:`scan` of this set), naming the file and the
        position; nothing for its end, a partial trailing entry (a write in progress) or its batch limit."""
        self._raise_for(scan.stop_reason, scan.stop_position, max_entry_size)

    def _raise_for(self, reason: ScanStop, position: int, max_entry_size: int) -> None:
        """Kafka's ``FileLogInputStream`` errors for a scan that ended on corrupt framing."""
        if reason in (ScanStop.END, ScanStop.PARTIAL, ScanStop.LIMIT, ScanStop.ZERO_TAIL):
            # A partial trailing entry is a write in progress, invisible to readers; zeros to the end of the
            # file are a preallocated segment's unwritten tail (Kafka's reader never reads past the logical
            # size of such a file, 0.10.1's stopped at its first size below the minimum).
            return
        if self.end - position <= HEADER_SIZE_UP_TO_MAGIC:
            # FileLogInputStream ends the iteration before reading the size field when no more than a
            # header up to the magic byte is left (ByteBufferLogInputStream reads it first, which the
            # shared scan kernel follows): such a tail is a write in progress, whatever it holds.
            return
        size = int.from_bytes(self._channel.pread(position + 8, 4), "big", signed=True)
        if reason is ScanStop.TOO_LARGE:
            raise RecordTooLargeError(
                f"Record size {size} exceeds the largest allowable message size ({max_entry_size})",
                position, str(self._file))
        if reason is ScanStop.BAD_MAGIC:
            magic = self._channel.pread(position + 16, 1)[0]
            raise CorruptRecordError(f"Invalid magic found in record: {magic}", position, str(self._file))
        if reason is ScanStop.BAD_CRC:
            entry = MemoryRecords(self._channel.pread(position, LOG_OVERHEAD + size))
            try:
                next(entry.batches(strict=True)).ensure_valid()
            except CorruptRecordError as e:
                raise e.at(position, str(self._file)) from None
            raise CorruptRecordError("Record is corrupt (stored crc does not match the bytes)", position,
                                     str(self._file))
        raise CorruptRecordError(
            f"Found record size {size} smaller than the minimum record overhead for its magic", position,
            str(self._file))

    def _from_headers(self, positions: npt.NDArray[np.int64], from_map: Callable[[Any, npt.NDArray[np.int64]], _T],
                      by_reads: Callable[[list[int]], _T]) -> _T:
        """A field of the v2 batch headers at ``positions`` (file positions, as a :meth:`scan` of this set gives
        them): ``from_map(map, positions)`` over the map, under the lock as in :meth:`scan`, which must not keep a
        view of the map; ``by_reads(positions)`` a batch at a time when the file is not mapped or a position is not
        inside the set (a read past its end raises then)."""
        positions = np.ascontiguousarray(positions, dtype=np.int64)
        channel = self._channel
        if channel.mappable and len(positions):
            with channel.lock:
                end = self.end
                if int(positions.min()) >= self.start and int(positions.max()) + RECORD_BATCH_OVERHEAD <= end:
                    return from_map(channel.mapped(end), positions)
        return by_reads(positions.tolist())

    def producer_fields(self, positions: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int16]]:
        """The producer id and epoch of the v2 batches at ``positions``: one kernel call over the map, else read
        a batch at a time (:meth:`_from_headers`)."""
        def by_reads(at: list[int]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int16]]:
            fields = [_PRODUCER_FIELDS.unpack(self.read_bytes(position - self.start + PRODUCER_ID_OFFSET,
                                                              _PRODUCER_FIELDS.size)) for position in at]
            return (np.array([producer_id for producer_id, _ in fields], dtype=np.int64),
                    np.array([epoch for _, epoch in fields], dtype=np.int16))

        found: tuple[npt.NDArray[np.int64], npt.NDArray[np.int16]] = self._from_headers(
            positions, _impl.core.producer_fields, by_reads)
        return found

    def partition_leader_epochs(self, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        """The partition leader epoch of the v2 batches at ``positions`` (the big-endian int32 twelve bytes into a
        v2 header): gathered from the map with numpy, else read a batch at a time (:meth:`_from_headers`).
        Recovery reads them for the leader-epoch cache (Kafka: ``RecordBatch.partitionLeaderEpoch`` in
        ``LogSegment.recover``)."""
        def from_map(buffer: Any, at: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
            mapped = np.frombuffer(buffer, dtype=np.uint8)
            try:
                # A copy: no view of the map may outlive the lock (the mmap rule, design.md §3).
                raw = mapped[at[:, None] + np.arange(_LEADER_EPOCH_OFFSET, _LEADER_EPOCH_OFFSET + 4)]
            finally:
                del mapped
            return np.ascontiguousarray(raw).view(">i4").reshape(-1).astype(np.int32)

        def by_reads(at: list[int]) -> npt.NDArray[np.int32]:
            return np.array([int.from_bytes(self.read_bytes(position - self.start + _LEADER_EPOCH_OFFSET, 4), "big",
                                            signed=True) for position in at], dtype=np.int32)

        return self._from_headers(positions, from_map, by_reads)

    def search_for(self, target_offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """The first batch at or after ``starting_position`` whose last offset is >= ``target_offset``:
        its ``(last offset, position, size)``, or ``None`` (Kafka: ``searchForOffsetWithSize``, 0.10.1's name;
        0.10.0's ``searchFor``.  Both compared the frame's offset, which for a v2 batch is its base offset;
        3.x compares the last offset, as here, so a target inside a batch finds that batch).  Positions are
        file positions.
        """
        start = self.start + starting_position
        channel = self._channel
        if not channel.mappable:
            position, size, last_offset, stop, reason = _search_by_reads(channel, start, self.end, target_offset)
        else:
            with channel.lock:
                end = self.end  # under the lock, as in scan
                if start >= end:
                    return None
                position, size, last_offset, stop, reason = _impl.core.search_for_offset(
                    channel.mapped(end), start, end, target_offset)
        if position >= 0:
            return LogOffsetPosition(last_offset, position, size)
        self._raise_for(ScanStop(reason), stop, INT32_MAX)
        return None

    def batches(self, *, max_entry_size: int = INT32_MAX,
                max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[RecordBatch]:
        """The set's batches, shallowly (Kafka: ``batches`` / 0.10.1 ``shallowIterator``).

        A partial entry at the end is not returned (it is a write in progress); corrupt framing raises
        :class:`CorruptRecordError` with the file and position.  Batches are read into memory
        :data:`READ_CHUNK_BYTES` at a time and report their positions in the file.
        """
        result = self.scan(check_crc=False, stop_on_invalid=False, max_entry_size=max_entry_size)
        rows = result.batches
        positions = rows["position"].tolist()
        sizes = rows["size"].tolist()
        magics = rows["magic"].tolist()
        i = 0
        n = len(positions)
        while i < n:
            chunk_start = positions[i]
            j = i + 1
            while j < n and positions[j] + sizes[j] - chunk_start <= READ_CHUNK_BYTES:
                j += 1
            chunk = self._channel.pread(chunk_start, positions[j - 1] + sizes[j - 1] - chunk_start)
            for k in range(i, j):
                kind = DefaultRecordBatch if magics[k] == 2 else LegacyRecordBatch
                yield kind(chunk, positions[k] - chunk_start, sizes[k], max_decompressed_size, chunk_start)
            i = j
        self._raise_for(result.stop_reason, result.stop_position, max_entry_size)

    def memory_chunks(self, rows: npt.NDArray[Any] | None = None, chunk_bytes: int = MEMORY_CHUNK_BYTES, *,
                      reuse: ChunkBuffer | None = None) -> Iterator[tuple[int, MemoryRecords]]:
        """The set's whole batches as :class:`MemoryRecords` of about ``chunk_bytes`` each (a batch larger
        than that is a chunk of its own), with the file position each chunk starts at.

        ``rows`` are the scan rows to read (default: a scan of the whole set, stopping before a partial
        or corrupt tail).  This is how a reader decodes a whole segment with the multi-batch kernels
        while holding only one chunk in memory.

        With ``reuse`` every chunk is read into that :class:`ChunkBuffer`, so a chunk's bytes are
        overwritten when the next is asked for: for a reader that copies out what it keeps (record objects)
        before that.
        """
        if rows is None:
            rows = self.scan(check_crc=False, stop_on_invalid=False).batches
        for start, size, _i, _j in _chunk_spans(rows, chunk_bytes):
            yield start, MemoryRecords(self._read_chunk(start, size, reuse))

    def _read_chunk(self, start: int, size: int, reuse: ChunkBuffer | None) -> bytes | memoryview:
        if reuse is None:
            return self._channel.pread(start, size)
        view = reuse.view(size)
        got = self._channel.read_into(view, start)
        if got != size:
            raise KafkaStorageError(f"Short read from {self._channel.path}: {got} of {size} bytes at position {start}")
        return view

    def scanned_chunks(self, starting_position: int = 0, chunk_bytes: int = MEMORY_CHUNK_BYTES, *,
                       reuse: ChunkBuffer | None = None
                       ) -> Iterator[tuple[int, bytes | memoryview, npt.NDArray[Any]]]:
        """The set's whole entries from ``starting_position`` in memory, about ``chunk_bytes`` at a time (an
        entry larger than that whole), each with its scan rows: yields ``(file position of the chunk, its
        bytes, the rows of its entries)``, row positions relative to the chunk.  The rows are those of
        ``scan(check_crc=False, stop_on_invalid=False)``, cut where the chunks are; corrupt framing after the
        last whole entry raises (:meth:`raise_for_stop`) once every chunk before it is handed out, and a
        reader that stops early never meets it.

        A file that is not mapped is read once: each read is scanned where it lies and the entry it ends
        inside is read again at the start of the next (a scan first and the chunks after would read it
        twice).  A mapped one is scanned over its map, then read by chunks.  With ``reuse``, as for
        :meth:`memory_chunks`: a chunk's bytes are overwritten when the next is asked for.
        """
        start = self.start + starting_position
        if not self._channel.mappable:
            buffer = reuse if reuse is not None else _FreshBuffer()
            stop, reason = yield from _scanned_reads(self._channel, start, self.end, chunk_bytes, False, False,
                                                     INT32_MAX, INT64_MAX, buffer)
            self._raise_for(reason, stop, INT32_MAX)
            return
        scan = self.scan(check_crc=False, stop_on_invalid=False, starting_position=starting_position)
        rows = scan.batches
        for position, size, i, j in _chunk_spans(rows, chunk_bytes):
            chunk_rows = rows[i:j].copy()
            chunk_rows["position"] -= position
            yield position, self._read_chunk(position, size, reuse), chunk_rows
        self.raise_for_stop(scan)

    def __iter__(self) -> Iterator[RecordBatch]:
        return self.batches()

    def records(self, *, check_crcs: bool = True) -> Iterator[Record]:
        """Every record of every batch, control records included (deep iteration; Kafka: ``records``).

        As :meth:`MemoryRecords.records <kafkalog.record.MemoryRecords.records>`: each batch's CRC is checked
        before its records are returned unless ``check_crcs=False``, and a mismatch raises
        :class:`CorruptRecordError` naming this file and the batch's position, after the records before it.
        A partial batch at the end (a write in progress, or a fetch cut at its size limit) is not read; corrupt
        framing raises.

        This is how a fetch's records are read (``Log.read(...).records.records()``), and it is the consumer
        view's decode (:meth:`Log.records <kafkalog.log.reads.LogReads.records>`): the set is scanned and read a
        chunk at a time into one reused buffer, and each chunk's records are made by :meth:`chunk_record_runs`,
        a kernel call per run of batches, handed out by ``itertools.chain`` with no Python frame per record.
        Nothing is read until the first record is asked for.
        """
        return itertools.chain.from_iterable(self._record_runs(check_crcs))

    def _record_runs(self, check_crcs: bool) -> Iterator[Iterable[Record]]:
        # Records hold copies of their bytes, all made before the next chunk is read: one buffer serves every
        # chunk (a fresh one a chunk page-faults its memory in anew).
        buffer = ChunkBuffer()
        for position, data, rows in self.scanned_chunks(0, MEMORY_CHUNK_BYTES, reuse=buffer):
            yield from self.chunk_record_runs(position, data, rows, check_crcs=check_crcs)

    def chunk_record_runs(self, position: int, data: bytes | memoryview, rows: npt.NDArray[Any], *,
                          hidden: npt.NDArray[np.bool_] | None = None,
                          check_crcs: bool = True) -> Iterator[Iterable[Record]]:
        """The records of the batches ``rows`` of a chunk of this set, ``data``, read from file position
        ``position`` (a chunk :meth:`scanned_chunks` gave, and its rows or some of them, consecutive): one
        iterable per run the record layer decodes at once, less the batches ``hidden`` marks
        (:meth:`MemoryRecords.records_of <kafkalog.record.MemoryRecords.records_of>`, over the rows the scan
        found, so the chunk is not scanned again for its framing).

        The one decode pass of every reader of a segment's records, :meth:`records` and the consumer view's.
        A bad CRC (with ``check_crcs``) or a malformed record raises, once the records of the batches before it
        are handed out, with this file and the file position of its batch.
        """
        try:
            yield from MemoryRecords(data).records_of(rows, hidden=hidden, check_crcs=check_crcs)
        except CorruptRecordError as e:
            raise e.at(None if e.position is None else position + e.position, str(self._file)) from e

    def chunk_column_runs(self, position: int, data: bytes | memoryview, rows: npt.NDArray[Any], *,
                          hidden: npt.NDArray[np.bool_] | None = None,
                          check_crcs: bool = True) -> Iterator[RecordColumns]:
        """:meth:`chunk_record_runs` as columns: the records of the batches ``rows`` of the chunk ``data`` (read
        from file position ``position``), less the batches ``hidden`` marks, one :class:`RecordColumns` per run
        the record layer decodes at once (:meth:`MemoryRecords.columns_of
        <kafkalog.record.MemoryRecords.columns_of>`, over the rows the scan found).  Each set's ``batches`` are
        its batches' rows with their positions in this file.

        A bad CRC (with ``check_crcs``) or a malformed record raises, once the columns of the batches before it
        are handed out, with this file and the file position of its batch.  An uncompressed run's ``data`` is
        ``data`` itself: a caller that keeps the columns past the next chunk reads each chunk into memory of its
        own.
        """
        try:
            for columns in MemoryRecords(data).columns_of(rows, hidden=hidden, check_crcs=check_crcs):
                batches = columns.batches
                if batches is not None and position:
                    batches = batches.copy()
                    batches["position"] += position
                yield RecordColumns(columns.records, columns.headers, columns.data, columns.starts, batches)
        except CorruptRecordError as e:
            raise e.at(None if e.position is None else position + e.position, str(self._file)) from e

    def search_for_timestamp(self, target_timestamp: int, starting_position: int = 0,
                             starting_offset: int = 0) -> TimestampAndOffset | None:
        """The first record with timestamp >= ``target_timestamp`` and offset >= ``starting_offset``, in
        the first batch from ``starting_position`` whose max timestamp reaches the target (Kafka:
        ``searchForTimestamp``); ``None`` when no batch does."""
        # Walk the batches a few hundred at a time, as Kafka's iteration stops at the first that qualifies.
        position = self.start + starting_position
        while position < self.end:
            rows, stop, _reason = self._scan_from(position, False, False, INT32_MAX, _SEARCH_STEP_BATCHES)
            for row in rows[rows["max_timestamp"] >= target_timestamp]:
                for batch in MemoryRecords(self._channel.pread(int(row["position"]), int(row["size"]))).batches():
                    # A chunk of records at a time, as Kafka iterates them: a batch may hold millions.
                    for chunk in batch.record_chunks(check_crcs=False):
                        for record in chunk:
                            if record.timestamp >= target_timestamp and record.offset >= starting_offset:
                                return TimestampAndOffset(record.timestamp, record.offset,
                                                          maybe_leader_epoch(batch.partition_leader_epoch))
            if len(rows) == 0:
                break
            position = int(stop)
        return None

    def batches_from(self, starting_position: int) -> Iterator[RecordBatch]:
        """The batches from ``starting_position`` (relative to this set) to its end (Kafka:
        ``batchesFrom``)."""
        return self.read(starting_position, self.size_in_bytes() - starting_position).batches()

    def largest_timestamp_after(self, starting_position: int) -> TimestampAndOffset:
        """The largest batch max timestamp from ``starting_position`` on, with that batch's last offset;
        ``(-1, -1)`` when there is no batch (Kafka: ``largestTimestampAfter``)."""
        rows = self.scan(check_crc=False, stop_on_invalid=False, starting_position=starting_position).batches
        if len(rows) == 0:
            return TimestampAndOffset(-1, -1)
        best = int(rows["max_timestamp"].argmax())
        timestamp = int(rows["max_timestamp"][best])
        if timestamp < 0:
            return TimestampAndOffset(-1, -1)
        return TimestampAndOffset(timestamp, int(rows["last_offset"][best]))
