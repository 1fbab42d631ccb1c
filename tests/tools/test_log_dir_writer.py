""":class:`kafkalog.tools.log_dir_writer.LogDirWriter`: exclusive appends to the partitions of a log dir.

The writer takes the log dir's lock, opens (or creates) a partition's log at first use with the dir's
checkpointed recovery point and log start offset, and on close flushes, checkpoints both, restores the
clean-shutdown marker it took, and releases the lock; ``abandon`` closes without checkpointing, so the next
opener recovers.  (Its lock seen from a second writer is in ``tests/log/test_dir_lock.py``.)
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.checkpoint import LOG_START_OFFSET_CHECKPOINT_FILE, RECOVERY_POINT_CHECKPOINT_FILE, OffsetCheckpoint
from kafkalog.config.log_config import LogConfig
from kafkalog.filenames import CLEAN_SHUTDOWN_FILE
from kafkalog.log import Log
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.topic import TopicPartition

A = TopicPartition("a", 0)
B = TopicPartition("b", 2)


def _records(*values: bytes) -> MemoryRecords:
    return MemoryRecords.with_records([(None, v, 1_000) for v in values])


def test_creates_the_log_dir_and_partitions(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "new" / "logs"
    with LogDirWriter(root) as writer:
        log = writer.log(A)
        assert writer.log(A) is log  # opened once
        log.append_as_leader(_records(b"x", b"y"), leader_epoch=0)
        writer.log(B).append_as_leader(_records(b"z"), leader_epoch=0)
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["a-0", "b-2"]
    with Log(root / "a-0", read_only=True) as log:
        assert [r.value for r in log.records()] == [b"x", b"y"]


def test_close_checkpoints_and_the_next_open_recovers_nothing(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    with LogDirWriter(root) as writer:
        writer.log(A).append_as_leader(_records(b"1", b"2", b"3"), leader_epoch=0)
        writer.log(B).append_as_leader(_records(b"4"), leader_epoch=0)
    assert OffsetCheckpoint(root / RECOVERY_POINT_CHECKPOINT_FILE, read_only=True).read() == {A: 3, B: 1}
    assert OffsetCheckpoint(root / LOG_START_OFFSET_CHECKPOINT_FILE, read_only=True).read() == {A: 0, B: 0}
    with LogDirWriter(root) as writer:
        log = writer.log(A)
        assert log.recovery_point == 3
        assert log.log_end_offset == 3
        log.append_as_leader(_records(b"5"), leader_epoch=0)
    assert OffsetCheckpoint(root / RECOVERY_POINT_CHECKPOINT_FILE, read_only=True).read() == {A: 4, B: 1}


def test_clean_shutdown_marker_taken_and_restored(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    root.mkdir()
    (root / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
    writer = LogDirWriter(root)
    try:
        assert not (root / CLEAN_SHUTDOWN_FILE).exists()  # a crash from here on is not a clean shutdown
        writer.log(A).append_as_leader(_records(b"x"), leader_epoch=0)
    finally:
        writer.close()
    assert (root / CLEAN_SHUTDOWN_FILE).exists()


def test_abandon_leaves_no_checkpoint_and_no_marker(impl: ModuleType, scratch: Path) -> None:
    root = scratch / "logs"
    root.mkdir()
    (root / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
    writer = LogDirWriter(root)
    writer.log(A).append_as_leader(_records(b"x", b"y"), leader_epoch=0)
    writer.abandon()
    assert not (root / CLEAN_SHUTDOWN_FILE).exists()
    assert OffsetCheckpoint(root / RECOVERY_POINT_CHECKPOINT_FILE, read_only=True).read() == {}
    with LogDirWriter(root) as again:  # what was written is still there, recovered
        log = again.log(A)
        assert log.recovery_point == 0
        assert [r.value for r in log.records()] == [b"x", b"y"]


def test_closed_writer_refuses(impl: ModuleType, scratch: Path) -> None:
    writer = LogDirWriter(scratch / "logs")
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.log(A)


def test_config_is_every_log_s_config(impl: ModuleType, scratch: Path) -> None:
    config = LogConfig({"segment.bytes": 1024})
    with LogDirWriter(scratch / "logs", config) as writer:
        log = writer.log(A)
        assert log.config.segment_bytes == 1024
        for i in range(40):
            log.append_as_leader(_records(b"%032d" % i), leader_epoch=0)
        assert log.number_of_segments > 1
