"""``make demo``: every message format and codec Kafka has written, into one segment file and back.

Builds a batch for each (magic, codec) a broker can hold (v0 and v1 messages with none, gzip,
snappy and lz4; v2 batches with those and zstd), plus a LogAppendTime batch, an idempotent batch
with headers, a transaction and its COMMIT marker, and a KRaft-style LEADER_CHANGE control batch.
It appends them, at consecutive offsets, to ``00000000000000000000.log`` in a fresh directory,
reopens the file through an mmap, and prints what the batch scan and the record decoder find there,
with each batch's CRC checked.

Run ``python -m kafkalog.demo [--dir DIR]``; without ``--dir`` a temporary directory is used and
removed afterwards.
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from . import implementation
from ._impl import core
from .record import (
    CompressionType,
    ControlRecordType,
    EndTransactionMarker,
    MemoryRecords,
    TimestampType,
)

SEGMENT_NAME = f"{0:020d}.log"
LEGACY_CODECS = ("none", "gzip", "snappy", "lz4")
V2_CODECS = (*LEGACY_CODECS, "zstd")


def _sample_records(base_timestamp: int, n: int, tag: str) -> list[tuple[bytes | None, bytes | None, int]]:
    """Keyed records with one tombstone and one null key, as a compacted topic would hold."""
    records: list[tuple[bytes | None, bytes | None, int]] = []
    for i in range(n):
        key: bytes | None = f"user-{i % 3}".encode()
        value: bytes | None = f"{tag} event {i}: balance={100 + 7 * i}".encode()
        if i == n - 1:
            value = None  # a tombstone: deletes the key once compacted
        if i == 1:
            key = None
        records.append((key, value, base_timestamp + i))
    return records


def build_segment(now_ms: int) -> list[tuple[str, bytes]]:
    """The demo's batches, in order, with a label for each; offsets follow one another."""
    out: list[tuple[str, bytes]] = []
    offset = 0

    def add(label: str, records: MemoryRecords) -> None:
        nonlocal offset
        out.append((label, bytes(records.buffer)))
        last = max(batch.last_offset for batch in records.batches())
        offset = last + 1

    for magic, codecs in ((0, LEGACY_CODECS), (1, LEGACY_CODECS), (2, V2_CODECS)):
        for codec in codecs:
            records = _sample_records(now_ms, 4, f"v{magic}/{codec}")
            add(f"v{magic} {codec}", MemoryRecords.with_records(
                records, magic=magic, compression=codec, base_offset=offset))
    add("v1 LogAppendTime", MemoryRecords.with_records(
        _sample_records(now_ms - 5000, 3, "append-time"), magic=1, compression="gzip",
        timestamp_type="LogAppendTime", log_append_time=now_ms, base_offset=offset))
    add("v2 LogAppendTime", MemoryRecords.with_records(
        _sample_records(now_ms - 5000, 3, "append-time"), magic=2, compression="lz4",
        timestamp_type="LogAppendTime", log_append_time=now_ms, base_offset=offset))
    add("v2 idempotent + headers", MemoryRecords.with_records(
        [(b"order-1", b"created", now_ms, [("trace-id", b"abc123"), ("retry", None)]),
         (b"order-1", b"paid", now_ms + 1, [("trace-id", b"abc124")])],
        producer_id=4000, producer_epoch=0, base_sequence=0, partition_leader_epoch=3,
        base_offset=offset))
    add("v2 transactional", MemoryRecords.with_records(
        [(b"acct-9", b"debit 10", now_ms), (b"acct-7", b"credit 10", now_ms)],
        compression="snappy", producer_id=4001, producer_epoch=2, base_sequence=0,
        is_transactional=True, partition_leader_epoch=3, base_offset=offset))
    add("v2 COMMIT marker", MemoryRecords.with_end_transaction_marker(
        4001, 2, EndTransactionMarker(ControlRecordType.COMMIT, coordinator_epoch=5),
        base_offset=offset, timestamp=now_ms, partition_leader_epoch=3))
    add("v2 LEADER_CHANGE", MemoryRecords.with_control_record(
        ControlRecordType.LEADER_CHANGE, b"\x00\x00\x00\x00\x00\x01", base_offset=offset,
        timestamp=now_ms, partition_leader_epoch=4))
    return out


def _show(value: bytes | None, width: int = 34) -> str:
    if value is None:
        return "null"
    text = value.decode("utf-8", "replace")
    return repr(text if len(text) <= width else text[: width - 1] + "…")


@contextmanager
def _directory(path: str | None) -> Iterator[str]:
    if path is not None:
        os.makedirs(path, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="kafkalog-demo-") as tmp:
        yield tmp


def run(directory: str | None = None, out: TextIO = sys.stdout) -> int:
    now_ms = int(time.time() * 1000)
    batches = build_segment(now_ms)
    with _directory(directory) as where:
        path = os.path.join(where, SEGMENT_NAME)
        with open(path, "wb") as segment:
            for _label, data in batches:
                segment.write(data)
            segment.flush()
            os.fsync(segment.fileno())
        size = os.path.getsize(path)
        print(f"kafkalog demo — kernels: {implementation()} "
              f"(CRC-32C in hardware: {'yes' if core.crc32c_hardware() else 'no'})", file=out)
        print(f"wrote {len(batches)} batches, {size} bytes, to {path}\n", file=out)

        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            log = MemoryRecords(mm)
            scan = log.scan(check_crc=True)
            print(f"batch scan: {len(scan.batches)} entries, stopped at byte {scan.stop_position} "
                  f"({scan.stop_reason.name}), {scan.valid_bytes} valid bytes\n", file=out)
            header = (f"{'what':<24} {'offsets':>9} {'pos':>6} {'size':>5} {'magic':>5} "
                      f"{'codec':<7} {'timestamp type':<15} {'n':>2} {'crc ok':<6}")
            print(header, file=out)
            print("-" * len(header), file=out)
            total_records = 0
            tombstones = 0
            # Label each entry read back with the chunk written at its position (an uncompressed
            # v0/v1 set is one entry per record, so a chunk may hold several).
            starts = []
            at = 0
            for label, data in batches:
                starts.append((at, label))
                at += len(data)
            for batch in log.batches():
                label = next(name for start, name in reversed(starts) if start <= batch.position)
                records = batch.records()
                total_records += len(records)
                tombstones += sum(r.value is None for r in records)
                offsets = f"{batch.base_offset}-{batch.last_offset}"
                print(f"{label:<24} {offsets:>9} {batch.position:>6} {batch.size_in_bytes:>5} "
                      f"{batch.magic:>5} {batch.compression.kafka_name:<7} {batch.timestamp_type!s:<15} "
                      f"{len(records):>2} {'yes' if batch.is_valid() else 'NO':<6}", file=out)
            print(f"\n{total_records} records, {tombstones} tombstones\n", file=out)

            print("a closer look at three batches:", file=out)
            for batch in log.batches():
                if batch.magic == 1 and batch.compression is CompressionType.GZIP \
                        and batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
                    print(f"  v1 gzip wrapper at offset {batch.last_offset}: inner offsets were written "
                          f"relative, read back absolute:", file=out)
                    for r in batch.records():
                        print(f"    offset {r.offset} ts {r.timestamp} (the wrapper's append time) "
                              f"key {_show(r.key)} value {_show(r.value)}", file=out)
                elif batch.magic == 2 and batch.producer_id == 4000:
                    print(f"  idempotent batch: producerId {batch.producer_id} epoch {batch.producer_epoch} "
                          f"sequences {batch.base_sequence}..{batch.last_sequence} "
                          f"leader epoch {batch.partition_leader_epoch}", file=out)
                    for r in batch.records():
                        print(f"    offset {r.offset} key {_show(r.key)} value {_show(r.value)} "
                              f"headers {r.headers}", file=out)
                elif batch.magic == 2 and batch.is_control:
                    marker = batch.end_transaction_marker()
                    kind = batch.control_type()
                    detail = (f"coordinator epoch {marker.coordinator_epoch}" if marker
                              else "a KRaft control record")
                    print(f"  control batch at offset {batch.base_offset}: {kind.name if kind else '?'} "
                          f"({detail}), transactional={batch.is_transactional}", file=out)
        ok = scan.stop_reason.name == "END" and scan.valid_bytes == size
        print(f"\nsegment {'reads back whole and valid' if ok else 'FAILED its check'}.", file=out)
        return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkalog.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="write the segment here instead of a temporary directory")
    args = parser.parse_args(argv)
    return run(args.dir)


if __name__ == "__main__":
    sys.exit(main())
