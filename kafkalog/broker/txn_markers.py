"""Transaction markers: the COMMIT or ABORT control batch a finished transaction leaves in each of its partitions.

Port of ``core/src/main/scala/kafka/coordinator/transaction/TransactionMarkerChannelManager.scala`` and
``TransactionMarkerRequestCompletionHandler.scala`` (tag 3.8.0), with the broker side of the marker write,
``KafkaApis.handleWriteTxnMarkersRequest``, folded in.  Kafka's coordinator queues a ``WriteTxnMarkers`` request
per partition leader and a send thread delivers them; this node leads every partition, so a marker is appended
straight to the partition's log (``MemoryRecords.withEndTransactionMarker``: a transactional control batch with
the producer's id and epoch and one record whose value holds the coordinator epoch) with the coordinator origin,
as ``ReplicaManager.appendRecords(..., origin = COORDINATOR)`` does for the request.  The log's producer state then
checks the marker (an older producer epoch is ``INVALID_PRODUCER_EPOCH``, an older coordinator epoch
``TRANSACTION_COORDINATOR_FENCED``), ends the producer's transaction, and for an ABORT adds the ``.txnindex``
entry; the last stable offset moves past the transaction.

Once every partition has its marker (or is gone), the transaction's ``CompleteCommit`` / ``CompleteAbort`` record
is written (``writeTxnCompletion``).  What happens to a partition's marker, by the error of its append (Kafka's
completion handler):

===================================================  ==============================================================
error                                                what follows
===================================================  ==============================================================
none                                                 the partition is done; on ``__consumer_offsets`` every
                                                     completion listener hears of it (the group coordinator
                                                     materialises or drops the producer's pending offsets)
unknown topic or partition, not leader, not enough   retried after ``retry.backoff.ms`` (100 ms)
replicas, request timed out, storage error
invalid producer epoch, coordinator fenced           the transaction's markers are given up: a newer producer or
                                                     coordinator owns it
unsupported for message format (a log before v2),    the partition is dropped from the transaction
unsupported version
corrupt message, message too large, anything else    Kafka's ``IllegalStateException`` on its send thread; here
                                                     the error is logged and the markers given up (the transaction
                                                     stays prepared until the next load sends them again)
===================================================  ==============================================================

A partition with no log is "likely deleted already" (Kafka: no leader endpoint in the metadata cache) and is dropped
from the transaction.  A ``CompleteCommit`` / ``CompleteAbort`` append that fails with ``COORDINATOR_NOT_AVAILABLE``
is retried after the same backoff (Kafka's ``txnLogAppendRetryQueue``).

Where kafkalog differs: a completion listener that raises is logged and does not fail the marker (Kafka answers the
partition ``UNKNOWN_SERVER_ERROR``, which its completion handler then treats as fatal): the marker is in the log,
and the group coordinator's next load of the partition reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kio.schema.errors import ErrorCode

from ..errors import KafkaLogError, UnknownTopicOrPartitionError
from ..record.memory import MemoryRecords
from ..record.types import ControlRecordType, EndTransactionMarker
from .delayed import Timer, TimerHandle
from .group_records import GROUP_METADATA_TOPIC_NAME
from .txn_metadata import TopicPartition, TransactionMetadata, TxnTransitMetadata
from .txn_state_manager import CoordinatorEpochAndTxnMetadata, TransactionStateManager, append_error

__all__ = ["PendingCompleteTxn", "TransactionCompletionListener", "TransactionMarkerChannelManager"]

logger = logging.getLogger(__name__)

#: Kafka: ``retry.backoff.ms``'s default, the pause before a marker or a completion is tried again.
RETRY_BACKOFF_MS = 100
_MAGIC_V2 = 2

_RETRIABLE = frozenset({ErrorCode.unknown_topic_or_partition, ErrorCode.not_leader_or_follower,
                        ErrorCode.not_enough_replicas, ErrorCode.not_enough_replicas_after_append,
                        ErrorCode.request_timed_out, ErrorCode.kafka_storage_error})
_FENCED = frozenset({ErrorCode.invalid_producer_epoch, ErrorCode.transaction_coordinator_fenced})
_DROP_PARTITION = frozenset({ErrorCode.unsupported_for_message_format, ErrorCode.unsupported_version})


class TransactionCompletionListener(Protocol):
    """Told of every marker written to a ``__consumer_offsets`` partition (Kafka:
    ``GroupCoordinator.onTransactionCompleted``, one call per partition here)."""

    def on_transaction_completed(self, topic: str, partition: int, producer_id: int, committed: bool) -> None: ...


@dataclass(frozen=True, eq=False)
class PendingCompleteTxn:
    """Kafka: ``PendingCompleteTxn``: a transaction whose markers are being written, and the transit to
    ``Complete*`` to write once they are.  Compared by identity, as Kafka's ``remove(key, value)`` is used."""

    transactional_id: str
    coordinator_epoch: int
    txn_metadata: TransactionMetadata
    new_metadata: TxnTransitMetadata


class TransactionMarkerChannelManager:
    """Kafka: ``TransactionMarkerChannelManager``, its send thread replaced by appends to this node's logs."""

    def __init__(self, txn_state_manager: TransactionStateManager, timer: Timer) -> None:
        self.txn_state_manager = txn_state_manager
        self.logs = txn_state_manager.logs
        self.timer = timer
        self.transactions_with_pending_markers: dict[str, PendingCompleteTxn] = {}
        self._listeners: list[TransactionCompletionListener] = []
        self._retries: dict[int, tuple[PendingCompleteTxn, TimerHandle]] = {}
        self._active = True

    def add_completion_listener(self, listener: TransactionCompletionListener) -> None:
        """Call ``listener.on_transaction_completed`` after each marker lands on a ``__consumer_offsets``
        partition."""
        self._listeners.append(listener)

    @property
    def num_txns_with_pending_markers(self) -> int:
        return len(self.transactions_with_pending_markers)

    def add_txn_markers_to_send(self, coordinator_epoch: int, committed: bool, txn_metadata: TransactionMetadata,
                                new_metadata: TxnTransitMetadata) -> None:
        """Kafka: ``addTxnMarkersToSend``: write the markers of every partition of the transaction, then its
        completion if none is left to retry."""
        transactional_id = txn_metadata.transactional_id
        pending = PendingCompleteTxn(transactional_id, coordinator_epoch, txn_metadata, new_metadata)
        previous = self.transactions_with_pending_markers.get(transactional_id)
        self.transactions_with_pending_markers[transactional_id] = pending
        if previous is not None:
            logger.info("Replaced an existing pending complete txn %s with %s while adding markers to send.",
                        previous, pending)
            self._cancel_retries(previous)
        try:
            self.add_txn_markers_to_broker_queue(txn_metadata.producer_id, txn_metadata.producer_epoch, committed,
                                                 pending, set(txn_metadata.topic_partitions))
            self.maybe_write_txn_completion(transactional_id)
        except Exception:
            # Kafka sends markers on its own thread, after the client has its answer: a failure there is logged
            # and the transaction stays prepared, never the failure of the request that ended it.
            logger.exception("Sending the transaction markers of %s failed; they are given up until the partition "
                             "is loaded again", transactional_id)
            self.remove_markers_for_txn(pending)

    def maybe_write_txn_completion(self, transactional_id: str) -> None:
        """Kafka: ``maybeWriteTxnCompletion``: once no partition is left, write ``Complete*``."""
        pending = self.transactions_with_pending_markers.get(transactional_id)
        if pending is not None and not pending.txn_metadata.topic_partitions:
            del self.transactions_with_pending_markers[transactional_id]
            self._try_append_to_log(pending)

    def _try_append_to_log(self, pending: PendingCompleteTxn) -> None:
        """Kafka: ``writeTxnCompletion`` / ``tryAppendToLog``."""
        if not self._active:
            return

        def callback(error: ErrorCode) -> None:
            if error is ErrorCode.none:
                logger.debug("Completed transaction for %s with coordinator epoch %d, final state after commit: %s",
                             pending.transactional_id, pending.coordinator_epoch, pending.txn_metadata.state)
            elif error is ErrorCode.not_coordinator:
                logger.info("No longer the coordinator for transactionalId: %s while trying to append to "
                            "transaction log, skip writing to transaction log", pending.transactional_id)
            elif error is ErrorCode.coordinator_not_available:
                logger.info("Not available to append %s: retry appending", pending)
                self._retry(pending, lambda: self._try_append_to_log(pending))
            elif error is ErrorCode.coordinator_load_in_progress:
                logger.info("Coordinator is loading the partition %d and hence cannot complete append of %s; skip "
                            "writing to transaction log as the loading process should complete it",
                            self.txn_state_manager.partition_for(pending.transactional_id), pending)
            else:
                logger.critical("Unexpected error %s while appending to transaction log for %s", error.name,
                                pending.transactional_id)

        self.txn_state_manager.append_transaction_to_log(
            pending.transactional_id, pending.coordinator_epoch, pending.new_metadata, callback,
            retry_on_error=lambda error: error is ErrorCode.coordinator_not_available)

    def add_txn_markers_to_broker_queue(self, producer_id: int, producer_epoch: int, committed: bool,
                                        pending: PendingCompleteTxn, partitions: set[TopicPartition]) -> None:
        """Kafka: ``addTxnMarkersToBrokerQueue`` and the completion handler of the ``WriteTxnMarkers`` it leads to:
        append the marker to each partition's log, then act on each partition's outcome (module docstring)."""
        if not self._active or not partitions:
            return
        transactional_id = pending.transactional_id
        current = self._current_state(pending)
        if current is None:
            return
        metadata = current.transaction_metadata
        marker = EndTransactionMarker(ControlRecordType.COMMIT if committed else ControlRecordType.ABORT,
                                      pending.coordinator_epoch)
        retry: set[TopicPartition] = set()
        for topic_partition in sorted(partitions):
            error = self._write_marker(topic_partition, producer_id, producer_epoch, marker)
            if error is None:
                logger.info("Couldn't find leader endpoint for partitions %s while trying to send transaction "
                            "markers for %s, these partitions are likely deleted already and hence can be skipped",
                            topic_partition, transactional_id)
                metadata.remove_partition(topic_partition)
            elif error is ErrorCode.none:
                metadata.remove_partition(topic_partition)
                if topic_partition[0] == GROUP_METADATA_TOPIC_NAME:
                    self._notify(topic_partition, producer_id, committed)
            elif error in _RETRIABLE:
                logger.info("Sending %s's transaction marker for partition %s has failed with error %s, retrying "
                            "with current coordinator epoch %d", transactional_id, topic_partition, error.name,
                            current.coordinator_epoch)
                retry.add(topic_partition)
            elif error in _FENCED:
                logger.info("Sending %s's transaction marker for partition %s has permanently failed with error %s "
                            "with the current coordinator epoch %d; cancel sending any more transaction markers",
                            transactional_id, topic_partition, error.name, current.coordinator_epoch)
                self.remove_markers_for_txn(pending)
                return
            elif error in _DROP_PARTITION:
                logger.info("Sending %s's transaction marker from partition %s has failed with %s. This partition "
                            "will be removed from the set of partitions waiting for completion", transactional_id,
                            topic_partition, error.name)
                metadata.remove_partition(topic_partition)
            else:
                logger.critical("Received fatal error %s while sending txn marker for %s; its markers are given "
                                "up until the partition is loaded again", error.name, transactional_id)
                self.remove_markers_for_txn(pending)
                return
        if retry:
            logger.debug("Re-enqueuing %s transaction markers for transactional id %s under coordinator epoch %d",
                         "COMMIT" if committed else "ABORT", transactional_id, pending.coordinator_epoch)
            self._retry(pending, lambda: self._resend(producer_id, producer_epoch, committed, pending, retry))

    def _resend(self, producer_id: int, producer_epoch: int, committed: bool, pending: PendingCompleteTxn,
                partitions: set[TopicPartition]) -> None:
        if self.transactions_with_pending_markers.get(pending.transactional_id) is not pending:
            return
        self.add_txn_markers_to_broker_queue(producer_id, producer_epoch, committed, pending, partitions)
        self.maybe_write_txn_completion(pending.transactional_id)

    def _current_state(self, pending: PendingCompleteTxn) -> CoordinatorEpochAndTxnMetadata | None:
        """The completion handler's check before it acts: the id is still ours, at the markers' epoch."""
        transactional_id = pending.transactional_id
        current = self.txn_state_manager.get_transaction_state(transactional_id)
        if current is ErrorCode.not_coordinator or current is ErrorCode.coordinator_load_in_progress:
            logger.info("Cannot send transaction markers for %s (%s); cancel sending them", transactional_id,
                        current.name)
            self.remove_markers_for_txn(pending)
            return None
        if isinstance(current, ErrorCode):
            logger.critical("Unhandled error %s when fetching current transaction state", current.name)
            self.remove_markers_for_txn(pending)
            return None
        if current is None:
            logger.critical("The coordinator still owns the transaction partition for %s, but there is no metadata "
                            "in the cache; this is not expected", transactional_id)
            self.remove_markers_for_txn(pending)
            return None
        if current.coordinator_epoch != pending.coordinator_epoch:
            logger.info("Transaction coordinator epoch for %s has changed from %d to %d; cancel sending transaction "
                        "markers to the brokers", transactional_id, pending.coordinator_epoch,
                        current.coordinator_epoch)
            self.remove_markers_for_txn(pending)
            return None
        return current

    def _write_marker(self, topic_partition: TopicPartition, producer_id: int, producer_epoch: int,
                      marker: EndTransactionMarker) -> ErrorCode | None:
        """The marker's append (Kafka: ``handleWriteTxnMarkersRequest`` for one partition): ``None`` when the
        partition has no log, else the append's error code."""
        topic, partition = topic_partition
        try:
            log = self.logs.log(topic, partition)
            if log.config.record_version() < _MAGIC_V2:
                return ErrorCode.unsupported_for_message_format
            records = MemoryRecords.with_end_transaction_marker(producer_id, producer_epoch, marker,
                                                                timestamp=self.timer.time_ms())
            self.logs.append_as_coordinator(topic, partition, records)
        except UnknownTopicOrPartitionError:
            return None
        except KafkaLogError as e:
            logger.info("Append of the transaction marker to %s-%d failed: %s", topic, partition, e)
            return append_error(e)
        return ErrorCode.none

    def _notify(self, topic_partition: TopicPartition, producer_id: int, committed: bool) -> None:
        for listener in list(self._listeners):
            try:
                listener.on_transaction_completed(topic_partition[0], topic_partition[1], producer_id, committed)
            except Exception:
                logger.exception("Received an exception while trying to update the offsets cache on transaction "
                                 "marker append")

    # -- retries --

    def _retry(self, pending: PendingCompleteTxn, action: Callable[[], None]) -> None:
        key = id(pending)
        previous = self._retries.pop(key, None)
        if previous is not None:
            previous[1].cancel()

        def run() -> None:
            self._retries.pop(key, None)
            if not self._active:
                return
            try:
                action()
            except Exception:
                logger.exception("Retrying the transaction markers or completion of %s failed; given up until the "
                                 "partition is loaded again", pending.transactional_id)
                self.remove_markers_for_txn(pending)

        self._retries[key] = (pending, self.timer.call_later(RETRY_BACKOFF_MS, run))

    def _cancel_retries(self, pending: PendingCompleteTxn) -> None:
        entry = self._retries.pop(id(pending), None)
        if entry is not None:
            entry[1].cancel()

    # -- unloading --

    def remove_markers_for_txn_topic_partition(self, txn_topic_partition: int) -> None:
        """Kafka: ``removeMarkersForTxnTopicPartition``: forget the markers of every transaction of that
        ``__transaction_state`` partition (the partition is being loaded again or given up)."""
        for pending in list(self.transactions_with_pending_markers.values()):
            if self.txn_state_manager.partition_for(pending.transactional_id) == txn_topic_partition:
                logger.info("Removing %s for txn partition %d", pending, txn_topic_partition)
                self.remove_markers_for_txn(pending)

    def remove_markers_for_txn(self, pending: PendingCompleteTxn) -> None:
        """Kafka: ``removeMarkersForTxn``."""
        self._cancel_retries(pending)
        current = self.transactions_with_pending_markers.get(pending.transactional_id)
        if current is pending:
            del self.transactions_with_pending_markers[pending.transactional_id]
        elif current is not None:
            logger.info("Failed to remove pending marker entry %s trying to remove %s", current, pending)

    def shutdown(self) -> None:
        """Kafka: ``shutdown``: stop; nothing more is written."""
        self._active = False
        for _pending, handle in self._retries.values():
            handle.cancel()
        self._retries.clear()
        self.transactions_with_pending_markers.clear()
