"""The options of the ``kafkalog`` data source, parsed and checked before any file is touched.

Spark hands a data source its options as a case-insensitive map of strings (the keys arrive in lower
case).  The names and meanings are those of Spark's own Kafka source (Spark 3.5,
``KafkaSourceProvider.scala``), so a job reading a broker can be pointed at its files by changing the
format and the path:

- which partitions: exactly one of ``assign`` (``{"topicA": [0, 1]}``), ``subscribe`` (comma-separated
  topics; ``topics`` is another name for it) and ``subscribePattern`` (a regular expression matched in
  full; ``topicPattern``), or none of them for every topic under the paths.  Internal topics
  (``__consumer_offsets``, ``__transaction_state``, ``__cluster_metadata``) are read only when
  ``assign`` or ``subscribe`` names them, as a Kafka consumer with its default
  ``exclude.internal.topics=true`` sees them: a pattern, or no topic option, leaves them out;
- where to start and end: ``startingTimestamp``, then ``startingOffsetsByTimestamp``, then
  ``startingOffsets``, the first given wins (Spark: ``getKafkaOffsetRangeLimit``); the same for the
  ending options.  Offsets are Kafka's JSON, ``{"topicA": {"0": 23, "1": -2}}``, with -2 meaning
  earliest and -1 latest, or the words ``earliest`` and ``latest``; timestamps are milliseconds since
  the epoch, one for every partition or Kafka's JSON per partition, resolved through each partition's
  time index to the first offset whose timestamp is at or after it.  Ending offsets are exclusive.  As
  in Spark, a batch read may not start at ``latest`` nor end at ``earliest``, a JSON must name every
  partition the read selects, and a stream has no ending options;
- how a stream takes its micro-batches: ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` and
  ``maxTriggerDelay`` (Spark's admission control, :mod:`kafkalog.spark.stream`); how a read is cut into
  tasks: ``maxPartitionBytes``, ``minPartitions``, ``maxRecordsPerPartition`` (:mod:`kafkalog.spark.plan`).

``kafka.isolation.level`` is ``read_uncommitted`` unless set, as in Spark's source (the Kafka consumer's
default).  An option the source does not take is an error naming it and its close matches, not silence
(Spark's Kafka source refuses its unsupported ``kafka.`` options the same way).  ``path`` may be a glob
(``/archive/broker-*/kafka-logs``, ``s3://bucket/logs/orders-*``), expanded on the driver (a URL's by its
filesystem, with the ``storage.<name>`` options); a glob that matches nothing is an error.

A path may also be a URL (``s3://bucket/kafka-logs``, ``gs://``, ``abfs://``, ``hdfs://``), read through fsspec
by range (:mod:`kafkalog.urls`); every ``storage.<name>`` option goes to its filesystem
(``storage.endpoint_url``, ``storage.key``, ``storage.secret``, ...; a value that reads as JSON is that value),
which each task builds for itself when it first reads.

A path may also hold Kafka's tiered storage (:mod:`kafkalog.partition_view.tiered`): ``layout`` says which layout is
there (``auto``, the default, finds it; ``broker``, ``kafka-local-tiered-storage``, ``aiven-tiered-storage``),
``layout.prefix`` is Aiven's plugin's ``key.prefix``, and ``remoteLogMetadata`` names the partition dirs of
``__remote_log_metadata`` (comma-separated, or a JSON list; local or URLs) whose ``COPY_SEGMENT_FINISHED``
segments are the only ones read.
"""

from __future__ import annotations

import difflib
import glob
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KafkaLogError
from ..topic import CLUSTER_METADATA_TOPIC_NAME, TopicPartition, is_internal_topic
from ..urls.location import StorageLocation, is_url, locate, option_value

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "Position",
    "ReadOptions",
    "TimestampSpec",
    "READ_OPTIONS",
    "SparkOptionError",
    "check_option_names",
    "is_internal",
    "parse_offsets",
    "parse_time_ms",
    "storage_options_of",
]

#: The prefix of the options that go to the filesystem of URL paths.
STORAGE_PREFIX = "storage."

#: Kafka's sentinel offsets in the JSON form (``ListOffsetsRequest.EARLIEST_TIMESTAMP`` / ``LATEST``).
EARLIEST = -2
LATEST = -1

#: What a read task covers when ``maxPartitionBytes`` is not given (Spark's ``spark.sql.files.maxPartitionBytes``).
DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024


class SparkOptionError(KafkaLogError, ValueError):
    """An option of the ``kafkalog`` data source is missing, malformed or contradicts another."""


#: The options a read (batch or streaming) takes, as the docs spell them; ``path`` and ``paths`` are what
#: Spark passes for ``load(path)`` and ``load([paths])``.
READ_OPTIONS = (
    "path", "paths", "assign", "topics", "subscribe", "topicPattern", "subscribePattern", "startingOffsets",
    "endingOffsets", "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy", "includeHeaders", "kafka.isolation.level",
    "failOnDataLoss", "checkCrcs", "maxPartitionBytes", "minPartitions", "maxRecordsPerPartition",
    "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "layout", "layout.prefix",
    "remoteLogMetadata",
)

#: The values of ``layout`` (:mod:`kafkalog.partition_view.tiered`): what is at each path.
LAYOUTS = ("auto", "broker", "kafka-local-tiered-storage", "aiven-tiered-storage")

#: Options of Spark's Kafka source that kafkalog does not implement yet, refused as such rather than as
#: unknown: none at present (every option of Spark 3.5's source that has a meaning for files is taken).
NOT_SUPPORTED_YET: tuple[str, ...] = ()

#: The options only a stream uses; a batch read takes them and says it ignores them, as Spark's source does.
STREAM_ONLY_OPTIONS = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")

#: ``maxTriggerDelay`` when not given (Spark: ``DEFAULT_MAX_TRIGGER_DELAY``, 15 minutes).
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000

#: Options of Spark's Kafka source about the broker connection, which a read of files has no use for.
BROKER_OPTIONS = (
    "kafka.bootstrap.servers", "kafka.group.id", "groupIdPrefix", "kafkaConsumer.pollTimeoutMs",
    "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
)


def check_option_names(options: Iterable[str], known: Iterable[str], what: str, *,
                       accept: Callable[[str], bool] | None = None) -> None:
    """Refuse an option ``known`` does not name (in any case), naming it and the close matches.

    Spark lower-cases option names before a data source sees them, so the message names the option in lower
    case and the close matches as the docs spell them.  Spark's Kafka source options that kafkalog lacks get
    their own message ("not supported yet"), as do its broker options.  ``accept`` takes further names (the
    writer's topic configs).
    """
    spelled = {name.lower(): name for name in known}
    later = {name.lower(): name for name in NOT_SUPPORTED_YET}
    broker = {name.lower(): name for name in BROKER_OPTIONS}
    for option in options:
        key = option.lower()
        if key in spelled or (accept is not None and accept(key)):
            continue
        if key in later:
            raise SparkOptionError(f"option {later[key]!r} of Spark's Kafka source is not supported yet by "
                                   f"kafkalog ({what})")
        if key in broker:
            raise SparkOptionError(f"option {broker[key]!r} is for a Kafka broker; kafkalog reads log files: "
                                   "drop it")
        close = difflib.get_close_matches(key, list(spelled), n=3, cutoff=0.6)
        if close:
            raise SparkOptionError(f"unknown option {option!r} for {what}; did you mean "
                                   f"{' or '.join(spelled[c] for c in close)}?")
        # No near name: the list of what it takes, which the message is otherwise short without.
        raise SparkOptionError(f"unknown option {option!r} for {what} (it takes: "
                               f"{', '.join(n for n in known if n not in ('path', 'paths'))})")


def is_internal(topic: str) -> bool:
    """Whether ``topic`` is one the broker keeps for itself: Kafka's internal topics (``Topic.isInternal``:
    ``__consumer_offsets``, ``__transaction_state``) and KRaft's metadata log, ``__cluster_metadata``."""
    return is_internal_topic(topic) or topic == CLUSTER_METADATA_TOPIC_NAME


#: A parsed ``startingOffsets`` / ``endingOffsets``: a default for every partition (``EARLIEST`` or
#: ``LATEST``), or offsets per partition.
OffsetSpec = int | dict[TopicPartition, int]


@dataclass(frozen=True)
class TimestampSpec:
    """A start or end given by time (``startingTimestamp``, ``startingOffsetsByTimestamp`` and the ending
    ones): one timestamp for every partition, or one per partition.  Each partition's offset is the first
    whose record timestamp is at or after it, found through the time index (Kafka's ListOffsets by
    timestamp, which Spark's source asks the broker for).  When no record is that late, an end is the
    latest offset; a start is an error, or the latest offset with ``startingOffsetsByTimestampStrategy=latest``
    (Spark: ``KafkaOffsetReaderAdmin.readTimestampOffsets``)."""

    #: The option it came from, for messages.
    option: str
    timestamps: int | dict[TopicPartition, int]
    latest_when_none: bool = False


#: Where a read starts or ends: offsets, or timestamps to look up.
Position = OffsetSpec | TimestampSpec


def _partition_json(name: str, text: str, what: str, example: str) -> dict[TopicPartition, int]:
    """Kafka's ``{"topic": {"partition": number}}`` JSON (Spark: ``JsonUtils.partitionOffsets`` and
    ``partitionTimestamps``), the numbers whole; ``what`` names them in messages."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as e:
        raise SparkOptionError(f"{name} must be {example}, got {text!r}: {e.msg} at character {e.pos}") from None
    if not isinstance(parsed, dict):
        raise SparkOptionError(f"{name}: expected a JSON object of topics, got {text!r}")
    found: dict[TopicPartition, int] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise SparkOptionError(f"{name}: topic {topic!r} must map partition numbers to {what}s, got "
                                   f"{partitions!r}")
        for partition, number in partitions.items():
            try:
                index = int(partition)
            except ValueError:
                raise SparkOptionError(f"{name}: {partition!r} of topic {topic!r} is not a partition number") from None
            if isinstance(number, bool) or not isinstance(number, int):
                raise SparkOptionError(f"{name}: the {what} of {topic}-{index} must be a whole number, got {number!r}")
            found[TopicPartition(topic, index)] = number
    return found


def parse_offsets(name: str, text: str | None, default: int) -> OffsetSpec:
    """Parse an offsets option: ``earliest``, ``latest`` or Kafka's JSON (Spark: ``JsonUtils.partitionOffsets``)."""
    if text is None or not text.strip():
        return default
    word = text.strip().lower()
    if word == "earliest":
        return EARLIEST
    if word == "latest":
        return LATEST
    offsets = _partition_json(name, text, "offset", """'earliest', 'latest' or JSON like {"topicA":{"0":23,"1":-1}}""")
    for tp, offset in offsets.items():
        if offset < EARLIEST:
            raise SparkOptionError(f"{name}: offset {offset!r} of {tp} must be an offset, -2 (earliest) or -1 (latest)")
    return offsets


def _timestamp(name: str, value: int | str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise SparkOptionError(f"{name} must be one timestamp (milliseconds since the epoch), got {value!r}") from None
    if number < 0:
        # Kafka's negative "timestamps" are its sentinels (-1 latest, -2 earliest): startingOffsets says those.
        raise SparkOptionError(f"{name}: {number} is not a timestamp (milliseconds since the epoch, 0 or more); "
                               "for earliest or latest use startingOffsets / endingOffsets")
    return number


def _position(options: Mapping[str, str], end: str, default: int, latest_when_none: bool) -> Position:
    """``{end}Timestamp``, else ``{end}OffsetsByTimestamp``, else ``{end}Offsets``, else ``default``: the order
    Spark's ``getKafkaOffsetRangeLimit`` prefers them in."""
    global_name, by_name, offsets_name = f"{end}Timestamp", f"{end}OffsetsByTimestamp", f"{end}Offsets"
    if global_name.lower() in options:
        return TimestampSpec(global_name, _timestamp(global_name, options[global_name.lower()].strip()),
                             latest_when_none)
    if by_name.lower() in options:
        stamps = _partition_json(by_name, options[by_name.lower()], "timestamp",
                                 """JSON like {"topicA":{"0":1700000000000}}""")
        for tp, stamp in stamps.items():
            _timestamp(f"{by_name} ({tp})", stamp)
        return TimestampSpec(by_name, stamps, latest_when_none)
    return parse_offsets(offsets_name, options.get(offsets_name.lower()), default)


def parse_time_ms(name: str, text: str) -> int:
    """A duration as Spark writes it (``JavaUtils.timeStringAsMs``): a whole number with a unit, ``us``,
    ``ms``, ``s``, ``m`` or ``min``, ``h``, ``d``; milliseconds when there is none."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    units = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
    if match is None or match.group(2) not in ("", *units):
        raise SparkOptionError(f"{name} must be a duration such as 100ms, 30s, 5m, 1h or 1d, got {text!r}")
    return int(int(match.group(1)) * units.get(match.group(2), 1))


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    value = options.get(name.lower())
    if value is None:
        return default
    if value.strip().lower() in ("true", "1", "yes"):
        return True
    if value.strip().lower() in ("false", "0", "no"):
        return False
    raise SparkOptionError(f"{name} must be true or false, got {value!r}")


def _positive(options: Mapping[str, str], name: str) -> int | None:
    value = options.get(name.lower())
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise SparkOptionError(f"{name} must be a whole number, got {value!r}") from None
    if number <= 0:
        raise SparkOptionError(f"{name} must be positive, got {number}")
    return number


def storage_options_of(options: Mapping[str, str]) -> dict[str, Any]:
    """The ``storage.<name>`` options (lower-cased names, as Spark passes them) as filesystem options."""
    found = {}
    for key, value in options.items():
        if key.lower().startswith(STORAGE_PREFIX):
            name = key[len(STORAGE_PREFIX):]
            if not name.isidentifier():
                raise SparkOptionError(f"option {key!r} names no storage option (storage.<name>, e.g. "
                                       "storage.endpoint_url)")
            found[name] = option_value(value, name)
    return found


def _expand(path: str, storage_options: Mapping[str, Any]) -> list[str]:
    """``path``, or the paths its glob matches (sorted); a glob matching nothing is an error, a plain path
    is left for the planner to find or not.  A URL's glob is matched by its filesystem (fsspec's ``glob``, one
    listing, built with ``storage_options``), each match a URL again."""
    if not glob.has_magic(path):
        return [path]
    # a file:// URL is a local path, matched as one
    where = locate(path, storage_options) if is_url(path) else Path(path)
    matches = [m.url for m in where.glob()] if isinstance(where, StorageLocation) else sorted(glob.glob(str(where)))
    if not matches:
        raise SparkOptionError(f"no path matches {path!r}")
    return matches


def _paths(options: Mapping[str, str], storage_options: Mapping[str, Any]) -> tuple[str, ...]:
    if "paths" in options:
        try:
            paths = json.loads(options["paths"])
        except json.JSONDecodeError:
            raise SparkOptionError(f"paths is not a JSON list: {options['paths']!r}") from None
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise SparkOptionError(f"paths must be a list of strings, got {paths!r}")
    elif "path" in options:
        paths = [options["path"]]
    else:
        paths = []
    if not paths:
        raise SparkOptionError("no path given: load() a log dir or a partition dir, or a list of them")
    return tuple(dict.fromkeys(expanded for p in paths for expanded in _expand(p, storage_options)))


def _assign(text: str) -> frozenset[TopicPartition]:
    """``assign``: ``{"topicA": [0, 1], "topicB": [2]}`` (Spark: ``JsonUtils.partitions``)."""
    if not text.strip().startswith("{"):
        raise SparkOptionError(f"assign must be JSON like {{\"topicA\":[0,1],\"topicB\":[2]}}, got {text!r}")
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as e:
        raise SparkOptionError(f"assign is not JSON: {text!r}: {e.msg} at character {e.pos}") from None
    assigned: set[TopicPartition] = set()
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not all(
                isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in partitions):
            raise SparkOptionError(f"assign: topic {topic!r} must map to a list of partition numbers, "
                                   f"got {partitions!r}")
        assigned.update(TopicPartition(topic, p) for p in partitions)
    if not assigned:
        raise SparkOptionError(f"assign names no partition: {text!r}")
    return frozenset(assigned)


#: The options that choose partitions: Spark takes exactly one of assign, subscribe and subscribePattern;
#: kafkalog also takes none (every topic under the paths) and its older names for the other two.
_STRATEGIES = {"assign": "assign", "subscribe": "subscribe", "topics": "topics",
               "subscribepattern": "subscribePattern", "topicpattern": "topicPattern"}


@dataclass(frozen=True)
class ReadOptions:
    """What a read (batch or streaming) was asked for."""

    paths: tuple[str, ...]
    topics: frozenset[str] | None = None
    topic_pattern: re.Pattern[str] | None = None
    #: ``assign``: exactly these partitions.
    assign: frozenset[TopicPartition] | None = None
    starting: Position = EARLIEST
    ending: Position = LATEST
    include_headers: bool = False
    #: ``kafka.isolation.level``: ``read_uncommitted`` by default, a Kafka consumer's and Spark's default.
    read_committed: bool = False
    fail_on_data_loss: bool = True
    check_crcs: bool = True
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    #: The stream-only options a batch read was given (it ignores them, saying so).
    ignored: tuple[str, ...] = ()
    #: ``storage.<name>`` options, without the prefix: what the filesystem of URL paths is built with.
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    #: ``layout``: what is at the paths (one of :data:`LAYOUTS`).
    layout: str = "auto"
    #: ``layout.prefix``: the key prefix of Aiven's plugin (``None``: found from the keys).
    layout_prefix: str | None = None
    #: ``remoteLogMetadata``: the ``__remote_log_metadata`` partition dirs that choose the segments read.
    remote_log_metadata: tuple[str, ...] = ()

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool | None = False) -> ReadOptions:
        """Parse Spark's option map (keys in any case).  ``streaming=None`` checks what a batch read and a
        stream have in common (at ``load()``, before Spark says which it is)."""
        options = {k.lower(): v for k, v in options.items()}
        what = "a kafkalog stream" if streaming else "a kafkalog read"
        # storage.<name>: an option of the filesystem URL paths are read through (kafkalog.urls).
        check_option_names(options, READ_OPTIONS, what, accept=lambda key: key.startswith(STORAGE_PREFIX))
        strategies = [name for key, name in _STRATEGIES.items() if key in options]
        if len(strategies) > 1:
            raise SparkOptionError(f"give one of assign, subscribe (or topics) and subscribePattern (or topicPattern), "
                                   f"not {' and '.join(strategies)}")
        topics = None
        topics_text = options.get("topics", options.get("subscribe"))
        if topics_text is not None:
            topics = frozenset(t.strip() for t in topics_text.split(",") if t.strip())
            if not topics:
                raise SparkOptionError(f"{strategies[0]} names no topic: {topics_text!r}")
        pattern = None
        pattern_text = options.get("topicpattern", options.get("subscribepattern"))
        if pattern_text is not None:
            if not pattern_text.strip():
                raise SparkOptionError(f"{strategies[0]} is empty")
            try:
                pattern = re.compile(pattern_text.strip())
            except re.error as e:
                raise SparkOptionError(f"{strategies[0]} {pattern_text!r} is not a regular expression: {e}") from None
        assign = _assign(options["assign"]) if "assign" in options else None
        strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise SparkOptionError(f"startingOffsetsByTimestampStrategy must be error or latest, got {strategy!r}")
        starting = _position(options, "starting", LATEST if streaming else EARLIEST, strategy == "latest")
        ending = _position(options, "ending", LATEST, False)
        ending_given = [n for n in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
                        if n.lower() in options]
        if streaming and ending_given:
            # Spark's source refuses them too (KafkaSourceProvider.validateStreamOptions).
            raise SparkOptionError(
                f"{ending_given[0]} is not valid in a stream, which has no end: leave it out of "
                f"spark.readStream (stop the query to end it, or use Trigger.AvailableNow to read what is there "
                f"and stop), or read up to it with spark.read, a batch read")
        if streaming is False:
            if starting == LATEST or (isinstance(starting, dict) and LATEST in starting.values()):
                raise SparkOptionError("startingOffsets for a batch read may not be latest (-1)")
            if ending == EARLIEST or (isinstance(ending, dict) and EARLIEST in ending.values()):
                raise SparkOptionError("endingOffsets for a batch read may not be earliest (-2)")
        _check_limits(starting, ending)
        isolation = options.get("kafka.isolation.level", "read_uncommitted").strip().lower()
        if isolation not in ("read_committed", "read_uncommitted"):
            raise SparkOptionError(
                f"kafka.isolation.level must be read_committed or read_uncommitted, got {isolation!r}")
        max_bytes = _positive(options, "maxPartitionBytes")
        max_offsets = _positive(options, "maxOffsetsPerTrigger")
        min_offsets = _positive(options, "minOffsetsPerTrigger")
        if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
            raise SparkOptionError(f"minOffsetsPerTrigger ({min_offsets}) is higher than maxOffsetsPerTrigger "
                                   f"({max_offsets})")
        delay = options.get("maxtriggerdelay")
        storage_options = storage_options_of(options)
        return cls(
            paths=_paths(options, storage_options), topics=topics, topic_pattern=pattern, assign=assign,
            starting=starting, ending=ending, include_headers=_flag(options, "includeHeaders", False),
            read_committed=isolation == "read_committed",
            fail_on_data_loss=_flag(options, "failOnDataLoss", True),
            check_crcs=_flag(options, "checkCrcs", True),
            max_partition_bytes=max_bytes if max_bytes is not None else DEFAULT_MAX_PARTITION_BYTES,
            min_partitions=_positive(options, "minPartitions"),
            max_records_per_partition=_positive(options, "maxRecordsPerPartition"),
            max_offsets_per_trigger=max_offsets, min_offsets_per_trigger=min_offsets,
            max_trigger_delay_ms=(DEFAULT_MAX_TRIGGER_DELAY_MS if delay is None
                                  else parse_time_ms("maxTriggerDelay", delay)),
            ignored=tuple(n for n in STREAM_ONLY_OPTIONS if n.lower() in options) if streaming is False else (),
            storage_options=storage_options,
            **_layout_options(options),
        )

    def selects(self, topic: str, partition: int | None = None) -> bool:
        """Whether the read takes ``topic`` (its ``partition``, when given): the ``assign``ed partitions, the
        ``subscribe``d topics, or the topics ``subscribePattern`` matches; every topic when none is given.
        Internal topics only when named, as a Kafka consumer with ``exclude.internal.topics=true`` reads them."""
        if self.assign is not None:
            if partition is None:
                return any(tp.topic == topic for tp in self.assign)
            return TopicPartition(topic, partition) in self.assign
        if self.topics is not None:
            return topic in self.topics
        if is_internal(topic):
            return False
        if self.topic_pattern is not None:
            return self.topic_pattern.fullmatch(topic) is not None
        return True

    def timestamps_for(self, tp: TopicPartition) -> frozenset[int]:
        """The timestamps ``tp``'s offsets are looked up by (none unless a start or end is given by time)."""
        found = set()
        for spec in (self.starting, self.ending):
            if isinstance(spec, TimestampSpec):
                if isinstance(spec.timestamps, int):
                    found.add(spec.timestamps)
                elif tp in spec.timestamps:
                    found.add(spec.timestamps[tp])
        return frozenset(found)


def _layout_options(options: Mapping[str, str]) -> dict[str, Any]:
    """``layout``, ``layout.prefix`` and ``remoteLogMetadata`` (keys lower-cased)."""
    layout = options.get("layout", "auto").strip().lower()
    if layout not in LAYOUTS:
        # A layout is often called by its first word ("aiven"): a name that holds it is a close match too.
        close = [n for n in LAYOUTS if layout and layout in n] or difflib.get_close_matches(layout, LAYOUTS, n=2,
                                                                                           cutoff=0.5)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise SparkOptionError(f"unknown layout {layout!r}: use one of {', '.join(LAYOUTS)}{hint}")
    prefix = options.get("layout.prefix")
    if prefix is not None and layout not in ("auto", "aiven-tiered-storage"):
        raise SparkOptionError(f"layout.prefix is the key prefix of Aiven's plugin: it goes with "
                               f"layout=aiven-tiered-storage (or auto), not {layout}")
    text = options.get("remotelogmetadata")
    metadata: tuple[str, ...] = ()
    if text is not None:
        if text.strip().startswith("["):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                raise SparkOptionError(f"remoteLogMetadata is not a JSON list: {text!r}") from None
            if not isinstance(parsed, list) or not all(isinstance(p, str) for p in parsed):
                raise SparkOptionError(f"remoteLogMetadata must be a list of paths, got {parsed!r}")
            metadata = tuple(parsed)
        else:
            metadata = tuple(p.strip() for p in text.split(",") if p.strip())
        if not metadata:
            raise SparkOptionError("remoteLogMetadata names no path: give the __remote_log_metadata partition dirs")
        if layout == "broker":
            raise SparkOptionError("remoteLogMetadata filters the segments of tiered storage, not of layout=broker")
    return {"layout": layout, "layout_prefix": prefix, "remote_log_metadata": metadata}


def _check_limits(starting: Position, ending: Position) -> None:
    """Both by offsets or both by timestamps per partition: the same partitions, and no start after its end
    (Spark: ``checkOffsetLimitValidity``; -1 and -2 are not compared)."""
    pairs: tuple[dict[TopicPartition, int], dict[TopicPartition, int]] | None = None
    if isinstance(starting, dict) and isinstance(ending, dict):
        pairs = (starting, ending)
        what = "offset"
    elif (isinstance(starting, TimestampSpec) and isinstance(ending, TimestampSpec)
          and isinstance(starting.timestamps, dict) and isinstance(ending.timestamps, dict)):
        pairs = (starting.timestamps, ending.timestamps)
        what = "timestamp"
    if pairs is None:
        return
    start, end = pairs
    if set(start) != set(end):
        names = ", ".join(sorted(str(tp) for tp in set(start) ^ set(end)))
        raise SparkOptionError(f"the starting and ending {what}s must name the same partitions; only one names {names}")
    for tp, first in start.items():
        if first >= 0 and end[tp] >= 0 and first > end[tp]:
            raise SparkOptionError(f"{tp}: the starting {what} {first} is after the ending {what} {end[tp]}")
