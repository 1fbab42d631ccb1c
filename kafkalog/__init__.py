"""kafkalog: Apache Kafka's log storage layer in Python.

A port of Kafka's ``kafka.log`` package (Log, LogSegment, OffsetIndex, TimeIndex, FileMessageSet,
LogCleaner, LogManager) and of its message formats, reading and writing the bytes a broker does.
The loops that touch every byte are compiled (``kafkalog._core``) and also written in plain Python
(``kafkalog._core_py``); :func:`implementation` says which twin is live.
"""

from ._impl import implementation
from .errors import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaLogError,
    RecordTooLargeError,
    UnsupportedCompressionError,
    UnsupportedMagicError,
)
from .record import (
    CompressionType,
    ControlRecordType,
    EndTransactionMarker,
    MemoryRecords,
    Record,
    TimestampType,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "CompressionType",
    "ControlRecordType",
    "CorruptRecordError",
    "EndTransactionMarker",
    "InvalidRecordError",
    "KafkaLogError",
    "MemoryRecords",
    "Record",
    "RecordTooLargeError",
    "TimestampType",
    "UnsupportedCompressionError",
    "UnsupportedMagicError",
    "__version__",
    "implementation",
]
