"""The leader epoch of each partition (kafkalog.broker.partitions.leader_epoch): assigned in the partition's
leader-epoch cache when the broker starts leading it (Kafka's ``Partition.makeLeader``), so OffsetForLeaderEpoch
answers an empty partition; and a log another broker wrote goes on in that broker's latest epoch, its history kept."""

from __future__ import annotations

from pathlib import Path

from kio.schema.errors import ErrorCode
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)

from kafkalog.broker import serve
from kafkalog.config import LogConfig
from kafkalog.log import Log
from kafkalog.record import MemoryRecords
from tests.support.kafka_wire import WireClient

SMALL = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}


def _end_of_epoch(bootstrap: str, topic: str, epoch: int, current: int = -1) -> tuple[ErrorCode, int, int]:
    request = OffsetForLeaderEpochRequest(replica_id=-1, topics=(OffsetForLeaderTopic(topic=topic, partitions=(
        OffsetForLeaderPartition(partition=0, current_leader_epoch=current, leader_epoch=epoch),)),))
    with WireClient(bootstrap) as client:
        _, response = client.request(request)
    answer = response.topics[0].partitions[0]
    return answer.error_code, answer.leader_epoch, answer.end_offset


def test_an_empty_partition_answers_its_epoch(tmp_path: Path) -> None:
    """Kafka answers epoch 0 ending at 0 for a partition nothing was written to."""
    with serve(tmp_path, config=SMALL) as broker:
        broker.create_topic("empty")
        assert _end_of_epoch(broker.bootstrap_servers, "empty", 0) == (ErrorCode.none, 0, 0)
        assert _end_of_epoch(broker.bootstrap_servers, "empty", 0, current=1)[0] == ErrorCode.unknown_leader_epoch


def test_a_log_another_broker_wrote_keeps_its_epochs(tmp_path: Path) -> None:
    log = Log(tmp_path / "elsewhere-0", LogConfig())
    for epoch, values in ((3, [b"a", b"b"]), (5, [b"c"])):
        log.append(MemoryRecords.with_records([(None, v) for v in values], partition_leader_epoch=epoch),
                   leader_epoch=epoch)
    log.close()
    with serve(tmp_path, config=SMALL) as broker:
        bootstrap = broker.bootstrap_servers
        from confluent_kafka import Producer
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce("elsewhere", value=b"d")
        assert producer.flush(10) == 0
        assert _end_of_epoch(bootstrap, "elsewhere", 3) == (ErrorCode.none, 3, 2)
        assert _end_of_epoch(bootstrap, "elsewhere", 5) == (ErrorCode.none, 5, 4)
        assert _end_of_epoch(bootstrap, "elsewhere", 5, current=0)[0] == ErrorCode.fenced_leader_epoch
        log = broker.call(lambda: broker.broker.partitions.log("elsewhere", 0))
        batches = broker.call(lambda: list(log.read(0, 1 << 20).records.batches()))
        assert [b.partition_leader_epoch for b in batches] == [3, 5, 5]
