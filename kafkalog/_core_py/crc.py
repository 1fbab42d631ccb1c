"""CRC-32C and CRC-32 in plain Python: the twin of ``_core_pyx/crc.pxi``.

Kafka: ``clients/src/main/java/org/apache/kafka/common/utils/Crc32C.java`` (tag 3.8.0), the checksum of v2
batches, computed from the attributes (byte 21 of the batch) to its end; and ``java.util.zip.CRC32``, the
checksum of v0/v1 messages, from the magic byte to the end of the message.  crcmod's table CRC-32C is the
reference the compiled twin's SSE4.2 and slicing-by-8 loops are tested and timed against.
"""

from __future__ import annotations

import zlib
from typing import Any

import crcmod.predefined

from ._ints import _MASK32

_crc32c_fun = crcmod.predefined.mkCrcFun("crc-32c")


def crc32c(data: Any, crc: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from ``crc`` (Kafka: ``Crc32C.compute``).

    crcmod's table implementation is the reference the compiled twin is tested and timed against.
    """
    return int(_crc32c_fun(data, crc))


def crc32(data: Any, crc: int = 0) -> int:
    """CRC-32 (IEEE, as ``java.util.zip.CRC32``) of ``data``, continuing from ``crc``.

    The CRC of legacy (v0/v1) messages.
    """
    return zlib.crc32(data, crc) & _MASK32


def crc32c_hardware() -> bool:
    """Whether CRC-32C runs on the CPU's crc32 instruction.  The plain twin never does."""
    return False


def set_crc32c_software(on: bool) -> None:
    """Force the table CRC-32C even where the CPU has SSE4.2 (for benchmarks); nothing to do here."""
