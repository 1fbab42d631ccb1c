"""A Spark standalone cluster on this machine (:class:`kafkalog.spark.standalone.StandaloneCluster`): a master
and two workers started from PySpark's ``spark-class``, each worker with its own work dir, and the ``kafkalog``
source read on it by a driver in its own process (a process has one SparkContext, and the test session's
``local[2]`` one is not this cluster's), from an S3-compatible server on 127.0.0.1 (moto's) and from the local
disk, and a tiered store in Aiven's layout from the S3 server.  Every read must give the rows the library reads,
and the executors, not the driver, must have read them.  One cluster serves those reads (a class-scoped
fixture, stopped before the next tests); the demo's ``--cluster`` run, here too, starts its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import fsspec
import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("moto.server", reason="moto[server] is not installed")

from kafkalog.config.log_config import LogConfig
from kafkalog.record import MemoryRecords
from kafkalog.remote.upload import upload_aiven
from kafkalog.spark.standalone import StandaloneCluster, StandaloneClusterError
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.tools.partition_dir import PartitionDir
from kafkalog.topic import TopicPartition
from kafkalog.urls.local_s3 import S3Server, s3_server
from tests.remote.tiered_stores import library_read, write_rich_partition

pytestmark = pytest.mark.slow

TOPIC_ID = "LWgrMmVrT0a__7a4SasuPA"

#: The driver: runs each read of a JSON list (``name``, ``path``, the options) on the cluster and prints each
#: read's rows, sorted (key and value as hex), how many tasks read them, and the application's id.
DRIVER = textwrap.dedent("""
    import json, sys
    from kafkalog.spark import session

    master, reads = sys.argv[1], json.loads(sys.argv[2])
    spark = session(master, "kafkalog-cluster-test", spark_executor_memory="512m", spark_executor_cores="1")
    out = {"app": spark.sparkContext.applicationId}
    for read in reads:
        reader = spark.read.format("kafkalog")
        for key, value in read["options"].items():
            reader = reader.option(key, value)
        df = reader.load(read["path"])
        rows = df.selectExpr("topic", "partition", "offset", "lower(hex(key))", "lower(hex(value))",
                             "unix_millis(timestamp)").collect()
        out[read["name"]] = sorted(list(r) for r in rows)
        out[read["name"] + "_tasks"] = df.rdd.getNumPartitions()
    print(json.dumps(out))
    spark.stop()
""")


def _write(root: Path) -> list[list[object]]:
    rows: list[list[object]] = []
    with LogDirWriter(root, LogConfig({"segment.bytes": 64 * 1024})) as writer:
        for tp in (TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("users", 0)):
            log = writer.log(tp)
            for first in range(0, 3000, 500):
                records = [(f"k{first + i}".encode(), f"{tp}:{first + i}".encode() * 4, 1_700_000_000_000 + i)
                           for i in range(500)]
                codec = "lz4" if tp.topic == "users" else "none"
                info = log.append(MemoryRecords.with_records(records, compression=codec))
                rows.extend([tp.topic, tp.partition, info.first_offset + i, k.hex(), v.hex(), t]
                            for i, (k, v, t) in enumerate(records))
    return sorted(rows)


class Cluster(NamedTuple):
    s3: S3Server
    master_url: str
    root: Path


def _run_driver(cluster: Cluster, reads: list[dict[str, Any]]) -> dict[str, Any]:
    """The driver's output for ``reads``, after checking that every worker ran an executor of its application
    in its own work dir (the reads ran across the cluster, not in the driver)."""
    run = subprocess.run([sys.executable, "-c", DRIVER, cluster.master_url, json.dumps(reads)], capture_output=True,
                         timeout=420, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
    out: dict[str, Any] = json.loads(run.stdout.decode().strip().splitlines()[-1])
    for n in (1, 2):
        assert any((cluster.root / f"worker-{n}" / out["app"]).iterdir()), f"worker-{n} ran no executor"
    return out


def _s3_options(s3: S3Server) -> dict[str, str]:
    return {f"storage.{key}": str(value) for key, value in s3.options.items()}


@pytest.fixture(scope="class")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster (a master, two workers) and the S3 server, started once for the class's reads and stopped
    after them, before the tests after them start clusters of their own."""
    root = tmp_path_factory.mktemp("cluster")
    with s3_server(buckets=("cluster-test",)) as s3, \
            StandaloneCluster(workers=2, cores=1, memory="1g", root=root, timeout=180) as started:
        assert started.master_url.startswith("spark://127.0.0.1:")
        yield Cluster(s3, started.master_url, root)


class TestOnOneCluster:
    """The reads that share the :func:`cluster`."""

    def test_the_source_reads_on_a_standalone_cluster_as_the_library_reads(self, cluster: Cluster,
                                                                            tmp_path: Path) -> None:
        root = tmp_path / "logs"
        expected = _write(root)
        # The library's own read gives the same rows: the expectation is not just what was appended.
        library = []
        for directory in sorted(p for p in root.iterdir() if p.is_dir()):
            partition = PartitionDir.of(directory)
            tp = partition.topic_partition
            with partition.open_read_only() as log:
                library.extend([tp.topic, tp.partition, r.offset, r.key.hex(), r.value.hex(), r.timestamp]
                               for r in log.records())
        assert sorted(library) == expected

        url = cluster.s3.upload(root, "cluster-test/logs")
        out = _run_driver(cluster, [
            {"name": "s3", "path": url, "options": {"maxPartitionBytes": "65536", **_s3_options(cluster.s3)}},
            {"name": "local", "path": str(root), "options": {"maxPartitionBytes": "65536"}}])
        assert out["s3"] == expected
        assert out["local"] == expected
        # 64 KiB segments and maxPartitionBytes: several tasks a partition, cut alike from S3 and from the disk.
        assert out["s3_tasks"] == out["local_tasks"] > 6

    def test_the_source_reads_aiven_tiered_storage_from_s3_on_the_cluster(self, cluster: Cluster,
                                                                          tmp_path: Path) -> None:
        """A partition kafkalog wrote (zstd, lz4 and plain batches, an aborted and a committed transaction),
        its closed segments uploaded as Aiven's plugin uploads them (zstd chunks, under ``tiered/``) to the S3
        server: the cluster reads the rows the library reads from the partition dir, with ``layout`` found
        and named, and with read_committed."""
        directory = tmp_path / "orders-0"
        segments = write_rich_partition(directory)
        store = tmp_path / "aiven"
        upload_aiven(fsspec.filesystem("file"), store.as_posix(), "orders", 0, TOPIC_ID, segments,
                     prefix="tiered/", chunk_size=2000)
        url = cluster.s3.upload(store, "cluster-test/aiven")
        options = {"maxPartitionBytes": "8000", **_s3_options(cluster.s3)}
        out = _run_driver(cluster, [
            {"name": "auto", "path": url, "options": options},
            {"name": "named", "path": url, "options": {**options, "layout": "aiven-tiered-storage",
                                                       "kafka.isolation.level": "read_committed"}}])

        def library(isolation: str) -> list[list[object]]:
            return sorted(["orders", 0, offset, key.hex(), value.hex(), timestamp]
                          for offset, key, value, timestamp in library_read(directory, segments, isolation=isolation))

        expected = library("read_uncommitted")
        assert out["auto"] == expected and len(expected) > 1000
        committed = library("read_committed")
        assert out["named"] == committed and len(committed) < len(expected)
        assert out["auto_tasks"] == out["named_tasks"] > 3


def test_the_demo_runs_on_a_cluster_through_s3(tmp_path: Path) -> None:
    """``python -m kafkalog.spark.demo --cluster`` (``make demo-cluster``): its checks pass, and it says where
    it ran and what it read from."""
    run = subprocess.run([sys.executable, "-m", "kafkalog.spark.demo", "--cluster", "--records", "20000"],
                         capture_output=True, timeout=600, env={**os.environ, "PYTHONPATH": os.getcwd()})
    text = run.stdout.decode()
    assert run.returncode == 0, text + run.stderr.decode(errors="replace")[-3000:]
    assert "A Spark standalone cluster (spark://127.0.0.1:" in text
    assert "2. Reading it back from S3: the log dirs uploaded to http://127.0.0.1:" in text
    assert "All checks passed." in text
    assert run.stderr.decode().strip() == ""


def test_the_demo_refuses_a_master_with_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalog.spark.demo import main

    with pytest.raises(SystemExit) as exited:
        main(["--cluster", "--master", "local[2]"])
    assert exited.value.code == 2
    assert "give --cluster or --master, not both" in capsys.readouterr().err


def test_a_worker_that_cannot_start_is_reported_with_its_log(tmp_path: Path) -> None:
    cluster = StandaloneCluster(workers=1, memory="lots", root=tmp_path / "cluster", timeout=120)
    with pytest.raises(StandaloneClusterError, match="worker-1") as caught:
        cluster.start()
    assert "the end of worker-1's log" in str(caught.value)
    # Stopped on the way out: the master that did start is not left running.
    assert cluster.root is None and not cluster._processes


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        StandaloneCluster(workers=0)
    with pytest.raises(ValueError, match="at least one core"):
        StandaloneCluster(cores=0)
