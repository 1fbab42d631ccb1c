"""Metadata, DescribeTopicPartitions and DescribeCluster: the broker, the topics and who leads their partitions.

Port of ``KafkaApis.handleTopicMetadataRequest`` and ``handleDescribeCluster`` (``core/.../server/KafkaApis.scala``,
3.8.0) with one node: this broker is every partition's leader (epoch 0), its only replica and in-sync replica, and
the controller.  A request naming no topics (``null`` from v1, an empty list at v0) asks for them all.  An unknown
topic is created with ``num.partitions`` partitions when the broker's ``auto.create.topics.enable`` and the
request's ``allow_auto_topic_creation`` (v4+) both allow it, unless it is an internal topic's name.

DescribeTopicPartitions (KIP-966; ``DescribeTopicPartitionsRequestHandler`` and
``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse``, 3.8.0) is Metadata's paged form, which Kafka 3.8+
admin clients use to describe topics: the topics named (or all, for an empty list), from the cursor's topic and
partition on, in name order, at most ``min(max.request.partition.size.limit, ResponsePartitionLimit)`` partitions
(at least 1), with a next cursor where the limit cut a topic short or left topics unanswered; a named topic that
does not exist is ``UNKNOWN_TOPIC_OR_PARTITION`` (``INVALID_TOPIC_EXCEPTION`` for a name no topic may have), and a
cursor not among the topics named, or with a negative partition, is ``INVALID_REQUEST`` for every topic of the
request.  With one node and no eligible-leader-replica election, every partition's ELR and last known ELR are empty.

Where kafkalog differs: a topic created here is answered at once with its partitions, where Kafka's KRaft broker
answers with an error until its controller has made the topic (``LEADER_NOT_AVAILABLE`` in 3.x,
``UNKNOWN_TOPIC_OR_PARTITION`` in 4.4); a client retries either way.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import Any, Final

from kio.schema.errors import ErrorCode

from ..errors import InvalidRequestError, KafkaLogError
from ..topic import InvalidTopicError, validate_topic
from .context import RequestContext
from .error_codes import error_code_for
from .kio_values import build
from .partitions import INTERNAL_TOPICS, Topic, leader_epoch

__all__ = ["handle_describe_cluster", "handle_describe_topic_partitions", "handle_metadata"]

logger = logging.getLogger(__name__)

_NO_THROTTLE: Final = datetime.timedelta(0)
#: Kafka's "not requested" authorized operations (``Integer.MIN_VALUE``).
AUTHORIZED_OPERATIONS_OMITTED: Final = -2147483648
#: With no authorizer every operation on a topic is allowed: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
#: DESCRIBE_CONFIGS, ALTER_CONFIGS (``AclOperation`` codes 3-8, 10, 11) as a bit field.
TOPIC_OPERATIONS: Final = sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))
#: And on the cluster: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
CLUSTER_OPERATIONS: Final = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))


def _topic_metadata(ctx: RequestContext, topic: Topic, authorized: bool) -> Any:
    node = ctx.broker.node_id
    partition_type = ctx.response_type("MetadataResponsePartition")
    partitions = tuple(
        build(partition_type, error_code=ErrorCode.none, partition_index=p, leader_id=node,
              leader_epoch=leader_epoch(log), replica_nodes=(node,), isr_nodes=(node,), offline_replicas=())
        for p, log in enumerate(topic.logs))
    return build(ctx.response_type("MetadataResponseTopic"), error_code=ErrorCode.none, name=topic.name,
                 topic_id=topic.topic_id, is_internal=topic.internal, partitions=partitions,
                 topic_authorized_operations=TOPIC_OPERATIONS if authorized else AUTHORIZED_OPERATIONS_OMITTED)


def _topic_error(ctx: RequestContext, name: str | None, topic_id: Any, code: ErrorCode) -> Any:
    return build(ctx.response_type("MetadataResponseTopic"), error_code=code, name=name, topic_id=topic_id,
                 is_internal=name in INTERNAL_TOPICS, partitions=(),
                 topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


async def handle_metadata(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    version = ctx.api_version
    authorized = bool(getattr(request, "include_topic_authorized_operations", False))
    requested = request.topics
    if requested is None or (version == 0 and not requested):
        topics = [_topic_metadata(ctx, t, authorized) for t in registry.topics()]
    else:
        allow_create = ctx.broker.config["auto.create.topics.enable"] and getattr(
            request, "allow_auto_topic_creation", True)
        topics = []
        for wanted in requested:
            name = wanted.name
            topic_id = getattr(wanted, "topic_id", None)
            if name is None:
                found = registry.by_id(topic_id) if topic_id is not None and topic_id.int else None
                topics.append(_topic_metadata(ctx, found, authorized) if found is not None
                              else _topic_error(ctx, None, topic_id, ErrorCode.unknown_topic_id))
                continue
            topic = registry.get(name)
            if topic is None:
                try:
                    validate_topic(name)
                except InvalidTopicError:
                    topics.append(_topic_error(ctx, name, _zero_id(), ErrorCode.invalid_topic_exception))
                    continue
                if not allow_create or name in INTERNAL_TOPICS:
                    topics.append(_topic_error(ctx, name, _zero_id(), ErrorCode.unknown_topic_or_partition))
                    continue
                try:
                    topic = registry.create_topic(name, ctx.broker.config["num.partitions"])
                except KafkaLogError as e:
                    logger.warning("Could not create topic %s on a metadata request: %s", name, e)
                    topics.append(_topic_error(ctx, name, _zero_id(), error_code_for(e)))
                    continue
            topics.append(_topic_metadata(ctx, topic, authorized))
    broker_type = ctx.response_type("MetadataResponseBroker")
    brokers = (build(broker_type, node_id=ctx.broker.node_id, host=ctx.broker.advertised_host,
                     port=ctx.broker.advertised_port, rack=None),)
    return ctx.response(throttle_time=_NO_THROTTLE, brokers=brokers, cluster_id=ctx.broker.cluster_id,
                        controller_id=ctx.broker.node_id, topics=tuple(topics),
                        cluster_authorized_operations=(CLUSTER_OPERATIONS if getattr(
                            request, "include_cluster_authorized_operations", False)
                            else AUTHORIZED_OPERATIONS_OMITTED))


def _zero_id() -> Any:
    return uuid.UUID(int=0)


async def handle_describe_cluster(ctx: RequestContext, request: Any) -> Any:
    """Kafka: ``KafkaApis.handleDescribeCluster`` (the brokers, the cluster id, the controller)."""
    broker_type = ctx.response_type("DescribeClusterBroker")
    brokers = (build(broker_type, broker_id=ctx.broker.node_id, host=ctx.broker.advertised_host,
                     port=ctx.broker.advertised_port, rack=None, is_fenced=False),)
    return ctx.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                        endpoint_type=getattr(request, "endpoint_type", 1), cluster_id=ctx.broker.cluster_id,
                        controller_id=ctx.broker.node_id, brokers=brokers,
                        cluster_authorized_operations=(
                            CLUSTER_OPERATIONS if request.include_cluster_authorized_operations
                            else AUTHORIZED_OPERATIONS_OMITTED))


async def handle_describe_topic_partitions(ctx: RequestContext, request: Any) -> Any:
    """Kafka: ``DescribeTopicPartitionsRequestHandler.handleDescribeTopicPartitionsRequest`` with
    ``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse`` (every topic is authorized: no authorizer).

    Raises:
        InvalidRequestError: a cursor whose topic is not among those named, or whose partition is negative (the
            request's error response: INVALID_REQUEST for each topic named).
    """
    registry = ctx.broker.partitions
    fetch_all = not request.topics
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    if fetch_all:
        names = {topic.name for topic in registry.topics() if topic.name >= cursor_topic}
    else:
        names = {topic.name for topic in request.topics if topic.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            raise InvalidRequestError(
                f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: {cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        raise InvalidRequestError(f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor}")
    limit = max(min(ctx.broker.config["max.request.partition.size.limit"], request.response_partition_limit), 1)
    node = ctx.broker.node_id
    topic_type = ctx.response_type("DescribeTopicPartitionsResponseTopic")
    partition_type = ctx.response_type("DescribeTopicPartitionsResponsePartition")
    topics: list[Any] = []
    next_cursor = None
    remaining = limit
    for name in sorted(names):
        if remaining == 0:
            # the previous topics were answered whole: the next response starts at this one's beginning
            next_cursor = build(ctx.response_type("Cursor"), topic_name=name, partition_index=0)
            break
        topic = registry.get(name)
        if topic is None:
            if not fetch_all:
                try:
                    validate_topic(name)
                    code = ErrorCode.unknown_topic_or_partition
                except InvalidTopicError:
                    code = ErrorCode.invalid_topic_exception
                topics.append(build(topic_type, error_code=code, name=name, topic_id=_zero_id(),
                                    is_internal=name in INTERNAL_TOPICS, partitions=(),
                                    topic_authorized_operations=TOPIC_OPERATIONS))
            continue
        start = cursor.partition_index if name == cursor_topic and cursor is not None else 0
        upper = min(len(topic.logs), start + remaining)
        partitions = tuple(
            build(partition_type, error_code=ErrorCode.none, partition_index=p, leader_id=node,
                  leader_epoch=leader_epoch(topic.logs[p]), replica_nodes=(node,), isr_nodes=(node,),
                  eligible_leader_replicas=(), last_known_elr=(), offline_replicas=())
            for p in range(start, upper))
        topics.append(build(topic_type, error_code=ErrorCode.none, name=name, topic_id=topic.topic_id,
                            is_internal=topic.internal, partitions=partitions,
                            topic_authorized_operations=TOPIC_OPERATIONS))
        if upper < len(topic.logs):
            next_cursor = build(ctx.response_type("Cursor"), topic_name=name, partition_index=upper)
            break
        remaining -= len(partitions)
    return ctx.response(throttle_time=_NO_THROTTLE, topics=tuple(topics), next_cursor=next_cursor)
