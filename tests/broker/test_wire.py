"""The broker on the wire (kafkalog.broker.server): Kafka's framing and version rules, requests answered in order,
and bad input answered as Kafka answers it (an error code, or the connection closed) while everyone else is served.

Each test speaks the protocol itself (tests.support.kafka_wire) against a broker started on 127.0.0.1 for the module.
"""

from __future__ import annotations

import datetime
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from kafkalog.broker import RunningBroker, serve
from kafkalog.record import MemoryRecords
from tests.support.kafka_wire import WireClient


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("wire"), config={"socket.request.max.bytes": "1048576",
                                                         "socket.listen.backlog.size": "1024",
                                                         "group.initial.rebalance.delay.ms": "0",
                                                         "offsets.topic.num.partitions": "1",
                                                         "transaction.state.log.num.partitions": "1"}) as running:
        yield running


def _api_versions(version: int = 3) -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="wire-test", client_software_version="1.0")


def _batch(*values: bytes) -> bytes:
    return bytes(MemoryRecords.with_records([(None, v) for v in values]).buffer)


def _produce(topic: str, records: bytes, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=10), topic_data=(
        TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=0, records=records),)),))


def _fetch(topic: str, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 1) -> FetchRequest:
    return FetchRequest(max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=min_bytes,
                        max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                        topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
                            partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                            log_start_offset=-1, partition_max_bytes=1 << 20),)),),
                        forgotten_topics_data=(), rack_id="")


def test_api_versions_lists_every_api_answered(broker: RunningBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        correlation, response = client.request(_api_versions())
    assert correlation == 1
    assert response.error_code == ErrorCode.none
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges[18] == (0, 4)
    assert ranges[0] == (3, 12) and ranges[1] == (4, 17) and ranges[3] == (0, 12)


def test_an_unknown_api_versions_version_gets_a_v0_answer_with_the_ranges(broker: RunningBroker) -> None:
    """KIP-511: a version the broker does not know is answered at v0 with UNSUPPORTED_VERSION and the ranges, and
    the answer's header has no tagged fields (ApiVersions' response header is always v0)."""
    with WireClient(broker.bootstrap_servers) as client:
        # a header v2 (flexible) request of ApiVersions v99, with a body the broker must not try to read
        body = struct.pack(">hhi", 18, 99, 42) + struct.pack(">h", 4) + b"test" + b"\x00" + b"\xde\xad"
        client.send_raw(struct.pack(">i", len(body)) + body)
        data = client.read_frame()
    assert struct.unpack_from(">i", data, 0)[0] == 42
    from kio.serial import entity_reader
    response, size = entity_reader(ApiVersionsResponseV0)(data, 4)
    assert size == len(data) - 4  # nothing but the v0 body after the correlation id
    assert response.error_code == ErrorCode.unsupported_version
    assert any(k.api_key == 18 for k in response.api_keys)


def test_requests_are_answered_in_order(broker: RunningBroker) -> None:
    broker.create_topic("ordered")
    with WireClient(broker.bootstrap_servers) as client:
        frames = [client.frame(_api_versions()), client.frame(MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name="ordered"),), allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)), client.frame(_produce("ordered", _batch(b"a")))]
        client.send_raw(b"".join(frames))  # pipelined, as a producer with several requests in flight sends them
        assert client.read_response(18, 3)[0] == 1
        correlation, metadata = client.read_response(3, 12)
        assert correlation == 2 and metadata.topics[0].name == "ordered"
        correlation, produced = client.read_response(0, 9)
        assert correlation == 3
        assert produced.responses[0].partition_responses[0].base_offset == 0


def test_acks_zero_gets_no_answer_and_the_records_are_written(broker: RunningBroker) -> None:
    broker.create_topic("acks0")
    with WireClient(broker.bootstrap_servers) as client:
        client.send_raw(client.frame(_produce("acks0", _batch(b"x", b"y"), acks=0)))
        correlation, _ = client.request(_api_versions())
        assert correlation == 2  # the next frame on the connection answers the second request
        _, fetched = client.request(_fetch("acks0", 0))
    records = MemoryRecords(fetched.responses[0].partitions[0].records)
    assert [r.value for r in records.records()] == [b"x", b"y"]


def test_produce_errors_are_kafkas(broker: RunningBroker) -> None:
    broker.create_topic("errors")
    with WireClient(broker.bootstrap_servers) as client:
        _, bad_acks = client.request(_produce("errors", _batch(b"x"), acks=2))
        _, unknown = client.request(_produce("no-such-topic", _batch(b"x")))
        _, two = client.request(_produce("errors", _batch(b"a") + _batch(b"b")))
        _, internal = client.request(_produce("__consumer_offsets", _batch(b"a")))
    assert bad_acks.responses[0].partition_responses[0].error_code == ErrorCode.invalid_required_acks
    assert unknown.responses[0].partition_responses[0].error_code == ErrorCode.unknown_topic_or_partition
    answer = two.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.invalid_record
    # Kafka's KafkaApis answers ProduceRequest.validateRecords' refusal with the code alone (no error message): a
    # real 4.4 broker does too (tests/oracle/broker/test_client_scenarios.py, raw_produce_mistakes)
    assert answer.error_message is None
    assert internal.responses[0].partition_responses[0].error_code in (ErrorCode.unknown_topic_or_partition,
                                                                        ErrorCode.invalid_topic_exception)


def test_a_corrupt_batch_is_corrupt_message(broker: RunningBroker) -> None:
    broker.create_topic("corrupt")
    batch = bytearray(_batch(b"payload"))
    batch[-1] ^= 0xFF  # the CRC covers it
    with WireClient(broker.bootstrap_servers) as client:
        _, answer = client.request(_produce("corrupt", bytes(batch)))
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.corrupt_message


def test_a_fetch_waits_for_records_then_returns_them(broker: RunningBroker) -> None:
    broker.create_topic("longpoll")
    with WireClient(broker.bootstrap_servers) as consumer, WireClient(broker.bootstrap_servers) as producer:
        consumer.send_raw(consumer.frame(_fetch("longpoll", 0, max_wait_ms=5000)))
        time.sleep(0.2)
        started = time.monotonic()
        producer.request(_produce("longpoll", _batch(b"late")))
        _, fetched = consumer.read_response(1, 12)
        waited = time.monotonic() - started
    assert waited < 2.0  # woken by the append, not by max_wait
    partition = fetched.responses[0].partitions[0]
    assert partition.high_watermark == 1
    assert [r.value for r in MemoryRecords(partition.records).records()] == [b"late"]


def test_a_fetch_with_nothing_to_read_answers_after_max_wait(broker: RunningBroker) -> None:
    broker.create_topic("quiet")
    with WireClient(broker.bootstrap_servers) as client:
        started = time.monotonic()
        _, fetched = client.request(_fetch("quiet", 0, max_wait_ms=300))
        waited = time.monotonic() - started
    assert 0.25 <= waited < 3.0
    assert fetched.responses[0].partitions[0].records in (b"", None)


def test_fetch_out_of_range_and_unknown_topic(broker: RunningBroker) -> None:
    broker.create_topic("range")
    with WireClient(broker.bootstrap_servers) as client:
        _, fetched = client.request(_fetch("range", 5))
        _, unknown = client.request(_fetch("nope", 0))
    assert fetched.responses[0].partitions[0].error_code == ErrorCode.offset_out_of_range
    assert unknown.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("frame", [
    pytest.param(struct.pack(">i", 2**31 - 1), id="a 2 GiB frame"),
    pytest.param(struct.pack(">i", -5), id="a negative size"),
    pytest.param(struct.pack(">i", 8) + struct.pack(">hhi", 999, 0, 1), id="an unknown api key"),
    pytest.param(struct.pack(">i", 8) + struct.pack(">hhi", 3, 99, 1), id="an unsupported version"),
    pytest.param(struct.pack(">i", 3) + b"\x00\x03\x00", id="a header cut short"),
    pytest.param(struct.pack(">i", 14) + struct.pack(">hhih", 3, 12, 1, -1) + b"\x00" + b"\x7f\x7f\x7f",
                 id="a body that does not read"),
])
def test_bad_frames_close_the_connection_and_others_are_served(broker: RunningBroker, frame: bytes) -> None:
    with WireClient(broker.bootstrap_servers) as bystander, WireClient(broker.bootstrap_servers) as client:
        client.send_raw(frame)
        assert client.closed_by_peer()
        assert bystander.request(_api_versions())[1].error_code == ErrorCode.none


def test_a_client_killed_mid_request_and_a_thousand_connections(broker: RunningBroker) -> None:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    half = socket.create_connection((host, int(port)))
    half.sendall(struct.pack(">i", 100) + b"\x00\x12")  # a frame announced, two bytes sent, then gone
    half.close()
    sockets = [socket.create_connection((host, int(port))) for _ in range(1000)]
    try:
        with WireClient(broker.bootstrap_servers) as client:
            assert client.request(_api_versions())[1].error_code == ErrorCode.none
    finally:
        for s in sockets:
            s.close()


def test_a_slow_reader_holds_up_only_itself(broker: RunningBroker) -> None:
    broker.create_topic("slow", config={"max.message.bytes": "2000000"})
    with WireClient(broker.bootstrap_servers) as writer:
        big = _batch(b"z" * 900_000)
        writer.request(_produce("slow", big))
    slow = WireClient(broker.bootstrap_servers)
    slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        # twenty large fetches sent, none read: the broker's writes to this socket back up
        slow.send_raw(b"".join(slow.frame(_fetch("slow", 0)) for _ in range(20)))
        done = threading.Event()

        def other() -> None:
            with WireClient(broker.bootstrap_servers) as client:
                client.request(_api_versions())
                done.set()
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(10)
        assert done.is_set()
    finally:
        slow.close()


def test_request_memory_is_bounded_across_connections(tmp_path_factory: pytest.TempPathFactory) -> None:
    """queued.max.request.bytes: six clients each sending a 400 kB produce at once, with 1 MB for all requests
    together: every request is answered, and never more than 1 MB (or one request alone) is held."""
    with serve(tmp_path_factory.mktemp("pool"), config={"queued.max.request.bytes": "1000000",
                                                          "message.max.bytes": "2000000",
                                                          "offsets.topic.num.partitions": "1",
                                                          "transaction.state.log.num.partitions": "1"}) as running:
        running.create_topic("pooled")
        clients = [WireClient(running.bootstrap_servers) for _ in range(6)]
        try:
            batch = _batch(b"p" * 400_000)
            for client in clients:
                client.send_raw(client.frame(_produce("pooled", batch)))
            answers = [client.read_response(0, 9)[1] for client in clients]
        finally:
            for client in clients:
                client.close()
        assert all(a.responses[0].partition_responses[0].error_code == ErrorCode.none for a in answers)
        pool = running.broker._request_memory
        assert 400_000 < pool.peak <= 1_000_000
        assert pool.in_use == 0
