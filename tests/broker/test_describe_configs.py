"""DescribeConfigs and CreateTopics of a topic: each configuration's source and synonyms as Kafka's
``ConfigHelper.createTopicConfigEntry`` gives them (3.8.0; a real Kafka 4.4 broker answers the same,
tests/oracle/broker/test_client_scenarios.py, ``admin_topic_configs``): the topic's override, then the broker
properties that supply the default, set ones (STATIC_BROKER_CONFIG) before defaults (DEFAULT_CONFIG)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.errors import ErrorCode

from kafkalog.broker import RunningBroker, serve
from tests.support.kafka_wire import WireClient

TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
SEGMENT_BYTES = str(512 * 1024 * 1024)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("describe-configs"),
               config={"log.segment.bytes": SEGMENT_BYTES, "log.retention.hours": "200"}) as running:
        running.create_topic("tuned", config={"cleanup.policy": "compact", "retention.ms": "1000"})
        yield running


def _describe(broker: RunningBroker, synonyms: bool = True) -> dict[str, Any]:
    request = DescribeConfigsRequest(resources=(DescribeConfigsResource(resource_type=2, resource_name="tuned",
                                                                        configuration_keys=None),),
                                     include_synonyms=synonyms, include_documentation=False)
    with WireClient(broker.bootstrap_servers) as client:
        _, response = client.request(request)
    result = response.results[0]
    assert result.error_code is ErrorCode.none
    return {c.name: (c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
            for c in result.configs}


def test_a_broker_property_set_in_its_configuration_is_the_source(broker: RunningBroker) -> None:
    assert _describe(broker)["segment.bytes"] == (SEGMENT_BYTES, STATIC_BROKER_CONFIG, [
        ("log.segment.bytes", SEGMENT_BYTES, STATIC_BROKER_CONFIG),
        ("log.segment.bytes", "1073741824", DEFAULT_CONFIG)])


def test_an_override_comes_before_the_broker_default(broker: RunningBroker) -> None:
    assert _describe(broker)["cleanup.policy"] == ("compact", TOPIC_CONFIG, [
        ("cleanup.policy", "compact", TOPIC_CONFIG), ("log.cleanup.policy", "delete", DEFAULT_CONFIG)])


def test_a_default_lists_its_broker_property(broker: RunningBroker) -> None:
    assert _describe(broker)["max.message.bytes"] == ("1048588", DEFAULT_CONFIG, [
        ("message.max.bytes", "1048588", DEFAULT_CONFIG)])


def test_the_broker_list_starts_at_the_first_synonym(broker: RunningBroker) -> None:
    """Kafka: ``ConfigHelper.configSynonyms`` drops what comes before the first synonym's own entry, so
    ``log.retention.hours`` (set, and defaulted) is not listed for ``retention.ms``, nor ``log.roll.hours`` for
    ``segment.ms``; a configuration no broker property supplies lists none."""
    described = _describe(broker)
    assert described["retention.ms"] == ("1000", TOPIC_CONFIG, [("retention.ms", "1000", TOPIC_CONFIG)])
    assert described["segment.ms"] == ("604800000", DEFAULT_CONFIG, [])
    assert described["flush.ms"] == ("9223372036854775807", DEFAULT_CONFIG, [])
    assert described["remote.storage.enable"] == ("false", DEFAULT_CONFIG, [])


def test_without_synonyms_the_sources_are_the_same(broker: RunningBroker) -> None:
    described = _describe(broker, synonyms=False)
    assert described["segment.bytes"] == (SEGMENT_BYTES, STATIC_BROKER_CONFIG, [])
    assert described["cleanup.policy"] == ("compact", TOPIC_CONFIG, [])


def test_create_topics_answers_the_same_sources(broker: RunningBroker) -> None:
    request = CreateTopicsRequest(topics=(CreatableTopic(
        name="created", num_partitions=1, replication_factor=-1, assignments=(),
        configs=(CreatableTopicConfig(name="retention.ms", value="1000"),)),),
        timeout=datetime.timedelta(seconds=10), validate_only=False)
    with WireClient(broker.bootstrap_servers) as client:
        _, response = client.request(request)
    sources = {c.name: (c.value, c.config_source) for c in response.topics[0].configs}
    assert sources["segment.bytes"] == (SEGMENT_BYTES, STATIC_BROKER_CONFIG)
    assert sources["retention.ms"] == ("1000", TOPIC_CONFIG)
    assert sources["cleanup.policy"] == ("delete", DEFAULT_CONFIG)
