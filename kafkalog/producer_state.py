"""Producer-state snapshot files (``<offset>.snapshot``): reading them.

Port of ``ProducerStateManager.readSnapshot`` (storage, ``org.apache.kafka.storage.internals.log``,
tag 3.8.0).  kafkalog keeps no producer state of its own (the cleaner derives what it needs from the
log), so it only reads these files: for ``kafkalog dump`` and ``kafkalog verify``.

Layout (schema version 1, big-endian)::

    0  version        int16   1
    2  crc            uint32  CRC-32C of every byte from offset 6 to the end
    6  entry count    int32
    10 entries        46 bytes each:
                        producerId int64, producerEpoch int16, lastSequence int32, lastOffset int64,
                        offsetDelta int32, timestamp int64, coordinatorEpoch int32,
                        currentTxnFirstOffset int64 (-1: no open transaction)
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from . import _impl
from .errors import KafkaLogError
from .fsutil import read_regular

__all__ = ["BatchMetadata", "CorruptSnapshotError", "ProducerStateEntry", "parse_snapshot", "read_snapshot"]

PRODUCER_SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
#: Bigger snapshots than this are refused rather than read whole (a broker's hold a few MB at most).
MAX_SNAPSHOT_BYTES = 1 << 30


class CorruptSnapshotError(KafkaLogError, ValueError):
    """A producer snapshot that cannot be read (Kafka: ``CorruptSnapshotException``)."""


@dataclass(frozen=True)
class BatchMetadata:
    """The last batch a producer wrote (Kafka: ``BatchMetadata``)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        """Kafka: ``DefaultRecordBatch.decrementSequence(lastSeq, offsetDelta)``, wrapping below 0."""
        if self.last_seq < self.offset_delta:
            return 0x7FFFFFFF - (self.offset_delta - self.last_seq) + 1
        return self.last_seq - self.offset_delta


@dataclass(frozen=True)
class ProducerStateEntry:
    """One producer's state in a snapshot (Kafka: ``ProducerStateEntry``)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_timestamp: int
    batch_metadata: BatchMetadata | None
    current_txn_first_offset: int | None


def read_snapshot(path: str | os.PathLike[str]) -> list[ProducerStateEntry]:
    """The entries of a producer snapshot file (Kafka: ``ProducerStateManager.readSnapshot``).

    Raises :class:`CorruptSnapshotError` for an unknown version, a CRC mismatch or a size that does not
    match the entry count, with Kafka's wording where Kafka has one.
    """
    file = Path(path)
    size = file.stat().st_size
    if size > MAX_SNAPSHOT_BYTES:
        raise CorruptSnapshotError(f"Snapshot {file} is {size} bytes, more than a producer snapshot can hold")
    return parse_snapshot(read_regular(file), str(file))


def parse_snapshot(data: bytes, file: str) -> list[ProducerStateEntry]:
    """The entries of the bytes of a producer snapshot named ``file`` (:func:`read_snapshot`'s checks)."""
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise CorruptSnapshotError(f"Snapshot {file} is {len(data)} bytes, more than a producer snapshot can hold")
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {file} is {len(data)} bytes, shorter "
                                   f"than the {_HEADER.size}-byte header")
    version, crc, count = _HEADER.unpack_from(data)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = int(_impl.core.crc32c(memoryview(data)[6:]))
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                   f"Computed crc: {computed}")
    expected = _HEADER.size + count * _ENTRY.size if count >= 0 else -1
    if expected != len(data):
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {count} entries need {expected} bytes, "
                                   f"the file {file} has {len(data)}")
    entries = []
    for i in range(count):
        (producer_id, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) = _ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size)
        metadata = BatchMetadata(last_seq, last_offset, offset_delta, timestamp) if last_offset >= 0 else None
        entries.append(ProducerStateEntry(producer_id, epoch, coordinator_epoch, timestamp, metadata,
                                          txn_first if txn_first >= 0 else None))
    return entries
