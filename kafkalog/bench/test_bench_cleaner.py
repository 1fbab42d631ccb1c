"""The log cleaner's hot paths: the offset map's whole-segment kernels, and cleaning a compacted log.

Groups:

* ``offset map put 64k keys`` and ``offset map get 64k keys``: one segment-sized buffer (4,096 uncompressed v2
  batches of 16 records, 16-byte keys, 1 KiB values; 69 MB = 66 MiB) decoded once into record columns
  (``MemoryRecords.record_columns()``, whose runs all index the buffer itself, concatenated into one
  65,536-row array).  16,384 distinct keys, each written 4 times in shuffled order, so three records in four
  are superseded.  ``put``: ``SkimpyOffsetMap.put_records`` over all 65,536 rows, one kernel call
  (``offset_map_put_records``), into a map cleared before each round (untimed).  ``get``:
  ``SkimpyOffsetMap.latest_codes`` over the same rows against the filled map (``offset_map_latest_codes``).
  Each with both twins.  The map is the cleaner's default (``log.cleaner.dedupe.buffer.size`` 128 MiB,
  5,592,405 slots), as a one-thread cleaner allocates it.  Reference rows ``per-key``: the same 65,536
  ``SkimpyOffsetMap.put(key, offset)`` / ``get(key)`` calls from Python, keys as ``bytes`` made before the
  round.  keys/s = records/s.  Targets: both kernels compiled >= 20x the pure twin.
* ``clean 263 MiB log``: ``Cleaner.clean(LogToClean(tp, log, 0, active segment base))`` of a compacted log of
  262,144 records (16-byte keys, 1 KiB values, 16 records a batch; 275,988,480 bytes in 5 segments of
  ``segment.bytes`` 64 MiB, the last one partly filled, and an empty active segment).  131,072 keys, each
  written twice in shuffled order, so exactly half the records are superseded and most batches are rebuilt
  (14,423 of the 16,384 keep some of their records but not all).  The Cleaner is built as a
  ``CleanerThread`` builds it from the default ``CleanerConfig`` (128 MiB map, 256 KiB I/O buffer), with no
  throttling, and is reused across rounds (as a cleaner thread reuses its map).  Compiled only.  MB/s is
  ``stats.bytes_read`` over the round's time (the whole dirty log); records/s is in ``extra_info``.
  Target: >= 200 MB/s (issue 5).  Compared with a plain copy of the same bytes: ``file-copy`` reads each
  dirty ``.log`` file with ``readinto`` through a 1 MiB buffer and ``os.write``-s it to one new file (no
  fsync; the cleaner fsyncs each cleaned segment, msyncs its indexes and fsyncs the directory at each
  swap).  Target ratio (issue 18): the cleaning at >= 0.3x the copy's time (moonshot 0.5x).
* ``clean 8 MiB log``: the same shape at 8,192 records (8,624,640 bytes, 8.2 MiB; 5 segments of 2 MiB), with
  each twin.  No target.

MB is 10^6 bytes, as in the rest of the suite: the 263 MiB log is 276 MB.

Every cleaning round cleans the same dirty log: the log is written once per module by ``Log.append``-s and a
roll, closed, and kept aside; before each round (untimed) the previous round's log is closed and deleted,
the saved directory is copied with ``shutil.copytree`` and opened (``had_clean_shutdown=True``).  Only
``clean`` is timed.  Each log has a ``MockTime``; the replaced segments' deletion, which
``file.delete.delay.ms`` schedules, is run by advancing that clock before the log is closed.  After the
benchmark the last round's log is read back: exactly the last occurrence of every key survives.  The module
needs about 1 GiB of disk (saved log, one round's copy and its cleaned segments, the copy row's file) and
skips the big rows with less than 2 GiB free.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from kafkalog import MemoryRecords, _impl
from kafkalog.cleaner import Cleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.cleaner.manager import LogToClean
from kafkalog.cleaner.offset_map import SkimpyOffsetMap
from kafkalog.cleaner.stats import CleanerStats
from kafkalog.cleaner.throttler import Throttler
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.scheduler import MockTime

BASE_TIMESTAMP = 1_700_000_000_000
KEY_BYTES = 16
VALUE_BYTES = 1024
RECORDS_PER_BATCH = 16
VALUE_POOL = 61  # distinct 1 KiB values, reused round-robin
# -- the offset-map kernels -------------------------------------------------------------------------
MAP_RECORDS = 65_536
MAP_KEYS = 16_384  # each key 4 times
MAP_ROUNDS_COMPILED = 20
MAP_ROUNDS_PURE = 3
PER_KEY_ROUNDS_COMPILED = 10
# -- cleaning ---------------------------------------------------------------------------------------
BIG_RECORDS = 262_144  # each key twice
BIG_SEGMENT_BYTES = 64 << 20
BIG_ROUNDS = 5
SMALL_RECORDS = 8_192
SMALL_SEGMENT_BYTES = 2 << 20
SMALL_ROUNDS = 3
COPY_BUFFER = 1 << 20
CLEAN_TARGET_MB_PER_S = 200.0
TOPIC = "compacted"


def _key(key_id: int) -> bytes:
    key = b"key-%012d" % key_id
    assert len(key) == KEY_BYTES
    return key


def _values() -> list[bytes]:
    rng = random.Random(0xC1EA)
    return [rng.randbytes(VALUE_BYTES) for _ in range(VALUE_POOL)]


def _shuffled_ids(keys: int, copies: int, seed: int) -> list[int]:
    """Every key id ``copies`` times, in a shuffled order."""
    ids = list(range(keys)) * copies
    random.Random(seed).shuffle(ids)
    return ids


def _last_occurrences(ids: list[int]) -> npt.NDArray[np.int64]:
    """The offsets (indexes) holding the last occurrence of each key id, ascending."""
    last: dict[int, int] = {}
    for offset, key_id in enumerate(ids):
        last[key_id] = offset
    return np.array(sorted(last.values()), dtype=np.int64)


def _batches(ids: list[int], values: list[bytes], *, offsets: bool) -> Iterator[tuple[int, bytes]]:
    """Uncompressed v2 batches of 16 records each: (offset of the first record, bytes).  ``offsets``: the
    batch carries that base offset; otherwise 0, as a producer sends it (the log assigns the offsets)."""
    for base in range(0, len(ids), RECORDS_PER_BATCH):
        records = [(_key(ids[i]), values[i % VALUE_POOL], BASE_TIMESTAMP + i)
                   for i in range(base, min(base + RECORDS_PER_BATCH, len(ids)))]
        yield base, bytes(MemoryRecords.with_records(records, base_offset=base if offsets else 0).buffer)


def _build_twin() -> str:
    return "cython" if "cython" in _impl.both() else "python"


# ---------------------------------------------------------------------------------------------------
# The offset-map kernels


@dataclass
class MapSegment:
    data: bytes
    records: npt.NDArray[Any]  # RECORD_DTYPE rows, positions into ``data``
    keys: list[bytes]
    expected_latest: npt.NDArray[np.int64]  # per record: the offset of its key's last occurrence


@pytest.fixture(scope="module")
def map_segment() -> MapSegment:
    ids = _shuffled_ids(MAP_KEYS, MAP_RECORDS // MAP_KEYS, seed=0x0FF5E7)
    values = _values()
    with _impl.using(_build_twin()):
        data = b"".join(batch for _, batch in _batches(ids, values, offsets=True))
        runs = list(MemoryRecords(data).record_columns())
    assert len(runs) > 1  # several 4 MiB runs, all indexing ``data`` itself
    for run in runs:
        with memoryview(run.data) as view:
            assert view.obj is data
    records = np.ascontiguousarray(np.concatenate([run.records for run in runs]))
    assert len(records) == MAP_RECORDS
    assert records["offset"].tolist() == list(range(MAP_RECORDS))
    assert set(records["key_len"].tolist()) == {KEY_BYTES}
    for i in (0, MAP_RECORDS // 2, MAP_RECORDS - 1):
        pos = int(records["key_pos"][i])
        assert data[pos:pos + KEY_BYTES] == _key(ids[i])
    last = {key_id: offset for offset, key_id in enumerate(ids)}
    expected_latest = np.array([last[key_id] for key_id in ids], dtype=np.int64)
    return MapSegment(data, records, [_key(key_id) for key_id in ids], expected_latest)


@pytest.fixture(scope="module")
def dedupe_map() -> SkimpyOffsetMap:
    """The cleaner's default map (one thread): 128 MiB."""
    return SkimpyOffsetMap(CleanerConfig().dedupe_buffer_size)


def _max_entries(offset_map: SkimpyOffsetMap) -> int:
    return int(offset_map.slots * CleanerConfig().dedupe_buffer_load_factor)


def _map_rounds(impl: ModuleType, compiled_rounds: int) -> int:
    assert _impl.core is impl
    return compiled_rounds if impl.IMPLEMENTATION == "cython" else MAP_ROUNDS_PURE


def _map_info(benchmark: Any, offset_map: SkimpyOffsetMap, calls: int) -> None:
    benchmark.extra_info["map_slots"] = offset_map.slots
    benchmark.extra_info["map_entries"] = offset_map.size
    benchmark.extra_info["calls_per_round"] = calls
    metadata = getattr(benchmark, "stats", None)
    if metadata is not None:
        benchmark.extra_info["keys_per_s"] = MAP_RECORDS / float(metadata.stats.min)
        benchmark.extra_info["keys_per_s_median"] = MAP_RECORDS / float(metadata.stats.median)


def _check_filled(offset_map: SkimpyOffsetMap, segment: MapSegment) -> None:
    assert (offset_map.size, offset_map.latest_offset) == (MAP_KEYS, MAP_RECORDS - 1)
    for i in (0, 1, MAP_RECORDS // 3, MAP_RECORDS - 1):
        assert offset_map.get(segment.keys[i]) == segment.expected_latest[i]
    assert offset_map.get(b"key-not-written!") == -1


def test_map_put_records(benchmark: Any, impl: ModuleType, map_segment: MapSegment,
                         dedupe_map: SkimpyOffsetMap, throughput: Callable[..., None]) -> None:
    """One ``put_records`` call over the 65,536 decoded rows into an empty map."""
    benchmark.group = "offset map put 64k keys"
    max_entries = _max_entries(dedupe_map)

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        dedupe_map.clear()
        return (), {}

    def put() -> tuple[int, bool]:
        return dedupe_map.put_records(map_segment.data, map_segment.records, 0, max_entries)

    processed, full = benchmark.pedantic(put, setup=setup, rounds=_map_rounds(impl, MAP_ROUNDS_COMPILED),
                                         warmup_rounds=1)
    assert (processed, full) == (MAP_RECORDS, False)
    assert dedupe_map.lookups == MAP_RECORDS  # the last round's puts (clear() resets the counters)
    benchmark.extra_info["probes_per_put"] = dedupe_map.probes / MAP_RECORDS
    _check_filled(dedupe_map, map_segment)
    throughput(benchmark, f"mapput/{impl.IMPLEMENTATION}", records=MAP_RECORDS)
    _map_info(benchmark, dedupe_map, 1)


def test_map_latest_codes(benchmark: Any, impl: ModuleType, map_segment: MapSegment,
                          dedupe_map: SkimpyOffsetMap, throughput: Callable[..., None]) -> None:
    """One ``latest_codes`` call over the 65,536 rows against the filled map."""
    benchmark.group = "offset map get 64k keys"
    dedupe_map.clear()
    assert dedupe_map.put_records(map_segment.data, map_segment.records, 0, _max_entries(dedupe_map)) == \
        (MAP_RECORDS, False)

    def codes() -> npt.NDArray[np.int8]:
        return dedupe_map.latest_codes(map_segment.data, map_segment.records)

    result = benchmark.pedantic(codes, rounds=_map_rounds(impl, MAP_ROUNDS_COMPILED), warmup_rounds=1)
    expected = np.where(map_segment.records["offset"] == map_segment.expected_latest, 1, 0).astype(np.int8)
    assert np.array_equal(result, expected)
    assert int((result == 1).sum()) == MAP_KEYS
    _check_filled(dedupe_map, map_segment)
    throughput(benchmark, f"mapcodes/{impl.IMPLEMENTATION}", records=MAP_RECORDS)
    _map_info(benchmark, dedupe_map, 1)


def test_map_put_per_key(benchmark: Any, impl: ModuleType, map_segment: MapSegment,
                         dedupe_map: SkimpyOffsetMap, throughput: Callable[..., None]) -> None:
    """Reference: 65,536 ``SkimpyOffsetMap.put(key, offset)`` calls into an empty map."""
    benchmark.group = "offset map put 64k keys"
    pairs = list(zip(map_segment.keys, range(MAP_RECORDS), strict=True))

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        dedupe_map.clear()
        return (), {}

    def puts() -> None:
        put = dedupe_map.put
        for key, offset in pairs:
            put(key, offset)

    benchmark.pedantic(puts, setup=setup, rounds=_map_rounds(impl, PER_KEY_ROUNDS_COMPILED), warmup_rounds=1)
    _check_filled(dedupe_map, map_segment)
    throughput(benchmark, f"mapput-perkey/{impl.IMPLEMENTATION}", records=MAP_RECORDS)
    _map_info(benchmark, dedupe_map, MAP_RECORDS)


def test_map_get_per_key(benchmark: Any, impl: ModuleType, map_segment: MapSegment,
                         dedupe_map: SkimpyOffsetMap, throughput: Callable[..., None]) -> None:
    """Reference: 65,536 ``SkimpyOffsetMap.get(key)`` calls against the filled map."""
    benchmark.group = "offset map get 64k keys"
    dedupe_map.clear()
    assert dedupe_map.put_records(map_segment.data, map_segment.records, 0, _max_entries(dedupe_map)) == \
        (MAP_RECORDS, False)
    keys = map_segment.keys

    def gets() -> list[int]:
        get = dedupe_map.get
        return [get(key) for key in keys]

    found = benchmark.pedantic(gets, rounds=_map_rounds(impl, PER_KEY_ROUNDS_COMPILED), warmup_rounds=1)
    assert found == map_segment.expected_latest.tolist()
    throughput(benchmark, f"mapget-perkey/{impl.IMPLEMENTATION}", records=MAP_RECORDS)
    _map_info(benchmark, dedupe_map, MAP_RECORDS)


# ---------------------------------------------------------------------------------------------------
# Cleaning a compacted log


@dataclass
class DirtyLog:
    saved: Path  # the closed log's directory, ``<root>/saved/compacted-0``
    config: LogConfig
    records: int
    dirty_bytes: int  # every non-active segment: the whole dirty section
    dirty_files: list[Path]
    keep: npt.NDArray[np.int64]  # the offsets a cleaning keeps, ascending
    build_s: float


def _compact_config(segment_bytes: int) -> LogConfig:
    return LogConfig({"cleanup.policy": "compact", "segment.bytes": segment_bytes})


def _new_log(directory: Path, config: LogConfig, **kwargs: Any) -> Log:
    mock = MockTime()
    return Log(directory, config, scheduler=mock.scheduler, time=mock, **kwargs)


def _write_dirty_log(root: Path, records: int, segment_bytes: int, seed: int) -> DirtyLog:
    """Append the log batch by batch (leader appends, offsets assigned by the log), roll so every record is in
    a non-active segment, close it cleanly."""
    ids = _shuffled_ids(records // 2, 2, seed)
    values = _values()
    config = _compact_config(segment_bytes)
    directory = root / "saved" / f"{TOPIC}-0"
    started = time.perf_counter()
    with _impl.using(_build_twin()):
        log = _new_log(directory, config)
        try:
            for base, batch in _batches(ids, values, offsets=False):
                assert log.append(MemoryRecords(bytearray(batch))).first_offset == base
            log.roll()
            assert (log.log_end_offset, log.active_segment.base_offset, log.active_segment.size()) == \
                (records, records, 0)
            dirty_bytes = log.size
            segments = log.number_of_segments - 1
        finally:
            log.close()
    build_s = time.perf_counter() - started
    dirty_files = sorted(p for p in directory.glob("*.log") if p.stat().st_size > 0)
    assert len(dirty_files) == segments > 1
    assert sum(p.stat().st_size for p in dirty_files) == dirty_bytes
    return DirtyLog(directory, config, records, dirty_bytes, dirty_files, _last_occurrences(ids), build_s)


def _need_disk(directory: Path, needed: int) -> None:
    free = shutil.disk_usage(directory).free
    if free < needed:
        pytest.skip(f"{free >> 20} MiB free under {directory}: the cleaning rows need {needed >> 20} MiB")


@pytest.fixture(scope="module")
def big_dirty_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DirtyLog]:
    root = tmp_path_factory.mktemp("clean-big")
    try:
        _need_disk(root, 2 << 30)
        yield _write_dirty_log(root, BIG_RECORDS, BIG_SEGMENT_BYTES, seed=0xB16)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def small_dirty_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DirtyLog]:
    root = tmp_path_factory.mktemp("clean-small")
    try:
        yield _write_dirty_log(root, SMALL_RECORDS, SMALL_SEGMENT_BYTES, seed=0x5A11)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _new_cleaner() -> Cleaner:
    """A Cleaner as ``CleanerThread`` makes one from the default config (one thread), unthrottled."""
    config = CleanerConfig()
    threads = max(config.num_threads, 1)
    offset_map = SkimpyOffsetMap(min(config.dedupe_buffer_size // threads, 0x7FFFFFFF), config.hash_algorithm)
    return Cleaner(0, offset_map, config.io_buffer_size // threads // 2, config.max_message_size,
                   config.dedupe_buffer_load_factor, Throttler(1e308), MockTime(), check_done=lambda tp: None)


class _CleanRounds:
    """A fresh copy of the dirty log per round under ``root``; ``next()`` first closes and deletes the
    previous round's copy, so after the benchmark the last round's cleaned log is still open to be checked."""

    def __init__(self, root: Path, dirty: DirtyLog) -> None:
        self.root = root
        self.dirty = dirty
        self.count = 0
        self.log: Log | None = None
        self.copy_s: list[float] = []

    def release(self) -> None:
        if self.log is None:
            return
        log, self.log = self.log, None
        assert isinstance(log.time, MockTime)
        log.time.sleep(log.config.file_delete_delay_ms)  # runs the replaced segments' scheduled deletion
        log.close()
        shutil.rmtree(log.dir.parent)

    def next(self) -> LogToClean:
        self.release()
        self.count += 1
        directory = self.root / f"round-{self.count}" / self.dirty.saved.name
        started = time.perf_counter()
        shutil.copytree(self.dirty.saved, directory)
        self.copy_s.append(time.perf_counter() - started)
        self.log = _new_log(directory, self.dirty.config, had_clean_shutdown=True)
        assert self.log.log_end_offset == self.dirty.records
        return LogToClean(self.log.topic_partition, self.log, 0, self.log.active_segment.base_offset)


@pytest.fixture
def clean_rounds(tmp_path: Path) -> Iterator[Callable[[DirtyLog], _CleanRounds]]:
    made: list[_CleanRounds] = []

    def make(dirty: DirtyLog) -> _CleanRounds:
        made.append(_CleanRounds(tmp_path, dirty))
        return made[-1]

    try:
        yield make
    finally:
        for rounds in made:
            rounds.release()


def _check_cleaned(log: Log, dirty: DirtyLog, end_offset: int, stats: CleanerStats) -> int:
    """The round cleaned the whole dirty section and kept exactly each key's last record; returns the bytes of
    the cleaned segments."""
    assert end_offset == dirty.records
    assert (stats.messages_read, stats.messages_written, stats.invalid_messages_read) == \
        (dirty.records, dirty.records // 2, 0)
    assert (stats.bytes_read, stats.map_bytes_read, stats.map_messages_read) == \
        (dirty.dirty_bytes, dirty.dirty_bytes, dirty.records)
    cleaned = [segment for segment in log.log_segments() if segment.base_offset < end_offset]
    assert sum(segment.size() for segment in cleaned) == stats.bytes_written
    offsets = []
    keys: set[bytes | None] = set()
    for segment in cleaned:
        batches = list(segment.log.batches())
        assert all(batch.is_valid() for batch in batches[:: max(len(batches) // 50, 1)])
        for run in MemoryRecords(segment.log.read_bytes()).record_columns():
            offsets.append(run.records["offset"].copy())
            keys.update(run.key(i) for i in range(len(run)))
    kept = np.concatenate(offsets)
    assert np.array_equal(kept, dirty.keep)
    assert len(keys) == dirty.records // 2
    assert (log.log_end_offset, log.active_segment.base_offset) == (dirty.records, dirty.records)
    return stats.bytes_written


def _clean_info(benchmark: Any, dirty: DirtyLog, rounds: _CleanRounds, bytes_written: int) -> None:
    benchmark.extra_info["records"] = dirty.records
    benchmark.extra_info["dirty_bytes"] = dirty.dirty_bytes
    benchmark.extra_info["dirty_segments"] = len(dirty.dirty_files)
    benchmark.extra_info["bytes_written"] = bytes_written
    benchmark.extra_info["build_s"] = round(dirty.build_s, 2)
    benchmark.extra_info["copytree_s_per_round"] = [round(s, 3) for s in rounds.copy_s]
    metadata = getattr(benchmark, "stats", None)
    if metadata is not None:
        benchmark.extra_info["records_per_s"] = dirty.records / float(metadata.stats.min)
        benchmark.extra_info["records_per_s_median"] = dirty.records / float(metadata.stats.median)


def _run_cleaning(benchmark: Any, dirty: DirtyLog, rounds: _CleanRounds, rounds_count: int) -> int:
    cleaner = _new_cleaner()

    def setup() -> tuple[tuple[LogToClean], dict[str, Any]]:
        return (rounds.next(),), {}

    end_offset, stats = benchmark.pedantic(cleaner.clean, setup=setup, rounds=rounds_count, warmup_rounds=1)
    assert rounds.log is not None
    written = _check_cleaned(rounds.log, dirty, end_offset, stats)
    _clean_info(benchmark, dirty, rounds, written)
    return int(stats.bytes_read)


def test_clean_big_log(benchmark: Any, compiled: ModuleType, big_dirty_log: DirtyLog,
                       clean_rounds: Callable[[DirtyLog], _CleanRounds],
                       throughput: Callable[..., None]) -> None:
    """``Cleaner.clean`` of the 263 MiB log, everything below the active segment dirty."""
    benchmark.group = "clean 263 MiB log"
    bytes_read = _run_cleaning(benchmark, big_dirty_log, clean_rounds(big_dirty_log), BIG_ROUNDS)
    throughput(benchmark, "clean256/cython", nbytes=bytes_read)
    metadata = getattr(benchmark, "stats", None)
    if metadata is not None:
        benchmark.extra_info["target_mb_per_s"] = CLEAN_TARGET_MB_PER_S
        benchmark.extra_info["target_met"] = benchmark.extra_info["mb_per_s"] >= CLEAN_TARGET_MB_PER_S


def test_clean_copy_reference(benchmark: Any, big_dirty_log: DirtyLog, tmp_path: Path,
                              throughput: Callable[..., None]) -> None:
    """A plain copy of the dirty segment files: ``readinto`` a 1 MiB buffer, ``os.write`` to a new file."""
    benchmark.group = "clean 263 MiB log"
    buffer = bytearray(COPY_BUFFER)
    view = memoryview(buffer)
    state: dict[str, Any] = {"count": 0, "path": None}

    def setup() -> tuple[tuple[Path], dict[str, Any]]:
        if state["path"] is not None:
            state["path"].unlink()
        state["count"] += 1
        state["path"] = tmp_path / f"copy-{state['count']}.log"
        return (state["path"],), {}

    def copy(target: Path) -> int:
        written = 0
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            for source in big_dirty_log.dirty_files:
                with open(source, "rb", buffering=0) as f:
                    while n := f.readinto(buffer):
                        written += os.write(fd, view[:n])
        finally:
            os.close(fd)
        return written

    try:
        copied = benchmark.pedantic(copy, setup=setup, rounds=BIG_ROUNDS, warmup_rounds=1)
        assert copied == big_dirty_log.dirty_bytes
        target = state["path"]
        assert target.stat().st_size == big_dirty_log.dirty_bytes
        with open(target, "rb") as out, open(big_dirty_log.dirty_files[-1], "rb") as last:
            tail = last.read()
            out.seek(-len(tail), os.SEEK_END)
            assert out.read() == tail
    finally:
        view.release()
        if state["path"] is not None:
            state["path"].unlink(missing_ok=True)
    benchmark.extra_info["buffer_bytes"] = COPY_BUFFER
    throughput(benchmark, "clean256/file-copy", nbytes=big_dirty_log.dirty_bytes)


def test_clean_small_log(benchmark: Any, impl: ModuleType, small_dirty_log: DirtyLog,
                         clean_rounds: Callable[[DirtyLog], _CleanRounds],
                         throughput: Callable[..., None]) -> None:
    """``Cleaner.clean`` of the 8.2 MiB log, with each twin."""
    benchmark.group = "clean 8 MiB log"
    assert _impl.core is impl
    bytes_read = _run_cleaning(benchmark, small_dirty_log, clean_rounds(small_dirty_log), SMALL_ROUNDS)
    throughput(benchmark, f"clean8/{impl.IMPLEMENTATION}", nbytes=bytes_read)
