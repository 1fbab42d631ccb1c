"""What a log dir and a partition dir hold, told from the names in a listing: the rules every reader of a
directory shares, whether it lists a local dir (:mod:`kafkalog.tools.partition_dir`) or a dir at a URL
(:mod:`kafkalog.urls.partition`).

A log dir (one of a broker's ``log.dirs``) holds the broker's checkpoint files, ``meta.properties``, and one
directory per partition named ``<topic>-<partition>``.  A partition dir holds the files of its segments, all
named for an offset as 20 digits (``<base>.log``, ``.index``, ``.timeindex``, ``.txnindex``,
``<offset>.snapshot``), those files with a ``.cleaned``/``.swap``/``.deleted`` suffix while they are
replaced, and from Kafka 0.11 a ``leader-epoch-checkpoint``.  Telling the two apart from what they hold is
kafkalog's own (a broker is told its log dirs): no Kafka counterpart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
)
from .errors import KafkaLogError
from .filenames import CLEANED_FILE_SUFFIX, DELETED_FILE_SUFFIX, META_PROPERTIES_FILE, SWAP_FILE_SUFFIX

__all__ = [
    "OFFSET_CHECKPOINTS",
    "SEGMENT_FILE_NAME",
    "TEMP_FILE_SUFFIXES",
    "NotAPartitionDirError",
    "classify_listing",
    "looks_like_partition",
]

#: A segment's file or a producer snapshot, named for its offset exactly as a broker writes it (20 digits).
SEGMENT_FILE_NAME = re.compile(r"^([0-9]{20})\.(log|index|timeindex|txnindex|snapshot)$")
#: The second suffixes of files being replaced or removed.
TEMP_FILE_SUFFIXES = (CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX, DELETED_FILE_SUFFIX)
#: The offset checkpoints in a log dir's root.
OFFSET_CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT_FILE, REPLICATION_OFFSET_CHECKPOINT_FILE,
                      LOG_START_OFFSET_CHECKPOINT_FILE, CLEANER_OFFSET_CHECKPOINT_FILE)


class NotAPartitionDirError(KafkaLogError, ValueError):
    """A directory that is neither a partition dir nor a log dir."""


def classify_listing(where: str, partition_named: bool, names: Sequence[str],
                     partition_child: Callable[[str], bool]) -> str:
    """The rule of :func:`~kafkalog.tools.partition_dir.classify_dir` over any listing (a local dir's, or an
    object store's for :func:`~kafkalog.urls.partition.classify_remote_dir`): ``partition_named`` says the
    dir's own name is ``<topic>-<partition>``, ``names`` are its entries, and ``partition_child(name)`` says
    whether an entry is a partition dir itself."""
    if partition_named and looks_like_partition(names):
        return "partition"
    if any(n in OFFSET_CHECKPOINTS or n == META_PROPERTIES_FILE for n in names) or any(
            partition_child(n) for n in names):
        return "logdir"
    raise NotAPartitionDirError(
        f"{where} is neither a partition dir (named <topic>-<partition>, holding segment files) nor a "
        "log dir (holding checkpoint files or partition dirs)")


def looks_like_partition(names: Sequence[str]) -> bool:
    """Holds segment files or a leader-epoch checkpoint, or nothing yet (a partition just created)."""
    return not names or LEADER_EPOCH_CHECKPOINT_FILE in names or any(
        SEGMENT_FILE_NAME.match(n) or n.endswith(TEMP_FILE_SUFFIXES) for n in names)
