"""kafkalog: Apache Kafka's log storage layer in Python.

A port of Kafka's ``kafka.log`` package (Log, LogSegment, OffsetIndex, TimeIndex, FileMessageSet,
LogCleaner, LogManager) and of its message formats, reading and writing the bytes a broker does.
The loops that touch every byte are compiled (``kafkalog._core``) and also written in plain Python
(``kafkalog._core_py``); :func:`implementation` says which twin is live.

The classes users touch are here: ``kafkalog.Log``, ``kafkalog.LogManager``, ``kafkalog.LogCleaner``,
``kafkalog.LogConfig``, ``kafkalog.CleanerConfig``, ``kafkalog.LogSegment``, ``kafkalog.TopicPartition``,
the record builders and readers, and a producer's and a consumer's conveniences (``kafkalog.Producer``,
``kafkalog.Consumer``), and ``kafkalog.serve``, a Kafka-compatible broker over kafkalog's logs for the length of a
``with`` block (the ``broker`` extra).  They are imported on first use, so ``import kafkalog`` stays light.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from .broker import serve
    from .cleaner import LogCleaner
    from .cleaner.config import CleanerConfig
    from .clients import Consumer, ConsumerRecord, Producer, RecordMetadata
    from .config import LogConfig
    from .log import Log
    from .manager import LogManager
    from .segment import LogSegment
    from .topic import TopicPartition

__version__ = "0.1.0.dev0"

#: The names loaded on first use, and their modules.
_LAZY = {"Log": ".log", "LogManager": ".manager", "LogCleaner": ".cleaner", "LogConfig": ".config",
         "CleanerConfig": ".cleaner", "LogSegment": ".segment", "TopicPartition": ".topic",
         "Producer": ".clients", "Consumer": ".clients", "ConsumerRecord": ".clients", "RecordMetadata": ".clients",
         "serve": ".broker"}

#: The names whose module needs an extra, and the extra.
_EXTRAS = {"serve": "broker"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        imported = import_module(module, __name__)
    except ImportError as e:
        if name not in _EXTRAS:
            raise
        raise ImportError(f"kafkalog.{name} needs the {_EXTRAS[name]} extra: pip install "
                          f"'kafkalog[{_EXTRAS[name]}]' ({e})") from e
    value = getattr(imported, name)
    globals()[name] = value
    return value


__all__ = [
    "CleanerConfig",
    "CompressionType",
    "Consumer",
    "ConsumerRecord",
    "ControlRecordType",
    "CorruptRecordError",
    "EndTransactionMarker",
    "InvalidRecordError",
    "KafkaLogError",
    "Log",
    "LogCleaner",
    "LogConfig",
    "LogManager",
    "LogSegment",
    "MemoryRecords",
    "Producer",
    "Record",
    "RecordMetadata",
    "RecordTooLargeError",
    "TimestampType",
    "TopicPartition",
    "UnsupportedCompressionError",
    "UnsupportedMagicError",
    "__version__",
    "implementation",
    "serve",
]
