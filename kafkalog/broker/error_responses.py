"""The answer to a request whose handler failed: the API's own response, carrying the error everywhere the request
named something (Kafka: ``AbstractRequest.getErrorResponse`` of each request class under
``clients/src/main/java/org/apache/kafka/common/requests/``, 3.8.0; for versions past 3.8, 4.x's).

When a handler raises what it did not expect, Kafka's ``KafkaApis.handle`` logs it at ERROR with its traceback and
``RequestHandlerHelper.handleError`` sends ``request.body.getErrorResponse(e)``: a response of the request's own API
and version in which each topic, partition, group, resource or transactional id the request named carries
``Errors.forException(e)`` (UNKNOWN_SERVER_ERROR, -1, for anything that is not one of Kafka's API errors), so the
client learns which of its items failed and keeps its connection.  Only when ``getErrorResponse`` gives nothing, a
produce with ``acks=0`` whose client reads no answer, does Kafka close the connection
(``RequestHandlerHelper.sendErrorOrCloseConnection``), so that the client notices.

Every field an API's builder does not set keeps the default Kafka's generated ``...Data`` class gives it
(:func:`~kafkalog.broker.kio_values.kafka_data`): the schema's default where it has one, else 0, ``""``, false,
an empty array, a zero UUID, or null for records.  So a partition's offsets are the schema's -1 where the schema
says so and 0 where it says nothing, as Kafka's bytes are.

The message (``ApiError.fromThrowable``): none for UNKNOWN_SERVER_ERROR, so that nothing of the broker's inside
leaks to the client; the exception's own text for an error that maps to one of Kafka's codes.  A few responses
carry the code's default text instead (``Errors.message()``: DescribeConfigs, FindCoordinator), as Kafka's do.

Where kafkalog differs: a produce's partitions are answered in the request's order, topics grouped as they first
appear, where Kafka walks a ``HashMap`` of them; OffsetFetch v0-v1's likewise.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable
from typing import Any, Final

from kio.schema.errors import ErrorCode

from .error_codes import error_code_for, error_message
from .kio_values import kafka_data
from .protocol import ApiKey, response_class

__all__ = ["ApiError", "error_response", "has_error_response"]

#: ``Node.noNode()``: id -1, host "", port -1.
_NO_NODE: Final = {"node_id": -1, "host": "", "port": -1}
#: Kafka's "not requested" authorized operations (``Integer.MIN_VALUE``).
_OPERATIONS_OMITTED: Final = -2147483648


@dataclasses.dataclass(frozen=True, slots=True)
class ApiError:
    """An exception as a response carries it (Kafka: ``ApiError.fromThrowable``)."""

    code: ErrorCode
    #: The exception's text, or ``None`` for UNKNOWN_SERVER_ERROR (nothing of the broker's inside is told).
    message: str | None

    @classmethod
    def from_exception(cls, error: BaseException) -> ApiError:
        code = error_code_for(error)
        if code is ErrorCode.unknown_server_error:
            return cls(code, None)
        text = str(error) or None
        return cls(code, None if text == error_message(code) else text)

    @property
    def default_message(self) -> str | None:
        """The code's own text (Kafka: ``Errors.message()``)."""
        return error_message(self.code)


class _Shape:
    """The response types of one API at one version."""

    def __init__(self, api_key: int, version: int) -> None:
        self.version = version
        self._cls = response_class(api_key, version)

    def response(self, **fields: Any) -> Any:
        return kafka_data(self._cls, **fields)

    def item(self, type_name: str, /, **fields: Any) -> Any:
        """An entity of the nested type ``type_name`` of this version's response (None when the version has no such
        type: the field that would hold it is not in this version)."""
        cls = getattr(sys.modules[self._cls.__module__], type_name, None)
        return None if cls is None else kafka_data(cls, **fields)

    def items(self, type_name: str, each: Iterable[dict[str, Any]], /) -> tuple[Any, ...]:
        return tuple(self.item(type_name, **fields) for fields in each)


def _topic_key(topic: Any) -> dict[str, Any]:
    """A request topic's identity, by name and/or id, whichever its version has."""
    key: dict[str, Any] = {}
    for name in ("name", "topic", "topic_id"):
        if hasattr(topic, name):
            key[name] = getattr(topic, name)
    return key


# -- one builder per API, each its request class's getErrorResponse ---------------------------------------------

Builder = Callable[[_Shape, Any, ApiError], Any]


def _produce(r: _Shape, request: Any, e: ApiError) -> Any:
    """``ProduceRequest.getErrorResponse``: nothing for acks=0; else each partition, no offsets, the message."""
    if request.acks == 0:
        return None
    by_topic: dict[Any, tuple[dict[str, Any], dict[int, Any]]] = {}
    for topic in request.topic_data:
        key = _topic_key(topic)
        entry = by_topic.setdefault(tuple(sorted(key.items())), (key, {}))
        for partition in topic.partition_data:
            entry[1][partition.index] = r.item(
                "PartitionProduceResponse", index=partition.index, record_errors=(), base_offset=-1,
                log_append_time=None, log_start_offset=-1, error_message=e.message, error_code=e.code)
    return r.response(responses=tuple(r.item("TopicProduceResponse", **key, partition_responses=tuple(parts.values()))
                                      for key, parts in by_topic.values()))


def _fetch(r: _Shape, request: Any, e: ApiError) -> Any:
    """``FetchRequest.getErrorResponse``: the top-level code, and before v13 each partition's too."""
    topics: tuple[Any, ...] = ()
    if r.version < 13:
        topics = tuple(r.item("FetchableTopicResponse", **_topic_key(topic), partitions=tuple(
            r.item("PartitionData", partition_index=p.partition, error_code=e.code, high_watermark=-1)
            for p in topic.partitions)) for topic in request.topics)
    return r.response(error_code=e.code, session_id=getattr(request, "session_id", 0), responses=topics)


def _list_offsets(r: _Shape, request: Any, e: ApiError) -> Any:
    """``ListOffsetsRequest.getErrorResponse``: each partition, offset and timestamp unknown (-1)."""
    return r.response(topics=tuple(r.item("ListOffsetsTopicResponse", name=topic.name, partitions=tuple(
        r.item("ListOffsetsPartitionResponse", partition_index=p.partition_index, error_code=e.code, offset=-1,
               timestamp=-1, old_style_offsets=()) for p in topic.partitions)) for topic in request.topics))


def _metadata(r: _Shape, request: Any, e: ApiError) -> Any:
    """``MetadataRequest.getErrorResponse``: each topic named (none when all were asked for), no partitions."""
    topics = () if request.topics is None else tuple(
        r.item("MetadataResponseTopic", name=topic.name or "", topic_id=getattr(topic, "topic_id", None),
               error_code=e.code, is_internal=False, partitions=()) for topic in request.topics)
    return r.response(topics=topics)


def _describe_cluster(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(error_code=e.code, error_message=e.message)


def _create_topics(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(topics=r.items("CreatableTopicResult", (
        {"name": t.name, "error_code": e.code, "error_message": e.message} for t in request.topics)))


def _delete_topics(r: _Shape, request: Any, e: ApiError) -> Any:
    """``DeleteTopicsRequest.getErrorResponse`` over ``topics()``: the names before v6, the name/id pairs from."""
    if r.version < 6:
        named = [{"name": name} for name in request.topic_names]
    else:
        named = [{"name": t.name, "topic_id": t.topic_id} for t in request.topics]
    return r.response(responses=r.items("DeletableTopicResult", ({**n, "error_code": e.code} for n in named)))


def _create_partitions(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(results=r.items("CreatePartitionsTopicResult", (
        {"name": t.name, "error_code": e.code, "error_message": e.message} for t in request.topics)))


def _describe_configs(r: _Shape, request: Any, e: ApiError) -> Any:
    """``DescribeConfigsRequest.getErrorResponse``: each resource, with the code's own text."""
    return r.response(results=r.items("DescribeConfigsResult", (
        {"error_code": e.code, "error_message": e.default_message, "resource_name": res.resource_name,
         "resource_type": res.resource_type} for res in request.resources)))


def _alter_configs(r: _Shape, request: Any, e: ApiError) -> Any:
    """``AlterConfigsRequest``'s and ``IncrementalAlterConfigsRequest``'s: each resource."""
    return r.response(responses=r.items("AlterConfigsResourceResponse", (
        {"resource_type": res.resource_type, "resource_name": res.resource_name, "error_message": e.message,
         "error_code": e.code} for res in request.resources)))


def _delete_records(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(topics=tuple(r.item("DeleteRecordsTopicResult", name=topic.name, partitions=r.items(
        "DeleteRecordsPartitionResult", ({"partition_index": p.partition_index, "error_code": e.code,
                                          "low_watermark": -1} for p in topic.partitions)))
        for topic in request.topics))


def _offset_for_leader_epoch(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(topics=tuple(r.item("OffsetForLeaderTopicResult", topic=topic.topic, partitions=r.items(
        "EpochEndOffset", ({"partition": p.partition, "error_code": e.code, "leader_epoch": -1, "end_offset": -1}
                           for p in topic.partitions))) for topic in request.topics))


def _elect_leaders(r: _Shape, request: Any, e: ApiError) -> Any:
    results = tuple(r.item("ReplicaElectionResult", topic=t.topic, partition_result=r.items("PartitionResult", (
        {"partition_id": p, "error_code": e.code, "error_message": e.message} for p in t.partitions)))
        for t in request.topic_partitions or ())
    return r.response(error_code=e.code, replica_election_results=results)


def _alter_partition_reassignments(r: _Shape, request: Any, e: ApiError) -> Any:
    responses = tuple(r.item("ReassignableTopicResponse", name=t.name, partitions=r.items(
        "ReassignablePartitionResponse", ({"partition_index": p.partition_index, "error_code": e.code,
                                           "error_message": e.message} for p in t.partitions)))
        for t in request.topics)
    return r.response(responses=responses, error_code=e.code, error_message=e.message)


def _list_partition_reassignments(r: _Shape, request: Any, e: ApiError) -> Any:
    topics = tuple(r.item("OngoingTopicReassignment", name=t.name, partitions=r.items(
        "OngoingPartitionReassignment", ({"partition_index": p} for p in t.partition_indexes)))
        for t in request.topics or ())
    return r.response(topics=topics, error_code=e.code, error_message=e.message)


def _error_code_only(r: _Shape, request: Any, e: ApiError) -> Any:
    """The responses with one error code and nothing of the request in them (DescribeLogDirs, Heartbeat,
    LeaveGroup, ListGroups, OffsetDelete, AddOffsetsToTxn, EndTxn, ListTransactions)."""
    return r.response(error_code=e.code)


def _offset_commit(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(topics=tuple(r.item("OffsetCommitResponseTopic", **_topic_key(t), partitions=r.items(
        "OffsetCommitResponsePartition", ({"partition_index": p.partition_index, "error_code": e.code}
                                          for p in t.partitions))) for t in request.topics))


def _offset_fetch(r: _Shape, request: Any, e: ApiError) -> Any:
    """``OffsetFetchRequest.getErrorResponse``: v0-v1 each partition named; v2-v7 the top-level code alone; v8+
    each group's code."""
    if r.version < 2:
        return r.response(topics=tuple(r.item("OffsetFetchResponseTopic", name=t.name, partitions=r.items(
            "OffsetFetchResponsePartition", ({"partition_index": p, "error_code": e.code, "committed_offset": -1,
                                              "committed_leader_epoch": -1, "metadata": ""}
                                             for p in t.partition_indexes))) for t in request.topics))
    if r.version < 8:
        return r.response(error_code=e.code, topics=())
    return r.response(groups=r.items("OffsetFetchResponseGroup", (
        {"group_id": g.group_id, "topics": (), "error_code": e.code} for g in request.groups)))


def _find_coordinator(r: _Shape, request: Any, e: ApiError) -> Any:
    """``FindCoordinatorRequest.getErrorResponse``: before v4 one answer of no node; from v4 one per key."""
    if r.version < 4:
        return r.response(error_code=e.code, error_message=e.default_message, **_NO_NODE)
    return r.response(coordinators=r.items("Coordinator", (
        {"error_code": e.code, "error_message": e.default_message, "key": key, **_NO_NODE}
        for key in request.coordinator_keys)))


def _join_group(r: _Shape, request: Any, e: ApiError) -> Any:
    """``JoinGroupRequest.getErrorResponse``: no generation, no member; the protocol name null from v7."""
    return r.response(error_code=e.code, generation_id=-1, protocol_name=None if r.version >= 7 else "", leader="",
                      member_id="", members=())


def _sync_group(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(error_code=e.code, assignment=b"")


def _describe_groups(r: _Shape, request: Any, e: ApiError) -> Any:
    """``DescribeGroupsRequest.getErrorResponse``: ``DescribeGroupsResponse.groupError`` for each group."""
    return r.response(groups=r.items("DescribedGroup", (
        {"group_id": g, "error_code": e.code, "group_state": "", "protocol_type": "", "protocol_data": "",
         "members": (), "authorized_operations": _OPERATIONS_OMITTED} for g in request.groups)))


def _list_groups(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(groups=(), error_code=e.code)


def _delete_groups(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(results=r.items("DeletableGroupResult", (
        {"group_id": g, "error_code": e.code} for g in request.groups_names)))


def _init_producer_id(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(error_code=e.code, producer_id=-1, producer_epoch=-1)


def _add_partitions_to_txn(r: _Shape, request: Any, e: ApiError) -> Any:
    """``AddPartitionsToTxnRequest.getErrorResponse``: the client versions (0-3) each partition; the broker
    versions (4+) the top-level code."""
    if r.version >= 4:
        return r.response(error_code=e.code)
    return r.response(results_by_topic_v3_and_below=tuple(
        r.item("AddPartitionsToTxnTopicResult", name=t.name, results_by_partition=r.items(
            "AddPartitionsToTxnPartitionResult", ({"partition_index": p, "partition_error_code": e.code}
                                                  for p in t.partitions))) for t in request.v3_and_below_topics))


def _txn_offset_commit(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(topics=tuple(r.item("TxnOffsetCommitResponseTopic", name=t.name, partitions=r.items(
        "TxnOffsetCommitResponsePartition", ({"partition_index": p.partition_index, "error_code": e.code}
                                             for p in t.partitions))) for t in request.topics))


def _describe_transactions(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(transaction_states=r.items("TransactionState", (
        {"transactional_id": t, "error_code": e.code} for t in request.transactional_ids)))


def _describe_topic_partitions(r: _Shape, request: Any, e: ApiError) -> Any:
    return r.response(topics=r.items("DescribeTopicPartitionsResponseTopic", (
        {"name": t.name, "error_code": e.code, "is_internal": False, "partitions": ()} for t in request.topics)))


def _alter_replica_log_dirs(r: _Shape, request: Any, e: ApiError) -> Any:
    """``AlterReplicaLogDirsRequest.getErrorResponse``: each topic of each directory (a topic named under two
    directories is answered twice, as Kafka's flatMap does)."""
    return r.response(results=tuple(
        r.item("AlterReplicaLogDirTopicResult", topic_name=t.name, partitions=r.items(
            "AlterReplicaLogDirPartitionResult", ({"partition_index": p, "error_code": e.code}
                                                  for p in t.partitions)))
        for d in request.dirs for t in d.topics))


_BUILDERS: Final[dict[int, Builder]] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: _join_group,
    ApiKey.HEARTBEAT: _error_code_only,
    ApiKey.LEAVE_GROUP: _error_code_only,
    ApiKey.SYNC_GROUP: _sync_group,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _error_code_only,
    ApiKey.END_TXN: _error_code_only,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.ALTER_REPLICA_LOG_DIRS: _alter_replica_log_dirs,
    ApiKey.DESCRIBE_LOG_DIRS: _error_code_only,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_partition_reassignments,
    ApiKey.OFFSET_DELETE: _error_code_only,
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _error_code_only,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
}


def has_error_response(api_key: int) -> bool:
    """Whether :func:`error_response` knows ``api_key``'s error response."""
    return api_key in _BUILDERS


def error_response(api_key: int, version: int, request: Any, error: BaseException) -> Any | None:
    """The response Kafka's ``getErrorResponse`` gives ``request`` (of ``api_key`` at ``version``) for ``error``,
    or ``None`` when there is to be no response (a produce with acks=0: the caller closes the connection).

    Raises:
        KeyError: an API without an error response here (every API the broker answers has one).
    """
    return _BUILDERS[api_key](_Shape(api_key, version), request, ApiError.from_exception(error))
