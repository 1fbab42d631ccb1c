"""LogCleanerManager: which partition the cleaner works on next, the cleaning state of every partition, and the
``cleaner-offset-checkpoint`` files that remember how far each log has been cleaned.

Port of ``core/src/main/scala/kafka/log/LogCleanerManager.scala`` (Apache Kafka, tag 0.10.1.1) with the
behaviour of the same file in Kafka 3.8.0, which the spec marks as the one to follow (§4.7, §4.8): the log
start offset as the floor of the dirty section, a checkpoint beyond the log end reset (and forcibly rewritten),
the last stable offset as a cleaning bound, ``max.compaction.lag.ms`` (``needCompactionNow``), nested pauses
(``LogCleaningPaused(n)``), uncleanable partitions, log-dir failure handling and the gauges.  ``LogToClean``
and ``PreCleanStats`` (3.8.0: in ``LogCleaner.scala``) live here too, since choosing a log builds them; the
cleaner (:mod:`kafkalog.cleaner.cleaner`, :mod:`kafkalog.cleaner.log_cleaner`) imports them from here.

Cleaning states of a partition (3.8.0 class comment)::

    none ──grab/deletable_logs──▶ LogCleaningInProgress ──done_cleaning/done_deleting──▶ none
      │                                   │ abort_and_pause_cleaning
      │                                   ▼
      │                           LogCleaningAborted ──done_cleaning/done_deleting──▶ LogCleaningPaused(1)
      └──abort_and_pause_cleaning / pause_cleaning_for_non_compacted_partitions──▶ LogCleaningPaused(1)
    LogCleaningPaused(n) ──abort_and_pause_cleaning──▶ LogCleaningPaused(n + 1)
    LogCleaningPaused(n) ──resume_cleaning──▶ LogCleaningPaused(n - 1), or none when n == 1

:meth:`LogCleanerManager.abort_and_pause_cleaning` blocks until the partition is paused: when a cleaner thread
is working on it, the thread sees ``LogCleaningAborted`` at its next :meth:`~LogCleanerManager.check_cleaning_aborted`,
stops with :class:`LogCleaningAbortedError`, and its :meth:`~LogCleanerManager.done_cleaning` moves the state to
``LogCleaningPaused(1)`` and wakes the waiter, as Kafka's condition variable does.

The last stable offset that bounds cleaning is Kafka's: the producer state's, or for a read-only log the one its
transactional batch headers give (see :func:`_last_stable_offset`).  Left out: remote storage.  Where this
departs from Kafka otherwise:

* the gauges (``max-dirty-percent``, ``time-since-last-run-ms``, ``uncleanable-partitions-count``,
  ``uncleanable-bytes``) are plain methods and properties, read on demand;
* a data dir without a checkpoint file (not one of ``log_dirs``, or dropped by
  :meth:`~LogCleanerManager.handle_log_dir_failure`) is an :class:`~kafkalog.errors.IllegalArgumentError`
  naming it (Kafka: a bare ``NoSuchElementException`` from ``Map.apply``), and so is
  :meth:`~LogCleanerManager.maybe_truncate_checkpoint` of a partition that has no log (Kafka: a
  ``NullPointerException``);
* ``read_only=True`` (kafkalog's mode for opening a broker's directories without changing a byte): the
  checkpoint files are read but never created or written; the forced rewrite of an invalid checkpoint in
  :meth:`~LogCleanerManager.grab_filthiest_compacted_log` is skipped and every other write raises
  :class:`~kafkalog.errors.ReadOnlyError`;
* the ``IllegalStateError`` messages print the state itself where Scala printed the ``Option`` around it
  (``... cannot be in LogCleaningPaused(1) state.`` for Kafka's ``... in Some(LogCleaningPaused(1)) state.``);
* ``resume_cleaning`` and ``done_deleting`` also take a single partition (0.10.1.1 took one, 3.8.0 takes many).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import ClassVar, NamedTuple

from ..checkpoint import CLEANER_OFFSET_CHECKPOINT_FILE, OffsetCheckpoint
from ..errors import IllegalArgumentError, IllegalStateError, KafkaLogError, KafkaStorageError, ReadOnlyError
from ..log import Log
from ..log.transactions import first_unstable_offset
from ..log_dir_failure_channel import LogDirFailureChannel
from ..scheduler import SYSTEM_TIME, Time
from ..topic import TopicPartition

__all__ = [
    "LogCleanerManager",
    "LogCleaningAbortedError",
    "LogCleaningAborted",
    "LogCleaningError",
    "LogCleaningInProgress",
    "LogCleaningPaused",
    "LogCleaningState",
    "LogToClean",
    "OffsetsToClean",
    "PreCleanStats",
    "calculate_cleanable_bytes",
    "cleanable_offsets",
    "is_compact_and_delete",
    "max_compaction_delay",
]

#: The manager logs as the cleaner does (Kafka: ``loggerName = classOf[LogCleaner].getName``).
logger = logging.getLogger("kafkalog.cleaner")
#: The companion object's own logger (Kafka: ``object LogCleanerManager extends Logging``).
_object_logger = logging.getLogger(__name__)

_LONG_MAX = 2**63 - 1

#: The partitions and logs to manage: a mapping (read afresh at every use, so a live dict works) or a callable
#: returning one, such as ``LogManager.logs_by_topic_partition`` (Kafka: the shared ``Pool``).
LogsSource = Mapping[TopicPartition, Log] | Callable[[], Mapping[TopicPartition, Log]]


# --- errors -----------------------------------------------------------------------------------------------------


class LogCleaningAbortedError(KafkaLogError):
    """The cleaning of a partition was aborted while in progress (Kafka: ``kafka.common.LogCleaningAbortedException``).

    Raised by :meth:`LogCleanerManager.check_cleaning_aborted`; the cleaner stops the partition's round and calls
    :meth:`LogCleanerManager.done_cleaning`, which pauses it.
    """


class LogCleaningError(KafkaLogError):
    """An unexpected failure while cleaning a log, or while sizing it up (Kafka: ``LogCleaningException``).

    ``log`` is the log concerned; the cleaner marks its partition uncleanable.  The original error is the
    ``__cause__`` (and :attr:`cause`).
    """

    def __init__(self, log: Log, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.log = log
        self.cause = cause
        if cause is not None:
            self.__cause__ = cause


# --- cleaning states --------------------------------------------------------------------------------------------


class LogCleaningState:
    """The cleaning state of a partition (Kafka: ``sealed trait LogCleaningState``).

    The states are :data:`LogCleaningInProgress`, :data:`LogCleaningAborted` (singletons, also reachable as
    ``LogCleaningState.InProgress`` / ``.Aborted``) and :class:`LogCleaningPaused` ``(n)``
    (``LogCleaningState.Paused(n)``); a partition with no state is absent from the manager's map.
    """

    __slots__ = ()

    InProgress: ClassVar[LogCleaningState]
    Aborted: ClassVar[LogCleaningState]
    Paused: ClassVar[type[LogCleaningPaused]]


class _NamedState(LogCleaningState):
    """A state without data (Kafka: a ``case object``): one instance each, printed as its Kafka name."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name  # pickles as the module-level singleton of that name


@dataclasses.dataclass(frozen=True, repr=False)
class LogCleaningPaused(LogCleaningState):
    """Cleaning paused ``paused_count`` times (Kafka: ``case class LogCleaningPaused(pausedCount: Int)``); each
    :meth:`LogCleanerManager.resume_cleaning` undoes one pause."""

    paused_count: int

    def __repr__(self) -> str:
        return f"LogCleaningPaused({self.paused_count})"


#: Kafka: ``case object LogCleaningInProgress``.
LogCleaningInProgress: LogCleaningState = _NamedState("LogCleaningInProgress")
#: Kafka: ``case object LogCleaningAborted``.
LogCleaningAborted: LogCleaningState = _NamedState("LogCleaningAborted")
LogCleaningState.InProgress = LogCleaningInProgress
LogCleaningState.Aborted = LogCleaningAborted
LogCleaningState.Paused = LogCleaningPaused


# --- what a cleaning round is about -----------------------------------------------------------------------------


class PreCleanStats:
    """What :meth:`LogCleanerManager.grab_filthiest_compacted_log` saw of the logs (Kafka: ``PreCleanStats``, in
    ``LogCleaner.scala``): the largest compaction delay, how many partitions were delayed past their
    ``max.compaction.lag.ms`` and how many were cleanable."""

    def __init__(self) -> None:
        self.max_compaction_delay_ms = 0
        self.delayed_partitions = 0
        self.cleanable_partitions = 0

    def update_max_compaction_delay(self, delay_ms: int) -> None:
        """Kafka: ``updateMaxCompactionDelay``."""
        self.max_compaction_delay_ms = max(self.max_compaction_delay_ms, delay_ms)
        if delay_ms > 0:
            self.delayed_partitions += 1

    def record_cleanable_partitions(self, num_of_cleanables: int) -> None:
        """Kafka: ``recordCleanablePartitions``."""
        self.cleanable_partitions = num_of_cleanables

    def __repr__(self) -> str:
        return (f"PreCleanStats(max_compaction_delay_ms={self.max_compaction_delay_ms}, "
                f"delayed_partitions={self.delayed_partitions}, cleanable_partitions={self.cleanable_partitions})")


class OffsetsToClean(NamedTuple):
    """The cleanable range of a log and whether its checkpoint must be rewritten (Kafka: ``OffsetsToClean``).

    ``first_dirty_offset`` is the lower (inclusive) offset to begin cleaning from, ``first_uncleanable_dirty_offset``
    the upper (exclusive) offset to clean to, and ``force_update_checkpoint`` says the checkpointed offset was
    invalid and should be reset to ``first_dirty_offset``.  Unpacks as a triple.
    """

    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    force_update_checkpoint: bool = False


class LogToClean:
    """A log chosen (or considered) for cleaning, with its byte accounting (Kafka: ``LogToClean``).

    * ``clean_bytes`` - the size of every segment with a base offset below ``first_dirty_offset``
      (Kafka: ``logSegments(-1, firstDirtyOffset)``);
    * ``first_uncleanable_offset`` - the base offset of the segment holding ``uncleanable_offset`` (rounded
      down to a segment boundary), or the active segment's base when that offset is in the active segment;
    * ``cleanable_bytes`` (alias ``dirty_bytes``) - the size of every segment overlapping
      ``[min(first_dirty_offset, first_uncleanable_offset), first_uncleanable_offset)``;
    * ``total_bytes`` = clean + cleanable, and ``cleanable_ratio`` = cleanable / total (NaN, as Java's
      ``0 / 0.0``, for an empty log).

    Whole segment sizes are counted: the segment holding ``first_dirty_offset`` counts in both the clean and the
    cleanable bytes when the dirty section starts inside it (spec §8, pitfall 10).  All are computed once, when
    the object is made.  Objects order by ``cleanable_ratio`` (Kafka: ``Ordered[LogToClean]``, comparing the
    sign of the difference, so a NaN ratio compares equal to any); equality is a case class's, field by field.
    """

    def __init__(self, topic_partition: TopicPartition, log: Log, first_dirty_offset: int, uncleanable_offset: int,
                 need_compaction_now: bool = False) -> None:
        self.topic_partition = topic_partition
        self.log = log
        self.first_dirty_offset = first_dirty_offset
        self.uncleanable_offset = uncleanable_offset
        self.need_compaction_now = need_compaction_now
        self.clean_bytes: int = sum(segment.size() for segment in log.log_segments(-1, first_dirty_offset))
        self.first_uncleanable_offset, self.cleanable_bytes = calculate_cleanable_bytes(
            log, first_dirty_offset, uncleanable_offset)
        self.total_bytes: int = self.clean_bytes + self.cleanable_bytes
        self.cleanable_ratio: float = (self.cleanable_bytes / float(self.total_bytes) if self.total_bytes != 0
                                       else math.nan)

    @property
    def dirty_bytes(self) -> int:
        """Alias of :attr:`cleanable_bytes` (Kafka 0.8.2's name, ``dirtyBytes``)."""
        return self.cleanable_bytes

    def compare(self, that: LogToClean) -> int:
        """Kafka: ``compare``: ``signum(this.cleanableRatio - that.cleanableRatio).toInt`` (NaN gives 0)."""
        difference = self.cleanable_ratio - that.cleanable_ratio
        if difference > 0:
            return 1
        if difference < 0:
            return -1
        return 0

    def __lt__(self, other: LogToClean) -> bool:
        return self.compare(other) < 0

    def __le__(self, other: LogToClean) -> bool:
        return self.compare(other) <= 0

    def __gt__(self, other: LogToClean) -> bool:
        return self.compare(other) > 0

    def __ge__(self, other: LogToClean) -> bool:
        return self.compare(other) >= 0

    def _fields(self) -> tuple[object, ...]:
        return (self.topic_partition, id(self.log), self.first_dirty_offset, self.uncleanable_offset,
                self.need_compaction_now)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LogToClean):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"LogToClean({self.topic_partition}, {self.log.name}, {self.first_dirty_offset}, "
                f"{self.uncleanable_offset}, {self.need_compaction_now})")


# --- the companion object's functions ---------------------------------------------------------------------------


def is_compact_and_delete(log: Log) -> bool:
    """Kafka: ``LogCleanerManager.isCompactAndDelete``: cleanup.policy holds both ``compact`` and ``delete``."""
    return bool(log.config.compact and log.config.delete)


def _last_stable_offset(log: Log) -> int:
    """The log's last stable offset (Kafka: ``UnifiedLog.lastStableOffset``): the first unstable offset (raised
    to the log start offset) when it is below the high watermark, else the high watermark.

    A log opened for writing keeps Kafka's producer state, and answers from it.  A read-only one (a broker's
    dir read in place, which ``kafkalog stats`` accounts for) rebuilds none, so its first unstable offset, the
    first offset of the earliest transaction that is open or whose marker is not yet below the high watermark,
    is read from its transactional batch headers (:func:`kafkalog.log.transactions.first_unstable_offset`, which sums
    each segment up once and keeps the sums while the log lives).
    """
    if not log.read_only:
        return log.last_stable_offset
    return _last_stable_offset_from_headers(log)


def _last_stable_offset_from_headers(log: Log) -> int:
    """:func:`_last_stable_offset` from the log's transactional batch headers, for a log without producer state."""
    high_watermark = log.high_watermark
    first_unstable = first_unstable_offset(log, high_watermark)
    if first_unstable is None:
        return high_watermark
    return min(high_watermark, max(first_unstable, log.log_start_offset))


def max_compaction_delay(log: Log, first_dirty_offset: int, now: int) -> int:
    """How long past its ``max.compaction.lag.ms`` the oldest dirty record of ``log`` is, or 0 (Kafka:
    ``LogCleanerManager.maxCompactionDelay``).

    The age is that of the earliest first-batch timestamp (ignoring those <= 0) among the dirty non-active
    segments; the delay is ``(now - max.compaction.lag.ms) - earliest`` when positive.
    """
    dirty_non_active_segments = log.segments.non_active_log_segments_from(first_dirty_offset)
    first_batch_timestamps = [ts for ts in (s.get_first_batch_timestamp() for s in dirty_non_active_segments)
                              if ts > 0]
    earliest_dirty_segment_timestamp = min(first_batch_timestamps, default=_LONG_MAX)
    max_compaction_lag_ms = max(log.config.max_compaction_lag_ms, 0)
    clean_until_time = now - max_compaction_lag_ms
    if earliest_dirty_segment_timestamp < clean_until_time:
        return clean_until_time - earliest_dirty_segment_timestamp
    return 0


def cleanable_offsets(log: Log, last_clean_offset: int | None, now: int) -> OffsetsToClean:
    """The range of dirty offsets of ``log`` that can be cleaned (Kafka: ``LogCleanerManager.cleanableOffsets``).

    ``last_clean_offset`` is the checkpointed offset (``None`` when there is none), ``now`` the time of the
    cleaning in ms.  The first dirty offset is the checkpoint, or the log start offset when there is none; a
    checkpoint below the log start offset or beyond the log end offset is reset to the log start offset and
    ``force_update_checkpoint`` is set.  The first uncleanable offset is the smallest of the last stable offset
    (at most the high watermark: :func:`_last_stable_offset`), the active segment's base offset and, when
    ``min.compaction.lag.ms`` > 0, the base offset of the first dirty non-active segment whose largest timestamp
    is later than ``now - lag``; it is raised to the first dirty offset if below it.
    """
    log_start_offset = log.log_start_offset
    checkpoint_dirty_offset = log_start_offset if last_clean_offset is None else last_clean_offset
    if checkpoint_dirty_offset < log_start_offset:
        # Don't bother with the warning if compact and delete are enabled.
        if not is_compact_and_delete(log):
            _object_logger.warning(
                "Resetting first dirty offset of %s to log start offset %d since the checkpointed offset %d is "
                "invalid.", log.name, log_start_offset, checkpoint_dirty_offset)
        first_dirty_offset, force_update_checkpoint = log_start_offset, True
    elif checkpoint_dirty_offset > log.log_end_offset:
        # The dirty offset has gotten ahead of the log end offset. This could happen if there was data
        # corruption at the end of the log. We conservatively assume that the full log needs cleaning.
        _object_logger.warning(
            "The last checkpoint dirty offset for partition %s is %d, which is larger than the log end offset %d. "
            "Resetting to the log start offset %d.", log.name, checkpoint_dirty_offset, log.log_end_offset,
            log_start_offset)
        first_dirty_offset, force_update_checkpoint = log_start_offset, True
    else:
        first_dirty_offset, force_update_checkpoint = checkpoint_dirty_offset, False

    min_compaction_lag_ms = max(log.config.compaction_lag_ms, 0)

    # Find the first segment that cannot be cleaned. We cannot clean past:
    # 1. The active segment
    # 2. The last stable offset (including the high watermark)
    # 3. Any segments closer to the head of the log than the minimum compaction lag time
    bounds: list[int] = [
        # we do not clean beyond the last stable offset
        _last_stable_offset(log),
        # the active segment is always uncleanable
        log.active_segment.base_offset,
    ]
    if min_compaction_lag_ms > 0:
        # the first segment whose largest message timestamp is within a minimum time lag from now
        for segment in log.segments.non_active_log_segments_from(first_dirty_offset):
            largest_timestamp = segment.largest_timestamp()
            is_uncleanable = largest_timestamp > now - min_compaction_lag_ms
            _object_logger.debug(
                "Checking if log segment may be cleaned: log='%s' segment.baseOffset=%d "
                "segment.largestTimestamp=%s; now - compactionLag=%d; is uncleanable=%s", log.name,
                segment.base_offset, largest_timestamp, now - min_compaction_lag_ms, is_uncleanable)
            if is_uncleanable:
                bounds.append(segment.base_offset)
                break
    first_uncleanable_dirty_offset = min(bounds)

    _object_logger.debug(
        "Finding range of cleanable offsets for log=%s. Last clean offset=%s now=%d => firstDirtyOffset=%d "
        "firstUncleanableOffset=%d activeSegment.baseOffset=%d", log.name, last_clean_offset, now,
        first_dirty_offset, first_uncleanable_dirty_offset, log.active_segment.base_offset)

    return OffsetsToClean(first_dirty_offset, max(first_dirty_offset, first_uncleanable_dirty_offset),
                          force_update_checkpoint)


def calculate_cleanable_bytes(log: Log, first_dirty_offset: int, uncleanable_offset: int) -> tuple[int, int]:
    """``(first_uncleanable_offset, cleanable_bytes)`` of ``log``
    (Kafka: ``LogCleanerManager.calculateCleanableBytes``).

    The first uncleanable offset is the base of the non-active segment holding ``uncleanable_offset`` (Kafka's
    ``nonActiveLogSegmentsFrom`` starts at the segment containing it), or the active segment's base when the
    offset is in the active segment; the cleanable bytes are the sizes of the segments overlapping
    ``[min(first_dirty_offset, first_uncleanable_offset), first_uncleanable_offset)``.
    """
    non_active = log.segments.non_active_log_segments_from(uncleanable_offset)
    first_uncleanable_segment = non_active[0] if non_active else log.active_segment
    first_uncleanable_offset = first_uncleanable_segment.base_offset
    cleanable_bytes = sum(segment.size() for segment in log.log_segments(
        min(first_dirty_offset, first_uncleanable_offset), first_uncleanable_offset))
    return first_uncleanable_offset, cleanable_bytes


def _dir_key(directory: str | os.PathLike[str]) -> str:
    """The key of a log dir: its absolute path with symlinks resolved (Kafka compares ``File`` paths)."""
    return os.path.realpath(os.fspath(directory))


def _partitions(topic_partitions: Iterable[TopicPartition] | TopicPartition) -> list[TopicPartition]:
    """One partition or several, as a list (``TopicPartition`` is a tuple, so it must not be iterated)."""
    if isinstance(topic_partitions, tuple) and len(topic_partitions) == 2 and \
            isinstance(topic_partitions[0], str) and isinstance(topic_partitions[1], int):
        return [TopicPartition(*topic_partitions)]
    return [TopicPartition(*tp) for tp in topic_partitions]


# --- the manager ------------------------------------------------------------------------------------------------


class LogCleanerManager:
    """The cleaning state of each partition and the cleaner checkpoints of each log dir (Kafka:
    ``LogCleanerManager``).

    ``log_dirs`` are the broker's log directories (each gets a ``cleaner-offset-checkpoint``); ``logs`` gives the
    current ``{TopicPartition: Log}`` (a mapping, read afresh at every use, or a callable returning one);
    ``log_dir_failure_channel`` is told of checkpoint I/O failures (see :mod:`kafkalog.checkpoint`); ``time`` is
    the clock of the gauges (Kafka: ``Time.SYSTEM``); ``read_only`` never writes a checkpoint (module docstring).

    One lock guards the state map, the uncleanable sets and the checkpoint files; every public method takes it.
    The companion object's functions are also reachable as static methods (``LogCleanerManager.cleanable_offsets``).
    """

    #: Kafka: ``offsetCheckpointFile``.
    offset_checkpoint_file = CLEANER_OFFSET_CHECKPOINT_FILE

    cleanable_offsets = staticmethod(cleanable_offsets)
    calculate_cleanable_bytes = staticmethod(calculate_cleanable_bytes)
    max_compaction_delay = staticmethod(max_compaction_delay)
    is_compact_and_delete = staticmethod(is_compact_and_delete)

    def __init__(self, log_dirs: Iterable[str | os.PathLike[str]], logs: LogsSource,
                 log_dir_failure_channel: LogDirFailureChannel | None = None, time: Time | None = None, *,
                 read_only: bool = False) -> None:
        self.log_dirs: list[Path] = [Path(d) for d in log_dirs]
        self._logs_source = logs
        self.log_dir_failure_channel = log_dir_failure_channel
        self.time: Time = time if time is not None else SYSTEM_TIME
        self.read_only = read_only
        # the offset checkpoints holding the last cleaned point for each log
        self._checkpoints: dict[str, OffsetCheckpoint] = {
            _dir_key(d): OffsetCheckpoint(d / self.offset_checkpoint_file, read_only=read_only,
                                          log_dir_failure_channel=log_dir_failure_channel)
            for d in self.log_dirs
        }
        # the set of logs currently being cleaned
        self._in_progress: dict[TopicPartition, LogCleaningState] = {}
        # the set of uncleanable partitions (partitions that have raised an unexpected error during cleaning)
        # for each log directory
        self._uncleanable_partitions: dict[str, set[TopicPartition]] = {}
        # a global lock used to control all access to the in-progress set and the offset checkpoints
        self._lock = threading.RLock()
        # for coordinating the pausing and the cleaning of a partition
        self._paused_cleaning_cond = threading.Condition(self._lock)
        # the cleanable ratio of the dirtiest log (gauge max-dirty-percent)
        self._dirtiest_log_cleanable_ratio = 0.0
        # the time of the last grab (gauge time-since-last-run-ms)
        self._time_of_last_run = self.time.milliseconds()

    # -- helpers -----------------------------------------------------------------------------------------------

    def _logs(self) -> dict[TopicPartition, Log]:
        """A snapshot of the current logs."""
        source = self._logs_source
        return dict(source() if callable(source) else source)

    def _checkpoint_for(self, data_dir: str | os.PathLike[str]) -> OffsetCheckpoint:
        """Kafka: ``checkpoints(dataDir)``."""
        checkpoint = self._checkpoints.get(_dir_key(data_dir))
        if checkpoint is None:
            raise IllegalArgumentError(
                f"No cleaner checkpoint file for log dir {data_dir}: it is not one of the cleaner's log dirs "
                f"{[str(d) for d in self.log_dirs]} or it has failed")
        return checkpoint

    def _check_writable(self, data_dir: str | os.PathLike[str]) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"Cannot write the cleaner checkpoint in {data_dir}: the log cleaner manager is read-only")

    # -- checkpoints -------------------------------------------------------------------------------------------

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        """The position processed for all logs: every log dir's checkpoint merged (Kafka: ``allCleanerCheckpoints``).

        A checkpoint file that cannot be read is logged and counts as empty.
        """
        with self._lock:
            result: dict[TopicPartition, int] = {}
            for checkpoint in list(self._checkpoints.values()):
                try:
                    result.update(checkpoint.read())
                except KafkaStorageError as e:
                    logger.error("Failed to access checkpoint file %s in dir %s", checkpoint.file.name,
                                 checkpoint.file.parent, exc_info=e)
            return result

    def update_checkpoints(self, data_dir: str | os.PathLike[str],
                           partition_to_update: tuple[TopicPartition, int] | None = None,
                           partition_to_remove: TopicPartition | None = None) -> None:
        """Rewrite ``data_dir``'s checkpoint, adding or removing a partition (Kafka: ``updateCheckpoints``, whose
        ``partitionToUpdateOrAdd`` is ``partition_to_update``).

        Entries of partitions that no longer have a log are dropped; ``partition_to_remove`` is removed, then
        ``partition_to_update`` (``(tp, offset)``) set.  A checkpoint I/O failure is logged, not raised (and takes
        the dir offline); a dir offline is not written to.

        Kafka keeps the entries of the partitions its ``LogManager`` holds, which are all the partition dirs
        of the log dir.  A cleaner given some of a log dir's partitions (``kafkalog clean``, the Spark
        ``compact`` job) also keeps the entries of partitions whose dir is still there: for a whole
        ``LogManager`` the rule is the same, and a partial cleaner no longer drops its neighbours' offsets.
        """
        with self._lock:
            channel = self.log_dir_failure_channel
            if channel is not None and channel.has_offline_log_dir(_dir_key(data_dir)):
                return  # the dir failed: nothing more is written there (Kafka drops its checkpoint)
            checkpoint = self._checkpoint_for(data_dir)
            self._check_writable(data_dir)
            try:
                logs = self._logs()
                updated = {tp: offset for tp, offset in checkpoint.read().items()
                           if tp in logs or (Path(data_dir) / str(tp)).is_dir()}
                # remove the partition offset if any
                if partition_to_remove is not None:
                    updated.pop(TopicPartition(*partition_to_remove), None)
                # update or add the partition offset if any
                if partition_to_update is not None:
                    tp, offset = partition_to_update
                    updated[TopicPartition(*tp)] = offset
                checkpoint.write(updated)
            except KafkaStorageError as e:
                logger.error("Failed to access checkpoint file %s in dir %s", checkpoint.file.name,
                             checkpoint.file.parent, exc_info=e)

    def alter_checkpoint_dir(self, topic_partition: TopicPartition, source_log_dir: str | os.PathLike[str],
                             dest_log_dir: str | os.PathLike[str]) -> None:
        """Move a partition's checkpointed offset (and its uncleanable mark) from ``source_log_dir`` to
        ``dest_log_dir``, as when a future replica replaces the current one (Kafka: ``alterCheckpointDir``)."""
        topic_partition = TopicPartition(*topic_partition)
        with self._lock:
            try:
                source = self._checkpoints.get(_dir_key(source_log_dir))
                offset = source.read().get(topic_partition) if source is not None else None
                if offset is not None:
                    logger.debug("Removing the partition offset data in checkpoint file for '%s' from %s directory.",
                                 topic_partition, os.path.abspath(source_log_dir))
                    self.update_checkpoints(source_log_dir, partition_to_remove=topic_partition)
                    logger.debug("Adding the partition offset data in checkpoint file for '%s' to %s directory.",
                                 topic_partition, os.path.abspath(dest_log_dir))
                    self.update_checkpoints(dest_log_dir, partition_to_update=(topic_partition, offset))
            except KafkaStorageError as e:
                logger.error("Failed to access checkpoint file in dir %s", os.path.abspath(source_log_dir),
                             exc_info=e)
            source_uncleanable = self._uncleanable_partitions.get(_dir_key(source_log_dir), set())
            if topic_partition in source_uncleanable:
                source_uncleanable.discard(topic_partition)
                self.mark_partition_uncleanable(dest_log_dir, topic_partition)

    def handle_log_dir_failure(self, dir: str | os.PathLike[str]) -> None:
        """Stop cleaning logs in ``dir`` (the absolute path of the log dir): its checkpoint is forgotten (Kafka:
        ``handleLogDirFailure``)."""
        logger.warning("Stopping cleaning logs in dir %s", dir)
        with self._lock:
            key = _dir_key(dir)
            self._checkpoints = {k: v for k, v in self._checkpoints.items() if k != key}

    def maybe_truncate_checkpoint(self, data_dir: str | os.PathLike[str], topic_partition: TopicPartition,
                                  offset: int) -> None:
        """Lower the checkpointed offset of a compacted partition to ``offset`` if it is larger, as after a
        truncation (Kafka: ``maybeTruncateCheckpoint``)."""
        topic_partition = TopicPartition(*topic_partition)
        with self._lock:
            log = self._logs().get(topic_partition)
            if log is None:
                raise IllegalArgumentError(f"No log for partition {topic_partition}: cannot truncate its "
                                           "cleaner checkpoint")
            if log.config.compact:
                checkpoint = self._checkpoint_for(data_dir)
                existing = checkpoint.read()
                if existing.get(topic_partition, 0) > offset:
                    self._check_writable(data_dir)
                    existing[topic_partition] = offset
                    checkpoint.write(existing)

    # -- choosing logs -----------------------------------------------------------------------------------------

    def grab_filthiest_compacted_log(self, time: Time | None = None, pre_clean_stats: PreCleanStats | None = None,
                                     *, only: Collection[TopicPartition] | None = None) -> LogToClean | None:
        """Choose the log to clean next and mark it :data:`LogCleaningInProgress` (Kafka:
        ``grabFilthiestCompactedLog``); ``None`` when no log needs cleaning.

        Recomputed each time from all the logs.  Candidates are the compacted logs neither in any cleaning state
        nor uncleanable; an invalid checkpoint is rewritten at once (not in read-only mode); logs of 0 bytes are
        skipped.  A log qualifies when it must be compacted now (``max.compaction.lag.ms`` passed) and has
        cleanable bytes, or when its cleanable ratio is above ``min.cleanable.dirty.ratio``; the one with the
        highest ratio wins.  ``time`` defaults to the manager's clock; ``pre_clean_stats`` collects the delays;
        ``only`` (kafkalog's) leaves out the partitions not in it, for a caller compacting one topic.

        Raises:
            LogCleaningError: sizing up a log failed; ``.log`` is that log (the cleaner marks it uncleanable).
        """
        time = time if time is not None else self.time
        stats = pre_clean_stats if pre_clean_stats is not None else PreCleanStats()
        with self._lock:
            now = time.milliseconds()
            self._time_of_last_run = now
            last_clean = self.all_cleaner_checkpoints()
            dirty_logs: list[LogToClean] = []
            for topic_partition, log in self._logs().items():
                if not log.config.compact or (only is not None and topic_partition not in only):
                    continue
                if topic_partition in self._in_progress or self._is_uncleanable_partition(log, topic_partition):
                    continue
                # create a LogToClean instance for each
                try:
                    last_clean_offset = last_clean.get(topic_partition)
                    offsets_to_clean = cleanable_offsets(log, last_clean_offset, now)
                    # update checkpoint for logs with invalid checkpointed offsets
                    if offsets_to_clean.force_update_checkpoint:
                        if self.read_only:
                            logger.debug("Not rewriting the invalid cleaner checkpoint of %s: read-only",
                                         topic_partition)
                        else:
                            self.update_checkpoints(
                                log.dir.parent,
                                partition_to_update=(topic_partition, offsets_to_clean.first_dirty_offset))
                    compaction_delay_ms = max_compaction_delay(log, offsets_to_clean.first_dirty_offset, now)
                    stats.update_max_compaction_delay(compaction_delay_ms)
                    log_to_clean = LogToClean(topic_partition, log, offsets_to_clean.first_dirty_offset,
                                              offsets_to_clean.first_uncleanable_dirty_offset,
                                              compaction_delay_ms > 0)
                except Exception as e:
                    raise LogCleaningError(
                        log, f"Failed to calculate log cleaning stats for partition {topic_partition}", e) from e
                if log_to_clean.total_bytes > 0:  # skip any empty logs
                    dirty_logs.append(log_to_clean)

            self._dirtiest_log_cleanable_ratio = max(dirty_logs).cleanable_ratio if dirty_logs else 0.0
            # and must meet the minimum threshold for dirty byte ratio or have some bytes required to be compacted
            cleanable_logs = [
                ltc for ltc in dirty_logs
                if (ltc.need_compaction_now and ltc.cleanable_bytes > 0)
                or ltc.cleanable_ratio > ltc.log.config.min_cleanable_ratio
            ]
            if not cleanable_logs:
                return None
            stats.record_cleanable_partitions(len(cleanable_logs))
            filthiest = max(cleanable_logs)
            self._in_progress[filthiest.topic_partition] = LogCleaningInProgress
            return filthiest

    def pause_cleaning_for_non_compacted_partitions(self) -> list[tuple[TopicPartition, Log]]:
        """Pause cleaning (``LogCleaningPaused(1)``) of every non-compacted log not in any cleaning state, and
        return them (Kafka: ``pauseCleaningForNonCompactedPartitions``): retention works on these while the
        cleaner cannot, should their policy be switched to ``compact`` meanwhile."""
        with self._lock:
            deletable = [(tp, log) for tp, log in self._logs().items()
                         if not log.config.compact and tp not in self._in_progress]
            for tp, _ in deletable:
                self._in_progress[tp] = LogCleaningPaused(1)
            return deletable

    def deletable_logs(self, *, only: Collection[TopicPartition] | None = None) -> list[tuple[TopicPartition, Log]]:
        """The compacted logs not in any cleaning state and not uncleanable, marked :data:`LogCleaningInProgress`
        (Kafka: ``deletableLogs``): the cleaner applies retention to them (also those without ``delete``, which
        may hold segments below the log start offset) and then calls :meth:`done_deleting`.

        (0.10.1.1 took only ``compact,delete`` logs and ignored uncleanable partitions.)  ``only`` (kafkalog's)
        leaves out the partitions not in it.
        """
        with self._lock:
            to_clean = [(tp, log) for tp, log in self._logs().items()
                        if tp not in self._in_progress and log.config.compact and (only is None or tp in only)
                        and not self._is_uncleanable_partition(log, tp)]
            for tp, _ in to_clean:
                self._in_progress[tp] = LogCleaningInProgress
            return to_clean

    # -- states ------------------------------------------------------------------------------------------------

    def cleaning_state(self, topic_partition: TopicPartition) -> LogCleaningState | None:
        """The cleaning state of a partition, ``None`` when it has none (Kafka: ``cleaningState``)."""
        with self._lock:
            return self._in_progress.get(TopicPartition(*topic_partition))

    def set_cleaning_state(self, topic_partition: TopicPartition, state: LogCleaningState) -> None:
        """Set the cleaning state of a partition (Kafka: ``setCleaningState``, for tests)."""
        if not isinstance(state, LogCleaningState):
            raise IllegalArgumentError(f"Not a cleaning state: {state!r}")
        with self._lock:
            self._in_progress[TopicPartition(*topic_partition)] = state

    def abort_cleaning(self, topic_partition: TopicPartition) -> None:
        """Abort the cleaning of a partition, if in progress, and wait until it is aborted; the partition is not
        left paused (Kafka: ``abortCleaning``: :meth:`abort_and_pause_cleaning` then :meth:`resume_cleaning`)."""
        with self._lock:
            self.abort_and_pause_cleaning(topic_partition)
            self.resume_cleaning([topic_partition])

    def abort_and_pause_cleaning(self, topic_partition: TopicPartition) -> None:
        """Abort the cleaning of a partition if in progress and pause its future cleaning; blocks until it is
        paused (Kafka: ``abortAndPauseCleaning``).

        1. Not in any state: it becomes ``LogCleaningPaused(1)``.
        2. In progress: it becomes :data:`LogCleaningAborted`; the cleaner thread sees that at its next
           :meth:`check_cleaning_aborted`, stops, and its :meth:`done_cleaning` makes it ``LogCleaningPaused(1)``.
        3. This call waits (on the manager's condition, waking every 100 ms) until the state is paused.
        4. Already paused: the pause count goes up by one.

        Raises:
            IllegalStateError: the partition is already :data:`LogCleaningAborted`.
        """
        topic_partition = TopicPartition(*topic_partition)
        with self._lock:
            state = self._in_progress.get(topic_partition)
            if state is None:
                self._in_progress[topic_partition] = LogCleaningPaused(1)
            elif state is LogCleaningInProgress:
                self._in_progress[topic_partition] = LogCleaningAborted
            elif isinstance(state, LogCleaningPaused):
                self._in_progress[topic_partition] = LogCleaningPaused(state.paused_count + 1)
            else:
                raise IllegalStateError(f"Compaction for partition {topic_partition} cannot be aborted and paused "
                                        f"since it is in {state} state.")
            while not self._is_cleaning_in_state_paused(topic_partition):
                self._paused_cleaning_cond.wait(0.1)

    def resume_cleaning(self, topic_partitions: Iterable[TopicPartition] | TopicPartition) -> None:
        """Resume the cleaning of paused partitions; each call undoes one pause (Kafka: ``resumeCleaning``).

        Raises:
            IllegalStateError: a partition is not paused (the partitions before it are resumed).
        """
        with self._lock:
            for topic_partition in _partitions(topic_partitions):
                state = self._in_progress.get(topic_partition)
                if state is None:
                    raise IllegalStateError(
                        f"Compaction for partition {topic_partition} cannot be resumed since it is not paused.")
                if isinstance(state, LogCleaningPaused) and state.paused_count == 1:
                    del self._in_progress[topic_partition]
                elif isinstance(state, LogCleaningPaused) and state.paused_count > 1:
                    self._in_progress[topic_partition] = LogCleaningPaused(state.paused_count - 1)
                else:
                    raise IllegalStateError(f"Compaction for partition {topic_partition} cannot be resumed since "
                                            f"it is in {state} state.")

    def is_cleaning_in_state(self, topic_partition: TopicPartition, expected_state: LogCleaningState) -> bool:
        """Whether the partition is in ``expected_state`` (Kafka: ``isCleaningInState``; equality, so
        ``LogCleaningPaused(2)`` is not ``LogCleaningPaused(1)``)."""
        with self._lock:
            state = self._in_progress.get(TopicPartition(*topic_partition))
            return state is not None and state == expected_state

    def is_cleaning_in_states(self, topic_partition: TopicPartition,
                              expected_states: Iterable[LogCleaningState]) -> bool:
        """Whether the partition is in any of ``expected_states`` (a convenience; Kafka has no such method)."""
        with self._lock:
            state = self._in_progress.get(TopicPartition(*topic_partition))
            return state is not None and any(state == expected for expected in expected_states)

    def _is_cleaning_in_state_paused(self, topic_partition: TopicPartition) -> bool:
        """Kafka: ``isCleaningInStatePaused`` (any pause count).  The caller holds the lock."""
        return isinstance(self._in_progress.get(topic_partition), LogCleaningPaused)

    def is_cleaning_in_state_paused(self, topic_partition: TopicPartition) -> bool:
        """Whether the partition is paused, whatever the count (Kafka: ``isCleaningInStatePaused``)."""
        with self._lock:
            return self._is_cleaning_in_state_paused(TopicPartition(*topic_partition))

    def check_cleaning_aborted(self, topic_partition: TopicPartition) -> None:
        """Raise :class:`LogCleaningAbortedError` if the cleaning of the partition was aborted (Kafka:
        ``checkCleaningAborted``); the cleaner calls it as it works."""
        with self._lock:
            if self.is_cleaning_in_state(topic_partition, LogCleaningAborted):
                raise LogCleaningAbortedError()

    def done_cleaning(self, topic_partition: TopicPartition, data_dir: str | os.PathLike[str],
                      end_offset: int) -> None:
        """End a cleaning round (Kafka: ``doneCleaning``).

        In progress: ``end_offset`` is saved in ``data_dir``'s checkpoint and the state cleared.  Aborted: the
        state becomes ``LogCleaningPaused(1)`` (the checkpoint is left alone) and whoever waits in
        :meth:`abort_and_pause_cleaning` is woken.

        Raises:
            IllegalStateError: the partition has no state, or is paused.
        """
        topic_partition = TopicPartition(*topic_partition)
        with self._lock:
            state = self._in_progress.get(topic_partition)
            if state is LogCleaningInProgress:
                self.update_checkpoints(data_dir, partition_to_update=(topic_partition, end_offset))
                del self._in_progress[topic_partition]
            elif state is LogCleaningAborted:
                self._in_progress[topic_partition] = LogCleaningPaused(1)
                self._paused_cleaning_cond.notify_all()
            elif state is None:
                raise IllegalStateError(f"State for partition {topic_partition} should exist.")
            else:
                raise IllegalStateError(f"In-progress partition {topic_partition} cannot be in {state} state.")

    def done_deleting(self, topic_partitions: Iterable[TopicPartition] | TopicPartition) -> None:
        """End the retention pass of :meth:`deletable_logs` for these partitions (Kafka: ``doneDeleting``): in
        progress -> no state; aborted -> ``LogCleaningPaused(1)``, waking the waiters.

        Raises:
            IllegalStateError: a partition has no state, or is paused.
        """
        with self._lock:
            for topic_partition in _partitions(topic_partitions):
                state = self._in_progress.get(topic_partition)
                if state is LogCleaningInProgress:
                    del self._in_progress[topic_partition]
                elif state is LogCleaningAborted:
                    self._in_progress[topic_partition] = LogCleaningPaused(1)
                    self._paused_cleaning_cond.notify_all()
                elif state is None:
                    raise IllegalStateError(f"State for partition {topic_partition} should exist.")
                else:
                    raise IllegalStateError(
                        f"In-progress partition {topic_partition} cannot be in {state} state.")

    # -- uncleanable partitions --------------------------------------------------------------------------------

    def uncleanable_partitions(self, log_dir: str | os.PathLike[str]) -> set[TopicPartition]:
        """A copy of the uncleanable partitions of ``log_dir`` (Kafka: ``uncleanablePartitions(logDir)``)."""
        with self._lock:
            return set(self._uncleanable_partitions.get(_dir_key(log_dir), ()))

    def mark_partition_uncleanable(self, log_dir: str | os.PathLike[str], partition: TopicPartition) -> None:
        """Never again choose ``partition`` of ``log_dir`` for cleaning or retention by the cleaner, after an
        unexpected error while cleaning it (Kafka: ``markPartitionUncleanable``)."""
        with self._lock:
            self._uncleanable_partitions.setdefault(_dir_key(log_dir), set()).add(TopicPartition(*partition))

    def _is_uncleanable_partition(self, log: Log, topic_partition: TopicPartition) -> bool:
        """Kafka: ``isUncleanablePartition`` (by the log's parent dir)."""
        with self._lock:
            partitions = self._uncleanable_partitions.get(_dir_key(log.dir.parent))
            return partitions is not None and topic_partition in partitions

    def maintain_uncleanable_partitions(self) -> None:
        """Forget uncleanable partitions that no longer have a log, and dirs left with none (Kafka:
        ``maintainUncleanablePartitions``)."""
        with self._lock:
            logs = self._logs()
            for partitions in self._uncleanable_partitions.values():
                for tp in [tp for tp in partitions if tp not in logs]:
                    partitions.discard(tp)
            for log_dir in [d for d, partitions in self._uncleanable_partitions.items() if not partitions]:
                del self._uncleanable_partitions[log_dir]

    # -- gauges ------------------------------------------------------------------------------------------------

    @property
    def dirtiest_log_cleanable_ratio(self) -> float:
        """The cleanable ratio of the dirtiest log at the last :meth:`grab_filthiest_compacted_log`."""
        return self._dirtiest_log_cleanable_ratio

    @property
    def max_dirty_percent(self) -> int:
        """Gauge ``max-dirty-percent``: ``(100 * dirtiest ratio).toInt``."""
        return int(100 * self._dirtiest_log_cleanable_ratio)

    @property
    def time_of_last_run(self) -> int:
        """When :meth:`grab_filthiest_compacted_log` last ran (ms; construction time before the first run)."""
        return self._time_of_last_run

    @property
    def time_since_last_run_ms(self) -> int:
        """Gauge ``time-since-last-run-ms``."""
        return self.time.milliseconds() - self._time_of_last_run

    def uncleanable_partitions_count(self, log_dir: str | os.PathLike[str]) -> int:
        """Gauge ``uncleanable-partitions-count`` of one log dir."""
        with self._lock:
            return len(self._uncleanable_partitions.get(_dir_key(log_dir), ()))

    def uncleanable_bytes(self, log_dir: str | os.PathLike[str]) -> int:
        """Gauge ``uncleanable-bytes`` of one log dir: the cleanable bytes the uncleanable partitions hold."""
        with self._lock:
            partitions = self._uncleanable_partitions.get(_dir_key(log_dir))
            if partitions is None:
                return 0
            last_clean = self.all_cleaner_checkpoints()
            now = self.time.milliseconds()
            logs = self._logs()
            total = 0
            for tp in partitions:
                log = logs.get(tp)
                if log is None:
                    continue
                offsets_to_clean = cleanable_offsets(log, last_clean.get(tp), now)
                _, uncleanable_bytes = calculate_cleanable_bytes(
                    log, offsets_to_clean.first_dirty_offset, offsets_to_clean.first_uncleanable_dirty_offset)
                total += uncleanable_bytes
            return total

    def __repr__(self) -> str:
        with self._lock:
            return (f"LogCleanerManager(log_dirs={[str(d) for d in self.log_dirs]}, "
                    f"states={ {str(tp): repr(s) for tp, s in self._in_progress.items()} }"
                    f"{', read-only' if self.read_only else ''})")
