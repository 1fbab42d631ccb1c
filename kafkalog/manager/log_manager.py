"""LogManager: every log of a broker's ``log.dirs``, their locks, checkpoints and background tasks.

Port of ``kafka/log/LogManager.scala`` (Kafka 0.10.1.1) with the modern behaviour (3.8.0) the spec marks
(§2.1, §2.9, §3.17): the clean-shutdown marker read and removed at startup, ``log-start-offset-checkpoint``,
deletion of a partition by renaming its directory ``<topic>-<partition>.<uuid>-delete`` and removing it
after ``file.delete.delay.ms``, new partitions placed in the directory holding the fewest, directories that
fail validation set aside as offline, topic and broker configuration changes applied to live logs, and the
directory ids of ``meta.properties``.

A log directory (one entry of ``log.dirs``) holds one directory per partition plus broker files::

    .lock                              held (flock) by the process using the directory
    .kafka_cleanshutdown               present after a clean shutdown; removed at startup
    recovery-point-offset-checkpoint   per partition: the offset up to which it is flushed
    log-start-offset-checkpoint        per partition: the log start offset, when above the first segment
    cleaner-offset-checkpoint          the cleaner's
    meta.properties                    the broker's; read for its ``directory.id``, never written

A partition directory is ``<topic>-<partition>``, or one of three renamed forms (``LocalLog.scala``):
``.<uuid>-delete`` (deleted, waiting for ``file.delete.delay.ms``), ``.<uuid>-future`` (a copy being moved
to this directory by a reassignment) and ``.<uuid>-stray`` (a replica the broker found it should not have,
set aside, never deleted).  Loading sorts them the way Kafka's ``loadLog`` does.

Files the port does not manage (``replication-offset-checkpoint``, KRaft files) are never touched.
``read_only=True`` opens a live or archived broker directory without taking its lock or changing a byte.

Where this differs from Kafka 3.8, and why:

* the logs are loaded by the constructor, as 0.10.1's were, not by ``startup`` (3.x); so there is no window
  in which a shutdown can run while the logs still load, and a load that fails raises from the constructor,
  leaving no clean-shutdown marker behind (the next open recovers); the manager's own scheduler starts there
  too, before loading, as a broker's starts before its logs load, and a scheduler given must already run;
* a directory that cannot be opened while its logs load, or whose partition directory cannot be created, is
  an error (a :class:`KafkaStorageError`), not a directory taken offline: a broker hands those to its
  ``LogDirFailureChannel`` and a replica manager then stops serving the directory, machinery a library has
  not got.  Directories that fail validation before anything is loaded (missing and not creatable, not a
  readable directory, a path the file system refuses) are offline, as in Kafka, as long as one is left;
* a directory entry that is not a partition directory is skipped with a warning where Kafka stops the broker,
  and so is one whose topic is not a legal topic name (``my topic-0``), which Kafka would load;
* the ``-future`` logs are loaded and kept (checkpointed, flushed, closed), made in a preferred directory
  (:meth:`LogManager.maybe_update_preferred_log_dir`, ``create_log(is_future=True)``) and promoted
  (:meth:`LogManager.replace_current_with_future_log`) as Kafka's are; the copying between them is the broker's
  (:mod:`kafkalog.broker.log_dir_moves`, Kafka's ``ReplicaAlterLogDirsThread``);
* at shutdown the files of the logs waiting for deletion and of the stray logs are released, where the JVM
  simply exits; a log whose close fails has its files released too.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._common import INT64_MAX
from ..checkpoint import (
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    OffsetCheckpoint,
)
from ..config.log_config import LogConfig
from ..errors import (
    IllegalArgumentError,
    IllegalStateError,
    KafkaLogError,
    KafkaStorageError,
    LogDirNotFoundError,
    ReadOnlyError,
)
from ..filenames import CLEAN_SHUTDOWN_FILE
from ..fsutil import DirLock, fsync_dir, raise_open_file_limit, storage_error
from ..log import Log
from ..log.producer_state_wiring import (
    DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
)
from ..log_dir_failure_channel import LogDirFailureChannel, io_failure
from ..producer_state import ProducerStateManagerConfig
from ..scheduler import SYSTEM_TIME, KafkaScheduler, Scheduler, SchedulerStateError, Time
from ..topic import (
    CLUSTER_METADATA_TOPIC_NAME,
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    STRAY_DIR_SUFFIX,
    InvalidPartitionDirError,
    InvalidTopicError,
    TopicPartition,
    log_delete_dir_name,
    log_dir_name,
    log_future_dir_name,
    log_stray_dir_name,
    parse_topic_partition_name,
    validate_topic,
)
from .configs import LogManagerConfigs
from .meta_properties import DIRECTORY_ID_LOST, DIRECTORY_ID_UNASSIGNED, read_directory_id

if TYPE_CHECKING:
    from ..cleaner import LogCleaner
    from ..cleaner.config import CleanerConfig
    from ..cleaner.stats import CleanerStats

__all__ = ["LogManager", "wait_for_all_to_complete"]

logger = logging.getLogger(__name__)

#: Kafka's ``log.initial.task.delay.ms`` default: background tasks start this long after startup.
INITIAL_TASK_DELAY_MS = 30 * 1000
#: The directory tiered storage keeps its index cache in, in a log dir (Kafka: ``RemoteIndexCache.DIR_NAME``).
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"


class _Future(Protocol):
    def result(self) -> object: ...


def wait_for_all_to_complete(jobs: Iterable[_Future], callback: Callable[[BaseException], None]) -> bool:
    """Wait for every job, handing each failure to ``callback``; whether all succeeded (Kafka:
    ``LogManager.waitForAllToComplete``).  A failure does not stop the wait for the jobs after it."""
    failures = 0
    for job in jobs:
        try:
            job.result()
        except Exception as e:
            callback(e)
            failures += 1
    return failures == 0


class LogManager(LogManagerConfigs):
    """The logs of one or more log directories (Kafka: ``LogManager``).

    ``LogManager(log_dirs)`` locks and loads every directory; :meth:`startup` starts the background
    tasks (retention, flushing, checkpoints, deferred deletes) on the scheduler; :meth:`shutdown` flushes,
    closes, checkpoints and leaves the clean-shutdown marker.  Use it as a context manager to do both.

    ``scheduler`` runs the background work, the logs' too (a roll's flush, a deferred deletion, which
    loading itself may schedule); without one the manager makes a :class:`~kafkalog.scheduler.KafkaScheduler`
    of its own, started in the constructor before the logs load (as a broker starts its scheduler before its
    ``LogManager``) and stopped by :meth:`shutdown` or by a constructor that fails.  A scheduler given to a
    writable manager must already be running (:class:`~kafkalog.scheduler.SchedulerStateError` otherwise).

    ``default_config`` is the broker's topic defaults, ``topic_configs`` each topic's overrides (a mapping of
    properties laid over the defaults, or a whole :class:`LogConfig`): the manager is its own config
    repository, changed with :meth:`update_topic_config` and :meth:`reconfigure_default_log_config`.
    ``is_stray`` (Kafka: ``startup``'s ``isStray``) is asked about every log loaded: the directory of one it
    says should not be on this broker is renamed ``-stray`` and set aside.  ``producer_state_manager_config``
    (``producer.id.expiration.ms``, ``transaction.partition.verification.enable``), ``max_transaction_timeout_ms``
    (``transaction.max.timeout.ms``) and ``producer_id_expiration_check_interval_ms`` are the broker's
    producer-state settings, handed to every log as Kafka's ``LogManager`` does.

    Kafka's failure model: ``log_dir_failure_channel`` (a
    :class:`~kafkalog.log_dir_failure_channel.LogDirFailureChannel`, one of the manager's own by default) is
    shared by every log the manager opens.  An I/O error in a log's append, flush, roll, read, truncation or
    deletion, in a checkpoint, in the cleaner, or while a dir is validated, locked or loaded takes that log dir
    offline: every log there refuses its files from then on (:class:`~kafkalog.errors.KafkaStorageError`), the
    manager's views leave the dir and its logs out at once (``log_dirs``, :attr:`offline_log_dirs`,
    :meth:`get_log`, :meth:`logs_by_dir`...), and at its next operation the manager stops serving the dir
    (:meth:`handle_log_dir_failure`: the logs' files released, no checkpoint or clean-shutdown marker written
    there, the cleaner stopped there, the ``.lock`` released), while the other dirs go on.  A dir whose
    loading fails that way is offline and the others load (Kafka 3.8's ``loadLogs``); a load that fails
    otherwise fails the constructor, and so does having no dir left.  A read-only manager takes nothing
    offline: it raises.
    """

    def __init__(self, log_dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 default_config: LogConfig | None = None,
                 topic_configs: Mapping[str, LogConfig | Mapping[str, Any]] | None = None,
                 cleaner_config: CleanerConfig | None = None, *, recovery_threads_per_data_dir: int = 1,
                 flush_check_ms: int = INT64_MAX, flush_recovery_offset_checkpoint_ms: int = 60000,
                 flush_start_offset_checkpoint_ms: int = 60000, retention_check_ms: int = 300000,
                 initial_task_delay_ms: int = INITIAL_TASK_DELAY_MS,
                 scheduler: Scheduler | None = None, time: Time | None = None,
                 read_only: bool = False, is_stray: Callable[[Log], bool] | None = None,
                 producer_state_manager_config: ProducerStateManagerConfig | None = None,
                 max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                 producer_id_expiration_check_interval_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
                 log_dir_failure_channel: LogDirFailureChannel | None = None,
                 ) -> None:
        log_dirs = [log_dirs] if isinstance(log_dirs, str | os.PathLike) else list(log_dirs)
        self._current_default_config = default_config if default_config is not None else LogConfig()
        # The topic overrides (Kafka: the ConfigRepository); each is checked now, against the defaults.
        self._topic_overrides: dict[str, LogConfig | Mapping[str, Any]] = {}
        for topic, overrides in (topic_configs or {}).items():
            validate_topic(topic)
            if not isinstance(overrides, LogConfig):
                LogConfig.from_props(self._current_default_config.to_props(), overrides)
                overrides = dict(overrides)
            self._topic_overrides[topic] = overrides
        self.cleaner_config = cleaner_config
        self.recovery_threads_per_data_dir = max(1, recovery_threads_per_data_dir)
        self.flush_check_ms = flush_check_ms
        self.flush_recovery_offset_checkpoint_ms = flush_recovery_offset_checkpoint_ms
        self.flush_start_offset_checkpoint_ms = flush_start_offset_checkpoint_ms
        self.retention_check_ms = retention_check_ms
        self.initial_task_delay_ms = initial_task_delay_ms
        self.time = time if time is not None else SYSTEM_TIME
        self.read_only = read_only
        # The broker's producer-state settings, one config object shared by every log, as Kafka's KafkaConfig
        # hands its ProducerStateManagerConfig to each (a dynamic update reaches them all).
        self.producer_state_manager_config = (producer_state_manager_config if producer_state_manager_config
                                              is not None else ProducerStateManagerConfig(
                                                  transaction_verification_enabled=False))
        self._producer_state_kwargs: dict[str, Any] = {
            "producer_state_manager_config": self.producer_state_manager_config,
            "max_transaction_timeout_ms": max_transaction_timeout_ms,
            "producer_id_expiration_check_interval_ms": producer_id_expiration_check_interval_ms}
        self._owns_scheduler = scheduler is None
        self.scheduler = scheduler if scheduler is not None else KafkaScheduler(1, "kafka-scheduler-")
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, Log] = {}
        #: Kafka's ``futureLogs``: ``-future`` copies, loaded and kept but never served by :meth:`get_log`.
        self._future_logs: dict[TopicPartition, Log] = {}
        #: Kafka's ``preferredLogDirs``: where a partition's next log goes (the target of a move), until created.
        self._preferred_log_dirs: dict[TopicPartition, Path] = {}
        #: Kafka's ``strayLogs``: set aside, never served, never deleted.
        self._stray_logs: dict[TopicPartition, Log] = {}
        #: Kafka's ``logsToBeDeleted``: (log, when its deletion was scheduled), oldest first.
        self._logs_to_be_deleted: collections.deque[tuple[Log, int]] = collections.deque()
        #: Kafka's ``partitionsInitializing``: partition -> whether its config changed while it was created.
        self.partitions_initializing: dict[TopicPartition, bool] = {}
        #: The ``.lock`` of each live directory, held while the manager is open (not when read-only).
        self._dir_locks: dict[Path, DirLock] = {}
        self._started = False
        self._shut_down = False
        # The tasks this manager put on the scheduler: cancelled at shutdown, as a scheduler the caller owns
        # keeps running and must not write checkpoints into directories this manager no longer locks.
        self._tasks: list[Any] = []
        #: The log cleaner (:class:`~kafkalog.cleaner.log_cleaner.LogCleaner`) when ``cleaner_config`` enables it
        #: (``log.cleaner.enable``), else ``None``; its threads start with :meth:`startup`.
        self.cleaner: LogCleaner | None = None
        # The cleaner :meth:`compact` runs in the caller's thread when the manager has none (made on first use).
        self._compactor: LogCleaner | None = None
        raise_open_file_limit()
        #: Where the I/O errors of the log dirs go: one channel for the manager and every log it opens (Kafka:
        #: ``logDirFailureChannel``, the broker's).
        self.log_dir_failure_channel = (log_dir_failure_channel if log_dir_failure_channel is not None
                                        else LogDirFailureChannel(len(log_dirs)))
        # Every log dir given, as the manager names it (canonical once validated, else absolute), in order.
        self._given_log_dirs: list[Path] = []
        # What took each dir offline, as the manager saw it (for the error when none is left).
        self._failures: dict[str, str] = {}
        if not read_only and not self._owns_scheduler and not self.scheduler.is_started:
            # Loading may schedule deletions (recovery drops what follows a torn write); a broker starts its
            # scheduler before its LogManager, which loads in startup().  Refused before anything is touched.
            raise SchedulerStateError(
                f"The scheduler given to the LogManager ({self.scheduler!r}) must be started before the logs "
                "load, in the constructor (a broker starts its KafkaScheduler before its LogManager)")
        # The directories not yet taken out of service, canonical (Kafka: ``_liveLogDirs``): a dir leaves when its
        # failure is handled (handle_log_dir_failure); log_dirs leaves out at once those the channel has offline.
        self._live_log_dirs = self._create_and_validate_log_dirs([Path(d) for d in log_dirs])
        self._directory_ids: dict[Path, str] = {}
        try:
            if not read_only:
                self._lock_log_dirs()
            if self._owns_scheduler and not read_only:
                # Kafka: the broker's scheduler runs before the logs load, and loading uses it (recovery's
                # deletions, a roll's flush); a read-only manager schedules nothing.
                self.scheduler.startup()
            self._directory_ids = self._load_directory_ids()
            self._handle_log_dir_failures()
            self._load_logs(is_stray if is_stray is not None else (lambda _log: False))
            # A broker's replica manager takes the dirs that failed while loading out of service as it starts.
            self._handle_log_dir_failures()
            if not self._live_log_dirs:
                raise KafkaStorageError(
                    f"None of the log dirs {', '.join(map(str, self._given_log_dirs))} can be used: "
                    + "; ".join(self._failures.get(str(d), f"{d} was taken offline") for d in self._given_log_dirs))
        except BaseException as e:
            for log in self._every_loaded_log():
                log.close_handlers()
            if self._owns_scheduler and self.scheduler.is_started:
                self.scheduler.shutdown()
            self._unlock_log_dirs()
            if isinstance(e, OSError) and not isinstance(e, KafkaLogError):
                raise storage_error(e, "Error while loading the logs of " + ", ".join(map(str, self.log_dirs))) from e
            raise
        if cleaner_config is not None and cleaner_config.enable_cleaner and not read_only:
            from ..cleaner import LogCleaner

            self.cleaner = LogCleaner(cleaner_config, list(self.log_dirs), self.logs_by_topic_partition,
                                      time=self.time, log_dir_failure_channel=self.log_dir_failure_channel)

    # -- directories ---------------------------------------------------------------------------------

    def _create_and_validate_log_dirs(self, dirs: list[Path]) -> list[Path]:
        """Kafka: ``createAndValidateLogDirs``: each directory is created if missing and must be a readable
        directory; one that fails is offline (told to the failure channel), a duplicate is an error, and so is
        having none left.  A read-only manager refuses any directory that fails."""
        live: list[Path] = []
        failures: list[str] = []
        canonical_paths: set[Path] = set()
        for given in dirs:
            d = given.absolute()
            try:
                if not d.exists():
                    if self.read_only:
                        raise KafkaStorageError(f"Log directory {d} does not exist")
                    logger.info("Log directory %s not found, creating it.", d)
                    try:
                        d.mkdir(parents=True)
                    except OSError as e:
                        raise KafkaStorageError(f"Failed to create data directory {d}: {e}") from e
                    fsync_dir(d.parent)
                if not d.is_dir() or not os.access(d, os.R_OK):
                    raise KafkaStorageError(f"{d} is not a readable log directory.")
                # resolve() fails for a path the file system refuses (a NUL byte, a loop): offline, as
                # Kafka treats an IOException from getCanonicalPath.
                canonical = d.resolve(strict=True)
            except (OSError, ValueError) as e:
                if self.read_only:
                    raise
                self._given_log_dirs.append(d)
                self._report_offline(d, f"Failed to create or validate data directory {d}", e)
                failures.append(str(e))
                continue
            if canonical in canonical_paths:
                raise KafkaStorageError(f"Duplicate log directory found: {', '.join(map(str, dirs))}")
            canonical_paths.add(canonical)
            self._given_log_dirs.append(canonical)
            live.append(canonical)
        if not live:
            raise KafkaStorageError(f"None of the specified log dirs from {', '.join(map(str, dirs))} can be "
                                    f"created or validated: {'; '.join(failures)}")
        return live

    def _report_offline(self, d: Path, message: str, error: BaseException) -> None:
        """Take ``d`` offline for ``error`` (Kafka: ``logDirFailureChannel.maybeAddOfflineLogDir``)."""
        self._failures.setdefault(str(d), f"{message}: {error}")
        self.log_dir_failure_channel.maybe_add_offline_log_dir(str(d), message, error)

    def _is_offline(self, d: Path) -> bool:
        return d not in self._live_log_dirs or self.log_dir_failure_channel.has_offline_log_dir(str(d))

    @property
    def log_dirs(self) -> list[Path]:
        """The live log dirs, canonical, in the order given (Kafka: ``liveLogDirs``).  A dir leaves the list as
        soon as an I/O error takes it offline (see :meth:`handle_log_dir_failure`)."""
        return [d for d in self._live_log_dirs if not self.log_dir_failure_channel.has_offline_log_dir(str(d))]

    live_log_dirs = log_dirs

    @property
    def offline_log_dirs(self) -> list[Path]:
        """The log dirs given that are offline: those that failed validation (absolute paths) and those an I/O
        error took offline since (canonical), in the order given (Kafka: ``offlineLogDirs``)."""
        live = self.log_dirs
        return [d for d in self._given_log_dirs if d not in live]

    def has_offline_log_dirs(self) -> bool:
        """Kafka: ``hasOfflineLogDirs``."""
        return bool(self.offline_log_dirs)

    def _lock_log_dirs(self) -> None:
        """Take ``.lock`` in every directory (Kafka: ``lockLogDirs``); a second writer, in this process or
        another, gets a :class:`~kafkalog.errors.LogDirInUseError` naming the directory and its holder, and an
        I/O error takes the directory offline.  The logs this manager opens are opened under these locks."""
        for d in self.log_dirs:
            try:
                self._dir_locks[d] = DirLock(d, holder="a LogManager", admit_logs=False)
            except KafkaStorageError as e:
                if io_failure(e) is None:
                    raise  # held by another writer (Kafka's KafkaException), or not the disk's doing
                self._report_offline(d, f"Disk error while locking directory {d}", e)

    def _unlock_log_dirs(self) -> None:
        for lock in self._dir_locks.values():
            lock.release()
        self._dir_locks.clear()

    def handle_log_dir_failure(self, dir: str | os.PathLike[str]) -> None:
        """Stop serving the logs of ``dir``, a log dir taken offline (Kafka: ``handleLogDirFailure``): it leaves
        the live dirs and the directory ids, the cleaner stops cleaning it and forgets its checkpoint, its logs
        and future logs leave the manager with their files released (``closeHandlers``), and its ``.lock`` is
        released.  No checkpoint or clean-shutdown marker is written there any more, so the next open recovers
        it.  Called for every dir the failure channel takes offline (see the class docstring); calling it for a
        dir already handled, or never live, only logs.

        Kafka stops the broker when no log dir is left; the manager then serves no log, and says so at the
        ``CRITICAL`` level.
        """
        d = Path(dir)
        logger.warning("Stopping serving logs in dir %s", d)
        with self._lock:
            if d in self._live_log_dirs:
                self._live_log_dirs.remove(d)
            self._directory_ids.pop(d, None)
            if not self._live_log_dirs:
                logger.critical("Shutdown broker because all log dirs in %s have failed",
                                ", ".join(map(str, self._given_log_dirs)))
            for cleaner in (self.cleaner, self._compactor):
                if cleaner is not None:
                    cleaner.handle_log_dir_failure(d)

            def remove_offline_logs(logs: dict[TopicPartition, Log]) -> list[TopicPartition]:
                offline = [tp for tp, log in logs.items() if log.dir.parent == d]
                for tp in offline:
                    logs.pop(tp).close_handlers()
                return offline

            offline_current = remove_offline_logs(self._logs)
            offline_future = remove_offline_logs(self._future_logs)
            logger.warning("Logs for partitions %s are offline and logs for future partitions %s are offline due to "
                           "failure on log directory %s", ",".join(map(str, offline_current)),
                           ",".join(map(str, offline_future)), d)
            lock = self._dir_locks.pop(d, None)
            if lock is not None:
                lock.release()

    def _handle_log_dir_failures(self) -> None:
        """Handle every log dir the failure channel took offline since the last call (:meth:`handle_log_dir_failure`):
        kafkalog's stand-in for the replica manager's ``LogDirFailureHandler`` thread, called where the manager
        starts work (its public operations and background tasks), never while a log's lock is held."""
        while (d := self.log_dir_failure_channel.take_next_offline_log_dir(0)) is not None:
            self.handle_log_dir_failure(d)

    def _load_directory_ids(self) -> dict[Path, str]:
        """The ``directory.id`` of each live directory whose ``meta.properties`` has one (Kafka:
        ``loadDirectoryIds``; the file is read, never written).

        Raises:
            KafkaStorageError: a ``directory.id`` that is not a base64 UUID.
        """
        ids: dict[Path, str] = {}
        for d in self.log_dirs:
            try:
                directory_id = read_directory_id(d)
            except FileNotFoundError:
                logger.info("No meta.properties file found in %s.", d)
                continue
            except KafkaStorageError as e:
                if io_failure(e) is None:
                    raise  # a bad id: an OSError too, but not a disk error
                self._report_offline(d, f"Disk error while loading ID {d}", e)
                continue
            except OSError as e:
                self._report_offline(d, f"Disk error while loading ID {d}", e)
                continue
            if directory_id is not None:
                ids[d] = directory_id
        return ids

    def directory_id(self, dir: str | os.PathLike[str]) -> str | None:
        """The id of the live directory ``dir`` from its ``meta.properties``, if it has one (Kafka:
        ``directoryId``)."""
        return self._directory_ids.get(Path(dir).resolve())

    def directory_path(self, directory_id: str) -> Path | None:
        """The live directory with that id (Kafka: ``directoryPath``)."""
        return next((d for d, i in self._directory_ids.items() if i == directory_id), None)

    @property
    def directory_ids_set(self) -> set[str]:
        """Kafka: ``directoryIdsSet``."""
        return set(self._directory_ids.values())

    # -- loading -------------------------------------------------------------------------------------

    def _every_loaded_log(self) -> list[Log]:
        with self._lock:
            return [*self._logs.values(), *self._future_logs.values(), *self._stray_logs.values(),
                    *(log for log, _ in self._logs_to_be_deleted)]

    def _load_logs(self, is_stray: Callable[[Log], bool]) -> None:
        """Load every partition of every directory not yet taken out of service, ``recovery_threads_per_data_dir``
        at a time per directory (Kafka: ``loadLogs``).

        As in Kafka 3.8, an I/O error while a directory is read or one of its logs loads is logged, the other
        logs and directories load, and then the failure channel takes that directory offline (the constructor
        then takes it out of service, :meth:`handle_log_dir_failure`); an error the failure channel heard of
        already is passed over.  Any other error fails the load, after every log of its directory was tried.
        A read-only manager raises every error.
        """
        offline_dirs: list[tuple[Path, BaseException]] = []

        def handled(d: Path, e: BaseException) -> bool:
            """Kafka's handleIOException: whether ``e`` is an I/O error of ``d``, noted to take it offline."""
            if self.read_only:
                return False
            if isinstance(e, KafkaStorageError) and e.log_dir is not None:
                return True  # a handler took its log dir offline already
            if io_failure(e) is None:
                return False
            offline_dirs.append((d, e))
            logger.error("Error while loading log dir %s", d, exc_info=e)
            return True

        for d in list(self._live_log_dirs):
            try:
                if self.read_only:
                    had_clean_shutdown = (d / CLEAN_SHUTDOWN_FILE).is_file()  # nothing is recovered either way
                else:
                    # Kafka removes the marker before loading: a crash from here on is an unclean shutdown.
                    had_clean_shutdown = self._dir_locks[d].take_clean_shutdown_marker()
                recovery_points = self._read_checkpoint(d / RECOVERY_POINT_CHECKPOINT_FILE)
                log_start_offsets = self._read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT_FILE)
                partition_dirs = self._partition_dirs(d)
            except Exception as e:
                if handled(d, e):
                    continue
                raise
            with concurrent.futures.ThreadPoolExecutor(self.recovery_threads_per_data_dir,
                                                       thread_name_prefix="log-recovery-") as pool:
                jobs = [pool.submit(self._load_log, entry, tp, had_clean_shutdown, recovery_points,
                                    log_start_offsets, is_stray) for entry, tp in partition_dirs]
                errors: list[BaseException] = []
                wait_for_all_to_complete(jobs, errors.append)
            others = [error for error in errors if not handled(d, error)]
            if others:
                raise others[0]
            logger.info("Loaded %d logs from %s", len(partition_dirs) - len(errors), d)
        for d, error in offline_dirs:
            self._report_offline(d, f"Error while loading log dir {d}", error)

    @staticmethod
    def _partition_dirs(d: Path) -> list[tuple[Path, TopicPartition]]:
        """The partition directories of the log dir ``d``, sorted, with their partitions."""
        partition_dirs = []
        for entry in sorted(d.iterdir()):
            if not entry.is_dir() or entry.name == REMOTE_INDEX_CACHE_DIR:
                continue
            try:
                tp = parse_topic_partition_name(entry)
                # Kafka's LocalLog.parseTopicPartitionName does not check the topic; a broker never makes
                # such a directory, and no checkpoint could list it (a space splits a line, a byte that is
                # not UTF-8 cannot be written), so one would cost the whole directory its checkpoints.
                validate_topic(tp.topic)
            except (InvalidPartitionDirError, InvalidTopicError) as e:
                logger.warning("Skipping %s, which is not a partition directory: %s", _shown(str(entry)),
                               _shown(str(e)))
                continue
            if tp.topic == CLUSTER_METADATA_TOPIC_NAME:
                # Kafka 3.x: the KRaft metadata log belongs to the Raft layer, never to the LogManager.
                continue
            partition_dirs.append((entry, tp))
        return partition_dirs

    def _read_checkpoint(self, path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpoint(path, read_only=True).read()
        except KafkaLogError as e:
            logger.warning("Error occurred while reading %s, resetting it: %s", path, e)
            return {}

    def _load_log(self, log_dir: Path, tp: TopicPartition, had_clean_shutdown: bool,
                  recovery_points: Mapping[TopicPartition, int], log_start_offsets: Mapping[TopicPartition, int],
                  is_stray: Callable[[Log], bool]) -> Log:
        """Open one partition directory and file the log by its name (Kafka: ``loadLog``): ``-delete`` ones
        wait for deletion, ``-stray`` ones are set aside, a log ``is_stray`` rejects is renamed ``-stray``
        and set aside, ``-future`` ones are future logs, the others the logs served."""
        log = Log(log_dir, self._fetch_log_config(tp.topic), log_start_offset=log_start_offsets.get(tp, 0),
                  recovery_point=recovery_points.get(tp, 0), scheduler=self.scheduler, time=self.time,
                  read_only=self.read_only, had_clean_shutdown=had_clean_shutdown, topic_partition=tp,
                  dir_lock=self._dir_locks.get(log_dir.parent), log_dir_failure_channel=self.log_dir_failure_channel,
                  **self._producer_state_kwargs)
        name = log_dir.name
        with self._lock:
            if name.endswith(DELETE_DIR_SUFFIX):
                self._add_log_to_be_deleted(log)
            elif name.endswith(STRAY_DIR_SUFFIX):
                self._stray_logs[tp] = log
                logger.warning("Loaded stray log: %s", log_dir)
            elif is_stray(log):
                # KRaft cannot stop a topic being re-created while a replica of the old one sits in an offline
                # directory: when that directory comes back, the old replica is set aside, not served.
                log.rename_dir(log_stray_dir_name(tp))
                self._stray_logs[tp] = log
                logger.warning("Log in %s marked stray and renamed to %s", log_dir, log.dir)
            else:
                future = name.endswith(FUTURE_DIR_SUFFIX)
                logs = self._future_logs if future else self._logs
                previous = logs.get(tp)
                if previous is not None:
                    log.close_handlers()
                    if future:
                        raise IllegalStateError(f"Duplicate log directories found: {log.dir}, {previous.dir}")
                    raise IllegalStateError(
                        f"Duplicate log directories for {tp} are found in both {log.dir} and {previous.dir}. "
                        "It is likely because log directory failure happened while broker was replacing "
                        "current replica with future replica. Recover broker from this failure by manually "
                        "deleting one of the two directories for this partition. It is recommended to delete "
                        "the partition in the log directory that is known to have failed recently.")
                logs[tp] = log
        return log

    def _add_log_to_be_deleted(self, log: Log) -> None:
        """Kafka: ``addLogToBeDeleted``."""
        with self._lock:
            self._logs_to_be_deleted.append((log, self.time.milliseconds()))

    @property
    def has_logs_to_be_deleted(self) -> bool:
        """Kafka: ``hasLogsToBeDeleted`` (for tests)."""
        return bool(self._logs_to_be_deleted)

    def stray_logs(self) -> dict[TopicPartition, Log]:
        """The logs set aside as stray (Kafka: ``strayLogs``)."""
        return dict(self._stray_logs)

    # -- background tasks ----------------------------------------------------------------------------

    def startup(self) -> None:
        """Start the background tasks (Kafka: ``startup``; the logs are already loaded, and the manager's own
        scheduler runs since the constructor)."""
        if self.read_only:
            return
        with self._lock:
            if self._started:
                return
            self._started = True
        self._handle_log_dir_failures()
        if self._owns_scheduler and not self.scheduler.is_started:
            self.scheduler.startup()
        delay = self.initial_task_delay_ms
        logger.info("Starting log cleanup with a period of %d ms.", self.retention_check_ms)
        self._schedule("kafka-log-retention", self.cleanup_logs, delay, self.retention_check_ms)
        logger.info("Starting log flusher with a default period of %d ms.", self.flush_check_ms)
        self._schedule("kafka-log-flusher", self.flush_dirty_logs, delay, self.flush_check_ms)
        self._schedule("kafka-recovery-point-checkpoint", self.checkpoint_recovery_point_offsets, delay,
                       self.flush_recovery_offset_checkpoint_ms)
        self._schedule("kafka-log-start-offset-checkpoint", self.checkpoint_log_start_offsets, delay,
                       self.flush_start_offset_checkpoint_ms)
        # Runs once, then reschedules itself for when the next deletion is due (deleteLogs).
        self._schedule("kafka-delete-logs", self.delete_logs, delay)
        if self.cleaner is not None:
            self.cleaner.startup()

    def _schedule(self, name: str, fun: Any, delay_ms: int, period_ms: int = -1) -> None:
        with self._lock:
            if self._shut_down:
                return
            task = self.scheduler.schedule(name, fun, delay_ms=delay_ms, period_ms=period_ms)
            self._tasks = [t for t in self._tasks if not getattr(t, "done", lambda: False)()]
            self._tasks.append(task)

    def shutdown(self) -> None:
        """Flush and close every log, write each directory's checkpoints and clean-shutdown marker, release
        the locks (Kafka: ``shutdown``).  Calling it twice is harmless.

        The logs of each directory are closed by ``recovery_threads_per_data_dir`` threads; a directory where
        one fails gets neither checkpoints nor a marker (its next open recovers), the failure is logged and
        the other directories are done all the same.  Every close has finished when this returns.  The log dirs
        offline are left as they are (no checkpoint, no marker), their logs' files released.
        """
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
            tasks, self._tasks = self._tasks, []
        logger.info("Shutting down.")
        try:
            for task in tasks:
                cancel = getattr(task, "cancel", None)
                if cancel is not None:
                    cancel()
            if self.cleaner is not None:
                try:
                    self.cleaner.shutdown()
                except Exception:
                    logger.exception("Error while shutting down the log cleaner")
            if self._owns_scheduler and self.scheduler.is_started:
                self.scheduler.shutdown()
            self._handle_log_dir_failures()
            if self.read_only:
                for log in self._every_loaded_log():
                    log.close()
                return
            self._close_logs_and_checkpoint()
            self._handle_log_dir_failures()
        finally:
            for log in self._stray_logs.values():
                log.close_handlers()
            for log, _ in self._logs_to_be_deleted:
                log.close_handlers()
            self._unlock_log_dirs()
        logger.info("Shutdown complete.")

    def _close_logs_and_checkpoint(self) -> None:
        logs_by_dir = self.logs_by_dir()
        pools: list[concurrent.futures.ThreadPoolExecutor] = []
        jobs: dict[Path, list[concurrent.futures.Future[None]]] = {}
        try:
            for d in self.log_dirs:
                logger.debug("Flushing and closing logs at %s", d)
                pool = concurrent.futures.ThreadPoolExecutor(self.recovery_threads_per_data_dir,
                                                             thread_name_prefix=f"log-closing-{d}")
                pools.append(pool)
                jobs[d] = [pool.submit(self._flush_and_close, log) for log in logs_by_dir.get(d, {}).values()]
            for d, dir_jobs in jobs.items():
                if wait_for_all_to_complete(dir_jobs, lambda e: logger.warning(
                        "There was an error in one of the threads during LogManager shutdown: %s", e)):
                    logs = logs_by_dir.get(d, {})
                    self._checkpoint_recovery_offsets_in_dir(d, logs)
                    self._checkpoint_log_start_offsets_in_dir(d, logs)
                    # Kafka writes the marker where the last shutdown was clean or every log was loaded: here
                    # loading is done (or failed) in the constructor, so every live directory qualifies.
                    try:
                        (d / CLEAN_SHUTDOWN_FILE).touch()
                        fsync_dir(d)
                    except OSError as e:
                        logger.warning("Could not write the clean shutdown marker in %s: %s", d, e)
        finally:
            for pool in pools:
                pool.shutdown(wait=True)

    @staticmethod
    def _flush_and_close(log: Log) -> None:
        """One shutdown job: flush to the latest possible recovery point (the active segment too), close."""
        try:
            log.flush(including_offset=True)
            log.close()
        except BaseException:
            log.close_handlers()  # its files at least are released
            raise

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
        broker's cleaner would apply it.  A partition's future log is cleaned with it.
        """
        self._handle_log_dir_failures()
        total = 0
        start = self.time.milliseconds()
        if self.cleaner is not None:
            deletable = self.cleaner.cleaner_manager.pause_cleaning_for_non_compacted_partitions()
        else:
            deletable = [(tp, log) for tp, log in self.logs_by_topic_partition().items() if log.config.delete]
        try:
            for tp, log in deletable:
                for each in (log, self.get_log(tp, is_future=True)):
                    if each is None:
                        continue
                    try:
                        total += each.delete_old_segments()
                    except KafkaLogError as e:
                        logger.error("Retention of %s failed: %s", each.name, e)
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
        self._handle_log_dir_failures()
        for tp, log in [*self._served(self._logs).items(), *self._served(self._future_logs).items()]:
            try:
                since = self.time.milliseconds() - log.last_flush_time
                if since >= log.config.flush_ms:
                    log.flush()
            except KafkaLogError as e:
                logger.error("Error flushing topic %s: %s", tp.topic, e)

    def checkpoint_recovery_point_offsets(self) -> None:
        """Write every directory's ``recovery-point-offset-checkpoint`` (Kafka: ``checkpointLogRecoveryOffsets``)."""
        self._handle_log_dir_failures()
        by_dir = self.logs_by_dir()
        for d in self.log_dirs:
            self._checkpoint_recovery_offsets_in_dir(d, by_dir.get(d, {}))

    checkpoint_log_recovery_offsets = checkpoint_recovery_point_offsets

    def checkpoint_logs_in_dir(self, d: Path) -> None:
        """Kafka 0.10.1: ``checkpointLogsInDir``; 3.8: ``checkpointRecoveryOffsetsInDir``."""
        self._checkpoint_recovery_offsets_in_dir(Path(d))

    checkpoint_recovery_offsets_in_dir = checkpoint_logs_in_dir

    def _checkpoint_recovery_offsets_in_dir(self, d: Path, logs: Mapping[TopicPartition, Log] | None = None) -> None:
        """Kafka: ``checkpointRecoveryOffsetsInDir``: a write that fails is logged, and takes the directory offline
        when it is an I/O error; an offline directory gets no checkpoint."""
        if self.read_only or self._is_offline(d):
            return
        if logs is None:
            logs = self.logs_by_dir().get(d, {})
        try:
            OffsetCheckpoint(d / RECOVERY_POINT_CHECKPOINT_FILE, log_dir_failure_channel=self.log_dir_failure_channel
                             ).write({tp: log.recovery_point for tp, log in logs.items()})
        except (KafkaLogError, OSError) as e:
            logger.error("Disk error while writing recovery offsets checkpoint in directory %s: %s", d, e)

    def checkpoint_log_start_offsets(self) -> None:
        """Write every directory's ``log-start-offset-checkpoint`` (Kafka: ``checkpointLogStartOffsets``):
        only logs whose start offset is above their first segment's base are listed."""
        self._handle_log_dir_failures()
        by_dir = self.logs_by_dir()
        for d in self.log_dirs:
            self._checkpoint_log_start_offsets_in_dir(d, by_dir.get(d, {}))

    def _checkpoint_log_start_offsets_in_dir(self, d: Path, logs: Mapping[TopicPartition, Log] | None = None) -> None:
        """Kafka: ``checkpointLogStartOffsetsInDir``: a write that fails is logged, and takes the directory offline
        when it is an I/O error; an offline directory gets no checkpoint."""
        if self.read_only or self._is_offline(d):
            return
        if logs is None:
            logs = self.logs_by_dir().get(d, {})
        entries = {}
        for tp, log in logs.items():
            first = log.segments.first_segment_base_offset()
            if first is not None and log.log_start_offset > first:
                entries[tp] = log.log_start_offset
        try:
            OffsetCheckpoint(d / LOG_START_OFFSET_CHECKPOINT_FILE,
                             log_dir_failure_channel=self.log_dir_failure_channel).write(entries)
        except (KafkaLogError, OSError) as e:
            logger.error("Disk error while writing log start offsets checkpoint in directory %s: %s", d, e)

    def delete_logs(self) -> None:
        """Delete the logs removed at least ``file.delete.delay.ms`` (the broker default) ago, oldest first,
        then run again when the next one is due, or after the delay (at least 1 ms) when none waits (Kafka:
        ``deleteLogs``).  Until then a removed log stays readable, its files renamed under ``-delete``."""
        next_delay_ms = 0
        file_delete_delay_ms = self._current_default_config.file_delete_delay_ms
        try:
            self._handle_log_dir_failures()
            while True:
                with self._lock:
                    if self._logs_to_be_deleted:
                        _log, scheduled_ms = self._logs_to_be_deleted[0]
                        next_delay_ms = scheduled_ms + file_delete_delay_ms - self.time.milliseconds()
                    else:
                        # with a delay of 0 and nothing to delete, Kafka would otherwise wait for ever
                        next_delay_ms = max(file_delete_delay_ms, 1)
                    if next_delay_ms > 0:
                        break
                    removed_log, _ = self._logs_to_be_deleted.popleft()
                try:
                    removed_log.delete()
                    # Kafka's Utils.delete is recursive: the broker's files kafkalog does not manage go too.
                    if removed_log.dir.exists():
                        shutil.rmtree(removed_log.dir)
                    logger.info("Deleted log for partition %s in %s.", removed_log.topic_partition, removed_log.dir)
                except (KafkaLogError, OSError) as e:
                    logger.error("Exception while deleting %s in dir %s: %s", removed_log, removed_log.dir.parent, e)
        except Exception:
            logger.exception("Exception in kafka-delete-logs thread.")
        finally:
            self._schedule("kafka-delete-logs", self.delete_logs, next_delay_ms)

    # -- the logs ------------------------------------------------------------------------------------

    def _serves(self, log: Log) -> bool:
        """Whether ``log``'s log dir is online: the logs of an offline dir are served no more, even before the
        failure is handled."""
        return not self.log_dir_failure_channel.has_offline_log_dir(log.local_log.parent_dir)

    def _served(self, logs: Mapping[TopicPartition, Log]) -> dict[TopicPartition, Log]:
        return {tp: log for tp, log in list(logs.items()) if self._serves(log)}

    def get_log(self, topic_partition: TopicPartition, is_future: bool = False) -> Log | None:
        """The log of ``topic_partition``, or its future log (Kafka: ``getLog``); ``None`` for a log whose log dir
        is offline."""
        log = (self._future_logs if is_future else self._logs).get(topic_partition)
        return log if log is not None and self._serves(log) else None

    def create_log(self, topic_partition: TopicPartition, config: LogConfig | None = None, *,
                   is_new: bool = False, target_log_directory_id: str | None = None,
                   is_future: bool = False) -> Log:
        """The log of ``topic_partition``, or with ``is_future`` its future log, created if it does not exist
        (Kafka: ``getOrCreateLog``).

        A new log goes to the directory whose id is ``target_log_directory_id`` (unless that is
        :data:`~kafkalog.manager.meta_properties.DIRECTORY_ID_UNASSIGNED`,
        :data:`~kafkalog.manager.meta_properties.DIRECTORY_ID_LOST` or no live directory's id, or the partition
        has a preferred directory, :meth:`maybe_update_preferred_log_dir`, which wins), else to the preferred
        directory, else to the directories holding the fewest logs, trying the next when one fails.  A future log
        is ``<topic>-<partition>.<uuid>-future`` in the preferred directory, which must not be the current log's.
        Creating a log satisfies the preference, which is then forgotten.  It gets ``config``, or the topic's
        configuration; a config change while it is created is applied to it (the ``initializingLog`` /
        ``finishedInitializingLog`` bracket of Kafka's ``Partition``).

        Raises:
            KafkaStorageError: a directory is offline and the partition is not ``is_new`` (its log may be in
                that directory), or no directory could hold the log.
            IllegalStateError: a future log without a preferred directory, or with the current log's.
            InvalidTopicError: an illegal topic name (kafkalog's check: Kafka leaves it to the controller).
        """
        if self.read_only:
            raise ReadOnlyError(f"Cannot create log {topic_partition}: the log manager is read-only")
        validate_topic(topic_partition.topic)
        if topic_partition.partition < 0:
            raise KafkaLogError(f"Invalid partition {topic_partition.partition} for topic {topic_partition.topic}")
        self._handle_log_dir_failures()
        existing = self.get_log(topic_partition, is_future)
        if existing is not None:
            return existing
        self.initializing_log(topic_partition)
        log: Log | None = None
        try:
            log = self._get_or_create_log(topic_partition, config, is_new, target_log_directory_id, is_future)
        finally:
            self.finished_initializing_log(topic_partition, log)
        return log

    get_or_create_log = create_log

    def _get_or_create_log(self, topic_partition: TopicPartition, config: LogConfig | None, is_new: bool,
                           target_log_directory_id: str | None, is_future: bool = False) -> Log:
        with self._lock:
            existing = self.get_log(topic_partition, is_future)
            if existing is not None:
                return existing
            if not is_new and self.offline_log_dirs:
                raise KafkaStorageError(
                    f"Can not create log for {topic_partition} because log directories "
                    f"{','.join(map(str, self.offline_log_dirs))} are offline")
            preferred = None
            if (target_log_directory_id not in (None, DIRECTORY_ID_UNASSIGNED, DIRECTORY_ID_LOST)
                    and topic_partition not in self._preferred_log_dirs):
                preferred = self.directory_path(target_log_directory_id)
            else:
                preferred = self._preferred_log_dirs.get(topic_partition)
            if is_future:
                current = self.get_log(topic_partition)
                if preferred is None:
                    raise IllegalStateError(f"Can not create the future log for {topic_partition} without having "
                                            "a preferred log directory")
                if current is not None and current.dir.parent == preferred:
                    raise IllegalStateError(f"Can not create the future log for {topic_partition} in the current "
                                            "log directory of this partition")
            candidates = [preferred] if preferred is not None else self._next_log_dirs()
            name = log_future_dir_name(topic_partition) if is_future else log_dir_name(topic_partition)
            directory = None
            for candidate in candidates:
                try:
                    directory = self._create_log_directory(candidate, name)
                    break
                except KafkaStorageError:
                    continue
            if directory is None:
                raise KafkaStorageError(
                    f"No log directories available. Tried {', '.join(str(d) for d in candidates)}")
            if config is None:
                config = self._fetch_log_config(topic_partition.topic)
            log = Log(directory, config, scheduler=self.scheduler, time=self.time, had_clean_shutdown=True,
                      topic_partition=topic_partition, dir_lock=self._dir_locks[directory.parent],
                      log_dir_failure_channel=self.log_dir_failure_channel, **self._producer_state_kwargs)
            (self._future_logs if is_future else self._logs)[topic_partition] = log
            logger.info("Created log for partition %s in %s with properties %s.", topic_partition,
                        directory, config.overridden_configs_as_loggable_string())
            self._preferred_log_dirs.pop(topic_partition, None)
            return log

    def is_log_dir_online(self, log_dir: str | os.PathLike[str]) -> bool:
        """Whether ``log_dir``, one of the directories given, is online (Kafka: ``isLogDirOnline``).  It must be
        named exactly as the manager names it (the absolute, canonical path :attr:`log_dirs` and DescribeLogDirs
        give).

        Raises:
            LogDirNotFoundError: ``log_dir`` is not one of the directories given.
        """
        # Kafka compares the path as given with each dir's absolute path: "/data/" is not "/data"
        found = next((d for d in self._given_log_dirs if str(d) == os.fspath(log_dir)), None)
        if found is None:
            raise LogDirNotFoundError(f"Log dir {log_dir} is not found in the config.")
        return found in self.log_dirs

    def maybe_update_preferred_log_dir(self, topic_partition: TopicPartition, log_dir: str | os.PathLike[str]) -> None:
        """Make ``log_dir`` where ``topic_partition``'s next log is created (Kafka: ``maybeUpdatePreferredLogDir``),
        unless its current or future log is already there."""
        path = Path(log_dir)
        with self._lock:
            current = self._logs.get(topic_partition)
            future = self._future_logs.get(topic_partition)
            if not (current is not None and current.dir.parent == path) and not (
                    future is not None and future.dir.parent == path):
                self._preferred_log_dirs[topic_partition] = path

    def replace_current_with_future_log(self, topic_partition: TopicPartition) -> None:
        """Make the future log of ``topic_partition`` its log, and delete the old one (Kafka:
        ``replaceCurrentWithFutureLog``): the future log's directory is renamed ``<topic>-<partition>`` (in its
        own log dir), it takes the current log's high watermark and place, the cleaner's checkpoint follows it to
        its directory and cleaning resumes; then the old log is renamed ``-delete``, closed, left out of its
        directory's checkpoints and queued for deletion.

        On disk the swap is two renames, in Kafka's order: a crash between them leaves the partition's directory
        under its own name in both log dirs, each holding every record (the copy has caught up before the swap),
        and the next load refuses to choose between them, as Kafka's does ("Duplicate log directories"): nothing
        is lost, and removing either directory by hand resolves it.

        Raises:
            KafkaStorageError: the current or the future log is missing or offline, or a rename failed.
        """
        with self._lock:
            source = self._logs.get(topic_partition)
            dest = self._future_logs.get(topic_partition)
            if source is None:
                raise KafkaStorageError(f"The current replica for {topic_partition} is offline")
            if dest is None:
                raise KafkaStorageError(f"The future replica for {topic_partition} is offline")
            logger.info("Attempting to replace current log %s with %s for %s", source, dest, topic_partition)
            dest.rename_dir(log_dir_name(topic_partition), should_reinitialize=True)
            dest.update_high_watermark(source.high_watermark)
            del self._future_logs[topic_partition]
            self._logs[topic_partition] = dest
            cleaner = self._cleaner_in_use()
            if cleaner is not None:
                cleaner.cleaner_manager.alter_checkpoint_dir(topic_partition, source.dir.parent, dest.dir.parent)
                self._resume_cleaning(topic_partition)
            try:
                source.rename_dir(log_delete_dir_name(topic_partition), should_reinitialize=True)
                source.close()
                source_dir = source.dir.parent
                logs_in_dir = self.logs_by_dir().get(source_dir, {})
                self._checkpoint_recovery_offsets_in_dir(source_dir, logs_in_dir)
                self._checkpoint_log_start_offsets_in_dir(source_dir, logs_in_dir)
                self._add_log_to_be_deleted(source)
            except KafkaLogError:
                # its directory is offline: nothing else would let its files go now that it is out of the map
                source.close_handlers()
                raise
            logger.info("The current replica is successfully replaced with the future replica for %s",
                        topic_partition)

    def _create_log_directory(self, log_dir: Path, log_dir_name: str) -> Path:
        """Make ``log_dir/log_dir_name`` (Kafka: ``createLogDirectory``): a failure takes ``log_dir`` offline.

        Raises:
            KafkaStorageError: ``log_dir`` is offline or the directory could not be made.
        """
        if log_dir not in self.log_dirs:
            raise KafkaStorageError(f"Can not create log {log_dir_name} because log directory {log_dir} is offline")
        directory = log_dir / log_dir_name
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            message = f"Error while creating log for {log_dir_name} in dir {log_dir}"
            logger.warning("%s: %s", message, e)
            self._report_offline(log_dir, message, e)
            raise KafkaStorageError(f"{message}: {e}") from e
        return directory

    def _next_log_dirs(self) -> list[Path]:
        """The live directories, those holding the fewest logs (future logs count) first (Kafka:
        ``nextLogDirs``)."""
        if len(self.log_dirs) == 1:
            return [self.log_dirs[0]]
        counts = {d: 0 for d in self.log_dirs}
        for log in self.all_logs():
            counts[log.dir.parent] = counts.get(log.dir.parent, 0) + 1
        return sorted(self.log_dirs, key=lambda d: counts[d])

    def next_log_dir(self) -> Path:
        """The directory holding the fewest logs (Kafka 0.10.1: ``nextLogDir``)."""
        return self._next_log_dirs()[0]

    def delete_log(self, topic_partition: TopicPartition, is_future: bool = False, checkpoint: bool = True,
                   is_stray: bool = False) -> Log | None:
        """Remove a partition's log (Kafka 3.8: ``asyncDelete``; 0.10.1: ``deleteLog``) and return it.

        Its directory is renamed ``<topic>-<partition>.<uuid>-delete`` at once and deleted
        ``file.delete.delay.ms`` later by the ``kafka-delete-logs`` task: until then the log stays open, so
        a reader holding it goes on reading (from the renamed files).  With ``is_stray`` it is renamed
        ``-stray`` instead and never deleted.  ``checkpoint`` rewrites the directory's checkpoints without it.

        Raises:
            KafkaStorageError: there is no such log and a directory is offline (it may be there).
        """
        if self.read_only:
            raise ReadOnlyError(f"Cannot delete log {topic_partition}: the log manager is read-only")
        self._handle_log_dir_failures()
        with self._lock:
            removed = (self._future_logs if is_future else self._logs).pop(topic_partition, None)
        if removed is None:
            if self.offline_log_dirs:
                raise KafkaStorageError(
                    f"Failed to delete log for {'future ' if is_future else ''}{topic_partition} because it may "
                    f"be in one of the offline directories {','.join(map(str, self.offline_log_dirs))}")
            return None
        # No cleaning may go on in a log about to be deleted.
        cleaner = self._cleaner_in_use()
        if cleaner is not None and not is_future:
            cleaner.abort_cleaning(topic_partition)
            if checkpoint:
                cleaner.cleaner_manager.update_checkpoints(removed.dir.parent,
                                                                partition_to_remove=topic_partition)
        try:
            removed.rename_dir(log_stray_dir_name(topic_partition) if is_stray
                               # Kafka's logDeleteDirName: the topic is shortened so the name fits 255 characters.
                               else log_delete_dir_name(topic_partition))
        except KafkaLogError:
            removed.close_handlers()  # out of the manager's maps (as in Kafka): nothing else would let its files go
            raise
        if is_stray:
            logger.warning("Log for partition %s is marked as stray and renamed to %s", topic_partition,
                           removed.dir)
        else:
            self._add_log_to_be_deleted(removed)
            logger.info("Log for partition %s is renamed to %s and is scheduled for deletion", topic_partition,
                        removed.dir)
        if checkpoint:
            d = removed.dir.parent
            logs = self.logs_by_dir().get(d, {})
            self._checkpoint_recovery_offsets_in_dir(d, logs)
            self._checkpoint_log_start_offsets_in_dir(d, logs)
        return removed

    async_delete = delete_log

    def compact(self, topic: str | None = None, *, max_rounds: int | None = None) -> list[CleanerStats]:
        """Clean the compacted logs (of ``topic``, or all) now, in this thread, round after round until none
        qualifies (or ``max_rounds`` rounds), and return each round's statistics, which name their partition
        (kafkalog's: a broker only cleans from its cleaner threads; this runs one of them once).

        The rules are the cleaner's: a log qualifies when its dirty ratio exceeds ``min.cleanable.dirty.ratio``
        (0 cleans any dirty section) or ``max.compaction.lag.ms`` passed, and the active segment is never
        cleaned.  The manager's cleaner does the work when ``log.cleaner.enable`` made one (its threads and
        this call never clean the same log at once); otherwise one with the cleaner's defaults
        (:meth:`CleanerConfig.from_enable`), kept for later calls.  Checkpoints go to
        ``cleaner-offset-checkpoint``.

        Raises:
            ReadOnlyError: the manager is read-only.
            IllegalArgumentError: ``topic`` has no log here, or its ``cleanup.policy`` does not compact.
        """
        if self.read_only:
            raise ReadOnlyError("Cannot compact: the log manager is read-only")
        self._handle_log_dir_failures()
        only = None
        if topic is not None:
            only = [tp for tp in self.logs_by_topic_partition() if tp.topic == topic]
            if not only:
                raise IllegalArgumentError(f"Cannot compact topic {topic!r}: it has no log in "
                                           f"{', '.join(map(str, self.log_dirs))}")
            if not self.config_for(topic).compact:
                raise IllegalArgumentError(f"Cannot compact topic {topic!r}: its cleanup.policy is "
                                           f"{','.join(self.config_for(topic).cleanup_policy)}, not compact")
        cleaner = self._cleaner_in_use()
        if cleaner is None:
            from ..cleaner import LogCleaner
            from ..cleaner.config import CleanerConfig

            with self._lock:
                if self._compactor is None:
                    self._compactor = LogCleaner(CleanerConfig.from_enable(True), list(self.log_dirs),
                                                 self.logs_by_topic_partition, time=self.time,
                                                 log_dir_failure_channel=self.log_dir_failure_channel)
                cleaner = self._compactor
        return cleaner.run_once(max_rounds, topic_partitions=only)

    def _cleaner_in_use(self) -> LogCleaner | None:
        """The cleaner whose cleaning a deletion or truncation must stop: the manager's, or :meth:`compact`'s."""
        return self.cleaner if self.cleaner is not None else self._compactor

    def abort_and_pause_cleaning(self, topic_partition: TopicPartition) -> None:
        """Kafka: ``abortAndPauseCleaning`` (nothing without a cleaner)."""
        cleaner = self._cleaner_in_use()
        if cleaner is not None:
            cleaner.abort_and_pause_cleaning(topic_partition)
            logger.info("The cleaning for partition %s is aborted and paused", topic_partition)

    def abort_cleaning(self, topic_partition: TopicPartition) -> None:
        """Kafka: ``abortCleaning`` (nothing without a cleaner)."""
        cleaner = self._cleaner_in_use()
        if cleaner is not None:
            cleaner.abort_cleaning(topic_partition)
            logger.info("The cleaning for partition %s is aborted", topic_partition)

    def _resume_cleaning(self, topic_partition: TopicPartition) -> None:
        """Kafka: ``resumeCleaning``."""
        cleaner = self._cleaner_in_use()
        if cleaner is not None:
            cleaner.resume_cleaning([topic_partition])
            logger.info("Cleaning for partition %s is resumed", topic_partition)

    def truncate_to(self, partition_offsets: Mapping[TopicPartition, int]) -> None:
        """Truncate several logs, then checkpoint their recovery points (Kafka: ``truncateTo``)."""
        self._handle_log_dir_failures()
        for tp, offset in partition_offsets.items():
            log = self.get_log(tp)
            if log is None:
                continue
            # Decided before the truncation moves the active segment: cleaning past the truncation point
            # must stop, and its checkpoint must not stay beyond the new log end.
            cleaner = self._cleaner_in_use()
            stop_cleaner = cleaner is not None and offset < log.active_segment.base_offset
            if stop_cleaner:
                self.abort_and_pause_cleaning(tp)
            try:
                log.truncate_to(offset)
                if cleaner is not None and stop_cleaner:
                    cleaner.maybe_truncate_checkpoint(log.dir.parent, tp, log.active_segment.base_offset)
            finally:
                if stop_cleaner:
                    self._resume_cleaning(tp)
        self.checkpoint_recovery_point_offsets()

    def truncate_fully_and_start_at(self, topic_partition: TopicPartition, new_offset: int) -> None:
        """Kafka: ``truncateFullyAndStartAt``."""
        self._handle_log_dir_failures()
        log = self.get_log(topic_partition)
        if log is None:
            return
        self.abort_and_pause_cleaning(topic_partition)
        try:
            log.truncate_fully_and_start_at(new_offset)
            cleaner = self._cleaner_in_use()
            if cleaner is not None:
                cleaner.maybe_truncate_checkpoint(log.dir.parent, topic_partition, log.active_segment.base_offset)
        finally:
            self._resume_cleaning(topic_partition)
        self.checkpoint_recovery_point_offsets()

    def all_logs(self) -> list[Log]:
        """The logs and the future logs (Kafka: ``allLogs``), those of offline log dirs left out, as every view of
        the manager leaves them out."""
        return [*self._served(self._logs).values(), *self._served(self._future_logs).values()]

    def logs_by_topic(self, topic: str) -> list[Log]:
        """The logs and future logs of ``topic`` (Kafka: ``logsByTopic``)."""
        return [log for tp, log in [*self._served(self._logs).items(), *self._served(self._future_logs).items()]
                if tp.topic == topic]

    def logs_by_topic_partition(self) -> dict[TopicPartition, Log]:
        """Kafka: ``logsByTopicPartition`` (what the cleaner cleans: so it skips the logs of an offline dir)."""
        return self._served(self._logs)

    def logs_by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        """The logs and future logs of each directory (Kafka: ``logsByDir``)."""
        by_dir: dict[Path, dict[TopicPartition, Log]] = {}
        for tp, log in [*self._served(self._logs).items(), *self._served(self._future_logs).items()]:
            by_dir.setdefault(log.dir.parent, {})[tp] = log
        return by_dir

    def dir_lock(self, log_dir: str | os.PathLike[str]) -> DirLock | None:
        """The lock this manager holds on ``log_dir`` (``None``: not one of its live directories), for a log it does
        not manage in that directory, such as a broker's metadata log, to open under."""
        return self._dir_locks.get(Path(log_dir).resolve()) or self._dir_locks.get(Path(log_dir))

    def __repr__(self) -> str:
        return f"LogManager(log_dirs={[str(d) for d in self.log_dirs]}, logs={len(self._logs)})"


def _shown(text: str) -> str:
    """``text`` with the bytes of a file name that are not UTF-8 (Python's surrogate escapes, ``\\udcff``) shown
    as ``\\xff``: a log handler writing UTF-8 (a file, a pipe, pytest-xdist's channel) cannot encode a lone
    surrogate, and would drop the warning."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
