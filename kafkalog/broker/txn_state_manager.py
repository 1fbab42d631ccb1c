"""The transactional ids' cache and its records in ``__transaction_state``: store, load, time out, expire.

Port of ``core/src/main/scala/kafka/coordinator/transaction/TransactionStateManager.scala`` (tag 3.8.0): the cache
of every owned ``__transaction_state`` partition (``transactionMetadataCache``, one ``TxnMetadataCacheEntry`` per
partition with its coordinator epoch), the partitions still loading, ``getTransactionState`` /
``putTransactionStateIfNotExists``, ``appendTransactionToLog`` (write a transition, then complete it in the cache),
``loadTransactionsForTxnTopicPartition`` (read a partition back; a transaction found in ``PrepareCommit`` or
``PrepareAbort`` has its markers sent again), ``timedOutTransactions``, ``removeExpiredTransactionalIds`` (the
tombstones of ids unused for ``transactional.id.expiration.ms``) and ``listTransactionStates``.

Storage is the broker's, behind the group coordinator's
:class:`~kafkalog.broker.coordinator_logs.CoordinatorLogs`: one log per ``__transaction_state`` partition,
appended with the coordinator origin.  This node leads every partition, so an append is acknowledged when it
returns (Kafka's ``acks=-1`` with one replica) and the callback Kafka runs on completion runs before
:meth:`TransactionStateManager.append_transaction_to_log` returns.  A failed append becomes Kafka's error codes:
:func:`append_error` is what ``ReplicaManager.appendRecords`` would answer for the exception, and
``appendTransactionToLog`` then maps it for the client.

Partition ``p`` holds the transactional ids with ``abs(hashCode(id)) % transaction.state.log.num.partitions == p``
(:meth:`TransactionStateManager.partition_for`).  Kafka loads a partition on its scheduler thread; here the
coordinator loads each in turn and yields to the loop between them, and a request for an id whose partition is
still loading gets ``COORDINATOR_LOAD_IN_PROGRESS`` as in Kafka.  Kafka's read-write lock over the cache has
nothing to guard on one event loop and is not ported.

Where kafkalog differs: a record that does not read is skipped with an error in the log, where Kafka stops
loading the partition at it (and keeps what it read before it), since a coordinator serving every other id of the
partition loses less than one that forgets all that follow the bad record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from ..errors import (
    IllegalStateError,
    KafkaLogError,
    UnknownTopicOrPartitionError,
)
from ..messages import MessageReadError
from ..record.memory import MemoryRecords
from .coordinator_logs import CoordinatorLogs
from .error_codes import error_code_for
from .group_records import java_string_hashcode
from .txn_config import TransactionCoordinatorConfig
from .txn_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata
from .txn_records import (
    TRANSACTION_STATE_TOPIC_NAME,
    TxnKey,
    key_to_bytes,
    read_txn_record_key,
    read_txn_record_value,
    value_to_bytes,
)

__all__ = ["CoordinatorEpochAndTxnMetadata", "SendTxnMarkersCallback", "TransactionStateManager",
           "TransactionalIdAndProducerIdEpoch", "TxnMetadataCacheEntry", "append_error"]

logger = logging.getLogger(__name__)

#: ``(coordinator epoch, result: True for COMMIT, metadata, the transit to CompleteCommit/CompleteAbort)``.
SendTxnMarkersCallback = Callable[[int, bool, TransactionMetadata, TxnTransitMetadata], None]

#: A v2 batch's header, and the most a record of a tombstone adds besides its key (Kafka's
#: ``DefaultRecord.sizeInUpperBound``: length, attributes, timestamp and offset deltas, key length, the -1 value
#: length and the header count, each at its widest varint).
_BATCH_OVERHEAD = 61
_TOMBSTONE_RECORD_OVERHEAD = 5 + 1 + 10 + 5 + 5 + 1 + 5


def append_error(e: Exception) -> ErrorCode:
    """The error code Kafka's ``ReplicaManager.appendRecords`` answers for an append that raised ``e``
    (``Errors.forException``: :func:`~kafkalog.broker.error_codes.error_code_for`)."""
    return error_code_for(e)


@dataclass
class TxnMetadataCacheEntry:
    """Kafka: ``TxnMetadataCacheEntry``: one partition's ids and the coordinator epoch they were loaded at."""

    coordinator_epoch: int
    metadata_per_transactional_id: dict[str, TransactionMetadata]


@dataclass(frozen=True)
class CoordinatorEpochAndTxnMetadata:
    """Kafka: ``CoordinatorEpochAndTxnMetadata``."""

    coordinator_epoch: int
    transaction_metadata: TransactionMetadata


@dataclass(frozen=True)
class TransactionalIdAndProducerIdEpoch:
    """Kafka: ``TransactionalIdAndProducerIdEpoch``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


#: Kafka's ``Either[Errors, Option[CoordinatorEpochAndTxnMetadata]]``: an error code is the ``Left``.
StateResult = ErrorCode | CoordinatorEpochAndTxnMetadata | None


class TransactionStateManager:
    """Kafka: ``TransactionStateManager``."""

    def __init__(self, broker_id: int, config: TransactionCoordinatorConfig, logs: CoordinatorLogs,
                 time_ms: Callable[[], int]) -> None:
        self.broker_id = broker_id
        self.config = config
        self.logs = logs
        self.time_ms = time_ms
        self.loading_partitions: set[tuple[int, int]] = set()
        self.transaction_metadata_cache: dict[int, TxnMetadataCacheEntry] = {}
        self.transaction_topic_partition_count = config.transaction_state_log_num_partitions
        self._shutting_down = False

    # -- the cache --

    def partition_for(self, transactional_id: str) -> int:
        """Kafka: ``partitionFor``: ``Utils.abs(transactionalId.hashCode) % partitions`` (``Utils.abs`` maps
        ``Integer.MIN_VALUE`` to 0)."""
        return (java_string_hashcode(transactional_id) & 0x7FFFFFFF) % self.transaction_topic_partition_count

    def add_loading_partition(self, partition: int, coordinator_epoch: int) -> None:
        self.loading_partitions.add((partition, coordinator_epoch))

    def _is_loading(self, partition: int) -> bool:
        return any(p == partition for p, _epoch in self.loading_partitions)

    def get_transaction_state(self, transactional_id: str) -> StateResult:
        """Kafka: ``getTransactionState``: ``COORDINATOR_LOAD_IN_PROGRESS`` while the id's partition loads,
        ``NOT_COORDINATOR`` when this node does not own it, else the cached metadata or ``None``."""
        return self._get_and_maybe_add_transaction_state(transactional_id, None)

    def put_transaction_state_if_not_exists(self, metadata: TransactionMetadata
                                            ) -> ErrorCode | CoordinatorEpochAndTxnMetadata:
        """Kafka: ``putTransactionStateIfNotExists``: the cached metadata of the id, ``metadata`` if none was."""
        result = self._get_and_maybe_add_transaction_state(metadata.transactional_id, metadata)
        if result is None:
            raise IllegalStateError(f"Unexpected empty transaction metadata returned while putting {metadata}")
        return result

    def _get_and_maybe_add_transaction_state(self, transactional_id: str,
                                             created: TransactionMetadata | None) -> StateResult:
        partition = self.partition_for(transactional_id)
        if self._is_loading(partition):
            return ErrorCode.coordinator_load_in_progress
        entry = self.transaction_metadata_cache.get(partition)
        if entry is None:
            return ErrorCode.not_coordinator
        metadata = entry.metadata_per_transactional_id.get(transactional_id)
        if metadata is None and created is not None:
            metadata = entry.metadata_per_transactional_id.setdefault(transactional_id, created)
        return None if metadata is None else CoordinatorEpochAndTxnMetadata(entry.coordinator_epoch, metadata)

    def validate_transaction_timeout_ms(self, txn_timeout_ms: int) -> bool:
        """Kafka: ``validateTransactionTimeoutMs``: positive and at most ``transaction.max.timeout.ms``."""
        return 0 < txn_timeout_ms <= self.config.transaction_max_timeout_ms

    # -- timeouts and expiration --

    def timed_out_transactions(self) -> list[TransactionalIdAndProducerIdEpoch]:
        """Kafka: ``timedOutTransactions``: the ``Ongoing`` transactions, with no transition pending, started more
        than their timeout ago."""
        now = self.time_ms()
        return [TransactionalIdAndProducerIdEpoch(txn_id, m.producer_id, m.producer_epoch)
                for entry in self.transaction_metadata_cache.values()
                for txn_id, m in entry.metadata_per_transactional_id.items()
                if not m.pending_transition_in_progress and m.state is TransactionState.ONGOING
                and m.txn_start_timestamp + m.txn_timeout_ms < now]

    def _should_expire(self, metadata: TransactionMetadata, now: int) -> bool:
        return metadata.state.is_expiration_allowed and \
            metadata.txn_last_update_timestamp <= now - self.config.transactional_id_expiration_ms

    def remove_expired_transactional_ids(self) -> None:
        """Kafka: ``removeExpiredTransactionalIds()``: in every owned partition, write a tombstone for each id whose
        state allows expiry and that has not changed for ``transactional.id.expiration.ms``, in batches no larger
        than the partition's ``max.message.bytes``; an id leaves the cache once its tombstone is written."""
        for partition, entry in list(self.transaction_metadata_cache.items()):
            self._remove_expired_transactional_ids(partition, entry)

    def _remove_expired_transactional_ids(self, partition: int, entry: TxnMetadataCacheEntry) -> None:
        try:
            max_batch_size = self.logs.log(TRANSACTION_STATE_TOPIC_NAME, partition).config.max_message_size
        except KafkaLogError:
            logger.warning("Transaction expiration for partition %s-%d failed because the log config was not "
                           "available, which likely means the partition is not online or is no longer local.",
                           TRANSACTION_STATE_TOPIC_NAME, partition)
            return
        now = self.time_ms()
        expired: list[tuple[str, TxnTransitMetadata]] = []
        records: list[tuple[bytes, None, int]] = []
        size = _BATCH_OVERHEAD
        for metadata in list(entry.metadata_per_transactional_id.values()):
            if metadata.pending_state is not None or not self._should_expire(metadata, now):
                continue
            key = key_to_bytes(metadata.transactional_id)
            record_size = _TOMBSTONE_RECORD_OVERHEAD + len(key)
            if records and size + record_size > max_batch_size:
                self._write_tombstones(partition, entry.coordinator_epoch, expired, records)
                expired, records, size = [], [], _BATCH_OVERHEAD
            records.append((key, None, now))
            size += record_size
            expired.append((metadata.transactional_id, metadata.prepare_dead()))
        if expired:
            self._write_tombstones(partition, entry.coordinator_epoch, expired, records)

    def _write_tombstones(self, partition: int, coordinator_epoch: int, expired: list[tuple[str, TxnTransitMetadata]],
                          records: list[tuple[bytes, None, int]]) -> None:
        """Kafka: ``writeTombstonesForExpiredTransactionalIds`` with its ``removeFromCacheCallback``."""
        try:
            self.logs.append_as_coordinator(TRANSACTION_STATE_TOPIC_NAME, partition,
                                            MemoryRecords.with_records(records))
            error = ErrorCode.none
        except KafkaLogError as e:
            logger.error("Append of tombstones to %s-%d failed: %s", TRANSACTION_STATE_TOPIC_NAME, partition, e)
            error = append_error(e)
        entry = self.transaction_metadata_cache.get(partition)
        if entry is None:
            return
        for transactional_id, transit in expired:
            metadata = entry.metadata_per_transactional_id.get(transactional_id)
            if metadata is None:
                continue
            if (entry.coordinator_epoch == coordinator_epoch and metadata.pending_state is TransactionState.DEAD
                    and metadata.producer_epoch == transit.producer_epoch and error is ErrorCode.none):
                del entry.metadata_per_transactional_id[transactional_id]
            else:
                logger.warning("Failed to remove expired transactionalId: %s from cache. Tombstone append error "
                               "code: %s, pendingState: %s, producerEpoch: %d, expected producerEpoch: %d, "
                               "coordinatorEpoch: %d, expected coordinatorEpoch: %d", transactional_id, error.name,
                               metadata.pending_state, metadata.producer_epoch, transit.producer_epoch,
                               entry.coordinator_epoch, coordinator_epoch)
                metadata.pending_state = None

    # -- ListTransactions --

    def list_transaction_states(self, filter_producer_ids: Iterable[int], filter_state_names: Iterable[str],
                                filter_duration_ms: int = -1
                                ) -> tuple[ErrorCode, list[str], list[tuple[str, int, str]]]:
        """Kafka: ``listTransactionStates``: the error, the state names no state has, and ``(transactional id,
        producer id, state name)`` of every id that passes the filters (none passes while a partition loads)."""
        if self.loading_partitions:
            return ErrorCode.coordinator_load_in_progress, [], []
        producer_ids = set(filter_producer_ids)
        names = list(filter_state_names)
        states: set[TransactionState] = set()
        unknown: list[str] = []
        for name in names:
            state = TransactionState.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                states.add(state)
        now = self.time_ms()

        def include(m: TransactionMetadata) -> bool:
            if m.state is TransactionState.DEAD:
                return False
            if producer_ids and m.producer_id not in producer_ids:
                return False
            if names and m.state not in states:
                return False
            return not (filter_duration_ms >= 0 and now - m.txn_start_timestamp <= filter_duration_ms)

        listed = [(m.transactional_id, m.producer_id, m.state.state_name)
                  for entry in self.transaction_metadata_cache.values()
                  for m in entry.metadata_per_transactional_id.values() if include(m)]
        return ErrorCode.none, unknown, listed

    # -- loading --

    def _load_transaction_metadata(self, partition: int, coordinator_epoch: int) -> dict[str, TransactionMetadata]:
        """Kafka: ``loadTransactionMetadata``: every record of the partition, from its start to its end, the last
        value of each id winning (a tombstone removes it)."""
        topic_partition = f"{TRANSACTION_STATE_TOPIC_NAME}-{partition}"
        loaded: dict[str, TransactionMetadata] = {}
        try:
            log = self.logs.log(TRANSACTION_STATE_TOPIC_NAME, partition)
        except UnknownTopicOrPartitionError:
            logger.warning("Attempted to load transaction metadata from %s, but found no log", topic_partition)
            return loaded
        current = log.log_start_offset
        read_one = True
        try:
            while (current < log.log_end_offset and read_one and not self._shutting_down
                   and (partition, coordinator_epoch) in self.loading_partitions):
                fetched = log.read(current, self.config.transaction_state_log_load_buffer_size,
                                   min_one_message=True, isolation="log_end")
                read_one = fetched.records.size_in_bytes() > 0
                for batch in fetched.records.batches():
                    for record in batch.records():
                        self._load_record(topic_partition, record, loaded)
                    current = batch.next_offset
        except KafkaLogError:
            logger.exception("Error loading transactions from transaction log %s", topic_partition)
        return loaded

    @staticmethod
    def _load_record(topic_partition: str, record: object, loaded: dict[str, TransactionMetadata]) -> None:
        key = getattr(record, "key", None)
        value = getattr(record, "value", None)
        try:
            if key is None:
                raise IllegalStateError("Transaction state log's key should not be null")
            txn_key = read_txn_record_key(bytes(key))
            if not isinstance(txn_key, TxnKey):
                logger.warning("Unknown message key with version %d while loading transaction state from %s. "
                               "Ignoring it. It could be a left over from an aborted upgrade.", txn_key.version,
                               topic_partition)
                return
            metadata = read_txn_record_value(txn_key.transactional_id, None if value is None else bytes(value))
        except (MessageReadError, IllegalStateError) as e:
            logger.error("Skipping the record at offset %s of %s that does not read: %s",
                         getattr(record, "offset", "?"), topic_partition, e)
            return
        if metadata is None:
            loaded.pop(txn_key.transactional_id, None)
        else:
            loaded[txn_key.transactional_id] = metadata

    def load_transactions_for_txn_topic_partition(self, partition: int, coordinator_epoch: int,
                                                  send_txn_markers: SendTxnMarkersCallback) -> None:
        """Kafka: ``loadTransactionsForTxnTopicPartition`` (and the task it schedules): read the partition into the
        cache at ``coordinator_epoch``, then send again the markers of every transaction left in
        ``PrepareCommit`` or ``PrepareAbort`` (its transition to ``Complete*`` prepared)."""
        self.loading_partitions.add((partition, coordinator_epoch))
        start = self.time_ms()
        logger.info("Loading transaction metadata from %s-%d at epoch %d", TRANSACTION_STATE_TOPIC_NAME, partition,
                    coordinator_epoch)
        loaded = self._load_transaction_metadata(partition, coordinator_epoch)
        logger.info("Finished loading %d transaction metadata from %s-%d in %d milliseconds", len(loaded),
                    TRANSACTION_STATE_TOPIC_NAME, partition, self.time_ms() - start)
        if (partition, coordinator_epoch) not in self.loading_partitions:
            return
        self.add_loaded_transactions_to_cache(partition, coordinator_epoch, loaded)
        pending: list[tuple[bool, TransactionMetadata, TxnTransitMetadata]] = []
        for metadata in loaded.values():
            if metadata.state is TransactionState.PREPARE_ABORT:
                pending.append((False, metadata, metadata.prepare_complete(self.time_ms())))
            elif metadata.state is TransactionState.PREPARE_COMMIT:
                pending.append((True, metadata, metadata.prepare_complete(self.time_ms())))
        self.loading_partitions.discard((partition, coordinator_epoch))
        for committed, metadata, transit in pending:
            logger.info("Sending txn markers for %s after loading partition %d", metadata.transactional_id, partition)
            send_txn_markers(coordinator_epoch, committed, metadata, transit)
        logger.info("Completed loading transaction metadata from %s-%d for coordinator epoch %d",
                    TRANSACTION_STATE_TOPIC_NAME, partition, coordinator_epoch)

    def add_loaded_transactions_to_cache(self, partition: int, coordinator_epoch: int,
                                         loaded: dict[str, TransactionMetadata]) -> None:
        """Kafka: ``addLoadedTransactionsToCache``."""
        previous = self.transaction_metadata_cache.get(partition)
        self.transaction_metadata_cache[partition] = TxnMetadataCacheEntry(coordinator_epoch, loaded)
        if previous is not None:
            logger.warning("Unloaded transaction metadata %s from %d as part of loading metadata at epoch %d",
                           previous, partition, coordinator_epoch)

    def remove_transactions_for_txn_topic_partition(self, partition: int, coordinator_epoch: int | None = None
                                                    ) -> None:
        """Kafka: ``removeTransactionsForTxnTopicPartition`` (both overloads): stop loading and forget the
        partition's ids."""
        if coordinator_epoch is None:
            self.loading_partitions = {(p, e) for p, e in self.loading_partitions if p != partition}
        else:
            self.loading_partitions.discard((partition, coordinator_epoch))
        if self.transaction_metadata_cache.pop(partition, None) is not None:
            logger.info("Unloaded transaction metadata for %s-%d", TRANSACTION_STATE_TOPIC_NAME, partition)

    # -- writing a transition --

    def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int, new_metadata: TxnTransitMetadata,
                                  response_callback: Callable[[ErrorCode], None],
                                  retry_on_error: Callable[[ErrorCode], bool] = lambda _error: False) -> None:
        """Kafka: ``appendTransactionToLog``: write ``new_metadata`` as the id's record, then, if the id is still
        ours at ``coordinator_epoch``, complete the transition in the cache; ``response_callback`` gets the outcome.
        On a failed append the pending state is reset (the transition never happened) unless ``retry_on_error``
        says the caller will try again."""
        key = key_to_bytes(transactional_id)
        value = value_to_bytes(new_metadata)
        timestamp = self.time_ms()
        records = MemoryRecords.with_records([(key, value, timestamp)])
        partition = self.partition_for(transactional_id)

        current = self.get_transaction_state(transactional_id)
        if isinstance(current, ErrorCode):
            response_callback(current)
            return
        if current is None or current.coordinator_epoch != coordinator_epoch:
            response_callback(ErrorCode.not_coordinator)
            return
        try:
            self.logs.append_as_coordinator(TRANSACTION_STATE_TOPIC_NAME, partition, records)
            status = ErrorCode.none
        except KafkaLogError as e:
            status = append_error(e)
        self._update_cache(transactional_id, coordinator_epoch, new_metadata, status, response_callback,
                           retry_on_error)

    def _update_cache(self, transactional_id: str, coordinator_epoch: int, new_metadata: TxnTransitMetadata,
                      status: ErrorCode, response_callback: Callable[[ErrorCode], None],
                      retry_on_error: Callable[[ErrorCode], bool]) -> None:
        """``appendTransactionToLog``'s ``updateCacheCallback``."""
        if status is ErrorCode.none:
            error = ErrorCode.none
        else:
            logger.debug("Appending %s's new metadata %s failed due to %s", transactional_id, new_metadata,
                         status.name)
            if status in (ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                          ErrorCode.not_enough_replicas_after_append, ErrorCode.request_timed_out):
                error = ErrorCode.coordinator_not_available
            elif status in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
                error = ErrorCode.not_coordinator
            elif status in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
                error = ErrorCode.unknown_server_error
            else:
                error = status
        current = self.get_transaction_state(transactional_id)
        if error is ErrorCode.none:
            if isinstance(current, ErrorCode):
                logger.info("Accessing the cached transaction metadata for %s returns %s error; aborting transition "
                            "to the new metadata and setting the error in the callback", transactional_id,
                            current.name)
                error = current
            elif current is None:
                logger.info("The cached coordinator metadata does not exist in the cache anymore for %s after "
                            "appended its new metadata %s; returning NOT_COORDINATOR", transactional_id, new_metadata)
                error = ErrorCode.not_coordinator
            elif current.coordinator_epoch != coordinator_epoch:
                logger.info("The cached coordinator epoch for %s has changed to %d after appended its new metadata "
                            "%s while it was %d before appending; returning NOT_COORDINATOR", transactional_id,
                            current.coordinator_epoch, new_metadata, coordinator_epoch)
                error = ErrorCode.not_coordinator
            else:
                current.transaction_metadata.complete_transition_to(new_metadata)
                logger.debug("Updating %s's transaction state to %s with coordinator epoch %d succeeded",
                             transactional_id, new_metadata, coordinator_epoch)
        elif isinstance(current, CoordinatorEpochAndTxnMetadata):
            metadata = current.transaction_metadata
            if current.coordinator_epoch == coordinator_epoch:
                if retry_on_error(error):
                    logger.info("TransactionalId %s append transaction log for %s transition failed due to %s, not "
                                "resetting pending state %s but just returning the error in the callback to let the "
                                "caller retry", transactional_id, new_metadata, error.name, metadata.pending_state)
                else:
                    logger.info("TransactionalId %s append transaction log for %s transition failed due to %s, "
                                "resetting pending state from %s, aborting state transition and returning %s in the "
                                "callback", transactional_id, new_metadata, error.name, metadata.pending_state,
                                error.name)
                    metadata.pending_state = None
            else:
                logger.info("TransactionalId %s append transaction log for %s transition failed due to %s, aborting "
                            "state transition and returning the error in the callback since the coordinator epoch "
                            "has changed from %d to %d", transactional_id, new_metadata, error.name,
                            current.coordinator_epoch, coordinator_epoch)
        else:
            logger.info("TransactionalId %s append transaction log for %s transition failed due to %s, aborting "
                        "state transition and returning the error in the callback since the metadata is not "
                        "available (%s)", transactional_id, new_metadata, error.name, current)
        response_callback(error)

    def startup(self, partition_count: int) -> None:
        """Kafka: ``startup``: the partition count is fixed from now on (expiration is scheduled by the
        coordinator)."""
        self.transaction_topic_partition_count = partition_count

    def shutdown(self) -> None:
        """Kafka: ``shutdown``."""
        self._shutting_down = True
        self.loading_partitions.clear()
        self.transaction_metadata_cache.clear()
        logger.info("Shutdown complete")
