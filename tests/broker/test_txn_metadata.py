"""Tests of :mod:`kafkalog.broker.txn_metadata`: ports of Kafka 3.8.0's ``TransactionMetadataTest``
(``core/src/test/scala/unit/kafka/coordinator/transaction/TransactionMetadataTest.scala``), plus the transitions'
own checks.

Kafka tests not ported: none (``testTransactionStateIdAndNameMapping``'s half on the admin client's
``TransactionState.parse`` has no kafkalog counterpart and is left out of its port).
"""

from __future__ import annotations

import pytest

from kafkalog._common import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kafkalog.broker.txn_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata
from kafkalog.errors import IllegalArgumentError, IllegalStateError

S = TransactionState
NOW = 1_700_000_000_000
PRODUCER_ID = 23423
TRANSACTIONAL_ID = "txnlId"
SHORT_MAX = 2**15 - 1


def metadata(state: TransactionState = S.EMPTY, *, epoch: int = 735, last_epoch: int = NO_PRODUCER_EPOCH,
             last_producer_id: int = NO_PRODUCER_ID, start: int = -1) -> TransactionMetadata:
    return TransactionMetadata(TRANSACTIONAL_ID, PRODUCER_ID, last_producer_id, epoch, last_epoch, 30000, state,
                               set(), start, NOW)


def bump(m: TransactionMetadata, expected: int | None, now: int = NOW) -> TxnTransitMetadata:
    transit = m.prepare_increment_producer_epoch(30000, expected, now)
    assert transit is not None
    return transit


def test_initialize_epoch() -> None:
    m = metadata(epoch=NO_PRODUCER_EPOCH)
    m.complete_transition_to(bump(m, None))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PRODUCER_ID, 0, NO_PRODUCER_EPOCH)


def test_normal_epoch_bump() -> None:
    m = metadata(epoch=735)
    m.complete_transition_to(bump(m, None))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PRODUCER_ID, 736, NO_PRODUCER_EPOCH)


def test_bump_epoch_not_allowed_if_epochs_exhausted() -> None:
    m = metadata(epoch=SHORT_MAX - 1)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(IllegalStateError):
        m.prepare_increment_producer_epoch(30000, None, NOW)


def test_tolerate_update_time_shift_during_epoch_bump() -> None:
    m = metadata(epoch=1, start=1)
    m.complete_transition_to(bump(m, 1, NOW - 1))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PRODUCER_ID, 2, 1)
    assert m.txn_start_timestamp == 1
    assert m.txn_last_update_timestamp == NOW - 1


def test_tolerate_update_time_reset_during_producer_id_rotation() -> None:
    m = metadata(epoch=1, start=1)
    m.complete_transition_to(m.prepare_producer_id_rotation(PRODUCER_ID + 1, 30000, NOW - 1, record_last_epoch=True))
    assert (m.producer_id, m.last_producer_epoch, m.producer_epoch) == (PRODUCER_ID + 1, 1, 0)
    assert m.txn_start_timestamp == 1
    assert m.txn_last_update_timestamp == NOW - 1


def test_tolerate_time_shift_during_add_partitions() -> None:
    m = metadata(epoch=1, start=NOW)
    m.complete_transition_to(m.prepare_add_partitions({("topic1", 0)}, NOW - 1))
    assert m.topic_partitions == {("topic1", 0)}
    assert (m.producer_id, m.last_producer_epoch, m.producer_epoch) == (PRODUCER_ID, NO_PRODUCER_EPOCH, 1)
    assert (m.txn_start_timestamp, m.txn_last_update_timestamp) == (NOW - 1, NOW - 1)
    # In Ongoing the start time stays: only the update time follows the clock back.
    m.complete_transition_to(m.prepare_add_partitions({("topic2", 0)}, NOW - 2))
    assert m.topic_partitions == {("topic1", 0), ("topic2", 0)}
    assert (m.producer_id, m.last_producer_epoch, m.producer_epoch) == (PRODUCER_ID, NO_PRODUCER_EPOCH, 1)
    assert (m.txn_start_timestamp, m.txn_last_update_timestamp) == (NOW - 1, NOW - 2)


@pytest.mark.parametrize(("before", "after", "kafka"), [
    (S.ONGOING, S.PREPARE_COMMIT, "testTolerateTimeShiftDuringPrepareCommit"),
    (S.ONGOING, S.PREPARE_ABORT, "testTolerateTimeShiftDuringPrepareAbort"),
    (S.PREPARE_COMMIT, S.COMPLETE_COMMIT, "testTolerateTimeShiftDuringCompleteCommit"),
    (S.PREPARE_ABORT, S.COMPLETE_ABORT, "testTolerateTimeShiftDuringCompleteAbort"),
])
def test_tolerate_time_shift_during_end(before: TransactionState, after: TransactionState, kafka: str) -> None:
    """TransactionMetadataTest.testTolerateTimeShiftDuringPrepareCommit,
    TransactionMetadataTest.testTolerateTimeShiftDuringPrepareAbort,
    TransactionMetadataTest.testTolerateTimeShiftDuringCompleteCommit,
    TransactionMetadataTest.testTolerateTimeShiftDuringCompleteAbort: a transition stamped
    before the last update is taken as it is."""
    m = metadata(before, epoch=1, start=1)
    transit = m.prepare_abort_or_commit(after, NOW - 1) if before is S.ONGOING else m.prepare_complete(NOW - 1)
    m.complete_transition_to(transit)
    assert m.state is after
    assert (m.producer_id, m.last_producer_epoch, m.producer_epoch) == (PRODUCER_ID, NO_PRODUCER_EPOCH, 1)
    assert (m.txn_start_timestamp, m.txn_last_update_timestamp) == (1, NOW - 1)


def test_fence_producer_after_epochs_exhausted() -> None:
    m = metadata(S.ONGOING, epoch=SHORT_MAX - 1)
    assert m.is_producer_epoch_exhausted
    fencing = m.prepare_fence_producer_epoch()
    assert fencing.producer_epoch == SHORT_MAX
    assert fencing.last_producer_epoch == NO_PRODUCER_EPOCH
    assert m.pending_state is S.PREPARE_EPOCH_FENCE
    # The coordinator clears the fence's pending state to make way for the abort.
    m.pending_state = None
    transit = m.prepare_abort_or_commit(S.PREPARE_ABORT, NOW)
    m.complete_transition_to(transit)
    assert transit.producer_id == PRODUCER_ID


def test_fence_producer_not_allowed_if_it_would_overflow() -> None:
    m = metadata(S.ONGOING, epoch=SHORT_MAX)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(IllegalStateError):
        m.prepare_fence_producer_epoch()


def test_rotate_producer_id() -> None:
    m = metadata(epoch=SHORT_MAX - 1)
    m.complete_transition_to(m.prepare_producer_id_rotation(9893, 30000, NOW, record_last_epoch=True))
    assert (m.producer_id, m.last_producer_id, m.producer_epoch, m.last_producer_epoch) == \
        (9893, PRODUCER_ID, 0, SHORT_MAX - 1)


@pytest.mark.parametrize(("state", "kafka"), [
    (S.ONGOING, "testRotateProducerIdInOngoingState"),
    (S.PREPARE_ABORT, "testRotateProducerIdInPrepareAbortState"),
    (S.PREPARE_COMMIT, "testRotateProducerIdInPrepareCommitState"),
])
def test_rotate_producer_id_with_pending_transaction(state: TransactionState, kafka: str) -> None:
    """TransactionMetadataTest.testRotateProducerIdInOngoingState,
    TransactionMetadataTest.testRotateProducerIdInPrepareAbortState,
    TransactionMetadataTest.testRotateProducerIdInPrepareCommitState: no rotation while a transaction is pending."""
    m = metadata(state, epoch=SHORT_MAX - 1, last_producer_id=PRODUCER_ID)
    with pytest.raises(IllegalStateError):
        m.prepare_producer_id_rotation(9893, 30000, NOW, record_last_epoch=False)


def test_attempted_epoch_bump_with_newly_created_metadata() -> None:
    m = metadata(epoch=NO_PRODUCER_EPOCH)
    m.complete_transition_to(bump(m, 735))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PRODUCER_ID, 0, NO_PRODUCER_EPOCH)


def test_epoch_bump_with_current_epoch_provided() -> None:
    m = metadata(epoch=735)
    m.complete_transition_to(bump(m, 735))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PRODUCER_ID, 736, 735)


def test_attempted_epoch_bump_with_last_epoch() -> None:
    m = metadata(epoch=735, last_epoch=734)
    m.complete_transition_to(bump(m, 734))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch) == (PRODUCER_ID, 735, 734)


def test_attempted_epoch_bump_with_fenced_epoch() -> None:
    m = metadata(epoch=735, last_epoch=734, last_producer_id=PRODUCER_ID)
    assert m.prepare_increment_producer_epoch(30000, 733, NOW) is None  # Kafka: Left(PRODUCER_FENCED)
    assert m.pending_state is None


def test_transaction_state_id_and_name_mapping() -> None:
    """TransactionMetadataTest.testTransactionStateIdAndNameMapping, the coordinator's half: each state from its id
    and from its name."""
    for state in S:
        assert S.from_id(state.value) is state
        assert S.from_name(state.state_name) is state
    assert S.from_name("Unknown") is None
    with pytest.raises(IllegalStateError, match="Unknown transaction state id 8"):
        S.from_id(8)


def test_all_transaction_states_are_mapped() -> None:
    assert {s.state_name for s in S} == {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                                         "CompleteAbort", "PrepareEpochFence", "Dead"}
    assert [s.value for s in S] == list(range(8))


# -- the transitions' own checks (Kafka's prepareTransitionTo / completeTransitionTo) --

def test_prepare_while_pending_is_illegal() -> None:
    m = metadata(S.ONGOING)
    m.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW)
    with pytest.raises(IllegalStateError, match="already a pending state PrepareCommit"):
        m.prepare_abort_or_commit(S.PREPARE_ABORT, NOW)


def test_prepare_from_an_invalid_previous_state_is_illegal() -> None:
    m = metadata(S.EMPTY)
    with pytest.raises(IllegalStateError, match="not a valid previous state of the current state Empty"):
        m.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW)
    assert m.pending_state is None


def test_prepare_rejects_negative_producer_id_and_epoch() -> None:
    m = metadata(S.EMPTY)
    with pytest.raises(IllegalArgumentError, match="Illegal new producer id -5"):
        m.prepare_producer_id_rotation(-5, 30000, NOW, record_last_epoch=False)
    m = metadata(S.EMPTY, epoch=-3)
    with pytest.raises(IllegalArgumentError, match="Illegal new producer epoch -2"):
        m.prepare_increment_producer_epoch(30000, None, NOW)


def test_complete_without_pending_state_is_illegal() -> None:
    m = metadata(S.ONGOING)
    other = metadata(S.ONGOING)
    transit = other.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW)
    with pytest.raises(IllegalStateError, match="does not have a pending state"):
        m.complete_transition_to(transit)


def test_complete_with_other_metadata_is_illegal() -> None:
    m = metadata(S.ONGOING)
    m.add_partitions({("t", 0)})
    m.prepare_abort_or_commit(S.PREPARE_COMMIT, NOW)
    forged = TxnTransitMetadata(PRODUCER_ID, PRODUCER_ID, 735, NO_PRODUCER_EPOCH, 30000, S.PREPARE_COMMIT,
                                frozenset({("t", 1)}), -1, NOW)
    with pytest.raises(IllegalStateError, match="failed transition to state"):
        m.complete_transition_to(forged)


def test_complete_to_dead_is_illegal() -> None:
    m = metadata(S.COMPLETE_COMMIT, start=NOW)
    transit = m.prepare_dead()
    with pytest.raises(IllegalStateError, match="was being expired"):
        m.complete_transition_to(transit)


def test_remove_partition_outside_prepare_is_illegal() -> None:
    m = metadata(S.ONGOING)
    m.add_partitions({("t", 0)})
    with pytest.raises(IllegalStateError, match="while trying to remove partitions"):
        m.remove_partition(("t", 0))
