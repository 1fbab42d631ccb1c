"""A ``read_committed`` read of a broker's directory in place: where its aborted transactions and last stable offset
come from (issue 20).

Group ``read_committed 200k records in 100k batches``: a log of 200,000 records, 2 to a v2 batch (keys
``key-00000000``, 12 bytes; 20-byte values), appended by ``Log.append`` with ``segment.bytes`` 4 MiB, with 10
transactions of producer 5 (one batch each) aborted by the coordinator's marker along the way, then closed
(so it has producer snapshots, as a broker's directory has), and opened read-only as ``kafkalog`` and the
Spark planner open a broker's directory.  A copy without the ``.snapshot`` files stands for a directory whose
writer kept no producer state.

* ``txn/plan/index``: :meth:`TransactionState.read_in_place <kafkalog.log.transactions.TransactionState.read_in_place>`
  of the directory with snapshots: the ``.txnindex`` entries, the newest snapshot and the batches after it
  (none: it was taken at close).  What a read-only log reads once, at its first ``read_committed`` read (the
  Spark planner's, ``Log.records``'), before it reads a record.
* ``txn/plan/headers``: the same of the copy without snapshots: every batch header is scanned.
* ``txn/records/index`` and ``txn/records/headers``: what a user times, compiled core: open the directory
  read-only, then the whole ``Log.records(isolation="read_committed")``; the loop touches key, value, offset and
  timestamp of every record.

Every row checks what it found: the 10 aborted transactions, and the records a committed reader gets.  No
target: the ratios say what the index spares a reader.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.bench.test_bench_decode import _touch
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.log.transactions import TransactionState
from kafkalog.record import ControlRecordType, EndTransactionMarker
from kafkalog.scheduler import MockTime

GROUP = "read_committed 200k records in 100k batches"
BATCHES = 100_000
PER_BATCH = 2
ABORTS = 10
SEGMENT_BYTES = 4 << 20
BASE_TIMESTAMP = 1_700_000_000_000


@pytest.fixture(scope="module")
def broker_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Log, Log, int]]:
    """The log read in place with its snapshots, the copy without (both open read-only), and how many records a
    committed reader gets."""
    mock = MockTime()
    root = tmp_path_factory.mktemp("txn")
    directory = root / "with-snapshots" / "txn-0"
    log = Log(directory, LogConfig({"segment.bytes": SEGMENT_BYTES}), scheduler=mock.scheduler, time=mock)
    committed = 0
    for b in range(BATCHES):
        first = b * PER_BATCH
        log.append(MemoryRecords.with_records([(f"key-{i:08d}".encode(), b"v" * 20, BASE_TIMESTAMP + i)
                                               for i in range(first, first + PER_BATCH)]))
        committed += PER_BATCH
        if b % (BATCHES // ABORTS) == 0:
            sequence = b // (BATCHES // ABORTS)
            log.append(MemoryRecords.with_records([(b"t", b"aborted", BASE_TIMESTAMP)], producer_id=5,
                                                  producer_epoch=0, base_sequence=sequence,
                                                  is_transactional=True))
            marker = EndTransactionMarker(ControlRecordType.ABORT, 0)
            log.append(MemoryRecords.with_end_transaction_marker(5, 0, marker, timestamp=BASE_TIMESTAMP),
                       origin="coordinator")
    assert log.number_of_segments >= 2
    log.close()
    copy = root / "without-snapshots" / "txn-0"
    shutil.copytree(directory, copy)
    for snapshot in copy.glob("*.snapshot"):
        snapshot.unlink()
    assert list(directory.glob("*.snapshot")) and list(directory.glob("*.txnindex"))
    with_snapshots, without = Log(directory, read_only=True), Log(copy, read_only=True)
    try:
        yield with_snapshots, without, committed
    finally:
        with_snapshots.close()
        without.close()


@pytest.mark.parametrize("source", ["index", "headers"])
def test_read_committed_plan(benchmark: Any, compiled: ModuleType, broker_dirs: tuple[Log, Log, int],
                             throughput: Callable[..., None], source: str) -> None:
    with_snapshots, without, _committed = broker_dirs
    log = with_snapshots if source == "index" else without
    benchmark.group = GROUP
    state = benchmark(TransactionState.read_in_place, log)
    assert len(state.aborted) == ABORTS and state.last_stable_offset == log.log_end_offset
    throughput(benchmark, f"txn/plan/{source}")


@pytest.mark.parametrize("source", ["index", "headers"])
def test_read_committed_records(benchmark: Any, compiled: ModuleType, broker_dirs: tuple[Log, Log, int],
                                throughput: Callable[..., None], source: str) -> None:
    with_snapshots, without, committed = broker_dirs
    log = with_snapshots if source == "index" else without
    benchmark.group = GROUP

    def open_and_read() -> int:
        with Log(log.dir, read_only=True) as reader:
            return _touch(reader.records(isolation="read_committed"), 0, ())[0]

    n = benchmark(open_and_read)
    assert n == committed
    throughput(benchmark, f"txn/records/{source}", records=committed)
