"""DescribeTopicPartitions (API 75, KIP-966; kafkalog.broker.metadata): Kafka 3.8's
``DescribeTopicPartitionsRequestHandler`` over one node -- the topics named or all, in name order, paged by the
partition limit and the cursor, unknown topics answered with an error, a bad cursor with INVALID_REQUEST -- sent raw
(tests.support.kafka_wire) and through kafka-python's admin client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.describe_topic_partitions.v0.request import Cursor, DescribeTopicPartitionsRequest, TopicRequest
from kio.schema.errors import ErrorCode

from kafkalog.broker import RunningBroker, serve
from kafkalog.broker.metadata import TOPIC_OPERATIONS
from tests.support.kafka_wire import WireClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("describe-topic-partitions"),
               config={"max.request.partition.size.limit": "4"}) as running:
        running.create_topic("alpha", 3)
        running.create_topic("beta", 2)
        yield running


def _describe(broker: RunningBroker, names: list[str], *, limit: int = 2000,
              cursor: tuple[str, int] | None = None) -> Any:
    request = DescribeTopicPartitionsRequest(
        topics=tuple(TopicRequest(name=n) for n in names), response_partition_limit=limit,
        cursor=None if cursor is None else Cursor(topic_name=cursor[0], partition_index=cursor[1]))
    with WireClient(broker.bootstrap_servers) as client:
        _, response = client.request(request)
    return response


def _pages(response: Any) -> tuple[list[tuple[str, int]], tuple[str, int] | None]:
    got = [(t.name, p.partition_index) for t in response.topics for p in t.partitions]
    cursor = response.next_cursor
    return got, None if cursor is None else (cursor.topic_name, cursor.partition_index)


def test_it_is_advertised(broker: RunningBroker) -> None:
    assert broker.broker.supported_versions()[75] == (0, 0)


def test_every_topic_with_its_partitions_for_one_node(broker: RunningBroker) -> None:
    response = _describe(broker, [], limit=100)
    node = broker.broker.node_id
    assert [t.name for t in response.topics] == ["alpha", "beta"]
    alpha = response.topics[0]
    assert alpha.error_code is ErrorCode.none and not alpha.is_internal
    assert alpha.topic_id == broker.broker.partitions.get("alpha").topic_id  # type: ignore[union-attr]
    assert alpha.topic_authorized_operations == TOPIC_OPERATIONS
    assert [(p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes,
             p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) for p in alpha.partitions] == [
        (i, ErrorCode.none, node, 0, (node,), (node,), (), (), ()) for i in range(3)]
    # the broker's max.request.partition.size.limit (4) bounds the client's 100
    assert _pages(response) == ([("alpha", 0), ("alpha", 1), ("alpha", 2), ("beta", 0)], ("beta", 1))


def test_named_topics_sorted_and_unknown_ones_answered(broker: RunningBroker) -> None:
    response = _describe(broker, ["zeta", "beta", "bad name!", "beta"])
    assert [(t.name, t.error_code, t.partitions, t.topic_authorized_operations) for t in response.topics[:2]] == [
        ("bad name!", ErrorCode.invalid_topic_exception, (), TOPIC_OPERATIONS),
        ("beta", ErrorCode.none, response.topics[1].partitions, TOPIC_OPERATIONS)]
    assert len(response.topics[1].partitions) == 2
    zeta = response.topics[2]
    # the zero topic id, which kio reads as None
    assert (zeta.name, zeta.error_code, zeta.topic_id, zeta.partitions) == (
        "zeta", ErrorCode.unknown_topic_or_partition, None, ())
    assert response.next_cursor is None


def test_paging_with_the_cursor(broker: RunningBroker) -> None:
    """Kafka's ``getTopicMetadataForDescribeTopicResponse``: the cursor points at the first partition not answered;
    a limit used up at a topic's end points at the next topic's partition 0."""
    assert _pages(_describe(broker, [], limit=2)) == ([("alpha", 0), ("alpha", 1)], ("alpha", 2))
    assert _pages(_describe(broker, [], limit=2, cursor=("alpha", 2))) == ([("alpha", 2), ("beta", 0)], ("beta", 1))
    assert _pages(_describe(broker, [], limit=2, cursor=("beta", 1))) == ([("beta", 1)], None)
    assert _pages(_describe(broker, [], limit=3)) == ([("alpha", 0), ("alpha", 1), ("alpha", 2)], ("beta", 0))
    # a limit below 1 is 1; topics before the cursor's are left out, named or not
    assert _pages(_describe(broker, ["alpha", "beta"], limit=0, cursor=("beta", 0))) == ([("beta", 0)], ("beta", 1))
    # a cursor past the topic's partitions answers none of it
    assert _pages(_describe(broker, ["alpha", "beta"], cursor=("alpha", 9))) == ([("beta", 0), ("beta", 1)], None)


@pytest.mark.parametrize("cursor", [("gamma", 0), ("alpha", -1)], ids=["cursor-topic-not-named", "negative"])
def test_a_bad_cursor_is_invalid_request_for_each_topic(broker: RunningBroker, cursor: tuple[str, int]) -> None:
    """Kafka throws ``InvalidRequestException``, which ``getErrorResponse`` answers in every topic named."""
    request = DescribeTopicPartitionsRequest(topics=(TopicRequest(name="alpha"), TopicRequest(name="beta")),
                                             response_partition_limit=10,
                                             cursor=Cursor(topic_name=cursor[0], partition_index=cursor[1]))
    with WireClient(broker.bootstrap_servers) as client:
        _, response = client.request(request)
        _, again = client.request(DescribeTopicPartitionsRequest(topics=(), response_partition_limit=1, cursor=None))
    assert [(t.name, t.error_code, t.partitions) for t in response.topics] == [
        ("alpha", ErrorCode.invalid_request, ()), ("beta", ErrorCode.invalid_request, ())]
    assert again.topics[0].name == "alpha"


def test_kafka_python_describe_topic_partitions(broker: RunningBroker) -> None:
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        first = admin.describe_topic_partitions(["alpha", "beta"], response_partition_limit=2)
        rest = admin.describe_topic_partitions(["alpha", "beta"], cursor=first["next_cursor"])
    finally:
        admin.close()
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in first["topics"]] == [
        ("alpha", [0, 1])]
    assert first["next_cursor"] == {"topic_name": "alpha", "partition_index": 2}
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in rest["topics"]] == [
        ("alpha", [2]), ("beta", [0, 1])]
    assert rest["next_cursor"] is None
