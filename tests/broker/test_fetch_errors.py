"""What a Fetch answers for a partition it cannot read, or not whole: Kafka's ``ReplicaManager.createLogReadResult(e)``
(3.8.0), the error with no offsets (-1) and an empty record set; and ``checkFetchDataInfo``, nothing rather than
part of a batch; as a real Kafka 4.4 broker answers the same requests (tests/oracle/broker/test_client_scenarios.py,
``fetch_out_of_range`` and ``raw_fetch_limits``)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

from kafkalog.broker import RunningBroker, serve
from kafkalog.record import MemoryRecords
from tests.support.kafka_wire import WireClient


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("fetch-errors")) as running:
        running.create_topic("five")
        log = running.call(lambda: running.broker.partitions.log("five", 0))
        running.call(lambda: running.broker.partitions.append(
            log, MemoryRecords.with_records([(None, b"%d" % i) for i in range(5)])))
        running.create_topic("two", 2)
        for p in range(2):
            log = running.call(lambda p=p: running.broker.partitions.log("two", p))
            running.call(lambda log=log: running.broker.partitions.append(
                log, MemoryRecords.with_records([(None, b"v" * 100)])))
        yield running


def _fetch(broker: RunningBroker, partition: int, offset: int) -> tuple[object, ...]:
    request = FetchRequest(max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, topics=(FetchTopic(topic="five", partitions=(
                               FetchPartition(partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                              last_fetched_epoch=-1, log_start_offset=-1,
                                              partition_max_bytes=1 << 20),)),),
                           forgotten_topics_data=(), rack_id="")
    with WireClient(broker.bootstrap_servers) as client:
        _, response = client.request(request)
    p = response.responses[0].partitions[0]
    return p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset, p.records


@pytest.mark.parametrize("offset", [6, 50, -5])
def test_an_offset_out_of_range_is_answered_without_offsets(broker: RunningBroker, offset: int) -> None:
    """Kafka: ``ReplicaManager.handleOffsetOutOfRangeError`` without tiered storage is ``createLogReadResult(e)``:
    high watermark, last stable offset and log start offset unknown (-1), no records."""
    assert _fetch(broker, 0, offset) == (ErrorCode.offset_out_of_range, -1, -1, -1, b"")


def test_the_end_offset_is_in_range(broker: RunningBroker) -> None:
    assert _fetch(broker, 0, 5) == (ErrorCode.none, 5, 5, 0, b"")


def test_an_unknown_partition_is_answered_with_empty_records(broker: RunningBroker) -> None:
    """An empty record set, not a null one: librdkafka reads a null record set (size -1) as a broken response."""
    assert _fetch(broker, 3, 0) == (ErrorCode.unknown_topic_or_partition, -1, -1, -1, b"")


def test_a_batch_cut_short_is_not_sent(broker: RunningBroker) -> None:
    """The first partition's batch comes whole whatever the limits (KIP-74); the second's does not fit its
    partition limit, and Kafka sends none of it (``checkFetchDataInfo``, fetch v3+), where the segment read gave
    its first bytes."""
    request = FetchRequest(max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20, isolation_level=1,
                           session_id=0, session_epoch=-1, topics=(FetchTopic(topic="two", partitions=tuple(
                               FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0,
                                              last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=10)
                               for p in range(2))),),
                           forgotten_topics_data=(), rack_id="")
    with WireClient(broker.bootstrap_servers) as client:
        _, response = client.request(request)
    first, second = response.responses[0].partitions
    assert [r.value for r in MemoryRecords(first.records).records()] == [b"v" * 100]
    assert first.aborted_transactions == ()
    assert (second.error_code, second.high_watermark, second.records) == (ErrorCode.none, 1, b"")
    assert second.aborted_transactions is None  # the emptied read has none, as Kafka's EMPTY FetchDataInfo
