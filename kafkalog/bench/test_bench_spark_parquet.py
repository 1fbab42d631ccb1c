"""Reading Kafka log dirs through Spark against Spark reading Parquet of the same rows.

The data: 2,000,000 records (``KAFKALOG_BENCH_PARQUET_RECORDS`` changes it) of an 8-byte key and a 100-byte
value in uncompressed v2 batches of 5,000, over four partitions of one topic, written once per module by
leader appends.  The Parquet copy is what the ``kafkalog`` source itself reads from those logs, written by
Spark with its defaults (snappy, one file per input partition), so both sides hold the same rows with the
same schema.

Each round runs the issue's aggregation, ``count(*), sum(length(value)), max(offset)``, on one ``local[2]``
session started once for the module and warmed by one query on each side; the answer is checked against what
was written.

* ``kafkalog``: ``spark.read.format("kafkalog").load(root)``.
* ``parquet``: ``spark.read.parquet(copy)``: Spark's vectorised JVM reader, which reads just the two
  columns the query names.

Target: the kafkalog source at >= 0.5x Parquet.  Its module name holds ``spark``: ``kafkalog bench --quick``
leaves it out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kafkalog import _impl
from kafkalog.config import LogConfig
from kafkalog.log import Log
from kafkalog.record import MemoryRecords

RECORDS = int(os.environ.get("KAFKALOG_BENCH_PARQUET_RECORDS", "2000000"))
PARTITIONS = 4
RECORDS_PER_BATCH = 5000
VALUE_BYTES = 100
MASTER = "local[2]"
TOPIC = "parquet-bench"
QUERY = ("count(*)", "sum(length(value))", "max(offset)")


def _write_logs(root: Path) -> tuple[int, int, int]:
    """The module's logs: ``(records, sum of value lengths, largest offset)`` as written."""
    per_partition = RECORDS // PARTITIONS
    config = LogConfig({"segment.bytes": 256 * 1024 * 1024})
    written = largest = 0
    for p in range(PARTITIONS):
        with Log(root / f"{TOPIC}-{p}", config) as log:
            for first in range(0, per_partition, RECORDS_PER_BATCH):
                count = min(RECORDS_PER_BATCH, per_partition - first)
                records = [(b"k%07d" % (first + i), bytes([65 + (first + i + p) % 26]) * VALUE_BYTES,
                            1_700_000_000_000 + first + i) for i in range(count)]
                info = log.append(MemoryRecords.with_records(records))
                largest = max(largest, info.last_offset)
                written += count
    return written, written * VALUE_BYTES, largest


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[int, int, int]]:
    root = tmp_path_factory.mktemp("parquet-bench-logs")
    with _impl.using("cython" if "cython" in _impl.both() else "python"):
        expected = _write_logs(root)
    return root, expected


@pytest.fixture(scope="module")
def spark(data: tuple[Path, tuple[int, int, int]], tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[Any, Path]]:
    """The session, and the Parquet copy of the logs that it wrote; both sides warmed by one query, so that
    the JVM's JIT and the Python workers' start are paid before any round."""
    from kafkalog.spark import session

    spark = session(MASTER, "kafkalog-bench-parquet")
    copy = tmp_path_factory.mktemp("parquet-bench-copy") / "rows.parquet"
    spark.read.format("kafkalog").load(str(data[0])).write.parquet(str(copy))
    for run in (_query(spark, "kafkalog", data[0]), _query(spark, "parquet", copy)):
        run()
    yield spark, copy
    spark.stop()


def _query(spark: Any, source: str, path: Path) -> Callable[[], tuple[int, int, int]]:
    def run() -> tuple[int, int, int]:
        reader = spark.read.format("kafkalog").load(str(path)) if source == "kafkalog" else \
            spark.read.parquet(str(path))
        row = reader.selectExpr(*QUERY).collect()[0]
        return int(row[0]), int(row[1]), int(row[2])

    return run


@pytest.mark.parametrize("source", ["kafkalog", "parquet"])
def test_spark_read_vs_parquet(benchmark: Any, throughput: Any, spark: tuple[Any, Path],
                               data: tuple[Path, tuple[int, int, int]], source: str) -> None:
    session, copy = spark
    root, expected = data
    benchmark.group = f"spark read {RECORDS:,} records, {MASTER}: kafkalog vs Parquet"
    run = _query(session, source, root if source == "kafkalog" else copy)
    answer = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=0)
    assert answer == expected
    throughput(benchmark, f"spark-parquet/{source}", records=expected[0])
