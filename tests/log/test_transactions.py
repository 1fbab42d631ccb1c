"""kafkalog.log.transactions: what a ``read_committed`` consumer sees of a partition's transactions, from the producer
state and ``.txnindex`` files of a log that keeps them, or from the batch headers of one that does not (Kafka
3.8.0: ``UnifiedLog.lastStableOffset``, ``collectAbortedTransactions``, ``read`` with ``FetchIsolation``, and the
consumer's ``abortedProducerIds`` walk over a fetch's aborted transactions); and kafkalog's rule for a log written
before it kept producer state.

Logs are written here with :func:`tests.support.log_test_utils.append_transaction_sample` (offsets 0..6: plain,
aborted by producer 7 and its ABORT marker, committed by producer 8 and its COMMIT marker, open by producer 9,
then a plain record; the last stable offset is 5), so every answer is known.  Every test takes ``impl``.
"""

from __future__ import annotations

import io
import logging
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalArgumentError, IllegalStateError, OffsetOutOfRangeError
from kafkalog.fetch import FetchIsolation
from kafkalog.log import Log
from kafkalog.log.transactions import (
    ProducerBatch,
    TransactionState,
    first_unstable_offset,
    producer_batches,
    scan_producer_batches,
    transactional_rows,
)
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords
from kafkalog.transaction_index import AbortedTxn, read_aborted_txns
from tests.support.log_test_utils import LogFactory, append_abort_across_a_roll, append_transaction_sample

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
                                          producer_epoch=0, base_sequence=0, is_transactional=True,
                                          partition_leader_epoch=0),
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


def test_an_abort_written_while_a_reader_collects_the_aborts_stays_past_its_bound(
        impl: ModuleType, create_log: LogFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``read_committed`` reader takes its bound, the last stable offset, before it collects the aborted
    transactions, as Kafka's ``UnifiedLog.read`` does: producer 9's ABORT marker, written while the reader collects
    (a hook on the call the reader makes in between), ends a transaction at or past that bound, so the reader
    neither returns the aborted record nor reads past the bound; the next reader skips the record."""
    log = create_log()
    append_transaction_sample(log)
    collect = log.collect_aborted_transactions
    markers: list[int] = []

    def collect_then_abort(start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        found = collect(start_offset, upper_bound_offset)
        if not markers:
            markers.append(log.log_end_offset)
            log.append(MemoryRecords.with_end_transaction_marker(
                9, 0, EndTransactionMarker(ControlRecordType.ABORT, 0), base_offset=log.log_end_offset,
                timestamp=1_000, partition_leader_epoch=0), assign_offsets=False)
        return found

    monkeypatch.setattr(log, "collect_aborted_transactions", collect_then_abort)
    assert [r.value for r in log.records(isolation="read_committed")] == [b"plain", b"committed"]
    assert markers == [7]
    state = TransactionState.of(log)
    assert state.last_stable_offset == 8
    assert state.aborted == (ABORTED_BY_7, AbortedTxn(producer_id=9, first_offset=5, last_offset=7,
                                                      last_stable_offset=8))
    assert [r.value for r in log.records(isolation="read_committed")] == [b"plain", b"committed",
                                                                          b"after the open one"]


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
    log.append(MemoryRecords.with_end_transaction_marker(9, 0, commit, base_offset=log.log_end_offset, timestamp=1_000,
                                                         partition_leader_epoch=0),
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



# -- where the state comes from -----------------------------------------------------------------------------------

# Producer 10's transaction after the roll of _rolled_sample: opened at 7, aborted by its marker at 8.  Producer 9's
# transaction is still open at 5, so that is the last stable offset the marker records.
ABORTED_BY_10 = AbortedTxn(producer_id=10, first_offset=7, last_offset=8, last_stable_offset=5)


def _rolled_sample(create_log: LogFactory) -> Log:
    """The sample, a roll (a producer snapshot at 7, with producer 9's transaction open since 5), then producer 10's
    aborted transaction in the second segment."""
    log = create_log()
    append_transaction_sample(log)
    log.roll()
    log.append(MemoryRecords.with_records([(b"t", b"ten", 1_000)], base_offset=7, producer_id=10, producer_epoch=0,
                                          base_sequence=0, is_transactional=True, partition_leader_epoch=0),
               assign_offsets=False)
    log.append(MemoryRecords.with_end_transaction_marker(10, 0, EndTransactionMarker(ControlRecordType.ABORT, 0),
                                                         base_offset=8, timestamp=1_000, partition_leader_epoch=0),
               assign_offsets=False)
    return log


def _snapshots(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.snapshot"))


def test_state_of_a_writable_log_is_its_producer_state_and_indexes(impl: ModuleType, create_log: LogFactory) -> None:
    """A log open for writing answers from what it keeps, as a broker's fetch does: the ``.txnindex`` entries and
    the producer state's last stable offset."""
    log = _rolled_sample(create_log)
    state = TransactionState.of(log)
    assert state.aborted == (ABORTED_BY_7, ABORTED_BY_10)
    assert state.last_stable_offset == log.last_stable_offset == 5
    log.update_high_watermark(3)  # the producer state's last stable offset is bounded by the high watermark
    assert TransactionState.of(log).last_stable_offset == 3
    # An abort the index does not hold is not one: the batch headers are not read.
    log.log_segments()[0].txn_index.reset()
    assert TransactionState.of(log).aborted == (ABORTED_BY_10,)


def test_read_only_log_with_snapshots_reads_indexes_and_the_latest_snapshot(impl: ModuleType,
                                                                          create_log: LogFactory) -> None:
    """A log read in place whose writer kept producer state: the aborts of its ``.txnindex`` files, and its open
    transactions from the latest snapshot and the batches after it."""
    log = _rolled_sample(create_log)
    expected = TransactionState.of(log)
    directory = log.dir
    log.close()
    assert [p.name for p in _snapshots(directory)] == ["00000000000000000007.snapshot",
                                                       "00000000000000000009.snapshot"]
    with Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader) == expected
    # The snapshot at the log end leaves no batch to replay: producer 9's open transaction comes from it, and an
    # abort without an index entry is not seen (the first segment's index is gone).
    (directory / "00000000000000000000.txnindex").unlink()
    with Log(directory, read_only=True) as reader:
        state = TransactionState.of(reader)
        assert state.aborted == (ABORTED_BY_10,)
        assert state.last_stable_offset == 5
    # With the snapshot at 7 the latest, the batches after it are replayed: producer 10's abort is found there even
    # without its index entry, as recovery would index it.
    (directory / "00000000000000000009.snapshot").unlink()
    (directory / "00000000000000000007.txnindex").unlink()
    with Log(directory, read_only=True) as reader:
        state = TransactionState.of(reader)
        assert state.aborted == (ABORTED_BY_10,)
        assert state.last_stable_offset == 5


def test_read_only_log_without_snapshots_reads_batch_headers(impl: ModuleType, create_log: LogFactory) -> None:
    """No snapshot: a writer that kept no producer state (kafkalog before it did, whose aborts have no index
    entries), so the batch headers are read."""
    log = _rolled_sample(create_log)
    expected = TransactionState.of(log)
    directory = log.dir
    log.close()
    for path in [*_snapshots(directory), *directory.glob("*.txnindex")]:
        path.unlink()
    with Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader) == expected


def test_a_snapshot_that_does_not_read_sends_the_reader_to_the_headers(impl: ModuleType, create_log: LogFactory,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    log = _rolled_sample(create_log)
    expected = TransactionState.of(log)
    directory = log.dir
    log.close()
    (directory / "00000000000000000000.txnindex").unlink()  # the headers still know producer 7's abort
    (directory / "00000000000000000009.snapshot").write_bytes(b"\x00\x01not a snapshot")
    with caplog.at_level(logging.WARNING, logger="kafkalog.log.transactions"), \
            Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader) == expected
    assert "00000000000000000009.snapshot does not read" in caplog.text


def test_opening_a_log_without_snapshots_completes_its_transaction_indexes(impl: ModuleType,
                                                                          create_log: LogFactory) -> None:
    """kafkalog's rule for a log written before it kept producer state (no snapshot, aborts without index
    entries): the first open for writing replays it from the first segment and adds the missing entries; an index
    that has its entries is left as it is, and later opens replay nothing (the log has snapshots now)."""
    log = _rolled_sample(create_log)
    expected = TransactionState.of(log)
    directory = log.dir
    log.close()
    second_index = (directory / "00000000000000000007.txnindex").read_bytes()
    for path in [*_snapshots(directory), directory / "00000000000000000000.txnindex"]:
        path.unlink()
    before = (directory / "00000000000000000007.txnindex").stat().st_mtime_ns

    log = create_log()
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [ABORTED_BY_7, ABORTED_BY_10]
    assert TransactionState.of(log) == expected
    assert (directory / "00000000000000000007.txnindex").read_bytes() == second_index
    assert (directory / "00000000000000000007.txnindex").stat().st_mtime_ns == before
    assert _snapshots(directory)
    # A read-committed consumer skips the aborted records, and stops at producer 9's open transaction.
    assert [r.value for r in log.records(isolation="read_committed")] == [b"plain", b"committed"]
    log.close()
    with Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader) == expected


def test_read_committed_fetch_carries_the_aborted_transactions(impl: ModuleType, create_log: LogFactory) -> None:
    """``Log.read(isolation=...)``: Kafka's ``read(startOffset, maxLength, isolation, minOneMessage)``, bounded by
    the log end, the high watermark or the last stable offset; a read-committed one carries the aborted
    transactions of what it read, an empty list when it read nothing."""
    log = _rolled_sample(create_log)
    log.update_high_watermark(log.log_end_offset)
    committed = log.read(0, 2**31 - 1, isolation="txn_committed")
    assert max(batch.last_offset for batch in committed.records.batches()) == 4  # below the open transaction
    assert committed.aborted_transactions == [ABORTED_BY_7]
    assert log.read(5, 2**31 - 1, isolation=FetchIsolation.TXN_COMMITTED).aborted_transactions == []
    assert log.read(0, 2**31 - 1, isolation="high_watermark").aborted_transactions is None
    log.update_high_watermark(2)
    assert max(b.last_offset for b in log.read(0, 2**31 - 1, isolation="HIGH_WATERMARK").records.batches()) == 1
    assert max(b.last_offset for b in log.read(0, 2**31 - 1, isolation="log_end").records.batches()) == 6
    with pytest.raises(IllegalArgumentError, match="not both"):
        log.read(0, 100, 3, isolation="log_end")
    with pytest.raises(ValueError, match="Unknown fetch isolation 'read_committed': expected one of log_end"):
        log.read(0, 100, isolation="read_committed")
    with pytest.raises(OffsetOutOfRangeError):
        log.read(log.log_end_offset + 1, 100, isolation="txn_committed")


def test_url_partition_reads_the_state_a_local_reader_does(impl: ModuleType, create_log: LogFactory) -> None:
    """A partition dir at a URL (memory://) finds its transactions as a local read-only open does: from its
    snapshot and ``.txnindex`` objects, or from the batch headers when it has no snapshot."""
    fsspec = pytest.importorskip("fsspec")
    from kafkalog.urls import locate
    from kafkalog.urls.partition import UrlPartition

    log = _rolled_sample(create_log)
    expected = TransactionState.of(log)
    directory = log.dir
    log.close()
    (directory / "00000000000000000000.txnindex").unlink()  # read as the local reader reads it
    fs = fsspec.filesystem("memory")
    root = f"/kafkalog-{uuid.uuid4().hex}"
    try:
        fs.put(str(directory), f"{root}/{directory.name}", recursive=True)
        where = locate(f"memory://{root}/{directory.name}")
        with Log(directory, read_only=True) as reader, UrlPartition.open(where) as remote:
            assert sorted(remote.snapshots) == [7, 9]
            assert remote.transactions() == TransactionState.of(reader)
            assert remote.transactions().aborted == (ABORTED_BY_10,)
        for snapshot in fs.glob(f"{root}/{directory.name}/*.snapshot"):
            fs.rm(snapshot)
        with UrlPartition.open(where) as remote:
            assert remote.transactions() == expected  # from the headers, which know producer 7's abort
    finally:
        fs.rm(root, recursive=True)


def _snapshot_of(*entries: tuple[int, ...]) -> bytes:
    """A producer snapshot as ``writeSnapshot`` lays it out, built here from the schema: version 1, the CRC-32C of
    the bytes after it, the count, then each entry (producer id, epoch, last sequence, last offset, offset delta,
    timestamp, coordinator epoch, open transaction's first offset or -1)."""
    import struct

    from kafkalog import _impl

    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *entry) for entry in entries)
    return struct.pack(">hI", 1, int(_impl.core.crc32c(body))) + body


def test_a_producer_id_written_twice_in_a_snapshot_reads_as_a_load_reads_it(impl: ModuleType,
                                                                            create_log: LogFactory) -> None:
    """Kafka's ``ProducerStateManager.loadFromSnapshot`` over a snapshot (at 10) holding producer 7 twice, with a
    transaction open from 2, then one open from 5 (a broker writes no such file): ``loadProducerEntry`` keeps the
    later entry as the producer's and both transactions in ``ongoingTxns``.  Producer 7's COMMIT at 10 closes its
    own (5); the one from 2 stays open.  So the last stable offset is 2 for a writable open, a read-only one and a
    reader at a URL alike (the read-only readers took the later entry alone, and said 12)."""
    fsspec = pytest.importorskip("fsspec")
    from kafkalog.urls import locate
    from kafkalog.urls.partition import UrlPartition

    log = create_log()
    for n in range(10):
        log.append(MemoryRecords.with_records([(None, b"plain %d" % n, 1_000)], base_offset=n,
                                              partition_leader_epoch=0), assign_offsets=False)
    log.append(MemoryRecords.with_end_transaction_marker(7, 0, EndTransactionMarker(ControlRecordType.COMMIT, 0),
                                                         base_offset=10, timestamp=1_000, partition_leader_epoch=0),
               assign_offsets=False)
    log.append(MemoryRecords.with_records([(None, b"after", 1_000)], base_offset=11, partition_leader_epoch=0),
               assign_offsets=False)
    directory = log.dir
    log.close()
    for path in _snapshots(directory):
        path.unlink()
    (directory / "00000000000000000010.snapshot").write_bytes(
        _snapshot_of((7, 0, 0, 2, 0, 1_000, 0, 2), (7, 0, 3, 5, 0, 1_000, 0, 5)))
    expected = TransactionState((), 2)
    with Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader) == expected
        assert (reader.first_unstable_offset, reader.last_stable_offset) == (2, 2)
    fs = fsspec.filesystem("memory")
    root = f"/kafkalog-{uuid.uuid4().hex}"
    try:
        fs.put(str(directory), f"{root}/{directory.name}", recursive=True)
        with UrlPartition.open(locate(f"memory://{root}/{directory.name}")) as remote:
            assert remote.transactions() == expected
    finally:
        fs.rm(root, recursive=True)
    writable = create_log(directory=directory)
    writable.update_high_watermark(writable.log_end_offset)
    assert (writable.first_unstable_offset, writable.last_stable_offset) == (2, 2)
    assert TransactionState.of(writable) == expected
    own = writable.producer_state_manager.last_entry(7)
    assert own is not None and own.current_txn_first_offset is None  # its own transaction, closed at 10


def _legacy(log: Log) -> Path:
    """Close ``log`` and take away what kafkalog before it kept producer state did not write: the producer
    snapshots and the ``.txnindex`` files."""
    directory = log.dir
    log.close()
    for path in [*_snapshots(directory), *directory.glob("*.txnindex")]:
        path.unlink()
    return directory


def test_completion_keeps_a_broker_entry_whose_transaction_began_before_the_log_start(
        impl: ModuleType, create_log: LogFactory) -> None:
    """An abort is known by its producer and marker offset.  Replayed from a log start inside the transaction, the
    replay sees it begin later than the entry on disk says; the entry stays as it was, and is not added twice
    (which the index would refuse, as last offsets must increase)."""
    log = create_log()
    data = {"producer_id": 7, "producer_epoch": 0, "is_transactional": True, "partition_leader_epoch": 0}
    log.append(MemoryRecords.with_records([(None, b"plain", 1_000)], base_offset=0, partition_leader_epoch=0),
               assign_offsets=False)
    log.append(MemoryRecords.with_records([(None, b"t1", 1_000)], base_offset=1, base_sequence=0, **data),
               assign_offsets=False)
    log.append(MemoryRecords.with_records([(None, b"plain", 1_000)], base_offset=2, partition_leader_epoch=0),
               assign_offsets=False)
    log.append(MemoryRecords.with_records([(None, b"t2", 1_000)], base_offset=3, base_sequence=1, **data),
               assign_offsets=False)
    log.append(MemoryRecords.with_end_transaction_marker(7, 0, EndTransactionMarker(ControlRecordType.ABORT, 0),
                                                         base_offset=4, timestamp=1_000, partition_leader_epoch=0),
               assign_offsets=False)
    log.append(MemoryRecords.with_records([(None, b"plain", 1_000)], base_offset=5, partition_leader_epoch=0),
               assign_offsets=False)
    directory = log.dir
    log.close()
    index = directory / "00000000000000000000.txnindex"
    written = index.read_bytes()
    for path in _snapshots(directory):
        path.unlink()
    log = create_log(log_start_offset=2, recovery_point=6)
    assert log.collect_aborted_transactions(2, 6) == [AbortedTxn(7, 1, 4, 5)]
    assert index.read_bytes() == written
    assert [r.value for r in log.records(isolation="read_committed")] == [b"plain", b"plain"]


def test_completion_rewrites_an_index_missing_an_earlier_entry(impl: ModuleType, create_log: LogFactory) -> None:
    """An index that has a later abort but lacks an earlier one is rewritten whole, in order, through a temporary
    file; a ``.txnindex.tmp`` a crash left behind is removed by the next load."""
    log = create_log()
    append_transaction_sample(log)
    log.append(MemoryRecords.with_records([(b"t", b"ten", 1_000)], base_offset=7, producer_id=10, producer_epoch=0,
                                          base_sequence=0, is_transactional=True, partition_leader_epoch=0),
               assign_offsets=False)
    log.append(MemoryRecords.with_end_transaction_marker(10, 0, EndTransactionMarker(ControlRecordType.ABORT, 0),
                                                         base_offset=8, timestamp=1_000, partition_leader_epoch=0),
               assign_offsets=False)
    expected = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [txn.producer_id for txn in expected] == [7, 10]
    directory = log.dir
    log.close()
    for path in _snapshots(directory):
        path.unlink()
    index = directory / "00000000000000000000.txnindex"
    index.write_bytes(expected[1].to_bytes())  # only producer 10's
    (directory / "00000000000000000000.txnindex.tmp").write_bytes(b"left by a crash")
    log = create_log()
    assert log.collect_aborted_transactions(0, log.log_end_offset) == expected
    assert index.read_bytes() == b"".join(txn.to_bytes() for txn in expected)
    assert not (directory / "00000000000000000000.txnindex.tmp").exists()
    assert "00000000000000000000.txnindex.tmp" in log.load_report.removed_files


@pytest.mark.parametrize("offset_index_missing", [False, True])
def test_a_failed_completion_leaves_no_snapshot_so_the_next_open_completes(
        impl: ModuleType, create_log: LogFactory, monkeypatch: pytest.MonkeyPatch, offset_index_missing: bool) -> None:
    """The indexes are completed before anything writes a snapshot: an open that fails half way (here, at the
    second segment) leaves a log without snapshots, which the next open completes.  That holds when an index is
    rebuilt while the segments load too (a missing offset index), which would otherwise write a snapshot."""
    from kafkalog.errors import KafkaStorageError
    from kafkalog.log import producer_state_updates as log_updates

    directory = _legacy(_rolled_sample(create_log))
    if offset_index_missing:
        (directory / "00000000000000000000.index").unlink()
    real = log_updates.complete_txn_index

    def failing(manager: Any, segment: Any, records: Any, start_offset: int) -> None:
        if segment.base_offset == 7:
            raise KafkaStorageError("disk gone")
        real(manager, segment, records, start_offset)

    monkeypatch.setattr(log_updates, "complete_txn_index", failing)
    with pytest.raises(KafkaStorageError, match="disk gone"):
        create_log()
    assert not _snapshots(directory)
    monkeypatch.setattr(log_updates, "complete_txn_index", real)
    log = create_log()
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [ABORTED_BY_7, ABORTED_BY_10]
    assert [r.value for r in log.records(isolation="read_committed")] == [b"plain", b"committed"]


def test_read_only_log_answers_its_last_stable_offset_and_committed_reads_in_place(
        impl: ModuleType, create_log: LogFactory) -> None:
    """A read-only log rebuilds no producer state; its first unstable and last stable offsets, and a
    ``txn_committed`` read's bound and aborted transactions, are what a reader finds in place, with or without
    snapshots.  The aborted transactions are those of the range a broker's fetch searches (Kafka:
    ``addAbortedTransactions``, up to the next segment's base here), as a log open for writing answers: producer 10's,
    which begins at that base, is not among them."""
    log = _rolled_sample(create_log)
    directory = log.dir
    log.close()
    for remove_snapshots in (False, True):
        if remove_snapshots:
            for path in [*_snapshots(directory), *directory.glob("*.txnindex")]:
                path.unlink()
        with Log(directory, read_only=True) as reader:
            assert reader.first_unstable_offset == 5 and reader.last_stable_offset == 5
            assert reader.fetch_last_stable_offset_metadata().message_offset == 5
            fetch = reader.read(0, 2**31 - 1, isolation="txn_committed")
            assert max(batch.last_offset for batch in fetch.records.batches()) == 4
            assert fetch.aborted_transactions == [ABORTED_BY_7]
            assert reader.in_place_transactions() is reader.in_place_transactions()  # read once
    writable = create_log()
    writable.update_high_watermark(writable.log_end_offset)
    assert writable.read(0, 2**31 - 1, isolation="txn_committed").aborted_transactions == [ABORTED_BY_7]
    with pytest.raises(IllegalStateError, match="open for writing"):
        writable.in_place_transactions()


def test_read_only_last_stable_offset_is_never_below_the_log_start(impl: ModuleType, create_log: LogFactory) -> None:
    """A transaction left open in a segment since deleted would put the last stable offset below the log start;
    it is raised to the log start, as a broker raises its first unstable offset."""
    log = create_log()
    append_transaction_sample(log)  # producer 9's transaction opens at 5 and never ends
    log.roll()
    log.append(MemoryRecords.with_records([(None, b"later", 1_000)], base_offset=7, partition_leader_epoch=0),
               assign_offsets=False)
    directory = log.dir
    log.close()
    for path in directory.glob("00000000000000000000.*"):  # the first segment, gone as retention removes it
        path.unlink()
    with Log(directory, read_only=True) as reader:
        assert reader.log_start_offset == 7
        assert TransactionState.of(reader).last_stable_offset == 7
        assert reader.last_stable_offset == 7


def test_recover_full_repairs_a_log_with_snapshots_but_no_index_entries(impl: ModuleType,
                                                                      create_log: LogFactory) -> None:
    """A log that kafkalog opened for writing while it took Kafka's upgrade shortcut (empty snapshots, no index
    entries for the aborts) is read as its snapshots and indexes say; ``kafkalog recover --full`` rebuilds every
    segment's index from its batches, after which reads are right."""
    from kafkalog.cli import main
    from kafkalog.producer_state import ProducerStateManager, ProducerStateManagerConfig
    from kafkalog.scheduler import MockTime
    from kafkalog.topic import TopicPartition

    directory = _legacy(_rolled_sample(create_log))
    shortcut = ProducerStateManager(TopicPartition("topic", 0), directory, 900_000,
                                    ProducerStateManagerConfig(86_400_000, False), MockTime())
    for offset in (7, 9):  # the shortcut's empty snapshots: the last segment's base and the log end
        shortcut.update_map_end_offset(offset)
        shortcut.take_snapshot()
    with Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader) == TransactionState((), 9)  # as the files say, wrongly
    out = io.StringIO()
    assert main(["--no-progress", "recover", "--full", str(directory)], stdout=out, stderr=out) == 0
    with Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader).aborted == (ABORTED_BY_7, ABORTED_BY_10)
        assert [r.value for r in reader.records(isolation="read_committed")] == [b"plain", b"committed"]


def test_a_crashed_log_without_snapshots_is_recovered_before_its_batches_are_replayed(
        impl: ModuleType, create_log: LogFactory) -> None:
    """A log that crashed before its first roll or close has no snapshot; its torn or corrupt tail is cut by
    recovery before any replay reads it (the index completion replays only the flushed segments)."""
    log = create_log()
    append_transaction_sample(log)
    directory = log.dir
    segment_file = directory / "00000000000000000000.log"
    size = segment_file.stat().st_size
    log.append(MemoryRecords.with_end_transaction_marker(9, 0, EndTransactionMarker(ControlRecordType.ABORT, 0),
                                                         base_offset=7, timestamp=1_000, partition_leader_epoch=0),
               assign_offsets=False)
    log.close()
    for path in [*_snapshots(directory), *directory.glob("*.txnindex")]:  # a crash before any roll or close
        path.unlink()
    kept = segment_file.read_bytes()
    data = bytearray(kept)
    data[-1] ^= 0xFF  # the marker's record: its CRC no longer matches, nor does it decode
    data[-2] ^= 0xFF
    segment_file.write_bytes(bytes(data))
    log = create_log(had_clean_shutdown=False)
    assert log.log_end_offset == 7 and segment_file.stat().st_size == size
    assert log.load_report.recovered_segments == [(0, len(kept) - size)]
    assert log.collect_aborted_transactions(0, 7) == [ABORTED_BY_7]
    assert log.last_stable_offset == 5


def test_a_failed_rewrite_leaves_the_index_answering_its_old_entries(impl: ModuleType, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog.errors import KafkaStorageError
    from kafkalog.transaction_index import TransactionIndex
    from kafkalog.transaction_index import os as index_os

    index = TransactionIndex(0, tmp_path / "00000000000000000000.txnindex")
    index.append(ABORTED_BY_10)

    def refused(*args: Any) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(index_os, "replace", refused)
    with pytest.raises(KafkaStorageError, match="Rewriting the transaction index"):
        index.rewrite([ABORTED_BY_7, ABORTED_BY_10])
    monkeypatch.undo()
    assert index.all_aborted_txns() == [ABORTED_BY_10]
    assert not (tmp_path / "00000000000000000000.txnindex.tmp").exists()
    with pytest.raises(IllegalArgumentError, match="must increase"):
        index.rewrite([ABORTED_BY_10, ABORTED_BY_7])
    index.rewrite([ABORTED_BY_7, ABORTED_BY_10])
    assert index.all_aborted_txns() == [ABORTED_BY_7, ABORTED_BY_10]
    with pytest.raises(IllegalArgumentError, match="must increase"):
        index.append(ABORTED_BY_10)  # the rewrite's last offset bounds the next append
    index.close()


# -- a transaction index that fails its check (issue 28) ------------------------------------------------------------

# The entry of append_abort_across_a_roll's abort, in the second segment's index (base offset 2).
ABORTED_ACROSS_THE_ROLL = AbortedTxn(producer_id=7, first_offset=1, last_offset=2, last_stable_offset=3)
# Another producer's entry ending at 1, below the second segment's base: it fails Kafka's TransactionIndex.sanityCheck.
BELOW_THE_BASE = AbortedTxn(producer_id=8, first_offset=0, last_offset=1, last_stable_offset=2)


def _with_a_false_second_index(create_log: LogFactory) -> tuple[Path, Path]:
    """A closed log of :func:`append_abort_across_a_roll` (with its producer snapshots) whose second segment's index
    holds :data:`BELOW_THE_BASE` instead of the abort's entry; its dir and that index."""
    log = create_log()
    append_abort_across_a_roll(log)
    directory = log.dir
    log.close()
    index = directory / "00000000000000000002.txnindex"
    assert read_aborted_txns(index) == [ABORTED_ACROSS_THE_ROLL]
    assert _snapshots(directory)
    index.write_bytes(BELOW_THE_BASE.to_bytes())
    return directory, index


def test_a_read_only_reader_never_trusts_a_transaction_index_that_fails_its_check(
        impl: ModuleType, create_log: LogFactory, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 28.  A broker's open rebuilds a ``.txnindex`` that fails ``TransactionIndex.sanityCheck`` (Kafka:
    ``LogLoader.loadSegmentFiles``); a read-only open cannot, and took the segment's aborts from it anyway, so a
    read_committed reader got the aborted record.  Now the index is not trusted (a warning names it), the log's
    transactions come from its batch headers, and the segment's offset and time indexes, which pass, are still
    used."""
    directory, index = _with_a_false_second_index(create_log)
    with caplog.at_level(logging.WARNING), Log(directory, read_only=True) as reader:
        assert [r.value for r in reader.records(isolation="read_committed")] == [b"plain", b"after"]
        assert TransactionState.of(reader).aborted == (ABORTED_ACROSS_THE_ROLL,)
        assert reader.read(0, 2**31 - 1, isolation="txn_committed").aborted_transactions == [ABORTED_ACROSS_THE_ROLL]
        second = reader.log_segments()[1]
        assert second.txn_index.file_ignored and second.txn_index.all_aborted_txns() == []
        assert not second._lazy_offset_index.file_ignored and not second._lazy_time_index.file_ignored
    assert f"Transaction index {index} fails its check" in caplog.text
    assert "is less than start offset 2" in caplog.text
    assert f"Reading the transactions of {directory} from its batch headers" in caplog.text
    assert read_aborted_txns(index) == [BELOW_THE_BASE]  # a read-only open changes nothing
    # A writable open rebuilds it, as a broker's does.
    log = create_log()
    assert [base for base, _why in log.load_report.rebuilt_indexes] == [2]
    assert read_aborted_txns(index) == [ABORTED_ACROSS_THE_ROLL]
    assert [r.value for r in log.records(isolation="read_committed")] == [b"plain", b"after"]


def test_a_url_reader_never_trusts_a_transaction_index_that_fails_its_check(
        impl: ModuleType, create_log: LogFactory, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 28: the partition dir at a URL (the Spark planner's and ``stats``' reader) reads the same answer from
    the batch headers, with a warning naming the object."""
    fsspec = pytest.importorskip("fsspec")
    from kafkalog.urls import locate
    from kafkalog.urls.partition import UrlPartition

    directory, _index = _with_a_false_second_index(create_log)
    fs = fsspec.filesystem("memory")
    root = f"/kafkalog-{uuid.uuid4().hex}"
    try:
        fs.put(str(directory), f"{root}/{directory.name}", recursive=True)
        with caplog.at_level(logging.WARNING), UrlPartition.open(locate(f"memory://{root}/{directory.name}")) as remote:
            assert remote.transactions() == TransactionState((ABORTED_ACROSS_THE_ROLL,), 4)
        assert f"{directory.name}/00000000000000000002.txnindex is less than start offset 2" in caplog.text
    finally:
        fs.rm(root, recursive=True)


def test_an_index_with_more_entries_than_its_segment_holds_batches_is_not_read(
        impl: ModuleType, create_log: LogFactory, caplog: pytest.LogCaptureFixture) -> None:
    """An entry stands for an ABORT marker in its segment, a batch of at least 61 bytes: an index with more entries
    than that is not the segment's, and is refused before it is read (what bounds the memory a reader gives it); the
    transactions come from the batch headers."""
    log = create_log()
    append_abort_across_a_roll(log)
    directory = log.dir
    log.close()
    segment_bytes = (directory / "00000000000000000002.log").stat().st_size
    entries = [AbortedTxn(7, 1, 2 + i, 3 + i) for i in range(segment_bytes // 61 + 1)]
    (directory / "00000000000000000002.txnindex").write_bytes(b"".join(txn.to_bytes() for txn in entries))
    with caplog.at_level(logging.WARNING), Log(directory, read_only=True) as reader:
        assert TransactionState.of(reader).aborted == (ABORTED_ACROSS_THE_ROLL,)
    assert f"holds {len(entries)} entries, more than its segment's {segment_bytes} bytes" in caplog.text


def test_a_large_transaction_index_is_read_in_bounded_memory(impl: ModuleType, create_log: LogFactory) -> None:
    """Issue 28: a read-only read_committed read of a 51 MB ``.txnindex`` cost 1 GB, an object (and more) per
    entry.  The in-place reader reads the index a chunk at a time into four int64 columns, so 100,000 entries (a
    3.4 MB index) cost under 10 MB at the peak (about 48 bytes an entry, where the objects cost some 470), and a
    read makes objects only of the aborts it returns."""
    import tracemalloc

    log = create_log(LogConfig({"segment.bytes": 1 << 30, "max.message.bytes": 2 << 20}))
    for offset in range(7):  # 7 MB of log: room for 100,000 ABORT markers of 61 bytes
        log.append(MemoryRecords.with_records([(b"k", bytes(1 << 20), 1_000)], base_offset=offset,
                                              partition_leader_epoch=0), assign_offsets=False)
    log.append(MemoryRecords.with_records([(b"k", b"last", 1_000)], base_offset=200_010, partition_leader_epoch=0),
               assign_offsets=False)
    directory = log.dir
    log.close()
    count = 100_000
    (directory / "00000000000000000000.txnindex").write_bytes(b"".join(
        AbortedTxn(1_000 + i % 100, 2 * i, 2 * i + 1, 2 * i + 2).to_bytes() for i in range(count)))
    with Log(directory, read_only=True) as reader:
        tracemalloc.start()
        try:
            state = reader.in_place_transactions()
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 10_000_000, peak
        assert state.aborted_count == count and state.last_stable_offset == 200_011
        assert state.between(0, 4).aborted == (AbortedTxn(1_000, 0, 1, 2), AbortedTxn(1_001, 2, 3, 4))
        assert state.is_aborted(1_050, 100) and not state.is_aborted(1_051, 100)
        fetch = reader.read(0, 1, isolation="txn_committed")  # the first batch, and the aborts up to the next one
        assert fetch.aborted_transactions == [AbortedTxn(1_000, 0, 1, 2)]


def test_transaction_state_is_compact_sorted_and_answers_as_the_entries_say(impl: ModuleType) -> None:
    """The state keeps one row per producer and offsets, sorted; ``aborted`` lists them by first offset; it compares,
    hashes and pickles by value; ``aborted_mask`` answers what a walk of the entries would, for any producer and
    offset."""
    import pickle
    import random

    rng = random.Random(28)
    txns = []
    for producer_id in rng.sample(range(-5, 1_000), 40):
        offset = rng.randrange(0, 50)
        for _ in range(rng.randrange(1, 6)):
            first = offset + rng.randrange(0, 20)
            last = first + rng.randrange(0, 10)
            txns.append(AbortedTxn(producer_id, first, last, last + 1))
            offset = last + 1
    rng.shuffle(txns)
    state = TransactionState([*txns, txns[0]], 77)
    assert state.aborted == tuple(sorted(txns, key=lambda t: (t.first_offset, t.producer_id, t.last_offset)))
    assert state == TransactionState(reversed(txns), 77) and hash(state) == hash(TransactionState(txns, 77))
    assert state != TransactionState(txns, 78) and state != TransactionState(txns[1:], 77)
    assert pickle.loads(pickle.dumps(state)) == state
    with pytest.raises(AttributeError, match="does not change"):
        state.last_stable_offset = 3  # type: ignore[misc]

    def oracle(producer_id: int, offset: int) -> bool:
        return any(t.producer_id == producer_id and t.first_offset <= offset <= t.last_offset for t in txns)

    queries = [(rng.choice(txns).producer_id if rng.random() < 0.8 else rng.randrange(-10, 1_010),
                rng.randrange(-2, 300)) for _ in range(3_000)]
    mask = state.aborted_mask(np.array([q[0] for q in queries]), np.array([q[1] for q in queries]))
    assert mask.tolist() == [oracle(*q) for q in queries]
    assert [state.is_aborted(*q) for q in queries[:200]] == [oracle(*q) for q in queries[:200]]
    assert not TransactionState().aborted_mask(np.array([1]), np.array([1])).any()
    assert state.between(100, 120).aborted == tuple(t for t in state.aborted if t.last_offset >= 100
                                                    and t.first_offset < 120)


# -- the completion of a log without snapshots rebuilds what it cannot trust (issue 28) -----------------------------

@pytest.mark.parametrize("whole", [[], [ABORTED_BY_7]], ids=["lacking the abort", "holding it"])
def test_completion_rebuilds_an_index_ending_in_a_part_entry(impl: ModuleType, create_log: LogFactory,
                                                             whole: list[AbortedTxn]) -> None:
    """A write cut short leaves part of an entry at the end of the index.  The completion appended the missing abort
    behind it, misaligned, so every reader read garbage there and the abort was lost for good (read_committed
    returned the aborted record).  Now the index is rewritten from its whole entries and the replay, and a part-entry
    alone (the abort already indexed) is rewritten away too."""
    directory = _legacy(_rolled_sample(create_log))
    index = directory / "00000000000000000000.txnindex"
    index.write_bytes(b"".join(txn.to_bytes() for txn in whole) + ABORTED_BY_7.to_bytes()[:10])
    log = create_log()
    assert index.read_bytes() == ABORTED_BY_7.to_bytes()
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [ABORTED_BY_7, ABORTED_BY_10]
    assert [r.value for r in log.records(isolation="read_committed")] == [b"plain", b"committed"]


def test_completion_drops_an_entry_no_abort_marker_backs(impl: ModuleType, create_log: LogFactory,
                                                         mock_time: Any) -> None:
    """An entry of another producer at the offset of a replayed ABORT marker made the completion's rewrite raise
    (last offsets must increase): the log could not be opened for writing, and a ``LogManager`` over its dir failed to
    load.  One marker offset is one producer's: the log's markers are the truth, so the false entry goes (as does one
    at an offset that holds no ABORT marker), and the open never fails on what the index holds."""
    from kafkalog.filenames import CLEAN_SHUTDOWN_FILE
    from kafkalog.manager.log_manager import LogManager
    from kafkalog.topic import TopicPartition

    directory = _legacy(_rolled_sample(create_log))
    false_at_the_marker = AbortedTxn(99, 1, 2, 3)  # producer 7's ABORT marker is at 2
    false_elsewhere = AbortedTxn(7, 3, 4, 5)  # 4 is producer 8's COMMIT marker
    (directory / "00000000000000000000.txnindex").write_bytes(false_at_the_marker.to_bytes()
                                                              + false_elsewhere.to_bytes())
    (directory.parent / CLEAN_SHUTDOWN_FILE).touch()
    with LogManager(directory.parent, LogConfig(), scheduler=mock_time.scheduler, time=mock_time) as manager:
        log = manager.get_log(TopicPartition("topic", 0))
        assert log is not None
        assert log.collect_aborted_transactions(0, log.log_end_offset) == [ABORTED_BY_7, ABORTED_BY_10]
        assert [r.value for r in log.records(isolation="read_committed")] == [b"plain", b"committed"]
    assert read_aborted_txns(directory / "00000000000000000000.txnindex") == [ABORTED_BY_7]


def test_completion_keeps_what_the_replay_did_not_cover(impl: ModuleType, create_log: LogFactory) -> None:
    """Entries below the log start (the replay starts there) are kept as they are, in order; an entry whose last
    offset does not rise above the one before it is left out of the rewrite."""
    log = create_log()
    append_transaction_sample(log)
    directory = log.dir
    log.close()
    for path in _snapshots(directory):
        path.unlink()
    below = [AbortedTxn(5, 0, 0, 1), AbortedTxn(6, 0, 1, 1)]
    (directory / "00000000000000000000.txnindex").write_bytes(
        b"".join(txn.to_bytes() for txn in [below[1], below[0], ABORTED_BY_7]))
    log = create_log(log_start_offset=2, recovery_point=7)
    assert read_aborted_txns(directory / "00000000000000000000.txnindex") == [below[1], ABORTED_BY_7]
    assert log.collect_aborted_transactions(2, 7) == [ABORTED_BY_7]
