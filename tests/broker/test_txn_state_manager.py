"""Tests of :mod:`kafkalog.broker.txn_state_manager` and :mod:`kafkalog.broker.txn_markers`: ports of Kafka 3.8.0's
``TransactionStateManagerTest`` and ``TransactionMarkerChannelManagerTest``
(``core/src/test/scala/unit/kafka/coordinator/transaction/``), over real ``__transaction_state`` logs; Kafka's
mocked ``ReplicaManager`` answers are real appends here, its append errors a storage that refuses one topic's
appends (:class:`tests.support.txn_utils.TopicFaultLogs`).

Kafka tests not ported:

- ``testPartitionLoadMetric``, ``testRemoveMetricsOnClose``, ``shouldCreateMetricsOnStarting``: kafkalog's
  coordinator keeps no metrics.
- ``testLoadTransactionMetadataWithCorruptedLog``: it needs a log whose read returns nothing below its end offset,
  which only a mocked log is; the load's stop on an empty read is the loop's condition, kept.
- ``testTransactionExpirationShouldNotFailWithUninitializedTransactionMetadata``: Kafka's ``Pool`` may hold a null
  between two reads of its threads; one event loop has no such window.
- ``shouldOnlyWriteTxnCompletionOnce``, ``shouldNotLoseTxnCompletionAfterLoad``: races between the send thread and
  the request threads; the markers here are appended on the loop, in one step with the completion.
- ``shouldGenerateEmptyMapWhenNoRequestsOutstanding``, ``shouldGenerateRequestPerPartitionPerBroker``,
  ``shouldSaveForLaterWhenLeaderUnknownButNotAvailable``: the per-broker request queues have no counterpart (one
  node, markers appended directly).
- ``testAppendTransactionToLogWhileProducerFenced``, ``testAppendTransactionToLogWhilePendingStateChanged``: they
  change the cached metadata from another thread while the append is in flight; the append here returns before
  anything else runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from kafkalog._common import NO_PRODUCER_EPOCH
from kafkalog.broker.group_records import GROUP_METADATA_TOPIC_NAME
from kafkalog.broker.txn_config import TransactionCoordinatorConfig
from kafkalog.broker.txn_markers import RETRY_BACKOFF_MS
from kafkalog.broker.txn_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata
from kafkalog.broker.txn_records import TRANSACTION_STATE_TOPIC_NAME, key_to_bytes, value_to_bytes
from kafkalog.broker.txn_state_manager import (
    CoordinatorEpochAndTxnMetadata,
    TransactionalIdAndProducerIdEpoch,
    TransactionStateManager,
)
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import (
    InvalidProducerEpochError,
    KafkaStorageError,
    RecordTooLargeError,
    UnknownTopicOrPartitionError,
)
from kafkalog.record.memory import MemoryRecords
from tests.support.txn_utils import TxnHarness

S = TransactionState
E = ErrorCode
TXN_ID_1 = "one"
TXN_ID_2 = "two"
PRODUCER_ID_1 = 1
PRODUCER_ID_2 = 2
TIMEOUT_MS = 1000
EXPIRATION_MS = TransactionCoordinatorConfig().transactional_id_expiration_ms


@pytest.fixture
def h(tmp_path: Path) -> Iterator[TxnHarness]:
    harness = TxnHarness(tmp_path)
    yield harness
    harness.close()


def manager(h: TxnHarness) -> TransactionStateManager:
    return h.txn_manager


def meta(h: TxnHarness, transactional_id: str, producer_id: int, state: TransactionState = S.EMPTY,
         timeout_ms: int = TIMEOUT_MS) -> TransactionMetadata:
    """Kafka's ``transactionMetadata(...)``: epoch 0, both timestamps now."""
    return TransactionMetadata.create(transactional_id, producer_id, 0, timeout_ms, h.timer.now, state)


def write_records(h: TxnHarness, partition: int, records: list[tuple[bytes, bytes | None]]) -> None:
    h.logs.append_as_coordinator(TRANSACTION_STATE_TOPIC_NAME, partition, MemoryRecords.with_records(records))


def record(m: TransactionMetadata) -> tuple[bytes, bytes]:
    return key_to_bytes(m.transactional_id), value_to_bytes(m.prepare_no_transit())


def noop(*_args: object) -> None:
    pass


def test_validate_transaction_timeout(h: TxnHarness) -> None:
    assert not manager(h).validate_transaction_timeout_ms(-1)
    assert not manager(h).validate_transaction_timeout_ms(10 * 60 * 60 * 1000)
    assert manager(h).validate_transaction_timeout_ms(1)


def test_add_get_pids(h: TxnHarness) -> None:
    m = manager(h)
    partition = m.partition_for(TXN_ID_1)
    m.remove_transactions_for_txn_topic_partition(partition)
    assert m.get_transaction_state(TXN_ID_1) is E.not_coordinator
    m.add_loaded_transactions_to_cache(partition, 0, {})
    assert m.get_transaction_state(TXN_ID_1) is None
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1)
    assert m.put_transaction_state_if_not_exists(m1) == CoordinatorEpochAndTxnMetadata(0, m1)
    assert m.get_transaction_state(TXN_ID_1) == CoordinatorEpochAndTxnMetadata(0, m1)
    # A second put keeps the first.
    m2 = meta(h, TXN_ID_1, PRODUCER_ID_2)
    assert m.put_transaction_state_if_not_exists(m2) == CoordinatorEpochAndTxnMetadata(0, m1)


def test_delete_partition(h: TxnHarness) -> None:
    m = manager(h)
    partition = m.partition_for(TXN_ID_1)
    m.put_transaction_state_if_not_exists(meta(h, TXN_ID_1, PRODUCER_ID_1))
    m.remove_transactions_for_txn_topic_partition(partition)
    assert partition not in m.transaction_metadata_cache
    assert m.get_transaction_state(TXN_ID_1) is E.not_coordinator


def test_delete_loading_partition(h: TxnHarness) -> None:
    m = manager(h)
    partition = m.partition_for(TXN_ID_1)
    m.remove_transactions_for_txn_topic_partition(partition)
    m.add_loading_partition(partition, 0)
    assert m.get_transaction_state(TXN_ID_1) is E.coordinator_load_in_progress
    m.remove_transactions_for_txn_topic_partition(partition, 0)
    assert m.get_transaction_state(TXN_ID_1) is E.not_coordinator
    assert not m.loading_partitions


def test_load_and_remove_transactions_for_partition(h: TxnHarness) -> None:
    """Two ids' histories in one partition read back as their last records."""
    m = manager(h)
    partition = m.partition_for(TXN_ID_1)
    other = next(f"id-{i}" for i in range(100) if m.partition_for(f"id-{i}") == partition)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1, S.ONGOING)
    m2 = meta(h, other, PRODUCER_ID_2, S.ONGOING)
    records = []
    m1.add_partitions({("topic1", 0), ("topic1", 1)})
    records.append(record(m1))
    m1.add_partitions({("topic2", 0), ("topic2", 1), ("topic2", 2)})
    records.append(record(m1))
    m1.state = S.PREPARE_COMMIT
    records.append(record(m1))
    m2.add_partitions({("topic3", 0), ("topic3", 1), ("topic3", 2)})
    records.append(record(m2))
    for state in (S.PREPARE_ABORT, S.COMPLETE_ABORT):
        m2.state = state
        records.append(record(m2))
    m2.state = S.EMPTY
    m2.topic_partitions.clear()
    records.append(record(m2))
    m.remove_transactions_for_txn_topic_partition(partition)
    write_records(h, partition, records)
    assert m.get_transaction_state(TXN_ID_1) is E.not_coordinator
    assert m.get_transaction_state(other) is E.not_coordinator

    sent: list[tuple[int, bool, str]] = []
    m.load_transactions_for_txn_topic_partition(partition, 0, lambda e, c, md, _t: sent.append((e, c,
                                                                                                md.transactional_id)))
    cached1 = m.get_transaction_state(TXN_ID_1)
    cached2 = m.get_transaction_state(other)
    assert isinstance(cached1, CoordinatorEpochAndTxnMetadata) and isinstance(cached2, CoordinatorEpochAndTxnMetadata)
    # The loaded metadata carries the last records, with the transition to Complete* prepared for the prepared one.
    m1.pending_state = S.COMPLETE_COMMIT
    assert cached1.transaction_metadata == m1
    assert cached1.transaction_metadata.pending_state is S.COMPLETE_COMMIT
    assert cached2.transaction_metadata == m2
    assert sent == [(0, True, TXN_ID_1)]
    m.remove_transactions_for_txn_topic_partition(partition, 0)
    assert m.get_transaction_state(TXN_ID_1) is E.not_coordinator


def test_complete_transition_when_append_succeeded(h: TxnHarness) -> None:
    m = manager(h)
    m1 = m.put_transaction_state_if_not_exists(meta(h, TXN_ID_1, PRODUCER_ID_1)).transaction_metadata  # type: ignore
    transit = m1.prepare_add_partitions({("topic1", 0), ("topic1", 1)}, h.timer.now)
    errors: list[ErrorCode] = []
    m.append_transaction_to_log(TXN_ID_1, 0, transit, errors.append)
    assert errors == [E.none]
    assert (m1.state, m1.pending_state, m1.topic_partitions) == (S.ONGOING, None, {("topic1", 0), ("topic1", 1)})


@pytest.mark.parametrize(("failure", "expected", "kafka"), [
    (UnknownTopicOrPartitionError("gone"), E.coordinator_not_available, "testAppendFailToCoordinatorNotAvailableError"),
    (KafkaStorageError("disk"), E.not_coordinator, "testAppendFailToNotCoordinatorError"),
    (RecordTooLargeError("big"), E.unknown_server_error, "testAppendFailToUnknownError"),
])
def test_append_fail(h: TxnHarness, failure: Exception, expected: ErrorCode, kafka: str) -> None:
    """TransactionStateManagerTest.testAppendFailToCoordinatorNotAvailableError,
    TransactionStateManagerTest.testAppendFailToNotCoordinatorError,
    TransactionStateManagerTest.testAppendFailToUnknownError: the append's error as the client's,
    the transition abandoned."""
    m = manager(h)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1)
    m.put_transaction_state_if_not_exists(m1)
    transit = m1.prepare_add_partitions({("topic2", 0)}, h.timer.now)
    h.logs.fail_for[TRANSACTION_STATE_TOPIC_NAME] = failure
    errors: list[ErrorCode] = []
    m.append_transaction_to_log(TXN_ID_1, 0, transit, errors.append)
    assert errors == [expected]
    assert m.get_transaction_state(TXN_ID_1) == CoordinatorEpochAndTxnMetadata(0, m1)
    assert (m1.state, m1.pending_state, m1.topic_partitions) == (S.EMPTY, None, set())


def test_append_fail_to_coordinator_loading_error(h: TxnHarness) -> None:
    """The partition started loading again while the append was made: LOAD_IN_PROGRESS, nothing completed."""
    m = manager(h)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1)
    m.put_transaction_state_if_not_exists(m1)
    transit = m1.prepare_add_partitions({("topic2", 0)}, h.timer.now)
    errors: list[ErrorCode] = []
    m.append_transaction_to_log(TXN_ID_1, 0, transit,
                                lambda e: errors.append(e))
    assert errors == [E.none]
    m1.pending_state = None
    transit = m1.prepare_abort_or_commit(S.PREPARE_COMMIT, h.timer.now)
    m.add_loading_partition(m.partition_for(TXN_ID_1), 0)
    m.append_transaction_to_log(TXN_ID_1, 0, transit, errors.append)
    assert errors == [E.none, E.coordinator_load_in_progress]


def test_pending_state_not_reset_on_retry_append(h: TxnHarness) -> None:
    m = manager(h)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1)
    m.put_transaction_state_if_not_exists(m1)
    transit = m1.prepare_add_partitions({("topic2", 0)}, h.timer.now)
    h.logs.fail_for[TRANSACTION_STATE_TOPIC_NAME] = UnknownTopicOrPartitionError("gone")
    errors: list[ErrorCode] = []
    m.append_transaction_to_log(TXN_ID_1, 0, transit, errors.append, retry_on_error=lambda _e: True)
    assert errors == [E.coordinator_not_available]
    assert m.get_transaction_state(TXN_ID_1) == CoordinatorEpochAndTxnMetadata(0, m1)
    assert m1.pending_state is S.ONGOING


def test_should_return_not_coordinator_error_if_transaction_id_partition_not_owned(h: TxnHarness) -> None:
    m = manager(h)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1)
    m.put_transaction_state_if_not_exists(m1)
    transit = m1.prepare_add_partitions({("topic2", 0)}, h.timer.now)
    m.remove_transactions_for_txn_topic_partition(m.partition_for(TXN_ID_1))
    errors: list[ErrorCode] = []
    m.append_transaction_to_log(TXN_ID_1, 0, transit, errors.append)
    assert errors == [E.not_coordinator]
    assert h.written(TXN_ID_1) == []


def test_append_with_a_changed_coordinator_epoch_is_not_coordinator(h: TxnHarness) -> None:
    m = manager(h)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1)
    m.put_transaction_state_if_not_exists(m1)
    transit = m1.prepare_add_partitions({("topic2", 0)}, h.timer.now)
    errors: list[ErrorCode] = []
    m.append_transaction_to_log(TXN_ID_1, 10, transit, errors.append)
    assert errors == [E.not_coordinator]
    assert h.written(TXN_ID_1) == []


def test_list_transactions_with_coordinator_loading_in_progress(h: TxnHarness) -> None:
    manager(h).add_loading_partition(0, 0)
    assert manager(h).list_transaction_states([], []) == (E.coordinator_load_in_progress, [], [])


def test_list_transactions_filtering(h: TxnHarness) -> None:
    m = manager(h)

    def put(transactional_id: str, producer_id: int, state: TransactionState) -> None:
        m.put_transaction_state_if_not_exists(meta(h, transactional_id, producer_id, state))

    put("t0", 0, S.ONGOING)
    put("t1", 1, S.ONGOING)
    h.timer.advance(1000)
    put("t2", 2, S.PREPARE_COMMIT)
    put("t3", 3, S.PREPARE_ABORT)
    h.timer.advance(1000)
    put("t4", 4, S.COMPLETE_COMMIT)
    put("t5", 5, S.COMPLETE_ABORT)
    put("t6", 6, S.COMPLETE_ABORT)
    put("t7", 7, S.PREPARE_EPOCH_FENCE)
    h.timer.advance(1000)
    put("t8", 8, S.DEAD)  # never listed: it is being removed

    def check(expected: set[str], producer_ids: set[int] | None = None, states: set[str] | None = None,
              duration: int = -1) -> None:
        error, unknown, listed = m.list_transaction_states(producer_ids or set(), states or set(), duration)
        assert error is E.none
        assert {t for t, _p, _s in listed} == expected
        assert set(unknown) == {s for s in states or set() if S.from_name(s) is None}

    every = {f"t{i}" for i in range(8)}
    check(every)
    check(every, duration=0)
    check({"t0", "t1", "t2", "t3"}, duration=1000)
    check({"t0", "t1"}, duration=2000)
    check(set(), duration=3000)
    check({"t0", "t1"}, states={"Ongoing"})
    check({"t0", "t1"}, states={"Ongoing", "UnknownState"})
    check({"t2", "t4"}, states={"PrepareCommit", "CompleteCommit"})
    check(set(), states={"UnknownState"})
    check({"t5"}, producer_ids={5})
    check({"t5", "t6"}, producer_ids={5, 6, 8, 9})
    check({"t4"}, producer_ids={4, 5}, states={"CompleteCommit"})
    check({"t4", "t5"}, producer_ids={4, 5}, states={"CompleteCommit", "CompleteAbort"})
    check(set(), producer_ids={3, 6}, states={"UnknownState"})
    check(set(), producer_ids={10}, states={"CompleteCommit"})
    check(set(), states={"Dead"})


def test_should_only_consider_transactions_in_the_ongoing_state_to_abort(h: TxnHarness) -> None:
    m = manager(h)
    for transactional_id, producer_id, state, timeout in [
            ("ongoing", 0, S.ONGOING, TIMEOUT_MS), ("not-expiring", 1, S.ONGOING, 10000),
            ("prepare-commit", 2, S.PREPARE_COMMIT, TIMEOUT_MS), ("prepare-abort", 3, S.PREPARE_ABORT, TIMEOUT_MS),
            ("complete-commit", 4, S.COMPLETE_COMMIT, TIMEOUT_MS), ("complete-abort", 5, S.COMPLETE_ABORT, TIMEOUT_MS)]:
        m.put_transaction_state_if_not_exists(meta(h, transactional_id, producer_id, state, timeout))
    h.timer.now += 2000
    assert m.timed_out_transactions() == [TransactionalIdAndProducerIdEpoch("ongoing", 0, 0)]


@pytest.mark.parametrize(("state", "committed", "kafka"), [
    (S.PREPARE_COMMIT, True, "shouldWriteTxnMarkersForTransactionInPreparedCommitState"),
    (S.PREPARE_ABORT, False, "shouldWriteTxnMarkersForTransactionInPreparedAbortState"),
])
def test_should_write_txn_markers_for_transaction_in_prepared_state(h: TxnHarness, state: TransactionState,
                                                                    committed: bool, kafka: str) -> None:
    """TransactionStateManagerTest.shouldWriteTxnMarkersForTransactionInPreparedCommitState,
    TransactionStateManagerTest.shouldWriteTxnMarkersForTransactionInPreparedAbortState."""
    m = manager(h)
    partition = m.partition_for(TXN_ID_1)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1, state)
    m1.add_partitions({("topic1", 0), ("topic1", 1)})
    m.remove_transactions_for_txn_topic_partition(partition)
    write_records(h, partition, [record(m1)])
    sent: list[tuple[int, bool, str, TxnTransitMetadata]] = []
    m.load_transactions_for_txn_topic_partition(partition, 0, lambda e, c, md, t: sent.append(
        (e, c, md.transactional_id, t)))
    assert [(e, c, t) for e, c, t, _ in sent] == [(0, committed, TXN_ID_1)]
    assert sent[0][3].txn_state is (S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT)


# -- expiration --

def setup_and_run_transactional_id_expiration(h: TxnHarness, state: TransactionState) -> list[bytes]:
    """Kafka's ``setupAndRunTransactionalIdExpiration``: id 1 unused for the expiration time, id 2 just used; the
    tombstones written, as keys."""
    m = manager(h)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1, state)
    m1.txn_last_update_timestamp = h.timer.now - EXPIRATION_MS
    m.put_transaction_state_if_not_exists(m1)
    m.put_transaction_state_if_not_exists(meta(h, TXN_ID_2, PRODUCER_ID_2))
    m.remove_expired_transactional_ids()
    tombstones = []
    for partition in range(m.transaction_topic_partition_count):
        for r in h.log(TRANSACTION_STATE_TOPIC_NAME, partition).records():
            assert r.value is None
            tombstones.append(bytes(r.key))
    return tombstones


@pytest.mark.parametrize(("state", "kafka"), [
    (S.COMPLETE_COMMIT, "shouldRemoveCompleteCommitExpiredTransactionalIds"),
    (S.COMPLETE_ABORT, "shouldRemoveCompleteAbortExpiredTransactionalIds"),
    (S.EMPTY, "shouldRemoveEmptyExpiredTransactionalIds"),
])
def test_should_remove_expired_transactional_ids(h: TxnHarness, state: TransactionState, kafka: str) -> None:
    """TransactionStateManagerTest.shouldRemoveCompleteCommitExpiredTransactionalIds,
    TransactionStateManagerTest.shouldRemoveCompleteAbortExpiredTransactionalIds,
    TransactionStateManagerTest.shouldRemoveEmptyExpiredTransactionalIds."""
    assert setup_and_run_transactional_id_expiration(h, state) == [key_to_bytes(TXN_ID_1)]
    assert manager(h).get_transaction_state(TXN_ID_1) is None
    assert isinstance(manager(h).get_transaction_state(TXN_ID_2), CoordinatorEpochAndTxnMetadata)


def test_should_not_remove_expired_transactional_ids_if_log_append_fails(h: TxnHarness) -> None:
    h.logs.fail_for[TRANSACTION_STATE_TOPIC_NAME] = UnknownTopicOrPartitionError("gone")
    assert setup_and_run_transactional_id_expiration(h, S.COMPLETE_ABORT) == []
    current = manager(h).get_transaction_state(TXN_ID_1)
    assert isinstance(current, CoordinatorEpochAndTxnMetadata)
    assert current.transaction_metadata.pending_state is None


@pytest.mark.parametrize(("state", "kafka"), [
    (S.ONGOING, "shouldNotRemoveOngoingTransactionalIds"),
    (S.PREPARE_ABORT, "shouldNotRemovePrepareAbortTransactionalIds"),
    (S.PREPARE_COMMIT, "shouldNotRemovePrepareCommitTransactionalIds"),
])
def test_should_not_remove_transactional_ids_in_a_transaction(h: TxnHarness, state: TransactionState,
                                                              kafka: str) -> None:
    """TransactionStateManagerTest.shouldNotRemoveOngoingTransactionalIds,
    TransactionStateManagerTest.shouldNotRemovePrepareAbortTransactionalIds,
    TransactionStateManagerTest.shouldNotRemovePrepareCommitTransactionalIds: nothing written, the id kept and
    usable."""
    assert setup_and_run_transactional_id_expiration(h, state) == []
    current = manager(h).get_transaction_state(TXN_ID_1)
    assert isinstance(current, CoordinatorEpochAndTxnMetadata)
    assert current.transaction_metadata.pending_state is None


def test_transaction_expiration_should_respect_batch_size(tmp_path: Path) -> None:
    h = TxnHarness(tmp_path, log_config=LogConfig({"max.message.bytes": 512}))
    try:
        m = manager(h)
        ids = {f"txn-{i}" for i in range(1000)}
        for i, transactional_id in enumerate(sorted(ids)):
            expired = meta(h, transactional_id, i)
            expired.txn_last_update_timestamp = h.timer.now - EXPIRATION_MS
            m.put_transaction_state_if_not_exists(expired)
        m.remove_expired_transactional_ids()
        assert all(m.get_transaction_state(t) is None for t in ids)
        tombstoned = set()
        for partition in range(m.transaction_topic_partition_count):
            batches = list(h.log(TRANSACTION_STATE_TOPIC_NAME, partition).read(0, 1 << 20).records.batches())
            assert len(batches) > 1
            assert all(b.size_in_bytes < 512 for b in batches)
            for b in batches:
                tombstoned |= {bytes(r.key)[4:].decode() for r in b.records() if r.value is None}
        assert tombstoned == ids
    finally:
        h.close()


def test_transactional_expiration_with_too_small_batch_size(tmp_path: Path) -> None:
    """Each tombstone alone is past ``max.message.bytes``: the appends are tried and refused, the ids stay."""
    h = TxnHarness(tmp_path, log_config=LogConfig({"max.message.bytes": 16}))
    try:
        m = manager(h)
        ids = [f"txn-{i}" for i in range(20)]
        for i, transactional_id in enumerate(ids):
            expired = meta(h, transactional_id, i)
            expired.txn_last_update_timestamp = h.timer.now - EXPIRATION_MS
            m.put_transaction_state_if_not_exists(expired)
        m.remove_expired_transactional_ids()
        for transactional_id in ids:
            current = m.get_transaction_state(transactional_id)
            assert isinstance(current, CoordinatorEpochAndTxnMetadata)
            assert current.transaction_metadata.pending_state is None
    finally:
        h.close()


def test_expiration_skips_a_partition_without_a_log(h: TxnHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    """TransactionStateManagerTest.testTransactionalExpirationWithOfflineLogDir: no log, no tombstone; the id
    stays."""
    m = manager(h)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1)
    m1.txn_last_update_timestamp = h.timer.now - EXPIRATION_MS
    m.put_transaction_state_if_not_exists(m1)

    def offline(name: str, partition: int) -> None:
        raise UnknownTopicOrPartitionError(f"No log for {name}-{partition}")

    monkeypatch.setattr(h.logs, "log", offline)
    m.remove_expired_transactional_ids()
    assert m.get_transaction_state(TXN_ID_1) == CoordinatorEpochAndTxnMetadata(0, m1)
    assert m1.pending_state is None


def test_expiration_runs_on_its_interval(tmp_path: Path) -> None:
    h = TxnHarness(tmp_path, TransactionCoordinatorConfig(
        transaction_state_log_num_partitions=2, transactional_id_expiration_ms=50,
        transaction_remove_expired_transaction_cleanup_interval_ms=20))
    try:
        pid, _epoch, _ = h.init_pid(TXN_ID_1, TIMEOUT_MS)
        h.timer.advance(40)
        assert isinstance(manager(h).get_transaction_state(TXN_ID_1), CoordinatorEpochAndTxnMetadata)
        h.timer.advance(20)
        assert manager(h).get_transaction_state(TXN_ID_1) is None
        assert h.states_written(TXN_ID_1) == [S.EMPTY, None]
        # The id comes back as new: a new producer id.
        assert h.init_pid(TXN_ID_1, TIMEOUT_MS)[0] != pid
    finally:
        h.close()


def test_successful_reimmigration(h: TxnHarness) -> None:
    m = manager(h)
    partition = m.partition_for(TXN_ID_1)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1, S.PREPARE_COMMIT)
    m1.add_partitions({("topic1", 0), ("topic1", 1)})
    write_records(h, partition, [record(m1)])
    m.load_transactions_for_txn_topic_partition(partition, 0, noop)
    assert not m.loading_partitions
    m.load_transactions_for_txn_topic_partition(partition, 1, noop)
    assert not m.loading_partitions
    assert m.transaction_metadata_cache[partition].coordinator_epoch == 1


def test_ignore_unknown_record_type(h: TxnHarness) -> None:
    m = manager(h)
    partition = m.partition_for(TXN_ID_1)
    m1 = meta(h, TXN_ID_1, PRODUCER_ID_1, S.PREPARE_COMMIT)
    m1.add_partitions({("topic1", 0), ("topic1", 1)})
    unknown = (2**15 - 1).to_bytes(2, "big") + b"\x00\x00"
    write_records(h, partition, [(unknown, unknown), record(m1)])
    m.load_transactions_for_txn_topic_partition(partition, 1, noop)
    assert not m.loading_partitions
    loaded = m.transaction_metadata_cache[partition].metadata_per_transactional_id[TXN_ID_1]
    assert (loaded.transactional_id, loaded.producer_id, loaded.last_producer_id, loaded.producer_epoch,
            loaded.last_producer_epoch, loaded.txn_timeout_ms, loaded.state, loaded.topic_partitions) == \
        (m1.transactional_id, m1.producer_id, m1.last_producer_id, m1.producer_epoch, m1.last_producer_epoch,
         m1.txn_timeout_ms, m1.state, m1.topic_partitions)
    assert m.transaction_metadata_cache[partition].coordinator_epoch == 1


def test_load_skips_a_record_that_does_not_read(h: TxnHarness) -> None:
    """kafkalog's difference: a bad value is logged and skipped, the ids after it still load."""
    m = manager(h)
    partition = m.partition_for(TXN_ID_1)
    other = next(f"id-{i}" for i in range(100) if m.partition_for(f"id-{i}") == partition)
    m2 = meta(h, other, PRODUCER_ID_2, S.COMPLETE_COMMIT)
    write_records(h, partition, [(key_to_bytes(TXN_ID_1), b"\x00\x07garbage"), record(m2)])
    m.load_transactions_for_txn_topic_partition(partition, 0, noop)
    assert m.get_transaction_state(TXN_ID_1) is None
    assert m.get_transaction_state(other) == CoordinatorEpochAndTxnMetadata(0, m2)


# -- the markers (TransactionMarkerChannelManagerTest) --

def ongoing(h: TxnHarness, transactional_id: str, producer_id: int,
            partitions: set[tuple[str, int]]) -> TransactionMetadata:
    m = TransactionMetadata(transactional_id, producer_id, producer_id, 0, NO_PRODUCER_EPOCH, TIMEOUT_MS, S.ONGOING,
                            set(partitions), h.timer.now, h.timer.now)
    return h.put(m)


def test_should_skip_send_markers_when_leader_not_found(h: TxnHarness) -> None:
    """A partition with no log (deleted) is dropped from the transaction; the others get their markers."""
    m = ongoing(h, TXN_ID_1, PRODUCER_ID_1, {("topic1", 0), ("deleted", 0)})
    assert h.end_txn(TXN_ID_1, PRODUCER_ID_1, 0, True) is E.none
    assert h.markers("topic1", 0) == [("COMMIT", 0, PRODUCER_ID_1, 0)]
    assert (m.state, h.coordinator.txn_marker_channel_manager.num_txns_with_pending_markers) == (S.COMPLETE_COMMIT, 0)


def test_should_remove_markers_for_txn_partition_when_partition_emigrated(h: TxnHarness) -> None:
    """Markers waiting for a retry are forgotten when their ``__transaction_state`` partition goes."""
    channel = h.coordinator.txn_marker_channel_manager
    m1 = ongoing(h, TXN_ID_1, PRODUCER_ID_1, {("topic1", 0)})
    h.logs.fail_for["topic1"] = KafkaStorageError("disk")
    assert h.end_txn(TXN_ID_1, PRODUCER_ID_1, 0, True) is E.none
    assert channel.num_txns_with_pending_markers == 1
    channel.remove_markers_for_txn_topic_partition(h.coordinator.partition_for(TXN_ID_1))
    assert channel.num_txns_with_pending_markers == 0
    del h.logs.fail_for["topic1"]
    h.timer.advance(RETRY_BACKOFF_MS)
    assert h.markers("topic1", 0) == []
    assert m1.state is S.PREPARE_COMMIT


def test_should_complete_append_to_log_on_end_txn_when_send_markers_succeed(h: TxnHarness) -> None:
    m = ongoing(h, TXN_ID_2, PRODUCER_ID_2, {("topic1", 0), ("topic1", 1)})
    assert h.end_txn(TXN_ID_2, PRODUCER_ID_2, 0, True) is E.none
    assert (m.state, m.pending_state) == (S.COMPLETE_COMMIT, None)
    assert h.coordinator.txn_marker_channel_manager.num_txns_with_pending_markers == 0


def test_should_abort_append_to_log_on_end_txn_when_not_coordinator_error(h: TxnHarness) -> None:
    """The completion's append fails with NOT_COORDINATOR (a storage error): given up, the transaction stays
    prepared (the next load completes it)."""
    m = ongoing(h, TXN_ID_2, PRODUCER_ID_2, {("topic1", 0)})
    channel = h.coordinator.txn_marker_channel_manager
    errors: list[ErrorCode] = []
    transit = m.prepare_abort_or_commit(S.PREPARE_COMMIT, h.timer.now)
    manager(h).append_transaction_to_log(TXN_ID_2, 0, transit, errors.append)
    h.logs.fail_for[TRANSACTION_STATE_TOPIC_NAME] = KafkaStorageError("disk")
    channel.add_txn_markers_to_send(0, True, m, m.prepare_complete(h.timer.now))
    assert h.markers("topic1", 0) == [("COMMIT", 0, PRODUCER_ID_2, 0)]
    assert channel.num_txns_with_pending_markers == 0
    assert (m.pending_state, m.state) == (None, S.PREPARE_COMMIT)
    del h.logs.fail_for[TRANSACTION_STATE_TOPIC_NAME]
    h.timer.advance(RETRY_BACKOFF_MS)
    assert m.state is S.PREPARE_COMMIT


def test_should_retry_append_to_log_on_end_txn_when_coordinator_not_available_error(h: TxnHarness) -> None:
    m = ongoing(h, TXN_ID_2, PRODUCER_ID_2, {("topic1", 0)})
    channel = h.coordinator.txn_marker_channel_manager
    transit = m.prepare_abort_or_commit(S.PREPARE_COMMIT, h.timer.now)
    manager(h).append_transaction_to_log(TXN_ID_2, 0, transit, noop)
    h.logs.fail_for[TRANSACTION_STATE_TOPIC_NAME] = UnknownTopicOrPartitionError("gone")
    channel.add_txn_markers_to_send(0, True, m, m.prepare_complete(h.timer.now))
    assert (m.pending_state, m.state) == (S.COMPLETE_COMMIT, S.PREPARE_COMMIT)
    del h.logs.fail_for[TRANSACTION_STATE_TOPIC_NAME]
    h.timer.advance(RETRY_BACKOFF_MS)
    assert channel.num_txns_with_pending_markers == 0
    assert (m.pending_state, m.state) == (None, S.COMPLETE_COMMIT)


def test_markers_retry_after_a_storage_error(h: TxnHarness) -> None:
    m = ongoing(h, TXN_ID_1, PRODUCER_ID_1, {("topic1", 0), ("topic1", 1)})
    h.logs.fail_for["topic1"] = KafkaStorageError("disk")
    assert h.end_txn(TXN_ID_1, PRODUCER_ID_1, 0, False) is E.none
    assert m.state is S.PREPARE_ABORT
    h.timer.advance(RETRY_BACKOFF_MS)
    assert m.state is S.PREPARE_ABORT  # still failing: tried again later
    del h.logs.fail_for["topic1"]
    h.timer.advance(RETRY_BACKOFF_MS)
    assert h.markers("topic1", 0) == h.markers("topic1", 1) == [("ABORT", 0, PRODUCER_ID_1, 0)]
    assert m.state is S.COMPLETE_ABORT


def test_markers_given_up_when_the_producer_epoch_is_fenced(h: TxnHarness) -> None:
    """A marker the partition refuses for a newer producer epoch (INVALID_PRODUCER_EPOCH) ends the sending."""
    m = ongoing(h, TXN_ID_1, PRODUCER_ID_1, {("topic1", 0)})
    h.logs.fail_for["topic1"] = InvalidProducerEpochError("epoch 0 is older than 3")
    assert h.end_txn(TXN_ID_1, PRODUCER_ID_1, 0, True) is E.none
    assert h.coordinator.txn_marker_channel_manager.num_txns_with_pending_markers == 0
    del h.logs.fail_for["topic1"]
    h.timer.advance(RETRY_BACKOFF_MS)
    assert h.markers("topic1", 0) == []
    assert m.state is S.PREPARE_COMMIT


def test_marker_to_a_log_before_v2_drops_the_partition(tmp_path: Path) -> None:
    h = TxnHarness(tmp_path, log_config=LogConfig({"message.format.version": "0.10.2"}))
    try:
        m = ongoing(h, TXN_ID_1, PRODUCER_ID_1, {("topic1", 0)})
        assert h.end_txn(TXN_ID_1, PRODUCER_ID_1, 0, True) is E.none
        assert h.markers("topic1", 0) == []
        assert m.state is S.COMPLETE_COMMIT
    finally:
        h.close()


def test_completion_listeners_hear_of_consumer_offsets_markers(h: TxnHarness) -> None:
    """Only a ``__consumer_offsets`` marker is told, once per partition; a listener that raises does not stop the
    others or the transaction."""
    class Broken:
        def on_transaction_completed(self, topic: str, partition: int, producer_id: int, committed: bool) -> None:
            raise RuntimeError("group cache unavailable")

    h.coordinator.add_completion_listener(Broken())
    late = type(h.listener)()
    h.coordinator.add_completion_listener(late)
    m = ongoing(h, TXN_ID_1, PRODUCER_ID_1, {("topic1", 0), (GROUP_METADATA_TOPIC_NAME, 1)})
    assert h.end_txn(TXN_ID_1, PRODUCER_ID_1, 0, True) is E.none
    assert h.listener.calls == late.calls == [(GROUP_METADATA_TOPIC_NAME, 1, PRODUCER_ID_1, True)]
    assert h.markers(GROUP_METADATA_TOPIC_NAME, 1) == [("COMMIT", 0, PRODUCER_ID_1, 0)]
    assert m.state is S.COMPLETE_COMMIT


def test_a_failure_in_the_marker_path_is_not_the_end_txns(h: TxnHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka writes markers on its send thread, after EndTxn is answered: an unexpected error there is logged, the
    transaction stays prepared and the next load completes it."""
    m = ongoing(h, TXN_ID_1, PRODUCER_ID_1, {("topic1", 0)})
    real_log = h.logs.log

    def broken(name: str, partition: int) -> object:
        if name == "topic1":
            raise RuntimeError("a bug below the coordinator")
        return real_log(name, partition)

    monkeypatch.setattr(h.logs, "log", broken)
    assert h.end_txn(TXN_ID_1, PRODUCER_ID_1, 0, True) is E.none
    assert (m.state, h.coordinator.txn_marker_channel_manager.num_txns_with_pending_markers) == (S.PREPARE_COMMIT, 0)
    monkeypatch.undo()
    h.restart()
    assert h.markers("topic1", 0) == [("COMMIT", 0, PRODUCER_ID_1, 0)]
    assert h.metadata(TXN_ID_1).state is S.COMPLETE_COMMIT
