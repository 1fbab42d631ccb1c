"""LogSegments: the segments of a log, in base-offset order.

Port of ``storage/.../log/LogSegments.java`` (Kafka 3.8.0), which took over the ``segments`` map that
0.10.1's ``Log`` kept itself (a ``ConcurrentSkipListMap`` from base offset to segment).  Here it is a
dict from base offset to segment plus a sorted list of the base offsets, searched with ``bisect``:
segments are added and removed rarely (a roll, a retention pass) and looked up on every read.

Readers may look segments up while a writer changes the map: every method takes the map's lock, and
methods that return several segments return a list made under it.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator
from typing import Any

from ..errors import IllegalArgumentError
from ..segment import LogSegment

__all__ = ["LogSegments"]


class LogSegments:
    """Base offset -> segment, ordered (Kafka: ``LogSegments``)."""

    def __init__(self, topic_partition: Any = None) -> None:
        self.topic_partition = topic_partition
        self._segments: dict[int, LogSegment] = {}
        self._bases: list[int] = []
        self._lock = threading.RLock()

    # -- changing the map ---------------------------------------------------------------------------

    def add(self, segment: LogSegment) -> LogSegment | None:
        """Add ``segment``, replacing one at the same base offset; returns the replaced one (Kafka: ``add``)."""
        with self._lock:
            base = segment.base_offset
            previous = self._segments.get(base)
            if previous is None:
                bisect.insort(self._bases, base)
            self._segments[base] = segment
            return previous

    def remove(self, base_offset: int) -> None:
        """Kafka: ``remove``."""
        with self._lock:
            if self._segments.pop(base_offset, None) is not None:
                del self._bases[bisect.bisect_left(self._bases, base_offset)]

    def clear(self) -> None:
        with self._lock:
            self._segments.clear()
            self._bases.clear()

    def close(self) -> None:
        """Close every segment (Kafka: ``close``)."""
        for segment in self.values():
            segment.close()

    def close_handlers(self) -> None:
        for segment in self.values():
            segment.close_handlers()

    def update_parent_dir(self, directory: Any) -> None:
        """Point every segment's files at a renamed directory (Kafka: ``updateParentDir``)."""
        for segment in self.values():
            segment.update_parent_dir(directory)

    # -- questions ----------------------------------------------------------------------------------

    def is_empty(self) -> bool:
        return not self._bases

    def __len__(self) -> int:
        return len(self._bases)

    number_of_segments = property(__len__)

    def contains(self, base_offset: int) -> bool:
        return base_offset in self._segments

    def get(self, base_offset: int) -> LogSegment | None:
        return self._segments.get(base_offset)

    def base_offsets(self) -> list[int]:
        with self._lock:
            return list(self._bases)

    def values(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]:
        """All segments, or those that may hold offsets in ``[from_offset, to_offset)``: the one holding
        ``from_offset`` and every later one that starts before ``to_offset`` (Kafka: ``values(from, to)``).
        """
        with self._lock:
            if from_offset is not None and to_offset is not None:
                if from_offset == to_offset:
                    return []
                if to_offset < from_offset:
                    raise IllegalArgumentError(
                        f"Invalid log segment range: requested segments in {self.topic_partition} from "
                        f"offset {from_offset} which is greater than limit offset {to_offset}")
            floor = None if from_offset is None else self.floor_entry(from_offset)
            start = 0 if floor is None else bisect.bisect_left(self._bases, floor)
            end = len(self._bases) if to_offset is None else bisect.bisect_left(self._bases, to_offset)
            return [self._segments[b] for b in self._bases[start:end]]

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.values())

    def non_active_log_segments_from(self, from_offset: int) -> list[LogSegment]:
        """Segments from the one holding ``from_offset`` up to, not including, the active one (Kafka:
        ``nonActiveLogSegmentsFrom``); empty if ``from_offset`` is past the active segment's base."""
        with self._lock:
            active = self.last_segment()
            if active is None or from_offset > active.base_offset:
                return []
            return self.values(from_offset, active.base_offset)

    def first_segment(self) -> LogSegment | None:
        with self._lock:
            return self._segments[self._bases[0]] if self._bases else None

    def first_segment_base_offset(self) -> int | None:
        with self._lock:
            return self._bases[0] if self._bases else None

    def last_segment(self) -> LogSegment | None:
        with self._lock:
            return self._segments[self._bases[-1]] if self._bases else None

    active_segment = property(last_segment)

    def size_in_bytes(self) -> int:
        """Bytes in every segment (Kafka: ``sizeInBytes``, a long)."""
        return sum(segment.size() for segment in self.values())

    def floor_entry(self, offset: int) -> int | None:
        """The largest base offset <= ``offset``."""
        with self._lock:
            i = bisect.bisect_right(self._bases, offset)
            return self._bases[i - 1] if i else None

    def floor_segment(self, offset: int) -> LogSegment | None:
        """The segment that would hold ``offset`` (Kafka: ``floorSegment``)."""
        with self._lock:
            base = self.floor_entry(offset)
            return None if base is None else self._segments[base]

    def lower_segment(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset < ``offset`` (Kafka: ``lowerSegment``)."""
        with self._lock:
            i = bisect.bisect_left(self._bases, offset)
            return self._segments[self._bases[i - 1]] if i else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        """The segment with the smallest base offset > ``offset`` (Kafka: ``higherSegment``)."""
        with self._lock:
            i = bisect.bisect_right(self._bases, offset)
            return self._segments[self._bases[i]] if i < len(self._bases) else None

    def higher_segments(self, offset: int) -> list[LogSegment]:
        """Every segment with a base offset > ``offset`` (Kafka: ``higherSegments``)."""
        with self._lock:
            i = bisect.bisect_right(self._bases, offset)
            return [self._segments[b] for b in self._bases[i:]]

    def __repr__(self) -> str:
        return f"LogSegments({self.topic_partition}, bases={self._bases})"
