"""The broker on both twins of the kernels (design.md section 3): produce, fetch and the transactional read path
served once on the compiled core and once on the plain one, in this process, through the ``impl`` fixture.

The broker's data path is kafkalog's log layer: a produce is validated and appended by the batch scan and the
append kernels, a fetch finds its start through the offset index lookup and its end through the message scan, and a
``read_committed`` fetch bounds its aborted-transaction lookup the same way.  Each of those is a kernel the twins
implement twice; these tests hold the two to the same answers with real clients (confluent-kafka for the
transactional producer and the consumers, kafka-python for an uncompressed and a compressed idempotent producer),
over segments small enough that every fetch crosses index entries and segment boundaries.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import implementation
from kafkalog.broker import RunningBroker, serve
from kafkalog.log import Log

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

#: Small segments and a dense index, so that a fetch's start is an index lookup plus a scan, and its end a scan
#: that stops at a batch boundary inside a segment or at a segment's end.
_CONFIG = {"log.segment.bytes": "4096", "log.index.interval.bytes": "256", "group.initial.rebalance.delay.ms": "0",
           "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}


def _consume(broker: RunningBroker, topic: str, isolation: str, expect: int) -> list[Any]:
    import confluent_kafka as ck
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"twins-{isolation}",
                            "enable.auto.commit": False, "isolation.level": isolation,
                            "fetch.max.bytes": 2048, "message.max.bytes": 2048,
                            "max.partition.fetch.bytes": 1024})
    consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < expect and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got.append(message)
    # one more poll: nothing beyond what was expected may come
    extra = consumer.poll(0.5)
    consumer.close()
    assert extra is None or extra.error() is not None, f"an unexpected record at offset {extra.offset()}"
    return got


def _transaction(broker: RunningBroker, topic: str, values: list[bytes], *, commit: bool) -> None:
    import confluent_kafka as ck
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"tx-{commit}",
                            "linger.ms": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, key=b"tx", value=value)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


@pytest.mark.parametrize("compression", [None, "lz4"])
def test_produce_fetch_and_read_committed_on_both_kernels(impl: ModuleType, tmp_path: Path,
                                                          compression: str | None) -> None:
    from kafka import KafkaProducer
    assert implementation() == impl.IMPLEMENTATION  # the twin the broker's appends and reads run on
    with serve(tmp_path / "data", config=_CONFIG) as broker:
        topic = "twins"
        broker.create_topic(topic)
        plain = [b"value-%04d-" % i + b"x" * (i % 97) for i in range(300)]
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", enable_idempotence=True,
                                 compression_type=compression, linger_ms=2, batch_size=700)
        futures = [producer.send(topic, key=b"k%d" % (i % 7), value=v, headers=[("i", b"%d" % i)])
                   for i, v in enumerate(plain)]
        producer.flush(30)
        assert [f.get(10).offset for f in futures] == list(range(300))
        producer.close()
        aborted = [b"aborted-%d" % i for i in range(40)]
        committed = [b"committed-%d" % i for i in range(40)]
        _transaction(broker, topic, aborted, commit=False)
        _transaction(broker, topic, committed, commit=True)

        everything = _consume(broker, topic, "read_uncommitted", 380)
        assert [m.value() for m in everything] == plain + aborted + committed
        assert [m.headers() for m in everything[:300]] == [[("i", b"%d" % i)] for i in range(300)]
        offsets = [m.offset() for m in everything]
        assert offsets == sorted(offsets) and offsets[:300] == list(range(300))

        visible = _consume(broker, topic, "read_committed", 340)
        assert [m.value() for m in visible] == plain + committed

        data_dir = broker.call(lambda: broker.broker.partitions.log(topic, 0).dir)
        segments = broker.call(lambda: len(broker.broker.partitions.log(topic, 0).segments))
    assert segments >= 3, "the test wants fetches across several segments"
    # What the broker wrote is a Kafka log kafkalog reads back on the same twin, the aborted records marked so.
    with Log(Path(data_dir), read_only=True) as log:
        assert [r.value for r in log.records()] == plain + aborted + committed
        assert [r.value for r in log.records(isolation="read_committed")] == plain + committed
