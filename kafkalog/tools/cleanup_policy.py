"""Whether a compaction may touch a partition dir: its ``cleanup.policy``, where that was said, and why not.

Kafka's cleaner compacts a partition only when its topic's ``cleanup.policy`` holds ``compact`` (Kafka 3.8:
``LogCleanerManager.grabFilthiestCompactedLog`` takes ``log.config.compact`` logs only), and never a Raft log:
the KRaft metadata log is not in the ``LogManager`` at all (``LogManager.loadLogs`` skips
``__cluster_metadata``); its controller bounds it with snapshots instead.  A topic without keys, compacted,
loses every record (the cleaner drops a record without key, ``LogCleaner.shouldRetainRecord``), and a
compacted metadata log loses the cluster.  So ``kafkalog clean`` and the Spark ``compact()`` job ask
:func:`decide_cleanup` for each partition, which decides in this order:

1. a Raft log (:func:`raft_log`: the ``__cluster_metadata`` topic, a dir holding a ``quorum-state`` file or
   KRaft snapshots, or whose ``partition.metadata`` names the metadata topic's id) is refused, whatever the
   user says;
2. the config is the metadata log's effective config of the topic (:mod:`kafkalog.tools.cluster_metadata`:
   the topic's own configs over its broker's and the cluster's dynamic defaults, over Kafka's defaults), when
   the log dirs hold the KRaft metadata log of the partition's broker and it knows the topic, by the id the
   dir's ``partition.metadata`` records when there is one (a dir left from a deleted topic of the same name
   is not that topic);
3. what the user says (``--config``; ``config`` and ``topic_configs``) is laid over it, and wins: an explicit
   value is meant to override, and a note says so when it overrides a different ``cleanup.policy``;
4. a partition whose policy neither said is not compacted, with a line saying why and how to give it;
5. one whose policy does not hold ``compact`` is not compacted either, as Kafka's cleaner leaves it alone.

``min.cleanable.dirty.ratio`` is 0 unless the user says otherwise (whatever the metadata log says): asking for
a compaction is asking for it now.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config.config_def import ConfigError
from ..config.log_config import CLEANUP_POLICY_CONFIG, MIN_CLEANABLE_DIRTY_RATIO_CONFIG, LogConfig
from ..errors import KafkaLogError
from ..manager.partition_metadata import read_partition_metadata
from ..topic import CLUSTER_METADATA_TOPIC_NAME, TopicPartition
from .cluster_metadata import ClusterMetadata, ConfigEntry, ConfigSource, MetadataLogs

__all__ = ["METADATA_TOPIC_ID", "QUORUM_STATE_FILE", "CleanupDecision", "UserConfig", "decide_cleanup", "raft_log"]

#: The topic id of the metadata topic (Kafka: ``Uuid.METADATA_TOPIC_ID``, ``new Uuid(0L, 1L)``).
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
#: The file a Raft replica keeps its election state in, in the partition dir (Kafka: ``FileQuorumStateStore``).
QUORUM_STATE_FILE = "quorum-state"
_RAFT_SNAPSHOT = re.compile(r"[0-9]{20}-[0-9]{10}\.checkpoint(\.part|\.deleted)?")

#: What the user said: ``(how it was said, e.g. "--config", the topic properties)``, the later winning.
UserConfig = tuple[str, Mapping[str, str]]


def raft_log(path: str | os.PathLike[str], topic_partition: TopicPartition) -> str | None:
    """Why the partition dir ``path`` is a Raft log, in words; ``None`` when it is not one."""
    directory = Path(path)
    if topic_partition.topic == CLUSTER_METADATA_TOPIC_NAME:
        return "it is the KRaft metadata log"
    if (directory / QUORUM_STATE_FILE).exists():
        return f"it is a Raft log (it holds a {QUORUM_STATE_FILE} file)"
    if directory.is_dir() and any(_RAFT_SNAPSHOT.fullmatch(name) for name in os.listdir(directory)):
        return "it is a Raft log (it holds KRaft snapshots)"
    try:
        topic_id = read_partition_metadata(directory)
    except (KafkaLogError, OSError):
        topic_id = None
    if topic_id == METADATA_TOPIC_ID:
        return "it is a Raft log (its partition.metadata names the metadata topic's id)"
    return None


@dataclass(frozen=True)
class CleanupDecision:
    """What :func:`decide_cleanup` decided for one partition dir.

    ``config`` is the topic config to compact with (``None`` when the partition is not compacted);
    ``cleanup_policy`` the policy as a property value (``"compact,delete"``; ``None`` when not known) and
    ``source`` where it came from, in words; ``skipped`` why the partition is not compacted and how to have it
    compacted (``None`` when it is); ``notes`` lines the user should see either way (a value of theirs
    overriding the metadata log's).  ``kind`` sorts the outcome: ``"compact"``; ``"raft"`` (refused);
    ``"unknown"`` (no policy known); ``"bad-config"`` (the metadata log's config does not parse);
    ``"no-compact"`` (a policy without ``compact``, which Kafka's cleaner also leaves alone).
    """

    topic_partition: TopicPartition
    path: Path
    kind: str
    config: dict[str, str] | None
    cleanup_policy: str | None
    source: str | None
    skipped: str | None
    notes: tuple[str, ...] = ()

    @property
    def compacts(self) -> bool:
        return self.skipped is None


def _metadata_source(entry: ConfigEntry, metadata: ClusterMetadata, node_id: int | None) -> str:
    where = f"the KRaft metadata log {metadata.path}"
    if entry.source is ConfigSource.DYNAMIC_TOPIC_CONFIG:
        return f"the topic's config in {where}"
    if entry.source is ConfigSource.DYNAMIC_BROKER_CONFIG:
        return f"broker {node_id}'s {entry.synonym} in {where}"
    if entry.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG:
        return f"the cluster's default {entry.synonym} in {where}"
    return (f"Kafka's default: neither the topic nor its brokers set it in {where}, and a broker's "
            "server.properties is not in its log dirs")


def _policies(value: str) -> frozenset[str] | None:
    """The policies a ``cleanup.policy`` value names, to compare two of them; ``None`` when it does not parse."""
    try:
        return frozenset(p.lower() for p in LogConfig({CLEANUP_POLICY_CONFIG: value}).cleanup_policy)
    except ConfigError:
        return None


def decide_cleanup(path: str | os.PathLike[str], topic_partition: TopicPartition, *, user: Sequence[UserConfig],
                   metadata_logs: MetadataLogs, hint: Callable[[str, str], str]) -> CleanupDecision:
    """Whether to compact the partition dir ``path``, and with which config (see the module docstring).

    ``user`` is what the user said, in order of precedence (the later wins); ``metadata_logs`` finds the
    partition's metadata log (read only when needed); ``hint(name, value)`` is how the user would set a property
    (``--config cleanup.policy=compact``), for the lines that say why a partition is not compacted.

    Raises:
        ConfigError: what the user said does not parse (what the metadata log says is not the user's to fix:
            a partition whose metadata-log config does not parse is not compacted, and says why).
    """
    directory = Path(path)
    tp = topic_partition
    to_compact = hint(CLEANUP_POLICY_CONFIG, "compact")
    raft = raft_log(directory, tp)
    if raft is not None:
        return CleanupDecision(tp, directory, "raft", None, None, None,
                               f"{raft}, a Raft log, which Kafka's cleaner never compacts (its controller "
                               "bounds it with snapshots); no config changes that")
    said: dict[str, str] = {}
    said_by: dict[str, str] = {}
    for label, props in user:
        for name, value in props.items():
            said[name] = str(value)
            said_by[name] = label
    LogConfig(said)  # the user's own mistakes are theirs to hear about, as an error

    found = metadata_logs.for_log_dir(directory.parent)
    from_metadata: dict[str, str] = {}
    unknown_because = found.why_not
    metadata_policy: tuple[str, str] | None = None  # (value, where it came from)
    if found.metadata is not None:
        metadata = found.metadata
        expected_id = metadata.topic_ids.get(tp.topic)
        try:
            dir_id = read_partition_metadata(directory)
        except (KafkaLogError, OSError) as e:
            unknown_because = f"its partition.metadata cannot be read: {e}"
        else:
            if expected_id is None:
                unknown_because = (f"the KRaft metadata log {metadata.path} has no topic {tp.topic} (deleted, or "
                                   "never created in this cluster)")
            elif dir_id is not None and dir_id != expected_id:
                unknown_because = (f"its partition.metadata says topic id {dir_id}, but the KRaft metadata log "
                                   f"{metadata.path} knows {tp.topic} as {expected_id}: the dir is left from a "
                                   "deleted topic of the same name")
            else:
                entries = metadata.topic_config(tp.topic, found.node_id)
                metadata_props = metadata.topic_props(tp.topic, found.node_id)
                assert entries is not None and metadata_props is not None
                from_metadata = metadata_props
                entry = entries[CLEANUP_POLICY_CONFIG]
                metadata_policy = (entry.value or "", _metadata_source(entry, metadata, found.node_id))

    notes: list[str] = []
    if CLEANUP_POLICY_CONFIG in said:
        policy, source = said[CLEANUP_POLICY_CONFIG], f"from {said_by[CLEANUP_POLICY_CONFIG]}"
        if metadata_policy is not None and _policies(metadata_policy[0]) != _policies(policy):
            notes.append(f"cleanup.policy={policy} {source} overrides cleanup.policy={metadata_policy[0]} "
                         f"({metadata_policy[1]})")
    elif metadata_policy is not None:
        policy, source = metadata_policy
    else:
        return CleanupDecision(tp, directory, "unknown", None, None, None,
                               f"its cleanup.policy is not known ({unknown_because}); {to_compact} compacts it")
    merged = {**from_metadata, **said}
    if MIN_CLEANABLE_DIRTY_RATIO_CONFIG not in said:
        merged[MIN_CLEANABLE_DIRTY_RATIO_CONFIG] = "0"
    try:
        config = LogConfig(merged)
    except ConfigError as e:
        fix = f"; {hint(e.name, '<value>')} overrides it" if e.name is not None else ""
        return CleanupDecision(tp, directory, "bad-config", None, policy, source,
                               f"its config in the KRaft metadata log does not parse ({e}){fix}", tuple(notes))
    if not config.compact:
        return CleanupDecision(tp, directory, "no-compact", None, policy, source,
                               f"cleanup.policy={policy} ({source}) does not compact (Kafka's cleaner leaves such "
                               f"a log alone); {to_compact} compacts it anyway", tuple(notes))
    return CleanupDecision(tp, directory, "compact", merged, policy, source, None, tuple(notes))
