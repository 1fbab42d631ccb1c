"""Tiered storage as a reader sees it: the layouts of :mod:`kafkalog.remote` found at a path, and what a reader
(the Spark planner, through :mod:`kafkalog.partition_view.facts`) learns of each partition in them.

A path (local or URL) holds one of the layouts the ``layout`` option names:

- ``broker``: a broker's log dir or partition dir, copied as it is (:mod:`kafkalog.partition_view.facts` reads it);
- ``kafka-local-tiered-storage``: Kafka's ``LocalTieredStorage`` (:mod:`kafkalog.remote.local_tiered`);
- ``aiven-tiered-storage``: Aiven's plugin (:mod:`kafkalog.remote.aiven`), under the plugin's ``key.prefix``
  (``layout.prefix``; a prefix of whole directories is found from the keys);
- ``auto`` (the default): a broker's dir when the path is one, else the tiered layout found there.

Each partition of a tiered layout is planned as a broker's partition is (Kafka's
``RemoteLogManager.read`` and ``RemoteLogMetadataCache`` serve a fetch from the same facts):

- the log start offset is the first segment's base offset and the log end offset the last segment's end
  offset + 1 (the manifest's ``endOffset`` when the layout has one, else found through the last segment's
  offset index and a scan from there, as ``LogSegment.readNextOffset``, or past that when the segment's own
  files say its ``.log`` was cut short: :func:`log_end_offset`);
- the offset of a timestamp is found through each segment's uploaded time index, then its offset index,
  then a search of the segment (``RemoteLogManager.findOffsetByTimestamp`` over the segments in order);
- the aborted transactions are the entries of the uploaded ``.txnindex`` objects
  (``RemoteLogManager.addAbortedTransactions``); the last stable offset is the log end offset, since a
  broker uploads only segments below its last stable offset (``RemoteLogManager.candidateLogSegments``);
- segments may overlap (a copy retried with other boundaries): as Kafka serves an offset from the segment with
  the greatest base offset at or below it, each segment is read only below the next one's base offset;
- segments do not leave gaps: Kafka tiers no compacted topic and records a copied segment's end offset as the
  next one's base offset less one (``RemoteLogManager.copyLogSegment``), so a segment whose batches end before
  the next base offset (or the log end offset) has lost records, which the read reports
  (:attr:`TieredSegments.offsets_contiguous`, :class:`~kafkalog.spark.plan.ReadTask`: an error with
  ``failOnDataLoss``, else a warning).

What a layout leaves out (an upload not finished, the losing one of two uploads of a base offset, a segment
``__remote_log_metadata`` does not name as ``COPY_SEGMENT_FINISHED`` with ``remoteLogMetadata``) is in
:attr:`TieredPartition.skipped`; an encrypted segment fails the read (:class:`~kafkalog.errors.EncryptedSegmentError`).

A :class:`TieredPartition` and :class:`TieredSegments` hold no filesystem: their segments are pickled without
it and the task's process builds its own from the :class:`~kafkalog.urls.location.Storage` at its first
read (as for a URL read).  kafkalog's, no Kafka counterpart.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy.typing as npt

from .._common import ScanStop
from ..errors import CorruptIndexError, KafkaLogError, RemoteLayoutError
from ..file_message_set import FileMessageSet
from ..index import TimeIndex
from ..log.transactions import TransactionState
from ..remote import (
    LAYOUTS,
    IndexType,
    RemotePartition,
    RemoteSegment,
    SkippedSegment,
    aiven,
    detect_layout,
    list_store,
    local_tiered,
)
from ..remote.metadata import copied_segment_ids, metadata_values
from ..transaction_index import checked_entry_chunks, parse_aborted_txn_entries
from ..urls.location import Storage, StorageLocation, is_url, locate

__all__ = ["AUTO", "BROKER", "LAYOUT_NAMES", "TieredPartition", "TieredSegments", "copied_ids", "log_end_offset",
           "offset_for_timestamp", "tiered_partitions", "transactions"]

AUTO, BROKER = "auto", "broker"
#: The values of the ``layout`` option.
LAYOUT_NAMES = (AUTO, BROKER, *LAYOUTS)
#: An offset index entry: the offset relative to the segment's base, the position in its ``.log``.
_OFFSET_ENTRY = struct.Struct(">ii")


def _store(arg: str, storage_options: Mapping[str, Any] | None) -> tuple[Storage, str]:
    """The storage and the filesystem's path of ``arg``: a local path is read through fsspec's ``file``
    filesystem (the layouts read only through fsspec)."""
    where = locate(arg, storage_options if is_url(arg) else None)
    if isinstance(where, StorageLocation):
        return where.storage, where.path
    return Storage("file"), Path(where).resolve().as_posix()


@dataclass(frozen=True)
class TieredPartition:
    """A topic-partition in a tiered-storage layout, as the planner finds it: its segments (in offset order,
    one per base offset, without their filesystem) and what the layout left out."""

    storage: Storage
    #: The path or URL it was found under, for messages.
    root: str
    layout: str
    partition: RemotePartition

    @property
    def name(self) -> str:
        return self.partition.name

    @property
    def skipped(self) -> tuple[SkippedSegment, ...]:
        return self.partition.skipped

    def __str__(self) -> str:
        return f"{self.root} ({self.layout}, {self.name}, topic id {self.partition.topic_id})"

    def source(self) -> TieredSegments:
        return TieredSegments(self.storage, str(self), self.partition.segments)


def tiered_partitions(arg: str, storage_options: Mapping[str, Any] | None, layout: str, *,
                      prefix: str | None = None, copied: Collection[str] | None = None) -> list[TieredPartition] | None:
    """The partitions of the tiered layout at ``arg`` (``layout``: one of :data:`LAYOUT_NAMES` but
    ``broker``; ``auto`` detects it), or ``None`` when ``layout`` is ``auto`` and none is there.

    Raises:
        RemoteLayoutError: the path does not hold the layout named.
        EncryptedSegmentError, CorruptRemoteSegmentError: see the layouts.
    """
    storage, root = _store(arg, storage_options)
    fs = storage.fs
    # One recursive listing tells the layout and builds the partitions (an object store lists a prefix's keys
    # in one paginated request; a second would repeat it).
    listing = list_store(fs, root)
    found = detect_layout(fs, root, prefix, listing)
    if layout == AUTO:
        if found is None:
            return None
        layout = found
    elif found != layout and not (layout == "aiven-tiered-storage" and aiven.looks_like(fs, root, prefix, listing)):
        what = f"it holds {found}" if found is not None else "nothing of that layout is there"
        raise RemoteLayoutError(f"layout is {layout}, but {what} (layout=auto finds what is there; for Aiven's "
                                "plugin, is layout.prefix its key.prefix?)", path=arg)
    partitions: list[RemotePartition]
    if layout == "aiven-tiered-storage":
        partitions = aiven.list_partitions(fs, root, prefix, copied, listing)
    else:
        partitions = local_tiered.list_partitions(fs, root, copied, listing)
    return [TieredPartition(storage, arg, layout, dataclasses.replace(
        p, segments=tuple(dataclasses.replace(s, fs=None) for s in p.segments))) for p in partitions]


def copied_ids(paths: Iterable[str], storage_options: Mapping[str, Any] | None) -> frozenset[str]:
    """The segment ids ``__remote_log_metadata`` (its partition dirs at ``paths``, local or URLs) says are
    ``COPY_SEGMENT_FINISHED`` (:func:`kafkalog.remote.metadata.copied_segment_ids`)."""
    return copied_segment_ids(metadata_values(list(paths), storage_options))


@dataclass(frozen=True)
class TieredSegments:
    """The segment source of a tiered partition (:class:`~kafkalog.partition_view.sources.SegmentSource`): each
    segment's original ``.log`` read through its layout, by range, the filesystem built in the reading
    process at its first read."""

    storage: Storage
    name: str
    segments: tuple[RemoteSegment, ...]
    #: Kafka tiers no compacted topic, and a copied segment ends where the next begins (see :class:`SegmentSource`).
    offsets_contiguous = True

    def segment(self, base_offset: int) -> RemoteSegment:
        """The segment with ``base_offset``, bound to this process's filesystem."""
        for s in self.segments:
            if s.base_offset == base_offset:
                return dataclasses.replace(s, fs=self.storage.fs)
        raise KafkaLogError(f"{self.name} has no segment with base offset {base_offset}")

    def log_name(self, base_offset: int) -> str:
        for s in self.segments:
            if s.base_offset == base_offset:
                return f"{self.storage.protocol}://{s.path}"
        return f"{self.name}: segment {base_offset}"

    def open_log(self, base_offset: int, size: int | None = None) -> FileMessageSet:
        return self.segment(base_offset).open_log()

    def only(self, base_offsets: Collection[int]) -> TieredSegments:
        return TieredSegments(self.storage, self.name, tuple(s for s in self.segments if s.base_offset in base_offsets))

    def translate_offset(self, base_offset: int, size: int, offset: int) -> int | None:
        """The position of the batch holding ``offset``: the uploaded offset index's entry, then a search
        of the segment from there (``LogSegment.translateOffset``)."""
        segment = self.segment(base_offset)
        _found, position = segment.lookup(offset)
        with segment.open_log() as log:
            hit = log.search_for(offset, position)
        return None if hit is None else hit.position


def _attached(storage: Storage, segments: tuple[RemoteSegment, ...]) -> Iterator[RemoteSegment]:
    fs = storage.fs
    for s in segments:
        yield dataclasses.replace(s, fs=fs)


def log_end_offset(partition: TieredPartition) -> int:
    """The offset after the last record the store says the partition holds: the layout's ``endOffset`` + 1 when
    it has one, else the offset after the last batch of the last segment (``LogSegment.readNextOffset``: a
    scan from the last entry of its offset index that points inside its ``.log``).

    Unless that ``.log`` was cut short, which its own files tell: an offset index entry at or past its end (a
    batch that reached the entry's offset was there), or a partial batch at its end (an uploaded segment is a
    closed one, copied whole, so its last batch was whole).  The end is then what they say was there (the
    entry's offset + 1; one past the last whole batch, at least, for a partial batch), past the last record the
    ``.log`` still holds, and the read reports the offsets missing as lost (:class:`~kafkalog.spark.plan.ReadTask`,
    ``failOnDataLoss``)."""
    segments = partition.partition.segments
    if not segments:
        return 0
    last = next(_attached(partition.storage, segments[-1:]))
    if last.end_offset is not None:
        return last.end_offset + 1
    data, entries, inside = last.offset_index_entries()
    start = _OFFSET_ENTRY.unpack_from(data, (inside - 1) * _OFFSET_ENTRY.size)[1] if inside else 0
    if start < 0:
        raise CorruptIndexError(f"offset index entry {inside - 1} of {last.path} points before the segment's start")
    with last.open_log() as log:
        scan = log.scan(check_crc=False, stop_on_invalid=False, starting_position=start)
        if not len(scan.batches) and start > 0:
            # The batch that entry points at is the one cut short: the whole batches are before it.
            scan = log.scan(check_crc=False, stop_on_invalid=False)
    rows = scan.batches
    reached = int(rows["last_offset"][-1]) + 1 if len(rows) else last.base_offset
    claimed = reached + 1 if scan.stop_reason is ScanStop.PARTIAL else reached
    if inside < entries:
        relative, _position = _OFFSET_ENTRY.unpack_from(data, (entries - 1) * _OFFSET_ENTRY.size)
        claimed = max(claimed, last.base_offset + relative + 1)
    return claimed


def offset_for_timestamp(partition: TieredPartition, timestamp: int) -> int | None:
    """The first offset whose record's timestamp is at or after ``timestamp``, or ``None``
    (``RemoteLogManager.findOffsetByTimestamp``: each segment in offset order, through its time index when
    uploaded, the offset index, then a search; a segment whose largest timestamp is below it passed over).
    A segment answers only below the next segment's base offset."""
    segments = list(_attached(partition.storage, partition.partition.segments))
    for i, segment in enumerate(segments):
        following = segments[i + 1].base_offset if i + 1 < len(segments) else None
        data = segment.index(IndexType.TIMESTAMP)
        start_offset = segment.base_offset
        if data:
            times = TimeIndex.from_bytes(data, segment.path, segment.base_offset)
            try:
                largest = times.last_entry.timestamp
                if 0 <= largest < timestamp:
                    continue
                start_offset = max(times.lookup(timestamp).offset, segment.base_offset)
            finally:
                times.close()
        _found, position = segment.lookup(start_offset)
        with segment.open_log() as log:
            hit = log.search_for_timestamp(timestamp, position, segment.base_offset)
        if hit is not None and (following is None or hit.offset < following):
            return int(hit.offset)
    return None


def transactions(partition: TieredPartition, log_end: int) -> TransactionState:
    """The aborted transactions of the uploaded ``.txnindex`` objects (Kafka uploads one with each segment that
    had aborted transactions), kept compact (:meth:`TransactionState.from_index_entries
    <kafkalog.log.transactions.TransactionState.from_index_entries>`); the last stable offset is ``log_end``.  Each
    index must pass Kafka's sanity check, as the broker's ``RemoteIndexCache`` makes it, and hold no more entries
    than its segment holds batches.

    Raises:
        CorruptIndexError: an uploaded index is not to be trusted (Kafka's cache fails the fetch too: there is
            no other source of the segment's aborts here).
    """
    def entries(segment: RemoteSegment) -> Iterator[npt.NDArray[Any]]:
        data = segment.index(IndexType.TRANSACTION)
        if not data:
            return iter(())
        found = parse_aborted_txn_entries(data, segment.path)
        return checked_entry_chunks([found], len(found), segment.base_offset, segment.size, segment.path)

    return TransactionState.from_index_entries(
        (chunk for segment in _attached(partition.storage, partition.partition.segments)
         for chunk in entries(segment)), log_end)
