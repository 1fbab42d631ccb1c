"""Reading Kafka log dirs through Spark against Spark reading Parquet of the same rows.

The data: 2,000,000 records (``KAFKALOG_BENCH_PARQUET_RECORDS`` changes it) of an 8-byte key and a 100-byte value
in uncompressed v2 batches of 5,000, over four partitions of one topic, written once per module by leader appends,
twice over:

* ``random``: distinct keys and values of random bytes, nothing for Parquet's dictionaries to fold;
* ``repetitive``: keys drawn from 300 and values from 200 distinct ones (random bytes each), as a real topic's
  enum-like fields repeat.  The log holds every record's bytes all the same; Parquet's dictionary encoding stores
  each distinct value once and a small index per row, so its side reads a few bits a value.

The Parquet copy is what the ``kafkalog`` source itself reads from those logs, written by Spark with its defaults
(snappy, dictionary encoding, one file per input partition), so both sides hold the same rows with the same schema.

Each round runs the issue's aggregation, ``count(*), sum(length(value)), max(offset)``, on one ``local[2]`` session
started once for the module and warmed by one query on each side; the answer is checked against what was written.

* ``kafkalog``: ``spark.read.format("kafkalog").load(root)``.
* ``parquet``: ``spark.read.parquet(copy)``: Spark's vectorised JVM reader, which reads just the two columns the
  query names.
* ``arrow-ceiling``: what any Python data source can reach: one (``arrow_ceiling``, defined here) whose tasks hand
  Spark the very same rows as ready Arrow record batches, memory-mapped from Arrow IPC files written beforehand, so
  that it decodes nothing.  Its time is Spark's own cost of a Python data source: the Python workers, the Arrow
  stream to the JVM and every column of the schema (the API has no column pruning, so all of Kafka's columns cross,
  where Parquet reads two).

Targets: the kafkalog source at >= 0.5x Parquet on random values, and at >= 0.95x the ready-Arrow ceiling on both
data; the ratio to Parquet on repetitive values is reported without one (it measures Parquet's encoding more than
either reader).  The ceiling row says how much of the gap is the source.  Its module name holds ``spark``:
``kafkalog bench --quick`` leaves it out.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafkalog import _impl
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.record import MemoryRecords
from kafkalog.spark.arrow import SPARK_SCHEMA

RECORDS = int(os.environ.get("KAFKALOG_BENCH_PARQUET_RECORDS", "2000000"))
PARTITIONS = 4
RECORDS_PER_BATCH = 5000
VALUE_BYTES = 100
MASTER = "local[2]"
TOPIC = "parquet-bench"
QUERY = ("count(*)", "sum(length(value))", "max(offset)")

# The ceiling source's classes travel to Spark's Python workers by value, so that the workers never import
# this file (a pytest module).
cloudpickle.register_pickle_by_value(sys.modules[__name__])


#: The data sets: their names, and the keys' part of the ratio keys (``spark-parquet/...`` stays the random one's).
DATA = ("random", "repetitive")
KEYS = {"random": "spark-parquet", "repetitive": "spark-parquet-repetitive"}
#: Distinct keys and values of the repetitive data.
REPEATED_KEYS = 300
REPEATED_VALUES = 200


def _write_logs(root: Path, kind: str) -> tuple[int, int, int]:
    """The module's logs of ``kind``: ``(records, sum of value lengths, largest offset)`` as written."""
    per_partition = RECORDS // PARTITIONS
    config = LogConfig({"segment.bytes": 256 * 1024 * 1024})
    written = largest = 0
    rng = np.random.default_rng(7)
    # Random values: slices of random bytes, so that neither side's encoding (Parquet's dictionaries, above all)
    # can make them smaller than they are.  Repetitive ones: a few hundred distinct keys and values.
    noise = rng.bytes(RECORDS_PER_BATCH * VALUE_BYTES + 4096)
    keys = [b"key-%04d" % k for k in range(REPEATED_KEYS)]
    values = [rng.bytes(VALUE_BYTES) for _ in range(REPEATED_VALUES)]
    for p in range(PARTITIONS):
        with Log(root / f"{TOPIC}-{p}", config) as log:
            for first in range(0, per_partition, RECORDS_PER_BATCH):
                count = min(RECORDS_PER_BATCH, per_partition - first)
                timestamps = range(1_700_000_000_000 + first, 1_700_000_000_000 + first + count)
                if kind == "random":
                    payload = noise[(first + p) % 4096:][:count * VALUE_BYTES]
                    records = [(b"k%07d" % (first + i), payload[i * VALUE_BYTES:(i + 1) * VALUE_BYTES], t)
                               for i, t in enumerate(timestamps)]
                else:
                    picked = zip(rng.integers(0, REPEATED_KEYS, count).tolist(),
                                 rng.integers(0, REPEATED_VALUES, count).tolist(), strict=True)
                    records = [(keys[k], values[v], t) for (k, v), t in zip(picked, timestamps, strict=True)]
                info = log.append(MemoryRecords.with_records(records))
                largest = max(largest, info.last_offset)
                written += count
    return written, written * VALUE_BYTES, largest


@pytest.fixture(scope="module", params=DATA)
def data(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[str, Path, tuple[int, int, int]]:
    """One data set's logs: its kind, its root and what was written."""
    kind: str = request.param
    root = tmp_path_factory.mktemp(f"parquet-bench-logs-{kind}")
    with _impl.using("cython" if "cython" in _impl.both() else "python"):
        expected = _write_logs(root, kind)
    return kind, root, expected


@pytest.fixture(scope="module")
def session() -> Iterator[Any]:
    """One ``local[2]`` session for the module, the ceiling source registered."""
    from kafkalog.spark import session as start

    spark = start(MASTER, "kafkalog-bench-parquet")
    spark.dataSource.register(ArrowCeilingSource)
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def copies(session: Any, data: tuple[str, Path, tuple[int, int, int]], tmp_path_factory: pytest.TempPathFactory
           ) -> dict[str, Path]:
    """Where each source reads the data set from (the Parquet copy that Spark wrote of the logs, the Arrow files),
    every source warmed by one query, so that the JVM's JIT and the Python workers' start are paid before any
    round."""
    kind, root, _expected = data
    directory = tmp_path_factory.mktemp(f"parquet-bench-copies-{kind}")
    session.read.format("kafkalog").load(str(root)).write.parquet(str(directory / "rows.parquet"))
    _write_arrow_files(root, directory / "arrow")
    paths = {"kafkalog": root, "parquet": directory / "rows.parquet", "arrow-ceiling": directory / "arrow"}
    for source, path in paths.items():
        _query(session, source, path)()
    return paths


class ArrowFile(InputPartition):  # type: ignore[misc]
    def __init__(self, path: str) -> None:
        super().__init__(path)


class ArrowCeilingReader(DataSourceReader):
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def partitions(self) -> list[InputPartition]:
        return [ArrowFile(str(p)) for p in sorted(Path(self.directory).glob("*.arrow"))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        with pa.memory_map(partition.value) as source:
            batches = pa.ipc.open_file(source)
            for i in range(batches.num_record_batches):
                yield batches.get_batch(i)


class ArrowCeilingSource(DataSource):
    """Ready Arrow record batches of the data source's schema, from the IPC files in the ``path`` dir."""

    @classmethod
    def name(cls) -> str:
        return "arrow_ceiling"

    def schema(self) -> str:
        return SPARK_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return ArrowCeilingReader(self.options["path"])


def _write_arrow_files(root: Path, directory: Path) -> None:
    """The rows of the logs as Arrow IPC files, one per task of the kafkalog planner, each holding the record
    batches that task hands Spark (so the rows, and the batches' sizes, are the kafkalog source's)."""
    import pyarrow as pa

    from kafkalog.spark.options import ReadOptions
    from kafkalog.spark.plan import plan_read

    directory.mkdir()
    for n, task in enumerate(plan_read(ReadOptions.parse({"path": str(root)}))):
        batches = list(task.read())
        with pa.OSFile(str(directory / f"{n:04d}.arrow"), "wb") as sink, \
                pa.ipc.new_file(sink, batches[0].schema) as writer:
            for batch in batches:
                writer.write_batch(batch)


def _query(spark: Any, source: str, path: Path) -> Callable[[], tuple[int, int, int]]:
    def run() -> tuple[int, int, int]:
        if source == "kafkalog":
            reader = spark.read.format("kafkalog").load(str(path))
        elif source == "arrow-ceiling":
            reader = spark.read.format("arrow_ceiling").load(str(path))
        else:
            reader = spark.read.parquet(str(path))
        row = reader.selectExpr(*QUERY).collect()[0]
        return int(row[0]), int(row[1]), int(row[2])

    return run


@pytest.mark.parametrize("source", ["kafkalog", "parquet", "arrow-ceiling"])
def test_spark_read_vs_parquet(benchmark: Any, throughput: Any, session: Any, copies: dict[str, Path],
                               data: tuple[str, Path, tuple[int, int, int]], source: str) -> None:
    kind, _root, expected = data
    benchmark.group = f"spark read {RECORDS:,} records, {MASTER}, {kind} values: kafkalog vs Parquet"
    run = _query(session, source, copies[source])
    answer = benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=0)
    assert answer == expected
    throughput(benchmark, f"{KEYS[kind]}/{source}", records=expected[0])
    benchmark.extra_info["data"] = kind
