"""Tests of :class:`kafkalog.broker.txn_coordinator.TransactionCoordinator`'s handlers: ports of Kafka 3.8.0's
``TransactionCoordinatorTest`` (``core/src/test/scala/unit/kafka/coordinator/transaction/``).

Kafka's test mocks the state manager and the marker channel and checks the calls made to them; here the
coordinator runs over its real state manager and real logs (:mod:`tests.support.txn_utils`), so each test puts the
metadata Kafka's mock returns into the cache, and checks what Kafka's ``verify`` checks as what landed in
``__transaction_state`` (and in the partitions' logs).  Kafka's ``NOT_ENOUGH_REPLICAS`` append failures are an
unknown partition here (both become ``COORDINATOR_NOT_AVAILABLE``); "not coordinator" is a partition this node
resigned, "loading" a partition marked loading.

Kafka tests not ported:

- ``shouldRespondWithInvalidRequestAddPartitionsToTransactionWhenTransactionalIdIsNull``,
  ``shouldRespondWithInvalidRequestOnEndTxnWhenTransactionalIdIsNull``: a null id is the empty one here (kio's
  field is never ``None``); the empty-id tests cover the branch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from kafkalog._common import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kafkalog.broker.txn_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata
from kafkalog.broker.txn_state_manager import TransactionalIdAndProducerIdEpoch
from kafkalog.errors import UnknownTopicOrPartitionError
from tests.support.txn_utils import TxnHarness

S = TransactionState
E = ErrorCode
TRANSACTIONAL_ID = "known"
PRODUCER_ID = 10
PRODUCER_EPOCH = 1
TXN_TIMEOUT_MS = 1
PARTITIONS = {("topic1", 0)}
SHORT_MAX = 2**15 - 1
ABORT_INTERVAL_MS = 10_000
FAILED = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)


@pytest.fixture
def h(tmp_path: Path) -> Iterator[TxnHarness]:
    harness = TxnHarness(tmp_path, first_producer_id=0)
    yield harness
    harness.close()


def txn(h: TxnHarness, producer_id: int, last_producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
        state: TransactionState, partitions: set[tuple[str, int]] | None = None, start: int | None = None,
        update: int | None = None, transactional_id: str = TRANSACTIONAL_ID) -> TransactionMetadata:
    """Kafka's ``new TransactionMetadata(...)`` in its positional order, put in the cache."""
    now = h.timer.now
    return h.put(TransactionMetadata(transactional_id, producer_id, last_producer_id, epoch, last_epoch, timeout_ms,
                                     state, set(partitions or ()), now if start is None else start,
                                     now if update is None else update))


def resign(h: TxnHarness) -> None:
    h.coordinator.on_resignation(h.coordinator.partition_for(TRANSACTIONAL_ID), 0)


def load_in_progress(h: TxnHarness) -> None:
    h.txn_manager.add_loading_partition(h.coordinator.partition_for(TRANSACTIONAL_ID), 0)


# -- InitProducerId --

def test_should_return_invalid_request_when_transactional_id_is_empty(h: TxnHarness) -> None:
    assert h.init_pid("") == (*FAILED, E.invalid_request)
    assert h.init_pid("") == (*FAILED, E.invalid_request)


def test_should_accept_init_pid_and_return_next_pid_when_transactional_id_is_null(h: TxnHarness) -> None:
    assert h.init_pid(None) == (0, 0, E.none)
    assert h.init_pid(None) == (1, 0, E.none)


def test_should_init_pid_with_epoch_zero_for_new_transactional_id(h: TxnHarness) -> None:
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (0, 0, E.none)
    assert h.states_written(TRANSACTIONAL_ID) == [S.EMPTY]


def test_should_generate_new_producer_id_if_no_state_and_producer_id_and_epoch_provided(h: TxnHarness) -> None:
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, PRODUCER_EPOCH)) == (0, 0, E.none)


def test_should_generate_new_producer_id_if_epochs_exhausted(h: TxnHarness) -> None:
    txn(h, PRODUCER_ID, PRODUCER_ID, SHORT_MAX - 1, SHORT_MAX - 2, TXN_TIMEOUT_MS, S.EMPTY)
    producer_id, epoch, error = h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS)
    assert producer_id != PRODUCER_ID
    assert (epoch, error) == (0, E.none)
    m = h.metadata(TRANSACTIONAL_ID)
    assert (m.producer_id, m.last_producer_id, m.producer_epoch, m.last_producer_epoch) == \
        (producer_id, PRODUCER_ID, 0, NO_PRODUCER_EPOCH)


def test_should_respond_with_not_coordinator_on_init_pid_when_not_coordinator(h: TxnHarness) -> None:
    resign(h)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (*FAILED, E.not_coordinator)


def test_should_respond_with_coordinator_load_in_progress_on_init_pid_when_coordinator_loading(
        h: TxnHarness) -> None:
    load_in_progress(h)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (*FAILED, E.coordinator_load_in_progress)


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_init_pid_rejects_a_timeout_out_of_range(h: TxnHarness, timeout_ms: int) -> None:
    """``validateTransactionTimeoutMs``: positive and at most ``transaction.max.timeout.ms``; nothing is
    written."""
    assert h.init_pid(TRANSACTIONAL_ID, timeout_ms) == (*FAILED, E.invalid_transaction_timeout)
    assert h.states_written(TRANSACTIONAL_ID) == []


def test_init_pid_answers_the_generators_failure(h: TxnHarness) -> None:
    def broken() -> int:
        raise RuntimeError("no block of producer ids yet")

    h.coordinator.generate_producer_id = broken
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (*FAILED, E.unknown_server_error)
    assert h.init_pid(None) == (*FAILED, E.unknown_server_error)


@pytest.mark.parametrize(("state", "kafka"), [
    (S.EMPTY, "shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingEmptyTransaction"),
    (S.COMPLETE_ABORT, "shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteTransaction"),
    (S.COMPLETE_COMMIT, "shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteCommitTransaction"),
])
def test_should_increment_epoch_and_update_metadata_on_handle_init_pid(h: TxnHarness, state: TransactionState,
                                                                       kafka: str) -> None:
    """TransactionCoordinatorTest.shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingEmptyTransaction,
    TransactionCoordinatorTest.shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteTransaction,
    TransactionCoordinatorTest.shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteCommitTransaction.
    """
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, state)
    assert h.init_pid(TRANSACTIONAL_ID, 10) == (PRODUCER_ID, PRODUCER_EPOCH + 1, E.none)
    assert m.txn_timeout_ms == 10
    assert m.state is S.EMPTY
    assert h.states_written(TRANSACTIONAL_ID) == [S.EMPTY]


@pytest.mark.parametrize(("state", "kafka"), [
    (S.PREPARE_COMMIT, "shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareCommitState"),
    (S.PREPARE_ABORT, "shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareAbortState"),
])
def test_should_wait_for_commit_to_complete_on_handle_init_pid(h: TxnHarness, state: TransactionState,
                                                               kafka: str) -> None:
    """TransactionCoordinatorTest.shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareCommitState,
    TransactionCoordinatorTest.shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareAbortState.
    """
    txn(h, 0, 0, 0, NO_PRODUCER_EPOCH, 0, state, {("topic", 1)}, 0, 0)
    assert h.init_pid(TRANSACTIONAL_ID, 10) == (*FAILED, E.concurrent_transactions)
    assert h.states_written(TRANSACTIONAL_ID) == []


def test_should_abort_transaction_on_handle_init_pid_when_existing_transaction_in_ongoing_state(
        h: TxnHarness) -> None:
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, PRODUCER_EPOCH - 1, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (*FAILED, E.concurrent_transactions)
    prepare, complete = h.written(TRANSACTIONAL_ID)
    assert prepare is not None and complete is not None
    # Kafka's verify: PrepareAbort with the bumped epoch, the partitions kept.
    assert (prepare.state, prepare.producer_id, prepare.producer_epoch, prepare.topic_partitions) == \
        (S.PREPARE_ABORT, PRODUCER_ID, PRODUCER_EPOCH + 1, PARTITIONS)
    # ... then, the marker written with that epoch, the abort completes.
    assert h.markers("topic1", 0) == [("ABORT", 0, PRODUCER_ID, PRODUCER_EPOCH + 1)]
    assert complete.state is S.COMPLETE_ABORT
    assert (m.state, m.producer_epoch, m.last_producer_epoch) == (S.COMPLETE_ABORT, PRODUCER_EPOCH + 1,
                                                                  NO_PRODUCER_EPOCH)
    # The producer's retry now gets the next epoch.
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (PRODUCER_ID, PRODUCER_EPOCH + 2, E.none)


def test_should_fail_to_abort_transaction_on_handle_init_pid_when_producer_epoch_is_smaller(
        h: TxnHarness) -> None:
    """Kafka's mock hands endTransaction a metadata two epochs ahead; the coordinator's own abort carries the fence's
    epoch, which is then behind: PRODUCER_FENCED (``endTransaction`` reached with the fence's epoch, as
    ``handleInitProducerId`` reaches it)."""
    txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH + 2, PRODUCER_EPOCH - 1, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    out: list[ErrorCode] = []
    h.coordinator._end_transaction(TRANSACTIONAL_ID, PRODUCER_ID, PRODUCER_EPOCH + 1, False, False, out.append)
    assert out == [E.producer_fenced]
    assert h.states_written(TRANSACTIONAL_ID) == []


def test_should_not_repeatedly_bump_epoch_due_to_init_pid_during_ongoing_txn_if_append_to_log_fails(
        h: TxnHarness) -> None:
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    h.logs.fail_with = UnknownTopicOrPartitionError("__transaction_state is offline")
    for _ in range(2):
        assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (*FAILED, E.coordinator_not_available)
        assert m.producer_epoch == PRODUCER_EPOCH + 1
        assert m.has_failed_epoch_fence
        assert m.pending_state is None
    h.logs.fail_with = None
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (*FAILED, E.concurrent_transactions)
    assert m.producer_epoch == PRODUCER_EPOCH + 1
    assert not m.has_failed_epoch_fence
    prepare = h.written(TRANSACTIONAL_ID)[0]
    assert prepare is not None and (prepare.state, prepare.producer_epoch) == (S.PREPARE_ABORT, PRODUCER_EPOCH + 1)


def test_should_use_last_epoch_to_fence_when_epochs_are_exhausted(h: TxnHarness) -> None:
    m = txn(h, PRODUCER_ID, PRODUCER_ID, SHORT_MAX - 1, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    assert m.is_producer_epoch_exhausted
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (*FAILED, E.concurrent_transactions)
    assert m.producer_epoch == SHORT_MAX
    prepare = h.written(TRANSACTIONAL_ID)[0]
    assert prepare is not None
    assert (prepare.producer_id, prepare.producer_epoch, prepare.state, prepare.topic_partitions,
            prepare.txn_start_timestamp, prepare.txn_last_update_timestamp) == \
        (PRODUCER_ID, SHORT_MAX, S.PREPARE_ABORT, PARTITIONS, h.timer.now, h.timer.now)
    # Past the aborted transaction, the next InitProducerId rotates the producer id.
    producer_id, epoch, error = h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS)
    assert (producer_id != PRODUCER_ID, epoch, error) == (True, 0, E.none)


def test_init_producer_id_with_no_last_producer_data(h: TxnHarness) -> None:
    txn(h, PRODUCER_ID, NO_PRODUCER_ID, PRODUCER_EPOCH + 1, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.EMPTY, PARTITIONS)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, PRODUCER_EPOCH)) == \
        (*FAILED, E.producer_fenced)


def test_fence_producer_when_mapping_exists_with_different_producer_id(h: TxnHarness) -> None:
    txn(h, PRODUCER_ID + 1, PRODUCER_ID, PRODUCER_EPOCH, PRODUCER_EPOCH - 1, TXN_TIMEOUT_MS, S.EMPTY, PARTITIONS)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, PRODUCER_EPOCH)) == \
        (*FAILED, E.producer_fenced)


def test_init_producer_id_with_current_epoch_provided(h: TxnHarness) -> None:
    txn(h, PRODUCER_ID, PRODUCER_ID, 10, 9, TXN_TIMEOUT_MS, S.EMPTY)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, 10)) == (PRODUCER_ID, 11, E.none)
    # The producer's retry (it lost the answer) gets the same epoch, not a second bump.
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, 10)) == (PRODUCER_ID, 11, E.none)


def test_init_producer_id_stale_current_epoch_provided(h: TxnHarness) -> None:
    txn(h, PRODUCER_ID, PRODUCER_ID, 10, 9, TXN_TIMEOUT_MS, S.EMPTY)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS) == (PRODUCER_ID, 11, E.none)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, 10)) == (*FAILED, E.producer_fenced)


def test_retry_init_producer_id_after_producer_id_rotation(h: TxnHarness) -> None:
    h2 = h
    h2._ids = iter([PRODUCER_ID + 1])  # type: ignore[assignment]
    txn(h, PRODUCER_ID, PRODUCER_ID, SHORT_MAX - 1, SHORT_MAX - 2, TXN_TIMEOUT_MS, S.EMPTY)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, SHORT_MAX - 1)) == (PRODUCER_ID + 1, 0, E.none)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, SHORT_MAX - 1)) == (PRODUCER_ID + 1, 0, E.none)


def test_init_producer_id_with_invalid_epoch_after_producer_id_rotation(h: TxnHarness) -> None:
    h._ids = iter([PRODUCER_ID + 1])  # type: ignore[assignment]
    txn(h, PRODUCER_ID, PRODUCER_ID, SHORT_MAX - 1, SHORT_MAX - 2, TXN_TIMEOUT_MS, S.EMPTY)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, SHORT_MAX - 1)) == (PRODUCER_ID + 1, 0, E.none)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, SHORT_MAX - 2)) == \
        (*FAILED, E.producer_fenced)


def test_should_not_bump_epoch_with_pending_transaction(h: TxnHarness) -> None:
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    m.prepare_abort_or_commit(S.PREPARE_COMMIT, h.timer.now)
    assert h.init_pid(TRANSACTIONAL_ID, TXN_TIMEOUT_MS, (PRODUCER_ID, 10)) == (*FAILED, E.concurrent_transactions)
    assert m.producer_epoch == PRODUCER_EPOCH


# -- AddPartitionsToTxn --

def test_should_respond_with_invalid_pid_mapping_on_add_partitions_to_transaction_when_transactional_id_not_present(
        h: TxnHarness) -> None:
    assert h.add_partitions(TRANSACTIONAL_ID, 0, 1, PARTITIONS) is E.invalid_producer_id_mapping


def test_should_respond_with_invalid_request_add_partitions_to_transaction_when_transactional_id_is_empty(
        h: TxnHarness) -> None:
    assert h.add_partitions("", 0, 1, PARTITIONS) is E.invalid_request


def test_should_respond_with_not_coordinator_on_add_partitions_when_not_coordinator(h: TxnHarness) -> None:
    resign(h)
    assert h.add_partitions(TRANSACTIONAL_ID, 0, 1, PARTITIONS) is E.not_coordinator


def test_should_respond_with_coordinator_load_in_progress_on_add_partitions_when_coordinator_loading(
        h: TxnHarness) -> None:
    load_in_progress(h)
    assert h.add_partitions(TRANSACTIONAL_ID, 0, 1, PARTITIONS) is E.coordinator_load_in_progress


def test_verify_partition_handling(h: TxnHarness) -> None:
    verify = h.coordinator.handle_verify_partitions_in_transaction
    entry = h.txn_manager.transaction_metadata_cache[h.coordinator.partition_for(TRANSACTIONAL_ID)]

    def replace(m: TransactionMetadata) -> None:
        entry.metadata_per_transactional_id[TRANSACTIONAL_ID] = m

    replace(TransactionMetadata(TRANSACTIONAL_ID, 1, 0, 0, NO_PRODUCER_EPOCH, 0, S.PREPARE_COMMIT, set(PARTITIONS),
                                0, 0))
    assert set(verify(TRANSACTIONAL_ID, 0, 0, PARTITIONS).values()) == {E.invalid_producer_id_mapping}
    replace(TransactionMetadata(TRANSACTIONAL_ID, 0, 0, 0, NO_PRODUCER_EPOCH, 0, S.PREPARE_COMMIT, set(PARTITIONS),
                                0, 0))
    assert set(verify(TRANSACTIONAL_ID, 0, 1, PARTITIONS).values()) == {E.producer_fenced}
    assert set(verify(TRANSACTIONAL_ID, 0, 0, PARTITIONS).values()) == {E.concurrent_transactions}
    ongoing = TransactionMetadata(TRANSACTIONAL_ID, 0, 0, 0, NO_PRODUCER_EPOCH, 0, S.ONGOING, set(), 0, 0)
    ongoing.pending_state = S.COMPLETE_COMMIT  # a pending state does not matter: only the partitions do
    replace(ongoing)
    assert set(verify(TRANSACTIONAL_ID, 0, 0, PARTITIONS).values()) == {E.transaction_abortable}
    assert verify("", 0, 0, PARTITIONS) == {("topic1", 0): E.invalid_request}


@pytest.mark.parametrize(("state", "kafka"), [
    (S.PREPARE_COMMIT, "shouldRespondWithConcurrentTransactionsOnAddPartitionsWhenStateIsPrepareCommit"),
    (S.PREPARE_ABORT, "shouldRespondWithConcurrentTransactionOnAddPartitionsWhenStateIsPrepareAbort"),
])
def test_should_respond_with_concurrent_transactions_on_add_partitions(h: TxnHarness, state: TransactionState,
                                                                       kafka: str) -> None:
    """TransactionCoordinatorTest.shouldRespondWithConcurrentTransactionsOnAddPartitionsWhenStateIsPrepareCommit,
    TransactionCoordinatorTest.shouldRespondWithConcurrentTransactionOnAddPartitionsWhenStateIsPrepareAbort."""
    txn(h, 0, 0, 0, NO_PRODUCER_EPOCH, 0, state, set(), 0, 0)
    assert h.add_partitions(TRANSACTIONAL_ID, 0, 0, PARTITIONS) is E.concurrent_transactions


def test_add_partitions_while_a_transition_is_pending_is_concurrent(h: TxnHarness) -> None:
    m = txn(h, 0, 0, 0, NO_PRODUCER_EPOCH, 1000, S.ONGOING, set(PARTITIONS))
    m.prepare_abort_or_commit(S.PREPARE_COMMIT, h.timer.now)
    assert h.add_partitions(TRANSACTIONAL_ID, 0, 0, {("topic1", 2)}) is E.concurrent_transactions


def test_should_respond_with_producer_fenced_on_add_partitions_when_epochs_are_different(h: TxnHarness) -> None:
    txn(h, 0, 0, 10, 9, 0, S.PREPARE_COMMIT, set(), 0, 0)
    assert h.add_partitions(TRANSACTIONAL_ID, 0, 0, PARTITIONS) is E.producer_fenced


@pytest.mark.parametrize(("state", "kafka"), [
    (S.EMPTY, "shouldAppendNewMetadataToLogOnAddPartitionsWhenPartitionsAdded"),
    (S.ONGOING, "shouldRespondWithSuccessOnAddPartitionsWhenStateIsOngoing"),
    (S.COMPLETE_COMMIT, "shouldRespondWithSuccessOnAddPartitionsWhenStateIsCompleteCommit"),
    (S.COMPLETE_ABORT, "shouldRespondWithSuccessOnAddPartitionsWhenStateIsCompleteAbort"),
])
def test_validate_successful_add_partitions(h: TxnHarness, state: TransactionState, kafka: str) -> None:
    """TransactionCoordinatorTest.shouldAppendNewMetadataToLogOnAddPartitionsWhenPartitionsAdded,
    TransactionCoordinatorTest.shouldRespondWithSuccessOnAddPartitionsWhenStateIsOngoing,
    TransactionCoordinatorTest.shouldRespondWithSuccessOnAddPartitionsWhenStateIsCompleteCommit,
    TransactionCoordinatorTest.shouldRespondWithSuccessOnAddPartitionsWhenStateIsCompleteAbort: the new partitions
    are written as an Ongoing record."""
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, PRODUCER_EPOCH - 1, TXN_TIMEOUT_MS, state)
    assert h.add_partitions(TRANSACTIONAL_ID, PRODUCER_ID, PRODUCER_EPOCH, PARTITIONS) is E.none
    written = h.written(TRANSACTIONAL_ID)
    assert [(w.state, w.topic_partitions) for w in written if w is not None] == [(S.ONGOING, PARTITIONS)]
    assert (m.state, m.topic_partitions) == (S.ONGOING, PARTITIONS)


def test_should_respond_with_errors_none_on_add_partition_when_no_errors_and_partitions_the_same(
        h: TxnHarness) -> None:
    txn(h, 0, 0, 0, NO_PRODUCER_EPOCH, 0, S.EMPTY, set(PARTITIONS), 0, 0)
    assert h.add_partitions(TRANSACTIONAL_ID, 0, 0, PARTITIONS) is E.none


def test_add_partitions_already_in_the_ongoing_transaction_writes_nothing(h: TxnHarness) -> None:
    txn(h, 0, 0, 0, NO_PRODUCER_EPOCH, 1000, S.ONGOING, set(PARTITIONS))
    assert h.add_partitions(TRANSACTIONAL_ID, 0, 0, PARTITIONS) is E.none
    assert h.written(TRANSACTIONAL_ID) == []


def test_should_respond_with_errors_none_on_add_partition_when_ongoing_verify_only_and_partitions_the_same(
        h: TxnHarness) -> None:
    txn(h, 0, 0, 0, NO_PRODUCER_EPOCH, 0, S.ONGOING, set(PARTITIONS), 0, 0)
    assert h.coordinator.handle_verify_partitions_in_transaction(TRANSACTIONAL_ID, 0, 0, PARTITIONS) == \
        {("topic1", 0): E.none}


def test_should_respond_with_invalid_txn_state_when_verify_only_and_partition_not_present(h: TxnHarness) -> None:
    txn(h, 0, 0, 0, NO_PRODUCER_EPOCH, 0, S.EMPTY, set(PARTITIONS), 0, 0)
    errors = h.coordinator.handle_verify_partitions_in_transaction(TRANSACTIONAL_ID, 0, 0,
                                                                   PARTITIONS | {("topic2", 0)})
    assert errors == {("topic1", 0): E.none, ("topic2", 0): E.transaction_abortable}


# -- EndTxn --

def test_should_reply_with_invalid_pid_mapping_on_end_txn_when_txn_id_doesnt_exist(h: TxnHarness) -> None:
    assert h.end_txn(TRANSACTIONAL_ID, 0, 0, True) is E.invalid_producer_id_mapping


def test_should_reply_with_invalid_pid_mapping_on_end_txn_when_pid_dosent_match_mapped(h: TxnHarness) -> None:
    txn(h, 10, 10, 0, NO_PRODUCER_EPOCH, 0, S.ONGOING, set(), 0)
    assert h.end_txn(TRANSACTIONAL_ID, 0, 0, True) is E.invalid_producer_id_mapping


def test_should_reply_with_producer_fenced_on_end_txn_when_epoch_is_not_same_as_transaction(h: TxnHarness) -> None:
    txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, PRODUCER_EPOCH - 1, 1, S.ONGOING, set(), 0)
    assert h.end_txn(TRANSACTIONAL_ID, PRODUCER_ID, 0, True) is E.producer_fenced


@pytest.mark.parametrize(("state", "committed", "error", "kafka"), [
    (S.COMPLETE_COMMIT, True, E.none, "shouldReturnOkOnEndTxnWhenStatusIsCompleteCommitAndResultIsCommit"),
    (S.COMPLETE_ABORT, False, E.none, "shouldReturnOkOnEndTxnWhenStatusIsCompleteAbortAndResultIsAbort"),
    (S.COMPLETE_ABORT, True, E.invalid_txn_state,
     "shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsNotAbort"),
    (S.COMPLETE_COMMIT, False, E.invalid_txn_state,
     "shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteCommitAndResultIsNotCommit"),
    (S.PREPARE_COMMIT, True, E.concurrent_transactions,
     "shouldReturnConcurrentTxnRequestOnEndTxnRequestWhenStatusIsPrepareCommit"),
    (S.PREPARE_ABORT, True, E.invalid_txn_state,
     "shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsPrepareAbort"),
    (S.PREPARE_ABORT, False, E.concurrent_transactions, "(the PrepareAbort retry)"),
    (S.PREPARE_COMMIT, False, E.invalid_txn_state, "(an abort after PrepareCommit)"),
    (S.EMPTY, True, E.invalid_txn_state, "(no transaction to end)"),
])
def test_end_txn_by_state(h: TxnHarness, state: TransactionState, committed: bool, error: ErrorCode,
                          kafka: str) -> None:
    """TransactionCoordinatorTest.shouldReturnOkOnEndTxnWhenStatusIsCompleteCommitAndResultIsCommit,
    TransactionCoordinatorTest.shouldReturnOkOnEndTxnWhenStatusIsCompleteAbortAndResultIsAbort,
    TransactionCoordinatorTest.shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsNotAbort,
    TransactionCoordinatorTest.shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteCommitAndResultIsNotCommit,
    TransactionCoordinatorTest.shouldReturnConcurrentTxnRequestOnEndTxnRequestWhenStatusIsPrepareCommit,
    TransactionCoordinatorTest.shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsPrepareAbort: the answer of each
    state,
    nothing
    written."""
    txn(h, PRODUCER_ID, PRODUCER_ID, 1, NO_PRODUCER_EPOCH, 1, state, set(), 0)
    assert h.end_txn(TRANSACTIONAL_ID, PRODUCER_ID, 1, committed) is error
    assert h.written(TRANSACTIONAL_ID) == []


@pytest.mark.parametrize(("committed", "prepared", "completed", "kafka"), [
    (True, S.PREPARE_COMMIT, S.COMPLETE_COMMIT,
     "shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit"),
    (False, S.PREPARE_ABORT, S.COMPLETE_ABORT,
     "shouldAppendPrepareAbortToLogOnEndTxnWhenStatusIsOngoingAndResultIsAbort"),
])
def test_should_append_prepare_to_log_on_end_txn_when_status_is_ongoing(
        h: TxnHarness, committed: bool, prepared: TransactionState, completed: TransactionState, kafka: str) -> None:
    """TransactionCoordinatorTest.shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit,
    TransactionCoordinatorTest.shouldAppendPrepareAbortToLogOnEndTxnWhenStatusIsOngoingAndResultIsAbort; then the
    markers and the
    completion."""
    txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, PRODUCER_EPOCH - 1, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    assert h.end_txn(TRANSACTIONAL_ID, PRODUCER_ID, PRODUCER_EPOCH, committed) is E.none
    assert h.states_written(TRANSACTIONAL_ID) == [prepared, completed]
    assert h.markers("topic1", 0) == [("COMMIT" if committed else "ABORT", 0, PRODUCER_ID, PRODUCER_EPOCH)]


def test_should_respond_with_invalid_request_on_end_txn_when_transactional_id_is_empty(h: TxnHarness) -> None:
    resign(h)
    assert h.end_txn("", 0, 0, True) is E.invalid_request


def test_should_respond_with_not_coordinator_on_end_txn_when_is_not_coordinator_for_id(h: TxnHarness) -> None:
    resign(h)
    assert h.end_txn(TRANSACTIONAL_ID, 0, 0, True) is E.not_coordinator


def test_should_respond_with_coordinator_load_in_progress_on_end_txn_when_coordinator_is_loading(
        h: TxnHarness) -> None:
    load_in_progress(h)
    assert h.end_txn(TRANSACTIONAL_ID, 0, 0, True) is E.coordinator_load_in_progress


@pytest.mark.parametrize(("request_epoch", "kafka"), [
    (2, "shouldReturnInvalidEpochOnEndTxnWhenEpochIsLarger"),
    (0, "shouldReturnInvalidEpochOnEndTxnWhenEpochIsSmaller"),
])
def test_verify_end_txn_epoch(h: TxnHarness, request_epoch: int, kafka: str) -> None:
    """TransactionCoordinatorTest.shouldReturnInvalidEpochOnEndTxnWhenEpochIsLarger,
    TransactionCoordinatorTest.shouldReturnInvalidEpochOnEndTxnWhenEpochIsSmaller."""
    txn(h, PRODUCER_ID, PRODUCER_ID, 1, 0, 1, S.COMPLETE_COMMIT, set(), 0)
    assert h.end_txn(TRANSACTIONAL_ID, PRODUCER_ID, request_epoch, True) is E.producer_fenced


def test_end_txn_append_failure_resets_the_pending_state(h: TxnHarness) -> None:
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, 1000, S.ONGOING, PARTITIONS)
    h.logs.fail_with = UnknownTopicOrPartitionError("offline")
    assert h.end_txn(TRANSACTIONAL_ID, PRODUCER_ID, PRODUCER_EPOCH, True) is E.coordinator_not_available
    assert (m.state, m.pending_state) == (S.ONGOING, None)
    h.logs.fail_with = None
    assert h.end_txn(TRANSACTIONAL_ID, PRODUCER_ID, PRODUCER_EPOCH, True) is E.none
    assert m.state is S.COMPLETE_COMMIT


# -- resignation, timeouts --

def test_should_remove_transactions_for_partition_on_emigration(h: TxnHarness) -> None:
    txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, 1000, S.EMPTY)
    partition = h.coordinator.partition_for(TRANSACTIONAL_ID)
    h.coordinator.on_resignation(partition, 0)
    assert partition not in h.txn_manager.transaction_metadata_cache
    assert h.txn_manager.get_transaction_state(TRANSACTIONAL_ID) is E.not_coordinator


def test_should_abort_expired_transactions_in_ongoing_state_and_bump_epoch(h: TxnHarness) -> None:
    now = h.timer.now
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS,
            now, now)
    h.timer.advance(ABORT_INTERVAL_MS)
    prepare = h.written(TRANSACTIONAL_ID)[0]
    assert prepare is not None
    assert TxnTransitMetadata(prepare.producer_id, PRODUCER_ID, prepare.producer_epoch, NO_PRODUCER_EPOCH,
                              prepare.txn_timeout_ms, prepare.state, frozenset(prepare.topic_partitions),
                              prepare.txn_start_timestamp, prepare.txn_last_update_timestamp) == \
        TxnTransitMetadata(PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH + 1, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS,
                           S.PREPARE_ABORT, frozenset(PARTITIONS), now, now + ABORT_INTERVAL_MS)
    assert (m.state, m.producer_epoch) == (S.COMPLETE_ABORT, PRODUCER_EPOCH + 1)
    assert h.markers("topic1", 0) == [("ABORT", 0, PRODUCER_ID, PRODUCER_EPOCH + 1)]


def test_should_not_accept_smaller_epoch_during_transaction_expiration(h: TxnHarness) -> None:
    """The abort of a timed-out transaction whose producer moved on (two epochs) is PRODUCER_FENCED: its
    ``onComplete`` hears so and nothing is written."""
    now = h.timer.now
    txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH + 2, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS,
        now, now)
    heard: list[ErrorCode] = []
    expired = TransactionalIdAndProducerIdEpoch(TRANSACTIONAL_ID, PRODUCER_ID, PRODUCER_EPOCH)
    h.coordinator._end_transaction(expired.transactional_id, PRODUCER_ID, PRODUCER_EPOCH + 1, False, False,
                                   heard.append)
    assert heard == [E.producer_fenced]
    assert h.written(TRANSACTIONAL_ID) == []


def test_should_not_abort_expired_transactions_that_have_a_pending_state_transition(h: TxnHarness) -> None:
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    m.prepare_abort_or_commit(S.PREPARE_COMMIT, h.timer.now)
    h.timer.advance(ABORT_INTERVAL_MS)
    assert h.written(TRANSACTIONAL_ID) == []
    assert (m.state, m.producer_epoch, m.pending_state) == (S.ONGOING, PRODUCER_EPOCH, S.PREPARE_COMMIT)


def test_should_not_bump_epoch_when_aborting_expired_transaction_if_append_to_log_fails(h: TxnHarness) -> None:
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    h.logs.fail_with = UnknownTopicOrPartitionError("offline")
    h.timer.advance(ABORT_INTERVAL_MS)
    assert (m.producer_epoch, m.has_failed_epoch_fence, m.state) == (PRODUCER_EPOCH + 1, True, S.ONGOING)
    # The next round fences with the same epoch, and this time the abort is written.
    h.logs.fail_with = None
    h.timer.advance(ABORT_INTERVAL_MS)
    assert (m.producer_epoch, m.has_failed_epoch_fence, m.state) == (PRODUCER_EPOCH + 1, False, S.COMPLETE_ABORT)


# -- DescribeTransactions, ListTransactions --

def test_describe_transactions_with_empty_transactional_id(h: TxnHarness) -> None:
    assert h.coordinator.handle_describe_transactions("") == (E.invalid_request, None)


def test_describe_transactions_with_expiring_transactional_id(h: TxnHarness) -> None:
    txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.DEAD)
    assert h.coordinator.handle_describe_transactions(TRANSACTIONAL_ID) == (E.transactional_id_not_found, None)
    assert h.coordinator.handle_describe_transactions("unknown") == (E.transactional_id_not_found, None)


def test_describe_transactions_while_coordinator_loading(h: TxnHarness) -> None:
    load_in_progress(h)
    assert h.coordinator.handle_describe_transactions(TRANSACTIONAL_ID) == (E.coordinator_load_in_progress, None)


def test_describe_transactions(h: TxnHarness) -> None:
    m = txn(h, PRODUCER_ID, PRODUCER_ID, PRODUCER_EPOCH, NO_PRODUCER_EPOCH, TXN_TIMEOUT_MS, S.ONGOING, PARTITIONS)
    error, described = h.coordinator.handle_describe_transactions(TRANSACTIONAL_ID)
    assert (error, described) == (E.none, m)
    assert described is not None
    assert (described.producer_id, described.producer_epoch, described.txn_timeout_ms,
            described.txn_start_timestamp, described.topic_partitions) == \
        (PRODUCER_ID, PRODUCER_EPOCH, TXN_TIMEOUT_MS, h.timer.now, PARTITIONS)


def test_coordinator_not_available_when_not_started(tmp_path: Path) -> None:
    h = TxnHarness(tmp_path, start=False)
    try:
        assert h.coordinator.handle_describe_transactions(TRANSACTIONAL_ID) == (E.coordinator_not_available, None)
        assert h.coordinator.handle_list_transactions([], []) == (E.coordinator_not_available, [], [])
    finally:
        h.close()
