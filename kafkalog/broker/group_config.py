"""The classic group coordinator's broker properties, with Kafka 3.8.0's names, defaults and validators.

Port of the group and offset properties of ``core/src/main/scala/kafka/server/KafkaConfig.scala`` (their
``define`` lines) with the names and defaults of
``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupCoordinatorConfig.java``, and of the
two objects Kafka builds of them, ``GroupConfig`` and ``OffsetConfig`` (``GroupCoordinator.offsetConfig``):

================================================  =========  ==================  ===================
property                                          type       default             validator
================================================  =========  ==================  ===================
``group.min.session.timeout.ms``                  INT        6000
``group.max.session.timeout.ms``                  INT        1800000
``group.initial.rebalance.delay.ms``              INT        3000
``group.max.size``                                INT        2147483647          at least 1
``offset.metadata.max.bytes``                     INT        4096
``offsets.load.buffer.size``                      INT        5242880             at least 1
``offsets.topic.num.partitions``                  INT        50                  at least 1
``offsets.topic.segment.bytes``                   INT        104857600           at least 1
``offsets.topic.compression.codec``               INT        0 (none)            a CompressionType id
``offsets.retention.minutes``                     INT        10080               at least 1
``offsets.retention.check.interval.ms``           LONG       600000              at least 1
``offsets.commit.timeout.ms``                     INT        5000                at least 1
================================================  =========  ==================  ===================

``offsets.topic.replication.factor`` and ``offsets.commit.required.acks`` are accepted and kept for a
configuration file written for a real broker, but a single node has no replicas to wait for.  An unknown name is
left for the rest of the broker's configuration (the broker reads one file for all of its parts), so
:meth:`~kafkalog.broker.coordinator_config.CoordinatorConfig.from_properties` ignores names that are not its own.
A compression codec id that ``CompressionType.forId`` does not know is refused here, where Kafka's ``KafkaConfig``
fails the same way (``IllegalArgumentException``) when it builds its ``OffsetConfig``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.config_def import ConfigError, at_least
from .coordinator_config import CoordinatorConfig, broker_property

__all__ = ["GroupCoordinatorConfig"]

INT32_MAX = 2**31 - 1

#: Kafka: ``CompressionType`` ids (none, gzip, snappy, lz4, zstd) and the names topic configs use.
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass(frozen=True)
class GroupCoordinatorConfig(CoordinatorConfig):
    """The group coordinator's configuration (Kafka: ``GroupConfig`` + ``OffsetConfig``); the attributes are the
    property names in snake_case, and the defaults Kafka 3.8's (module docstring).  Checked when made, and read from
    a broker's properties by :meth:`~kafkalog.broker.coordinator_config.CoordinatorConfig.from_properties`."""

    group_min_session_timeout_ms: int = broker_property("group.min.session.timeout.ms", "INT", 6000,
                                                        doc="the shortest session a member may ask for")
    group_max_session_timeout_ms: int = broker_property("group.max.session.timeout.ms", "INT", 1800000,
                                                        doc="the longest session a member may ask for")
    group_initial_rebalance_delay_ms: int = broker_property("group.initial.rebalance.delay.ms", "INT", 3000,
                                                            doc="how long a new group waits for more members")
    group_max_size: int = broker_property("group.max.size", "INT", INT32_MAX, at_least(1),
                                          doc="the most members a group may have")
    offset_metadata_max_bytes: int = broker_property("offset.metadata.max.bytes", "INT", 4096,
                                                     doc="the largest offset commit metadata")
    offsets_load_buffer_size: int = broker_property("offsets.load.buffer.size", "INT", 5 * 1024 * 1024, at_least(1),
                                                    doc="read size when loading __consumer_offsets")
    offsets_topic_num_partitions: int = broker_property("offsets.topic.num.partitions", "INT", 50, at_least(1),
                                                        doc="partitions of __consumer_offsets")
    offsets_topic_segment_bytes: int = broker_property(
        "offsets.topic.segment.bytes", "INT", 100 * 1024 * 1024, at_least(1), doc="segment size of __consumer_offsets")
    offsets_topic_compression_codec: int = broker_property("offsets.topic.compression.codec", "INT", 0,
                                                           doc="compression of the offsets records")
    offsets_topic_replication_factor: int = broker_property(
        "offsets.topic.replication.factor", "SHORT", 3, at_least(1),
        doc="replicas of __consumer_offsets (one node: kept, not acted on)")
    offsets_retention_minutes: int = broker_property("offsets.retention.minutes", "INT", 7 * 24 * 60, at_least(1),
                                                     doc="how long committed offsets live")
    offsets_retention_check_interval_ms: int = broker_property(
        "offsets.retention.check.interval.ms", "LONG", 600000, at_least(1), doc="how often expired offsets are removed")
    offsets_commit_timeout_ms: int = broker_property("offsets.commit.timeout.ms", "INT", 5000, at_least(1),
                                                     doc="how long a commit may wait")
    offsets_commit_required_acks: int = broker_property("offsets.commit.required.acks", "SHORT", -1,
                                                        doc="acks a commit waits for (one node: kept, not acted on)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            # Kafka takes the pair and then refuses every JoinGroup (INVALID_SESSION_TIMEOUT); kafkalog refuses the
            # configuration, which is the mistake.
            raise ConfigError("group.min.session.timeout.ms must not be larger than group.max.session.timeout.ms",
                              name="group.min.session.timeout.ms")
        if self.offsets_topic_compression_codec not in _CODECS:
            raise ConfigError.invalid("offsets.topic.compression.codec", self.offsets_topic_compression_codec,
                                      f"Unknown compression type id: {self.offsets_topic_compression_codec}")

    # -- what Kafka derives --

    @property
    def offsets_retention_ms(self) -> int:
        """Kafka: ``OffsetConfig.offsetsRetentionMs`` (``offsets.retention.minutes * 60 * 1000``)."""
        return self.offsets_retention_minutes * 60 * 1000

    @property
    def offsets_topic_compression_type(self) -> str:
        """The codec's name (``none``, ``gzip``, ...)."""
        return _CODECS[self.offsets_topic_compression_codec]

    def offsets_topic_configs(self) -> dict[str, str]:
        """Kafka: ``GroupCoordinator.offsetsTopicConfigs``: the topic configs ``__consumer_offsets`` is created
        with."""
        return {"cleanup.policy": "compact", "segment.bytes": str(self.offsets_topic_segment_bytes),
                "compression.type": "producer"}
