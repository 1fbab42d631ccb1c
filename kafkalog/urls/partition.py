"""A broker's log dir or partition dir copied to a filesystem reached by URL, read as a read-only open reads
it locally: listings, segments read by range, index-guided lookups, offsets and transactions (what
:func:`kafkalog.partition_view.facts.partition_facts` learns of it).

What a directory is follows :mod:`kafkalog.dir_layout`, as for a local dir
(:func:`~kafkalog.tools.partition_dir.classify_dir`, :func:`~kafkalog.tools.partition_dir.partition_dirs`): a
partition dir is named ``<topic>-<partition>`` and holds segment files (or nothing yet); a log dir holds
the broker's checkpoint files, ``meta.properties`` or partition dirs.  ``-delete`` and ``-future`` dirs
hold no readable partition and are skipped, as the Spark planner skips them.

A partition is opened as :class:`~kafkalog.log.unified_log.Log` with ``read_only=True`` opens one (``LogLoader.load``,
read-only: nothing removed, renamed, rebuilt or recovered), each step here over a listing and ranged reads:

- the segments are the live ``<20-digit offset>.log`` objects; ``.cleaned``/``.swap``/``.deleted`` files are
  not read, and a name whose prefix is not an offset as Kafka writes one is skipped (``skipped_files``);
- an index is read whole, with one ranged read, at its first use; a missing one reads as empty, and when
  either index of a segment fails its sanity check both are ignored (the segment is read from its start), as
  ``LogLoader.loadSegmentFiles`` does for a read-only open; the last segment's indexes take only their live
  entries first, the ones before an active segment's preallocated zero tail, as a local read-only open's do
  (:mod:`kafkalog.index.live_entries`);
- the transaction index of a segment that has an offset index is read and checked at the open, as
  ``LogSegment.sanityCheck`` checks it (:meth:`UrlSegment.sanity_check`): an entry of a version this reader
  does not know fails the open, as it fails a local read-only open and a broker's load, and one that ends
  below the segment has the segment read without its offset and time indexes, as a local read-only open reads
  it;
- the log start offset is ``max(log-start-offset-checkpoint entry, first segment's base offset)``
  (``LogLoader.load``); the log end offset is the last segment's ``readNextOffset``: its last indexed offset
  found through the offset index, the batches from there scanned (``LogSegment.readNextOffset``); a partition
  with no segment is an empty log at its checkpointed log start offset;
- ``offset -> position`` is the offset index's lookup then a search of the log from that position
  (``LogSegment.translateOffset``); ``timestamp -> offset`` is the time index's lookup, the offset index's
  for its offset, then a search of the log (``LogSegment.findOffsetByTimestamp``, ``Log.fetchOffsetByTimestamp``);
- a ``.txnindex`` is read a chunk at a time into compact columns
  (:meth:`~kafkalog.log.transactions.TransactionState.from_index_entries`), and one that fails Kafka's sanity check
  (or holds more entries than its segment holds batches) is not trusted: the partition's transactions are read
  from its batch headers, as for a read-only open.

Objects are taken as immutable while read: a copied dir, not one a broker writes to.  (:mod:`kafkalog.remote`
reads the other kind of remote data, the layouts Kafka's tiered storage uploads; :class:`UrlPartition` is a
broker's partition dir copied as it is.)
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt

from ..checkpoint import LOG_START_OFFSET_CHECKPOINT_FILE
from ..dir_layout import NotAPartitionDirError, classify_listing, looks_like_partition
from ..errors import CorruptIndexError, IllegalArgumentError, KafkaLogError
from ..file_message_set import FileMessageSet, LogOffsetPosition, TimestampAndOffset
from ..filenames import segment_file_offset
from ..index import OffsetIndex, TimeIndex, TimestampOffset
from ..index.live_entries import offset_index_zero_first_entry, time_index_zero_first_entry
from ..log.transactions import TransactionState
from ..producer_state import DEFAULT_PRODUCER_ID_EXPIRATION_MS
from ..topic import InvalidPartitionDirError, TopicPartition, parse_topic_partition_name
from ..transaction_index import ABORTED_TXN_SIZE, checked_entry_chunks
from . import files
from .channel import open_remote_log, read_index
from .location import StorageLocation

__all__ = ["UrlPartition", "UrlSegment", "classify_remote_dir", "remote_partition_dirs"]

_SEGMENT_FILE = re.compile(r"^[0-9]+\.(log|index|timeindex|txnindex)$")
_SNAPSHOT_FILE = re.compile(r"^[0-9]+\.snapshot$")
logger = logging.getLogger(__name__)


def _partition_of(name: str) -> TopicPartition | None:
    try:
        return parse_topic_partition_name(name)
    except InvalidPartitionDirError:
        return None


def classify_remote_dir(location: StorageLocation) -> str:
    """``"partition"`` or ``"logdir"`` (the rules of :func:`kafkalog.tools.partition_dir.classify_dir`).

    Raises:
        StorageNotFoundError: nothing is at ``location``.
        NotAPartitionDirError: it is a file, or neither kind of directory.
    """
    if location.info().get("type") != "directory":
        raise NotAPartitionDirError(f"{location} is a file, not a partition dir or a log dir")
    kinds = {name: kind for name, kind, _size in location.entries()}

    def partition_child(name: str) -> bool:
        return kinds[name] == "directory" and _partition_of(name) is not None and \
            looks_like_partition([e[0] for e in (location / name).entries()])

    return classify_listing(str(location), _partition_of(location.name) is not None, list(kinds), partition_child)


def remote_partition_dirs(log_dir: StorageLocation) -> list[StorageLocation]:
    """The partition dirs of a log dir, sorted by name (``-delete`` and ``-future`` dirs included, as
    :func:`kafkalog.tools.partition_dir.partition_dirs` lists them)."""
    return [log_dir / name for name, kind, _size in log_dir.entries()
            if kind == "directory" and _partition_of(name) is not None]


def read_offset_checkpoint(location: StorageLocation, size: int | None = None) -> dict[TopicPartition, int]:
    """The offset checkpoint object at ``location`` (missing: empty), parsed as a broker reads the file
    (:func:`kafkalog.urls.files.read_offset_checkpoint`: one ranged read, of ``size`` when a listing gave it).

    Raises:
        CorruptCheckpointError: the object is not a checkpoint (:func:`kafkalog.checkpoint.parse_checkpoint`).
    """
    return files.read_offset_checkpoint(location, size)


class UrlSegment:
    """One segment of a remote partition dir: its ``.log`` read by range, its indexes read at first use."""

    def __init__(self, dir: StorageLocation, base_offset: int, files: dict[str, int]) -> None:
        """``files``: the sizes of the segment's objects by suffix (``log`` at least) as a listing gave them."""
        self.dir = dir
        self.base_offset = base_offset
        self._files = files  # suffix -> object size, from the listing
        stem = f"{base_offset:020d}"
        self.log: FileMessageSet = open_remote_log(dir / f"{stem}.log", files["log"])
        self._indexes: tuple[OffsetIndex, TimeIndex] | None = None
        #: Whether this is the partition's last segment, whose indexes may end in an active segment's
        #: preallocated zero tail (set by :class:`UrlPartition`; see :meth:`LogSegment.check_index_files
        #: <kafkalog.segment.LogSegment.check_index_files>`).
        self.last = False

    def sanity_check(self) -> None:
        """Check the transaction index as a read-only open checks a segment it loads (Kafka's
        ``LogSegment.sanityCheck``), so that a partition gives one answer wherever its files lie: an entry of a
        version this reader does not know fails the open, as it fails a broker's load; an index whose entries
        fail Kafka's check of their offsets is not trusted, with a warning here, and :meth:`txn_index_entries`
        refuses it to the reader of the transactions, who reads the batch headers instead (as a local read-only
        open leaves such an index; the offset and time indexes are still used).

        Raises:
            TransactionIndexError: an entry of a version this reader does not know.
        """
        try:
            for _chunk in self.txn_index_entries():
                pass
        except CorruptIndexError as e:
            logger.warning("Transaction index of %s fails its check (%s); a read-only open cannot rebuild it, so "
                           "it is not trusted: the aborted transactions are read from the batch headers.", self.log, e)

    def _load_indexes(self) -> tuple[OffsetIndex, TimeIndex]:
        if self._indexes is None:
            stem = f"{self.base_offset:020d}"
            # A size the listing did not give is asked for (a missing object reads as an empty index).
            offset_index = read_index(OffsetIndex, self.dir / f"{stem}.index", self.base_offset,
                                      self._files.get("index"))
            time_index = read_index(TimeIndex, self.dir / f"{stem}.timeindex", self.base_offset,
                                    self._files.get("timeindex"))
            try:
                if self.last:
                    # The rule a local read-only open reads its last segment's indexes by.
                    first = next(iter(self.log.batches()), None)
                    first_max_timestamp = first.max_timestamp if first is not None else None
                    offset_index.take_live_entries(offset_index_zero_first_entry(first is not None))
                    time_index.take_live_entries(time_index_zero_first_entry(first_max_timestamp))
                offset_index.sanity_check()
                time_index.sanity_check()
            except KafkaLogError:
                # LogLoader.loadSegmentFiles, read-only: a segment whose indexes fail their check is read
                # without them.
                offset_index.close()
                time_index.close()
                offset_index = OffsetIndex.from_bytes(b"", offset_index.path, self.base_offset)
                time_index = TimeIndex.from_bytes(b"", time_index.path, self.base_offset)
            self._indexes = (offset_index, time_index)
        return self._indexes

    @property
    def offset_index(self) -> OffsetIndex:
        return self._load_indexes()[0]

    @property
    def time_index(self) -> TimeIndex:
        return self._load_indexes()[1]

    def size(self) -> int:
        return self.log.size_in_bytes()

    def translate_offset(self, offset: int, starting_file_position: int = 0) -> LogOffsetPosition | None:
        """Kafka: ``LogSegment.translateOffset``: the first batch whose last offset is >= ``offset``."""
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for(offset, max(mapping.position, starting_file_position))

    def read_next_offset(self) -> int:
        """Kafka: ``LogSegment.readNextOffset``: the offset after the last batch, scanned from the last
        indexed offset."""
        found = self.translate_offset(self.offset_index.last_offset)
        if found is None:
            return self.base_offset
        rows = self.log.scan(check_crc=False, stop_on_invalid=False, starting_position=found.position).batches
        return int(rows["last_offset"][-1]) + 1 if len(rows) else self.base_offset

    def max_timestamp_so_far(self) -> TimestampOffset:
        """The largest timestamp: the time index's last entry, or a scan of the log when it has none."""
        last = self.time_index.last_entry
        if last.timestamp < 0 and self.log.size_in_bytes() > 0:
            found = self.log.largest_timestamp_after(0)
            return TimestampOffset(found.timestamp, found.offset)
        return last

    def largest_timestamp(self) -> int:
        """The largest record timestamp (Kafka: ``LogSegment.largestTimestamp``), what
        ``min.compaction.lag.ms`` compares; where Kafka takes the file's modification time for a segment with
        no timestamp, an object has none of the broker's (a copy's time is the copy's), so such a segment reads
        as -1: older than any lag."""
        return self.max_timestamp_so_far().timestamp

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int | None = None
                                 ) -> TimestampAndOffset | None:
        """Kafka: ``LogSegment.findOffsetByTimestamp``."""
        start = self.base_offset if starting_offset is None else starting_offset
        timestamp_offset = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(timestamp_offset.offset, start)).position
        return self.log.search_for_timestamp(timestamp, position, start)

    def txn_index_entries(self) -> Iterator[npt.NDArray[Any]]:
        """The entries of the segment's ``.txnindex`` object, a chunk at a time, each checked as it comes
        (:func:`~kafkalog.transaction_index.checked_entry_chunks`: Kafka's sanity check, and no more entries than
        the segment holds batches); none when the listing shows no such object (a broker writes one only for a
        segment that holds an ABORT marker).

        Raises:
            CorruptIndexError: the index is not to be trusted.
        """
        if "txnindex" not in self._files:
            return iter(())
        file = self.dir / f"{self.base_offset:020d}.txnindex"
        size = self._files["txnindex"]
        return checked_entry_chunks(files.iter_txn_index_entries(file, size), size // ABORTED_TXN_SIZE,
                                    self.base_offset, self.size(), file.url)

    def close(self) -> None:
        self.log.close()
        if self._indexes is not None:
            for index in self._indexes:
                index.close()
            self._indexes = None

    def __repr__(self) -> str:
        return f"UrlSegment({self.dir}, base_offset={self.base_offset}, size={self.size()})"


@dataclass
class UrlPartition:
    """A partition dir at a URL, opened read-only (see the module docstring)."""

    dir: StorageLocation
    topic_partition: TopicPartition
    segments: list[UrlSegment]
    log_start_offset: int
    #: Files named like a segment's but not for an offset as Kafka writes one, left out.
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    #: The producer snapshots the listing showed: offset -> object size.
    snapshots: dict[int, int] = field(default_factory=dict)
    _log_end_offset: int | None = None

    @classmethod
    def open(cls, location: StorageLocation) -> UrlPartition:
        """Open the partition dir at ``location``.

        Raises:
            StorageNotFoundError: nothing is there.
            NotAPartitionDirError: it is a log dir, or no partition dir.
        """
        if classify_remote_dir(location) != "partition":
            raise NotAPartitionDirError(f"{location} is a log dir: name one of its partition dirs "
                                        "(<topic>-<partition>)")
        tp = parse_topic_partition_name(location.name)
        by_base: dict[int, dict[str, int]] = {}
        skipped: list[tuple[str, str]] = []
        snapshots: dict[int, int] = {}
        for name, kind, size in location.entries():
            if kind == "file" and _SNAPSHOT_FILE.match(name):
                snapshots[int(name.split(".", 1)[0])] = size
                continue
            if kind != "file" or not _SEGMENT_FILE.match(name):
                continue
            try:
                base = segment_file_offset(name)
            except IllegalArgumentError as e:
                skipped.append((name, str(e)))
                continue
            by_base.setdefault(base, {})[name.split(".", 1)[1]] = size
        checkpointed = read_offset_checkpoint(location.parent / LOG_START_OFFSET_CHECKPOINT_FILE).get(tp)
        segments: list[UrlSegment] = []
        try:
            for base, listed in sorted(by_base.items()):
                if "log" not in listed:
                    continue
                # An index the listing does not show is missing: size 0, read as empty without a request.
                segment = UrlSegment(location, base, {"index": 0, "timeindex": 0, **listed})
                segments.append(segment)
                # LogLoader.loadSegmentFiles checks a segment that has an offset index; a read-only one that has
                # none is read as it is (a broker would recover it).
                if "index" in listed:
                    segment.sanity_check()
        except BaseException:
            for segment in segments:
                segment.close()
            raise
        if segments:
            segments[-1].last = True
        first = segments[0].base_offset if segments else 0
        log_start = max(checkpointed or 0, first)
        return cls(location, tp, segments, log_start, skipped, snapshots)

    def __enter__(self) -> UrlPartition:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    @property
    def size(self) -> int:
        return sum(s.size() for s in self.segments)

    @property
    def log_end_offset(self) -> int:
        """The last segment's next offset; an empty partition's is its log start offset."""
        if self._log_end_offset is None:
            self._log_end_offset = self.segments[-1].read_next_offset() if self.segments else self.log_start_offset
        return self._log_end_offset

    def segment_for(self, base_offset: int) -> UrlSegment:
        for segment in self.segments:
            if segment.base_offset == base_offset:
                return segment
        raise KafkaLogError(f"{self.dir} has no segment with base offset {base_offset}")

    def find_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """The first record with timestamp >= ``timestamp`` (Kafka: ``fetchOffsetByTimestamp``, without the
        special timestamps), or ``None``.  A segment whose largest timestamp is below it is passed over (a
        segment with no timestamp at all is searched: an object has no modification time to compare)."""
        for segment in self.segments:
            largest = segment.max_timestamp_so_far().timestamp
            if 0 <= largest < timestamp:
                continue
            found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                return found
        return None

    def transactions(self) -> TransactionState:
        """The aborted transactions and last stable offset, found as for a log read in place, by the same
        function (:meth:`TransactionState.in_place <kafkalog.log.transactions.TransactionState.in_place>`): from the
        ``.txnindex`` objects and the latest producer snapshot (with the batches after it) when the dir has a
        snapshot, from the batch headers when it has none, the snapshot does not read or a ``.txnindex`` is not
        to be trusted (:meth:`UrlSegment.txn_index_entries`; a warning names it).  The snapshot's producers are
        expired at the default ``producer.id.expiration.ms`` by the wall clock (an object carries no log config)."""
        return TransactionState.in_place(
            [(offset, self.dir / f"{offset:020d}.snapshot", size) for offset, size in self.snapshots.items()],
            files.read_producer_snapshot_transactions, self.segments, UrlSegment.txn_index_entries,
            self.log_start_offset, self.log_end_offset, self.dir, int(time.time() * 1000),
            DEFAULT_PRODUCER_ID_EXPIRATION_MS)

    def batches_from(self, start_offset: int) -> Iterator[tuple[UrlSegment, int]]:
        """``(segment, file position)`` pairs from the batch holding ``start_offset`` on, as a fetch reads
        them: a consumer view's ``records`` takes the segments' logs with those positions."""
        for i, segment in enumerate(self.segments):
            following = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
            if following is not None and following <= start_offset:
                continue
            position = 0
            if start_offset > segment.base_offset:
                found = segment.translate_offset(start_offset)
                if found is None:
                    continue
                position = found.position
            yield segment, position
