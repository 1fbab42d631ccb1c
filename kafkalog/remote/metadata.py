"""The ``__remote_log_metadata`` topic: what ``TopicBasedRemoteLogMetadataManager`` (the RLMM) records of
every segment a broker copies to tiered storage, decoded, and which segments it says were copied.

Ports, at Kafka 3.8.0 (the decoder of ``kafka-dump-log``, ``--remote-log-metadata-decoder``, came in 3.9.0
and prints these same objects):

- ``storage/.../metadata/storage/serialization/RemoteLogMetadataSerde`` and its transforms: each record
  value is ``AbstractApiMessageSerde``'s frame (``uvarint 1``, ``uvarint apiKey``, ``uvarint version``) then
  one of four messages (``storage/src/main/resources/message/``, vendored in ``kafkalog/messages/schemas/``):
  ``RemoteLogSegmentMetadataRecord`` (0), ``RemoteLogSegmentMetadataUpdateRecord`` (1),
  ``RemotePartitionDeleteMetadataRecord`` (2), ``RemoteLogSegmentMetadataSnapshotRecord`` (3, only in the
  RLMM's local snapshot files);
- ``storage/api/.../RemoteLogSegmentMetadata``, ``RemoteLogSegmentMetadataUpdate``,
  ``RemotePartitionDeleteMetadata``, ``RemoteLogSegmentId``, the state enums, and
  ``storage/.../RemoteLogSegmentMetadataSnapshot``: their checks, with Java's messages (a
  ``NullPointerException`` from ``Objects.requireNonNull`` without a message prints as ``null``), and
  their ``toString``, which is what the dump prints;
- ``RemoteLogMetadataCache`` / ``RemoteLogLeaderEpochState``: replaying the records, a segment is readable
  from the store once its state is ``COPY_SEGMENT_FINISHED`` and until ``DELETE_SEGMENT_STARTED``
  (:func:`copied_segments`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..messages import MessageReadError, read_api_message

__all__ = ["RemoteLogMetadata", "RemoteLogSegmentId", "RemoteLogSegmentMetadata", "RemoteLogSegmentMetadataSnapshot",
           "RemoteLogSegmentMetadataUpdate", "RemotePartitionDeleteMetadata", "TopicIdPartition",
           "copied_segment_ids", "copied_segments", "deserialize", "metadata_values"]

logger = logging.getLogger(__name__)

#: ``MetadataRecordType`` of the storage module: api key -> message schema.
SCHEMAS = {0: "RemoteLogSegmentMetadataRecord", 1: "RemoteLogSegmentMetadataUpdateRecord",
           2: "RemotePartitionDeleteMetadataRecord", 3: "RemoteLogSegmentMetadataSnapshotRecord"}
#: ``RemoteLogSegmentState`` by id.
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
#: ``RemotePartitionDeleteState`` by id.
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED", 2: "DELETE_PARTITION_FINISHED"}


class _JavaError(MessageReadError):
    """An exception a constructor throws; its text is Java's ``getMessage()``."""


def _require(value: Any, message: str | None) -> Any:
    """``Objects.requireNonNull(value, message)``."""
    if value is None:
        raise _JavaError("null" if message is None else message)
    return value


def _optional(custom: bytes | None) -> str:
    """``Optional<CustomMetadata>.toString``."""
    return "Optional.empty" if custom is None else f"Optional[CustomMetadata{{{len(custom)} bytes}}]"


def _tree_map(epochs: dict[int, int]) -> str:
    """``TreeMap.toString``: ``{0=100, 1=200}``."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(epochs.items())) + "}"


class TopicIdPartition(NamedTuple):
    """``org.apache.kafka.common.TopicIdPartition``: a partition and its topic's id, which tells a topic
    from a deleted one of the same name."""

    topic_id: str
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic_id}:{self.topic}-{self.partition}"


class RemoteLogSegmentId(NamedTuple):
    """``RemoteLogSegmentId``: one upload of a segment.

    A copy retried gets a new id, so one segment can have several; ``id`` is the uuid in Kafka's form."""

    topic_id_partition: TopicIdPartition
    id: str

    def __str__(self) -> str:
        return f"RemoteLogSegmentId{{topicIdPartition={self.topic_id_partition}, id={self.id}}}"


@dataclass(frozen=True)
class RemoteLogSegmentMetadata:
    """``RemoteLogSegmentMetadata``: a segment copied, or being copied or deleted."""

    remote_log_segment_id: RemoteLogSegmentId
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: dict[int, int]
    segment_size_in_bytes: int
    custom_metadata: bytes | None
    state: str

    def __str__(self) -> str:
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={self.remote_log_segment_id}, "
                f"startOffset={self.start_offset}, endOffset={self.end_offset}, brokerId={self.broker_id}, "
                f"maxTimestampMs={self.max_timestamp_ms}, eventTimestampMs={self.event_timestamp_ms}, "
                f"segmentLeaderEpochs={_tree_map(self.segment_leader_epochs)}, "
                f"segmentSizeInBytes={self.segment_size_in_bytes}, "
                f"customMetadata={_optional(self.custom_metadata)}, state={self.state}}}")


@dataclass(frozen=True)
class RemoteLogSegmentMetadataUpdate:
    """``RemoteLogSegmentMetadataUpdate``: a segment's new state."""

    remote_log_segment_id: RemoteLogSegmentId
    custom_metadata: bytes | None
    state: str
    event_timestamp_ms: int
    broker_id: int

    def __str__(self) -> str:
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={self.remote_log_segment_id}, "
                f"customMetadata={_optional(self.custom_metadata)}, state={self.state}, "
                f"eventTimestampMs={self.event_timestamp_ms}, brokerId={self.broker_id}}}")


@dataclass(frozen=True)
class RemotePartitionDeleteMetadata:
    """``RemotePartitionDeleteMetadata``: a partition's remote data being deleted."""

    topic_id_partition: TopicIdPartition
    state: str
    event_timestamp_ms: int
    broker_id: int

    def __str__(self) -> str:
        return (f"RemotePartitionDeleteMetadata{{topicPartition={self.topic_id_partition}, state={self.state}, "
                f"eventTimestampMs={self.event_timestamp_ms}, brokerId={self.broker_id}}}")


@dataclass(frozen=True)
class RemoteLogSegmentMetadataSnapshot:
    """``RemoteLogSegmentMetadataSnapshot`` (no partition: the snapshot file is the partition's)."""

    segment_id: str
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    custom_metadata: bytes | None
    state: str
    segment_leader_epochs: dict[int, int]

    def __str__(self) -> str:
        return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={self.segment_id}, startOffset={self.start_offset}, "
                f"endOffset={self.end_offset}, maxTimestampMs={self.max_timestamp_ms}, "
                f"segmentLeaderEpochs={_tree_map(self.segment_leader_epochs)}, "
                f"segmentSizeInBytes={self.segment_size_in_bytes}, "
                f"customMetadata={_optional(self.custom_metadata)}, state={self.state}}}")


RemoteLogMetadata = (RemoteLogSegmentMetadata | RemoteLogSegmentMetadataUpdate | RemotePartitionDeleteMetadata
                     | RemoteLogSegmentMetadataSnapshot)


def _topic_id_partition(entry: dict[str, Any]) -> TopicIdPartition:
    return TopicIdPartition(entry["id"], entry["name"], entry["partition"])


def _epochs(entries: list[dict[str, Any]]) -> dict[int, int]:
    epochs: dict[int, int] = {}
    for e in entries:  # a HashMap: a repeated epoch keeps its last offset
        epochs[e["leaderEpoch"]] = e["offset"]
    if not epochs:
        raise _JavaError("segmentLeaderEpochs can not be null or empty")
    return epochs


def _segment_metadata(m: dict[str, Any]) -> RemoteLogSegmentMetadata:
    """``RemoteLogSegmentMetadataTransform.fromApiMessageAndVersion``: the metadata is built in
    ``COPY_SEGMENT_STARTED``, then ``createWithUpdates`` with the record's state."""
    start, end = m["startOffset"], m["endOffset"]
    if start < 0:
        raise _JavaError(f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative")
    if end < start:
        raise _JavaError(f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than "
                         f"startOffset = {start}")
    epochs = _epochs(m["segmentLeaderEpochs"])
    state = _require(SEGMENT_STATES.get(m["remoteLogSegmentState"]), "state can not be null")
    segment_id = m["remoteLogSegmentId"]
    return RemoteLogSegmentMetadata(
        RemoteLogSegmentId(_topic_id_partition(segment_id["topicIdPartition"]), segment_id["id"]), start, end,
        m["brokerId"], m["maxTimestampMs"], m["eventTimestampMs"], epochs, m["segmentSizeInBytes"],
        m["customMetadata"], state)


def _segment_update(m: dict[str, Any]) -> RemoteLogSegmentMetadataUpdate:
    """``RemoteLogSegmentMetadataUpdateTransform.fromApiMessageAndVersion``."""
    segment_id = m["remoteLogSegmentId"]
    return RemoteLogSegmentMetadataUpdate(
        RemoteLogSegmentId(_topic_id_partition(segment_id["topicIdPartition"]), segment_id["id"]),
        m["customMetadata"], _require(SEGMENT_STATES.get(m["remoteLogSegmentState"]), "state can not be null"),
        m["eventTimestampMs"], m["brokerId"])


def _partition_delete(m: dict[str, Any]) -> RemotePartitionDeleteMetadata:
    """``RemotePartitionDeleteMetadataTransform.fromApiMessageAndVersion``."""
    return RemotePartitionDeleteMetadata(
        _topic_id_partition(m["topicIdPartition"]),
        _require(PARTITION_DELETE_STATES.get(m["remotePartitionDeleteState"]), None),
        m["eventTimestampMs"], m["brokerId"])


def _snapshot(m: dict[str, Any]) -> RemoteLogSegmentMetadataSnapshot:
    """``RemoteLogSegmentMetadataSnapshotTransform.fromApiMessageAndVersion``."""
    state = _require(SEGMENT_STATES.get(m["remoteLogSegmentState"]), "state can not be null")
    return RemoteLogSegmentMetadataSnapshot(
        m["segmentId"], m["startOffset"], m["endOffset"], m["maxTimestampMs"], m["brokerId"], m["eventTimestampMs"],
        m["segmentSizeInBytes"], m["customMetadata"], state, _epochs(m["segmentLeaderEpochs"]))


_TRANSFORMS: dict[int, Callable[[dict[str, Any]], RemoteLogMetadata]] = {
    0: _segment_metadata, 1: _segment_update, 2: _partition_delete, 3: _snapshot}


def deserialize(value: bytes | None) -> RemoteLogMetadata:
    """``RemoteLogMetadataSerde.deserialize``: one record value of ``__remote_log_metadata``.

    Raises:
        MessageReadError: the bytes do not read, or the objects refuse them; the message is the one Kafka's
            exception carries (what ``kafka-dump-log`` prints after ``Error at offset N, skipping.``).
    """
    if value is None:
        # Kafka's parser dies on the null value (a NullPointerException) before its serde reads anything.
        raise MessageReadError("the record has no value")
    api_key, _version, message = read_api_message(value, SCHEMAS)
    return _TRANSFORMS[api_key](message)


# -- which segments were copied (RemoteLogMetadataCache) --------------------------------------------

#: ``RemoteLogSegmentState.isValidTransition``.
_TRANSITIONS = {None: {"COPY_SEGMENT_STARTED"},
                "COPY_SEGMENT_STARTED": {"COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED"},
                "COPY_SEGMENT_FINISHED": {"DELETE_SEGMENT_STARTED"},
                "DELETE_SEGMENT_STARTED": {"DELETE_SEGMENT_FINISHED"},
                "DELETE_SEGMENT_FINISHED": set()}


def copied_segments(values: Iterable[bytes | None]) -> dict[str, RemoteLogSegmentMetadata]:
    """The segments whose data is in the store and readable, by segment id, after replaying the
    ``__remote_log_metadata`` record values in order (all its partitions, each in offset order).

    As ``RemoteLogMetadataCache`` keeps them: a segment counts once an update brings it to
    ``COPY_SEGMENT_FINISHED`` and stops counting at ``DELETE_SEGMENT_STARTED``; an update of a segment never
    added, or a transition ``RemoteLogSegmentState.isValidTransition`` refuses, is ignored with a warning
    (Kafka's consumer task logs the exception and goes on); a partition marked for deletion
    (``RemotePartitionDeleteMetadata``) drops all its segments.  Each value returned carries the segment's
    metadata with its last state and update.

    Raises:
        MessageReadError: a record that does not decode (which segment it spoke of cannot be known).
    """
    segments: dict[str, RemoteLogSegmentMetadata] = {}
    deleted: set[TopicIdPartition] = set()
    for value in values:
        record = deserialize(value)
        if isinstance(record, RemoteLogSegmentMetadata):
            key = record.remote_log_segment_id.id
            if record.state != "COPY_SEGMENT_STARTED" or key in segments:
                logger.warning("Ignoring %s: a segment is added in state COPY_SEGMENT_STARTED, once", record)
                continue
            segments[key] = record
        elif isinstance(record, RemoteLogSegmentMetadataUpdate):
            key = record.remote_log_segment_id.id
            current = segments.get(key)
            if current is None:
                logger.warning("Ignoring %s: No remote log segment metadata found for: %s", record,
                               record.remote_log_segment_id)
                continue
            if record.state != current.state and record.state not in _TRANSITIONS[current.state]:
                logger.warning("Ignoring %s: invalid transition from %s", record, current.state)
                continue
            segments[key] = RemoteLogSegmentMetadata(
                current.remote_log_segment_id, current.start_offset, current.end_offset, record.broker_id,
                current.max_timestamp_ms, record.event_timestamp_ms, current.segment_leader_epochs,
                current.segment_size_in_bytes, record.custom_metadata, record.state)
        elif isinstance(record, RemotePartitionDeleteMetadata):
            deleted.add(record.topic_id_partition)
    return {k: v for k, v in segments.items() if v.state == "COPY_SEGMENT_FINISHED"
            and v.remote_log_segment_id.topic_id_partition not in deleted}


def copied_segment_ids(values: Iterable[bytes | None]) -> frozenset[str]:
    """The ids of :func:`copied_segments`: what a layout's ``list_partitions(..., copied=...)`` takes."""
    return frozenset(copied_segments(values))


def metadata_values(partition_dirs: Iterable[str | os.PathLike[str]],
                    storage_options: Mapping[str, Any] | None = None) -> Iterator[bytes | None]:
    """The record values of ``__remote_log_metadata`` partition directories (``__remote_log_metadata-0``, ...),
    read only, each partition in offset order.  A directory may be a URL (``s3://...``), read by range with
    ``storage_options`` (:mod:`kafkalog.urls`)."""
    from ..log import Log
    from ..log.consumer_view import ConsumerView
    from ..urls.location import StorageLocation, is_url, locate
    from ..urls.partition import UrlPartition

    for path in partition_dirs:
        where = locate(path, storage_options) if is_url(path) else path
        if isinstance(where, StorageLocation):
            with UrlPartition.open(where) as remote:
                view = ConsumerView(remote.log_start_offset, remote.log_end_offset)
                segments = ((segment.log, position) for segment, position in remote.batches_from(view.start_offset))
                for record in view.records(segments):
                    yield record.value
            continue
        log = Log(path, read_only=True)
        try:
            for record in log.records():
                yield record.value
        finally:
            log.close()
