"""A partition directory as the write commands (``recover``, ``clean``) handle it.

A partition dir lives in a log dir (its parent), which holds the broker's lock and checkpoint files.
Like a broker, these commands take the log dir's ``.lock`` for as long as they work (a running broker
or kafkalog process makes them stop with a clear message), read the recovery point and log start
offset from the log dir's checkpoints, and write back the entry of the one partition they changed.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..checkpoint import LOG_START_OFFSET_CHECKPOINT_FILE, RECOVERY_POINT_CHECKPOINT_FILE, OffsetCheckpoint
from ..config import LogConfig
from ..topic import TopicPartition, parse_topic_partition_name
from ..verify import NotAPartitionDirError, classify_dir

__all__ = ["PartitionDir", "add_config_argument", "log_config_from"]


@dataclass(frozen=True)
class PartitionDir:
    path: Path
    topic_partition: TopicPartition

    @classmethod
    def of(cls, arg: str) -> PartitionDir:
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


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic config (Kafka's name, e.g. max.message.bytes=2097152); repeatable")


def log_config_from(pairs: list[str], defaults: dict[str, str] | None = None) -> LogConfig:
    """A :class:`LogConfig` from ``--config KEY=VALUE`` arguments over ``defaults``."""
    props = dict(defaults or {})
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"--config wants KEY=VALUE, got {pair!r}")
        props[key.strip()] = value.strip()
    return LogConfig(props)
