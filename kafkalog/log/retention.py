"""LogRetention: a log's retention pass - which of its oldest segments may go, and their deletion.

Port of the retention methods of ``core/src/main/scala/kafka/log/UnifiedLog.scala`` (Apache Kafka, tag
3.8.0): ``deleteOldSegments`` and the three checks it runs (``deleteLogStartOffsetBreachedSegments``,
``deleteRetentionSizeBreachedSegments``, ``deleteRetentionMsBreachedSegments``), ``deletableSegments`` and
``deleteSegments``; 0.10.1.1's ``Log.deleteOldSegments`` had the time and size checks.  The reasons Kafka
gives them (``RetentionMsBreach``, ``RetentionSizeBreach``, ``StartOffsetBreach``) are sentences of
:class:`~kafkalog.log.local_log._DescribedDeletion`.

A mixin of :class:`~kafkalog.log.unified_log.Log`: the methods are ``Log``'s own (``log.delete_old_segments()``), kept
in
their own file as Kafka keeps them together in ``UnifiedLog``; :class:`_RetainedLog` names what they use of
the log.  Invariants: a segment goes only when the high watermark is at or past its end (the next segment's
base, or the log end offset), only oldest-first while the check holds, and never the empty active segment;
the log start offset moves past the deleted segments before they leave the map, so a reader never finds
the start offset pointing into a deleted segment.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from ..config.log_config import LogConfig
from ..scheduler import Time
from ..segment import LogSegment
from .local_log import LocalLog, _DescribedDeletion
from .segments import LogSegments

__all__ = ["LogRetention"]

logger = logging.getLogger("kafkalog.log")  # the log's own logger, as these lines were the log's


class _RetainedLog(Protocol):
    """What the retention pass uses of its log (:class:`~kafkalog.log.unified_log.Log`)."""

    _lock: threading.RLock
    _closed: bool
    _log_start_offset: int
    time: Time
    segments: LogSegments
    local_log: LocalLog

    @property
    def config(self) -> LogConfig: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    def roll(self, expected_next_offset: int | None = None) -> LogSegment: ...
    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool: ...
    def _check_writable(self, what: str) -> None: ...
    def delete_log_start_offset_breached_segments(self) -> int: ...
    def delete_retention_size_breached_segments(self) -> int: ...
    def delete_retention_ms_breached_segments(self) -> int: ...
    def _delete_old_segments(self, predicate: Callable[[LogSegment, LogSegment | None], bool],
                             reason: str) -> int: ...
    def deletable_segments(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> list[LogSegment]: ...
    def delete_segments(self, deletable: list[LogSegment], reason: str) -> int: ...
    def _delete_producer_snapshots(self, segments: Iterable[LogSegment], async_delete: bool) -> None: ...


class LogRetention:
    """The retention methods of a log (Kafka: ``UnifiedLog.deleteOldSegments`` and the methods it calls)."""

    def delete_old_segments(self: _RetainedLog) -> int:
        """Apply retention: by log start offset always; by size and time when the cleanup policy includes
        ``delete`` (Kafka: ``deleteOldSegments``).  Returns the number of segments deleted; 0 for a closed or
        deleted log, which has none left to delete."""
        if self._closed:
            return 0
        self._check_writable("delete segments of")
        if self.config.delete:
            return (self.delete_log_start_offset_breached_segments()
                    + self.delete_retention_size_breached_segments()
                    + self.delete_retention_ms_breached_segments())
        return self.delete_log_start_offset_breached_segments()

    def delete_retention_ms_breached_segments(self: _RetainedLog) -> int:
        """Kafka: ``deleteRetentionMsBreachedSegments``: segments whose newest record is older than
        ``retention.ms``."""
        retention_ms = self.config.retention_ms
        if retention_ms < 0:
            return 0
        start_ms = self.time.milliseconds()
        return self._delete_old_segments(
            lambda segment, _next: start_ms - segment.largest_timestamp() > retention_ms,
            f"retention time {retention_ms}ms breach")

    def delete_retention_size_breached_segments(self: _RetainedLog) -> int:
        """Kafka: ``deleteRetentionSizeBreachedSegments``: oldest segments while the log exceeds
        ``retention.bytes`` by at least their size."""
        retention_size = self.config.retention_size
        size = self.size
        if retention_size < 0 or size < retention_size:
            return 0
        diff = size - retention_size

        def should_delete(segment: LogSegment, _next: LogSegment | None) -> bool:
            nonlocal diff
            if diff - segment.size() >= 0:
                diff -= segment.size()
                return True
            return False

        return self._delete_old_segments(should_delete, f"retention size in bytes {retention_size} breach")

    def delete_log_start_offset_breached_segments(self: _RetainedLog) -> int:
        """Kafka: ``deleteLogStartOffsetBreachedSegments``: segments wholly below the log start offset."""
        return self._delete_old_segments(
            lambda _segment, next_segment: next_segment is not None
            and next_segment.base_offset <= self._log_start_offset,
            f"log start offset {self._log_start_offset} breach")

    def _delete_old_segments(self: _RetainedLog, predicate: Callable[[LogSegment, LogSegment | None], bool],
                             reason: str) -> int:
        """Kafka: the private ``deleteOldSegments(predicate, reason)``: the deletable segments, deleted."""
        with self._lock:
            deletable = self.deletable_segments(predicate)
            if deletable:
                return self.delete_segments(deletable, reason)
            return 0

    def deletable_segments(self: _RetainedLog,
                           predicate: Callable[[LogSegment, LogSegment | None], bool]) -> list[LogSegment]:
        """Oldest segments, in order, while ``predicate`` holds, each wholly below the high watermark; never
        an empty last segment (Kafka: ``deletableSegments``)."""
        with self._lock:
            segments = self.segments.values()
            deletable = []
            high_watermark = self.high_watermark
            for i, segment in enumerate(segments):
                next_segment = segments[i + 1] if i + 1 < len(segments) else None
                upper_bound = next_segment.base_offset if next_segment is not None else self.log_end_offset
                last_and_empty = next_segment is None and segment.size() == 0
                if high_watermark >= upper_bound and predicate(segment, next_segment) and not last_and_empty:
                    deletable.append(segment)
                else:
                    break
            return deletable

    def delete_segments(self: _RetainedLog, deletable: list[LogSegment], reason: str) -> int:
        """Remove ``deletable`` from the log and delete their files after ``file.delete.delay.ms``, rolling
        first if they are all the log has (Kafka: ``deleteSegments``).  An I/O error takes the log dir offline, and
        a log dir offline refuses it, with a :class:`~kafkalog.errors.KafkaStorageError` (Kafka:
        ``maybeHandleIOException``)."""
        with self.local_log.maybe_handle_io_exception(
                lambda: f"Error while deleting segments for {self.local_log.topic_partition} in dir "
                        f"{self.local_log.parent_dir}"), self._lock:
            self._check_writable("delete segments of")
            count = len(deletable)
            if count == 0:
                return 0
            to_delete = list(deletable)
            if len(self.segments) == count:
                new_segment = self.roll()
                if to_delete[-1].base_offset == new_segment.base_offset:
                    logger.warning("Empty active segment at %d was deleted and recreated due to %s",
                                   to_delete[-1].base_offset, reason)
                    to_delete = to_delete[:-1]
            logger.info("Deleting segments due to %s: %s", reason, to_delete)
            if to_delete:
                # Kafka 3.x moves the log start offset first, so a reader never finds the segments gone
                # while the start offset still points into them.
                following = self.segments.higher_segment(to_delete[-1].base_offset)
                if following is not None:
                    self.maybe_increment_log_start_offset(following.base_offset)
                self.local_log.remove_and_delete_segments(to_delete, async_delete=True,
                                                          reason=_DescribedDeletion(self.local_log, reason))
            self._delete_producer_snapshots(deletable, async_delete=True)
            return count
