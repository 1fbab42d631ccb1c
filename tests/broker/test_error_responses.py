"""A handler that fails answers its request (kafkalog.broker.error_responses, Kafka's ``getErrorResponse``): the API's
own response with UNKNOWN_SERVER_ERROR (-1) in each item the request named, the error logged with its traceback, and
the connection kept -- except for a produce with acks=0, whose connection Kafka closes.

The in-process broker's handler of one API is replaced by one that raises; the request is sent raw
(tests.support.kafka_wire) and the next request on the same connection must be answered.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader
from kio.serial._implicit_defaults import get_implicit_default
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field

from kafkalog.broker import RunningBroker, serve
from kafkalog.broker.error_responses import ApiError, error_response
from kafkalog.broker.kio_values import kafka_data
from kafkalog.broker.protocol import API_VERSIONS_KEY, ApiKey, encode_response
from kafkalog.errors import KafkaStorageError
from tests.support.kafka_wire import WireClient

TOPIC = "failing"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    with serve(tmp_path_factory.mktemp("error-responses"),
               config={"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
                       "group.initial.rebalance.delay.ms": "0"}) as running:
        running.create_topic(TOPIC, 2)
        yield running


class Boom(RuntimeError):
    """What the replaced handler raises."""


@pytest.fixture
def failing(broker: RunningBroker, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``failing(api_key)`` makes the broker's handler of ``api_key`` raise, for this test."""
    def fail(api_key: int) -> None:
        lo, hi, _ = broker.broker._handlers[api_key]

        async def boom(ctx: Any, request: Any) -> Any:
            raise Boom("a handler's bug")
        monkeypatch.setitem(broker.broker._handlers, api_key, (lo, hi, boom))
    return fail


def _then_answered(client: WireClient) -> None:
    """The connection still serves: an ApiVersions after the failed request is answered."""
    _, answer = client.request(ApiVersionsRequest(client_software_name="test", client_software_version="1"))
    assert answer.error_code is ErrorCode.none


def _codes(entity: Any) -> list[ErrorCode]:
    """Every error code in a response, depth first."""
    found = []
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if isinstance(value, ErrorCode):
            found.append(value)
        elif dataclasses.is_dataclass(value):
            found.extend(_codes(value))
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    found.extend(_codes(item))
    return found


def test_produce_answers_each_partition(broker: RunningBroker, failing: Any,
                                        caplog: pytest.LogCaptureFixture) -> None:
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
    failing(ApiKey.PRODUCE)
    request = ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(
        TopicProduceData(name=TOPIC, partition_data=(PartitionProduceData(index=0, records=b""),
                                                     PartitionProduceData(index=1, records=b""))),
        TopicProduceData(name="other", partition_data=(PartitionProduceData(index=0, records=b""),))))
    with caplog.at_level(logging.ERROR, logger="kafkalog.broker.server"), WireClient(broker.bootstrap_servers) as c:
        _, response = c.request(request)
        _then_answered(c)
    got = {(t.name, p.index): (p.error_code, p.base_offset, p.log_start_offset, p.error_message)
           for t in response.responses for p in t.partition_responses}
    assert got == {(TOPIC, 0): (ErrorCode.unknown_server_error, -1, -1, None),
                   (TOPIC, 1): (ErrorCode.unknown_server_error, -1, -1, None),
                   ("other", 0): (ErrorCode.unknown_server_error, -1, -1, None)}
    logged = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert logged and isinstance(logged[0].exc_info[1], Boom)  # type: ignore[index]


def test_produce_with_acks_0_closes_the_connection(broker: RunningBroker, failing: Any) -> None:
    """Kafka: ``getErrorResponse`` of an acks=0 produce is null, and ``sendErrorOrCloseConnection`` closes."""
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
    failing(ApiKey.PRODUCE)
    request = ProduceRequest(transactional_id=None, acks=0, timeout=datetime.timedelta(seconds=5), topic_data=(
        TopicProduceData(name=TOPIC, partition_data=(PartitionProduceData(index=0, records=b""),)),))
    with WireClient(broker.bootstrap_servers) as c:
        c.send_raw(c.frame(request))
        assert c.closed_by_peer()


@pytest.mark.parametrize("version", [12, 13])
def test_fetch_answers_each_partition_before_v13_and_the_top_level_code(broker: RunningBroker, failing: Any,
                                                                        version: int) -> None:
    failing(ApiKey.FETCH)
    module = f"kio.schema.fetch.v{version}.request"
    types = __import__(module, fromlist=["FetchRequest", "FetchTopic", "FetchPartition"])
    topic_id = broker.broker.partitions.get(TOPIC).topic_id  # type: ignore[union-attr]
    topic = types.FetchTopic(**({"topic": TOPIC} if version < 13 else {"topic_id": topic_id}), partitions=tuple(
        types.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1024) for p in (0, 1)))
    request = types.FetchRequest(max_wait=datetime.timedelta(0), min_bytes=1, session_id=7, topics=(topic,),
                                 forgotten_topics_data=(), rack_id="")
    with WireClient(broker.bootstrap_servers) as c:
        _, response = c.request(request)
        _then_answered(c)
    assert response.error_code is ErrorCode.unknown_server_error
    assert response.session_id == 7
    if version < 13:
        assert [(t.topic, p.partition_index, p.error_code, p.high_watermark) for t in response.responses
                for p in t.partitions] == [(TOPIC, 0, ErrorCode.unknown_server_error, -1),
                                           (TOPIC, 1, ErrorCode.unknown_server_error, -1)]
    else:
        assert response.responses == ()


def test_metadata_answers_each_topic_named(broker: RunningBroker, failing: Any) -> None:
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
    failing(ApiKey.METADATA)
    request = MetadataRequest(topics=(MetadataRequestTopic(name=TOPIC, topic_id=None),
                                      MetadataRequestTopic(name="absent", topic_id=None)),
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    with WireClient(broker.bootstrap_servers) as c:
        _, response = c.request(request)
        _then_answered(c)
        _, everything = c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                  include_topic_authorized_operations=False))
        _then_answered(c)
    assert [(t.name, t.error_code, t.partitions, t.is_internal) for t in response.topics] == [
        (TOPIC, ErrorCode.unknown_server_error, (), False), ("absent", ErrorCode.unknown_server_error, (), False)]
    assert response.brokers == () and everything.topics == ()


def test_offset_commit_answers_each_partition(broker: RunningBroker, failing: Any) -> None:
    from kio.schema.offset_commit.v8.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )
    failing(ApiKey.OFFSET_COMMIT)
    request = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="",
                                  group_instance_id=None, topics=(OffsetCommitRequestTopic(name=TOPIC, partitions=(
                                      OffsetCommitRequestPartition(partition_index=0, committed_offset=3,
                                                                   committed_leader_epoch=-1,
                                                                   committed_metadata=""),
                                      OffsetCommitRequestPartition(partition_index=1, committed_offset=4,
                                                                   committed_leader_epoch=-1,
                                                                   committed_metadata=""))),))
    with WireClient(broker.bootstrap_servers) as c:
        _, response = c.request(request)
        _then_answered(c)
    assert [(t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions] == [
        (TOPIC, 0, ErrorCode.unknown_server_error), (TOPIC, 1, ErrorCode.unknown_server_error)]


def test_join_group_answers_no_generation(broker: RunningBroker, failing: Any) -> None:
    from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
    failing(ApiKey.JOIN_GROUP)
    request = JoinGroupRequest(group_id="g", session_timeout=datetime.timedelta(seconds=10),
                               rebalance_timeout=datetime.timedelta(seconds=10), member_id="",
                               group_instance_id=None, protocol_type="consumer",
                               protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),), reason=None)
    with WireClient(broker.bootstrap_servers) as c:
        _, response = c.request(request)
        _then_answered(c)
    assert (response.error_code, response.generation_id, response.protocol_name, response.leader,
            response.member_id, response.members) == (ErrorCode.unknown_server_error, -1, None, "", "", ())


def test_create_topics_answers_each_topic_with_the_message_of_a_known_error(broker: RunningBroker,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An error Kafka has a code for is answered with that code and the exception's text (``ApiError``)."""
    from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
    lo, hi, _ = broker.broker._handlers[ApiKey.CREATE_TOPICS]

    async def offline(ctx: Any, request: Any) -> Any:
        raise KafkaStorageError("the log directory is offline")
    monkeypatch.setitem(broker.broker._handlers, ApiKey.CREATE_TOPICS, (lo, hi, offline))
    request = CreateTopicsRequest(topics=tuple(
        CreatableTopic(name=name, num_partitions=1, replication_factor=1, assignments=(), configs=())
        for name in ("a", "b")), timeout=datetime.timedelta(seconds=5), validate_only=False)
    with WireClient(broker.bootstrap_servers) as c:
        _, response = c.request(request)
        _then_answered(c)
    assert [(t.name, t.error_code, t.error_message, t.num_partitions) for t in response.topics] == [
        ("a", ErrorCode.kafka_storage_error, "the log directory is offline", -1),
        ("b", ErrorCode.kafka_storage_error, "the log directory is offline", -1)]


def test_describe_configs_carries_the_codes_own_message(broker: RunningBroker, failing: Any) -> None:
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
    failing(ApiKey.DESCRIBE_CONFIGS)
    request = DescribeConfigsRequest(resources=(DescribeConfigsResource(resource_type=2, resource_name=TOPIC,
                                                                        configuration_keys=None),),
                                     include_synonyms=False, include_documentation=False)
    with WireClient(broker.bootstrap_servers) as c:
        _, response = c.request(request)
        _then_answered(c)
    [result] = response.results
    assert (result.error_code, result.error_message, result.resource_name, result.configs) == (
        ErrorCode.unknown_server_error, "The server experienced an unexpected error when processing the request.",
        TOPIC, ())


# -- every API the broker answers ---------------------------------------------------------------------------------

def _sample(cls: type) -> Any:
    """A request of ``cls`` naming one of everything: each array holds one item, each at Kafka's defaults."""
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        kind = classify_field(field)
        if isinstance(kind, EntityTupleField):
            fields[field.name] = (_sample(kind.type_),)
        elif isinstance(kind, PrimitiveTupleField):
            inner = typing.get_args(kind.type_) or (kind.type_,)
            fields[field.name] = (get_implicit_default(inner[0]),)
        elif isinstance(kind, EntityField):
            fields[field.name] = _sample(kind.type_)
    return kafka_data(cls, **fields)


def _answered_versions() -> list[tuple[int, int]]:
    with serve(config={"offsets.topic.num.partitions": "1"}) as running:
        ranges = running.broker.supported_versions()
    return [(key, version) for key, (lo, hi) in ranges.items() if key != API_VERSIONS_KEY
            for version in sorted({lo, hi})]


@pytest.mark.parametrize(("api_key", "version"), _answered_versions())
def test_every_api_has_a_writable_error_response(api_key: int, version: int) -> None:
    request = _sample(load_request_schema(api_key, version))
    if api_key == ApiKey.PRODUCE:
        request = dataclasses.replace(request, acks=-1)
    response = error_response(api_key, version, request, Boom("x"))
    frame = encode_response(api_key, version, 1, response)
    cls = load_response_schema(api_key, version)
    start = 4 + 4 + (1 if cls.__flexible__ else 0)
    decoded, read = entity_reader(cls)(frame, start)
    assert start + read == len(frame)
    if api_key == ApiKey.DESCRIBE_LOG_DIRS and version < 3:
        # Kafka's DescribeLogDirs error response sets only the top-level code, which v0-v2 have not got: no results
        assert decoded.results == ()
    else:
        assert ErrorCode.unknown_server_error in _codes(decoded)
    assert set(_codes(decoded)) <= {ErrorCode.unknown_server_error, ErrorCode.none}


def test_api_error_is_kafkas() -> None:
    """``ApiError.fromThrowable``: no message for UNKNOWN_SERVER_ERROR; the exception's text otherwise."""
    assert ApiError.from_exception(Boom("secret detail")) == ApiError(ErrorCode.unknown_server_error, None)
    assert ApiError.from_exception(KafkaStorageError("disk")) == ApiError(ErrorCode.kafka_storage_error, "disk")
