"""Kafka's ``LocalTieredStorage`` layout: a broker's segment files copied, one directory per partition.

Port of ``LocalTieredStorage``, ``RemoteLogSegmentFileset`` and ``RemoteTopicPartitionDirectory``
(``storage/src/test/java/org/apache/kafka/server/log/remote/storage/``, Kafka 3.8.0), the
``RemoteStorageManager`` Kafka's own tiered-storage tests run against, and that a broker can be given too
(``remote.log.storage.manager.class.name`` with the storage test jar; ``remote.log.storage.local.dir``).
The layout, read only::

    <dir>/kafka-tiered-storage/                  the storage directory (ROOT_STORAGE_DIR_NAME under dir)
      <topic>-<partition>-<topicId>/             RemoteTopicPartitionDirectory
        <offset>-<segmentId>.log                 RemoteLogSegmentFileset: one segment's files, a copy of
        <offset>-<segmentId>.index               the broker's; <offset> is the start offset, 20 digits
        <offset>-<segmentId>.timeindex           (LogFileUtils.filenamePrefixFromOffset), <segmentId> the
        <offset>-<segmentId>.snapshot            RemoteLogSegmentId's uuid and <topicId> the topic's, both
        <offset>-<segmentId>.leader_epoch_checkpoint    as Uuid.toString (22 characters of URL-safe base64)
        <offset>-<segmentId>.txnindex            only when the segment had aborted transactions

Names are parsed with Kafka's own patterns, whole-name: a directory
``(<Topic.LEGAL_CHARS>+)-(\\d+)-([a-zA-Z0-9_-]{22})``, a file ``(\\d+-)([a-zA-Z0-9_-]{22})(\\.[a-z_]+)``
whose suffix names a ``RemoteLogSegmentFileType``.  A name that does not match is Kafka's
``IllegalArgumentException`` (``Not a topic partition directory file: ...``, ``Not a remote log segment
file: ...``), here a :class:`~kafkalog.errors.RemoteLayoutError`.  A fileset without one of the files that
are not optional is Kafka's ``IllegalStateException`` (``Invalid fileset, missing files: [...]``); since
``RemoteLogSegmentFileset.copy`` writes the ``.log`` first and the producer snapshot last, and a failed copy
deletes what it wrote, such a fileset is a copy not finished (or not cleaned up), and it is skipped with
that reason rather than failing the whole partition.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..errors import RemoteLayoutError, RemoteResourceNotFoundError
from ..topic import LEGAL_CHARS
from .listing import StoreListing, list_store, store_root
from .segment import IndexType, RemotePartition, RemoteSegment, SkippedSegment, read_object_range, resolve_duplicates

__all__ = ["ROOT_STORAGE_DIR_NAME", "LocalTieredSegment", "RemoteLogSegmentFileType", "list_partitions",
           "looks_like"]

logger = logging.getLogger(__name__)

#: ``LocalTieredStorage.ROOT_STORAGE_DIR_NAME``: the storage directory under the configured ``dir``.
ROOT_STORAGE_DIR_NAME = "kafka-tiered-storage"

_UUID_LEGAL_CHARS = "[a-zA-Z0-9_-]{22}"
# Java's \d is ASCII only (no UNICODE_CHARACTER_CLASS); Python's is not, hence [0-9].
#: ``RemoteLogSegmentFileset.FILENAME_FORMAT`` (groups: offset and dash, uuid, suffix).
FILENAME_FORMAT = re.compile(rf"([0-9]+-)({_UUID_LEGAL_CHARS})(\.[a-z_]+)")
#: ``RemoteTopicPartitionDirectory.FILENAME_FORMAT`` (groups: topic, partition, topic id).
DIRNAME_FORMAT = re.compile(rf"({LEGAL_CHARS}+)-([0-9]+)-({_UUID_LEGAL_CHARS})")
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class RemoteLogSegmentFileType(enum.Enum):
    """``RemoteLogSegmentFileset.RemoteLogSegmentFileType``: (optional, suffix)."""

    SEGMENT = (False, ".log")
    OFFSET_INDEX = (False, ".index")
    TIME_INDEX = (False, ".timeindex")
    TRANSACTION_INDEX = (True, ".txnindex")
    LEADER_EPOCH_CHECKPOINT = (False, ".leader_epoch_checkpoint")
    PRODUCER_SNAPSHOT = (False, ".snapshot")

    @property
    def optional(self) -> bool:
        return bool(self.value[0])

    @property
    def suffix(self) -> str:
        return str(self.value[1])

    @classmethod
    def of_filename(cls, filename: str) -> RemoteLogSegmentFileType:
        """Kafka: ``getFileType``."""
        m = FILENAME_FORMAT.fullmatch(filename)
        if m is not None:
            for file_type in cls:
                if file_type.suffix == m.group(3):
                    return file_type
        raise RemoteLayoutError(f"Not a remote log segment file: {filename}")


#: ``LocalTieredStorage.getLogSegmentFileType``: the file each ``IndexType`` is fetched from.
_INDEX_FILES = {
    IndexType.OFFSET: RemoteLogSegmentFileType.OFFSET_INDEX,
    IndexType.TIMESTAMP: RemoteLogSegmentFileType.TIME_INDEX,
    IndexType.PRODUCER_SNAPSHOT: RemoteLogSegmentFileType.PRODUCER_SNAPSHOT,
    IndexType.TRANSACTION: RemoteLogSegmentFileType.TRANSACTION_INDEX,
    IndexType.LEADER_EPOCH: RemoteLogSegmentFileType.LEADER_EPOCH_CHECKPOINT,
}


@dataclass(frozen=True)
class LocalTieredSegment(RemoteSegment):
    """A segment of the ``LocalTieredStorage`` layout: its files by type name, as ``(path, size)``."""

    files: tuple[tuple[str, str, int], ...] = ()

    def _file(self, file_type: RemoteLogSegmentFileType) -> tuple[str, int] | None:
        for name, path, size in self.files:
            if name == file_type.name:
                return path, size
        return None

    def _read(self, start: int, end: int) -> bytes:
        # LocalTieredStorage.fetchLogSegment: the .log as it is, from the start position.
        return read_object_range(self.fs, self.path, start, end, self.size)

    def index_types(self) -> frozenset[IndexType]:
        return frozenset(t for t, f in _INDEX_FILES.items() if self._file(f) is not None)

    def index(self, index_type: IndexType) -> bytes | None:
        found = self._file(_INDEX_FILES[index_type])
        if found is None:
            return None
        path, size = found
        return read_object_range(self.fs, path, 0, size, size)


def _storage_dir(listing: StoreListing) -> tuple[str, list[tuple[str, bool]]]:
    """The storage directory and its entries: the listed root itself, or its ``kafka-tiered-storage`` when the
    root is the ``dir`` LocalTieredStorage was configured with (no entry of the root is named as a partition's
    directory, and it holds that one)."""
    entries = list(listing.children(listing.root))
    if not any(DIRNAME_FORMAT.fullmatch(name) for name, _ in entries) and (ROOT_STORAGE_DIR_NAME, True) in entries:
        path = f"{listing.root.rstrip('/')}/{ROOT_STORAGE_DIR_NAME}"
        return path, list(listing.children(path))
    return listing.root, entries


def looks_like(fs: Any, root: str, listing: StoreListing | None = None) -> bool:
    """Whether ``root`` holds this layout: a ``kafka-tiered-storage`` directory, or a directory named
    ``<topic>-<partition>-<topicId>``.  ``listing``: the root's recursive listing when the caller has it
    (:func:`~kafkalog.remote.listing.list_store`), read instead of listing the root again."""
    if listing is None or listing.root != store_root(fs, root):
        listing = list_store(fs, root)
    _path, entries = _storage_dir(listing)
    return any(is_dir and DIRNAME_FORMAT.fullmatch(name) for name, is_dir in entries)


def _partition(fs: Any, listing: StoreListing, path: str, topic: str, partition: int, topic_id: str,
               copied: Collection[str] | None) -> RemotePartition:
    """``RemoteTopicPartitionDirectory.listFilesets`` + ``RemoteLogSegmentFileset.openExistingFileset``, over
    the partition directory ``path``'s entries in ``listing``."""
    filesets: dict[str, dict[RemoteLogSegmentFileType, tuple[str, int]]] = {}
    offsets: dict[str, set[str]] = {}
    for filename, _is_dir in listing.children(path):
        file_path = f"{path}/{filename}"
        file_type = RemoteLogSegmentFileType.of_filename(filename)
        m = FILENAME_FORMAT.fullmatch(filename)
        assert m is not None
        uuid = m.group(2)
        files = filesets.setdefault(uuid, {})
        if file_type in files:
            raise RemoteLayoutError(f"Duplicate key {file_type.name}: two files of segment {uuid} are "
                                    f"{file_type.suffix} files", path=path)
        files[file_type] = (file_path, listing.files.get(file_path, 0))
        offsets.setdefault(uuid, set()).add(m.group(1)[:-1])
    segments: list[LocalTieredSegment] = []
    skipped: list[SkippedSegment] = []
    for uuid, files in sorted(filesets.items()):
        missing = [t.name for t in RemoteLogSegmentFileType if not t.optional and t not in files]
        if missing:
            where = next(iter(files.values()))[0]
            logger.warning("Skipping the fileset of segment %s in %s: Invalid fileset, missing files: %s",
                           uuid, path, missing)
            skipped.append(SkippedSegment(where, f"Invalid fileset, missing files: [{', '.join(missing)}] "
                                                 "(a copy not finished)"))
            continue
        if copied is not None and uuid not in copied:
            skipped.append(SkippedSegment(files[RemoteLogSegmentFileType.SEGMENT][0],
                                          "not COPY_SEGMENT_FINISHED in __remote_log_metadata"))
            continue
        if len(offsets[uuid]) != 1:
            raise RemoteLayoutError(f"the files of segment {uuid} name different start offsets: "
                                    f"{sorted(offsets[uuid])}", path=path)
        offset = int(next(iter(offsets[uuid])))
        if offset > _INT64_MAX:
            raise RemoteLayoutError(f"start offset {offset} of segment {uuid} is past Long.MaxValue", path=path)
        log_path, log_size = files[RemoteLogSegmentFileType.SEGMENT]
        segments.append(LocalTieredSegment(
            fs=fs, topic=topic, partition=partition, topic_id=topic_id, base_offset=offset, segment_id=uuid,
            size=log_size, path=log_path,
            files=tuple((t.name, p, s) for t, (p, s) in sorted(files.items(), key=lambda i: i[0].name))))
    kept, duplicates = resolve_duplicates(segments)
    return RemotePartition(topic, partition, topic_id, tuple(kept), tuple(skipped + duplicates))


def list_partitions(fs: Any, root: str, copied: Collection[str] | None = None,
                    listing: StoreListing | None = None) -> list[RemotePartition]:
    """Every topic-partition under ``root`` (the storage directory, or the ``dir`` holding
    ``kafka-tiered-storage``), by topic and partition, each with its segments in offset order, one per base
    offset (:func:`~kafkalog.remote.segment.resolve_duplicates`).

    ``copied``, when given, is the set of segment ids ``__remote_log_metadata`` says were
    ``COPY_SEGMENT_FINISHED`` (:func:`kafkalog.remote.metadata.copied_segment_ids`): any other fileset is
    skipped, with that reason.  The root is listed once, recursively; ``listing`` is that listing when the
    caller made it already (:func:`~kafkalog.remote.listing.list_store`).

    Raises:
        RemoteLayoutError: a name in the storage directory or a partition directory is not the layout's
            (Kafka's messages), or a partition number does not fit a Java int.
        RemoteResourceNotFoundError: ``root`` does not exist.
    """
    root = store_root(fs, root)
    if listing is None or listing.root != root:
        listing = list_store(fs, root)
    if not listing.files and not listing.directories and not fs.isdir(root):
        raise RemoteResourceNotFoundError("no such directory", path=root)
    storage_dir, entries = _storage_dir(listing)
    partitions: list[RemotePartition] = []
    for dirname, is_dir in entries:
        m = DIRNAME_FORMAT.fullmatch(dirname)
        if m is None or not is_dir:
            # RemoteTopicPartitionDirectory.substr; LocalTieredStorage.clear stops on a plain file too.
            raise RemoteLayoutError(f"Not a topic partition directory file: {dirname}", path=storage_dir)
        partition = int(m.group(2))
        if partition > _INT32_MAX:
            raise RemoteLayoutError(f"Invalid format for topic-partition directory: {dirname}", path=storage_dir)
        partitions.append(_partition(fs, listing, f"{storage_dir.rstrip('/')}/{dirname}", m.group(1), partition,
                                     m.group(3), copied))
    partitions.sort(key=lambda p: (p.topic, p.partition, p.topic_id))
    return partitions
