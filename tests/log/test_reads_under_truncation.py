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

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from kafkalog.file_message_set import FileMessageSet
from kafkalog.log import Log
from kafkalog.record import MemoryRecords
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

