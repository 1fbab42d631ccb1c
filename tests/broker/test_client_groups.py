"""Consumer groups through real clients (the classic protocol): subscribe(), rebalances as members come and go,
committed offsets kept in ``__consumer_offsets`` and found again after the broker restarts."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafkalog.broker import serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CONFIG = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3",
          "transaction.state.log.num.partitions": "1"}


def _poll_until(consumers: list[Any], done: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for consumer in consumers:
            consumer.poll(0.1)


def test_members_coming_and_going_rebalance_the_partitions(tmp_path: Path) -> None:
    import confluent_kafka as ck
    with serve(tmp_path, config=CONFIG) as broker:
        broker.create_topic("shared", 4)
        assigned: dict[str, set[int]] = {"a": set(), "b": set()}

        def consumer(name: str) -> Any:
            c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                             "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                             "partition.assignment.strategy": "range"})

            def on_assign(_c: Any, partitions: list[Any]) -> None:
                assigned[name] = {p.partition for p in partitions}

            def on_revoke(_c: Any, _partitions: list[Any]) -> None:
                assigned[name] = set()
            c.subscribe(["shared"], on_assign=on_assign, on_revoke=on_revoke)
            return c

        a = consumer("a")
        _poll_until([a], lambda: assigned["a"] == {0, 1, 2, 3})
        b = consumer("b")
        _poll_until([a, b], lambda: len(assigned["a"]) == 2 and len(assigned["b"]) == 2)
        assert assigned["a"] | assigned["b"] == {0, 1, 2, 3}
        b.close()  # a LeaveGroup: a gets everything back at once, without waiting for b's session to time out
        _poll_until([a], lambda: assigned["a"] == {0, 1, 2, 3}, timeout=10)
        a.close()


def test_committed_offsets_survive_a_restart(tmp_path: Path) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    with serve(tmp_path, config=CONFIG) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        for i in range(10):
            producer.send("events", value=b"%d" % i)
        producer.flush()
        producer.close()
        consumer = KafkaConsumer("events", bootstrap_servers=broker.bootstrap_servers, group_id="readers",
                                 auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=3000)
        first = [m.value for _, m in zip(range(6), consumer, strict=False)]
        consumer.commit()
        consumer.close()
    assert first == [b"%d" % i for i in range(6)]
    with serve(tmp_path, config=CONFIG) as broker:
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id="readers",
                                 enable_auto_commit=False)
        tp = TopicPartition("events", 0)
        assert consumer.committed(tp) == 6
        consumer.close()
        consumer = KafkaConsumer("events", bootstrap_servers=broker.bootstrap_servers, group_id="readers",
                                 enable_auto_commit=False, consumer_timeout_ms=3000)
        rest = [m.value for _, m in zip(range(4), consumer, strict=False)]
        consumer.close()
    assert rest == [b"%d" % i for i in range(6, 10)]
