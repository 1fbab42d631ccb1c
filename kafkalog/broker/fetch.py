"""Fetch and ListOffsets: what a consumer reads, and where it starts.

Fetch is a port of ``KafkaApis.handleFetchRequest`` with ``ReplicaManager.fetchMessages``/``readFromLog`` and the
``DelayedFetch`` that makes a fetch wait (``core/.../server/``, 3.8.0), for consumers (a request whose replica id is
-1; there are no followers):

- each partition is read from its fetch offset with :meth:`~kafkalog.log.reads.LogReads.read`, bounded by the high
  watermark (``isolation_level`` 0, read_uncommitted) or the last stable offset (1, read_committed, which also gets the
  aborted transactions of what it read);
- the bytes are the segment's, as they lie in the file: nothing is decoded, recompressed or converted;
- ``partition_max_bytes`` bounds each partition and ``max_bytes`` (at most the broker's ``fetch.max.bytes``) the
  whole response, except that the first partition with data returns at least one whole batch, however large
  (KIP-74), so that a consumer never stalls behind a batch larger than its limits; a later partition whose first
  batch does not fit returns nothing rather than the part that fits (Kafka's ``checkFetchDataInfo``);
- when fewer than ``min_bytes`` are ready and no partition failed, the fetch waits until more records arrive or
  ``max_wait`` passes, then reads again (Kafka's ``DelayedFetch``, woken by every append);
- a partition that fails (unknown, a fenced epoch, an offset out of range, a read error) is answered with its error,
  no offsets (high watermark, last stable offset and log start offset -1) and an empty record set (Kafka's
  ``ReplicaManager.createLogReadResult(e)``; a consumer learns where the log starts and ends from ListOffsets);
- fetch sessions (KIP-227) are not kept: the answer's ``session_id`` is 0, which tells a client that asked for one
  that the broker made none, so it sends full fetches (the protocol allows a broker to decline sessions).

ListOffsets is ``KafkaApis.handleListOffsetRequest`` with ``Partition.fetchOffsetForTimestamp`` (3.8.0): latest is
the high watermark (read_uncommitted) or the last stable offset (read_committed); earliest the log start offset;
max-timestamp the record with the largest timestamp; any other timestamp the first record at or after it, unless
that is past what the client may read.  A partition named twice in one request is answered ``INVALID_REQUEST`` each
time it is named, as 3.8 does (a 4.4 broker answers it once).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any, Final

from kio.schema.errors import ErrorCode

from ..errors import KafkaLogError, OffsetOutOfRangeError
from ..fetch import EMPTY_RECORDS, FetchDataInfo, FetchIsolation
from ..log.reads import EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from .context import RequestContext
from .error_codes import error_code_for
from .kio_values import build
from .partitions import UnknownTopicError, leader_epoch

__all__ = ["handle_fetch", "handle_list_offsets"]

logger = logging.getLogger(__name__)

_NO_THROTTLE: Final = datetime.timedelta(0)
READ_COMMITTED: Final = 1
#: Kafka's ``ListOffsetsRequest.LATEST_TIERED_TIMESTAMP`` (v9): no tiered storage here, so no offset.
LATEST_TIERED_TIMESTAMP: Final = -5


def epoch_error(current_leader_epoch: int, log: Any) -> ErrorCode:
    """Kafka: ``Partition.checkCurrentLeaderEpoch``: a client's idea of the leader's epoch against the partition's
    (-1: the client has none, and nothing is checked)."""
    epoch = leader_epoch(log)
    if current_leader_epoch < 0 or current_leader_epoch == epoch:
        return ErrorCode.none
    return ErrorCode.fenced_leader_epoch if current_leader_epoch < epoch else ErrorCode.unknown_leader_epoch


class _Read:
    """One partition of a fetch: where it is, and what the last read found."""

    __slots__ = ("code", "index", "log", "refused", "result", "topic")

    def __init__(self, topic: Any, index: int, log: Any, refused: ErrorCode) -> None:
        # refused: the error found before any read (unknown partition, fenced epoch), which no wait changes
        self.topic, self.index, self.log, self.refused = topic, index, log, refused
        self.code = refused
        self.result: Any = None


def _resolve(ctx: RequestContext, request: Any) -> list[tuple[Any, list[tuple[Any, _Read]]]]:
    registry = ctx.broker.partitions
    by_id = ctx.api_version >= 13
    topics = []
    for fetch_topic in request.topics:
        topic = registry.by_id(fetch_topic.topic_id) if by_id else registry.get(fetch_topic.topic)
        parts = []
        for wanted in fetch_topic.partitions:
            code = ErrorCode.none
            log = None
            if topic is None:
                code = ErrorCode.unknown_topic_id if by_id else ErrorCode.unknown_topic_or_partition
            elif not 0 <= wanted.partition < len(topic.logs):
                code = ErrorCode.unknown_topic_or_partition
            else:
                log = topic.logs[wanted.partition]
                code = epoch_error(getattr(wanted, "current_leader_epoch", -1), log)
            parts.append((wanted, _Read(topic, wanted.partition, log, code)))
        topics.append((fetch_topic, parts))
    return topics


def _read_all(ctx: RequestContext, request: Any, topics: list[tuple[Any, list[tuple[Any, _Read]]]]) -> tuple[int, bool]:
    """Read every partition once (Kafka: ``readFromLog``); the bytes read, and whether any partition failed."""
    isolation = FetchIsolation.TXN_COMMITTED if request.isolation_level == READ_COMMITTED else \
        FetchIsolation.HIGH_WATERMARK
    limit = min(request.max_bytes, ctx.broker.config["fetch.max.bytes"])
    min_one_message = True
    total = 0
    failed = False
    for _, parts in topics:
        for wanted, read in parts:
            if read.refused is not ErrorCode.none:
                failed = True
                continue
            try:
                info = read.log.read(wanted.fetch_offset, min(wanted.partition_max_bytes, limit),
                                     isolation=isolation, min_one_message=min_one_message)
            except OffsetOutOfRangeError:
                read.code, read.result = ErrorCode.offset_out_of_range, None
                failed = True
                continue
            except KafkaLogError as e:
                read.code, read.result = error_code_for(e), None
                logger.warning("Error reading %s-%d at offset %d: %s", read.topic.name, read.index,
                               wanted.fetch_offset, e)
                failed = True
                continue
            if info.first_entry_incomplete:
                # Kafka's ReplicaManager.readFromLog (checkFetchDataInfo): from fetch v3 a batch the limits cut short
                # is not sent at all, since the client makes progress with the next fetch's larger limits.
                info = FetchDataInfo(info.fetch_offset_metadata, EMPTY_RECORDS)
            read.result = info
            size = info.records.size_in_bytes()
            if size > 0:
                min_one_message = False
            limit = max(0, limit - size)
            total += size
    return total, failed


def _partition_response(ctx: RequestContext, read: _Read, read_committed: bool) -> Any:
    log = read.log
    aborted = None
    records = b""
    if read.result is not None:
        records = read.result.records_bytes()
        if read_committed and read.result.aborted_transactions is not None:
            aborted_type = ctx.response_type("AbortedTransaction")
            aborted = tuple(build(aborted_type, producer_id=txn.producer_id, first_offset=txn.first_offset)
                            for txn in read.result.aborted_transactions)
    if log is None or read.code is not ErrorCode.none:
        # Kafka: ReplicaManager.createLogReadResult(e), which every read error ends in (an offset out of range
        # too, unless tiered storage holds it): no offsets of the partition with the error, and empty records,
        # not null ones (librdkafka takes a null record set for a broken response and retries for ever).
        return build(ctx.response_type("PartitionData"), partition_index=read.index, error_code=read.code,
                     high_watermark=-1, last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                     preferred_read_replica=-1, records=b"")
    return build(ctx.response_type("PartitionData"), partition_index=read.index, error_code=read.code,
                 high_watermark=log.high_watermark, last_stable_offset=log.last_stable_offset,
                 log_start_offset=log.log_start_offset, aborted_transactions=aborted, preferred_read_replica=-1,
                 records=records)


async def handle_fetch(ctx: RequestContext, request: Any) -> Any:
    if getattr(request, "replica_id", -1) >= 0 or getattr(getattr(request, "replica_state", None),
                                                            "replica_id", -1) >= 0:
        # A follower's fetch: there are no followers of a single node.
        return ctx.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.not_leader_or_follower, session_id=0,
                            responses=())
    topics = _resolve(ctx, request)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait.total_seconds(), 0.0)
    while True:
        total, failed = _read_all(ctx, request, topics)
        remaining = deadline - loop.time()
        if failed or total >= request.min_bytes or remaining <= 0 or not topics:
            break
        await ctx.broker.wait_for_data(remaining)
    read_committed = request.isolation_level == READ_COMMITTED
    responses = []
    for fetch_topic, parts in topics:
        responses.append(build(ctx.response_type("FetchableTopicResponse"), topic=getattr(fetch_topic, "topic", None),
                               topic_id=getattr(fetch_topic, "topic_id", None),
                               partitions=tuple(_partition_response(ctx, read, read_committed) for _, read in parts)))
    return ctx.response(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, session_id=0,
                        responses=tuple(responses))


async def handle_list_offsets(ctx: RequestContext, request: Any) -> Any:
    registry = ctx.broker.partitions
    read_committed = getattr(request, "isolation_level", 0) == READ_COMMITTED
    partition_type = ctx.response_type("ListOffsetsPartitionResponse")
    seen: set[tuple[str, int]] = set()
    duplicates = {(t.name, p.partition_index) for t in request.topics for p in t.partitions
                  if (t.name, p.partition_index) in seen or seen.add((t.name, p.partition_index))}  # type: ignore[func-returns-value]
    topics = []
    for wanted_topic in request.topics:
        answers = []
        for wanted in wanted_topic.partitions:
            code, timestamp, offset, epoch = ErrorCode.none, -1, -1, -1
            if (wanted_topic.name, wanted.partition_index) in duplicates:
                code = ErrorCode.invalid_request
            else:
                try:
                    log = registry.log(wanted_topic.name, wanted.partition_index)
                    code = epoch_error(getattr(wanted, "current_leader_epoch", -1), log)
                    if code is ErrorCode.none:
                        found = _offset_for_timestamp(log, wanted.timestamp, read_committed)
                        if found is not None:
                            timestamp, offset = found.timestamp, found.offset
                            epoch = found.leader_epoch if found.leader_epoch is not None else -1
                except UnknownTopicError:
                    code = ErrorCode.unknown_topic_or_partition
                except KafkaLogError as e:
                    code = error_code_for(e)
            answers.append(build(partition_type, partition_index=wanted.partition_index, error_code=code,
                                 timestamp=timestamp, offset=offset, leader_epoch=epoch, old_style_offsets=()))
        topics.append(build(ctx.response_type("ListOffsetsTopicResponse"), name=wanted_topic.name,
                            partitions=tuple(answers)))
    return ctx.response(throttle_time=_NO_THROTTLE, topics=tuple(topics))


def _offset_for_timestamp(log: Any, timestamp: int, read_committed: bool) -> Any:
    """Kafka: ``Partition.fetchOffsetForTimestamp`` for a client (its isolation level known)."""
    from ..file_message_set import TimestampAndOffset
    last_fetchable = log.last_stable_offset if read_committed else log.high_watermark
    if timestamp == LATEST_TIMESTAMP:
        return TimestampAndOffset(-1, last_fetchable, leader_epoch(log))
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return None
    found = log.fetch_offset_by_timestamp(timestamp)
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return found
    if found is not None and found.offset < last_fetchable:
        return found
    return None
