"""AlterReplicaLogDirs: a partition moved to another of the broker's log dirs, as Kafka moves it.

Ports of Kafka 3.8.0's ``ReplicaManager.alterReplicaLogDirs`` (``core/.../server/ReplicaManager.scala``),
``Partition.maybeCreateFutureReplica`` / ``maybeReplaceCurrentWithFutureReplica`` and the copying of
``ReplicaAlterLogDirsThread``, over :class:`~kafkalog.manager.LogManager`'s future logs:

1. the destination becomes the partition's preferred log dir (``LogManager.maybeUpdatePreferredLogDir``), and a
   future log is created there: ``<topic>-<partition>.<uuid>-future``, with the topic's ``partition.metadata``;
   cleaning of the partition is paused;
2. the records are copied from the partition's log to the future log, a chunk at a time
   (``replica.fetch.max.bytes``, Kafka's 1 MiB, at least one batch), as a follower appends them: their offsets,
   epochs and producer state kept; the future log's high watermark and log start offset follow the log's, and
   when retention moved the log's start past the copy, the copy starts again there (a follower's out-of-range
   fetch);
3. when the copy has the log's end offset, it is flushed and promoted (:meth:`PartitionRegistry.promote_future_log`,
   ``LogManager.replaceCurrentWithFutureLog``): renamed ``<topic>-<partition>`` in its log dir, the old log renamed
   ``-delete`` and deleted ``file.delete.delay.ms`` later, cleaning resumed.

The copy runs as a task on the broker's event loop, a chunk per turn, so produces and fetches go on meanwhile;
the promotion runs between two turns, so no append reaches the old log after the copy caught up with it (Kafka
holds the partition's ``leaderIsrUpdateLock`` there).  DescribeLogDirs shows the future log, ``is_future_key``,
while the move is under way.

Crash safety is Kafka's: until the promotion the partition's log is untouched and the copy is a ``-future``
directory, which the next start loads as a future log (never served) and whose move resumes (Kafka's
``maybeAddLogDirFetchers``); so a crash at any point of the copy loses nothing.  The promotion is two renames (see
:meth:`~kafkalog.manager.LogManager.replace_current_with_future_log`).  Where kafkalog differs: the copy is
flushed before the promotion, so that the old log is set aside only once its copy is on disk.

The answers, per partition, in Kafka's order: a topic name too long for a ``-future`` directory,
``INVALID_TOPIC_EXCEPTION``; a directory not in ``log.dirs`` (named as DescribeLogDirs names it),
``LOG_DIR_NOT_FOUND``; an offline one, or a partition whose log dir is offline, ``KAFKA_STORAGE_ERROR``; a
partition the broker has not got, ``UNKNOWN_TOPIC_OR_PARTITION``; a partition already in that directory, or
already moving there, nothing to do: ``NONE``.  A partition moving elsewhere has that move stopped and its copy
deleted first, as Kafka's does.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from kio.schema.errors import ErrorCode

from ..errors import (
    KafkaLogError,
    KafkaStorageError,
    LogDirNotFoundError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from ..manager.partition_metadata import write_partition_metadata
from ..topic import InvalidTopicError, TopicPartition, log_future_dir_name
from .context import RequestContext
from .error_codes import error_code_for
from .kio_values import build
from .topic_ids import topic_id_text

if TYPE_CHECKING:
    from ..log import Log
    from ..manager import LogManager
    from .partitions import PartitionRegistry

__all__ = ["REPLICA_FETCH_MAX_BYTES", "LogDirMoves"]

logger = logging.getLogger(__name__)

_NO_THROTTLE: Final = datetime.timedelta(0)
#: The most bytes one copy step reads (Kafka's ``replica.fetch.max.bytes`` default).
REPLICA_FETCH_MAX_BYTES: Final = 1024 * 1024
#: The longest directory name a file system takes (KAFKA-4893).
_MAX_DIR_NAME: Final = 255


class LogDirMoves:
    """The moves of partitions between log dirs (Kafka's ``ReplicaManager.alterReplicaLogDirs`` and its
    ``replicaAlterLogDirsManager``); one per broker, on its event loop."""

    def __init__(self, partitions: PartitionRegistry, fetch_max_bytes: int = REPLICA_FETCH_MAX_BYTES) -> None:
        self.partitions = partitions
        self.fetch_max_bytes = fetch_max_bytes
        self._tasks: dict[TopicPartition, asyncio.Task[None]] = {}

    @property
    def _manager(self) -> LogManager:
        return self.partitions.log_manager

    # -- the API ---------------------------------------------------------------------------------------------

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        """Kafka: ``KafkaApis.handleAlterReplicaLogDirsRequest`` (no authorizer: every request may)."""
        partition_dirs: dict[TopicPartition, str] = {}
        for wanted in request.dirs:
            for topic in wanted.topics:
                for partition in topic.partitions:
                    partition_dirs[TopicPartition(topic.name, partition)] = wanted.path
        by_topic: dict[str, list[Any]] = {}
        result_type = ctx.response_type("AlterReplicaLogDirPartitionResult")
        for tp, code in self.alter_replica_log_dirs(partition_dirs).items():
            by_topic.setdefault(tp.topic, []).append(build(result_type, partition_index=tp.partition,
                                                           error_code=code))
        topic_type = ctx.response_type("AlterReplicaLogDirTopicResult")
        return ctx.response(throttle_time=_NO_THROTTLE, results=tuple(
            build(topic_type, topic_name=name, partitions=tuple(parts)) for name, parts in by_topic.items()))

    def alter_replica_log_dirs(self, partition_dirs: Mapping[TopicPartition, str]) -> dict[TopicPartition, ErrorCode]:
        """Move each partition to its log dir (Kafka: ``ReplicaManager.alterReplicaLogDirs``): the error of
        each, ``NONE`` for a move started, or not needed."""
        results: dict[TopicPartition, ErrorCode] = {}
        for tp, destination in partition_dirs.items():
            try:
                self._alter_one(tp, destination)
                results[tp] = ErrorCode.none
            except (InvalidTopicError, LogDirNotFoundError, KafkaStorageError) as e:
                logger.warning("Unable to alter log dirs for %s: %s", tp, e)
                results[tp] = error_code_for(e)
            except Exception as e:
                logger.error("Error while changing replica dir for partition %s", tp, exc_info=e)
                results[tp] = error_code_for(e)
        return results

    def _alter_one(self, tp: TopicPartition, destination: str) -> None:
        if len(log_future_dir_name(tp)) > _MAX_DIR_NAME:
            raise InvalidTopicError("The topic name is too long.")
        manager = self._manager
        if not manager.is_log_dir_online(destination):
            raise KafkaStorageError(f"Log directory {destination} is offline")
        hosted = self.partitions.has_partition(tp.topic, tp.partition)
        if hosted:
            if manager.get_log(tp) is None:
                raise KafkaStorageError(f"Partition {tp} is offline")
            future = manager.get_log(tp, is_future=True)
            if future is not None and future.dir.parent != Path(destination):
                # the move goes elsewhere now: the one under way stops and its copy goes
                self._stop_move(tp)
                manager.delete_log(tp, is_future=True)
        manager.maybe_update_preferred_log_dir(tp, destination)
        if not hosted:
            raise UnknownTopicOrPartitionError(f"This server does not host this topic-partition: {tp}")
        if self._maybe_create_future_replica(tp, destination):
            manager.abort_and_pause_cleaning(tp)
            self._start_move(tp)

    def _maybe_create_future_replica(self, tp: TopicPartition, destination: str) -> bool:
        """Kafka: ``Partition.maybeCreateFutureReplica``: whether a future log was created for a move to start."""
        manager = self._manager
        current = self.partitions.log(tp.topic, tp.partition)
        if current.dir.parent == Path(destination):
            logger.info("Current log directory %s is same as requested log dir %s. Skipping future replica "
                        "creation.", current.dir.parent, destination)
            return False
        future = manager.get_log(tp, is_future=True)
        if future is not None:
            if future.dir.parent != Path(destination):
                raise KafkaLogError(f"The future log dir {future.dir.parent} of {tp} is different from the "
                                    f"requested log dir {destination}")
            return False
        topic = self.partitions.get(tp.topic)
        assert topic is not None
        future = manager.create_log(tp, current.config, is_future=True)
        write_partition_metadata(future.dir, topic_id_text(topic.topic_id))
        return True

    # -- the copying (ReplicaAlterLogDirsThread) -------------------------------------------------------------

    def resume(self) -> None:
        """Start the copying of every future log the log dirs hold (Kafka: ``maybeAddLogDirFetchers``): moves a
        stop or a crash interrupted go on; a future log of a partition the broker has not got is left alone."""
        for log in self._manager.all_logs():
            tp = log.topic_partition
            if log.is_future and self.partitions.has_partition(tp.topic, tp.partition):
                self._manager.abort_and_pause_cleaning(tp)
                self._start_move(tp)

    def moving(self) -> list[TopicPartition]:
        """The partitions whose move is under way."""
        return [tp for tp, task in self._tasks.items() if not task.done()]

    async def wait(self, tp: TopicPartition) -> None:
        """Return when the move of ``tp`` has finished (or at once when none is under way)."""
        task = self._tasks.get(tp)
        if task is not None:
            await asyncio.shield(task)

    async def stop(self) -> None:
        """Stop every move (their copies stay, for the next start to resume)."""
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _start_move(self, tp: TopicPartition) -> None:
        self._stop_move(tp)
        self._tasks[tp] = asyncio.get_running_loop().create_task(self._move(tp), name=f"alter-log-dir-{tp}")

    def _stop_move(self, tp: TopicPartition) -> None:
        task = self._tasks.pop(tp, None)
        if task is not None:
            task.cancel()

    async def _move(self, tp: TopicPartition) -> None:
        try:
            while not self.step(tp):
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Kafka's fetcher marks the partition failed and stops; the copy stays for a restart to resume
            logger.exception("Error while moving %s to another log dir; the move stops", tp)
        finally:
            if self._tasks.get(tp) is asyncio.current_task():
                del self._tasks[tp]

    def step(self, tp: TopicPartition) -> bool:
        """One turn of the copy of ``tp`` (Kafka: a ``ReplicaAlterLogDirsThread`` fetch and its
        ``processPartitionData``, then ``maybePromoteFutureReplica``); returns whether the move is over: the copy
        promoted, or gone (its partition deleted, or moved elsewhere)."""
        manager = self._manager
        future: Log | None = manager.get_log(tp, is_future=True)
        if future is None or not self.partitions.has_partition(tp.topic, tp.partition):
            return True
        current = self.partitions.log(tp.topic, tp.partition)
        if future.log_end_offset < current.log_start_offset or future.log_end_offset > current.log_end_offset:
            # Kafka: handleOutOfRangeError: the copy starts again at the log's start
            future.truncate_fully_and_start_at(current.log_start_offset)
        if future.log_end_offset < current.log_end_offset:
            try:
                info = current.read(future.log_end_offset, self.fetch_max_bytes)
            except OffsetOutOfRangeError:
                return False  # retention moved the start since: the next turn starts over there
            data = info.records_bytes()
            if data:
                future.append_as_follower(data)
        future.update_high_watermark(min(current.high_watermark, future.log_end_offset))
        if current.log_start_offset > future.log_start_offset:
            future.maybe_increment_log_start_offset(min(current.log_start_offset, future.high_watermark))
        if future.log_end_offset != current.log_end_offset:
            return False
        future.flush()
        self.partitions.promote_future_log(tp.topic, tp.partition)
        logger.info("Moved %s to log dir %s", tp, future.dir.parent)
        return True
