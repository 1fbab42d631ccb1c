"""Reading through S3 against reading the same files locally: the Spark source's tasks, run in this process.

Group ``read 500k records: S3 vs local``: a partition of 500,000 records (keys ``k<n>``, 100-byte values, 250
to a batch, uncompressed; one 64 MiB segment), written by kafkalog, uploaded to an S3-compatible server on
127.0.0.1 (moto's, :mod:`kafkalog.bench.s3_server`).  Both rows plan the read as the data source does
(``plan_read``) and run every task's ``read()`` (CRCs checked, Arrow record batches), counting the rows:

* ``local``: the log dir on disk (the local fast path);
* ``s3``: ``s3://bench/logs`` with ``storage.endpoint_url`` and credentials: listing, index and ranged reads
  through s3fs, 8 MiB blocks.

The server is moto's, in Python, in the same process: the S3 row measures kafkalog's read path plus a slow
server, a floor for what a real object store gives.  The ratio (local time / S3 time) is reported; no target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="the spark extra is not installed")
pytest.importorskip("s3fs", reason="the storage extra is not installed")
pytest.importorskip("moto.server", reason="moto[server] is not installed")

from kafkalog.config import LogConfig
from kafkalog.record import MemoryRecords
from kafkalog.spark.options import ReadOptions
from kafkalog.spark.plan import plan_read
from kafkalog.storage.local_s3 import S3Server, s3_server
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.topic import TopicPartition

GROUP = "read 500k records: S3 vs local"
RECORDS = 500_000
PER_BATCH = 250
BUCKET = "bench"


@pytest.fixture(scope="module")
def s3_logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Server, Path]]:
    root = tmp_path_factory.mktemp("remote-bench") / "logs"
    with LogDirWriter(root, LogConfig({"segment.bytes": str(64 << 20)})) as writer:
        log = writer.log(TopicPartition("bench", 0))
        for b in range(RECORDS // PER_BATCH):
            log.append(MemoryRecords.with_records(
                [(b"k%d" % (b * PER_BATCH + i), b"v" * 100, 1_700_000_000_000 + b) for i in range(PER_BATCH)]))
    with s3_server((BUCKET,)) as server:
        server.upload(root, f"{BUCKET}/logs")
        yield server, root


def _read_all(options: dict[str, str]) -> int:
    rows = 0
    for task in plan_read(ReadOptions.parse(options)):
        for batch in task.read():
            rows += batch.num_rows
    return rows


@pytest.mark.parametrize("where", ["local", "s3"])
def test_read_s3_vs_local(benchmark: Any, s3_logs: tuple[S3Server, Path], where: str,
                          throughput: Callable[..., None]) -> None:
    server, root = s3_logs
    benchmark.group = GROUP
    options = {"path": str(root)} if where == "local" else {
        "path": f"s3://{BUCKET}/logs", **{f"storage.{name}": str(value) for name, value in server.options.items()}}
    rows = benchmark.pedantic(_read_all, args=(options,), rounds=3, warmup_rounds=1)
    assert rows == RECORDS
    throughput(benchmark, f"remote/{where}", records=RECORDS)
