"""Planning a read: which partitions, which offsets, and which byte ranges of which segments each task reads.

The planner runs on the Spark driver.  It finds the partition dirs under the paths it is given, opens
each log read-only (a broker may be running on it) to learn its log start offset, log end offset,
aborted transactions and last stable offset (the read model below the Spark wing,
:func:`kafkalog.partition_view.facts.partition_facts`), resolves the requested offsets against them, and cuts the
range into :class:`ReadTask` s:

- with ``maxRecordsPerPartition``, a partition's offsets are first divided into equal runs of at most
  that many offsets, each read by its own tasks (Spark: ``KafkaOffsetRangeCalculator.getRanges``);
- a task covers a run of whole segments, or a piece of one large segment, of about
  ``maxPartitionBytes`` (128 MiB by default); so a partition with many segments, or one large segment,
  is read by many tasks at once;
- pieces of a segment are cut at batch boundaries found by the batch-scan kernel, so each batch
  belongs to exactly one task, and the record filter ``[start, end)`` does the rest;
- a task carries the aborted transactions that overlap its offsets (Kafka's
  ``collectAbortedTransactions(startOffset, upperBoundOffset)``), so it needs nothing else from the
  driver.

A task (:meth:`ReadTask.read`) opens only its segments' ``.log`` files, read-only, and reads its byte range
through the consumer's view (:mod:`kafkalog.log.consumer_view`, the one ``Log.records()`` reads through too):
a few MiB at a time, CRCs checked as a consumer with ``check.crcs=true`` does, decoded by the record
kernels into Arrow record batches (:mod:`kafkalog.spark.arrow`) without the control batches and, for
``read_committed``, the aborted ones.  Reading tiered storage, whose segments hold every offset up to the
next one's base offset, a task that reads a segment to its end and finds offsets of its range missing reports
them as lost data, as Spark's Kafka source reports offsets it planned and could not fetch
(:meth:`ReadTask._check_reached`: an error naming the segment, or with ``failOnDataLoss=false`` a warning).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dir_layout import NotAPartitionDirError
from ..errors import (
    CorruptRecordError,
    CorruptRemoteSegmentError,
    KafkaLogError,
    OffsetOutOfRangeError,
)
from ..file_message_set import ChunkBuffer, FileMessageSet
from ..log.consumer_view import ConsumerView, IsolationLevel
from ..partition_view.facts import Found, PartitionFacts, partition_dirs_at, partition_facts
from ..partition_view.sources import SegmentSource
from ..partition_view.tiered import AUTO, BROKER, TieredPartition, copied_ids, tiered_partitions
from ..topic import TopicPartition, parse_topic_partition_name
from .arrow import to_arrow
from .options import EARLIEST, LATEST, Position, ReadOptions, SparkOptionError, TimestampSpec

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ReadTask",
    "SegmentSlice",
    "divide_offsets",
    "find_partitions",
    "plan_read",
    "resolve_offsets",
]

logger = logging.getLogger(__name__)

#: Bytes read and decoded at a time by a task: what bounds its memory, whatever the segment size.
READ_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class SegmentSlice:
    """Bytes ``[start_position, end_position)`` of the segment with base offset ``base_offset``; with
    ``end_offset``, only its records below that offset (the next segment's base offset: tiered segments may
    overlap, and Kafka serves an offset from the segment with the greatest base offset at or below it)."""

    base_offset: int
    start_position: int
    end_position: int
    end_offset: int | None = None

    @property
    def size(self) -> int:
        return self.end_position - self.start_position


def _candidates(arg: str, storage_options: Mapping[str, Any] | None, options: ReadOptions | None,
                copied: frozenset[str] | None) -> list[Found]:
    """The partitions at ``arg`` in the options' ``layout``: a broker's partition dirs (with ``-delete`` and
    ``-future`` ones; itself or a log dir's), or a tiered layout's partitions (``auto``: the broker's dirs
    when ``arg`` is one, else the tiered layout found there)."""
    layout = options.layout if options is not None else AUTO
    prefix = options.layout_prefix if options is not None else None
    if layout not in (AUTO, BROKER):
        return list(tiered_partitions(arg, storage_options, layout, prefix=prefix, copied=copied) or ())
    try:
        return list(partition_dirs_at(arg, storage_options))
    except NotAPartitionDirError:
        if layout == BROKER:
            raise
        found = tiered_partitions(arg, storage_options, AUTO, prefix=prefix, copied=copied)
        if found is None:
            raise
        return list(found)


def find_partitions(paths: tuple[str, ...] | list[str], options: ReadOptions | None = None, *,
                    storage_options: Mapping[str, Any] | None = None) -> list[tuple[TopicPartition, Found]]:
    """The partitions under ``paths`` (each a log dir or a partition dir, or a tiered-storage layout's root:
    see :mod:`kafkalog.partition_view.tiered`) that ``options`` selects, sorted by topic and partition.  Dirs waiting
    for deletion (``-delete``) and future replicas (``-future``) hold no readable partition and are skipped.
    One partition found twice is refused, as are an ``assign``ed partition and a ``subscribe``d topic not found
    (Spark's source fails on both); a pattern, or no topic option, may find nothing.  A URL is read with
    ``storage_options`` (default: the options' ``storage.<name>`` ones).  With ``remoteLogMetadata``, a tiered
    layout keeps only the segments that topic says are ``COPY_SEGMENT_FINISHED``."""
    found: dict[TopicPartition, Found] = {}
    if storage_options is None and options is not None:
        storage_options = options.storage_options
    copied = None
    if options is not None and options.remote_log_metadata:
        copied = copied_ids(options.remote_log_metadata, storage_options)
    for arg in paths:
        for directory in _candidates(arg, storage_options, options, copied):
            if copied is not None and not isinstance(directory, TieredPartition):
                raise SparkOptionError(f"remoteLogMetadata filters the segments of tiered storage, but {arg} is a "
                                       "broker's log dir or partition dir: read it without remoteLogMetadata")
            name = directory.name
            if name.endswith("-delete") or name.endswith("-future"):
                continue
            tp = parse_topic_partition_name(name)
            if options is not None and not options.selects(tp.topic, tp.partition):
                continue
            if tp in found and found[tp] != directory:
                raise SparkOptionError(f"partition {tp} is found twice: in {found[tp]} and in {directory}")
            found[tp] = directory
    if options is not None and options.assign is not None:
        # An assigned partition that does not exist fails, as Kafka's ListOffsets for it does.
        missing = sorted(str(tp) for tp in options.assign if tp not in found)
        if missing:
            raise SparkOptionError(f"assign names partitions that are not under {', '.join(paths)}: "
                                   f"{', '.join(missing)}")
    if options is not None and options.topics is not None:
        # A subscribed topic that does not exist fails, as in Spark's source (its Admin's describeTopics answers
        # UnknownTopicOrPartitionException); a pattern that matches nothing is an empty read.
        unknown = sorted(options.topics - {tp.topic for tp in found})
        if unknown:
            raise SparkOptionError(f"subscribe names topics that are not under {', '.join(paths)}: "
                                   f"{', '.join(unknown)} (a topic is its <topic>-<partition> dirs; "
                                   "subscribePattern reads the topics that exist)")
    return sorted(found.items(), key=lambda item: (item[0].topic, item[0].partition))


def _requested(spec: Position, tp: TopicPartition, name: str, facts: PartitionFacts, latest: int) -> int:
    if isinstance(spec, TimestampSpec):
        return _by_timestamp(spec, tp, facts, latest, start=name.startswith("starting"))
    if isinstance(spec, int):
        return spec
    if tp not in spec:
        raise SparkOptionError(f"{name} names offsets, so it must name every partition read: {tp} is missing "
                               "(use -2 for earliest, -1 for latest)")
    return spec[tp]


def _by_timestamp(spec: TimestampSpec, tp: TopicPartition, facts: PartitionFacts, latest: int, *, start: bool) -> int:
    """The offset of ``tp`` that ``spec`` gives (Spark: ``KafkaOffsetReaderAdmin.readTimestampOffsets``).  As a
    broker answers ListOffsets, a record at or past what the consumer may read (``latest``: the last stable
    offset for ``read_committed``) is no match."""
    if isinstance(spec.timestamps, int):
        stamp = spec.timestamps
    elif tp in spec.timestamps:
        stamp = spec.timestamps[tp]
    else:
        raise SparkOptionError(f"{spec.option} names timestamps, so it must name every partition read: {tp} is missing")
    found = facts.offsets_for_times.get(stamp)
    if found is not None and found < latest:
        return found
    if start and not spec.latest_when_none:
        raise SparkOptionError(f"no record of {tp} has a timestamp at or after {stamp} ({spec.option}); "
                               "startingOffsetsByTimestampStrategy=latest starts such a partition at its latest offset")
    return LATEST


def resolve_offsets(facts: PartitionFacts, starting: Position, ending: Position, *, read_committed: bool,
                    fail_on_data_loss: bool) -> tuple[int, int]:
    """``[start, end)`` of one partition: -2 is the log start offset, -1 the log end offset (the last stable
    offset for ``read_committed``, as a consumer's ``endOffsets`` gives it); a timestamp is the first offset
    at or after it.  An offset before the log start or past the end is refused when ``fail_on_data_loss``
    (Spark's default), with the :class:`~kafkalog.errors.OffsetOutOfRangeError` a fetch of it from the log
    raises, and clamped otherwise."""
    tp = facts.topic_partition
    latest = facts.last_stable_offset if read_committed else facts.log_end_offset
    bounds = {EARLIEST: facts.log_start_offset, LATEST: latest}
    start = _requested(starting, tp, "startingOffsets", facts, latest)
    end = _requested(ending, tp, "endingOffsets", facts, latest)
    start = bounds.get(start, start)
    end = bounds.get(end, end)
    for name, offset in (("starting", start), ("ending", end)):
        if fail_on_data_loss and not facts.log_start_offset <= offset <= facts.log_end_offset:
            raise OffsetOutOfRangeError(
                f"The {name} offset {offset} of {tp} is out of range: the log holds offsets "
                f"{facts.log_start_offset} to {facts.log_end_offset} (exclusive). Some data may have been "
                "deleted, or the offset is wrong; set failOnDataLoss=false to read what is there.")
    start = min(max(start, facts.log_start_offset), latest)
    end = min(max(end, facts.log_start_offset), latest)
    if end < start:
        raise SparkOptionError(f"{tp}: the ending offset {end} is before the starting offset {start}")
    return start, end


@dataclass(frozen=True)
class ReadTask:
    """One Spark task of a read: some bytes of some segments of one partition, read through the consumer's
    view of its offsets (:class:`~kafkalog.log.consumer_view.ConsumerView`: the range, CRC checks, control and
    aborted batches hidden)."""

    dir: str
    topic: str
    partition: int
    slices: tuple[SegmentSlice, ...]
    view: ConsumerView
    include_headers: bool
    #: Where the segments are read from: a local dir, a dir at a URL, a tiered layout's segments (each
    #: filesystem built in the task's process at its first read).
    source: SegmentSource
    #: What offsets a segment of tiered storage should hold and does not are: an error (Spark's default), or
    #: skipped with a warning (``failOnDataLoss=false``).
    fail_on_data_loss: bool = True

    @property
    def size(self) -> int:
        return sum(s.size for s in self.slices)

    def read(self) -> Iterator[pa.RecordBatch]:
        """The task's records as Arrow record batches of the data source's schema."""
        # Every chunk is read into one buffer: its records are copied into Arrow before the next is read,
        # and fresh memory for each chunk cost as much as the read itself.
        buffer = ChunkBuffer()
        for piece in self.slices:
            yield from self._read_slice(piece, buffer)

    def _read_slice(self, piece: SegmentSlice, buffer: ChunkBuffer) -> Iterator[pa.RecordBatch]:
        path = self.source.log_name(piece.base_offset)
        try:
            segment = self.source.open_log(piece.base_offset)
        except FileNotFoundError:
            raise KafkaLogError(f"{path} is gone: the log was truncated, cleaned or deleted while the query ran "
                                "(read a copy, or stop the broker)") from None
        view = self.view
        if piece.end_offset is not None and piece.end_offset < view.end_offset:
            view = dataclasses.replace(view, end_offset=max(piece.end_offset, view.start_offset))
        reached = None
        with segment:
            size = segment.size_in_bytes()
            end = min(piece.end_position, size)
            if piece.start_position < end:
                part = segment.read(piece.start_position, end - piece.start_position)
                # One pass, as Log.record_columns() reads: each chunk scanned once, its control and aborted batches
                # found on the scan rows and never decoded, its columns cut to the range.  Each set is copied into
                # Arrow before the next is asked for, so one buffer serves every chunk.
                runs = view.segment_columns(part, 0, READ_CHUNK_BYTES, reuse=buffer)
                while True:
                    try:
                        columns = next(runs)
                    except StopIteration as stop:
                        reached = stop.value
                        break
                    except CorruptRecordError as e:
                        # Already at its file position; named as the task names the segment, with what to do.
                        raise e.at(e.position, path, note="; `kafkalog verify` tells more, `kafkalog recover` cuts "
                                                          "the log there") from e
                    yield to_arrow(columns, topic=self.topic, partition=self.partition,
                                   include_headers=self.include_headers)
        if self.source.offsets_contiguous and piece.end_position >= size:
            self._check_reached(piece, view, reached, path)

    def _check_reached(self, piece: SegmentSlice, view: ConsumerView, reached: int | None, path: str) -> None:
        """After a slice read to the end of its segment, in a source whose segments hold every offset up to the
        next one's base (tiered storage): the offsets of ``view`` past the last batch read (``reached``: the
        offset after it, ``None`` when the slice held none) are lost.  As Spark's Kafka source treats offsets
        it planned and could not fetch (``KafkaDataConsumer``: ``Cannot fetch records in [a, b)``, then
        ``reportDataLoss``): an error naming the segment with ``failOnDataLoss`` (a
        :class:`~kafkalog.errors.CorruptRemoteSegmentError`), else a warning, and the read goes on without them."""
        lost_from = max(view.start_offset, piece.base_offset if reached is None else reached)
        if lost_from >= view.end_offset:
            return
        what = (f"cannot read offsets {lost_from} to {view.end_offset} (exclusive) of {self.topic}-{self.partition}: "
                f"its segment at base offset {piece.base_offset} ends before them, though the store says they are "
                "there (the next segment's base offset, or the segment's own offset index and last batch); the "
                "segment's .log was cut short, or a segment after it is missing from the store")
        if self.fail_on_data_loss:
            raise CorruptRemoteSegmentError(
                f"{what}. Some data may have been lost; set failOnDataLoss=false to skip the offsets missing",
                path=path)
        logger.warning("%s (%s). Some data may have been lost; skipping the offsets missing (failOnDataLoss=false)",
                       what, path)


def _cut_points(segment: FileMessageSet, start: int, end: int, target: int) -> list[int]:
    """Batch boundaries that cut bytes ``[start, end)`` of a segment into pieces of about ``target`` bytes."""
    with segment:
        rows = segment.read(start, end - start).scan(check_crc=False, stop_on_invalid=False).batches
    positions = rows["position"]
    cuts: list[int] = []
    want = start + target
    while want < end:
        i = int(np.searchsorted(positions, want))
        if i >= len(positions):
            break
        cut = int(positions[i])
        if cut > (cuts[-1] if cuts else start):
            cuts.append(cut)
        want = cut + target
    return cuts


def _slices(facts: PartitionFacts, start: int, end: int) -> list[SegmentSlice]:
    """The byte ranges of the segments that hold offsets ``[start, end)``."""
    found = []
    segments = facts.segments
    for i, (base, size) in enumerate(segments):
        following = segments[i + 1][0] if i + 1 < len(segments) else None
        if following is not None and following <= start:
            continue
        if base >= end:
            break
        if size or facts.segment_source.offsets_contiguous:
            # A segment's records stop at the next one's base offset (tiered segments may overlap).  An empty
            # tiered segment is read too: its offsets below the next base are lost, and the read says so.
            found.append(SegmentSlice(base, 0, size, following if following is not None and following < end
                                      else None))
    if found and start > found[0].base_offset:
        # Skip the first segment's bytes below the start, as a fetch does, through the offset index.
        first = found[0]
        position = facts.segment_source.translate_offset(first.base_offset, first.end_position, start)
        if position is not None:
            found[0] = dataclasses.replace(first, start_position=position)
    return found


def plan_read(options: ReadOptions) -> list[ReadTask]:
    """The tasks of a batch read with ``options``: none when no partition is selected (a ``subscribePattern``
    matching no topic reads as an empty DataFrame, as in Spark's source)."""
    partitions = find_partitions(options.paths, options)
    facts = [partition_facts(path, options.timestamps_for(tp), read_committed=options.read_committed)
             for tp, path in partitions]
    known = {f.topic_partition for f in facts}
    for name, spec in (("startingOffsets", options.starting), ("endingOffsets", options.ending)):
        if isinstance(spec, TimestampSpec):
            name, spec = spec.option, spec.timestamps
        if isinstance(spec, dict):
            unknown = sorted(str(tp) for tp in spec if tp not in known)
            if unknown:
                raise SparkOptionError(f"{name} names partitions that are not under the paths: "
                                           f"{', '.join(unknown)}")
    ranges = [(f, *resolve_offsets(f, options.starting, options.ending, read_committed=options.read_committed,
                                    fail_on_data_loss=options.fail_on_data_loss)) for f in facts]
    return split_ranges(ranges, options)


def split_ranges(ranges: list[tuple[PartitionFacts, int, int]], options: ReadOptions) -> list[ReadTask]:
    """Cut each partition's ``[start, end)`` into runs of at most ``maxRecordsPerPartition`` offsets, then
    into tasks of about ``maxPartitionBytes`` (fewer bytes a task when ``minPartitions`` asks for more tasks
    than that gives)."""
    spans = [(f, lo, hi, _slices(f, lo, hi)) for f, start, end in ranges
             for lo, hi in divide_offsets(start, end, options.max_records_per_partition)]
    total = sum(s.size for *_rest, slices in spans for s in slices)
    target = options.max_partition_bytes
    if options.min_partitions:
        target = max(1, min(target, -(-total // options.min_partitions)))
    tasks: list[ReadTask] = []
    for facts, start, end, slices in spans:
        if not slices:
            continue
        isolation = IsolationLevel.READ_COMMITTED if options.read_committed else IsolationLevel.READ_UNCOMMITTED
        view = ConsumerView(start, end, isolation, facts.aborted_between(start, end), options.check_crcs)
        tp = facts.topic_partition
        tasks.extend(ReadTask(facts.dir, tp.topic, tp.partition, tuple(group), view, options.include_headers,
                              facts.segment_source.only({s.base_offset for s in group}), options.fail_on_data_loss)
                     for group in _group(facts, slices, target))
    return tasks


def divide_offsets(start: int, end: int, max_records: int | None) -> list[tuple[int, int]]:
    """``[start, end)`` in runs of at most ``max_records`` offsets, as equal as whole numbers allow, the
    later runs one longer (Spark: ``KafkaOffsetRangeCalculator.getDividedPartition``, with
    ``ceil(size / maxRecordsPerPartition)`` parts); an empty range gives none."""
    if end <= start:
        return []
    if max_records is None:
        return [(start, end)]
    parts = -(-(end - start) // max_records)
    runs, remaining, low = [], end - start, start
    for part in range(parts):
        length = remaining // (parts - part)
        remaining -= length
        runs.append((low, low + length))
        low += length
    return runs


def _group(facts: PartitionFacts, slices: list[SegmentSlice], target: int) -> list[list[SegmentSlice]]:
    """Slices in groups of about ``target`` bytes: small segments together, a large one cut in pieces."""
    groups: list[list[SegmentSlice]] = []
    group: list[SegmentSlice] = []
    size = 0
    for piece in slices:
        if piece.size > target:
            if group:
                groups.append(group)
                group, size = [], 0
            segment = facts.segment_source.open_log(piece.base_offset, piece.end_position)
            bounds = [piece.start_position, *_cut_points(segment, piece.start_position, piece.end_position, target),
                      piece.end_position]
            groups.extend([SegmentSlice(piece.base_offset, lo, hi, piece.end_offset)]
                          for lo, hi in itertools.pairwise(bounds))
            continue
        if group and size + piece.size > target:
            groups.append(group)
            group, size = [], 0
        group.append(piece)
        size += piece.size
    if group:
        groups.append(group)
    return groups

