"""Reading a whole log to Python objects: the consumer's view, ``Log.records()``, against aiokafka's compiled
reader over the same segment files.

Group ``read log 200k records`` (one per codec, ``[none]``, ``[lz4]``, ``[zstd]``): a log of 200,000 records
(keys ``key-00000000``, 12 bytes; random 100-byte values; timestamps one ms apart), 1,000 to a v2 batch, 200
batches appended by ``Log.append`` (the leader's path) with ``segment.bytes`` 4 MiB, so six segments (the
last one active), uncompressed or each batch compressed with the codec.  Built once per module and kept open.

* kafkalog: ``Log.records()`` from the log start offset to the high watermark, compiled core: every batch's
  CRC checked before its records are handed out, control batches left out, ``read_uncommitted``; the loop
  touches key, value, offset and timestamp of every record.
* kafkalog, fetch path: what a consumer's fetches get, ``Log.read(next_offset, 1 MiB)`` (the 1 MiB is
  ``max.partition.fetch.bytes``'s default; ``min_one_message``, bounded by the high watermark as a consumer's
  fetch is) in a loop over the whole partition, each fetch's ``.records.records()`` iterated (CRCs checked,
  control records included, as deep iteration gives them) and the next fetch made from the offset after the
  last record, as a consumer's next fetch position is; compiled core; the same loop over each record.
* aiokafka: each segment's ``.log`` file read whole (``open``/``read``), then its compiled ``MemoryRecords``
  (``aiokafka.util.NO_EXTENSIONS`` must be False), ``validate_crc()`` of every batch (a mismatch raises),
  and the same loop over every batch's records.  aiokafka's reader does not skip control batches and knows
  no isolation level; the log has none to skip.

Every row checks the record count and the last record it saw.  Target: ``Log.records()`` >= 1.5x aiokafka
(issue 18), the fetch path the same (issue 32: every public read path at the speed of the fastest).  records/s
is in ``extra_info``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.bench.test_bench_decode import _touch
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.scheduler import MockTime

GROUP = "read log 200k records"
RECORDS = 200_000
PER_BATCH = 1_000
VALUE_BYTES = 100
SEGMENT_BYTES = 4 << 20
BASE_TIMESTAMP = 1_700_000_000_000
CODECS = ["none", "lz4", "zstd"]
#: A consumer's ``max.partition.fetch.bytes`` default: what one fetch of one partition returns at most.
MAX_PARTITION_FETCH_BYTES = 1 << 20


def _record(rng: random.Random, i: int) -> tuple[bytes, bytes, int]:
    return f"key-{i:08d}".encode(), rng.randbytes(VALUE_BYTES), BASE_TIMESTAMP + i


@pytest.fixture(scope="module", params=CODECS)
def written_log(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Log, str, tuple[Any, ...]]]:
    """The open log, its codec, and the (offset, timestamp, key, value) of its last record."""
    codec = request.param
    mock = MockTime()
    directory = tmp_path_factory.mktemp(f"read-{codec}") / "read-0"
    log = Log(directory, LogConfig({"segment.bytes": SEGMENT_BYTES}), scheduler=mock.scheduler, time=mock)
    rng = random.Random(18)
    record: tuple[bytes, bytes, int] = (b"", b"", 0)
    for b in range(RECORDS // PER_BATCH):
        records = [_record(rng, i) for i in range(b * PER_BATCH, (b + 1) * PER_BATCH)]
        log.append(MemoryRecords.with_records(records, compression=codec))
        record = records[-1]
    log.flush()
    assert log.log_end_offset == RECORDS and log.number_of_segments >= 5
    try:
        yield log, codec, (RECORDS - 1, record[2], record[0], record[1])
    finally:
        log.close()


def _segment_files(log: Log) -> list[Path]:
    return sorted(Path(log.dir).glob("*.log"))


def aiokafka_read(files: list[Path]) -> tuple[int, tuple[Any, ...]]:
    """Every record of every file through aiokafka's compiled reader, each batch's CRC validated first."""
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

    n, last = 0, ()
    for path in files:
        with open(path, "rb") as f:
            records = AioMemoryRecords(f.read())
        while records.has_next():
            batch = records.next_batch()
            if not batch.validate_crc():
                raise ValueError(f"bad CRC in {path}")
            n, last = _touch(batch, n, last)
    return n, last


def test_read_log_kafkalog(benchmark: Any, compiled: ModuleType, written_log: tuple[Log, str, tuple[Any, ...]],
                           throughput: Callable[..., None]) -> None:
    log, codec, last_record = written_log
    benchmark.group = f"{GROUP} [{codec}]"
    n, last = benchmark(lambda: _touch(log.records(), 0, ()))
    assert (n, last) == (RECORDS, last_record)
    throughput(benchmark, f"read/records/{codec}/cython", records=RECORDS)


def fetch_read(log: Log) -> tuple[int, tuple[Any, ...]]:
    """Every record of the partition through fetches, as a consumer polls them: ``Log.read`` from the fetch
    position, bounded by the high watermark, its slice's records iterated, the position moved past the last."""
    n, last = 0, ()
    offset, end = log.log_start_offset, log.high_watermark
    while offset < end:
        fetch = log.read(offset, MAX_PARTITION_FETCH_BYTES, isolation="high_watermark")
        seen = n
        n, last = _touch(fetch.records.records(), n, last)
        if n == seen:
            raise AssertionError(f"a fetch at {offset} returned no record")
        offset = last[0] + 1
    return n, last


def test_read_log_fetch(benchmark: Any, compiled: ModuleType, written_log: tuple[Log, str, tuple[Any, ...]],
                        throughput: Callable[..., None]) -> None:
    log, codec, last_record = written_log
    benchmark.group = f"{GROUP} [{codec}]"
    n, last = benchmark(fetch_read, log)
    assert (n, last) == (RECORDS, last_record)
    throughput(benchmark, f"read/fetch/{codec}/cython", records=RECORDS)


def test_read_log_aiokafka(benchmark: Any, written_log: tuple[Log, str, tuple[Any, ...]],
                           throughput: Callable[..., None]) -> None:
    """aiokafka's compiled reader; skipped rather than timed if its extensions are off."""
    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
    from aiokafka.util import NO_EXTENSIONS

    if NO_EXTENSIONS or "_crecords" not in AioMemoryRecords.__module__:
        pytest.skip("aiokafka's compiled extensions are not in use: this row would time its Python code")
    log, codec, last_record = written_log
    benchmark.group = f"{GROUP} [{codec}]"
    files = _segment_files(log)
    n, last = benchmark(aiokafka_read, files)
    assert (n, last) == (RECORDS, last_record)
    throughput(benchmark, f"read/aiokafka/{codec}", records=RECORDS)
