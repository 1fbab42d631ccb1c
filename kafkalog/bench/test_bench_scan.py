"""The batch scan with CRC validation, against a plain numpy copy of the same bytes.

One ~16 KiB uncompressed v2 batch (136 records) is built with kafkalog and repeated, each copy with
its own base offset (the base offset lies outside the CRC, so every copy stays valid), to fill
256 MiB.  Groups:

* ``scan 256 MiB``: the compiled ``_core.scan_batches(buf, check_crc=True)`` against
  ``np.frombuffer(buf, np.uint8).copy()``, the cost of touching every byte once.  Target: the scan is
  at least as fast as the copy.  A framing-only scan (``check_crc=False``) is shown beside them.
* ``scan 4 MiB``: both twins on a 4 MiB buffer of the same batches (the pure twin is too slow for
  256 MiB to be worth the wait).  No target; it shows the distance between the twins.

The 256 MiB buffer is built once for the module and emptied when the module's benchmarks are done.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog import MemoryRecords
from kafkalog._common import ScanStop

RECORDS_PER_BATCH = 136
BIG = 256 << 20
SMALL = 4 << 20
BIG_ROUNDS = 5


def _one_batch() -> bytes:
    rng = random.Random(16384)
    records = [(rng.randbytes(10), rng.randbytes(100), 1_700_000_000_000 + i)
               for i in range(RECORDS_PER_BATCH)]
    return bytes(MemoryRecords.with_records(records).buffer)


def _tile(batch: bytes, total: int) -> bytearray:
    """As many whole copies of ``batch`` as fit in ``total`` bytes, base offsets 0, 136, 272, ..."""
    n = total // len(batch)
    out = bytearray(n * len(batch))
    grid = np.frombuffer(out, np.uint8).reshape(n, len(batch))
    grid[:] = np.frombuffer(batch, np.uint8)
    grid[:, :8].view(">i8")[:, 0] = np.arange(n, dtype=np.int64) * RECORDS_PER_BATCH
    del grid  # release the export, so the bytearray can be emptied later
    return out


def _check_scan(result: tuple[np.ndarray, int, int], length: int, batch_size: int, check_crc: bool) -> None:
    """Every batch found, whole and (with ``check_crc``) valid, with the base offsets ``_tile`` wrote."""
    rows, stop, reason = result
    n = length // batch_size
    assert (len(rows), stop, reason) == (n, length, int(ScanStop.END))
    assert rows["size"].tolist() == [batch_size] * n
    assert rows["base_offset"].tolist() == list(range(0, n * RECORDS_PER_BATCH, RECORDS_PER_BATCH))
    assert rows["valid"].tolist() == [1 if check_crc else -1] * n


@pytest.fixture(scope="module")
def batch() -> bytes:
    return _one_batch()


@pytest.fixture(scope="module")
def big(batch: bytes) -> Iterator[bytearray]:
    buf = _tile(batch, BIG)
    yield buf
    buf.clear()  # frees the 256 MiB now, and raises BufferError if anything still holds a view of it


@pytest.fixture(scope="module")
def small(batch: bytes) -> bytes:
    return bytes(_tile(batch, SMALL))


def test_scan_256mib_compiled(benchmark: Any, compiled: ModuleType, big: bytearray, batch: bytes,
                              throughput: Callable[..., None]) -> None:
    benchmark.group = "scan 256 MiB"
    benchmark.extra_info["batches"] = len(big) // len(batch)
    benchmark.extra_info["hardware_crc32c"] = bool(compiled.crc32c_hardware())
    result = benchmark.pedantic(compiled.scan_batches, args=(big, 0, -1, True), rounds=BIG_ROUNDS,
                                warmup_rounds=1)
    _check_scan(result, len(big), len(batch), check_crc=True)
    throughput(benchmark, "scan256/cython", nbytes=len(big))


def test_scan_256mib_compiled_no_crc(benchmark: Any, compiled: ModuleType, big: bytearray, batch: bytes,
                                     throughput: Callable[..., None]) -> None:
    """Framing only: what the scan costs when it does not read the batch bodies."""
    benchmark.group = "scan 256 MiB"
    result = benchmark.pedantic(compiled.scan_batches, args=(big, 0, -1, False), rounds=BIG_ROUNDS,
                                warmup_rounds=1)
    _check_scan(result, len(big), len(batch), check_crc=False)
    throughput(benchmark, "scan256/cython-no-crc", nbytes=len(big))


def test_copy_256mib_numpy(benchmark: Any, big: bytearray, throughput: Callable[..., None]) -> None:
    """A plain copy of the same bytes into a fresh array (allocation and page faults included)."""
    benchmark.group = "scan 256 MiB"
    result = benchmark.pedantic(lambda data: np.frombuffer(data, np.uint8).copy(), args=(big,),
                                rounds=BIG_ROUNDS, warmup_rounds=1)
    assert result.nbytes == len(big)
    assert result.tobytes() == big
    throughput(benchmark, "scan256/numpy-copy", nbytes=len(big))


def test_scan_4mib(benchmark: Any, impl: ModuleType, small: bytes, batch: bytes,
                   throughput: Callable[..., None]) -> None:
    benchmark.group = "scan 4 MiB"
    benchmark.extra_info["batches"] = len(small) // len(batch)
    if impl.IMPLEMENTATION == "python":
        result = benchmark.pedantic(impl.scan_batches, args=(small, 0, -1, True), rounds=5, warmup_rounds=0)
    else:
        result = benchmark(impl.scan_batches, small, 0, -1, True)
    _check_scan(result, len(small), len(batch), check_crc=True)
    throughput(benchmark, f"scan4/{impl.IMPLEMENTATION}", nbytes=len(small))
