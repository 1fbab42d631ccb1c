"""Transaction index files (kafkalog.transaction_index): Kafka 3.8.0 ``TransactionIndexTest`` (core) whole, the
read-only reader of broker files, and what the port adds: the lazily created file, reopening, bad input, the
channel position after a truncation, and the golden folder.

``TransactionIndexTest`` makes its file with ``TestUtils.tempFile()`` (an existing, empty file, so the index
opens it at once); the ``index`` fixture does the same.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalog.errors import CorruptIndexError, IllegalArgumentError, KafkaStorageError, ReadOnlyError
from kafkalog.transaction_index import (
    ABORTED_TXN_SIZE,
    ABORTED_TXN_VERSION,
    AbortedTxn,
    TransactionIndex,
    TransactionIndexError,
    TxnIndexSearchResult,
    read_aborted_txns,
)
from tests.support.golden_data import DANIELOWO, DATA_DIRS, KSQL, LOG_FILES

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
    from kafkalog.log.transactions import ProducerBatch, TransactionState
    from kafkalog.record import ControlRecordType

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


# -- Kafka's TransactionIndexTest ---------------------------------------------------------------------------


@pytest.fixture
def file(tmp_path: Path) -> Path:
    """Kafka: ``TestUtils.tempFile()``, an empty file that exists."""
    path = tmp_path / "kafka.txnindex"
    path.write_bytes(b"")
    return path


@pytest.fixture
def index(file: Path) -> Iterator[TransactionIndex]:
    idx = TransactionIndex(0, file)
    yield idx
    idx.close()


def test_position_set_correctly_when_opened(index: TransactionIndex, file: Path) -> None:
    for txn in ABORTED:
        index.append(txn)
    index.close()
    with TransactionIndex(0, file) as reopened:
        another = AbortedTxn(3, 50, 60, 55)
        reopened.append(another)
        assert reopened.all_aborted_txns() == [*ABORTED, another]


def test_sanity_check(index: TransactionIndex, file: Path) -> None:
    for txn in ABORTED:
        index.append(txn)
    index.close()
    # Opened with another start offset, the entries are below it: invalid data.
    with TransactionIndex(100, file) as reopened, pytest.raises(CorruptIndexError, match=(
            r"Last offset of aborted transaction AbortedTxn\(version=0, producerId=0, firstOffset=0, "
            r"lastOffset=10, lastStableOffset=11\) in index .*kafka\.txnindex is less than start offset 100")):
        reopened.sanity_check()
    with TransactionIndex(10, file) as at_first_last_offset:
        at_first_last_offset.sanity_check()


def test_last_offset_must_increase(index: TransactionIndex) -> None:
    index.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(IllegalArgumentError, match=(
            r"The last offset of appended transactions must increase sequentially, but 15 is not greater than "
            r"current last offset 15 of index .*kafka\.txnindex")):
        index.append(AbortedTxn(0, 0, 15, 11))


def test_last_offset_cannot_decrease(index: TransactionIndex) -> None:
    index.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(IllegalArgumentError, match="10 is not greater than current last offset 15"):
        index.append(AbortedTxn(0, 0, 10, 11))
    assert index.all_aborted_txns() == [AbortedTxn(1, 5, 15, 13)]


def test_collect_aborted_transactions(index: TransactionIndex) -> None:
    for txn in ABORTED:
        index.append(txn)
    assert index.collect_aborted_txns(0, 100) == TxnIndexSearchResult(ABORTED, False)
    assert index.collect_aborted_txns(0, 32) == TxnIndexSearchResult(ABORTED[:3], True)
    assert index.collect_aborted_txns(0, 35) == TxnIndexSearchResult(ABORTED, True)
    assert index.collect_aborted_txns(10, 35) == TxnIndexSearchResult(ABORTED, True)
    assert index.collect_aborted_txns(11, 35) == TxnIndexSearchResult(ABORTED[1:4], True)
    result = index.collect_aborted_txns(20, 41)
    assert result.aborted_transactions == ABORTED[2:4]
    assert not result.is_complete


def test_truncate(index: TransactionIndex) -> None:
    aborted = [AbortedTxn(0, 0, 10, 2), AbortedTxn(1, 5, 15, 16), AbortedTxn(2, 18, 35, 25),
               AbortedTxn(3, 32, 50, 40)]
    for txn in aborted:
        index.append(txn)
    index.truncate_to(51)
    assert index.collect_aborted_txns(0, 100).aborted_transactions == aborted
    index.truncate_to(50)
    assert index.collect_aborted_txns(0, 100).aborted_transactions == aborted[:3]
    index.reset()
    assert index.collect_aborted_txns(0, 100).aborted_transactions == []


def test_aborted_txn_serde() -> None:
    pid, first_offset, last_offset, last_stable_offset = 983493, 137, 299, 200
    txn = AbortedTxn(pid, first_offset, last_offset, last_stable_offset)
    assert txn.version == ABORTED_TXN_VERSION == 0
    assert txn.producer_id == pid
    assert txn.first_offset == first_offset
    assert txn.last_offset == last_offset
    assert txn.last_stable_offset == last_stable_offset
    # and through its bytes
    assert AbortedTxn.from_bytes(txn.to_bytes()) == txn
    assert txn.to_bytes() == _pack(txn)


def test_rename_index(index: TransactionIndex, tmp_path: Path, file: Path) -> None:
    renamed = tmp_path / "renamed.txnindex"
    renamed.write_bytes(b"")  # Kafka: TestUtils.tempFile(), replaced by the move
    index.append(AbortedTxn(0, 0, 10, 2))
    index.rename_to(renamed)
    index.append(AbortedTxn(1, 5, 15, 16))
    aborted = index.collect_aborted_txns(0, 100).aborted_transactions
    assert len(aborted) == 2
    assert aborted[0].first_offset == 0
    assert aborted[1].first_offset == 5
    # The open file moved with its name: both entries are in the renamed file, none is left behind.
    assert index.file == renamed and not file.exists()
    assert read_aborted_txns(renamed) == [AbortedTxn(0, 0, 10, 2), AbortedTxn(1, 5, 15, 16)]


def test_update_parent_dir(index: TransactionIndex, tmp_path: Path) -> None:
    parent = tmp_path / "other" / "parent"
    parent.mkdir(parents=True)
    assert index.file.parent != parent
    index.update_parent_dir(parent)
    assert index.file.parent == parent
    assert index.file.name == "kafka.txnindex"


# -- beyond Kafka's tests -----------------------------------------------------------------------------------


def test_the_file_is_created_by_the_first_append(tmp_path: Path) -> None:
    """Kafka creates the file lazily: an index that never saw an abort leaves no file behind."""
    path = tmp_path / "00000000000000000100.txnindex"
    index = TransactionIndex(100, path)
    assert index.all_aborted_txns() == [] and index.is_empty()
    index.flush()
    index.reset()
    index.truncate_to(0)
    index.sanity_check()
    assert index.collect_aborted_txns(0, 1000) == TxnIndexSearchResult([], False)
    index.close()
    assert not path.exists()
    assert index.delete_if_exists() is False
    index.append(AbortedTxn(7, 100, 120, 121))
    assert path.read_bytes() == _pack(AbortedTxn(7, 100, 120, 121))
    assert not index.is_empty()
    index.flush()
    assert index.delete_if_exists() is True and not path.exists()
    # A deleted (closed) index reads as empty; an append would make the file again, as Kafka's does.
    assert index.all_aborted_txns() == []


def test_bytes_are_the_entries_in_append_order(index: TransactionIndex, file: Path) -> None:
    for txn in ABORTED:
        index.append(txn)
    index.flush()
    assert file.read_bytes() == b"".join(_pack(txn) for txn in ABORTED)
    assert file.stat().st_size == 4 * ABORTED_TXN_SIZE


def test_the_last_offset_is_not_read_back_on_reopen(index: TransactionIndex, file: Path) -> None:
    """Kafka keeps ``lastOffset`` in memory: a reopened index takes any last offset for its first append."""
    index.append(AbortedTxn(1, 5, 15, 13))
    index.close()
    with TransactionIndex(0, file) as reopened:
        reopened.append(AbortedTxn(2, 0, 3, 4))
        assert reopened.all_aborted_txns() == [AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 0, 3, 4)]
        with pytest.raises(IllegalArgumentError):
            reopened.append(AbortedTxn(2, 0, 3, 4))


def test_a_closed_index_reads_empty_and_reopens_on_append(index: TransactionIndex, file: Path) -> None:
    index.append(AbortedTxn(1, 5, 15, 13))
    index.close()
    index.close()
    assert index.all_aborted_txns() == [] and index.is_empty()
    # lastOffset survives close, as in Kafka
    with pytest.raises(IllegalArgumentError):
        index.append(AbortedTxn(2, 0, 15, 16))
    index.append(AbortedTxn(2, 16, 20, 21))
    assert index.all_aborted_txns() == [AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 16, 20, 21)]


def test_truncate_moves_the_write_position_and_the_last_offset(index: TransactionIndex, file: Path) -> None:
    """``FileChannel.truncate`` pulls the position back: the next append lands where the cut was, and the last
    offset is that of the last entry kept."""
    for txn in ABORTED:
        index.append(txn)
    index.truncate_to(35)
    assert file.stat().st_size == 2 * ABORTED_TXN_SIZE
    with pytest.raises(IllegalArgumentError, match="15 is not greater than current last offset 15"):
        index.append(AbortedTxn(9, 12, 15, 16))
    index.append(AbortedTxn(9, 12, 16, 17))
    assert read_aborted_txns(file) == [*ABORTED[:2], AbortedTxn(9, 12, 16, 17)]
    index.truncate_to(0)
    assert file.stat().st_size == 0 and index.is_empty()
    index.append(AbortedTxn(9, 0, 1, 2))  # no last offset any more
    index.reset()
    index.append(AbortedTxn(9, 0, 1, 2))
    assert file.read_bytes() == _pack(AbortedTxn(9, 0, 1, 2))


def test_truncate_to_past_every_entry_keeps_them(index: TransactionIndex) -> None:
    for txn in ABORTED:
        index.append(txn)
    index.truncate_to(1000)
    assert index.all_aborted_txns() == ABORTED
    with pytest.raises(IllegalArgumentError):
        index.append(AbortedTxn(4, 40, 50, 51))


def test_a_part_entry_is_skipped_and_appended_after(file: Path) -> None:
    """A cut write leaves part of an entry: reading stops before it, an append goes after it (the channel is
    positioned at the end of the file), so the new entry cannot be read back, as in Kafka."""
    file.write_bytes(_pack(ABORTED[0]) + _pack(ABORTED[1])[:10])
    with TransactionIndex(0, file) as index:
        assert index.all_aborted_txns() == [ABORTED[0]]
        index.append(ABORTED[2])
        assert index.all_aborted_txns() == [ABORTED[0], AbortedTxn.from_bytes(
            _pack(ABORTED[1])[:10] + _pack(ABORTED[2])[:24])]
        assert file.stat().st_size == 2 * ABORTED_TXN_SIZE + 10
        index.truncate_to(10)
        assert file.read_bytes() == b""


def test_unknown_version_in_an_open_index(file: Path) -> None:
    file.write_bytes(_pack(ABORTED[0]) + _ENTRY.pack(1, 1, 5, 15, 13))
    with TransactionIndex(0, file) as index:
        assert not index.is_empty()  # the first entry is valid, and is_empty reads no further
        with pytest.raises(TransactionIndexError, match="Unexpected aborted transaction version 1"):
            index.all_aborted_txns()
        with pytest.raises(TransactionIndexError, match="Unexpected aborted transaction version 1"):
            index.sanity_check()
        with pytest.raises(TransactionIndexError):
            index.collect_aborted_txns(0, 100)
        with pytest.raises(TransactionIndexError):
            index.truncate_to(100)


@pytest.mark.parametrize("txn", [
    AbortedTxn(1 << 63, 0, 1, 2), AbortedTxn(0, -(1 << 63) - 1, 1, 2), AbortedTxn(0, 0, 1 << 64, 2),
    AbortedTxn(0, 0, 1, 2, 1), AbortedTxn(0, 0, 1, "2"),  # type: ignore[arg-type]
])
def test_bad_entries_are_refused_and_write_nothing(index: TransactionIndex, file: Path, txn: AbortedTxn) -> None:
    with pytest.raises(IllegalArgumentError):
        index.append(txn)
    assert file.read_bytes() == b""
    index.append(AbortedTxn(0, 0, 1, 2))  # the refused entry set no last offset
    with pytest.raises(IllegalArgumentError, match="Not an AbortedTxn"):
        index.append((0, 0, 5, 6))  # type: ignore[arg-type]


def test_extreme_values_round_trip(index: TransactionIndex) -> None:
    txn = AbortedTxn((1 << 63) - 1, -(1 << 63), (1 << 63) - 1, -1)
    index.append(txn)
    assert index.all_aborted_txns() == [txn]


def test_many_entries_are_read_across_chunks(index: TransactionIndex, file: Path) -> None:
    entries = [AbortedTxn(i, 2 * i, 2 * i + 1, 2 * i + 2) for i in range(2500)]
    for txn in entries:
        index.append(txn)
    assert index.all_aborted_txns() == entries
    assert index.collect_aborted_txns(4000, 4010) == TxnIndexSearchResult(entries[2000:2005], True)
    index.truncate_to(2 * 2048 + 1)
    assert index.all_aborted_txns() == entries[:2048]
    assert read_aborted_txns(file) == entries[:2048]


def test_rename_of_a_file_never_created(tmp_path: Path) -> None:
    index = TransactionIndex(0, tmp_path / "a.txnindex")
    index.rename_to(tmp_path / "b.txnindex")
    assert index.file == tmp_path / "b.txnindex"
    index.append(AbortedTxn(0, 0, 1, 2))
    assert read_aborted_txns(tmp_path / "b.txnindex") == [AbortedTxn(0, 0, 1, 2)]
    assert not (tmp_path / "a.txnindex").exists()
    index.close()


def test_rename_failure_keeps_the_new_name(index: TransactionIndex, tmp_path: Path) -> None:
    index.append(AbortedTxn(0, 0, 1, 2))
    target = tmp_path / "missing-dir" / "x.txnindex"
    with pytest.raises(KafkaStorageError, match="Renaming the transaction index"):
        index.rename_to(target)
    assert index.file == target


def test_update_parent_dir_then_delete(tmp_path: Path) -> None:
    """After the partition directory is renamed, the index follows it by name (as a log's delete does)."""
    old = tmp_path / "t-0"
    old.mkdir()
    index = TransactionIndex(0, old / "00000000000000000000.txnindex")
    index.append(AbortedTxn(0, 0, 1, 2))
    new = tmp_path / "t-0.abc-delete"
    os.rename(old, new)
    index.update_parent_dir(new)
    assert index.delete_if_exists() is True
    assert list(new.iterdir()) == []


def test_not_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    path.mkdir()
    with pytest.raises(KafkaStorageError):
        TransactionIndex(0, path)


def test_read_only_index_never_changes_the_file(tmp_path: Path) -> None:
    """``writable=False``: a broker's file is read, never created, written, cut, renamed or deleted."""
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(b"".join(_pack(txn) for txn in ABORTED) + b"\x00\x01")
    os.chmod(path, 0o444)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    with TransactionIndex(0, path, writable=False) as index:
        assert index.all_aborted_txns() == ABORTED and not index.is_empty()
        assert index.collect_aborted_txns(11, 35) == TxnIndexSearchResult(ABORTED[1:4], True)
        index.sanity_check()
        index.flush()
        for call, what in ((lambda: index.append(AbortedTxn(9, 60, 70, 71)), "append to"),
                           (index.reset, "reset"), (lambda: index.truncate_to(0), "truncate"),
                           (lambda: index.rename_to(tmp_path / "x.txnindex"), "rename"),
                           (index.delete_if_exists, "delete")):
            with pytest.raises(ReadOnlyError, match=f"Cannot {what} transaction index .*opened read-only"):
                call()
        assert index.file == path
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    missing = TransactionIndex(0, tmp_path / "00000000000000000100.txnindex", writable=False)
    assert missing.is_empty() and missing.all_aborted_txns() == []
    missing.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


# -- golden data ---------------------------------------------------------------------------------------------


def test_golden_partitions_have_no_txnindex_and_no_abort(golden: Path, tmp_path: Path) -> None:
    """The brokers behind the golden folder wrote no ``.txnindex``: they create one only when an ABORT marker
    lands in a segment, and their logs hold COMMIT markers only (DETAILS.md).  The writer, fed what the log
    implies, agrees byte for byte: it leaves no file either.  On a copy of the transactional partition (the
    ksqlDB command topic) the aborted transactions read from the batches are none, so nothing is appended and
    no file appears."""
    assert sorted(golden.rglob("*.txnindex")) == []
    controls = [t for f in LOG_FILES for t in f.get("control_types", ())]
    assert "COMMIT" in controls and "ABORT" not in controls
    from kafkalog.log import Log
    from kafkalog.log.transactions import TransactionState

    source = golden / DANIELOWO / f"{KSQL}_command_topic-0"
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    with Log(copy, read_only=True) as log:
        state = TransactionState.of(log)
        assert state.aborted == () and state.last_stable_offset == log.log_end_offset == 8
        for segment in log.log_segments():
            index = TransactionIndex(segment.base_offset, copy / f"{segment.base_offset:020d}.txnindex")
            for txn in state.between(segment.base_offset, log.log_end_offset).aborted:
                index.append(txn)
            index.flush()
            index.close()
            assert not index.file.exists()
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in source.iterdir())
    assert len(DATA_DIRS) == 13
