"""The LogCleaner and its cleaner threads: the broker's side of log compaction.

Port of ``kafka/log/LogCleaner.scala`` (Kafka 0.10.1.1; 3.8.0 for modern behaviour, spec §4): the
``LogCleaner`` class that owns the cleaner threads, the :class:`~kafkalog.cleaner.manager.LogCleanerManager`
that picks their logs, the shared :class:`~kafkalog.cleaner.throttler.Throttler`, and the ``CleanerThread``
inner class; each thread takes the filthiest log and hands it to its
:class:`~kafkalog.cleaner.cleaner.Cleaner` (the same Scala file's ``Cleaner`` class, a module of its own here).
:func:`compact` runs one such thread once on a single log (kafkalog's: a broker cleans only from its
threads).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time as _time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from .._common import INT32_MAX
from ..errors import IllegalArgumentError, IllegalStateError, KafkaStorageError
from ..log import Log
from ..log_dir_failure_channel import LogDirFailureChannel, io_failure
from ..scheduler import SYSTEM_TIME, Time
from ..topic import TopicPartition
from .cleaner import Cleaner
from .config import CleanerConfig
from .manager import LogCleanerManager, LogCleaningAbortedError, LogCleaningError, LogsSource, LogToClean, PreCleanStats
from .offset_map import SkimpyOffsetMap
from .stats import CleanerStats
from .throttler import Throttler

__all__ = ["CleanerThread", "LogCleaner", "compact"]

logger = logging.getLogger("kafkalog.cleaner")


class CleanerThread(threading.Thread):
    """One cleaner thread (Kafka: ``CleanerThread``): cleans the filthiest log, then applies retention to
    compacted logs, and backs off when there is nothing to clean."""

    def __init__(self, thread_id: int, log_cleaner: LogCleaner) -> None:
        super().__init__(name=f"kafka-log-cleaner-thread-{thread_id}", daemon=True)
        self.thread_id = thread_id
        self.log_cleaner = log_cleaner
        config = log_cleaner.config
        self.cleaner = Cleaner(
            thread_id,
            SkimpyOffsetMap(min(config.dedupe_buffer_size // max(config.num_threads, 1), INT32_MAX),
                            config.hash_algorithm),
            config.io_buffer_size // max(config.num_threads, 1) // 2,
            config.max_message_size,
            config.dedupe_buffer_load_factor,
            log_cleaner.throttler,
            log_cleaner.time,
            self._check_done)
        #: The statistics of the thread's last cleaning round (Kafka: ``lastStats``; ``None`` before the first,
        #: where Kafka has an empty ``CleanerStats``).
        self.last_stats: CleanerStats | None = None
        #: What the last grab that found a log to clean saw of the logs (Kafka: ``lastPreCleanStats``).
        self.last_pre_clean_stats = PreCleanStats()
        #: The partitions this thread may clean (``None``: all), for :meth:`LogCleaner.run_once` on one topic.
        self.only: Collection[TopicPartition] | None = None
        self._shutdown = threading.Event()
        self._shutdown_complete = threading.Event()

    def _check_done(self, topic_partition: TopicPartition) -> None:
        if self._shutdown.is_set():
            raise LogCleaningAbortedError("The cleaner is shutting down")
        self.log_cleaner.cleaner_manager.check_cleaning_aborted(topic_partition)

    def initiate_shutdown(self) -> None:
        self._shutdown.set()

    @property
    def is_running(self) -> bool:
        """Kafka: ``ShutdownableThread.isRunning``: no shutdown was asked for."""
        return not self._shutdown.is_set()

    @property
    def is_thread_failed(self) -> bool:
        """The thread ended without being asked to: an unexpected error stopped it (Kafka:
        ``ShutdownableThread.isThreadFailed``, ``isShutdownComplete && !isShutdownInitiated``)."""
        return self._shutdown_complete.is_set() and not self._shutdown.is_set()

    def run(self) -> None:
        """Kafka's ``ShutdownableThread.run`` around ``CleanerThread.doWork``: until shut down, clean the filthiest
        log (a log that fails is marked uncleanable), back off when there was nothing to clean, and forget
        uncleanable partitions that are gone.  Any other error ends the thread, logged when no shutdown was
        asked for, and the thread counts as failed (:attr:`is_thread_failed`, :attr:`LogCleaner.dead_thread_count`)."""
        logger.info("[%s]: Starting", self.name)
        try:
            while self.is_running:
                self.do_work()
        except Exception:
            if self.is_running:
                logger.exception("[%s]: Error due to", self.name)
        finally:
            self._shutdown_complete.set()
        logger.info("[%s]: Stopped", self.name)

    def do_work(self) -> None:
        """One turn of the loop (Kafka 3.8: ``doWork``)."""
        cleaned = self.try_clean_filthiest_log()
        if not cleaned:
            self._shutdown.wait(self.log_cleaner.config.backoff_ms / 1000.0)
        self.log_cleaner.cleaner_manager.maintain_uncleanable_partitions()

    def try_clean_filthiest_log(self) -> bool:
        """Kafka: ``tryCleanFilthiestLog``."""
        try:
            return self.clean_filthiest_log()
        except LogCleaningError as e:
            logger.warning("[%s]: Unexpected exception thrown when cleaning log %s. Marking its partition (%s) as "
                           "uncleanable", self.name, e.log, e.log.topic_partition, exc_info=True)
            self.log_cleaner.cleaner_manager.mark_partition_uncleanable(e.log.dir.parent, e.log.topic_partition)
            return False

    def clean_filthiest_log(self) -> bool:
        """Clean the dirtiest compacted log, then run retention on compacted logs; ``True`` when something was
        cleaned (Kafka: ``cleanFilthiestLog``, 0.10.1 ``cleanOrSleep``).

        As Kafka 3.8: any failure of either step is a :class:`LogCleaningError` naming the log (whose partition
        :meth:`try_clean_filthiest_log` then marks uncleanable), and every log taken for retention is handed
        back, even when one of them fails.
        """
        manager = self.log_cleaner.cleaner_manager
        pre_clean_stats = PreCleanStats()
        cleanable = manager.grab_filthiest_compacted_log(self.log_cleaner.time, pre_clean_stats, only=self.only)
        cleaned = False
        if cleanable is not None:
            self.last_pre_clean_stats = pre_clean_stats
            try:
                self.clean_log(cleanable)
            except LogCleaningError:
                raise
            except Exception as e:
                raise LogCleaningError(cleanable.log, str(e), e) from e
            cleaned = True
        deletable = manager.deletable_logs(only=self.only)
        try:
            for _tp, log in deletable:
                try:
                    log.delete_old_segments()
                except Exception as e:
                    raise LogCleaningError(log, str(e), e) from e
        finally:
            manager.done_deleting([tp for tp, _log in deletable])
        return cleaned

    cleanOrSleep = clean_filthiest_log

    def clean_log(self, cleanable: LogToClean) -> None:
        """Kafka: ``cleanLog``."""
        manager = self.log_cleaner.cleaner_manager
        start_offset = cleanable.first_dirty_offset
        end_offset = start_offset
        try:
            end_offset, stats = self.cleaner.clean(cleanable)
            self.last_stats = stats
            logger.info("[%s]: %s", self.name, stats.summary(self.thread_id, cleanable.log.name, start_offset,
                                                          end_offset))
            if stats.invalid_messages_read > 0:
                logger.warning("\tFound %d invalid messages during compaction.", stats.invalid_messages_read)
        except LogCleaningAbortedError:
            pass  # the log was truncated, deleted or the cleaner stopped: nothing to record
        except OSError as e:
            if io_failure(e) is not None:
                log_directory = cleanable.log.local_log.parent_dir
                self.log_cleaner.log_dir_failure_channel.maybe_add_offline_log_dir(
                    log_directory, f"Failed to clean up log for {cleanable.topic_partition} in dir {log_directory} "
                                   "due to IOException", e)
            elif not isinstance(e, KafkaStorageError):
                raise
            # else the partition is offline already: let it go
        finally:
            # Any other failure goes up to clean_filthiest_log, which names the log in a LogCleaningError.
            manager.done_cleaning(cleanable.topic_partition, cleanable.log.dir.parent, end_offset)


class LogCleaner:
    """The cleaner of a LogManager's compacted logs (Kafka: ``LogCleaner``): ``log.cleaner.threads`` threads
    and the manager of their states and checkpoints."""

    def __init__(self, config: CleanerConfig, log_dirs: Iterable[str | os.PathLike[str]], logs: LogsSource,
                 time: Time = SYSTEM_TIME,
                 read_only: bool = False, log_dir_failure_channel: LogDirFailureChannel | None = None) -> None:
        #: The configuration, which :meth:`reconfigure` replaces (Kafka: ``config``, ``@volatile``).
        self.config = config
        self.time = time
        #: The logs: a ``{TopicPartition: Log}`` mapping, read afresh at every use (so removing a partition from
        #: it is what Kafka's ``cleaner.logs.remove(tp)`` is), or a callable returning one (Kafka: ``logs``).
        self.logs = logs
        #: Told of the I/O errors met while cleaning, which take the log's dir offline (Kafka:
        #: ``logDirFailureChannel``; a LogManager gives its own, a cleaner made alone makes one).
        self.log_dir_failure_channel = (log_dir_failure_channel if log_dir_failure_channel is not None
                                        else LogDirFailureChannel())
        self.cleaner_manager = LogCleanerManager(log_dirs, logs, self.log_dir_failure_channel, time=time,
                                                 read_only=read_only)
        self.throttler = Throttler(config.max_io_bytes_per_second, 300, time)
        self.cleaners: list[CleanerThread] = []

    # -- gauges (Kafka registers them as Yammer gauges; here they are read on demand) ----------------

    def _max_over_cleaner_threads(self, f: Callable[[CleanerThread], float]) -> int:
        """Kafka: ``maxOverCleanerThreads``: the largest ``f`` over the threads, as an int; 0 with no thread."""
        return int(max((f(thread) for thread in self.cleaners), default=0.0))

    @property
    def max_buffer_utilization_percent(self) -> int:
        """Gauge ``max-buffer-utilization-percent``: the fullest offset map of the threads' last rounds, computed
        as Kafka does, the largest utilization made an int before the ``* 100`` (so 0 unless a map was full)."""
        return self._max_over_cleaner_threads(
            lambda t: t.last_stats.buffer_utilization if t.last_stats is not None else 0.0) * 100

    @property
    def cleaner_recopy_percent(self) -> int:
        """Gauge ``cleaner-recopy-percent``: bytes written over bytes read in the threads' last rounds."""
        stats = [t.last_stats for t in self.cleaners if t.last_stats is not None]
        written = sum(s.bytes_written for s in stats)
        read = max(sum(s.bytes_read for s in stats), 1)
        return int(100 * (written / read))

    @property
    def max_clean_time_secs(self) -> int:
        """Gauge ``max-clean-time-secs``: the longest of the threads' last rounds."""
        return self._max_over_cleaner_threads(
            lambda t: t.last_stats.elapsed_secs() if t.last_stats is not None else 0.0)

    @property
    def max_compaction_delay_secs(self) -> int:
        """Gauge ``max-compaction-delay-secs``: the longest compaction delay the threads' last grabs saw."""
        return self._max_over_cleaner_threads(
            lambda t: float(t.last_pre_clean_stats.max_compaction_delay_ms)) // 1000

    @property
    def dead_thread_count(self) -> int:
        """Gauge ``DeadThreadCount``: threads an unexpected error stopped (Kafka: ``deadThreadCount``)."""
        return sum(1 for thread in self.cleaners if thread.is_thread_failed)

    @property
    def current_config(self) -> CleanerConfig:
        """Kafka: ``currentConfig`` (for tests)."""
        return self.config

    @property
    def cleaner_count(self) -> int:
        """Kafka: ``cleanerCount`` (for tests): the threads started and not shut down."""
        return len(self.cleaners)

    def startup(self) -> None:
        """Start the cleaner threads (Kafka: ``startup``)."""
        logger.info("Starting the log cleaner")
        for i in range(self.config.num_threads):
            thread = CleanerThread(i, self)
            self.cleaners.append(thread)
            thread.start()

    def shutdown(self) -> None:
        """Stop the threads and wait for them (Kafka: ``shutdown``; there are no gauges to remove)."""
        logger.info("Shutting down the log cleaner.")
        for thread in self.cleaners:
            thread.initiate_shutdown()
        for thread in self.cleaners:
            thread.join()
        self.cleaners.clear()

    def reconfigure(self, old_config: CleanerConfig | Mapping[str, Any],
                    new_config: CleanerConfig | Mapping[str, Any]) -> None:
        """Take a new configuration (Kafka: ``reconfigure``, of a broker's dynamic config): the throttler takes
        the new ``log.cleaner.io.max.bytes.per.second`` if it changed, then the threads are stopped and new ones
        started under the new configuration (so failed threads are replaced too).

        Each configuration is a :class:`CleanerConfig` or, as Kafka's ``KafkaConfig``, a broker's properties
        (read by :meth:`CleanerConfig.from_props`, Kafka's ``LogCleaner.cleanerConfig``).
        """
        old = old_config if isinstance(old_config, CleanerConfig) else CleanerConfig.from_props(old_config)
        self.config = new_config if isinstance(new_config, CleanerConfig) else CleanerConfig.from_props(new_config)
        max_io_bytes_per_second = self.config.max_io_bytes_per_second
        if max_io_bytes_per_second != old.max_io_bytes_per_second:
            logger.info("Updating logCleanerIoMaxBytesPerSecond: %s", max_io_bytes_per_second)
            self.throttler.update_desired_rate_per_sec(max_io_bytes_per_second)
        self.shutdown()
        self.startup()

    def abort_cleaning(self, topic_partition: TopicPartition) -> None:
        """Kafka: ``abortCleaning``."""
        self.cleaner_manager.abort_cleaning(topic_partition)

    def abort_and_pause_cleaning(self, topic_partition: TopicPartition) -> None:
        """Kafka: ``abortAndPauseCleaning``."""
        self.cleaner_manager.abort_and_pause_cleaning(topic_partition)

    def resume_cleaning(self, topic_partitions: Iterable[TopicPartition]) -> None:
        """Kafka: ``resumeCleaning``."""
        self.cleaner_manager.resume_cleaning(topic_partitions)

    def update_checkpoints(self, data_dir: str | os.PathLike[str],
                           partition_to_remove: TopicPartition | None = None) -> None:
        """Rewrite ``data_dir``'s cleaner checkpoint, removing ``partition_to_remove`` if given (Kafka 3.8:
        ``updateCheckpoints(dataDir, partitionToRemove)``)."""
        self.cleaner_manager.update_checkpoints(data_dir, partition_to_remove=partition_to_remove)

    def handle_log_dir_failure(self, dir: str | os.PathLike[str]) -> None:
        """Stop cleaning the logs of ``dir``, a log dir gone offline (Kafka: ``LogCleaner.handleLogDirFailure``)."""
        self.cleaner_manager.handle_log_dir_failure(dir)

    def maybe_truncate_checkpoint(self, data_dir: str | os.PathLike[str], topic_partition: TopicPartition,
                                  offset: int) -> None:
        """Kafka: ``maybeTruncateCheckpoint``."""
        self.cleaner_manager.maybe_truncate_checkpoint(data_dir, topic_partition, offset)

    def await_cleaned(self, topic_partition: TopicPartition, offset: int, timeout_ms: int = 60000) -> bool:
        """Wait until the log's cleaner checkpoint reaches ``offset`` (Kafka: ``awaitCleaned``, for tests)."""
        deadline = _time.monotonic() + timeout_ms / 1000.0
        while True:
            checkpoint = self.cleaner_manager.all_cleaner_checkpoints().get(topic_partition)
            if checkpoint is not None and checkpoint >= offset:
                return True
            if _time.monotonic() >= deadline:
                return False
            _time.sleep(0.05)

    def run_once(self, max_rounds: int | None = None, on_read: Callable[[int], None] | None = None, *,
                 topic_partitions: Collection[TopicPartition] | None = None) -> list[CleanerStats]:
        """Clean the filthiest qualifying compacted log, round after round, until none qualifies or
        ``max_rounds`` rounds have run, in the calling thread (no threads started): what a command-line
        ``clean`` or a Spark task does.  Returns the statistics of each round.  ``on_read`` is told the size
        of every read the two passes make (the offset map's pass over the dirty section, then the recopy);
        ``topic_partitions`` limits the rounds (and the retention pass after each) to those partitions."""
        thread = CleanerThread(0, self)
        thread.cleaner.on_read = on_read
        thread.only = None if topic_partitions is None else frozenset(topic_partitions)
        stats: list[CleanerStats] = []
        rounds = 0
        while (max_rounds is None or rounds < max_rounds) and thread.try_clean_filthiest_log():
            rounds += 1
            if thread.last_stats is not None:
                stats.append(thread.last_stats)
                thread.last_stats = None
        return stats



def compact(log: Log, *, max_rounds: int | None = None) -> list[CleanerStats]:
    """Run Kafka's cleaner on ``log`` now, in this thread, round after round until nothing qualifies (or
    ``max_rounds`` rounds), and return each round's :class:`~kafkalog.cleaner.stats.CleanerStats`
    (kafkalog's: Kafka cleans only from its ``LogCleaner`` threads; this is one of them run once).

    As a broker's cleaner: only a ``compact`` policy is cleaned, the active segment never is
    (:meth:`Log.roll <kafkalog.log.unified_log.Log.roll>` first to make all of it cleanable), and a log qualifies when
    its
    dirty ratio exceeds ``min.cleanable.dirty.ratio`` (0 cleans any dirty section) or ``max.compaction.lag.ms``
    passed.  The cleaner has its defaults (:meth:`CleanerConfig.from_enable
    <kafkalog.cleaner.config.CleanerConfig.from_enable>`, the dedupe buffer raised to hold the log's largest
    message) and checkpoints in the log dir's ``cleaner-offset-checkpoint`` as a broker's does.  A log of a
    :class:`~kafkalog.manager.log_manager.LogManager` is compacted through :meth:`LogManager.compact
    <kafkalog.manager.log_manager.LogManager.compact>`, whose cleaner owns its checkpoints.

    A function of the cleaner, not a method of the log (it was ``Log.compact`` before issue 31): the log
    stands below the cleaner and does not import it.

    Raises:
        IllegalArgumentError: the log's ``cleanup.policy`` does not include ``compact``.
        ReadOnlyError: the log was opened read-only.
        IllegalStateError: the log is held by a writer of its log dir (a LogManager): compact through it.
    """
    if not log.config.compact:
        raise IllegalArgumentError(
            f"Cannot compact {log.topic_partition}: its cleanup.policy is {','.join(log.config.cleanup_policy)}, "
            "which does not include compact")
    log._check_writable("compact")
    hold = log._dir_hold
    if hold is not None and not hold.lock.admit_logs:
        raise IllegalStateError(f"Cannot compact {log.topic_partition} on its own: its log dir is held by "
                                f"{hold.lock.holder}, whose cleaner owns its checkpoints (LogManager.compact)")
    config = CleanerConfig.from_enable(True)
    config = dataclasses.replace(config, max_message_size=max(config.max_message_size, log.config.max_message_size))
    cleaner = LogCleaner(config, [log.dir.parent], {log.topic_partition: log}, time=log.time,
                         log_dir_failure_channel=log.log_dir_failure_channel)
    return cleaner.run_once(max_rounds)
