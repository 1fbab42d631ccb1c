"""The log dir the storage tests read locally and by URL: written by kafkalog, several segments per partition,
keys, tombstones, two codecs, rising timestamps, indexed densely enough that index-guided lookups matter."""

from __future__ import annotations

from pathlib import Path

from kafkalog.config import LogConfig
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.topic import TopicPartition

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
