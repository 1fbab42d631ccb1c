"""What a reader learns of a partition wherever it lies, opened read-only: its log start and end offsets, its
segments and where they are read from, the offsets of timestamps, and its transactions.

A partition is one of three kinds (:data:`Found`):

- a broker's partition dir on the local disk, opened as a read-only :class:`~kafkalog.log.unified_log.Log`
  (``LogLoader.load`` with nothing removed, renamed, rebuilt or recovered);
- a broker's partition dir copied to a URL, read by range (:class:`~kafkalog.urls.partition.UrlPartition`);
- a partition of a tiered-storage layout, read through its uploaded indexes
  (:class:`~kafkalog.partition_view.tiered.TieredPartition`).

:func:`partition_facts` gives the same :class:`PartitionFacts` for each, so the Spark planner, the stream
reader and the jobs read every kind through one shape.  kafkalog's, no Kafka counterpart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..dir_layout import NotAPartitionDirError
from ..errors import IllegalStateError, StorageNotFoundError
from ..file_message_set import TimestampAndOffset
from ..log.transactions import TransactionState
from ..tools.partition_dir import PartitionDir, classify_dir, partition_dirs
from ..topic import TopicPartition
from ..urls.location import StorageLocation, is_url, locate
from ..urls.partition import UrlPartition, classify_remote_dir, remote_partition_dirs
from .sources import LocalDir, SegmentSource, UrlDir
from .tiered import TieredPartition, log_end_offset, offset_for_timestamp, transactions

__all__ = ["Found", "PartitionFacts", "partition_dirs_at", "partition_facts"]


@dataclass(frozen=True)
class PartitionFacts:
    """What a reader learns of one partition by opening it read-only (the Spark planner plans from it)."""

    dir: str
    topic_partition: TopicPartition
    log_start_offset: int
    log_end_offset: int
    #: The aborted transactions and the last stable offset; ``None`` when not read (a ``read_uncommitted``
    #: plan needs neither, and reading them scans every batch header of the partition).
    transactions: TransactionState | None
    #: ``(base offset, size in bytes)`` of each segment, in offset order.
    segments: tuple[tuple[int, int], ...]
    #: The offset of the first record at or after each timestamp asked for (``None``: no record is that late).
    offsets_for_times: Mapping[int, int | None] = field(default_factory=dict)
    #: Where its segments are read from (``None``: the local partition dir ``dir``).
    source: SegmentSource | None = None

    def __post_init__(self) -> None:
        if self.source is None:
            object.__setattr__(self, "source", LocalDir(self.dir))

    @property
    def segment_source(self) -> SegmentSource:
        assert self.source is not None
        return self.source

    @property
    def last_stable_offset(self) -> int:
        if self.transactions is None:
            raise IllegalStateError(f"{self.topic_partition}: the planner did not read its transactions "
                                    "(partition_facts(..., read_committed=True) does)")
        return self.transactions.last_stable_offset

    def aborted_between(self, start: int, end: int) -> TransactionState:
        """The aborted transactions a reader of ``[start, end)`` needs (none when they were not read)."""
        return TransactionState() if self.transactions is None else self.transactions.between(start, end)


#: A partition wherever it lies: a local partition dir, one at a URL, or a partition of a tiered-storage layout.
Found = Path | StorageLocation | TieredPartition


def partition_dirs_at(arg: str, storage_options: Mapping[str, Any] | None) -> list[Path | StorageLocation]:
    """The broker partition dirs (with ``-delete`` and ``-future`` ones) that ``arg`` names, a local path or a URL
    (read with ``storage_options``): itself or a log dir's.

    Raises:
        NotAPartitionDirError: nothing is there, or it is neither kind of directory.
    """
    where = locate(arg, storage_options if is_url(arg) else None)
    if isinstance(where, StorageLocation):
        try:
            kind = classify_remote_dir(where)
        except StorageNotFoundError:
            raise NotAPartitionDirError(f"No such directory: {arg}") from None
        return [where] if kind == "partition" else list(remote_partition_dirs(where))
    try:
        kind = classify_dir(where)
    except FileNotFoundError:
        raise NotAPartitionDirError(f"No such directory: {where}") from None
    return [where.resolve()] if kind == "partition" else [p.resolve() for p in partition_dirs(where)]


def partition_facts(path: Found, timestamps: Iterable[int] = (), *, read_committed: bool = True) -> PartitionFacts:
    """Open the partition dir read-only and read what planning needs, with the offsets of ``timestamps``
    (Kafka: ``fetchOffsetByTimestamp``, through the time index), and with ``read_committed`` its aborted
    transactions and last stable offset.  A dir at a URL is read by range
    (:class:`~kafkalog.urls.partition.UrlPartition`); a tiered layout's partition through its uploaded
    indexes (:mod:`kafkalog.partition_view.tiered`)."""
    if isinstance(path, TieredPartition):
        tiered = path.partition
        segments = tuple((s.base_offset, s.size) for s in tiered.segments)
        log_start = segments[0][0] if segments else 0
        log_end = log_end_offset(path)
        return PartitionFacts(str(path), TopicPartition(tiered.topic, tiered.partition), log_start, log_end,
                              transactions(path, log_end) if read_committed else None, segments,
                              {stamp: offset_for_timestamp(path, stamp) for stamp in timestamps}, path.source())
    if isinstance(path, StorageLocation):
        with UrlPartition.open(path) as remote:
            return PartitionFacts(remote.dir.url, remote.topic_partition, remote.log_start_offset,
                                  remote.log_end_offset, remote.transactions() if read_committed else None,
                                  tuple((s.base_offset, s.size()) for s in remote.segments),
                                  _offsets_for_times(remote, timestamps),
                                  UrlDir(remote.dir.storage, remote.dir.url))
    partition = PartitionDir.of(path)
    with partition.open_read_only() as log:
        segments = tuple((s.base_offset, s.size()) for s in log.log_segments())
        return PartitionFacts(str(partition.path), partition.topic_partition, log.log_start_offset,
                              log.log_end_offset, TransactionState.of(log) if read_committed else None, segments,
                              _offsets_for_times(log, timestamps))


class _FindsOffsets(Protocol):
    def find_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None: ...


def _offsets_for_times(partition: _FindsOffsets, timestamps: Iterable[int]) -> dict[int, int | None]:
    """The offset of the first record at or after each timestamp (``None``: no record is that late)."""
    found: dict[int, int | None] = {}
    for stamp in timestamps:
        hit = partition.find_offset_by_timestamp(stamp)
        found[stamp] = None if hit is None else hit.offset
    return found
