"""The storage layer's hot paths: an offset-index lookup, a segment read, and segment recovery.

Groups:

* ``index lookup 10 MiB, uniform`` and ``index lookup 10 MiB, warm``: ``OffsetIndex.lookup`` on a full
  10 MiB index (1,310,720 entries, the ``segment.index.bytes`` default), 10,000 random targets a
  round, with each twin.  ``uniform``: targets anywhere in the index's range (a binary search over the
  whole file); ``warm``: targets among the last 1,000 entries' offsets (Kafka's warm section, the last
  8 KiB, which is where a consumer at the head of the log reads).  Per-call microseconds are in
  ``extra_info``.  Targets: compiled <= 1 us a call and >= 10x the pure twin.
* ``segment read 1 MiB``: ``LogSegment.read(offset, 1 MiB)`` at 10,000 random offsets of a 1 GiB
  segment (~16 KiB v2 batches), adding up each result's ``records.size_in_bytes()``, with each twin.
  Per-call microseconds are in ``extra_info``.  No target.
* ``recover 1 GiB``: ``LogSegment.recover()`` of that segment (compiled; CRC check of every batch and
  both indexes rebuilt) against ``np.frombuffer(mmap_of_the_file, np.uint8).copy()``.  Target: the
  recovery runs at >= 50% of the copy's speed.  recover is idempotent on a clean segment, so every
  round starts from the same state.
* ``recover 16 MiB``: recover of a 16 MiB segment of the same batches, with each twin (the pure twin
  is not run on 1 GiB).  No target.
* ``scan a 1 GiB segment file, framing only`` and ``..., with CRCs``: a set opened on the 1 GiB file and
  ``FileMessageSet.scan`` of it (compiled), as its writer does, walking a map of the file (mapped afresh, as
  each open does), and as a read-only set does, reading the file 1 MiB at a time (a read-only set never
  maps its file: another process may cut it, and a map touched past the new end is a SIGBUS).  No target:
  the rows show what reading instead of mapping costs.

The index and segment files are written under pytest's tmp path; the 1 GiB segment is built once for
the module (one batch, repeated with its base offset patched: the base offset lies outside the CRC,
so every copy stays valid) and deleted when the module's benchmarks are done.  The files are fresh,
so every read comes from the page cache, not the disk.
"""

from __future__ import annotations

import mmap
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog import MemoryRecords, _impl
from kafkalog.file_message_set import FileMessageSet
from kafkalog.filenames import log_filename
from kafkalog.index import OffsetIndex, OffsetPosition
from kafkalog.record import ScanResult
from kafkalog.segment import LogSegment

# -- the offset index -------------------------------------------------------------------------------
INDEX_BYTES = 10 * 1024 * 1024
INDEX_ENTRIES = INDEX_BYTES // 8  # 1,310,720
INDEX_BASE_OFFSET = 5_000_000_000  # not 0, so the base offset is really added
OFFSET_STEP = 100  # relative offsets 0, 100, 200, ... (the last is 131,071,900, well inside int32)
POSITION_STEP = 1000  # positions 0, 1000, ... (the last is 1,310,719,000)
WARM_ENTRIES = 1000
LOOKUPS = 10_000
# -- the segments -----------------------------------------------------------------------------------
RECORDS_PER_BATCH = 136
BASE_TIMESTAMP = 1_700_000_000_000
SEGMENT_BYTES = 1 << 30
SMALL_SEGMENT_BYTES = 16 << 20
WRITE_CHUNK_BATCHES = 4096  # ~64 MiB written at a time
READS = 10_000
READ_SIZE = 1 << 20
BIG_ROUNDS = 5
SLOW_ROUNDS = 5  # pure-twin rows: 0.1-0.2 s a round


def _per_call(benchmark: Any, calls: int, target_us: float | None = None) -> None:
    """Per-call microseconds (fastest and median round) in ``extra_info``; nothing under
    ``--benchmark-disable``."""
    metadata = getattr(benchmark, "stats", None)
    if metadata is None:
        return
    stats = metadata.stats
    benchmark.extra_info["calls_per_round"] = calls
    benchmark.extra_info["us_per_call"] = float(stats.min) / calls * 1e6
    benchmark.extra_info["us_per_call_median"] = float(stats.median) / calls * 1e6
    if target_us is not None:
        benchmark.extra_info["target_us_per_call"] = target_us
        benchmark.extra_info["target_met"] = benchmark.extra_info["us_per_call"] <= target_us


def _run_timed(benchmark: Any, impl: ModuleType, fn: Callable[[], Any]) -> Any:
    """The pure twin in a few fixed rounds, the compiled twin calibrated by pytest-benchmark."""
    assert _impl.core is impl
    if impl.IMPLEMENTATION == "python":
        return benchmark.pedantic(fn, rounds=SLOW_ROUNDS, warmup_rounds=1)
    return benchmark(fn)


# ---------------------------------------------------------------------------------------------------
# OffsetIndex.lookup


@pytest.fixture(scope="module")
def offset_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OffsetIndex]:
    """A full 10 MiB offset index written with numpy (big-endian int32 pairs), opened read-only."""
    path = tmp_path_factory.mktemp("index") / "00000000005000000000.index"
    entries = np.empty(INDEX_ENTRIES, dtype=[("relative", ">i4"), ("position", ">i4")])
    slots = np.arange(INDEX_ENTRIES, dtype=np.int64)
    entries["relative"] = slots * OFFSET_STEP
    entries["position"] = slots * POSITION_STEP
    path.write_bytes(entries.tobytes())
    index = OffsetIndex(path, INDEX_BASE_OFFSET, writable=False)
    assert (index.entries, index.max_entries) == (INDEX_ENTRIES, INDEX_ENTRIES)
    yield index
    index.close()
    path.unlink()


def _expected_lookups(targets: list[int]) -> list[tuple[int, int]]:
    """What ``lookup`` must answer: the last entry whose offset is <= the target."""
    slots = np.minimum((np.array(targets, dtype=np.int64) - INDEX_BASE_OFFSET) // OFFSET_STEP,
                       INDEX_ENTRIES - 1)
    return list(zip((INDEX_BASE_OFFSET + slots * OFFSET_STEP).tolist(), (slots * POSITION_STEP).tolist(),
                    strict=True))


@pytest.fixture(scope="module")
def lookup_targets() -> dict[str, tuple[list[int], list[tuple[int, int]]]]:
    """For each pattern, 10,000 target offsets (Python ints) and the entries they must find."""
    rng = random.Random(0x1DE8)
    end = INDEX_BASE_OFFSET + INDEX_ENTRIES * OFFSET_STEP  # past the last entry's offset
    warm_start = INDEX_BASE_OFFSET + (INDEX_ENTRIES - WARM_ENTRIES) * OFFSET_STEP
    patterns = {
        "uniform": [rng.randrange(INDEX_BASE_OFFSET, end) for _ in range(LOOKUPS)],
        "warm": [rng.randrange(warm_start, end) for _ in range(LOOKUPS)],
    }
    return {name: (targets, _expected_lookups(targets)) for name, targets in patterns.items()}


@pytest.mark.parametrize("pattern", ["uniform", "warm"])
def test_index_lookup(benchmark: Any, impl: ModuleType, offset_index: OffsetIndex, pattern: str,
                      lookup_targets: dict[str, tuple[list[int], list[tuple[int, int]]]],
                      throughput: Callable[..., None]) -> None:
    """10,000 ``lookup`` calls a round; [cython] the compiled kernel, [python] the pure twin."""
    benchmark.group = f"index lookup 10 MiB, {pattern}"
    targets, expected = lookup_targets[pattern]
    lookup = offset_index.lookup

    def lookups() -> None:
        for target in targets:
            lookup(target)

    _run_timed(benchmark, impl, lookups)
    found = [lookup(target) for target in targets]
    assert found == expected
    assert all(type(entry) is OffsetPosition for entry in found[:10])
    throughput(benchmark, f"lookup-{pattern}/{impl.IMPLEMENTATION}")
    _per_call(benchmark, LOOKUPS, target_us=1.0 if impl.IMPLEMENTATION == "cython" else None)


# ---------------------------------------------------------------------------------------------------
# The segments


def _one_batch() -> bytes:
    rng = random.Random(16384)
    records = [(rng.randbytes(10), rng.randbytes(100), BASE_TIMESTAMP + i) for i in range(RECORDS_PER_BATCH)]
    return bytes(MemoryRecords.with_records(records).buffer)


def _write_log(path: Path, batch: bytes, total: int) -> int:
    """Write as many copies of ``batch`` as fit in ``total`` bytes, base offsets 0, 136, 272, ...,
    a chunk of copies at a time; returns how many were written."""
    n = total // len(batch)
    chunk = min(n, WRITE_CHUNK_BATCHES)
    grid = np.empty((chunk, len(batch)), np.uint8)
    grid[:] = np.frombuffer(batch, np.uint8)
    base_offsets = grid[:, :8].view(">i8")  # bytes 0-7 of a batch: its base offset, outside the CRC
    with open(path, "wb") as f:
        for first in range(0, n, chunk):
            k = min(chunk, n - first)
            base_offsets[:k, 0] = (first + np.arange(k, dtype=np.int64)) * RECORDS_PER_BATCH
            f.write(grid[:k].data)
    del base_offsets, grid
    return n


def _open_segment(directory: Path, batch: bytes, total: int) -> LogSegment:
    """A segment of ``total`` bytes of copies of ``batch``, its indexes built by one recover()."""
    _write_log(log_filename(directory, 0), batch, total)
    segment = LogSegment.open(directory, 0, file_already_exists=True)
    with _impl.using("cython" if "cython" in _impl.both() else "python"):
        assert segment.recover() == 0
    return segment


def _check_recovered(segment: LogSegment, batch_size: int, truncated: int) -> None:
    """recover() cut nothing and indexed every batch but the first (each is > index.interval.bytes)."""
    n = segment.size() // batch_size
    assert truncated == 0
    assert segment.size() == n * batch_size
    assert segment.offset_index.entries == n - 1
    assert segment.offset_index.entry(0) == (2 * RECORDS_PER_BATCH - 1, batch_size)
    assert segment.offset_index.last_offset == n * RECORDS_PER_BATCH - 1
    # Every copy carries the same timestamps, so the first batch holds the largest one.
    assert segment.max_timestamp_so_far == BASE_TIMESTAMP + RECORDS_PER_BATCH - 1
    assert segment.offset_of_max_timestamp_so_far == RECORDS_PER_BATCH - 1


@pytest.fixture(scope="module")
def batch() -> bytes:
    return _one_batch()


@pytest.fixture(scope="module")
def big_segment(tmp_path_factory: pytest.TempPathFactory, batch: bytes) -> Iterator[LogSegment]:
    """The 1 GiB segment; its directory is deleted when the module is done."""
    directory = tmp_path_factory.mktemp("segment-1gib")
    free = shutil.disk_usage(directory).free
    if free < SEGMENT_BYTES + (1 << 30):
        pytest.skip(f"{free >> 20} MiB free under {directory}: the 1 GiB segment needs 2 GiB")
    try:
        segment = _open_segment(directory, batch, SEGMENT_BYTES)
        try:
            yield segment
        finally:
            segment.close_handlers()  # no trim and no fsync: the files are deleted next
    finally:
        shutil.rmtree(directory)


@pytest.fixture(scope="module")
def small_segment(tmp_path_factory: pytest.TempPathFactory, batch: bytes) -> Iterator[LogSegment]:
    directory = tmp_path_factory.mktemp("segment-16mib")
    segment = _open_segment(directory, batch, SMALL_SEGMENT_BYTES)
    try:
        yield segment
    finally:
        segment.close_handlers()
        shutil.rmtree(directory)


# ---------------------------------------------------------------------------------------------------
# LogSegment.read


def test_segment_read(benchmark: Any, impl: ModuleType, big_segment: LogSegment, batch: bytes,
                      throughput: Callable[..., None]) -> None:
    """10,000 ``read(offset, 1 MiB)`` calls a round at random offsets, each result's size added up."""
    benchmark.group = "segment read 1 MiB"
    size = big_segment.size()
    last_offset = size // len(batch) * RECORDS_PER_BATCH - 1
    rng = random.Random(0x5E6)
    offsets = [rng.randrange(0, last_offset + 1) for _ in range(READS)]
    # The read starts at the batch holding the offset and takes 1 MiB, or what is left of the file.
    positions = np.array(offsets, dtype=np.int64) // RECORDS_PER_BATCH * len(batch)
    expected_total = int(np.minimum(size - positions, READ_SIZE).sum())
    read = big_segment.read

    def reads() -> int:
        total = 0
        for offset in offsets:
            total += read(offset, READ_SIZE).records.size_in_bytes()
        return total

    assert _run_timed(benchmark, impl, reads) == expected_total
    for offset, position in zip(offsets, positions.tolist(), strict=True):
        fetch = read(offset, READ_SIZE)
        assert fetch is not None
        metadata = fetch.fetch_offset_metadata
        assert (metadata.message_offset, metadata.segment_base_offset, metadata.relative_position_in_segment,
                fetch.records.start, fetch.first_entry_incomplete) == (offset, 0, position, position, False)
    benchmark.extra_info["segment_bytes"] = size
    throughput(benchmark, f"read1g/{impl.IMPLEMENTATION}")
    _per_call(benchmark, READS)


# ---------------------------------------------------------------------------------------------------
# LogSegment.recover


def test_recover_1gib_compiled(benchmark: Any, compiled: ModuleType, big_segment: LogSegment, batch: bytes,
                               throughput: Callable[..., None]) -> None:
    """recover(): the CRC-checking scan of the whole file, both indexes reset and rebuilt."""
    benchmark.group = "recover 1 GiB"
    benchmark.extra_info["batches"] = big_segment.size() // len(batch)
    benchmark.extra_info["hardware_crc32c"] = bool(compiled.crc32c_hardware())
    truncated = benchmark.pedantic(big_segment.recover, rounds=BIG_ROUNDS, warmup_rounds=1)
    _check_recovered(big_segment, len(batch), truncated)
    throughput(benchmark, "recover1g/cython", nbytes=big_segment.size())


def test_copy_1gib_numpy(benchmark: Any, big_segment: LogSegment, batch: bytes,
                         throughput: Callable[..., None]) -> None:
    """A plain copy of the segment file's bytes from an mmap into a fresh array."""
    benchmark.group = "recover 1 GiB"
    size = big_segment.size()
    with open(big_segment.log.file, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        result = benchmark.pedantic(lambda: np.frombuffer(m, np.uint8).copy(), rounds=BIG_ROUNDS,
                                    warmup_rounds=1)
        assert result.nbytes == size == len(m)
        assert np.array_equal(result, np.frombuffer(m, np.uint8))
    n = size // len(batch)
    assert result[:8].view(">i8")[0] == 0
    assert result[size - len(batch):size - len(batch) + 8].view(">i8")[0] == (n - 1) * RECORDS_PER_BATCH
    assert result[8:len(batch)].tobytes() == batch[8:]
    del result
    throughput(benchmark, "recover1g/numpy-copy", nbytes=size)


def test_recover_16mib(benchmark: Any, impl: ModuleType, small_segment: LogSegment, batch: bytes,
                       throughput: Callable[..., None]) -> None:
    benchmark.group = "recover 16 MiB"
    benchmark.extra_info["batches"] = small_segment.size() // len(batch)
    truncated = _run_timed(benchmark, impl, small_segment.recover)
    _check_recovered(small_segment, len(batch), truncated)
    throughput(benchmark, f"recover16/{impl.IMPLEMENTATION}", nbytes=small_segment.size())


# ---------------------------------------------------------------------------------------------------
# FileMessageSet.scan: a map (the writer's set) against reads (a read-only set)


@pytest.mark.parametrize("check_crc", [False, True], ids=["framing", "crc"])
@pytest.mark.parametrize("how", ["mapped", "read"])
def test_scan_segment_file(benchmark: Any, compiled: ModuleType, big_segment: LogSegment, batch: bytes,
                           how: str, check_crc: bool, throughput: Callable[..., None]) -> None:
    benchmark.group = f"scan a 1 GiB segment file, {'with CRCs' if check_crc else 'framing only'}"
    def open_and_scan() -> ScanResult:
        records = FileMessageSet(big_segment.log.file, writable=how == "mapped")
        try:
            assert records.channel.mappable == (how == "mapped")
            return records.scan(check_crc=check_crc)
        finally:
            records.close_handlers()  # no trim, no fsync: the writable set only reads here

    result = benchmark.pedantic(open_and_scan, rounds=BIG_ROUNDS, warmup_rounds=1)
    n = big_segment.size() // len(batch)
    assert (len(result.batches), result.stop_position) == (n, n * len(batch))
    throughput(benchmark, f"scan1g-{'crc' if check_crc else 'framing'}/{how}", nbytes=big_segment.size())
