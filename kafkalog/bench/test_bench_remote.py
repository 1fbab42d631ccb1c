"""Reading through S3, and reading tiered storage through S3, against reading the same records locally: the Spark
source's tasks, run in this process.

Group ``read 500k records: S3 and tiered storage vs local``: a partition of 500,000 records (keys ``k<n>``,
100-byte values, half random bytes and half a repeated letter so zstd finds some of what real payloads give
it, 250 to a batch, uncompressed batches; one 64 MiB segment, closed by a roll as a broker closes a segment
before tiering it), written by kafkalog and put on an S3-compatible server on 127.0.0.1 (moto's,
:mod:`kafkalog.urls.local_s3`) three ways.  Every row plans the read as the data source does
(``plan_read`` of the options a user gives ``spark.read.format("kafkalog")``) and runs every task's ``read()``
(CRCs checked, Arrow record batches), counting the rows:

* ``local``: the log dir on disk (the local fast path);
* ``s3``: the log dir uploaded as it is, ``s3://bench/logs`` with ``storage.endpoint_url`` and credentials:
  listing, index and ranged reads through s3fs, 8 MiB blocks;
* ``aiven-s3``: the closed segment as Aiven's tiered-storage plugin uploads it (``layout`` =
  ``aiven-tiered-storage``): ``.rsm-manifest``, ``.indexes`` and the ``.log`` cut into 4 MiB chunks (a usual
  ``chunk.size``), each zstd-compressed; the reader fetches and decompresses the chunks a range needs;
* ``local-tiered-s3``: the closed segment as Kafka's ``LocalTieredStorage`` copies it (``layout`` =
  ``kafka-local-tiered-storage``): the broker's files under ``<topic>-<partition>-<topicId>/``.

The stores are built with :mod:`kafkalog.remote.upload`.  The server is moto's, in Python, in the same process:
the remote rows measure kafkalog's read path plus a slow server, a floor for what a real object store gives.
The ratios (local time / remote time) are reported; no target.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="the spark extra is not installed")
pytest.importorskip("s3fs", reason="the storage extra is not installed")
pytest.importorskip("moto.server", reason="moto[server] is not installed")

import fsspec

from kafkalog.config.log_config import LogConfig
from kafkalog.record import MemoryRecords
from kafkalog.remote.upload import closed_segments, upload_aiven, upload_local_tiered
from kafkalog.spark.options import ReadOptions
from kafkalog.spark.plan import plan_read
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.topic import TopicPartition
from kafkalog.urls.local_s3 import S3Server, s3_server

GROUP = "read 500k records: S3 and tiered storage vs local"
RECORDS = 500_000
PER_BATCH = 250
BUCKET = "bench"
TOPIC_ID = "LWgrMmVrT0a__7a4SasuPA"
#: Aiven's ``chunk.size`` for the store: 4 MiB.
CHUNK_SIZE = 4 << 20

#: Where each row reads: a path under the fixture's root, or a URL on the server, and the layout option.
WHERE = {
    "local": ("logs", None),
    "s3": ("s3://bench/logs", None),
    "aiven-s3": ("s3://bench/aiven", "aiven-tiered-storage"),
    "local-tiered-s3": ("s3://bench/local-tiered", "kafka-local-tiered-storage"),
}


@pytest.fixture(scope="module")
def s3_logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Server, Path]]:
    base = tmp_path_factory.mktemp("remote-bench")
    root = base / "logs"
    rng = random.Random(19)
    with LogDirWriter(root, LogConfig({"segment.bytes": str(64 << 20)})) as writer:
        log = writer.log(TopicPartition("bench", 0))
        for b in range(RECORDS // PER_BATCH):
            log.append(MemoryRecords.with_records(
                [(b"k%d" % (b * PER_BATCH + i), rng.randbytes(50) + b"v" * 50, 1_700_000_000_000 + b)
                 for i in range(PER_BATCH)]))
        # Closed, as a broker closes a segment before its tiered storage copies it: the remote stores hold
        # every record the log dir holds.
        log.roll()
    segments = closed_segments(root / "bench-0")
    assert segments[-1].end_offset == RECORDS - 1
    fs = fsspec.filesystem("file")
    upload_aiven(fs, (base / "aiven").as_posix(), "bench", 0, TOPIC_ID, segments, chunk_size=CHUNK_SIZE)
    upload_local_tiered(fs, (base / "local-tiered").as_posix(), "bench", 0, TOPIC_ID, segments)
    with s3_server((BUCKET,)) as server:
        for name in ("logs", "aiven", "local-tiered"):
            server.upload(base / name, f"{BUCKET}/{name}")
        yield server, base


def _read_all(options: dict[str, str]) -> int:
    rows = 0
    for task in plan_read(ReadOptions.parse(options)):
        for batch in task.read():
            rows += batch.num_rows
    return rows


@pytest.mark.parametrize("where", list(WHERE))
def test_read_remote_vs_local(benchmark: Any, s3_logs: tuple[S3Server, Path], where: str,
                              throughput: Callable[..., None]) -> None:
    server, base = s3_logs
    benchmark.group = GROUP
    path, layout = WHERE[where]
    options = {"path": str(base / path)} if where == "local" else {
        "path": path, **{f"storage.{name}": str(value) for name, value in server.options.items()}}
    if layout is not None:
        options["layout"] = layout
    rows = benchmark.pedantic(_read_all, args=(options,), rounds=3, warmup_rounds=1)
    assert rows == RECORDS
    throughput(benchmark, f"remote/{where}", records=RECORDS)
