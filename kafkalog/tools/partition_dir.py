"""Partition dirs outside a :class:`~kafkalog.manager.log_manager.LogManager`: telling a partition dir from a log dir,
listing a log dir's partitions, and one partition dir with its log dir's checkpoint entries.

A log dir (one of a broker's ``log.dirs``) holds the broker's checkpoint files, ``meta.properties``, the
``.lock`` and ``.kafka_cleanshutdown`` files, and one directory per partition named ``<topic>-<partition>``
(``-delete`` and ``-future`` dirs too).  A partition dir holds the files of its segments, all named for an
offset as 20 digits (``<base>.log``, ``.index``, ``.timeindex``, ``.txnindex``, ``<offset>.snapshot``),
those files with a ``.cleaned``/``.swap``/``.deleted`` suffix while they are replaced, and from Kafka 0.11
a ``leader-epoch-checkpoint``.  The rules that tell them apart from a listing's names are
:mod:`kafkalog.dir_layout`'s (shared with the reader of dirs at URLs, :mod:`kafkalog.urls.partition`); the error
for a directory of neither kind is :class:`kafkalog.dir_layout.NotAPartitionDirError`.

Kafka: ``LogManager.loadLogs`` (``core/src/main/scala/kafka/log/LogManager.scala``, 0.10.1.1) lists a log
dir's subdirectories and reads each name with ``Log.parseTopicPartitionName``; :func:`partition_dirs` does
the same, keeping only the names that parse.  A broker is given its log dirs; the ``kafkalog`` commands and
the Spark jobs are given any path, so :func:`classify_dir` (kafkalog's own, no Kafka counterpart) says which
of the two it is, from what it holds.  Like a broker, :class:`PartitionDir` reads the recovery point and
log start offset from its log dir's checkpoints and writes back the entries of a partition it changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    OffsetCheckpoint,
)
from ..dir_layout import NotAPartitionDirError, classify_listing, looks_like_partition
from ..log import Log
from ..topic import InvalidPartitionDirError, TopicPartition, parse_topic_partition_name

__all__ = [
    "PartitionDir",
    "classify_dir",
    "partition_dirs",
    "partition_name",
]

# -- what a directory is -------------------------------------------------------------------------------

def partition_name(path: Path) -> TopicPartition | None:
    """The partition a directory is named for, or ``None`` when the name is not ``<topic>-<partition>``."""
    try:
        return parse_topic_partition_name(path.name)
    except InvalidPartitionDirError:
        return None


def classify_dir(path: str | os.PathLike[str]) -> str:
    """``"partition"`` or ``"logdir"``; raises :class:`NotAPartitionDirError` for anything else.

    A partition dir is named ``<topic>-<partition>`` and holds segment files (or nothing yet); a log dir
    holds the broker's checkpoint files, a ``meta.properties``, or partition dirs.
    """
    directory = Path(path)
    if not directory.exists():
        raise FileNotFoundError(f"No such directory: {directory}")
    if not directory.is_dir():
        raise NotAPartitionDirError(f"{directory} is a file, not a partition dir or a log dir")

    def partition_child(name: str) -> bool:
        child = directory / name
        return partition_name(child) is not None and child.is_dir() and looks_like_partition(os.listdir(child))

    return classify_listing(str(directory), partition_name(directory) is not None, os.listdir(directory),
                            partition_child)


def partition_dirs(log_dir: str | os.PathLike[str]) -> list[Path]:
    """The partition dirs of a log dir, sorted by name (``-delete`` and ``-future`` dirs included)."""
    root = Path(log_dir)
    return sorted(p for p in root.iterdir() if p.is_dir() and partition_name(p) is not None)


# -- one partition dir -----------------------------------------------------------------------------------

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

    def lower_checkpoint(self, name: str, offset: int) -> bool:
        """Move this partition's entry in checkpoint ``name`` down to ``offset`` when it is above it (written as
        :meth:`update_checkpoint` writes, so durable when this returns); an entry at or below ``offset``, or none,
        is left alone.  Returns whether the file changed."""
        current = self.checkpointed(name)
        if current is None or current <= offset:
            return False
        self.update_checkpoint(name, offset)
        return True

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
