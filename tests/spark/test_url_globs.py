"""Globs in URL paths of the ``kafkalog`` source, expanded as local globs are (sorted, each match read as if named;
a glob that matches nothing is an error naming it), by the URL's filesystem (fsspec's ``glob``): over log dirs,
over partition dirs, and over tiered stores, on ``memory://`` (parsing and planning, no Spark).  The Spark
session's read of a glob through the S3 server is in ``test_spark_s3``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

pytest.importorskip("pyarrow", reason="kafkalog.spark needs the spark extra")

from kafkalog.errors import StorageOptionError
from kafkalog.spark.options import ReadOptions, SparkOptionError
from kafkalog.spark.plan import find_partitions, plan_read
from kafkalog.tools.partition_dir import PartitionDir
from tests.urls.remote_data import write_log_dir


def _rows(options: dict[str, str]) -> list[tuple[Any, ...]]:
    out = []
    for task in plan_read(ReadOptions.parse(options)):
        for batch in task.read():
            columns = batch.to_pydict()
            out.extend(zip(columns["topic"], columns["partition"], columns["offset"], columns["value"], strict=True))
    return sorted(out)


def _library_rows(*dirs: Path) -> list[tuple[Any, ...]]:
    out = []
    for d in dirs:
        partition = PartitionDir.of(d)
        tp = partition.topic_partition
        with partition.open_read_only() as log:
            out.extend((tp.topic, tp.partition, r.offset, r.value) for r in log.records())
    return sorted(out)


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Two brokers' log dirs (the same topics written into each: a partition found twice) and a third holding
    other topics, copied to ``memory:///<root>/broker-<n>/kafka-logs``; yields the root URL and the local copy."""
    local = tmp_path_factory.mktemp("url-globs")
    write_log_dir(local / "broker-1" / "kafka-logs")
    fs = fsspec.filesystem("memory")
    root = f"/kafkalog-globs-{uuid.uuid4().hex}"
    fs.put(str(local / "broker-1"), f"{root}/broker-1", recursive=True)
    yield f"memory://{root}", local
    fs.rm(root, recursive=True)


def test_a_glob_over_partition_dirs_reads_what_it_matches(brokers: tuple[str, Path]) -> None:
    url, local = brokers
    options = ReadOptions.parse({"path": f"{url}/broker-1/kafka-logs/events-*"})
    assert options.paths == (f"{url}/broker-1/kafka-logs/events-0", f"{url}/broker-1/kafka-logs/events-1")
    assert _rows({"path": f"{url}/broker-1/kafka-logs/events-*"}) == _library_rows(
        *sorted((local / "broker-1" / "kafka-logs").glob("events-*")))
    # The same rule as a local glob of the same dirs.
    assert _rows({"path": str(local / "broker-1" / "kafka-logs" / "events-*")}) == _rows(
        {"path": f"{url}/broker-1/kafka-logs/events-*"})


def test_a_glob_over_log_dirs_and_in_a_list(brokers: tuple[str, Path]) -> None:
    url, local = brokers
    logs = local / "broker-1" / "kafka-logs"
    options = ReadOptions.parse({"path": f"{url}/broker-?/kafka-logs"})
    assert options.paths == (f"{url}/broker-1/kafka-logs",)
    assert _rows({"path": f"{url}/broker-*/kafka-logs"}) == _library_rows(
        *sorted(p for p in logs.iterdir() if p.is_dir()))
    # paths: globs and plain URLs together, a place named twice read once.
    listed = ReadOptions.parse({"paths": f'["{url}/broker-1/kafka-logs/audit.log-0", "{url}/broker-1/kafka-logs/a*"]'})
    assert listed.paths == (f"{url}/broker-1/kafka-logs/audit.log-0",)
    assert [str(tp) for tp, _ in find_partitions(listed.paths, listed)] == ["audit.log-0"]


def test_a_url_glob_that_matches_nothing_is_an_error(brokers: tuple[str, Path]) -> None:
    url, _local = brokers
    with pytest.raises(SparkOptionError, match=r"no path matches 'memory://.*/broker-\*/nothing-\*'"):
        ReadOptions.parse({"path": f"{url}/broker-*/nothing-*"})
    with pytest.raises(SparkOptionError, match=r"no path matches 'memory://.*/elsewhere-\[0-9\]'"):
        ReadOptions.parse({"paths": f'["{url}/broker-1/kafka-logs", "{url}/elsewhere-[0-9]"]'})
    # A plain URL is left for the planner, as a plain local path is.
    assert ReadOptions.parse({"path": f"{url}/nothing"}).paths == (f"{url}/nothing",)
    # The filesystem's options are checked before anything is listed.
    with pytest.raises(StorageOptionError, match="takes no option"):
        ReadOptions.parse({"path": f"{url}/broker-*", "storage.no_such_option": "1"})
