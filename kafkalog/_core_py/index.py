"""The index searches in plain Python: the twin of ``_core_pyx/index.pxi``.

Kafka: ``storage/src/main/java/org/apache/kafka/storage/internals/log/AbstractIndex.java``
(``indexSlotRangeFor``, the warm-section search of 2.1+), ``OffsetIndex.java`` and ``TimeIndex.java``
(tag 3.8.0).  An offset index entry is 8 bytes, relative offset (int32) and file position (int32); a time
index entry is 12 bytes, timestamp (int64) and relative offset (int32); big-endian, relative offsets
counted from the segment's base offset.  :class:`~kafkalog._common.IndexKind` says which index and which
half of its entries a search compares.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from .._common import (
    INDEX_ENTRY_SIZE,
    WARM_SECTION_BYTES,
    IndexKind,
)
from ._ints import _I32, _I64

_OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


def index_search(
    buf: Any, entries: int, kind: int, target: int, base_offset: int, smallest_upper_bound: bool = False
) -> int:
    """The slot of the largest entry <= ``target`` (or, with ``smallest_upper_bound``, of the smallest
    entry >= it) among the first ``entries`` entries of an index buffer; -1 when there is none.

    Kafka 2.1+ ``AbstractIndex.indexSlotRangeFor`` (KAFKA-6432), followed instead of 0.10.1's plain binary
    search because it decides which pages a lookup touches: it first looks in the warm section (the
    last 8 KiB of entries) and only falls back to the whole index when the target is older.  The binary
    search is Kafka's, quirk included: a smallest-upper-bound search for exactly the first entry's key
    answers slot 1 (or -1 when there is one entry), because slot 0 is never compared.
    """
    kind = IndexKind(kind)
    entry_size = INDEX_ENTRY_SIZE[kind]
    if entries < 0:
        raise ValueError(f"negative entry count {entries}")
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" or whole.ndim != 1 else whole
        if entries * entry_size > view.nbytes:
            raise ValueError(
                f"{entries} entries of {entry_size} bytes do not fit the {view.nbytes}-byte index"
            )
        if entries == 0:
            return -1

        def key(slot: int) -> int:
            at = slot * entry_size
            if kind is IndexKind.OFFSET_KEY:
                return base_offset + int(_I32.unpack_from(view, at)[0])
            if kind is IndexKind.OFFSET_VALUE:
                return int(_I32.unpack_from(view, at + 4)[0])
            if kind is IndexKind.TIME_KEY:
                return int(_I64.unpack_from(view, at)[0])
            return base_offset + int(_I32.unpack_from(view, at + 8)[0])

        def binary_search(lo: int, hi: int) -> int:
            while lo < hi:
                mid = (lo + hi + 1) >> 1
                found = key(mid)
                if found > target:
                    hi = mid - 1
                elif found < target:
                    lo = mid
                else:
                    return mid
            if smallest_upper_bound:
                return -1 if lo == entries - 1 else lo + 1
            return lo

        first_hot = max(0, entries - 1 - WARM_SECTION_BYTES // entry_size)
        if key(first_hot) < target:
            return binary_search(first_hot, entries - 1)
        if key(0) > target:
            return 0 if smallest_upper_bound else -1
        return binary_search(0, first_hot)


def index_lookup(buf: Any, entries: int, kind: int, target: int, base_offset: int,
                 entry_type: type[tuple[int, int]] = tuple, missing: Any = None) -> Any:
    """The entry of the largest-lower-bound slot for ``target`` as ``(key, value)`` (offset and position,
    or timestamp and offset, both absolute), or ``missing`` when there is none (an empty index, or a target
    below the first entry): the search and the read of the entry in one call, which is all an index
    ``lookup`` needs.

    The pair is made an ``entry_type``, ``tuple`` or a subclass of it (an index's NamedTuple) built as
    ``tuple.__new__`` builds one, without calling the subclass's own ``__new__``.  With no entries the buffer
    is not looked at (it may be ``None``: a read-only index of an empty file has no map).
    """
    kind = IndexKind(kind)
    if not (isinstance(entry_type, type) and issubclass(entry_type, tuple)):
        raise TypeError(f"entry_type must be tuple or a subclass of it, not {entry_type!r}")
    if entries == 0:
        return missing
    slot = index_search(buf, entries, kind, target, base_offset)
    if slot < 0:
        return missing
    at = slot * INDEX_ENTRY_SIZE[kind]
    if kind in (IndexKind.OFFSET_KEY, IndexKind.OFFSET_VALUE):
        relative, position = _OFFSET_ENTRY.unpack_from(buf, at)
        return tuple.__new__(entry_type, (base_offset + relative, position))
    timestamp, relative = _TIME_ENTRY.unpack_from(buf, at)
    return tuple.__new__(entry_type, (timestamp, base_offset + relative))


def index_points(positions: npt.NDArray[Any], interval: int) -> npt.NDArray[Any]:
    """Which batches get an index entry when a segment is rebuilt (the rule of ``LogSegment.recover``):
    ``positions[i]`` (batch starts, increasing) gets one when it is more than ``interval`` bytes past the
    last batch that got one, counting from position 0.  Returns their indices, increasing.
    """
    chosen: list[int] = []
    n = len(positions)
    last = 0
    i = int(np.searchsorted(positions, last + interval, side="right"))
    while i < n:
        chosen.append(i)
        last = int(positions[i])
        i = int(np.searchsorted(positions, last + interval, side="right"))
    return np.array(chosen, dtype=np.int64)
