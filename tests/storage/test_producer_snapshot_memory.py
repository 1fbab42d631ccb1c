"""A producer snapshot of many producers read in bounded memory by each of its readers (issue 28): ``kafkalog
dump``, ``kafkalog verify``, a read-only open (its last stable offset, local and at a URL) and a writable open.

Each reader ran at 21 to 29 bytes of memory a byte of snapshot, an object a field of every entry; now the entries
are rows of a numpy array over the file's bytes, read a chunk at a time, and a reader keeps only the rows it needs
(:mod:`kafkalog.producer_state.snapshot`).  The chunk is made small here (256 entries, 12 KB) so that a 552 KB
snapshot spans 47 of them: what a reader holds is then seen not to grow with the file (before, each of these
readers held 24 times the file).  Peaks are measured with tracemalloc, on both kernel twins (the CRC-32C is a
kernel).
"""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog import _impl
from kafkalog.cli import main
from kafkalog.log import Log
from kafkalog.producer_state import snapshot as snapshot_module
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.tools.verify import verify_partition
from kafkalog.topic import TopicPartition

#: Producers in the snapshot: 552 KB of entries.
PRODUCERS = 12_000
#: Every 1,200th producer has a transaction open from offset 3, so the last stable offset is 3.
OPEN_EVERY = 1_200
SNAPSHOT_OFFSET = 8
#: Entries read at a time: 12 KB, so the snapshot spans 47 chunks.
CHUNK_ENTRIES = 256


def _snapshot_bytes(now: int) -> bytes:
    """A snapshot as ``writeSnapshot`` lays it out (version 1, CRC-32C of bytes 6.., the count, 46-byte entries),
    built here from the schema: producer ids 1000.., epoch 2, one batch each, last written ``now``."""
    entry = np.dtype([("pid", ">i8"), ("epoch", ">i2"), ("seq", ">i4"), ("offset", ">i8"), ("delta", ">i4"),
                      ("timestamp", ">i8"), ("coordinator", ">i4"), ("txn", ">i8")])
    rows = np.zeros(PRODUCERS, dtype=entry)
    rows["pid"] = np.arange(1_000, 1_000 + PRODUCERS)
    rows["epoch"], rows["seq"], rows["offset"], rows["timestamp"], rows["coordinator"] = 2, 41, 6, now, -1
    rows["txn"] = -1
    rows["txn"][::OPEN_EVERY] = 3
    body = struct.pack(">i", PRODUCERS) + rows.tobytes()
    return struct.pack(">hI", 1, int(_impl.core.crc32c(body))) + body


@pytest.fixture
def partition(impl: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A partition of 8 plain records and, at offset 8, the snapshot of :data:`PRODUCERS` producers."""
    monkeypatch.setattr(snapshot_module, "SNAPSHOT_CHUNK_ENTRIES", CHUNK_ENTRIES, raising=False)
    now = int(time.time() * 1000)
    with LogDirWriter(tmp_path / "logs") as writer:
        log = writer.log(TopicPartition("producers", 0))
        for n in range(SNAPSHOT_OFFSET):
            log.append(MemoryRecords.with_records([(None, b"record %d" % n, now)]))
    directory = tmp_path / "logs" / "producers-0"
    for old in directory.glob("*.snapshot"):
        old.unlink()
    (directory / f"{SNAPSHOT_OFFSET:020d}.snapshot").write_bytes(_snapshot_bytes(now))
    yield directory


def _snapshot_size(directory: Path) -> int:
    return (directory / f"{SNAPSHOT_OFFSET:020d}.snapshot").stat().st_size


def _peak(fn: Callable[[], Any]) -> tuple[Any, int, int]:
    """``fn()``, the most memory Python held above what it held before while it ran, and how much more it held
    once it had returned.  ``fn`` runs once unmeasured first: the modules it imports at first use (numpy's among
    them) are not what is measured."""
    warm = fn()
    if isinstance(warm, Log):
        warm.close()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = fn()
        current, peak = tracemalloc.get_traced_memory()
        return result, peak - base, current - base
    finally:
        tracemalloc.stop()


class _Lines(io.TextIOBase):
    """Standard output that counts lines and keeps none (a kept output would be what is measured)."""

    def __init__(self) -> None:
        self.lines = 0
        self.first = ""

    def write(self, text: str) -> int:
        if not self.first and text.startswith("producerId"):
            self.first = text
        self.lines += text.count("\n")
        return len(text)


def test_dump_prints_a_chunk_at_a_time(partition: Path) -> None:
    def dump() -> tuple[int, _Lines]:
        out = _Lines()
        status = main(["--no-progress", "dump", "--files", str(partition / f"{SNAPSHOT_OFFSET:020d}.snapshot")],
                      stdout=out, stderr=io.StringIO())
        return status, out

    (status, out), peak, _held = _peak(dump)
    assert status == 0
    assert out.lines == PRODUCERS + 1  # "Dumping <file>", then an entry a line
    assert out.first.startswith("producerId: 1000 producerEpoch: 2 coordinatorEpoch: -1 "
                                "currentTxnFirstOffset: OptionalLong[3] ")
    assert peak < _snapshot_size(partition) // 2, peak


def test_verify_checks_a_chunk_at_a_time(partition: Path) -> None:
    report, peak, _held = _peak(lambda: verify_partition(partition))
    assert report.ok, report.findings
    assert peak < _snapshot_size(partition) // 2, peak


def test_a_read_only_open_keeps_the_open_transactions(partition: Path) -> None:
    def read() -> tuple[int, int | None]:
        with Log(partition, read_only=True) as log:
            return log.last_stable_offset, log.first_unstable_offset

    answer, peak, _held = _peak(read)
    assert answer == (3, 3)
    assert peak < _snapshot_size(partition) // 2, peak


def test_a_partition_at_a_url_reads_its_snapshot_a_chunk_at_a_time(partition: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    from kafkalog.urls import StorageLocation, locate
    from kafkalog.urls.partition import UrlPartition

    fs = fsspec.filesystem("memory")
    root = f"/kafkalog-{uuid.uuid4().hex}"
    fs.put(str(partition), f"{root}/{partition.name}", recursive=True)
    try:
        where = locate(f"memory://{root}/{partition.name}")
        assert isinstance(where, StorageLocation)

        def read() -> int:
            with UrlPartition.open(where) as remote:
                return remote.transactions().last_stable_offset

        last_stable, peak, _held = _peak(read)
        assert last_stable == 3
        assert peak < _snapshot_size(partition) // 2, peak
    finally:
        fs.rm(root, recursive=True)


def test_a_writable_open_keeps_its_producers_as_rows(partition: Path) -> None:
    """The writable load keeps every producer (it must: a producer may write again), as the snapshot's rows and
    an index, not as objects; an object is made for a producer the log touches."""
    log, peak, held = _peak(lambda: Log(partition))
    try:
        size = _snapshot_size(partition)
        assert log.producer_id_count == PRODUCERS
        assert log.first_unstable_offset == 3
        assert peak < 3 * size, peak
        assert held < 2 * size, held
        entry = log.producer_state_manager.last_entry(1_001)
        assert entry is not None
        assert (entry.producer_epoch, entry.last_seq, entry.last_data_offset, entry.current_txn_first_offset) == (
            2, 41, 6, None)
    finally:
        log.close()
