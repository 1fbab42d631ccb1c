"""The group APIs of kafkalog's broker: Kafka 3.8.0's classic group coordinator behind its requests and responses.

Port of ``core/src/main/scala/kafka/coordinator/group/GroupCoordinatorAdapter.scala`` plus the group parts of
``KafkaApis.scala`` (tag 3.8.0): how each request version becomes a call of
:class:`~kafkalog.broker.classic_group_coordinator.ClassicGroupCoordinator`'s handlers, and their results a
response of that version (``JoinGroupResponse``'s protocol name by version, ``LeaveGroupResponse`` v0-v2's single
error, ``OffsetFetchResponse``'s single group before v8, FindCoordinator's batched keys from v4).

The broker's dispatch calls one coroutine per API with a :class:`RequestContext` and the request kio decoded, and
sends back the response object of the request's version (``type(request).__version__``):

=====================  ========  ==================================================================
API                    versions  coroutine
=====================  ========  ==================================================================
FindCoordinator (10)   0-6       :meth:`GroupCoordinator.find_coordinator` (groups and transactions)
JoinGroup (11)         0-9       :meth:`GroupCoordinator.join_group` (answers when the rebalance does)
Heartbeat (12)         0-4       :meth:`GroupCoordinator.heartbeat`
LeaveGroup (13)        0-5       :meth:`GroupCoordinator.leave_group`
SyncGroup (14)         0-5       :meth:`GroupCoordinator.sync_group` (a follower waits for the leader)
DescribeGroups (15)    0-6       :meth:`GroupCoordinator.describe_groups`
ListGroups (16)        0-5       :meth:`GroupCoordinator.list_groups`
OffsetCommit (8)       2-10      :meth:`GroupCoordinator.offset_commit`
OffsetFetch (9)        1-10      :meth:`GroupCoordinator.offset_fetch`
DeleteGroups (42)      0-2       :meth:`GroupCoordinator.delete_groups`
OffsetDelete (47)      0         :meth:`GroupCoordinator.offset_delete`
=====================  ========  ==================================================================

Before the first request, ``await coordinator.startup()`` (it creates and loads ``__consumer_offsets``); at the end,
``coordinator.shutdown()``.

Where kafkalog differs:

- no authorization: every ACL check passes (the broker has no authorizer); DescribeGroups' authorized operations,
  when asked for, are every group operation (READ, DESCRIBE, DELETE), what Kafka 3.8 answers without an authorizer
  (Kafka 4 adds DESCRIBE_CONFIGS and ALTER_CONFIGS, for the group configurations kafkalog does not have);
- OffsetCommit and OffsetDelete check that a topic partition exists only when the context can say
  (:class:`TopicResolver`); OffsetCommit v10 and OffsetFetch v10 (Kafka 4's, by topic id) need it to name topics;
- the ``inter.broker.protocol.version`` checks (static membership before 2.3) do not apply: this broker is 3.8;
- version 0 of OffsetCommit and OffsetFetch (ZooKeeper's offsets) is not served: kio has no such version.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from .classic_group_coordinator import UNKNOWN_MEMBER_ID, ClassicGroupCoordinator
from .group_metadata import (
    JoinGroupResult,
    SyncGroupResult,
    TopicPartition,
)
from .group_records import OffsetAndMetadata
from .kio_values import build, field_names, ms
from .protocol import response_class

__all__ = ["GroupCoordinator", "RequestContext", "TopicResolver"]

logger = logging.getLogger(__name__)

#: Kafka: ``OffsetCommitRequest.DEFAULT_RETENTION_TIME`` / ``DEFAULT_TIMESTAMP``.
DEFAULT_RETENTION_TIME = -1
DEFAULT_TIMESTAMP = -1
#: Kafka: ``CoordinatorType`` ids.
COORDINATOR_TYPE_GROUP = 0
COORDINATOR_TYPE_TRANSACTION = 1
#: DescribeGroups' ``authorized_operations`` without an authorizer: READ (3), DELETE (6), DESCRIBE (8).
_GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
_NO_OPERATIONS = -(2**31)


class TopicResolver(Protocol):
    """What the broker knows of its topics, for the checks Kafka makes against its metadata cache."""

    def partition_exists(self, topic: str, partition: int) -> bool: ...
    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...
    def topic_id(self, topic: str) -> uuid.UUID | None: ...


@dataclass(frozen=True)
class RequestContext:
    """What a coordinator needs of a request besides its body (Kafka: ``RequestContext``): this broker's node id,
    host and port (FindCoordinator's answer), the client's id and address (a member's ``client.id`` and
    ``client.host``), the request's version, and the broker's topics when it has them."""

    node_id: int
    host: str
    port: int
    client_id: str
    client_host: str
    api_version: int
    topics: TopicResolver | None = None


def _version(request: Any) -> int:
    return int(type(request).__version__)


class GroupCoordinator(ClassicGroupCoordinator):
    """Kafka: ``GroupCoordinatorAdapter`` over the classic ``GroupCoordinator``: one coroutine per group API."""

    async def find_coordinator(self, ctx: RequestContext, request: Any) -> Any:
        """FindCoordinator v0-v6 (Kafka: ``handleFindCoordinatorRequest``): this node for every group and every
        transactional id; v4+ answers each of ``coordinator_keys``."""
        version = _version(request)
        response = response_class(request.__api_key__, request.__version__)
        key_type = int(getattr(request, "key_type", COORDINATOR_TYPE_GROUP))
        if key_type not in (COORDINATOR_TYPE_GROUP, COORDINATOR_TYPE_TRANSACTION):
            # Kafka: CoordinatorType.forId throws InvalidRequestException for the whole request.
            error = ErrorCode.invalid_request
            if version >= 4:
                return build(response, coordinators=[
                    {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": error,
                     "error_message": f"Unknown coordinator type received: {key_type}"}
                    for key in request.coordinator_keys])
            return build(response, error_code=error,
                         error_message=f"Unknown coordinator type received: {key_type}", node_id=-1, host="", port=-1)
        if version >= 4:
            return build(response, coordinators=[
                {"key": key, "node_id": ctx.node_id, "host": ctx.host, "port": ctx.port, "error_code": ErrorCode.none,
                 "error_message": None} for key in request.coordinator_keys])
        return build(response, error_code=ErrorCode.none, error_message="NONE", node_id=ctx.node_id, host=ctx.host,
                     port=ctx.port)

    async def join_group(self, ctx: RequestContext, request: Any) -> Any:
        """JoinGroup v0-v9: answers when the group's rebalance completes (or at once on an error)."""
        version = _version(request)
        future: asyncio.Future[JoinGroupResult] = asyncio.get_running_loop().create_future()

        def callback(result: JoinGroupResult) -> None:
            if not future.done():
                future.set_result(result)

        group_instance_id = getattr(request, "group_instance_id", None)
        session_timeout_ms = ms(request.session_timeout)
        # JoinGroupRequest v0 has no rebalance timeout: the session timeout stands for it.
        rebalance_timeout_ms = ms(request.rebalance_timeout) if version >= 1 else session_timeout_ms
        self.handle_join_group(
            request.group_id, request.member_id, group_instance_id,
            require_known_member_id=version >= 4 and group_instance_id is None,
            support_skipping_assignment=version >= 9, client_id=ctx.client_id, client_host=ctx.client_host,
            rebalance_timeout_ms=rebalance_timeout_ms, session_timeout_ms=session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=[(p.name, bytes(p.metadata)) for p in request.protocols], callback=callback,
            reason=getattr(request, "reason", None))
        result = await future
        protocol_name = result.protocol_name
        if version < 7 and protocol_name is None:
            protocol_name = ""  # JoinGroupResponse: no nullable protocol name before v7
        elif version >= 7 and protocol_name == "":
            protocol_name = None
        return build(
            response_class(request.__api_key__, request.__version__), error_code=result.error,
            generation_id=result.generation_id, protocol_type=result.protocol_type, protocol_name=protocol_name,
            leader=result.leader_id, skip_assignment=result.skip_assignment, member_id=result.member_id,
            members=[{"member_id": m, "group_instance_id": i, "metadata": md} for m, i, md in result.members])

    async def sync_group(self, ctx: RequestContext, request: Any) -> Any:
        """SyncGroup v0-v5: a follower's answer waits for the leader's assignment."""
        version = _version(request)
        response = response_class(request.__api_key__, request.__version__)
        protocol_type = getattr(request, "protocol_type", None)
        protocol_name = getattr(request, "protocol_name", None)
        if version >= 5 and (protocol_type is None or protocol_name is None):
            # KafkaApis: from v5 the protocol type and name are mandatory.
            return build(response, error_code=ErrorCode.inconsistent_group_protocol, assignment=b"")
        future: asyncio.Future[SyncGroupResult] = asyncio.get_running_loop().create_future()

        def callback(result: SyncGroupResult) -> None:
            if not future.done():
                future.set_result(result)

        assignments: dict[str, bytes] = {}
        for a in request.assignments:
            assignments[a.member_id] = bytes(a.assignment)
        self.handle_sync_group(request.group_id, int(request.generation_id), request.member_id, protocol_type,
                               protocol_name, getattr(request, "group_instance_id", None), assignments, callback)
        result = await future
        return build(response, error_code=result.error, protocol_type=result.protocol_type,
                     protocol_name=result.protocol_name, assignment=result.assignment)

    async def heartbeat(self, ctx: RequestContext, request: Any) -> Any:
        """Heartbeat v0-v4."""
        error = self.handle_heartbeat(request.group_id, request.member_id, getattr(request, "group_instance_id", None),
                                      int(request.generation_id))
        return build(response_class(request.__api_key__, request.__version__), error_code=error)

    async def leave_group(self, ctx: RequestContext, request: Any) -> Any:
        """LeaveGroup v0-v5: one member before v3, a batch after (Kafka: ``LeaveGroupRequest.normalizedData`` and
        ``LeaveGroupResponse(data, version)``)."""
        version = _version(request)
        members: list[tuple[str, str | None, str | None]]
        if version < 3:
            members = [(request.member_id, None, None)]
        else:
            members = [(m.member_id, m.group_instance_id, getattr(m, "reason", None)) for m in request.members]
        top, results = self.handle_leave_group(request.group_id, members)
        response = response_class(request.__api_key__, request.__version__)
        if version >= 3:
            return build(response, error_code=top, members=[
                {"member_id": m, "group_instance_id": i, "error_code": e} for m, i, e in results])
        if top is not ErrorCode.none:
            return build(response, error_code=top)
        return build(response, error_code=results[0][2])

    async def offset_commit(self, ctx: RequestContext, request: Any) -> Any:
        """OffsetCommit v2-v10 (Kafka: ``handleOffsetCommitRequest`` and the adapter's ``commitOffsets``)."""
        version = _version(request)
        response = response_class(request.__api_key__, request.__version__)
        now = self.timer.time_ms()
        by_id = version >= 10
        retention = ms(request.retention_time) if "retention_time" in field_names(type(request)) \
            else DEFAULT_RETENTION_TIME
        expire = None if retention == DEFAULT_RETENTION_TIME else now + retention
        early: dict[tuple[Any, int], ErrorCode] = {}  # (topic key, partition) -> error, answered before the commit
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        keys: dict[TopicPartition, Any] = {}
        order: list[tuple[Any, int]] = []
        for topic in request.topics:
            topic_key = topic.topic_id if by_id else topic.name
            name = self._topic_name(ctx, topic_key, by_id)
            for p in topic.partitions:
                index = int(p.partition_index)
                order.append((topic_key, index))
                if name is None:
                    early[(topic_key, index)] = ErrorCode.unknown_topic_id
                    continue
                if ctx.topics is not None and not ctx.topics.partition_exists(name, index):
                    early[(topic_key, index)] = ErrorCode.unknown_topic_or_partition
                    continue
                epoch = int(getattr(p, "committed_leader_epoch", -1))
                commit_ts = int(getattr(p, "commit_timestamp", DEFAULT_TIMESTAMP))
                offsets[(name, index)] = OffsetAndMetadata(
                    offset=int(p.committed_offset), leader_epoch=None if epoch == -1 else epoch,
                    metadata="" if p.committed_metadata is None else p.committed_metadata,
                    commit_timestamp=now if commit_ts == DEFAULT_TIMESTAMP else commit_ts, expire_timestamp=expire)
                keys[(name, index)] = topic_key
        statuses: dict[tuple[Any, int], ErrorCode] = dict(early)
        if offsets:
            result = self.handle_commit_offsets(request.group_id, request.member_id,
                                                getattr(request, "group_instance_id", None),
                                                int(request.generation_id_or_member_epoch), offsets)
            for tp, error in result.items():
                statuses[(keys[tp], tp[1])] = error
        return build(response, topics=self._by_topic(order, statuses, "topic_id" if by_id else "name"))

    async def txn_offset_commit(self, ctx: RequestContext, request: Any) -> Any:
        """TxnOffsetCommit v0-v5 (Kafka: ``handleTxnOffsetCommitRequest`` and the adapter's
        ``commitTransactionalOffsets``): a partition the broker does not have is ``UNKNOWN_TOPIC_OR_PARTITION``, the
        rest go to :meth:`handle_txn_commit_offsets`, committed now and never expiring."""
        response = response_class(request.__api_key__, request.__version__)
        now = self.timer.time_ms()
        early: dict[tuple[Any, int], ErrorCode] = {}
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        order: list[tuple[Any, int]] = []
        for topic in request.topics:
            for p in topic.partitions:
                index = int(p.partition_index)
                order.append((topic.name, index))
                if ctx.topics is not None and not ctx.topics.partition_exists(topic.name, index):
                    early[(topic.name, index)] = ErrorCode.unknown_topic_or_partition
                    continue
                epoch = int(getattr(p, "committed_leader_epoch", -1))
                offsets[(topic.name, index)] = OffsetAndMetadata(
                    offset=int(p.committed_offset), leader_epoch=None if epoch == -1 else epoch,
                    metadata="" if p.committed_metadata is None else p.committed_metadata, commit_timestamp=now)
        statuses: dict[tuple[Any, int], ErrorCode] = dict(early)
        if offsets:
            fields = field_names(type(request))
            result = self.handle_txn_commit_offsets(
                request.group_id, int(request.producer_id), int(request.producer_epoch),
                request.member_id if "member_id" in fields else UNKNOWN_MEMBER_ID,
                getattr(request, "group_instance_id", None),
                int(request.generation_id) if "generation_id" in fields else -1, offsets)
            statuses.update(result)
        return build(response, throttle_time=0, topics=self._by_topic(order, statuses, "name"))

    @staticmethod
    def _topic_name(ctx: RequestContext, topic_key: Any, by_id: bool) -> str | None:
        if not by_id:
            return str(topic_key)
        return None if ctx.topics is None else ctx.topics.topic_name(topic_key)

    @staticmethod
    def _by_topic(order: list[tuple[Any, int]], statuses: Mapping[tuple[Any, int], ErrorCode],
                  topic_field: str) -> list[dict[str, Any]]:
        topics: dict[Any, list[dict[str, Any]]] = {}
        for key in order:
            if key in statuses:
                topics.setdefault(key[0], []).append({"partition_index": key[1], "error_code": statuses[key]})
        return [{topic_field: t, "partitions": parts} for t, parts in topics.items()]

    async def offset_fetch(self, ctx: RequestContext, request: Any) -> Any:
        """OffsetFetch v1-v10 (Kafka: ``handleOffsetFetchRequestFromCoordinator``, the adapter's ``fetchOffsets`` /
        ``fetchAllOffsets`` and ``OffsetFetchResponse(groups, version)``); v8+ fetches several groups."""
        version = _version(request)
        response = response_class(request.__api_key__, request.__version__)
        require_stable = bool(getattr(request, "require_stable", False))
        if version >= 8:
            groups = [self._fetch_group(ctx, g.group_id, g.topics, require_stable, version >= 10)
                      for g in request.groups]
            return build(response, groups=groups)
        group = self._fetch_group(ctx, request.group_id, request.topics, require_stable, False)
        topics = group["topics"]
        if version < 2 and group["error_code"] is not ErrorCode.none:
            for t in topics:
                for p in t["partitions"]:
                    p.update(error_code=group["error_code"], committed_offset=-1, metadata="",
                             committed_leader_epoch=-1)
        return build(response, topics=topics, error_code=group["error_code"])

    def _fetch_group(self, ctx: RequestContext, group_id: str, topics: Any, require_stable: bool,
                     by_id: bool) -> dict[str, Any]:
        field = "topic_id" if by_id else "name"
        unknown: list[dict[str, Any]] = []
        partitions: list[TopicPartition] | None = None
        keys: dict[str, Any] = {}
        if topics is not None:
            partitions = []
            for t in topics:
                key = t.topic_id if by_id else t.name
                name = self._topic_name(ctx, key, by_id)
                if name is None:
                    unknown.append({field: key, "partitions": [
                        {"partition_index": int(i), "committed_offset": -1, "committed_leader_epoch": -1,
                         "metadata": "", "error_code": ErrorCode.unknown_topic_id} for i in t.partition_indexes]})
                    continue
                keys[name] = key
                partitions.extend((name, int(i)) for i in t.partition_indexes)
        error, results = self.handle_fetch_offsets(group_id, require_stable, partitions)
        if error is not ErrorCode.none:
            return {"group_id": group_id, "error_code": error, "topics": []}
        grouped: dict[str, list[dict[str, Any]]] = {}
        for (topic, index), data in results.items():
            grouped.setdefault(topic, []).append({
                "partition_index": index, "committed_offset": data.offset,
                "committed_leader_epoch": -1 if data.leader_epoch is None else data.leader_epoch,
                "metadata": data.metadata, "error_code": data.error})
        out = []
        for topic, parts in grouped.items():
            key = keys.get(topic, topic)
            if by_id and topic not in keys:
                key = None if ctx.topics is None else ctx.topics.topic_id(topic)
                if key is None:
                    continue  # a topic without an id cannot be named in a v10 answer
            out.append({field: key, "partitions": parts})
        return {"group_id": group_id, "error_code": ErrorCode.none, "topics": out + unknown}

    async def describe_groups(self, ctx: RequestContext, request: Any) -> Any:
        """DescribeGroups v0-v6."""
        include_operations = bool(getattr(request, "include_authorized_operations", False))
        groups = []
        for group_id in request.groups:
            error, summary = self.handle_describe_group(group_id)
            groups.append({
                "error_code": error, "group_id": group_id, "group_state": summary.state,
                "protocol_type": summary.protocol_type, "protocol_data": summary.protocol,
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "member_metadata": m.metadata, "member_assignment": m.assignment}
                            for m in summary.members],
                "authorized_operations": _GROUP_OPERATIONS if include_operations and error is ErrorCode.none
                else _NO_OPERATIONS})
        return build(response_class(request.__api_key__, request.__version__), groups=groups)

    async def list_groups(self, ctx: RequestContext, request: Any) -> Any:
        """ListGroups v0-v5 (v4+ filters by state, v5+ by type)."""
        states = set(getattr(request, "states_filter", ()) or ())
        types_ = set(getattr(request, "types_filter", ()) or ())
        error, groups = self.handle_list_groups(states, types_)
        return build(response_class(request.__api_key__, request.__version__), error_code=error, groups=[
            {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state,
             "group_type": g.group_type} for g in groups])

    async def delete_groups(self, ctx: RequestContext, request: Any) -> Any:
        """DeleteGroups v0-v2 (a group named twice is deleted once, as ``KafkaApis`` does)."""
        names = list(dict.fromkeys(request.groups_names))
        errors = self.handle_delete_groups(names)
        return build(response_class(request.__api_key__, request.__version__), results=[
            {"group_id": g, "error_code": errors[g]} for g in names])

    async def offset_delete(self, ctx: RequestContext, request: Any) -> Any:
        """OffsetDelete v0 (Kafka: ``handleOffsetDeleteRequest``)."""
        response = response_class(request.__api_key__, request.__version__)
        order: list[tuple[Any, int]] = []
        statuses: dict[tuple[Any, int], ErrorCode] = {}
        partitions: list[TopicPartition] = []
        for topic in request.topics:
            for p in topic.partitions:
                key = (topic.name, int(p.partition_index))
                order.append(key)
                if ctx.topics is not None and not ctx.topics.partition_exists(*key):
                    statuses[key] = ErrorCode.unknown_topic_or_partition
                else:
                    partitions.append(key)
        group_error, results = self.handle_delete_offsets(request.group_id, partitions)
        if group_error is not ErrorCode.none:
            return build(response, error_code=group_error)
        statuses.update(results)
        return build(response, error_code=ErrorCode.none, topics=self._by_topic(order, statuses, "name"))
