"""A consumer's convenience over the port: :class:`Consumer` reads a topic's logs back through the consumer's
view (:meth:`Log.records() <kafkalog.log.reads.LogReads.records>`, :mod:`kafkalog.log.consumer_view`), so the
isolation level, the CRC check and the skipping of control batches are the log's own rules, and gives each
record as kafka-python's ``ConsumerRecord`` (``kafka.consumer.fetcher``, 2.0.2).  What it adds is where to start
reading: ``"earliest"``, ``"latest"``, an offset, or a timestamp looked up in the time index
(:meth:`Log.find_offset_by_timestamp <kafkalog.log.reads.LogReads.find_offset_by_timestamp>`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import IllegalArgumentError, UnknownTopicOrPartitionError
from ..log.consumer_view import IsolationLevel
from .producer import serialized_size

if TYPE_CHECKING:
    from ..log import Log
    from ..manager.log_manager import LogManager

__all__ = ["Consumer", "ConsumerRecord"]


class ConsumerRecord(NamedTuple):
    """One record as a consumer gets it: kafka-python's ``ConsumerRecord`` fields, less the checksum.

    ``timestamp_type`` is a :class:`~kafkalog.record.types.TimestampType`, an ``int`` enum that equals
    kafka-python's 0 (``CreateTime``) and 1 (``LogAppendTime``).  ``key`` and ``value`` are what the
    deserializers made of the bytes; the sizes are those of the bytes (-1 for ``None``).
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: list[tuple[str, bytes | None]]
    serialized_key_size: int
    serialized_value_size: int



class Consumer:
    """Iterates the records of a topic, or of some of its partitions, as a consumer is given them.

    ``source`` is a :class:`~kafkalog.manager.log_manager.LogManager` (then ``topic`` names the topic) or one
    :class:`~kafkalog.log.unified_log.Log` (its partition; ``topic`` may be left out).  ``partitions`` picks partitions
    (all of the topic's by default).  Each partition is read from:

    - ``start_timestamp`` when given: the first record whose timestamp is at least it, found through the time
      index (Kafka's ``offsetsForTimes`` then ``seek``); the log's end when there is none;
    - else ``start_offset``: ``"earliest"`` (the log start offset, the default), ``"latest"`` (the end of what
      the consumer may read) or an offset, which must be in the log (:class:`~kafkalog.errors.OffsetOutOfRangeError`
      otherwise: no ``auto.offset.reset``).

    Iteration goes partition after partition, in partition order, each up to its end (the high watermark, or
    the last stable offset for ``isolation="read_committed"``) when it is reached, and then stops: kafkalog has
    no poll loop to wait in.  Reads go through :meth:`Log.records() <kafkalog.log.reads.LogReads.records>`: CRCs checked
    (``check_crcs``), control records left out, aborted transactions skipped under ``read_committed``.
    """

    def __init__(self, source: LogManager | Log, topic: str | None = None, *,
                 partitions: Iterable[int] | None = None, start_offset: str | int = "earliest",
                 start_timestamp: int | None = None, isolation: str | IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                 check_crcs: bool = True, key_deserializer: Callable[[bytes | None], Any] | None = None,
                 value_deserializer: Callable[[bytes | None], Any] | None = None) -> None:
        from ..log import Log

        if isinstance(source, Log):
            if topic is not None and topic != source.topic_partition.topic:
                raise IllegalArgumentError(
                    f"The log {source.dir} is of topic {source.topic_partition.topic}, not {topic}")
            topic = source.topic_partition.topic
            logs = {source.topic_partition.partition: source}
        else:
            if topic is None:
                raise IllegalArgumentError("Name the topic to consume from a LogManager")
            logs = {log.topic_partition.partition: log for log in source.logs_by_topic(topic) if not log.is_future}
            if not logs:
                raise UnknownTopicOrPartitionError(f"Topic {topic} has no log in {source!r}")
        if partitions is not None:
            wanted = sorted(set(partitions))
            missing = [p for p in wanted if p not in logs]
            if missing:
                raise UnknownTopicOrPartitionError(f"Topic {topic} has no partition {', '.join(map(str, missing))} "
                                                   f"(it has {', '.join(map(str, sorted(logs)))})")
            logs = {p: logs[p] for p in wanted}
        if isinstance(start_offset, str) and start_offset not in ("earliest", "latest"):
            raise IllegalArgumentError(f"start_offset is 'earliest', 'latest' or an offset, not {start_offset!r}")
        self.topic = topic
        self.logs = dict(sorted(logs.items()))
        self.start_offset = start_offset
        self.start_timestamp = start_timestamp
        self.isolation = IsolationLevel.of(isolation)
        self.check_crcs = check_crcs
        #: What turns a key's and a value's bytes into what the records carry (``None``: the bytes).
        self.deserializers = (key_deserializer, value_deserializer)

    def beginning_offset(self, log: Log) -> int:
        """Where this consumer starts reading ``log`` (see the class)."""
        if self.start_timestamp is not None:
            found = log.find_offset_by_timestamp(self.start_timestamp)
            return log.high_watermark if found is None else max(found.offset, log.log_start_offset)
        if self.start_offset == "earliest":
            return log.log_start_offset
        if self.start_offset == "latest":
            return log.high_watermark
        return int(self.start_offset)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        key_of = self.deserializers[0] or (lambda data: data)
        value_of = self.deserializers[1] or (lambda data: data)
        for partition, log in self.logs.items():
            start = self.beginning_offset(log)
            for record in log.records(start, isolation=self.isolation, check_crcs=self.check_crcs):
                key, value = record.key, record.value
                yield ConsumerRecord(self.topic, partition, record.offset, record.timestamp, record.timestamp_type,
                                     key_of(key), value_of(value), list(record.headers), serialized_size(key),
                                     serialized_size(value))
