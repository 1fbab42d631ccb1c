"""Topic-level log configuration: Kafka's ``LogConfig``.

Port of ``core/src/main/scala/kafka/log/LogConfig.scala`` (Apache Kafka, tag 0.10.1.1) with the property
set, defaults and validators of Kafka 3.8.0's
``storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java``, ``TopicConfig.java``,
``ServerLogConfigs.java`` and ``ServerTopicConfigSynonyms.java``, and the value parsing of
``ConfigDef.parseType`` (clients).  ``to_props`` comes from 0.8.2's ``LogConfig.toProps``.

A ``LogConfig`` is one immutable set of values, one per property below, in Kafka's definition order.  Every
property has a default; a caller passes only the ones it changes, as ``int``/``float``/``bool``/``str``
values or as the strings Kafka reads from a properties file (``"1073741824"``, ``"true"``,
``"delete,compact"``).  Values are parsed and checked exactly as Kafka's ``ConfigDef`` does, and anything
Kafka would refuse raises :class:`~kafkalog.config.config_def.ConfigError` naming the property and the value.

===================================  ==================  ==========================  ===================================
property                             default             valid                       attribute
===================================  ==================  ==========================  ===================================
segment.bytes                        1073741824 (1 GiB)  int32 >= 14                 segment_size
segment.ms                           604800000 (7 d)     int64 >= 1                  segment_ms
segment.jitter.ms                    0                   int64 >= 0                  segment_jitter_ms
segment.index.bytes                  10485760 (10 MiB)   int32 >= 4                  max_index_size
flush.messages                       2**63 - 1           int64 >= 1                  flush_interval
flush.ms                             2**63 - 1           int64 >= 0                  flush_ms
retention.bytes                      -1 (unlimited)      int64                       retention_size
retention.ms                         604800000 (7 d)     int64 >= -1 (-1 unlimited)  retention_ms
max.message.bytes                    1048588 (1 MiB+12)  int32 >= 0                  max_message_size
index.interval.bytes                 4096                int32 >= 0                  index_interval
delete.retention.ms                  86400000 (1 d)      int64 >= 0                  delete_retention_ms
min.compaction.lag.ms                0                   int64 >= 0                  compaction_lag_ms
max.compaction.lag.ms                2**63 - 1           int64 >= 1                  max_compaction_lag_ms
file.delete.delay.ms                 60000               int64 >= 0                  file_delete_delay_ms
min.cleanable.dirty.ratio            0.5                 double in [0, 1]            min_cleanable_ratio
cleanup.policy                       delete              list of compact, delete     cleanup_policy,
                                                                                     compact, delete
unclean.leader.election.enable       false               boolean                     unclean_leader_election_enable
min.insync.replicas                  1                   int32 >= 1                  min_in_sync_replicas
compression.type                     producer            uncompressed, zstd, lz4,    compression_type
                                                         snappy, gzip, producer
compression.gzip.level               -1                  1..9 or -1                  compression_gzip_level
compression.lz4.level                9                   1..17                       compression_lz4_level
compression.zstd.level               3                   -131072..22                 compression_zstd_level
preallocate                          false               boolean                     preallocate
message.format.version               3.0-IV1             a Kafka version             message_format_version
message.timestamp.type               CreateTime          CreateTime, LogAppendTime   message_timestamp_type
message.timestamp.difference.max.ms  2**63 - 1           int64 >= 0                  message_timestamp_difference_max_ms
message.timestamp.before.max.ms      2**63 - 1           int64 >= 0                  message_timestamp_before_max_ms
message.timestamp.after.max.ms       2**63 - 1           int64 >= 0                  message_timestamp_after_max_ms
message.downconversion.enable        true                boolean                     message_down_conversion_enable
remote.storage.enable                false               boolean                     remote_storage_enable
local.retention.ms                   -2 (see below)      int64 >= -2 (-1 unlimited)  local_retention_ms
local.retention.bytes                -2 (see below)      int64 >= -2 (-1 unlimited)  local_retention_bytes
===================================  ==================  ==========================  ===================================

:data:`PROPERTY_ATTRIBUTES` maps every property to its attribute and :data:`SERVER_CONFIG_SYNONYMS` to the
broker property that supplies its default (``log.segment.bytes``, ``log.roll.ms``, ...), and
:data:`ALL_SERVER_CONFIG_SYNONYMS` to every such property in Kafka's order of preference (``log.retention.ms``,
then ``log.retention.minutes``, then ``log.retention.hours``, each converted to milliseconds); the three of
:data:`CONFIGS_WITH_NO_SERVER_DEFAULTS` have none: ``remote.storage.enable`` and the two lists left out of the
table, ``leader.replication.throttled.replicas`` and ``follower.replication.throttled.replicas`` (attributes
of the same names with ``_``; default empty; each element ``partition:broker``, or the whole list ``*``).

Every property of Kafka 3.8's ``LogConfig`` is here, with its default and validation, because a broker's topic
configuration carries them all and a caller may pass one over whole.  Some configure machinery this
single-process port has not got, and are parsed, validated and kept without acting on anything:
``min.insync.replicas`` and ``unclean.leader.election.enable`` (replication), the two
``*.replication.throttled.replicas`` lists (replication quotas), ``remote.storage.enable`` and
``local.retention.*`` (tiered storage).  ``local_retention_ms`` and ``local_retention_bytes`` are the
effective values: ``retention.ms`` / ``retention.bytes`` when left at -2 (Kafka's ``localRetentionMs()``).
:meth:`LogConfig.validate` with the broker's defaults and :meth:`LogConfig.validate_broker_log_config_values`
make Kafka's tiered-storage checks (local retention within the total retention, no remote storage on a
compacted topic or on a broker without it).

Where this port follows Kafka 3.8 instead of 0.10.1, and why:

* the defaults of 3.8 (``unclean.leader.election.enable`` false since 0.11; ``max.message.bytes``
  1 MiB + 12; ``message.format.version`` 3.0-IV1, which means record batches v2);
* the tighter ranges of 3.8 (``segment.ms`` >= 1, ``segment.index.bytes`` >= 4, ``flush.messages`` >= 1,
  ``retention.ms`` >= -1), which refuse values 0.10.1 accepted and then failed on: a ``segment.ms`` of 0
  made ``random_segment_jitter`` divide by zero and an index of fewer than 4 bytes cannot hold an entry;
* the properties added since (``max.compaction.lag.ms``, the compression levels, ``zstd``, the timestamp
  before/after bounds, ``message.downconversion.enable``) and the cross-check of ``validate``
  (``min.compaction.lag.ms`` <= ``max.compaction.lag.ms``).

Where it differs from both, deliberately:

* unknown property names raise :class:`~kafkalog.config.config_def.ConfigError` in the constructor too, not only in
  :meth:`LogConfig.validate_names`.  Kafka's ``AbstractConfig`` keeps unknown names as unused originals and
  logs them; a Python caller gets no such log line, so a misspelt ``segment.byte`` would silently change
  nothing;
* a NaN ``min.cleanable.dirty.ratio`` is refused.  Java's range check compares with ``<`` and ``>``, which
  are both false for NaN, so Kafka accepts it and its cleaner then never finds the log dirty enough.

Values are accepted in the types Kafka's ``ConfigDef.parseType`` accepts, mapped to Python: ``int`` for
INT and LONG (within 32 and 64 bits; never ``bool``), ``int`` or ``float`` for DOUBLE, ``bool`` for BOOLEAN,
a list or tuple of ``str`` for LIST, and ``str`` for every type (trimmed, then parsed: integers as
``[+-]digits``, doubles as Java's decimal literals, booleans ``true``/``false`` in any case, lists split at
commas with the spaces around them).  As in Kafka, the string choices are case-sensitive (``"Compact"`` is
not a cleanup policy) and an empty ``cleanup.policy`` is an empty list (neither compact nor delete).  For
convenience ``message.timestamp.type`` also takes a :class:`~kafkalog.record.types.TimestampType`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import random
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

from .._common import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    RECORD_OVERHEAD_V0,
)
from ..record.compression import CompressionType
from ..record.types import TimestampType
from .config_def import ConfigError, Validator, at_least, between, parse_type, valid_list, valid_string

__all__ = [
    "BrokerCompressionType",
    "LogConfig",
    "target_compression",
    "PROPERTY_ATTRIBUTES",
    "SERVER_CONFIG_SYNONYMS",
    "ALL_SERVER_CONFIG_SYNONYMS",
    "ConfigSynonym",
    "hours_to_milliseconds",
    "minutes_to_milliseconds",
    "DEFAULTS",
    "CLEANUP_POLICY_COMPACT",
    "CLEANUP_POLICY_DELETE",
    "SEGMENT_BYTES_CONFIG",
    "SEGMENT_MS_CONFIG",
    "SEGMENT_JITTER_MS_CONFIG",
    "SEGMENT_INDEX_BYTES_CONFIG",
    "FLUSH_MESSAGES_INTERVAL_CONFIG",
    "FLUSH_MS_CONFIG",
    "RETENTION_BYTES_CONFIG",
    "RETENTION_MS_CONFIG",
    "MAX_MESSAGE_BYTES_CONFIG",
    "INDEX_INTERVAL_BYTES_CONFIG",
    "DELETE_RETENTION_MS_CONFIG",
    "MIN_COMPACTION_LAG_MS_CONFIG",
    "MAX_COMPACTION_LAG_MS_CONFIG",
    "FILE_DELETE_DELAY_MS_CONFIG",
    "MIN_CLEANABLE_DIRTY_RATIO_CONFIG",
    "CLEANUP_POLICY_CONFIG",
    "UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG",
    "MIN_IN_SYNC_REPLICAS_CONFIG",
    "COMPRESSION_TYPE_CONFIG",
    "COMPRESSION_GZIP_LEVEL_CONFIG",
    "COMPRESSION_LZ4_LEVEL_CONFIG",
    "COMPRESSION_ZSTD_LEVEL_CONFIG",
    "PREALLOCATE_CONFIG",
    "MESSAGE_FORMAT_VERSION_CONFIG",
    "MESSAGE_TIMESTAMP_TYPE_CONFIG",
    "MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS_CONFIG",
    "MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG",
    "MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG",
    "MESSAGE_DOWNCONVERSION_ENABLE_CONFIG",
    "LEADER_REPLICATION_THROTTLED_REPLICAS_CONFIG",
    "FOLLOWER_REPLICATION_THROTTLED_REPLICAS_CONFIG",
    "REMOTE_LOG_STORAGE_ENABLE_CONFIG",
    "LOCAL_LOG_RETENTION_MS_CONFIG",
    "LOCAL_LOG_RETENTION_BYTES_CONFIG",
    "CONFIGS_WITH_NO_SERVER_DEFAULTS",
    "ensure_valid_throttled_replicas",
    "DEFAULT_SEGMENT_BYTES",
    "DEFAULT_SEGMENT_MS",
    "DEFAULT_SEGMENT_JITTER_MS",
    "DEFAULT_SEGMENT_INDEX_BYTES",
    "DEFAULT_FLUSH_MESSAGES",
    "DEFAULT_FLUSH_MS",
    "DEFAULT_RETENTION_BYTES",
    "DEFAULT_RETENTION_MS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_INDEX_INTERVAL_BYTES",
    "DEFAULT_DELETE_RETENTION_MS",
    "DEFAULT_MIN_COMPACTION_LAG_MS",
    "DEFAULT_MAX_COMPACTION_LAG_MS",
    "DEFAULT_FILE_DELETE_DELAY_MS",
    "DEFAULT_MIN_CLEANABLE_DIRTY_RATIO",
    "DEFAULT_CLEANUP_POLICY",
    "DEFAULT_UNCLEAN_LEADER_ELECTION_ENABLE",
    "DEFAULT_MIN_IN_SYNC_REPLICAS",
    "DEFAULT_COMPRESSION_TYPE",
    "DEFAULT_COMPRESSION_GZIP_LEVEL",
    "DEFAULT_COMPRESSION_LZ4_LEVEL",
    "DEFAULT_COMPRESSION_ZSTD_LEVEL",
    "DEFAULT_PREALLOCATE",
    "DEFAULT_MESSAGE_FORMAT_VERSION",
    "DEFAULT_MESSAGE_TIMESTAMP_TYPE",
    "DEFAULT_MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS",
    "DEFAULT_MESSAGE_TIMESTAMP_BEFORE_MAX_MS",
    "DEFAULT_MESSAGE_TIMESTAMP_AFTER_MAX_MS",
    "DEFAULT_MESSAGE_DOWNCONVERSION_ENABLE",
    "DEFAULT_REMOTE_STORAGE_ENABLE",
    "DEFAULT_LOCAL_RETENTION_MS",
    "DEFAULT_LOCAL_RETENTION_BYTES",
]


# --- Property names (Kafka: TopicConfig; 0.10.1: LogConfig.*Prop) ------------------------------------------

SEGMENT_BYTES_CONFIG: Final = "segment.bytes"
SEGMENT_MS_CONFIG: Final = "segment.ms"
SEGMENT_JITTER_MS_CONFIG: Final = "segment.jitter.ms"
SEGMENT_INDEX_BYTES_CONFIG: Final = "segment.index.bytes"
FLUSH_MESSAGES_INTERVAL_CONFIG: Final = "flush.messages"
FLUSH_MS_CONFIG: Final = "flush.ms"
RETENTION_BYTES_CONFIG: Final = "retention.bytes"
RETENTION_MS_CONFIG: Final = "retention.ms"
MAX_MESSAGE_BYTES_CONFIG: Final = "max.message.bytes"
INDEX_INTERVAL_BYTES_CONFIG: Final = "index.interval.bytes"
DELETE_RETENTION_MS_CONFIG: Final = "delete.retention.ms"
MIN_COMPACTION_LAG_MS_CONFIG: Final = "min.compaction.lag.ms"
MAX_COMPACTION_LAG_MS_CONFIG: Final = "max.compaction.lag.ms"
FILE_DELETE_DELAY_MS_CONFIG: Final = "file.delete.delay.ms"
MIN_CLEANABLE_DIRTY_RATIO_CONFIG: Final = "min.cleanable.dirty.ratio"
CLEANUP_POLICY_CONFIG: Final = "cleanup.policy"
UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG: Final = "unclean.leader.election.enable"
MIN_IN_SYNC_REPLICAS_CONFIG: Final = "min.insync.replicas"
COMPRESSION_TYPE_CONFIG: Final = "compression.type"
COMPRESSION_GZIP_LEVEL_CONFIG: Final = "compression.gzip.level"
COMPRESSION_LZ4_LEVEL_CONFIG: Final = "compression.lz4.level"
COMPRESSION_ZSTD_LEVEL_CONFIG: Final = "compression.zstd.level"
PREALLOCATE_CONFIG: Final = "preallocate"
MESSAGE_FORMAT_VERSION_CONFIG: Final = "message.format.version"
MESSAGE_TIMESTAMP_TYPE_CONFIG: Final = "message.timestamp.type"
MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS_CONFIG: Final = "message.timestamp.difference.max.ms"
MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG: Final = "message.timestamp.before.max.ms"
MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG: Final = "message.timestamp.after.max.ms"
MESSAGE_DOWNCONVERSION_ENABLE_CONFIG: Final = "message.downconversion.enable"
# QuotaConfigs (replication throttling) and the tiered-storage properties of TopicConfig
LEADER_REPLICATION_THROTTLED_REPLICAS_CONFIG: Final = "leader.replication.throttled.replicas"
FOLLOWER_REPLICATION_THROTTLED_REPLICAS_CONFIG: Final = "follower.replication.throttled.replicas"
REMOTE_LOG_STORAGE_ENABLE_CONFIG: Final = "remote.storage.enable"
LOCAL_LOG_RETENTION_MS_CONFIG: Final = "local.retention.ms"
LOCAL_LOG_RETENTION_BYTES_CONFIG: Final = "local.retention.bytes"

CLEANUP_POLICY_COMPACT: Final = "compact"
CLEANUP_POLICY_DELETE: Final = "delete"



class BrokerCompressionType(enum.StrEnum):
    """The values of ``compression.type`` (Kafka: ``BrokerCompressionType``, server-common, 3.8.0).

    ``producer`` keeps whatever codec the producer used; ``uncompressed`` is the broker's name for the
    record codec ``none`` (which is *not* a valid ``compression.type``, in 0.10.1 nor in 3.8).  Members
    compare equal to their names.
    """

    UNCOMPRESSED = "uncompressed"
    ZSTD = "zstd"
    LZ4 = "lz4"
    SNAPPY = "snappy"
    GZIP = "gzip"
    PRODUCER = "producer"

    @classmethod
    def for_name(cls, name: str) -> BrokerCompressionType:
        """Kafka's ``BrokerCompressionType.forName``: the member of that name in any case."""
        try:
            return cls(name.lower())
        except ValueError:
            raise ValueError(f"Unknown broker compression type name: {name.lower()}") from None

    @property
    def record_compression(self) -> CompressionType | None:
        """The record codec a log with this setting writes; ``None`` for ``producer`` (keep the batch's).

        Kafka: ``LogConfig.getCompression`` (the codec part of its ``Optional<Compression>``).
        """
        if self is BrokerCompressionType.PRODUCER:
            return None
        if self is BrokerCompressionType.UNCOMPRESSED:
            return CompressionType.NONE
        return CompressionType[self.name]


# --- Defaults (Kafka: LogConfig.DEFAULT_*, ServerLogConfigs.*_DEFAULT, the codecs' DEFAULT_LEVEL) ----------

DEFAULT_SEGMENT_BYTES: Final = 1024 * 1024 * 1024
DEFAULT_SEGMENT_MS: Final = 24 * 7 * 60 * 60 * 1000
DEFAULT_SEGMENT_JITTER_MS: Final = 0
DEFAULT_SEGMENT_INDEX_BYTES: Final = 10 * 1024 * 1024  # ServerLogConfigs.LOG_INDEX_SIZE_MAX_BYTES_DEFAULT
DEFAULT_FLUSH_MESSAGES: Final = INT64_MAX  # LOG_FLUSH_INTERVAL_MESSAGES_DEFAULT
DEFAULT_FLUSH_MS: Final = INT64_MAX  # LOG_FLUSH_SCHEDULER_INTERVAL_MS_DEFAULT
DEFAULT_RETENTION_BYTES: Final = -1  # LOG_RETENTION_BYTES_DEFAULT
DEFAULT_RETENTION_MS: Final = 24 * 7 * 60 * 60 * 1000
DEFAULT_MAX_MESSAGE_BYTES: Final = 1024 * 1024 + LOG_OVERHEAD
DEFAULT_INDEX_INTERVAL_BYTES: Final = 4096  # LOG_INDEX_INTERVAL_BYTES_DEFAULT
DEFAULT_DELETE_RETENTION_MS: Final = 24 * 60 * 60 * 1000
DEFAULT_MIN_COMPACTION_LAG_MS: Final = 0
DEFAULT_MAX_COMPACTION_LAG_MS: Final = INT64_MAX
DEFAULT_FILE_DELETE_DELAY_MS: Final = 60000  # LOG_DELETE_DELAY_MS_DEFAULT
DEFAULT_MIN_CLEANABLE_DIRTY_RATIO: Final = 0.5
DEFAULT_CLEANUP_POLICY: Final = CLEANUP_POLICY_DELETE  # LOG_CLEANUP_POLICY_DEFAULT
DEFAULT_UNCLEAN_LEADER_ELECTION_ENABLE: Final = False
DEFAULT_MIN_IN_SYNC_REPLICAS: Final = 1  # MIN_IN_SYNC_REPLICAS_DEFAULT
DEFAULT_COMPRESSION_TYPE: Final = BrokerCompressionType.PRODUCER.value
DEFAULT_COMPRESSION_GZIP_LEVEL: Final = -1  # GzipCompression.DEFAULT_LEVEL = Deflater.DEFAULT_COMPRESSION
DEFAULT_COMPRESSION_LZ4_LEVEL: Final = 9  # Lz4Compression.DEFAULT_LEVEL
DEFAULT_COMPRESSION_ZSTD_LEVEL: Final = 3  # ZstdCompression.DEFAULT_LEVEL = Zstd.defaultCompressionLevel()
DEFAULT_PREALLOCATE: Final = False
DEFAULT_MESSAGE_FORMAT_VERSION: Final = "3.0-IV1"  # LOG_MESSAGE_FORMAT_VERSION_DEFAULT = IBP_3_0_IV1
DEFAULT_MESSAGE_TIMESTAMP_TYPE: Final = "CreateTime"  # LOG_MESSAGE_TIMESTAMP_TYPE_DEFAULT
DEFAULT_MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS: Final = INT64_MAX
DEFAULT_MESSAGE_TIMESTAMP_BEFORE_MAX_MS: Final = INT64_MAX
DEFAULT_MESSAGE_TIMESTAMP_AFTER_MAX_MS: Final = INT64_MAX
DEFAULT_MESSAGE_DOWNCONVERSION_ENABLE: Final = True  # LOG_MESSAGE_DOWNCONVERSION_ENABLE_DEFAULT
DEFAULT_REPLICATION_THROTTLED_REPLICAS: Final = ""  # QuotaConfigs.*_REPLICATION_THROTTLED_REPLICAS_DEFAULT
DEFAULT_REMOTE_STORAGE_ENABLE: Final = False
DEFAULT_LOCAL_RETENTION_MS: Final = -2  # derive from retention.ms
DEFAULT_LOCAL_RETENTION_BYTES: Final = -2  # derive from retention.bytes

_GZIP_MIN_LEVEL: Final = 1  # Deflater.BEST_SPEED
_GZIP_MAX_LEVEL: Final = 9  # Deflater.BEST_COMPRESSION
_LZ4_MIN_LEVEL: Final = 1
_LZ4_MAX_LEVEL: Final = 17
# zstd-jni's Zstd.minCompressionLevel() = ZSTD_minCLevel() = -ZSTD_TARGETLENGTH_MAX
_ZSTD_MIN_LEVEL: Final = -(1 << 17)
_ZSTD_MAX_LEVEL: Final = 22  # Zstd.maxCompressionLevel()


# --- message.format.version (Kafka: MetadataVersion, server-common, 3.8.0) --------------------------------

# Every MetadataVersion of Kafka 3.8.0, oldest first, as its "ibpVersion" string.  A release ("3.8") names its
# newest production version; 3.9-IV0 is past LATEST_PRODUCTION (3.8-IV0), so only its full name is valid.
_METADATA_VERSIONS: Final = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0",
    "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0",
    "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0", "1.1-IV0",
    "2.0-IV0", "2.0-IV1", "2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1", "2.3-IV0", "2.3-IV1",
    "2.4-IV0", "2.4-IV1", "2.5-IV0", "2.6-IV0", "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1",
    "3.0-IV0", "3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0",
    "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
    "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
)  # fmt: skip
_LATEST_PRODUCTION: Final = "3.8-IV0"
_FIRST_V1: Final = _METADATA_VERSIONS.index("0.10.0-IV0")  # IBP_0_10_0_IV0: message format v1
_FIRST_V2: Final = _METADATA_VERSIONS.index("0.11.0-IV0")  # IBP_0_11_0_IV0: record batches v2


def _build_version_lookup() -> dict[str, int]:
    lookup: dict[str, int] = {}
    newest_of_release: dict[str, int] = {}
    production_end = _METADATA_VERSIONS.index(_LATEST_PRODUCTION)
    for ordinal, version in enumerate(_METADATA_VERSIONS):
        if ordinal <= production_end:
            newest_of_release[version.split("-")[0]] = ordinal
        lookup[version] = ordinal
    lookup.update(newest_of_release)
    return lookup


_VERSION_LOOKUP: Final = _build_version_lookup()


@functools.lru_cache(maxsize=256)  # record_version() asks it on every append; a failure is not cached
def _metadata_version_ordinal(version: str) -> int:
    """Kafka's ``MetadataVersion.fromVersionString``: "0.10.1", "0.10.1.1", "0.10.1-IV2", "3.0", "3.0.1"...

    Only the first three dotted parts count for a "0." version and the first two otherwise, so "0.10.1.1"
    is 0.10.1's newest internal version and "3.0.1" is 3.0's.
    """
    parts = version.split(".")
    keep = 3 if version.startswith("0.") else 2
    key = version if keep >= len(parts) else ".".join(parts[:keep])
    ordinal = _VERSION_LOOKUP.get(key)
    if ordinal is None:
        raise ValueError(f"Version {version} is not a valid version")
    return ordinal


# --- ConfigDef: types, parsing and validators -------------------------------------------------------------

class _ConfigKey(NamedTuple):
    """One ``ConfigDef.define`` of ``LogConfig``: name, type, default (already parsed), validator, and this
    port's attribute and Kafka's server-default property (``ServerTopicConfigSynonyms``)."""

    name: str
    type: str  # "INT", "LONG", "DOUBLE", "BOOLEAN", "STRING" or "LIST", as in ConfigDef.Type
    default: object
    validator: Validator | None
    attribute: str
    server_default_property: str | None


def _gzip_level(name: str, value: Any) -> None:
    """Kafka's ``GzipCompression.LevelValidator``: 1..9, or -1 for zlib's default."""
    if value > _GZIP_MAX_LEVEL or (value < _GZIP_MIN_LEVEL and value != DEFAULT_COMPRESSION_GZIP_LEVEL):
        raise ConfigError.invalid(
            name,
            value,
            f"Value must be between {_GZIP_MIN_LEVEL} and {_GZIP_MAX_LEVEL} or equal to "
            f"{DEFAULT_COMPRESSION_GZIP_LEVEL}",
        )


_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replica_list(name: str, value: Any) -> None:
    """Kafka's ``ThrottledReplicaListValidator.ensureValid``: the literal ``*``, or ``partition:broker`` pairs
    (empty elements allowed), elements trimmed."""
    proposed = [str(element).strip() for element in value]
    if not (all(_THROTTLED_REPLICA.fullmatch(s) for s in proposed) or "".join(proposed) == "*"):
        raise ConfigError.invalid(
            name, value, f"{name} must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def ensure_valid_throttled_replicas(name: str, value: str) -> None:
    """Check a throttled-replicas value as written, split at commas (Kafka:
    ``ThrottledReplicaListValidator.ensureValidString``).

    Raises:
        ConfigError: ``value`` is neither ``*`` nor a list of ``partition:broker`` pairs.
    """
    _throttled_replica_list(name, value.split(","))


def _metadata_version(name: str, value: Any) -> None:
    """Kafka's ``MetadataVersionValidator``."""
    try:
        _metadata_version_ordinal(value)
    except ValueError as e:
        raise ConfigError.invalid(name, value, str(e)) from None


# Kafka's LogConfig CONFIG definitions, in its order (LogConfig.java, tag 3.8.0).  Defaults are stored
# parsed, as ConfigDef.define parses them.
_CONFIG_DEF: Final[tuple[_ConfigKey, ...]] = (
    _ConfigKey(SEGMENT_BYTES_CONFIG, "INT", DEFAULT_SEGMENT_BYTES, at_least(RECORD_OVERHEAD_V0),
               "segment_size", "log.segment.bytes"),
    _ConfigKey(SEGMENT_MS_CONFIG, "LONG", DEFAULT_SEGMENT_MS, at_least(1), "segment_ms", "log.roll.ms"),
    _ConfigKey(SEGMENT_JITTER_MS_CONFIG, "LONG", DEFAULT_SEGMENT_JITTER_MS, at_least(0),
               "segment_jitter_ms", "log.roll.jitter.ms"),
    _ConfigKey(SEGMENT_INDEX_BYTES_CONFIG, "INT", DEFAULT_SEGMENT_INDEX_BYTES, at_least(4),
               "max_index_size", "log.index.size.max.bytes"),
    _ConfigKey(FLUSH_MESSAGES_INTERVAL_CONFIG, "LONG", DEFAULT_FLUSH_MESSAGES, at_least(1),
               "flush_interval", "log.flush.interval.messages"),
    _ConfigKey(FLUSH_MS_CONFIG, "LONG", DEFAULT_FLUSH_MS, at_least(0), "flush_ms", "log.flush.interval.ms"),
    # can be negative: -1 (any negative, for the size check) means no size limit
    _ConfigKey(RETENTION_BYTES_CONFIG, "LONG", DEFAULT_RETENTION_BYTES, None,
               "retention_size", "log.retention.bytes"),
    # -1 means no time limit
    _ConfigKey(RETENTION_MS_CONFIG, "LONG", DEFAULT_RETENTION_MS, at_least(-1),
               "retention_ms", "log.retention.ms"),
    _ConfigKey(MAX_MESSAGE_BYTES_CONFIG, "INT", DEFAULT_MAX_MESSAGE_BYTES, at_least(0),
               "max_message_size", "message.max.bytes"),
    _ConfigKey(INDEX_INTERVAL_BYTES_CONFIG, "INT", DEFAULT_INDEX_INTERVAL_BYTES, at_least(0),
               "index_interval", "log.index.interval.bytes"),
    _ConfigKey(DELETE_RETENTION_MS_CONFIG, "LONG", DEFAULT_DELETE_RETENTION_MS, at_least(0),
               "delete_retention_ms", "log.cleaner.delete.retention.ms"),
    _ConfigKey(MIN_COMPACTION_LAG_MS_CONFIG, "LONG", DEFAULT_MIN_COMPACTION_LAG_MS, at_least(0),
               "compaction_lag_ms", "log.cleaner.min.compaction.lag.ms"),
    _ConfigKey(MAX_COMPACTION_LAG_MS_CONFIG, "LONG", DEFAULT_MAX_COMPACTION_LAG_MS, at_least(1),
               "max_compaction_lag_ms", "log.cleaner.max.compaction.lag.ms"),
    _ConfigKey(FILE_DELETE_DELAY_MS_CONFIG, "LONG", DEFAULT_FILE_DELETE_DELAY_MS, at_least(0),
               "file_delete_delay_ms", "log.segment.delete.delay.ms"),
    _ConfigKey(MIN_CLEANABLE_DIRTY_RATIO_CONFIG, "DOUBLE", DEFAULT_MIN_CLEANABLE_DIRTY_RATIO, between(0, 1),
               "min_cleanable_ratio", "log.cleaner.min.cleanable.ratio"),
    _ConfigKey(CLEANUP_POLICY_CONFIG, "LIST", (DEFAULT_CLEANUP_POLICY,),
               valid_list(CLEANUP_POLICY_COMPACT, CLEANUP_POLICY_DELETE),
               "cleanup_policy", "log.cleanup.policy"),
    _ConfigKey(UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, "BOOLEAN", DEFAULT_UNCLEAN_LEADER_ELECTION_ENABLE, None,
               "unclean_leader_election_enable", "unclean.leader.election.enable"),
    _ConfigKey(MIN_IN_SYNC_REPLICAS_CONFIG, "INT", DEFAULT_MIN_IN_SYNC_REPLICAS, at_least(1),
               "min_in_sync_replicas", "min.insync.replicas"),
    _ConfigKey(COMPRESSION_TYPE_CONFIG, "STRING", DEFAULT_COMPRESSION_TYPE,
               valid_string(*(member.value for member in BrokerCompressionType)),
               "compression_type", "compression.type"),
    _ConfigKey(COMPRESSION_GZIP_LEVEL_CONFIG, "INT", DEFAULT_COMPRESSION_GZIP_LEVEL, _gzip_level,
               "compression_gzip_level", "compression.gzip.level"),
    _ConfigKey(COMPRESSION_LZ4_LEVEL_CONFIG, "INT", DEFAULT_COMPRESSION_LZ4_LEVEL,
               between(_LZ4_MIN_LEVEL, _LZ4_MAX_LEVEL), "compression_lz4_level", "compression.lz4.level"),
    _ConfigKey(COMPRESSION_ZSTD_LEVEL_CONFIG, "INT", DEFAULT_COMPRESSION_ZSTD_LEVEL,
               between(_ZSTD_MIN_LEVEL, _ZSTD_MAX_LEVEL),
               "compression_zstd_level", "compression.zstd.level"),
    _ConfigKey(PREALLOCATE_CONFIG, "BOOLEAN", DEFAULT_PREALLOCATE, None, "preallocate", "log.preallocate"),
    _ConfigKey(MESSAGE_FORMAT_VERSION_CONFIG, "STRING", DEFAULT_MESSAGE_FORMAT_VERSION, _metadata_version,
               "message_format_version", "log.message.format.version"),
    _ConfigKey(MESSAGE_TIMESTAMP_TYPE_CONFIG, "STRING", DEFAULT_MESSAGE_TIMESTAMP_TYPE,
               valid_string("CreateTime", "LogAppendTime"), "message_timestamp_type",
               "log.message.timestamp.type"),
    _ConfigKey(MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS_CONFIG, "LONG",
               DEFAULT_MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS, at_least(0),
               "message_timestamp_difference_max_ms", "log.message.timestamp.difference.max.ms"),
    _ConfigKey(MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, "LONG", DEFAULT_MESSAGE_TIMESTAMP_BEFORE_MAX_MS,
               at_least(0), "message_timestamp_before_max_ms", "log.message.timestamp.before.max.ms"),
    _ConfigKey(MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG, "LONG", DEFAULT_MESSAGE_TIMESTAMP_AFTER_MAX_MS,
               at_least(0), "message_timestamp_after_max_ms", "log.message.timestamp.after.max.ms"),
    _ConfigKey(LEADER_REPLICATION_THROTTLED_REPLICAS_CONFIG, "LIST", (), _throttled_replica_list,
               "leader_replication_throttled_replicas", None),
    _ConfigKey(FOLLOWER_REPLICATION_THROTTLED_REPLICAS_CONFIG, "LIST", (), _throttled_replica_list,
               "follower_replication_throttled_replicas", None),
    _ConfigKey(MESSAGE_DOWNCONVERSION_ENABLE_CONFIG, "BOOLEAN", DEFAULT_MESSAGE_DOWNCONVERSION_ENABLE, None,
               "message_down_conversion_enable", "log.message.downconversion.enable"),
    _ConfigKey(REMOTE_LOG_STORAGE_ENABLE_CONFIG, "BOOLEAN", DEFAULT_REMOTE_STORAGE_ENABLE, None,
               "remote_storage_enable", None),
    _ConfigKey(LOCAL_LOG_RETENTION_MS_CONFIG, "LONG", DEFAULT_LOCAL_RETENTION_MS, at_least(-2),
               "local_retention_ms", "log.local.retention.ms"),
    _ConfigKey(LOCAL_LOG_RETENTION_BYTES_CONFIG, "LONG", DEFAULT_LOCAL_RETENTION_BYTES, at_least(-2),
               "local_retention_bytes", "log.local.retention.bytes"),
)  # fmt: skip

_KEYS: Final[dict[str, _ConfigKey]] = {key.name: key for key in _CONFIG_DEF}

#: Property name -> ``LogConfig`` attribute (Kafka's field name in snake_case), in Kafka's order.
#: ``cleanup.policy`` also sets ``compact`` and ``delete``; the timestamp before/after attributes hold the
#: effective bounds (see :class:`LogConfig`).
PROPERTY_ATTRIBUTES: Final[Mapping[str, str]] = {key.name: key.attribute for key in _CONFIG_DEF}

#: Property name -> the broker property whose value is the default for every topic (Kafka:
#: ``ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS``, the first synonym of each).
SERVER_CONFIG_SYNONYMS: Final[Mapping[str, str]] = {
    key.name: key.server_default_property for key in _CONFIG_DEF if key.server_default_property is not None
}

def _java_int_or_zero(text: str) -> int:
    """Kafka: ``ConfigSynonym.valueToInt`` with default 0: the trimmed text as a Java ``int``, 0 when it is
    empty or does not parse (Kafka logs an error and goes on with 0)."""
    trimmed = text.strip()
    if re.fullmatch(r"[+-]?[0-9]+", trimmed) is None or not INT32_MIN <= int(trimmed) <= INT32_MAX:
        return 0
    return int(trimmed)


def hours_to_milliseconds(value: str) -> str:
    """Kafka: ``ConfigSynonym.HOURS_TO_MILLISECONDS`` (``log.roll.hours`` read as ``segment.ms``)."""
    return str(_java_int_or_zero(value) * 3_600_000)


def minutes_to_milliseconds(value: str) -> str:
    """Kafka: ``ConfigSynonym.MINUTES_TO_MILLISECONDS`` (``log.retention.minutes`` read as ``retention.ms``)."""
    return str(_java_int_or_zero(value) * 60_000)


def _same(value: str) -> str:
    return value


class ConfigSynonym(NamedTuple):
    """A broker property that supplies a topic property's default, and how its value converts (Kafka:
    ``org.apache.kafka.server.config.ConfigSynonym``; the identity unless the units differ)."""

    name: str
    converter: Callable[[str], str] = _same


def _synonyms() -> dict[str, tuple[ConfigSynonym, ...]]:
    # Kafka lists a second and third synonym only where the broker has older, coarser properties; the first
    # of each is the _ConfigKey's server_default_property.
    extra: dict[str, tuple[ConfigSynonym, ...]] = {
        SEGMENT_MS_CONFIG: (ConfigSynonym("log.roll.hours", hours_to_milliseconds),),
        SEGMENT_JITTER_MS_CONFIG: (ConfigSynonym("log.roll.jitter.hours", hours_to_milliseconds),),
        FLUSH_MS_CONFIG: (ConfigSynonym("log.flush.scheduler.interval.ms"),),
        RETENTION_MS_CONFIG: (ConfigSynonym("log.retention.minutes", minutes_to_milliseconds),
                              ConfigSynonym("log.retention.hours", hours_to_milliseconds)),
    }
    return {name: (ConfigSynonym(server), *extra.get(name, ())) for name, server in SERVER_CONFIG_SYNONYMS.items()}


#: Property name -> every broker property that supplies its default, the first that is set winning, with the
#: conversion of its value (Kafka: ``ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS``).
ALL_SERVER_CONFIG_SYNONYMS: Final[Mapping[str, tuple[ConfigSynonym, ...]]] = _synonyms()

#: The properties no broker property supplies a default for (Kafka: ``LogConfig.CONFIGS_WITH_NO_SERVER_DEFAULTS``).
CONFIGS_WITH_NO_SERVER_DEFAULTS: Final = frozenset(
    key.name for key in _CONFIG_DEF if key.server_default_property is None)

#: Property name -> default value, parsed (``cleanup.policy`` is a tuple of policies).
DEFAULTS: Final[Mapping[str, object]] = {key.name: key.default for key in _CONFIG_DEF}

_MISSING: Final = object()


def _format_value(value: object) -> str:
    """A parsed value as the string a properties file holds (0.8.2 ``toProps`` wrote ``toString``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _check_names(props: Mapping[Any, Any]) -> None:
    """Raise :class:`~kafkalog.config.config_def.ConfigError` naming every key of ``props`` that is not a property."""
    unknown = sorted(str(name) for name in props if not isinstance(name, str) or name not in _KEYS)
    if unknown:
        noun = "name" if len(unknown) == 1 else "names"
        raise ConfigError(
            f"Unknown topic config {noun}: {', '.join(unknown)}",
            name=unknown[0] if len(unknown) == 1 else None,
            names=unknown,
        )


def _parse_props(props: Mapping[Any, Any]) -> dict[str, object]:
    """Kafka's ``ConfigDef.parse``: every property, parsed from ``props`` or defaulted, then validated."""
    _check_names(props)
    values: dict[str, object] = {}
    for key in _CONFIG_DEF:
        raw = props.get(key.name, _MISSING)
        if raw is _MISSING:
            value = key.default
        else:
            if key.name == MESSAGE_TIMESTAMP_TYPE_CONFIG and isinstance(raw, TimestampType):
                raw = raw.kafka_name
            value = parse_type(key.name, raw, key.type)
        if key.validator is not None:
            key.validator(key.name, value)
        values[key.name] = value
    return values


def _validate_values(values: Mapping[str, object]) -> None:
    """Kafka's ``LogConfig.validateValues`` (3.x): the checks that span two properties."""
    min_lag = values[MIN_COMPACTION_LAG_MS_CONFIG]
    max_lag = values[MAX_COMPACTION_LAG_MS_CONFIG]
    assert isinstance(min_lag, int) and isinstance(max_lag, int)
    if min_lag > max_lag:
        raise ConfigError(
            f"conflict topic config setting {MIN_COMPACTION_LAG_MS_CONFIG} ({min_lag}) > "
            f"{MAX_COMPACTION_LAG_MS_CONFIG} ({max_lag})",
            name=MIN_COMPACTION_LAG_MS_CONFIG,
            value=min_lag,
        )


def _validate_remote_storage_retention_size(values: Mapping[str, object]) -> None:
    """Kafka's ``validateRemoteStorageRetentionSize``: a set ``local.retention.bytes`` is neither unlimited nor
    above a limited ``retention.bytes``."""
    retention_bytes = values[RETENTION_BYTES_CONFIG]
    local_retention_bytes = values[LOCAL_LOG_RETENTION_BYTES_CONFIG]
    assert isinstance(retention_bytes, int) and isinstance(local_retention_bytes, int)
    if retention_bytes > -1 and local_retention_bytes != -2:
        if local_retention_bytes == -1:
            raise ConfigError.invalid(LOCAL_LOG_RETENTION_BYTES_CONFIG, local_retention_bytes,
                                      f"Value must not be -1 as {RETENTION_BYTES_CONFIG} value is set as "
                                      f"{retention_bytes}.")
        if local_retention_bytes > retention_bytes:
            raise ConfigError.invalid(LOCAL_LOG_RETENTION_BYTES_CONFIG, local_retention_bytes,
                                      f"Value must not be more than {RETENTION_BYTES_CONFIG} property value: "
                                      f"{retention_bytes}")


def _validate_remote_storage_retention_time(values: Mapping[str, object]) -> None:
    """Kafka's ``validateRemoteStorageRetentionTime``: a set ``local.retention.ms`` is neither unlimited nor
    above a limited ``retention.ms``."""
    retention_ms = values[RETENTION_MS_CONFIG]
    local_retention_ms = values[LOCAL_LOG_RETENTION_MS_CONFIG]
    assert isinstance(retention_ms, int) and isinstance(local_retention_ms, int)
    if retention_ms != -1 and local_retention_ms != -2:
        if local_retention_ms == -1:
            raise ConfigError.invalid(LOCAL_LOG_RETENTION_MS_CONFIG, local_retention_ms,
                                      f"Value must not be -1 as {RETENTION_MS_CONFIG} value is set as "
                                      f"{retention_ms}.")
        if local_retention_ms > retention_ms:
            raise ConfigError.invalid(LOCAL_LOG_RETENTION_MS_CONFIG, local_retention_ms,
                                      f"Value must not be more than {RETENTION_MS_CONFIG} property value: "
                                      f"{retention_ms}")


def _validate_no_remote_storage_for_compacted_topic(values: Mapping[str, object]) -> None:
    """Kafka's ``validateNoRemoteStorageForCompactedTopic``."""
    policy = values[CLEANUP_POLICY_CONFIG]
    assert isinstance(policy, tuple)
    if CLEANUP_POLICY_COMPACT in ",".join(policy).lower():
        raise ConfigError("Remote log storage is unsupported for the compacted topics",
                          name=CLEANUP_POLICY_CONFIG, value=policy)


def _validate_topic_log_config_values(values: Mapping[str, object], remote_storage_system_enabled: bool) -> None:
    """Kafka's ``validateTopicLogConfigValues``: a topic's values merged over the broker's defaults."""
    _validate_values(values)
    if values[REMOTE_LOG_STORAGE_ENABLE_CONFIG]:
        LogConfig.validate_remote_storage_only_if_system_enabled(values, remote_storage_system_enabled, False)
        _validate_no_remote_storage_for_compacted_topic(values)
        _validate_remote_storage_retention_size(values)
        _validate_remote_storage_retention_time(values)


def _utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs`` on an int: ``Integer.MIN_VALUE`` maps to 0, where ``Math.abs`` overflows."""
    return 0 if n == INT32_MIN else abs(n)


_RANDOM: Final = random.Random()


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=True)
class LogConfig:
    """The configuration of one log (Kafka: ``kafka.log.LogConfig``; ``LogConfig.java`` since 3.5).

    ``LogConfig(props)`` reads a mapping of property names to values; every property it does not name
    gets its default (see the module docstring for the table).  The result is immutable, compares and
    hashes by its attribute values, and its repr lists the properties that differ from the defaults::

        >>> LogConfig({"segment.bytes": "1024", "cleanup.policy": "compact,delete"})
        LogConfig({'segment.bytes': '1024', 'cleanup.policy': 'compact,delete'})

    The attributes are Kafka's field names in snake_case (``segmentSize`` -> ``segment_size``), with the
    values typed: ``compact``/``delete`` are booleans, ``compression_type`` a :class:`BrokerCompressionType`,
    ``message_timestamp_type`` a :class:`~kafkalog.record.types.TimestampType`, ``message_format_version``
    the full version name (``"3.0"`` is stored as ``"3.0-IV1"``).  ``message_timestamp_before_max_ms`` and
    ``..._after_max_ms`` are the effective bounds: the deprecated ``message.timestamp.difference.max.ms``
    when the new property is left at its default, as Kafka 3.6+ computes them.  ``segment_bytes`` and
    ``min_compaction_lag_ms`` are aliases named after the properties.

    ``overridden_configs`` is the set of property names a topic set itself (Kafka 3.x: ``overriddenConfigs``);
    :meth:`from_props` fills it with the names of the overrides.  It is not part of equality.

    For a changed copy use ``LogConfig.from_props(config.to_props(), changes)`` (``dataclasses.replace``
    does not apply: the constructor takes properties, not attributes).  Instances pickle (for Spark tasks).

    Raises:
        ConfigError: an unknown property name, or a value of the wrong type or out of range.  Unlike
            :meth:`validate`, the constructor does not check ``min.compaction.lag.ms`` against
            ``max.compaction.lag.ms``: Kafka's constructor does not either (a broker checks topic configs
            with ``validate`` when they are set).
    """

    segment_size: int
    segment_ms: int
    segment_jitter_ms: int
    max_index_size: int
    flush_interval: int
    flush_ms: int
    retention_size: int
    retention_ms: int
    index_interval: int
    file_delete_delay_ms: int
    delete_retention_ms: int
    compaction_lag_ms: int
    max_compaction_lag_ms: int
    min_cleanable_ratio: float
    cleanup_policy: tuple[str, ...]
    compact: bool
    delete: bool
    unclean_leader_election_enable: bool
    min_in_sync_replicas: int
    compression_type: BrokerCompressionType
    compression_gzip_level: int
    compression_lz4_level: int
    compression_zstd_level: int
    preallocate: bool
    message_format_version: str
    message_timestamp_type: TimestampType
    message_timestamp_difference_max_ms: int
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    leader_replication_throttled_replicas: tuple[str, ...]
    follower_replication_throttled_replicas: tuple[str, ...]
    message_down_conversion_enable: bool
    remote_storage_enable: bool
    local_retention_ms: int
    local_retention_bytes: int
    max_message_size: int
    overridden_configs: frozenset[str] = dataclasses.field(compare=False)
    _values: Mapping[str, object] = dataclasses.field(compare=False)

    def __init__(
        self, props: Mapping[str, object] | None = None, *, overridden_configs: Iterable[str] = ()
    ) -> None:
        """Kafka: ``LogConfig(Map<?, ?> props, Set<String> overriddenConfigs)``."""
        values = _parse_props(props if props is not None else {})
        set_ = object.__setattr__
        set_(self, "_values", values)
        set_(self, "overridden_configs", frozenset(overridden_configs))
        for key in _CONFIG_DEF:
            value = values[key.name]
            if key.name == COMPRESSION_TYPE_CONFIG:
                assert isinstance(value, str)
                value = BrokerCompressionType.for_name(value)
            elif key.name == MESSAGE_FORMAT_VERSION_CONFIG:
                assert isinstance(value, str)
                value = _METADATA_VERSIONS[_metadata_version_ordinal(value)]
            elif key.name == MESSAGE_TIMESTAMP_TYPE_CONFIG:
                value = TimestampType.of(str(value))
            set_(self, key.attribute, value)
        policies = [policy.lower() for policy in self.cleanup_policy]
        set_(self, "compact", CLEANUP_POLICY_COMPACT in policies)
        set_(self, "delete", CLEANUP_POLICY_DELETE in policies)
        # Kafka 3.6+ getMessageTimestampBeforeMaxMs / getMessageTimestampAfterMaxMs: during the deprecation
        # of message.timestamp.difference.max.ms, a before/after bound left at its default takes its value.
        difference = self.message_timestamp_difference_max_ms
        if self.message_timestamp_before_max_ms == INT64_MAX:
            set_(self, "message_timestamp_before_max_ms", difference)
        if self.message_timestamp_after_max_ms == INT64_MAX:
            set_(self, "message_timestamp_after_max_ms", difference)
        # Kafka: localRetentionMs() / localRetentionBytes(): -2 means "as retention.ms / retention.bytes".
        if self.local_retention_ms == DEFAULT_LOCAL_RETENTION_MS:
            set_(self, "local_retention_ms", self.retention_ms)
        if self.local_retention_bytes == DEFAULT_LOCAL_RETENTION_BYTES:
            set_(self, "local_retention_bytes", self.retention_size)

    # --- Kafka's static methods -----------------------------------------------------------------------

    @classmethod
    def from_props(cls, defaults: Mapping[str, object], overrides: Mapping[str, object]) -> LogConfig:
        """A config of ``defaults`` (the broker's) with a topic's ``overrides`` laid over them.

        Kafka: ``LogConfig.fromProps(defaults, overrides)``.  The names of ``overrides`` become
        ``overridden_configs`` (3.x).
        """
        merged: dict[str, object] = dict(defaults)
        merged.update(overrides)
        return cls(merged, overridden_configs=overrides.keys())

    @staticmethod
    def config_names() -> list[str]:
        """Every property name, sorted (Kafka: ``LogConfig.configNames``)."""
        return sorted(_KEYS)

    @staticmethod
    def server_config_name(config_name: str) -> str | None:
        """The broker property that supplies ``config_name``'s default, or ``None`` for an unknown name or one
        of :data:`CONFIGS_WITH_NO_SERVER_DEFAULTS` (Kafka: ``LogConfig.serverConfigName``)."""
        return SERVER_CONFIG_SYNONYMS.get(config_name)

    @staticmethod
    def config_type(config_name: str) -> str | None:
        """The ``ConfigDef`` type of a property ("INT", "LONG", "DOUBLE", "BOOLEAN", "STRING", "LIST"), or
        ``None`` for an unknown name (Kafka: ``LogConfig.configType``)."""
        key = _KEYS.get(config_name)
        return None if key is None else key.type

    @staticmethod
    def validate_names(props: Mapping[str, object]) -> None:
        """Check that every name in ``props`` is a ``LogConfig`` property (Kafka: ``validateNames``).

        Raises:
            ConfigError: listing every unknown name (Kafka stops at the first).
        """
        _check_names(props)

    @staticmethod
    def validate(props: Mapping[str, object], configured_props: Mapping[str, object] | None = None,
                 is_remote_log_storage_system_enabled: bool = False) -> None:
        """Check the names of ``props`` and that every value parses and is valid, together with the others.

        Kafka: ``LogConfig.validate(props)`` and 3.x's ``validate(props, configuredProps,
        isRemoteLogStorageSystemEnabled)``.  Beyond the per-property checks of the constructor this checks
        ``min.compaction.lag.ms`` <= ``max.compaction.lag.ms`` (Kafka 2.3+, ``validateValues``).  With
        ``configured_props`` (the broker's topic defaults, by topic property name: Kafka's
        ``KafkaConfig.extractLogConfigMap``) the values are checked merged over them, as a broker checks a topic's
        new overrides, and a topic with ``remote.storage.enable`` must also be on a broker with tiered storage
        (``is_remote_log_storage_system_enabled``), not be compacted, and keep ``local.retention.*`` within
        ``retention.*`` (``validateTopicLogConfigValues``).

        Raises:
            ConfigError: naming the property and value at fault.
        """
        _check_names(props)
        if not configured_props:
            _validate_values(_parse_props(props))
        else:
            combined: dict[str, object] = dict(configured_props)
            combined.update(props)
            _validate_topic_log_config_values(_parse_props(combined), is_remote_log_storage_system_enabled)

    @staticmethod
    def validate_broker_log_config_values(props: Mapping[str, object],
                                          is_remote_log_storage_system_enabled: bool) -> None:
        """Check the broker's topic defaults (Kafka: ``validateBrokerLogConfigValues``): the cross-property
        checks, and with tiered storage on, ``local.retention.*`` within ``retention.*``.  ``props`` are by
        topic property name (Kafka's ``KafkaConfig.extractLogConfigMap``); missing ones take their defaults.

        Raises:
            ConfigError: naming the property and value at fault.
        """
        values = _parse_props(props)
        _validate_values(values)
        if is_remote_log_storage_system_enabled:
            _validate_remote_storage_retention_size(values)
            _validate_remote_storage_retention_time(values)

    @staticmethod
    def validate_remote_storage_only_if_system_enabled(props: Mapping[str, object],
                                                       is_remote_log_storage_system_enabled: bool,
                                                       is_receiving_config_from_store: bool) -> None:
        """Refuse ``remote.storage.enable`` on a broker without tiered storage (Kafka:
        ``validateRemoteStorageOnlyIfSystemEnabled``); the message depends on whether the config is a new one
        or comes from the store (the broker's own, when tiered storage was turned off under it).

        Raises:
            ConfigError: the topic asks for remote storage the broker has not got.
        """
        enabled = parse_type(REMOTE_LOG_STORAGE_ENABLE_CONFIG,
                              props.get(REMOTE_LOG_STORAGE_ENABLE_CONFIG, DEFAULT_REMOTE_STORAGE_ENABLE), "BOOLEAN")
        if enabled and not is_remote_log_storage_system_enabled:
            if is_receiving_config_from_store:
                message = ("You have to delete all topics with the property remote.storage.enable=true before "
                           "disabling tiered storage cluster-wide")
            else:
                message = ("Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
                           "with remote log storage.")
            raise ConfigError(message, name=REMOTE_LOG_STORAGE_ENABLE_CONFIG, value=enabled)

    # --- per-config methods ---------------------------------------------------------------------------

    def to_props(self) -> dict[str, str]:
        """Every property as the string a properties file would hold, in Kafka's order.

        Kafka 0.8.2: ``LogConfig.toProps`` (0.10.1 kept the originals instead).  ``LogConfig(c.to_props())``
        equals ``c``.  The values are the parsed ones as given (``message.format.version`` "3.0" stays "3.0";
        ``message.timestamp.before.max.ms`` is the property, not the effective bound).
        """
        return {name: _format_value(value) for name, value in self._values.items()}

    def values(self) -> dict[str, object]:
        """Every property's parsed value, as given (Kafka: ``AbstractConfig.values``)."""
        return dict(self._values)

    def get(self, config_name: str) -> object:
        """The parsed value of one property (Kafka: ``AbstractConfig.get``)."""
        if config_name not in _KEYS:
            raise ConfigError(f"Unknown topic config name: {config_name}", name=config_name)
        return self._values[config_name]

    def random_segment_jitter(self, rng: random.Random | None = None) -> int:
        """A random number of milliseconds to take off ``segment.ms`` when deciding to roll a segment.

        Kafka: ``LogConfig.randomSegmentJitter``: 0 when ``segment.jitter.ms`` is 0, otherwise
        ``Utils.abs(nextInt()) % min(segment_jitter_ms, segment_ms)``, which is in
        ``[0, min(segment_jitter_ms, segment_ms))``.  As in Kafka the draw is a 32-bit int, so it also stays
        below 2**31 - 1 ms (about 24.8 days) whatever the bound.  ``rng`` makes the draw reproducible; by
        default a module-level ``random.Random`` is used (Kafka: ``ThreadLocalRandom``).
        """
        if self.segment_jitter_ms == 0:
            return 0
        draw = (rng if rng is not None else _RANDOM).randrange(INT32_MIN, INT32_MAX + 1)
        return _utils_abs(draw) % min(self.segment_jitter_ms, self.segment_ms)

    def max_segment_ms(self) -> int:
        """The age at which the active segment rolls: ``segment_ms``, or ``max_compaction_lag_ms`` when that
        is smaller on a compacted log, so a dirty record does not wait past its deadline in an uncleanable
        active segment (Kafka 2.3+: ``LogConfig.maxSegmentMs``)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def init_file_size(self) -> int:
        """The size a new segment file is created with: ``segment_size`` when ``preallocate`` is set, else 0
        (Kafka: ``LogConfig.initFileSize``, ``Log.initFileSize`` in 0.10.1)."""
        return self.segment_size if self.preallocate else 0

    def record_version(self) -> int:
        """The newest message format (magic: 0, 1 or 2) that ``message_format_version`` allows.

        Kafka: ``LogConfig.recordVersion()`` = ``messageFormatVersion.highestSupportedRecordVersion()``: v0
        before 0.10.0, v1 before 0.11.0, v2 from then.  Kafka 3.x ignores the property when the inter-broker
        protocol is 3.0 or newer; this port has no inter-broker protocol, so it always honours it, as
        0.10.1 did (design: new logs write v2 unless configured).
        """
        ordinal = _metadata_version_ordinal(self.message_format_version)
        if ordinal < _FIRST_V1:
            return MAGIC_V0
        if ordinal < _FIRST_V2:
            return MAGIC_V1
        return MAGIC_V2

    @functools.cached_property
    def one_batch_append_terms(self) -> tuple[bool, bool, bool, int, int]:
        """What the leader's one-batch appends (:mod:`kafkalog.log.validator_one_batch`) need of this config,
        worked out once per config (it is immutable): whether the log writes v2 and CreateTime, whether it
        keeps an uncompressed batch uncompressed (``compression.type`` ``producer`` or ``uncompressed``),
        then ``compact`` and the two timestamp bounds.  Not part of equality; a copy works it out again."""
        chosen = self.compression_type.record_compression
        v2_create_time = self.record_version() == MAGIC_V2 \
            and self.message_timestamp_type is TimestampType.CREATE_TIME
        keeps_uncompressed = chosen is None or chosen is CompressionType.NONE
        return (v2_create_time, keeps_uncompressed, self.compact, self.message_timestamp_before_max_ms,
                self.message_timestamp_after_max_ms)

    @property
    def compression(self) -> CompressionType | None:
        """The record codec this log writes; ``None`` for ``producer`` (Kafka 3.8: ``compression``, without
        the level, which is in ``compression_*_level``)."""
        return self.compression_type.record_compression

    @property
    def segment_bytes(self) -> int:
        """Alias of :attr:`segment_size`, named after ``segment.bytes``."""
        return self.segment_size

    @property
    def min_compaction_lag_ms(self) -> int:
        """Alias of :attr:`compaction_lag_ms`, named after ``min.compaction.lag.ms``."""
        return self.compaction_lag_ms

    def overridden_configs_as_loggable_string(self) -> str:
        """The overridden properties as ``{name=value, ...}``, sorted, strings quoted (Kafka 3.x:
        ``overriddenConfigsAsLoggableString``; no ``LogConfig`` property is a password, so none is
        redacted)."""
        parts = []
        for name in sorted(self.overridden_configs):
            value = _format_value(self._values[name])
            parts.append(f'{name}="{value}"' if _KEYS[name].type == "STRING" else f"{name}={value}")
        return "{" + ", ".join(parts) + "}"

    def __repr__(self) -> str:
        changed = {
            name: _format_value(value) for name, value in self._values.items() if value != _KEYS[name].default
        }
        return f"LogConfig({changed!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (dict(self._values), tuple(sorted(self.overridden_configs))))


def target_compression(config: BrokerCompressionType | LogConfig, source: CompressionType | int | str
                       ) -> CompressionType:
    """The codec a log writes a batch in: its ``compression.type``, or the producer's codec when that is
    ``producer`` (Kafka 3.8: ``BrokerCompressionType.targetCompression``; 0.10.1:
    ``BrokerCompressionCodec.getTargetCompressionCodec``).  :mod:`kafkalog.log.validator` exports it."""
    broker = config.compression_type if isinstance(config, LogConfig) else config
    chosen = broker.record_compression
    return CompressionType.of(source) if chosen is None else chosen


def _rebuild(values: dict[str, object], overridden: tuple[str, ...]) -> LogConfig:
    """Unpickle a :class:`LogConfig` (pickling keeps the parsed values, so Spark tasks can carry one)."""
    return LogConfig(values, overridden_configs=overridden)
