"""The real clients the broker tests use, and what a consumer got, in one comparable shape.

- confluent-kafka (librdkafka, bundled in its wheel): the admin calls (topics, leaders, end offsets), the
  consumers of both isolation levels, and producers;
- kafka-python and aiokafka: producers of their own (their own batch builders and compressors).

A record as a consumer got it is a :class:`Row`; :func:`library_rows` makes the same rows of what kafkalog reads,
so the two are compared with ``==``.  Every wait here is bounded.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from .broker import NODE_ID, BrokerError, KafkaBroker, quiet_logger

__all__ = ["Row", "TopicPartitionKey", "admin", "confluent_producer", "consume", "create_topics", "end_offsets",
           "library_rows", "produce", "read_partitions", "wait_for_leaders", "wait_until_stable"]

#: ``(topic, partition)``.
TopicPartitionKey = tuple[str, int]
CLIENT_TIMEOUT_S = 60.0


class Row(NamedTuple):
    """A record as a consumer is given it: its offset, timestamp type (0 CreateTime, 1 LogAppendTime), timestamp,
    key, value and headers (``(name, value)`` pairs, in order)."""

    offset: int
    timestamp_type: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def library_rows(records: Iterable[Any]) -> list[Row]:
    """kafkalog's records (``Log.records``, a tiered read) as :class:`Row` s."""
    return [Row(r.offset, int(r.timestamp_type), r.timestamp, r.key, r.value, tuple(r.headers)) for r in records]


def _confluent_row(message: Any) -> Row:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

    kind, timestamp = message.timestamp()
    return Row(message.offset(), 1 if kind == TIMESTAMP_LOG_APPEND_TIME else 0, timestamp, message.key(),
               message.value(), tuple(message.headers() or ()))


def admin(broker: KafkaBroker) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.bootstrap, "logger": quiet_logger()})


def create_topics(broker: KafkaBroker, topics: Mapping[str, tuple[int, Mapping[str, Any]]]) -> None:
    """Create each topic (``name: (partitions, configs)``, one replica) and wait until every partition has its
    leader."""
    from confluent_kafka.admin import NewTopic

    client = admin(broker)  # kept until the futures are done: a destroyed client fails them
    futures = client.create_topics(
        [NewTopic(name, partitions, 1, config={k: str(v) for k, v in config.items()})
         for name, (partitions, config) in topics.items()], operation_timeout=CLIENT_TIMEOUT_S)
    for future in futures.values():
        future.result(CLIENT_TIMEOUT_S)
    wait_for_leaders(broker, topics)


def wait_for_leaders(broker: KafkaBroker, topics: Iterable[str], timeout: float = CLIENT_TIMEOUT_S) -> None:
    """Wait until every partition of ``topics`` is led by the broker (after a start, its recovery and election)."""
    client, names, deadline = admin(broker), list(topics), time.monotonic() + timeout
    while True:
        metadata = client.list_topics(timeout=10)
        waiting = [name for name in names if name not in metadata.topics or metadata.topics[name].error is not None
                   or not metadata.topics[name].partitions
                   or any(p.leader != NODE_ID or p.error is not None
                          for p in metadata.topics[name].partitions.values())]
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise BrokerError(f"no leader for the partitions of {waiting} after {timeout:.0f} s\n{broker.log_tail()}")
        time.sleep(0.2)


def end_offsets(broker: KafkaBroker, partitions: Iterable[TopicPartitionKey], *, committed: bool = False,
                earliest: bool = False) -> dict[TopicPartitionKey, int]:
    """The broker's offsets of ``partitions``: the log start offset (``earliest``), else the high watermark, or the
    last stable offset (``committed``), as a ListOffsets request gives them."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    client = admin(broker)  # kept until the futures are done
    futures = client.list_offsets({TopicPartition(t, p): spec for t, p in partitions}, isolation_level=level,
                                  request_timeout=CLIENT_TIMEOUT_S)
    return {(tp.topic, tp.partition): future.result(CLIENT_TIMEOUT_S).offset for tp, future in futures.items()}


def wait_until_stable(broker: KafkaBroker, partitions: Iterable[TopicPartitionKey],
                      timeout: float = CLIENT_TIMEOUT_S) -> dict[TopicPartitionKey, int]:
    """Wait until no transaction is open in ``partitions`` (the last stable offset is the high watermark: the
    coordinator writes the markers after it answered the producer's commit or abort); the end offsets."""
    partitions, deadline = list(partitions), time.monotonic() + timeout
    while True:
        high = end_offsets(broker, partitions)
        stable = end_offsets(broker, partitions, committed=True)
        if high == stable:
            return high
        if time.monotonic() > deadline:
            raise BrokerError(f"transactions still open after {timeout:.0f} s: high watermarks {high}, last stable "
                              f"offsets {stable}\n{broker.log_tail()}")
        time.sleep(0.1)


def read_partitions(bootstrap: str, partitions: Iterable[TopicPartitionKey], *, isolation: str = "read_uncommitted",
                    start: int | None = None, timeout: float = CLIENT_TIMEOUT_S,
                    failure: Callable[[str], Exception] = BrokerError) -> dict[TopicPartitionKey, list[Row]]:
    """Everything a confluent-kafka consumer of ``isolation`` (``read_committed`` / ``read_uncommitted``) gets, with
    ``assign()``, from ``start`` (the beginning) of each partition to its end (the end of partition event: the high
    watermark, or the last stable offset).  A consumer error, or an end not reached in ``timeout`` seconds, is raised
    as ``failure(message)``."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    partitions = list(partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kafkalog-oracle-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True,
                         "auto.offset.reset": "error", "check.crcs": True, "logger": quiet_logger()})
    try:
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING if start is None else start) for t, p in partitions])
        rows: dict[TopicPartitionKey, list[Row]] = {tp: [] for tp in partitions}
        pending, deadline = set(partitions), time.monotonic() + timeout
        while pending:
            for message in consumer.consume(500, 0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard((message.topic(), message.partition()))
                        continue
                    raise failure(f"the consumer failed: {error}")
                rows[(message.topic(), message.partition())].append(_confluent_row(message))
            if pending and time.monotonic() > deadline:
                raise failure(f"the {isolation} consumer did not reach the end of {sorted(pending)} in {timeout:.0f} s")
        return rows
    finally:
        consumer.close()


def consume(broker: KafkaBroker, partitions: Iterable[TopicPartitionKey], isolation: str,
            timeout: float = CLIENT_TIMEOUT_S) -> dict[TopicPartitionKey, list[Row]]:
    """:func:`read_partitions` from the start of each partition of ``broker``, a failure told with the broker's log."""
    return read_partitions(broker.bootstrap, partitions, isolation=isolation, timeout=timeout,
                           failure=lambda message: BrokerError(f"{message}\n{broker.log_tail()}"))


def confluent_producer(broker: KafkaBroker, **config: Any) -> Any:
    from confluent_kafka import Producer

    settings: dict[str, Any] = {"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5,
                                "logger": quiet_logger()}
    settings.update({k.replace("_", "."): v for k, v in config.items()})
    return Producer(settings)


def produce(producer: Any, topic: str, records: Iterable[tuple[Any, ...]], partition: int | None = None,
            flush: bool = True) -> None:
    """Send ``records`` (``(key, value)`` or ``(key, value, headers)``, text or bytes) with a confluent-kafka
    producer; with ``flush``, wait until each is acknowledged and fail on the first delivery error."""
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    for record in records:
        key, value, *rest = record
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": delivered}
        if rest and rest[0]:
            kwargs["headers"] = list(rest[0])
        if partition is not None:
            kwargs["partition"] = partition
        producer.produce(topic, **kwargs)
        producer.poll(0)
    if flush:
        left = producer.flush(CLIENT_TIMEOUT_S)
        if left:
            failures.append(f"{left} records not acknowledged in {CLIENT_TIMEOUT_S:.0f} s")
    if failures:
        raise BrokerError(f"confluent-kafka could not produce to {topic}: {failures[:3]}")
