"""The transaction coordinator's API coroutines and whole transactions through real logs.

kio requests of every version in, the same version's kio responses out, as Kafka 3.8.0's ``KafkaApis`` shapes them
(the version-dependent error mapping, AddPartitionsToTxn's per-partition answers, v4+ batches and ``verify_only``);
every response also encodes with kio's writer.  Then transactions end to end: a commit leaves the data batches then
a COMMIT marker, an abort an ABORT marker and a ``.txnindex`` entry, and ``read_committed`` reads and the last
stable offset follow; a crash between PrepareCommit and the markers is completed by the next start; a transaction
past its timeout is aborted by the coordinator on real asyncio timers of tens of ms.  The tests that read what the
logs hold run on both kernel twins (``impl``).
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import io
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.static.primitive import i32Timedelta

from kafkalog.broker.delayed import LoopTimer
from kafkalog.broker.group_config import GroupCoordinatorConfig
from kafkalog.broker.group_coordinator import GroupCoordinator, RequestContext
from kafkalog.broker.group_records import GROUP_METADATA_TOPIC_NAME, OffsetAndMetadata, partition_for
from kafkalog.broker.kio_values import build
from kafkalog.broker.txn_config import TransactionCoordinatorConfig
from kafkalog.broker.txn_coordinator import TransactionCoordinator
from kafkalog.broker.txn_metadata import TransactionState
from kafkalog.broker.txn_records import TRANSACTION_STATE_TOPIC_NAME
from kafkalog.errors import KafkaStorageError
from kafkalog.manager.log_manager import LogManager
from tests.support.coordinator_logs import ManagerCoordinatorLogs
from tests.support.txn_utils import CTX, OFFSETS_PARTITIONS, TOPIC, TxnHarness

E = ErrorCode
S = TransactionState


def kio(api: str, version: int, kind: str = "request") -> Any:
    return importlib.import_module(f"kio.schema.{api}.v{version}.{kind}")


def encoded(response: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(response))(out, response)
    return out.getvalue()


def td(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


@pytest.fixture
def h(tmp_path: Path) -> Iterator[TxnHarness]:
    harness = TxnHarness(tmp_path, first_producer_id=4000)
    yield harness
    harness.close()


def call(h: TxnHarness, method: str, request: Any, ctx: RequestContext = CTX) -> Any:
    response = asyncio.run(getattr(h.coordinator, method)(ctx, request))
    assert type(response).__version__ == type(request).__version__
    assert type(response).__module__ == type(request).__module__.replace(".request", ".response")
    encoded(response)
    return response


def init(h: TxnHarness, version: int, transactional_id: str | None, timeout_ms: int = 60000, **kw: Any) -> Any:
    return call(h, "init_producer_id", build(kio("init_producer_id", version).InitProducerIdRequest,
                                             transactional_id=transactional_id, transaction_timeout=timeout_ms, **kw))


def add_partitions_v3(h: TxnHarness, version: int, transactional_id: str, producer_id: int, epoch: int,
                      topics: dict[str, list[int]], ctx: RequestContext = CTX) -> dict[tuple[str, int], ErrorCode]:
    response = call(h, "add_partitions_to_txn", build(
        kio("add_partitions_to_txn", version).AddPartitionsToTxnRequest,
        v3_and_below_transactional_id=transactional_id, v3_and_below_producer_id=producer_id,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in topics.items()]), ctx)
    return {(t.name, int(p.partition_index)): p.partition_error_code for t in response.results_by_topic_v3_and_below
            for p in t.results_by_partition}


def end(h: TxnHarness, version: int, transactional_id: str, producer_id: int, epoch: int, committed: bool) -> Any:
    return call(h, "end_txn", build(kio("end_txn", version).EndTxnRequest, transactional_id=transactional_id,
                                    producer_id=producer_id, producer_epoch=epoch, committed=committed)).error_code


# -- InitProducerId --

@pytest.mark.parametrize("version", range(6))
def test_init_producer_id_every_version(h: TxnHarness, version: int) -> None:
    first = init(h, version, "app")
    assert (first.error_code, first.producer_id, first.producer_epoch) == (E.none, 4000, 0)
    again = init(h, version, "app")
    assert (again.error_code, again.producer_id, again.producer_epoch) == (E.none, 4000, 1)
    plain = init(h, version, None)
    assert (plain.error_code, plain.producer_id, plain.producer_epoch) == (E.none, 4001, 0)
    bad = init(h, version, "app", timeout_ms=0)
    assert (bad.error_code, bad.producer_id, bad.producer_epoch) == (E.invalid_transaction_timeout, -1, -1)


@pytest.mark.parametrize(("producer_id", "epoch"), [(4000, -1), (-1, 0)])
def test_init_producer_id_half_given_producer_is_invalid_request(h: TxnHarness, producer_id: int,
                                                                 epoch: int) -> None:
    response = init(h, 3, "app", producer_id=producer_id, producer_epoch=epoch)
    assert (response.error_code, response.producer_id, response.producer_epoch) == (E.invalid_request, -1, -1)
    assert h.written("app") == []


@pytest.mark.parametrize(("version", "error"), [(3, E.invalid_producer_epoch), (4, E.producer_fenced),
                                                (5, E.producer_fenced)])
def test_init_producer_id_fenced_by_version(h: TxnHarness, version: int, error: ErrorCode) -> None:
    """KIP-360's retry with a stale epoch: PRODUCER_FENCED from v4, INVALID_PRODUCER_EPOCH before."""
    init(h, version, "app")
    init(h, version, "app")
    init(h, version, "app")  # epochs 0, 1, 2
    assert init(h, version, "app", producer_id=4000, producer_epoch=0).error_code is error


# -- AddPartitionsToTxn, AddOffsetsToTxn --

@pytest.mark.parametrize("version", range(4))
def test_add_partitions_to_txn_client_versions(h: TxnHarness, version: int) -> None:
    pid = init(h, 3, "app").producer_id
    assert add_partitions_v3(h, version, "app", pid, 0, {TOPIC: [0, 1]}) == {(TOPIC, 0): E.none, (TOPIC, 1): E.none}
    fenced = E.invalid_producer_epoch if version < 2 else E.producer_fenced
    assert add_partitions_v3(h, version, "app", pid, 5, {TOPIC: [2]}) == {(TOPIC, 2): fenced}
    assert add_partitions_v3(h, version, "nobody", pid, 0, {TOPIC: [2]}) == {(TOPIC, 2): E.invalid_producer_id_mapping}
    assert h.metadata("app").topic_partitions == {(TOPIC, 0), (TOPIC, 1)}


def test_add_partitions_to_txn_refuses_internal_topics_and_unknown_partitions(h: TxnHarness) -> None:
    """KafkaApis: a client may not add an internal topic's partition (TOPIC_AUTHORIZATION_FAILED), nor one the broker
    does not have (UNKNOWN_TOPIC_OR_PARTITION); the rest are OPERATION_NOT_ATTEMPTED and nothing is added."""
    class Topics:
        def partition_exists(self, topic: str, partition: int) -> bool:
            return topic == TOPIC and partition < 3

        def topic_name(self, topic_id: object) -> None:
            return None

        def topic_id(self, topic: str) -> None:
            return None

    ctx = RequestContext(0, "localhost", 9092, "client", "/127.0.0.1", 3, Topics())
    pid = init(h, 3, "app").producer_id
    assert add_partitions_v3(h, 3, "app", pid, 0, {TOPIC: [0], GROUP_METADATA_TOPIC_NAME: [0]}, ctx) == {
        (TOPIC, 0): E.operation_not_attempted, (GROUP_METADATA_TOPIC_NAME, 0): E.topic_authorization_failed}
    assert add_partitions_v3(h, 3, "app", pid, 0, {TOPIC: [0, 7]}, ctx) == {
        (TOPIC, 0): E.operation_not_attempted, (TOPIC, 7): E.unknown_topic_or_partition}
    assert h.metadata("app").topic_partitions == set()
    assert add_partitions_v3(h, 3, "app", pid, 0, {TOPIC: [0]}, ctx) == {(TOPIC, 0): E.none}


@pytest.mark.parametrize("version", [4, 5])
def test_add_partitions_to_txn_broker_versions(h: TxnHarness, version: int) -> None:
    """v4+: a batch of transactions, each added or (``verify_only``) checked against the ongoing transaction."""
    a = init(h, 3, "a").producer_id
    b = init(h, 3, "b").producer_id
    request = build(kio("add_partitions_to_txn", version).AddPartitionsToTxnRequest, transactions=[
        {"transactional_id": "a", "producer_id": a, "producer_epoch": 0, "verify_only": False,
         "topics": [{"name": TOPIC, "partitions": [0]}]},
        {"transactional_id": "b", "producer_id": b, "producer_epoch": 0, "verify_only": True,
         "topics": [{"name": TOPIC, "partitions": [1]}]},
    ])
    response = call(h, "add_partitions_to_txn", request)
    assert response.error_code is E.none
    results = {r.transactional_id: {(t.name, int(p.partition_index)): p.partition_error_code
                                    for t in r.topic_results for p in t.results_by_partition}
               for r in response.results_by_transaction}
    assert results == {"a": {(TOPIC, 0): E.none}, "b": {(TOPIC, 1): E.transaction_abortable}}
    assert h.metadata("a").state is S.ONGOING
    assert h.metadata("b").state is S.EMPTY


@pytest.mark.parametrize("version", range(5))
def test_add_offsets_to_txn_adds_the_groups_offsets_partition(h: TxnHarness, version: int) -> None:
    pid = init(h, 3, "app").producer_id
    request = kio("add_offsets_to_txn", version).AddOffsetsToTxnRequest
    response = call(h, "add_offsets_to_txn", build(request, transactional_id="app", producer_id=pid, producer_epoch=0,
                                                   group_id="my-group"))
    assert response.error_code is E.none
    assert h.metadata("app").topic_partitions == {(GROUP_METADATA_TOPIC_NAME,
                                                   partition_for("my-group", OFFSETS_PARTITIONS))}
    fenced = call(h, "add_offsets_to_txn", build(request, transactional_id="app", producer_id=pid, producer_epoch=3,
                                                 group_id="my-group"))
    assert fenced.error_code is (E.invalid_producer_epoch if version < 2 else E.producer_fenced)


# -- EndTxn --

@pytest.mark.parametrize("version", range(5))
def test_end_txn_every_version(h: TxnHarness, version: int) -> None:
    pid = init(h, 3, "app").producer_id
    assert end(h, version, "app", pid, 0, True) is E.invalid_txn_state  # nothing to end
    add_partitions_v3(h, 3, "app", pid, 0, {TOPIC: [0]})
    assert end(h, version, "app", pid, 1, True) is (E.invalid_producer_epoch if version < 2 else E.producer_fenced)
    assert end(h, version, "app", pid, 0, True) is E.none
    assert end(h, version, "app", pid, 0, True) is E.none  # the retry of a completed commit
    assert end(h, version, "app", pid, 0, False) is E.invalid_txn_state


# -- ListTransactions, DescribeTransactions --

@pytest.mark.parametrize("version", range(2))
def test_list_transactions(h: TxnHarness, version: int) -> None:
    pid = init(h, 3, "app").producer_id
    init(h, 3, "idle")
    add_partitions_v3(h, 3, "app", pid, 0, {TOPIC: [0]})
    values: dict[str, Any] = {"state_filters": ["Ongoing", "Nonsense"], "producer_id_filters": []}
    response = call(h, "list_transactions", build(kio("list_transactions", version).ListTransactionsRequest, **values))
    assert response.error_code is E.none
    assert list(response.unknown_state_filters) == ["Nonsense"]
    assert [(t.transactional_id, t.producer_id, t.transaction_state) for t in response.transaction_states] == \
        [("app", pid, "Ongoing")]


def test_describe_transactions(h: TxnHarness) -> None:
    pid = init(h, 3, "app").producer_id
    add_partitions_v3(h, 3, "app", pid, 0, {TOPIC: [2, 0]})
    response = call(h, "describe_transactions", build(kio("describe_transactions", 0).DescribeTransactionsRequest,
                                                      transactional_ids=["app", "unknown", ""]))
    app, unknown, empty = response.transaction_states
    assert (app.error_code, app.transactional_id, app.transaction_state, app.producer_id, app.producer_epoch) == \
        (E.none, "app", "Ongoing", pid, 0)
    assert app.transaction_timeout == datetime.timedelta(milliseconds=60000)
    assert app.transaction_start_time.timestamp() * 1000 == h.timer.now
    assert [(t.topic, list(t.partitions)) for t in app.topics] == [(TOPIC, [0, 2])]
    assert (unknown.error_code, unknown.transactional_id, unknown.topics) == (E.transactional_id_not_found,
                                                                            "unknown", ())
    assert empty.error_code is E.invalid_request
    # The start time of no transaction is Kafka's -1 on the wire.
    assert encoded(response).count((-1).to_bytes(8, "big", signed=True)) >= 2


# -- whole transactions through the logs --

def produce_transaction(h: TxnHarness, transactional_id: str, partition: int, *values: bytes) -> tuple[int, int]:
    response = init(h, 4, transactional_id)
    pid, epoch = response.producer_id, response.producer_epoch
    assert add_partitions_v3(h, 3, transactional_id, pid, epoch, {TOPIC: [partition]}) == {(TOPIC, partition): E.none}
    h.produce(partition, pid, epoch, 0, *values)
    return pid, epoch


def test_committed_transaction_leaves_its_batches_then_a_commit_marker(impl: ModuleType, h: TxnHarness) -> None:
    pid, epoch = produce_transaction(h, "app", 0, b"a", b"b")
    h.produce(0, pid, epoch, 2, b"c")
    log = h.log(TOPIC, 0)
    assert log.last_stable_offset == 0  # the open transaction holds read_committed readers back
    assert [r.value for r in log.records(isolation="read_committed")] == []
    assert end(h, 3, "app", pid, epoch, True) is E.none
    assert h.batches(TOPIC, 0) == [(0, False, pid, epoch), (2, False, pid, epoch), (3, True, pid, epoch)]
    assert h.markers(TOPIC, 0) == [("COMMIT", 0, pid, epoch)]
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.log_end_offset == 4
    assert [bytes(r.value) for r in log.records(isolation="read_committed")] == [b"a", b"b", b"c"]
    fetched = log.read(0, 1 << 20, isolation="txn_committed")
    assert fetched.aborted_transactions == []
    assert h.states_written("app") == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]


def test_aborted_transaction_leaves_an_abort_marker_and_a_txnindex_entry(impl: ModuleType, h: TxnHarness) -> None:
    pid, epoch = produce_transaction(h, "app", 1, b"x", b"y")
    assert end(h, 3, "app", pid, epoch, False) is E.none
    log = h.log(TOPIC, 1)
    log.update_high_watermark(log.log_end_offset)
    assert h.markers(TOPIC, 1) == [("ABORT", 0, pid, epoch)]
    assert log.last_stable_offset == 3
    assert [r.value for r in log.records(isolation="read_committed")] == []
    assert [bytes(r.value) for r in log.records()] == [b"x", b"y"]
    fetched = log.read(0, 1 << 20, isolation="txn_committed")
    assert [(a.producer_id, a.first_offset) for a in fetched.aborted_transactions] == [(pid, 0)]
    txnindex = log.dir / "00000000000000000000.txnindex"
    assert txnindex.stat().st_size == 34  # one entry: version, producer id, first, last offset, LSO
    assert h.states_written("app") == [S.EMPTY, S.ONGOING, S.PREPARE_ABORT, S.COMPLETE_ABORT]


def test_offsets_transaction_tells_the_group_side(h: TxnHarness) -> None:
    """A transaction with a group's offsets: the marker on ``__consumer_offsets`` is announced to the listeners."""
    pid = init(h, 3, "app").producer_id
    call(h, "add_offsets_to_txn", build(kio("add_offsets_to_txn", 3).AddOffsetsToTxnRequest, transactional_id="app",
                                        producer_id=pid, producer_epoch=0, group_id="g"))
    assert end(h, 3, "app", pid, 0, False) is E.none
    partition = partition_for("g", OFFSETS_PARTITIONS)
    assert h.listener.calls == [(GROUP_METADATA_TOPIC_NAME, partition, pid, False)]
    assert h.markers(GROUP_METADATA_TOPIC_NAME, partition) == [("ABORT", 0, pid, 0)]


@pytest.mark.parametrize("committed", [True, False])
def test_transactional_offsets_reach_the_group_coordinator(h: TxnHarness, committed: bool) -> None:
    """The contract with the group side: a producer's offsets, stored as pending in its group (what TxnOffsetCommit
    does), become the group's committed offsets when the COMMIT marker lands, and are dropped on ABORT; the listener
    is the broker's adapter to ``GroupMetadataManager.handle_txn_completion``."""
    groups = GroupCoordinator(h.logs, GroupCoordinatorConfig(offsets_topic_num_partitions=OFFSETS_PARTITIONS),
                              timer=h.timer)
    asyncio.run(groups.startup(enable_metadata_expiration=False))

    class ToGroups:
        def on_transaction_completed(self, topic: str, partition: int, producer_id: int, committed: bool) -> None:
            groups.group_manager.handle_txn_completion(producer_id, {partition}, committed)

    h.coordinator.add_completion_listener(ToGroups())
    pid = init(h, 3, "app").producer_id
    call(h, "add_offsets_to_txn", build(kio("add_offsets_to_txn", 3).AddOffsetsToTxnRequest, transactional_id="app",
                                        producer_id=pid, producer_epoch=0, group_id="g"))
    group = groups.group_manager.get_or_maybe_create_group("g", True)
    assert group is not None
    stored: list[Any] = []
    groups.group_manager.store_offsets(group, "", {(TOPIC, 0): OffsetAndMetadata(42, None, "", h.timer.now)},
                                       stored.append, producer_id=pid, producer_epoch=0)
    assert stored == [{(TOPIC, 0): E.none}]
    assert groups.group_manager.get_offsets("g", True, [(TOPIC, 0)])[(TOPIC, 0)].error is E.unstable_offset_commit
    assert end(h, 3, "app", pid, 0, committed) is E.none
    fetched = groups.group_manager.get_offsets("g", True, [(TOPIC, 0)])[(TOPIC, 0)]
    assert (fetched.error, fetched.offset) == (E.none, 42 if committed else -1)
    groups.shutdown()


def test_a_new_producer_aborts_the_old_ones_transaction(impl: ModuleType, h: TxnHarness) -> None:
    """InitProducerId during an ongoing transaction: CONCURRENT_TRANSACTIONS while the old transaction is aborted
    with a bumped epoch (which fences the old producer), then the new producer's epoch."""
    pid, epoch = produce_transaction(h, "app", 2, b"old")
    assert init(h, 4, "app").error_code is E.concurrent_transactions
    assert h.markers(TOPIC, 2) == [("ABORT", 0, pid, epoch + 1)]
    retry = init(h, 4, "app")
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (E.none, pid, epoch + 2)
    assert end(h, 3, "app", pid, epoch, True) is E.producer_fenced
    log = h.log(TOPIC, 2)
    log.update_high_watermark(log.log_end_offset)
    assert [r.value for r in log.records(isolation="read_committed")] == []


def test_restart_in_prepare_commit_completes_the_commit(impl: ModuleType, h: TxnHarness) -> None:
    """The markers could not be written (a storage error on the data partition) and the broker stopped with the
    transaction in PrepareCommit: the next start reads it back and writes the markers and CompleteCommit."""
    pid, epoch = produce_transaction(h, "app", 0, b"kept")
    h.logs.fail_for[TOPIC] = KafkaStorageError("disk failure")
    assert end(h, 3, "app", pid, epoch, True) is E.none
    assert h.metadata("app").state is S.PREPARE_COMMIT
    assert h.markers(TOPIC, 0) == []
    h.restart()
    assert h.markers(TOPIC, 0) == [("COMMIT", 0, pid, epoch)]
    m = h.metadata("app")
    assert (m.state, m.producer_id, m.producer_epoch, m.topic_partitions) == (S.COMPLETE_COMMIT, pid, epoch, set())
    assert h.states_written("app") == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    log = h.log(TOPIC, 0)
    log.update_high_watermark(log.log_end_offset)
    assert [bytes(r.value) for r in log.records(isolation="read_committed")] == [b"kept"]
    # The producer carries on from where it was.
    again = init(h, 4, "app", producer_id=pid, producer_epoch=epoch)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (E.none, pid, epoch + 1)


def test_restart_after_the_markers_before_the_completion_writes_them_again(impl: ModuleType, h: TxnHarness) -> None:
    """The markers landed but ``CompleteAbort`` could not be written (the coordinator's own log failed): the next
    start finds PrepareAbort and writes the markers again, a second ABORT the partition takes as Kafka's does."""
    pid, epoch = produce_transaction(h, "app", 1, b"dropped")
    # PrepareAbort must land: only the completion fails, the coordinator's appends after the first marker.
    original = h.logs.append_as_coordinator

    def fail_after_markers(name: str, partition: int, records: Any) -> Any:
        if name == TRANSACTION_STATE_TOPIC_NAME and h.markers(TOPIC, 1):
            raise KafkaStorageError("disk failure")
        return original(name, partition, records)

    h.logs.append_as_coordinator = fail_after_markers  # type: ignore[method-assign]
    assert end(h, 3, "app", pid, epoch, False) is E.none
    assert h.markers(TOPIC, 1) == [("ABORT", 0, pid, epoch)]
    assert h.metadata("app").state is S.PREPARE_ABORT
    h.restart()
    assert h.markers(TOPIC, 1) == [("ABORT", 0, pid, epoch)] * 2
    assert h.metadata("app").state is S.COMPLETE_ABORT
    log = h.log(TOPIC, 1)
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.log_end_offset
    assert [r.value for r in log.records(isolation="read_committed")] == []


def test_restart_restores_every_transactional_id(impl: ModuleType, h: TxnHarness) -> None:
    committed = produce_transaction(h, "committed", 0, b"1")
    end(h, 3, "committed", *committed, True)
    ongoing = produce_transaction(h, "ongoing", 1, b"2")
    idle = init(h, 3, "idle")
    h.restart()
    assert (h.metadata("committed").state, h.metadata("ongoing").state, h.metadata("idle").state) == \
        (S.COMPLETE_COMMIT, S.ONGOING, S.EMPTY)
    assert (h.metadata("ongoing").producer_id, h.metadata("ongoing").topic_partitions) == (ongoing[0], {(TOPIC, 1)})
    assert h.metadata("idle").producer_id == idle.producer_id
    assert end(h, 3, "ongoing", *ongoing, True) is E.none
    assert h.markers(TOPIC, 1) == [("COMMIT", 0, *ongoing)]


def test_restart_keeps_the_topics_partition_count(h: TxnHarness) -> None:
    """A restart configured with another ``transaction.state.log.num.partitions`` keeps the existing topic's count,
    as Kafka takes it from the metadata: every id stays on the partition that holds its records."""
    ids = [f"app-{i}" for i in range(6)]
    for transactional_id in ids:
        init(h, 3, transactional_id)
    h.config = TransactionCoordinatorConfig(transaction_state_log_num_partitions=5)
    h.restart()
    assert h.txn_manager.transaction_topic_partition_count == 2
    assert {h.metadata(t).state for t in ids} == {S.EMPTY}


def test_requests_during_the_load_are_load_in_progress(tmp_path: Path) -> None:
    """Startup yields between partitions; a request for an id whose partition has not loaded yet is told so."""
    h = TxnHarness(tmp_path, start=False)
    try:
        async def scenario() -> list[Any]:
            startup = asyncio.ensure_future(h.coordinator.startup())
            await asyncio.sleep(0)
            loading = await h.coordinator.init_producer_id(CTX, build(
                kio("init_producer_id", 4).InitProducerIdRequest,
                transactional_id=next(f"t{i}" for i in range(50) if h.coordinator.partition_for(f"t{i}") == 1),
                transaction_timeout=1000))
            await startup
            return [loading]

        [loading] = asyncio.run(scenario())
        assert loading.error_code is E.coordinator_load_in_progress
        assert h.init_pid("after-load", 1000)[2] is E.none
    finally:
        h.close()


def test_timed_out_transaction_is_aborted_on_the_loop(tmp_path: Path) -> None:
    """Real asyncio timers: a transaction of 10 ms, the abort task every 20 ms; within 200 ms the transaction is
    aborted with a bumped epoch, and its producer's commit is fenced."""
    config = TransactionCoordinatorConfig(transaction_state_log_num_partitions=2,
                                          transaction_abort_timed_out_transaction_cleanup_interval_ms=20)
    with LogManager(tmp_path) as manager:
        logs = ManagerCoordinatorLogs(manager)
        logs.ensure_internal_topic(TOPIC, 1, {})
        ids = iter(range(100, 200))
        coordinator = TransactionCoordinator(logs, lambda: next(ids), config, timer=LoopTimer())

        async def scenario() -> tuple[Any, Any]:
            await coordinator.startup()
            pid = (await coordinator.init_producer_id(CTX, build(
                kio("init_producer_id", 4).InitProducerIdRequest, transactional_id="slow",
                transaction_timeout=10))).producer_id
            await coordinator.add_partitions_to_txn(CTX, build(
                kio("add_partitions_to_txn", 3).AddPartitionsToTxnRequest,
                v3_and_below_transactional_id="slow", v3_and_below_producer_id=pid,
                v3_and_below_producer_epoch=0,
                v3_and_below_topics=[{"name": TOPIC, "partitions": [0]}]))
            for _ in range(20):
                await asyncio.sleep(0.01)
                state = coordinator.txn_manager.get_transaction_state("slow")
                if getattr(state, "transaction_metadata", None) is not None and \
                        state.transaction_metadata.state is S.COMPLETE_ABORT:  # type: ignore[union-attr]
                    break
            commit = await coordinator.end_txn(CTX, build(
                kio("end_txn", 3).EndTxnRequest, transactional_id="slow", producer_id=pid, producer_epoch=0,
                committed=True))
            coordinator.shutdown()
            return state, commit

        state, commit = asyncio.run(scenario())
        assert state.transaction_metadata.state is S.COMPLETE_ABORT
        assert state.transaction_metadata.producer_epoch == 1
        assert commit.error_code is E.producer_fenced
