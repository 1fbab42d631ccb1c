"""The options of the ``kafkalog`` data source, parsed and checked before any file is touched.

Spark hands a data source its options as a case-insensitive map of strings (the keys arrive in lower
case).  The names follow Spark's own Kafka source where it has one (``startingOffsets``,
``endingOffsets``, ``includeHeaders``, ``maxOffsetsPerTrigger``, ``minPartitions``,
``failOnDataLoss``, ``kafka.isolation.level``; ``subscribe`` and ``subscribePattern`` as other names
for ``topics`` and ``topicPattern``), so a job reading a broker can be pointed at its files by changing
the format and the path.

Offsets are Kafka's JSON, as Spark's source takes them: ``{"topicA": {"0": 23, "1": -2}}``, with -2
meaning earliest and -1 latest, or the words ``earliest`` and ``latest``.  Ending offsets are
exclusive.  As in Spark, a batch read may not start at ``latest`` nor end at ``earliest``, and a JSON
must name every partition the read selects.

``kafka.isolation.level`` is ``read_uncommitted`` unless set, as in Spark's source (the Kafka consumer's
default).  An option the source does not take is an error naming it and its close matches, not silence
(Spark's Kafka source refuses its unsupported ``kafka.`` options the same way); the options of Spark's
source that kafkalog has not implemented yet are refused as such.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..errors import KafkaLogError
from ..topic import TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "ReadOptions",
    "READ_OPTIONS",
    "SparkOptionError",
    "check_option_names",
    "parse_offsets",
]

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
    "path", "paths", "topics", "subscribe", "topicPattern", "subscribePattern", "startingOffsets",
    "endingOffsets", "includeHeaders", "kafka.isolation.level", "failOnDataLoss", "checkCrcs",
    "maxPartitionBytes", "minPartitions", "maxOffsetsPerTrigger",
)

#: Options of Spark's Kafka source that kafkalog does not implement yet: refused as such, not ignored.
NOT_SUPPORTED_YET = (
    "assign", "startingTimestamp", "startingOffsetsByTimestamp", "endingTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy", "minOffsetsPerTrigger", "maxTriggerDelay", "maxRecordsPerPartition",
)

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
        hint = f"; did you mean {' or '.join(spelled[c] for c in close)}?" if close else ""
        raise SparkOptionError(f"unknown option {option!r} for {what}{hint} (it takes: "
                               f"{', '.join(n for n in known if n not in ('path', 'paths'))})")


#: A parsed ``startingOffsets`` / ``endingOffsets``: a default for every partition (``EARLIEST`` or
#: ``LATEST``), or offsets per partition.
OffsetSpec = int | dict[TopicPartition, int]


def parse_offsets(name: str, text: str | None, default: int) -> OffsetSpec:
    """Parse an offsets option: ``earliest``, ``latest`` or Kafka's JSON (Spark: ``JsonUtils.partitionOffsets``)."""
    if text is None or not text.strip():
        return default
    word = text.strip().lower()
    if word == "earliest":
        return EARLIEST
    if word == "latest":
        return LATEST
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as e:
        raise SparkOptionError(
            f"{name} must be 'earliest', 'latest' or JSON like {{\"topicA\":{{\"0\":23,\"1\":-1}}}}, got "
            f"{text!r}: {e.msg} at character {e.pos}") from None
    if not isinstance(parsed, dict):
        raise SparkOptionError(f"{name}: expected a JSON object of topics, got {text!r}")
    offsets: dict[TopicPartition, int] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise SparkOptionError(f"{name}: topic {topic!r} must map partition numbers to offsets, got {partitions!r}")
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                raise SparkOptionError(f"{name}: {partition!r} of topic {topic!r} is not a partition number") from None
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise SparkOptionError(f"{name}: offset {offset!r} of {topic}-{number} must be an offset, -2 "
                                       "(earliest) or -1 (latest)")
            offsets[TopicPartition(topic, number)] = offset
    return offsets


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


def _paths(options: Mapping[str, str]) -> tuple[str, ...]:
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
    return tuple(paths)


@dataclass(frozen=True)
class ReadOptions:
    """What a read (batch or streaming) was asked for."""

    paths: tuple[str, ...]
    topics: frozenset[str] | None = None
    topic_pattern: re.Pattern[str] | None = None
    starting: OffsetSpec = EARLIEST
    ending: OffsetSpec = LATEST
    include_headers: bool = False
    #: ``kafka.isolation.level``: ``read_uncommitted`` by default, a Kafka consumer's and Spark's default.
    read_committed: bool = False
    fail_on_data_loss: bool = True
    check_crcs: bool = True
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    min_partitions: int | None = None
    max_offsets_per_trigger: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool = False) -> ReadOptions:
        """Parse Spark's option map (keys in any case)."""
        options = {k.lower(): v for k, v in options.items()}
        check_option_names(options, READ_OPTIONS, "a kafkalog stream" if streaming else "a kafkalog read")
        topics_text = options.get("topics", options.get("subscribe"))
        pattern_text = options.get("topicpattern", options.get("subscribepattern"))
        if topics_text is not None and pattern_text is not None:
            raise SparkOptionError("give topics or topicPattern, not both")
        topics = None
        if topics_text is not None:
            topics = frozenset(t.strip() for t in topics_text.split(",") if t.strip())
            if not topics:
                raise SparkOptionError(f"topics names no topic: {topics_text!r}")
        pattern = None
        if pattern_text is not None:
            try:
                pattern = re.compile(pattern_text)
            except re.error as e:
                raise SparkOptionError(f"topicPattern {pattern_text!r} is not a regular expression: {e}") from None
        starting = parse_offsets("startingOffsets", options.get("startingoffsets"), LATEST if streaming else EARLIEST)
        ending = parse_offsets("endingOffsets", options.get("endingoffsets"), LATEST)
        if streaming and "endingoffsets" in options:
            raise SparkOptionError("endingOffsets is for batch reads; a stream has no end")
        if not streaming:
            if starting == LATEST or (isinstance(starting, dict) and LATEST in starting.values()):
                raise SparkOptionError("startingOffsets for a batch read may not be latest (-1)")
            if ending == EARLIEST or (isinstance(ending, dict) and EARLIEST in ending.values()):
                raise SparkOptionError("endingOffsets for a batch read may not be earliest (-2)")
        isolation = options.get("kafka.isolation.level", "read_uncommitted").strip().lower()
        if isolation not in ("read_committed", "read_uncommitted"):
            raise SparkOptionError(
                f"kafka.isolation.level must be read_committed or read_uncommitted, got {isolation!r}")
        max_bytes = _positive(options, "maxPartitionBytes")
        return cls(
            paths=_paths(options), topics=topics, topic_pattern=pattern, starting=starting, ending=ending,
            include_headers=_flag(options, "includeHeaders", False),
            read_committed=isolation == "read_committed",
            fail_on_data_loss=_flag(options, "failOnDataLoss", True),
            check_crcs=_flag(options, "checkCrcs", True),
            max_partition_bytes=max_bytes if max_bytes is not None else DEFAULT_MAX_PARTITION_BYTES,
            min_partitions=_positive(options, "minPartitions"),
            max_offsets_per_trigger=_positive(options, "maxOffsetsPerTrigger"),
        )

    def selects(self, topic: str) -> bool:
        """Whether the read takes ``topic`` (every topic unless ``topics`` or ``topicPattern`` says)."""
        if self.topics is not None:
            return topic in self.topics
        if self.topic_pattern is not None:
            return self.topic_pattern.fullmatch(topic) is not None
        return True
