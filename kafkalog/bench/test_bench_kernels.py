"""The kernels that had no row of their own, each called directly, with each twin (``[cython]``,
``[python]``) and, where one exists, a peer doing the same job.

Groups:

* ``encode v2 100k records``: 100,000 records (keys 8-12 bytes, values 90-110 bytes, no headers; the
  records of ``test_bench_decode.py``) as 1000 batches of 100, the columns split per batch before the
  round.  ``kernel``: one ``encode_v2_records(timestamps, keys, values, None, first timestamp)`` call
  per batch, giving the records section of each batch (what ``encode_default_batch`` wraps in the
  61-byte header and the CRC), with each twin.  ``with_records`` (compiled): the whole producer path,
  ``MemoryRecords.with_records(records)`` per batch (``normalize_records``, the kernel, the header and
  the CRC-32C).  ``aiokafka``: its compiled ``DefaultRecordBatchBuilder``, 100 ``append`` calls and a
  ``build`` per batch (header and CRC included), the like of ``with_records``.  Every row's records
  sections must equal the ones aiokafka's builder wrote before the round (checked once against the
  inputs with aiokafka's reader); the whole-batch rows also have their record count and CRC-32C
  checked (crcmod).
* ``decode legacy v1 100k records``: the same 100,000 records as one run of uncompressed v1
  messages (14 MB), a ``bytes`` buffer.  ``kernel``: one ``decode_legacy_records(buf, 0, len(buf))``
  call, columns only (no object per record), with each twin; ``MemoryRecords.record_columns()``
  hands such runs to the kernel in 4 MiB pieces.  ``aiokafka`` (compiled) and ``kafka-python``
  (pure Python): their ``MemoryRecords`` over the buffer, one legacy batch per message, reading key,
  value, offset and timestamp of every record (the loop of ``test_bench_decode.py``).  Checked:
  record count, offsets, timestamps, total key and value bytes, the last record's key and value.
* ``gather 100k keys+values``: the Spark source's copy into Arrow's binary layout.  The v2 buffer
  of ``decode v2 100k records``, decoded once (compiled) into 100,000 record rows; a round gathers the
  key column and then the value column (two ``gather_slices`` calls, 1.0 MB and 10 MB), the positions
  and lengths contiguous as ``kafkalog.spark.arrow`` passes them.  Each twin (the pure twin is numpy
  fancy indexing), and ``join``: the same two columns built in Python, ``b"".join`` of a ``bytes``
  slice per record and the offsets by ``np.cumsum``.  The output must be every key (value) end to
  end, offsets included.  MB/s counts the bytes gathered.
* ``md5 64k keys``: 65,536 16-byte keys (``key-%012d``, the cleaner's), one ``md5(key)`` call per key.
  The library calls the kernel only from its tests, but it is the hash the offset map keys by: the
  compiled offset-map kernels run the same MD5 code inside, the pure ones ``hashlib``.  Each twin (the
  pure twin wraps ``hashlib``), and ``hashlib``: ``hashlib.md5(key).digest()`` in the same loop.  The
  digests must be hashlib's.
* ``search_for_offset 4 MiB``: ``FileMessageSet.search_for``'s kernel over an mmap of a 4.1 MiB file of
  4096 v2 batches of 10 records (1051 bytes each, base offsets 0, 10, 20, ...), as the log's channel
  maps it.  A round is 256 searches from position 0 for random target offsets, so each walks half
  the file on average (about 2,200 frames: a segment read walks a few frames from an index entry,
  timed in ``segment read 1 MiB`` of ``test_bench_storage.py``).  Each twin.  Every answer's position,
  size and last offset is checked.  MB/s counts the bytes walked over.
* ``time index search 10 MiB``: ``index_search(map, entries, TIME_KEY, t, base)`` (the largest entry
  <= ``t``; what ``TimeIndex.largest_lower_bound_slot_for`` calls) on an mmap of a full 10 MiB time
  index (873,813 entries of increasing timestamps, 1-1000 ms apart).  A round is 10,000 calls: half
  the targets are entries' own timestamps, half anywhere from 1% of the index's time span before the
  first entry to 1% past the last (so some find no entry and some the last).  Each twin.  Every slot
  is checked against ``np.searchsorted``.
* ``index_points 1 GiB segment``: ``index_points(starts, 4096)``, the offset-index points recovery
  picks (``LogSegment._rebuild_indexes``), over the start positions of a 1 GiB segment's batches of
  200-2000 bytes (976,610 batches; ``index.interval.bytes`` at its default).  Each twin.  The chosen
  batches must be those a plain Python loop over the positions chooses.  records/s is batches/s.

The object decoders ``decode_v2_batch_objects`` and ``decode_v2_record_objects`` have no rows here:
``objects`` and ``objects-per-batch`` in ``test_bench_decode.py`` time them (``records()`` and
``batch.records()`` call them and little else).  No target: every ratio is a reference line.  Rows
of the pure twin and kafka-python run 3 rounds (``benchmark.pedantic``); the others are calibrated
by pytest-benchmark.
"""

from __future__ import annotations

import hashlib
import mmap
import random
import struct
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import crcmod.predefined
import numpy as np
import numpy.typing as npt
import pytest

from kafkalog import MemoryRecords, _impl
from kafkalog._common import IndexKind

RECORDS = 100_000
PER_BATCH = 100
BATCHES = RECORDS // PER_BATCH
BASE_TIMESTAMP = 1_700_000_000_000
SLOW_ROUNDS = 3  # the pure-Python rows take 0.1-0.4 s a round
V2_HEADER = 61  # RECORD_BATCH_OVERHEAD
RECORD_COUNT_AT = 57
CRC_AT = 17
CRC_FROM = 21  # the CRC-32C covers the batch from its attributes on
# -- md5 ----------------------------------------------------------------------------------------------
MD5_KEYS = 65_536
# -- search_for_offset --------------------------------------------------------------------------------
SEARCH_BATCHES = 4096
SEARCH_PER_BATCH = 10
SEARCHES = 256
# -- time index search --------------------------------------------------------------------------------
TIME_INDEX_BYTES = 10 * 1024 * 1024
TIME_ENTRIES = TIME_INDEX_BYTES // 12  # 873,813
TIME_BASE_OFFSET = 7_000_000
TIME_SEARCHES = 10_000
# -- index_points -------------------------------------------------------------------------------------
SEGMENT_BYTES = 1 << 30
INDEX_INTERVAL = 4096  # index.interval.bytes default
MIN_BATCH, MAX_BATCH = 200, 2000

_crc32c = crcmod.predefined.mkCrcFun("crc-32c")


def _rounds(benchmark: Any, fn: Callable[..., Any], *args: Any, slow: bool) -> Any:
    if slow:
        return benchmark.pedantic(fn, args=args, rounds=SLOW_ROUNDS, warmup_rounds=0, iterations=1)
    return benchmark(fn, *args)


def _is_pure(impl: ModuleType) -> bool:
    assert _impl.core is impl
    return bool(impl.IMPLEMENTATION == "python")


def _compiled_twin() -> str:
    return "cython" if "cython" in _impl.both() else "python"


def _aiokafka_compiled() -> None:
    """Skip the row when aiokafka's extensions are off: it would time aiokafka's Python fallback."""
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
    from aiokafka.util import NO_EXTENSIONS

    if NO_EXTENSIONS or any("_crecords" not in cls.__module__
                            for cls in (AioMemoryRecords, DefaultRecordBatchBuilder)):
        pytest.skip("aiokafka's compiled extensions are not in use: this row would time its Python code")


# ---------------------------------------------------------------------------------------------------
# The records shared by the encode, legacy and gather groups


@dataclass
class Records:
    keys: list[bytes]
    values: list[bytes]
    timestamps: list[int]

    def batch(self, b: int) -> tuple[list[int], list[bytes], list[bytes]]:
        at = slice(b * PER_BATCH, (b + 1) * PER_BATCH)
        return self.timestamps[at], self.keys[at], self.values[at]


@pytest.fixture(scope="module")
def records() -> Records:
    rng = random.Random(20240601)
    keys, values, timestamps = [], [], []
    for i in range(RECORDS):
        keys.append(rng.randbytes(rng.randint(8, 12)))
        values.append(rng.randbytes(rng.randint(90, 110)))
        timestamps.append(BASE_TIMESTAMP + i)
    return Records(keys, values, timestamps)


# ---------------------------------------------------------------------------------------------------
# encode_v2_records


@pytest.fixture(scope="module")
def expected_bodies(records: Records) -> list[bytes]:
    """The records section of every batch as aiokafka's builder writes it; two batches are read back."""
    from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    bodies = []
    for b in range(BATCHES):
        timestamps, keys, values = records.batch(b)
        builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
        for i in range(PER_BATCH):
            builder.append(i, timestamps[i], keys[i], values[i], [])
        built = bytes(builder.build())
        if b in (0, BATCHES - 1):
            read = [(r.offset, r.timestamp, r.key, r.value) for r in DefaultRecordBatch(built)]
            assert read == list(zip(range(PER_BATCH), timestamps, keys, values, strict=True))
        bodies.append(built[V2_HEADER:])
    return bodies


@pytest.fixture(scope="module")
def encode_columns(records: Records) -> list[tuple[list[int], list[bytes], list[bytes]]]:
    return [records.batch(b) for b in range(BATCHES)]


def _check_batches(batches: list[Any], expected_bodies: list[bytes]) -> None:
    """Whole v2 batches: the records sections, the record count and the CRC-32C."""
    assert len(batches) == BATCHES
    for batch, body in zip(batches, expected_bodies, strict=True):
        data = bytes(batch)
        assert data[V2_HEADER:] == body
        assert struct.unpack_from(">i", data, RECORD_COUNT_AT)[0] == PER_BATCH
        assert struct.unpack_from(">I", data, CRC_AT)[0] == _crc32c(data[CRC_FROM:])


def test_encode_kernel(benchmark: Any, impl: ModuleType, encode_columns: list[Any], expected_bodies: list[bytes],
                       throughput: Callable[..., None]) -> None:
    """One ``encode_v2_records`` call per batch: the records sections only."""
    benchmark.group = "encode v2 100k records"
    encode = impl.encode_v2_records

    def kernel(columns: list[tuple[list[int], list[bytes], list[bytes]]]) -> list[bytes]:
        return [encode(timestamps, keys, values, None, timestamps[0]) for timestamps, keys, values in columns]

    bodies = _rounds(benchmark, kernel, encode_columns, slow=_is_pure(impl))
    assert bodies == expected_bodies
    throughput(benchmark, f"encode/{impl.IMPLEMENTATION}", records=RECORDS)


def test_encode_with_records(benchmark: Any, compiled: ModuleType, records: Records,
                             expected_bodies: list[bytes], throughput: Callable[..., None]) -> None:
    """``MemoryRecords.with_records`` per batch: the producer's whole path to a v2 batch."""
    benchmark.group = "encode v2 100k records"
    inputs = [list(zip(keys, values, timestamps, strict=True))
              for timestamps, keys, values in (records.batch(b) for b in range(BATCHES))]

    def with_records(batches: list[list[tuple[bytes, bytes, int]]]) -> list[Any]:
        return [MemoryRecords.with_records(batch).buffer for batch in batches]

    built = benchmark(with_records, inputs)
    _check_batches(built, expected_bodies)
    throughput(benchmark, "encode/with-records/cython", records=RECORDS)


def test_encode_aiokafka(benchmark: Any, encode_columns: list[Any], expected_bodies: list[bytes],
                         throughput: Callable[..., None]) -> None:
    """aiokafka's compiled ``DefaultRecordBatchBuilder``: ``append`` per record, ``build`` per batch."""
    _aiokafka_compiled()
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    benchmark.group = "encode v2 100k records"
    no_headers: list[tuple[str, bytes | None]] = []

    def build(columns: list[tuple[list[int], list[bytes], list[bytes]]]) -> list[bytearray]:
        out = []
        for timestamps, keys, values in columns:
            builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
            append = builder.append
            for i in range(PER_BATCH):
                append(i, timestamps[i], keys[i], values[i], no_headers)
            out.append(builder.build())
        return out

    built = benchmark(build, encode_columns)
    _check_batches(built, expected_bodies)
    throughput(benchmark, "encode/aiokafka", records=RECORDS)


# ---------------------------------------------------------------------------------------------------
# decode_legacy_records


@pytest.fixture(scope="module")
def legacy_buf(records: Records) -> bytes:
    inputs = list(zip(records.keys, records.values, records.timestamps, strict=True))
    with _impl.using(_compiled_twin()):
        return bytes(MemoryRecords.with_records(inputs, magic=1).buffer)


def _touch(memory_records: Any) -> tuple[int, tuple[Any, ...]]:
    """aiokafka's and kafka-python's readers: key, value, offset and timestamp of every record."""
    n = 0
    key = value = offset = timestamp = None
    while memory_records.has_next():
        for record in memory_records.next_batch():
            key = record.key
            value = record.value
            offset = record.offset
            timestamp = record.timestamp
            n += 1
    return n, (offset, timestamp, key, value)


def _last_record(records: Records) -> tuple[int, int, bytes, bytes]:
    return RECORDS - 1, records.timestamps[-1], records.keys[-1], records.values[-1]


def test_decode_legacy_kernel(benchmark: Any, impl: ModuleType, legacy_buf: bytes, records: Records,
                              throughput: Callable[..., None]) -> None:
    """One ``decode_legacy_records`` call over the whole run of 100,000 v1 messages."""
    benchmark.group = "decode legacy v1 100k records"
    rows = _rounds(benchmark, impl.decode_legacy_records, legacy_buf, 0, len(legacy_buf), slow=_is_pure(impl))
    assert len(rows) == RECORDS
    assert np.array_equal(rows["offset"], np.arange(RECORDS))
    assert rows["timestamp"].tolist() == records.timestamps
    assert (rows["magic"] == 1).all()
    assert int(rows["key_len"].sum()) == sum(map(len, records.keys))
    assert int(rows["value_len"].sum()) == sum(map(len, records.values))
    last = rows[-1]
    key_pos, key_len = int(last["key_pos"]), int(last["key_len"])
    value_pos, value_len = int(last["value_pos"]), int(last["value_len"])
    assert (int(last["offset"]), int(last["timestamp"]), legacy_buf[key_pos:key_pos + key_len],
            legacy_buf[value_pos:value_pos + value_len]) == _last_record(records)
    throughput(benchmark, f"legacy/{impl.IMPLEMENTATION}", records=RECORDS)


def test_decode_legacy_aiokafka(benchmark: Any, legacy_buf: bytes, records: Records,
                                throughput: Callable[..., None]) -> None:
    """aiokafka's compiled reader, one legacy batch per message."""
    _aiokafka_compiled()
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

    benchmark.group = "decode legacy v1 100k records"
    n, last = benchmark(lambda data: _touch(AioMemoryRecords(data)), legacy_buf)
    assert n == RECORDS
    assert last == _last_record(records)
    throughput(benchmark, "legacy/aiokafka", records=RECORDS)


def test_decode_legacy_kafka_python(benchmark: Any, legacy_buf: bytes, records: Records,
                                    throughput: Callable[..., None]) -> None:
    """kafka-python's pure-Python reader.  Its first import trips a DeprecationWarning of its own
    (see ``test_bench_decode.py``), silenced for the import only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record.memory_records import MemoryRecords as KafkaPythonMemoryRecords

    benchmark.group = "decode legacy v1 100k records"
    n, last = _rounds(benchmark, lambda data: _touch(KafkaPythonMemoryRecords(data)), legacy_buf, slow=True)
    assert n == RECORDS
    assert last == _last_record(records)
    throughput(benchmark, "legacy/kafka-python", records=RECORDS)


# ---------------------------------------------------------------------------------------------------
# gather_slices


@dataclass
class GatherInput:
    data: bytes
    columns: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]]  # (positions, lengths): keys, values
    expected: list[bytes]  # every key, every value, end to end
    lengths: list[list[int]]


@pytest.fixture(scope="module")
def gather_input(records: Records) -> GatherInput:
    with _impl.using(_compiled_twin()):
        parts = []
        for b in range(BATCHES):
            timestamps, keys, values = records.batch(b)
            parts.append(MemoryRecords.with_records(list(zip(keys, values, timestamps, strict=True)),
                                                    base_offset=b * PER_BATCH).buffer)
        data = b"".join(parts)
        runs = list(MemoryRecords(data).record_columns())
    for run in runs:
        assert run.data is data
    rows = np.concatenate([run.records for run in runs])
    assert len(rows) == RECORDS
    columns = [(np.ascontiguousarray(rows[f"{field}_pos"], dtype=np.int64),
                np.ascontiguousarray(rows[f"{field}_len"], dtype=np.int32)) for field in ("key", "value")]
    return GatherInput(data, columns, [b"".join(records.keys), b"".join(records.values)],
                       [list(map(len, records.keys)), list(map(len, records.values))])


def _check_gathered(out: list[tuple[npt.NDArray[Any], Any]], gather_input: GatherInput) -> None:
    assert len(out) == 2
    for (offsets, values), expected, lengths in zip(out, gather_input.expected, gather_input.lengths, strict=True):
        assert offsets.dtype == np.int32
        assert np.array_equal(np.diff(offsets), lengths)
        assert int(offsets[0]) == 0
        assert bytes(values) == expected


def _gathered_bytes(gather_input: GatherInput) -> int:
    return sum(len(column) for column in gather_input.expected)


def test_gather_kernel(benchmark: Any, impl: ModuleType, gather_input: GatherInput,
                       throughput: Callable[..., None]) -> None:
    """``gather_slices`` of the key column, then of the value column."""
    benchmark.group = "gather 100k keys+values"
    gather = impl.gather_slices

    def kernel(data: bytes) -> list[tuple[Any, Any]]:
        return [gather(data, positions, lengths) for positions, lengths in gather_input.columns]

    out = benchmark(kernel, gather_input.data)
    _check_gathered(out, gather_input)
    throughput(benchmark, f"gather/{impl.IMPLEMENTATION}", nbytes=_gathered_bytes(gather_input))


def test_gather_join(benchmark: Any, gather_input: GatherInput, throughput: Callable[..., None]) -> None:
    """The same two columns in Python: ``b"".join`` of one ``bytes`` slice per record, offsets by cumsum."""
    benchmark.group = "gather 100k keys+values"

    def join(data: bytes) -> list[tuple[Any, bytes]]:
        out = []
        for positions, lengths in gather_input.columns:
            offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
            np.cumsum(np.maximum(lengths, 0), out=offsets[1:])
            out.append((offsets, b"".join([data[p:p + n] for p, n in zip(positions.tolist(), lengths.tolist(),
                                                                          strict=True)])))
        return out

    out = benchmark(join, gather_input.data)
    _check_gathered(out, gather_input)
    throughput(benchmark, "gather/join", nbytes=_gathered_bytes(gather_input))


# ---------------------------------------------------------------------------------------------------
# md5


@pytest.fixture(scope="module")
def md5_keys() -> tuple[list[bytes], list[bytes]]:
    """The keys, and their digests by hashlib."""
    keys = [b"key-%012d" % i for i in range(MD5_KEYS)]
    assert {len(key) for key in keys} == {16}
    return keys, [hashlib.md5(key).digest() for key in keys]


def test_md5_kernel(benchmark: Any, impl: ModuleType, md5_keys: tuple[list[bytes], list[bytes]],
                    throughput: Callable[..., None]) -> None:
    """One ``md5(key)`` call per key."""
    benchmark.group = "md5 64k keys"
    keys, expected = md5_keys
    md5 = impl.md5
    digests = benchmark(lambda ks: [md5(key) for key in ks], keys)
    assert digests == expected
    throughput(benchmark, f"md5/{impl.IMPLEMENTATION}", records=MD5_KEYS)


def test_md5_hashlib(benchmark: Any, md5_keys: tuple[list[bytes], list[bytes]],
                     throughput: Callable[..., None]) -> None:
    """``hashlib.md5(key).digest()`` per key, the same loop without the kernel's wrapper."""
    benchmark.group = "md5 64k keys"
    keys, expected = md5_keys
    new = hashlib.md5
    digests = benchmark(lambda ks: [new(key).digest() for key in ks], keys)
    assert digests == expected
    throughput(benchmark, "md5/hashlib", records=MD5_KEYS)


# ---------------------------------------------------------------------------------------------------
# search_for_offset


@dataclass
class SearchFile:
    map: mmap.mmap
    batch_size: int
    targets: list[int]


@pytest.fixture(scope="module")
def search_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchFile]:
    """4096 copies of one 10-record batch, base offsets patched (outside the CRC), in a file mapped
    read-only; the mapping is closed and the file deleted when the module is done."""
    value = random.Random(0x5EA7C4).randbytes(80)
    with _impl.using(_compiled_twin()):
        batch = bytes(MemoryRecords.with_records(
            [(b"key-%06d" % i, value, BASE_TIMESTAMP + i) for i in range(SEARCH_PER_BATCH)]).buffer)
    data = bytearray(batch * SEARCH_BATCHES)
    for b in range(SEARCH_BATCHES):
        struct.pack_into(">q", data, b * len(batch), b * SEARCH_PER_BATCH)
    path = tmp_path_factory.mktemp("search") / "00000000000000000000.log"
    path.write_bytes(data)
    rng = random.Random(0x5EA7C5)
    targets = [rng.randrange(SEARCH_BATCHES * SEARCH_PER_BATCH) for _ in range(SEARCHES)]
    with path.open("rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield SearchFile(mapped, len(batch), targets)
    finally:
        mapped.close()
        path.unlink()


def test_search_for_offset(benchmark: Any, impl: ModuleType, search_file: SearchFile,
                           throughput: Callable[..., None]) -> None:
    """256 ``search_for_offset(map, 0, size, target)`` calls a round."""
    benchmark.group = "search_for_offset 4 MiB"
    search = impl.search_for_offset
    mapped = search_file.map
    end = len(mapped)

    def searches(targets: list[int]) -> list[tuple[int, int, int, int, int]]:
        return [search(mapped, 0, end, target) for target in targets]

    found = _rounds(benchmark, searches, search_file.targets, slow=_is_pure(impl))
    size = search_file.batch_size
    expected = []
    for target in search_file.targets:
        batch = target // SEARCH_PER_BATCH
        expected.append((batch * size, size, batch * SEARCH_PER_BATCH + SEARCH_PER_BATCH - 1, batch * size, 0))
    assert found == expected
    walked = sum(position + size for position, *_ in found)
    throughput(benchmark, f"search-offset/{impl.IMPLEMENTATION}", nbytes=walked)


# ---------------------------------------------------------------------------------------------------
# index_search on a time index


@dataclass
class TimeIndexFile:
    map: mmap.mmap
    targets: list[int]
    expected: list[int]


@pytest.fixture(scope="module")
def time_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TimeIndexFile]:
    """A full 10 MiB time index written with numpy (big-endian int64 timestamp, int32 relative offset),
    mapped read-only, with the targets of a round and the slot each must find."""
    rng = np.random.default_rng(0x71E)
    timestamps = BASE_TIMESTAMP + np.cumsum(rng.integers(1, 1001, TIME_ENTRIES, dtype=np.int64))
    entries = np.empty(TIME_ENTRIES, dtype=[("timestamp", ">i8"), ("relative", ">i4")])
    entries["timestamp"] = timestamps
    entries["relative"] = np.arange(TIME_ENTRIES, dtype=np.int64) * 10
    path = tmp_path_factory.mktemp("time-index") / "00000000000007000000.timeindex"
    path.write_bytes(entries.tobytes())
    assert path.stat().st_size == TIME_ENTRIES * 12
    half = TIME_SEARCHES // 2
    exact = timestamps[rng.integers(0, TIME_ENTRIES, half)]
    margin = int(timestamps[-1] - timestamps[0]) // 100
    anywhere = rng.integers(int(timestamps[0]) - margin, int(timestamps[-1]) + margin, TIME_SEARCHES - half)
    targets = np.concatenate([exact, anywhere])
    rng.shuffle(targets)
    expected = np.searchsorted(timestamps, targets, side="right") - 1
    assert (expected == -1).any() and (expected == TIME_ENTRIES - 1).any()
    with path.open("rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield TimeIndexFile(mapped, targets.tolist(), expected.tolist())
    finally:
        mapped.close()
        path.unlink()


def test_time_index_search(benchmark: Any, impl: ModuleType, time_index: TimeIndexFile,
                           throughput: Callable[..., None]) -> None:
    """10,000 ``index_search`` calls a round, largest lower bound by timestamp."""
    benchmark.group = "time index search 10 MiB"
    search = impl.index_search
    mapped = time_index.map
    kind = int(IndexKind.TIME_KEY)

    def searches(targets: list[int]) -> list[int]:
        return [search(mapped, TIME_ENTRIES, kind, target, TIME_BASE_OFFSET) for target in targets]

    slots = _rounds(benchmark, searches, time_index.targets, slow=_is_pure(impl))
    assert slots == time_index.expected
    throughput(benchmark, f"index-search/{impl.IMPLEMENTATION}", records=TIME_SEARCHES)
    if "records_per_s" in benchmark.extra_info:
        benchmark.extra_info["us_per_call"] = 1e6 / benchmark.extra_info["records_per_s"]


# ---------------------------------------------------------------------------------------------------
# index_points


@pytest.fixture(scope="module")
def batch_starts() -> tuple[npt.NDArray[np.int64], list[int]]:
    """The start of every batch of a 1 GiB segment (sizes 200-2000 bytes), and the batches a plain loop
    gives index entries (more than the interval past the last one indexed, counting from 0)."""
    rng = np.random.default_rng(0x1D9)
    sizes = rng.integers(MIN_BATCH, MAX_BATCH + 1, SEGMENT_BYTES // MIN_BATCH, dtype=np.int64)
    ends = np.cumsum(sizes)
    count = int(np.searchsorted(ends, SEGMENT_BYTES, side="right"))
    starts = np.ascontiguousarray(np.concatenate(([0], ends[:count - 1])), dtype=np.int64)
    chosen = []
    last = 0
    for i, start in enumerate(starts.tolist()):
        if start - last > INDEX_INTERVAL:
            chosen.append(i)
            last = start
    return starts, chosen


def test_index_points(benchmark: Any, impl: ModuleType, batch_starts: tuple[npt.NDArray[np.int64], list[int]],
                      throughput: Callable[..., None]) -> None:
    """One ``index_points(starts, 4096)`` call over the whole segment."""
    benchmark.group = "index_points 1 GiB segment"
    starts, expected = batch_starts
    chosen = _rounds(benchmark, impl.index_points, starts, INDEX_INTERVAL, slow=_is_pure(impl))
    assert chosen.dtype == np.int64
    assert chosen.tolist() == expected
    benchmark.extra_info["batches"] = len(starts)
    benchmark.extra_info["entries"] = len(expected)
    throughput(benchmark, f"index-points/{impl.IMPLEMENTATION}", records=len(starts))
