"""The transaction coordinator of kafkalog's broker: Kafka 3.8.0's, on one asyncio event loop.

Port of ``core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala`` (the handlers, in Kafka's
order of checks and with Kafka's error codes) and of the transaction parts of ``KafkaApis.scala`` (how each request
version becomes a handler call and its result a response), tag 3.8.0.  The state machine is
:mod:`kafkalog.broker.txn_metadata`, the records :mod:`kafkalog.broker.txn_records`, the cache and the log
:mod:`kafkalog.broker.txn_state_manager`, the markers :mod:`kafkalog.broker.txn_markers`.

The broker's dispatch calls one coroutine per API with the group coordinator's
:class:`~kafkalog.broker.group_coordinator.RequestContext` and the request kio decoded, and sends back the response
object of the request's version:

=========================  ========  ===============================================================
API                        versions  coroutine
=========================  ========  ===============================================================
InitProducerId (22)        0-5       :meth:`TransactionCoordinator.init_producer_id`
AddPartitionsToTxn (24)    0-5       :meth:`TransactionCoordinator.add_partitions_to_txn` (v4+: a
                                     broker's batch, ``verify_only`` answered from the cache)
AddOffsetsToTxn (25)       0-4       :meth:`TransactionCoordinator.add_offsets_to_txn`
EndTxn (26)                0-4       :meth:`TransactionCoordinator.end_txn`
DescribeTransactions (65)  0         :meth:`TransactionCoordinator.describe_transactions`
ListTransactions (66)      0-1       :meth:`TransactionCoordinator.list_transactions`
=========================  ========  ===============================================================

FindCoordinator for a transactional id (key type 1) is the group coordinator's: this node coordinates every
transactional id.  One transaction, step by step: InitProducerId gives the id its producer id and a new epoch
(``Empty``), AddPartitionsToTxn / AddOffsetsToTxn add partitions (``Ongoing``; AddOffsetsToTxn adds the group's
``__consumer_offsets`` partition, ``partitionFor(groupId)``), EndTxn writes ``PrepareCommit`` / ``PrepareAbort``,
answers, writes a marker to every partition, then ``CompleteCommit`` / ``CompleteAbort``.  Each state change is a
``__transaction_state`` record written before the cache changes.

:meth:`TransactionCoordinator.startup` creates ``__transaction_state`` if absent and loads every partition at the
coordinator epoch (Kafka: ``onElection``), sending again the markers of transactions a crash left prepared; a
request meanwhile gets ``COORDINATOR_LOAD_IN_PROGRESS``.  Every
``transaction.abort.timed.out.transaction.cleanup.interval.ms`` the transactions older than their timeout are
aborted with a bumped epoch (the producer is fenced); every
``transaction.remove.expired.transaction.cleanup.interval.ms`` ids unused for ``transactional.id.expiration.ms``
get tombstones.

Kafka runs the handlers on request threads under each metadata's lock; here everything runs on the broker's
event loop and no handler awaits, so each one is atomic as Kafka's locked section is; the appends return when
done, so the callbacks Kafka runs when the log answers run before the coroutine returns.

Where kafkalog differs:

- no authorization: every ACL check passes (``TRANSACTIONAL_ID_AUTHORIZATION_FAILED`` is never answered); as in
  Kafka, a client's AddPartitionsToTxn (v0-v3) may not add a partition of an internal topic
  (``TOPIC_AUTHORIZATION_FAILED``): AddOffsetsToTxn does that for it;
- a partition's existence is checked only when the context can say
  (:class:`~kafkalog.broker.group_coordinator.TopicResolver`);
- the coordinator epoch is the one the broker gives (``coordinator_epoch``, 0 by default): one node never loses
  the partition's leadership, where Kafka's is the partition's leader epoch;
- a failure of the producer id generator is answered ``UNKNOWN_SERVER_ERROR`` unless the exception carries an
  ``error_code`` (Kafka: ``Errors.forException``).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable, Iterable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import TZAware, i32Timedelta

from .._common import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from ..errors import IllegalArgumentError, IllegalStateError, UnknownTopicOrPartitionError
from .coordinator_logs import CoordinatorLogs
from .delayed import LoopTimer, Timer, TimerHandle
from .group_coordinator import RequestContext
from .group_records import GROUP_METADATA_TOPIC_NAME, partition_for
from .kio_values import build, ms
from .protocol import response_class
from .txn_config import TransactionCoordinatorConfig
from .txn_markers import TransactionCompletionListener, TransactionMarkerChannelManager
from .txn_metadata import (
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from .txn_records import TRANSACTION_STATE_TOPIC_NAME
from .txn_state_manager import (
    CoordinatorEpochAndTxnMetadata,
    TransactionalIdAndProducerIdEpoch,
    TransactionStateManager,
)

__all__ = ["InitProducerIdResult", "TransactionCoordinator"]

logger = logging.getLogger(__name__)

#: Kafka: ``Topic.isInternal``.
_INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME})

#: ``(producer id, producer epoch, error)`` (Kafka: ``InitProducerIdResult``).
InitProducerIdResult = tuple[int, int, ErrorCode]
_Transit = tuple[int, TxnTransitMetadata]


def _version(request: Any) -> int:
    return int(type(request).__version__)


def _illegal_state(transactional_id: str, state: TransactionState) -> IllegalStateError:
    message = (f"Found transactionalId {transactional_id} with state {state}. This is illegal as we should never "
               "have transitioned to this state.")
    logger.critical(message)
    return IllegalStateError(message)


def _invalid_transition(transactional_id: str, state: TransactionState, committed: bool) -> ErrorCode:
    """Kafka: ``logInvalidStateTransitionAndReturnError``."""
    logger.debug("TransactionalId: %s's state is %s, but received transaction marker result to send: %s",
                 transactional_id, state, "COMMIT" if committed else "ABORT")
    return ErrorCode.invalid_txn_state


def _start_time(ms_since_epoch: int) -> datetime.datetime:
    """DescribeTransactions' ``TransactionStartTimeMs`` as kio's datetime field.  kio's ``TZAware`` refuses an
    instant before the epoch, but Kafka answers -1 for no transaction (an error, or an ``Empty`` id): that one is
    the plain datetime 1 ms before the epoch, which kio's writer puts on the wire as -1."""
    instant = datetime.datetime.fromtimestamp(ms_since_epoch / 1000, tz=datetime.UTC)
    return TZAware.parse(instant) if ms_since_epoch >= 0 else instant


class TransactionCoordinator:
    """Kafka: ``TransactionCoordinator``."""

    def __init__(self, logs: CoordinatorLogs, generate_producer_id: Callable[[], int],
                 config: TransactionCoordinatorConfig | None = None, *, broker_id: int = 0,
                 timer: Timer | None = None, coordinator_epoch: int = 0,
                 offsets_topic_num_partitions: int = 50) -> None:
        self.broker_id = broker_id
        self.config = config if config is not None else TransactionCoordinatorConfig()
        self.timer: Timer = timer if timer is not None else LoopTimer()
        self.generate_producer_id = generate_producer_id
        self.coordinator_epoch = coordinator_epoch
        self.offsets_topic_num_partitions = offsets_topic_num_partitions
        self.txn_manager = TransactionStateManager(broker_id, self.config, logs, self.timer.time_ms)
        self.txn_marker_channel_manager = TransactionMarkerChannelManager(self.txn_manager, self.timer)
        self.logs = logs
        self.is_active = False
        self._topic_ready = False
        self._partition_count = 0
        self._tasks: dict[str, TimerHandle] = {}

    def add_completion_listener(self, listener: TransactionCompletionListener) -> None:
        """Have ``listener.on_transaction_completed(topic, partition, producer_id, committed)`` called after each
        marker lands on a ``__consumer_offsets`` partition (the group coordinator's pending offsets)."""
        self.txn_marker_channel_manager.add_completion_listener(listener)

    def partition_for(self, transactional_id: str) -> int:
        return self.txn_manager.partition_for(transactional_id)

    def _time(self) -> int:
        return self.timer.time_ms()

    def _new_producer_id(self) -> int | ErrorCode:
        try:
            return self.generate_producer_id()
        except Exception as e:
            logger.exception("Failed to generate a producer id")
            code = getattr(e, "error_code", None)
            return code if isinstance(code, ErrorCode) else ErrorCode.unknown_server_error

    # == lifecycle ==

    async def startup(self, *, enable_transactional_id_expiration: bool = True, create_topic: bool = True) -> None:
        """Kafka: ``startup`` then ``onElection`` for every partition: create ``__transaction_state`` if absent,
        schedule the abort of timed-out transactions (and the expiration of ids), load every partition.

        The partition count is the topic's when it exists, ``transaction.state.log.num.partitions`` only for a new
        one (Kafka's ``retrieveTransactionTopicPartitionCount`` asks the metadata first): an id's partition is its
        hash modulo the count, so a changed setting must not move ids away from their records.

        With ``create_topic`` False an absent ``__transaction_state`` is left absent until :meth:`ensure_topic` (the
        broker's FindCoordinator for a transactional id, as a Kafka broker creates the topic on that request's
        behalf); until then a transactional request is answered ``NOT_COORDINATOR``."""
        logger.info("Starting up.")
        existing = self._existing_partition_count()
        count = existing or self.config.transaction_state_log_num_partitions
        self.txn_manager.startup(count)
        self._partition_count = count
        if create_topic or existing:
            self._load_topic()
        self.is_active = True
        self._schedule("transaction-abort", self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                       lambda: self.abort_timed_out_transactions(self._on_end_transaction_complete))
        if enable_transactional_id_expiration:
            self._schedule("transactionalId-expiration",
                           self.config.transaction_remove_expired_transaction_cleanup_interval_ms,
                           self.txn_manager.remove_expired_transactional_ids)
        if self._topic_ready:
            await self._elect_all()
        logger.info("Startup complete.")

    def _load_topic(self) -> None:
        self._topic_ready = True
        count = self._partition_count
        self.logs.ensure_internal_topic(TRANSACTION_STATE_TOPIC_NAME, count, self.config.transaction_topic_configs())
        for partition in range(count):
            self.txn_manager.add_loading_partition(partition, self.coordinator_epoch)

    async def _elect_all(self) -> None:
        for partition in range(self._partition_count):
            self.on_election(partition, self.coordinator_epoch)
            await asyncio.sleep(0)  # let requests in: they see the partitions still loading

    async def ensure_topic(self) -> None:
        """Create ``__transaction_state`` if absent and load every partition, once."""
        if self._topic_ready:
            return
        self._load_topic()
        await self._elect_all()

    def _existing_partition_count(self) -> int:
        """How many ``__transaction_state`` partitions have a log (0, 1, ... up to the first missing)."""
        count = 0
        while True:
            try:
                self.logs.log(TRANSACTION_STATE_TOPIC_NAME, count)
            except UnknownTopicOrPartitionError:
                return count
            count += 1

    def _schedule(self, name: str, interval_ms: int, task: Callable[[], None]) -> None:
        """Kafka: ``scheduler.schedule(name, task, delay = interval, period = interval)``."""
        def run() -> None:
            self._tasks.pop(name, None)
            if not self.is_active:
                return
            try:
                task()
            except Exception:
                logger.exception("Uncaught error in scheduled task '%s'", name)
            finally:
                if self.is_active:
                    self._tasks[name] = self.timer.call_later(interval_ms, run)

        self._tasks[name] = self.timer.call_later(interval_ms, run)

    def shutdown(self) -> None:
        """Kafka: ``shutdown``."""
        logger.info("Shutting down.")
        self.is_active = False
        for handle in self._tasks.values():
            handle.cancel()
        self._tasks.clear()
        self.txn_manager.shutdown()
        self.txn_marker_channel_manager.shutdown()
        logger.info("Shutdown complete.")

    def on_election(self, txn_topic_partition: int, coordinator_epoch: int) -> None:
        """Kafka: ``onElection``: load the partition at ``coordinator_epoch``, completing what it left prepared."""
        logger.info("Elected as the txn coordinator for partition %d at epoch %d", txn_topic_partition,
                    coordinator_epoch)
        self.txn_marker_channel_manager.remove_markers_for_txn_topic_partition(txn_topic_partition)
        self.txn_manager.load_transactions_for_txn_topic_partition(
            txn_topic_partition, coordinator_epoch, self.txn_marker_channel_manager.add_txn_markers_to_send)

    def on_resignation(self, txn_topic_partition: int, coordinator_epoch: int | None = None) -> None:
        """Kafka: ``onResignation``."""
        logger.info("Resigned as the txn coordinator for partition %d at epoch %s", txn_topic_partition,
                    coordinator_epoch)
        self.txn_manager.remove_transactions_for_txn_topic_partition(txn_topic_partition, coordinator_epoch)
        self.txn_marker_channel_manager.remove_markers_for_txn_topic_partition(txn_topic_partition)

    # == the handlers (Kafka's handle* methods, with callbacks) ==

    def handle_init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int,
                                expected_producer_id_and_epoch: tuple[int, int] | None,
                                response_callback: Callable[[InitProducerIdResult], None]) -> None:
        """Kafka: ``handleInitProducerId``."""
        def error(code: ErrorCode) -> None:
            response_callback((NO_PRODUCER_ID, NO_PRODUCER_EPOCH, code))

        if transactional_id is None:
            producer_id = self._new_producer_id()
            if isinstance(producer_id, ErrorCode):
                error(producer_id)
            else:
                response_callback((producer_id, 0, ErrorCode.none))
            return
        if not transactional_id:
            error(ErrorCode.invalid_request)
            return
        if not self.txn_manager.validate_transaction_timeout_ms(transaction_timeout_ms):
            error(ErrorCode.invalid_transaction_timeout)
            return
        existing = self.txn_manager.get_transaction_state(transactional_id)
        if existing is None:
            producer_id = self._new_producer_id()
            if isinstance(producer_id, ErrorCode):
                error(producer_id)
                return
            created = TransactionMetadata(transactional_id, producer_id, NO_PRODUCER_ID, NO_PRODUCER_EPOCH,
                                          NO_PRODUCER_EPOCH, transaction_timeout_ms, TransactionState.EMPTY, set(),
                                          -1, self._time())
            existing = self.txn_manager.put_transaction_state_if_not_exists(created)
        if isinstance(existing, ErrorCode):
            error(existing)
            return
        result = self._prepare_init_producer_id_transit(transactional_id, transaction_timeout_ms,
                                                        existing.coordinator_epoch, existing.transaction_metadata,
                                                        expected_producer_id_and_epoch)
        if isinstance(result, ErrorCode):
            error(result)
            return
        coordinator_epoch, new_metadata = result
        if new_metadata.txn_state is TransactionState.PREPARE_EPOCH_FENCE:
            def send_retriable_error_callback(code: ErrorCode) -> None:
                error(code if code is not ErrorCode.none else ErrorCode.concurrent_transactions)

            self._end_transaction(transactional_id, new_metadata.producer_id, new_metadata.producer_epoch, False,
                                  False, send_retriable_error_callback)
            return

        def send_pid_response_callback(code: ErrorCode) -> None:
            if code is ErrorCode.none:
                logger.info("Initialized transactionalId %s with producerId %d and producer epoch %d on partition "
                            "%s-%d", transactional_id, new_metadata.producer_id, new_metadata.producer_epoch,
                            TRANSACTION_STATE_TOPIC_NAME, self.partition_for(transactional_id))
                response_callback((new_metadata.producer_id, new_metadata.producer_epoch, ErrorCode.none))
            else:
                logger.info("Returning %s error code to client for %s's InitProducerId request", code.name,
                            transactional_id)
                error(code)

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, new_metadata,
                                                   send_pid_response_callback)

    def _prepare_init_producer_id_transit(self, transactional_id: str, transaction_timeout_ms: int,
                                          coordinator_epoch: int, metadata: TransactionMetadata,
                                          expected: tuple[int, int] | None) -> ErrorCode | _Transit:
        """Kafka: ``prepareInitProducerIdTransit``."""
        def is_valid_producer_id(producer_id: int, epoch: int) -> bool:
            # A retry after the epoch was exhausted and the id rotated names the last producer id.
            return (metadata.producer_epoch == NO_PRODUCER_EPOCH or producer_id == metadata.producer_id
                    or (producer_id == metadata.last_producer_id and is_epoch_exhausted(epoch)))

        if metadata.pending_transition_in_progress:
            # A previous transition is being written; the client retries (Kafka: CONCURRENT_TRANSACTIONS).
            return ErrorCode.concurrent_transactions
        if expected is not None and not is_valid_producer_id(*expected):
            return ErrorCode.producer_fenced
        state = metadata.state
        if state in (TransactionState.PREPARE_ABORT, TransactionState.PREPARE_COMMIT):
            return ErrorCode.concurrent_transactions
        if state in (TransactionState.COMPLETE_ABORT, TransactionState.COMPLETE_COMMIT, TransactionState.EMPTY):
            if metadata.is_producer_epoch_exhausted and (expected is None or expected[1] == metadata.producer_epoch):
                producer_id = self._new_producer_id()
                if isinstance(producer_id, ErrorCode):
                    return producer_id
                return coordinator_epoch, metadata.prepare_producer_id_rotation(
                    producer_id, transaction_timeout_ms, self._time(), expected is not None)
            transit = metadata.prepare_increment_producer_epoch(
                transaction_timeout_ms, None if expected is None else expected[1], self._time())
            if transit is None:
                return ErrorCode.producer_fenced
            return coordinator_epoch, transit
        if state is TransactionState.ONGOING:
            # The producer's ongoing transaction is aborted first, with a bumped epoch that fences it.
            return coordinator_epoch, metadata.prepare_fence_producer_epoch()
        raise _illegal_state(transactional_id, state)

    def handle_list_transactions(self, filtered_producer_ids: Iterable[int], filtered_states: Iterable[str],
                                 filtered_duration: int = -1
                                 ) -> tuple[ErrorCode, list[str], list[tuple[str, int, str]]]:
        """Kafka: ``handleListTransactions``."""
        if not self.is_active:
            return ErrorCode.coordinator_not_available, [], []
        return self.txn_manager.list_transaction_states(filtered_producer_ids, filtered_states, filtered_duration)

    def handle_describe_transactions(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        """Kafka: ``handleDescribeTransactions``: the error, and the metadata when there is no error."""
        if transactional_id is None:
            raise IllegalArgumentError("Invalid null transactionalId")
        if not self.is_active:
            return ErrorCode.coordinator_not_available, None
        if not transactional_id:
            return ErrorCode.invalid_request, None
        current = self.txn_manager.get_transaction_state(transactional_id)
        if isinstance(current, ErrorCode):
            return current, None
        if current is None or current.transaction_metadata.state is TransactionState.DEAD:
            return ErrorCode.transactional_id_not_found, None
        return ErrorCode.none, current.transaction_metadata

    def handle_verify_partitions_in_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                                partitions: Iterable[TopicPartition]
                                                ) -> dict[TopicPartition, ErrorCode]:
        """Kafka: ``handleVerifyPartitionsInTransaction``: each partition ``NONE`` when the ongoing transaction
        has it, ``TRANSACTION_ABORTABLE`` when it does not."""
        parts = list(partitions)
        if not transactional_id:
            return dict.fromkeys(parts, ErrorCode.invalid_request)
        current = self.txn_manager.get_transaction_state(transactional_id)
        if isinstance(current, ErrorCode):
            return dict.fromkeys(parts, current)
        if current is None or current.transaction_metadata.producer_id != producer_id:
            return dict.fromkeys(parts, ErrorCode.invalid_producer_id_mapping)
        metadata = current.transaction_metadata
        if metadata.producer_epoch != producer_epoch:
            return dict.fromkeys(parts, ErrorCode.producer_fenced)
        if metadata.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            return dict.fromkeys(parts, ErrorCode.concurrent_transactions)
        return {tp: ErrorCode.none if tp in metadata.topic_partitions else ErrorCode.transaction_abortable
                for tp in parts}

    def handle_add_partitions_to_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                             partitions: set[TopicPartition],
                                             response_callback: Callable[[ErrorCode], None]) -> None:
        """Kafka: ``handleAddPartitionsToTransaction``."""
        if not transactional_id:
            logger.debug("Returning INVALID_REQUEST error code to client for %s's AddPartitions request",
                         transactional_id)
            response_callback(ErrorCode.invalid_request)
            return
        current = self.txn_manager.get_transaction_state(transactional_id)
        result: ErrorCode | _Transit
        if isinstance(current, ErrorCode):
            result = current
        elif current is None:
            result = ErrorCode.invalid_producer_id_mapping
        else:
            metadata = current.transaction_metadata
            if metadata.producer_id != producer_id:
                result = ErrorCode.invalid_producer_id_mapping
            elif metadata.producer_epoch != producer_epoch:
                result = ErrorCode.producer_fenced
            elif metadata.pending_transition_in_progress:
                # A previous transition is being written; the client retries.
                result = ErrorCode.concurrent_transactions
            elif metadata.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
                result = ErrorCode.concurrent_transactions
            elif metadata.state is TransactionState.ONGOING and partitions <= metadata.topic_partitions:
                # Nothing new: no record to write.
                result = ErrorCode.none
            else:
                result = (current.coordinator_epoch, metadata.prepare_add_partitions(partitions, self._time()))
        if isinstance(result, ErrorCode):
            logger.debug("Returning %s error code to client for %s's AddPartitions request", result.name,
                         transactional_id)
            response_callback(result)
            return
        coordinator_epoch, new_metadata = result
        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, new_metadata,
                                                   response_callback)

    def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                               response_callback: Callable[[ErrorCode], None]) -> None:
        """Kafka: ``handleEndTransaction``: a client's commit or abort."""
        self._end_transaction(transactional_id, producer_id, producer_epoch, committed, True, response_callback)

    def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool,
                         is_from_client: bool, response_callback: Callable[[ErrorCode], None]) -> None:
        """Kafka: ``endTransaction``: write ``PrepareCommit`` / ``PrepareAbort``, answer, then write the markers
        and the completion.  From the coordinator itself (a fenced or timed-out transaction) the epoch given is
        the bumped one the fence prepared, ahead of the cached one."""
        if not transactional_id:
            response_callback(ErrorCode.invalid_request)
            return
        is_epoch_fence = False
        current = self.txn_manager.get_transaction_state(transactional_id)
        pre_append: ErrorCode | _Transit
        if isinstance(current, ErrorCode):
            pre_append = current
        elif current is None:
            pre_append = ErrorCode.invalid_producer_id_mapping
        else:
            metadata = current.transaction_metadata
            state = metadata.state
            if metadata.producer_id != producer_id:
                pre_append = ErrorCode.invalid_producer_id_mapping
            elif (is_from_client and producer_epoch != metadata.producer_epoch) or \
                    producer_epoch < metadata.producer_epoch:
                # A client's request must carry the current epoch; the coordinator's may be ahead of it.
                pre_append = ErrorCode.producer_fenced
            elif metadata.pending_transition_in_progress and \
                    metadata.pending_state is not TransactionState.PREPARE_EPOCH_FENCE:
                pre_append = ErrorCode.concurrent_transactions
            elif state is TransactionState.ONGOING:
                next_state = TransactionState.PREPARE_COMMIT if committed else TransactionState.PREPARE_ABORT
                if next_state is TransactionState.PREPARE_ABORT and \
                        metadata.pending_state is TransactionState.PREPARE_EPOCH_FENCE:
                    # The fence's bumped epoch becomes the metadata's now, before the abort is written with it.
                    is_epoch_fence = True
                    metadata.pending_state = None
                    metadata.producer_epoch = producer_epoch
                    metadata.last_producer_epoch = NO_PRODUCER_EPOCH
                pre_append = (current.coordinator_epoch, metadata.prepare_abort_or_commit(next_state, self._time()))
            elif state is TransactionState.COMPLETE_COMMIT:
                pre_append = ErrorCode.none if committed else _invalid_transition(transactional_id, state, committed)
            elif state is TransactionState.COMPLETE_ABORT:
                pre_append = ErrorCode.none if not committed else _invalid_transition(transactional_id, state,
                                                                                      committed)
            elif state is TransactionState.PREPARE_COMMIT:
                pre_append = ErrorCode.concurrent_transactions if committed else \
                    _invalid_transition(transactional_id, state, committed)
            elif state is TransactionState.PREPARE_ABORT:
                pre_append = ErrorCode.concurrent_transactions if not committed else \
                    _invalid_transition(transactional_id, state, committed)
            elif state is TransactionState.EMPTY:
                pre_append = _invalid_transition(transactional_id, state, committed)
            else:
                raise _illegal_state(transactional_id, state)
        if isinstance(pre_append, ErrorCode):
            logger.debug("Aborting append of %s to transaction log with coordinator and returning %s error to client "
                         "for %s's EndTransaction request", "COMMIT" if committed else "ABORT", pre_append.name,
                         transactional_id)
            response_callback(pre_append)
            return
        coordinator_epoch, new_metadata = pre_append

        def send_txn_markers_callback(error: ErrorCode) -> None:
            if error is not ErrorCode.none:
                logger.info("Aborting sending of transaction markers and returning %s error to client for %s's "
                            "EndTransaction request, since appending %s to transaction log with coordinator epoch "
                            "%d failed", error.name, transactional_id, new_metadata, coordinator_epoch)
                if is_epoch_fence:
                    latest = self.txn_manager.get_transaction_state(transactional_id)
                    if isinstance(latest, CoordinatorEpochAndTxnMetadata) and \
                            latest.coordinator_epoch == coordinator_epoch:
                        latest.transaction_metadata.has_failed_epoch_fence = True
                        logger.warning("The coordinator failed to write an epoch fence transition for producer %s to "
                                       "the transaction log with error %s. The epoch was increased to %d but not "
                                       "returned to the client", transactional_id, error.name,
                                       new_metadata.producer_epoch)
                response_callback(error)
                return
            pre_send = self._prepare_complete_after_append(transactional_id, producer_id, producer_epoch, committed,
                                                           coordinator_epoch)
            if isinstance(pre_send, ErrorCode):
                logger.info("Aborting sending of transaction markers after appended %s to transaction log and "
                            "returning %s error to client for %s's EndTransaction request",
                            "COMMIT" if committed else "ABORT", pre_send.name, transactional_id)
                response_callback(pre_send)
                return
            txn_metadata, new_pre_send_metadata = pre_send
            response_callback(ErrorCode.none)
            self.txn_marker_channel_manager.add_txn_markers_to_send(coordinator_epoch, committed, txn_metadata,
                                                                    new_pre_send_metadata)

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, new_metadata,
                                                   send_txn_markers_callback)

    def _prepare_complete_after_append(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                       committed: bool, coordinator_epoch: int
                                       ) -> ErrorCode | tuple[TransactionMetadata, TxnTransitMetadata]:
        """``endTransaction``'s ``preSendResult``: the metadata is still the one just written, so its completion
        can be prepared."""
        current = self.txn_manager.get_transaction_state(transactional_id)
        if isinstance(current, ErrorCode):
            return current
        if current is None:
            message = (f"The coordinator still owns the transaction partition for {transactional_id}, but there is "
                       "no metadata in the cache; this is not expected")
            logger.critical(message)
            raise IllegalStateError(message)
        if current.coordinator_epoch != coordinator_epoch:
            logger.debug("The transaction coordinator epoch has changed to %d after %s was successfully appended to "
                         "the log for %s with old epoch %d", current.coordinator_epoch,
                         "COMMIT" if committed else "ABORT", transactional_id, coordinator_epoch)
            return ErrorCode.not_coordinator
        metadata = current.transaction_metadata
        state = metadata.state
        if metadata.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.producer_fenced
        if metadata.pending_transition_in_progress:
            return ErrorCode.concurrent_transactions
        if state in (TransactionState.EMPTY, TransactionState.ONGOING, TransactionState.COMPLETE_COMMIT,
                     TransactionState.COMPLETE_ABORT):
            return _invalid_transition(transactional_id, state, committed)
        if state is TransactionState.PREPARE_COMMIT:
            if not committed:
                return _invalid_transition(transactional_id, state, committed)
            return metadata, metadata.prepare_complete(self._time())
        if state is TransactionState.PREPARE_ABORT:
            if committed:
                return _invalid_transition(transactional_id, state, committed)
            return metadata, metadata.prepare_complete(self._time())
        raise _illegal_state(transactional_id, state)

    # -- timeouts --

    @staticmethod
    def _on_end_transaction_complete(txn: TransactionalIdAndProducerIdEpoch) -> Callable[[ErrorCode], None]:
        """Kafka: ``onEndTransactionComplete``: the log line of a timed-out transaction's rollback."""
        def callback(error: ErrorCode) -> None:
            if error is ErrorCode.none:
                logger.info("Completed rollback of ongoing transaction for transactionalId %s due to timeout",
                            txn.transactional_id)
            elif error in (ErrorCode.invalid_producer_id_mapping, ErrorCode.producer_fenced,
                           ErrorCode.concurrent_transactions):
                logger.debug("Rollback of ongoing transaction for transactionalId %s has been cancelled due to error "
                             "%s", txn.transactional_id, error.name)
            else:
                logger.warning("Rollback of ongoing transaction for transactionalId %s failed due to error %s",
                               txn.transactional_id, error.name)

        return callback

    def abort_timed_out_transactions(
            self, on_complete: Callable[[TransactionalIdAndProducerIdEpoch], Callable[[ErrorCode], None]]) -> None:
        """Kafka: ``abortTimedOutTransactions``: fence the producer of each timed-out transaction (a bumped epoch)
        and abort the transaction with it."""
        for txn in self.txn_manager.timed_out_transactions():
            current = self.txn_manager.get_transaction_state(txn.transactional_id)
            if isinstance(current, ErrorCode):
                continue
            if current is None:
                logger.error("Could not find transaction metadata when trying to timeout transaction for %s", txn)
                continue
            metadata = current.transaction_metadata
            if metadata.producer_id != txn.producer_id:
                logger.error("Found incorrect producerId when expiring transactionalId: %s. Expected producerId: %d. "
                             "Found producerId: %d", txn.transactional_id, txn.producer_id, metadata.producer_id)
                continue
            if metadata.pending_transition_in_progress:
                logger.debug("Skipping abort of timed out transaction %s since there is a pending state transition",
                             txn)
                continue
            transit = metadata.prepare_fence_producer_epoch()
            self._end_transaction(metadata.transactional_id, transit.producer_id, transit.producer_epoch, False,
                                  False, on_complete(txn))

    # == the APIs: requests in, responses out (Kafka: KafkaApis) ==

    async def init_producer_id(self, ctx: RequestContext, request: Any) -> Any:
        """InitProducerId v0-v5 (Kafka: ``handleInitProducerIdRequest``); v3+ may name the producer's current id
        and epoch (KIP-360), both or neither."""
        version = _version(request)
        response = response_class(request.__api_key__, request.__version__)
        producer_id = int(getattr(request, "producer_id", NO_PRODUCER_ID))
        producer_epoch = int(getattr(request, "producer_epoch", NO_PRODUCER_EPOCH))
        if producer_id == NO_PRODUCER_ID and producer_epoch == NO_PRODUCER_EPOCH:
            expected: tuple[int, int] | None = None
        elif producer_id == NO_PRODUCER_ID or producer_epoch == NO_PRODUCER_EPOCH:
            return build(response, error_code=ErrorCode.invalid_request, producer_id=NO_PRODUCER_ID,
                         producer_epoch=NO_PRODUCER_EPOCH)
        else:
            expected = (producer_id, producer_epoch)
        results: list[InitProducerIdResult] = []
        self.handle_init_producer_id(request.transactional_id, ms(request.transaction_timeout), expected,
                                     results.append)
        pid, epoch, error = results[0]
        if version < 4 and error is ErrorCode.producer_fenced:
            error = ErrorCode.invalid_producer_epoch
        return build(response, error_code=error, producer_id=pid, producer_epoch=epoch)

    async def add_partitions_to_txn(self, ctx: RequestContext, request: Any) -> Any:
        """AddPartitionsToTxn v0-v5 (Kafka: ``handleAddPartitionsToTxnRequest``): v0-v3 a client's one
        transaction; v4+ a broker's batch of transactions, each either added or (``verify_only``) checked."""
        version = _version(request)
        response = response_class(request.__api_key__, request.__version__)
        if version < 4:
            transactions = [(request.v3_and_below_transactional_id, int(request.v3_and_below_producer_id),
                             int(request.v3_and_below_producer_epoch), False, request.v3_and_below_topics)]
        else:
            transactions = [(t.transactional_id, int(t.producer_id), int(t.producer_epoch), bool(t.verify_only),
                             t.topics) for t in request.transactions]
        results = []
        for transactional_id, producer_id, producer_epoch, verify_only, topics in transactions:
            partitions = [(t.name, int(p)) for t in topics for p in t.partitions]
            errors = self._add_partitions(ctx, version, transactional_id, producer_id, producer_epoch, verify_only,
                                          partitions)
            results.append((transactional_id, self._topic_results(errors)))
        if version < 4:
            return build(response, results_by_topic_v3_and_below=results[0][1])
        return build(response, error_code=ErrorCode.none, results_by_transaction=[
            {"transactional_id": tid, "topic_results": topic_results} for tid, topic_results in results])

    def _add_partitions(self, ctx: RequestContext, version: int, transactional_id: str, producer_id: int,
                        producer_epoch: int, verify_only: bool, partitions: list[TopicPartition]
                        ) -> dict[TopicPartition, ErrorCode]:
        unauthorized: dict[TopicPartition, ErrorCode] = {}
        non_existing: dict[TopicPartition, ErrorCode] = {}
        authorized: list[TopicPartition] = []
        for tp in partitions:
            if version < 4 and tp[0] in _INTERNAL_TOPICS:
                unauthorized[tp] = ErrorCode.topic_authorization_failed
            elif ctx.topics is not None and not ctx.topics.partition_exists(tp[0], tp[1]):
                non_existing[tp] = ErrorCode.unknown_topic_or_partition
            else:
                authorized.append(tp)
        if unauthorized or non_existing:
            return {**unauthorized, **non_existing, **dict.fromkeys(authorized, ErrorCode.operation_not_attempted)}
        if verify_only:
            return self.handle_verify_partitions_in_transaction(transactional_id, producer_id, producer_epoch,
                                                                authorized)
        outcome: list[ErrorCode] = []
        self.handle_add_partitions_to_transaction(transactional_id, producer_id, producer_epoch, set(authorized),
                                                  outcome.append)
        error = outcome[0]
        if version < 2 and error is ErrorCode.producer_fenced:
            error = ErrorCode.invalid_producer_epoch
        return dict.fromkeys(authorized, error)

    @staticmethod
    def _topic_results(errors: dict[TopicPartition, ErrorCode]) -> list[dict[str, Any]]:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), error in errors.items():
            by_topic.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": error})
        return [{"name": topic, "results_by_partition": results} for topic, results in by_topic.items()]

    async def add_offsets_to_txn(self, ctx: RequestContext, request: Any) -> Any:
        """AddOffsetsToTxn v0-v4 (Kafka: ``handleAddOffsetsToTxnRequest``): add the group's ``__consumer_offsets``
        partition to the transaction."""
        version = _version(request)
        partition = partition_for(request.group_id, self.offsets_topic_num_partitions)
        outcome: list[ErrorCode] = []
        self.handle_add_partitions_to_transaction(request.transactional_id, int(request.producer_id),
                                                  int(request.producer_epoch),
                                                  {(GROUP_METADATA_TOPIC_NAME, partition)}, outcome.append)
        error = outcome[0]
        if version < 2 and error is ErrorCode.producer_fenced:
            error = ErrorCode.invalid_producer_epoch
        return build(response_class(request.__api_key__, request.__version__), error_code=error)

    async def end_txn(self, ctx: RequestContext, request: Any) -> Any:
        """EndTxn v0-v4 (Kafka: ``handleEndTxnRequest``): answered once ``PrepareCommit`` / ``PrepareAbort`` is
        written; the markers follow."""
        version = _version(request)
        outcome: list[ErrorCode] = []
        self.handle_end_transaction(request.transactional_id, int(request.producer_id), int(request.producer_epoch),
                                    bool(request.committed), outcome.append)
        error = outcome[0]
        if version < 2 and error is ErrorCode.producer_fenced:
            error = ErrorCode.invalid_producer_epoch
        return build(response_class(request.__api_key__, request.__version__), error_code=error)

    async def list_transactions(self, ctx: RequestContext, request: Any) -> Any:
        """ListTransactions v0-v1 (Kafka: ``handleListTransactionsRequest``)."""
        error, unknown, states = self.handle_list_transactions(
            [int(p) for p in request.producer_id_filters], list(request.state_filters),
            int(getattr(request, "duration_filter", -1)))
        return build(
            response_class(request.__api_key__, request.__version__), error_code=error, unknown_state_filters=unknown,
            transaction_states=[{"transactional_id": t, "producer_id": p, "transaction_state": s}
                                for t, p, s in states])

    async def describe_transactions(self, ctx: RequestContext, request: Any) -> Any:
        """DescribeTransactions v0 (Kafka: ``handleDescribeTransactionsRequest``): each id's state, producer,
        timeout, start time and partitions; an id with an error has only its error (Kafka's defaults: empty state,
        timeout 0, start -1, producer -1)."""
        response = response_class(request.__api_key__, request.__version__)
        module = __import__(response.__module__, fromlist=["TransactionState"])
        states = []
        for transactional_id in request.transactional_ids:
            error, metadata = self.handle_describe_transactions(transactional_id)
            topics: dict[str, list[int]] = {}
            if metadata is not None:
                for topic, partition in sorted(metadata.topic_partitions):
                    topics.setdefault(topic, []).append(partition)
            start_ms = -1 if metadata is None else metadata.txn_start_timestamp
            states.append(module.TransactionState(
                error_code=error, transactional_id=transactional_id,
                transaction_state="" if metadata is None else metadata.state.state_name,
                transaction_timeout=i32Timedelta.parse(datetime.timedelta(
                    milliseconds=0 if metadata is None else metadata.txn_timeout_ms)),
                transaction_start_time=_start_time(start_ms),
                producer_id=NO_PRODUCER_ID if metadata is None else metadata.producer_id,
                producer_epoch=NO_PRODUCER_EPOCH if metadata is None else metadata.producer_epoch,
                topics=tuple(build(module.TopicData, topic=t, partitions=p) for t, p in topics.items())))
        return response(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), transaction_states=tuple(states))
