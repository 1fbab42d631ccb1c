"""Reading Kafka log dirs through Spark: the ``kafkalog`` data source against a Python data source that
yields one tuple per record, on ``local[1]`` and ``local[2]``.

The data: 1 GiB of uncompressed v2 batches (``KAFKALOG_BENCH_SPARK_MIB`` changes the size), four
partitions of one topic, ``segment.bytes`` 128 MiB, built once per module by leader appends of ~1 MiB
batches (7,000 records each: an 8-byte key, a 100-byte value, a timestamp; about 9 million records a
GiB).  Both sources get the same input partitions: the kafkalog planner's tasks of about
``maxPartitionBytes`` (the default, 128 MiB), so eight or more tasks share the cores.

* ``kafkalog``: ``spark.read.format("kafkalog")``: each task scans its byte range with CRCs, decodes 8 MiB
  at a time with the compiled record kernels and hands Spark Arrow record batches.
* ``tuples``: the reference: a Python data source (``kafkalog_tuples``, defined here) whose tasks read the
  same byte ranges with the same library (compiled kernels, CRCs checked by the scan) and yield one Python
  tuple per record, the way a data source is written when it is written simply: Spark then turns the
  tuples into its rows.

Each round runs ``select count(*), sum(offset), sum(length(value)), max(unix_millis(timestamp))`` over all rows, a query
that makes every row cross from Python to the JVM, and checks the answer against what was written.
The kafkalog rows take three rounds; the tuple rows, being far slower, two.  Two Spark sessions run one
after the other (``local[1]``, then ``local[2]``), each started once for its rows and warmed up first by
two small queries per source (the first 7,000 records of each partition).  Ratios (printed at the
end): kafkalog vs tuples on each master (target >= 5x), and kafkalog on ``local[2]`` vs ``local[1]``
(scaling with cores).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")

from pyspark import cloudpickle  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402

from kafkalog import _impl  # noqa: E402
from kafkalog.config.log_config import LogConfig  # noqa: E402
from kafkalog.file_message_set import FileMessageSet  # noqa: E402
from kafkalog.filenames import log_filename  # noqa: E402
from kafkalog.log import Log  # noqa: E402
from kafkalog.record import MemoryRecords  # noqa: E402
from kafkalog.spark.arrow import SPARK_SCHEMA  # noqa: E402
from kafkalog.spark.options import ReadOptions  # noqa: E402
from kafkalog.spark.plan import ReadTask, plan_read  # noqa: E402

TOTAL_BYTES = int(os.environ.get("KAFKALOG_BENCH_SPARK_MIB", "1024")) * 1024 * 1024
PARTITIONS = 4
SEGMENT_BYTES = 128 * 1024 * 1024
RECORDS_PER_BATCH = 7000
KEY_BYTES, VALUE_BYTES = 8, 100
BASE_TIMESTAMP = 1_700_000_000_000
TOPIC = "bench"
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

# The reference source's classes travel to Spark's Python workers by value, so that the workers never
# import this file (a pytest module, which needs pytest and the bench extra to import).
cloudpickle.register_pickle_by_value(sys.modules[__name__])


class TuplesDataSource(DataSource):
    """The reference: the kafkalog planner's tasks, read record by record into Python tuples."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog_tuples"

    def schema(self) -> str:
        return SPARK_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return TuplesReader(plan_read(ReadOptions.parse(self.options)))


class _Task(InputPartition):  # type: ignore[misc]
    def __init__(self, task: ReadTask) -> None:
        super().__init__(None)
        self.task = task


class TuplesReader(DataSourceReader):
    def __init__(self, tasks: list[ReadTask]) -> None:
        self.tasks = tasks

    def partitions(self) -> list[InputPartition]:
        return [_Task(task) for task in self.tasks]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        task: ReadTask = partition.task
        for piece in task.slices:
            with FileMessageSet(log_filename(task.dir, piece.base_offset), writable=False) as segment:
                part = segment.read(piece.start_position, piece.end_position - piece.start_position)
                for batch in part.batches():
                    batch.ensure_valid()
                    timestamp_type = int(batch.timestamp_type)
                    for record in batch.records():
                        if task.view.start_offset <= record.offset < task.view.end_offset:
                            yield (record.key, record.value, task.topic, task.partition, record.offset,
                                   EPOCH + datetime.timedelta(milliseconds=record.timestamp), timestamp_type)


def _write_log(root: Path) -> tuple[int, int, int]:
    """The module's data: (records, sum of offsets, sum of value lengths)."""
    batches = []
    for n in range(8):  # a few distinct batches, appended in turn
        records = [(b"k%07d" % (n * RECORDS_PER_BATCH + i), bytes([65 + (i + n) % 26]) * VALUE_BYTES,
                    BASE_TIMESTAMP + i) for i in range(RECORDS_PER_BATCH)]
        batches.append(bytes(MemoryRecords.with_records(records).buffer))
    per_partition = TOTAL_BYTES // PARTITIONS
    records = offsets = value_bytes = 0
    config = LogConfig({"segment.bytes": SEGMENT_BYTES})
    for p in range(PARTITIONS):
        with Log(root / f"{TOPIC}-{p}", config) as log:
            written = 0
            while written < per_partition:
                batch = batches[(written // len(batches[0])) % len(batches)]
                info = log.append(MemoryRecords(bytearray(batch)))
                written += len(batch)
                count = info.last_offset - info.first_offset + 1
                records += count
                offsets += (info.first_offset + info.last_offset) * count // 2
                value_bytes += count * VALUE_BYTES
    return records, offsets, value_bytes


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[int, int, int]]:
    root = tmp_path_factory.mktemp("spark-bench")
    with _impl.using("cython" if "cython" in _impl.both() else "python"):
        expected = _write_log(root)
    return root, expected


@pytest.fixture(scope="module", params=["local[1]", "local[2]"])
def spark(request: pytest.FixtureRequest, data: tuple[Path, tuple[int, int, int]]) -> Iterator[Any]:
    """A session on the parameter's master, warmed up: a first query pays for the JVM's JIT and for
    starting the Python workers, which no row should be charged for."""
    from kafkalog.spark import session

    spark = session(request.param, f"kafkalog-bench-{request.param}")  # quiet: kafkalog.spark.quiet
    spark.dataSource.register(TuplesDataSource)
    few = json.dumps({TOPIC: {str(p): RECORDS_PER_BATCH for p in range(PARTITIONS)}})
    for source in ("kafkalog", "kafkalog_tuples"):
        for _ in range(2):
            spark.read.format(source).option("endingOffsets", few).load(str(data[0])).selectExpr(
                "count(*)", "sum(length(value))").collect()
    yield spark
    spark.stop()


def _query(spark: Any, source: str, root: Path) -> Callable[[], tuple[int, int, int, int]]:
    def run() -> tuple[int, int, int, int]:
        row = spark.read.format(source).load(str(root)).selectExpr(
            "count(*)", "sum(offset)", "sum(length(value))", "max(unix_millis(timestamp))").collect()[0]
        return int(row[0]), int(row[1]), int(row[2]), int(row[3])

    return run


@pytest.mark.parametrize("source", ["kafkalog", "tuples"])
def test_spark_read_1gib(benchmark: Any, throughput: Any, spark: Any, data: tuple[Path, tuple[int, int, int]],
                         source: str) -> None:
    root, (records, offsets, value_bytes) = data
    master = spark.sparkContext.master
    benchmark.group = f"spark read {TOTAL_BYTES >> 20} MiB v2"
    run = _query(spark, "kafkalog" if source == "kafkalog" else "kafkalog_tuples", root)
    rounds = 3 if source == "kafkalog" else 2
    count, offset_sum, length_sum, last = benchmark.pedantic(run, rounds=rounds, iterations=1, warmup_rounds=0)
    assert (count, offset_sum, length_sum) == (records, offsets, value_bytes)
    assert last == BASE_TIMESTAMP + RECORDS_PER_BATCH - 1
    benchmark.extra_info["master"] = master
    throughput(benchmark, f"spark/{source}/{master}", records=records)
