"""A partition dir's ``partition.metadata``: the id of the topic the partition belongs to, read-only.

Port of ``PartitionMetadataReadBuffer.read`` (``storage/.../internals/checkpoint/PartitionMetadataReadBuffer.java``,
Kafka 3.8.0) over the file ``PartitionMetadataFile`` names.  Kafka 0.10.1.1 has no such file: topic ids came
with KIP-516 (2.8).  A broker writes it beside a partition's segments when it first learns the topic's id::

    version: 0
    topic_id: dqK7-AskTSux4so_l6jJXg

Each line is a key, a colon, whitespace and a value (Kafka splits the line at ``:\\s+`` and wants exactly two
parts).  The version is a Java ``int`` of at least 0 (a newer version is read as this one, for downgrades); the
topic id is a UUID in URL-safe base64 without padding and may not be the zero UUID.  Only the first two lines
are read, as Kafka reads them.

The id tells apart two topics of the same name: a topic deleted and created again keeps its name and gets a new
id, and a partition dir left from the old one still says the old id.  kafkalog's broker (:mod:`kafkalog.broker`)
writes it as Kafka's ``PartitionMetadataFile.maybeFlush`` does (:func:`write_partition_metadata`: a temporary file,
fsynced, renamed over the old one); the rest of kafkalog only reads it.  A file that does not parse raises
:class:`~kafkalog.checkpoint.CorruptCheckpointError` with Kafka's message (Kafka throws an ``IOException``; a
topic id that is not a UUID escapes Kafka's reader as an ``IllegalArgumentException``, and is the same error here).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .._common import INT32_MAX, INT32_MIN
from ..checkpoint import CorruptCheckpointError
from ..fsutil import fsync_dir, open_regular
from .meta_properties import parse_uuid

__all__ = ["PARTITION_METADATA_FILE", "ZERO_TOPIC_ID", "read_partition_metadata", "write_partition_metadata"]

#: The file's name in a partition dir (Kafka: ``PartitionMetadataFile.PARTITION_METADATA_FILE_NAME``).
PARTITION_METADATA_FILE = "partition.metadata"
#: Kafka's ``Uuid.ZERO_UUID``, which no topic has.
ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
#: The version Kafka writes, and the lowest it reads (``PartitionMetadataFile.CURRENT_VERSION``).
_CURRENT_VERSION = 0
#: Two short lines; more is read of no file (a bigger one is not a partition.metadata, and is not read whole).
_MAX_READ = 4096
#: Java's ``:\\s+``, ``\\s`` being the six ASCII whitespace characters.
_SEPARATOR = re.compile(r":[ \t\n\x0b\f\r]+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def _java_split(line: str) -> list[str]:
    """``line.split(":\\\\s+")`` as Java splits: trailing empty strings are dropped."""
    parts = _SEPARATOR.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def read_partition_metadata(partition_dir: str | os.PathLike[str]) -> str | None:
    """The topic id the ``partition.metadata`` of ``partition_dir`` records; ``None`` when there is no such file
    (a broker before 2.8, or one that has not written it yet).

    Raises:
        CorruptCheckpointError: the file is not a partition metadata file (Kafka's messages: ``Malformed line in
            checkpoint file [<path>]: <line>``, ``Unrecognized version of partition metadata file + (<path>): <v>``,
            ``Invalid topic ID in partition metadata file (<path>)``).
        KafkaStorageError: the path is not a regular file.
    """
    path = Path(partition_dir) / PARTITION_METADATA_FILE
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(_MAX_READ)
    location = str(path)
    # BufferedReader.readLine: a line ends at \n, \r or \r\n; a missing line reads as null.
    lines = re.split(r"\r\n|\r|\n", data.decode("utf-8", errors="replace"))
    if lines and lines[-1] == "":
        lines.pop()  # the end of the last line, not a line

    def malformed(line: str | None, number: int) -> CorruptCheckpointError:
        # A missing line is Java's null (Kafka's reader then fails on it with a NullPointerException).
        shown = "null" if line is None else line
        return CorruptCheckpointError(f"Malformed line in checkpoint file [{location}]: {shown}", location,
                                      number, line)

    version_line = lines[0] if lines else None
    if version_line is None:
        raise malformed(None, 1)
    version_parts = _java_split(version_line)
    if (len(version_parts) != 2 or _JAVA_INT.fullmatch(version_parts[1]) is None
            or not INT32_MIN <= int(version_parts[1]) <= INT32_MAX):
        raise malformed(version_line, 1)
    version = int(version_parts[1])
    if version < _CURRENT_VERSION:
        raise CorruptCheckpointError(
            f"Unrecognized version of partition metadata file + ({location}): {version}", location, 1, version_line)
    id_line = lines[1] if len(lines) > 1 else None
    if id_line is None:
        raise malformed(None, 2)
    id_parts = _java_split(id_line)
    if len(id_parts) != 2:
        raise malformed(id_line, 2)
    try:
        topic_id = parse_uuid(id_parts[1])
    except ValueError as e:
        raise CorruptCheckpointError(f"{e} ({location})", location, 2, id_line) from None
    if topic_id == ZERO_TOPIC_ID:
        raise CorruptCheckpointError(f"Invalid topic ID in partition metadata file ({location})", location, 2, id_line)
    return topic_id


def write_partition_metadata(partition_dir: str | os.PathLike[str], topic_id: str) -> None:
    """Record ``topic_id`` (URL-safe base64, as :func:`read_partition_metadata` returns it) in the
    ``partition.metadata`` of ``partition_dir`` (Kafka: ``PartitionMetadataFile.record`` then ``maybeFlush``: the
    two lines into ``partition.metadata.tmp``, fsynced, renamed over the file, the directory fsynced).

    Raises:
        ValueError: ``topic_id`` is not a UUID in that form, or is the zero UUID.
    """
    if parse_uuid(topic_id) == ZERO_TOPIC_ID:
        raise ValueError("The zero UUID is no topic's id")
    path = Path(partition_dir) / PARTITION_METADATA_FILE
    tmp = path.with_name(PARTITION_METADATA_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"version: {_CURRENT_VERSION}\ntopic_id: {topic_id}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)
