"""A producer's convenience over the port: :class:`Producer` appends to the logs of a
:class:`~kafkalog.manager.log_manager.LogManager` in the calling thread, one ``Log.append`` a record.  What it
adds is what a client library adds on top of the wire protocol:

- **which partition** (Kafka 3.8 ``BuiltInPartitioner``, ``clients/.../producer/internals``): a keyed record
  goes to ``murmur2(key) % partitions`` (:mod:`kafkalog.clients.partitioner`), where a Java producer would send
  it; a keyless one goes to a *sticky* partition, kept until ``batch_size`` bytes went to it and then the next
  one in turn (Kafka's producer sticks the same way, KIP-480/794, but picks the next partition by queue sizes,
  which a broker-less append has none of);
- **the timestamp**: a record sent without one gets the current time, as a producer stamps ``CreateTime``
  (``Log.append`` alone keeps -1, which no timestamp lookup finds).

What a send returns is named as kafka-python names it (``kafka.producer.future.RecordMetadata``, 2.0.2).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import IllegalArgumentError, UnknownTopicOrPartitionError
from ..record import CompressionType, MemoryRecords, TimestampType
from ..topic import TopicPartition
from .partitioner import partition_for_key

if TYPE_CHECKING:
    from ..log import Log
    from ..manager.log_manager import LogManager

__all__ = ["DEFAULT_BATCH_SIZE", "Producer", "RecordMetadata", "serialized_size"]

#: Kafka's ``batch.size`` default: how many bytes of keyless records stick to one partition.
DEFAULT_BATCH_SIZE = 16384


class RecordMetadata(NamedTuple):
    """Where a sent record went: what kafka-python's ``KafkaProducer.send(...).get()`` returns.

    ``timestamp`` is the record's ``CreateTime``, or the time the log appended it for a ``LogAppendTime``
    topic; ``checksum`` is ``None``, as it is for the v2 batches kafka-python writes; a size is -1 for a
    ``None`` key or value.
    """

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    serialized_header_size: int


def serialized_size(data: bytes | None) -> int:
    """A record's key or value size as kafka-python reports it: -1 for ``None``."""
    return -1 if data is None else len(data)


def _as_bytes(what: str, data: object) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise IllegalArgumentError(f"The record's {what} must be bytes or None, not {type(data).__name__}: give the "
                               f"producer a {what}_serializer")


class Producer:
    """Appends records to the topics of ``manager``, one record per :meth:`send` (a thin convenience: no
    buffering, no batching, no retries; each send is one ``Log.append`` in the calling thread).

    A topic with no log is created with ``num_partitions`` partitions when ``auto_create_topics`` is true, as
    a broker's ``auto.create.topics.enable`` (default true) and ``num.partitions`` (default 1) do; otherwise
    sending to it is an :class:`~kafkalog.errors.UnknownTopicOrPartitionError`.  The topic's partitions are
    the logs the manager holds for it, ``0`` up to the highest.  ``key_serializer`` and ``value_serializer``
    turn what :meth:`send` is given into bytes, as kafka-python's do; without them keys and values must be
    bytes or ``None``.  ``compression_type`` (``None``, ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"``)
    compresses each batch; the topic's ``compression.type`` may recompress it, as a broker's does.
    """

    def __init__(self, manager: LogManager, *, auto_create_topics: bool = True, num_partitions: int = 1,
                 batch_size: int = DEFAULT_BATCH_SIZE, compression_type: str | None = None,
                 key_serializer: Callable[[Any], bytes | None] | None = None,
                 value_serializer: Callable[[Any], bytes | None] | None = None) -> None:
        if num_partitions < 1:
            raise IllegalArgumentError(f"num_partitions must be at least 1, not {num_partitions}")
        if batch_size < 0:
            raise IllegalArgumentError(f"batch_size must not be negative, not {batch_size}")
        self.manager = manager
        self.auto_create_topics = auto_create_topics
        self.num_partitions = num_partitions
        self.batch_size = batch_size
        self.compression_type = CompressionType.of(compression_type or "none")
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        # The sticky partition of each topic for keyless records, and the bytes sent to it so far.
        self._sticky: dict[str, tuple[int, int]] = {}

    def partitions_for(self, topic: str) -> list[int]:
        """The partitions of ``topic``: those its logs are for (kafka-python: ``partitions_for``); empty when
        it has none."""
        return sorted(log.topic_partition.partition for log in self.manager.logs_by_topic(topic) if not log.is_future)

    def _partition_count(self, topic: str) -> int:
        partitions = self.partitions_for(topic)
        if partitions:
            return partitions[-1] + 1
        if not self.auto_create_topics:
            raise UnknownTopicOrPartitionError(f"Topic {topic} has no log in {self.manager!r} and auto_create_topics "
                                               "is off: create its logs first (LogManager.create_log)")
        # All at once, as a broker creates a topic: its partition count is then fixed for the partitioner.
        for partition in range(self.num_partitions):
            self.manager.get_or_create_log(TopicPartition(topic, partition))
        return self.num_partitions

    def _choose_partition(self, topic: str, key: bytes | None, size: int, partitions: int) -> int:
        if key is not None:
            return partition_for_key(key, partitions)
        partition, sent = self._sticky.get(topic, (random.randrange(partitions), 0))
        if partition >= partitions:
            partition, sent = partition % partitions, 0
        if sent >= self.batch_size and sent > 0:
            partition, sent = (partition + 1) % partitions, 0
        self._sticky[topic] = (partition, sent + size)
        return partition

    def _log_for(self, topic_partition: TopicPartition) -> Log:
        log = self.manager.get_log(topic_partition)
        if log is not None:
            return log
        if not self.auto_create_topics:
            raise UnknownTopicOrPartitionError(f"Partition {topic_partition} has no log in {self.manager!r} and "
                                               "auto_create_topics is off")
        return self.manager.get_or_create_log(topic_partition)

    def send(self, topic: str, value: Any = None, key: Any = None,
             headers: Sequence[tuple[str, bytes | None]] | None = None, partition: int | None = None,
             timestamp_ms: int | None = None) -> RecordMetadata:
        """Append one record to ``topic`` and say where it went (kafka-python: ``send(...).get()``).

        ``partition`` overrides the partitioner; ``timestamp_ms`` defaults to now (the manager's clock).

        Raises:
            UnknownTopicOrPartitionError: the topic has no log and may not be created, or ``partition`` is not
                one of its partitions.
            IllegalArgumentError: a key or value that is not bytes, with no serializer for it.
            RecordTooLargeError: the record exceeds the topic's ``max.message.bytes``.
        """
        key_bytes = _as_bytes("key", self.key_serializer(key) if self.key_serializer is not None else key)
        value_bytes = _as_bytes("value", self.value_serializer(value) if self.value_serializer is not None
                                else value)
        header_list = [(str(name), _as_bytes("header value", data)) for name, data in (headers or ())]
        partitions = self._partition_count(topic)
        if partition is None:
            size = max(serialized_size(key_bytes), 0) + max(serialized_size(value_bytes), 0)
            partition = self._choose_partition(topic, key_bytes, size, partitions)
        elif not 0 <= partition < partitions:
            raise UnknownTopicOrPartitionError(f"Partition {partition} of topic {topic} is not in the range "
                                               f"[0...{partitions - 1}]")
        topic_partition = TopicPartition(topic, partition)
        log = self._log_for(topic_partition)
        timestamp = self.manager.time.milliseconds() if timestamp_ms is None else timestamp_ms
        records = MemoryRecords.with_records([(key_bytes, value_bytes, timestamp, header_list)],
                                             compression=self.compression_type)
        info = log.append(records)
        # The broker's produce response: the append time for a LogAppendTime topic, else the record's own.
        if log.config.message_timestamp_type is TimestampType.LOG_APPEND_TIME and info.log_append_time >= 0:
            timestamp = info.log_append_time
        header_size = sum(len(name.encode()) + max(serialized_size(data), 0) for name, data in header_list)
        return RecordMetadata(topic, partition, topic_partition, info.first_offset if info.first_offset is not None
                              else info.last_offset, timestamp, None, serialized_size(key_bytes),
                              serialized_size(value_bytes), header_size if header_list else -1)

    def flush(self) -> None:
        """fsync every log of the manager (kafka-python's ``flush`` waits for buffered sends; there are none
        here, every send is appended when it returns)."""
        for log in self.manager.all_logs():
            log.flush()
