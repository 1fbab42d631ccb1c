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
:meth:`GroupCoordinatorConfig.from_properties` ignores names that are not its own.  A compression codec id that
``CompressionType.forId`` does not know is refused here, where Kafka's ``KafkaConfig`` fails the same way
(``IllegalArgumentException``) when it builds its ``OffsetConfig``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..config.config_def import ConfigError, Validator, at_least, parse_type

__all__ = ["GroupCoordinatorConfig"]

INT32_MAX = 2**31 - 1

#: name -> (attribute, ConfigDef type, default, validator)
_PROPERTIES: dict[str, tuple[str, str, int, Validator | None]] = {
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", "INT", 6000, None),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", "INT", 1800000, None),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", "INT", 3000, None),
    "group.max.size": ("group_max_size", "INT", INT32_MAX, at_least(1)),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", "INT", 4096, None),
    "offsets.load.buffer.size": ("offsets_load_buffer_size", "INT", 5 * 1024 * 1024, at_least(1)),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", "INT", 50, at_least(1)),
    "offsets.topic.segment.bytes": ("offsets_topic_segment_bytes", "INT", 100 * 1024 * 1024, at_least(1)),
    "offsets.topic.compression.codec": ("offsets_topic_compression_codec", "INT", 0, None),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", "SHORT", 3, at_least(1)),
    "offsets.retention.minutes": ("offsets_retention_minutes", "INT", 7 * 24 * 60, at_least(1)),
    "offsets.retention.check.interval.ms": ("offsets_retention_check_interval_ms", "LONG", 600000, at_least(1)),
    "offsets.commit.timeout.ms": ("offsets_commit_timeout_ms", "INT", 5000, at_least(1)),
    "offsets.commit.required.acks": ("offsets_commit_required_acks", "SHORT", -1, None),
}

#: Kafka: ``CompressionType`` ids (none, gzip, snappy, lz4, zstd) and the names topic configs use.
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    """The group coordinator's configuration (Kafka: ``GroupConfig`` + ``OffsetConfig``); the attributes are the
    property names in snake_case, and the defaults Kafka 3.8's (module docstring)."""

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = INT32_MAX
    offset_metadata_max_bytes: int = 4096
    offsets_load_buffer_size: int = 5 * 1024 * 1024
    offsets_topic_num_partitions: int = 50
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_topic_compression_codec: int = 0
    offsets_topic_replication_factor: int = 3
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600000
    offsets_commit_timeout_ms: int = 5000
    offsets_commit_required_acks: int = -1

    def __post_init__(self) -> None:
        for name, (attribute, type_, _default, validator) in _PROPERTIES.items():
            value = getattr(self, attribute)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError.invalid(name, value, f"Expected value to be a {type_.lower()}, but it was a "
                                                       f"{type(value).__name__}")
            low, high = {"SHORT": (-(2**15), 2**15 - 1), "INT": (-(2**31), 2**31 - 1),
                         "LONG": (-(2**63), 2**63 - 1)}[type_]
            if not low <= value <= high:
                raise ConfigError.invalid(name, value, f"Value does not fit a Java {type_.lower()}")
            if validator is not None:
                validator(name, value)
        if self.offsets_topic_compression_codec not in _CODECS:
            raise ConfigError.invalid("offsets.topic.compression.codec", self.offsets_topic_compression_codec,
                                      f"Unknown compression type id: {self.offsets_topic_compression_codec}")

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> GroupCoordinatorConfig:
        """The configuration of a broker's properties (Kafka name -> value, as a ``server.properties`` file
        holds them); names that are not the group coordinator's are left to the rest of the broker.

        Raises:
            ConfigError: a value of the wrong type or out of range (Kafka's ``ConfigException`` messages).
        """
        values: dict[str, int] = {}
        for name, (attribute, type_, _default, _validator) in _PROPERTIES.items():
            if name not in properties:
                continue
            raw = properties[name]
            if type_ == "SHORT":
                parsed = parse_type(name, raw, "INT")
                assert isinstance(parsed, int)
                if not -(2**15) <= parsed < 2**15:
                    raise ConfigError.invalid(name, raw, "Value does not fit a Java short")
            else:
                parsed = parse_type(name, raw, type_)
                assert isinstance(parsed, int)
            values[attribute] = parsed
        return cls(**values)

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
