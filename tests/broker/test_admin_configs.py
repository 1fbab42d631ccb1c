"""IncrementalAlterConfigs' list operations against kafkalog's broker, through confluent-kafka's admin client.

APPEND and SUBTRACT on a topic without an override of the property work on the property's default, as Kafka's
``ConfigurationControlManager.getParts`` does: found by confluent-kafka-python's own
``tests/integration/admin/test_incremental_alter_configs.py`` run against ``kafkalog serve`` (tests/peers).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalog.broker import RunningBroker, serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("admin-configs")) as running:
        yield running


def _incremental(broker: RunningBroker, topic: str, op_name: str, name: str, value: str) -> str:
    """Apply one operation to ``topic``'s ``name``; the value DescribeConfigs then gives."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=getattr(AlterConfigOpType, op_name))])
    (future,) = admin.incremental_alter_configs([resource]).values()
    assert future.result(10) is None
    (described,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    entry = described.result(10)[name]
    assert not entry.is_default
    return str(entry.value)


def test_append_to_a_property_without_an_override_starts_from_its_default(broker: RunningBroker) -> None:
    broker.create_topic("append-to-default")
    assert _incremental(broker, "append-to-default", "APPEND", "cleanup.policy", "compact") == "delete,compact"
    config = broker.call(lambda: broker.broker.partitions.log("append-to-default", 0).config)
    assert config.compact and config.delete


def test_subtract_from_a_property_without_an_override_starts_from_its_default(broker: RunningBroker) -> None:
    broker.create_topic("subtract-from-default")
    # the default "delete" less a policy it does not hold stays "delete" (from nothing it would be "")
    assert _incremental(broker, "subtract-from-default", "SUBTRACT", "cleanup.policy", "compact") == "delete"
    config = broker.call(lambda: broker.broker.partitions.log("subtract-from-default", 0).config)
    assert config.delete and not config.compact
    assert _incremental(broker, "subtract-from-default", "SUBTRACT", "cleanup.policy", "delete") == ""


def test_append_to_an_override_starts_from_the_override(broker: RunningBroker) -> None:
    broker.create_topic("append-to-override", config={"cleanup.policy": "compact"})
    assert _incremental(broker, "append-to-override", "APPEND", "cleanup.policy", "delete") == "compact,delete"
