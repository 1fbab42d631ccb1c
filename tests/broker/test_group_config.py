"""``GroupCoordinatorConfig``: Kafka 3.8.0's group and offset broker properties, their defaults and validators
(``KafkaConfig``'s ``define`` lines for ``GroupCoordinatorConfig``'s names)."""

from __future__ import annotations

import re

import pytest

from kafkalog.broker.group_config import GroupCoordinatorConfig
from kafkalog.config.config_def import ConfigError


def test_defaults_are_kafkas() -> None:
    config = GroupCoordinatorConfig()
    assert (config.group_min_session_timeout_ms, config.group_max_session_timeout_ms,
            config.group_initial_rebalance_delay_ms, config.group_max_size) == (6000, 1800000, 3000, 2**31 - 1)
    assert (config.offsets_topic_num_partitions, config.offsets_retention_minutes,
            config.offsets_retention_check_interval_ms, config.offset_metadata_max_bytes) == (50, 10080, 600000, 4096)
    assert config.offsets_topic_segment_bytes == 100 * 1024 * 1024
    assert config.offsets_topic_compression_type == "none"
    assert config.offsets_topic_configs() == {"cleanup.policy": "compact", "segment.bytes": "104857600",
                                              "compression.type": "producer"}


def test_offsets_retention_ms_integer_overflow() -> None:
    """Kafka: ``GroupCoordinatorTest.testOffsetsRetentionMsIntegerOverflow``: minutes * 60000 in 64 bits."""
    config = GroupCoordinatorConfig.from_properties({"offsets.retention.minutes": str(2**31 - 1)})
    assert config.offsets_retention_ms == (2**31 - 1) * 60 * 1000


def test_from_properties_reads_kafkas_names_and_leaves_the_others() -> None:
    config = GroupCoordinatorConfig.from_properties({
        "group.min.session.timeout.ms": " 10 ", "group.max.size": "4", "offsets.topic.num.partitions": "3",
        "offsets.topic.compression.codec": "4", "offsets.retention.check.interval.ms": "1000",
        "log.dirs": "/tmp/elsewhere", "offsets.commit.required.acks": "1"})
    assert (config.group_min_session_timeout_ms, config.group_max_size, config.offsets_topic_num_partitions) == (
        10, 4, 3)
    assert config.offsets_topic_compression_type == "zstd"
    assert config.offsets_retention_check_interval_ms == 1000
    assert config.offsets_commit_required_acks == 1


@pytest.mark.parametrize(("name", "value", "message"), [
    ("group.max.size", "0", "Invalid value 0 for configuration group.max.size: Value must be at least 1"),
    ("offsets.topic.num.partitions", "-1", "Value must be at least 1"),
    ("offsets.retention.minutes", "ten", "Invalid value 'ten' for configuration offsets.retention.minutes"),
    ("offsets.topic.compression.codec", "7", "Unknown compression type id: 7"),
    ("group.min.session.timeout.ms", str(2**31), "Invalid value"),
    ("offsets.topic.replication.factor", "40000", "Value does not fit a Java short"),
    ("offsets.retention.check.interval.ms", "0", "Value must be at least 1"),
])
def test_bad_values_are_config_errors(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        GroupCoordinatorConfig.from_properties({name: value})
    assert info.value.name == name


def test_the_constructor_validates_too() -> None:
    with pytest.raises(ConfigError, match=re.escape("group.max.size")):
        GroupCoordinatorConfig(group_max_size=0)
    with pytest.raises(ConfigError, match=re.escape("offsets.topic.num.partitions")):
        GroupCoordinatorConfig(offsets_topic_num_partitions="3")  # type: ignore[arg-type]
