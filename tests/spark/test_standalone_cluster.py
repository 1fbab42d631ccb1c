"""A Spark standalone cluster on this machine (:class:`kafkalog.spark.standalone.StandaloneCluster`): a master
and two workers started from PySpark's ``spark-class``, each worker with its own work dir, and the ``kafkalog``
source read on it by a driver in its own process (a process has one SparkContext, and the test session's
``local[2]`` one is not this cluster's), from an S3-compatible server on 127.0.0.1 (moto's) and from the local
disk.  Both reads must give the rows the library reads, and the executors, not the driver, must have read them.
The demo's ``--cluster`` run is here too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("moto.server", reason="moto[server] is not installed")

from kafkalog.config import LogConfig
from kafkalog.record import MemoryRecords
from kafkalog.spark.standalone import StandaloneCluster, StandaloneClusterError
from kafkalog.storage.local_s3 import s3_server
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.tools.partition_dir import PartitionDir
from kafkalog.topic import TopicPartition

pytestmark = pytest.mark.slow

#: The driver: reads the log dir from S3 (URL and storage options in argv) and from the local disk on the
#: cluster, and prints both reads' rows, sorted, and how many tasks read them.
DRIVER = textwrap.dedent("""
    import json, sys
    from kafkalog.spark import session

    master, url, options, path = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    spark = session(master, "kafkalog-cluster-test", spark_executor_memory="512m", spark_executor_cores="1")
    out = {}
    for name, where in (("s3", url), ("local", path)):
        reader = spark.read.format("kafkalog").option("maxPartitionBytes", "65536")
        if name == "s3":
            for key, value in options.items():
                reader = reader.option("storage." + key, value)
        df = reader.load(where)
        out[name] = sorted((r.topic, r.partition, r.offset, r.key.decode(), r.value.decode()) for r in df.collect())
        out[name + "_tasks"] = df.rdd.getNumPartitions()
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
                rows.extend([tp.topic, tp.partition, info.first_offset + i, k.decode(), v.decode()]
                            for i, (k, v, _) in enumerate(records))
    return sorted(rows)


def test_the_source_reads_on_a_standalone_cluster_as_the_library_reads(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    expected = _write(root)
    # The library's own read gives the same rows: the expectation is not just what was appended.
    library = []
    for directory in sorted(p for p in root.iterdir() if p.is_dir()):
        partition = PartitionDir.of(directory)
        tp = partition.topic_partition
        with partition.open_read_only() as log:
            library.extend([tp.topic, tp.partition, r.offset, r.key.decode(), r.value.decode()]
                           for r in log.records())
    assert sorted(library) == expected

    with s3_server(buckets=("cluster-test",)) as s3, \
            StandaloneCluster(workers=2, cores=1, memory="1g", root=tmp_path / "cluster", timeout=180) as cluster:
        assert cluster.master_url.startswith("spark://127.0.0.1:")
        url = s3.upload(root, "cluster-test/logs")
        run = subprocess.run([sys.executable, "-c", DRIVER, cluster.master_url, url, json.dumps(s3.options),
                              str(root)], capture_output=True, timeout=420,
                             env={**os.environ, "PYTHONPATH": os.getcwd()})
        assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
        out = json.loads(run.stdout.decode().strip().splitlines()[-1])
        work_dirs = [tmp_path / "cluster" / "worker-1", tmp_path / "cluster" / "worker-2"]
        # Each worker started an executor in its own work dir: the read ran across the cluster.
        assert all(any(d.glob("app-*/*")) for d in work_dirs)
    assert out["s3"] == expected
    assert out["local"] == expected
    # 64 KiB segments and maxPartitionBytes: several tasks a partition, cut alike from S3 and from the disk.
    assert out["s3_tasks"] == out["local_tasks"] > 6


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
