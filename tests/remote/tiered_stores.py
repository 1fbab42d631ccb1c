"""Test stores in the tiered-storage layouts, built from partitions kafkalog writes.

:func:`write_partition` writes a partition of several segments with kafkalog's ``Log``;
:func:`upload_local_tiered` copies its closed segments as Kafka's ``LocalTieredStorage.copyLogSegmentData``
does (``RemoteLogSegmentFileset.copy``); :func:`upload_aiven` uploads them as Aiven's plugin's
``KafkaRemoteStorageManager.copyLogSegmentData`` does: the ``.log`` cut into chunks
(``BaseTransformChunkEnumeration``), each zstd-compressed with its content size in the frame
(``CompressionChunkEnumeration``) or kept as it is, the chunk index built as ``TransformFinisher`` builds it
(variable when compressed, fixed otherwise), the five indexes packed into ``.indexes`` in
``uploadIndexes``' order, then the manifest as Jackson writes ``SegmentManifestV1``.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from kafkalog import MemoryRecords
from kafkalog.config import LogConfig
from kafkalog.log import Log
from kafkalog.remote.aiven_manifest import encode_transformed_chunks


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


def write_partition(directory: Path, segments: int = 4, records_per_batch: int = 20,
                    value_size: int = 40) -> list[LocalSegment]:
    """A partition of at least ``segments`` closed segments written by kafkalog (leader epoch 0), and
    the closed segments' files."""
    log = Log(directory, LogConfig({"segment.bytes": 4096, "index.interval.bytes": 256}))
    try:
        n = 0
        while len(log.segments) <= segments:
            values = [(f"k{n + i}".encode(), (f"v{n + i}-" * value_size).encode()[:value_size],
                       1_700_000_000_000 + n + i) for i in range(records_per_batch)]
            log.append_as_leader(MemoryRecords.with_records(values), leader_epoch=0)
            n += records_per_batch
        log.flush()
    finally:
        log.close()
    return write_partition_files(directory)


def write_partition_files(directory: Path) -> list[LocalSegment]:
    """The closed segments' files of the partition dir ``directory`` (every segment but the last)."""
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


#: The producer of the aborted transaction of :func:`write_rich_partition`, and of the committed one.
ABORTED_PRODUCER, COMMITTED_PRODUCER = 7001, 7002


def write_rich_partition(directory: Path, segments: int = 5) -> list[LocalSegment]:
    """A partition of at least ``segments`` closed segments, as a broker would have uploaded them: batches
    compressed with zstd and lz4 and plain ones, timestamps rising by 1 ms a record, a transaction that is
    aborted and one that is committed; and the ``.txnindex`` a broker keeps for the segment holding the ABORT
    marker (kafkalog writes none: built here from the log's transactions, as Kafka's
    ``ProducerStateManager.completeTxn`` appends it)."""
    from kafkalog.record import ControlRecordType, EndTransactionMarker
    from kafkalog.transaction_index import ABORTED_TXN_VERSION
    from kafkalog.transactions import TransactionState

    log = Log(directory, LogConfig({"segment.bytes": 6000, "index.interval.bytes": 400}))
    codecs = ["zstd", "lz4", "none"]
    n = 0

    def data(count: int, **fields: Any) -> MemoryRecords:
        nonlocal n
        values = [(f"k{n + i}".encode(), f"value-{n + i}-{'x' * ((n + i) % 37)}".encode(), 1_700_000_000_000 + n + i)
                  for i in range(count)]
        n += count
        return MemoryRecords.with_records(values, compression=fields.pop("compression", codecs[n % 3]), **fields)

    def marker(producer: int, kind: ControlRecordType) -> None:
        log.append_as_leader(MemoryRecords.with_end_transaction_marker(
            producer, 0, EndTransactionMarker(kind, 0), timestamp=1_700_000_000_000 + n), leader_epoch=0,
            origin="coordinator")

    try:
        batches = 0
        while len(log.segments) <= segments:
            log.append_as_leader(data(15), leader_epoch=0)
            batches += 1
            if batches == 20:
                # an aborted transaction across plain batches, then a committed one
                for seq in (0, 5):
                    log.append_as_leader(data(5, producer_id=ABORTED_PRODUCER, producer_epoch=0, base_sequence=seq,
                                              is_transactional=True), leader_epoch=0)
                log.append_as_leader(data(10), leader_epoch=0)
                marker(ABORTED_PRODUCER, ControlRecordType.ABORT)
                log.append_as_leader(data(5, producer_id=COMMITTED_PRODUCER, producer_epoch=0, base_sequence=0,
                                          is_transactional=True), leader_epoch=0)
                marker(COMMITTED_PRODUCER, ControlRecordType.COMMIT)
        log.flush()
        aborted = TransactionState.of(log).aborted
    finally:
        log.close()
    out = write_partition_files(directory)
    for s in out:
        mine = [t for t in aborted if s.base_offset <= t.last_offset <= s.end_offset]
        if mine:
            s.txnindex = b"".join(struct.pack(">hqqqq", ABORTED_TXN_VERSION, t.producer_id, t.first_offset,
                                              t.last_offset, t.last_stable_offset) for t in mine)
    assert any(s.txnindex for s in out), "the ABORT marker must be in a closed segment"
    return out


def library_read(directory: Path, segments: list[LocalSegment], start: int | None = None, end: int | None = None,
                 isolation: str = "read_uncommitted") -> list[tuple[Any, ...]]:
    """``(offset, key, value, timestamp)`` of the library's read of the partition dir ``directory``, up to the
    end of its last uploaded segment (the last of ``segments``)."""
    last = segments[-1].end_offset + 1
    log = Log(directory, read_only=True)
    try:
        return [(r.offset, r.key, r.value, r.timestamp)
                for r in log.records(start, min(last, end if end is not None else last), isolation=isolation)]
    finally:
        log.close()
