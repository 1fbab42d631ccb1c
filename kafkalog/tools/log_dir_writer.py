"""Appending to some partitions of a log dir without loading all of it.

A :class:`~kafkalog.manager.log_manager.LogManager` owns a whole log dir and opens every partition in it at
startup, as a broker does.  A batch job that appends to a few partitions (the Spark writer, a bulk
load) needs the same guarantees for just those partitions:

- **one owner**: the log dir's ``.lock`` is held exclusively for the whole write, so a running broker,
  a ``LogManager`` or another writer is refused with a clear message, never interleaved;
- **crash safety**: the ``.kafka_cleanshutdown`` marker is removed before the first byte is written
  (as ``LogManager`` removes it at startup), so a crash mid-write makes the next opener recover the
  partitions past their recovery points; when the write completes, every log is flushed, the
  recovery points are checkpointed at the log ends, and the marker is put back if it was there;
- **the broker's bookkeeping**: each log opens at its checkpointed recovery point and log start offset,
  and a partition that does not exist yet is created, as ``LogManager.getOrCreateLog`` does.

Usage::

    with LogDirWriter(root, LogConfig({"segment.bytes": "1048576"})) as writer:
        writer.log(TopicPartition("events", 0)).append(records)
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import TracebackType

from ..checkpoint import (
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    OffsetCheckpoint,
)
from ..config.log_config import LogConfig
from ..fsutil import DirLock, fsync_dir
from ..log import Log
from ..topic import TopicPartition

__all__ = ["LogDirWriter"]

logger = logging.getLogger(__name__)


class LogDirWriter:
    """Exclusive appends to partitions of the log dir ``root`` (created if missing), with ``config`` as
    the topic config of every log it opens."""

    def __init__(self, root: str | os.PathLike[str], config: LogConfig | None = None) -> None:
        self.root = Path(root)
        self.config = config if config is not None else LogConfig()
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock: DirLock | None = DirLock(self.root, holder="a LogDirWriter", admit_logs=False)
        self._logs: dict[TopicPartition, Log] = {}
        try:
            self._recovery_points = OffsetCheckpoint(self.root / RECOVERY_POINT_CHECKPOINT_FILE).read()
            self._log_start_offsets = OffsetCheckpoint(self.root / LOG_START_OFFSET_CHECKPOINT_FILE).read()
            self._had_clean_shutdown = self._lock.take_clean_shutdown_marker()
        except BaseException:
            self._release()
            raise

    def log(self, topic_partition: TopicPartition) -> Log:
        """The log of ``topic_partition``, opened (or created) at first use."""
        if self._lock is None:
            raise ValueError(f"the writer of {self.root} is closed")
        log = self._logs.get(topic_partition)
        if log is None:
            directory = self.root / str(topic_partition)
            existed = directory.is_dir()
            log = Log(directory, self.config, recovery_point=self._recovery_points.get(topic_partition, 0),
                      log_start_offset=self._log_start_offsets.get(topic_partition, 0),
                      had_clean_shutdown=self._had_clean_shutdown, topic_partition=topic_partition,
                      dir_lock=self._lock)
            if not existed:
                fsync_dir(self.root)
                logger.info("Created log for partition %s in %s", topic_partition, directory)
            self._logs[topic_partition] = log
        return log

    def close(self) -> None:
        """Flush every log, checkpoint recovery points and log start offsets, close the logs, restore the
        clean-shutdown marker if there was one, and release the lock."""
        if self._lock is None:
            return
        try:
            for tp, log in self._logs.items():
                log.flush(including_offset=True)  # as a broker's shutdown: the active segment too
                self._recovery_points[tp] = log.log_end_offset
                self._log_start_offsets[tp] = log.log_start_offset
            if self._logs:
                OffsetCheckpoint(self.root / RECOVERY_POINT_CHECKPOINT_FILE).write(self._recovery_points)
                OffsetCheckpoint(self.root / LOG_START_OFFSET_CHECKPOINT_FILE).write(self._log_start_offsets)
            for log in self._logs.values():
                log.close()
            self._logs.clear()
            self._lock.restore_clean_shutdown_marker()  # if there was one
        finally:
            self._release()

    def abandon(self) -> None:
        """Close without checkpointing (after a failed write): the logs are closed, the marker stays
        removed, so the next opener recovers what was written past the recovery points."""
        try:
            for log in self._logs.values():
                log.close()
            self._logs.clear()
        finally:
            self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> LogDirWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abandon()
