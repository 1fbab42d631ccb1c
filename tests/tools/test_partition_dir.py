"""Partition-dir discovery: :func:`kafkalog.tools.verify.classify_dir`, :func:`kafkalog.tools.verify.partition_dirs` and
:class:`kafkalog.tools.partition_dir.PartitionDir` (a partition dir, its log dir's checkpoints, a read-only open).

Each test writes its own log dir with :class:`~kafkalog.tools.log_dir_writer.LogDirWriter` (checkpoints included, as
a broker's clean shutdown leaves them), so the answers are known.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.checkpoint import CLEANER_OFFSET_CHECKPOINT_FILE, RECOVERY_POINT_CHECKPOINT_FILE, OffsetCheckpoint
from kafkalog.dir_layout import NotAPartitionDirError
from kafkalog.errors import ReadOnlyError
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.tools.partition_dir import PartitionDir, classify_dir, partition_dirs
from kafkalog.topic import TopicPartition

TP = TopicPartition("events", 3)


def _write(root: Path, tp: TopicPartition = TP, count: int = 5) -> None:
    with LogDirWriter(root) as writer:
        log = writer.log(tp)
        for i in range(count):
            log.append_as_leader(MemoryRecords.with_records([(b"k%d" % i, b"v%d" % i, 1_000 + i)]), leader_epoch=0)


def test_classify_dir(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    _write(root)
    assert classify_dir(root) == "logdir"
    assert classify_dir(root / "events-3") == "partition"
    (scratch / "plain").mkdir()
    with pytest.raises(NotAPartitionDirError):
        classify_dir(scratch / "plain")
    file = scratch / "a-file"
    file.write_bytes(b"")
    with pytest.raises(NotAPartitionDirError, match="is a file"):
        classify_dir(file)
    with pytest.raises(FileNotFoundError):
        classify_dir(scratch / "missing")


def test_an_empty_partition_dir_is_a_partition(scratch: Path) -> None:
    """A partition just created holds nothing yet."""
    (scratch / "new-0").mkdir()
    assert classify_dir(scratch / "new-0") == "partition"


def test_partition_dirs_sorted_and_only_partitions(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    _write(root, TopicPartition("b", 1))
    _write(root, TopicPartition("a", 0))
    (root / "not a partition").mkdir()
    assert [p.name for p in partition_dirs(root)] == ["a-0", "b-1"]


def test_partition_dir_of(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    _write(root)
    part = PartitionDir.of(root / "events-3")
    assert part.topic_partition == TP
    assert part.path == (root / "events-3").resolve()
    assert part.log_dir == root.resolve()
    with pytest.raises(NotAPartitionDirError, match="is a log dir"):
        PartitionDir.of(root)


def test_checkpoints_read_and_updated(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    _write(root, count=5)
    part = PartitionDir.of(root / "events-3")
    assert part.recovery_point == 5  # the writer's close checkpoints its recovery point
    assert part.log_start_offset == 0
    assert part.checkpointed(CLEANER_OFFSET_CHECKPOINT_FILE) is None
    assert part.cleaned_up_to(2) == 2  # no cleaner checkpoint: from the log start offset
    part.update_checkpoint(CLEANER_OFFSET_CHECKPOINT_FILE, 4)
    assert OffsetCheckpoint(root / CLEANER_OFFSET_CHECKPOINT_FILE, read_only=True).read() == {TP: 4}
    assert part.cleaned_up_to(2) == 4
    assert part.cleaned_up_to(6) == 6  # never below the log start offset


def test_missing_checkpoints_read_as_zero(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    _write(root)
    (root / RECOVERY_POINT_CHECKPOINT_FILE).unlink()
    part = PartitionDir.of(root / "events-3")
    assert part.recovery_point == 0


def test_open_read_only(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    _write(root, count=3)
    before = {p.name: p.read_bytes() for p in (root / "events-3").iterdir()}
    with PartitionDir.of(root / "events-3").open_read_only() as log:
        assert log.log_end_offset == 3
        assert [r.value for r in log.records()] == [b"v0", b"v1", b"v2"]
        with pytest.raises(ReadOnlyError):
            log.append_as_leader(MemoryRecords.with_records([(None, b"x", 0)]), leader_epoch=0)
    assert {p.name: p.read_bytes() for p in (root / "events-3").iterdir()} == before
