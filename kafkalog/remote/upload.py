"""Writing the tiered-storage layouts as a broker's ``RemoteStorageManager`` does, from a partition dir's closed
segments: the stores the tests and benchmarks read back (:mod:`kafkalog.remote` reads them).

:func:`closed_segments` takes the closed segments of a partition dir (every segment but the active one) with
their files' bytes; :func:`upload_local_tiered` copies them as Kafka's ``LocalTieredStorage.copyLogSegmentData``
does (``RemoteLogSegmentFileset.copy``, storage test sources, Kafka 3.8.0); :func:`upload_aiven` uploads them
as Aiven's plugin's ``KafkaRemoteStorageManager.copyLogSegmentData`` does: the ``.log`` cut into chunks
(``BaseTransformChunkEnumeration``), each zstd-compressed with its content size in the frame
(``CompressionChunkEnumeration``) or kept as it is, the chunk index built as ``TransformFinisher`` builds it
(variable when compressed, fixed otherwise), the five indexes packed into ``.indexes`` in ``uploadIndexes``'
order, then the manifest as Jackson writes ``SegmentManifestV1``.  Every write goes through an fsspec
filesystem (``fs.open(path, "wb")``), so a store may be on the local disk, in memory or in a bucket.

Each segment's leader-epoch checkpoint says epoch 0 from its base offset: a partition kafkalog wrote as the
leader of epoch 0.  Writing is kafkalog's own, for its readers' tests; it is no part of a broker.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from .aiven_manifest import encode_transformed_chunks

__all__ = ["LocalSegment", "aiven_manifest", "chunk_and_compress", "closed_segments", "new_uuid", "pack_indexes",
           "upload_aiven", "upload_local_tiered"]


def new_uuid() -> str:
    """A random Kafka ``Uuid`` as ``toString`` prints it."""
    return base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


@dataclass
class LocalSegment:
    """A closed segment of a partition kafkalog wrote: its files' bytes."""

    base_offset: int
    end_offset: int
    log: bytes
    index: bytes
    timeindex: bytes
    snapshot: bytes
    txnindex: bytes | None
    leader_epoch: bytes


def closed_segments(directory: str | os.PathLike[str]) -> list[LocalSegment]:
    """The closed segments' files of the partition dir ``directory`` (every segment but the last)."""
    directory = Path(directory)
    logs = sorted(directory.glob("*.log"))
    out = []
    for path, following in itertools.pairwise(logs):
        base = int(path.stem)
        nxt = int(following.stem)
        snapshot = directory / f"{nxt:020d}.snapshot"
        txn = path.with_suffix(".txnindex")
        out.append(LocalSegment(
            base_offset=base, end_offset=nxt - 1, log=path.read_bytes(),
            index=path.with_suffix(".index").read_bytes(), timeindex=path.with_suffix(".timeindex").read_bytes(),
            snapshot=snapshot.read_bytes() if snapshot.exists() else b"",
            txnindex=txn.read_bytes() if txn.exists() and txn.stat().st_size else None,
            leader_epoch=f"0\n1\n0 {base}\n".encode()))
    return out


def _write(fs: Any, path: str, data: bytes) -> None:
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    with fs.open(path, "wb") as f:
        f.write(data)


def upload_local_tiered(fs: Any, storage_dir: str, topic: str, partition: int, topic_id: str,
                        segments: list[LocalSegment]) -> dict[int, str]:
    """``LocalTieredStorage.copyLogSegmentData`` for each segment; the segment ids by base offset."""
    tp_dir = f"{storage_dir}/{topic}-{partition}-{topic_id}"
    ids = {}
    for s in segments:
        uuid = new_uuid()
        ids[s.base_offset] = uuid
        name = f"{tp_dir}/{s.base_offset:020d}-{uuid}"
        _write(fs, name + ".log", s.log)
        _write(fs, name + ".index", s.index)
        _write(fs, name + ".timeindex", s.timeindex)
        if s.txnindex is not None:
            _write(fs, name + ".txnindex", s.txnindex)
        _write(fs, name + ".leader_epoch_checkpoint", s.leader_epoch)
        _write(fs, name + ".snapshot", s.snapshot)
    return ids


def chunk_and_compress(data: bytes, chunk_size: int) -> tuple[bytes, list[int]]:
    """``BaseTransformChunkEnumeration`` + ``CompressionChunkEnumeration``: the transformed object and the
    transformed chunk sizes."""
    frames = []
    for pos in range(0, len(data), chunk_size):
        frames.append(zstandard.ZstdCompressor(level=3, write_content_size=True).compress(data[pos:pos + chunk_size]))
    return b"".join(frames), [len(f) for f in frames]


def aiven_manifest(*, chunk_size: int, original: bytes, sizes: list[int] | None, indexes: dict[str, Any],
                   topic: str, partition: int, topic_id: str, segment_id: str, start: int, end: int,
                   epochs: dict[int, int] | None = None, event_timestamp_ms: int = 1_700_000_000_000,
                   encryption: dict[str, str] | None = None) -> bytes:
    """``SegmentManifestV1`` as the plugin's mapper writes it."""
    if sizes is None:
        count = -(-len(original) // chunk_size)
        final = len(original) - (count - 1) * chunk_size
        chunk_index: dict[str, Any] = {"type": "fixed", "originalChunkSize": chunk_size,
                                       "originalFileSize": len(original), "transformedChunkSize": chunk_size,
                                       "finalTransformedChunkSize": final}
    else:
        chunk_index = {"type": "variable", "originalChunkSize": chunk_size, "originalFileSize": len(original),
                       "transformedChunks": encode_transformed_chunks(sizes)}
    manifest: dict[str, Any] = {"version": "1", "chunkIndex": chunk_index, "segmentIndexes": indexes,
                                "compression": sizes is not None}
    if encryption is not None:
        manifest["encryption"] = encryption
    manifest["remoteLogSegmentMetadata"] = {
        "remoteLogSegmentId": {"topicIdPartition": {"topicId": topic_id,
                                                    "topicPartition": {"topic": topic, "partition": partition}},
                               "id": segment_id},
        "startOffset": start, "endOffset": end, "maxTimestampMs": event_timestamp_ms, "brokerId": 0,
        "eventTimestampMs": event_timestamp_ms,
        "segmentLeaderEpochs": {str(k): v for k, v in (epochs or {0: start}).items()}}
    return json.dumps(manifest, separators=(",", ":")).encode()


def pack_indexes(s: LocalSegment) -> tuple[bytes, dict[str, Any]]:
    """``KafkaRemoteStorageManager.uploadIndexes``: offset, timestamp, producer snapshot, leader epoch and
    (when there is one) transaction index, back to back, with their positions and sizes."""
    parts = [("offset", s.index), ("timestamp", s.timeindex), ("producerSnapshot", s.snapshot),
             ("leaderEpoch", s.leader_epoch)]
    if s.txnindex is not None:
        parts.append(("transaction", s.txnindex))
    entries: dict[str, Any] = {"offset": None, "timestamp": None, "producerSnapshot": None, "leaderEpoch": None,
                               "transaction": None}
    position = 0
    for name, data in parts:
        entries[name] = {"position": position, "size": len(data)}
        position += len(data)
    return b"".join(d for _, d in parts), entries


def upload_aiven(fs: Any, root: str, topic: str, partition: int, topic_id: str, segments: list[LocalSegment], *,
                 prefix: str = "", chunk_size: int = 1000, compression: bool = True, manifest: bool = True,
                 segment_id: str | None = None, **manifest_options: Any) -> dict[int, str]:
    """``KafkaRemoteStorageManager.copyLogSegmentData`` for each segment (``.log``, ``.indexes``, then the
    manifest unless ``manifest=False``); the segment ids by base offset."""
    ids = {}
    for s in segments:
        uuid = segment_id or new_uuid()
        ids[s.base_offset] = uuid
        key = f"{root}/{prefix}{topic}-{topic_id}/{partition}/{s.base_offset:020d}-{uuid}"
        if compression:
            data, sizes = chunk_and_compress(s.log, chunk_size)
        else:
            data, sizes = s.log, None
        _write(fs, key + ".log", data)
        packed, entries = pack_indexes(s)
        _write(fs, key + ".indexes", packed)
        if manifest:
            _write(fs, key + ".rsm-manifest", aiven_manifest(
                chunk_size=chunk_size, original=s.log, sizes=sizes, indexes=entries, topic=topic,
                partition=partition, topic_id=topic_id, segment_id=uuid, start=s.base_offset, end=s.end_offset,
                **manifest_options))
    return ids
