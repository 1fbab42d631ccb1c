"""The group APIs wired to the group coordinator: each request's context turned into the coordinator's.

FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups,
DeleteGroups and OffsetDelete go to :class:`~kafkalog.broker.group_coordinator.GroupCoordinator` (Kafka:
``KafkaApis.handle*`` hand them to the ``GroupCoordinator``), with what it needs to know of the request (the
client's id and address, the version) and of the broker (its node, host and port, which FindCoordinator answers, and
its topics, against which OffsetCommit checks the partitions it is given).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final

from .context import BrokerState
from .context import RequestContext as BrokerRequestContext
from .group_coordinator import GroupCoordinator
from .group_coordinator import RequestContext as GroupRequestContext
from .protocol import ApiKey, kio_versions

__all__ = ["GROUP_APIS", "BrokerTopics", "group_context", "group_handlers"]

#: The group APIs and the coordinator method that answers each.
GROUP_APIS: Final = {
    ApiKey.FIND_COORDINATOR: "find_coordinator",
    ApiKey.JOIN_GROUP: "join_group",
    ApiKey.SYNC_GROUP: "sync_group",
    ApiKey.HEARTBEAT: "heartbeat",
    ApiKey.LEAVE_GROUP: "leave_group",
    ApiKey.OFFSET_COMMIT: "offset_commit",
    ApiKey.OFFSET_FETCH: "offset_fetch",
    ApiKey.DESCRIBE_GROUPS: "describe_groups",
    ApiKey.LIST_GROUPS: "list_groups",
    ApiKey.DELETE_GROUPS: "delete_groups",
    ApiKey.OFFSET_DELETE: "offset_delete",
}


class BrokerTopics:
    """The broker's topics as the coordinator asks about them (its ``TopicResolver``)."""

    def __init__(self, broker: BrokerState) -> None:
        self._broker = broker

    def partition_exists(self, topic: str, partition: int) -> bool:
        return self._broker.partitions.has_partition(topic, partition)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        found = self._broker.partitions.by_id(topic_id)
        return None if found is None else found.name

    def topic_id(self, topic: str) -> uuid.UUID | None:
        found = self._broker.partitions.get(topic)
        return None if found is None else found.topic_id


def group_context(ctx: BrokerRequestContext) -> GroupRequestContext:
    """The coordinators' view of a request's context."""
    broker = ctx.broker
    return GroupRequestContext(node_id=broker.node_id, host=broker.advertised_host, port=broker.advertised_port,
                               client_id=ctx.header.client_id or "", client_host=ctx.client_host,
                               api_version=ctx.api_version, topics=BrokerTopics(broker))


def group_handlers(coordinator: GroupCoordinator) -> dict[int, tuple[int, int, Callable[..., Awaitable[Any]]]]:
    """API key -> (lowest, highest version, handler) for every group API, answered by ``coordinator``."""
    handlers = {}
    for api_key, method_name in GROUP_APIS.items():
        method = getattr(coordinator, method_name)

        def handler(ctx: BrokerRequestContext, request: Any, method: Any = method) -> Awaitable[Any]:
            return method(group_context(ctx), request)  # type: ignore[no-any-return]

        lo, hi = kio_versions(api_key)  # type: ignore[misc]
        handlers[api_key] = (lo, hi, handler)
    return handlers
