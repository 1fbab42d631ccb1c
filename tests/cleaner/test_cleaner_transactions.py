"""The Cleaner and transactions: Kafka 3.8.0 ``LogCleanerTest``'s transaction cases (aborted and committed
transactions, markers kept until their horizon, producer ids and sequences across cleanings, empty batches
kept), on both kernel twins.  Environment and helpers as in ``test_cleaner.py``
(:mod:`tests.support.cleaner_utils`).

As in Kafka's cases, the data goes in through the leader's append (``client`` origin unless the case says
otherwise) and the markers through the leader's append with the coordinator origin, so the log's producer
state, its transaction index and its last stable offset follow them, and what the cleaner reads of those (the
aborted transactions of ``collect_aborted_transactions``, the producers' last batches) is what Kafka's reads.
"""

from __future__ import annotations

from kafkalog import MemoryRecords
from kafkalog.cleaner import CleanedTransactionMetadata, CleaningRound
from kafkalog.cleaner.stats import CleanerStats
from kafkalog.record import ControlRecordType
from kafkalog.transaction_index import AbortedTxn
from tests.support.cleaner_utils import (
    INT_MAX,
    LARGE_TIMESTAMP,
    LONG_MAX,
    Env,
    FakeOffsetMap,
    TxnProducer,
    abort,
    batch_base_offsets_in_log,
    commit,
    keys_in_log,
    last_offsets_per_batch_in_log,
    last_sequences_in_log,
    offsets_in_log,
    record,
    run_two_pass_clean,
    to_clean,
)

# -- transactions -------------------------------------------------------------------------------------------


def test_basic_transaction_aware_cleaning(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=2048))
    producer1, producer2 = TxnProducer(env, log, 1), TxnProducer(env, log, 2)
    producer1([1, 2])
    producer2([2, 3])
    producer1([3, 4])
    abort(env, log, 1)
    commit(env, log, 2)
    producer1([2])
    commit(env, log, 1)
    aborted_transactions = log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset)
    # producer 2's transaction, open from offset 2, bounded the last stable offset when the abort was written
    assert aborted_transactions == [AbortedTxn(1, 0, 6, 2)]

    log.roll()
    cleaner.clean(to_clean(log, 0))
    assert keys_in_log(log) == [3, 2]
    assert offsets_in_log(log) == [3, 6, 7, 8, 9]
    # the transaction index is still correct: the retained marker's transaction is in the cleaned .txnindex
    assert log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset) == aborted_transactions


def test_clean_with_transactions_spanning_segments(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=1024))
    producer1, producer2, producer3 = (
        TxnProducer(env, log, 1),
        TxnProducer(env, log, 2),
        TxnProducer(env, log, 3),
    )
    producer1([1, 2])
    producer3([2, 3])
    producer2([3, 4])
    log.roll()
    producer2([5, 6])
    producer3([6, 7])
    producer1([7, 8])
    abort(env, log, 2)
    producer3([8, 9])
    commit(env, log, 3)
    producer1([9, 10])
    abort(env, log, 1)

    # only the records in the first segment are cleaned
    dirty_offset = cleaner.clean(to_clean(log, 0))[0]
    assert keys_in_log(log) == [2, 3, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10]
    log.roll()
    # a couple of extra appends in the new segment, so the producers have sequence numbers there
    producer2([11])
    producer1([12])
    # finally only the keys from producer 3 remain
    cleaner.clean(to_clean(log, dirty_offset))
    assert keys_in_log(log) == [2, 3, 6, 7, 8, 9, 11, 12]


def test_commit_marker_removal(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    producer = TxnProducer(env, log, 1)
    producer([1])
    producer([2, 3])
    commit(env, log, 1)
    producer([2])
    commit(env, log, 1)
    log.roll()

    # the marker cannot go in this pass: there are still valid records
    dirty_offset = cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [1, 3, 2]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5]

    producer([1, 3])
    commit(env, log, 1)
    log.roll()
    # the first cleaning keeps the commit marker at offset 3, since records of its transaction remained
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    # again at the same time: the marker is not removed early
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    # at the end of time the marker goes
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LONG_MAX)[0]
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8]


def test_deleted_batches_with_no_messages_read(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX, max_message_size=100)
    log = env.make_log(env.config(max_message_bytes=100, segment_bytes=1000))
    producer = TxnProducer(env, log, 1)
    producer([1])
    abort(env, log, 1)
    producer([2])
    producer([2])
    commit(env, log, 1)
    log.roll()

    cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2]
    assert offsets_in_log(log) == [1, 3, 4]
    # the first pass sets the commit's delete horizon, the second removes it
    run_two_pass_clean(cleaner, to_clean(log, 0), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2]
    assert offsets_in_log(log) == [3, 4]


def test_commit_marker_retention_with_empty_batch(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    producer1, producer2 = TxnProducer(env, log, 1), TxnProducer(env, log, 2)
    producer1([2, 3])  # offsets 0, 1
    log.roll()
    producer2([2, 3])  # offsets 2, 3
    commit(env, log, 2)  # offset 4
    log.roll()
    log.append_as_leader(record(2, 2), 0)  # offset 5
    log.append_as_leader(record(3, 3), 0)  # offset 6
    commit(env, log, 1)  # offset 7
    log.roll()

    # first time through the records are removed
    dirty_offset = cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7]
    assert last_offsets_per_batch_in_log(log) == [1, 3, 4, 5, 6, 7]

    # the empty batches remain when cleaned again, as they still hold the last sequences
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7]
    assert last_offsets_per_batch_in_log(log) == [1, 3, 4, 5, 6, 7]

    # a new record from producer 2 lets its empty batch go
    producer2([1])  # offset 8
    commit(env, log, 2)  # offset 9
    log.roll()
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [2, 3, 1]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8, 9]
    assert last_offsets_per_batch_in_log(log) == [1, 4, 5, 6, 7, 8, 9]

    # the first pass sets the delete horizon of producer 2's first commit, the second removes it
    dirty_offset = run_two_pass_clean(cleaner, to_clean(log, dirty_offset), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 3, 1]
    assert offsets_in_log(log) == [5, 6, 7, 8, 9]
    assert last_offsets_per_batch_in_log(log) == [1, 5, 6, 7, 8, 9]


def test_clean_empty_control_batch(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    commit(env, log, 1)  # offset 0
    log.append_as_leader(record(2, 2), 0)  # offset 1
    log.append_as_leader(record(3, 3), 0)  # offset 2
    log.roll()

    # the first pass sets the marker's delete horizon; the second removes the marker but keeps its batch,
    # empty, for the producer's epoch
    dirty_offset = run_two_pass_clean(cleaner, to_clean(log, 0), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [1, 2]
    assert last_offsets_per_batch_in_log(log) == [0, 1, 2]

    # the empty control batch is no trouble for a later clean
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LONG_MAX)[0]
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [1, 2]
    assert last_offsets_per_batch_in_log(log) == [0, 1, 2]


def test_committed_transaction_spanning_segments(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=128))
    producer = TxnProducer(env, log, 1)
    producer([1])
    log.roll()
    commit(env, log, 1)
    log.roll()
    # both the record and the marker remain
    run_two_pass_clean(cleaner, to_clean(log, 0), LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [0, 1]
    assert last_offsets_per_batch_in_log(log) == [0, 1]


def test_aborted_transaction_spanning_segments(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=128))
    producer = TxnProducer(env, log, 1)
    producer([1])
    log.roll()
    abort(env, log, 1)
    log.roll()
    # the batch stays, empty, as the producer's last; the marker stays while a batch of its transaction does
    cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [1]
    assert last_offsets_per_batch_in_log(log) == [0, 1]
    # and after a second cleaning
    cleaner.do_clean(to_clean(log, 0), LONG_MAX)
    assert offsets_in_log(log) == [1]
    assert last_offsets_per_batch_in_log(log) == [0, 1]


def test_abort_marker_removal(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    producer = TxnProducer(env, log, 1)
    producer([1])
    producer([2, 3])
    abort(env, log, 1)
    producer([3])
    commit(env, log, 1)
    log.roll()

    # the aborted records go, the abort marker stays
    dirty_offset = cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)[0]
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [3, 4, 5]
    # the first pass sets the abort marker's delete horizon, the second removes it
    run_two_pass_clean(cleaner, to_clean(log, dirty_offset), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [4, 5]


def test_empty_batch_removal_with_sequence_reuse(env: Env) -> None:
    # the group coordinator starts every batch at sequence 0: old empty batches and markers must still go
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=2048))
    # appended as replication, as Kafka's test does: a client's second batch at sequence 0 would be a duplicate
    first_transaction = TxnProducer(env, log, 1, origin="replication")
    first_transaction([1])
    commit(env, log, 1)
    second_transaction = TxnProducer(env, log, 1, origin="replication")
    second_transaction([2])
    commit(env, log, 1)
    log.append_as_leader(record(1, 1), 0)
    log.append_as_leader(record(2, 1), 0)
    log.roll()

    # both transactional batches are cleaned; the last stays, empty, for the producer's sequence and epoch
    cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [1, 3, 4, 5]
    assert last_offsets_per_batch_in_log(log) == [1, 2, 3, 4, 5]
    # the first pass sets the first marker's delete horizon, the second removes it
    run_two_pass_clean(cleaner, to_clean(log, 0), LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [3, 4, 5]
    assert last_offsets_per_batch_in_log(log) == [2, 3, 4, 5]


def test_abort_marker_retention_with_empty_batch(env: Env) -> None:
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(segment_bytes=256))
    producer = TxnProducer(env, log, 1)
    producer([2, 3])  # last offset 1
    abort(env, log, 1)  # offset 2
    log.roll()

    def assert_aborted_transaction_indexed() -> None:
        aborted = log.collect_aborted_transactions(0, 100)
        assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(1, 0, 2)]

    assert_aborted_transaction_indexed()
    # first time through the records are removed
    dirty_offset = cleaner.do_clean(to_clean(log, 0), LARGE_TIMESTAMP)[0]
    assert_aborted_transaction_indexed()
    # and the retained marker's transaction goes to the cleaned segment's .txnindex
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.collect_aborted_transactions(0, 100)] == [
        (1, 0, 2)]
    assert keys_in_log(log) == []
    assert offsets_in_log(log) == [2]  # the abort marker is retained
    assert last_offsets_per_batch_in_log(log) == [1, 2]  # and the empty batch

    # the empty batch stays when cleaned again, as it still holds the last sequence
    dirty_offset = run_two_pass_clean(cleaner, to_clean(log, dirty_offset), LARGE_TIMESTAMP)
    assert_aborted_transaction_indexed()
    assert keys_in_log(log) == []
    assert offsets_in_log(log) == [2]
    assert last_offsets_per_batch_in_log(log) == [1, 2]

    # a new last sequence lets the empty batch go
    producer([1])
    log.roll()
    dirty_offset = cleaner.do_clean(to_clean(log, dirty_offset), LARGE_TIMESTAMP)[0]
    assert_aborted_transaction_indexed()
    assert keys_in_log(log) == [1]
    assert offsets_in_log(log) == [2, 3]  # the marker is not yet gone, as the empty batch was read
    assert last_offsets_per_batch_in_log(log) == [2, 3]  # but the empty batch is not kept

    # the first pass sets the abort marker's delete horizon, the second removes it
    dirty_offset = run_two_pass_clean(cleaner, to_clean(log, dirty_offset), LARGE_TIMESTAMP)
    assert keys_in_log(log) == [1]
    assert offsets_in_log(log) == [3]
    assert last_offsets_per_batch_in_log(log) == [3]
    assert log.collect_aborted_transactions(0, 100) == []


def test_log_cleaner_retains_last_sequence_even_if_transaction_aborted(env: Env) -> None:
    cleaner = env.make_cleaner(10)
    log = env.make_log(env.config(segment_bytes=1024))
    producer = TxnProducer(env, log, 1)
    producer([1])
    producer([2, 3])
    abort(env, log, 1)
    log.roll()

    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [2, 3]
    assert last_sequences_in_log(log) == {1: 2}
    assert keys_in_log(log) == []
    assert offsets_in_log(log) == [3]

    # a new entry from the producer lets the empty batch go
    producer([1, 5])
    log.roll()
    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [3, 5]
    assert last_sequences_in_log(log) == {1: 4}
    assert keys_in_log(log) == [1, 5]
    assert offsets_in_log(log) == [3, 4, 5]


def test_cleaning_with_keys_conflicting_with_txn_marker_keys(env: Env) -> None:
    cleaner = env.make_cleaner(10)
    log = env.make_log(env.config(segment_bytes=1024))
    leader_epoch = 5
    # one committed transaction
    producer1 = TxnProducer(env, log, 1, leader_epoch=leader_epoch)
    producer1([1])
    commit(env, log, 1, leader_epoch=leader_epoch)
    # a transaction whose key is the COMMIT marker's key
    records = MemoryRecords.with_records(
        [(ControlRecordType.COMMIT.record_key(), b"foo", env.time.milliseconds())],
        producer_id=2,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    log.append_as_leader(records, leader_epoch)
    commit(env, log, 2, leader_epoch=leader_epoch)
    log.roll()
    assert offsets_in_log(log) == [0, 1, 2, 3]

    # the marker is not removed after cleaning
    cleaner.clean(to_clean(log, 0))
    assert last_offsets_per_batch_in_log(log) == [0, 1, 2, 3]
    assert offsets_in_log(log) == [0, 1, 2, 3]


def test_multi_pass_segment_cleaning_with_aborted_transactions(env: Env) -> None:
    """Aborted transactions, and their transaction index, are kept right even when a pass cannot clean a whole
    segment.  The markers go in as a follower's would, as in Kafka's case (leader appends of the replication
    origin)."""
    delete_retention_ms = 50_000
    offset_map_slots = 4
    cleaner = env.make_cleaner(INT_MAX)
    log = env.make_log(env.config(delete_retention_ms=delete_retention_ms))
    producer1, producer2 = TxnProducer(env, log, 1), TxnProducer(env, log, 2)

    def abort_(producer_id: int) -> None:
        abort(env, log, producer_id, origin="replication")

    def commit_(producer_id: int) -> None:
        commit(env, log, producer_id, origin="replication")

    producer1([1, 2])  # [0, 1]
    producer2([2, 3])  # [2, 3]
    producer1([3, 4])  # [4, 5]
    commit_(1)  # [6, 6]
    commit_(2)  # [7, 7]
    producer1([2, 3])  # [8, 9]
    abort_(1)  # [10, 10]
    producer2([4, 5])  # [11, 12]
    producer1([5, 6])  # [13, 14]
    commit_(1)  # [15, 15]
    abort_(2)  # [16, 16]
    producer2([6, 7])  # [17, 18]
    commit_(2)  # [19, 19]
    log.roll()
    assert log.log_end_offset == 20

    expected_aborted_txns = [AbortedTxn(1, 8, 10, 11), AbortedTxn(2, 11, 16, 17)]

    def assert_all_aborted_txns(expected: list[AbortedTxn]) -> None:
        assert log.collect_aborted_transactions(0, log.log_end_offset) == expected

    def assert_all_transactions_complete() -> None:
        assert all(entry.current_txn_first_offset is None for entry in log.active_producers().values())

    assert_all_transactions_complete()
    assert_all_aborted_txns(expected_aborted_txns)

    dirty_offset = 0

    def clean_segments() -> None:
        nonlocal dirty_offset
        offset_map = FakeOffsetMap(offset_map_slots)
        segments = log.log_segments(0, log.active_segment.base_offset)
        stats = CleanerStats(env.time)
        cleaner.build_offset_map(log, dirty_offset, log.active_segment.base_offset, offset_map, stats)
        cleaner.clean_segments(
            log, segments,
            CleaningRound(offset_map,
                          env.time.milliseconds(),
                          stats,
                          CleanedTransactionMetadata(),
                          LONG_MAX,
                          log.active_segment.base_offset),
        )
        dirty_offset = offset_map.latest_offset + 1

    # first pass: the data of the aborted transactions goes, their markers stay until the retention passes
    clean_segments()
    assert dirty_offset == 4
    assert batch_base_offsets_in_log(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert_all_transactions_complete()
    assert_all_aborted_txns(expected_aborted_txns)

    # second pass: no data of the aborted transactions is left; the markers still wait for their retention,
    # but the transaction index need not name their transactions, which are empty
    clean_segments()
    assert dirty_offset == 14
    assert batch_base_offsets_in_log(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets_in_log(log) == [0, 2, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert_all_transactions_complete()
    assert_all_aborted_txns([])

    # last pass, after the retention: the abort markers (offsets 10 and 16) go
    env.time.sleep(delete_retention_ms)
    clean_segments()
    assert dirty_offset == 20
    assert batch_base_offsets_in_log(log) == [0, 2, 4, 6, 7, 13, 15, 17, 19]
    assert offsets_in_log(log) == [0, 2, 4, 5, 6, 7, 13, 15, 17, 18, 19]
    assert_all_transactions_complete()
    assert_all_aborted_txns([])
