"""The time index of a segment, ``<base>.timeindex``: timestamps to offsets (Kafka: ``TimeIndex``;
0.10.1.1 ``kafka/log/TimeIndex.scala``, 3.8.0 ``storage/.../log/TimeIndex.java``).

On disk (big-endian, no header), 12-byte entries: timestamp int64 | relative offset int32.  Entries
increase strictly in timestamp and never decrease in offset.  An entry (T, O) says: up to and including
the batch whose last offset is O, the largest timestamp in the segment is T.  The last slot is kept for
the entry written when the segment rolls.
"""


from __future__ import annotations

import struct
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from .. import _impl
from .._common import INT32_MAX, IndexKind
from ..errors import (
    CorruptIndexError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidOffsetError,
)
from .abstract_index import AbstractIndex, TimestampOffset

__all__ = ["TimeIndex"]

#: ``IndexKind.TIME_KEY`` as a plain int, for the kernel call of every timestamp lookup.
_TIME_KEY = int(IndexKind.TIME_KEY)


class TimeIndex(AbstractIndex):
    """Timestamps to offsets (Kafka: ``TimeIndex``): 12-byte entries, timestamp then relative offset.

    ``lookup(t)`` gives the last entry whose timestamp is <= ``t``; the batches after its offset are
    where a timestamp search continues.  An entry is only added when the timestamp grows, so a v0
    segment (no timestamps) has none.  The last slot is kept for the entry written when the segment
    rolls, so the index reports full one entry early.
    """

    ENTRY_SIZE = 12
    KEY_KIND = IndexKind.TIME_KEY
    VALUE_KIND = IndexKind.TIME_VALUE
    OFFSET_KIND = IndexKind.TIME_VALUE
    _DESCRIPTION = "time index"
    _ENTRY = struct.Struct(">qi")
    _no_entry: TimestampOffset

    def _absent_entry(self) -> TimestampOffset:
        return TimestampOffset(-1, self.base_offset)

    def _load_last_entry(self) -> None:
        self._last_entry = self._entry_at(self._entries - 1) if self._entries else self._no_entry

    def _entry_at(self, n: int) -> TimestampOffset:
        assert self._map is not None
        timestamp, relative = self._ENTRY.unpack_from(self._map, n * self.ENTRY_SIZE)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def is_full(self) -> bool:
        """Full one slot early: the last slot is for the entry the roll writes (Kafka: ``isFull``)."""
        return self._entries >= self._max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or ``(-1, base_offset)`` when empty (Kafka: ``lastEntry``)."""
        return self._last_entry

    def read_last_entry(self) -> TimestampOffset:
        return self._last_entry

    def entry(self, n: int) -> TimestampOffset:
        """Entry ``n`` with its absolute offset (Kafka: ``entry``)."""
        return cast(TimestampOffset, self._checked_entry(n))

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The last entry whose timestamp is <= ``target_timestamp``; ``(-1, base_offset)`` when there is
        none (Kafka: ``lookup``).  One kernel call, locked as ``OffsetIndex.lookup`` is."""
        if self.writable:
            lock = self._lock
            lock.acquire()
            try:
                if self._closed:
                    raise IllegalStateError(f"Index {self._path} is closed")
                return _impl.core.index_lookup(  # type: ignore[no-any-return]
                    self._map, self._entries, _TIME_KEY, target_timestamp, self.base_offset, TimestampOffset,
                    self._no_entry)
            finally:
                lock.release()
        copy = self._map  # before the closed test: close sets _closed first, then drops the copy
        if self._closed:
            raise IllegalStateError(f"Index {self._path} is closed")
        return _impl.core.index_lookup(  # type: ignore[no-any-return]
            copy, self._entries, _TIME_KEY, target_timestamp, self.base_offset, TimestampOffset, self._no_entry)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add ``(timestamp, offset)`` if the timestamp is larger than the last one (Kafka: ``maybeAppend``).

        ``skip_full_check`` lets the roll use the slot kept for it.
        """
        with self._lock:
            self._check_writable("append to")
            if not skip_full_check and self.is_full():
                raise IllegalArgumentError(
                    f"Attempt to append to a full time index (size = {self._entries})."
                )
            last = self._last_entry
            if self._entries != 0 and offset < last.offset:
                raise InvalidOffsetError(
                    f"Attempt to append an offset ({offset}) to slot {self._entries} no larger than the last "
                    f"offset appended ({last.offset}) to {self._path}."
                )
            if self._entries != 0 and timestamp < last.timestamp:
                raise IllegalStateError(
                    f"Attempt to append a timestamp ({timestamp}) to slot {self._entries} no larger than the "
                    f"last timestamp appended ({last.timestamp}) to {self._path}."
                )
            if timestamp > last.timestamp:
                if self._entries >= self._max_entries:
                    raise IllegalArgumentError(
                        f"Attempt to append to a full time index (size = {self._entries}), its reserved slot "
                        "included."
                    )
                relative = self.relative_offset(offset)
                self._reserve((self._entries + 1) * self.ENTRY_SIZE)
                assert self._map is not None
                self._ENTRY.pack_into(self._map, self._entries * self.ENTRY_SIZE, timestamp, relative)
                self._entries += 1
                self._last_entry = TimestampOffset(timestamp, offset)

    def append_entries(self, timestamps: npt.NDArray[Any], offsets: npt.NDArray[Any]) -> None:
        """:meth:`maybe_append` for many candidates at once, as recovery rebuilds an index.

        The candidates must not go backwards (recovery passes the running largest timestamp and its
        offset); only those with a larger timestamp than every entry before are written, in one write.
        Anything a call of ``maybe_append`` would refuse, or a run that reaches the full mark, is replayed
        one call at a time so the error comes from the same call.
        """
        with self._lock:
            self._check_writable("append to")
            timestamps = np.asarray(timestamps, dtype=np.int64)
            offsets = np.asarray(offsets, dtype=np.int64)
            k = len(timestamps)
            if k == 0:
                return
            last = self._last_entry
            previous = np.maximum.accumulate(np.concatenate(([last.timestamp], timestamps[:-1])))
            keep = timestamps > previous
            kept = int(keep.sum())
            relative = offsets[keep] - self.base_offset
            # After the first kept candidate the index is never empty, so every later candidate is
            # checked against the entry before it, as maybe_append would check it.
            checked = np.concatenate(([self._entries != 0], (np.cumsum(keep)[:-1] + self._entries) > 0))
            last_offsets = np.maximum.accumulate(np.where(keep, offsets, np.iinfo(np.int64).min))
            last_offsets = np.concatenate(([last.offset], np.maximum(last_offsets[:-1], last.offset)))
            fits = (self._entries + kept < self._max_entries - 1
                    and bool(np.all(~checked | (offsets >= last_offsets)))
                    and bool(np.all(~checked | (timestamps >= previous)))
                    and bool(np.all((relative >= 0) & (relative <= INT32_MAX))))
            if not fits:
                for timestamp, offset in zip(timestamps.tolist(), offsets.tolist(), strict=True):
                    self.maybe_append(timestamp, offset)
                return
            if kept == 0:
                return
            entries = np.empty(kept, dtype=[("timestamp", ">i8"), ("relative", ">i4")])
            entries["timestamp"] = timestamps[keep]
            entries["relative"] = relative
            at = self._entries * self.ENTRY_SIZE
            self._reserve(at + kept * self.ENTRY_SIZE)
            assert self._map is not None
            self._map[at:at + kept * self.ENTRY_SIZE] = entries.tobytes()
            self._entries += kept
            self._last_entry = TimestampOffset(int(timestamps[keep][-1]), int(offsets[keep][-1]))

    def sanity_check(self) -> None:
        """Raise :class:`CorruptIndexError` if the file cannot be a valid time index.

        Kafka: ``TimeIndex.sanityCheck``.
        """
        with self._lock:
            self._check_open()
            last = self._last_entry
            if self._entries != 0:
                first_timestamp = self._entry_at(0).timestamp
                if last.timestamp < first_timestamp:
                    raise CorruptIndexError(
                        f"Corrupt time index found, time index file ({self._path}) has non-zero size but the "
                        f"last timestamp is {last.timestamp} which is less than the first timestamp "
                        f"{first_timestamp}"
                    )
                if last.offset < self.base_offset:
                    raise CorruptIndexError(
                        f"Corrupt time index found, time index file ({self._path}) has non-zero size but the "
                        f"last offset is {last.offset} which is less than the first offset {self.base_offset}"
                    )
            self._check_length_is_whole_entries()
