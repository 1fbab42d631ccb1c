"""The offset index of a segment, ``<base>.index``: offsets to file positions (Kafka: ``OffsetIndex``;
0.10.1.1 ``kafka/log/OffsetIndex.scala``, 3.8.0 ``storage/.../log/OffsetIndex.java``).

On disk (big-endian, no header), 8-byte entries: relative offset int32 | position int32, where
``relative offset = offset - base offset`` fits in [0, 2**31 - 1].  Sparse: an entry roughly every
``index.interval.bytes`` of log; entries increase strictly in offset and position.  Absolute offsets from
``entry`` follow modern Kafka, and the sanity check accepts a last offset equal to the base offset (2.1).
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
from .abstract_index import AbstractIndex, OffsetPosition

__all__ = ["OffsetIndex"]

#: ``IndexKind.OFFSET_KEY`` as a plain int, for the one kernel call of every fetch (no enum lookup there).
_OFFSET_KEY = int(IndexKind.OFFSET_KEY)


class OffsetIndex(AbstractIndex):
    """Offsets to file positions (Kafka: ``OffsetIndex``): 8-byte entries, relative offset then position.

    ``lookup(o)`` finds the last indexed batch at or before offset ``o``, from which a scan of the log
    reaches ``o``.  Entries are keyed by the last offset of the append they index (Kafka 2.0+,
    KAFKA-6530; 0.10.1 keyed them by the first).
    """

    ENTRY_SIZE = 8
    KEY_KIND = IndexKind.OFFSET_KEY
    VALUE_KIND = IndexKind.OFFSET_VALUE
    OFFSET_KIND = IndexKind.OFFSET_KEY
    _DESCRIPTION = "index"
    _ENTRY = struct.Struct(">ii")
    _no_entry: OffsetPosition

    def _absent_entry(self) -> OffsetPosition:
        return OffsetPosition(self.base_offset, 0)

    def _load_last_entry(self) -> None:
        self._last_offset = self._entry_at(self._entries - 1).offset if self._entries else self.base_offset

    def _entry_at(self, n: int) -> OffsetPosition:
        assert self._map is not None
        relative, position = self._ENTRY.unpack_from(self._map, n * self.ENTRY_SIZE)
        return OffsetPosition(self.base_offset + relative, position)

    def relative_offset_at(self, n: int) -> int:
        """The relative offset stored in slot ``n`` (Kafka: private ``relativeOffset(buffer, n)``)."""
        with self._lock:
            self._check_open()
            return self._entry_at(n).offset - self.base_offset

    def physical(self, n: int) -> int:
        """The position stored in slot ``n`` (Kafka: private ``physical(buffer, n)``)."""
        with self._lock:
            self._check_open()
            return self._entry_at(n).position

    @property
    def last_offset(self) -> int:
        """The last entry's offset, or the base offset when empty (Kafka: ``lastOffset``)."""
        return self._last_offset

    def read_last_entry(self) -> OffsetPosition:
        """Kafka: ``lastEntry`` (0.10.1 ``readLastEntry``)."""
        with self._lock:
            self._check_open()
            return self._entry_at(self._entries - 1) if self._entries else self._no_entry

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry whose offset is <= ``target_offset``; ``(base_offset, 0)`` when there is none
        (Kafka: ``lookup``).

        The hot path of every fetch, written for it: one kernel call finds the entry and makes the
        ``OffsetPosition`` (or hands back the index's own ``(base_offset, 0)``).  A writable index takes its
        lock with ``acquire``/``release`` rather than ``with``; a read-only one takes none (its bytes never
        change, see ``kafkalog.index.abstract_index``), as Kafka's lookup takes none outside Windows.
        """
        if self.writable:
            lock = self._lock
            lock.acquire()
            try:
                if self._closed:
                    raise IllegalStateError(f"Index {self._path} is closed")
                return _impl.core.index_lookup(  # type: ignore[no-any-return]
                    self._map, self._entries, _OFFSET_KEY, target_offset, self.base_offset, OffsetPosition,
                    self._no_entry)
            finally:
                lock.release()
        copy = self._map  # before the closed test: close sets _closed first, then drops the copy
        if self._closed:
            raise IllegalStateError(f"Index {self._path} is closed")
        return _impl.core.index_lookup(  # type: ignore[no-any-return]
            copy, self._entries, _OFFSET_KEY, target_offset, self.base_offset, OffsetPosition, self._no_entry)

    def entry(self, n: int) -> OffsetPosition:
        """Entry ``n`` with its absolute offset (Kafka: ``entry``; 0.10.1 gave the relative offset)."""
        return cast(OffsetPosition, self._checked_entry(n))

    def fetch_upper_bound_offset(
        self, fetch_offset: OffsetPosition, fetch_size: int
    ) -> OffsetPosition | None:
        """The first entry at or past ``fetch_offset.position + fetch_size``, or ``None`` (Kafka:
        ``fetchUpperBoundOffset``), which bounds how far a fetch of that size can reach."""
        with self._lock:
            self._check_open()
            slot = self._slot(fetch_offset.position + fetch_size, IndexKind.OFFSET_VALUE, True)
            return None if slot == -1 else self._entry_at(slot)

    def append(self, offset: int, position: int) -> None:
        """Add an entry; ``offset`` must be larger than every offset before it (Kafka: ``append``)."""
        with self._lock:
            self._check_writable("append to")
            if self.is_full():
                raise IllegalArgumentError(f"Attempt to append to a full index (size = {self._entries}).")
            if self._entries == 0 or offset > self._last_offset:
                if not 0 <= position <= INT32_MAX:
                    raise IllegalArgumentError(f"Position {position} does not fit a 4-byte index entry")
                relative = self.relative_offset(offset)
                self._reserve((self._entries + 1) * self.ENTRY_SIZE)
                assert self._map is not None
                self._ENTRY.pack_into(self._map, self._entries * self.ENTRY_SIZE, relative, position)
                self._entries += 1
                self._last_offset = offset
            else:
                raise InvalidOffsetError(
                    f"Attempt to append an offset ({offset}) to position {self._entries} no larger than "
                    f"the last offset appended ({self._last_offset}) to {self._path}."
                )

    def append_entries(self, offsets: npt.NDArray[Any], positions: npt.NDArray[Any]) -> None:
        """:meth:`append` for many entries at once, as recovery rebuilds an index: the same checks,
        made on the whole arrays, and one write.  Input that one of the appends would refuse is replayed
        one entry at a time, so the error is raised at the same entry with the same message."""
        with self._lock:
            self._check_writable("append to")
            offsets = np.asarray(offsets, dtype=np.int64)
            positions = np.asarray(positions, dtype=np.int64)
            k = len(offsets)
            if k == 0:
                return
            relative = offsets - self.base_offset
            fits = (self._entries + k <= self._max_entries
                    and (self._entries == 0 or offsets[0] > self._last_offset)
                    and bool(np.all(offsets[1:] > offsets[:-1]))
                    and bool(np.all((relative >= 0) & (relative <= INT32_MAX)))
                    and bool(np.all((positions >= 0) & (positions <= INT32_MAX))))
            if not fits:
                for offset, position in zip(offsets.tolist(), positions.tolist(), strict=True):
                    self.append(offset, position)
                return
            entries = np.empty(k, dtype=[("relative", ">i4"), ("position", ">i4")])
            entries["relative"] = relative
            entries["position"] = positions
            at = self._entries * self.ENTRY_SIZE
            self._reserve(at + k * self.ENTRY_SIZE)
            assert self._map is not None
            self._map[at:at + k * self.ENTRY_SIZE] = entries.tobytes()
            self._entries += k
            self._last_offset = int(offsets[-1])

    def sanity_check(self) -> None:
        """Raise :class:`CorruptIndexError` if the file cannot be a valid offset index (Kafka 2.1+:
        a last offset equal to the base offset is allowed, as one batch at the base offset makes it)."""
        with self._lock:
            self._check_open()
            if self._entries != 0 and self._last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"Corrupt index found, index file ({self._path}) has non-zero size but the last "
                    f"offset is {self._last_offset} which is less than the base offset {self.base_offset}."
                )
            self._check_length_is_whole_entries()
