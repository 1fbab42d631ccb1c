"""The log dir the URL tests (and the Spark tests of URLs) read locally and by URL: written by kafkalog,
several segments per partition, keys, tombstones, two codecs, rising timestamps, indexed densely enough
that index-guided lookups matter."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkalog.config.log_config import LogConfig
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.topic import TopicPartition
from tests.support.golden_data import GOLDEN

#: The partitions written, and the records in each.
PARTITIONS = {TopicPartition("events", 0): 300, TopicPartition("events", 1): 120, TopicPartition("audit.log", 0): 40}
#: The timestamp of the first record; each next one is 10 ms later.
FIRST_TIMESTAMP = 1_700_000_000_000


def write_log_dir(root: Path) -> Path:
    config = LogConfig({"segment.bytes": "4096", "index.interval.bytes": "256", "cleanup.policy": "compact"})
    with LogDirWriter(root, config) as writer:
        for tp, count in PARTITIONS.items():
            log = writer.log(tp)
            for start in range(0, count, 3):
                codec = ("none", "gzip", "zstd")[(start // 3) % 3]
                records = [(f"key-{n % 25}".encode(), None if n % 17 == 0 else f"value {n} ".encode() * 4,
                            FIRST_TIMESTAMP + 10 * n) for n in range(start, min(start + 3, count))]
                log.append(MemoryRecords.with_records(records, compression=codec))
    return root


@contextmanager
def uploaded_logs(root: Path, bucket: str, golden: dict[str, str] | None = None) -> Iterator[tuple[Any, Path]]:
    """An S3 server (:func:`kafkalog.bench.s3_server.s3_server`) holding the test log dir at
    ``s3://<bucket>/logs`` and, when ``../shared/golden`` is there, the ``golden`` dirs (name -> path under it) at
    ``s3://<bucket>/golden/<name>``; yields the server and ``root``, which holds the local copies."""
    from kafkalog.urls.local_s3 import s3_server

    write_log_dir(root / "logs")
    with s3_server((bucket,)) as server:
        server.upload(root / "logs", f"{bucket}/logs")
        if golden and GOLDEN.is_dir():
            for name, relative in golden.items():
                # A copy of what was read, so the comparison is of the same bytes.
                shutil.copytree(GOLDEN / relative, root / "golden" / name)
                server.upload(root / "golden" / name, f"{bucket}/golden/{name}")
        yield server, root
