"""The real-broker runs, once per test session each, and the rule for when they cannot run.

Without Java, the jars of a version (``make oracle-jars``) or confluent-kafka, the broker tests skip with a note
saying how to get them; with ``KAFKALOG_REQUIRE_ORACLE=1`` (CI) that skip is a failure instead: the one rule of
the oracle's tests, ``oracle_unavailable`` in tests/oracle/conftest.py.

Each run below starts its broker once, does everything that needs the broker running, stops it, and hands the
tests what the consumers got and where the files are; the tests then read the stopped broker's files with
kafkalog.  A run that fails (a broker that does not come up, a client error) fails every test that uses it,
with the broker's log tail.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.oracle.conftest import oracle_unavailable
from tests.oracle.jvm import OracleUnavailable

from .broker import KafkaBroker, broker_classpath
from .clients import Row, TopicPartitionKey, consume, end_offsets, wait_until_stable
from .tiered import TIERED_TOPIC, produce_local_tail, produce_tiered, tiered_broker_config, wait_until_tiered
from .workloads import BROKER_CONFIG, Workload, produce_workload, wait_until_cleaned

#: "What brokers run now" (broker to kafkalog, kafkalog to broker), and the 3.x whose storage test jar Maven
#: serves, for LocalTieredStorage.
KAFKA_CURRENT = "4.4.0"
KAFKA_TIERED = "3.9.2"
ISOLATIONS = ("read_uncommitted", "read_committed")


def require_broker(version: str) -> None:
    """Skip (or, with ``KAFKALOG_REQUIRE_ORACLE=1``, fail) unless a broker of ``version`` and the clients can run."""
    try:
        broker_classpath(version)
        import confluent_kafka  # noqa: F401
    except (OracleUnavailable, ImportError) as e:
        reason = (f"no Kafka {version} broker: {e} (confluent-kafka is in the test extra; the jars come from "
                  "`make oracle-jars`)")
        oracle_unavailable(reason)


@dataclass
class BrokerRun:
    """What a broker run left: its stopped log dir, what each isolation level's consumer got per partition, and the
    broker's own offsets (log start offset, high watermark) per partition."""

    version: str
    log_dir: Path
    consumed: dict[str, dict[TopicPartitionKey, list[Row]]]
    log_start_offsets: dict[TopicPartitionKey, int]
    high_watermarks: dict[TopicPartitionKey, int]
    workload: Workload = field(default_factory=Workload)
    #: The offset up to which the broker's cleaner cleaned the compacted topic.
    cleaned_up_to: int = 0


@pytest.fixture(scope="session")
def broker_to_kafkalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerRun]:
    """A Kafka 4.4 broker into which the real clients wrote :mod:`~tests.oracle.broker.workloads`; its cleaner
    cleaned the compacted topic; then both consumers read every partition, and the broker was stopped."""
    require_broker(KAFKA_CURRENT)
    broker = KafkaBroker(KAFKA_CURRENT, tmp_path_factory.mktemp("broker-to-kafkalog"), BROKER_CONFIG)
    broker.format()
    with broker.running_broker():
        workload = produce_workload(broker)
        cleaned = wait_until_cleaned(broker, "compacted")
        high_watermarks = wait_until_stable(broker, workload.partitions)
        consumed = {isolation: consume(broker, workload.partitions, isolation) for isolation in ISOLATIONS}
        starts = end_offsets(broker, workload.partitions, earliest=True)
    yield BrokerRun(KAFKA_CURRENT, broker.log_dir, consumed, starts, high_watermarks, workload, cleaned)


@dataclass
class TieredRun:
    """What the tiered-storage run left: the stopped broker's log dir, the ``LocalTieredStorage`` store (its
    ``dir``), what each isolation level's consumer got of the tiered partition (from offset 0, which only the
    store holds), and the broker's log start offset and high watermark of it."""

    version: str
    log_dir: Path
    store: Path
    consumed: dict[str, list[Row]]
    log_start_offset: int
    high_watermark: int
    sent: int


@pytest.fixture(scope="session")
def tiered_to_kafkalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TieredRun]:
    """A Kafka 3.9.2 broker with ``LocalTieredStorage``: the clients write the tiered topic, the broker copies its
    closed segments to the store and deletes them locally, both consumers read the partition from offset 0 (the
    broker serves the first offsets from the store), and the broker is stopped."""
    require_broker(KAFKA_TIERED)
    work = tmp_path_factory.mktemp("tiered-to-kafkalog")
    store = work / "store"
    broker = KafkaBroker(KAFKA_TIERED, work / "broker", {**BROKER_CONFIG, **tiered_broker_config(store)})
    broker.format()
    tp = (TIERED_TOPIC, 0)
    with broker.running_broker():
        sent = produce_tiered(broker)
        wait_until_tiered(broker, store)
        sent += produce_local_tail(broker)
        high = wait_until_stable(broker, [tp])[tp]
        consumed = {isolation: consume(broker, [tp], isolation)[tp] for isolation in ISOLATIONS}
        start = end_offsets(broker, [tp], earliest=True)[tp]
    yield TieredRun(KAFKA_TIERED, broker.log_dir, store, consumed, start, high, sent)
