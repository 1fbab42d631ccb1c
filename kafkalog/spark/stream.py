"""Offsets of a streaming read: where each micro-batch of ``spark.readStream.format("kafkalog")`` ends.

A stream's position is Kafka's offsets JSON, ``{"topic": {"partition": next offset}}``, which Spark
writes to the query's checkpoint after each micro-batch and hands back on restart, so a restarted
query resumes where it stopped.  Each trigger:

- the partitions under the paths are listed again: a partition that appeared since the last trigger
  is read from its log start offset (as Spark's Kafka source reads new partitions from earliest);
- a partition's end is its log end offset, or its last stable offset for ``read_committed``;
- ``maxOffsetsPerTrigger`` caps the offsets a micro-batch takes, shared between partitions in
  proportion to how far each is behind (Spark: ``KafkaMicroBatchStream.rateLimit``);
- ``minOffsetsPerTrigger`` holds a micro-batch back until that many offsets are waiting, or until
  ``maxTriggerDelay`` (15 minutes by default) has passed since the last one (Spark:
  ``KafkaMicroBatchStream.delayBatch``, :class:`AdmissionControl`).  A trigger that reads everything
  (``Trigger.Once``, Spark's ``ReadAllAvailable``) is neither capped nor held back;
- ``Trigger.AvailableNow`` fixes its end when the query starts (:func:`available_offsets`, Spark:
  ``KafkaMicroBatchStream.prepareForTriggerAvailableNow`` and its ``allDataForTriggerAvailableNow``): the
  partitions found then, each up to its end then; records appended later, and partitions that appear later,
  wait for the next query.  Its micro-batches are capped by ``maxOffsetsPerTrigger`` as any others, until the
  end is reached.  ``minOffsetsPerTrigger`` does not hold them back: a query that is to end cannot wait for
  records that may never come (kafkalog's choice; PySpark's ``ReadMinRows`` says a source must handle this
  case itself).

A selection that finds no partition (``subscribePattern`` matching no topic yet) is an empty position, as in
Spark's source: the stream waits, and reads a matching partition that appears from its start.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..partition_view.facts import PartitionFacts, partition_facts
from ..topic import TopicPartition
from .options import EARLIEST, LATEST, ReadOptions, SparkOptionError, TimestampSpec
from .plan import ReadTask, find_partitions, resolve_offsets, split_ranges

__all__ = ["AdmissionControl", "Available", "StreamPosition", "available_offsets", "from_json", "initial_position",
           "latest_position", "plan_micro_batch", "to_json"]

#: Next offset to read, per partition.
StreamPosition = dict[TopicPartition, int]

#: Per partition: the offset a stream reads it from when it first sees it (its log start offset), and its end.
Available = dict[TopicPartition, tuple[int, int]]


def to_json(position: StreamPosition) -> dict[str, dict[str, int]]:
    """The position as Spark stores it (Kafka's offsets JSON, as a dict)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(position, key=lambda t: (t.topic, t.partition)):
        out.setdefault(tp.topic, {})[str(tp.partition)] = position[tp]
    return out


def from_json(offsets: dict[str, dict[str, int]]) -> StreamPosition:
    try:
        return {TopicPartition(topic, int(p)): int(o) for topic, parts in offsets.items() for p, o in parts.items()}
    except (AttributeError, TypeError, ValueError):
        raise SparkOptionError(f"not a kafkalog stream offset: {offsets!r}") from None


def _facts(options: ReadOptions) -> dict[TopicPartition, PartitionFacts]:
    partitions = find_partitions(options.paths, options)
    return {tp: partition_facts(path, options.timestamps_for(tp), read_committed=options.read_committed)
            for tp, path in partitions}


@dataclass
class AdmissionControl:
    """Whether a micro-batch may start now (Spark: ``KafkaMicroBatchStream.delayBatch``): when
    ``max_delay_ms`` has passed since the last admitted batch (or none was ever admitted), or when at least
    ``min_offsets`` offsets are waiting.  ``clock`` gives seconds, monotonic."""

    min_offsets: int
    max_delay_ms: int
    clock: Callable[[], float] = time.monotonic
    _last_ms: float | None = None

    def admits(self, waiting: int) -> bool:
        now = self.clock() * 1000
        # As in Spark, the delay is checked first: once it has passed a batch starts with whatever waits.
        if self._last_ms is None or now - self._last_ms >= self.max_delay_ms or waiting >= self.min_offsets:
            self._last_ms = now
            return True
        return False


def _end(facts: PartitionFacts, options: ReadOptions) -> int:
    return facts.last_stable_offset if options.read_committed else facts.log_end_offset


def initial_position(options: ReadOptions) -> StreamPosition:
    """Where a new query starts: ``startingOffsets`` (latest by default) resolved against the logs now."""
    facts = _facts(options)
    position = {}
    for tp, f in facts.items():
        starting = options.starting
        if isinstance(starting, dict) and tp not in starting:
            starting = LATEST  # a partition the JSON leaves out starts at its end
        elif (isinstance(starting, TimestampSpec) and isinstance(starting.timestamps, dict)
              and tp not in starting.timestamps):
            starting = LATEST
        position[tp] = resolve_offsets(f, starting, LATEST, read_committed=options.read_committed,
                                       fail_on_data_loss=options.fail_on_data_loss)[0]
    return position


def available_offsets(options: ReadOptions) -> Available:
    """The partitions the read selects now, each with its log start offset and its end (the log end offset, or
    the last stable offset for ``read_committed``)."""
    return {tp: (f.log_start_offset, _end(f, options)) for tp, f in _facts(options).items()}


def latest_position(options: ReadOptions, start: StreamPosition, max_offsets: int | None,
                    admission: AdmissionControl | None = None, available: Available | None = None) -> StreamPosition:
    """Where the next micro-batch ends, from ``start``, taking at most ``max_offsets`` offsets in all; ``start``
    itself (no batch) when ``admission`` holds the batch back.  ``available`` is what may be read (default: what
    :func:`available_offsets` finds now; ``Trigger.AvailableNow`` passes the end it fixed at its start)."""
    if available is None:
        available = available_offsets(options)
    ranges: dict[TopicPartition, tuple[int, int]] = {}
    for tp, (log_start, end) in available.items():
        begin = start.get(tp)
        if begin is None:
            begin = log_start  # a new partition: from its beginning
        ranges[tp] = (begin, max(begin, end))
    if admission is not None and not admission.admits(sum(end - begin for begin, end in ranges.values())):
        return dict(start)
    if max_offsets is not None:
        lag = {tp: end - begin for tp, (begin, end) in ranges.items()}
        total = sum(lag.values())
        if total > max_offsets:
            # Each partition's share is proportional to its lag (Spark's rateLimit), at least one offset.
            ranges = {tp: (begin, begin + min(lag[tp], max(1, int(lag[tp] * max_offsets / total))) if lag[tp]
                           else begin) for tp, (begin, end) in ranges.items()}
    position = {tp: stop for tp, (_begin, stop) in ranges.items()}
    # Partitions that vanished (deleted) keep their last position, so the offsets never go back.
    for tp, offset in start.items():
        position.setdefault(tp, offset)
    return position


def plan_micro_batch(options: ReadOptions, start: StreamPosition, end: StreamPosition) -> list[ReadTask]:
    """The read tasks of one micro-batch, ``[start, end)`` per partition."""
    ranges = []
    directories = dict(find_partitions(options.paths, options))
    for tp, stop in end.items():
        begin = start.get(tp, EARLIEST)
        directory = directories.get(tp)
        if directory is None:
            continue  # deleted since: its position stays, nothing is read
        f = partition_facts(directory, read_committed=options.read_committed)
        if begin == EARLIEST:
            begin = f.log_start_offset
        if begin < f.log_start_offset:
            if options.fail_on_data_loss:
                raise SparkOptionError(
                    f"{tp}: offsets {begin} to {f.log_start_offset} were deleted before the stream read them; "
                    "set failOnDataLoss=false to skip them")
            begin = f.log_start_offset
        if stop > begin:
            ranges.append((f, begin, stop))
    return split_ranges(ranges, options)

