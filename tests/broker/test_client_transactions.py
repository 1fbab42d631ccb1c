"""Transactions through real clients: confluent-kafka's and kafka-python's transactional producers,
``read_committed`` and ``read_uncommitted`` consumers, offsets sent to a transaction, and a restart."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalog.broker import RunningBroker, serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CONFIG = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "2",
          "transaction.state.log.num.partitions": "2"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("txn"), config=CONFIG) as running:
        yield running


def _read(bootstrap: str, topic: str, isolation: str, expect: int, wait: float = 15.0) -> list[bytes]:
    import confluent_kafka as ck
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": isolation,
                            "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
    got: list[bytes] = []
    deadline = time.monotonic() + wait
    while len(got) < expect and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    return got


def test_confluent_commit_abort_and_offsets(broker: RunningBroker) -> None:
    import confluent_kafka as ck
    bootstrap = broker.bootstrap_servers
    broker.create_topic("ck-out")
    broker.create_topic("ck-in")
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "ck-tx"})
    producer.init_transactions(20)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("ck-out", value=b"committed-%d" % i)
    producer.commit_transaction(20)
    producer.begin_transaction()
    for i in range(2):
        producer.produce("ck-out", value=b"aborted-%d" % i)
    producer.flush(20)  # in the log before the abort, so read_uncommitted sees them
    producer.abort_transaction(20)
    group = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-group"})
    producer.begin_transaction()
    producer.produce("ck-out", value=b"last")
    producer.send_offsets_to_transaction([ck.TopicPartition("ck-in", 0, 42)], group.consumer_group_metadata(), 20)
    producer.commit_transaction(20)
    assert _read(bootstrap, "ck-out", "read_committed", 4) == [b"committed-0", b"committed-1", b"committed-2",
                                                              b"last"]
    assert _read(bootstrap, "ck-out", "read_uncommitted", 6) == [
        b"committed-0", b"committed-1", b"committed-2", b"aborted-0", b"aborted-1", b"last"]
    assert group.committed([ck.TopicPartition("ck-in", 0)], timeout=10)[0].offset == 42
    group.close()
    log = broker.call(lambda: broker.broker.partitions.log("ck-out", 0))
    assert broker.call(lambda: log.last_stable_offset) == broker.call(lambda: log.log_end_offset)
    # three data batches and three markers (COMMIT, ABORT, COMMIT), the aborted one in the transaction index
    batches = broker.call(lambda: list(log.read(0, 1 << 20).records.batches()))
    assert [b.is_control for b in batches].count(True) == 3


def test_kafka_python_transactions(broker: RunningBroker) -> None:
    from kafka import KafkaProducer
    bootstrap = broker.bootstrap_servers
    broker.create_topic("kp-out")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-tx")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("kp-out", b"one")
    producer.send("kp-out", b"two")
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send("kp-out", b"dropped")
    producer.flush()
    producer.abort_transaction()
    producer.close()
    assert _read(bootstrap, "kp-out", "read_committed", 2) == [b"one", b"two"]
    assert _read(bootstrap, "kp-out", "read_uncommitted", 3) == [b"one", b"two", b"dropped"]


def test_an_open_transaction_is_aborted_by_a_new_producer_after_a_restart(tmp_path: Path) -> None:
    import confluent_kafka as ck
    with serve(tmp_path, config=CONFIG) as running:
        running.create_topic("t")
        producer: Any = ck.Producer({"bootstrap.servers": running.bootstrap_servers, "transactional.id": "restart"})
        producer.init_transactions(20)
        producer.begin_transaction()
        producer.produce("t", value=b"in-doubt")
        producer.flush(20)
        # the broker stops with the transaction open; the producer is gone with it
    with serve(tmp_path, config=CONFIG) as running:
        # nothing past the open transaction is readable committed (2 s of polling finds nothing)
        assert _read(running.bootstrap_servers, "t", "read_committed", 1, wait=2.0) == []
        fresh = ck.Producer({"bootstrap.servers": running.bootstrap_servers, "transactional.id": "restart"})
        fresh.init_transactions(30)  # fences the old epoch: the open transaction is aborted
        fresh.begin_transaction()
        fresh.produce("t", value=b"after")
        fresh.commit_transaction(20)
        assert _read(running.bootstrap_servers, "t", "read_committed", 1) == [b"after"]
        assert _read(running.bootstrap_servers, "t", "read_uncommitted", 2) == [b"in-doubt", b"after"]
