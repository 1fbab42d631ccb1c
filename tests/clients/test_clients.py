"""kafkalog.clients: the producer's and consumer's conveniences over a LogManager (issue 17).

What they add to the port, each checked through the public face: Kafka's partitioner for keyed records, a
sticky partition for keyless ones, the current time as the default timestamp (so the time index finds the
record), topics created or refused, kafka-python's result and record shapes, and reads that start from an
offset or a timestamp and go through the consumer's view (control records and aborted transactions left out).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import kafkalog
from kafkalog import Consumer, ConsumerRecord, LogConfig, LogManager, Producer, RecordMetadata, TimestampType
from kafkalog.clients.partitioner import partition_for_key
from kafkalog.errors import IllegalArgumentError, OffsetOutOfRangeError, UnknownTopicOrPartitionError
from kafkalog.record import ControlRecordType
from kafkalog.scheduler import MockTime
from kafkalog.topic import TopicPartition
from tests.support.log_test_utils import append_end_txn_marker_as_leader, append_transactional_as_leader

NOW = 1_700_000_000_000


@pytest.fixture
def time() -> MockTime:
    clock = MockTime()
    clock.sleep(NOW - clock.milliseconds())
    return clock


@pytest.fixture
def manager(tmp_path: Path, time: MockTime, impl: ModuleType) -> Iterator[LogManager]:
    with LogManager(tmp_path / "logs", LogConfig({"segment.bytes": 1024}), scheduler=time.scheduler,
                    time=time) as manager:
        yield manager


def test_the_names_are_exported_lazily() -> None:
    assert kafkalog.Producer is Producer and kafkalog.Consumer is Consumer
    assert {"Producer", "Consumer", "ConsumerRecord", "RecordMetadata"} <= set(kafkalog.__all__)


def test_a_keyed_record_goes_where_kafkas_partitioner_sends_it(manager: LogManager) -> None:
    producer = Producer(manager, num_partitions=4)
    sent = [producer.send("orders", f"v{i}".encode(), key=f"key-{i % 5}".encode()) for i in range(20)]
    assert producer.partitions_for("orders") == [0, 1, 2, 3]
    for i, meta in enumerate(sent):
        assert isinstance(meta, RecordMetadata)
        assert meta.partition == partition_for_key(f"key-{i % 5}".encode(), 4)
        assert meta.topic_partition == TopicPartition("orders", meta.partition)
        assert (meta.timestamp, meta.checksum) == (NOW, None)
        sizes = (meta.serialized_key_size, meta.serialized_value_size, meta.serialized_header_size)
        assert sizes == (5, len(f"v{i}"), -1)
    # Offsets count up per partition from 0, in the order of the sends.
    for partition in range(4):
        offsets = [m.offset for m in sent if m.partition == partition]
        assert offsets == list(range(len(offsets)))


def test_keyless_records_stick_to_a_partition_for_a_batch_then_move_on(manager: LogManager) -> None:
    producer = Producer(manager, num_partitions=3, batch_size=100)
    partitions = [producer.send("clicks", b"x" * 40).partition for _ in range(9)]
    first = partitions[0]
    # 40-byte values: three reach 100 bytes (120), so each partition takes three before the next takes over.
    assert partitions == [first] * 3 + [(first + 1) % 3] * 3 + [(first + 2) % 3] * 3


def test_the_default_timestamp_is_now_so_the_time_index_finds_the_record(manager: LogManager,
                                                                         time: MockTime) -> None:
    producer = Producer(manager)
    for i in range(30):
        producer.send("events", b"payload-%d" % i, key=b"k")
        time.sleep(1000)
    log = manager.get_log(TopicPartition("events", 0))
    assert log is not None and log.number_of_segments > 1
    found = log.find_offset_by_timestamp(NOW + 12_500)
    assert found is not None and (found.offset, found.timestamp) == (13, NOW + 13_000)
    # An explicit timestamp is kept.
    assert producer.send("events", b"late", timestamp_ms=5).timestamp == 5


def test_a_log_append_time_topic_reports_the_append_time(tmp_path: Path, time: MockTime, impl: ModuleType) -> None:
    with LogManager(tmp_path, LogConfig(), {"audit": {"message.timestamp.type": "LogAppendTime"}},
                    scheduler=time.scheduler, time=time) as manager:
        meta = Producer(manager).send("audit", b"v", timestamp_ms=42)
        assert meta.timestamp == NOW
        [record] = Consumer(manager, "audit")
        assert (record.timestamp, record.timestamp_type) == (NOW, TimestampType.LOG_APPEND_TIME)


def test_topics_are_created_as_a_broker_would_or_refused(manager: LogManager) -> None:
    Producer(manager, num_partitions=2).send("new", b"v", key=b"k")
    assert sorted(log.topic_partition.partition for log in manager.logs_by_topic("new")) == [0, 1]
    strict = Producer(manager, auto_create_topics=False)
    with pytest.raises(UnknownTopicOrPartitionError, match="Topic missing has no log"):
        strict.send("missing", b"v")
    assert manager.logs_by_topic("missing") == []
    assert strict.send("new", b"v", partition=1).partition == 1
    with pytest.raises(UnknownTopicOrPartitionError, match=r"Partition 2 of topic new is not in the range \[0...1\]"):
        strict.send("new", b"v", partition=2)


def test_bad_arguments_are_clear_errors(manager: LogManager) -> None:
    with pytest.raises(IllegalArgumentError, match="value must be bytes or None, not str"):
        Producer(manager).send("t", "text")
    with pytest.raises(IllegalArgumentError, match="num_partitions"):
        Producer(manager, num_partitions=0)
    with pytest.raises(IllegalArgumentError, match="Name the topic"):
        Consumer(manager)
    with pytest.raises(UnknownTopicOrPartitionError, match="Topic nowhere has no log"):
        Consumer(manager, "nowhere")
    Producer(manager).send("t", b"v")
    with pytest.raises(IllegalArgumentError, match="start_offset is 'earliest', 'latest' or an offset"):
        Consumer(manager, "t", start_offset="begin")
    with pytest.raises(UnknownTopicOrPartitionError, match="Topic t has no partition 3"):
        Consumer(manager, "t", partitions=[3])
    with pytest.raises(OffsetOutOfRangeError):
        list(Consumer(manager, "t", start_offset=7))


def test_serializers_headers_and_the_consumer_record(manager: LogManager) -> None:
    producer = Producer(manager, key_serializer=str.encode, value_serializer=lambda v: repr(v).encode())
    meta = producer.send("t", {"n": 1}, key="user-1", headers=[("trace", b"abc"), ("empty", None)])
    assert meta.serialized_header_size == len("trace") + 3 + len("empty")
    consumer = Consumer(manager, "t", key_deserializer=lambda b: b.decode(), value_deserializer=bytes.decode)
    [record] = list(consumer)
    assert isinstance(record, ConsumerRecord)
    assert record == ConsumerRecord("t", 0, 0, NOW, TimestampType.CREATE_TIME, "user-1", "{'n': 1}",
                                    [("trace", b"abc"), ("empty", None)], 6, 8)
    assert record.timestamp_type == 0  # kafka-python's CreateTime


def test_the_consumer_starts_where_it_is_told(manager: LogManager, time: MockTime) -> None:
    producer = Producer(manager, num_partitions=2)
    for i in range(10):
        producer.send("t", b"%d" % i, partition=i % 2)
        time.sleep(10)
    def read(**kwargs: object) -> list[tuple[int, int, bytes]]:
        return [(r.partition, r.offset, r.value) for r in Consumer(manager, "t", **kwargs)]  # type: ignore[arg-type]
    assert read() == [(0, o, b"%d" % (2 * o)) for o in range(5)] + [(1, o, b"%d" % (2 * o + 1)) for o in range(5)]
    assert read(start_offset="latest") == []
    assert read(start_offset=3, partitions=[1]) == [(1, 3, b"7"), (1, 4, b"9")]
    # Record i was stamped NOW + 10 i: from NOW + 55 on, partition 0 has 6 and 8, partition 1 has 7 and 9.
    assert read(start_timestamp=NOW + 55) == [(0, 3, b"6"), (0, 4, b"8"), (1, 3, b"7"), (1, 4, b"9")]
    assert read(start_timestamp=NOW + 10_000) == []


def test_a_consumer_of_one_log_and_the_consumer_view_rules(manager: LogManager, time: MockTime) -> None:
    log = manager.get_or_create_log(TopicPartition("tx", 0))
    append = append_transactional_as_leader(log, 7, 0, time)
    append(3)
    append_end_txn_marker_as_leader(log, 7, 0, ControlRecordType.ABORT, NOW)
    Producer(manager).send("tx", b"after")
    committed = [r.value for r in Consumer(log, isolation="read_committed")]
    uncommitted = [r.offset for r in Consumer(log)]
    assert committed == [b"after"]
    assert uncommitted == [0, 1, 2, 4]  # the marker at offset 3 is a control record: never returned
    with pytest.raises(IllegalArgumentError, match="is of topic tx, not other"):
        Consumer(log, "other")
