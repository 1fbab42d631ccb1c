""":func:`kafkalog.tools.stats.partition_stats`: a partition's statistics, read-only, checked against logs written here
(so every count is known): segments, offsets, batches and records, timestamps, formats and codecs, keys and
tombstones, and the cleaner's view (first dirty offset, dirty ratio)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.checkpoint import CLEANER_OFFSET_CHECKPOINT_FILE, OffsetCheckpoint
from kafkalog.config.log_config import LogConfig
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.tools.stats import PartitionStats, partition_stats
from kafkalog.topic import TopicPartition

TP = TopicPartition("stats", 1)


def _fill(root: Path, config: LogConfig | None = None) -> Path:
    """Four batches: two keyed uncompressed (one a tombstone), one gzip, one unkeyed sent as v1 (which the log,
    at its default message format, stores as v2)."""
    with LogDirWriter(root, config) as writer:
        log = writer.log(TP)
        log.append_as_leader(MemoryRecords.with_records([(b"a", b"1", 1_000), (b"b", b"2", 1_001)]), leader_epoch=0)
        log.append_as_leader(MemoryRecords.with_records([(b"a", None, 1_002)]), leader_epoch=0)
        log.append_as_leader(MemoryRecords.with_records([(b"c", b"3", 1_003), (b"a", b"4", 1_010)],
                                                        compression="gzip"), leader_epoch=0)
        log.append_as_leader(MemoryRecords.with_records([(None, b"5", 999)], magic=1), leader_epoch=0)
    return root / "stats-1"


def test_counts(impl: ModuleType, scratch: Path) -> None:
    directory = _fill(scratch / "logs")
    stats = partition_stats(directory)
    assert isinstance(stats, PartitionStats)
    assert (stats.topic, stats.partition) == ("stats", 1)
    assert stats.segments == 1
    assert stats.size == (directory / "00000000000000000000.log").stat().st_size
    assert (stats.log_start_offset, stats.log_end_offset) == (0, 6)
    assert (stats.batches, stats.records) == (4, 6)
    assert (stats.min_timestamp, stats.max_timestamp) == (999, 1_010)
    assert stats.magics == {"v2": 4}  # the v1 batch was up-converted on append
    assert stats.codecs == {"none": 3, "gzip": 1}
    assert stats.keyed_records == 5
    assert stats.distinct_keys == 3
    assert stats.tombstones == 1
    assert stats.as_dict()["records"] == 6


def test_reads_only(impl: ModuleType, scratch: Path) -> None:
    directory = _fill(scratch / "logs")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in directory.parent.rglob("*") if p.is_file()}
    partition_stats(directory)
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in directory.parent.rglob("*") if p.is_file()}
    assert after == before


def test_dirty_ratio_follows_the_cleaner_checkpoint(impl: ModuleType, scratch: Path) -> None:
    config = LogConfig({"segment.bytes": 200, "cleanup.policy": "compact"})
    root = scratch / "logs"
    with LogDirWriter(root, config) as writer:
        log = writer.log(TP)
        for i in range(30):
            log.append_as_leader(MemoryRecords.with_records([(b"k%d" % (i % 3), b"%030d" % i, 1_000)]),
                                 leader_epoch=0)
        segments = log.number_of_segments
    assert segments > 2
    dirty = partition_stats(root / "stats-1", config)
    assert dirty.first_dirty_offset == 0
    assert dirty.dirty_ratio == pytest.approx(1.0)  # nothing cleaned yet: every cleanable byte is dirty
    OffsetCheckpoint(root / CLEANER_OFFSET_CHECKPOINT_FILE).write({TP: 10})
    part = partition_stats(root / "stats-1", config)
    assert part.first_dirty_offset == 10
    assert part.dirty_ratio is not None and 0.0 < part.dirty_ratio < 1.0


def test_empty_partition(impl: ModuleType, scratch: Path) -> None:
    (scratch / "logs" / "empty-0").mkdir(parents=True)
    stats = partition_stats(scratch / "logs" / "empty-0")
    assert (stats.topic, stats.partition) == ("empty", 0)
    assert (stats.batches, stats.records, stats.log_end_offset) == (0, 0, 0)
    assert (stats.min_timestamp, stats.max_timestamp) == (None, None)
    assert list((scratch / "logs" / "empty-0").iterdir()) == []


def test_progress_counts_the_bytes_read(impl: ModuleType, scratch: Path) -> None:
    directory = _fill(scratch / "logs")
    seen: list[int] = []
    partition_stats(directory, progress=seen.append)
    assert sum(seen) == (directory / "00000000000000000000.log").stat().st_size


def test_not_a_partition_dir(impl: ModuleType, scratch: Path) -> None:
    (scratch / "not-a-partition").mkdir()
    with pytest.raises(Exception, match="not-a-partition"):
        partition_stats(scratch / "not-a-partition")
