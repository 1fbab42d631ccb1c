"""What one node answers about replicas: leader elections, partition reassignments and the data directories.

A single node leads every partition with its only replica, so the answers Kafka 3.8.0's controller and broker give
here are the ones for a cluster where nothing needs to move:

- ElectLeaders (``ReplicationControlManager.electLeaders``): every partition named already has its preferred
  leader, ``ELECTION_NOT_NEEDED``; one the broker has not got, ``UNKNOWN_TOPIC_OR_PARTITION``.  A request that names
  no partitions (all of them) is answered with none, as Kafka leaves out the partitions that needed no election.
  An election type other than 0 (preferred) or 1 (unclean) is ``INVALID_REQUEST`` for the whole request.
- ListPartitionReassignments (``ReplicationControlManager.listPartitionReassignments``): no reassignment is ever
  under way: no topics.
- AlterPartitionReassignments (``ReplicationControlManager.alterPartitionReassignments``): moving a partition to
  its own replica set (``[node]``) is a no-op that succeeds; any other set is ``INVALID_REPLICA_ASSIGNMENT``
  (there is no other broker); cancelling (``replicas`` null) is ``NO_REASSIGNMENT_IN_PROGRESS``.
- DescribeLogDirs (``ReplicaManager.describeLogDirs``): each data directory, its partitions with their sizes (offset
  lag 0: the only replica is the leader), and from v4 its file system's total and usable bytes; an offline
  directory is ``KAFKA_STORAGE_ERROR`` with no topics.
"""

from __future__ import annotations

import datetime
import os
from typing import Any, Final

from kio.schema.errors import ErrorCode

from .context import RequestContext
from .kio_values import build

__all__ = ["handle_alter_partition_reassignments", "handle_describe_log_dirs", "handle_elect_leaders",
           "handle_list_partition_reassignments"]

_NO_THROTTLE: Final = datetime.timedelta(0)
#: ``ElectionType``: PREFERRED and UNCLEAN.
_ELECTION_TYPES: Final = frozenset({0, 1})


async def handle_elect_leaders(ctx: RequestContext, request: Any) -> Any:
    result_type = ctx.response_type("PartitionResult")
    election_type = getattr(request, "election_type", 0)
    if election_type not in _ELECTION_TYPES:
        return ctx.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.invalid_request,
                            replica_election_results=())
    results = []
    for wanted in request.topic_partitions or ():
        answers = []
        for partition in wanted.partitions:
            if ctx.broker.partitions.has_partition(wanted.topic, partition):
                code, message = ErrorCode.election_not_needed, "Leader election not needed for topic partition."
            else:
                code, message = ErrorCode.unknown_topic_or_partition, "The topic or partition does not exist."
            answers.append(build(result_type, partition_id=partition, error_code=code, error_message=message))
        results.append(build(ctx.response_type("ReplicaElectionResult"), topic=wanted.topic,
                             partition_result=tuple(answers)))
    return ctx.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none,
                        replica_election_results=tuple(results))


async def handle_list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    return ctx.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=())


async def handle_alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    node = ctx.broker.node_id
    partition_type = ctx.response_type("ReassignablePartitionResponse")
    responses = []
    for wanted in request.topics:
        answers = []
        for partition in wanted.partitions:
            if not ctx.broker.partitions.has_partition(wanted.name, partition.partition_index):
                code, message = ErrorCode.unknown_topic_or_partition, "The topic or partition does not exist."
            elif partition.replicas is None:
                code, message = ErrorCode.no_reassignment_in_progress, "No ongoing reassignment to cancel."
            elif list(partition.replicas) != [node]:
                code, message = ErrorCode.invalid_replica_assignment, (
                    f"Only broker {node} exists: the replicas of a partition can only be [{node}].")
            else:
                code, message = ErrorCode.none, None
            answers.append(build(partition_type, partition_index=partition.partition_index, error_code=code,
                                 error_message=message))
        responses.append(build(ctx.response_type("ReassignableTopicResponse"), name=wanted.name,
                               partitions=tuple(answers)))
    return ctx.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                        responses=tuple(responses))


async def handle_describe_log_dirs(ctx: RequestContext, request: Any) -> Any:
    manager = ctx.broker.partitions.log_manager
    wanted: dict[str, set[int]] | None = None
    if request.topics is not None:
        wanted = {}
        for topic in request.topics:
            wanted.setdefault(topic.topic, set()).update(topic.partitions)
    partition_type = ctx.response_type("DescribeLogDirsPartition")
    topic_type = ctx.response_type("DescribeLogDirsTopic")
    results = []
    by_dir = manager.logs_by_dir()
    for log_dir in manager.log_dirs:
        by_topic: dict[str, list[Any]] = {}
        for tp, log in sorted(by_dir.get(log_dir, {}).items()):
            if wanted is not None and tp.partition not in wanted.get(tp.topic, ()):
                continue
            by_topic.setdefault(tp.topic, []).append(build(
                partition_type, partition_index=tp.partition, partition_size=log.size, offset_lag=0,
                is_future_key=log.is_future))
        try:
            stats = os.statvfs(log_dir)
            total, usable = stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
        except OSError:
            total = usable = -1
        results.append(build(ctx.response_type("DescribeLogDirsResult"), error_code=ErrorCode.none,
                             log_dir=str(log_dir), total_bytes=total, usable_bytes=usable,
                             topics=tuple(build(topic_type, name=name, partitions=tuple(parts))
                                          for name, parts in by_topic.items())))
    for log_dir in manager.offline_log_dirs:
        results.append(build(ctx.response_type("DescribeLogDirsResult"), error_code=ErrorCode.kafka_storage_error,
                             log_dir=str(log_dir), total_bytes=-1, usable_bytes=-1, topics=()))
    return ctx.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, results=tuple(results))
