"""What one node answers about replicas (kafkalog.broker.replicas): leader elections, partition reassignments and
the data directories, through kafka-python's and confluent-kafka's admin clients."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalog.broker import RunningBroker, serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("replicas"), config={"offsets.topic.num.partitions": "1"}) as running:
        running.create_topic("moved", 2)
        yield running


def test_elect_leaders_is_never_needed(broker: RunningBroker) -> None:
    import confluent_kafka as ck
    from confluent_kafka import ElectionType
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    future = admin.elect_leaders(ElectionType.PREFERRED, [ck.TopicPartition("moved", 0),
                                                          ck.TopicPartition("missing", 0)])
    results = future.result(10)
    by_partition = {(tp.topic, tp.partition): tp.error for tp in results}
    assert by_partition[("moved", 0)].code() == ck.KafkaError.ELECTION_NOT_NEEDED
    assert by_partition[("missing", 0)].code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART


def test_reassignments_to_this_node_only(broker: RunningBroker) -> None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        node = broker.broker.node_id
        assert admin.list_partition_reassignments() == {}
        moved0, moved1 = TopicPartition("moved", 0), TopicPartition("moved", 1)
        assert admin.alter_partition_reassignments({moved0: [node]}) == {moved0: None}
        assert admin.alter_partition_reassignments({moved1: [node, node + 1]}) == {
            moved1: InvalidReplicationAssignmentError}
        assert admin.alter_partition_reassignments({moved1: None}) == {moved1: NoReassignmentInProgressError}
    finally:
        admin.close()


def test_describe_log_dirs(broker: RunningBroker) -> None:
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        described = admin.describe_log_dirs()
    finally:
        admin.close()
    text = repr(described)
    assert str(broker.log_dirs[0]) in text and "moved" in text
