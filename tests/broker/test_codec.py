"""The broker's request reader (kafkalog.broker.codec): what kio's writer writes it reads back, and bytes that do
not read as the message fail with MalformedRequestError, within the bytes they came in (never an allocation from a
count the bytes cannot hold)."""

from __future__ import annotations

import datetime
import io
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_writer
from kio.static.primitive import Records

from kafkalog.broker import Broker
from kafkalog.broker.codec import MalformedRequestError, entity_reader, read_unsigned_varint
from kafkalog.broker.protocol import kio_versions


def _bytes(entity: object) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def test_reads_back_what_kio_writes() -> None:
    produce = ProduceRequest(transactional_id="tx", acks=-1, timeout=datetime.timedelta(seconds=30), topic_data=(
        TopicProduceData(name="t", partition_data=(PartitionProduceData(index=0, records=b"\x00" * 70),
                                                   PartitionProduceData(index=1, records=None))),))
    metadata = MetadataRequest(topics=(MetadataRequestTopic(topic_id=uuid.uuid4(), name="a"),
                                       MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=None)),
                               allow_auto_topic_creation=False, include_topic_authorized_operations=True)
    header = RequestHeader(request_api_key=3, request_api_version=12, correlation_id=-5, client_id=None)
    for entity in (produce, metadata, header):
        data = _bytes(entity)
        read, end = entity_reader(type(entity))(data + b"trailing", 0)
        assert read == entity
        assert end == len(data)


def test_fetch_request_tagged_fields_read_and_unknown_ones_skipped() -> None:
    fetch = FetchRequest(cluster_id="abc", max_wait=datetime.timedelta(milliseconds=500), min_bytes=1,
                         max_bytes=1024, isolation_level=1, session_id=0, session_epoch=-1,
                         topics=(FetchTopic(topic="t", partitions=(FetchPartition(
                             partition=0, current_leader_epoch=0, fetch_offset=5, last_fetched_epoch=-1,
                             log_start_offset=-1, partition_max_bytes=100),)),),
                         forgotten_topics_data=(), rack_id="")
    data = bytearray(_bytes(fetch))
    assert entity_reader(FetchRequest)(bytes(data))[0] == fetch
    # the top-level tagged fields end the request: one field, tag 0 (cluster_id), 4 bytes, the compact string "abc";
    # one more, an unknown tag 7 of 2 bytes, is skipped
    assert data.endswith(b"\x01\x00\x04\x04abc")
    count_at = len(data) - 7
    data[count_at] = 2
    data += b"\x07\x02zz"
    assert entity_reader(FetchRequest)(bytes(data))[0] == fetch


@pytest.mark.parametrize("data, message", [
    (b"\x7f\xff\xff\xff\x00", "Tried to allocate a collection of size 2147483647"),  # legacy array of 2^31-1
    (b"\xff\xff\xff\xff\x0f", "Tried to allocate a collection of size 4294967294"),   # compact, at v12
    (b"\x05\xff\xff\xff", "Tried to allocate a collection of size 4, but there are only 3 bytes remaining"),
    (b"", "A varint runs past the end"),
    (b"\xff\xff\xff\xff\xff\x01", "longer than five bytes"),
])
def test_hostile_counts_fail_before_anything_is_allocated(data: bytes, message: str) -> None:
    version = 4 if data.startswith(b"\x7f") else 12
    reader = entity_reader(load_request_schema(3, version))
    with pytest.raises(MalformedRequestError, match=message):
        reader(data)


def test_a_string_longer_than_its_bytes_and_a_null_where_none_is_allowed() -> None:
    header = entity_reader(RequestHeader)
    with pytest.raises(MalformedRequestError, match="string of 16 byte"):
        header(b"\x00\x03\x00\x0c\x00\x00\x00\x07\x00\x10abc")
    produce = entity_reader(ProduceRequest)
    # a null topic name (compact length 0) in ProduceRequest v9, whose names are not nullable
    body = b"\x00" + b"\xff\xff" + b"\x00\x00\x75\x30" + b"\x02" + b"\x00"
    with pytest.raises(MalformedRequestError, match="non-nullable string was serialized as null"):
        produce(body)


def test_read_unsigned_varint() -> None:
    assert read_unsigned_varint(memoryview(b"\x96\x01"), 0) == (150, 2)
    assert read_unsigned_varint(memoryview(b"\xff\xff\xff\xff\x0f"), 0) == (2**32 - 1, 5)


@settings(max_examples=300, deadline=None)
@given(api_key=st.sampled_from([0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 20, 22]), version_pick=st.integers(0, 20),
       data=st.binary(max_size=200))
def test_random_bytes_read_or_fail_cleanly(api_key: int, version_pick: int, data: bytes) -> None:
    lo, hi = kio_versions(api_key)  # type: ignore[misc]
    version = lo + version_pick % (hi - lo + 1)
    reader = entity_reader(load_request_schema(api_key, version))
    try:
        _, end = reader(data)
    except MalformedRequestError:
        return
    assert 0 <= end <= len(data)


# kio registers strategies for its own types but not for record bytes
st.register_type_strategy(Records, st.binary(max_size=64))

#: Every (API key, version) whose request the broker reads.
_READ_VERSIONS = [(key, version)
                  for key, (lo, hi) in sorted(Broker({"log.dirs": "/nonexistent"}).supported_versions().items())
                  for version in range(lo, hi + 1)] + [
    (key, version) for key in (8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47)
    for version in range(kio_versions(key)[0], kio_versions(key)[1] + 1)]  # type: ignore[index]


@pytest.mark.parametrize(("api_key", "version"), _READ_VERSIONS, ids=[f"{k}v{v}" for k, v in _READ_VERSIONS])
def test_every_request_version_reads_back_what_kio_writes(api_key: int, version: int) -> None:
    """The generated reader of each request type the broker answers reads kio's bytes of any such request to a
    message that kio writes as the same bytes, ending where they end (a null UUID is written as the zero UUID and
    read back as it, so the bytes are compared, not the messages)."""
    cls = load_request_schema(api_key, version)
    reader = entity_reader(cls)

    @settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.from_type(cls))
    def read_back(request: object) -> None:
        data = _bytes(request)
        read, end = reader(data + b"tail", 0)
        assert end == len(data)
        assert _bytes(read) == data

    read_back()
