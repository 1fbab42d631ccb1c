"""Per-partition statistics: what ``kafkalog stats`` prints and the Spark ``stats`` job returns.

Each partition is opened read-only (:class:`~kafkalog.log.unified_log.Log` with ``read_only=True``: nothing on disk
changes) and every record is decoded once, a chunk of whole batches at a time, by the column kernels:

- segments, bytes, log start and end offsets (the log start offset as the log dir's checkpoint records it, as
  a broker loads it), batches and records;
- the timestamp range of the records (``-1`` timestamps, v0 messages, left out);
- batches per message format and per codec;
- keys: records with a key, distinct keys (counted by a 64-bit hash of each key, 8 bytes a key),
  tombstones (records with a key and a null value);
- batches that fail their CRC check (counted, their records too, and reported: stats is no checker, but
  it does not hide what it met; ``kafkalog verify`` says where);
- bytes at the end of a segment that are no whole batch (a torn write, or a header no batch can have), which
  readers stop at and a broker's recovery truncates: counted and described in ``kafkalog verify``'s words
  (:func:`~kafkalog.tools.verify.log_tail_finding`);
- the cleaner's view: the first dirty offset (from the log dir's ``cleaner-offset-checkpoint``, else
  the log start offset) and the dirty ratio as Kafka's cleaner computes it (``LogToClean.cleanableRatio``:
  bytes of the cleanable segments over clean plus cleanable bytes).

A partition dir at a URL (:func:`remote_partition_stats`) gives the same statistics from the same bytes, the
cleaner's view included: Kafka's accounting (``cleanable_offsets``, ``LogToClean``) runs unchanged over its
segments and the ``cleaner-offset-checkpoint`` object.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._common import COMPRESSION_CODEC_MASK
from ..checkpoint import CLEANER_OFFSET_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE, OffsetCheckpoint
from ..cleaner.manager import LogToClean, cleanable_offsets
from ..config.log_config import LogConfig
from ..file_message_set import FileMessageSet
from ..log import Log
from ..log.segments import LogSegments
from ..record import CompressionType
from ..record.batch import RecordColumns
from ..topic import TopicPartition, parse_topic_partition_name
from .verify import Severity, log_tail_finding

if TYPE_CHECKING:
    from ..urls.location import StorageLocation

__all__ = ["PartitionStats", "partition_stats", "remote_partition_stats"]


@dataclass
class PartitionStats:
    """The statistics of one partition (see the module docstring)."""

    topic: str
    partition: int
    dir: str
    segments: int = 0
    size: int = 0
    log_start_offset: int = 0
    log_end_offset: int = 0
    batches: int = 0
    records: int = 0
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    magics: dict[str, int] = field(default_factory=dict)
    codecs: dict[str, int] = field(default_factory=dict)
    keyed_records: int = 0
    distinct_keys: int = 0
    tombstones: int = 0
    first_dirty_offset: int = 0
    dirty_ratio: float | None = None
    #: Batches whose CRC does not match their bytes; their records are counted all the same.
    crc_failures: int = 0
    #: Bytes after the last whole batch of a segment that are no batch (a torn write; not a zero-filled tail),
    #: which recovery would truncate; ``invalid_tails`` says where, a line a segment.
    invalid_tail_bytes: int = 0
    invalid_tails: list[str] = field(default_factory=list)
    #: Files named like a segment's but not for an offset as Kafka writes one, left out (``Log.load_report``).
    skipped_files: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _codec_name(codec: int) -> str:
    return CompressionType(codec).kafka_name if codec <= CompressionType.ZSTD else f"unknown({codec})"


def _checkpointed(directory: Path, name: str) -> int | None:
    """The partition's entry in its log dir's checkpoint ``name``; ``None`` when there is none."""
    file = directory.parent / name
    if not file.exists():
        return None
    return OffsetCheckpoint(file, read_only=True).read().get(parse_topic_partition_name(directory))


class _DistinctKeys:
    """The distinct key hashes seen so far: what it holds grows with the distinct keys, not with the records
    (each set of columns adds its distinct hashes; they are folded into one sorted array of distinct hashes
    whenever the added ones outnumber the folded ones, so the folding costs O(n log n) in all)."""

    def __init__(self) -> None:
        self._folded = np.empty(0, dtype=np.int64)
        self._pending: list[Any] = []
        self._pending_count = 0

    def add(self, hashes: Any) -> None:
        distinct = np.unique(hashes)
        self._pending.append(distinct)
        self._pending_count += len(distinct)
        if self._pending_count > max(1 << 16, len(self._folded)):
            self._fold()

    def _fold(self) -> None:
        if self._pending:
            self._folded = np.unique(np.concatenate([self._folded, *self._pending]))
            self._pending = []
            self._pending_count = 0

    def __len__(self) -> int:
        self._fold()
        return len(self._folded)


def _count_keys(columns: RecordColumns, hashes: _DistinctKeys) -> tuple[int, int]:
    """Keyed records and tombstones of a set of columns; adds the hashes of their keys to ``hashes``."""
    rows = columns.records
    keyed = rows["key_len"] >= 0
    if not keyed.any():
        return 0, 0
    data = columns.data
    starts = rows["key_pos"][keyed].tolist()
    lengths = rows["key_len"][keyed].tolist()
    with memoryview(data) as view:
        hashes.add(np.fromiter((hash(bytes(view[s:s + n])) for s, n in zip(starts, lengths, strict=True)),
                               dtype=np.int64, count=len(starts)))
    tombstones = int(np.count_nonzero(rows["value_len"][keyed] < 0))
    return len(starts), tombstones


def partition_stats(path: str | os.PathLike[str], config: LogConfig | None = None, *,
                    progress: Callable[[int], None] | None = None) -> PartitionStats:
    """Open the partition at ``path`` read-only and compute its statistics.

    ``config`` matters only for the dirty ratio (``min.compaction.lag.ms``); ``progress`` is called with
    the bytes of log read as the scan goes.
    """
    directory = Path(path)
    step = progress if progress is not None else (lambda _n: None)
    # The log start offset as the log dir's checkpoint records it, as a broker loads it (and a partition dir
    # with no segment reads as an empty log from there).
    log_start = _checkpointed(directory, LOG_START_OFFSET_CHECKPOINT_FILE)
    with Log(directory, config, read_only=True, log_start_offset=log_start or 0) as log:
        tp = log.topic_partition
        # Segments on disk: a dir with none reads as an empty log, whose one segment has no file.
        on_disk = sum(not s.is_absent for s in log.log_segments())
        stats = PartitionStats(tp.topic, tp.partition, str(directory), segments=on_disk,
                               size=log.size, log_start_offset=log.log_start_offset,
                               log_end_offset=log.log_end_offset,
                               skipped_files=[name for name, _why in log.load_report.skipped_files])
        torn_end = _count_segments(stats, [segment.log for segment in log.log_segments()], step)
        # A torn tail read without recovery can leave the last segment's index pointing past the cut, and the
        # log end found from that index then falls back to the segment's base (Kafka's readNextOffset does the
        # same); the end recovery would leave is the offset after the last whole batch, which is what the
        # records counted here run to.
        if torn_end is not None and torn_end > stats.log_end_offset:
            stats.log_end_offset = torn_end
        _cleaner_view(stats, log, _checkpointed(directory, CLEANER_OFFSET_CHECKPOINT_FILE), log.time.milliseconds())
    return stats


def _cleaner_view(stats: PartitionStats, log: Log, cleaned: int | None, now: int) -> None:
    """Set the cleaner's view of ``log`` in ``stats``, as a cleaning round would find it: the first dirty offset
    from the checkpointed one (``cleaned``, ``None`` when the log dir's checkpoint has none; Kafka:
    ``LogCleanerManager.cleanableOffsets``) and the dirty ratio, cleanable bytes over clean plus cleanable bytes
    (``LogToClean.cleanableRatio``; ``None`` for a log with neither, where Kafka's is NaN)."""
    offsets = cleanable_offsets(log, cleaned, now)
    to_clean = LogToClean(TopicPartition(stats.topic, stats.partition), log, offsets.first_dirty_offset,
                          offsets.first_uncleanable_dirty_offset)
    stats.first_dirty_offset = offsets.first_dirty_offset
    stats.dirty_ratio = None if math.isnan(to_clean.cleanable_ratio) else to_clean.cleanable_ratio


def _count_segments(stats: PartitionStats, logs: list[FileMessageSet], step: Callable[[int], None]) -> int | None:
    """Add what the segments' ``.log`` sets hold to ``stats``: batches, records, formats, codecs, timestamps,
    keys (a local read-only log's segments, or objects read by range: the same kernels over the same bytes).

    Returns the offset after the last whole batch when the last segment ends in a torn tail (the log end
    offset its recovery would leave), else ``None``."""
    torn_end: int | None = None
    magics: Counter[str] = Counter()
    codecs: Counter[str] = Counter()
    hashes = _DistinctKeys()
    lowest, highest = math.inf, -math.inf
    for records in logs:
        scan = records.scan(check_crc=True, stop_on_invalid=False)
        rows = scan.batches
        size = records.size_in_bytes()
        tail = log_tail_finding(scan, size)
        if tail is not None and tail[0] is Severity.ERROR:
            stats.invalid_tail_bytes += size - (int(rows["position"][-1]) + int(rows["size"][-1]) if len(rows) else 0)
            stats.invalid_tails.append(f"{records.file.name}: {tail[1]}")
        if records is logs[-1] and tail is not None and tail[0] is Severity.ERROR and len(rows):
            torn_end = int(rows["last_offset"][-1]) + 1
        stats.batches += len(rows)
        stats.crc_failures += int(np.count_nonzero(rows["valid"] == 0))
        for magic, n in zip(*np.unique(rows["magic"], return_counts=True), strict=True):
            magics[f"v{int(magic)}"] += int(n)
        # Every magic keeps its codec in the low three bits of the attributes the scan already read.
        for codec, n in zip(*np.unique(rows["attributes"] & COMPRESSION_CODEC_MASK, return_counts=True),
                            strict=True):
            codecs[_codec_name(int(codec))] += int(n)
        for _start, memory in records.memory_chunks(rows):
            for columns in memory.record_columns(check_crcs=False):
                stats.records += len(columns)
                timestamps = columns.records["timestamp"]
                timestamps = timestamps[timestamps >= 0]
                if len(timestamps):
                    lowest = min(lowest, int(timestamps.min()))
                    highest = max(highest, int(timestamps.max()))
                keyed, tombstones = _count_keys(columns, hashes)
                stats.keyed_records += keyed
                stats.tombstones += tombstones
            step(len(memory))
    stats.magics = dict(sorted(magics.items()))
    stats.codecs = dict(sorted(codecs.items()))
    stats.distinct_keys = len(hashes)
    if lowest is not math.inf:
        stats.min_timestamp, stats.max_timestamp = int(lowest), int(highest)
    return torn_end


def remote_partition_stats(location: StorageLocation, config: LogConfig | None = None, *,
                           progress: Callable[[int], None] | None = None) -> PartitionStats:
    """:func:`partition_stats` of a partition dir at a URL (:class:`~kafkalog.urls.partition.UrlPartition`,
    read by range), the same statistics from the same bytes.  The cleaner's view is computed by the same code
    as the local one (:func:`~kafkalog.cleaner.manager.cleanable_offsets`,
    :class:`~kafkalog.cleaner.manager.LogToClean`), over the partition's segments and the log dir's
    ``cleaner-offset-checkpoint`` object (:class:`_UrlLogView`)."""
    from ..urls.partition import UrlPartition, read_offset_checkpoint

    step = progress if progress is not None else (lambda _n: None)
    with UrlPartition.open(location) as partition:
        tp = partition.topic_partition
        stats = PartitionStats(tp.topic, tp.partition, location.url, segments=len(partition.segments),
                               size=partition.size, log_start_offset=partition.log_start_offset,
                               log_end_offset=partition.log_end_offset,
                               skipped_files=[name for name, _why in partition.skipped_files])
        _count_segments(stats, [segment.log for segment in partition.segments], step)
        cleaned = read_offset_checkpoint(location.parent / CLEANER_OFFSET_CHECKPOINT_FILE).get(tp)
        view = _UrlLogView(partition, config if config is not None else LogConfig())
        # The view answers every question the cleaner's accounting asks of a Log (see _UrlLogView).
        _cleaner_view(stats, cast(Log, view), cleaned, int(time.time() * 1000))
    return stats


class _NoSegment:
    """The one segment, with no file, that a partition dir holding no segment reads as (a read-only
    ``LogLoader.load`` gives such a log an empty active segment at its log start offset).  It is its own
    ``log``: empty, never truncated."""

    truncations = 0

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self.log = self

    def size(self) -> int:
        return 0

    def size_in_bytes(self) -> int:
        return 0


class _UrlLogView:
    """A :class:`~kafkalog.urls.partition.UrlPartition` seen as the read-only :class:`~kafkalog.log.unified_log.Log`
    that the cleaner's accounting reads: ``name``, ``config``, the log start and end offsets, the high
    watermark (the log end offset, as a read-only ``Log``'s follows it), the segments in a
    :class:`~kafkalog.log.segments.LogSegments` (the last one active), ``log_segments(from, to)``.  The last
    stable offset is read from the segments' transactional batch headers, as for a local log
    (:func:`~kafkalog.log.transactions.first_unstable_offset`).  ``min.compaction.lag.ms`` compares each segment's
    largest record timestamp (:meth:`~kafkalog.urls.partition.UrlSegment.largest_timestamp`)."""

    def __init__(self, partition: Any, config: LogConfig) -> None:
        self.name = partition.dir.name
        self.config = config
        self.log_start_offset: int = partition.log_start_offset
        self.log_end_offset: int = partition.log_end_offset
        self.high_watermark = self.log_end_offset
        # Read-only, as a broker's dir read in place: no producer state, so the cleaner's accounting reads the
        # last stable offset from the batch headers.
        self.read_only = True
        self.segments = LogSegments(partition.topic_partition)
        for segment in partition.segments or [_NoSegment(self.log_start_offset)]:
            self.segments.add(segment)

    @property
    def active_segment(self) -> Any:
        return self.segments.last_segment()

    def log_segments(self, from_offset: int | None = None, to_offset: int | None = None) -> list[Any]:
        return self.segments.values(from_offset, to_offset)
