"""LogLeaderEpochs: a log's leader-epoch cache - made, assigned on append, truncated with the log, moved with its
directory - and the lookups a replica asks of it.

Port of the leader-epoch parts of ``core/src/main/scala/kafka/log/UnifiedLog.scala`` (Apache Kafka, tag 3.8.0):
``UnifiedLog.maybeCreateLeaderEpochCache`` and ``initializeLeaderEpochCache``, the epoch step of ``append``,
``maybeAssignEpochStartOffset``, ``latestEpoch`` and ``endOffsetForEpoch``.  The other call sites are where
Kafka has them: ``Log.truncate_to`` (``truncateFromEndAsyncFlush``), ``Log.truncate_fully_and_start_at``
(``clearAndFlush``), ``Log.maybe_increment_log_start_offset`` (``truncateFromStartAsyncFlush``, which the
retention pass reaches too), ``Log.delete`` (``clear``), ``Log.update_config`` and ``Log.rename_dir``
(re-initialized), and :class:`~kafkalog.log.loader.LogLoader` (segment recovery assigns, then the cache is
truncated to the recovered log).

The cache is a :class:`~kafkalog.leader_epoch_cache.LeaderEpochFileCache` over the partition directory's
``leader-epoch-checkpoint`` (version 0; ``<epoch> <start offset>`` lines in epoch order).  A log whose message
format is below v2 has no cache and no checkpoint file: batches before v2 carry no partition leader epoch.

A mixin of :class:`~kafkalog.log.unified_log.Log`, as :mod:`kafkalog.log.retention` is: the methods are ``Log``'s own.

Where kafkalog differs from Kafka:

* The cache's truncations write the checkpoint through the log's scheduler when it is running, as Kafka's do
  (``scheduleOnce``), and at once, in the caller's thread, when it is not (a log opened with a stopped
  scheduler, or after its own was stopped at close): :class:`_EpochFlushScheduler`.
* A leader's append without a leader epoch (``leader_epoch=-1``, ``Log.append``'s default: a log used on its
  own has no leader) stamps ``-1`` on its batches and assigns nothing.  Kafka's ``appendAsLeader`` is always
  given an epoch, and its cache would refuse ``-1``.  Any other negative epoch is refused, as in Kafka.
  An append that keeps its batches' offsets (a follower's, a Raft leader's) is Kafka's: each v2 batch assigns
  the epoch it carries, and one carrying ``-1`` (``NO_PARTITION_LEADER_EPOCH``) or any other negative epoch
  is refused by the cache (:class:`~kafkalog.errors.IllegalArgumentError`, Kafka's
  ``IllegalArgumentException``) before anything is written; the batches before it keep the epochs they
  assigned, as in Kafka's loop.  Only recovery skips a negative epoch (``LogSegment.recover``'s
  ``partitionLeaderEpoch >= 0``).
* A read-only log reads the cache from a read-only checkpoint and never writes or deletes it: the loader's
  truncations hold in memory only, and a checkpoint it cannot read or a broker would not load (a negative
  epoch or start offset, which Kafka's cache refuses), or a message format below v2, leaves the log without a
  cache, with a warning, rather than refusing to open the directory.  A partition dir read at a URL
  (:class:`~kafkalog.urls.partition.UrlPartition`) has no cache either, so the two answer alike; ``kafkalog
  verify`` reports the checkpoint, naming the line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, Protocol

from .._common import NO_PARTITION_LEADER_EPOCH
from ..checkpoint import LeaderEpochCheckpoint
from ..config.log_config import LogConfig
from ..errors import IllegalArgumentError, KafkaStorageError
from ..leader_epoch_cache import UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from ..log_dir_failure_channel import LogDirFailureChannel
from ..record import MemoryRecords
from ..scheduler import ScheduledTask, Scheduler
from ..topic import TopicPartition

__all__ = ["LogLeaderEpochs", "OffsetAndEpoch", "maybe_create_leader_epoch_cache"]

logger = logging.getLogger("kafkalog.log")  # the log's own logger, as these lines were the log's

#: The first record version whose batches carry a partition leader epoch (Kafka: ``RecordVersion.V2``).
_RECORD_VERSION_V2 = 2


class OffsetAndEpoch(NamedTuple):
    """An offset and the leader epoch it belongs to (Kafka: ``OffsetAndEpoch``, what ``endOffsetForEpoch``
    answers)."""

    offset: int
    leader_epoch: int


class _EpochFlushScheduler(Scheduler):
    """The scheduler a log's leader-epoch cache writes its truncations through: the log's own scheduler when it
    is running, the caller's thread when it is not, and nowhere for a read-only log (see the module docstring).
    Only :meth:`schedule` is the cache's to call; the rest is the log's scheduler's."""

    def __init__(self, scheduler: Scheduler, read_only: bool) -> None:
        self.scheduler = scheduler
        self.read_only = read_only

    @property
    def is_started(self) -> bool:
        return self.scheduler.is_started

    def startup(self) -> None:
        self.scheduler.startup()

    def shutdown(self) -> None:
        self.scheduler.shutdown()

    def resize_thread_pool(self, new_size: int) -> None:
        self.scheduler.resize_thread_pool(new_size)

    def schedule(self, name: str, fun: Callable[[], object], delay_ms: int = 0,
                 period_ms: int = -1) -> ScheduledTask:
        if not self.read_only and self.scheduler.is_started:
            return self.scheduler.schedule(name, fun, delay_ms, period_ms)
        task = ScheduledTask(name, fun, period_ms)
        if not self.read_only:
            fun()
        task._finish()
        return task


def maybe_create_leader_epoch_cache(dir: Path, topic_partition: TopicPartition, record_version: int,
                                    log_prefix: str, current_cache: LeaderEpochFileCache | None,
                                    scheduler: Scheduler, *, read_only: bool = False,
                                    log_dir_failure_channel: LogDirFailureChannel | None = None,
                                    ) -> LeaderEpochFileCache | None:
    """A cache over ``dir``'s ``leader-epoch-checkpoint`` for a message format of v2 or later, else none and
    the checkpoint deleted (Kafka: ``UnifiedLog.maybeCreateLeaderEpochCache``).  ``current_cache``'s entries are
    carried over to the checkpoint in ``dir`` (a renamed directory) without reading it; otherwise the file is
    read.  ``read_only`` deletes and writes nothing (see the module docstring).  The checkpoint reports its I/O
    errors to ``log_dir_failure_channel``, which takes the log dir offline (Kafka's ``LeaderEpochCheckpointFile``).

    Raises:
        CorruptCheckpointError: a writable log's checkpoint cannot be parsed.
        KafkaStorageError: the checkpoint cannot be read or deleted.
        IllegalArgumentError: a writable log's checkpoint holds a negative epoch or start offset.
    """
    leader_epoch_file = LeaderEpochCheckpoint.new_file(dir)
    if record_version < _RECORD_VERSION_V2:
        if leader_epoch_file.exists():
            logger.warning("%sDeleting non-empty leader epoch cache due to incompatible message format V%d",
                           log_prefix, record_version)
        if read_only:
            return None
        try:
            leader_epoch_file.unlink(missing_ok=True)
        except OSError as e:
            raise KafkaStorageError(f"Error while deleting {leader_epoch_file}: {e}") from e
        return None
    checkpoint = LeaderEpochCheckpoint(leader_epoch_file, read_only=read_only,
                                       log_dir_failure_channel=log_dir_failure_channel)
    if current_cache is not None:
        return current_cache.with_checkpoint(checkpoint)
    if not read_only:
        return LeaderEpochFileCache(topic_partition, checkpoint, scheduler)
    try:
        return LeaderEpochFileCache(topic_partition, checkpoint, scheduler)
    except (KafkaStorageError, IllegalArgumentError) as e:
        # A checkpoint a broker would not load (unreadable, or an entry the cache refuses, a negative epoch):
        # the records read the same without it, and kafkalog verify reports it.
        logger.warning("%sReading %s without its leader-epoch cache: %s", log_prefix, dir, e)
        return None


class _EpochLog(Protocol):
    """What the leader-epoch methods use of their log (:class:`~kafkalog.log.unified_log.Log`)."""

    _lock: threading.RLock
    leader_epoch_cache: LeaderEpochFileCache | None
    read_only: bool
    scheduler: Scheduler
    topic_partition: TopicPartition

    @property
    def dir(self) -> Path: ...
    @property
    def config(self) -> LogConfig: ...
    @property
    def log_dir_failure_channel(self) -> LogDirFailureChannel: ...
    @property
    def log_end_offset(self) -> int: ...
    def _initialize_leader_epoch_cache(self) -> None: ...
    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None: ...


class LogLeaderEpochs:
    """The leader-epoch methods of a log (Kafka: the ``leaderEpochCache`` parts of ``UnifiedLog``)."""

    #: The partition's leader-epoch cache, ``None`` below message format v2 (Kafka: ``leaderEpochCache``).
    leader_epoch_cache: LeaderEpochFileCache | None = None

    def _initialize_leader_epoch_cache(self: _EpochLog) -> None:
        """(Re)make the cache for the current directory and message format, keeping its entries (Kafka:
        ``initializeLeaderEpochCache``)."""
        with self._lock:
            self.leader_epoch_cache = maybe_create_leader_epoch_cache(
                self.dir, self.topic_partition, self.config.record_version(),
                f"[Log partition={self.topic_partition}, dir={self.dir.parent}] ", self.leader_epoch_cache,
                _EpochFlushScheduler(self.scheduler, self.read_only), read_only=self.read_only,
                log_dir_failure_channel=None if self.read_only else self.log_dir_failure_channel)

    def maybe_assign_epoch_start_offset(self: _EpochLog, leader_epoch: int, start_offset: int) -> None:
        """Record that ``leader_epoch`` starts at ``start_offset``, when the log has a cache (Kafka:
        ``maybeAssignEpochStartOffset``): what a replica becoming leader does before it writes, and what each
        appended v2 batch does with its own epoch.

        Raises:
            IllegalArgumentError: a negative epoch or offset.
        """
        cache = self.leader_epoch_cache
        if cache is not None:
            cache.assign(leader_epoch, start_offset)

    @property
    def latest_epoch(self: _EpochLog) -> int | None:
        """The latest leader epoch in the cache; ``None`` without a cache or entry (Kafka: ``latestEpoch``)."""
        cache = self.leader_epoch_cache
        return None if cache is None else cache.latest_epoch()

    def end_offset_for_epoch(self: _EpochLog, leader_epoch: int) -> OffsetAndEpoch | None:
        """Where ``leader_epoch`` ends in this log, and the epoch found for it: the largest cached epoch not above
        it (Kafka: ``endOffsetForEpoch``, an OffsetsForLeaderEpoch answer).  ``None`` without a cache or when
        the cache has no answer (an undefined or future epoch)."""
        cache = self.leader_epoch_cache
        if cache is None:
            return None
        found_epoch, found_offset = cache.end_offset_for(leader_epoch, self.log_end_offset)
        if found_offset == UNDEFINED_EPOCH_OFFSET:
            return None
        return OffsetAndEpoch(found_offset, found_epoch)

    def _assign_epochs_of_append(self: _EpochLog, records: MemoryRecords,
                                 leader: tuple[int, int, int] | None = None) -> None:
        """The epoch step of Kafka's ``append`` (``UnifiedLog.append``, 3.8.0), on the validated records before
        they are written: each v2 batch assigns its partition leader epoch from its base offset
        (``maybeAssignEpochStartOffset``); a v0/v1 batch (a partial upgrade's temporary regression) clears a
        non-empty cache, so that the next leader election truncates by high watermark.

        ``leader`` is ``(leader epoch, first offset, magic)`` of a leader's append whose offsets the validator
        assigned: every batch then has that magic and, from v2, that epoch, with increasing base offsets, so
        the first batch decides all (a later one's assignment of the same epoch at a higher offset changes
        nothing) and the batches need not be read.  Such an append without an epoch (``-1``) assigns nothing
        (kafkalog's, see the module docstring).  Without ``leader`` (an append that keeps its offsets) every
        batch is assigned the epoch it carries, in order, as Kafka does.

        Raises:
            IllegalArgumentError: a v2 batch that keeps its offsets carries a negative epoch, ``-1``
                (``NO_PARTITION_LEADER_EPOCH``) included (Kafka: ``LeaderEpochFileCache.assign``).
        """
        cache = self.leader_epoch_cache
        if cache is None:
            return
        if leader is not None:
            epoch, first_offset, magic = leader
            if magic >= _RECORD_VERSION_V2:
                if epoch != NO_PARTITION_LEADER_EPOCH:
                    self.maybe_assign_epoch_start_offset(epoch, first_offset)
            elif cache.non_empty():
                logger.warning("Clearing leader epoch cache after unexpected append with message format v%d", magic)
                cache.clear_and_flush()
            return
        for batch in records.batches():
            if batch.magic >= _RECORD_VERSION_V2:
                self.maybe_assign_epoch_start_offset(batch.partition_leader_epoch, batch.base_offset)
            elif cache.non_empty():
                logger.warning("Clearing leader epoch cache after unexpected append with message format v%d",
                               batch.magic)
                cache.clear_and_flush()
