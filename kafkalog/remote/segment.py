"""What every tiered-storage layout gives its reader: the partitions found, and their segments.

A layout (:mod:`kafkalog.remote.local_tiered`, :mod:`kafkalog.remote.aiven`) lists what a
``RemoteStorageManager`` left in a store and answers, for each topic-partition, the segments in base-offset
order: for each its base offset, the size of the original ``.log`` (the bytes a broker had on disk, not
what the store holds, which may be chunked and compressed), a way to read a byte range of that original
``.log``, and its indexes when they were uploaded (Kafka: ``RemoteStorageManager.fetchLogSegment`` with a
start and end position, and ``fetchIndex`` for each ``IndexType``, storage/api tag 3.8.0).

Reads go through an fsspec filesystem and only through ``ls``/``find``/``info``/``size`` and ranged
``cat_file``: every range is checked against the object's size first, so a hostile manifest or a
truncated object gives a :class:`~kafkalog.errors.RemoteStorageError`, never an unbounded read.

Two uploads of one base offset (a copy retried under a new segment id, by the same leader or the next)
are resolved here, once for every layout, by :func:`resolve_duplicates`; see its docstring for the rule.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _impl
from .._common import IndexKind
from ..errors import CorruptIndexError, CorruptRemoteSegmentError, RemoteResourceNotFoundError, RemoteStorageError

if TYPE_CHECKING:
    from ..file_message_set import FileMessageSet

__all__ = ["IndexType", "RemotePartition", "RemoteSegment", "SkippedSegment", "read_object_range",
           "resolve_duplicates"]

logger = logging.getLogger(__name__)

_OFFSET_ENTRY_SIZE = 8  # OffsetIndex: int32 relative offset, int32 position


class IndexType(enum.Enum):
    """The indexes uploaded beside a segment (Kafka: ``RemoteStorageManager.IndexType``)."""

    OFFSET = "offset"
    TIMESTAMP = "timestamp"
    PRODUCER_SNAPSHOT = "producerSnapshot"
    TRANSACTION = "transaction"
    LEADER_EPOCH = "leaderEpoch"


def read_object_range(fs: Any, path: str, start: int, end: int, object_size: int) -> bytes:
    """``fs.cat_file(path, start, end)``, checked: ``0 <= start <= end <= object_size`` or a
    :class:`CorruptRemoteSegmentError`, and exactly ``end - start`` bytes back or a
    :class:`RemoteStorageError` (the object changed or the store cut the read short)."""
    if not 0 <= start <= end <= object_size:
        raise CorruptRemoteSegmentError(
            f"range [{start}, {end}) is outside the object's {object_size} bytes", path=path)
    if start == end:
        return b""
    try:
        data = fs.cat_file(path, start=start, end=end)
    except FileNotFoundError as e:
        raise RemoteResourceNotFoundError(f"object not found: {e}", path=path) from e
    except OSError as e:
        raise RemoteStorageError(f"cannot read [{start}, {end}): {e}", path=path) from e
    if len(data) != end - start:
        raise RemoteStorageError(
            f"read of [{start}, {end}) gave {len(data)} bytes, not {end - start}: the object is shorter than "
            "it was listed", path=path)
    return bytes(data)


@dataclass(frozen=True)
class SkippedSegment:
    """Something a layout found and left out, and why: an upload not finished, a losing duplicate, a
    segment the ``__remote_log_metadata`` topic does not name as copied."""

    path: str
    reason: str


@dataclass(frozen=True)
class RemoteSegment:
    """One uploaded segment (each layout subclasses it with what it needs to read the segment, all plain
    data and the fsspec filesystem, so a segment pickles into a Spark task).

    ``base_offset`` is the segment's start offset (the number in its name), ``segment_id`` the
    ``RemoteLogSegmentId`` uuid (Kafka's base64 form), ``size`` the size of the original ``.log`` and
    ``path`` the object that holds it.  ``end_offset``, ``max_leader_epoch`` and ``event_timestamp_ms`` are
    what the layout knows of the upload's ``RemoteLogSegmentMetadata`` (``None`` when it does not say),
    used to order duplicates.  Read the original ``.log`` with :meth:`read`, its indexes with :meth:`index`.
    """

    fs: Any = field(repr=False, compare=False)
    topic: str
    partition: int
    topic_id: str
    # the segment, and the object holding its .log
    base_offset: int
    segment_id: str
    size: int
    path: str
    # what the layout knows of the upload's RemoteLogSegmentMetadata
    end_offset: int | None = None
    max_leader_epoch: int | None = None
    event_timestamp_ms: int | None = None

    def read(self, position: int = 0, size: int | None = None) -> bytes:
        """The bytes ``[position, position + size)`` of the original ``.log`` (to its end when ``size`` is
        ``None``), cut at the segment's end as ``fetchLogSegment`` cuts at ``segmentSizeInBytes``."""
        if position < 0 or (size is not None and size < 0):
            raise RemoteStorageError(f"negative position {position} or size {size}", path=self.path)
        end = self.size if size is None else min(self.size, position + size)
        if position >= end:
            return b""
        return self._read(position, end)

    def _read(self, start: int, end: int) -> bytes:
        """The original ``.log``'s ``[start, end)``, with ``0 <= start < end <= size``."""
        raise NotImplementedError

    def open_log(self) -> FileMessageSet:
        """The original ``.log`` as a read-only :class:`~kafkalog.file_message_set.FileMessageSet` read by
        range (:class:`~kafkalog.urls.channel.RemoteChannel`): the scans, searches, chunked reads and
        consumer view of a local segment run on it unchanged, each block of it fetched once through
        :meth:`read` (for a chunked layout, only the chunks that cover it)."""
        from ..urls.channel import open_remote_log

        return open_remote_log(_OriginalLog(self), self.size)

    def index_types(self) -> frozenset[IndexType]:
        """The indexes that were uploaded with this segment (a transaction index only when the segment had
        aborted transactions, as Kafka uploads it)."""
        raise NotImplementedError

    def index(self, index_type: IndexType) -> bytes | None:
        """The bytes of one index as the broker had it on disk (a ``.index``, ``.timeindex``, ``.snapshot``,
        ``.txnindex``, or the leader-epoch checkpoint text), or ``None`` when it was not uploaded."""
        raise NotImplementedError

    def offset_index_entries(self) -> tuple[bytes, int, int]:
        """The uploaded offset index: its bytes, its number of entries, and how many of them, from the first, point
        inside the ``.log`` as the store holds it (at a position below its size).  An entry at or past the end
        describes a batch the store no longer holds: the ``.log`` was cut short (or the index is bad)."""
        data = self.index(IndexType.OFFSET) or b""
        entries = len(data) // _OFFSET_ENTRY_SIZE
        positions = np.frombuffer(data, dtype=">i4", count=2 * entries)[1::2]
        outside = np.flatnonzero(positions >= self.size)
        return data, entries, int(outside[0]) if len(outside) else entries

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """``OffsetIndex.lookup`` on the uploaded offset index: ``(offset, position)`` of the largest entry
        whose offset is at most ``target_offset``, ``(base_offset, 0)`` when there is none (or no index).  One
        read of the index; the position is where a read for ``target_offset`` starts.

        Only the entries before the first that points at or past the end of the ``.log`` are searched
        (:meth:`offset_index_entries`): a ``.log`` cut short is read from the last batch it still holds, and the
        offsets it lost are the reader's to report (:mod:`kafkalog.partition_view.tiered`), not an index error.

        Raises:
            CorruptIndexError: the entry found points before the segment's start (a negative position).
        """
        data, _entries, inside = self.offset_index_entries()
        found = _impl.core.index_lookup(data, inside, int(IndexKind.OFFSET_KEY), target_offset, self.base_offset)
        if found is None:
            return self.base_offset, 0
        offset, position = found
        if not 0 <= position <= self.size:
            raise CorruptIndexError(f"offset index entry ({offset}, {position}) of {self.path} points outside the "
                                    f"segment's {self.size} bytes")
        return offset, position


@dataclass(frozen=True)
class _OriginalLog:
    """A segment's original ``.log`` as a :class:`~kafkalog.urls.channel.RangeReadable`."""

    segment: RemoteSegment

    @property
    def path(self) -> str:
        return self.segment.path

    def size(self) -> int:
        return self.segment.size

    def read_range(self, start: int, end: int) -> bytes:
        return self.segment.read(start, max(0, end - start))

    def __str__(self) -> str:
        return self.segment.path


@dataclass(frozen=True)
class RemotePartition:
    """One topic-partition of a store: its segments in base-offset order, one per base offset, and what
    was left out.

    Segments can still overlap when a copy was retried with other boundaries (the next leader rolled its
    segments elsewhere): Kafka's ``RemoteLogLeaderEpochState`` serves an offset from the segment with the
    greatest start offset at or below it, so a reader takes each segment's records only below the next
    segment's base offset.
    """

    topic: str
    partition: int
    topic_id: str
    segments: tuple[RemoteSegment, ...]
    skipped: tuple[SkippedSegment, ...] = ()

    @property
    def name(self) -> str:
        """``<topic>-<partition>``, the name a broker's partition directory has."""
        return f"{self.topic}-{self.partition}"


def _recency(segment: RemoteSegment) -> tuple[int, int, int, str]:
    return (segment.max_leader_epoch if segment.max_leader_epoch is not None else -1,
            segment.event_timestamp_ms if segment.event_timestamp_ms is not None else -1,
            segment.end_offset if segment.end_offset is not None else -1,
            segment.segment_id)


def resolve_duplicates(segments: Iterable[RemoteSegment]) -> tuple[list[RemoteSegment], list[SkippedSegment]]:
    """One segment per base offset, in offset order, and the uploads left out.

    Two finished uploads of one base offset happen when a copy is retried under a new segment id: the
    first copy reached the store but its ``COPY_SEGMENT_FINISHED`` never reached ``__remote_log_metadata``
    (the leader failed or moved), and the same leader or the next one copied the segment again.  Kafka's
    ``RemoteLogMetadataCache`` (``RemoteLogLeaderEpochState.handleSegmentWithCopySegmentFinishedState``)
    maps each leader epoch's start offset to the segment id of the *last* finished copy, and the
    unreferenced one is deleted later.  Without that topic the store itself must say which copy is the
    last, so this keeps, in this order of preference, the upload whose data reaches the highest leader
    epoch (after an unclean election the new leader's copy holds the lineage the log kept), then the
    later ``eventTimestampMs`` (the copy started last), then the one reaching the higher end offset, and
    last the greater segment id, so the choice never depends on listing order.  When the topic is at hand,
    filter the segments with it first (:mod:`kafkalog.remote.metadata`); this then only breaks ties it
    leaves.
    """
    by_offset: dict[int, list[RemoteSegment]] = {}
    for s in segments:
        by_offset.setdefault(s.base_offset, []).append(s)
    kept: list[RemoteSegment] = []
    skipped: list[SkippedSegment] = []
    for offset in sorted(by_offset):
        candidates = sorted(by_offset[offset], key=_recency, reverse=True)
        winner = candidates[0]
        kept.append(winner)
        for loser in candidates[1:]:
            logger.warning("Two uploads of base offset %d of %s-%d: keeping %s, skipping %s", offset,
                           winner.topic, winner.partition, winner.segment_id, loser.segment_id)
            skipped.append(SkippedSegment(loser.path, f"another upload of base offset {offset} "
                                                      f"({winner.segment_id}) is more recent"))
    return kept, skipped
