"""The broker's metadata log: its topics, their ids, partitions and configurations, kept as a KRaft node keeps them.

A KRaft broker learns its topics from the cluster's metadata log, the partition dir ``__cluster_metadata-0`` in its
first data directory (``metadata.log.dir``): ``TopicRecord``, ``PartitionRecord``, ``ConfigRecord`` and
``RemoveTopicRecord`` (``metadata/src/main/resources/common/metadata``, 3.8.0), each the value of a v2 record with
no key, framed as ``uvarint frame version (1), uvarint apiKey, uvarint version`` and the message
(``MetadataRecordSerde``).  One node is its own controller here, so the broker writes those records itself, as the
Raft leader appends them (origin ``raft_leader``, leader epoch 1, or the latest epoch of a log a real quorum
wrote), one batch per change so that a change is whole
or absent after a crash:

- a topic created: its ``TopicRecord``, a ``PartitionRecord`` per partition (replicas, in-sync replicas and leader
  this node, leader epoch 0), a ``ConfigRecord`` per configuration override;
- partitions added: their ``PartitionRecord``;
- a configuration changed: a ``ConfigRecord`` per property (a null value removes the override);
- a topic deleted: its ``RemoveTopicRecord``.

On start the log is replayed with kafkalog's reader of KRaft metadata
(:func:`~kafkalog.tools.cluster_metadata.read_metadata_log`), which gives every live topic's id and configuration:
so a restarted broker keeps ``cleanup.policy=compact`` on the topics created so, and ``kafkalog clean`` and
``kafkalog verify`` find a topic's policy in the same place as in a real broker's data directory.

What a real KRaft log has that this one has not: the Raft control records (``LeaderChangeMessage``, the voter
set), the ``quorum-state`` file, snapshots, and the records of brokers, features and ACLs.  So a Kafka broker
pointed at these data directories would not take this log as its quorum's; kafkalog's readers do.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..append_origin import AppendOrigin
from ..config import LogConfig
from ..fsutil import DirLock
from ..log import Log
from ..messages import schema
from ..messages.writer import write_message
from ..record import MemoryRecords
from ..tools.cluster_metadata import ClusterMetadata, read_metadata_log
from ..topic import CLUSTER_METADATA_TOPIC_PARTITION
from .topic_ids import topic_id_text, topic_uuid
from .wire_writer import uvarint

__all__ = ["RAFT_LEADER_EPOCH", "MetadataLog"]

logger = logging.getLogger(__name__)

#: The epoch this node leads the metadata log in (the first epoch a KRaft quorum elects).
RAFT_LEADER_EPOCH: Final = 1
#: ``ConfigResource.Type.TOPIC``.
TOPIC_RESOURCE: Final = 2
_FRAME_VERSION: Final = 1


def _record(name: str, data: Mapping[str, Any], version: int = 0) -> bytes:
    """A metadata record's value (Kafka: ``MetadataRecordSerde.serialize``)."""
    spec = schema(name)
    assert spec.api_key is not None
    return uvarint(_FRAME_VERSION) + uvarint(spec.api_key) + uvarint(version) + write_message(spec, data, version)


class MetadataLog:
    """``__cluster_metadata-0`` in ``log_dir``, opened (or created) for this node to read and append to."""

    def __init__(self, log_dir: str | Path, node_id: int) -> None:
        self.path = Path(log_dir) / str(CLUSTER_METADATA_TOPIC_PARTITION)
        self.node_id = node_id
        self.image: ClusterMetadata | None = read_metadata_log(self.path) if self.path.exists() else None
        self._log: Log | None = None
        self.epoch = RAFT_LEADER_EPOCH

    def open(self, dir_lock: DirLock | None) -> None:
        """Open the log for appending, under the lock its data directory's manager holds (``dir_lock``).  It is
        recovered from its start, as a log whose shutdown is not known to have been clean: it is small."""
        # No retention: a metadata log without snapshots must keep every record to be replayed.
        self._log = Log(self.path, LogConfig({"retention.ms": "-1", "retention.bytes": "-1"}), dir_lock=dir_lock,
                        had_clean_shutdown=False, topic_partition=CLUSTER_METADATA_TOPIC_PARTITION)
        # A log a real quorum wrote has its own epochs: go on in the latest, never back to an older one.
        self.epoch = max(RAFT_LEADER_EPOCH, self._log.latest_epoch or 0)

    @property
    def topic_ids(self) -> dict[str, uuid.UUID]:
        """Every live topic's id, as the log last replayed says."""
        if self.image is None:
            return {}
        return {name: topic_uuid(text) for name, text in self.image.topic_ids.items()}

    def topic_overrides(self) -> dict[str, dict[str, str]]:
        """Every live topic's configuration overrides (its own ``ConfigRecord`` values)."""
        if self.image is None:
            return {}
        return {name: dict(self.image.configs.get((TOPIC_RESOURCE, name), {})) for name in self.image.topic_ids}

    def _append(self, values: list[bytes]) -> None:
        assert self._log is not None, "the metadata log is not open"
        records = MemoryRecords.with_records([(None, v) for v in values],
                                             partition_leader_epoch=self.epoch)
        self._log.append(records, origin=AppendOrigin.RAFT_LEADER, leader_epoch=self.epoch)
        # The controller's write is committed once the quorum (this node) has it on disk.
        self._log.flush()
        self._log.update_high_watermark(self._log.log_end_offset)

    def _partition(self, topic_id: uuid.UUID, partition: int) -> bytes:
        node = self.node_id
        return _record("PartitionRecord", {"partitionId": partition, "topicId": topic_id_text(topic_id),
                                           "replicas": [node], "isr": [node], "removingReplicas": [],
                                           "addingReplicas": [], "leader": node, "leaderEpoch": 0,
                                           "partitionEpoch": 0})

    def create_topic(self, name: str, topic_id: uuid.UUID, partitions: int, overrides: Mapping[str, str]) -> None:
        values = [_record("TopicRecord", {"name": name, "topicId": topic_id_text(topic_id)})]
        values += [self._partition(topic_id, p) for p in range(partitions)]
        values += [self._config(name, key, value) for key, value in sorted(overrides.items())]
        self._append(values)

    def add_partitions(self, topic_id: uuid.UUID, start: int, end: int) -> None:
        self._append([self._partition(topic_id, p) for p in range(start, end)])

    @staticmethod
    def _config(topic: str, name: str, value: str | None) -> bytes:
        return _record("ConfigRecord", {"resourceType": TOPIC_RESOURCE, "resourceName": topic, "name": name,
                                        "value": value})

    def set_overrides(self, topic: str, old: Mapping[str, str], new: Mapping[str, str]) -> None:
        changes = [self._config(topic, key, value) for key, value in sorted(new.items()) if old.get(key) != value]
        changes += [self._config(topic, key, None) for key in sorted(old) if key not in new]
        if changes:
            self._append(changes)

    def remove_topic(self, topic_id: uuid.UUID) -> None:
        self._append([_record("RemoveTopicRecord", {"topicId": topic_id_text(topic_id)})])

    def close(self) -> None:
        if self._log is not None:
            log, self._log = self._log, None
            log.flush()
            log.close()
