"""The log cleaner's configuration: Kafka's ``CleanerConfig``.

Port of ``core/src/main/scala/kafka/log/CleanerConfig.scala`` (Apache Kafka, tag 0.10.1.1), a case class with
one field per setting, brought up to Kafka 3.8.0's
``storage/src/main/java/org/apache/kafka/storage/internals/log/CleanerConfig.java`` (the broker property names
and defaults) and the ranges ``core/src/main/scala/kafka/server/KafkaConfig.scala`` (3.8.0) gives those
properties.  A broker builds its cleaner's configuration from its own properties (3.8.0
``LogCleaner.cleanerConfig(KafkaConfig)``); :meth:`CleanerConfig.from_props` does the same from a mapping.

======================================  =======================  ==============  ========================
broker property                         default                  valid           attribute
======================================  =======================  ==============  ========================
log.cleaner.threads                     1                        int32 >= 0      num_threads
log.cleaner.dedupe.buffer.size          134217728 (128 MiB)      int64 >= 0      dedupe_buffer_size
log.cleaner.io.buffer.load.factor       0.9                      (0, 1]          dedupe_buffer_load_factor
log.cleaner.io.buffer.size              524288 (512 KiB)         int32 >= 0      io_buffer_size
message.max.bytes                       1048588 (1 MiB + 12)     int32 >= 0      max_message_size
log.cleaner.io.max.bytes.per.second     1.7976931348623157e308   > 0             max_io_bytes_per_second
log.cleaner.backoff.ms                  15000                    int64 >= 0      backoff_ms
log.cleaner.enable                      true                     boolean         enable_cleaner
(none: fixed in Kafka 3.8)              MD5                      MD5 only        hash_algorithm
======================================  =======================  ==============  ========================

The defaults are the broker's (3.8.0: ``CleanerConfig.LOG_CLEANER_*`` and ``message.max.bytes``), which are
what a cleaner gets when nothing is configured.  The 0.10.1.1 case-class defaults (4 MiB dedupe buffer, 1 MiB
I/O buffers, 32 MiB maximum message) survive in 3.8.0 only as the ``CleanerConfig(boolean enableCleaner)``
constructor that tests use: :meth:`CleanerConfig.from_enable`.

How the settings are used (3.8.0 ``LogCleaner.CleanerThread``): each of the ``num_threads`` threads gets
``min(dedupe_buffer_size / num_threads, 2**31 - 1)`` bytes of offset map (:attr:`dedupe_buffer_size_per_thread`)
and a read and a write buffer of ``io_buffer_size / num_threads / 2`` bytes each
(:attr:`io_buffer_size_per_thread`), which may grow up to ``max_message_size`` for a batch that does not fit.
All threads share one throttler of ``max_io_bytes_per_second``; a thread with nothing to clean sleeps
``backoff_ms``.

Where this departs from Kafka, on purpose (all are values Kafka accepts and then fails on):

* ``log.cleaner.io.buffer.load.factor`` must be in (0, 1]: Kafka checks nothing, and a factor above 1 lets the
  cleaner fill its offset map past its slots (the put then fails and the partition is marked uncleanable); a
  factor of 0 or less never lets one key in;
* ``log.cleaner.io.max.bytes.per.second`` must be above 0 (infinity is allowed): Kafka's throttler divides by
  it, so 0 makes the cleaner sleep for ever;
* ``log.cleaner.dedupe.buffer.size`` must not be negative (Kafka fails allocating the map when the cleaner
  starts);
* NaN is refused for both doubles;
* ``hash_algorithm`` (0.10.1.1's field, where any ``MessageDigest`` name was taken) must be MD5, in any case:
  Kafka 3.8.0 has no such setting (``CleanerConfig.HASH_ALGORITHM`` is fixed at MD5 and ``SkimpyOffsetMap``
  always hashes with it), and kafkalog's offset map, whose kernels (both twins) lay out 16-byte MD5 hashes
  with Kafka's probe sequence, computes nothing else.  A configuration the map cannot run is refused here,
  when it is made, rather than when the cleaner threads start.

Whether the per-thread offset map holds at least one entry depends on the hash size and is checked by the
cleaner itself, as in Kafka (``Cleaner``'s ``require``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import sys
from collections.abc import Mapping
from typing import Any, Final

from .._common import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from ..config.config_def import ConfigError, parse_type
from ..config.log_config import DEFAULT_MAX_MESSAGE_BYTES, SERVER_CONFIG_SYNONYMS
from ..errors import IllegalStateError

__all__ = [
    "CleanerConfig",
    "HASH_ALGORITHM",
    "LOG_CLEANER_THREADS",
    "LOG_CLEANER_IO_MAX_BYTES_PER_SECOND",
    "LOG_CLEANER_DEDUPE_BUFFER_SIZE",
    "LOG_CLEANER_IO_BUFFER_SIZE",
    "LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR",
    "LOG_CLEANER_BACKOFF_MS",
    "LOG_CLEANER_ENABLE",
    "LOG_CLEANER_THREADS_PROP",
    "LOG_CLEANER_IO_MAX_BYTES_PER_SECOND_PROP",
    "LOG_CLEANER_DEDUPE_BUFFER_SIZE_PROP",
    "LOG_CLEANER_IO_BUFFER_SIZE_PROP",
    "LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR_PROP",
    "LOG_CLEANER_BACKOFF_MS_PROP",
    "LOG_CLEANER_ENABLE_PROP",
    "MESSAGE_MAX_BYTES_PROP",
    "PROPERTY_ATTRIBUTES",
    "PROPERTY_TYPES",
]


# Kafka 3.8.0 CleanerConfig constants.
HASH_ALGORITHM: Final = "MD5"
LOG_CLEANER_THREADS: Final = 1
LOG_CLEANER_IO_MAX_BYTES_PER_SECOND: Final = sys.float_info.max  # Double.MAX_VALUE
LOG_CLEANER_DEDUPE_BUFFER_SIZE: Final = 128 * 1024 * 1024
LOG_CLEANER_IO_BUFFER_SIZE: Final = 512 * 1024
LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR: Final = 0.9
LOG_CLEANER_BACKOFF_MS: Final = 15 * 1000
LOG_CLEANER_ENABLE: Final = True

_LOG_CLEANER_PREFIX: Final = "log.cleaner."  # ServerTopicConfigSynonyms.LOG_CLEANER_PREFIX
LOG_CLEANER_THREADS_PROP: Final = _LOG_CLEANER_PREFIX + "threads"
LOG_CLEANER_IO_MAX_BYTES_PER_SECOND_PROP: Final = _LOG_CLEANER_PREFIX + "io.max.bytes.per.second"
LOG_CLEANER_DEDUPE_BUFFER_SIZE_PROP: Final = _LOG_CLEANER_PREFIX + "dedupe.buffer.size"
LOG_CLEANER_IO_BUFFER_SIZE_PROP: Final = _LOG_CLEANER_PREFIX + "io.buffer.size"
LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR_PROP: Final = _LOG_CLEANER_PREFIX + "io.buffer.load.factor"
LOG_CLEANER_BACKOFF_MS_PROP: Final = _LOG_CLEANER_PREFIX + "backoff.ms"
LOG_CLEANER_ENABLE_PROP: Final = _LOG_CLEANER_PREFIX + "enable"
MESSAGE_MAX_BYTES_PROP: Final = "message.max.bytes"  # ServerConfigs.MESSAGE_MAX_BYTES_CONFIG

#: Broker property -> (``ConfigDef`` type, attribute), in the order of ``LogCleaner.cleanerConfig``.
_PROPERTIES: Final[dict[str, tuple[str, str]]] = {
    LOG_CLEANER_THREADS_PROP: ("INT", "num_threads"),
    LOG_CLEANER_DEDUPE_BUFFER_SIZE_PROP: ("LONG", "dedupe_buffer_size"),
    LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR_PROP: ("DOUBLE", "dedupe_buffer_load_factor"),
    LOG_CLEANER_IO_BUFFER_SIZE_PROP: ("INT", "io_buffer_size"),
    MESSAGE_MAX_BYTES_PROP: ("INT", "max_message_size"),
    LOG_CLEANER_IO_MAX_BYTES_PER_SECOND_PROP: ("DOUBLE", "max_io_bytes_per_second"),
    LOG_CLEANER_BACKOFF_MS_PROP: ("LONG", "backoff_ms"),
    LOG_CLEANER_ENABLE_PROP: ("BOOLEAN", "enable_cleaner"),
}

#: Broker property -> its ConfigDef type (``INT``, ``LONG``, ``DOUBLE``, ``BOOLEAN``, ``STRING``).
PROPERTY_TYPES: Final[Mapping[str, str]] = {name: type_ for name, (type_, _) in _PROPERTIES.items()}
#: Broker property -> :class:`CleanerConfig` attribute.
PROPERTY_ATTRIBUTES: Final[Mapping[str, str]] = {name: attr for name, (_, attr) in _PROPERTIES.items()}
_ATTRIBUTE_PROPERTIES: Final[Mapping[str, str]] = {attr: name for name, attr in PROPERTY_ATTRIBUTES.items()}

#: ``log.cleaner.*`` broker properties that are topic defaults (``LogConfig``'s business), not the cleaner's.
_TOPIC_DEFAULT_PROPERTIES: Final = frozenset(
    name for name in SERVER_CONFIG_SYNONYMS.values() if name.startswith(_LOG_CLEANER_PREFIX)
)

#: The digests the offset map computes, by Java ``MessageDigest`` name (case-insensitive there too) ->
#: ``hashlib`` name: MD5 alone, as in Kafka 3.8 (module docstring).
_DIGESTS: Final[Mapping[str, str]] = {
    "MD5": "md5",
}


def _property(attribute: str) -> str:
    return _ATTRIBUTE_PROPERTIES.get(attribute, attribute)


def _check_int(attribute: str, value: object, low: int, high: int, minimum: int) -> None:
    name = _property(attribute)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError.invalid(name, value, f"Expected an integer, but it was a {type(value).__name__}")
    if not low <= value <= high:
        bits = "32-bit integer" if high == INT32_MAX else "64-bit integer (long)"
        raise ConfigError.invalid(name, value, f"Expected value to be a {bits}, but it is out of range")
    if value < minimum:
        raise ConfigError.invalid(name, value, f"Value must be at least {minimum}")


def _check_double(attribute: str, value: object) -> None:
    name = _property(attribute)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError.invalid(name, value, f"Expected a double, but it was a {type(value).__name__}")
    if math.isnan(value):
        raise ConfigError.invalid(name, value, "Value must be a number, not NaN")


@dataclasses.dataclass(frozen=True)
class CleanerConfig:
    """Configuration parameters for the log cleaner (Kafka: ``CleanerConfig``).

    Fields (Kafka's, in snake_case, in Kafka's order):

    * ``num_threads`` - the number of cleaner threads to run;
    * ``dedupe_buffer_size`` - the total memory used for log deduplication, across all threads;
    * ``dedupe_buffer_load_factor`` - the maximum fraction of the deduplication buffer to fill;
    * ``io_buffer_size`` - the total memory used for the cleaner's I/O buffers, across all threads;
    * ``max_message_size`` - the maximum size of a message that can appear in the log (the broker passes
      ``message.max.bytes``); the I/O buffers grow up to it;
    * ``max_io_bytes_per_second`` - the read and write I/O all cleaner threads together may do;
    * ``backoff_ms`` - how long to wait before looking again when no log is eligible for cleaning;
    * ``enable_cleaner`` - ``False`` turns the cleaner off entirely;
    * ``hash_algorithm`` - the digest used to compare keys: ``"MD5"`` (any case), the only one the offset
      map computes (Kafka 3.8 fixes it; 0.10.1 took any ``MessageDigest`` name).

    Immutable, compared and hashed by value.  Every value is checked when the object is made.

    Raises:
        ConfigError: a value of the wrong type or out of range, naming the broker property and the value.
    """

    num_threads: int = LOG_CLEANER_THREADS
    dedupe_buffer_size: int = LOG_CLEANER_DEDUPE_BUFFER_SIZE
    dedupe_buffer_load_factor: float = LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR
    io_buffer_size: int = LOG_CLEANER_IO_BUFFER_SIZE
    max_message_size: int = DEFAULT_MAX_MESSAGE_BYTES
    max_io_bytes_per_second: float = LOG_CLEANER_IO_MAX_BYTES_PER_SECOND
    backoff_ms: int = LOG_CLEANER_BACKOFF_MS
    enable_cleaner: bool = LOG_CLEANER_ENABLE
    hash_algorithm: str = HASH_ALGORITHM

    def __post_init__(self) -> None:
        # KafkaConfig 3.8.0: threads atLeast(0), io buffer atLeast(0), backoff atLeast(0),
        # message.max.bytes atLeast(0); the rest are this port's (module docstring).
        _check_int("num_threads", self.num_threads, INT32_MIN, INT32_MAX, 0)
        _check_int("dedupe_buffer_size", self.dedupe_buffer_size, INT64_MIN, INT64_MAX, 0)
        _check_double("dedupe_buffer_load_factor", self.dedupe_buffer_load_factor)
        if not 0.0 < self.dedupe_buffer_load_factor <= 1.0:
            raise ConfigError.invalid(
                LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR_PROP,
                self.dedupe_buffer_load_factor,
                "Value must be above 0 and at most 1",
            )
        _check_int("io_buffer_size", self.io_buffer_size, INT32_MIN, INT32_MAX, 0)
        _check_int("max_message_size", self.max_message_size, INT32_MIN, INT32_MAX, 0)
        _check_double("max_io_bytes_per_second", self.max_io_bytes_per_second)
        if not self.max_io_bytes_per_second > 0:
            raise ConfigError.invalid(
                LOG_CLEANER_IO_MAX_BYTES_PER_SECOND_PROP, self.max_io_bytes_per_second, "Value must be above 0"
            )
        _check_int("backoff_ms", self.backoff_ms, INT64_MIN, INT64_MAX, 0)
        if not isinstance(self.enable_cleaner, bool):
            raise ConfigError.invalid(
                LOG_CLEANER_ENABLE_PROP, self.enable_cleaner, "Expected value to be either true or false"
            )
        if not isinstance(self.hash_algorithm, str) or self.hash_algorithm.upper() not in _DIGESTS:
            raise ConfigError.invalid(
                "hash_algorithm",
                self.hash_algorithm,
                "The offset map hashes keys with MD5 only (as Kafka 3.8's SkimpyOffsetMap does)",
            )
        # Doubles given as ints are stored as floats, as ConfigDef parses them.
        object.__setattr__(self, "dedupe_buffer_load_factor", float(self.dedupe_buffer_load_factor))
        object.__setattr__(self, "max_io_bytes_per_second", float(self.max_io_bytes_per_second))

    # --- constructors --------------------------------------------------------------------------------

    @classmethod
    def from_enable(cls, enable_cleaner: bool) -> CleanerConfig:
        """Kafka 3.8.0's ``CleanerConfig(boolean enableCleaner)`` (the 0.10.1.1 case-class defaults): 1 thread,
        4 MiB dedupe buffer, load factor 0.9, 1 MiB I/O buffers, 32 MiB maximum message, no I/O limit,
        15 s backoff.  Kafka's tests and tools use it."""
        return cls(1, 4 * 1024 * 1024, 0.9, 1024 * 1024, 32 * 1024 * 1024, sys.float_info.max, 15 * 1000,
                   enable_cleaner)

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> CleanerConfig:
        """The cleaner configuration of a broker whose properties are ``props`` (Kafka 3.8.0:
        ``LogCleaner.cleanerConfig(KafkaConfig)``).

        Reads ``log.cleaner.threads``, ``log.cleaner.dedupe.buffer.size``, ``log.cleaner.io.buffer.load.factor``,
        ``log.cleaner.io.buffer.size``, ``message.max.bytes``, ``log.cleaner.io.max.bytes.per.second``,
        ``log.cleaner.backoff.ms`` and ``log.cleaner.enable``; each may be a typed value or the string a
        properties file holds (parsed as Kafka's ``ConfigDef`` parses it).  A missing property takes its
        default.  Other broker properties are ignored, since a broker's properties hold many, except names
        under ``log.cleaner.`` that no broker property has: those are refused, so a misspelling is not
        silently ignored.  ``log.cleaner.min.cleanable.ratio``, ``log.cleaner.delete.retention.ms`` and the
        ``log.cleaner.*.compaction.lag.ms`` are topic defaults (see :class:`~kafkalog.config.log_config.LogConfig`) and
        are ignored here.

        Raises:
            ConfigError: a value Kafka would refuse, or an unknown ``log.cleaner.`` name.
        """
        unknown = sorted(
            name for name in props
            if isinstance(name, str) and name.startswith(_LOG_CLEANER_PREFIX)
            and name not in _PROPERTIES and name not in _TOPIC_DEFAULT_PROPERTIES
        )
        if unknown:
            noun = "name" if len(unknown) == 1 else "names"
            raise ConfigError(
                f"Unknown log cleaner config {noun}: {', '.join(unknown)}",
                name=unknown[0] if len(unknown) == 1 else None,
                names=unknown,
            )
        values: dict[str, Any] = {}
        for name, (type_, attribute) in _PROPERTIES.items():
            if name in props:
                values[attribute] = parse_type(name, props[name], type_)
        return cls(**values)

    # --- derived values ------------------------------------------------------------------------------

    def to_props(self) -> dict[str, str]:
        """The broker properties of this configuration, as a properties file holds them (``hash_algorithm``
        is not a broker property and is left out).  ``CleanerConfig.from_props(c.to_props())`` equals ``c``
        when ``c`` uses MD5."""
        out: dict[str, str] = {}
        for name, attribute in PROPERTY_ATTRIBUTES.items():
            value = getattr(self, attribute)
            if isinstance(value, bool):
                out[name] = "true" if value else "false"
            elif isinstance(value, float):
                out[name] = repr(value)
            else:
                out[name] = str(value)
        return out

    @property
    def dedupe_buffer_size_per_thread(self) -> int:
        """The offset-map memory of each cleaner thread: ``min(dedupe_buffer_size / num_threads, 2**31 - 1)``
        (Kafka: ``CleanerThread``'s ``SkimpyOffsetMap`` size; the excess is ignored, with a warning there)."""
        self._require_threads()
        return min(self.dedupe_buffer_size // self.num_threads, INT32_MAX)

    @property
    def io_buffer_size_per_thread(self) -> int:
        """The size of each of a cleaner thread's two I/O buffers (read and write):
        ``io_buffer_size / num_threads / 2`` (Kafka: ``CleanerThread``'s ``ioBufferSize``)."""
        self._require_threads()
        return self.io_buffer_size // self.num_threads // 2

    @property
    def hashlib_name(self) -> str:
        """The ``hashlib`` name of :attr:`hash_algorithm` (``"md5"`` for ``"MD5"``)."""
        return _DIGESTS[self.hash_algorithm.upper()]

    def new_digest(self) -> Any:
        """A fresh ``hashlib`` object for :attr:`hash_algorithm` (Kafka: ``MessageDigest.getInstance``)."""
        return hashlib.new(self.hashlib_name)

    def _require_threads(self) -> None:
        if self.num_threads < 1:
            raise IllegalStateError(
                f"The cleaner is configured with {self.num_threads} threads ({LOG_CLEANER_THREADS_PROP}): "
                "there is no per-thread buffer"
            )
