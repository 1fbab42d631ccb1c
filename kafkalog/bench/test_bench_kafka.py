"""kafkalog beside Kafka's own log layer on the JVM: the same work on the same data, in the same run (issue 32).

Kafka's side of each row runs in its own JVM (:mod:`kafkalog.bench.kafka_jvm`: Kafka 4's jars, a broker's JVM
options, the work run :data:`~kafkalog.bench.kafka_jvm.WARMUP_ROUNDS` times untimed, then timed in the JVM with
``System.nanoTime`` around the work alone); kafkalog's side is a pytest-benchmark row of the compiled core.  Each
ratio is Kafka's time over kafkalog's (above 1: kafkalog is faster), goal 1.0.  Without a JDK 17+ or Kafka's jars
(``make oracle-jars``) the Kafka rows are skipped with the reason.

* **leader append** (group ``log append 200k records + fsync``): the 200 batches of 1,000 records of
  ``test_bench_log`` (none, lz4, zstd), as producers sent them, each appended to a fresh log with
  ``UnifiedLog.appendAsLeader`` and the log then flushed (``flush(true)``: segment and indexes fsynced); kafkalog's
  row is ``test_append_200k_records_fsync`` in ``test_bench_log.py``.
* **one-record appends** (group ``log append 1-record batches``): 20,000 appends of a one-record batch to a fresh
  log, no flush; kafkalog's row is ``test_append_one_record_batches``.
* **read a partition** (group ``read a 200k-record partition beside Kafka``): the 200,000-record log of
  ``test_bench_read`` (six segments of 4 MiB), written by kafkalog and closed; kafkalog reads it with
  ``Log.records()`` (objects) and with ``Log.record_columns()`` (columns, summed with numpy: no object per
  record), Kafka a copy of it with ``UnifiedLog.read`` from each next offset (1 MiB a read, the consumer's
  ``max.partition.fetch.bytes``) and every record of every batch iterated as Kafka's consumer does
  (``streamingIterator`` over a cached ``BufferSupplier``).  Both touch offset, timestamp, key, value and headers;
  both sides' record counts and a digest of what they read must agree.
* **index lookups** (group ``offset index lookups beside Kafka``): 100,000 lookups at random offsets in a full
  10 MiB offset index (1,310,720 entries), ``OffsetIndex.lookup`` each, opened read-only on both sides; the
  offsets and positions found must agree.
* **an unclean open** (group ``unclean open of a 1 GiB log with a torn tail``): 1 GiB of 1,000-record batches in
  128 MiB segments, the last cut mid-batch before each round (and no producer snapshot), opened with recovery
  point 0 and no clean shutdown, so every segment is recovered: ``Log(...)`` against ``UnifiedLog.create`` with
  ``lastShutdownClean=false``; both end at the same log end offset.
* **a deep dump** (group ``deep dump of a 1 GiB log``): 1 GiB of 1,000-record batches with 1 KiB values (a
  million records) in 128 MiB segments; ``kafkalog dump --deep-iteration`` against Kafka's ``DumpLogSegments
  --deep-iteration`` (``kafka-dump-log.sh``), both writing to ``/dev/null`` (Kafka's through the stream a JVM gives
  ``System.out``), run in process (neither the interpreter's nor the JVM's start is timed); the two outputs must
  be the same bytes.
* **producer state** (group ``load a producer snapshot of 100k producers``): a cleanly closed log whose snapshot
  holds 100,000 idempotent producers; ``Log(...)`` (the whole open) against Kafka's ``ProducerStateManager``
  made over the dir and ``truncateAndReload`` (the producer state alone).  kafkalog keeps a snapshot's rows as
  they were read and makes an entry when one is asked for; the check afterwards asks for all of them.
* **cleaning** (group ``clean a 256 MiB keyed log with tombstones and transactions``): in
  ``test_bench_kafka_clean.py``, whose docstring describes it.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog import MemoryRecords
from kafkalog.bench.kafka_jvm import JVM_CLOCK, WARMUP_ROUNDS, KafkaJvm, replay
from kafkalog.bench.test_bench_log import (  # noqa: F401 (fixtures)
    ISSUE_BATCHES,
    ISSUE_RECORDS,
    ISSUE_ROUNDS,
    SMALL_APPENDS,
    SMALL_ROUNDS,
    issue_batches,
    issue_rows,
    one_record_batch,
)
from kafkalog.bench.test_bench_read import BASE_TIMESTAMP, PER_BATCH, RECORDS, SEGMENT_BYTES, _record
from kafkalog.config import LogConfig
from kafkalog.index import OffsetIndex
from kafkalog.log import Log
from kafkalog.scheduler import MockTime

READ_GROUP = "read a 200k-record partition beside Kafka"
LOOKUP_GROUP = "offset index lookups beside Kafka"
#: A consumer's ``max.partition.fetch.bytes`` default: what one read of Kafka's side asks for.
FETCH_BYTES = 1 << 20
READ_ROUNDS = 10
INDEX_ENTRIES = (10 << 20) // 8
LOOKUPS = 100_000
LOOKUP_ROUNDS = 10


def _write(path: Path, batches: list[bytes]) -> Path:
    path.write_bytes(b"".join(batches))
    return path


@pytest.mark.benchmark(timer=JVM_CLOCK)
@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_append_200k_records_fsync_kafka(benchmark: Any, kafka: KafkaJvm, throughput: Callable[..., None],
                                         tmp_path: Path, issue_batches: dict[str, list[bytes]],  # noqa: F811
                                         codec: str) -> None:
    """Kafka's ``UnifiedLog.appendAsLeader`` of the 200 batches, then ``flush(true)``."""
    if codec not in issue_batches:
        pytest.skip(f"test_bench_log builds no {codec} batches")
    batches = issue_batches[codec]
    result = kafka.run("append", _write(tmp_path / "batches", batches), tmp_path / "work", 1, WARMUP_ROUNDS,
                       ISSUE_ROUNDS)
    assert result["check"]["log_end_offset"] == ISSUE_BATCHES * ISSUE_RECORDS
    assert result["check"]["size"] == sum(map(len, batches))  # every batch kept as sent (offsets aside)
    benchmark.group = "log append 200k records + fsync"
    replay(benchmark, result["rounds_s"])
    throughput(benchmark, f"kafka/logappend200k/{codec}", records=ISSUE_BATCHES * ISSUE_RECORDS)


@pytest.mark.benchmark(timer=JVM_CLOCK)
def test_append_one_record_batches_kafka(benchmark: Any, kafka: KafkaJvm, throughput: Callable[..., None],
                                         tmp_path: Path, one_record_batch: bytes) -> None:  # noqa: F811
    """Kafka's ``UnifiedLog.appendAsLeader`` of 20,000 one-record batches."""
    result = kafka.run("append", _write(tmp_path / "batches", [one_record_batch] * SMALL_APPENDS),
                       tmp_path / "work", 0, WARMUP_ROUNDS, SMALL_ROUNDS)
    assert result["check"] == {"log_end_offset": SMALL_APPENDS, "size": SMALL_APPENDS * len(one_record_batch)}
    benchmark.group = "log append 1-record batches"
    replay(benchmark, result["rounds_s"])
    throughput(benchmark, "kafka/logappend1", records=SMALL_APPENDS)


# ---------------------------------------------------------------------------------------------------
# Reading a partition


def _digest(records: Any) -> tuple[int, int]:
    """The count of ``records`` and the sum Kafka's side makes of them (offset, timestamp, header count, key and
    value sizes, -1 for none)."""
    count = total = 0
    for r in records:
        total += (r.offset + r.timestamp + len(r.headers) + (-1 if r.key is None else len(r.key))
                  + (-1 if r.value is None else len(r.value)))
        count += 1
    return count, total


@pytest.fixture(scope="module", params=["none", "lz4", "zstd"])
def closed_log(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The log dir of ``test_bench_read``'s 200,000 records (the same records, batches and segment size),
    written by kafkalog's leader appends and closed, so its indexes end at their last entry as a broker's do."""
    codec = request.param
    directory = tmp_path_factory.mktemp(f"kafka-read-{codec}") / "read-0"
    mock = MockTime()
    log = Log(directory, LogConfig({"segment.bytes": SEGMENT_BYTES}), scheduler=mock.scheduler, time=mock)
    rng = random.Random(18)
    for b in range(RECORDS // PER_BATCH):
        log.append(MemoryRecords.with_records([_record(rng, i) for i in range(b * PER_BATCH, (b + 1) * PER_BATCH)],
                                              compression=codec))
    log.close()
    yield directory, codec


def test_read_partition_kafkalog(benchmark: Any, compiled: ModuleType, closed_log: tuple[Path, str],
                                 throughput: Callable[..., None]) -> None:
    """``Log.records()`` over the whole partition, every record's fields read."""
    directory, codec = closed_log
    benchmark.group = f"{READ_GROUP} [{codec}]"
    mock = MockTime()
    with Log(directory, LogConfig({"segment.bytes": SEGMENT_BYTES}), scheduler=mock.scheduler, time=mock,
             read_only=True) as log:
        count, digest = benchmark.pedantic(lambda: _digest(log.records()), rounds=READ_ROUNDS, warmup_rounds=1)
    assert count == RECORDS
    assert digest == sum(i + BASE_TIMESTAMP + i + 0 + 12 + 100 for i in range(RECORDS))
    throughput(benchmark, f"kafka-read/records/{codec}/cython", records=RECORDS)


def _column_digest(runs: Any) -> tuple[int, int]:
    """:func:`_digest` from columns: numpy sums over each run of the same fields (offset, timestamp, header
    count, key and value lengths, whose -1 for none is the objects row's)."""
    count = total = 0
    for columns in runs:
        records = columns.records
        count += len(records)
        total += (int(records["offset"].sum()) + int(records["timestamp"].sum())
                  + int(records["header_count"].sum(dtype=np.int64)) + int(records["key_len"].sum(dtype=np.int64))
                  + int(records["value_len"].sum(dtype=np.int64)))
    return count, total


def test_read_partition_columns_kafkalog(benchmark: Any, compiled: ModuleType, closed_log: tuple[Path, str],
                                         throughput: Callable[..., None]) -> None:
    """``Log.record_columns()`` over the whole partition, every record's offset, timestamp, key and value sizes
    and header count summed from the columns: the digest of the objects row."""
    directory, codec = closed_log
    benchmark.group = f"{READ_GROUP} [{codec}]"
    mock = MockTime()
    with Log(directory, LogConfig({"segment.bytes": SEGMENT_BYTES}), scheduler=mock.scheduler, time=mock,
             read_only=True) as log:
        count, digest = benchmark.pedantic(lambda: _column_digest(log.record_columns()), rounds=READ_ROUNDS,
                                           warmup_rounds=1)
        assert (count, digest) == _digest(log.records())
    assert count == RECORDS
    assert digest == sum(i + BASE_TIMESTAMP + i + 0 + 12 + 100 for i in range(RECORDS))
    throughput(benchmark, f"kafka-read/columns/{codec}/cython", records=RECORDS)


@pytest.mark.benchmark(timer=JVM_CLOCK)
def test_read_partition_kafka(benchmark: Any, kafka: KafkaJvm, throughput: Callable[..., None],
                              closed_log: tuple[Path, str], tmp_path: Path) -> None:
    """Kafka's ``UnifiedLog.read`` loop over a copy of the same dir, every record iterated."""
    directory, codec = closed_log
    copy = tmp_path / directory.name
    shutil.copytree(directory, copy)
    result = kafka.run("read", copy, FETCH_BYTES, WARMUP_ROUNDS, READ_ROUNDS)
    assert result["check"] == {"records": RECORDS,
                               "digest": sum(i + BASE_TIMESTAMP + i + 0 + 12 + 100 for i in range(RECORDS))}
    benchmark.group = f"{READ_GROUP} [{codec}]"
    replay(benchmark, result["rounds_s"])
    throughput(benchmark, f"kafka/read/{codec}", records=RECORDS)


# ---------------------------------------------------------------------------------------------------
# Index lookups


@pytest.fixture(scope="module")
def full_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, int]:
    """A full 10 MiB offset index (relative offsets 0, 10, 20, ..., positions 1,024 bytes apart: a broker's
    entries for 10-record batches with ``index.interval.bytes`` at 1 KiB) at base offset 1,000,000; 100,000
    random target offsets within it (as int64); and the sum of the offsets and positions their lookups find."""
    base = 1_000_000
    path = tmp_path_factory.mktemp("kafka-lookup") / f"{base:020d}.index"
    entries = np.zeros(INDEX_ENTRIES, dtype=[("relative", ">i4"), ("position", ">i4")])
    entries["relative"] = np.arange(INDEX_ENTRIES, dtype=np.int64) * 10
    entries["position"] = np.arange(INDEX_ENTRIES, dtype=np.int64) * 1024
    path.write_bytes(entries.tobytes())
    rng = np.random.default_rng(32)
    targets = base + rng.integers(0, INDEX_ENTRIES * 10, LOOKUPS, dtype=np.int64)
    slots = (targets - base) // 10
    expected = int((base + slots * 10).sum() + (slots * 1024).sum())
    return path, targets, expected


def _lookups(index: OffsetIndex, targets: list[int]) -> int:
    total = 0
    lookup = index.lookup
    for target in targets:
        found = lookup(target)
        total += found.offset + found.position
    return total


def test_index_lookups_kafkalog(benchmark: Any, compiled: ModuleType, full_index: tuple[Path, np.ndarray, int],
                                throughput: Callable[..., None]) -> None:
    """``OffsetIndex.lookup`` of each target, the index opened read-only."""
    path, targets, expected = full_index
    benchmark.group = LOOKUP_GROUP
    index = OffsetIndex(path, 1_000_000, writable=False)
    try:
        as_ints = targets.tolist()
        assert benchmark.pedantic(_lookups, args=(index, as_ints), rounds=LOOKUP_ROUNDS, warmup_rounds=1) == expected
    finally:
        index.close()
    throughput(benchmark, "kafka-lookup/cython", records=LOOKUPS)


@pytest.mark.benchmark(timer=JVM_CLOCK)
def test_index_lookups_kafka(benchmark: Any, kafka: KafkaJvm, throughput: Callable[..., None],
                             full_index: tuple[Path, np.ndarray, int], tmp_path: Path) -> None:
    """Kafka's ``OffsetIndex.lookup`` of the same targets in the same file, opened read-only."""
    path, targets, expected = full_index
    targets_file = tmp_path / "targets"
    targets_file.write_bytes(struct.pack(f">{len(targets)}q", *targets.tolist()))
    result = kafka.run("lookup", path, 1_000_000, targets_file, WARMUP_ROUNDS, LOOKUP_ROUNDS)
    assert result["check"] == {"lookups": LOOKUPS, "digest": expected}
    benchmark.group = LOOKUP_GROUP
    replay(benchmark, result["rounds_s"])
    throughput(benchmark, "kafka/lookup", records=LOOKUPS)


# ---------------------------------------------------------------------------------------------------
# An unclean open


OPEN_GROUP = "unclean open of a 1 GiB log with a torn tail"
OPEN_BYTES = 1 << 30
OPEN_SEGMENT_BYTES = 128 << 20
OPEN_ROUNDS = 5


@dataclass(frozen=True)
class TornLog:
    """A log dir of about 1 GiB of 1,000-record batches in 128 MiB segments, closed cleanly, and what tears it: its
    last segment file, the bytes of it that are whole, and the first half of a batch, written after them before
    each round (as a crash mid-write leaves it)."""

    dir: Path
    last_segment: Path
    valid_bytes: int
    torn: bytes
    log_end_offset: int

    def tear(self) -> None:
        """The torn tail put back, and the producer snapshots removed, so each round recovers the same log."""
        with open(self.last_segment, "r+b") as f:
            f.truncate(self.valid_bytes)
            f.seek(self.valid_bytes)
            f.write(self.torn)
        for snapshot in self.dir.glob("*.snapshot"):
            snapshot.unlink()


def _write_gib(directory: Path, batch: bytes) -> int:
    """``batch`` appended by kafkalog until the log in ``directory`` holds 1 GiB in 128 MiB segments, closed
    cleanly; its log end offset."""
    mock = MockTime()
    log = Log(directory, LogConfig({"segment.bytes": OPEN_SEGMENT_BYTES}), scheduler=mock.scheduler, time=mock)
    for _ in range(OPEN_BYTES // len(batch)):
        log.append(MemoryRecords(bytearray(batch)))
    end = log.log_end_offset
    log.close()
    return end


def _time_opens(benchmark: Any, open_log: Callable[[], Log], check: Callable[[Log], None], rounds: int,
                setup: Callable[[], None] | None = None) -> None:
    """Rounds of ``open_log()`` alone timed; each log opened is checked and closed after its round, untimed."""
    opened: list[Log] = []

    def before() -> tuple[tuple[()], dict[str, Any]]:
        if setup is not None:
            setup()
        return (), {}

    def after() -> None:
        log = opened.pop()
        check(log)
        log.close()

    benchmark.pedantic(lambda: opened.append(open_log()), setup=before, teardown=after, rounds=rounds,
                       warmup_rounds=1)


def _torn_copy(log: TornLog, to: Path) -> TornLog:
    shutil.copytree(log.dir, to)
    return TornLog(to, to / log.last_segment.name, log.valid_bytes, log.torn, log.log_end_offset)


@pytest.fixture(scope="module")
def torn_log(tmp_path_factory: pytest.TempPathFactory,
             issue_batches: dict[str, list[bytes]]) -> TornLog:  # noqa: F811
    """The same 1,000-record batch (``test_bench_log``'s first) appended by kafkalog until the log holds 1 GiB."""
    directory = tmp_path_factory.mktemp("kafka-open") / "open-0"
    batch = issue_batches["none"][0]
    end = _write_gib(directory, batch)
    last = max(directory.glob("*.log"))
    return TornLog(directory, last, last.stat().st_size, batch[: len(batch) // 2], end)


def _open_recovering(log: TornLog) -> Log:
    mock = MockTime()
    return Log(log.dir, LogConfig({"segment.bytes": OPEN_SEGMENT_BYTES}), recovery_point=0, had_clean_shutdown=False,
               scheduler=mock.scheduler, time=mock)


def test_unclean_open_kafkalog(benchmark: Any, compiled: ModuleType, torn_log: TornLog, tmp_path: Path,
                               throughput: Callable[..., None]) -> None:
    """``Log(...)`` of the torn log with ``recovery_point=0`` and no clean shutdown: every segment recovered
    (its batches' CRCs checked, its indexes rebuilt), the torn tail cut."""
    torn = _torn_copy(torn_log, tmp_path / torn_log.dir.name)
    benchmark.group = OPEN_GROUP

    def check(log: Log) -> None:
        assert (log.log_end_offset, log.size) == (torn.log_end_offset, torn.valid_bytes + sum(
            p.stat().st_size for p in torn.dir.glob("*.log") if p != torn.last_segment))

    _time_opens(benchmark, lambda: _open_recovering(torn), check, OPEN_ROUNDS, setup=torn.tear)
    throughput(benchmark, "kafka-open/cython", nbytes=OPEN_BYTES)


@pytest.mark.benchmark(timer=JVM_CLOCK)
def test_unclean_open_kafka(benchmark: Any, kafka: KafkaJvm, torn_log: TornLog, tmp_path: Path,
                            throughput: Callable[..., None]) -> None:
    """Kafka's ``UnifiedLog`` load of a copy of the torn log, ``lastShutdownClean=false`` and recovery point 0."""
    torn = _torn_copy(torn_log, tmp_path / torn_log.dir.name)
    (tmp_path / "torn").write_bytes(torn.torn)
    result = kafka.run("open", torn.dir, torn.last_segment, torn.valid_bytes, tmp_path / "torn", WARMUP_ROUNDS,
                       OPEN_ROUNDS)
    assert result["check"]["log_end_offset"] == torn.log_end_offset
    assert result["check"]["segments"] == len(list(torn.dir.glob("*.log")))
    benchmark.group = OPEN_GROUP
    replay(benchmark, result["rounds_s"])
    throughput(benchmark, "kafka/open", nbytes=OPEN_BYTES)


# ---------------------------------------------------------------------------------------------------
# Producer state from a snapshot


SNAPSHOT_GROUP = "load a producer snapshot of 100k producers"
PRODUCERS = 100_000
SNAPSHOT_ROUNDS = 5


@pytest.fixture(scope="module")
def producers_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """A log of 100,000 one-record batches, each from its own idempotent producer, closed cleanly (so a producer
    snapshot of 100,000 entries at its end); its dir, log end offset and the clock's time (when the producers are
    judged expired, a minute after the last wrote)."""
    directory = tmp_path_factory.mktemp("kafka-snapshot") / "producers-0"
    mock = MockTime()
    log = Log(directory, LogConfig(), scheduler=mock.scheduler, time=mock)
    now = mock.milliseconds()
    for pid in range(PRODUCERS):
        log.append(MemoryRecords.with_records([(None, b"v", now)], producer_id=1000 + pid, producer_epoch=0,
                                              base_sequence=0))
    end = log.log_end_offset
    log.close()
    assert len(list(directory.glob("*.snapshot"))) == 1
    return directory, end, now + 60_000


def test_producer_snapshot_load_kafkalog(benchmark: Any, compiled: ModuleType, producers_log: tuple[Path, int, int],
                                         throughput: Callable[..., None]) -> None:
    """``Log(...)`` of the cleanly closed dir: its segment opened and the producer state read from the snapshot."""
    directory, end, now = producers_log
    benchmark.group = SNAPSHOT_GROUP

    def open_log() -> Log:
        mock = MockTime(current_time_ms=now)
        return Log(directory, LogConfig(), recovery_point=end, scheduler=mock.scheduler, time=mock)

    def check(log: Log) -> None:
        assert (log.log_end_offset, len(log.producer_state_manager.active_producers())) == (end, PRODUCERS)

    _time_opens(benchmark, open_log, check, SNAPSHOT_ROUNDS)
    throughput(benchmark, "kafka-snapshot/cython", records=PRODUCERS)


@pytest.mark.benchmark(timer=JVM_CLOCK)
def test_producer_snapshot_load_kafka(benchmark: Any, kafka: KafkaJvm, producers_log: tuple[Path, int, int],
                                      tmp_path: Path, throughput: Callable[..., None]) -> None:
    """Kafka's ``ProducerStateManager`` over a copy of the dir, loaded by ``truncateAndReload``."""
    directory, end, now = producers_log
    copy = tmp_path / directory.name
    shutil.copytree(directory, copy)
    result = kafka.run("snapshot", copy, end, now, WARMUP_ROUNDS, SNAPSHOT_ROUNDS)
    assert result["check"] == {"producers": PRODUCERS, "map_end_offset": end}
    benchmark.group = SNAPSHOT_GROUP
    replay(benchmark, result["rounds_s"])
    throughput(benchmark, "kafka/snapshot", records=PRODUCERS)


# ---------------------------------------------------------------------------------------------------
# A deep dump


DUMP_GROUP = "deep dump of a 1 GiB log"
DUMP_ROUNDS = 3
#: The dump's rounds are long (millions of lines): two untimed runs warm Kafka's JIT through and through.
DUMP_WARMUP = 2


DUMP_VALUE_BYTES = 1024


@pytest.fixture(scope="module")
def dump_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """1 GiB of 1,000-record batches with 1 KiB values (a million records, a line each in a deep dump) in 128 MiB
    segments, written by kafkalog and closed: the ``--files`` list of its ``.log`` files, and their bytes."""
    directory = tmp_path_factory.mktemp("kafka-dump") / "dump-0"
    rng = random.Random(321)
    batch = bytes(MemoryRecords.with_records([(f"key-{i:08d}".encode(), rng.randbytes(DUMP_VALUE_BYTES),
                                               BASE_TIMESTAMP + i) for i in range(1000)]).buffer)
    _write_gib(directory, batch)
    files = sorted(directory.glob("*.log"))
    return ",".join(map(str, files)), sum(path.stat().st_size for path in files)


def test_deep_dump_kafkalog(benchmark: Any, compiled: ModuleType, dump_files: tuple[str, int],
                            throughput: Callable[..., None]) -> None:
    """``kafkalog dump --deep-iteration --files <every .log>``, its output written to /dev/null."""
    from kafkalog.cli import main

    benchmark.group = DUMP_GROUP
    files, size = dump_files
    written: list[int] = []

    def dump() -> int:
        with open(os.devnull, "w", encoding="utf-8") as sink:
            status = main(["dump", "--deep-iteration", "--no-progress", "--files", files], stdout=sink)
            written.append(sink.tell())
        return status

    assert benchmark.pedantic(dump, rounds=DUMP_ROUNDS, warmup_rounds=1) == 0
    throughput(benchmark, "kafka-dump/cython", nbytes=size)


@pytest.mark.benchmark(timer=JVM_CLOCK)
def test_deep_dump_kafka(benchmark: Any, kafka: KafkaJvm, dump_files: tuple[str, int], tmp_path: Path,
                         throughput: Callable[..., None]) -> None:
    """Kafka's ``DumpLogSegments --deep-iteration`` over the same files, its output to /dev/null."""
    from kafkalog.cli import main

    files, size = dump_files
    result = kafka.run("dump", files, DUMP_WARMUP, DUMP_ROUNDS)
    with open(tmp_path / "kafkalog.out", "w", encoding="utf-8") as out:
        assert main(["dump", "--deep-iteration", "--no-progress", "--files", files], stdout=out) == 0
    assert result["check"]["bytes"] == (tmp_path / "kafkalog.out").stat().st_size  # the same lines, byte for byte
    benchmark.group = DUMP_GROUP
    replay(benchmark, result["rounds_s"], DUMP_WARMUP)
    throughput(benchmark, "kafka/dump", nbytes=size)
