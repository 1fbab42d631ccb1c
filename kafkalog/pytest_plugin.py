"""kafkalog's pytest plugin: a real Kafka-compatible broker for tests that talk to Kafka.

Installed with kafkalog (``pytest11`` entry point), so a project's tests can ask for it without a ``conftest.py``::

    def test_orders_are_counted(kafkalog_bootstrap_servers, kafkalog_topic):
        producer = KafkaProducer(bootstrap_servers=kafkalog_bootstrap_servers)
        producer.send(kafkalog_topic, b"order-1").get(timeout=10)

Fixtures:

- ``kafkalog_broker``: a :class:`~kafkalog.broker.running.RunningBroker` for the whole session, on a free port of
  127.0.0.1, its data in a temporary directory (started at first use, in well under a second; stopped cleanly at the
  end);
- ``kafkalog_bootstrap_servers``: its ``host:port``;
- ``kafkalog_topic``: a new topic for each test (one partition; ask for more with
  ``@pytest.mark.kafkalog_topic(partitions=3, config={"cleanup.policy": "compact"})``), so tests sharing the session's
  broker do not see each other's records;
- ``kafkalog_broker_config``: the broker properties the session's broker starts with; override it in a
  ``conftest.py`` to change them.  The defaults are Kafka's, except that a new consumer group does not wait 3 s for
  more members (``group.initial.rebalance.delay.ms=0``, as Kafka's own test brokers set it) and the internal topics
  have one partition each (faster to create).

Nothing is imported from the broker until a fixture is used, so the plugin costs nothing to sessions that do not.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .broker import RunningBroker

__all__ = ["kafkalog_bootstrap_servers", "kafkalog_broker", "kafkalog_broker_config", "kafkalog_topic"]

_counter = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafkalog_topic(partitions=1, config=None): the kafkalog_topic fixture's "
                                       "partitions and topic configuration")


@pytest.fixture(scope="session")
def kafkalog_broker_config() -> dict[str, str]:
    """The properties of the session's broker (Kafka's names)."""
    return {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1",
            "transaction.state.log.num.partitions": "1"}


@pytest.fixture(scope="session")
def kafkalog_broker(kafkalog_broker_config: dict[str, str],
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    """A broker for the session, on a free port of 127.0.0.1."""
    from .broker import serve
    with serve(tmp_path_factory.mktemp("kafkalog-broker"), config=kafkalog_broker_config) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafkalog_bootstrap_servers(kafkalog_broker: RunningBroker) -> str:
    """``host:port`` of the session's broker."""
    return kafkalog_broker.bootstrap_servers


@pytest.fixture
def kafkalog_topic(kafkalog_broker: RunningBroker, request: pytest.FixtureRequest) -> str:
    """A topic of its own for this test, created before it runs."""
    marker = request.node.get_closest_marker("kafkalog_topic")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    stem = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:180]
    name = f"{stem}-{next(_counter)}"
    kafkalog_broker.create_topic(name, options.get("partitions", 1), options.get("config"))
    return name
