"""LocalLog's pieces that stand apart from the log object: why segments are deleted, and how their files go.

Port of the end of ``core/src/main/scala/kafka/log/LocalLog.scala`` (Apache Kafka, tag 3.8.0):
``SegmentDeletionReason`` with ``LogTruncation``, ``LogRoll`` and ``LogDeletion`` (and, as one class with a
sentence, ``RetentionMsBreach``, ``RetentionSizeBreach``, ``StartOffsetBreach`` and the loader's reasons), and
``LocalLog.deleteSegmentFiles``.  0.10.1.1's ``Log.scala`` had neither: it deleted with ``asyncDeleteSegment``
and said nothing of why.  Kafka keeps them beside ``LocalLog`` so that both the log and its loader
(:mod:`kafkalog.log_loader`) can delete segments with a reason; so does kafkalog.

On disk: a segment to delete first has its files renamed with the ``.deleted`` suffix (durable, so a crash
after it leaves files the next load removes), then the files are deleted, at once or after
``file.delete.delay.ms``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import LogConfig
from .filenames import DELETED_FILE_SUFFIX
from .scheduler import Scheduler
from .segment import LogSegment

if TYPE_CHECKING:
    from .log import Log

__all__ = ["LogDeletion", "LogRoll", "LogTruncation", "SegmentDeletionReason", "delete_segment_files"]

logger = logging.getLogger(__name__)


class SegmentDeletionReason:
    """Why segments are being deleted, said in the log before they go (Kafka: ``SegmentDeletionReason``)."""

    def __init__(self, log: Log) -> None:
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

    def __init__(self, log: Log, description: str) -> None:
        super().__init__(log)
        self.description = description

    def log_reason(self, to_delete: list[LogSegment]) -> None:
        logger.info("[%s] Deleting segments due to %s: %s", self.log.topic_partition, self.description,
                    ",".join(map(str, to_delete)))


def delete_segment_files(segments: list[LogSegment], async_delete: bool, dir: Path, topic_partition: Any,
                         config: LogConfig, scheduler: Scheduler, log_prefix: str = "") -> None:
    """Rename each segment's files to ``.deleted`` (unless they are already), then delete them: now, or after
    ``file.delete.delay.ms`` in a "delete-file" task (Kafka: ``LocalLog.deleteSegmentFiles``).

    The rename comes first so that a crash between the two steps leaves files that the next load deletes;
    the delay lets readers that still hold a segment finish with it.  Files already gone are not an error.
    """
    to_delete = list(segments)
    for segment in to_delete:
        if not segment.has_suffix(DELETED_FILE_SUFFIX):
            segment.change_file_suffixes("", DELETED_FILE_SUFFIX)

    def delete_segments() -> None:
        logger.info("%sDeleting segment files %s of %s in %s", log_prefix, ",".join(map(str, to_delete)),
                    topic_partition, dir)
        for segment in to_delete:
            segment.delete()

    if async_delete:
        scheduler.schedule("delete-file", delete_segments, delay_ms=config.file_delete_delay_ms)
    else:
        delete_segments()
