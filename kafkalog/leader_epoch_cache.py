"""The leader-epoch cache of a partition: which leader epoch wrote from which offset, kept in
``leader-epoch-checkpoint``.

Port of ``LeaderEpochFileCache`` (Kafka 3.8.0,
``storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java``) over
:class:`kafkalog.checkpoint.LeaderEpochCheckpoint` (``LeaderEpochCheckpointFile``) and
:class:`kafkalog.checkpoint.EpochEntry`.

The cache maps each leader epoch to the first offset written in it.  On disk it is the checkpoint file of the
partition directory (version 0, a count, then ``<epoch> <start offset>`` per line, in epoch order)::

    0
    2
    0 0
    3 1944

Invariants:

* Entries increase in both epoch and start offset.  :meth:`LeaderEpochFileCache.assign` keeps it so by
  removing, from the newest back, every entry whose epoch or start offset is not below the new entry's (a log
  that went back in time is truncated to the point of conflict rather than refused); an epoch already latest
  is not reassigned unless the new start offset is lower.
* :meth:`~LeaderEpochFileCache.assign` writes the checkpoint synchronously, so the file never misses an
  entry the cache has; the truncations write it asynchronously, through the scheduler, so after a crash the
  file may still hold entries past the log end (or before the log start) and whoever opens the cache from the
  file must truncate it again against the log (``LogLoader`` does).
* Reading the file on open assigns each entry, so a file whose entries do not increase is brought back to
  increasing order, and a negative epoch or offset is refused.

Thread safety: Kafka guards the map with a ``ReentrantReadWriteLock``; here one ``threading.RLock`` serves
for both (Python has no read-write lock, and every operation is short), and, as in Kafka, a checkpoint write
holds it so that the file is always a state the cache was in.

Kafka 3.8.0 names are kept: the truncations are ``truncate_from_end_async_flush`` and
``truncate_from_start_async_flush`` (3.7 flushed synchronously in ``truncateFromEnd`` / ``truncateFromStart``),
and ``with_checkpoint`` replaces 3.7's ``writeTo`` / ``cloneWithLeaderEpochCheckpoint``.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

from ._common import INT32_MAX, INT64_MAX
from .checkpoint import EpochEntry, LeaderEpochCheckpoint
from .errors import IllegalArgumentError
from .scheduler import Scheduler
from .topic import TopicPartition

__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochAndOffset", "LeaderEpochFileCache", "check_epoch_entry"]

logger = logging.getLogger(__name__)

#: Kafka: ``OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH``.
UNDEFINED_EPOCH = -1
#: Kafka: ``OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET``.
UNDEFINED_EPOCH_OFFSET = -1


class EpochAndOffset(NamedTuple):
    """The answer of :meth:`LeaderEpochFileCache.end_offset_for` (Kafka: a ``Map.Entry<Integer, Long>``)."""

    epoch: int
    end_offset: int


def _remove_while_matching(entries: list[EpochEntry], predicate: Callable[[EpochEntry], bool], *,
                           from_end: bool) -> list[EpochEntry]:
    """Kafka: ``removeWhileMatching``: remove entries from one end while ``predicate`` holds, and return
    them in the order they were removed."""
    removed: list[EpochEntry] = []
    while entries and predicate(entries[-1] if from_end else entries[0]):
        removed.append(entries.pop() if from_end else entries.pop(0))
    return removed


def _truncate_from_start(entries: list[EpochEntry], start_offset: int) -> list[EpochEntry]:
    """Kafka: the static ``truncateFromStart``: drop the entries starting at or before ``start_offset``,
    then put the last of them back starting at ``start_offset`` (the epoch still owns the log from there)."""
    removed = _remove_while_matching(entries, lambda e: e.start_offset <= start_offset, from_end=False)
    if removed:
        entries.insert(0, EpochEntry(removed[-1].epoch, start_offset))
    return removed


def _truncate_from_end(entries: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
    """Kafka: the static ``truncateFromEnd``: drop the entries starting at or after ``end_offset``; a
    negative ``end_offset`` (``UNDEFINED_EPOCH_OFFSET``) drops nothing."""
    if end_offset >= 0 and entries and entries[-1].start_offset >= end_offset:
        return _remove_while_matching(entries, lambda e: e.start_offset >= end_offset, from_end=True)
    return []


class LeaderEpochFileCache:
    """A partition's leader epochs and their start offsets, backed by its ``leader-epoch-checkpoint``
    (Kafka: ``LeaderEpochFileCache``).

    ``checkpoint`` is read now and each entry assigned (without a write); ``scheduler`` runs the checkpoint
    writes that follow a truncation (Kafka: ``scheduleOnce("leader-epoch-cache-flush-<tp>")``).

    Raises:
        IllegalArgumentError: the checkpoint holds a negative epoch or start offset.
    """

    def __init__(self, topic_partition: TopicPartition, checkpoint: LeaderEpochCheckpoint,
                 scheduler: Scheduler, *, _entries: Iterable[EpochEntry] | None = None) -> None:
        self.topic_partition = topic_partition
        self.checkpoint = checkpoint
        self.scheduler = scheduler
        self._lock = threading.RLock()
        # The map of Kafka's TreeMap<Integer, EpochEntry>: kept sorted by epoch, which (by the invariant)
        # is also start-offset order, so a list with bisect does what the tree did.
        self._epochs: list[EpochEntry] = []
        self._log_prefix = f"[LeaderEpochCache {topic_partition}] "
        if _entries is not None:
            # Kafka: the private constructor of withCheckpoint, taking entries no less fresh than the file.
            self._epochs = list(_entries)
        else:
            for entry in checkpoint.read():
                self._assign_entry(entry)

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.topic_partition}, {self._epochs})"

    # -- assigning -----------------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset``, and write the checkpoint if that changed the
        cache (Kafka: ``assign(int, long)``).  Once assigned, an epoch's start offset only moves back.

        Raises:
            IllegalArgumentError: a negative epoch or start offset, or one that does not fit Java's types.
        """
        epochs = self._epochs
        if epochs:
            # isUpdateNeeded's answer for a leader's every append, before an entry is made: its latest epoch, from
            # an offset not above this one (the epoch was checked when that entry was assigned, the offset's
            # range is checked here).
            latest = epochs[-1]
            if (type(epoch) is int and type(start_offset) is int and latest.epoch == epoch
                    and latest.start_offset <= start_offset <= INT64_MAX):
                return
        entry = EpochEntry(epoch, start_offset)
        if self._assign_entry(entry):
            logger.debug("%sAppended new epoch entry %s. Cache now contains %s entries.",
                         self._log_prefix, entry, len(self._epochs))
            self._write_to_file()

    def assign_all(self, entries: Iterable[EpochEntry]) -> None:
        """Assign each entry, then write the checkpoint once if there were any (Kafka:
        ``assign(List<EpochEntry>)``)."""
        entries = list(entries)
        for entry in entries:
            if self._assign_entry(EpochEntry(*entry)):
                logger.debug("%sAppended new epoch entry %s. Cache now contains %s entries.",
                             self._log_prefix, entry, len(self._epochs))
        if entries:
            self._write_to_file()

    def _is_update_needed(self, entry: EpochEntry) -> bool:
        """Kafka: ``isUpdateNeeded``."""
        latest = self.latest_entry()
        return latest is None or entry.epoch != latest.epoch or entry.start_offset < latest.start_offset

    def _assign_entry(self, entry: EpochEntry) -> bool:
        """Kafka: the private ``assign(EpochEntry)``; whether the cache changed."""
        check_epoch_entry(entry)
        # Kafka checks before taking the write lock, so that readers rarely wait, and again under it.
        if not self._is_update_needed(entry):
            return False
        with self._lock:
            if not self._is_update_needed(entry):
                return False
            self._maybe_truncate_non_monotonic_entries(entry)
            self._epochs.append(entry)
            return True

    def _maybe_truncate_non_monotonic_entries(self, new_entry: EpochEntry) -> None:
        """Kafka: ``maybeTruncateNonMonotonicEntries``: drop the newest entries that the new one does not
        follow in both epoch and offset."""
        removed = _remove_while_matching(
            self._epochs,
            lambda e: e.epoch >= new_entry.epoch or e.start_offset >= new_entry.start_offset,
            from_end=True)
        # Removing one entry that starts where the new one does is expected (nothing was written in it).
        if len(removed) > 1 or (removed and removed[0].start_offset != new_entry.start_offset):
            logger.warning("%sNew epoch entry %s caused truncation of conflicting entries %s. "
                           "Cache now contains %s entries.", self._log_prefix, new_entry, removed,
                           len(self._epochs))

    # -- reading -------------------------------------------------------------------------------------

    def non_empty(self) -> bool:
        """Whether the cache holds an entry (Kafka: ``nonEmpty``)."""
        with self._lock:
            return bool(self._epochs)

    def latest_entry(self) -> EpochEntry | None:
        """The entry of the highest epoch (Kafka: ``latestEntry``)."""
        with self._lock:
            return self._epochs[-1] if self._epochs else None

    def latest_epoch(self) -> int | None:
        """The current leader epoch: the latest one with messages assigned (Kafka: ``latestEpoch``)."""
        entry = self.latest_entry()
        return None if entry is None else entry.epoch

    def previous_epoch(self, epoch: int | None = None) -> int | None:
        """The highest epoch below ``epoch`` (Kafka: ``previousEpoch(int)``), or, without ``epoch``, below the
        latest epoch (Kafka: ``previousEpoch()``)."""
        with self._lock:
            if epoch is None:
                latest = self.latest_entry()
                if latest is None:
                    return None
                epoch = latest.epoch
            entry = self._lower_entry(epoch)
            return None if entry is None else entry.epoch

    def earliest_entry(self) -> EpochEntry | None:
        """The entry of the lowest epoch (Kafka: ``earliestEntry``)."""
        with self._lock:
            return self._epochs[0] if self._epochs else None

    def previous_entry(self, epoch: int) -> EpochEntry | None:
        """The entry of the highest epoch below ``epoch`` (Kafka: ``previousEntry``)."""
        with self._lock:
            return self._lower_entry(epoch)

    def next_epoch(self, epoch: int) -> int | None:
        """The lowest epoch above ``epoch`` (Kafka: ``nextEpoch``)."""
        with self._lock:
            entry = self._higher_entry(epoch)
            return None if entry is None else entry.epoch

    def epoch_entry(self, epoch: int) -> EpochEntry | None:
        """The entry of ``epoch`` (Kafka: ``epochEntry``)."""
        with self._lock:
            i = bisect.bisect_left(self._epochs, epoch, key=_epoch_of)
            return self._epochs[i] if i < len(self._epochs) and self._epochs[i].epoch == epoch else None

    def _lower_entry(self, epoch: int) -> EpochEntry | None:
        i = bisect.bisect_left(self._epochs, epoch, key=_epoch_of)
        return self._epochs[i - 1] if i > 0 else None

    def _floor_entry(self, epoch: int) -> EpochEntry | None:
        i = bisect.bisect_right(self._epochs, epoch, key=_epoch_of)
        return self._epochs[i - 1] if i > 0 else None

    def _higher_entry(self, epoch: int) -> EpochEntry | None:
        i = bisect.bisect_right(self._epochs, epoch, key=_epoch_of)
        return self._epochs[i] if i < len(self._epochs) else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> EpochAndOffset:
        """The largest epoch not above ``requested_epoch`` and where it ends (Kafka: ``endOffsetFor``).

        The end of an epoch is the start offset of the next epoch, or ``log_end_offset`` for the latest one.
        ``(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`` answers an undefined request and an epoch above every
        known one (an empty cache included).  An epoch below every known one answers itself with the first
        known start offset: the earlier history is gone from the log, and a follower should replicate from
        the leader's start.
        """
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH:
                # A bootstrapping follower, or one on a message format without leader epochs.
                result = EpochAndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
            elif self.latest_epoch() == requested_epoch:
                # The leader's current epoch (or a consumer checking its position): it ends at the log end.
                result = EpochAndOffset(requested_epoch, log_end_offset)
            else:
                higher = self._higher_entry(requested_epoch)
                if higher is None:
                    # Above the latest epoch: cannot happen while the latest cached epoch is the largest.
                    result = EpochAndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
                else:
                    floor = self._floor_entry(requested_epoch)
                    if floor is None:
                        result = EpochAndOffset(requested_epoch, higher.start_offset)
                    else:
                        result = EpochAndOffset(floor.epoch, higher.start_offset)
            logger.debug("%sProcessed end offset request for epoch %s and returning epoch %s with end offset %s "
                         "from epoch cache of size %s", self._log_prefix, requested_epoch, result.epoch,
                         result.end_offset, len(self._epochs))
            return result

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch that wrote ``offset``: the epoch whose start offset is the greatest not above it
        (Kafka: ``epochForOffset``); ``None`` before the first epoch."""
        with self._lock:
            previous: int | None = None
            for epoch, start_offset in self._epochs:
                if start_offset == offset:
                    return epoch
                if start_offset > offset:
                    return previous
                previous = epoch
            return previous

    def epoch_entries_in_range(self, start_offset: int, end_offset: int) -> list[EpochEntry]:
        """The entries as they would be after truncating a copy to ``[start_offset, end_offset)`` (Kafka:
        ``epochEntriesInRange``); a negative ``start_offset`` truncates nothing at the start."""
        with self._lock:
            entries = list(self._epochs)
            if start_offset >= 0:
                _truncate_from_start(entries, start_offset)
            _truncate_from_end(entries, end_offset)
            return entries

    def epoch_entries(self) -> list[EpochEntry]:
        """A copy of the entries, in epoch order (Kafka: ``epochEntries``)."""
        with self._lock:
            return list(self._epochs)

    def epoch_with_offsets(self) -> dict[int, int]:
        """Epoch -> start offset, in epoch order (Kafka: ``epochWithOffsets``)."""
        with self._lock:
            return {e.epoch: e.start_offset for e in self._epochs}

    # -- truncating and clearing ---------------------------------------------------------------------

    def truncate_from_end_async_flush(self, end_offset: int) -> None:
        """Remove the entries starting at or after ``end_offset``, and write the checkpoint later, on the
        scheduler (Kafka: ``truncateFromEndAsyncFlush``).  A negative offset changes nothing."""
        with self._lock:
            removed = _truncate_from_end(self._epochs, end_offset)
            if removed:
                # Later, so that a replica fetcher does not wait on an fsync; assign's write is synchronous,
                # so the file never lacks an entry, and a stale extra one is truncated again on load.
                self._schedule_flush()
                logger.debug("%sCleared entries %s from epoch cache after truncating to end offset %s, leaving "
                             "%s entries in the cache.", self._log_prefix, removed, end_offset, len(self._epochs))

    def truncate_from_start_async_flush(self, start_offset: int) -> None:
        """Remove the entries starting at or before ``start_offset``, keeping the last of them moved to start
        at ``start_offset``, and write the checkpoint later (Kafka: ``truncateFromStartAsyncFlush``).

        Exclusive: truncating from the start offset of an entry keeps that entry as it is.
        """
        with self._lock:
            removed = _truncate_from_start(self._epochs, start_offset)
            if removed:
                # Later, so that deleteRecords does not hold the log's lock through an fsync.
                self._schedule_flush()
                logger.debug("%sCleared entries %s and rewrote first entry %s after truncating to start offset "
                             "%s, leaving %s in the cache.", self._log_prefix, removed, removed[-1],
                             start_offset, len(self._epochs))

    def clear_and_flush(self) -> None:
        """Delete every entry and write the (empty) checkpoint (Kafka: ``clearAndFlush``)."""
        with self._lock:
            self._epochs.clear()
            self._write_to_file()

    def clear(self) -> None:
        """Delete every entry, leaving the file as it is (Kafka: ``clear``)."""
        with self._lock:
            self._epochs.clear()

    def with_checkpoint(self, checkpoint: LeaderEpochCheckpoint) -> LeaderEpochFileCache:
        """A new cache with these entries over another checkpoint file, which is not read or written
        (Kafka: ``withCheckpoint``; the remote-log manager's copy of the epochs for an uploaded segment)."""
        with self._lock:
            return LeaderEpochFileCache(self.topic_partition, checkpoint, self.scheduler,
                                        _entries=self.epoch_entries())

    # -- the checkpoint ------------------------------------------------------------------------------

    def _schedule_flush(self) -> None:
        self.scheduler.schedule_once(f"leader-epoch-cache-flush-{self.topic_partition}",
                                     self._write_to_file_for_truncation)

    def _write_to_file(self) -> None:
        """Kafka: ``writeToFile``."""
        with self._lock:
            self.checkpoint.write(self._epochs)

    def _write_to_file_for_truncation(self) -> None:
        """Kafka: ``writeToFileForTruncation``: a partition directory renamed away meanwhile is no error."""
        with self._lock:
            self.checkpoint.write_for_truncation(self._epochs)


def _epoch_of(entry: EpochEntry) -> int:
    return entry.epoch


def check_epoch_entry(entry: EpochEntry) -> None:
    """Refuse an entry the cache cannot take (Kafka: the check that opens the private ``assign(EpochEntry)``):
    a negative epoch or start offset, so a checkpoint that holds one fails a broker's load of the partition.
    ``kafkalog verify`` reports such a line by this rule.

    Raises:
        IllegalArgumentError: a negative epoch or start offset (Kafka's ``IllegalArgumentException``, same
            message), or one that does not fit Java's ``int`` epoch and ``long`` offset.
    """
    if (not isinstance(entry.epoch, int) or not isinstance(entry.start_offset, int)
            or entry.epoch < 0 or entry.start_offset < 0):
        raise IllegalArgumentError(f"Received invalid partition leader epoch entry {_java_repr(entry)}")
    if entry.epoch > INT32_MAX or entry.start_offset > INT64_MAX:
        raise IllegalArgumentError(f"Partition leader epoch entry {_java_repr(entry)} does not fit Java's "
                                   f"int epoch and long offset")


def _java_repr(entry: EpochEntry) -> str:
    """Kafka's ``EpochEntry.toString``."""
    return f"EpochEntry(epoch={entry.epoch}, startOffset={entry.start_offset})"
