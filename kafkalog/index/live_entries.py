"""Where an index file's entries end: its live entries, and the preallocated zero tail after them.

A broker creates an index file preallocated to ``segment.index.bytes`` rounded down to whole entries (Kafka 3.8.0
``AbstractIndex.createAndAssignMmap``: ``setLength``, a sparse run of zeros), writes its entries from the start,
and cuts the file to them only when the segment rolls (``LogSegment.onBecomeInactiveSegment``) or closes
(``AbstractIndex.close``: ``trimToValidSize``).  So the active segment of a running broker, or of a directory a
crash left, has index files of this shape::

    entry 0 | entry 1 | ... | entry n-1 | 00000000 | 00000000 | ... | 00000000   (length: a whole number of slots)

Kafka itself takes every whole slot of an existing file as an entry (the buffer's position is its limit rounded
down) and never looks: after a crash it rebuilds the indexes of every segment past the recovery point, the
active one among them, and after a clean shutdown the files were trimmed.  Its ``sanityCheck`` fails on such a
time index (its "last entry" is zeros, a timestamp below the first) and passes such an offset index (relative
offset 0 is not below the base).  A reader of a live or crashed broker's directory may not rebuild anything, so it
must tell that shape apart from a damaged file.  The rule (:func:`index_extent`) is the one ``DumpLogSegments``
and ``kafkalog verify`` read indexes by:

- the length is a whole number of entries; otherwise the file is corrupt (Kafka's check);
- the live entries end at the first all-zero slot.  Slot 0, all zero, is an entry only where a broker could have
  written one (``zero_first_entry``, the caller's knowledge of the segment: an offset index's ``(+0, position 0)``
  needs a batch at position 0, :func:`offset_index_zero_first_entry`; a time index's ``(timestamp 0, +0)`` needs a
  first batch whose max timestamp is 0, :func:`time_index_zero_first_entry`, as ``TimeIndex.maybeAppend`` starts
  from no timestamp, -1);
- every byte from that slot to the end of the file is zero (only the file's data regions are read: holes are
  zeros): a zero slot followed by data is a zeroed entry among live ones, which no broker writes;
- the live entries then get Kafka's sanity check (``OffsetIndex.sanityCheck``, ``TimeIndex.sanityCheck``), which
  the index classes and ``verify`` apply to them.

Which segments may carry such a tail is the caller's rule: a broker trims an index when its segment rolls, so a
read-only open accepts one on the last segment only (:meth:`kafkalog.segment.LogSegment.check_index_files`);
``verify`` reports one anywhere as a note.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..fsutil import data_regions

__all__ = [
    "TAIL_READ_BUDGET",
    "IndexExtent",
    "first_nonzero_byte",
    "first_nonzero_read",
    "index_extent",
    "offset_index_zero_first_entry",
    "time_index_zero_first_entry",
]

#: The most bytes of a zero tail read to see that it is all zeros (holes are not read: a broker's preallocated
#: tail is sparse, and the tail of a file preallocated for real costs a few milliseconds a MiB).  Past it the
#: tail is taken as zeros, unread (:attr:`IndexExtent.tail_complete`): a reader uses only the live entries.
TAIL_READ_BUDGET = 64 * 1024 * 1024
#: Entries read at a time while looking for the end of the live entries: 4096 first (most indexes hold fewer),
#: each next read twice the last, up to this many.
_READ_MAX_ENTRIES = 1 << 17
_CHUNK_BYTES = 1 << 20

#: ``read(position, size)``: up to ``size`` bytes of the file from ``position`` (fewer at its end).
Read = Callable[[int, int], bytes]
#: ``first_nonzero(start, end, budget)``: where the first non-zero byte of ``[start, end)`` is (``None``: none
#: seen), and whether the whole range was looked at within ``budget`` bytes read.
FirstNonzero = Callable[[int, int, int], tuple[int | None, bool]]


@dataclass(frozen=True)
class IndexExtent:
    """What :func:`index_extent` found in an index file of ``length`` bytes and ``entry_size``-byte entries."""

    length: int
    entry_size: int
    #: How many entries are live: those before the first zero-filled slot (every slot when there is none).
    entries: int
    #: The bytes of the live entries, in order, as read.
    chunks: tuple[bytes, ...]
    #: The zero-filled slot the live entries end at (``None``: they end at the end of the file).
    zero_from: int | None = None
    #: Where data follows that slot (``None``: the rest of the file is zeros, as far as it was read).
    nonzero_after: int | None = None
    #: Whether the whole tail was read (``False``: past :data:`TAIL_READ_BUDGET` it was not).
    tail_complete: bool = True

    @property
    def slots(self) -> int:
        """Whole entries the file has room for."""
        return self.length // self.entry_size

    @property
    def whole(self) -> bool:
        """Whether the length is a whole number of entries (Kafka's check of the file's length)."""
        return self.length % self.entry_size == 0

    @property
    def zero_tail(self) -> bool:
        """Whether the file is live entries followed by a preallocated zero tail: a broker's untrimmed index."""
        return self.whole and self.zero_from is not None and self.nonzero_after is None

    @property
    def zeroed_entry(self) -> bool:
        """Whether a zero-filled slot is followed by data: a zeroed entry among live ones, which no broker
        writes (the index is corrupt)."""
        return self.zero_from is not None and self.nonzero_after is not None


def offset_index_zero_first_entry(segment_has_batch: bool) -> bool:
    """Whether an all-zero first offset-index slot can be an entry: ``(offset +0, position 0)`` is the entry a
    broker writes over a first batch that ends at the base offset, so only a segment with a batch has one."""
    return segment_has_batch


def time_index_zero_first_entry(first_batch_max_timestamp: int | None) -> bool:
    """Whether an all-zero first time-index slot can be an entry: ``(timestamp 0, offset +0)`` is written only
    when the segment's first batch has max timestamp 0 (``None``: the segment has no batch), since the index
    starts from no timestamp (-1) and takes only later ones (Kafka: ``TimeIndex.maybeAppend``)."""
    return first_batch_max_timestamp == 0


def index_extent(length: int, entry_size: int, read: Read, first_nonzero: FirstNonzero, *,
                 zero_first_entry: bool, budget: int = TAIL_READ_BUDGET) -> IndexExtent:
    """Find where the entries of an index file of ``length`` bytes end (the module docstring's rule).

    The file is read a chunk at a time until its first all-zero slot, so this costs what the index holds, not
    its length (a broker preallocates 10 MiB, sparse); the tail after that slot is looked at through
    ``first_nonzero``, at most ``budget`` bytes of it read.  A file whose length is not a whole number of entries
    is not read (:attr:`IndexExtent.whole` is false); a file cut while it is read ends where the reading did.
    """
    if length % entry_size:
        return IndexExtent(length, entry_size, 0, ())
    slots = length // entry_size
    parts: list[bytes] = []
    done, step = 0, 4096
    while done < slots:
        data = read(done * entry_size, min(step, slots - done) * entry_size)
        count = len(data) // entry_size
        if count == 0:
            break  # cut short while it was read: what was read is what there is
        rows = np.frombuffer(data, dtype=np.uint8, count=count * entry_size).reshape(count, entry_size)
        zero = np.flatnonzero(~rows.any(axis=1))
        if done == 0 and zero_first_entry:
            zero = zero[zero > 0]
        if len(zero):
            live = int(zero[0])
            parts.append(bytes(data[:live * entry_size]))
            end = done + live
            found, complete = first_nonzero((end + 1) * entry_size, slots * entry_size, budget)
            return IndexExtent(length, entry_size, end, tuple(parts), end, found, complete)
        parts.append(bytes(data[:count * entry_size]))
        done += count
        step = min(step * 2, _READ_MAX_ENTRIES)
    return IndexExtent(length, entry_size, done, tuple(parts))


def first_nonzero_byte(fd: int, start: int, end: int, budget: int) -> tuple[int | None, bool]:
    """:data:`FirstNonzero` of an open file: only its data regions are read (``SEEK_DATA``/``SEEK_HOLE``: a hole
    reads as zeros), so a sparse preallocated tail costs a seek or two."""
    spent = 0
    for position, stop in data_regions(fd, start, end):
        while position < stop:
            if spent >= budget:
                return None, False
            data = os.pread(fd, min(stop - position, _CHUNK_BYTES, budget - spent), position)
            if not data:
                return None, True  # the file was cut short while it was read
            found = _first_nonzero_in(data)
            if found is not None:
                return position + found, True
            position += len(data)
            spent += len(data)
    return None, True


def first_nonzero_read(read: Read, start: int, end: int, budget: int) -> tuple[int | None, bool]:
    """:data:`FirstNonzero` of what ``read`` reads (an object read by range, a file's copy in memory), which has
    no holes to skip."""
    position = start
    while position < end:
        if position - start >= budget:
            return None, False
        data = read(position, min(end - position, _CHUNK_BYTES, start + budget - position))
        if not data:
            return None, True
        found = _first_nonzero_in(data)
        if found is not None:
            return position + found, True
        position += len(data)
    return None, True


def _first_nonzero_in(data: bytes) -> int | None:
    rest = len(data.lstrip(b"\0"))
    return None if rest == 0 else len(data) - rest
