"""CRC-32C over a 1 MiB buffer: the compiled kernel (hardware path and forced table path), the pure
twin (crcmod's C table code), and zlib's CRC-32 as a reference line.

Target (foundation issue): compiled >= 10x crcmod.  zlib.crc32 computes a different polynomial (IEEE,
the legacy message CRC); it is there to show what a well-tuned CRC in the standard library costs on
the same bytes, not as a competitor.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import crcmod.predefined
import pytest

GROUP = "crc32c 1 MiB"
SIZE = 1 << 20


@pytest.fixture(scope="module")
def data() -> bytes:
    return random.Random(0x5EED).randbytes(SIZE)


@pytest.fixture(scope="module")
def expected_crc32c(data: bytes) -> int:
    """crcmod's CRC-32C of the buffer, computed outside kafkalog, checked against the standard vector."""
    fun = crcmod.predefined.mkCrcFun("crc-32c")
    assert fun(b"123456789") == 0xE3069283
    return int(fun(data))


@pytest.fixture
def table_path(compiled: ModuleType) -> Iterator[ModuleType]:
    """The compiled twin with the table CRC-32C forced on; the previous path is restored afterwards."""
    was_hardware = bool(compiled.crc32c_hardware())
    compiled.set_crc32c_software(True)
    try:
        yield compiled
    finally:
        compiled.set_crc32c_software(not was_hardware)
    assert bool(compiled.crc32c_hardware()) == was_hardware


def test_crc32c_kafkalog(benchmark: Any, impl: ModuleType, data: bytes, expected_crc32c: int,
                         throughput: Callable[..., None]) -> None:
    """[cython]: the compiled kernel on its default path; [python]: the pure twin, i.e. crcmod."""
    benchmark.group = GROUP
    benchmark.extra_info["hardware_crc32c"] = bool(impl.crc32c_hardware())
    result = benchmark(impl.crc32c, data)
    assert result == expected_crc32c
    throughput(benchmark, f"crc32c/{impl.IMPLEMENTATION}", nbytes=SIZE)


def test_crc32c_kafkalog_table_path(benchmark: Any, table_path: ModuleType, data: bytes, expected_crc32c: int,
                                    throughput: Callable[..., None]) -> None:
    """The compiled kernel with ``set_crc32c_software(True)``: its slicing-by-8 table code."""
    benchmark.group = GROUP
    assert table_path.crc32c_hardware() is False
    benchmark.extra_info["hardware_crc32c"] = False
    result = benchmark(table_path.crc32c, data)
    assert result == expected_crc32c
    throughput(benchmark, "crc32c/cython-table", nbytes=SIZE)


def test_crc32_zlib_reference(benchmark: Any, data: bytes, throughput: Callable[..., None]) -> None:
    """zlib.crc32 (CRC-32/IEEE, another polynomial) on the same bytes: a reference line only."""
    benchmark.group = GROUP
    result = benchmark(zlib.crc32, data)
    assert result == crcmod.predefined.mkCrcFun("crc-32")(data)
    throughput(benchmark, "crc32/zlib", nbytes=SIZE)
