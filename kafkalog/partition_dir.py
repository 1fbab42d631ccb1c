"""A partition directory on its own, outside a :class:`~kafkalog.manager.LogManager`: its log dir's
checkpoint entries, and opening it to read or to append.

A partition dir lives in a log dir (its parent), which holds the broker's lock and checkpoint files.
The ``kafkalog`` commands and the Spark jobs work on one partition at a time; like a broker they read
the recovery point and log start offset from the log dir's checkpoints and write back the entries of
the partitions they changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    OffsetCheckpoint,
)
from .log import Log
from .topic import TopicPartition, parse_topic_partition_name
from .verify import NotAPartitionDirError, classify_dir

__all__ = ["PartitionDir"]


@dataclass(frozen=True)
class PartitionDir:
    path: Path
    topic_partition: TopicPartition

    @classmethod
    def of(cls, arg: str | os.PathLike[str]) -> PartitionDir:
        """The partition dir ``arg`` names; a log dir, a file or a missing path is refused."""
        path = Path(arg)
        if classify_dir(path) != "partition":
            raise NotAPartitionDirError(f"{path} is a log dir: name one of its partition dirs "
                                        "(<topic>-<partition>)")
        return cls(path.resolve(), parse_topic_partition_name(path.resolve().name))

    @property
    def log_dir(self) -> Path:
        return self.path.parent

    def checkpointed(self, name: str) -> int | None:
        """This partition's entry in the log dir's checkpoint ``name``, if the file has one."""
        file = self.log_dir / name
        if not file.exists():
            return None
        return OffsetCheckpoint(file, read_only=True).read().get(self.topic_partition)

    def update_checkpoint(self, name: str, offset: int) -> None:
        """Set this partition's entry in checkpoint ``name`` (written atomically, as a broker does)."""
        file = self.log_dir / name
        checkpoint = OffsetCheckpoint(file)
        offsets = checkpoint.read()
        offsets[self.topic_partition] = offset
        checkpoint.write(offsets)

    @property
    def recovery_point(self) -> int:
        """The checkpointed recovery point; 0 (check everything) when none is recorded."""
        offset = self.checkpointed(RECOVERY_POINT_CHECKPOINT_FILE)
        return 0 if offset is None else offset

    @property
    def log_start_offset(self) -> int:
        """The checkpointed log start offset; 0 when none is recorded (the first segment's base wins)."""
        offset = self.checkpointed(LOG_START_OFFSET_CHECKPOINT_FILE)
        return 0 if offset is None else offset

    def cleaned_up_to(self, log_start_offset: int) -> int:
        """Where the next cleaning round starts: the log dir's cleaner checkpoint for this partition, but not
        below ``log_start_offset`` (the first step of Kafka's ``LogCleanerManager.cleanableOffsets``)."""
        checkpoint = self.checkpointed(CLEANER_OFFSET_CHECKPOINT_FILE)
        return log_start_offset if checkpoint is None else max(checkpoint, log_start_offset)

    def open_read_only(self) -> Log:
        """The log as it is on disk, changing nothing (a broker may be running on it), with the log start
        offset the log dir's checkpoint records."""
        return Log(self.path, read_only=True, log_start_offset=self.log_start_offset,
                   topic_partition=self.topic_partition)
