"""Aiven's tiered-storage plugin layout: segments cut into chunks, optionally zstd-compressed, with manifests.

Port of the read side of github Aiven-Open/tiered-storage-for-apache-kafka (``core/src/main/java/io/aiven/
kafka/tieredstorage/``): ``ObjectKeyFactory`` (the keys), ``KafkaRemoteStorageManager`` (what is uploaded,
in which order, and how it is fetched), ``fetch/DefaultChunkManager`` and ``fetch/FetchChunkEnumeration``
(reading a byte range chunk by chunk), ``transform/`` (the detransforms).  Each segment is three objects::

    <prefix><topic>-<topicId>/<partition>/<offset>-<segmentId>.log            the transformed .log
    <prefix><topic>-<topicId>/<partition>/<offset>-<segmentId>.indexes        the five indexes, packed
    <prefix><topic>-<topicId>/<partition>/<offset>-<segmentId>.rsm-manifest   how (JSON, see aiven_manifest)

``<offset>`` is the segment's start offset in 20 digits, ``<topicId>`` and ``<segmentId>`` are Kafka uuids
(22 characters of URL-safe base64), ``<prefix>`` is the plugin's ``key.prefix`` (any text, often ending in
``/``).  A prefix of whole directories (``tiered/``, ``a/b/``) is found from the keys themselves; give
one that does not end in ``/`` as ``prefix``, since a prefix like ``tiered-`` cannot be told from a topic
name.  ``copyLogSegmentData`` uploads the ``.log``, then the ``.indexes``, then the manifest, and deletes
what it wrote when a step fails; so a segment without a manifest is an upload not finished (or a deletion
under way) and is skipped, with that reason.  A segment whose manifest has ``encryption`` is refused with
:class:`~kafkalog.errors.EncryptedSegmentError`: its data key is sealed with the plugin's RSA key pair.

Reading ``[start, end)`` of the original ``.log`` fetches the chunks that cover it with ranged reads of the
``.log`` object (consecutive chunks together, up to :data:`MAX_FETCH_BYTES` a read), decompresses each
zstd chunk to exactly its original size and cuts the range out, as ``FetchChunkEnumeration`` does; a
segment neither compressed nor encrypted is the original file, read directly.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    CorruptRemoteSegmentError,
    EncryptedSegmentError,
    RemoteLayoutError,
    RemoteResourceNotFoundError,
)
from ..topic import LEGAL_CHARS
from .aiven_manifest import Chunk, SegmentManifestV1, decompress_chunk, parse_manifest
from .listing import StoreListing, list_store, store_root
from .segment import IndexType, RemotePartition, RemoteSegment, SkippedSegment, read_object_range, resolve_duplicates

__all__ = ["LOG_SUFFIX", "INDEXES_SUFFIX", "MANIFEST_SUFFIX", "MAX_FETCH_BYTES", "MAX_MANIFEST_BYTES",
           "AivenSegment", "KEY_FORMAT", "detect_prefix", "list_partitions", "looks_like"]

logger = logging.getLogger(__name__)

#: ``ObjectKeyFactory.Suffix``.
LOG_SUFFIX, INDEXES_SUFFIX, MANIFEST_SUFFIX = "log", "indexes", "rsm-manifest"
#: ``ObjectKeyFactory.mainPath`` + ``.`` + suffix, after the prefix (groups: topic, topic id, partition,
#: offset, segment id, suffix).  The offset has the 20 digits ``filenamePrefixFromOffset`` gives it.
KEY_FORMAT = re.compile(rf"({LEGAL_CHARS}+)-([a-zA-Z0-9_-]{{22}})/([0-9]+)/([0-9]{{20}})-([a-zA-Z0-9_-]{{22}})"
                        rf"\.({LOG_SUFFIX}|{INDEXES_SUFFIX}|{MANIFEST_SUFFIX})")
#: The most one ranged read of a segment fetches: consecutive chunks are read together up to this.
MAX_FETCH_BYTES = 8 * 1024 * 1024
#: The largest manifest read (a variable index is at most 10 MiB of zstd, in base64).
MAX_MANIFEST_BYTES = 32 * 1024 * 1024
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class AivenSegment(RemoteSegment):
    """A segment of Aiven's layout: its manifest, and its ``.log`` and ``.indexes`` objects with their
    sizes."""

    manifest: SegmentManifestV1 | None = field(default=None, repr=False)
    log_object_size: int = 0
    indexes_path: str = ""
    indexes_size: int = 0

    def _read(self, start: int, end: int) -> bytes:
        manifest = self.manifest
        assert manifest is not None
        if not manifest.compression:
            # Neither compressed nor encrypted (parse_manifest checked the index is the identity): the object
            # is the original file (TransformFinisher.toInputStream uploads it as it is).
            return read_object_range(self.fs, self.path, start, end, self.log_object_size)
        # Chunk by chunk as the range reaches them: what is held at once is the bytes asked for, one ranged
        # read and one decompressed chunk, however small the chunks are.
        index = manifest.chunk_index
        out = bytearray()
        run_first: Chunk | None = None
        run_stop = 0
        for chunk in index.chunks_for_range(start, end):
            chunk_end = chunk.transformed_position + chunk.transformed_size
            if run_first is not None and chunk_end - run_first.transformed_position > MAX_FETCH_BYTES:
                self._run(run_first.id, run_stop, start, end, out)
                run_first = None
            if run_first is None:
                run_first = chunk
            run_stop = chunk.id + 1
        if run_first is not None:
            self._run(run_first.id, run_stop, start, end, out)
        return bytes(out)

    def _run(self, first: int, stop: int, start: int, end: int, out: bytearray) -> None:
        """Chunks ``first`` to ``stop - 1``, consecutive, fetched with one ranged read and decompressed one by
        one (``DefaultChunkManager.getChunk`` for each); the part of each inside ``[start, end)`` goes to
        ``out``."""
        assert self.manifest is not None
        index = self.manifest.chunk_index
        begin = index.chunk(first).transformed_position
        last = index.chunk(stop - 1)
        data = read_object_range(self.fs, self.path, begin, last.transformed_position + last.transformed_size,
                                 self.log_object_size)
        for i in range(first, stop):
            c = index.chunk(i)
            frame = data[c.transformed_position - begin:c.transformed_position - begin + c.transformed_size]
            original = decompress_chunk(frame, c.original_size, f"chunk {c.id} of {self.path}")
            out += original[max(start - c.original_position, 0):end - c.original_position]

    def index_types(self) -> frozenset[IndexType]:
        assert self.manifest is not None
        return frozenset(t for t, i in self.manifest.segment_indexes if i is not None)

    def index(self, index_type: IndexType) -> bytes | None:
        """``KafkaRemoteStorageManager.fetchIndex``: the index's range of the ``.indexes`` object (indexes are
        never compressed; an empty range is an empty index)."""
        assert self.manifest is not None
        entry = self.manifest.index(index_type)
        if entry is None:
            return None
        return read_object_range(self.fs, self.indexes_path, entry.position, entry.position + entry.size,
                                 self.indexes_size)


#: A key whose last three components are the layout's: group 1 is the directory prefix before them.
_KEY_AFTER_DIRS = re.compile(rf"((?:[^/]*/)*?)({KEY_FORMAT.pattern})")


def detect_prefix(keys: Iterable[str]) -> str:
    """The one directory prefix (``""``, ``"tiered/"``, ``"a/b/"``) before every key of the layout, from keys
    relative to the root.

    Raises:
        RemoteLayoutError: keys of the layout under more than one prefix (give ``prefix``).
    """
    prefixes = set()
    for key in keys:
        m = _KEY_AFTER_DIRS.fullmatch(key)
        if m is not None:
            prefixes.add(m.group(1))
    if len(prefixes) > 1:
        raise RemoteLayoutError(f"keys of Aiven's layout under several prefixes: {sorted(prefixes)}; give the "
                                "plugin's key.prefix as prefix")
    return prefixes.pop() if prefixes else ""


def looks_like(fs: Any, root: str, prefix: str | None = None, listing: StoreListing | None = None) -> bool:
    """Whether ``root`` holds objects of this layout: at least one ``.rsm-manifest`` key
    ``<prefix><topic>-<topicId>/<partition>/...`` (``prefix`` found from the keys when ``None``).  ``listing``:
    the root's listing when the caller has it (:func:`~kafkalog.remote.listing.list_store`)."""
    if listing is None or listing.root != store_root(fs, root):
        listing = list_store(fs, root)
    keys = [listing.relative(path) for path in listing.files]
    try:
        prefix = detect_prefix(keys) if prefix is None else prefix
    except RemoteLayoutError:
        return False
    for key in keys:
        if key.startswith(prefix):
            m = KEY_FORMAT.fullmatch(key[len(prefix):])
            if m is not None and m.group(6) == MANIFEST_SUFFIX:
                return True
    return False


def _manifest(fs: Any, path: str, size: int, log_object_size: int | None) -> SegmentManifestV1:
    """The manifest at ``path``, checked against its ``.log`` object's size when there is one; an error
    names the manifest."""
    if size > MAX_MANIFEST_BYTES:
        raise CorruptRemoteSegmentError(f"manifest of {size} bytes is larger than {MAX_MANIFEST_BYTES}", path=path)
    data = read_object_range(fs, path, 0, size, size)
    try:
        return parse_manifest(data, log_object_size=log_object_size)
    except CorruptRemoteSegmentError as e:
        raise CorruptRemoteSegmentError(e.detail, path=path) from e


def _segment(fs: Any, topic: str, partition: int, topic_id: str, offset: int, segment_id: str,
             objects: dict[str, tuple[str, int]]) -> AivenSegment | SkippedSegment:
    manifest_path, manifest_size = objects[MANIFEST_SUFFIX]
    manifest = _manifest(fs, manifest_path, manifest_size,
                         objects[LOG_SUFFIX][1] if LOG_SUFFIX in objects else None)
    if manifest.encrypted:
        raise EncryptedSegmentError(
            "the segment was uploaded encrypted (its manifest has \"encryption\"): its data key is sealed with "
            "the plugin's RSA key pair, which kafkalog does not hold; configure the plugin without "
            "encryption.enabled to read its segments here", path=manifest_path)
    missing = [s for s in (LOG_SUFFIX, INDEXES_SUFFIX) if s not in objects]
    if missing:
        # copyLogSegmentData writes the manifest last, so a manifest without its objects is a deletion under way
        # (deleteSegmentObjects removes the three keys in no set order).
        logger.warning("Skipping segment %s of %s-%d: its manifest is there but not its %s", segment_id, topic,
                       partition, " and ".join(f".{m}" for m in missing))
        return SkippedSegment(manifest_path, f"the manifest is there but not the {' and '.join(missing)} "
                                             "object (a deletion under way)")
    if manifest.start_offset is not None and manifest.start_offset != offset:
        raise CorruptRemoteSegmentError(f"the manifest's startOffset {manifest.start_offset} is not the key's "
                                        f"{offset}", path=manifest_path)
    if manifest.segment_id is not None and manifest.segment_id != segment_id:
        raise CorruptRemoteSegmentError(f"the manifest's segment id {manifest.segment_id} is not the key's "
                                        f"{segment_id}", path=manifest_path)
    log_path, log_size = objects[LOG_SUFFIX]  # its size agrees with the manifest: _manifest checked it
    indexes_path, indexes_size = objects[INDEXES_SUFFIX]
    for index_type, entry in manifest.segment_indexes:
        if entry is not None and entry.position + entry.size > indexes_size:
            raise CorruptRemoteSegmentError(
                f"the {index_type.value} index at [{entry.position}, {entry.position + entry.size}) is outside "
                f"the object's {indexes_size} bytes", path=indexes_path)
    return AivenSegment(
        fs=fs, topic=topic, partition=partition, topic_id=topic_id, base_offset=offset, segment_id=segment_id,
        size=manifest.chunk_index.original_file_size, path=log_path, end_offset=manifest.end_offset,
        max_leader_epoch=manifest.max_leader_epoch, event_timestamp_ms=manifest.event_timestamp_ms,
        manifest=manifest, log_object_size=log_size, indexes_path=indexes_path, indexes_size=indexes_size)


def list_partitions(fs: Any, root: str, prefix: str | None = None, copied: Collection[str] | None = None,
                    listing: StoreListing | None = None) -> list[RemotePartition]:
    """Every topic-partition under ``root`` + ``prefix`` (the plugin's ``key.prefix``, relative to
    ``root``; found from the keys when ``None``, see :func:`detect_prefix`), by topic and partition, each
    with its segments in offset order, one per base offset (:func:`~kafkalog.remote.segment.resolve_duplicates`).

    ``copied``, when given, is the set of segment ids ``__remote_log_metadata`` says were
    ``COPY_SEGMENT_FINISHED`` (:func:`kafkalog.remote.metadata.copied_segment_ids`): any other segment is
    skipped, with that reason.  Every manifest is read (one small read each) to learn the segment's size.
    The root is listed once, recursively; ``listing`` is that listing when the caller made it already (to
    detect the layout, say: :func:`~kafkalog.remote.listing.list_store`).

    Raises:
        RemoteLayoutError: a key under ``root`` that is not the layout's (is ``prefix`` right?).
        EncryptedSegmentError: a segment uploaded encrypted.
        CorruptRemoteSegmentError: a manifest that does not parse, or objects that do not match it.
        RemoteResourceNotFoundError: ``root`` does not exist.
    """
    root = store_root(fs, root)
    if listing is None or listing.root != root:
        listing = list_store(fs, root)
    if not listing.files and not listing.directories and not fs.isdir(root):
        raise RemoteResourceNotFoundError("no such directory", path=root)
    if prefix is None:
        prefix = detect_prefix(listing.relative(path) for path in listing.files)
    groups: dict[tuple[str, str, int], dict[tuple[int, str], dict[str, tuple[str, int]]]] = {}
    for path, size in sorted(listing.files.items()):
        key = listing.relative(path)
        m = KEY_FORMAT.fullmatch(key[len(prefix):]) if key.startswith(prefix) else None
        if m is None:
            raise RemoteLayoutError(f"not an object key of Aiven's tiered storage, <prefix><topic>-<topicId>/"
                                    f"<partition>/<20-digit offset>-<segmentId>.log|indexes|rsm-manifest with "
                                    f"prefix {prefix!r}: {key}", path=root)
        topic, topic_id, partition_text, offset_text, segment_id, suffix = m.groups()
        partition, offset = int(partition_text), int(offset_text)
        if partition > _INT32_MAX or offset > _INT64_MAX:
            raise RemoteLayoutError(f"partition or offset out of range in {key}", path=root)
        segment = groups.setdefault((topic, topic_id, partition), {}).setdefault((offset, segment_id), {})
        segment[suffix] = (path, size)
    partitions = []
    for (topic, topic_id, partition), uploads in sorted(groups.items()):
        segments: list[AivenSegment] = []
        skipped: list[SkippedSegment] = []
        for (offset, segment_id), objects in sorted(uploads.items()):
            if MANIFEST_SUFFIX not in objects:
                where = next(iter(objects.values()))[0]
                logger.info("Skipping segment %s of %s-%d: no manifest yet", segment_id, topic, partition)
                skipped.append(SkippedSegment(where, "no .rsm-manifest: the upload is not finished"))
                continue
            if copied is not None and segment_id not in copied:
                skipped.append(SkippedSegment(objects[MANIFEST_SUFFIX][0],
                                              "not COPY_SEGMENT_FINISHED in __remote_log_metadata"))
                continue
            result = _segment(fs, topic, partition, topic_id, offset, segment_id, objects)
            if isinstance(result, SkippedSegment):
                skipped.append(result)
            else:
                segments.append(result)
        kept, duplicates = resolve_duplicates(segments)
        partitions.append(RemotePartition(topic, partition, topic_id, tuple(kept), tuple(skipped + duplicates)))
    return partitions
