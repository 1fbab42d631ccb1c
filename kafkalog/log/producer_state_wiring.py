"""The producer state of a log: what :class:`~kafkalog.log.unified_log.Log` keeps of its idempotent and transactional
producers, and the offsets it derives from them.

Port of the producer-state members of ``core/src/main/scala/kafka/log/UnifiedLog.scala`` (Apache Kafka, tag
3.8.0): ``firstUnstableOffset``, ``lastStableOffset``, ``fetchLastStableOffsetMetadata``,
``maybeIncrementFirstUnstableOffset``, ``removeExpiredProducers``, ``loadProducerState``, ``rebuildProducerState``,
``takeProducerSnapshot``, ``latestProducerSnapshotOffset``, ``oldestProducerSnapshotOffset``,
``latestProducerStateEndOffset``, ``activeProducers``, ``activeProducersWithLastSequence``,
``lastRecordsOfActiveProducers``, ``producerIdCount``, ``hasLateTransaction``,
``maybeStartTransactionVerification``, ``verificationGuard``, ``hasOngoingTransaction`` and
``deleteProducerSnapshots``.  The append path's part (``analyzeAndValidateProducerState`` and what follows the
write) is :mod:`kafkalog.log.producer_state_updates`'s, called from
:meth:`Log.append <kafkalog.log.unified_log.Log.append>`.

Invariants: the state (a :class:`~kafkalog.producer_state.ProducerStateManager`, ``producer_state_manager``)
covers the records below its map end offset, which is the log end offset after every append, roll, truncation
and load; the first unstable offset is the first offset of the earliest transaction that is open or whose
marker is not yet below the high watermark, ``None`` when there is none; ``log_start_offset <=
last_stable_offset <= high_watermark``.  Snapshots ``<offset>.snapshot`` sit at segment bases (taken at roll)
and at the log end offset (taken at clean close), and go with their segments.

A log opened read-only rebuilds no producer state (that writes snapshots); its first unstable and last stable
offsets are those a reader in place finds (:meth:`LogProducerState.in_place_transactions`), read at first use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import IllegalStateError
from ..fetch import LogOffsetMetadata
from ..producer_state import LastRecord, ProducerStateEntry, VerificationGuard
from ..scheduler import Scheduler
from .producer_state_updates import delete_producer_snapshots, has_ongoing_transaction, rebuild_producer_state
from .transactions import TransactionalLog, TransactionState

if TYPE_CHECKING:
    from ..config.log_config import LogConfig
    from ..segment import LogSegment
    from .local_log import LocalLog
    from .segments import LogSegments

__all__ = ["DEFAULT_MAX_TRANSACTION_TIMEOUT_MS", "DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS",
           "LogProducerState"]

#: ``transaction.max.timeout.ms``'s default, 15 minutes (Kafka: ``TransactionStateManagerConfigs``): how long a
#: transaction may be open before it counts as late (:meth:`LogProducerState.has_late_transaction`).
DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 900_000
#: ``producer.id.expiration.check.interval.ms``'s default, 10 minutes (Kafka: ``TransactionLogConfigs``): how
#: often a log forgets its expired producers.
DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000


class _ProducerLog(TransactionalLog, Protocol):
    """What the producer-state members use of their log (:class:`~kafkalog.log.unified_log.Log`), what a read in place
    reads of it (:class:`~kafkalog.log.transactions.TransactionalLog`) among them."""

    @property
    def high_watermark(self) -> int: ...
    @property
    def config(self) -> LogConfig: ...

    _first_unstable_offset_metadata: LogOffsetMetadata | None
    _in_place: TransactionState | None
    def _first_unstable_metadata(self) -> LogOffsetMetadata | None: ...
    _log_start_offset: int
    _lock: threading.RLock
    local_log: LocalLog
    scheduler: Scheduler
    segments: LogSegments
    def fetch_high_watermark_metadata(self) -> LogOffsetMetadata: ...
    def maybe_convert_to_offset_metadata(self, offset: int) -> LogOffsetMetadata: ...
    def _maybe_increment_first_unstable_offset(self) -> None: ...
    def _rebuild_producer_state(self, last_offset: int) -> None: ...


class LogProducerState:
    """The producer-state members of a log (Kafka: ``UnifiedLog``'s)."""

    #: Kafka: ``firstUnstableOffsetMetadata``, set from the producer state after each change.
    _first_unstable_offset_metadata: LogOffsetMetadata | None
    #: A read-only log's transactions, read at first use (:meth:`in_place_transactions`).
    _in_place: TransactionState | None = None

    # -- the first unstable and last stable offsets --------------------------------------------------

    def in_place_transactions(self: _ProducerLog) -> TransactionState:
        """The aborted transactions and last stable offset of a log opened read-only, as a reader finds them in
        place (:meth:`TransactionState.read_in_place <kafkalog.log.transactions.TransactionState.read_in_place>`:
        the ``.txnindex`` files and newest producer snapshot, or the batch headers of a log without snapshots),
        read once, at first use: such a log does not change under its reader.

        Raises:
            IllegalStateError: the log is open for writing, and keeps its producer state instead.
        """
        if not self.read_only:
            raise IllegalStateError("A log open for writing keeps its producer state: ask it, not the files")
        if self._in_place is None:
            self._in_place = TransactionState.read_in_place(self)
        return self._in_place

    def _first_unstable_metadata(self: _ProducerLog) -> LogOffsetMetadata | None:
        """Kafka's ``firstUnstableOffsetMetadata``; for a read-only log, the last stable offset found in place when
        it is below the log end (where the high watermark of a log read in place is)."""
        if self.read_only:
            last_stable = self.in_place_transactions().last_stable_offset
            return LogOffsetMetadata(last_stable) if last_stable < self.log_end_offset else None
        return self._first_unstable_offset_metadata

    @property
    def first_unstable_offset(self: _ProducerLog) -> int | None:
        """The first offset of the earliest transaction not yet stable, ``None`` when there is none (Kafka:
        ``firstUnstableOffset``)."""
        metadata = self._first_unstable_metadata()
        return metadata.message_offset if metadata is not None else None

    @property
    def last_stable_offset(self: _ProducerLog) -> int:
        """The first offset not yet decided: the first unstable offset when it is below the high watermark, else
        the high watermark (Kafka: ``lastStableOffset``).  A ``read_committed`` consumer reads up to it."""
        metadata = self._first_unstable_metadata()
        high_watermark = self.high_watermark
        if metadata is not None and metadata.message_offset < high_watermark:
            return metadata.message_offset
        return high_watermark

    @property
    def last_stable_offset_lag(self: _ProducerLog) -> int:
        """Kafka: ``lastStableOffsetLag``."""
        return self.high_watermark - self.last_stable_offset

    def fetch_last_stable_offset_metadata(self: _ProducerLog) -> LogOffsetMetadata:
        """The last stable offset with its segment and position (Kafka: ``fetchLastStableOffsetMetadata``)."""
        self.local_log.check_if_memory_mapped_buffer_closed()
        high_watermark_metadata = self.fetch_high_watermark_metadata()
        metadata = self._first_unstable_metadata()
        if metadata is not None and metadata.message_offset < high_watermark_metadata.message_offset:
            if metadata.message_offset_only:
                with self._lock:
                    full = self.maybe_convert_to_offset_metadata(metadata.message_offset)
                    if self._first_unstable_offset_metadata == metadata:
                        self._first_unstable_offset_metadata = full
                    return full
            return metadata
        return high_watermark_metadata

    def _maybe_increment_first_unstable_offset(self: _ProducerLog) -> None:
        """Take the first unstable offset from the producer state, never below the log start offset, with its
        position (Kafka: ``maybeIncrementFirstUnstableOffset``)."""
        with self._lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            updated = self.producer_state_manager.first_unstable_offset()
            if updated is not None and (updated.message_offset_only
                                        or updated.message_offset < self._log_start_offset):
                updated = self.maybe_convert_to_offset_metadata(max(updated.message_offset, self._log_start_offset))
            self._first_unstable_offset_metadata = updated

    def _on_high_watermark_updated(self: _ProducerLog, high_watermark: int) -> None:
        """The producer-state half of Kafka's ``updateHighWatermarkMetadata``: completed transactions whose
        marker is now below the high watermark stop holding the first unstable offset."""
        self.producer_state_manager.on_high_watermark_updated(high_watermark)
        self._maybe_increment_first_unstable_offset()

    # -- the state and its snapshots -----------------------------------------------------------------

    def remove_expired_producers(self: _ProducerLog, current_time_ms: int) -> None:
        """Forget the producers idle for ``producer.id.expiration.ms`` (Kafka: ``removeExpiredProducers``, run
        every ``producer.id.expiration.check.interval.ms`` by the log's scheduler)."""
        with self._lock:
            self.producer_state_manager.remove_expired_producers(current_time_ms)

    def load_producer_state(self: _ProducerLog, last_offset: int) -> None:
        """Rebuild the producer state up to ``last_offset`` (Kafka: ``loadProducerState``)."""
        with self._lock:
            self._rebuild_producer_state(last_offset)
            self._maybe_increment_first_unstable_offset()

    def _rebuild_producer_state(self: _ProducerLog, last_offset: int) -> None:
        """Kafka: the class's ``rebuildProducerState``, never from a clean shutdown."""
        with self._lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            rebuild_producer_state(self.producer_state_manager, self.segments, self._log_start_offset, last_offset,
                                   self.config.record_version(), self.time, reload_from_clean_shutdown=False)

    def _delete_producer_snapshots(self: _ProducerLog, segments: Iterable[LogSegment], async_delete: bool) -> None:
        """Kafka: ``deleteProducerSnapshots``: the snapshots at the bases of segments being deleted."""
        delete_producer_snapshots([segment.base_offset for segment in segments], self.producer_state_manager,
                                  async_delete, self.scheduler, self.config.file_delete_delay_ms,
                                  self.local_log.log_dir_failure_channel, self.local_log.parent_dir,
                                  self.local_log.pending_deletions)

    def take_producer_snapshot(self: _ProducerLog) -> None:
        """Kafka: ``takeProducerSnapshot``."""
        with self._lock:
            self.local_log.check_if_memory_mapped_buffer_closed()
            self.producer_state_manager.take_snapshot()

    def flush_producer_state_snapshot(self: _ProducerLog, snapshot: Path) -> None:
        """fsync a snapshot written without it (at roll), if it is still there (Kafka:
        ``flushProducerStateSnapshot``, ``Utils.flushFileIfExists``).

        Raises:
            KafkaStorageError: the fsync failed, which takes the log dir offline, or the log dir is offline.
        """
        with self.local_log.maybe_handle_io_exception(
                lambda: f"Error while flushing producer state snapshot {snapshot} for {self.local_log.topic_partition} "
                        f"in dir {self.local_log.parent_dir}"):
            try:
                fd = os.open(snapshot, os.O_RDONLY)
            except FileNotFoundError:
                return
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def latest_producer_snapshot_offset(self: _ProducerLog) -> int | None:
        """Kafka: ``latestProducerSnapshotOffset``."""
        with self._lock:
            return self.producer_state_manager.latest_snapshot_offset()

    def oldest_producer_snapshot_offset(self: _ProducerLog) -> int | None:
        """Kafka: ``oldestProducerSnapshotOffset``."""
        with self._lock:
            return self.producer_state_manager.oldest_snapshot_offset()

    def latest_producer_state_end_offset(self: _ProducerLog) -> int:
        """Kafka: ``latestProducerStateEndOffset``."""
        with self._lock:
            return self.producer_state_manager.map_end_offset

    # -- producers -----------------------------------------------------------------------------------

    @property
    def producer_id_count(self: _ProducerLog) -> int:
        """Kafka: ``producerIdCount``."""
        return self.producer_state_manager.producer_id_count

    def has_late_transaction(self: _ProducerLog, current_time_ms: int) -> bool:
        """Kafka: ``hasLateTransaction``."""
        return self.producer_state_manager.has_late_transaction(current_time_ms)

    def active_producers(self: _ProducerLog) -> dict[int, ProducerStateEntry]:
        """The producers kept, by id (Kafka: ``activeProducers``, which describes them for DescribeProducers:
        here the entries themselves)."""
        with self._lock:
            return dict(self.producer_state_manager.active_producers())

    def active_producers_with_last_sequence(self: _ProducerLog) -> dict[int, int]:
        """Each producer's last sequence (Kafka: ``activeProducersWithLastSequence``)."""
        with self._lock:
            return {producer_id: entry.last_seq
                    for producer_id, entry in self.producer_state_manager.active_producers().items()}

    def last_records_of_active_producers(self: _ProducerLog) -> dict[int, LastRecord]:
        """Each producer's last data offset and epoch, for the cleaner (Kafka: ``lastRecordsOfActiveProducers``)."""
        with self._lock:
            result = {}
            for producer_id, entry in self.producer_state_manager.active_producers().items():
                last_data_offset = entry.last_data_offset if entry.last_data_offset >= 0 else None
                result[producer_id] = LastRecord(last_data_offset, entry.producer_epoch)
            return result

    def maybe_start_transaction_verification(self: _ProducerLog, producer_id: int, sequence: int,
                                             epoch: int) -> VerificationGuard:
        """The guard a transactional append must carry when ``transaction.partition.verification.enable`` is
        on; the sentinel when the producer's transaction is open already (Kafka:
        ``maybeStartTransactionVerification``)."""
        with self._lock:
            if has_ongoing_transaction(self.producer_state_manager, producer_id):
                return VerificationGuard.SENTINEL
            entry = self.producer_state_manager.maybe_create_verification_state_entry(producer_id, sequence, epoch)
            return entry.verification_guard

    def verification_guard(self: _ProducerLog, producer_id: int) -> VerificationGuard:
        """Kafka: ``verificationGuard``."""
        with self._lock:
            entry = self.producer_state_manager.verification_state_entry(producer_id)
            return entry.verification_guard if entry is not None else VerificationGuard.SENTINEL

    def has_ongoing_transaction(self: _ProducerLog, producer_id: int) -> bool:
        """Kafka: ``hasOngoingTransaction``."""
        with self._lock:
            return has_ongoing_transaction(self.producer_state_manager, producer_id)
