"""Test stores in the tiered-storage layouts, built from partitions kafkalog writes.

:func:`write_partition` and :func:`write_rich_partition` write a partition of several segments with kafkalog's
``Log``; :mod:`kafkalog.remote.upload` uploads its closed segments in each layout (the benchmarks use it too);
:func:`library_read` is what the library reads of the original partition.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from kafkalog import MemoryRecords
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.remote.upload import LocalSegment, closed_segments

__all__ = ["ABORTED_PRODUCER", "COMMITTED_PRODUCER", "library_read", "write_partition", "write_rich_partition"]


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
    return closed_segments(directory)


#: The producer of the aborted transaction of :func:`write_rich_partition`, and of the committed one.
ABORTED_PRODUCER, COMMITTED_PRODUCER = 7001, 7002


def write_rich_partition(directory: Path, segments: int = 5) -> list[LocalSegment]:
    """A partition of at least ``segments`` closed segments, as a broker would have uploaded them: batches
    compressed with zstd and lz4 and plain ones, timestamps rising by 1 ms a record, a transaction that is
    aborted and one that is committed; and the ``.txnindex`` a broker keeps for the segment holding the ABORT
    marker (kafkalog writes none: built here from the log's transactions, as Kafka's
    ``ProducerStateManager.completeTxn`` appends it)."""
    from kafkalog.log.transactions import TransactionState
    from kafkalog.record import ControlRecordType, EndTransactionMarker
    from kafkalog.transaction_index import ABORTED_TXN_VERSION

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
    out = closed_segments(directory)
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
