"""The producer's side as a user times it (issue 18): building batches from Python tuples, and writing the
demo's keyed workload through a ``LogManager``.

Groups:

* ``build 200k records``: 200,000 keyed records (keys ``key-%08d``, 12 bytes; values 100 random bytes;
  increasing timestamps) as 200 batches of 1,000, each batch a list of ``(key, value, timestamp)``
  tuples made before the round.  ``with_records``: ``MemoryRecords.with_records(batch)`` per batch,
  the public path from tuples to a whole uncompressed v2 batch (every record's checks, the records
  section, the 61-byte header and the CRC-32C), with each twin.  ``aiokafka``: aiokafka's compiled
  ``DefaultRecordBatchBuilder``, one ``append(offset, timestamp, key, value, [])`` a record through its
  public API and ``build()`` a batch (header and CRC included).  Both must give the same bytes (the
  kafkalog rows are compared with the aiokafka batches built once before the round, which are read
  back with aiokafka's reader).  Target (issue 18): ``with_records`` compiled >= 2x aiokafka's builder
  (moonshot 4x).
* ``demo workload 200k``: :func:`kafkalog.spark.workload.write_workload` of 200,000 records into two
  fresh log dirs (the ``make demo`` workload: four topics, 12 partitions, v2 zstd/none, v1 gzip, v0
  snappy and v2 lz4 with headers; keyed, 2-10% deletes; 1 MiB segments), compiled.  One round is one
  call into new directories (deleted after the round, untimed).  Checked: the record count the call
  reports and the log end offsets of the partitions, which add up to it.  No comparison row: issue 18
  sets an absolute target, 500,000 records/s (in ``extra_info``: ``records_per_s``), which a ``budget`` row
  (``workload/budget-500k``, 0.4 s a round) stands for in the ratios (goal >= 1x).
"""

from __future__ import annotations

import random
import shutil
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords

BUILD_RECORDS = 200_000
BUILD_PER_BATCH = 1000
BASE_TIMESTAMP = 1_700_000_000_000
V2_HEADER = 61
SLOW_ROUNDS = 3
WORKLOAD_RECORDS = 200_000
WORKLOAD_ROUNDS = 3
#: Issue 18's goal for the demo workload, in records/s (kept by issue 32).
WORKLOAD_GOAL = 500_000

Batch = list[tuple[bytes, bytes, int]]


@pytest.fixture(scope="module")
def build_inputs() -> list[Batch]:
    rng = random.Random(20261125)
    batches = []
    for b in range(BUILD_RECORDS // BUILD_PER_BATCH):
        first = b * BUILD_PER_BATCH
        batches.append([(b"key-%08d" % n, rng.randbytes(100), BASE_TIMESTAMP + n)
                        for n in range(first, first + BUILD_PER_BATCH)])
    return batches


@pytest.fixture(scope="module")
def aiokafka_batches(build_inputs: list[Batch]) -> list[bytes]:
    """Every batch as aiokafka's builder writes it; the first and last are read back with its reader."""
    from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    built = []
    for batch in build_inputs:
        builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
        for offset, (key, value, timestamp) in enumerate(batch):
            builder.append(offset, timestamp, key, value, [])
        built.append(bytes(builder.build()))
    for b in (0, -1):
        read = [(r.key, r.value, r.timestamp) for r in DefaultRecordBatch(built[b])]
        assert read == build_inputs[b]
    return built


def _aiokafka_compiled() -> None:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    from aiokafka.util import NO_EXTENSIONS

    if NO_EXTENSIONS or "_crecords" not in DefaultRecordBatchBuilder.__module__:
        pytest.skip("aiokafka's compiled extensions are not in use: this row would time its Python code")


def test_build_with_records(benchmark: Any, impl: ModuleType, build_inputs: list[Batch],
                            aiokafka_batches: list[bytes], throughput: Callable[..., None]) -> None:
    """``MemoryRecords.with_records`` per batch of 1,000 tuples."""
    benchmark.group = "build 200k records"

    def build(batches: list[Batch]) -> list[Any]:
        return [MemoryRecords.with_records(batch).buffer for batch in batches]

    if impl.IMPLEMENTATION == "python":
        built = benchmark.pedantic(build, args=(build_inputs,), rounds=SLOW_ROUNDS, warmup_rounds=0, iterations=1)
    else:
        built = benchmark(build, build_inputs)
    assert [bytes(b) for b in built] == aiokafka_batches
    throughput(benchmark, f"build/with-records/{impl.IMPLEMENTATION}", records=BUILD_RECORDS)


def test_build_aiokafka(benchmark: Any, build_inputs: list[Batch], aiokafka_batches: list[bytes],
                        throughput: Callable[..., None]) -> None:
    """aiokafka's compiled ``DefaultRecordBatchBuilder``: ``append`` per record, ``build`` per batch."""
    _aiokafka_compiled()
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    benchmark.group = "build 200k records"
    no_headers: list[tuple[str, bytes | None]] = []

    def build(batches: list[Batch]) -> list[bytearray]:
        out = []
        for batch in batches:
            builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
            append = builder.append
            for offset, (key, value, timestamp) in enumerate(batch):
                append(offset, timestamp, key, value, no_headers)
            out.append(builder.build())
        return out

    built = benchmark(build, build_inputs)
    assert [bytes(b) for b in built] == aiokafka_batches
    assert struct.unpack_from(">i", built[-1], V2_HEADER - 4)[0] == BUILD_PER_BATCH
    throughput(benchmark, "build/aiokafka", records=BUILD_RECORDS)


def test_demo_workload(benchmark: Any, compiled: ModuleType, tmp_path: Path,
                       throughput: Callable[..., None], budget: Callable[..., None]) -> None:
    """``write_workload`` of 200,000 records into two new log dirs, one call a round."""
    from kafkalog.spark.workload import write_workload
    from kafkalog.tools.partition_dir import PartitionDir

    benchmark.group = "demo workload 200k"
    rounds: list[Path] = []

    def setup() -> tuple[tuple[list[Path], int], dict[str, Any]]:
        # the previous round's files go first (untimed), so the page cache holds one round's bytes
        while rounds:
            shutil.rmtree(rounds.pop())
        root = Path(tempfile.mkdtemp(dir=tmp_path))
        rounds.append(root)
        return ([root / "kafka-logs-1", root / "kafka-logs-2"], WORKLOAD_RECORDS), {}

    result = benchmark.pedantic(write_workload, setup=setup, rounds=WORKLOAD_ROUNDS, warmup_rounds=0, iterations=1)
    assert result.total_records == WORKLOAD_RECORDS
    last = rounds[-1]
    ends = 0
    for path in sorted(p for p in last.glob("kafka-logs-*/*-*") if p.is_dir()):
        ends += PartitionDir.of(path).recovery_point
    assert ends == WORKLOAD_RECORDS
    throughput(benchmark, "workload/cython", records=WORKLOAD_RECORDS)
    benchmark.extra_info["target_records_per_s"] = WORKLOAD_GOAL
    # The goal is a rate, not a ratio: a row taking WORKLOAD_RECORDS / WORKLOAD_GOAL seconds stands for it.
    budget(f"workload/budget-{WORKLOAD_GOAL // 1000}k", WORKLOAD_RECORDS / WORKLOAD_GOAL, records=WORKLOAD_RECORDS)
