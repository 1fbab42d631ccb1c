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

ABORTED = [AbortedTxn(0, 0, 0, 10, 11), AbortedTxn(0, 1, 5, 15, 13), AbortedTxn(0, 2, 18, 35, 25),
           AbortedTxn(0, 3, 32, 50, 40)]


def test_entry_layout() -> None:
    """version int16, producer id, first offset, last offset, last stable offset as int64: 34 bytes."""
    assert ABORTED_TXN_SIZE == 34
    assert _ENTRY.pack(*ABORTED[1]).hex() == (
        "0000" "0000000000000001" "0000000000000005" "000000000000000f" "000000000000000d")


def test_read_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(b"".join(_ENTRY.pack(*txn) for txn in ABORTED))
    assert read_aborted_txns(path) == ABORTED
    (tmp_path / "empty.txnindex").write_bytes(b"")
    assert read_aborted_txns(tmp_path / "empty.txnindex") == []


def test_a_part_entry_at_the_end_is_not_read(tmp_path: Path) -> None:
    """A write cut short leaves part of an entry: Kafka's iterator stops before it, and so does the reader."""
    path = tmp_path / "00000000000000000000.txnindex"
    whole = b"".join(_ENTRY.pack(*txn) for txn in ABORTED[:2])
    for cut in (1, ABORTED_TXN_SIZE - 1):
        path.write_bytes(whole + _ENTRY.pack(*ABORTED[2])[:cut])
        assert read_aborted_txns(path) == ABORTED[:2]


def test_an_unknown_version_is_refused(tmp_path: Path) -> None:
    """Kafka: ``Unexpected aborted transaction version``, naming the file."""
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(_ENTRY.pack(*ABORTED[0]) + _ENTRY.pack(1, 1, 5, 15, 13))
    with pytest.raises(TransactionIndexError, match=r"Unexpected aborted transaction version 1 in transaction "
                                                    r"index .*00000000000000000000\.txnindex, current version is 0"):
        read_aborted_txns(path)
