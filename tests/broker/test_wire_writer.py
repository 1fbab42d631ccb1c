"""The broker's response writer (kafkalog.broker.wire_writer) writes kio's bytes, and the request header is read
as kio's header reader reads it (kafkalog.broker.protocol.parse_request_header), bounds included."""

from __future__ import annotations

import datetime
import io
import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v4.response import FetchResponse as FetchResponseV4
from kio.schema.fetch.v17.response import (
    AbortedTransaction,
    FetchableTopicResponse,
    FetchResponse,
    LeaderIdAndEpoch,
    PartitionData,
)
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_writer as kio_entity_writer
from kio.static.primitive import Records

from kafkalog.broker import Broker
from kafkalog.broker.codec import MalformedRequestError, entity_reader
from kafkalog.broker.protocol import encode_response, kio_versions, parse_request_header
from kafkalog.broker.wire_writer import entity_writer, uvarint

# kio registers strategies for its own types but not for record bytes
st.register_type_strategy(Records, st.binary(max_size=64))

#: Every API the broker answers (its handler table, the group APIs and ApiVersions), with the versions it answers.
ANSWERED = sorted(Broker({"log.dirs": "/nonexistent"}).supported_versions().items()) + [
    (key, kio_versions(key)) for key in (8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47)]


def _kio_bytes(entity: object) -> bytes:
    out = io.BytesIO()
    kio_entity_writer(type(entity))(out, entity)
    return out.getvalue()


def _written(entity: object) -> bytes:
    parts: list[object] = []
    entity_writer(type(entity))(parts, entity)
    return b"".join(parts)  # type: ignore[arg-type]


#: Every (API key, version) the broker answers.
ANSWERED_VERSIONS = [(key, version) for key, (lo, hi) in ANSWERED for version in range(lo, hi + 1)]


@pytest.mark.parametrize(("api_key", "version"), ANSWERED_VERSIONS, ids=[f"{k}v{v}" for k, v in ANSWERED_VERSIONS])
def test_every_response_version_written_as_kio_writes_it(api_key: int, version: int) -> None:
    cls = load_response_schema(api_key, version)

    @settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.from_type(cls))
    def same_bytes(response: object) -> None:
        assert _written(response) == _kio_bytes(response)

    same_bytes()


def _fetch_v17(records: bytes, **partition: object) -> FetchResponse:
    fields: dict[str, object] = {
        "partition_index": 3, "error_code": ErrorCode.none, "high_watermark": 1_000_000, "last_stable_offset": 999_990,
        "log_start_offset": 0, "aborted_transactions": (AbortedTransaction(producer_id=7, first_offset=12),),
        "preferred_read_replica": -1, "records": records, **partition}
    return FetchResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, session_id=0, responses=(
        FetchableTopicResponse(topic_id=uuid.UUID(int=5), partitions=(PartitionData(**fields),)),))  # type: ignore[arg-type]


def test_fetch_frame_is_kio_frame_and_holds_the_record_bytes_as_read() -> None:
    """The whole frame (size, correlation id, the flexible header's empty tagged fields, the body) is the one kio's
    writer gives; the record bytes (1 MiB here, as a segment read gives them) are put in as they are."""
    records = bytes(range(256)) * 4096
    response = _fetch_v17(records)
    body = _kio_bytes(response)
    expected = struct.pack(">ii", 4 + 1 + len(body), 42) + b"\0" + body
    assert encode_response(1, 17, 42, response) == expected
    parts: list[object] = []
    entity_writer(FetchResponse)(parts, response)
    assert any(part is records for part in parts)


def test_tagged_fields_written_only_when_not_their_default() -> None:
    """A PartitionData v17 whose current leader (tag 1) is set carries it; at its default it is left out."""
    plain = _fetch_v17(b"")
    tagged = _fetch_v17(b"", current_leader=LeaderIdAndEpoch(leader_id=1, leader_epoch=4))
    assert _written(plain) == _kio_bytes(plain)
    assert _written(tagged) == _kio_bytes(tagged)
    assert len(_written(tagged)) > len(_written(plain))


def test_legacy_nulls_and_lengths() -> None:
    """Fetch v4 (not flexible): int32 array counts, int32 record length, null records as -1."""
    from kio.schema.fetch.v4.response import AbortedTransaction as AbortedV4
    from kio.schema.fetch.v4.response import FetchableTopicResponse as TopicV4
    from kio.schema.fetch.v4.response import PartitionData as PartitionV4
    response = FetchResponseV4(throttle_time=datetime.timedelta(milliseconds=5), responses=(TopicV4(
        topic="t", partitions=(
            PartitionV4(partition_index=0, error_code=ErrorCode.none, high_watermark=3, last_stable_offset=3,
                        aborted_transactions=None, records=None),
            PartitionV4(partition_index=1, error_code=ErrorCode.offset_out_of_range, high_watermark=-1,
                        last_stable_offset=-1, aborted_transactions=(AbortedV4(producer_id=1, first_offset=2),),
                        records=b"abc"))),))
    assert _written(response) == _kio_bytes(response)


def test_uvarint() -> None:
    assert [uvarint(n) for n in (0, 1, 127, 128, 300, 2**31 - 1)] == [
        b"\x00", b"\x01", b"\x7f", b"\x80\x01", b"\xac\x02", b"\xff\xff\xff\xff\x07"]


# -- the request header --------------------------------------------------------------------------------------


def _header_bytes(version: int, api_key: int, api_version: int, correlation_id: int, client_id: str | None) -> bytes:
    cls = RequestHeaderV2 if version == 2 else RequestHeaderV1
    return _kio_bytes(cls(request_api_key=api_key, request_api_version=api_version, correlation_id=correlation_id,
                          client_id=client_id))


@pytest.mark.parametrize(("api_key", "api_version", "header_version"), [(3, 8, 1), (3, 9, 2), (0, 8, 1), (0, 9, 2),
                                                                          (1, 11, 1), (1, 12, 2), (18, 3, 2)])
@pytest.mark.parametrize("client_id", [None, "", "rdkafka", "клиент"])
def test_request_header_read_as_kio_writes_it(api_key: int, api_version: int, header_version: int,
                                              client_id: str | None) -> None:
    data = _header_bytes(header_version, api_key, api_version, -9, client_id)
    header, pos = parse_request_header(memoryview(data + b"body"))
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        api_key, api_version, -9, client_id)
    assert pos == len(data)


def test_request_header_tagged_fields_skipped_within_the_frame() -> None:
    prefix = struct.pack(">hhih", 3, 12, 1, 2) + b"id"
    header, pos = parse_request_header(memoryview(prefix + b"\x02" + b"\x05\x02xy" + b"\x09\x00" + b"body"))
    assert (header.client_id, pos) == ("id", len(prefix) + 7)
    for bad in (b"\x7f", b"\x01\x05\x09xy", b"\x01\x05", b"\xff\xff\xff\xff\xff\xff"):
        with pytest.raises(MalformedRequestError):
            parse_request_header(memoryview(prefix + bad))


@settings(max_examples=400, deadline=None, database=None)
@given(api=st.sampled_from([(3, 8), (3, 12), (0, 3), (0, 11), (18, 0), (18, 4), (1, 17)]),
       tail=st.binary(max_size=40))
def test_request_header_reads_or_fails_as_the_generic_reader(api: tuple[int, int], tail: bytes) -> None:
    """Whatever follows the fixed prefix, the header reader and the generic bounded reader of kio's header type agree:
    the same header and body position, or both a MalformedRequestError."""
    api_key, api_version = api
    frame = memoryview(struct.pack(">hhi", api_key, api_version, 77) + tail)
    flexible = api_version >= {3: 9, 0: 9, 18: 3, 1: 12}[api_key]
    generic = entity_reader(RequestHeaderV2 if flexible else RequestHeaderV1)
    try:
        expected, expected_pos = generic(frame, 0)
    except MalformedRequestError:
        with pytest.raises(MalformedRequestError):
            parse_request_header(frame)
        return
    header, pos = parse_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id, pos) == (
        expected.request_api_key, expected.request_api_version, expected.correlation_id, expected.client_id,
        expected_pos)
