"""What a cleaning round did: the cleaner's statistics and the summary line Kafka logs when a round ends.

Port of ``CleanerStats`` of ``core/src/main/scala/kafka/log/LogCleaner.scala`` (3.8.0; 0.10.1.1 for the
singular method names kept as aliases): the counters of one round (bytes and messages read by the map pass
and by the recopy, bytes and messages written, the offset map's fill, the times each pass ended) and the
INFO summary, with Java's number formats (``%,.1f``, half-up rounding, ``Infinity``/``NaN`` for a zero time).
kafkalog's addition: the statistics say which partition they are about (``topic_partition``), since
:meth:`~kafkalog.manager.log_manager.LogManager.compact` returns the rounds of many partitions in one list.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..scheduler import SYSTEM_TIME, Time

if TYPE_CHECKING:
    from ..topic import TopicPartition

__all__ = ["CleanerStats"]


def _java_float(x: float, digits: int = 1, grouping: bool = True) -> str:
    """A number as Java's ``String.format("%,.1f")`` prints it: rounded half-up on the double's exact value
    (Python's ``format`` rounds half-to-even), ``Infinity`` and ``NaN`` spelled out."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    rounded = decimal.Decimal(x).quantize(decimal.Decimal(1).scaleb(-digits), rounding=decimal.ROUND_HALF_UP)
    return f"{rounded:,.{digits}f}" if grouping else f"{rounded:.{digits}f}"


def _mb(n: float) -> float:
    return n / (1024.0 * 1024.0)


@dataclass
class CleanerStats:
    """What a cleaning round did (Kafka: ``CleanerStats``), and the summary line Kafka logs for it.

    ``topic_partition`` is the partition the round cleaned (``None`` for statistics made outside a round,
    as Kafka's tests make them); ``str()`` gives a one-line account that starts with it.
    """

    time: Time = field(default=SYSTEM_TIME, repr=False)
    topic_partition: TopicPartition | None = None
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    invalid_messages_read: int = 0
    messages_written: int = 0
    buffer_utilization: float = 0.0
    start_time: int = -1
    map_complete_time: int = -1
    end_time: int = -1

    def __post_init__(self) -> None:
        self.clear()

    def __str__(self) -> str:
        about = "no partition" if self.topic_partition is None else str(self.topic_partition)
        return (f"{about}: read {self.messages_read:,} messages ({self.bytes_read:,} B), wrote "
                f"{self.messages_written:,} ({self.bytes_written:,} B), {self.invalid_messages_read:,} invalid, "
                f"in {_java_float(self.elapsed_secs(), 3, grouping=False)} s")

    def clear(self) -> None:
        """Kafka: ``clear`` (0.10.1; modern makes a new object)."""
        self.start_time = self.time.milliseconds()
        self.map_complete_time = -1
        self.end_time = -1
        self.bytes_read = self.bytes_written = self.map_bytes_read = self.map_messages_read = 0
        self.messages_read = self.invalid_messages_read = self.messages_written = 0
        self.buffer_utilization = 0.0

    def read_messages(self, messages: int, size: int) -> None:
        """Kafka: ``readMessages`` (0.10.1: ``readMessage``)."""
        self.messages_read += messages
        self.bytes_read += size

    read_message = read_messages

    def invalid_message(self, count: int = 1) -> None:
        """Kafka: ``invalidMessage`` (``count`` of them at once: kafkalog's)."""
        self.invalid_messages_read += count

    def recopy_messages(self, messages: int, size: int) -> None:
        """Kafka: ``recopyMessages`` (0.10.1: ``recopyMessage``)."""
        self.messages_written += messages
        self.bytes_written += size

    recopy_message = recopy_messages

    def index_messages_read(self, count: int) -> None:
        """Kafka: ``indexMessagesRead`` (0.10.1: ``indexMessage``)."""
        self.map_messages_read += count

    index_message = index_messages_read

    def index_bytes_read(self, size: int) -> None:
        """Kafka: ``indexBytesRead``."""
        self.map_bytes_read += size

    def index_done(self) -> None:
        """Kafka: ``indexDone``."""
        self.map_complete_time = self.time.milliseconds()

    def all_done(self) -> None:
        """Kafka: ``allDone``."""
        self.end_time = self.time.milliseconds()

    def elapsed_secs(self) -> float:
        """Kafka: ``elapsedSecs``."""
        return (self.end_time - self.start_time) / 1000.0

    def elapsed_index_secs(self) -> float:
        """Kafka: ``elapsedIndexSecs``."""
        return (self.map_complete_time - self.start_time) / 1000.0

    def summary(self, thread_id: int, log_name: str, first_dirty: int, end_offset: int) -> str:
        """The message of Kafka's INFO line after a clean (``LogCleaner.recordStats``), with Java's number
        formats: ``%,.1f`` groups thousands, a zero elapsed time prints ``Infinity`` or ``NaN``."""
        def div(a: float, b: float) -> float:
            if b == 0:
                return math.nan if a == 0 else math.copysign(math.inf, a)
            return a / b

        elapsed = self.elapsed_secs()
        index = self.elapsed_index_secs()
        clean = elapsed - index
        lines = [
            "",
            f"\tLog cleaner thread {thread_id} cleaned log {log_name} (dirty section = [{first_dirty}, {end_offset}])",
            f"\t{_java_float(_mb(self.bytes_read))} MB of log processed in {_java_float(elapsed)} seconds "
            f"({_java_float(div(_mb(self.bytes_read), elapsed))} MB/sec).",
            f"\tIndexed {_java_float(_mb(self.map_bytes_read))} MB in {_java_float(index, grouping=False)} seconds "
            f"({_java_float(div(_mb(self.map_bytes_read), index))} Mb/sec, "
            f"{_java_float(div(100 * index, elapsed), grouping=False)}% of total time)",
            f"\tBuffer utilization: {_java_float(100 * self.buffer_utilization, grouping=False)}%",
            f"\tCleaned {_java_float(_mb(self.bytes_read))} MB in {_java_float(clean, grouping=False)} seconds "
            f"({_java_float(div(_mb(self.bytes_read), clean))} Mb/sec, "
            f"{_java_float(div(100 * clean, elapsed), grouping=False)}% of total time)",
            f"\tStart size: {_java_float(_mb(self.bytes_read))} MB ({self.messages_read:,} messages)",
            f"\tEnd size: {_java_float(_mb(self.bytes_written))} MB ({self.messages_written:,} messages)",
            f"\t{_java_float(100 * (1 - div(self.bytes_written, self.bytes_read)), grouping=False)}% size reduction "
            f"({_java_float(100 * (1 - div(self.messages_written, self.messages_read)), grouping=False)}% fewer "
            "messages)",
            "",
        ]
        return "\n".join(lines)
