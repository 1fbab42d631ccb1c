"""The topics and topic configs a KRaft metadata log records, replayed from the log dirs, read-only.

A KRaft broker or controller keeps the cluster's metadata as a Raft log, the partition dir
``__cluster_metadata-0`` in its ``metadata.log.dir`` (the first of ``log.dirs`` unless set).  Its records are
the metadata records of ``metadata/src/main/resources/common/metadata`` (Kafka 3.8.0), each a v2 record without
key whose value is framed as ``uvarint frame version (1), uvarint apiKey, uvarint version`` and the message
(:func:`~kafkalog.messages.reader.read_api_message`).  Beside the segments lie snapshots,
``<20-digit end offset>-<10-digit epoch>.checkpoint``: record batches in the same format holding the whole
state of every record below the end offset, between a ``SnapshotHeader`` and a ``SnapshotFooter`` control
record.  Of those records, these make the topics' configs:

- ``TopicRecord`` (apiKey 2): ``name``, ``topicId``: a topic is created;
- ``ConfigRecord`` (apiKey 4): ``resourceType`` (2 a topic, 4 a broker), ``resourceName`` (the topic's name;
  a broker's node id, or ``""`` for the cluster-wide default of every broker), ``name``, ``value``: one config
  set, or deleted when ``value`` is null;
- ``RemoveTopicRecord`` (apiKey 9): ``topicId``: the topic and its configs are gone (a topic created again
  under the same name is another topic, with another id and configs of its own);
- ``BeginTransactionRecord``, ``EndTransactionRecord``, ``AbortTransactionRecord`` (apiKeys 23 to 25): the
  records between a begin and an end count only once the end is read; an abort drops them.

:func:`read_metadata_log` replays a metadata log as Kafka's metadata loader does (ports, at 3.8.0):
``KafkaMetadataLog.recoverSnapshots`` (which snapshot: the latest, and there must be one at or past the log
start offset when that is above 0), ``MetadataLoader``/``MetadataBatchLoader`` (the latest snapshot, then the
log from the snapshot's end offset; the transactions), and the replays of ``TopicsDelta``,
``ConfigurationsDelta`` and ``ConfigurationDelta``.  :meth:`ClusterMetadata.topic_config` is
``KafkaConfigSchema.resolveEffectiveTopicConfigs``: for every topic property, the topic's own value, else the
first synonym the broker's own dynamic config sets (``log.cleanup.policy`` for ``cleanup.policy``, converted
where the units differ: :data:`~kafkalog.config.log_config.ALL_SERVER_CONFIG_SYNONYMS`), else the first the cluster-wide
broker default sets, else the broker's static config, else Kafka's default, each with its
:class:`ConfigSource`.  :class:`MetadataLogs` finds, for a log dir, the metadata log of its broker among the
log dirs given.

Where this differs from a broker, and why:

- the broker's static config (``server.properties``) is not in its log dirs, so no value comes from it: a
  property the metadata log does not set reads as Kafka's default (``DEFAULT_CONFIG``), which may not be what
  the broker ran with;
- every record on disk is replayed, those past the high watermark too (a broker replays committed records
  only; the high watermark of a Raft log is not written down).  A metadata transaction still open at the end
  is not applied;
- only the six record types above are decoded; the others are skipped unread, so a record type a newer Kafka
  added does not stop the replay (Kafka 3.8's loader stops on a type it does not know);
- any batch that fails its CRC or is cut short, but the partial last batch of the last segment (a write in
  progress), is an error rather than a tail to truncate: the records after it could be the ones that matter;
- a property name the topic schema does not know is left out, as Kafka's resolver leaves it out.

Errors are :class:`~kafkalog.errors.MetadataLogError`, naming the file and the offset.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .._common import ScanStop
from ..config.log_config import ALL_SERVER_CONFIG_SYNONYMS, ConfigSynonym, LogConfig
from ..errors import KafkaLogError, MetadataLogError
from ..file_message_set import FileMessageSet
from ..manager.meta_properties import META_PROPERTIES_FILE, read_properties
from ..messages import MessageReadError, read_api_message
from ..record.kraft import unsigned_varint
from ..topic import CLUSTER_METADATA_TOPIC_PARTITION, log_dir_name

__all__ = [
    "METADATA_LOG_DIR_NAME",
    "RESOURCE_BROKER",
    "RESOURCE_TOPIC",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigSource",
    "MetadataLogs",
    "MetadataOfLogDir",
    "read_metadata_log",
    "resolve_effective_topic_configs",
]

#: The metadata log's partition dir (Kafka: ``KafkaRaftServer.MetadataPartition``'s directory).
METADATA_LOG_DIR_NAME = log_dir_name(CLUSTER_METADATA_TOPIC_PARTITION)
#: ``ConfigResource.Type`` ids of a ``ConfigRecord``.
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
#: The broker resource name of the cluster-wide default (Kafka: ``ConfigResource(BROKER, "")``).
CLUSTER_DEFAULT = ""

_TOPIC_RECORD, _CONFIG_RECORD, _REMOVE_TOPIC_RECORD = 2, 4, 9
_BEGIN_TRANSACTION, _END_TRANSACTION, _ABORT_TRANSACTION = 23, 24, 25
#: The record types the replay decodes, by apiKey.
_DECODED = {
    _TOPIC_RECORD: "TopicRecord", _CONFIG_RECORD: "ConfigRecord", _REMOVE_TOPIC_RECORD: "RemoveTopicRecord",
    _BEGIN_TRANSACTION: "BeginTransactionRecord", _END_TRANSACTION: "EndTransactionRecord",
    _ABORT_TRANSACTION: "AbortTransactionRecord",
}
#: A snapshot's file name (Kafka: ``Snapshots.parse``; ``.checkpoint.part`` and ``.checkpoint.deleted`` files
#: are snapshots being written or removed, never read).
_SNAPSHOT_NAME = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint")
_SEGMENT_NAME = re.compile(r"([0-9]{20})\.log")
#: ``meta.properties``: the broker's node id (KRaft: ``node.id``; ZooKeeper mode: ``broker.id``) and cluster.
_NODE_ID_PROPS = ("node.id", "broker.id")
_CLUSTER_ID_PROP = "cluster.id"


class ConfigSource(enum.Enum):
    """Where an effective topic property came from (Kafka: ``ConfigEntry.ConfigSource``, the members a topic's
    config can have)."""

    DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
    DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
    DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
    STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
    DEFAULT_CONFIG = "DEFAULT_CONFIG"


class ConfigEntry(NamedTuple):
    """One effective topic property (Kafka: ``ConfigEntry``, its name, value and source; ``synonym`` is the
    broker property the value was read from, when it came from a broker's config).  Kafka's entry also
    carries the type, documentation and sensitivity a ``DescribeConfigs`` answer shows; kafkalog shows none."""

    name: str
    value: str | None
    source: ConfigSource
    synonym: str | None = None


def resolve_effective_topic_configs(
        static_node: Mapping[str, str], dynamic_cluster: Mapping[str, str], dynamic_node: Mapping[str, str],
        dynamic_topic: Mapping[str, str], *, defaults: Mapping[str, str | None] | None = None,
        synonyms: Mapping[str, Iterable[ConfigSynonym]] | None = None) -> dict[str, ConfigEntry]:
    """Every topic property's effective value and where it came from (Kafka:
    ``KafkaConfigSchema.resolveEffectiveTopicConfigs``).

    For each property of ``defaults`` (the topic schema: name -> default as a string, ``None`` for none;
    default: :class:`~kafkalog.config.log_config.LogConfig`'s): the topic's own value; else the value of the first of
    its ``synonyms`` (default: :data:`~kafkalog.config.log_config.ALL_SERVER_CONFIG_SYNONYMS`) that the node's dynamic
    config sets, converted; else the same over the cluster's dynamic default; else over the static config; else the
    default.  Names the schema does not have are ignored.
    """
    if defaults is None:
        defaults = dict(LogConfig().to_props())
    if synonyms is None:
        synonyms = ALL_SERVER_CONFIG_SYNONYMS
    layers = ((dynamic_node, ConfigSource.DYNAMIC_BROKER_CONFIG),
              (dynamic_cluster, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
              (static_node, ConfigSource.STATIC_BROKER_CONFIG))
    resolved: dict[str, ConfigEntry] = {}
    for name, default in defaults.items():
        resolved[name] = _resolve(name, default, tuple(synonyms.get(name, ())), dynamic_topic, layers)
    return resolved


def _resolve(name: str, default: str | None, synonyms: tuple[ConfigSynonym, ...], dynamic_topic: Mapping[str, str],
             layers: tuple[tuple[Mapping[str, str], ConfigSource], ...]) -> ConfigEntry:
    """Kafka: ``KafkaConfigSchema.resolveEffectiveTopicConfig`` (a layer's synonyms are all tried before the
    next layer's: a broker's own ``log.retention.hours`` wins over the cluster default's ``log.retention.ms``)."""
    if name in dynamic_topic:
        return ConfigEntry(name, dynamic_topic[name], ConfigSource.DYNAMIC_TOPIC_CONFIG)
    for configs, source in layers:
        for synonym in synonyms:
            if synonym.name in configs:
                value = configs[synonym.name]
                return ConfigEntry(name, None if value is None else synonym.converter(value), source, synonym.name)
    return ConfigEntry(name, default, ConfigSource.DEFAULT_CONFIG)


@dataclass(frozen=True)
class ClusterMetadata:
    """The cluster's topics and configs as a metadata log leaves them (Kafka: the ``TopicsImage`` and
    ``ConfigurationsImage`` of a ``MetadataImage``).

    ``path`` is the ``__cluster_metadata-0`` dir, ``snapshot`` the snapshot the replay started from (``None``:
    the log from offset 0), ``end_offset`` the offset after the last record replayed; ``topic_ids`` maps each
    live topic to its id, ``configs`` each ``(resource type, resource name)`` to its configs.
    """

    path: Path
    snapshot: Path | None
    end_offset: int
    topic_ids: Mapping[str, str]
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(repr=False)

    def broker_config(self, node_id: int | None) -> dict[str, str]:
        """A broker's own dynamic config (``None``: no broker's)."""
        return dict(self.configs.get((RESOURCE_BROKER, str(node_id)), {})) if node_id is not None else {}

    def topic_config(self, topic: str, node_id: int | None = None) -> dict[str, ConfigEntry] | None:
        """Every topic property's effective value for ``topic`` on broker ``node_id`` (its own dynamic config is
        taken when given), as :func:`resolve_effective_topic_configs` resolves it with no static config; ``None``
        when the metadata log has no such topic."""
        if topic not in self.topic_ids:
            return None
        return resolve_effective_topic_configs(
            {}, self.configs.get((RESOURCE_BROKER, CLUSTER_DEFAULT), {}), self.broker_config(node_id),
            self.configs.get((RESOURCE_TOPIC, topic), {}))

    def topic_props(self, topic: str, node_id: int | None = None) -> dict[str, str] | None:
        """The properties the metadata log sets for ``topic`` (its own, or its brokers' defaults), as a
        :class:`~kafkalog.config.log_config.LogConfig` takes them; the others are left to Kafka's defaults."""
        entries = self.topic_config(topic, node_id)
        if entries is None:
            return None
        return {name: entry.value for name, entry in entries.items()
                if entry.source is not ConfigSource.DEFAULT_CONFIG and entry.value is not None}

    def topic_configs(self, node_id: int | None = None) -> dict[str, dict[str, str]]:
        """:meth:`topic_props` of every topic: what :class:`~kafkalog.manager.log_manager.LogManager` takes as
        ``topic_configs`` to open a KRaft broker's log dirs with the configs its topics have."""
        out: dict[str, dict[str, str]] = {}
        for topic in sorted(self.topic_ids):
            props = self.topic_props(topic, node_id)
            assert props is not None
            out[topic] = props
        return out


# -- the replay -----------------------------------------------------------------------------------------

class _Image:
    """The state the replay builds (Kafka: the deltas of ``TopicsDelta`` and ``ConfigurationsDelta`` applied
    record by record), and the metadata transaction under way."""

    def __init__(self) -> None:
        self.topic_names: dict[str, str] = {}  # topic id -> name
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.transaction: list[tuple[int, dict[str, Any], str]] | None = None

    def replay(self, api_key: int, message: dict[str, Any], where: str) -> None:
        """Kafka: ``MetadataBatchLoader.replay``: a transaction's records wait for its end."""
        if api_key == _BEGIN_TRANSACTION:
            if self.transaction is not None:
                raise MetadataLogError(f"Encountered BeginTransactionRecord while already in a transaction ({where})")
            self.transaction = []
        elif api_key == _END_TRANSACTION:
            if self.transaction is None:
                raise MetadataLogError(
                    f"Encountered EndTransactionRecord without having seen a BeginTransactionRecord ({where})")
            pending, self.transaction = self.transaction, None
            for pending_key, pending_message, pending_where in pending:
                self._apply(pending_key, pending_message, pending_where)
        elif api_key == _ABORT_TRANSACTION:
            if self.transaction is None:
                raise MetadataLogError(
                    f"Encountered AbortTransactionRecord without having seen a BeginTransactionRecord ({where})")
            self.transaction = None
        elif self.transaction is not None:
            self.transaction.append((api_key, message, where))
        else:
            self._apply(api_key, message, where)

    def _apply(self, api_key: int, message: dict[str, Any], where: str) -> None:
        if api_key == _TOPIC_RECORD:
            # TopicsDelta.replay(TopicRecord)
            self.topic_names[message["topicId"]] = message["name"]
        elif api_key == _CONFIG_RECORD:
            # ConfigurationsDelta.replay(ConfigRecord) + ConfigurationDelta: a null value deletes the config;
            # a resource left without configs is dropped from the image.
            resource = (message["resourceType"], message["resourceName"])
            configs = self.configs.setdefault(resource, {})
            if message["value"] is None:
                configs.pop(message["name"], None)
            else:
                configs[message["name"]] = message["value"]
            if not configs:
                del self.configs[resource]
        elif api_key == _REMOVE_TOPIC_RECORD:
            # TopicsDelta.replay(RemoveTopicRecord), then ConfigurationsDelta.replay(record, topicName)
            name = self.topic_names.pop(message["topicId"], None)
            if name is None:
                raise MetadataLogError(
                    f"Unable to delete topic with id {message['topicId']}: no such topic found. ({where})")
            self.configs.pop((RESOURCE_TOPIC, name), None)


def _api_key(value: bytes) -> int:
    """The apiKey of a framed metadata record, read from its first two varints; a frame Kafka would refuse is
    refused with Kafka's message (by :func:`read_api_message`, which reads the whole record)."""
    position = 0

    def take(n: int) -> bytes:
        nonlocal position
        if position + n > len(value):
            raise MessageReadError("Error while reading frame version")
        out = value[position:position + n]
        position += n
        return out

    try:
        frame_version = unsigned_varint(take)
        api_key = unsigned_varint(take) if frame_version == 1 else None
    except MessageReadError:
        frame_version = api_key = None
    if frame_version != 1 or api_key is None or api_key > 0x7FFF:
        return read_api_message(value, _DECODED)[0]  # raises Kafka's error for the frame
    return api_key


def _segments(path: Path) -> list[tuple[int, Path]]:
    return sorted((int(m.group(1)), path / name) for name in os.listdir(path)
                  if (m := _SEGMENT_NAME.fullmatch(name)) is not None)


def _latest_snapshot(path: Path) -> tuple[int, Path] | None:
    found = [((int(m.group(1)), int(m.group(2))), path / name) for name in os.listdir(path)
             if (m := _SNAPSHOT_NAME.fullmatch(name)) is not None]
    if not found:
        return None
    (offset, _epoch), snapshot = max(found)
    return offset, snapshot


def _records(file: Path, from_offset: int, last: bool) -> Iterator[tuple[int, bytes | None]]:
    """The data records of ``file`` at ``from_offset`` or past it: ``(offset, value)``.  The whole file must be
    whole batches that pass their CRC, but for the partial last batch of the ``last`` file.  One scan checks the
    file; only the batches that reach ``from_offset`` are decoded."""
    with FileMessageSet(file, writable=False) as records:
        scan = records.scan(check_crc=True, stop_on_invalid=True)
        complete = scan.stop_reason in (ScanStop.END, ScanStop.ZERO_TAIL) or (
            last and scan.stop_reason is ScanStop.PARTIAL)
        if not complete:
            try:
                records.raise_for_stop(scan)
            except KafkaLogError as e:
                raise MetadataLogError(f"{file} cannot be replayed: {e}") from e
            raise MetadataLogError(f"{file} cannot be replayed: it ends in a partial batch at position "
                                   f"{scan.stop_position} of {records.size_in_bytes()} bytes")
        wanted = scan.batches[scan.batches["last_offset"] >= from_offset]
        for _position, chunk in records.memory_chunks(wanted):
            for record in chunk.records(check_crcs=False):
                if not record.is_control and record.offset >= from_offset:
                    yield record.offset, record.value


def read_metadata_log(path: str | os.PathLike[str]) -> ClusterMetadata:
    """Replay the metadata log in the partition dir ``path`` (``__cluster_metadata-0``): its latest snapshot,
    then its records from the snapshot's end offset.

    Raises:
        MetadataLogError: the log cannot be replayed: its start is above 0 and no snapshot covers it (a copy of
            part of the log), a batch fails its CRC or is cut short, a record does not decode, a transaction
            does not nest, a topic is removed that was never created.
    """
    directory = Path(path)
    segments = _segments(directory)
    log_start = segments[0][0] if segments else 0
    snapshot = _latest_snapshot(directory)
    # KafkaMetadataLog.recoverSnapshots: a log that does not start at 0 needs a snapshot of what came before.
    if log_start > 0 and (snapshot is None or snapshot[0] < log_start):
        latest = "none" if snapshot is None else snapshot[1].name
        raise MetadataLogError(
            f"Inconsistent snapshot state in {directory}: there must be a snapshot at an offset larger than the "
            f"log start offset {log_start}, but the latest snapshot is {latest} (was only part of the metadata "
            "log copied?)")
    image = _Image()
    end_offset = 0

    def replay(file: Path, records: Iterable[tuple[int, bytes | None]], what: str) -> None:
        nonlocal end_offset
        for offset, value in records:
            where = f"{file}, {what} {offset}"
            if value is None:
                raise MetadataLogError(f"The metadata record at {where} has no value")
            try:
                api_key = _api_key(value)
                if api_key in _DECODED:
                    image.replay(api_key, read_api_message(value, _DECODED)[2], where)
            except MessageReadError as e:
                cause = f"{e}: {e.__cause__}" if e.__cause__ is not None else str(e)
                raise MetadataLogError(f"The metadata record at {where} does not decode: {cause}") from e
            if what == "offset":
                end_offset = offset + 1

    start = 0
    if snapshot is not None:
        start = end_offset = snapshot[0]
        # A snapshot's records are numbered from 0 in the file; it stands for every record below its end offset.
        replay(snapshot[1], _records(snapshot[1], 0, last=False), "snapshot record")
    for i, (_base, file) in enumerate(segments):
        following = segments[i + 1][0] if i + 1 < len(segments) else None
        if following is not None and following <= start:
            continue  # wholly below the snapshot
        replay(file, _records(file, start, last=following is None), "offset")
    return ClusterMetadata(directory, None if snapshot is None else snapshot[1], end_offset,
                           {name: topic_id for topic_id, name in image.topic_names.items()}, image.configs)


# -- which metadata log is a log dir's --------------------------------------------------------------------

@dataclass(frozen=True)
class MetadataOfLogDir:
    """The metadata log of a log dir's broker, replayed (``None`` when there is none or it cannot be read,
    ``why_not`` then saying which), and the broker's node id from the log dir's ``meta.properties``."""

    metadata: ClusterMetadata | None
    node_id: int | None
    why_not: str | None = None


def _identity(log_dir: Path) -> tuple[str | None, int | None]:
    """``(cluster.id, node id)`` of a log dir's ``meta.properties``; ``None`` for what it does not say."""
    try:
        props = read_properties(log_dir / META_PROPERTIES_FILE)
    except (OSError, KafkaLogError):
        return None, None
    node: int | None = None
    for name in _NODE_ID_PROPS:
        text = props.get(name, "").strip()
        if re.fullmatch(r"-?[0-9]{1,10}", text):
            node = int(text)
            break
    return props.get(_CLUSTER_ID_PROP) or None, node


class MetadataLogs:
    """The KRaft metadata logs of some log dirs, each replayed once, and which of them is each log dir's.

    A log dir's metadata log is the one ``metadata_log_dir`` names when it is given (a log dir holding one, or
    the ``__cluster_metadata-0`` dir itself); else the ``__cluster_metadata-0`` the log dir holds; else the one
    another of ``log_dirs`` holds whose ``meta.properties`` names the same cluster and node (a broker with
    several ``log.dirs`` keeps it in one of them, its ``metadata.log.dir``).
    """

    def __init__(self, log_dirs: Iterable[str | os.PathLike[str]],
                 metadata_log_dir: str | os.PathLike[str] | None = None) -> None:
        self._log_dirs = sorted({Path(d).absolute() for d in log_dirs})
        self._explicit: Path | None = None
        if metadata_log_dir is not None:
            given = Path(metadata_log_dir).absolute()
            self._explicit = given if given.name == METADATA_LOG_DIR_NAME else given / METADATA_LOG_DIR_NAME
        self._read: dict[Path, ClusterMetadata | str] = {}

    def _replayed(self, path: Path) -> ClusterMetadata | str:
        if path not in self._read:
            try:
                self._read[path] = read_metadata_log(path)
            except (KafkaLogError, OSError) as e:
                self._read[path] = f"its KRaft metadata log {path} cannot be read: {e}"
        return self._read[path]

    def metadata_log_of(self, log_dir: str | os.PathLike[str]) -> Path | None:
        """The ``__cluster_metadata-0`` dir of ``log_dir``'s broker, or ``None`` when none is found."""
        directory = Path(log_dir).absolute()
        if self._explicit is not None:
            return self._explicit
        own = directory / METADATA_LOG_DIR_NAME
        if own.is_dir():
            return own
        cluster, node = _identity(directory)
        if cluster is None or node is None:
            return None
        for other in self._log_dirs:
            candidate = other / METADATA_LOG_DIR_NAME
            if other != directory and candidate.is_dir() and _identity(other) == (cluster, node):
                return candidate
        return None

    def for_log_dir(self, log_dir: str | os.PathLike[str]) -> MetadataOfLogDir:
        """The replayed metadata log of ``log_dir``'s broker, with the broker's node id."""
        directory = Path(log_dir).absolute()
        node = _identity(directory)[1]
        path = self.metadata_log_of(directory)
        if path is None:
            return MetadataOfLogDir(None, node, f"no KRaft metadata log ({METADATA_LOG_DIR_NAME}) in {directory}: "
                                                "not a KRaft broker's log dir, or not the one holding its metadata log")
        if not path.is_dir():
            return MetadataOfLogDir(None, node, f"no KRaft metadata log at {path}")
        replayed = self._replayed(path)
        if isinstance(replayed, str):
            return MetadataOfLogDir(None, node, replayed)
        return MetadataOfLogDir(replayed, node)
