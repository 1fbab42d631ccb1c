"""Readers bounded by the high watermark while the writer truncates the log above it, as a follower does when it
cuts back the records its old leader never committed.

A reader bounded by the high watermark (``Log.records()``, in both isolations) or by the last stable offset
(``Log.read(isolation="txn_committed")``, ``Log.records(isolation="read_committed")``) never reads a byte past its
bound, so a truncation above the bound must neither fail the read nor change what it returns.  Each test makes the
truncation happen at one point of the read on purpose, from a hook on a call the reader makes there (run once, on
the reader's thread; the log's lock is re-entrant, as a follower's truncation on another thread would simply take
it), and checks the reader got what the log held below the bound when the read began.  A truncation below the high
watermark, which lowers the high watermark too, is not what these tests are about.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import transaction_index
from kafkalog.cleaner import compact
from kafkalog.config.log_config import LogConfig
from kafkalog.file_message_set import FileMessageSet
from kafkalog.log import Log
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords
from kafkalog.transaction_index import AbortedTxn, TransactionIndex, TxnIndexSearchResult
from tests.support.log_test_utils import LogFactory

#: The high watermark of the logs written here: offsets 0..4 are committed, 5..9 are not.
HIGH_WATERMARK = 5


def _ten_records_five_committed(create_log: LogFactory) -> Log:
    """Offsets 0..9, one record a batch, as a follower replicated them (epoch 0), with the high watermark at 5."""
    log = create_log()
    for offset in range(10):
        log.append_as_follower(MemoryRecords.with_records([(None, b"old %d" % offset, 1_000)], base_offset=offset,
                                                          partition_leader_epoch=0))
    log.update_high_watermark(HIGH_WATERMARK)
    return log


def _truncate_and_follow(log: Log) -> None:
    """A follower of a new leader (epoch 1): cut the uncommitted offsets, then append the leader's records for them,
    so the bytes past the high watermark are new ones where the old ones were."""
    log.truncate_to(HIGH_WATERMARK)
    for offset in range(HIGH_WATERMARK, 8):
        log.append_as_follower(MemoryRecords.with_records([(None, b"new %d" % offset, 1_000)], base_offset=offset,
                                                          partition_leader_epoch=1))


def _once_before(cls_or_module: Any, name: str, hook: Callable[[], None],
                 monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Run ``hook`` the first time ``name`` of ``cls_or_module`` is called, before the call; returns a list that
    gets ``True`` once the hook ran."""
    original = getattr(cls_or_module, name)
    ran: list[bool] = []

    def hooked(*args: Any, **kwargs: Any) -> Any:
        if not ran:
            ran.append(True)
            hook()
        return original(*args, **kwargs)

    monkeypatch.setattr(cls_or_module, name, hooked)
    return ran


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("window", [
    "scanned_chunks",  # between the slice of the segment being cut and its scan
    "_read_chunk",  # between the scan of the slice and the read of its bytes
])
def test_records_are_those_below_the_high_watermark_when_the_log_is_truncated_above_it(
        impl: ModuleType, create_log: LogFactory, monkeypatch: pytest.MonkeyPatch, isolation: str,
        window: str) -> None:
    log = _ten_records_five_committed(create_log)
    ran = _once_before(FileMessageSet, window, lambda: _truncate_and_follow(log), monkeypatch)
    records = [(r.offset, r.value) for r in log.records(isolation=isolation)]
    assert ran == [True]
    assert records == [(offset, b"old %d" % offset) for offset in range(HIGH_WATERMARK)]
    assert log.log_end_offset == 8
    monkeypatch.undo()
    log.update_high_watermark(8)
    assert [r.value for r in log.records(isolation=isolation)][HIGH_WATERMARK - 1:] == [b"old 4", b"new 5", b"new 6",
                                                                                          b"new 7"]


def test_records_end_before_a_batch_that_holds_the_high_watermark(impl: ModuleType, create_log: LogFactory) -> None:
    """A high watermark inside a batch: the batch is not read (a truncation to the high watermark removes it whole),
    as a fetch bounded by the high watermark reads up to its position (Kafka: ``LocalLog.read``'s ``maxPosition``);
    its records come once the high watermark is past it."""
    log = create_log()
    log.append(MemoryRecords.with_records([(None, b"%d" % i, 1_000) for i in range(3)]))
    log.append(MemoryRecords.with_records([(None, b"%d" % i, 1_000) for i in range(3, 6)]))
    log.update_high_watermark(4)
    assert [r.offset for r in log.records()] == [0, 1, 2]
    assert [r.offset for r in log.records(1, 3)] == [1, 2]
    fetched = log.read(0, 2**31 - 1, isolation="high_watermark").records
    assert [(batch.base_offset, batch.last_offset) for batch in fetched.batches()] == [(0, 2)]
    log.update_high_watermark(6)
    assert [r.offset for r in log.records()] == list(range(6))


def test_records_read_past_empty_segments_before_the_high_watermark(impl: ModuleType, create_log: LogFactory) -> None:
    """Segments emptied by the cleaner (a group whose every key was updated later keeps nothing) lie before the
    bound's segment: the read passes over them to the records after them, and stops only at the bound's segment."""
    log = create_log(LogConfig({"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0", "segment.bytes": "512"}))
    for i in range(40):
        log.append(MemoryRecords.with_records([(b"key-%d" % (i % 4), b"value-%d" % i, 1_000 + i)]))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    compact(log)
    assert any(segment.size() == 0 for segment in log.segments.values()[:-1])
    assert [(r.key, r.value) for r in log.records()] == [(b"key-%d" % k, b"value-%d" % (36 + k)) for k in range(4)]


# -- the transaction index ------------------------------------------------------------------------------------------


class _PreadHook:
    """The ``os`` module as :mod:`kafkalog.transaction_index` sees it, with ``hook`` run once before its first
    ``pread``: the point where a walk of the entries has taken its end and reads them."""

    def __init__(self, hook: Callable[[], None]) -> None:
        self._hook: Callable[[], None] | None = hook
        self.ran = False

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def pread(self, fd: int, size: int, position: int) -> bytes:
        hook, self._hook = self._hook, None
        if hook is not None:
            self.ran = True
            hook()
        return os.pread(fd, size, position)


ENTRIES = [AbortedTxn(i, 10 * i, 10 * i + 5, 10 * i + 6) for i in range(4)]
#: An entry a follower appends after cutting the index back to offset 20, where ``ENTRIES[2]`` was.
APPENDED = AbortedTxn(9, 21, 22, 23)


@pytest.mark.parametrize(("walk", "appended", "expected"), [
    ("all", False, ENTRIES[:2]),
    ("collect", False, TxnIndexSearchResult(ENTRIES[:2], False)),
    ("all", True, [*ENTRIES[:2], APPENDED]),
    ("collect", True, TxnIndexSearchResult([*ENTRIES[:2], APPENDED], False)),
])
def test_a_walk_of_the_index_reads_the_entries_a_truncation_meanwhile_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walk: str, appended: bool, expected: Any) -> None:
    """The walk has taken its end (four entries) when the index is cut back to offset 20 (two entries), and maybe an
    entry appended: it reads what the file holds up to that end, without an error."""
    with TransactionIndex(0, tmp_path / "00000000000000000000.txnindex") as index:
        for txn in ENTRIES:
            index.append(txn)

        def truncate() -> None:
            index.truncate_to(20)
            if appended:
                index.append(APPENDED)

        hook = _PreadHook(truncate)
        monkeypatch.setattr(transaction_index, "os", hook)
        found = index.all_aborted_txns() if walk == "all" else index.collect_aborted_txns(0, 100)
        assert hook.ran
        assert found == expected
        monkeypatch.undo()
        assert index.all_aborted_txns() == [*ENTRIES[:2], *([APPENDED] if appended else [])]


def _transactions_past_the_high_watermark(create_log: LogFactory) -> Log:
    """Offsets 0..5, as a follower replicated them (epoch 0): ``plain``, producer 7's record and ABORT marker,
    ``plain``, then (past the high watermark, 4) producer 8's record and ABORT marker.  Producer 8's abort is not
    below the high watermark, so its transaction holds the last stable offset at 4."""
    log = create_log()

    def append(records: MemoryRecords) -> None:
        log.append(records, assign_offsets=False)

    def data(value: bytes, producer_id: int | None = None) -> None:
        txn: dict[str, Any] = {} if producer_id is None else {
            "producer_id": producer_id, "producer_epoch": 0, "base_sequence": 0, "is_transactional": True}
        append(MemoryRecords.with_records([(None, value, 1_000)], base_offset=log.log_end_offset,
                                          partition_leader_epoch=0, **txn))

    def abort(producer_id: int) -> None:
        marker = EndTransactionMarker(ControlRecordType.ABORT, 0)
        append(MemoryRecords.with_end_transaction_marker(producer_id, 0, marker, base_offset=log.log_end_offset,
                                                         timestamp=1_000, partition_leader_epoch=0))

    data(b"plain")
    data(b"aborted", 7)
    abort(7)
    data(b"plain again")
    log.update_high_watermark(4)
    data(b"aborted past the high watermark", 8)
    abort(8)
    assert log.last_stable_offset == 4
    assert len(log.log_segments()[0].txn_index.all_aborted_txns()) == 2
    return log


ABORTED_BY_7 = AbortedTxn(producer_id=7, first_offset=1, last_offset=2, last_stable_offset=3)


def test_a_txn_committed_read_while_the_log_is_truncated_above_the_high_watermark(
        impl: ModuleType, create_log: LogFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The truncation cuts the ``.txnindex`` while the read collects the aborted transactions of what it read."""
    log = _transactions_past_the_high_watermark(create_log)
    hook = _PreadHook(lambda: log.truncate_to(4))
    monkeypatch.setattr(transaction_index, "os", hook)
    fetch = log.read(0, 2**31 - 1, isolation="txn_committed")
    assert hook.ran
    assert [batch.base_offset for batch in fetch.records.batches()] == [0, 1, 2, 3]
    assert fetch.aborted_transactions == [ABORTED_BY_7]
    assert log.log_end_offset == 4


def test_read_committed_records_while_the_log_is_truncated_above_the_high_watermark(
        impl: ModuleType, create_log: LogFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The truncation cuts the ``.txnindex`` while the reader collects the aborted transactions."""
    log = _transactions_past_the_high_watermark(create_log)
    hook = _PreadHook(lambda: log.truncate_to(4))
    monkeypatch.setattr(transaction_index, "os", hook)
    assert [(r.offset, r.value) for r in log.records(isolation="read_committed")] == [(0, b"plain"),
                                                                                     (3, b"plain again")]
    assert hook.ran
