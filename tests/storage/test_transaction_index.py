"""Transaction index files (kafkalog.transaction_index), read as Kafka's ``TransactionIndex`` reads them (storage
3.8.0): 34-byte ``AbortedTxn`` entries, a part-entry at the end not read, an unknown version refused.

kafkalog reads the ``.txnindex`` files a broker writes and works out aborted transactions from the log's control
batches itself; it writes no transaction index yet, so Kafka's tests of the index, which all begin by appending
to one, wait for the writer.

Kafka tests not ported:

- ``testPositionSetCorrectlyWhenOpened``, ``testSanityCheck``, ``testLastOffsetMustIncrease``,
  ``testLastOffsetCannotDecrease``, ``testCollectAbortedTransactions``, ``testTruncate``, ``testAbortedTxnSerde``,
  ``testRenameIndex``, ``testUpdateParentDir``: the writable ``TransactionIndex`` (append, sanity check,
  collecting by offset range, truncate, rename) and its ``AbortedTxn`` constructor, which come with the
  transaction index kafkalog will write (issue 20).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafkalog.transaction_index import ABORTED_TXN_SIZE, AbortedTxn, TransactionIndexError, read_aborted_txns

_ENTRY = struct.Struct(">hqqqq")

ABORTED = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25), AbortedTxn(3, 32, 50, 40)]


def _pack(txn: AbortedTxn) -> bytes:
    """An entry as a broker writes it (Kafka: ``AbortedTxn.toByteBuffer``): the version first."""
    return _ENTRY.pack(txn.version, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)


def test_entry_layout() -> None:
    """version int16, producer id, first offset, last offset, last stable offset as int64: 34 bytes."""
    assert ABORTED_TXN_SIZE == 34
    assert _pack(ABORTED[1]).hex() == (
        "0000" "0000000000000001" "0000000000000005" "000000000000000f" "000000000000000d")


def test_read_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(b"".join(_pack(txn) for txn in ABORTED))
    assert read_aborted_txns(path) == ABORTED
    (tmp_path / "empty.txnindex").write_bytes(b"")
    assert read_aborted_txns(tmp_path / "empty.txnindex") == []


def test_a_part_entry_at_the_end_is_not_read(tmp_path: Path) -> None:
    """A write cut short leaves part of an entry: Kafka's iterator stops before it, and so does the reader."""
    path = tmp_path / "00000000000000000000.txnindex"
    whole = b"".join(_pack(txn) for txn in ABORTED[:2])
    for cut in (1, ABORTED_TXN_SIZE - 1):
        path.write_bytes(whole + _pack(ABORTED[2])[:cut])
        assert read_aborted_txns(path) == ABORTED[:2]


def test_an_unknown_version_is_refused(tmp_path: Path) -> None:
    """Kafka: ``Unexpected aborted transaction version``, naming the file."""
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(_pack(ABORTED[0]) + _ENTRY.pack(1, 1, 5, 15, 13))
    with pytest.raises(TransactionIndexError, match=r"Unexpected aborted transaction version 1 in transaction "
                                                    r"index .*00000000000000000000\.txnindex, current version is 0"):
        read_aborted_txns(path)


def test_the_log_derives_the_entries_a_broker_writes() -> None:
    """The aborted transactions kafkalog reads from a log's batches are :class:`AbortedTxn` entries, last
    stable offset included, as a broker appends them to ``.txnindex`` (Kafka: ``LogSegment.updateTxnIndex``
    with ``ProducerStateManager.lastStableOffset``): the first offset of another producer's open
    transaction, else the marker's offset + 1.  A COMMIT ends a transaction without an entry."""
    from kafkalog.record import ControlRecordType
    from kafkalog.transactions import ProducerBatch, TransactionState

    def data(pid: int, offset: int) -> ProducerBatch:
        return ProducerBatch(pid, 0, offset, offset + 1, True, False)

    def marker(pid: int, offset: int, control: ControlRecordType) -> ProducerBatch:
        return ProducerBatch(pid, 0, offset, offset, True, True, control)

    batches = [data(1, 0), data(2, 2), data(3, 4), marker(1, 6, ControlRecordType.ABORT),
               marker(3, 7, ControlRecordType.COMMIT), marker(2, 8, ControlRecordType.ABORT),
               data(4, 9), marker(4, 11, ControlRecordType.ABORT)]
    state = TransactionState.from_batches(batches, log_end_offset=12)
    assert state.aborted == (AbortedTxn(1, 0, 6, 2), AbortedTxn(2, 2, 8, 9), AbortedTxn(4, 9, 11, 12))
    assert all(txn.version == 0 for txn in state.aborted)
    assert state.last_stable_offset == 12
