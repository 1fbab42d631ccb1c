"""Kafka's message formats: legacy messages (v0, v1), record batches (v2), codecs and MemoryRecords.

The port of ``org.apache.kafka.common.record`` (and of 0.10.1's ``kafka.message``).  Start with
:class:`MemoryRecords`: ``MemoryRecords(buffer).batches()`` reads, ``MemoryRecords.with_records(...)``
writes.
"""

from typing import TYPE_CHECKING

from .._common import ScanStop
from .._impl import core
from .batch import DEFAULT_MAX_DECOMPRESSED_SIZE, DefaultRecordBatch, RecordBatch, RecordColumns
from .compression import CompressionType
from .legacy import LegacyRecordBatch
from .memory import MemoryRecords, ScanResult
from .types import ControlRecordType, EndTransactionMarker, TimestampType

if TYPE_CHECKING:
    from .._core import Record
else:
    #: The record type of the live kernels (both twins' records compare equal field by field).
    Record = core.Record

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "CompressionType",
    "ControlRecordType",
    "DefaultRecordBatch",
    "EndTransactionMarker",
    "LegacyRecordBatch",
    "MemoryRecords",
    "Record",
    "RecordBatch",
    "RecordColumns",
    "ScanResult",
    "ScanStop",
    "TimestampType",
]
