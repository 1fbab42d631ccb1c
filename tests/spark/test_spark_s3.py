"""The Spark source and jobs reading through a real S3-compatible server (moto's, on 127.0.0.1): the rows of a
URL read are those of a local read of the same files.  Here, with the other Spark tests (the session they share
replaces the SIGINT handler, so it starts after the command-line tests)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

from kafkalog.urls.local_s3 import S3Server
from tests.urls.remote_data import PARTITIONS, uploaded_logs

BUCKET = "kafkalog-spark"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Server, Path]]:
    with uploaded_logs(tmp_path_factory.mktemp("s3-spark"), BUCKET) as found:
        yield found


def test_spark_reads_a_url_as_it_reads_the_local_dir(s3: tuple[S3Server, Path], spark: Any) -> None:
    server, root = s3
    reader = spark.read.format("kafkalog")
    for name, value in server.options.items():
        reader = reader.option(f"storage.{name}", value)
    remote = reader.option("maxPartitionBytes", "2000").load(f"s3://{BUCKET}/logs")
    local = spark.read.format("kafkalog").option("maxPartitionBytes", "2000").load(str(root / "logs"))
    columns = ["topic", "partition", "offset", "key", "value", "timestamp"]
    got = sorted(tuple(r) for r in remote.select(*columns).collect())
    assert got == sorted(tuple(r) for r in local.select(*columns).collect())
    assert len(got) == sum(PARTITIONS.values())


def test_the_spark_stats_job_reads_a_url_and_compaction_refuses_one(s3: tuple[S3Server, Path], spark: Any) -> None:
    from kafkalog.spark import compact, stats
    from kafkalog.spark.options import SparkOptionError

    server, root = s3
    columns = ["topic", "partition", "segments", "size", "log_start_offset", "log_end_offset", "batches", "records",
               "min_timestamp", "max_timestamp", "distinct_keys", "tombstones"]
    remote = stats(spark, f"s3://{BUCKET}/logs", server.options).select(*columns).collect()
    local = stats(spark, str(root / "logs")).select(*columns).collect()
    assert sorted(map(tuple, remote)) == sorted(map(tuple, local)) and len(remote) == len(PARTITIONS)
    with pytest.raises(SparkOptionError, match="reads URLs only"):
        compact(spark, f"s3://{BUCKET}/logs")


def test_spark_reads_a_url_glob_as_it_reads_the_local_glob(s3: tuple[S3Server, Path], spark: Any) -> None:
    server, root = s3
    reader = spark.read.format("kafkalog")
    for name, value in server.options.items():
        reader = reader.option(f"storage.{name}", value)
    columns = ["topic", "partition", "offset", "key", "value", "timestamp"]
    remote = sorted(tuple(r) for r in reader.load(f"s3://{BUCKET}/logs/events-*").select(*columns).collect())
    local = spark.read.format("kafkalog").load(str(root / "logs" / "events-*")).select(*columns).collect()
    assert remote == sorted(tuple(r) for r in local)
    assert len(remote) == sum(n for tp, n in PARTITIONS.items() if tp.topic == "events")
    with pytest.raises(Exception, match=r"no path matches 's3://kafkalog-spark/logs/nothing-\*'"):
        reader.load(f"s3://{BUCKET}/logs/nothing-*").collect()
