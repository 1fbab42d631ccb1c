"""Tests of kafkalog.config.log_config.LogConfig: Kafka's LogConfigTest (3.8.0 and 0.10.1.1) cases plus the port's own.

Mirrors ``core/src/test/scala/unit/kafka/log/LogConfigTest.scala`` at both tags.  The defaults are checked
against docs/kafka-log-spec.md section 5.1.  Where Kafka's test builds the broker's topic defaults with
``KafkaConfig.fromProps(...).extractLogConfigMap``, the port writes that map itself, by topic property
name: the broker configuration (``server.properties``, its synonyms and hour units) is not ported, and a
default broker's map holds :class:`LogConfig`'s defaults.

Kafka tests not ported:

- ``testKafkaConfigToProps``: ``KafkaConfig.extractLogConfigMap``, the broker's own configuration
  (``log.roll.hours`` and the other synonyms, the inter-broker protocol forcing ``message.format.version``),
  which kafkalog has not got: a LogManager is given its topic defaults as a LogConfig.
- ``testValidateWithMetadataVersionJbodSupport``: ``KafkaConfig.validateWithMetadataVersion``, whether a KRaft
  metadata version allows several log dirs on a broker; kafkalog has no metadata version.
- ``testToHtmlTable``, ``testToHtml``, ``testToRst``, ``testToEnrichedRst``: the generated documentation pages
  of Kafka's ConfigDef, which kafkalog does not make (its properties are documented in the module docstring).
"""

from __future__ import annotations

import dataclasses
import pickle
import random

import pytest

from kafkalog import config as cfg
from kafkalog.config.config_def import ConfigError
from kafkalog.config.log_config import (
    DEFAULTS,
    PROPERTY_ATTRIBUTES,
    SERVER_CONFIG_SYNONYMS,
    BrokerCompressionType,
    LogConfig,
)
from kafkalog.errors import KafkaLogError
from kafkalog.record import CompressionType, TimestampType

LONG_MAX = 2**63 - 1

# docs/kafka-log-spec.md 5.1, property by property, as the attribute the port exposes.
SPEC_DEFAULTS = {
    "segment_size": 1073741824,
    "segment_ms": 604800000,
    "segment_jitter_ms": 0,
    "max_index_size": 10485760,
    "index_interval": 4096,
    "flush_interval": LONG_MAX,
    "flush_ms": LONG_MAX,
    "retention_ms": 604800000,
    "retention_size": -1,
    "file_delete_delay_ms": 60000,
    "delete_retention_ms": 86400000,
    "min_cleanable_ratio": 0.5,
    "compaction_lag_ms": 0,
    "max_compaction_lag_ms": LONG_MAX,
    "cleanup_policy": ("delete",),
    "compact": False,
    "delete": True,
    "max_message_size": 1048588,
    "message_timestamp_type": TimestampType.CREATE_TIME,
    "message_timestamp_difference_max_ms": LONG_MAX,
    "message_timestamp_before_max_ms": LONG_MAX,
    "message_timestamp_after_max_ms": LONG_MAX,
    "preallocate": False,
    "compression_type": BrokerCompressionType.PRODUCER,
    "message_format_version": "3.0-IV1",
    # LogConfig.java / ServerLogConfigs / the codecs (not in the spec table)
    "min_in_sync_replicas": 1,
    "unclean_leader_election_enable": False,
    "compression_gzip_level": -1,
    "compression_lz4_level": 9,
    "compression_zstd_level": 3,
    "message_down_conversion_enable": True,
    # replication quotas and tiered storage (LogConfig.java, QuotaConfigs); the local retention is the
    # effective one, retention.* while left at -2
    "leader_replication_throttled_replicas": (),
    "follower_replication_throttled_replicas": (),
    "remote_storage_enable": False,
    "local_retention_ms": 604800000,
    "local_retention_bytes": -1,
}

DEFAULT_PROPS = {
    "segment.bytes": "1073741824",
    "segment.ms": "604800000",
    "segment.jitter.ms": "0",
    "segment.index.bytes": "10485760",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "max.message.bytes": "1048588",
    "index.interval.bytes": "4096",
    "delete.retention.ms": "86400000",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": "9223372036854775807",
    "file.delete.delay.ms": "60000",
    "min.cleanable.dirty.ratio": "0.5",
    "cleanup.policy": "delete",
    "unclean.leader.election.enable": "false",
    "min.insync.replicas": "1",
    "compression.type": "producer",
    "compression.gzip.level": "-1",
    "compression.lz4.level": "9",
    "compression.zstd.level": "3",
    "preallocate": "false",
    "message.format.version": "3.0-IV1",
    "message.timestamp.type": "CreateTime",
    "message.timestamp.difference.max.ms": "9223372036854775807",
    "message.timestamp.before.max.ms": "9223372036854775807",
    "message.timestamp.after.max.ms": "9223372036854775807",
    "leader.replication.throttled.replicas": "",
    "follower.replication.throttled.replicas": "",
    "message.downconversion.enable": "true",
    "remote.storage.enable": "false",
    "local.retention.ms": "-2",
    "local.retention.bytes": "-2",
}


# --- defaults -----------------------------------------------------------------------------------------------


def test_every_default_matches_the_spec() -> None:
    config = LogConfig()
    actual = {attribute: getattr(config, attribute) for attribute in SPEC_DEFAULTS}
    assert actual == SPEC_DEFAULTS
    assert config.segment_bytes == 1073741824
    assert config.min_compaction_lag_ms == 0
    assert config.compression is None
    assert config.record_version() == 2
    assert config.init_file_size() == 0
    assert config.max_segment_ms() == 604800000
    assert config.overridden_configs == frozenset()


def test_default_props_and_property_order() -> None:
    assert LogConfig().to_props() == DEFAULT_PROPS
    assert list(LogConfig().to_props()) == list(DEFAULT_PROPS)
    assert list(PROPERTY_ATTRIBUTES) == list(DEFAULT_PROPS)
    assert LogConfig(None) == LogConfig({}) == LogConfig()


def test_default_constants() -> None:
    assert cfg.DEFAULT_SEGMENT_BYTES == 1 << 30
    assert cfg.DEFAULT_MAX_MESSAGE_BYTES == 1024 * 1024 + 12
    assert cfg.DEFAULT_SEGMENT_MS == cfg.DEFAULT_RETENTION_MS == 7 * 24 * 3600 * 1000
    assert cfg.DEFAULT_DELETE_RETENTION_MS == 24 * 3600 * 1000
    assert DEFAULTS["cleanup.policy"] == ("delete",)
    assert DEFAULTS["segment.index.bytes"] == 10 * 1024 * 1024
    assert len(DEFAULTS) == 34
    assert cfg.DEFAULT_LOCAL_RETENTION_MS == cfg.DEFAULT_LOCAL_RETENTION_BYTES == -2
    assert cfg.DEFAULT_REMOTE_STORAGE_ENABLE is False


def test_every_property_has_an_attribute_and_a_server_default() -> None:
    """ensureNoStaticInitializationOrderDependency (3.8.0 and 0.10.1.1): every property but those of
    CONFIGS_WITH_NO_SERVER_DEFAULTS has the broker property that supplies its default.  (Kafka's concern, a
    Java static initialization order, has no Python counterpart; the mapping it guards is checked.  0.10.1.1
    also named the two throttled-replica lists themselves as their broker properties; 3.8, followed here,
    gives them none.)"""
    config = LogConfig()
    no_defaults = {"remote.storage.enable", "leader.replication.throttled.replicas",
                   "follower.replication.throttled.replicas"}
    assert no_defaults == cfg.CONFIGS_WITH_NO_SERVER_DEFAULTS
    for name in LogConfig.config_names():
        assert hasattr(config, PROPERTY_ATTRIBUTES[name]), name
        if name in cfg.CONFIGS_WITH_NO_SERVER_DEFAULTS:
            assert LogConfig.server_config_name(name) is None
            assert name not in SERVER_CONFIG_SYNONYMS
        else:
            assert LogConfig.server_config_name(name) == SERVER_CONFIG_SYNONYMS[name]
            assert SERVER_CONFIG_SYNONYMS[name]
    assert LogConfig.server_config_name("local.retention.ms") == "log.local.retention.ms"
    assert LogConfig.server_config_name("local.retention.bytes") == "log.local.retention.bytes"
    assert LogConfig.server_config_name("segment.ms") == "log.roll.ms"
    assert LogConfig.server_config_name("min.cleanable.dirty.ratio") == "log.cleaner.min.cleanable.ratio"
    assert LogConfig.server_config_name("file.delete.delay.ms") == "log.segment.delete.delay.ms"
    assert LogConfig.server_config_name("max.message.bytes") == "message.max.bytes"
    assert LogConfig.server_config_name("no.such.config") is None
    assert LogConfig.config_names() == sorted(DEFAULT_PROPS)


def test_config_types() -> None:
    assert LogConfig.config_type("segment.bytes") == "INT"
    assert LogConfig.config_type("segment.ms") == "LONG"
    assert LogConfig.config_type("min.cleanable.dirty.ratio") == "DOUBLE"
    assert LogConfig.config_type("preallocate") == "BOOLEAN"
    assert LogConfig.config_type("compression.type") == "STRING"
    assert LogConfig.config_type("cleanup.policy") == "LIST"
    assert LogConfig.config_type("nope") is None


# --- from_props, to_props, value semantics ----------------------------------------------------------------


def test_from_props_merges_overrides_over_defaults() -> None:
    defaults = {"segment.bytes": 2048, "retention.ms": 100, "min.insync.replicas": "2"}
    overrides = {"retention.ms": "200", "cleanup.policy": "compact"}
    config = LogConfig.from_props(defaults, overrides)
    assert config.segment_size == 2048
    assert config.retention_ms == 200
    assert config.min_in_sync_replicas == 2
    assert (config.compact, config.delete) == (True, False)
    assert config.overridden_configs == {"retention.ms", "cleanup.policy"}
    assert defaults == {"segment.bytes": 2048, "retention.ms": 100, "min.insync.replicas": "2"}
    assert overrides == {"retention.ms": "200", "cleanup.policy": "compact"}
    # overridden names do not take part in equality
    assert config == LogConfig({**defaults, **overrides})


def test_overridden_configs_as_loggable_string() -> None:
    # Kafka: testOverriddenConfigsAsLoggableString (sorted, strings quoted)
    config = LogConfig.from_props(
        {"retention.bytes": "50"},
        {"min.insync.replicas": "2", "retention.bytes": "100", "compression.type": "gzip"},
    )
    assert config.overridden_configs_as_loggable_string() == (
        '{compression.type="gzip", min.insync.replicas=2, retention.bytes=100}'
    )
    assert LogConfig().overridden_configs_as_loggable_string() == "{}"


ROUND_TRIP_CASES = [
    {},
    {"segment.bytes": 1024, "segment.index.bytes": "4", "index.interval.bytes": 0},
    {"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": 0.125, "max.compaction.lag.ms": 5000},
    {"cleanup.policy": [], "retention.ms": -1, "retention.bytes": -7},
    {"compression.type": "zstd", "compression.zstd.level": -5, "preallocate": True},
    {"message.format.version": "0.10.1.1", "message.timestamp.type": "LogAppendTime"},
    {"message.timestamp.difference.max.ms": 1000, "message.timestamp.after.max.ms": 5},
    {"min.cleanable.dirty.ratio": "1e-05", "unclean.leader.election.enable": "TRUE"},
]


@pytest.mark.parametrize("props", ROUND_TRIP_CASES)
def test_to_props_round_trip(props: dict[str, object]) -> None:
    config = LogConfig(props)
    as_props = config.to_props()
    assert all(isinstance(value, str) for value in as_props.values())
    again = LogConfig(as_props)
    assert again == config
    assert hash(again) == hash(config)
    assert again.to_props() == as_props


def test_to_props_formats_values_as_kafka_reads_them() -> None:
    props = LogConfig(
        {"cleanup.policy": ("compact", "delete"), "preallocate": True, "min.cleanable.dirty.ratio": 0.75}
    ).to_props()
    assert props["cleanup.policy"] == "compact,delete"
    assert props["preallocate"] == "true"
    assert props["min.cleanable.dirty.ratio"] == "0.75"
    assert LogConfig({"message.format.version": " 3.0 "}).to_props()["message.format.version"] == "3.0"


def test_frozen_equality_hash_and_repr() -> None:
    config = LogConfig({"segment.bytes": "1024", "cleanup.policy": "compact"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.segment_size = 5  # type: ignore[misc]
    assert config == LogConfig({"segment.bytes": 1024, "cleanup.policy": ["compact"]})
    assert config != LogConfig({"segment.bytes": 1025, "cleanup.policy": "compact"})
    assert config != LogConfig()
    assert len({config, LogConfig({"cleanup.policy": "compact", "segment.bytes": 1024}), LogConfig()}) == 2
    assert repr(config) == "LogConfig({'segment.bytes': '1024', 'cleanup.policy': 'compact'})"
    assert repr(LogConfig()) == "LogConfig({})"
    assert eval(repr(config), {"LogConfig": LogConfig}) == config
    # the same version written two ways is the same value
    assert LogConfig({"message.format.version": "3.0"}) == LogConfig()


def test_pickle_keeps_values_and_overrides() -> None:
    config = LogConfig.from_props({"segment.bytes": 4096}, {"cleanup.policy": "compact,delete"})
    copy = pickle.loads(pickle.dumps(config))
    assert copy == config
    assert copy.to_props() == config.to_props()
    assert copy.overridden_configs == {"cleanup.policy"}


def test_get_returns_parsed_values() -> None:
    config = LogConfig({"segment.ms": "60000", "cleanup.policy": "compact"})
    assert config.get("segment.ms") == 60000
    assert config.get("cleanup.policy") == ("compact",)
    assert config.get("message.timestamp.type") == "CreateTime"
    with pytest.raises(ConfigError, match=r"Unknown topic config name: segment\.msx"):
        config.get("segment.msx")


# --- parsing ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "attribute", "expected"),
    [
        ("segment.bytes", "1073741824", "segment_size", 1073741824),
        ("segment.bytes", "  2048\t", "segment_size", 2048),
        ("segment.bytes", "+2048", "segment_size", 2048),
        ("segment.bytes", "00000000000000000000000000002048", "segment_size", 2048),
        ("segment.bytes", 2147483647, "segment_size", 2147483647),
        ("segment.ms", "9223372036854775807", "segment_ms", LONG_MAX),
        ("retention.bytes", "-9223372036854775808", "retention_size", -(2**63)),
        ("retention.ms", "-1", "retention_ms", -1),
        ("min.cleanable.dirty.ratio", "0.25", "min_cleanable_ratio", 0.25),
        ("min.cleanable.dirty.ratio", "1e-1", "min_cleanable_ratio", 0.1),
        ("min.cleanable.dirty.ratio", "5E-1d", "min_cleanable_ratio", 0.5),
        ("min.cleanable.dirty.ratio", ".5", "min_cleanable_ratio", 0.5),
        ("min.cleanable.dirty.ratio", 1, "min_cleanable_ratio", 1.0),
        ("preallocate", "true", "preallocate", True),
        ("preallocate", " TRUE ", "preallocate", True),
        ("preallocate", "False", "preallocate", False),
        ("preallocate", True, "preallocate", True),
        ("cleanup.policy", "compact , delete", "cleanup_policy", ("compact", "delete")),
        ("cleanup.policy", " compact ", "cleanup_policy", ("compact",)),
        ("cleanup.policy", "", "cleanup_policy", ()),
        ("cleanup.policy", ["delete"], "cleanup_policy", ("delete",)),
        ("compression.type", " gzip ", "compression_type", BrokerCompressionType.GZIP),
        ("message.timestamp.type", "LogAppendTime", "message_timestamp_type", TimestampType.LOG_APPEND_TIME),
        ("message.timestamp.type", TimestampType.LOG_APPEND_TIME, "message_timestamp_type",
         TimestampType.LOG_APPEND_TIME),
        ("message.format.version", "0.10.1.1", "message_format_version", "0.10.1-IV2"),
        ("message.format.version", "3.0", "message_format_version", "3.0-IV1"),
        ("message.format.version", "1.0.1", "message_format_version", "1.0-IV0"),
        ("message.format.version", "0.8.2", "message_format_version", "0.8.2"),
        ("message.format.version", "3.8", "message_format_version", "3.8-IV0"),
        ("message.format.version", "3.9-IV0", "message_format_version", "3.9-IV0"),
    ],
)  # fmt: skip
def test_values_parse_as_kafka_configdef_does(
    name: str, raw: object, attribute: str, expected: object
) -> None:
    value = getattr(LogConfig({name: raw}), attribute)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("version", "magic"),
    [("0.8.0", 0), ("0.9.0", 0), ("0.10.0-IV0", 1), ("0.10.0", 1), ("0.10.2", 1), ("0.11.0-IV0", 2),
     ("0.11.0", 2), ("2.8", 2), ("3.0-IV1", 2)],
)  # fmt: skip
def test_record_version_follows_message_format_version(version: str, magic: int) -> None:
    assert LogConfig({"message.format.version": version}).record_version() == magic


@pytest.mark.parametrize(
    ("policy", "compact", "delete"),
    [
        ("delete", False, True),
        ("compact", True, False),
        ("compact,delete", True, True),
        ("delete,compact", True, True),
        ("compact,compact", True, False),
        (["compact", "delete"], True, True),
        (("delete",), False, True),
        ("", False, False),
        ([], False, False),
    ],
)
def test_cleanup_policy_combinations(policy: object, compact: bool, delete: bool) -> None:
    config = LogConfig({"cleanup.policy": policy})
    assert (config.compact, config.delete) == (compact, delete)


def test_max_segment_ms_and_init_file_size() -> None:
    compacted = LogConfig({"cleanup.policy": "compact", "segment.ms": 1000, "max.compaction.lag.ms": 300})
    assert compacted.max_segment_ms() == 300
    long_lag = LogConfig({"cleanup.policy": "compact", "max.compaction.lag.ms": 10**12})
    assert long_lag.max_segment_ms() == 604800000
    # the compaction deadline does not shorten the roll of a delete-only log
    assert LogConfig({"segment.ms": 1000, "max.compaction.lag.ms": 300}).max_segment_ms() == 1000
    assert LogConfig({"preallocate": "true", "segment.bytes": 4096}).init_file_size() == 4096
    assert LogConfig({"preallocate": "false", "segment.bytes": 4096}).init_file_size() == 0


def test_compression_maps_broker_names_to_record_codecs() -> None:
    expected = {
        "producer": None,
        "uncompressed": CompressionType.NONE,
        "gzip": CompressionType.GZIP,
        "snappy": CompressionType.SNAPPY,
        "lz4": CompressionType.LZ4,
        "zstd": CompressionType.ZSTD,
    }
    actual = {name: LogConfig({"compression.type": name}).compression for name in expected}
    assert actual == expected
    assert BrokerCompressionType.for_name("GZip") is BrokerCompressionType.GZIP
    assert LogConfig({"compression.type": "gzip"}).compression_type == "gzip"
    with pytest.raises(ValueError, match="Unknown broker compression type name: none"):
        BrokerCompressionType.for_name("none")


def test_timestamp_bounds_fall_back_to_the_deprecated_difference() -> None:
    only_difference = LogConfig({"message.timestamp.difference.max.ms": 1000})
    assert only_difference.message_timestamp_before_max_ms == 1000
    assert only_difference.message_timestamp_after_max_ms == 1000
    explicit = LogConfig({"message.timestamp.difference.max.ms": 1000, "message.timestamp.before.max.ms": 5})
    assert explicit.message_timestamp_before_max_ms == 5
    assert explicit.message_timestamp_after_max_ms == 1000
    assert explicit.to_props()["message.timestamp.after.max.ms"] == str(LONG_MAX)


# --- validation ---------------------------------------------------------------------------------------------

# Kafka's testFromPropsInvalid: every property refuses these values ("not_a_number" and "-1" by default).
KAFKA_INVALID_VALUES: dict[str, tuple[str, ...]] = {
    "unclean.leader.election.enable": ("not a boolean",),
    "retention.bytes": ("not_a_number",),
    "retention.ms": ("not_a_number",),
    "cleanup.policy": ("true", "foobar"),
    "min.cleanable.dirty.ratio": ("not_a_number", "-0.1", "1.2"),
    "min.insync.replicas": ("not_a_number", "0", "-1"),
    "message.format.version": ("",),
    "compression.gzip.level": ("not_a_number", "-2"),
    "compression.lz4.level": ("not_a_number", "-1"),
    "compression.zstd.level": ("not_a_number", "-0.1"),
    "remote.storage.enable": ("not_a_boolean",),
    "local.retention.ms": ("not_a_number", "-3"),
    "local.retention.bytes": ("not_a_number", "-3"),
}


@pytest.mark.parametrize("name", sorted(DEFAULT_PROPS))
def test_from_props_invalid(name: str) -> None:
    for value in KAFKA_INVALID_VALUES.get(name, ("not_a_number", "-1")):
        with pytest.raises(ConfigError) as info:
            LogConfig({name: value})
        assert info.value.name == name
        assert name in str(info.value)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("segment.bytes", 13, "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
        ("segment.bytes", "13", "Value must be at least 14"),
        ("segment.index.bytes", 3, "Value must be at least 4"),
        ("index.interval.bytes", -1, "Value must be at least 0"),
        ("segment.ms", 0, "Value must be at least 1"),
        ("segment.jitter.ms", -1, "Value must be at least 0"),
        ("flush.messages", 0, "Value must be at least 1"),
        ("flush.ms", -1, "Value must be at least 0"),
        ("retention.ms", -2, "Value must be at least -1"),
        ("max.message.bytes", -1, "Value must be at least 0"),
        ("delete.retention.ms", -1, "Value must be at least 0"),
        ("min.compaction.lag.ms", -1, "Value must be at least 0"),
        ("max.compaction.lag.ms", 0, "Value must be at least 1"),
        ("file.delete.delay.ms", -1, "Value must be at least 0"),
        ("min.cleanable.dirty.ratio", 1.01, "Value must be no more than 1"),
        ("min.cleanable.dirty.ratio", -0.5, "Value must be at least 0"),
        ("min.cleanable.dirty.ratio", "NaN", "Value must be a number between 0 and 1"),
        ("min.cleanable.dirty.ratio", "Infinity", "Value must be no more than 1"),
        ("min.insync.replicas", 0, "Value must be at least 1"),
        ("compression.type", "none", "must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
        ("compression.type", "GZIP", "String must be one of"),
        ("compression.gzip.level", 0, "Value must be between 1 and 9 or equal to -1"),
        ("compression.gzip.level", 10, "Value must be between 1 and 9 or equal to -1"),
        ("compression.lz4.level", 18, "Value must be no more than 17"),
        ("compression.zstd.level", 23, "Value must be no more than 22"),
        ("compression.zstd.level", -131073, "Value must be at least -131072"),
        ("message.timestamp.type", "createtime", "String must be one of: CreateTime, LogAppendTime"),
        ("message.format.version", "0.8", "Version 0.8 is not a valid version"),
        ("message.format.version", "3.9", "Version 3.9 is not a valid version"),
        ("message.format.version", 3, "Expected value to be a string, but it was a int"),
        ("cleanup.policy", "Compact", "String must be one of: compact, delete"),
        ("cleanup.policy", "delete,", "String must be one of: compact, delete"),
        ("cleanup.policy", 5, "Expected a comma separated list."),
        ("cleanup.policy", ["compact", 1], "Expected a comma separated list."),
        ("preallocate", "yes", "Expected value to be either true or false"),
        ("preallocate", 1, "Expected value to be either true or false"),
        ("segment.bytes", "1.5", "Not a number of type INT"),
        ("segment.bytes", "1_000", "Not a number of type INT"),
        ("segment.bytes", "", "Not a number of type INT"),
        ("segment.bytes", "2147483648", "Not a number of type INT"),
        ("segment.bytes", "1" * 5000, "Not a number of type INT"),
        ("segment.bytes", 2**31, "Expected value to be a 32-bit integer, but it is out of range"),
        ("segment.bytes", 2048.0, "Expected value to be a 32-bit integer, but it was a float"),
        ("segment.bytes", True, "Expected value to be a 32-bit integer, but it was a bool"),
        ("segment.ms", "9223372036854775808", "Not a number of type LONG"),
        ("segment.ms", 2**63, "Expected value to be a 64-bit integer (long), but it is out of range"),
        ("min.cleanable.dirty.ratio", "0,5", "Not a number of type DOUBLE"),
        ("min.cleanable.dirty.ratio", False, "Expected value to be a double, but it was a bool"),
        ("segment.bytes", None, "Value must be non-null"),
    ],
)
def test_each_rule_names_the_property_and_value(name: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        LogConfig({name: value})
    error = info.value
    assert isinstance(error, KafkaLogError)
    assert isinstance(error, ValueError)
    assert error.name == name
    assert error.names == (name,)
    assert message in str(error)
    assert f"for configuration {name}: " in str(error)
    # the value shown is the one at fault: as given when it does not parse, parsed when out of range, the
    # element for a list (as Kafka's ValidList)
    shown = repr(error.value) if isinstance(error.value, str) else str(error.value)
    assert str(error).startswith(f"Invalid value {shown} for configuration {name}: ")
    # the same value fails LogConfig.validate
    with pytest.raises(ConfigError):
        LogConfig.validate({name: value})


def test_invalid_values_quote_the_caller_value() -> None:
    with pytest.raises(ConfigError) as info:
        LogConfig({"segment.bytes": "abc"})
    assert str(info.value) == "Invalid value 'abc' for configuration segment.bytes: Not a number of type INT"
    assert info.value.value == "abc"
    with pytest.raises(ConfigError) as element:
        LogConfig({"cleanup.policy": "delete,Compact"})
    assert str(element.value) == (
        "Invalid value 'Compact' for configuration cleanup.policy: String must be one of: compact, delete"
    )
    with pytest.raises(ConfigError) as parsed:
        LogConfig({"segment.bytes": " 13 "})
    assert str(parsed.value) == "Invalid value 13 for configuration segment.bytes: Value must be at least 14"


def test_invalid_compaction_lag_config() -> None:
    # Kafka: testInvalidCompactionLagConfig
    props = {"max.compaction.lag.ms": "100", "min.compaction.lag.ms": "200"}
    with pytest.raises(ConfigError) as info:
        LogConfig.validate(props)
    assert str(info.value) == (
        "conflict topic config setting min.compaction.lag.ms (200) > max.compaction.lag.ms (100)"
    )
    assert info.value.name == "min.compaction.lag.ms"
    assert info.value.value == 200
    # equal lags are fine, and so is the pair in the constructor, which (as Kafka's) checks values one by one
    assert LogConfig.validate({"max.compaction.lag.ms": 200, "min.compaction.lag.ms": 200}) is None
    assert LogConfig(props).compaction_lag_ms == 200


def test_validate_with_configured_props_checks_the_merge() -> None:
    broker_defaults = {"max.compaction.lag.ms": 100}
    conflict = r"min\.compaction\.lag\.ms \(150\) > max\.compaction\.lag\.ms \(100\)"
    with pytest.raises(ConfigError, match=conflict):
        LogConfig.validate({"min.compaction.lag.ms": 150}, broker_defaults)
    assert LogConfig.validate({"min.compaction.lag.ms": 50}, broker_defaults) is None
    assert LogConfig.validate({"min.compaction.lag.ms": 150}) is None


def test_validate_names_lists_every_unknown_name() -> None:
    assert LogConfig.validate_names({"segment.bytes": 1, "cleanup.policy": "x"}) is None
    with pytest.raises(ConfigError) as info:
        LogConfig.validate_names({"segment.byte": 1, "segment.bytes": 1, "retention.hours": 2})
    assert str(info.value) == "Unknown topic config names: retention.hours, segment.byte"
    assert info.value.names == ("retention.hours", "segment.byte")
    assert info.value.name is None
    with pytest.raises(ConfigError, match=r"^Unknown topic config name: log\.segment\.bytes$") as one:
        LogConfig.validate({"log.segment.bytes": 1})
    assert one.value.name == "log.segment.bytes"


def test_from_props_empty() -> None:
    """testFromPropsEmpty (0.10.1.1): a config of no properties is the default config."""
    assert LogConfig({}) == LogConfig()
    assert LogConfig.from_props({}, {}) == LogConfig()
    assert LogConfig({}).to_props() == LogConfig().to_props()


def _throttled_valid(value: str) -> bool:
    try:
        cfg.ensure_valid_throttled_replicas("", value)
    except ConfigError:
        return False
    return True


THROTTLED_VALID = ["*", "* ", "", " ", "100:10", "100:10,12:10", "100:10,12:10,15:1", "100:10,12:10,15:1  ",
                   "100:0,"]
THROTTLED_INVALID = ["100", "100:", "100:0,10", "100:0,10:", "100:0,10:   ", "100 :0,10:   ", "100: 0,10:   ",
                     "100:0,10 :   ", "*,100:10", "* ,100:10"]


def test_should_validate_throttled_replicas_config() -> None:
    """shouldValidateThrottledReplicasConfig (3.8.0; 0.10.1.1 without the last two invalid values): ``*`` or
    ``partition:broker`` pairs, each trimmed; the same values as topic properties."""
    for value in THROTTLED_VALID:
        assert _throttled_valid(value), value
    for value in THROTTLED_INVALID:
        assert not _throttled_valid(value), value
    for name in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas"):
        for value in THROTTLED_VALID:
            LogConfig({name: value})
        for value in THROTTLED_INVALID:
            with pytest.raises(ConfigError, match=f"{name} must be the literal '\\*' or a list of replicas"):
                LogConfig({name: value})
    config = LogConfig({"leader.replication.throttled.replicas": "100:10, 12:10",
                        "follower.replication.throttled.replicas": "*"})
    assert config.leader_replication_throttled_replicas == ("100:10", "12:10")
    assert config.follower_replication_throttled_replicas == ("*",)
    assert config.to_props()["leader.replication.throttled.replicas"] == "100:10,12:10"


def test_get_config_value() -> None:
    """testGetConfigValue: the "server default property" of a topic property (the column Kafka's documentation
    table reads through ``LogConfigDef.getConfigValue``) is its broker synonym, and there is none for a
    property without a mapping (Kafka defines an extra ``log.foo`` on a copy of its ConfigDef; kafkalog's
    property set is fixed, so an unmapped name stands for it, and ``remote.storage.enable`` is a real one)."""
    assert LogConfig.server_config_name("file.delete.delay.ms") == "log.segment.delete.delay.ms"
    assert LogConfig.server_config_name("log.foo") is None
    assert LogConfig.server_config_name("remote.storage.enable") is None


def test_local_log_retention_derived_props() -> None:
    """testLocalLogRetentionDerivedProps: left at -2, the local retention is the total retention."""
    config = LogConfig({"retention.bytes": "1024", "retention.ms": "1000"})
    assert config.local_retention_ms == 1000
    assert config.local_retention_bytes == 1024
    assert config.get("local.retention.ms") == -2  # the property as given


def test_local_log_retention_derived_default_props() -> None:
    """testLocalLogRetentionDerivedDefaultProps."""
    config = LogConfig()
    assert config.local_retention_ms == cfg.DEFAULT_RETENTION_MS
    assert config.local_retention_bytes == cfg.DEFAULT_RETENTION_BYTES == -1


def test_local_log_retention_props() -> None:
    """testLocalLogRetentionProps: set, the local retention is its own."""
    config = LogConfig({"retention.bytes": "2000", "retention.ms": "1000", "local.retention.ms": "500",
                        "local.retention.bytes": "1000"})
    assert config.local_retention_ms == 500
    assert config.local_retention_bytes == 1000


#: A default broker's topic defaults by topic property name (Kafka: ``extractLogConfigMap``).
BROKER_DEFAULTS = LogConfig().to_props()


@pytest.mark.parametrize(
    ("local_ms", "local_bytes", "retention_bytes", "retention_ms", "culprit"),
    [
        (-3, 10, 2, 500, "local.retention.ms"),  # below -2
        (500, -3, 2, 1000, "local.retention.bytes"),  # below -2
        (2000, 2, 100, 1000, "local.retention.ms"),  # more than retention.ms
        (500, 200, 100, 1000, "local.retention.bytes"),  # more than retention.bytes
        # Kafka's comments say these two are about -1 (unlimited); the size is checked first, and fails them
        (-1, 200, 100, 1000, "local.retention.bytes"),  # 200 bytes above 100
        (2000, -1, 100, 1000, "local.retention.bytes"),  # unlimited under a limited retention.bytes
    ],
)
def test_invalid_local_log_retention_props(local_ms: int, local_bytes: int, retention_bytes: int,
                                           retention_ms: int, culprit: str) -> None:
    """testInvalidLocalLogRetentionProps: on a broker with tiered storage, a remote topic's local retention
    must be at least -2 and within its retention."""
    props = {"remote.storage.enable": "true", "retention.bytes": str(retention_bytes),
             "retention.ms": str(retention_ms), "local.retention.ms": str(local_ms),
             "local.retention.bytes": str(local_bytes)}
    with pytest.raises(ConfigError) as info:
        LogConfig.validate(props, BROKER_DEFAULTS, True)
    assert info.value.name == culprit
    # the retention checks of Kafka's messages
    if local_bytes == -1:
        assert str(info.value) == ("Invalid value -1 for configuration local.retention.bytes: Value must not be -1 "
                                   "as retention.bytes value is set as 100.")
    if (local_ms, local_bytes) == (500, 200):
        assert str(info.value) == ("Invalid value 200 for configuration local.retention.bytes: Value must not be "
                                   "more than retention.bytes property value: 100")


def test_invalid_local_log_retention_ms_unlimited() -> None:
    """What Kafka's testInvalidLocalLogRetentionProps meant to check with a local.retention.ms of -1, the
    sizes within bounds so that the time check is reached."""
    props = {"remote.storage.enable": "true", "retention.bytes": "100", "retention.ms": "1000",
             "local.retention.ms": "-1", "local.retention.bytes": "50"}
    with pytest.raises(ConfigError, match=r"local\.retention\.ms: Value must not be -1 as retention\.ms "
                                          r"value is set as 1000\."):
        LogConfig.validate(props, BROKER_DEFAULTS, True)
    # without remote storage the topic's local retention is not checked
    LogConfig.validate({**props, "remote.storage.enable": "false"}, BROKER_DEFAULTS, True)


def test_enable_remote_log_storage_on_compacted_topic() -> None:
    """testEnableRemoteLogStorageOnCompactedTopic: remote storage is refused for every compacting policy."""
    props = {"cleanup.policy": "delete", "remote.storage.enable": "true"}
    LogConfig.validate(props, BROKER_DEFAULTS, True)
    for policy in ("compact", "delete,compact", "compact,delete"):
        with pytest.raises(ConfigError, match=r"^Remote log storage is unsupported for the compacted topics$"):
            LogConfig.validate({**props, "cleanup.policy": policy}, BROKER_DEFAULTS, True)


@pytest.mark.parametrize("sys_remote_storage_enabled", [True, False])
def test_enable_remote_log_storage(sys_remote_storage_enabled: bool) -> None:
    """testEnableRemoteLogStorage: a topic may ask for remote storage only on a broker that has it."""
    props = {"remote.storage.enable": "true"}
    if sys_remote_storage_enabled:
        LogConfig.validate(props, BROKER_DEFAULTS, sys_remote_storage_enabled)
    else:
        with pytest.raises(ConfigError) as info:
            LogConfig.validate(props, BROKER_DEFAULTS, sys_remote_storage_enabled)
        assert "Tiered Storage functionality is disabled in the broker" in str(info.value)
        assert info.value.name == "remote.storage.enable"


@pytest.mark.parametrize("sys_remote_storage_enabled", [True, False])
def test_topic_creation_with_invalid_retention_time(sys_remote_storage_enabled: bool) -> None:
    """testTopicCreationWithInvalidRetentionTime: the broker's local retention (900 ms) above the topic's
    retention (500 ms) fails a remote topic on a broker with tiered storage, naming local.retention.ms."""
    broker = {**BROKER_DEFAULTS, "retention.ms": "1000", "local.retention.ms": "900"}
    props = {"remote.storage.enable": str(sys_remote_storage_enabled).lower(), "retention.ms": "500"}
    if sys_remote_storage_enabled:
        with pytest.raises(ConfigError) as info:
            LogConfig.validate(props, broker, sys_remote_storage_enabled)
        assert "local.retention.ms" in str(info.value)
    else:
        LogConfig.validate(props, broker, sys_remote_storage_enabled)


@pytest.mark.parametrize("sys_remote_storage_enabled", [True, False])
def test_topic_creation_with_invalid_retention_size(sys_remote_storage_enabled: bool) -> None:
    """testTopicCreationWithInvalidRetentionSize: the same with sizes (512 local over 128)."""
    broker = {**BROKER_DEFAULTS, "retention.bytes": "1024", "local.retention.bytes": "512"}
    props = {"remote.storage.enable": str(sys_remote_storage_enabled).lower(), "retention.bytes": "128"}
    if sys_remote_storage_enabled:
        with pytest.raises(ConfigError) as info:
            LogConfig.validate(props, broker, sys_remote_storage_enabled)
        assert "local.retention.bytes" in str(info.value)
    else:
        LogConfig.validate(props, broker, sys_remote_storage_enabled)


@pytest.mark.parametrize("sys_remote_storage_enabled", [True, False])
def test_validate_broker_log_configs(sys_remote_storage_enabled: bool) -> None:
    """testValidateBrokerLogConfigs: a broker's local retention (2048) above its retention (1024) is refused
    only when tiered storage is on."""
    broker = {**BROKER_DEFAULTS, "retention.bytes": "1024", "local.retention.bytes": "2048"}
    if sys_remote_storage_enabled:
        with pytest.raises(ConfigError) as info:
            LogConfig.validate_broker_log_config_values(broker, sys_remote_storage_enabled)
        assert "local.retention.bytes" in str(info.value)
    else:
        LogConfig.validate_broker_log_config_values(broker, sys_remote_storage_enabled)


def test_timestamp_before_max_ms_uses_deprecated_config() -> None:
    """testTimestampBeforeMaxMsUsesDeprecatedConfig: with the before/after bounds at Long.MAX and the
    deprecated ``message.timestamp.difference.max.ms`` at one day, both bounds are one day.  Kafka computes
    this in KafkaConfig, for the broker's defaults; kafkalog's LogConfig does it for any config (3.6+
    ``getMessageTimestampBeforeMaxMs``), so it is checked there, with the broker's properties under their topic
    names."""
    one_day = 24 * 60 * 60 * 1000
    config = LogConfig({"message.timestamp.before.max.ms": str(LONG_MAX),
                        "message.timestamp.after.max.ms": str(LONG_MAX),
                        "message.timestamp.difference.max.ms": str(one_day)})
    assert config.message_timestamp_before_max_ms == one_day
    assert config.message_timestamp_after_max_ms == one_day


def test_constructor_refuses_unknown_and_non_string_names() -> None:
    with pytest.raises(ConfigError, match=r"^Unknown topic config name: segment\.byte$"):
        LogConfig({"segment.byte": 1024})
    with pytest.raises(ConfigError, match="Unknown topic config name: 7"):
        LogConfig({7: 1})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match=r"segment\.byte"):
        LogConfig.from_props({}, {"segment.byte": 1024})


def test_config_error_invalid_helper() -> None:
    error = ConfigError.invalid("segment.ms", 5, "why")
    assert str(error) == "Invalid value 5 for configuration segment.ms: why"
    assert (error.name, error.value, error.names) == ("segment.ms", 5, ("segment.ms",))


# --- random segment jitter ----------------------------------------------------------------------------------


def test_random_segment_jitter_is_zero_without_jitter() -> None:
    config = LogConfig({"segment.jitter.ms": 0, "segment.ms": 1000})
    rng = random.Random(1)
    assert {config.random_segment_jitter(rng) for _ in range(100)} == {0}
    assert config.random_segment_jitter() == 0


@pytest.mark.parametrize(("jitter", "segment_ms", "bound"), [(100, 1000, 100), (1000, 100, 100), (7, 7, 7)])
def test_random_segment_jitter_bounds(jitter: int, segment_ms: int, bound: int) -> None:
    config = LogConfig({"segment.jitter.ms": jitter, "segment.ms": segment_ms})
    rng = random.Random(20240601)
    draws = [config.random_segment_jitter(rng) for _ in range(5000)]
    assert min(draws) == 0
    assert max(draws) == bound - 1
    assert all(0 <= draw < bound for draw in draws)
    # seeded: the same seed gives the same draws
    replay = random.Random(20240601)
    assert [config.random_segment_jitter(replay) for _ in range(5000)] == draws


def test_random_segment_jitter_is_kafkas_formula() -> None:
    # Utils.abs(nextInt()) % min(jitter, segmentMs), nextInt a signed 32-bit draw
    config = LogConfig({"segment.jitter.ms": 10**12, "segment.ms": 10**13})
    ours, reference = random.Random(99), random.Random(99)
    for _ in range(200):
        draw = reference.randrange(-(2**31), 2**31)
        expected = (0 if draw == -(2**31) else abs(draw)) % 10**12
        assert config.random_segment_jitter(ours) == expected
        assert expected < 2**31  # a 32-bit draw, as in Kafka, whatever the bound
