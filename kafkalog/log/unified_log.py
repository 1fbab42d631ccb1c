"""Log: a partition's append-only sequence of segments.

Port of ``kafka/log/Log.scala`` (Kafka 0.10.1.1), with the modern behaviour of ``UnifiedLog.scala``,
``LocalLog.scala`` and ``LogLoader.scala`` (3.8.0) where the spec marks it (§3.10-3.18): loading with
swap-file completion and index checks (:mod:`kafkalog.log.loader`, which the constructor runs), recovery
from the checkpointed recovery point, log start offset,
retention bounded by the high watermark and never taking the last segment, asynchronous deletion,
roll of an empty active segment, truncation, and the ``.cleaned`` -> ``.swap`` -> live swap protocol.

Cut as Kafka 3.x cuts it: :class:`Log` is ``UnifiedLog`` (offsets, high watermark, append validation, the
lock) over a :class:`~kafkalog.log.local_log.LocalLog` (the segments, their files and directory, rolls,
truncation, deletion, flushing) that it holds as ``local_log``; its retention pass is
:class:`~kafkalog.log.retention.LogRetention`'s.

A log is a directory ``<topic>-<partition>`` of segments (:class:`~kafkalog.segment.LogSegment`),
named for their base offsets.  Invariants:

* segments cover increasing, non-overlapping offset ranges; the last one is the *active* segment and
  the only one appended to;
* ``log_start_offset <= high_watermark <= log_end_offset``; the recovery point is the offset up to which
  everything is known to be flushed, and after a crash every segment past it is re-checked;
* one writer at a time: appends, rolls, truncations and deletions hold the log's lock; readers take
  a consistent snapshot of the segment list and never block on a writer's disk I/O for long.

The producer state (idempotent and transactional producers, the last stable offset, ``<offset>.snapshot``
files) is kept as ``UnifiedLog`` keeps it: :class:`~kafkalog.log.producer_state_wiring.LogProducerState` holds the
log's members for it, :mod:`kafkalog.log.producer_state_updates` the per-batch work of append, recovery and
load; the ``.txnindex`` entry of each aborted transaction is written as its marker is appended.  The
leader-epoch cache (``leader-epoch-checkpoint``) is kept as ``UnifiedLog`` keeps it
(:mod:`kafkalog.log.leader_epochs`), and each segment owns its ``.txnindex``
(:class:`~kafkalog.transaction_index.TransactionIndex`): renamed, swapped, truncated and deleted with it, and
read by :meth:`~kafkalog.log.reads.LogReads.collect_aborted_transactions`.  The read side is
:mod:`kafkalog.log.reads`.  Not ported: remote (tiered) storage.  The log appends as a leader does (offsets
assigned) or as a follower does (offsets given, ``assign_offsets=False``).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from .._common import INT32_MAX
from ..append_origin import AppendOrigin
from ..config.log_config import LogConfig
from ..errors import (
    IllegalArgumentError,
    KafkaLogError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    ReadOnlyError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from ..fetch import (
    NO_OP_OFFSETS_LISTENER,
    LogOffsetMetadata,
    LogOffsetsListener,
    LogOffsetSnapshot,
)
from ..filenames import (
    CLEAN_SHUTDOWN_FILE,
)
from ..fsutil import (
    DirLock,
    hold_log_dir,
    storage_error,
)
from ..log_dir_failure_channel import LogDirFailureChannel, Message
from ..producer_state import ProducerStateManager, ProducerStateManagerConfig, VerificationGuard
from ..record import MemoryRecords
from ..record.batch import RecordBatch
from ..record.types import TimestampType
from ..scheduler import SYSTEM_TIME, KafkaScheduler, Scheduler, Time
from ..segment import LogSegment
from ..topic import FUTURE_DIR_SUFFIX, TopicPartition, parse_topic_partition_name
from .append_info import LogAppendInfo, analyze_and_validate_records, trim_invalid_bytes
from .leader_append import append_one_batch_as_leader
from .leader_epochs import LogLeaderEpochs
from .loader import LoadReport, LogLoader
from .local_log import LocalLog, _DescribedDeletion
from .pending_deletions import UndeletedFile
from .producer_state_updates import analyze_and_validate_producer_state, take_snapshot_if_possible
from .producer_state_wiring import (
    DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
    LogProducerState,
)
from .reads import (
    LogReads,
)
from .retention import LogRetention
from .segments import LogSegments
from .validator import validate_messages_and_assign_offsets

__all__ = ["Log"]

logger = logging.getLogger("kafkalog.log")  # the log's logger keeps the name it had before the log became a package




class Log(LogRetention, LogLeaderEpochs, LogProducerState, LogReads):
    """A partition's log (Kafka: ``Log`` / ``UnifiedLog``).

    ``Log(dir, config)`` opens (or creates) the log in ``dir``, recovering it when the last shutdown was
    not clean.  ``read_only=True`` opens a live or archived broker directory without changing a byte:
    nothing is recovered, trimmed, renamed or deleted, no lock is taken, and writes raise
    :class:`ReadOnlyError`; a directory with no segment reads as the empty log a broker would create in it,
    from ``log_start_offset``.

    An I/O error while the log appends, flushes, rolls, truncates, reads, deletes or closes takes its log dir
    (``dir``'s parent) offline, as Kafka's ``maybeHandleIOException`` does: that call and every later one of that
    kind, on any log sharing ``log_dir_failure_channel``, raise :class:`KafkaStorageError` naming the dir (a
    :class:`~kafkalog.log_dir_failure_channel.LogDirFailureChannel`; a log opened on its own makes its own, a
    :class:`~kafkalog.manager.log_manager.LogManager` shares one among its logs).  Nothing more is written:
    :meth:`close` then releases the files and raises, and the next open recovers what the dir holds.  The offsets, the
    high watermark and the other in-memory answers stay readable, as in Kafka.  A read-only log takes nothing
    offline (kafkalog's): each failing read raises, and the next may succeed.

    A log opened for writing holds its log dir (``dir``'s parent) for as long as it is open, as a broker's
    ``LogManager`` does (kafkalog's addition: Kafka's ``UnifiedLog`` is only ever opened by its manager).
    ``dir_lock`` is the log dir's :class:`~kafkalog.fsutil.DirLock` when the caller holds it (a
    :class:`~kafkalog.manager.log_manager.LogManager` passes its own); without one the log takes the lock itself, shared
    with the other writable logs of that log dir in this process, so another process, or a LogManager, cannot
    open the log dir for writing meanwhile (:func:`~kafkalog.fsutil.hold_log_dir`).  The first writer of a log
    dir removes its ``.kafka_cleanshutdown`` marker before loading, as Kafka's ``LogManager.loadLogs`` does;
    ``had_clean_shutdown`` (``None``: what the marker said) decides whether this log is recovered.

    The producer state is Kafka's: ``producer_state_manager_config`` gives ``producer.id.expiration.ms``
    (Kafka's broker default, one day) and ``transaction.partition.verification.enable`` (off by default here:
    kafkalog has no transaction coordinator to verify with, as Kafka's ``LogTestUtils.createLog`` has it off);
    ``max_transaction_timeout_ms`` is the broker's ``transaction.max.timeout.ms``; expired producers are
    forgotten every ``producer_id_expiration_check_interval_ms`` by the scheduler.  A read-only open keeps an
    empty producer state (rebuilding it writes snapshots).

    Raises:
        LogDirInUseError: another writer holds the log dir, or this partition is open for writing already.
        KafkaStorageError: the directory or a file of it cannot be read, written or locked.
    """

    def __init__(self, dir: str | os.PathLike[str], config: LogConfig | None = None, *,
                 log_start_offset: int = 0, recovery_point: int = 0, scheduler: Scheduler | None = None,
                 time: Time | None = None, read_only: bool = False, had_clean_shutdown: bool | None = None,
                 topic_partition: TopicPartition | None = None,
                 recovery_progress: Callable[[int, int], None] | None = None,
                 log_offsets_listener: LogOffsetsListener | None = None, dir_lock: DirLock | None = None,
                 producer_state_manager_config: ProducerStateManagerConfig | None = None,
                 max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
                 producer_id_expiration_check_interval_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
                 log_dir_failure_channel: LogDirFailureChannel | None = None,
                 ) -> None:
        dir = Path(dir)
        self.time = time if time is not None else SYSTEM_TIME
        self.read_only = read_only
        # The path, not its last component: the error names the directory by its real (canonical) path.
        self.topic_partition = topic_partition if topic_partition is not None else parse_topic_partition_name(dir)
        # A writer holds the log dir before it touches a file of it; a reader takes nothing.
        self._dir_hold = None if read_only else hold_log_dir(dir, dir_lock)
        # A writer that holds its log dir itself is also its own LogManager, whose shutdown flushes each log
        # (the active segment too) before it closes it: see close.
        self._flushes_at_close = not read_only and dir_lock is None
        if self._dir_hold is not None:
            # A log dropped without close is an unclean close: its next open in this process recovers it.
            weakref.finalize(self, self._dir_hold.release, False)
        self._lock = threading.RLock()
        self._owns_scheduler = scheduler is None
        if scheduler is None:
            scheduler = KafkaScheduler(1, thread_name_prefix=f"kafkalog-{self.topic_partition}-")
            if not read_only:
                scheduler.startup()
        self.scheduler = scheduler
        self._closed = False
        #: The files closing the log could not delete, with the reason: segments and producer snapshots it had
        #: renamed ``.deleted`` and scheduled for deletion, which a close deletes (kafkalog's; see
        #: :meth:`close`).  They stay ``.deleted``, and the next open deletes them.
        self.undeleted_files: list[UndeletedFile] = []
        self.segments = LogSegments(self.topic_partition)
        #: The segments on local disk, their directory, files and recovery point
        #: (:class:`~kafkalog.log.local_log.LocalLog`, Kafka: ``localLog``); the log end offset is set when
        #: loading ends.
        self.local_log = LocalLog(dir, config if config is not None else LogConfig(), self.segments, recovery_point,
                                  LogOffsetMetadata(0), scheduler, self.time, self.topic_partition, self._lock,
                                  log_dir_failure_channel, read_only=read_only)
        #: What opening the log changed on disk (:class:`~kafkalog.log.loader.LoadReport`).
        self.load_report = LoadReport()
        self._high_watermark: int | None = None
        #: Whether Kafka's high-watermark metadata would know only its offset (``messageOffsetOnly``): set by an
        #: offset below the log end, not by the log end's metadata or one with a position.  Only such a high
        #: watermark is converted, and moved, by :meth:`fetch_high_watermark_metadata`.
        self._high_watermark_offset_only = True
        self._log_offsets_listener = NO_OP_OFFSETS_LISTENER
        self._log_start_offset = log_start_offset
        self._first_unstable_offset_metadata: LogOffsetMetadata | None = None
        if had_clean_shutdown is None:
            # A reader does not recover either way; a writer trusts the marker its log dir's lock took.
            had_clean_shutdown = self._dir_hold.had_clean_shutdown if self._dir_hold is not None else \
                (self.dir.parent / CLEAN_SHUTDOWN_FILE).is_file()
        self.had_clean_shutdown = had_clean_shutdown
        # Made by the loader once the directory exists, before it loads the segments: recovery refills it and
        # loading ends by truncating it to the loaded log (Kafka: UnifiedLog.apply makes it before LogLoader), so
        # a stale checkpoint (its truncations are written asynchronously) is fixed there.
        self.leader_epoch_cache = None
        # Told (bytes checked, bytes to check) as recovery checks each segment: the role of Kafka 3.x's
        # "N/M recovered" log lines, for a caller that draws a progress bar.
        try:
            #: The producer ids and transactions of this partition (Kafka: ``producerStateManager``); it lists
            #: the snapshot files, so it is made inside the error handling of the load.
            self.producer_state_manager = ProducerStateManager(
                self.topic_partition, dir, max_transaction_timeout_ms,
                producer_state_manager_config if producer_state_manager_config is not None
                else ProducerStateManagerConfig(transaction_verification_enabled=False), self.time)
            loaded = LogLoader(self, log_start_offset, recovery_point, recovery_progress).load()
            self.recovery_point = loaded.recovery_point
            self._log_start_offset = loaded.log_start_offset
            self._update_log_end_offset(loaded.next_offset)
            # Kafka's constructor (updateLogStartOffset, updateLocalLogStartOffset): nothing below the log
            # start offset is read again, so the recovery point is never below it.
            if self.recovery_point < self._log_start_offset:
                self.recovery_point = self._log_start_offset
            self._maybe_increment_first_unstable_offset()
        except BaseException as e:
            self.segments.close_handlers()
            if self._owns_scheduler and self.scheduler.is_started:
                self.scheduler.shutdown()
            self._release_dir_hold(clean=False)
            if isinstance(e, OSError) and not isinstance(e, KafkaLogError):
                # A file the loader cannot open or remove (no permission, a directory in its place): Kafka's
                # IOException, which takes the log dir offline; here the caller's KafkaStorageError.
                raise storage_error(e, f"Error while loading the log in {self.dir}") from e
            raise
        # Kafka's constructor tells the listener the initial high watermark.
        if log_offsets_listener is not None:
            self._log_offsets_listener = log_offsets_listener
        self._log_offsets_listener.on_high_watermark_updated(self.high_watermark)
        # Kafka: producerExpireCheck.  A scheduler not started (a read-only log's own) runs no check; the task
        # holds the log weakly, so a log dropped without close is still collected (and recovered next time).
        self._producer_expire_check = None
        if not read_only and self.scheduler.is_started:
            log_ref = weakref.ref(self)

            def expire_producers() -> None:
                log = log_ref()
                if log is not None:
                    log.remove_expired_producers(log.time.milliseconds())

            self._producer_expire_check = self.scheduler.schedule(
                "PeriodicProducerExpirationCheck", expire_producers, producer_id_expiration_check_interval_ms,
                producer_id_expiration_check_interval_ms)

    # -- segments the loader and the cleaner make (Kafka: LocalLog.splitOverflowedSegment, createNewCleanedSegment)

    def split_overflowed_segment(self, segment: LogSegment) -> list[LogSegment]:
        """Split a segment whose offsets outgrew its 4-byte relative range into segments that each fit, and
        swap them in (Kafka: ``UnifiedLog.splitOverflowedSegment`` over ``LocalLog.splitOverflowedSegment``,
        KAFKA-6264; :meth:`~kafkalog.log.local_log.LocalLog.split_overflowed_segment`)."""
        with self._lock:
            self._check_writable("split a segment of")
            new_segments = self.local_log.split_overflowed_segment(segment)
            self._delete_producer_snapshots([segment], async_delete=True)
            return new_segments

    def create_cleaned_segment(self, base_offset: int) -> LogSegment:
        """A new, empty ``.cleaned`` segment at ``base_offset``, for the cleaner to write the retained records
        into before :meth:`replace_segments` swaps it in (Kafka 3.8: ``LocalLog.createNewCleanedSegment``,
        which the cleaner calls through ``UnifiedLog``; 0.10.1's cleaner built the files itself)."""
        return self.local_log.create_new_cleaned_segment(base_offset)

    # -- what the log holds -------------------------------------------------------------------------

    @property
    def dir(self) -> Path:
        """The log's directory, ``<topic>-<partition>``; :meth:`rename_dir` changes it (Kafka: ``dir``)."""
        return self.local_log.dir

    @property
    def log_dir_failure_channel(self) -> LogDirFailureChannel:
        """Where the I/O errors of the log dir go, and whether it is offline (Kafka: ``logDirFailureChannel``)."""
        return self.local_log.log_dir_failure_channel

    @property
    def is_log_dir_offline(self) -> bool:
        """Whether an I/O error took the log dir offline, so that the log refuses its files (kafkalog's)."""
        return self.local_log.log_dir_failure_channel.has_offline_log_dir(self.local_log.parent_dir)

    def _maybe_handle_io_exception(self, message: Message) -> AbstractContextManager[None]:
        """Kafka: ``UnifiedLog.maybeHandleIOException``
        (:meth:`~kafkalog.log.local_log.LocalLog.maybe_handle_io_exception`)."""
        return self.local_log.maybe_handle_io_exception(message)

    def _append_failure_message(self) -> str:
        return f"Error while appending records to {self.topic_partition} in dir {self.local_log.parent_dir}"

    @property
    def config(self) -> LogConfig:
        """Kafka: ``config``.  Assigning it is :meth:`update_config` without the lock and the warning."""
        return self.local_log.config

    @config.setter
    def config(self, config: LogConfig) -> None:
        self.local_log.config = config

    @property
    def recovery_point(self) -> int:
        """The first offset not known to be flushed: recovery after a crash checks from there (Kafka:
        ``recoveryPoint``)."""
        return self.local_log.recovery_point

    @recovery_point.setter
    def recovery_point(self, offset: int) -> None:
        self.local_log.recovery_point = offset

    @property
    def name(self) -> str:
        """The directory name, ``topic-partition`` (Kafka: ``name``)."""
        return self.dir.name

    @property
    def parent_dir(self) -> str:
        """The log directory (``log.dirs`` entry) holding this partition's directory, as a string, as Kafka's
        ``parentDir`` is."""
        return str(self.dir.parent)

    @property
    def parent_dir_file(self) -> Path:
        """Kafka: ``parentDirFile``."""
        return self.dir.parent

    @property
    def is_future(self) -> bool:
        """Whether this is a replica being moved to another log directory (Kafka: ``isFuture``)."""
        return self.dir.name.endswith(FUTURE_DIR_SUFFIX)

    def _active(self) -> LogSegment:
        segment = self.segments.last_segment()
        if segment is None:
            raise KafkaLogError(f"Log {self.dir} has no segment")
        return segment

    @property
    def active_segment(self) -> LogSegment:
        """The segment appends go to (Kafka: ``activeSegment``)."""
        return self._active()

    def log_segments(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]:
        """The segments, or those holding offsets in ``[from_offset, to_offset)`` (Kafka: ``logSegments``)."""
        return self.segments.values(from_offset, to_offset)

    def non_active_log_segments_from(self, from_offset: int) -> list[LogSegment]:
        """The segments from the one holding ``from_offset`` up to, not including, the active one (Kafka:
        ``nonActiveLogSegmentsFrom``)."""
        with self._lock:
            return self.segments.non_active_log_segments_from(from_offset)

    def get_first_batch_timestamp_for_segments(self, segments: list[LogSegment]) -> list[int]:
        """Each segment's first batch timestamp, ``Long.MAX`` for an empty one (Kafka:
        ``getFirstBatchTimestampForSegments``; takes no lock, as the cleaner calls it on segments that retention
        cannot touch meanwhile)."""
        return [segment.get_first_batch_timestamp() for segment in segments]

    @property
    def number_of_segments(self) -> int:
        """How many segments the log has (Kafka: ``numberOfSegments``)."""
        return len(self.segments)

    @property
    def size(self) -> int:
        """Bytes in all segments (Kafka: ``UnifiedLog.size``, a parameterless ``def``, hence a property here,
        as :attr:`log_end_offset` and :attr:`number_of_segments` are; a segment's ``size()`` stays a method, as
        ``LogSegment.size`` is one in Kafka's Java)."""
        return self.segments.size_in_bytes()

    @property
    def log_start_offset(self) -> int:
        """The first offset a reader may fetch (Kafka: ``logStartOffset``)."""
        return self._log_start_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        """The next offset to be appended and where it will go (Kafka: ``logEndOffsetMetadata``)."""
        return self.local_log.next_offset_metadata

    @property
    def log_end_offset(self) -> int:
        """The next offset to be appended (Kafka: ``logEndOffset``)."""
        return self.local_log.next_offset_metadata.message_offset

    @property
    def high_watermark(self) -> int:
        """The offset up to which records are committed (Kafka: ``highWatermark``).

        kafkalog's deviation: until someone sets it, the high watermark *follows the log end offset*, as a
        log with no replicas to wait for would have it (Kafka starts it at the log start offset and only a
        partition's leader or follower moves it).  Once set (:meth:`update_high_watermark` and the others,
        or assigning this property) it stays where it was put, as Kafka's does, until set again, lowered by
        a truncation, or released by assigning ``None``.
        """
        hw = self._high_watermark
        return self.log_end_offset if hw is None else min(hw, self.log_end_offset)

    @high_watermark.setter
    def high_watermark(self, offset: int | None) -> None:
        """:meth:`update_high_watermark`; ``None`` makes the high watermark follow the log end offset again."""
        with self._lock:
            if offset is None:
                self._high_watermark = None
                self._on_high_watermark_updated(self.log_end_offset)
                self._log_offsets_listener.on_high_watermark_updated(self.log_end_offset)
            else:
                self.update_high_watermark(offset)

    def update_high_watermark(self, hw: int | LogOffsetMetadata) -> int:
        """Set the high watermark to ``hw``, bounded below by the log start offset and above by the log end
        offset, and return where it was set (Kafka: ``updateHighWatermark``, a leader's initial one)."""
        offset = hw.message_offset if isinstance(hw, LogOffsetMetadata) else hw
        with self._lock:
            end_offset = self.log_end_offset
            if offset < self._log_start_offset:
                new_high_watermark = self._log_start_offset
            elif offset >= end_offset:
                new_high_watermark = end_offset
            else:
                new_high_watermark = offset
            self._update_high_watermark_metadata(new_high_watermark, offset_only=new_high_watermark < end_offset and (
                not isinstance(hw, LogOffsetMetadata) or hw.message_offset_only or offset < self._log_start_offset))
            return new_high_watermark

    def maybe_increment_high_watermark(self, new_high_watermark: LogOffsetMetadata) -> LogOffsetMetadata | None:
        """Move the high watermark up to ``new_high_watermark`` if that is higher, or the same offset in a
        newer segment, and return the old one; ``None`` when it did not move (Kafka:
        ``maybeIncrementHighWatermark``, a leader's as its followers catch up).

        Raises:
            IllegalArgumentError: ``new_high_watermark`` is past the log end offset.
        """
        if new_high_watermark.message_offset > self.log_end_offset:
            raise IllegalArgumentError(
                f"High watermark {new_high_watermark} update exceeds current log end offset "
                f"{self.log_end_offset_metadata}")
        with self._lock:
            old_high_watermark = self.fetch_high_watermark_metadata()
            if (old_high_watermark.message_offset < new_high_watermark.message_offset
                    or (old_high_watermark.message_offset == new_high_watermark.message_offset
                        and old_high_watermark.on_older_segment(new_high_watermark))):
                self._update_high_watermark_metadata(new_high_watermark.message_offset,
                                                     offset_only=new_high_watermark.message_offset_only)
                return old_high_watermark
            return None

    def maybe_update_high_watermark(self, hw: int) -> int | None:
        """:meth:`update_high_watermark`, returning the new high watermark if it changed, else ``None``
        (Kafka: ``maybeUpdateHighWatermark``, a follower's after it fetched from its leader)."""
        with self._lock:
            old_high_watermark = self.high_watermark
            new_high_watermark = self.update_high_watermark(hw)
            return None if new_high_watermark == old_high_watermark else new_high_watermark

    def fetch_high_watermark_metadata(self) -> LogOffsetMetadata:
        """The high watermark with its segment and position (Kafka: ``fetchHighWatermarkMetadata``, which
        caches the position; kafkalog keeps only the offset and looks the position up).

        As Kafka's, the metadata found becomes the high watermark: an offset that no batch holds although it is
        below the log end offset (a truncation inside a batch leaves the log end offset there, past the last
        batch) converts to the log end's metadata, and the high watermark moves up to it.  Kafka converts only a
        high watermark that knows no position yet (one set below the log end by offset); one set with a
        position stays where it is."""
        with self._lock:
            metadata = self.maybe_convert_to_offset_metadata(self.high_watermark)
            if self._high_watermark_offset_only:
                if metadata.message_offset != self.high_watermark:
                    self._update_high_watermark_metadata(metadata.message_offset,
                                                         offset_only=metadata.message_offset_only)
                else:
                    self._high_watermark_offset_only = metadata.message_offset_only
            return metadata

    def fetch_offset_snapshot(self) -> LogOffsetSnapshot:
        """The log start offset, log end offset, high watermark and last stable offset, the last three with
        their positions (Kafka: ``fetchOffsetSnapshot``)."""
        with self._lock:
            last_stable = self.fetch_last_stable_offset_metadata()
            high_watermark = self.fetch_high_watermark_metadata()
            return LogOffsetSnapshot(self._log_start_offset, self.log_end_offset_metadata, high_watermark,
                                     last_stable)

    def _update_high_watermark_metadata(self, new_high_watermark: int, offset_only: bool = False) -> None:
        """Kafka: ``updateHighWatermarkMetadata``: set the high watermark and tell the listener
        (``offset_only``: Kafka's metadata would know only the offset)."""
        if new_high_watermark < 0:
            raise IllegalArgumentError("High watermark offset should be non-negative")
        with self._lock:
            self._high_watermark_offset_only = offset_only
            if new_high_watermark < self.high_watermark:
                logger.warning("Non-monotonic update of high watermark from %d to %d", self.high_watermark,
                               new_high_watermark)
            self._high_watermark = new_high_watermark
            self._on_high_watermark_updated(new_high_watermark)
            self._log_offsets_listener.on_high_watermark_updated(new_high_watermark)
        logger.debug("Setting high watermark %d", new_high_watermark)

    def set_log_offsets_listener(self, listener: LogOffsetsListener) -> None:
        """Kafka: ``setLogOffsetsListener``; the new listener hears of the next change, not the current value."""
        self._log_offsets_listener = listener

    def unflushed_messages(self) -> int:
        """Offsets appended since the last flush (Kafka: ``unflushedMessages``)."""
        return self.log_end_offset - self.recovery_point

    @property
    def last_flush_time(self) -> int:
        """When the log was last flushed, in ms (Kafka: ``lastFlushTime``)."""
        return self.local_log.last_flush_time

    def _update_log_end_offset(self, offset: int) -> None:
        """Set the log end offset (``LocalLog.updateLogEndOffset``, which keeps the recovery point at or below
        it), then bring the high watermark along (:meth:`_update_high_watermark_with_log_end_offset`)."""
        self.local_log.update_log_end_offset(offset)
        self._update_high_watermark_with_log_end_offset()

    def _update_high_watermark_with_log_end_offset(self) -> None:
        """Kafka: ``UnifiedLog.updateHighWatermarkWithLogEndOffset``, after the log end offset moved: a high
        watermark at or past the new end is brought to it (after a truncation, or a roll that moved the end's
        position), and the listener told.  A high watermark that follows the log end offset (nobody set it)
        moves with it, and the listener hears of every move."""
        offset = self.log_end_offset
        if self._high_watermark is None:
            self._on_high_watermark_updated(offset)
            self._log_offsets_listener.on_high_watermark_updated(offset)
        elif self._high_watermark >= offset:
            self._update_high_watermark_metadata(offset)

    def update_config(self, new_config: LogConfig) -> LogConfig:
        """Use ``new_config`` from now on and return the old one (Kafka 3.8: ``UnifiedLog.updateConfig`` /
        ``LocalLog.updateConfig``).  Segments already written keep their files; the new values apply to the
        next append, roll, flush, retention pass and cleaning.  A lower message format is logged, as Kafka
        logs it; a change of message format makes the leader-epoch cache again (none below v2, and its
        checkpoint deleted)."""
        with self._lock:
            old_config = self.local_log.update_config(new_config)
            if new_config.record_version() != old_config.record_version():
                self._initialize_leader_epoch_cache()
            return old_config

    def _check_writable(self, what: str) -> None:
        if self._closed:
            raise KafkaStorageError(f"Cannot {what} log {self.dir}: it is closed")
        if self.read_only:
            raise ReadOnlyError(f"Cannot {what} log {self.dir}: it was opened read-only")

    # -- appending ----------------------------------------------------------------------------------

    def append(self, records: MemoryRecords | bytes, assign_offsets: bool = True, *,
               leader_epoch: int = -1, origin: AppendOrigin | str | None = None,
               ignore_record_size: bool | None = None,
               verification_guard: VerificationGuard = VerificationGuard.SENTINEL) -> LogAppendInfo:
        """Append ``records`` to the active segment, rolling first if needed (Kafka: ``append``).

        With ``assign_offsets`` (a leader's append) offsets are given from the log end offset, timestamps
        set for LogAppendTime topics and the records converted or recompressed as the topic's
        configuration asks.  Without it (a follower's append, or a Raft leader's) the records keep their
        offsets, whose first must not be below the log end offset (else :class:`UnexpectedAppendOffsetError`),
        and their partition leader epochs, which a v2 batch must have (else :class:`IllegalArgumentError`, as
        Kafka's leader-epoch cache refuses ``-1``; a leader's append given no ``leader_epoch`` stamps ``-1`` and is
        kafkalog's exception, :mod:`kafkalog.log.leader_epochs`).
        ``origin`` is Kafka's ``AppendOrigin`` (``client`` for a leader's append by default, ``replication``
        for a follower's; a ``coordinator`` may write transaction markers, which a client may not);
        ``ignore_record_size`` skips the ``max.message.bytes`` check (by default, for an append that keeps
        its offsets).  Returns what was appended, with the log start offset of the moment in
        ``log_start_offset`` (Kafka fills it in ``analyzeAndValidateRecords``, so an append of no batch carries
        it too); invalid trailing bytes are dropped, a batch past ``max.message.bytes`` is a
        :class:`RecordTooLargeError` and an append larger than ``segment.bytes`` a :class:`RecordBatchTooLargeError`.

        Batches with a producer id are checked against the producer state before anything is written
        (:func:`~kafkalog.log.producer_state_updates.analyze_and_validate_producer_state`): a ``client`` batch
        repeating one of its producer's last five appends nothing and returns the original offsets; a sequence
        gap, a fenced epoch or a transaction out of place raises :class:`~kafkalog.errors.OutOfOrderSequenceError`,
        :class:`~kafkalog.errors.InvalidProducerEpochError`, :class:`~kafkalog.errors.InvalidTxnStateError` or
        :class:`~kafkalog.errors.TransactionCoordinatorFencedError`.  After the write the producers are updated,
        each transaction a marker completes gets its transaction-index entry, and the first unstable offset
        moves.  ``verification_guard`` is the guard of :meth:`maybe_start_transaction_verification` when
        transaction verification is on.

        A client's one uncompressed v2 batch with no producer id (a producer's linger-0 request) goes through the
        same steps fused, with one kernel call and no object between them
        (:func:`~kafkalog.log.leader_append.append_one_batch_as_leader`); it gives the same files, state, answer
        and errors, and anything it does not take runs the steps above.
        """
        if not isinstance(records, MemoryRecords):
            records = MemoryRecords(records)
        now_ms = None
        if assign_offsets and not ignore_record_size and (origin is None or origin is AppendOrigin.CLIENT):
            # A client's one-batch request, the commonest, by one fused pass when it qualifies; when it does not,
            # nothing is written and the general path below runs (with the time already read, if it was).
            fused = append_one_batch_as_leader(self, records, leader_epoch)
            if isinstance(fused, LogAppendInfo):
                return fused
            now_ms = fused
        if origin is None:
            origin = AppendOrigin.CLIENT if assign_offsets else AppendOrigin.REPLICATION
        if ignore_record_size is None:
            # A follower takes what its leader accepted: Kafka's appendAsFollower does not re-check sizes.
            ignore_record_size = not assign_offsets
        # A follower's offsets are kept, so they must increase: the pass checks that (Kafka passes
        # requireOffsetsMonotonic = !validateAndAssignOffsets).  The batches it reads are kept for the
        # validator, which then need not scan the buffer again.  The log start offset is read before the
        # lock, as Kafka reads its volatile field, and goes back with every answer, an empty append's too.
        scanned: list[RecordBatch] = []
        append_info = analyze_and_validate_records(records, self.config, origin=origin,
                                                   ignore_record_size=ignore_record_size,
                                                   require_offsets_monotonic=not assign_offsets,
                                                   leader_epoch=leader_epoch, log_start_offset=self._log_start_offset,
                                                   topic_partition=str(self.topic_partition), scanned=scanned)
        if append_info.shallow_count == 0:
            return append_info
        valid_records = trim_invalid_bytes(records, append_info)
        with self._lock, self._maybe_handle_io_exception(self._append_failure_message):
            self._check_writable("append to")
            config = self.local_log.config  # once, not a property hop per use
            if assign_offsets:
                offset = self.log_end_offset
                append_info.first_offset = offset
                result = validate_messages_and_assign_offsets(
                    valid_records, offset, self.time.milliseconds() if now_ms is None else now_ms, config,
                    source_compression=append_info.source_compression, origin=origin,
                    partition_leader_epoch=leader_epoch, batches=scanned if valid_records is records else None)
                valid_records = result.valid_records
                append_info.max_timestamp = result.max_timestamp
                append_info.shallow_offset_of_max_timestamp = result.shallow_offset_of_max_timestamp
                append_info.last_offset = result.last_offset
                append_info.record_validation_stats = result.record_validation_stats
                # Only a LogAppendTime topic's append carries the time (Kafka: setLogAppendTime under that test).
                if config.message_timestamp_type is TimestampType.LOG_APPEND_TIME:
                    append_info.log_append_time = result.log_append_time
                if result.message_size_maybe_changed:
                    for batch in valid_records.batches():
                        if batch.size_in_bytes > config.max_message_size:
                            raise RecordTooLargeError(
                                f"Message batch size is {batch.size_in_bytes} bytes in append to partition "
                                f"{self.topic_partition} which exceeds the maximum configured size of "
                                f"{config.max_message_size}.")
            else:
                if append_info.first_or_last_offset_of_first_batch < self.log_end_offset:
                    # The log may still take it if it is empty: a leader's log start offset need not be at
                    # a batch boundary (after deleteRecords), so a follower fetching from it can get this.
                    known_first = append_info.first_offset
                    has_first_offset = known_first is not None and known_first >= 0
                    first_offset = known_first if known_first is not None and known_first >= 0 else \
                        next(iter(records.batches())).base_offset
                    first_or_last = "First offset" if has_first_offset else "Last offset of the first batch"
                    raise UnexpectedAppendOffsetError(
                        f"Unexpected offset in append to {self.topic_partition}. {first_or_last} "
                        f"{append_info.first_or_last_offset_of_first_batch} is less than the next offset "
                        f"{self.log_end_offset}. Last offsets of the first 10 batches in append: "
                        f"{[b.last_offset for b in list(valid_records.batches())[:10]]}, last offset in append: "
                        f"{append_info.last_offset}. Log start offset = {self._log_start_offset}",
                        first_offset, append_info.last_offset)
            # The epoch stamped by the leader, or carried by the follower's batches (Kafka: before the write).
            self._assign_epochs_of_append(valid_records, (leader_epoch, offset, config.record_version())
                                          if assign_offsets else None)
            size = valid_records.size_in_bytes()
            if size > config.segment_size:
                raise RecordBatchTooLargeError(
                    f"Message batch size is {size} bytes in append to partition {self.topic_partition}, which "
                    f"exceeds the maximum configured segment size of {config.segment_size}.")
            segment = self._maybe_roll(size, append_info)
            # Only batches with a producer id concern the producer state; the scan saw them all already.
            with_producers = not scanned or any(batch.has_producer_id for batch in scanned)
            update = None
            if with_producers:
                update = analyze_and_validate_producer_state(
                    self.producer_state_manager,
                    LogOffsetMetadata(append_info.first_or_last_offset_of_first_batch, segment.base_offset,
                                      segment.size()),
                    valid_records.batches(), AppendOrigin.of(origin), verification_guard)
                duplicate = update.duplicate
                if duplicate is not None:
                    append_info.first_offset = duplicate.first_offset
                    append_info.last_offset = duplicate.last_offset
                    append_info.log_append_time = duplicate.timestamp
                    append_info.log_start_offset = self._log_start_offset
                    return append_info
            # The log end offset moves at once: a failed transaction-index write below must not let later
            # offsets go back (recovery mends the index).
            self.local_log.append(append_info.last_offset, append_info.max_timestamp,
                                  append_info.shallow_offset_of_max_timestamp, valid_records)
            self._update_high_watermark_with_log_end_offset()
            producer_state = self.producer_state_manager
            if update is not None:
                update.apply(producer_state, segment)
            producer_state.update_map_end_offset(append_info.last_offset + 1)
            if self._high_watermark is None:
                # A high watermark that follows the log end offset has passed the markers just written.
                producer_state.on_high_watermark_updated(self.log_end_offset)
            self._maybe_increment_first_unstable_offset()
            if logger.isEnabledFor(logging.DEBUG):  # its arguments cost a property read an append
                logger.debug("Appended message set with last offset: %d, first offset: %s, next offset: %d, "
                             "and messages: %s", append_info.last_offset, append_info.first_offset,
                             self.log_end_offset, valid_records)
            if self.unflushed_messages() >= config.flush_interval:
                self.flush()
        return append_info

    def append_as_leader(self, records: MemoryRecords | bytes, leader_epoch: int = -1,
                         origin: AppendOrigin | str = AppendOrigin.CLIENT,
                         verification_guard: VerificationGuard = VerificationGuard.SENTINEL) -> LogAppendInfo:
        """Kafka: ``appendAsLeader``: offsets assigned and the leader's epoch stamped, except for a Raft
        leader (``origin="raft_leader"``, the KRaft metadata log), whose batches come with their offsets and
        epoch, which are checked instead."""
        origin = AppendOrigin.of(origin)
        validate_and_assign_offsets = origin is not AppendOrigin.RAFT_LEADER
        return self.append(records, validate_and_assign_offsets, leader_epoch=leader_epoch, origin=origin,
                           ignore_record_size=False, verification_guard=verification_guard)

    def append_as_follower(self, records: MemoryRecords | bytes) -> LogAppendInfo:
        """Kafka: ``appendAsFollower``: the records keep their offsets and epochs, and each v2 batch's epoch is
        assigned to the leader-epoch cache, so one without an epoch (``-1``) is refused, as in Kafka
        (:class:`~kafkalog.errors.IllegalArgumentError`, :mod:`kafkalog.log.leader_epochs`)."""
        return self.append(records, False)

    def _maybe_roll(self, messages_size: int, append_info: LogAppendInfo) -> LogSegment:
        """Roll if the active segment is full, old or cannot hold the new offsets (Kafka: ``maybeRoll``)."""
        return self._maybe_roll_at(messages_size, append_info.first_offset, append_info.last_offset,
                                   append_info.max_timestamp)

    def _maybe_roll_at(self, messages_size: int, first_offset: int | None, last_offset: int,
                       max_timestamp: int) -> LogSegment:
        """:meth:`_maybe_roll` with the append's first and last offsets and max timestamp as arguments, as the
        fused leader append (:mod:`kafkalog.log.leader_append`) has them, without a :class:`LogAppendInfo`."""
        segment = self._active()
        now = self.time.milliseconds()
        config = self.local_log.config
        if segment.should_roll_at(config.max_segment_ms(), config.segment_size, max_timestamp, last_offset,
                                  messages_size, now):
            logger.debug("Rolling new log segment (log_size = %d/%d}, offset_index_size = %d/%d, time_index_size "
                         "= %d/%d, inactive_time_ms = %d/%d).", segment.size(), self.config.segment_size,
                         segment.offset_index.entries, segment.offset_index.max_entries,
                         segment.time_index.entries, segment.time_index.max_entries,
                         segment.time_waited_for_roll(now, max_timestamp),
                         self.config.segment_ms - segment.rolling_jitter_ms)
            # A legacy follower append does not say where it starts: it rolls at the lowest offset the new segment
            # could need, so its base is never above the append (Kafka's heuristic).
            roll_offset = first_offset if first_offset is not None else max(last_offset - INT32_MAX, 0)
            return self.roll(roll_offset)
        return segment

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment (Kafka: ``UnifiedLog.roll`` over ``LocalLog.roll``,
        :meth:`~kafkalog.log.local_log.LocalLog.roll`).

        Its base offset is the larger of ``expected_next_offset`` and the log end offset.  An empty
        active segment at that base is replaced (KAFKA-6388; 3.3+ ``createAndDeleteSegment``): its files are
        renamed ``.deleted``, the new segment is opened under their names and takes its place in the map, so
        the log is never without an active segment.
        Any other segment at that base is an error, as is a base below the active segment's.  The previous
        segment is trimmed and, as ``UnifiedLog.roll`` does, flushed in the background.

        An I/O error takes the log dir offline (see the class docstring).  Kafka handles only
        ``LocalLog.roll``'s and lets one of the producer snapshot escape as it is (an append's handler then takes
        it); kafkalog handles both, so a roll fails the same way whoever calls it.
        """
        with self._lock:
            self._check_writable("roll")
            with self._maybe_handle_io_exception(lambda: f"Error while rolling log segment for "
                                                         f"{self.topic_partition} in dir {self.local_log.parent_dir}"):
                segment = self.local_log.roll(expected_next_offset)
                # The snapshot at the new base lets recovery start from it and scan this segment alone; the state
                # covers the log end offset, which the base may be past, so its end offset is set first.
                self.producer_state_manager.update_map_end_offset(segment.base_offset)
                snapshot = self.producer_state_manager.take_snapshot(sync=False)
            self._update_high_watermark_with_log_end_offset()
            new_offset = segment.base_offset

            def flush_rolled() -> None:
                if snapshot is not None:
                    self.flush_producer_state_snapshot(snapshot)
                self.flush(new_offset)

            self.scheduler.schedule("flush-log", flush_rolled, delay_ms=0)
            return segment

    # -- flushing -----------------------------------------------------------------------------------

    def flush(self, offset: int | None = None, *, including_offset: bool = False) -> None:
        """fsync every segment holding offsets in ``[recovery_point, offset)`` and move the recovery point
        to ``offset`` (the log end offset by default) (Kafka 0.10.1: ``flush``; 3.8: ``UnifiedLog.flush``).

        ``including_offset`` flushes the segment holding ``offset`` as well, even when the recovery point
        is there already: ``flush(including_offset=True)`` is Kafka 3.x's ``flush(forceFlushActiveSegment
        = true)``, which a shutdown uses so that an empty active segment (just rolled) gets its lazily
        created index files written; without them the next start would rebuild them as after a crash.

        Raises:
            KafkaStorageError: the fsync failed, which takes the log dir offline, or the dir is offline; the
                recovery point stays where it was.
        """
        if self.read_only or self._closed:
            return
        offset = self.log_end_offset if offset is None else offset
        flush_offset = offset + 1 if including_offset else offset
        how = "inclusive" if including_offset else "exclusive"
        with self._maybe_handle_io_exception(
                lambda: f"Error while flushing log for {self.topic_partition} in dir {self.local_log.parent_dir} with "
                        f"offset {offset} ({how}) and recovery point {offset}"):
            if flush_offset <= self.recovery_point:
                return
            logger.debug("Flushing log up to offset %d (%s), last flushed: %d, current time: %d, unflushed: %d",
                         offset, how, self.last_flush_time, self.time.milliseconds(), self.unflushed_messages())
            self.local_log.flush(flush_offset)
            with self._lock:
                self.local_log.mark_flushed(offset)

    # -- truncation ---------------------------------------------------------------------------------

    def truncate_to(self, target_offset: int) -> bool:
        """Remove every record with offset >= ``target_offset`` (Kafka: ``truncateTo``); ``False`` when there
        is none.  The producer state is rebuilt to ``target_offset``, but :attr:`first_unstable_offset` follows
        only when the high watermark moves (it was at or past the new end), as in Kafka 3.9 and 4.x."""
        if target_offset < 0:
            raise IllegalArgumentError(
                f"Cannot truncate partition {self.topic_partition} to a negative offset ({target_offset}).")
        with self._lock, self._maybe_handle_io_exception(
                lambda: f"Error while truncating log to offset {target_offset} for {self.topic_partition} in dir "
                        f"{self.local_log.parent_dir}"):
            self._check_writable("truncate")
            if target_offset >= self.log_end_offset:
                logger.info("Truncating to %d has no effect as the largest offset in the log is %d",
                            target_offset, self.log_end_offset - 1)
                # A leader that assigned its epoch's start but wrote nothing before another was elected
                # leaves an entry at the log end: always cut it.
                if self.leader_epoch_cache is not None:
                    self.leader_epoch_cache.truncate_from_end_async_flush(self.log_end_offset)
                return False
            logger.info("Truncating to offset %d", target_offset)
            first = self.segments.first_segment()
            if first is not None and first.base_offset > target_offset:
                self.truncate_fully_and_start_at(target_offset)
            else:
                deleted = self.local_log.truncate_to(target_offset)
                self._delete_producer_snapshots(deleted, async_delete=True)
                if self.leader_epoch_cache is not None:
                    self.leader_epoch_cache.truncate_from_end_async_flush(target_offset)
                self._log_start_offset = min(self._log_start_offset, target_offset)
                self._rebuild_producer_state(target_offset)
                # The first unstable offset moves only with the high watermark, as in Kafka: a high watermark
                # left below the new end leaves it as it was until its next update.
                self._update_high_watermark_with_log_end_offset()
            return True

    def truncate_fully_and_start_at(self, new_offset: int, log_start_offset: int | None = None) -> list[LogSegment]:
        """Delete every segment and start again, empty, at ``new_offset``, with the log start offset
        ``log_start_offset`` (``new_offset`` by default) (Kafka: ``truncateFullyAndStartAt``); returns the
        segments deleted, as ``LocalLog.truncateFullyAndStartAt`` does.

        In Kafka 3.x's order (``LocalLog.truncateFullyAndStartAt``): all segments but the last go, then the
        new segment is added before the last old one leaves, so the log is never without an active segment
        (0.10.1 deleted them all first).  A high watermark that was set is then brought to the new end; the
        recovery point becomes ``min(recovery point, new_offset)`` (0.10.1 and 3.x alike): nothing at or past
        ``new_offset`` has been flushed yet.
        """
        with self._lock, self._maybe_handle_io_exception(
                lambda: f"Error while truncating the entire log for {self.topic_partition} in dir "
                        f"{self.local_log.parent_dir}"):
            self._check_writable("truncate")
            logger.debug("Truncate and start at offset %d, logStartOffset: %d", new_offset,
                         new_offset if log_start_offset is None else log_start_offset)
            old = self.local_log.truncate_fully_and_start_at(new_offset)
            if self.leader_epoch_cache is not None:
                self.leader_epoch_cache.clear_and_flush()
            self.producer_state_manager.truncate_fully_and_start_at(new_offset)
            self._log_start_offset = new_offset if log_start_offset is None else log_start_offset
            self._rebuild_producer_state(new_offset)
            self._update_high_watermark_with_log_end_offset()
            self._maybe_increment_first_unstable_offset()
            if self._high_watermark is not None:
                self.update_high_watermark(self.log_end_offset_metadata)
            return old

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """Move the log start offset forward, never past the high watermark (Kafka:
        ``maybeIncrementLogStartOffset``); returns whether it moved."""
        with self._maybe_handle_io_exception(
                lambda: f"Exception while increasing log start offset for {self.topic_partition} to "
                        f"{new_log_start_offset} in dir {self.local_log.parent_dir}"), self._lock:
            if new_log_start_offset > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {new_log_start_offset} of partition "
                    f"{self.topic_partition} since it is larger than the high watermark {self.high_watermark}")
            self.local_log.check_if_memory_mapped_buffer_closed()
            if new_log_start_offset > self._log_start_offset:
                logger.info("Incremented log start offset to %d", new_log_start_offset)
                self._log_start_offset = new_log_start_offset
                if self.leader_epoch_cache is not None:
                    self.leader_epoch_cache.truncate_from_start_async_flush(new_log_start_offset)
                self.recovery_point = max(self.recovery_point, new_log_start_offset)
                self.producer_state_manager.on_log_start_offset_incremented(new_log_start_offset)
                self._maybe_increment_first_unstable_offset()
                return True
            return False

    # -- removing and replacing segments ------------------------------------------------------------

    def add_segment(self, segment: LogSegment) -> LogSegment | None:
        """Kafka: ``addSegment``."""
        return self.segments.add(segment)

    def delete_segment(self, segment: LogSegment) -> None:
        """Remove one segment and delete it in the background (Kafka: ``deleteSegment``)."""
        with self._lock:
            self._check_writable("delete a segment of")
            self.local_log.remove_and_delete_segments([segment], async_delete=True,
                                                      reason=_DescribedDeletion(self.local_log, "a caller's request"))

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment],
                         is_recovered_swap_file: bool = False) -> None:
        """Swap ``new_segments`` (named ``.cleaned``) in for ``old_segments`` so a crash at any step leaves
        one set or the other (Kafka: ``UnifiedLog.replaceSegments`` over ``LocalLog.replaceSegments``, spec
        §3.18; the steps are :meth:`~kafkalog.log.local_log.LocalLog.replace_segments`'s).  The producer snapshots at
        the bases of the old segments no new one takes go with them, as Kafka's ``deletedNotReplaced``."""
        with self._lock:
            self._check_writable("replace segments of")
            new_bases = {segment.base_offset for segment in new_segments}
            deleted_not_replaced = [segment for segment in old_segments
                                    if self.segments.get(segment.base_offset) is segment
                                    and segment.base_offset not in new_bases]
            self.local_log.replace_segments(new_segments, old_segments, is_recovered_swap_file)
            self._delete_producer_snapshots(deleted_not_replaced, async_delete=True)

    # -- closing ------------------------------------------------------------------------------------

    def _release_dir_hold(self, clean: bool) -> None:
        """Leave the log dir's books (:class:`~kafkalog.fsutil.LogDirHold`): ``clean`` after a flush and close
        or a deletion, otherwise the next open of this log in this process recovers it."""
        if self._dir_hold is not None:
            self._dir_hold.release(clean)

    def _stop_own_scheduler(self) -> None:
        """Stop the scheduler this log made for itself, *without* holding the log's lock: its thread may be
        running a flush that needs the lock, and stopping waits for it."""
        if self._owns_scheduler and self.scheduler.is_started:
            self.scheduler.shutdown()

    def close(self) -> None:
        """Take a producer snapshot at the log end and close every segment, each file forced to disk (Kafka:
        ``UnifiedLog.close``).  A read-only log only releases its files.

        Kafka's ``UnifiedLog.close`` does not flush: its ``LogManager.shutdown`` flushes each log, the active segment
        too (``flush(true)``), before it closes it and writes the clean-shutdown marker.  So does whoever passed
        ``dir_lock`` (:class:`~kafkalog.manager.log_manager.LogManager`, the ``recover`` and ``clean`` commands, a
        :class:`~kafkalog.tools.log_dir_writer.LogDirWriter`), and this close leaves the recovery point where the
        last flush left it.  A log that holds its log dir itself (no ``dir_lock``) is its own manager, and its
        close puts the marker back when it is the last writer: it flushes first, as ``LogManager.shutdown`` does,
        so the marker never vouches for unflushed data, and an empty active segment gets the index files a
        broker's shutdown leaves (trimmed to 0 bytes), which the next open would otherwise miss and rebuild as
        after a crash ("Could not find offset index file ...").

        Closing twice is harmless; closing a log whose files were released (:meth:`close_handlers`) or
        deleted (:meth:`delete`) is a :class:`KafkaStorageError`, as in Kafka (``checkIfMemoryMappedBufferClosed``):
        nothing may touch its files any more.

        The files the log renamed ``.deleted`` and scheduled for deletion after ``file.delete.delay.ms`` (replaced
        or deleted segments, their producer snapshots) are deleted now.  Kafka's close leaves them, and its
        scheduler's shutdown drops the tasks that would delete them (``KafkaScheduler.shutdown``: no delayed
        task runs after it), so a broker's next start deletes them; kafkalog finishes them, since a command or a
        script that closes a log may not open it again, and until then they take the disk twice over
        (:mod:`kafkalog.log.pending_deletions`).  A file that cannot be deleted is logged as a warning, listed in
        :attr:`undeleted_files` with the reason, and left for the next open.

        A close that fails writes nothing more and releases the files (:meth:`close_handlers`), then raises; the
        next open of the log recovers it.  So does closing a log whose log dir went offline: Kafka's close raises
        the :class:`KafkaStorageError` of the offline dir, and a broker's ``LogManager`` has released the files
        of such a log already (``handleLogDirFailure``).
        """
        self._stop_own_scheduler()
        with self._lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            if self._closed:
                return
            self._log_offsets_listener = NO_OP_OFFSETS_LISTENER  # Kafka's close stops telling the listener
            if self._producer_expire_check is not None:
                self._producer_expire_check.cancel()
            clean = False
            try:
                if self._flushes_at_close:
                    self.flush(including_offset=True)
                if not self.read_only:
                    with self._maybe_handle_io_exception(lambda: f"Error while closing log for {self.topic_partition} "
                                                                 f"in dir {self.local_log.parent_dir}"):
                        # A snapshot at the log end offset spares the next open a scan of the log.
                        take_snapshot_if_possible(self.producer_state_manager)
                    self.undeleted_files = self.local_log.close()
                else:
                    self.segments.close_handlers()
                    self.local_log.release_pending_deletions(delete=False)
                clean = True
            except BaseException:
                self.local_log.close_handlers()
                raise
            finally:
                self._closed = True
                self._release_dir_hold(clean)

    def rename_dir(self, name: str, should_reinitialize: bool = True) -> bool:
        """Rename the log's directory to ``name`` in the same parent, and point every segment at it (Kafka:
        ``UnifiedLog.renameDir`` / ``LocalLog.renameDir``, used to mark a partition ``-delete`` or ``-stray``);
        returns whether the directory changed (renaming to the current name does nothing).  The rename is
        atomic (``os.replace``), and the log stays open: readers go on reading from the renamed files.

        ``should_reinitialize`` is Kafka's choice of moving the leader-epoch cache to the checkpoint in the new
        directory (false when the rename is for a topic deletion: the log is left without a cache).

        Raises:
            KafkaStorageError: the rename failed, which takes the log dir offline (Kafka:
                ``maybeHandleIOException``), the log dir is offline, or the log is closed.
            ReadOnlyError: the log was opened read-only.
        """
        with self._lock, self._maybe_handle_io_exception(lambda: f"Error while renaming dir for {self.topic_partition} "
                                                                 f"in log dir {self.local_log.parent_dir}"):
            self._check_writable("rename the directory of")
            if not self.local_log.rename_dir(name):
                return False
            self.producer_state_manager.update_parent_dir(self.dir)
            if should_reinitialize:
                self._initialize_leader_epoch_cache()
            else:
                self.leader_epoch_cache = None
            if self._dir_hold is not None:
                self._dir_hold.moved(self.dir)
            logger.debug("Log directory renamed to %s (reinitialize: %s)", self.dir, should_reinitialize)
            return True

    def close_handlers(self) -> None:
        """Release the files without flushing or trimming (Kafka: ``closeHandlers``), as after an error.
        Calling it twice is harmless; after it the log refuses every operation that touches its files."""
        self._stop_own_scheduler()
        with self._lock:
            try:
                self.local_log.close_handlers()
            finally:
                self._closed = True
                self._release_dir_hold(clean=False)

    def delete(self) -> None:
        """Delete every segment at once, then the directory with whatever else it holds (Kafka:
        ``UnifiedLog.delete``: ``LocalLog.deleteAllSegments`` then ``deleteEmptyDir``).  A closed log can be
        deleted, as in Kafka, but not one whose handlers were closed (after an I/O error) or that was deleted
        already: that is a :class:`KafkaStorageError` (Kafka: ``checkIfMemoryMappedBufferClosed``), as is the
        deletion of a log whose log dir is offline, or whose files cannot be deleted (which takes it offline)."""
        if self.read_only:
            raise ReadOnlyError(f"Cannot delete log {self.dir}: it was opened read-only")
        self._stop_own_scheduler()
        with self._maybe_handle_io_exception(lambda: f"Error while deleting log for {self.topic_partition} in dir "
                                                     f"{self.local_log.parent_dir}"), self._lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            if self._producer_expire_check is not None:
                self._producer_expire_check.cancel()
            deleted = False
            try:
                if self.leader_epoch_cache is not None:
                    self.leader_epoch_cache.clear()
                deleted_segments = self.local_log.delete_all_segments()
                self._delete_producer_snapshots(deleted_segments, async_delete=False)
                self.local_log.release_pending_deletions(delete=True)
                self._closed = True
                self.local_log.delete_empty_dir()
                deleted = True
            finally:
                self._release_dir_hold(clean=deleted)

    def __enter__(self) -> Log:
        return self

    def __exit__(self, *exc: object) -> None:
        # A log whose files were already released or deleted has nothing left to close (and close() would
        # refuse it), nor has one whose log dir is offline but its files (close() would raise over the error that
        # took the dir offline); the ``with`` block only promises that the files are let go.
        if self.local_log.is_memory_mapped_buffer_closed:
            return
        if self.is_log_dir_offline:
            self.close_handlers()
        else:
            self.close()

    def __repr__(self) -> str:
        return (f"Log(dir={str(self.dir)!r}, topic_partition={self.topic_partition}, "
                f"log_start_offset={self._log_start_offset}, log_end_offset={self.log_end_offset}, "
                f"segments={len(self.segments)}{', read-only' if self.read_only else ''})")
