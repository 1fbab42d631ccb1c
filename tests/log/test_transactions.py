"""kafkalog.transactions: what a ``read_committed`` consumer sees of a partition's transactions, read from the
batch headers (Kafka 3.8.0: ``UnifiedLog.lastStableOffset``, ``collectAbortedTransactions``, and the consumer's
``abortedProducerIds`` walk over a fetch's aborted transactions).

Logs are written here with :func:`tests.support.log_test_utils.append_transaction_sample` (offsets 0..6: plain,
aborted by producer 7 and its ABORT marker, committed by producer 8 and its COMMIT marker, open by producer 9,
then a plain record; the last stable offset is 5), so every answer is known.  Every test takes ``impl``.
"""

from __future__ import annotations

from types import ModuleType

from kafkalog.log import Log
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords
from kafkalog.transaction_index import AbortedTxn
from kafkalog.transactions import (
    ProducerBatch,
    TransactionState,
    first_unstable_offset,
    producer_batches,
    scan_producer_batches,
    transactional_rows,
)
from tests.support.log_test_utils import LogFactory, append_transaction_sample

# Nothing else is open at producer 7's ABORT marker (offset 2), so the last stable offset it records is 3.
ABORTED_BY_7 = AbortedTxn(producer_id=7, first_offset=1, last_offset=2, last_stable_offset=3)


def test_producer_batches(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    append_transaction_sample(log)
    (segment,) = log.log_segments()
    batches = producer_batches(segment)
    assert [(b.producer_id, b.base_offset, b.is_transactional, b.is_control, b.control) for b in batches] == [
        (7, 1, True, False, None),
        (7, 2, True, True, ControlRecordType.ABORT),
        (8, 3, True, False, None),
        (8, 4, True, True, ControlRecordType.COMMIT),
        (9, 5, True, False, None),
    ]
    assert all(isinstance(b, ProducerBatch) and b.producer_epoch == 0 for b in batches)
    assert producer_batches(segment, transactional_only=True) == batches  # the plain batches have no producer


def test_scan_resumes_where_it_stopped(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    append_transaction_sample(log)
    (segment,) = log.log_segments()
    batches, end, next_offset = scan_producer_batches(segment)
    assert len(batches) == 5 and end == segment.size() and next_offset == 7
    log.append(MemoryRecords.with_records([(None, b"more", 1_000)], base_offset=7, producer_id=10,
                                          producer_epoch=0, base_sequence=0, is_transactional=True),
               assign_offsets=False)
    more, end2, next2 = scan_producer_batches(segment, starting_position=end)
    assert [(b.producer_id, b.base_offset) for b in more] == [(10, 7)]
    assert (end2, next2) == (segment.size(), 8)
    assert scan_producer_batches(segment, starting_position=end2) == ([], end2, None)


def test_transactional_rows(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    append_transaction_sample(log)
    (segment,) = log.log_segments()
    rows = segment.log.scan(check_crc=False, stop_on_invalid=False).batches
    assert len(rows) == 7
    assert [int(r["base_offset"]) for r in transactional_rows(rows)] == [1, 2, 3, 4, 5]


def test_state_of_a_log(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    append_transaction_sample(log)
    state = TransactionState.of(log)
    assert state.aborted == (ABORTED_BY_7,)
    assert state.last_stable_offset == 5
    assert state.is_aborted(7, 1)
    assert not state.is_aborted(7, 3)  # past the aborted transaction's marker
    assert not state.is_aborted(8, 3)  # committed
    assert not state.is_aborted(9, 5)  # still open, not aborted


def test_state_without_transactions(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    log.append_as_leader(MemoryRecords.with_records([(None, b"a", 0), (None, b"b", 0)]), leader_epoch=0)
    state = TransactionState.of(log)
    assert state == TransactionState((), 2)  # nothing open: the log end offset
    assert first_unstable_offset(log, log.log_end_offset) is None


def test_between_keeps_the_overlapping_transactions(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    append_transaction_sample(log)
    state = TransactionState.of(log)
    assert state.between(0, 2).aborted == (ABORTED_BY_7,)
    assert state.between(2, 7).aborted == (ABORTED_BY_7,)  # its marker is at 2
    assert state.between(3, 7).aborted == ()
    assert state.between(3, 7).last_stable_offset == 5


def test_from_batches_passes_over_non_transactional(impl: ModuleType) -> None:
    batches = [
        ProducerBatch(1, 0, 0, 0, is_transactional=False, is_control=False),  # idempotent only
        ProducerBatch(2, 0, 1, 1, is_transactional=True, is_control=False),
        ProducerBatch(2, 0, 2, 2, is_transactional=True, is_control=True, control=ControlRecordType.ABORT),
        ProducerBatch(3, 0, 3, 3, is_transactional=True, is_control=True, control=ControlRecordType.ABORT),
    ]
    state = TransactionState.from_batches(batches, log_end_offset=4)
    # Producer 3's marker ends no transaction this partition saw open: nothing to hide.
    assert state.aborted == (AbortedTxn(producer_id=2, first_offset=1, last_offset=2, last_stable_offset=3),)
    assert state.last_stable_offset == 4


def test_first_unstable_offset(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    append_transaction_sample(log)
    assert first_unstable_offset(log, log.log_end_offset) == 5
    assert first_unstable_offset(log, 5) is None  # below the open transaction's first offset nothing is open
    commit = EndTransactionMarker(ControlRecordType.COMMIT, 0)
    log.append(MemoryRecords.with_end_transaction_marker(9, 0, commit, base_offset=log.log_end_offset, timestamp=1_000),
               assign_offsets=False)
    assert first_unstable_offset(log, log.log_end_offset) is None
    assert TransactionState.of(log).last_stable_offset == log.log_end_offset


def test_read_only_log_reads_the_same_state(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    append_transaction_sample(log)
    log.flush()
    expected = TransactionState.of(log)
    directory = log.dir
    log.close()
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    with Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader) == expected
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before

