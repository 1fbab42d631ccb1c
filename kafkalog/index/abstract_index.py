"""What the offset and time indexes share: the file, its map, its size and the slot search (Kafka:
``AbstractIndex``; 0.10.1.1 ``kafka/log/AbstractIndex.scala``, 3.8.0 ``storage/.../log/AbstractIndex.java``).

Lifecycle (the same for both indexes): a new file is created preallocated to ``max_index_size`` rounded down
to whole entries and memory-mapped; an existing file is mapped at its length and every whole entry in it is
taken as valid (so an index left untrimmed by a crash reads as full of zero entries until recovery rebuilds
it); ``trim_to_valid_size`` (on close and roll) cuts the file to its entries.

The mmap rule (design.md §3): no view of the map outlives a call.  Searches hand the mmap object (a map
of the file, or a read-only index's private copy) to the ``index_search`` and ``index_lookup`` kernels under
the index lock, and ``resize``/``close`` take the same lock, so the map can always be resized or closed.  The
one exception is a read-only index's ``lookup``, which takes no lock (it is every fetch's first step): its copy
never changes once read and is never resized, and ``close`` drops it rather than closing it, after marking the
index closed, so a lookup (which reads the copy, then the flag) either finds the index closed or searches a
copy that stays mapped until the lookup lets go of it.

A read-only index (``writable=False``) never writes, resizes or trims its file, and does not map it
either: the writer that owns the file trims it on every roll and close, and a lookup that touched a
mapped page past the new end would kill the reader with SIGBUS.  It reads the file once, when it is
opened, into private memory (the file's holes are skipped and cost nothing) and answers from that copy.
A missing file reads as an empty index, so a broker's directory with unsaved indexes still opens.

A writable index takes disk blocks for a page of its file before it writes an entry there through the
map (:meth:`AbstractIndex.reserve`); the preallocated space stays sparse as Kafka leaves it, but a page
written through a map with no block behind it (a full disk) kills the process with SIGBUS, where taking
the block first is a :class:`~kafkalog.errors.KafkaStorageError`.  For the same reason an existing file
opened writable gets blocks for the whole of its entries first (on tmpfs even reading a hole through a
map needs a page).
"""


from __future__ import annotations

import mmap
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Self

from .. import _impl
from .._common import INT32_MAX, IndexKind
from ..errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    IndexOffsetOverflowError,
    KafkaStorageError,
    ReadOnlyError,
)
from ..fsutil import allocate, data_regions, open_regular, storage_error
from .live_entries import IndexExtent, first_nonzero_read, index_extent

__all__ = ["DEFAULT_MAX_INDEX_SIZE", "AbstractIndex", "OffsetPosition", "TimestampOffset"]

#: ``segment.index.bytes`` default: 10 MiB.
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
#: ``madvise`` advice for a writable index's map, where the platform has it (see ``_remap``).
_MADV_RANDOM: int | None = getattr(mmap, "MADV_RANDOM", None)


class OffsetPosition(NamedTuple):
    """An offset-index entry: an absolute ``offset`` and the file ``position`` of its batch."""

    offset: int
    position: int


class TimestampOffset(NamedTuple):
    """A time-index entry: a ``timestamp`` and the absolute ``offset`` it was reached by."""

    timestamp: int
    offset: int


def _round_down(n: int, factor: int) -> int:
    return factor * (n // factor)


class AbstractIndex:
    """What the offset and time indexes share: the file, its mmap, its size and the slot search.

    Kafka: ``AbstractIndex``.  Subclasses declare ``ENTRY_SIZE``, the two kernel search kinds, how to
    parse an entry, which search kind finds offsets, and their own ``sanity_check`` and append rule.
    """

    ENTRY_SIZE: ClassVar[int]
    KEY_KIND: ClassVar[IndexKind]
    VALUE_KIND: ClassVar[IndexKind]
    # The kind whose column holds offsets: the key of an offset index, the value of a time index.
    OFFSET_KIND: ClassVar[IndexKind]
    # How Kafka's messages name the file: "index" or "time index".
    _DESCRIPTION: ClassVar[str]

    def __init__(self, path: str | os.PathLike[str], base_offset: int, max_index_size: int | None = None,
                 writable: bool = True, *, ignore_file: bool = False) -> None:
        self._lock = threading.RLock()
        self._path = Path(path)
        self.base_offset = base_offset
        # What lookup answers when no entry is at or below the target: made once (the base offset never
        # changes), so a lookup hands it out with no object made.
        self._no_entry = self._absent_entry()
        self.max_index_size = DEFAULT_MAX_INDEX_SIZE if max_index_size is None or max_index_size < 0 \
            else max_index_size
        self.writable = writable
        # The open file of a writable index (a read-only one keeps no file open: see _open_read_only).
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        # A read-only index's length: the length of the file when it was read.
        self._copied_length = 0
        # How many bytes from the start of the file are known to have blocks behind them (_reserve).
        self._allocated = 0
        self._closed = False
        try:
            if ignore_file and writable:
                raise IllegalArgumentError("Only a read-only index can ignore its file")
            newly_created = self._open_writable() if writable else self._open_read_only(ignore_file)
        except OSError as e:
            self._release()
            if isinstance(e, KafkaStorageError):
                raise
            raise KafkaStorageError(f"Cannot open index file {self._path}: {e}") from e
        except BaseException:
            self._release()
            raise
        # A new file is all zeros and holds nothing yet; an existing file's whole entries are all taken
        # as valid (Kafka: position = limit rounded down), which recovery corrects after a crash.
        self._entries = 0 if newly_created else self._length() // self.ENTRY_SIZE
        self._after_resize()

    # -- opening and mapping ------------------------------------------------------------------------

    def _open_writable(self) -> bool:
        """Kafka's constructor: create and preallocate a new file, or map an existing one whole.
        Returns whether the file was created.

        The preallocated space stays sparse, as Kafka's ``setLength`` leaves it: blocks are taken a page at
        a time as entries are written (:meth:`_reserve`).  In an existing file, every page of the entries
        it is taken to hold gets its blocks now, before the map can touch one (after a crash those include
        the never-written, maybe sparse, preallocated tail, which recovery reads and rewrites): on a full
        tmpfs even reading such a page through the map would kill the process with SIGBUS.
        """
        newly_created = not self._path.exists()
        if newly_created and self.max_index_size < self.ENTRY_SIZE:
            raise IllegalArgumentError(f"Invalid max index size: {self.max_index_size}")
        self._fd = fd = open_regular(self._path, os.O_RDWR | os.O_CREAT)
        if newly_created:
            os.ftruncate(fd, _round_down(self.max_index_size, self.ENTRY_SIZE))
        else:
            entry_bytes = _round_down(self._length(), self.ENTRY_SIZE)
            self._allocated = _allocated_prefix(fd)
            if self._allocated < entry_bytes:
                allocate(fd, self._allocated, entry_bytes - self._allocated, self._path,
                         f"the entries of {self._DESCRIPTION}")
                self._allocated = entry_bytes
        self._remap()
        return newly_created

    def _open_read_only(self, ignore_file: bool = False) -> bool:
        """Copy the file as it is into private memory; a missing file, or one the caller cannot trust
        (``ignore_file``: it failed its sanity check and a read-only open may not rebuild it), reads as an
        empty index.

        A read-only index does not map its file: the broker (or a ``Log``) that owns it trims it on every
        roll and close and cuts it on recovery, and a lookup that touched a mapped page past the new end
        would kill the reader with SIGBUS.  The copy is a private anonymous map into which the file's data
        is read with ``pread``; the file's holes are skipped (they read as zeros without costing memory), so
        a sparse preallocated index costs only the entries it holds.  So a read-only index is what its file
        was when it was opened, as its entry count always was.
        """
        if ignore_file:
            return False
        try:
            fd = open_regular(self._path, os.O_RDONLY)
        except FileNotFoundError:
            return False  # an index the broker never saved reads as empty; nothing is created
        try:
            self._copied_length = os.fstat(fd).st_size
            self._map = _private_copy(fd, self._copied_length)
            if self._map is not None and self._copied_length > len(self._map):
                self._copied_length = len(self._map)  # cut while it was read: what was read is the index
        finally:
            os.close(fd)
        return False

    @classmethod
    def from_bytes(cls, data: bytes, path: str | os.PathLike[str], base_offset: int) -> Self:
        """A read-only index holding ``data`` as its file's bytes (kafkalog's: an index object read from a
        remote store with one ranged read, :func:`kafkalog.urls.channel.read_index`).  ``path`` names it
        in messages; nothing is opened there.  As for a file, every whole entry of ``data`` counts."""
        index = cls(path, base_offset, writable=False, ignore_file=True)
        if data:
            copy = mmap.mmap(-1, len(data))
            copy[:] = data
            with index._lock:
                index._map = copy
                index._copied_length = len(data)
                index._entries = len(data) // cls.ENTRY_SIZE
                index._after_resize()
        return index

    def _length(self) -> int:
        if self._fd is None:
            return self._copied_length
        return os.fstat(self._fd).st_size

    def _remap(self) -> None:
        """Map the whole file afresh (a writable index; called with the lock held, or from the
        constructor)."""
        if self._map is not None:
            self._map.close()
            self._map = None
        length = self._length()
        if length > 0 and self._fd is not None:
            self._map = mmap.mmap(self._fd, length, access=mmap.ACCESS_WRITE)
            if _MADV_RANDOM is not None:
                # No read-around: the first fault in a map of a sparse preallocated file otherwise reads the
                # whole file into the page cache (2-3 ms for the default 10 MiB on Linux 6.x), once per new
                # index; entries are written a page at a time and looked up by binary search.
                self._map.madvise(_MADV_RANDOM)

    def _reserve(self, end: int) -> None:
        """Make sure bytes ``[0, end)`` of the file have blocks behind them before the map writes there
        (lock held): a page of a sparse file written through a map on a full disk kills the process with
        SIGBUS, where allocating it first is a :class:`KafkaStorageError`.  Blocks are taken a page at a
        time, never past the end of the file."""
        if end <= self._allocated or self._fd is None:
            return
        target = min(-(-end // mmap.PAGESIZE) * mmap.PAGESIZE, self._length())
        if target > self._allocated:
            allocate(self._fd, self._allocated, target - self._allocated, self._path, f"the {self._DESCRIPTION}")
            self._allocated = target

    def reserve(self, entries: int = 1) -> None:
        """Take the blocks for the next ``entries`` entries now (kafkalog's; Kafka writes through the map and
        never asks).  ``LogSegment.append`` calls it before it writes the log, so a full disk stops the
        append before any of it is written, not between the log and its index.

        Raises:
            KafkaStorageError: the disk is full, naming the file.
        """
        with self._lock:
            self._check_writable("append to")
            self._reserve((self._entries + entries) * self.ENTRY_SIZE)

    def _after_resize(self) -> None:
        """Recompute what depends on the mapped length (subclasses re-read their last entry)."""
        self._max_entries = self._length() // self.ENTRY_SIZE
        self._load_last_entry()

    def _absent_entry(self) -> OffsetPosition | TimestampOffset:
        """Kafka's answer of ``lookup`` when no entry is at or below the target."""
        raise NotImplementedError

    def _load_last_entry(self) -> None:
        raise NotImplementedError

    def _entry_at(self, n: int) -> OffsetPosition | TimestampOffset:
        raise NotImplementedError

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError(f"Index {self._path} is closed")

    def _check_writable(self, what: str) -> None:
        self._check_open()
        if not self.writable:
            raise ReadOnlyError(f"Cannot {what} index {self._path}: it was opened read-only")

    # -- size ---------------------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def file(self) -> Path:
        """Kafka's ``file``: the index's path."""
        return self._path

    @property
    def entries(self) -> int:
        """How many entries the index holds."""
        return self._entries

    @property
    def max_entries(self) -> int:
        """How many entries fit the file as it is mapped."""
        return self._max_entries

    def size_in_bytes(self) -> int:
        """Bytes of valid entries (Kafka: ``sizeInBytes``)."""
        return self._entries * self.ENTRY_SIZE

    def length(self) -> int:
        """The file's length, preallocated space included."""
        with self._lock:
            return self._length()

    def is_full(self) -> bool:
        """Kafka: ``isFull``.  The time index overrides it to keep a slot for the roll."""
        return self._entries >= self._max_entries

    def resize(self, new_size: int) -> bool:
        """Set the file (and map) to ``new_size`` rounded down to whole entries (Kafka: ``resize``).

        Returns ``False`` when the size does not change (modern Kafka; 0.10.1 returned nothing).  A size that
        cannot hold the live entries is an :class:`IllegalArgumentError`, as in Kafka (whose new mmap refuses
        the old write position); kafkalog refuses before it touches the file, where Kafka has already cut it.
        """
        with self._lock:
            self._check_writable("resize")
            rounded = _round_down(new_size, self.ENTRY_SIZE)
            if rounded == self._length():
                return False
            live = self._entries * self.ENTRY_SIZE
            if rounded < live:
                raise IllegalArgumentError(
                    f"Cannot resize {self._DESCRIPTION} {self._path} to {rounded} bytes: its {self._entries} "
                    f"entries take {live} (newPosition > limit: ({live} > {rounded}))")
            if self._map is not None:
                self._map.close()
                self._map = None
            assert self._fd is not None
            os.ftruncate(self._fd, rounded)
            self._allocated = min(self._allocated, rounded)
            self._remap()
            self._after_resize()
            return True

    def trim_to_valid_size(self) -> None:
        """Cut the file to its entries (Kafka: ``trimToValidSize``), on close and when the segment rolls."""
        with self._lock:
            self.resize(self._entries * self.ENTRY_SIZE)

    def reset(self) -> None:
        """Drop every entry and give the file its full size again (Kafka: ``reset``), before a rebuild."""
        with self._lock:
            self.truncate()
            self.resize(self.max_index_size)

    def truncate(self) -> None:
        """Remove every entry (Kafka: ``truncate``)."""
        self.truncate_to_entries(0)

    def _checked_entry(self, n: int) -> OffsetPosition | TimestampOffset:
        """Entry ``n``, or Kafka's error for a slot outside the live entries (the body of both ``entry``s)."""
        with self._lock:
            self._check_open()
            if n < 0 or n >= self._entries:
                raise IllegalArgumentError(
                    f"Attempt to fetch the {n}th entry from {self._DESCRIPTION} {self._path}, which has size "
                    f"{self._entries}."
                )
            return self._entry_at(n)

    def _check_length_is_whole_entries(self) -> None:
        """The last step of both ``sanityCheck``s: the file holds a whole number of entries; lock held."""
        length = self._length()
        if length % self.ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"{self._DESCRIPTION.capitalize()} file {self._path} is corrupt, found {length} bytes which is "
                f"neither positive nor a multiple of {self.ENTRY_SIZE}."
            )

    def take_live_entries(self, zero_first_entry: bool) -> IndexExtent:
        """Take only the live entries of a read-only index whose file ends in a preallocated zero tail, the
        active segment of a live or crashed broker (kafkalog's; :mod:`kafkalog.index.live_entries` gives the rule,
        ``zero_first_entry`` whether an all-zero first slot can be an entry of this segment).  Kafka takes every
        whole slot, and rebuilds the index before it reads it; a reader in place cannot, and a zero "last entry"
        fails the time index's sanity check.  The tail is looked at in this index's copy of the file.  Returns
        what was found; an index with no zero tail keeps Kafka's count.

        Raises:
            CorruptIndexError: a zero-filled slot is followed by data: a zeroed entry among live ones.
            IllegalStateError: the index is writable (its writer knows its entries).
        """
        with self._lock:
            self._check_open()
            if self.writable:
                raise IllegalStateError(f"Index {self._path} is writable: only a read-only index reads its zero "
                                        "tail")
            copy, length = self._map, self._copied_length

            def read(position: int, n: int) -> bytes:
                return b"" if copy is None else copy[position:position + n]

            extent = index_extent(length, self.ENTRY_SIZE, read,
                                  lambda start, end, budget: first_nonzero_read(read, start, end, budget),
                                  zero_first_entry=zero_first_entry)
            if extent.zeroed_entry:
                assert extent.nonzero_after is not None
                raise CorruptIndexError(
                    f"Corrupt {self._DESCRIPTION} found, {self._DESCRIPTION} file ({self._path}) has its entry "
                    f"{extent.zero_from} zero-filled, which ends an index's entries, but entry "
                    f"{extent.nonzero_after // self.ENTRY_SIZE} after it is not")
            if extent.zero_tail and extent.entries != self._entries:
                self._entries = extent.entries
                self._load_last_entry()
            return extent

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset`` (Kafka: ``OffsetIndex.truncateTo`` and
        ``TimeIndex.truncateTo``, the same steps, each searching the column that holds its offsets)."""
        with self._lock:
            self._check_writable("truncate")
            slot = self._slot(offset, self.OFFSET_KIND)
            if slot < 0:
                new_entries = 0
            elif self._entry_at(slot).offset == offset:
                new_entries = slot
            else:
                new_entries = slot + 1
            self.truncate_to_entries(new_entries)

    def truncate_to_entries(self, entries: int) -> None:
        """Keep the first ``entries`` entries (Kafka: ``truncateToEntries``)."""
        with self._lock:
            self._check_writable("truncate")
            if not 0 <= entries <= self._entries:
                raise IllegalArgumentError(
                    f"Cannot truncate index {self._path} of {self._entries} entries to {entries} entries"
                )
            self._entries = entries
            self._load_last_entry()

    def flush(self) -> None:
        """Write the map's dirty pages to disk (Kafka: ``flush``, ``MappedByteBuffer.force``)."""
        with self._lock:
            if self.writable and self._map is not None and not self._closed:
                try:
                    self._map.flush()
                except OSError as e:
                    raise storage_error(e, f"Error while flushing {self._DESCRIPTION} {self._path}") from e

    def close(self) -> None:
        """Trim the file to its entries and release it (Kafka: ``close``).  Closing twice is harmless."""
        with self._lock:
            if self._closed:
                return
            try:
                if self.writable and self._fd is not None:
                    self.trim_to_valid_size()
            finally:
                self._release()

    def close_handler(self) -> None:
        """Release the file without trimming it (Kafka: ``closeHandler``), as before a delete."""
        with self._lock:
            self._release()

    def _release(self) -> None:
        # Closed first: a read-only index's lookup, which takes no lock, reads the copy and then this flag,
        # so it never finds the copy gone while the index still reads as open.
        self._closed = True
        if self._map is not None:
            if self.writable:
                self._map.close()
            # A read-only index's private copy is dropped, not closed: a lookup may hold it still, and it is
            # unmapped when the last holder lets go.
            self._map = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> bool:
        """Release and delete the file; ``False`` if it did not exist (Kafka: ``deleteIfExists``).
        A closed index can still be deleted; a read-only one never."""
        with self._lock:
            if not self.writable:
                raise ReadOnlyError(f"Cannot delete index {self._path}: it was opened read-only")
            self._release()
            try:
                self._path.unlink()
            except FileNotFoundError:
                return False
            return True

    def rename_to(self, path: str | os.PathLike[str]) -> None:
        """Rename the file atomically (Kafka: ``renameTo``); the new name is kept even if the rename fails.
        A closed index can be renamed, as in Kafka."""
        with self._lock:
            rename_index_file(self._path, path, self.writable, self._keep_path)

    def _keep_path(self, path: Path) -> None:
        self._path = path

    def update_parent_dir(self, parent: str | os.PathLike[str]) -> None:
        """Point at the same file name in another directory, after the directory was renamed (Kafka:
        ``updateParentDir``)."""
        with self._lock:
            self._path = Path(parent) / self._path.name

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- offsets and search -------------------------------------------------------------------------

    def relative_offset(self, offset: int) -> int:
        """``offset - base_offset``, checked to fit an int32 (Kafka: ``toRelative`` / ``relativeOffset``)."""
        relative = offset - self.base_offset
        if relative < 0 or relative > INT32_MAX:
            raise IndexOffsetOverflowError(
                f"Integer overflow for offset: {offset} ({self._path}): relative to base offset "
                f"{self.base_offset} it is {relative}"
            )
        return relative

    def can_append_offset(self, offset: int) -> bool:
        """Whether ``offset`` fits this index's relative range (Kafka: ``canAppendOffset``)."""
        return 0 <= offset - self.base_offset <= INT32_MAX

    def _slot(self, target: int, kind: IndexKind, smallest_upper_bound: bool = False) -> int:
        """The kernel's slot search over the live entries (Kafka: ``indexSlotRangeFor``); lock held."""
        if self._entries == 0 or self._map is None:
            return -1
        return int(_impl.core.index_search(self._map, self._entries, int(kind), target, self.base_offset,
                                           smallest_upper_bound))

    def largest_lower_bound_slot_for(self, target: int, by_value: bool = False) -> int:
        """Slot of the largest entry <= ``target``, or -1 (Kafka: ``largestLowerBoundSlotFor``)."""
        with self._lock:
            self._check_open()
            return self._slot(target, self.VALUE_KIND if by_value else self.KEY_KIND)

    def smallest_upper_bound_slot_for(self, target: int, by_value: bool = False) -> int:
        """Slot of the smallest entry >= ``target``, or -1 (Kafka: ``smallestUpperBoundSlotFor``)."""
        with self._lock:
            self._check_open()
            return self._slot(target, self.VALUE_KIND if by_value else self.KEY_KIND, True)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(path={str(self._path)!r}, base_offset={self.base_offset}, "
                f"entries={self._entries}, max_entries={self._max_entries}, writable={self.writable})")


def _allocated_prefix(fd: int) -> int:
    """How many bytes from the start of the file have blocks behind them: where its first hole is
    (``SEEK_HOLE``; the end of the file when it has none).  0 where the platform cannot tell."""
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_hole is None:
        return 0
    try:
        return os.lseek(fd, 0, seek_hole)
    except OSError:
        return 0


#: How much of an index file a read-only open reads with one ``preadv``.
_COPY_CHUNK_BYTES = 8 << 20


def _private_copy(fd: int, length: int) -> mmap.mmap | None:
    """The first ``length`` bytes of the file in a private anonymous map (``None`` for an empty file).

    Only the file's data is read (``SEEK_DATA`` / ``SEEK_HOLE``); its holes are left as the map's untouched
    pages, which read as zeros and take no memory.  If the file is cut while it is read, the map is cut to
    what was read.
    """
    if length <= 0:
        return None
    flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0) | getattr(mmap, "MAP_NORESERVE", 0)
    copy = mmap.mmap(-1, length, flags=flags)
    read_end = length
    with memoryview(copy) as view:
        for start, stop in data_regions(fd, 0, length):
            while start < stop:
                n = os.preadv(fd, [view[start:min(stop, start + _COPY_CHUNK_BYTES)]], start)
                if n == 0:
                    read_end = start  # the file was cut while it was read
                    break
                start += n
            if read_end < length:
                break
    if read_end < length:
        if read_end == 0:
            copy.close()
            return None
        copy.resize(read_end)
    return copy


def rename_index_file(current: Path, path: str | os.PathLike[str], writable: bool,
                      keep: Callable[[Path], None]) -> None:
    """Rename an index file atomically, when it exists, handing the new name to ``keep`` even if the rename
    fails (as Kafka sets the file's name before it moves it).  A read-only index is never renamed: a
    :class:`~kafkalog.errors.ReadOnlyError`, before anything changes."""
    if not writable:
        raise ReadOnlyError(f"Cannot rename index {current}: it was opened read-only")
    target = Path(path)
    try:
        if current.exists():
            os.replace(current, target)
    finally:
        keep(target)
