"""What a Produce answers for a partition it refuses, as Kafka 3.8's ``KafkaApis.handleProduceRequest`` and
``ReplicaManager.appendRecords``/``appendToLocalLog`` do (a real Kafka 4.4 broker answers the same,
tests/oracle/broker/test_client_scenarios.py, ``raw_produce_mistakes`` and ``raw_idempotent_producer``): which check
comes first, when the partition's log start offset is given, and when an error message is."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from kafkalog.broker import RunningBroker, serve
from kafkalog.record import MemoryRecords
from tests.support.kafka_wire import WireClient

TOPIC = "refusing"
PRODUCER_ID = 4000


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("produce-errors")) as running:
        running.create_topic(TOPIC, config={"max.message.bytes": "2000", "message.timestamp.after.max.ms": "60000"})
        yield running


def _batch(*values: bytes, ts: int | None = None, sequence: int = -1) -> bytes:
    now = int(time.time() * 1000) if ts is None else ts
    kwargs = {} if sequence < 0 else {"producer_id": PRODUCER_ID, "producer_epoch": 0, "base_sequence": sequence}
    return bytes(MemoryRecords.with_records([(None, v, now) for v in values], **kwargs).buffer)  # type: ignore[arg-type]


def _produce(broker: RunningBroker, records: bytes, *, partition: int = 0, acks: int = -1,
             topic: str = TOPIC) -> tuple[object, ...]:
    request = ProduceRequest(transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=5), topic_data=(
        TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=partition, records=records),)),))
    with WireClient(broker.bootstrap_servers) as client:
        _, response = client.request(request)
    p = response.responses[0].partition_responses[0]
    return p.error_code, p.base_offset, p.log_start_offset, p.error_message is not None


def test_an_unknown_partition_is_found_before_bad_acks(broker: RunningBroker) -> None:
    """KafkaApis answers an unknown partition before ReplicaManager looks at ``acks``."""
    assert _produce(broker, _batch(b"x"), partition=3, acks=2) == (ErrorCode.unknown_topic_or_partition, -1, -1,
                                                                    False)


def test_records_that_are_not_one_batch_are_found_before_bad_acks(broker: RunningBroker) -> None:
    assert _produce(broker, _batch(b"x") + _batch(b"y"), acks=2) == (ErrorCode.invalid_record, -1, -1, False)


def test_bad_acks_alone(broker: RunningBroker) -> None:
    assert _produce(broker, _batch(b"x"), acks=2) == (ErrorCode.invalid_required_acks, -1, -1, False)


@pytest.mark.parametrize(("records", "code"), [
    pytest.param(_batch(b"x" * 5000), ErrorCode.message_too_large, id="too-large"),
    pytest.param(_batch(b"x") + _batch(b"y"), ErrorCode.invalid_record, id="two-batches"),
])
def test_errors_kafka_does_not_explain_have_no_message_and_no_log_start(broker: RunningBroker, records: bytes,
                                                                      code: ErrorCode) -> None:
    assert _produce(broker, records) == (code, -1, -1, False)


def test_an_internal_topic_has_no_message(broker: RunningBroker) -> None:
    broker.call(lambda: broker.broker.partitions.ensure_internal_topic("__consumer_offsets", 1, {}))
    assert _produce(broker, _batch(b"x"), topic="__consumer_offsets") == (ErrorCode.invalid_topic_exception, -1,
                                                                          -1, False)


def test_a_refused_timestamp_has_the_log_start_offset_and_a_message(broker: RunningBroker) -> None:
    """Kafka: a ``RecordValidationException`` carries the partition's log start offset and its message."""
    future = int(time.time() * 1000) + 3_600_000
    assert _produce(broker, _batch(b"x", ts=future)) == (ErrorCode.invalid_timestamp, -1, 0, True)


def test_a_sequence_gap_has_the_log_start_offset_and_no_message(broker: RunningBroker) -> None:
    assert _produce(broker, _batch(b"a", b"b", sequence=0))[0] is ErrorCode.none
    assert _produce(broker, _batch(b"c", sequence=7)) == (ErrorCode.out_of_order_sequence_number, -1, 0, False)


def _then_api_versions(broker: RunningBroker, records: bytes, partition: int) -> str:
    """A Produce with acks=0 (no answer), then an ApiVersions on the same connection: answered, or closed."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest
    request = ProduceRequest(transactional_id=None, acks=0, timeout=datetime.timedelta(seconds=5), topic_data=(
        TopicProduceData(name=TOPIC, partition_data=(PartitionProduceData(index=partition, records=records),)),))
    with WireClient(broker.bootstrap_servers) as client:
        client.send_raw(client.frame(request))
        try:
            client.request(ApiVersionsRequest(client_software_name="test", client_software_version="1"))
        except ConnectionError:
            return "closed"
    return "open"


def test_a_failed_acks_0_produce_closes_the_connection(broker: RunningBroker) -> None:
    """Kafka: ``KafkaApis.handleProduceRequest`` closes the connection of an acks=0 produce that failed anywhere,
    since the client reads no answer and would not know otherwise."""
    assert _then_api_versions(broker, _batch(b"x"), partition=3) == "closed"
    assert _then_api_versions(broker, _batch(b"x" * 5000), partition=0) == "closed"


def test_a_good_acks_0_produce_keeps_the_connection(broker: RunningBroker) -> None:
    assert _then_api_versions(broker, _batch(b"x"), partition=0) == "open"
