"""KRaft metadata records for tests, encoded by hand from Kafka's JSON schemas, and metadata logs made of them.

kafkalog reads metadata records (``kafkalog.messages.reader``) and never writes them, so the tests write
them here, byte by byte, from the vendored schemas (``kafkalog/messages/schemas``; Kafka 3.8.0
``metadata/src/main/resources/common/metadata``).  Every record is version 0 of a flexible message: compact
strings (unsigned varint length + 1, 0 for null), UUIDs as 16 bytes, and a tagged-field section at the end
(here always empty, a count of 0).  The frame before the message is ``AbstractApiMessageSerde``'s:
``uvarint frame version (1), uvarint apiKey, uvarint version``.  A metadata log is a partition dir
``__cluster_metadata-0`` of v2 batches whose records have no key and these values.
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from kafkalog.config.log_config import LogConfig
from kafkalog.file_message_set import FileMessageSet
from kafkalog.log import Log
from kafkalog.record import MemoryRecords

TOPIC = 2
BROKER = 4
METADATA_DIR = "__cluster_metadata-0"


def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def compact_string(text: str | None) -> bytes:
    if text is None:
        return uvarint(0)
    data = text.encode()
    return uvarint(len(data) + 1) + data


def topic_id(seed: int) -> str:
    """A topic id as Kafka prints one (URL-safe base64 of 16 bytes, no padding), made from ``seed``."""
    return base64.urlsafe_b64encode(uuid.UUID(int=seed + 0x1234).bytes).decode().rstrip("=")


def _uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def frame(api_key: int, message: bytes, version: int = 0, frame_version: int = 1) -> bytes:
    return uvarint(frame_version) + uvarint(api_key) + uvarint(version) + message


_NO_TAGS = uvarint(0)


def topic_record(name: str, tid: str) -> bytes:
    """``TopicRecord`` (apiKey 2): ``compact string Name, uuid TopicId``."""
    return frame(2, compact_string(name) + _uuid(tid) + _NO_TAGS)


def config_record(resource_type: int, resource_name: str, name: str, value: str | None) -> bytes:
    """``ConfigRecord`` (apiKey 4): ``int8 ResourceType, compact string ResourceName, compact string Name,
    compact nullable string Value``."""
    return frame(4, struct.pack(">b", resource_type) + compact_string(resource_name) + compact_string(name)
                 + compact_string(value) + _NO_TAGS)


def remove_topic_record(tid: str) -> bytes:
    """``RemoveTopicRecord`` (apiKey 9): ``uuid TopicId``."""
    return frame(9, _uuid(tid) + _NO_TAGS)


def begin_transaction() -> bytes:
    """``BeginTransactionRecord`` (apiKey 23): only a tagged ``Name``, left out."""
    return frame(23, _NO_TAGS)


def end_transaction() -> bytes:
    """``EndTransactionRecord`` (apiKey 24): no fields."""
    return frame(24, _NO_TAGS)


def abort_transaction() -> bytes:
    """``AbortTransactionRecord`` (apiKey 25): only a tagged ``Reason``, left out."""
    return frame(25, _NO_TAGS)


def no_op_record() -> bytes:
    """``NoOpRecord`` (apiKey 20): no fields."""
    return frame(20, _NO_TAGS)


def batch(values: Sequence[bytes], timestamp: int = 1_700_000_000_000) -> MemoryRecords:
    return MemoryRecords.with_records([(None, value, timestamp) for value in values])


def write_metadata_log(log_dir: Path, batches: Iterable[Sequence[bytes]], *, segment_bytes: int | None = None,
                       partition_metadata: bool = True) -> Path:
    """A ``__cluster_metadata-0`` in ``log_dir`` holding ``batches`` (each a batch of record values), appended
    as a controller appends them; with the ``quorum-state`` and ``partition.metadata`` a Raft log has."""
    path = log_dir / METADATA_DIR
    config = LogConfig({"segment.bytes": segment_bytes} if segment_bytes else {})
    with Log(path, config) as log:
        for values in batches:
            log.append(batch(values))
    (path / "quorum-state").write_text('{"leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
                                       '"currentVoters":[{"voterId":1}],"data_version":0}')
    if partition_metadata:
        (path / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    return path


def write_snapshot(metadata_dir: Path, end_offset: int, epoch: int, values: Sequence[bytes]) -> Path:
    """A KRaft snapshot ``<end offset>-<epoch>.checkpoint`` of ``values`` in one batch (offsets from 0).  Kafka
    brackets a snapshot's records with ``SnapshotHeader`` and ``SnapshotFooter`` control records; the replay
    skips control records, so these snapshots leave them out."""
    path = metadata_dir / f"{end_offset:020d}-{epoch:010d}.checkpoint"
    with FileMessageSet.open(path) as snapshot:
        snapshot.append(batch(values))
    return path


def write_partition_metadata(partition_dir: Path, tid: str) -> None:
    (partition_dir / "partition.metadata").write_text(f"version: 0\ntopic_id: {tid}\n")


def write_meta_properties(log_dir: Path, node_id: int = 1, cluster_id: str = "test-cluster") -> None:
    (log_dir / "meta.properties").write_text(
        f"#\nversion=1\nnode.id={node_id}\ncluster.id={cluster_id}\ndirectory.id={topic_id(node_id + 99)}\n")
