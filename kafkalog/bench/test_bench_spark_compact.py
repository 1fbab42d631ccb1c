"""The Spark ``compact`` job against the library cleaner, on the data of ``make demo``.

The data: :func:`kafkalog.spark.workload.write_workload` with 200,000 records (``KAFKALOG_BENCH_COMPACT_RECORDS``
changes it) into two log dirs, as ``make demo`` writes its million: four topics, three of them compacted (v2
zstd or uncompressed, v1 gzip, v0 snappy; 9 partitions), 1 MiB segments, every log rolled so all of it is
cleanable.  Written once per module and kept aside; before each round (untimed) the saved log dirs are copied
afresh, so every round cleans the same dirty logs.

* ``spark``: ``kafkalog.spark.compact(spark, log_dirs, topic_configs=topic_configs())`` on ``local[2]``, the
  DataFrame of statistics included (its rows are collected by the job), as the demo calls it.  The session is
  started once and warmed by one compact of a copy (the Python workers' start and their import of kafkalog
  are paid there, not in a round); the demo's figure is that of a cold session.
* ``library``: what the job does without Spark, in one process: the log dirs opened by a
  :class:`~kafkalog.manager.log_manager.LogManager` (``min.cleanable.dirty.ratio`` 0, as the job sets it, and the topic
  configs), a :class:`~kafkalog.cleaner.log_cleaner.LogCleaner` with the cleaner's default config (one thread, 128 MiB
  map, the job's too) over its logs, ``run_once()`` until nothing is left to clean, the manager closed.

MB/s is the cleaners' ``bytes_read`` (the rounds' dirty sections and the segments recopied) over the round's
time; both rows read the same bytes, and each checks it.  Target: the Spark job at >= 0.5x the library.
Marked like the Spark read benchmark (its module name holds ``spark``): ``kafkalog bench --quick`` leaves it
out.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kafkalog import _impl
from kafkalog.cleaner import LogCleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.config.log_config import LogConfig
from kafkalog.manager.log_manager import LogManager
from kafkalog.spark.workload import TOPICS, topic_configs, write_workload

RECORDS = int(os.environ.get("KAFKALOG_BENCH_COMPACT_RECORDS", "200000"))
ROUNDS = 3
MASTER = "local[2]"
LOG_DIRS = ("kafka-logs-1", "kafka-logs-2")


class _Copies:
    """A fresh copy of the saved log dirs per round under ``root``, the previous round's removed first."""

    def __init__(self, saved: Path, root: Path, name: str) -> None:
        self.saved, self.root, self.name = saved, root, name
        self.count = 0
        self.current: Path | None = None

    def next(self) -> list[str]:
        self.release()
        self.count += 1
        self.current = self.root / f"{self.name}-{self.count}"
        shutil.copytree(self.saved, self.current)
        return [str(self.current / d) for d in LOG_DIRS]

    def release(self) -> None:
        if self.current is not None:
            shutil.rmtree(self.current, ignore_errors=True)
            self.current = None


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("compact-bench")
    try:
        with _impl.using("cython" if "cython" in _impl.both() else "python"):
            written = write_workload([root / "saved" / d for d in LOG_DIRS], RECORDS)
        assert written.total_records == RECORDS
        yield root / "saved"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def cleaned_bytes() -> dict[str, int]:
    """The bytes each row's cleaners read in its last round, by row: both must agree."""
    return {}


def _compacted_partitions() -> int:
    return sum(t.partitions for t in TOPICS if t.compacted)


def _run_rounds(benchmark: Any, copies: _Copies, clean: Callable[[list[str]], list[tuple[str, int, int]]]) -> int:
    """Rounds of ``clean`` (which returns a (topic, partition, bytes read) per cleaning round), each on a fresh
    copy; checks the last round cleaned every compacted partition and returns the bytes it read."""
    def setup() -> tuple[tuple[list[str]], dict[str, Any]]:
        return (copies.next(),), {}

    try:
        rounds = benchmark.pedantic(clean, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    finally:
        copies.release()
    assert len({(topic, partition) for topic, partition, _ in rounds}) == _compacted_partitions()
    assert {topic for topic, _, _ in rounds} == {t.name for t in TOPICS if t.compacted}
    return sum(read for _, _, read in rounds)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from kafkalog.spark import session

    spark = session(MASTER, "kafkalog-bench-compact")  # quiet: kafkalog.spark.quiet
    yield spark
    spark.stop()


def test_spark_compact_job(benchmark: Any, throughput: Any, spark: Any, saved: Path, tmp_path: Path,
                           cleaned_bytes: dict[str, int]) -> None:
    """``kafkalog.spark.compact`` over the two log dirs."""
    from kafkalog.spark import compact

    benchmark.group = f"compact the demo's {RECORDS:,} records"

    def clean(log_dirs: list[str]) -> list[tuple[str, int, int]]:
        rows = compact(spark, log_dirs, topic_configs=topic_configs()).collect()
        # The clicks topic (cleanup.policy=delete) comes back as rows that say it was skipped.
        return [(row.topic, row.partition, row.bytes_read) for row in rows if row.skipped is None]

    read = _run_rounds(benchmark, _Copies(saved, tmp_path, "spark"), clean)
    cleaned_bytes["spark"] = read
    if "library" in cleaned_bytes:
        assert read == cleaned_bytes["library"]
    benchmark.extra_info["master"] = spark.sparkContext.master
    throughput(benchmark, "compact/spark", nbytes=read)


def test_spark_compact_library(benchmark: Any, throughput: Any, saved: Path, tmp_path: Path,
                               cleaned_bytes: dict[str, int]) -> None:
    """The reference: a LogCleaner over the same partitions, in this process."""
    benchmark.group = f"compact the demo's {RECORDS:,} records"

    def clean(log_dirs: list[str]) -> list[tuple[str, int, int]]:
        with LogManager([Path(d) for d in log_dirs], LogConfig({"min.cleanable.dirty.ratio": "0"}),
                        topic_configs()) as manager:
            cleaner = LogCleaner(CleanerConfig(), log_dirs, dict(manager.logs_by_topic_partition()))
            stats = cleaner.run_once()
        return [(s.topic_partition.topic, s.topic_partition.partition, s.bytes_read) for s in stats]

    read = _run_rounds(benchmark, _Copies(saved, tmp_path, "library"), clean)
    cleaned_bytes["library"] = read
    if "spark" in cleaned_bytes:
        assert read == cleaned_bytes["spark"]
    throughput(benchmark, "compact/library", nbytes=read)
