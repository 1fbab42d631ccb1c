"""Cleaning a compacted log beside Kafka's own Cleaner on the JVM: the same log, the same Cleaner (issue 32).

Group ``clean a 256 MiB keyed log with tombstones and transactions``:

* **the log** (a module fixture, :func:`write_txn_log`): 17,600 uncompressed v2 batches of 16 records (281,600
  records; 16-byte keys drawn from 140,800, so a key is written about twice and the cleaner drops about half the
  records; 1 KiB values, one record in ten a tombstone), written by kafkalog's leader appends (``Log.append``,
  leader epoch 0) to a ``cleanup.policy=compact`` log of 64 MiB segments.  About three batches in ten are
  transactional, from 32 producers (``producer_epoch`` 0, sequences counted per producer), up to 8 transactions
  open at once, interleaved with each other and with the plain batches; each transaction of 1 to 4 batches is
  ended by a COMMIT marker or, one in four, an ABORT marker (``MemoryRecords.with_end_transaction_marker``),
  appended with the coordinator origin: 2,158 markers.  The log is rolled, so every record is in a non-active
  segment, and closed cleanly (a producer snapshot at its end): 268,032,366 bytes (255.6 MiB) in 4 dirty
  segments, log end offset 283,758.
* **kafkalog** (``test_clean_kafkalog``): ``Cleaner.clean(LogToClean(tp, log, 0, active segment base))`` with the
  Cleaner ``test_bench_cleaner`` builds (:func:`~kafkalog.bench.test_bench_cleaner._new_cleaner`: the default
  ``CleanerConfig`` of a one-thread ``CleanerThread``, a 128 MiB MD5 ``SkimpyOffsetMap``, 256 KiB buffers growing
  to ``message.max.bytes``, load factor 0.9, unthrottled), reused across rounds; each round cleans a fresh copy of
  the saved dir, copied and opened before the clock starts (``test_bench_cleaner``'s ``_CleanRounds``).  Compiled
  core.
* **Kafka** (``test_clean_kafka``, ``CleanBench.java``): Kafka 4.4.0's
  ``org.apache.kafka.storage.internals.log.Cleaner.clean(LogToClean)``, the Cleaner built as
  ``LogCleaner.CleanerThread`` builds it from the same defaults (``Throttler`` unbounded, ``Time.SYSTEM``); each
  round copies the dir in Java, opens it with ``UnifiedLog.create`` (clean shutdown), times ``clean(new
  LogToClean(log, 0, activeSegmentBaseOffset, false))`` alone, then closes and deletes the copy.  Warmed up by
  :data:`CLEAN_WARMUP` untimed rounds (a round is seconds long).

The check: both sides report the end offset ``clean`` returns, its ``CleanerStats`` (messages and bytes read and
written, the map's messages, invalid messages), the cleaned log's size, segment count and log end offset, and
what its cleaned segments hold (batches, records, control batches, tombstones kept, the sum of the kept records'
offsets); all must be equal.  The cleaned bytes themselves are not compared: a first cleaning stamps a delete
horizon (the cleaner's clock plus ``delete.retention.ms``) into the base timestamp, and so the CRC, of every batch
that keeps a tombstone or a marker, and the two clocks differ.  kafkalog's cleaned log is also read back: it keeps
exactly the last record of each key outside aborted transactions (tombstones included: a first cleaning keeps
them until their horizon) and every marker.

MB/s is the dirty bytes read over the round's time.  The module needs about 1 GiB of disk (the saved log, one
round's copy and its cleaned segments on each side) and skips with less than 2 GiB free.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog import ControlRecordType, EndTransactionMarker, MemoryRecords
from kafkalog.bench.kafka_jvm import JVM_CLOCK, KafkaJvm, replay
from kafkalog.bench.test_bench_cleaner import (  # noqa: F401 (clean_rounds: a fixture)
    DirtyLog,
    _CleanRounds,
    _key,
    _need_disk,
    _new_cleaner,
    _new_log,
    clean_rounds,
)
from kafkalog.cleaner.manager import LogToClean
from kafkalog.cleaner.stats import CleanerStats
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log

CLEAN_GROUP = "clean a 256 MiB keyed log with tombstones and transactions"
BATCHES = 17_600
KEYS = 140_800
SEGMENT_BYTES = 64 << 20
CLEAN_ROUNDS = 3
#: Kafka's untimed rounds: a round reads 262 MiB, so two warm its JIT through.
CLEAN_WARMUP = 2
RECORDS_PER_BATCH = 16
VALUE_BYTES = 1024
VALUE_POOL = 61
TOMBSTONE_SHARE = 0.1
TXN_SHARE = 0.3
ABORT_SHARE = 0.25
PRODUCERS = 32
FIRST_PRODUCER_ID = 1000
MAX_OPEN_TXNS = 8
MAX_TXN_BATCHES = 4
TOPIC = "txn-compacted"


@dataclass
class _Txn:
    """An open transaction: batches still to write, whether it ends in an ABORT, and its records' (key, offset)."""

    remaining: int
    abort: bool
    written: list[tuple[bytes, int]] = field(default_factory=list)


@dataclass
class TxnLog:
    """The saved log (closed cleanly; the cleaning rounds copy it) and what a first cleaning must keep of it."""

    dirty: DirtyLog  # ``records`` is its log end offset (data records and markers); ``keep`` every kept offset
    data_records: int
    tombstones: int
    commits: int
    aborts: int
    #: The check a kafkalog cleaning gave (:func:`kafkalog_check`), once one ran: what Kafka's must equal.
    answer: dict[str, int] | None = None

    @property
    def dir(self) -> Path:
        return self.dirty.saved


def write_txn_log(directory: Path, *, batches: int, keys: int, segment_bytes: int, seed: int) -> TxnLog:
    """Write the log (see the module docstring) with kafkalog's leader appends, roll, close it; what a first
    cleaning keeps: each key's record of the highest offset outside aborted transactions, and every marker."""
    rng = random.Random(seed)
    values = [rng.randbytes(VALUE_BYTES) for _ in range(VALUE_POOL)]
    config = LogConfig({"cleanup.policy": "compact", "segment.bytes": segment_bytes})
    started = time.perf_counter()
    log = _new_log(directory, config)
    now = log.time.milliseconds()  # the producers stay active (not expired) for the cleaning on either side
    latest: dict[bytes, int] = {}
    markers: list[int] = []
    open_txns: dict[int, _Txn] = {}
    sequences = dict.fromkeys(range(FIRST_PRODUCER_ID, FIRST_PRODUCER_ID + PRODUCERS), 0)
    tombstones = commits = aborts = 0

    def keep(pairs: list[tuple[bytes, int]]) -> None:
        for key, offset in pairs:
            latest[key] = max(latest.get(key, -1), offset)

    def end(producer_id: int) -> None:
        nonlocal commits, aborts
        txn = open_txns.pop(producer_id)
        kind = ControlRecordType.ABORT if txn.abort else ControlRecordType.COMMIT
        marker = MemoryRecords.with_end_transaction_marker(producer_id, 0, EndTransactionMarker(kind, 0),
                                                           timestamp=now, partition_leader_epoch=0)
        offset = log.append(marker, leader_epoch=0, origin="coordinator").first_offset
        assert offset is not None
        markers.append(offset)
        if txn.abort:
            aborts += 1
        else:
            commits += 1
            keep(txn.written)

    try:
        for _ in range(batches):
            rows: list[tuple[bytes, bytes | None, int]] = []
            for _ in range(RECORDS_PER_BATCH):
                value = None if rng.random() < TOMBSTONE_SHARE else values[rng.randrange(VALUE_POOL)]
                tombstones += value is None
                rows.append((_key(rng.randrange(keys)), value, now))
            txn = None
            if rng.random() < TXN_SHARE:
                if open_txns and (len(open_txns) >= MAX_OPEN_TXNS or rng.random() < 0.6):
                    producer_id = rng.choice(sorted(open_txns))
                else:
                    producer_id = rng.choice([p for p in sequences if p not in open_txns])
                    open_txns[producer_id] = _Txn(rng.randint(1, MAX_TXN_BATCHES), rng.random() < ABORT_SHARE)
                txn = open_txns[producer_id]
                records = MemoryRecords.with_records(rows, producer_id=producer_id, producer_epoch=0,
                                                     base_sequence=sequences[producer_id], is_transactional=True)
                sequences[producer_id] += len(rows)
            else:
                records = MemoryRecords.with_records(rows)
            first = log.append(records, leader_epoch=0).first_offset
            assert first is not None
            pairs = [(row[0], first + i) for i, row in enumerate(rows)]
            if txn is None:
                keep(pairs)
            else:
                txn.written.extend(pairs)
                txn.remaining -= 1
                if txn.remaining == 0:
                    end(producer_id)
        for producer_id in sorted(open_txns):
            end(producer_id)
        log.roll()
        end_offset = log.log_end_offset
        assert (log.active_segment.base_offset, log.active_segment.size()) == (end_offset, 0)
        assert log.first_unstable_offset is None  # every transaction ended
        dirty_bytes = log.size
    finally:
        log.close()
    dirty_files = sorted(p for p in directory.glob("*.log") if p.stat().st_size > 0)
    kept = np.array(sorted([*latest.values(), *markers]), dtype=np.int64)
    dirty = DirtyLog(directory, config, end_offset, dirty_bytes, dirty_files, kept, time.perf_counter() - started)
    return TxnLog(dirty, batches * RECORDS_PER_BATCH, tombstones, commits, aborts)


def kafkalog_check(log: Log, end_offset: int, stats: CleanerStats) -> dict[str, int]:
    """What ``CleanBench`` reports of Kafka's cleaning, of kafkalog's: the statistics, the cleaned log's size,
    segments and log end offset, and what its cleaned segments hold."""
    batches = records = control_batches = tombstones = offset_sum = 0
    for segment in log.log_segments(0, end_offset):
        for batch in segment.log.batches():
            batches += 1
            control_batches += batch.is_control
            for record in batch:
                records += 1
                offset_sum += record.offset
                tombstones += not batch.is_control and record.key is not None and record.value is None
    return {"end_offset": end_offset, "messages_read": stats.messages_read, "bytes_read": stats.bytes_read,
            "messages_written": stats.messages_written, "bytes_written": stats.bytes_written,
            "map_messages_read": stats.map_messages_read, "invalid_messages_read": stats.invalid_messages_read,
            "size": log.size, "segments": log.number_of_segments, "log_end_offset": log.log_end_offset,
            "batches": batches, "records": records, "control_batches": control_batches, "tombstones": tombstones,
            "offset_sum": offset_sum}


def check_kept(log: Log, txn_log: TxnLog, end_offset: int) -> None:
    """The cleaned segments hold exactly the offsets a first cleaning keeps, each batch still valid."""
    kept: list[int] = []
    for segment in log.log_segments(0, end_offset):
        for batch in segment.log.batches():
            assert batch.is_valid()
            kept.extend(record.offset for record in batch)
    assert kept == txn_log.dirty.keep.tolist()


def clean_once(txn_log: TxnLog, root: Path) -> dict[str, int]:
    """One kafkalog cleaning of a copy of the log under ``root``, untimed: its :func:`kafkalog_check`, the kept
    records checked first."""
    rounds = _CleanRounds(root, txn_log.dirty)
    try:
        end_offset, stats = _new_cleaner().clean(rounds.next())
        assert rounds.log is not None
        check_kept(rounds.log, txn_log, end_offset)
        return kafkalog_check(rounds.log, end_offset, stats)
    finally:
        rounds.release()


@pytest.fixture(scope="module")
def txn_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TxnLog]:
    root = tmp_path_factory.mktemp("kafka-clean")
    try:
        _need_disk(root, 2 << 30)
        yield write_txn_log(root / f"{TOPIC}-0", batches=BATCHES, keys=KEYS, segment_bytes=SEGMENT_BYTES,
                            seed=0x7C1EA)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_clean_kafkalog(benchmark: Any, compiled: ModuleType, txn_log: TxnLog,
                        clean_rounds: Callable[[DirtyLog], _CleanRounds],  # noqa: F811
                        throughput: Callable[..., None]) -> None:
    """``Cleaner.clean`` of a fresh copy each round; the last round's cleaned log read back."""
    benchmark.group = CLEAN_GROUP
    rounds = clean_rounds(txn_log.dirty)
    cleaner = _new_cleaner()

    def setup() -> tuple[tuple[LogToClean], dict[str, Any]]:
        return (rounds.next(),), {}

    end_offset, stats = benchmark.pedantic(cleaner.clean, setup=setup, rounds=CLEAN_ROUNDS, warmup_rounds=1)
    assert rounds.log is not None
    check_kept(rounds.log, txn_log, end_offset)
    txn_log.answer = kafkalog_check(rounds.log, end_offset, stats)
    assert txn_log.answer["bytes_read"] == txn_log.dirty.dirty_bytes
    benchmark.extra_info.update(dirty_bytes=txn_log.dirty.dirty_bytes, records=txn_log.dirty.records,
                                build_s=round(txn_log.dirty.build_s, 2),
                                copytree_s_per_round=[round(s, 3) for s in rounds.copy_s])
    throughput(benchmark, "kafka-clean/cython", nbytes=txn_log.dirty.dirty_bytes)


@pytest.mark.benchmark(timer=JVM_CLOCK)
def test_clean_kafka(benchmark: Any, kafka: KafkaJvm, txn_log: TxnLog, tmp_path: Path,
                     throughput: Callable[..., None]) -> None:
    """Kafka's ``Cleaner.clean`` of a fresh copy each round, made in Java; its answer equal to kafkalog's."""
    result = kafka.run("clean", txn_log.dir, SEGMENT_BYTES, tmp_path / "work", CLEAN_WARMUP, CLEAN_ROUNDS)
    expected = txn_log.answer if txn_log.answer is not None else clean_once(txn_log, tmp_path / "kafkalog")
    assert result["check"] == expected
    benchmark.group = CLEAN_GROUP
    replay(benchmark, result["rounds_s"], CLEAN_WARMUP)
    throughput(benchmark, "kafka/clean", nbytes=txn_log.dirty.dirty_bytes)
