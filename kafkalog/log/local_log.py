"""LocalLog: the segments of a partition's log on local disk - their directory, rolls, truncation, deletion,
the cleaner's swap, flushing and the recovery point, reads of a range of segments - and why segments are
deleted.

Port of ``core/src/main/scala/kafka/log/LocalLog.scala`` (Apache Kafka, tag 3.8.0).  Kafka 3.0 cut
``LocalLog`` out of 0.10.1.1's ``Log.scala``: what ``Log`` did with its segments and files went there, while
``UnifiedLog`` kept the offsets a broker reasons about (log start offset, high watermark), the append's
validation and retention, and the lock.  kafkalog cuts it the same way: :class:`~kafkalog.log.unified_log.Log` holds a
:class:`LocalLog` and delegates to it, as ``UnifiedLog`` does to its ``localLog``, keeping its own public
methods.  :meth:`LocalLog.collect_aborted_transactions` walks the segments' ``.txnindex`` files as Kafka's
does.  The work that touches the files (a roll, a read, a truncation, a rename, a close, the deletions) runs in
Kafka's ``maybeHandleIOException`` (:meth:`LocalLog.maybe_handle_io_exception`): it fails at once when the log
dir is offline, and an I/O error in it takes the log dir offline
(:class:`~kafkalog.log_dir_failure_channel.LogDirFailureChannel`).

The end of the file holds what stands apart from the object: ``SegmentDeletionReason`` with ``LogTruncation``,
``LogRoll`` and ``LogDeletion`` (and, as one class with a sentence, ``RetentionMsBreach``,
``RetentionSizeBreach``, ``StartOffsetBreach`` and the loader's reasons), and ``LocalLog.deleteSegmentFiles``.
0.10.1.1's ``Log.scala`` had neither: it deleted with ``asyncDeleteSegment`` and said nothing of why.  The
loader (:mod:`kafkalog.log.loader`) deletes segments with a reason too.

On disk: a segment to delete first has its files renamed with the ``.deleted`` suffix (durable, so a crash
after it leaves files the next load removes), then the files are deleted, at once or after
``file.delete.delay.ms``.  New segments made by the cleaner or a split are ``.cleaned``, renamed ``.swap``
before the old ones are renamed ``.deleted``, then stripped of the suffix (:meth:`LocalLog.replace_segments`).
Invariant: the map always holds an active (last) segment once the log is loaded; a roll or a full truncation
adds the new segment before the old one leaves.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..config.log_config import LogConfig
from ..errors import IllegalArgumentError, IllegalStateError, KafkaLogError, KafkaStorageError, OffsetOutOfRangeError
from ..fetch import EMPTY_RECORDS, FetchDataInfo, LogOffsetMetadata
from ..filenames import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    index_filename,
    log_filename,
    time_index_filename,
    txn_index_filename,
)
from ..fsutil import fsync_dir, interrupts_deferred, storage_error
from ..index import OffsetPosition
from ..log_dir_failure_channel import LogDirFailureChannel, Message
from ..record import MemoryRecords
from ..scheduler import Scheduler, Time
from ..segment import NO_MAX_POSITION, LogSegment
from ..transaction_index import AbortedTxn
from .pending_deletions import PendingDeletions, UndeletedFile
from .segments import LogSegments

__all__ = ["LocalLog", "LogDeletion", "LogRoll", "LogTruncation", "SegmentDeletionReason", "delete_segment_files"]

logger = logging.getLogger(__name__)


class SegmentDeletionReason:
    """Why segments are being deleted, said in the log before they go (Kafka: ``SegmentDeletionReason``)."""

    def __init__(self, log: LocalLog) -> None:
        self.log = log

    def log_reason(self, to_delete: list[LogSegment]) -> None:
        """Kafka: ``logReason``."""
        raise NotImplementedError


class LogTruncation(SegmentDeletionReason):
    """Kafka: ``LogTruncation``."""

    def log_reason(self, to_delete: list[LogSegment]) -> None:
        logger.info("[%s] Deleting segments as part of log truncation: %s", self.log.topic_partition,
                    ",".join(map(str, to_delete)))


class LogRoll(SegmentDeletionReason):
    """Kafka: ``LogRoll``."""

    def log_reason(self, to_delete: list[LogSegment]) -> None:
        logger.info("[%s] Deleting segments as part of log roll: %s", self.log.topic_partition,
                    ",".join(map(str, to_delete)))


class LogDeletion(SegmentDeletionReason):
    """Kafka: ``LogDeletion``."""

    def log_reason(self, to_delete: list[LogSegment]) -> None:
        logger.info("[%s] Deleting segments as the log has been deleted: %s", self.log.topic_partition,
                    ",".join(map(str, to_delete)))


class _DescribedDeletion(SegmentDeletionReason):
    """Retention and recovery deletions, whose reason is a sentence (Kafka's ``RetentionMsBreach``,
    ``RetentionSizeBreach``, ``StartOffsetBreach`` and LogLoader's messages)."""

    def __init__(self, log: LocalLog, description: str) -> None:
        super().__init__(log)
        self.description = description

    def log_reason(self, to_delete: list[LogSegment]) -> None:
        logger.info("[%s] Deleting segments due to %s: %s", self.log.topic_partition, self.description,
                    ",".join(map(str, to_delete)))


def delete_segment_files(segments: list[LogSegment], async_delete: bool, dir: Path, topic_partition: Any,
                         config: LogConfig, scheduler: Scheduler, log_prefix: str = "",
                         log_dir_failure_channel: LogDirFailureChannel | None = None) -> None:
    """Rename each segment's files to ``.deleted`` (unless they are already), then delete them: now, or after
    ``file.delete.delay.ms`` in a "delete-file" task (Kafka: ``LocalLog.deleteSegmentFiles``).

    The rename comes first so that a crash between the two steps leaves files that the next load deletes;
    the delay lets readers that still hold a segment finish with it.  Files already gone are not an error.
    The deletion runs in ``log_dir_failure_channel``'s handler of ``dir``'s log dir when one is given, as
    Kafka's always does (the loader, which Kafka does not handle either, gives none).
    """
    to_delete = list(segments)
    for segment in to_delete:
        if not segment.has_suffix(DELETED_FILE_SUFFIX):
            segment.change_file_suffixes("", DELETED_FILE_SUFFIX)

    def delete_segments() -> None:
        logger.info("%sDeleting segment files %s of %s in %s", log_prefix, ",".join(map(str, to_delete)),
                    topic_partition, dir)
        if log_dir_failure_channel is None:
            for segment in to_delete:
                segment.delete()
            return
        parent_dir = os.path.abspath(dir.parent)
        with log_dir_failure_channel.maybe_handle_io_exception(
                parent_dir, f"Error while deleting segments for {topic_partition} in dir {parent_dir}"):
            for segment in to_delete:
                segment.delete()

    if async_delete:
        scheduler.schedule("delete-file", delete_segments, delay_ms=config.file_delete_delay_ms)
    else:
        delete_segments()


class LocalLog:
    """The segments of one partition's log on local disk, and their directory (Kafka: ``LocalLog``).

    ``segments`` is the log's :class:`~kafkalog.log.segments.LogSegments`, ``recovery_point`` the first offset
    not known to be flushed, ``next_offset_metadata`` where the next batch goes.  Like Kafka's, this class is
    not thread-safe: its owner (:class:`~kafkalog.log.unified_log.Log`, Kafka's ``UnifiedLog``) calls it under its own
    lock.
    ``lock`` is that lock, taken here only by the delayed deletion task, which runs on the scheduler's thread
    and must not race the owner over the segments still waiting for it (kafkalog's addition: closing the log
    deletes them, :mod:`kafkalog.log.pending_deletions`).  ``log_dir_failure_channel``
    is told of the I/O errors of the log dir (:meth:`maybe_handle_io_exception`), unless ``read_only``: a log read
    in place (kafkalog's) takes nothing offline, and each failing read just raises.
    """

    def __init__(self, dir: Path, config: LogConfig, segments: LogSegments, recovery_point: int,
                 next_offset_metadata: LogOffsetMetadata, scheduler: Scheduler, time: Time, topic_partition: Any,
                 lock: threading.RLock, log_dir_failure_channel: LogDirFailureChannel | None = None, *,
                 read_only: bool = False) -> None:
        self.dir = dir
        self.read_only = read_only
        #: Where I/O errors of the log dir are reported (Kafka: ``logDirFailureChannel``).
        self.log_dir_failure_channel = (log_dir_failure_channel if log_dir_failure_channel is not None
                                        else LogDirFailureChannel())
        # Kafka's _parentDir, cached for the hot paths: the log dir as the channel knows it, absolute.
        self._parent_dir = os.path.abspath(dir.parent)
        self.config = config
        self.segments = segments
        self.recovery_point = recovery_point
        self.next_offset_metadata = next_offset_metadata
        self.scheduler = scheduler
        self.time = time
        self.topic_partition = topic_partition
        self._lock = lock
        # Kafka's isMemoryMappedBufferClosed: set once the files are released (close_handlers) or deleted
        # (delete_all_segments); after that no operation may touch the disk, closing included.
        self.is_memory_mapped_buffer_closed = False
        #: When the log was last flushed, in ms (Kafka: ``lastFlushTime``).
        self.last_flush_time = time.milliseconds()
        #: The segments (and the log's producer snapshots) out of the map whose files wait for
        #: ``file.delete.delay.ms``; closing the log deletes them (:mod:`kafkalog.log.pending_deletions`).
        self.pending_deletions = PendingDeletions(lock)
        #: The files the last close could not delete, and why (:class:`~kafkalog.log.pending_deletions.UndeletedFile`).
        self.undeleted_files: list[UndeletedFile] = []

    # -- the directory and the configuration --------------------------------------------------------

    @property
    def parent_dir(self) -> str:
        """The log dir holding the log's directory, as an absolute path: the name the failure channel knows it by
        (Kafka: ``parentDir``)."""
        return self._parent_dir

    def maybe_handle_io_exception(self, message: Message) -> AbstractContextManager[None]:
        """The failure channel's handler of this log's log dir (Kafka: ``LocalLog.maybeHandleIOException``):
        refuses to start when the dir is offline, and takes it offline on an I/O error, raising a
        :class:`~kafkalog.errors.KafkaStorageError` that says ``message``
        (:meth:`~kafkalog.log_dir_failure_channel.LogDirFailureChannel.maybe_handle_io_exception`).  A read-only
        log's handles nothing."""
        if self.read_only:
            return contextlib.nullcontext()
        return self.log_dir_failure_channel.maybe_handle_io_exception(self._parent_dir, message)

    def rename_dir(self, name: str) -> bool:
        """Rename the directory to ``name`` in the same parent and point every segment (those waiting for
        deletion too) at it; returns whether the directory changed (Kafka: ``renameDir``).

        Raises:
            KafkaStorageError: the rename failed, which takes the log dir offline, or the dir is offline
                (Kafka: ``maybeHandleIOException``).
        """
        with self.maybe_handle_io_exception(
                lambda: f"Error while renaming dir for {self.topic_partition} in log dir {self._parent_dir}"):
            renamed = self.dir.parent / name
            os.replace(self.dir, renamed)  # Kafka: Utils.atomicMoveWithFallback, then the parent is flushed
            fsync_dir(renamed.parent)
            if renamed == self.dir:
                return False
            self.dir = renamed
            self._parent_dir = os.path.abspath(renamed.parent)
            self.segments.update_parent_dir(renamed)
            self.pending_deletions.update_parent_dir(renamed)
            return True

    def update_config(self, new_config: LogConfig) -> LogConfig:
        """Use ``new_config`` from now on, warn of a lower message format, and return the old configuration
        (Kafka: ``updateConfig``)."""
        old_config, self.config = self.config, new_config
        if new_config.record_version() < old_config.record_version():
            logger.warning("Record format version has been downgraded from V%d to V%d.",
                           old_config.record_version(), new_config.record_version())
        return old_config

    def check_if_memory_mapped_buffer_closed(self) -> None:
        """Kafka: ``checkIfMemoryMappedBufferClosed``: the files were released or deleted."""
        if self.is_memory_mapped_buffer_closed:
            raise KafkaStorageError(
                f"The memory mapped buffer for log of {self.topic_partition} is already closed")

    # -- offsets and flushing -----------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        """Kafka: ``logEndOffset``."""
        return self.next_offset_metadata.message_offset

    def update_log_end_offset(self, end_offset: int) -> None:
        """Set the log end offset, where the active segment ends, and keep the recovery point at or below it
        (Kafka: ``updateLogEndOffset``)."""
        active = self.segments.last_segment()
        if active is None:
            raise KafkaLogError(f"Log {self.dir} has no segment")
        self._end_at(active, end_offset)

    def _end_at(self, active: LogSegment, end_offset: int) -> None:
        """:meth:`update_log_end_offset` with the active segment in hand (an append has it already)."""
        self.next_offset_metadata = LogOffsetMetadata(end_offset, active.base_offset, active.log.size_in_bytes())
        if self.recovery_point > end_offset:
            self.recovery_point = end_offset

    def unflushed_messages(self) -> int:
        """Offsets appended since the last flush (Kafka: ``unflushedMessages``)."""
        return self.log_end_offset - self.recovery_point

    def flush(self, offset: int) -> None:
        """fsync the segments holding offsets in ``[recovery_point, offset)``, and the directory when one of them
        is new since the last flush; the recovery point stays where it is (Kafka: ``flush``).

        A directory that no longer exists (renamed meanwhile for deletion) is not an error: it is going away.
        """
        current_recovery_point = self.recovery_point
        if current_recovery_point <= offset:
            segments = self.segments.values(current_recovery_point, offset)
            for segment in segments:
                segment.flush()
            if any(segment.base_offset >= current_recovery_point for segment in segments):
                fsync_dir(self.dir)  # a new segment's directory entry must be durable too

    def mark_flushed(self, offset: int) -> None:
        """Move the recovery point up to ``offset`` and note the time, if it is an advance (Kafka:
        ``markFlushed``)."""
        self.check_if_memory_mapped_buffer_closed()
        if offset > self.recovery_point:
            self.recovery_point = offset
            self.last_flush_time = self.time.milliseconds()

    # -- appending, rolling and reading -------------------------------------------------------------

    def append(self, last_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int,
               records: MemoryRecords) -> None:
        """Append validated ``records`` to the active segment and move the log end offset past them (Kafka:
        ``append``)."""
        active = self.segments.last_segment()
        assert active is not None  # a loaded log always has an active segment
        active.append(last_offset, largest_timestamp, shallow_offset_of_max_timestamp, records)
        self._end_at(active, last_offset + 1)

    def append_batch(self, last_offset: int, max_timestamp: int, buffer: bytearray) -> None:
        """:meth:`append` of one validated batch, ``buffer``, whose last offset and max timestamp the caller has
        (the log's fused leader append, :mod:`kafkalog.log.leader_append`;
        :meth:`LogSegment.append_batch <kafkalog.segment.LogSegment.append_batch>`)."""
        active = self.segments.last_segment()
        assert active is not None  # a loaded log always has an active segment
        active.append_batch(last_offset, max_timestamp, buffer)
        self._end_at(active, last_offset + 1)

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the larger of ``expected_next_offset`` and the log end offset (Kafka:
        ``roll``).

        An empty active segment at that base is replaced (:meth:`create_and_delete_segment`, KAFKA-6388): its
        files are renamed ``.deleted``, the new segment is opened under their names and takes its place in the
        map, so the log is never without an active segment.
        Any other segment at that base is an error, as is a base below the active segment's.  Stale files of
        the new segment's names are deleted first, and the previous segment is trimmed.  The log end offset
        stays; its metadata moves to the new segment.
        """
        with self.maybe_handle_io_exception(
                lambda: f"Error while rolling log segment for {self.topic_partition} in dir {self._parent_dir}"):
            self.check_if_memory_mapped_buffer_closed()
            start = self.time.hi_res_milliseconds()
            new_offset = max(expected_next_offset if expected_next_offset is not None else 0, self.log_end_offset)
            active = self.segments.last_segment()
            if self.segments.contains(new_offset):
                if active is not None and active.base_offset == new_offset and active.size() == 0:
                    logger.warning("Trying to roll a new log segment with start offset %d =max(provided offset = "
                                   "%s, LEO = %d) while it already exists and is active with size 0. Size of "
                                   "time index: %d, size of offset index: %d.", new_offset,
                                   expected_next_offset, self.log_end_offset, active.time_index.entries,
                                   active.offset_index.entries)
                    segment = self.create_and_delete_segment(new_offset, active, async_delete=True,
                                                             reason=LogRoll(self))
                    return self._rolled(segment, start)
                raise KafkaLogError(
                    f"Trying to roll a new log segment for topic partition {self.topic_partition} with start "
                    f"offset {new_offset} =max(provided offset = {expected_next_offset}, LEO = "
                    f"{self.log_end_offset}) while it already exists. Existing segment is "
                    f"{self.segments.get(new_offset)}.")
            if active is not None and new_offset < active.base_offset:
                raise KafkaLogError(
                    f"Trying to roll a new log segment for topic partition {self.topic_partition} with start "
                    f"offset {new_offset} =max(provided offset = {expected_next_offset}, LEO = "
                    f"{self.log_end_offset}) lower than start offset of the active segment {active}")
            for path in (log_filename(self.dir, new_offset), index_filename(self.dir, new_offset),
                         time_index_filename(self.dir, new_offset), txn_index_filename(self.dir, new_offset)):
                if path.exists():
                    logger.warning("Newly rolled segment file %s already exists; deleting it first", path)
                    path.unlink()
            if active is not None:
                active.on_become_inactive_segment()
            return self._rolled(self.add_new_segment(new_offset), start)

    def _rolled(self, segment: LogSegment, start: float) -> LogSegment:
        # The next offset does not change; its segment and position do.
        self.update_log_end_offset(self.log_end_offset)
        logger.info("Rolled new log segment at offset %d in %d ms.", segment.base_offset,
                    self.time.hi_res_milliseconds() - start)
        return segment

    def read(self, start_offset: int, max_length: int, min_one_message: bool,
             max_offset_metadata: LogOffsetMetadata,
             end_offset_metadata: LogOffsetMetadata | None = None,
             include_aborted_txns: bool = False, *,
             aborted_source: Callable[[int, int], list[AbortedTxn]] | None = None) -> FetchDataInfo:
        """Up to ``max_length`` bytes of batches from the one holding ``start_offset``, none past
        ``max_offset_metadata`` (Kafka: ``read``).  ``end_offset_metadata`` is the log end as the caller found it
        before making its bound (by default, as it is now): the range check and the bound then see the same log
        end, even if an append came in between.  With ``include_aborted_txns`` the result carries the aborted
        transactions that overlap what it read (Kafka: ``addAbortedTransactions``; an empty read, an empty list):
        those of the segments' indexes, or ``aborted_source(start_offset, upper_bound_offset)``'s when given (a
        read-only log's, which has its transactions from what it found in place).

        Each segment from the one holding ``start_offset`` is read in turn until one returns something: the
        segments before the bound's whole, the bound's up to its position (when it has one), later ones not
        past the bound's offset.

        Runs in the log dir's handler (Kafka's ``maybeHandleIOException``): an offline log dir refuses it, and an
        I/O error takes the log dir offline.

        Raises:
            ~kafkalog.errors.OffsetOutOfRangeError: ``start_offset`` is past the log end offset, or before
                the first segment.
            ~kafkalog.errors.KafkaStorageError: the log dir is offline, or an I/O error took it offline.
        """
        with self.maybe_handle_io_exception(
                lambda: f"Exception while reading from {self.topic_partition} in dir {self._parent_dir}"):
            return self._read(start_offset, max_length, min_one_message, max_offset_metadata, end_offset_metadata,
                              include_aborted_txns, aborted_source)

    def _read(self, start_offset: int, max_length: int, min_one_message: bool,
              max_offset_metadata: LogOffsetMetadata, end_offset_metadata: LogOffsetMetadata | None,
              include_aborted_txns: bool,
              aborted_source: Callable[[int, int], list[AbortedTxn]] | None) -> FetchDataInfo:
        """What :meth:`read` does, in the log dir's handler."""
        next_offset_metadata = self.next_offset_metadata if end_offset_metadata is None else end_offset_metadata
        end_offset = next_offset_metadata.message_offset
        segment = self.segments.floor_segment(start_offset)
        if start_offset > end_offset or segment is None:
            raise OffsetOutOfRangeError(
                f"Received request for offset {start_offset} for partition {self.topic_partition}, but we only "
                f"have log segments upto {end_offset}.")
        no_txns: list[AbortedTxn] | None = [] if include_aborted_txns else None
        if start_offset == max_offset_metadata.message_offset:
            return FetchDataInfo(max_offset_metadata, EMPTY_RECORDS, aborted_transactions=no_txns)
        if start_offset > max_offset_metadata.message_offset:
            return FetchDataInfo(self.convert_to_offset_metadata_or_throw(start_offset), EMPTY_RECORDS,
                                 aborted_transactions=no_txns)
        while segment is not None:
            if segment.base_offset < max_offset_metadata.segment_base_offset:
                max_position: Any = segment.size()
            elif segment.base_offset == max_offset_metadata.segment_base_offset and \
                    not max_offset_metadata.message_offset_only:
                max_position = max_offset_metadata.relative_position_in_segment
            else:
                max_position = NO_MAX_POSITION
            fetch = segment.read(start_offset, max_length, max_position, min_one_message)
            if fetch is not None:
                return self._add_aborted_transactions(start_offset, segment, fetch, aborted_source) \
                    if include_aborted_txns else fetch
            segment = self.segments.higher_segment(segment.base_offset)
        # Past the last batch of the last segment, though in range: every later record was deleted.  (Kafka gives
        # this answer no aborted transactions even when asked for them.)
        return FetchDataInfo(next_offset_metadata, EMPTY_RECORDS)

    def _add_aborted_transactions(self, start_offset: int, segment: LogSegment, fetch: FetchDataInfo,
                                  aborted_source: Callable[[int, int], list[AbortedTxn]] | None = None
                                  ) -> FetchDataInfo:
        """``fetch`` with the aborted transactions that overlap it (Kafka: ``addAbortedTransactions``): up to the
        first offset the segment's index places past the bytes read, else the next segment's base, else the log
        end offset; searched from ``segment`` on, or asked of ``aborted_source``."""
        start_position = OffsetPosition(fetch.fetch_offset_metadata.message_offset,
                                        fetch.fetch_offset_metadata.relative_position_in_segment)
        upper = segment.fetch_upper_bound_offset(start_position, fetch.records.size_in_bytes())
        if upper is None:
            following = self.segments.higher_segment(segment.base_offset)
            upper = following.base_offset if following is not None else self.log_end_offset
        if aborted_source is not None:
            return fetch._replace(aborted_transactions=aborted_source(start_offset, upper))
        aborted: list[AbortedTxn] = []
        for current in [segment, *self.segments.higher_segments(segment.base_offset)]:
            result = current.collect_aborted_txns(start_offset, upper)
            aborted.extend(result.aborted_transactions)
            if result.is_complete:
                break
        return fetch._replace(aborted_transactions=aborted)

    def collect_aborted_transactions(self, log_start_offset: int, base_offset: int,
                                     upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions of the segments' transaction indexes, from the segment holding
        ``base_offset`` on, that overlap ``[log_start_offset, upper_bound_offset)`` (Kafka:
        ``collectAbortedTransactions(logStartOffset, baseOffset, upperBoundOffset)``).

        Each segment's index is searched in turn, stopping at the first whose search is complete (an entry's
        last stable offset reached the upper bound, so no later segment can hold an overlapping one).  As in
        Kafka, the search range starts at the log start offset, not at ``base_offset``, which only picks the
        first segment searched.
        """
        segment = self.segments.floor_segment(base_offset)
        aborted: list[AbortedTxn] = []
        if segment is None:
            return aborted
        for current in [segment, *self.segments.higher_segments(segment.base_offset)]:
            result = current.collect_aborted_txns(log_start_offset, upper_bound_offset)
            aborted.extend(result.aborted_transactions)
            if result.is_complete:
                break
        return aborted

    def convert_to_offset_metadata_or_throw(self, offset: int) -> LogOffsetMetadata:
        """Where ``offset`` is, as a one-byte :meth:`read` bounded by the log end offset finds it (Kafka:
        ``convertToOffsetMetadataOrThrow``)."""
        return self.read(offset, 1, False, self.next_offset_metadata).fetch_offset_metadata

    # -- truncation ---------------------------------------------------------------------------------

    def truncate_fully_and_start_at(self, new_offset: int) -> list[LogSegment]:
        """Delete every segment and start again, empty, at ``new_offset``; returns the segments deleted (Kafka:
        ``truncateFullyAndStartAt``).  All segments but the last go, then the new segment is added before the
        last old one leaves, so the log is never without an active segment.  A log with no segment (kafkalog's
        read-only open of an empty directory) just gets the new one."""
        with self.maybe_handle_io_exception(lambda: f"Error while truncating the entire log for "
                                                    f"{self.topic_partition} in dir {self._parent_dir}"):
            self.check_if_memory_mapped_buffer_closed()
            old = self.segments.values()
            if old:
                self.remove_and_delete_segments(old[:-1], async_delete=True, reason=LogTruncation(self))
                self.create_and_delete_segment(new_offset, old[-1], async_delete=True, reason=LogTruncation(self))
            else:
                self.add_new_segment(new_offset)
            self.update_log_end_offset(new_offset)
            return old

    def truncate_to(self, target_offset: int) -> list[LogSegment]:
        """Cut the log so it ends below ``target_offset``: later segments go, the active one is cut, the log end
        offset (with it the recovery point, never above it) moves back; returns the segments deleted (Kafka:
        ``truncateTo``)."""
        deletable = [s for s in self.segments.values() if s.base_offset > target_offset]
        self.remove_and_delete_segments(deletable, async_delete=True, reason=LogTruncation(self))
        active = self.segments.last_segment()
        assert active is not None  # the segment holding target_offset stays
        active.truncate_to(target_offset)
        self.update_log_end_offset(target_offset)
        return deletable

    # -- making and deleting segments ---------------------------------------------------------------

    def add_new_segment(self, base_offset: int) -> LogSegment:
        """A new, empty segment at ``base_offset``, in the map (loading, a roll, a truncation; Kafka opens it
        with ``LogSegment.open`` in each of those places).

        Raises:
            KafkaStorageError: its files cannot be created (Kafka: the ``IOException`` that
                ``maybeHandleIOException`` turns into a ``KafkaStorageException``), naming the file.
        """
        try:
            segment = LogSegment.open(self.dir, base_offset, self.config, self.time,
                                      init_file_size=self.config.init_file_size(), preallocate=self.config.preallocate)
        except OSError as e:
            if isinstance(e, KafkaLogError):
                raise
            raise storage_error(e, f"Error while creating segment {base_offset} of the log in {self.dir}") from e
        self.segments.add(segment)
        return segment

    def create_and_delete_segment(self, new_offset: int, old: LogSegment, async_delete: bool = True,
                                  reason: SegmentDeletionReason | None = None) -> LogSegment:
        """Add a new empty segment at ``new_offset``, then delete ``old`` (Kafka: ``createAndDeleteSegment``), so
        the log has an active segment at every moment.  When both have the same base offset the old files are
        renamed ``.deleted`` first, so the new ones can take their names, and the map entry is replaced in
        place; otherwise the old entry is removed after the new one is added.  Returns the new segment."""
        if new_offset == old.base_offset:
            old.change_file_suffixes("", DELETED_FILE_SUFFIX)
        segment = self.add_new_segment(new_offset)
        (reason if reason is not None else LogTruncation(self)).log_reason([old])
        if new_offset != old.base_offset:
            self.segments.remove(old.base_offset)
        self._delete_segment_files([old], async_delete)
        return segment

    def create_new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """A new, empty ``.cleaned`` segment (Kafka: ``LocalLog.createNewCleanedSegment``): stale files of that
        name go first."""
        for path in (log_filename(self.dir, base_offset, CLEANED_FILE_SUFFIX),
                     index_filename(self.dir, base_offset, CLEANED_FILE_SUFFIX),
                     time_index_filename(self.dir, base_offset, CLEANED_FILE_SUFFIX),
                     txn_index_filename(self.dir, base_offset, CLEANED_FILE_SUFFIX)):
            path.unlink(missing_ok=True)
        return LogSegment.open(self.dir, base_offset, self.config, self.time, file_already_exists=False,
                               init_file_size=self.config.init_file_size(), preallocate=self.config.preallocate,
                               file_suffix=CLEANED_FILE_SUFFIX)

    def remove_and_delete_segments(self, segments: list[LogSegment], async_delete: bool,
                                   reason: SegmentDeletionReason) -> None:
        """Take ``segments`` out of the map (so no read finds them), rename their files to ``.deleted`` and
        delete them, now or after ``file.delete.delay.ms`` (Kafka: ``removeAndDeleteSegments``; 0.10.1
        ``deleteSegment`` / ``asyncDeleteSegment``).  ``reason`` says in the log why, first."""
        to_delete = list(segments)
        if not to_delete:
            return
        reason.log_reason(to_delete)
        for segment in to_delete:
            self.segments.remove(segment.base_offset)
        self._delete_segment_files(to_delete, async_delete)

    def _delete_segment_files(self, segments: list[LogSegment], async_delete: bool) -> None:
        """:func:`delete_segment_files` for this log, remembering the asynchronous deletions so that closing
        the log deletes their files if the task has not run yet (:mod:`kafkalog.log.pending_deletions`)."""
        if not async_delete:
            delete_segment_files(segments, False, self.dir, self.topic_partition, self.config, self.scheduler,
                                 log_dir_failure_channel=self.log_dir_failure_channel)
            return
        for segment in segments:
            if not segment.has_suffix(DELETED_FILE_SUFFIX):
                segment.change_file_suffixes("", DELETED_FILE_SUFFIX)
        self._schedule_deletion(segments)

    def _schedule_deletion(self, segments: list[LogSegment]) -> None:
        """Delete ``segments`` (renamed ``.deleted``) after ``file.delete.delay.ms`` (Kafka's "delete-file"
        task), so readers still holding them finish first."""
        self.pending_deletions.add_segments(segments)

        def delete_files() -> None:
            def message() -> str:
                return f"Error while deleting segments for {self.topic_partition} in dir {self._parent_dir}"

            for segment in segments:
                with self._lock:
                    if segment not in self.pending_deletions:
                        continue  # the log was closed or deleted meanwhile and took care of it
                    # Refused while the segment is still pending when the log dir is offline, so that the log's
                    # close releases its files (Kafka's task fails the same way).
                    with self.maybe_handle_io_exception(message):
                        self.pending_deletions.take(segment)
                logger.info("Deleting segment files %s", segment)
                with self.maybe_handle_io_exception(message):
                    segment.delete()

        self.scheduler.schedule("delete-file", delete_files, delay_ms=self.config.file_delete_delay_ms)

    def release_pending_deletions(self, delete: bool) -> None:
        """The files still waiting for their deletion task: deleted now, raising the first failure (``delete``, as
        the log is deleted), or their files released and left ``.deleted`` for the next open to remove (as the
        log's files are let go without writing: :meth:`close_handlers`, a read-only log)."""
        if delete:
            self.pending_deletions.delete_all()
        else:
            self.pending_deletions.release()

    def split_overflowed_segment(self, segment: LogSegment) -> list[LogSegment]:
        """Split a segment whose offsets outgrew its 4-byte relative range into segments that each fit,
        and swap them in (Kafka: ``LocalLog.splitOverflowedSegment``, KAFKA-6264).

        Batches are copied into ``.cleaned`` segments, a new one starting at the base offset of the first
        batch that does not fit the previous one; the copies must add up to the original's size before
        :meth:`replace_segments` swaps them in.
        """
        if not segment.log.file.name.endswith(LOG_FILE_SUFFIX):
            raise IllegalArgumentError(f"Cannot split file {segment.log.file}")
        if not segment.has_overflow():
            raise IllegalArgumentError(f"Split operation is only permitted for segments with overflow: {segment}")
        source = segment.log
        new_segments: list[LogSegment] = []
        try:
            position = 0
            while position < source.size_in_bytes():
                first = next(iter(source.read(position, source.size_in_bytes() - position).batches()))
                new_segment = self.create_new_cleaned_segment(first.base_offset)
                new_segments.append(new_segment)
                appended = new_segment.append_from_file(source, position)
                if appended == 0:
                    raise KafkaLogError(f"Failed to append records from position {position} in {segment}")
                position += appended
            total = 0
            for new_segment in new_segments:
                new_segment.on_become_inactive_segment()
                new_segment.flush()
                new_segment.set_last_modified(int(segment.last_modified()))
                total += new_segment.size()
            if total != source.size_in_bytes():
                raise KafkaLogError(
                    f"Inconsistent segment sizes after split before: {source.size_in_bytes()} after: {total}")
        except BaseException:
            for new_segment in new_segments:
                new_segment.close_handlers()
                new_segment.delete()
            raise
        logger.info("Replacing overflowed segment %s with split segments %s", segment, new_segments)
        self.replace_segments(new_segments, [segment])
        return new_segments

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment],
                         is_recovered_swap_file: bool = False) -> None:
        """Swap ``new_segments`` (named ``.cleaned``) in for ``old_segments`` so a crash at any step leaves
        one set or the other (Kafka: ``LocalLog.replaceSegments``, spec §3.18).

        1. the new segments are renamed ``.cleaned`` -> ``.swap`` (highest base first) and put in the map;
        2. the old ones still in the map leave it (unless a new one took their base) and are renamed
           ``.deleted`` and deleted in the background;
        3. the ``.swap`` suffix is dropped and the directory fsynced.

        Loading completes a swap interrupted after step 1 (:class:`~kafkalog.log.loader.LogLoader`); a
        Ctrl-C during the swap is held until it is done.
        """
        with interrupts_deferred():
            new_sorted = sorted(new_segments, key=lambda s: s.base_offset)
            old_sorted = [s for s in sorted(old_segments, key=lambda s: s.base_offset)
                          if self.segments.get(s.base_offset) is s]
            for segment in reversed(new_sorted):
                if not is_recovered_swap_file:
                    segment.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
                self.segments.add(segment)
            new_bases = {s.base_offset for s in new_sorted}
            first_new = new_sorted[0].base_offset if new_sorted else None
            to_delete = []
            for segment in old_sorted:
                if segment.base_offset != first_new and segment.base_offset not in new_bases:
                    self.segments.remove(segment.base_offset)
                to_delete.append(segment)
            for segment in to_delete:
                segment.change_file_suffixes("", DELETED_FILE_SUFFIX)
            self._schedule_deletion(to_delete)
            for segment in new_sorted:
                segment.change_file_suffixes(SWAP_FILE_SUFFIX, "")
            fsync_dir(self.dir)

    # -- closing and deleting -----------------------------------------------------------------------

    def close(self) -> list[UndeletedFile]:
        """Close every segment (Kafka: ``close``), then delete the files waiting for their deletion task, and
        return those that could not be deleted (also in :attr:`undeleted_files`, each logged as a warning).

        Kafka's close leaves the waiting files alone, and its scheduler's shutdown drops the delayed tasks
        that would delete them: the broker's next start deletes them.  kafkalog's close finishes the deletions
        (its deliberate difference, :mod:`kafkalog.log.pending_deletions`): a command or a script that closes its
        log may not open it again, and the replaced segments would take the disk twice over until something
        does."""
        with self.maybe_handle_io_exception(
                lambda: f"Error while closing the log for {self.topic_partition} in dir {self._parent_dir}"):
            self.check_if_memory_mapped_buffer_closed()
            self.segments.close()
            self.undeleted_files = self.pending_deletions.finish(self.topic_partition)
            return self.undeleted_files

    def close_handlers(self) -> None:
        """Release the files without writing anything (Kafka: ``closeHandlers``, what is done to the logs of a log
        dir gone offline); no disk operation may follow."""
        try:
            self.segments.close_handlers()
            self.release_pending_deletions(delete=False)
        finally:
            self.is_memory_mapped_buffer_closed = True

    def delete_all_segments(self) -> list[LogSegment]:
        """Remove and delete every segment now, and release the log's files for good; returns the segments
        deleted (Kafka: ``deleteAllSegments``)."""
        with self.maybe_handle_io_exception(
                lambda: f"Error while deleting all segments for {self.topic_partition} in dir {self._parent_dir}"):
            deletable = self.segments.values()
            self.remove_and_delete_segments(deletable, async_delete=False, reason=LogDeletion(self))
            self.is_memory_mapped_buffer_closed = True
            return deletable

    def delete_empty_dir(self) -> None:
        """Delete the directory, once it has no segment and the log's files are released (Kafka:
        ``deleteEmptyDir``).

        Raises:
            IllegalStateError: when segments are left or the files are still open.
            KafkaStorageError: when the directory cannot be deleted (which takes the log dir offline).
        """
        with self.maybe_handle_io_exception(
                lambda: f"Error while deleting dir for {self.topic_partition} in dir {self._parent_dir}"):
            if not self.segments.is_empty():
                raise IllegalStateError(
                    f"Can not delete directory when {len(self.segments)} segments are still present")
            if not self.is_memory_mapped_buffer_closed:
                raise IllegalStateError(f"Can not delete directory when memory mapped buffer for log of "
                                        f"{self.topic_partition} is still open.")
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(self.dir)
