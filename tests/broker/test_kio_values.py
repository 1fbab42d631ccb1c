"""The broker's one builder of kio entities (kafkalog.broker.kio_values.build) and its one lookup of a response
class (kafkalog.broker.protocol.response_class): what the handlers and the coordinators both rely on."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.response import FetchableTopicResponse, FetchResponse, PartitionData
from kio.schema.find_coordinator.v0.response import FindCoordinatorResponse as FindCoordinatorResponseV0
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindCoordinatorRequestV4
from kio.schema.find_coordinator.v4.response import FindCoordinatorResponse as FindCoordinatorResponseV4
from kio.schema.heartbeat.v2.request import HeartbeatRequest

from kafkalog.broker.kio_values import build, field_names
from kafkalog.broker.protocol import ApiKey, response_class


def test_plain_values_are_converted_and_built_entities_kept() -> None:
    """A handler passes entities it built already (and record bytes read from a segment), a coordinator passes
    plain values and mappings: both at once in one response."""
    records = b"\x00" * 70
    built = build(PartitionData, partition_index=0, error_code=ErrorCode.none, high_watermark=5,
                  aborted_transactions=None, records=records)
    response = build(FetchResponse, error_code=0, session_id=7, responses=[
        {"topic": "t", "partitions": [built, {"partition_index": 1, "error_code": 3, "high_watermark": -1,
                                              "aborted_transactions": None, "records": b""}]}])
    assert response.throttle_time == datetime.timedelta(0)  # not given: 0
    assert response.error_code is ErrorCode.none
    assert response.session_id == 7
    (topic,) = response.responses
    assert isinstance(topic, FetchableTopicResponse)
    first, second = topic.partitions
    assert first is built
    assert first.records is records  # a record set is never copied
    assert isinstance(second, PartitionData)
    assert (second.partition_index, second.error_code) == (1, ErrorCode.unknown_topic_or_partition)
    assert (second.last_stable_offset, second.log_start_offset) == (-1, -1)  # kio's defaults


def test_only_the_versions_fields_are_kept() -> None:
    """The same values answer every version: each version's class takes the fields it has."""
    values = {"error_code": ErrorCode.none, "error_message": "NONE", "node_id": 1, "host": "h", "port": 9092,
              "coordinators": [{"key": "g", "node_id": 1, "host": "h", "port": 9092, "error_code": 0,
                                "error_message": None}]}
    v0 = build(FindCoordinatorResponseV0, **values)
    assert (v0.error_code, v0.node_id, v0.host, v0.port) == (ErrorCode.none, 1, "h", 9092)
    assert "coordinators" not in field_names(FindCoordinatorResponseV0)
    v4 = build(FindCoordinatorResponseV4, **values)
    assert [(c.key, c.node_id, c.error_message) for c in v4.coordinators] == [("g", 1, None)]
    assert field_names(FindCoordinatorResponseV4) == {"throttle_time", "coordinators"}


def test_a_missing_array_is_empty_and_a_value_out_of_range_refused() -> None:
    assert build(FindCoordinatorResponseV4).coordinators == ()
    with pytest.raises(TypeError, match="i32"):
        build(FindCoordinatorResponseV0, error_code=0, error_message=None, node_id=2**31, host="h", port=1)


def test_response_class_is_the_requests_version() -> None:
    """The dispatch asks by the header's key and version, a coordinator by its request's: one lookup."""
    assert response_class(ApiKey.FIND_COORDINATOR, 4) is FindCoordinatorResponseV4
    request = FindCoordinatorRequestV4(key_type=0, coordinator_keys=("g",))
    assert response_class(request.__api_key__, request.__version__) is FindCoordinatorResponseV4
    heartbeat = build(HeartbeatRequest, group_id="g", generation_id=1, member_id="m")
    assert response_class(heartbeat.__api_key__, heartbeat.__version__).__name__ == "HeartbeatResponse"
