"""The topics and partitions of a single-node broker: their logs, their ids, and how records reach them.

Kafka spreads this over its controller (topics, their ids and partition counts in the metadata log), the
``ReplicaManager`` (``appendRecords``, the high watermark) and ``Partition`` (``appendRecordsToLeader``).  With one
node there is no replication: every partition is led here with leader epoch 0, its in-sync replicas are this node
alone, so an append is committed as soon as it is written and the high watermark moves to the log end offset at
once (Kafka's ``maybeIncrementLeaderHW`` with a one-member ISR).  That is also why a produce with ``acks=all`` is
answered as soon as its append returns: the records are in the page cache, and a broker killed with SIGKILL keeps
them (a machine that loses power does not, as a Kafka broker with one replica does not, unless ``flush.messages``
says so).

A partition's directory holds Kafka's ``partition.metadata`` with its topic's id, written when the topic is created
(:func:`~kafkalog.manager.partition_metadata.write_partition_metadata`), so that `kafkalog dump`, the Spark source and
Kafka itself read the directory as a broker's.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ..append_origin import AppendOrigin
from ..config import LogConfig
from ..errors import KafkaLogError, UnknownTopicOrPartitionError
from ..manager.partition_metadata import read_partition_metadata, write_partition_metadata
from ..topic import TopicPartition, validate_topic
from .topic_ids import new_id, topic_id_text, topic_uuid

if TYPE_CHECKING:
    from ..log import Log
    from ..log.append_info import LogAppendInfo
    from ..manager import LogManager
    from ..record import MemoryRecords
    from .metadata_log import MetadataLog

__all__ = ["INTERNAL_TOPICS", "LEADER_EPOCH", "PartitionRegistry", "Topic", "TopicExistsError", "UnknownTopicError",
           "leader_epoch"]

logger = logging.getLogger(__name__)

#: The leader epoch of a partition this broker creates: one node leads it from the start, for ever.
LEADER_EPOCH = 0


def leader_epoch(log: Log) -> int:
    """The epoch this broker leads ``log`` in: the latest of its leader-epoch cache, which :meth:`PartitionRegistry`
    assigns when it starts leading the partition (0 for a partition it created; a log another broker wrote goes on in
    that broker's latest epoch, so that its cache keeps its history), or 0 for a log with no cache (message format
    below v2)."""
    epoch = log.latest_epoch
    return LEADER_EPOCH if epoch is None else epoch
#: Kafka's internal topics (``Topic.INTERNAL_TOPICS``): listed in metadata as internal.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class TopicExistsError(KafkaLogError, ValueError):
    """A topic of that name exists (Kafka: ``TopicExistsException``, TOPIC_ALREADY_EXISTS)."""


class UnknownTopicError(UnknownTopicOrPartitionError):
    """This broker has no such topic or partition (Kafka: ``UnknownTopicOrPartitionException``)."""


@dataclasses.dataclass
class Topic:
    """A topic: its name, its id, its partitions' logs (index = partition number) and its configuration overrides."""

    name: str
    topic_id: uuid.UUID
    logs: list[Log]
    overrides: dict[str, str]

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class PartitionRegistry:
    """The broker's topics over a :class:`~kafkalog.manager.LogManager`.

    ``on_append(topic_partition)`` is called after every append that moved a log end offset (the broker wakes the
    fetches waiting for data).  Every method runs on the broker's event loop.
    """

    def __init__(self, log_manager: LogManager, topic_defaults: LogConfig, *,
                 on_append: Callable[[TopicPartition], None] | None = None,
                 metadata: MetadataLog | None = None) -> None:
        self.log_manager = log_manager
        self.topic_defaults = topic_defaults
        self.on_append = on_append
        self.metadata = metadata
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._load()

    def _load(self) -> None:
        """The topics of the metadata log and of the data directories, made to agree.

        A topic is created in the metadata log before its partitions' logs, and deleted from its logs before the
        metadata log (:meth:`create_topic`, :meth:`delete_topic`), so a crash leaves one of two things: a topic the
        metadata log has and no directory holds, whose creation was never answered, and is removed; or
        directories of a topic the metadata log has not got (its deletion was never answered, or the directories
        come from elsewhere: a real broker's, kafkalog's writer), which are taken on as a topic with no overrides.
        """
        recorded = self.metadata.topic_ids if self.metadata is not None else {}
        overrides = self.metadata.topic_overrides() if self.metadata is not None else {}
        by_topic: dict[str, dict[int, Log]] = {}
        for log in self.log_manager.all_logs():
            if log.is_future:
                continue  # a move under way: the copy is not the partition's log until it is promoted
            tp = log.topic_partition
            by_topic.setdefault(tp.topic, {})[tp.partition] = log
        for name, logs in sorted(by_topic.items()):
            count = max(logs) + 1
            missing = [p for p in range(count) if p not in logs]
            for p in missing:  # a partition dir lost since: recreated empty, as a broker that leads it would
                logger.warning("Partition %s-%d has no log in any data dir; creating it empty", name, p)
                logs[p] = self.log_manager.create_log(TopicPartition(name, p), self._config(name, overrides.get(name)),
                                                      is_new=True)
            ids = {found for log in logs.values() if (found := read_partition_metadata(log.dir)) is not None}
            if len(ids) > 1:
                raise KafkaLogError(f"The partitions of topic {name} record different topic ids: {sorted(ids)}")
            if name in recorded:
                topic_id = recorded[name]
                if ids and topic_uuid(next(iter(ids))) != topic_id:
                    raise KafkaLogError(f"The partitions of topic {name} record topic id {next(iter(ids))}, but the "
                                        f"metadata log gives {topic_id_text(topic_id)}")
            else:
                topic_id = topic_uuid(ids.pop()) if ids else new_id()
                logger.info("Taking on topic %s (%d partition(s)) found in the data directories", name, count)
                if self.metadata is not None:
                    self.metadata.create_topic(name, topic_id, count, {})
            topic = Topic(name, topic_id, [logs[p] for p in range(count)], dict(overrides.get(name, {})))
            for log in topic.logs:
                self._ensure_partition_metadata(log, topic_id)
                self._commit_all(log)
                self._become_leader(log)
            self._add(topic)
        for name, topic_id in sorted(recorded.items()):
            if name not in by_topic and self.metadata is not None:
                logger.warning("Topic %s is in the metadata log but in no data directory: its creation did not "
                               "finish; removing it", name)
                self.metadata.remove_topic(topic_id)

    def _config(self, name: str, overrides: Mapping[str, str] | None) -> LogConfig:
        if not overrides:
            return self.topic_defaults
        return LogConfig.from_props(self.topic_defaults.to_props(), overrides)

    @staticmethod
    def _ensure_partition_metadata(log: Log, topic_id: uuid.UUID) -> None:
        if read_partition_metadata(log.dir) is None:
            write_partition_metadata(log.dir, topic_id_text(topic_id))

    @staticmethod
    def _commit_all(log: Log) -> None:
        # One replica: what the log holds after recovery is what every acknowledged produce wrote, and more.
        log.update_high_watermark(log.log_end_offset)

    @staticmethod
    def _become_leader(log: Log) -> None:
        """Kafka: ``Partition.makeLeader``: the leader's epoch starts at the log end offset in its leader-epoch
        cache, so that OffsetForLeaderEpoch answers even a partition nothing was written to yet."""
        log.maybe_assign_epoch_start_offset(leader_epoch(log), log.log_end_offset)

    def _add(self, topic: Topic) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    # -- lookups ---------------------------------------------------------------------------------------------

    def topics(self) -> list[Topic]:
        """Every topic, by name."""
        return [self._topics[name] for name in sorted(self._topics)]

    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def has_partition(self, name: str, partition: int) -> bool:
        """Whether this broker has ``name``'s ``partition``."""
        topic = self._topics.get(name)
        return topic is not None and 0 <= partition < len(topic.logs)

    def log(self, name: str, partition: int) -> Log:
        """The log of ``name``'s ``partition``.

        Raises:
            UnknownTopicError: no such topic or partition.
        """
        topic = self._topics.get(name)
        if topic is None or not 0 <= partition < len(topic.logs):
            raise UnknownTopicError(f"This server does not host this topic-partition: {name}-{partition}")
        return topic.logs[partition]

    # -- topics ----------------------------------------------------------------------------------------------

    def validate_new_topic(self, name: str, partitions: int, overrides: Mapping[str, str]) -> LogConfig:
        """The configuration a topic of these settings would have; raises what creating it would raise
        (Kafka's ``CreateTopicsRequest`` checks: the name, the partition count, the configs)."""
        validate_topic(name)
        if name in self._topics:
            raise TopicExistsError(f"Topic '{name}' already exists.")
        if partitions < 1:
            raise KafkaLogError("Number of partitions must be larger than 0.")
        return self._config(name, overrides)

    def create_topic(self, name: str, partitions: int, overrides: Mapping[str, str] | None = None) -> Topic:
        """Create a topic of ``partitions`` empty partitions with these configuration overrides.

        Raises:
            TopicExistsError, InvalidTopicError, ConfigError: as Kafka's CreateTopics refuses.
        """
        overrides = dict(overrides or {})
        config = self.validate_new_topic(name, partitions, overrides)
        topic = Topic(name, new_id(), [], overrides)
        if self.metadata is not None:
            self.metadata.create_topic(name, topic.topic_id, partitions, overrides)
        for p in range(partitions):
            log = self.log_manager.create_log(TopicPartition(name, p), config, is_new=True)
            self._ensure_partition_metadata(log, topic.topic_id)
            self._become_leader(log)
            topic.logs.append(log)
        self._add(topic)
        logger.info("Created topic %s with %d partition(s) and id %s", name, partitions, topic_id_text(topic.topic_id))
        return topic

    def add_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions (Kafka: CreatePartitions)."""
        topic = self._topics[name]
        config = self._config(name, topic.overrides)
        start = len(topic.logs)
        for p in range(start, total):
            log = self.log_manager.create_log(TopicPartition(name, p), config, is_new=True)
            self._ensure_partition_metadata(log, topic.topic_id)
            self._become_leader(log)
            topic.logs.append(log)
        if self.metadata is not None:
            self.metadata.add_partitions(topic.topic_id, start, total)

    def delete_topic(self, name: str) -> Topic:
        """Remove a topic; its dirs are renamed ``-delete`` now and removed ``file.delete.delay.ms`` later."""
        topic = self._topics.pop(name)
        del self._by_id[topic.topic_id]
        for log in topic.logs:
            self.log_manager.delete_log(log.topic_partition)
            # a move under way stops with its partition (Kafka's stopPartitions deletes the future log too)
            if self.log_manager.get_log(log.topic_partition, is_future=True) is not None:
                self.log_manager.delete_log(log.topic_partition, is_future=True)
        if self.metadata is not None:
            self.metadata.remove_topic(topic.topic_id)
        logger.info("Deleted topic %s", name)
        return topic

    def set_overrides(self, name: str, overrides: Mapping[str, str]) -> None:
        """Replace a topic's configuration overrides and apply them to its logs."""
        topic = self._topics[name]
        config = self._config(name, overrides)
        if self.metadata is not None:
            self.metadata.set_overrides(name, topic.overrides, overrides)
        topic.overrides = dict(overrides)
        for log in topic.logs:
            log.update_config(config)
            future = self.log_manager.get_log(log.topic_partition, is_future=True)
            if future is not None:
                future.update_config(config)

    def promote_future_log(self, name: str, partition: int) -> Log:
        """Make the future log of ``name``'s ``partition`` (a move to another log dir that has caught up) the
        partition's log (Kafka: ``Partition.maybeReplaceCurrentWithFutureReplica`` then
        ``LogManager.replaceCurrentWithFutureLog``), and return it.  Run on the broker's event loop between two
        appends, so nothing is written to the old log after the copy caught up with it.

        Raises:
            UnknownTopicError: no such topic or partition.
            KafkaStorageError: the partition has no future log, or a rename failed.
        """
        current = self.log(name, partition)
        epoch = leader_epoch(current)
        future = self.log_manager.get_log(current.topic_partition, is_future=True)
        if future is not None:
            # the copy holds the epochs of the batches it copied; the epoch this node leads in goes with it
            future.maybe_assign_epoch_start_offset(epoch, future.log_end_offset)
        self.log_manager.replace_current_with_future_log(current.topic_partition)
        promoted = self.log_manager.get_log(current.topic_partition)
        assert promoted is not None
        self._topics[name].logs[partition] = promoted
        return promoted

    # -- records ---------------------------------------------------------------------------------------------

    def append(self, log: Log, records: MemoryRecords, *, origin: AppendOrigin = AppendOrigin.CLIENT,
               required_acks: int = -1) -> LogAppendInfo:
        """Append ``records`` to ``log`` as its leader (Kafka: ``Partition.appendRecordsToLeader``): offsets
        assigned, in the partition's leader epoch; then the high watermark moves to the log end offset (one in-sync
        replica) and the waiting fetches are told."""
        info = log.append(records, leader_epoch=leader_epoch(log), origin=origin)
        log.update_high_watermark(log.log_end_offset)
        if self.on_append is not None:
            self.on_append(log.topic_partition)
        return info

    # -- the coordinators' logs (CoordinatorLogs) ------------------------------------------------------------

    def ensure_internal_topic(self, name: str, partitions: int, configs: Mapping[str, str]) -> None:
        """Create an internal topic (``__consumer_offsets``, ``__transaction_state``) if it does not exist."""
        if name not in self._topics:
            self.create_topic(name, partitions, configs)

    def append_as_coordinator(self, name: str, partition: int, records: MemoryRecords) -> LogAppendInfo:
        """A coordinator's append to its topic (Kafka: ``AppendOrigin.COORDINATOR``)."""
        return self.append(self.log(name, partition), records, origin=AppendOrigin.COORDINATOR)

    def all_partitions(self) -> Iterable[tuple[Topic, int, Log]]:
        for topic in self.topics():
            for p, log in enumerate(topic.logs):
                yield topic, p, log
