"""LogManager: every log of a broker's ``log.dirs``, their locks, checkpoints and background tasks.

Port of ``kafka/log/LogManager.scala`` (Kafka 0.10.1.1) with the modern behaviour (3.8.0) the spec marks
(§2.1, §2.9, §3.17): the clean-shutdown marker read and removed at startup, ``log-start-offset-checkpoint``,
deletion of a partition by renaming its directory ``<topic>-<partition>.<uuid>-delete`` and removing it
after ``file.delete.delay.ms``, new partitions placed in the directory holding the fewest.

A log directory (one entry of ``log.dirs``) holds one directory per partition plus broker files::

    .lock                              held (flock) by the process using the directory
    .kafka_cleanshutdown               present after a clean shutdown; removed at startup
    recovery-point-offset-checkpoint   per partition: the offset up to which it is flushed
    log-start-offset-checkpoint        per partition: the log start offset, when above the first segment
    cleaner-offset-checkpoint          (the cleaner's; issue 5)

Files the port does not manage (``replication-offset-checkpoint``, ``meta.properties``, KRaft files)
are never touched.  ``read_only=True`` opens a live or archived broker directory without taking its
lock or changing a byte.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ._common import INT64_MAX
from .checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    OffsetCheckpoint,
)
from .config import LogConfig
from .errors import KafkaLogError, KafkaStorageError, ReadOnlyError
from .fsutil import DirLock, fsync_dir, raise_open_file_limit
from .log import Log
from .scheduler import SYSTEM_TIME, KafkaScheduler, Scheduler, Time
from .topic import (
    CLUSTER_METADATA_TOPIC_NAME,
    InvalidPartitionDirError,
    TopicPartition,
    log_delete_dir_name,
    parse_topic_partition_name,
    validate_topic,
)

__all__ = ["LogManager"]

logger = logging.getLogger(__name__)

#: Kafka's ``InitialTaskDelayMs``: background tasks start this long after startup.
INITIAL_TASK_DELAY_MS = 30 * 1000
#: Suffix of a partition directory renamed for deletion (Kafka: ``DeleteDirSuffix``).
DELETE_DIR_SUFFIX = "-delete"
#: The directory tiered storage keeps its index cache in, in a log dir (Kafka: ``RemoteIndexCache.DIR_NAME``).
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"


class LogManager:
    """The logs of one or more log directories (Kafka: ``LogManager``).

    ``LogManager(log_dirs)`` locks and loads every directory; :meth:`startup` starts the background
    tasks (retention, flushing, checkpoints, deferred deletes) on the scheduler; :meth:`shutdown` flushes,
    closes, checkpoints and leaves the clean-shutdown marker.  Use it as a context manager to do both.
    """

    def __init__(self, log_dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 default_config: LogConfig | None = None,
                 topic_configs: Mapping[str, LogConfig | Mapping[str, Any]] | None = None,
                 cleaner_config: Any = None, *, recovery_threads_per_data_dir: int = 1,
                 flush_check_ms: int = INT64_MAX, flush_recovery_offset_checkpoint_ms: int = 60000,
                 flush_start_offset_checkpoint_ms: int = 60000, retention_check_ms: int = 300000,
                 scheduler: Scheduler | None = None, time: Time | None = None,
                 read_only: bool = False) -> None:
        if isinstance(log_dirs, str | os.PathLike):
            log_dirs = [log_dirs]
        self.default_config = default_config if default_config is not None else LogConfig()
        self.topic_configs: dict[str, LogConfig] = {
            topic: self._topic_config(topic, config) for topic, config in (topic_configs or {}).items()}
        self.cleaner_config = cleaner_config
        self.recovery_threads_per_data_dir = max(1, recovery_threads_per_data_dir)
        self.flush_check_ms = flush_check_ms
        self.flush_recovery_offset_checkpoint_ms = flush_recovery_offset_checkpoint_ms
        self.flush_start_offset_checkpoint_ms = flush_start_offset_checkpoint_ms
        self.retention_check_ms = retention_check_ms
        self.time = time if time is not None else SYSTEM_TIME
        self.read_only = read_only
        self._owns_scheduler = scheduler is None
        self.scheduler = scheduler if scheduler is not None else KafkaScheduler(1, "kafka-scheduler-")
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, Log] = {}
        self._logs_to_be_deleted: list[tuple[Log, int]] = []
        self._dir_locks: list[DirLock] = []
        self._started = False
        self._shut_down = False
        # The tasks this manager put on the scheduler: cancelled at shutdown, as a scheduler the caller owns
        # keeps running and must not write checkpoints into directories this manager no longer locks.
        self._tasks: list[Any] = []
        #: The log cleaner (:class:`~kafkalog.cleaner.LogCleaner`) when ``cleaner_config`` enables it
        #: (``log.cleaner.enable``), else ``None``; its threads start with :meth:`startup`.
        self.cleaner: Any = None
        raise_open_file_limit()
        self.log_dirs = self._create_and_validate_log_dirs([Path(d) for d in log_dirs])
        if not read_only:
            self._lock_log_dirs()
        try:
            self._load_logs()
        except BaseException:
            for log in self._logs.values():
                log.close_handlers()
            self._unlock_log_dirs()
            raise
        if cleaner_config is not None and getattr(cleaner_config, "enable_cleaner", False) and not read_only:
            from .cleaner import LogCleaner

            self.cleaner = LogCleaner(cleaner_config, list(self.log_dirs), self.logs_by_topic_partition,
                                      time=self.time)

    def _topic_config(self, topic: str, config: LogConfig | Mapping[str, Any]) -> LogConfig:
        validate_topic(topic)
        if isinstance(config, LogConfig):
            return config
        return LogConfig.from_props(self.default_config.to_props(), config)

    def config_for(self, topic: str) -> LogConfig:
        """The configuration of ``topic``: its overrides on the defaults."""
        return self.topic_configs.get(topic, self.default_config)

    # -- directories ---------------------------------------------------------------------------------

    def _create_and_validate_log_dirs(self, dirs: list[Path]) -> list[Path]:
        """Kafka: ``createAndValidateLogDirs``: distinct, existing (created if missing), readable."""
        canonical = [d.resolve() for d in dirs]
        seen = set()
        for d in canonical:
            if d in seen:
                raise KafkaStorageError(f"Duplicate log directory found: {', '.join(map(str, canonical))}")
            seen.add(d)
        for d in canonical:
            if not d.exists():
                if self.read_only:
                    raise KafkaStorageError(f"Log directory {d} does not exist")
                logger.info("Log directory %s not found, creating it.", d)
                try:
                    d.mkdir(parents=True)
                except OSError as e:
                    raise KafkaStorageError(f"Failed to create data directory {d}: {e}") from e
            if not d.is_dir() or not os.access(d, os.R_OK):
                raise KafkaStorageError(f"{d} is not a readable log directory.")
        return canonical

    def _lock_log_dirs(self) -> None:
        """Take ``.lock`` in every directory (Kafka: ``lockLogDirs``); a second process gets a clear error."""
        for d in self.log_dirs:
            try:
                self._dir_locks.append(DirLock(d))
            except KafkaStorageError:
                self._unlock_log_dirs()
                raise

    def _unlock_log_dirs(self) -> None:
        for lock in self._dir_locks:
            lock.release()
        self._dir_locks.clear()

    # -- loading -------------------------------------------------------------------------------------

    def _load_logs(self) -> None:
        """Load every partition of every directory, ``recovery_threads_per_data_dir`` at a time per
        directory (Kafka: ``loadLogs``)."""
        for d in self.log_dirs:
            marker = d / CLEAN_SHUTDOWN_FILE
            had_clean_shutdown = marker.exists()
            if had_clean_shutdown and not self.read_only:
                # Kafka removes the marker before loading: a crash from here on is an unclean shutdown.
                marker.unlink()
            recovery_points = self._read_checkpoint(d / RECOVERY_POINT_CHECKPOINT_FILE)
            log_start_offsets = self._read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT_FILE)
            partition_dirs = []
            for entry in sorted(d.iterdir()):
                if not entry.is_dir() or entry.name == REMOTE_INDEX_CACHE_DIR:
                    continue
                try:
                    tp = parse_topic_partition_name(entry.name)
                except InvalidPartitionDirError as e:
                    logger.warning("Skipping %s, which is not a partition directory: %s", entry, e)
                    continue
                if tp.topic == CLUSTER_METADATA_TOPIC_NAME:
                    # Kafka 3.x: the KRaft metadata log belongs to the Raft layer, never to the LogManager.
                    continue
                partition_dirs.append((entry, tp))
            with concurrent.futures.ThreadPoolExecutor(self.recovery_threads_per_data_dir,
                                                       thread_name_prefix="log-recovery-") as pool:
                jobs = [pool.submit(self._load_log, entry, tp, had_clean_shutdown, recovery_points,
                                    log_start_offsets) for entry, tp in partition_dirs]
                errors = []
                for job in jobs:
                    try:
                        job.result()
                    except BaseException as e:
                        errors.append(e)
                if errors:
                    raise errors[0]
            logger.info("Loaded %d logs from %s", len(partition_dirs), d)

    def _read_checkpoint(self, path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpoint(path, read_only=True).read()
        except KafkaLogError as e:
            logger.warning("Error occurred while reading %s, resetting it: %s", path, e)
            return {}

    def _load_log(self, log_dir: Path, tp: TopicPartition, had_clean_shutdown: bool,
                  recovery_points: dict[TopicPartition, int], log_start_offsets: dict[TopicPartition, int]) -> None:
        """Kafka: ``loadLog``."""
        log = Log(log_dir, self.config_for(tp.topic), log_start_offset=log_start_offsets.get(tp, 0),
                  recovery_point=recovery_points.get(tp, 0), scheduler=self.scheduler, time=self.time,
                  read_only=self.read_only, had_clean_shutdown=had_clean_shutdown, topic_partition=tp)
        with self._lock:
            if log_dir.name.endswith(DELETE_DIR_SUFFIX):
                self._logs_to_be_deleted.append((log, self.time.milliseconds()))
                return
            previous = self._logs.get(tp)
            if previous is not None:
                log.close_handlers()
                raise KafkaStorageError(
                    f"Duplicate log directories found: {log.dir}, {previous.dir}!")
            self._logs[tp] = log

    # -- background tasks ----------------------------------------------------------------------------

    def startup(self) -> None:
        """Start the background tasks (Kafka: ``startup``)."""
        if self.read_only:
            return
        with self._lock:
            if self._started:
                return
            self._started = True
        if self._owns_scheduler and not self.scheduler.is_started:
            self.scheduler.startup()
        logger.info("Starting log cleanup with a period of %d ms.", self.retention_check_ms)
        self._schedule("kafka-log-retention", self.cleanup_logs, INITIAL_TASK_DELAY_MS, self.retention_check_ms)
        logger.info("Starting log flusher with a default period of %d ms.", self.flush_check_ms)
        self._schedule("kafka-log-flusher", self.flush_dirty_logs, INITIAL_TASK_DELAY_MS, self.flush_check_ms)
        self._schedule("kafka-recovery-point-checkpoint", self.checkpoint_recovery_point_offsets,
                       INITIAL_TASK_DELAY_MS, self.flush_recovery_offset_checkpoint_ms)
        self._schedule("kafka-log-start-offset-checkpoint", self.checkpoint_log_start_offsets,
                       INITIAL_TASK_DELAY_MS, self.flush_start_offset_checkpoint_ms)
        self._schedule("kafka-delete-logs", self.delete_logs, INITIAL_TASK_DELAY_MS)
        if self.cleaner is not None:
            self.cleaner.startup()

    def _schedule(self, name: str, fun: Any, delay_ms: int, period_ms: int = -1) -> None:
        task = self.scheduler.schedule(name, fun, delay_ms=delay_ms, period_ms=period_ms)
        with self._lock:
            self._tasks = [t for t in self._tasks if not getattr(t, "done", lambda: False)()]
            self._tasks.append(task)

    def shutdown(self) -> None:
        """Flush and close every log, write the checkpoints and the clean-shutdown marker, release the
        locks (Kafka: ``shutdown``).  Calling it twice is harmless."""
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
        logger.info("Shutting down.")
        try:
            with self._lock:
                tasks, self._tasks = self._tasks, []
            for task in tasks:
                cancel = getattr(task, "cancel", None)
                if cancel is not None:
                    cancel()
            if self.cleaner is not None:
                self.cleaner.shutdown()
            if self._owns_scheduler and self.scheduler.is_started:
                self.scheduler.shutdown()
            if self.read_only:
                for log in self.all_logs():
                    log.close()
                for log, _ in self._logs_to_be_deleted:
                    log.close()
                return
            for d in self.log_dirs:
                logs = self.logs_by_dir().get(d, {})
                for log in logs.values():
                    # Kafka 3.x flushes the active segment too (flush(true)): see Log.flush.
                    log.flush(including_offset=True)
                    log.close()
                self._checkpoint_recovery_offsets_in_dir(d)
                self._checkpoint_log_start_offsets_in_dir(d)
                for log, _ in self._logs_to_be_deleted:
                    if log.dir.parent == d:
                        log.close()
                (d / CLEAN_SHUTDOWN_FILE).touch()
                fsync_dir(d)
        finally:
            self._unlock_log_dirs()
        logger.info("Shutdown complete.")

    def __enter__(self) -> LogManager:
        self.startup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def cleanup_logs(self) -> int:
        """Apply retention (Kafka: ``cleanupLogs``); returns the number of segments deleted.

        With a cleaner, as in Kafka 3.8: the compacted logs (``compact,delete`` included) get their retention
        from the cleaner threads, after cleaning; the others are paused for the cleaner while retention works
        on them (should their policy turn to ``compact`` meanwhile) and resumed after.  Without a cleaner,
        kafkalog applies retention to every log whose policy includes ``delete``: Kafka's filter (not
        compacted) would leave a ``compact,delete`` log without any retention, which no broker shows, since a
        broker's cleaner would apply it.
        """
        total = 0
        start = self.time.milliseconds()
        if self.cleaner is not None:
            deletable = self.cleaner.cleaner_manager.pause_cleaning_for_non_compacted_partitions()
        else:
            deletable = [(tp, log) for tp, log in list(self._logs.items()) if log.config.delete]
        try:
            for tp, log in deletable:
                try:
                    total += log.delete_old_segments()
                except KafkaLogError as e:
                    logger.error("Retention of %s failed: %s", tp, e)
        finally:
            if self.cleaner is not None:
                self.cleaner.resume_cleaning([tp for tp, _log in deletable])
        logger.debug("Log cleanup completed. %d files deleted in %d ms", total,
                     self.time.milliseconds() - start)
        return total

    def cleanup_expired_segments(self, log: Log) -> int:
        """Time retention of one log (Kafka 0.10.0: ``cleanupExpiredSegments``; from 0.10.1 a part of
        ``Log.deleteOldSegments``)."""
        return log.delete_retention_ms_breached_segments()

    def cleanup_segments_to_maintain_size(self, log: Log) -> int:
        """Size retention of one log (Kafka 0.10.0: ``cleanupSegmentsToMaintainSize``; from 0.10.1 a part of
        ``Log.deleteOldSegments``)."""
        return log.delete_retention_size_breached_segments()

    def flush_dirty_logs(self) -> None:
        """Flush every log that has not been flushed for ``flush.ms`` (Kafka: ``flushDirtyLogs``)."""
        for tp, log in list(self._logs.items()):
            try:
                since = self.time.milliseconds() - log.last_flush_time
                if since >= log.config.flush_ms:
                    log.flush()
            except KafkaLogError as e:
                logger.error("Error flushing topic %s: %s", tp.topic, e)

    def checkpoint_recovery_point_offsets(self) -> None:
        """Write every directory's ``recovery-point-offset-checkpoint`` (Kafka: ``checkpointRecoveryPointOffsets``)."""
        for d in self.log_dirs:
            self._checkpoint_recovery_offsets_in_dir(d)

    checkpoint_log_recovery_offsets = checkpoint_recovery_point_offsets

    def checkpoint_logs_in_dir(self, d: Path) -> None:
        """Kafka 0.10.1: ``checkpointLogsInDir``."""
        self._checkpoint_recovery_offsets_in_dir(d)

    def _checkpoint_recovery_offsets_in_dir(self, d: Path) -> None:
        if self.read_only:
            return
        logs = self.logs_by_dir().get(d, {})
        OffsetCheckpoint(d / RECOVERY_POINT_CHECKPOINT_FILE).write(
            {tp: log.recovery_point for tp, log in logs.items()})

    def checkpoint_log_start_offsets(self) -> None:
        """Write every directory's ``log-start-offset-checkpoint`` (Kafka: ``checkpointLogStartOffsets``):
        only logs whose start offset is above their first segment's base are listed."""
        for d in self.log_dirs:
            self._checkpoint_log_start_offsets_in_dir(d)

    def _checkpoint_log_start_offsets_in_dir(self, d: Path) -> None:
        if self.read_only:
            return
        entries = {}
        for tp, log in self.logs_by_dir().get(d, {}).items():
            first = log.segments.first_segment_base_offset()
            if first is not None and log.log_start_offset > first:
                entries[tp] = log.log_start_offset
        OffsetCheckpoint(d / LOG_START_OFFSET_CHECKPOINT_FILE).write(entries)

    def delete_logs(self) -> None:
        """Delete the directories of logs removed at least ``file.delete.delay.ms`` ago (Kafka: ``deleteLogs``)."""
        now = self.time.milliseconds()
        with self._lock:
            due = [(log, at) for log, at in self._logs_to_be_deleted if now - at >= log.config.file_delete_delay_ms]
            self._logs_to_be_deleted = [item for item in self._logs_to_be_deleted if item not in due]
        for log, _ in due:
            logger.info("Deleting log %s", log.dir)
            log.close_handlers()
            shutil.rmtree(log.dir, ignore_errors=True)
        if self._logs_to_be_deleted and not self._shut_down:
            self._schedule("kafka-delete-logs", self.delete_logs,
                           min(log.config.file_delete_delay_ms for log, _ in self._logs_to_be_deleted))

    # -- the logs ------------------------------------------------------------------------------------

    def get_log(self, topic_partition: TopicPartition) -> Log | None:
        """Kafka: ``getLog``."""
        return self._logs.get(topic_partition)

    def create_log(self, topic_partition: TopicPartition, config: LogConfig | None = None) -> Log:
        """The log of ``topic_partition``, created in the directory holding the fewest logs if it does not
        exist (Kafka: ``createLog`` / ``getOrCreateLog``)."""
        if self.read_only:
            raise ReadOnlyError(f"Cannot create log {topic_partition}: the log manager is read-only")
        validate_topic(topic_partition.topic)
        if topic_partition.partition < 0:
            raise KafkaLogError(f"Invalid partition {topic_partition.partition} for topic {topic_partition.topic}")
        with self._lock:
            existing = self._logs.get(topic_partition)
            if existing is not None:
                return existing
            directory = self.next_log_dir() / str(topic_partition)
            log = Log(directory, config if config is not None else self.config_for(topic_partition.topic),
                      scheduler=self.scheduler, time=self.time, had_clean_shutdown=True,
                      topic_partition=topic_partition)
            self._logs[topic_partition] = log
            logger.info("Created log for partition %s in %s with properties %s.", topic_partition,
                        directory.parent, log.config.overridden_configs_as_loggable_string())
            return log

    get_or_create_log = create_log

    def next_log_dir(self) -> Path:
        """The directory holding the fewest logs (Kafka: ``nextLogDir``)."""
        if len(self.log_dirs) == 1:
            return self.log_dirs[0]
        counts = {d: 0 for d in self.log_dirs}
        for log in self._logs.values():
            counts[log.dir.parent] = counts.get(log.dir.parent, 0) + 1
        return min(self.log_dirs, key=lambda d: counts[d])

    def delete_log(self, topic_partition: TopicPartition) -> Log | None:
        """Remove a partition: its directory is renamed ``<topic>-<partition>.<uuid>-delete`` now and deleted
        after ``file.delete.delay.ms`` (Kafka: ``asyncDelete`` / 0.10.1 ``deleteLog``)."""
        if self.read_only:
            raise ReadOnlyError(f"Cannot delete log {topic_partition}: the log manager is read-only")
        with self._lock:
            log = self._logs.pop(topic_partition, None)
            if log is None:
                return None
            if self.cleaner is not None:
                self.cleaner.abort_cleaning(topic_partition)
                self.cleaner.cleaner_manager.update_checkpoints(log.dir.parent, partition_to_remove=topic_partition)
            log.close()
            # Kafka's logDeleteDirName: the topic is shortened so the name fits 255 characters.
            target = log.dir.with_name(log_delete_dir_name(topic_partition))
            os.replace(log.dir, target)
            log.dir = target
            log.segments.update_parent_dir(target)
            self._logs_to_be_deleted.append((log, self.time.milliseconds()))
            self._checkpoint_recovery_offsets_in_dir(target.parent)
            self._checkpoint_log_start_offsets_in_dir(target.parent)
            logger.info("Log for partition %s is renamed to %s and is scheduled for deletion", topic_partition,
                        target)
        if self._started and not self._shut_down:
            self._schedule("kafka-delete-logs", self.delete_logs, log.config.file_delete_delay_ms)
        return log

    def truncate_to(self, partition_offsets: Mapping[TopicPartition, int]) -> None:
        """Truncate several logs, then checkpoint their recovery points (Kafka: ``truncateTo``)."""
        for tp, offset in partition_offsets.items():
            log = self._logs.get(tp)
            if log is None:
                continue
            # Decided before the truncation moves the active segment: cleaning past the truncation point
            # must stop, and its checkpoint must not stay beyond the new log end.
            stop_cleaner = self.cleaner is not None and offset < log.active_segment.base_offset
            if stop_cleaner:
                self.cleaner.abort_and_pause_cleaning(tp)
            try:
                log.truncate_to(offset)
                if stop_cleaner:
                    self.cleaner.maybe_truncate_checkpoint(log.dir.parent, tp, log.active_segment.base_offset)
            finally:
                if stop_cleaner:
                    self.cleaner.resume_cleaning([tp])
        self.checkpoint_recovery_point_offsets()

    def truncate_fully_and_start_at(self, topic_partition: TopicPartition, new_offset: int) -> None:
        """Kafka: ``truncateFullyAndStartAt``."""
        log = self._logs.get(topic_partition)
        if log is None:
            return
        if self.cleaner is not None:
            self.cleaner.abort_and_pause_cleaning(topic_partition)
        try:
            log.truncate_fully_and_start_at(new_offset)
            if self.cleaner is not None:
                self.cleaner.maybe_truncate_checkpoint(log.dir.parent, topic_partition, log.active_segment.base_offset)
        finally:
            if self.cleaner is not None:
                self.cleaner.resume_cleaning([topic_partition])
        self.checkpoint_recovery_point_offsets()

    def all_logs(self) -> list[Log]:
        """Kafka: ``allLogs``."""
        return list(self._logs.values())

    def logs_by_topic_partition(self) -> dict[TopicPartition, Log]:
        """Kafka: ``logsByTopicPartition``."""
        return dict(self._logs)

    def logs_by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        """The logs of each directory (Kafka: ``logsByDir``)."""
        by_dir: dict[Path, dict[TopicPartition, Log]] = {}
        for tp, log in self._logs.items():
            by_dir.setdefault(log.dir.parent, {})[tp] = log
        return by_dir

    def __repr__(self) -> str:
        return f"LogManager(log_dirs={[str(d) for d in self.log_dirs]}, logs={len(self._logs)})"

