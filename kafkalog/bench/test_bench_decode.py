"""Decoding v2 batches: 1000 uncompressed batches of 100 records (keys ~10 bytes, values ~100 bytes),
100,000 records in one 12 MB ``bytes`` buffer that every row reads.

Rows of the group ``decode v2 100k records``:

* kafkalog columns: ``MemoryRecords(buf).record_columns()``, which hands runs of uncompressed batches
  to one kernel call each, with each twin (``[cython]``, ``[python]``); and (compiled) the same
  through ``batch.record_columns()`` per batch, which shows the cost of a batch object per batch.
* kafkalog objects: ``MemoryRecords(buf).records()``, touching key, value, offset and timestamp of
  every record, with each twin; and (compiled) the same loop batch by batch over ``batch.records()``,
  which saves the deep-iteration generator.
* kafkalog kernels only (compiled): ``scan_batches`` once, then ``decode_v2_records`` per batch,
  without the batch objects; shows how much of the columns row is the record layer around the kernel.
* aiokafka: its compiled ``MemoryRecords`` (``aiokafka.util.NO_EXTENSIONS`` must be False), batches
  and their records, touching the same four fields.
* kafka-python: its (pure Python) ``MemoryRecords``, the same loop.

kafkalog's deep reads check every batch's CRC by default, as a consumer with ``check.crcs=true`` does, so
its rows above include the check; the peers do not check while iterating.  The cost of the check has rows of
its own: the columns and the objects with ``check_crcs=False`` (compiled), beside the default ones.

Targets: columns >= 3x aiokafka and >= 30x the pure twin; objects (either loop) no slower than aiokafka.
records/s is in ``extra_info``.
"""

from __future__ import annotations

import random
import struct
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords

GROUP = "decode v2 100k records"
BATCHES = 1000
PER_BATCH = 100
RECORDS = BATCHES * PER_BATCH
BASE_TIMESTAMP = 1_700_000_000_000
SLOW_ROUNDS = 3  # the pure-Python rows take a few hundred ms a round

_BASE_TIMESTAMP_AT = struct.Struct(">q")  # v2 header: baseTimestamp at byte 27
_RECORDS_START = 61  # v2 header size


@pytest.fixture(scope="module")
def dataset() -> tuple[bytes, list[tuple[bytes, bytes, int]]]:
    """The buffer, and the (key, value, timestamp) of every record in order, for the checks."""
    rng = random.Random(20240601)
    records = [
        (rng.randbytes(rng.randint(8, 12)), rng.randbytes(rng.randint(90, 110)), BASE_TIMESTAMP + i)
        for i in range(RECORDS)
    ]
    parts = [
        MemoryRecords.with_records(records[b * PER_BATCH:(b + 1) * PER_BATCH],
                                   base_offset=b * PER_BATCH).buffer
        for b in range(BATCHES)
    ]
    return b"".join(parts), records


@pytest.fixture(scope="module")
def buf(dataset: tuple[bytes, list[tuple[bytes, bytes, int]]]) -> bytes:
    return dataset[0]


@pytest.fixture(scope="module")
def last_record(dataset: tuple[bytes, list[tuple[bytes, bytes, int]]]) -> tuple[int, int, bytes, bytes]:
    key, value, timestamp = dataset[1][-1]
    return (RECORDS - 1, timestamp, key, value)


def _rounds(benchmark: Any, fn: Callable[[bytes], Any], buf: bytes, slow: bool) -> Any:
    if slow:
        return benchmark.pedantic(fn, args=(buf,), rounds=SLOW_ROUNDS, warmup_rounds=0, iterations=1)
    return benchmark(fn, buf)


# ---------------------------------------------------------------------------------------------------
# The loops timed.  Each returns the record count and what it saw of the last record.


def kafkalog_columns(buf: bytes) -> tuple[int, Any]:
    chunks = list(MemoryRecords(buf).record_columns())
    last = chunks[-1]
    # The last batch's records, as the per-batch loop below ends with them.
    starts = last.starts
    tail = type(last)(last.records[int(starts[-2]):int(starts[-1])], last.headers, last.data)
    return sum(len(c) for c in chunks), tail


def kafkalog_columns_unchecked(buf: bytes) -> tuple[int, Any]:
    chunks = list(MemoryRecords(buf).record_columns(check_crcs=False))
    return sum(len(c) for c in chunks), chunks[-1]


def kafkalog_columns_per_batch(buf: bytes) -> tuple[int, Any]:
    n = 0
    cols = None
    for batch in MemoryRecords(buf).batches():
        cols = batch.record_columns()
        n += len(cols)
    return n, cols


def _touch(records: Any, n: int, last: tuple[Any, ...]) -> tuple[int, tuple[Any, ...]]:
    """Read key, value, offset and timestamp of every record, as a consumer would; the loop every
    object row shares, so the rows differ only in how they get their records."""
    key = value = offset = timestamp = None
    seen = 0
    for record in records:
        key = record.key
        value = record.value
        offset = record.offset
        timestamp = record.timestamp
        seen += 1
    return n + seen, ((offset, timestamp, key, value) if seen else last)


def kafkalog_objects(buf: bytes) -> tuple[int, tuple[Any, ...]]:
    return _touch(MemoryRecords(buf).records(), 0, ())


def kafkalog_objects_unchecked(buf: bytes) -> tuple[int, tuple[Any, ...]]:
    return _touch(MemoryRecords(buf).records(check_crcs=False), 0, ())


def kafkalog_objects_per_batch(buf: bytes) -> tuple[int, tuple[Any, ...]]:
    n, last = 0, ()
    for batch in MemoryRecords(buf).batches():
        n, last = _touch(batch.records(), n, last)
    return n, last


def _peer_loop(memory_records: Any) -> tuple[int, tuple[Any, ...]]:
    """aiokafka's and kafka-python's MemoryRecords share this interface: has_next / next_batch."""
    n, last = 0, ()
    while memory_records.has_next():
        n, last = _touch(memory_records.next_batch(), n, last)
    return n, last


# ---------------------------------------------------------------------------------------------------


def test_decode_columns_kafkalog(benchmark: Any, impl: ModuleType, buf: bytes, last_record: tuple[Any, ...],
                                 throughput: Callable[..., None]) -> None:
    benchmark.group = GROUP
    n, cols = _rounds(benchmark, kafkalog_columns, buf, slow=impl.IMPLEMENTATION == "python")
    assert n == RECORDS
    assert cols.records["offset"].tolist() == list(range(RECORDS - PER_BATCH, RECORDS))
    assert (int(cols.records["offset"][-1]), int(cols.records["timestamp"][-1]), cols.key(PER_BATCH - 1),
            cols.value(PER_BATCH - 1)) == last_record
    throughput(benchmark, f"decode/columns/{impl.IMPLEMENTATION}", records=RECORDS)


def test_decode_columns_unchecked_kafkalog(benchmark: Any, compiled: ModuleType, buf: bytes,
                                           throughput: Callable[..., None]) -> None:
    """The columns without the CRC check (``check_crcs=False``): the check's cost is this row against the
    default one."""
    benchmark.group = GROUP
    n, _last = benchmark(kafkalog_columns_unchecked, buf)
    assert n == RECORDS
    throughput(benchmark, "decode/columns-unchecked/cython", records=RECORDS)


def test_decode_objects_unchecked_kafkalog(benchmark: Any, compiled: ModuleType, buf: bytes,
                                           last_record: tuple[Any, ...],
                                           throughput: Callable[..., None]) -> None:
    """The objects without the CRC check (``check_crcs=False``)."""
    benchmark.group = GROUP
    n, last = benchmark(kafkalog_objects_unchecked, buf)
    assert n == RECORDS
    assert last == last_record
    throughput(benchmark, "decode/objects-unchecked/cython", records=RECORDS)


def test_decode_columns_per_batch_kafkalog(benchmark: Any, compiled: ModuleType, buf: bytes,
                                           last_record: tuple[Any, ...],
                                           throughput: Callable[..., None]) -> None:
    """The same columns, one ``batch.record_columns()`` call per batch."""
    benchmark.group = GROUP
    n, cols = benchmark(kafkalog_columns_per_batch, buf)
    assert n == RECORDS
    assert (int(cols.records["offset"][-1]), int(cols.records["timestamp"][-1]), cols.key(PER_BATCH - 1),
            cols.value(PER_BATCH - 1)) == last_record
    throughput(benchmark, "decode/columns-per-batch/cython", records=RECORDS)


def test_decode_objects_kafkalog(benchmark: Any, impl: ModuleType, buf: bytes, last_record: tuple[Any, ...],
                                 throughput: Callable[..., None]) -> None:
    benchmark.group = GROUP
    n, last = _rounds(benchmark, kafkalog_objects, buf, slow=impl.IMPLEMENTATION == "python")
    assert n == RECORDS
    assert last == last_record
    throughput(benchmark, f"decode/objects/{impl.IMPLEMENTATION}", records=RECORDS)


def test_decode_objects_per_batch_kafkalog(benchmark: Any, compiled: ModuleType, buf: bytes,
                                           last_record: tuple[Any, ...],
                                           throughput: Callable[..., None]) -> None:
    """The same objects, iterated batch by batch (``batch.records()``) instead of ``records()``."""
    benchmark.group = GROUP
    n, last = benchmark(kafkalog_objects_per_batch, buf)
    assert n == RECORDS
    assert last == last_record
    throughput(benchmark, "decode/objects-per-batch/cython", records=RECORDS)


def test_decode_kernels_only_kafkalog(benchmark: Any, compiled: ModuleType, buf: bytes,
                                      last_record: tuple[Any, ...], throughput: Callable[..., None]) -> None:
    """The compiled kernels without the record layer: one scan, then the column decode per batch."""
    benchmark.group = GROUP
    decode = compiled.decode_v2_records
    base_timestamp_at = _BASE_TIMESTAMP_AT.unpack_from

    def kernels(data: bytes) -> tuple[int, Any]:
        rows, _stop, _reason = compiled.scan_batches(data, 0, -1, False)
        n = 0
        records = None
        for position, size, base_offset, count in zip(
            rows["position"].tolist(), rows["size"].tolist(), rows["base_offset"].tolist(),
            rows["record_count"].tolist(), strict=True,
        ):
            records, _headers = decode(data, position + _RECORDS_START, position + size, count, base_offset,
                                       base_timestamp_at(data, position + 27)[0], None)
            n += len(records)
        return n, records

    n, records = benchmark(kernels, buf)
    assert n == RECORDS
    assert records["offset"].tolist() == list(range(RECORDS - PER_BATCH, RECORDS))
    assert int(records["timestamp"][-1]) == last_record[1]
    throughput(benchmark, "decode/kernels/cython", records=RECORDS)


def test_decode_aiokafka(benchmark: Any, buf: bytes, last_record: tuple[Any, ...],
                         throughput: Callable[..., None]) -> None:
    """aiokafka's compiled reader; skipped rather than timed if its extensions are off."""
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
    from aiokafka.util import NO_EXTENSIONS

    if NO_EXTENSIONS or "_crecords" not in AioMemoryRecords.__module__:
        pytest.skip("aiokafka's compiled extensions are not in use: this row would time its Python code")
    benchmark.group = GROUP
    benchmark.extra_info["aiokafka_no_extensions"] = NO_EXTENSIONS
    benchmark.extra_info["aiokafka_class"] = f"{AioMemoryRecords.__module__}.{AioMemoryRecords.__name__}"
    n, last = benchmark(lambda data: _peer_loop(AioMemoryRecords(data)), buf)
    assert n == RECORDS
    assert last == last_record
    throughput(benchmark, "decode/aiokafka", records=RECORDS)


def test_decode_kafka_python(benchmark: Any, buf: bytes, last_record: tuple[Any, ...],
                             throughput: Callable[..., None]) -> None:
    """kafka-python's pure-Python reader.  Importing it for the first time trips a DeprecationWarning
    inside kafka-python (its ``importlib.resources.read_text``), which the project's
    ``filterwarnings = error`` would turn into a failure: it is silenced for the import only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record.memory_records import MemoryRecords as KafkaPythonMemoryRecords

    benchmark.group = GROUP
    n, last = _rounds(benchmark, lambda data: _peer_loop(KafkaPythonMemoryRecords(data)), buf, slow=True)
    assert n == RECORDS
    assert last == last_record
    throughput(benchmark, "decode/kafka-python", records=RECORDS)
