"""Topics, partitions and the names of partition directories.

Ports three pieces of Kafka:

* ``org.apache.kafka.common.TopicPartition`` (clients, 3.8.0; ``kafka.common.TopicAndPartition`` in
  0.10.1.1) as the :class:`TopicPartition` named tuple, whose ``str()`` is Kafka's ``toString``:
  ``<topic>-<partition>``.
* ``org.apache.kafka.common.internals.Topic`` (clients, 3.8.0): the legal topic names
  (:func:`validate_topic`, :func:`is_valid_topic`), the internal topics and the '.'/'_' collision rules.
* The directory-name helpers of ``kafka.log.LocalLog`` (core, 3.8.0; ``Log`` companion object in
  0.10.1.1): :func:`parse_topic_partition_name` (``parseTopicPartitionName``), :func:`log_dir_name`,
  :func:`log_delete_dir_name`, :func:`log_future_dir_name`, :func:`log_stray_dir_name`.

A log directory holds one directory per partition, named ``<topic>-<partition>`` (``orders-3``).  A
partition being deleted is renamed ``<topic>-<partition>.<uuid>-delete``; a replica being moved to
another log dir is written to ``<topic>-<partition>.<uuid>-future``; a stray partition (KRaft: the
broker holds a log for a partition it is not assigned) is renamed ``<topic>-<partition>.<uuid>-stray``.
The uuid is a random UUID's 32 lowercase hex digits.  For ``-delete`` and ``-stray`` the topic is cut
short so that the whole name fits in 255 characters.
"""

from __future__ import annotations

import os
import re
import uuid
from typing import NamedTuple

from ._common import INT32_MAX, INT32_MIN
from .errors import KafkaLogError

__all__ = [
    "CLUSTER_METADATA_TOPIC_NAME",
    "CLUSTER_METADATA_TOPIC_PARTITION",
    "DELETE_DIR_PATTERN",
    "DELETE_DIR_SUFFIX",
    "FUTURE_DIR_PATTERN",
    "FUTURE_DIR_SUFFIX",
    "GROUP_METADATA_TOPIC_NAME",
    "LEGAL_CHARS",
    "MAX_NAME_LENGTH",
    "STRAY_DIR_PATTERN",
    "STRAY_DIR_SUFFIX",
    "TRANSACTION_STATE_TOPIC_NAME",
    "InvalidPartitionDirError",
    "InvalidTopicError",
    "TopicPartition",
    "has_collision",
    "has_collision_chars",
    "is_internal_topic",
    "is_valid_topic",
    "log_delete_dir_name",
    "log_dir_name",
    "log_future_dir_name",
    "log_stray_dir_name",
    "parse_topic_partition_name",
    "unify_collision_chars",
    "validate_topic",
]

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
CLUSTER_METADATA_TOPIC_NAME = "__cluster_metadata"
#: The characters a topic name may use, as Kafka spells them (``Topic.LEGAL_CHARS``).
LEGAL_CHARS = "[a-zA-Z0-9._-]"
#: ``Topic.MAX_NAME_LENGTH``: 249, so that ``<topic>-<partition>`` fits a 255-character file name.
MAX_NAME_LENGTH = 249

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"

_MAX_FILE_NAME_LENGTH = 255

# Java's \S without UNICODE_CHARACTER_CLASS: anything but the six ASCII whitespace characters.
_NON_SPACE = r"[^ \t\n\x0b\f\r]"


def _dir_pattern(suffix: str) -> re.Pattern[str]:
    # LocalLog.DeleteDirPattern & co.: ^(\S+)-(\S+)\.(\S+)<suffix>, used with Matcher.matches (whole name)
    return re.compile(rf"({_NON_SPACE}+)-({_NON_SPACE}+)\.({_NON_SPACE}+){re.escape(suffix)}")


#: Whole-name patterns (use ``fullmatch``) of renamed partition directories (``LocalLog.DeleteDirPattern``,
#: ``FutureDirPattern``, ``StrayDirPattern``).
DELETE_DIR_PATTERN = _dir_pattern(DELETE_DIR_SUFFIX)
FUTURE_DIR_PATTERN = _dir_pattern(FUTURE_DIR_SUFFIX)
STRAY_DIR_PATTERN = _dir_pattern(STRAY_DIR_SUFFIX)

_INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME})
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


class InvalidTopicError(KafkaLogError, ValueError):
    """A topic name Kafka does not allow (Kafka: ``InvalidTopicException``)."""


class InvalidPartitionDirError(KafkaLogError, ValueError):
    """A directory name that is not ``<topic>-<partition>`` or one of its renamed forms.

    Kafka: the ``KafkaException`` of ``LocalLog.parseTopicPartitionName``.  ``path`` is the directory as
    given, ``name`` its last component and ``reason`` which rule it broke.
    """

    def __init__(
        self, message: str, path: str | None = None, name: str | None = None, reason: str = ""
    ) -> None:
        super().__init__(message)
        self.path = path
        self.name = name
        self.reason = reason


class TopicPartition(NamedTuple):
    """A topic and a partition number (Kafka: ``org.apache.kafka.common.TopicPartition``).

    ``str()`` gives Kafka's ``toString``, ``<topic>-<partition>``, which is also the name of the
    partition's directory.  Like Kafka's constructor this checks nothing: use :func:`validate_topic`
    for the topic-name rules.
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


#: ``Topic.CLUSTER_METADATA_TOPIC_PARTITION``: the KRaft metadata log, ``__cluster_metadata-0``.
CLUSTER_METADATA_TOPIC_PARTITION = TopicPartition(CLUSTER_METADATA_TOPIC_NAME, 0)


def _java_length(text: str) -> int:
    """``String.length()``: UTF-16 code units, so a character outside the BMP counts twice."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _contains_valid_pattern(name: str) -> bool:
    """Kafka: ``Topic.containsValidPattern``: only ASCII letters and digits, '.', '_' and '-'."""
    return all(("a" <= c <= "z") or ("A" <= c <= "Z") or ("0" <= c <= "9") or c in "._-" for c in name)


def _detect_invalid_topic(name: str) -> str | None:
    """Kafka: ``Topic.detectInvalidTopic``: why ``name`` is not a legal topic, or ``None``."""
    if not name:
        return "the empty string is not allowed"
    if name == ".":
        return "'.' is not allowed"
    if name == "..":
        return "'..' is not allowed"
    if _java_length(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not _contains_valid_pattern(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def validate_topic(name: str) -> None:
    """Raise :class:`InvalidTopicError` unless ``name`` is a legal topic name (Kafka: ``Topic.validate``).

    Legal: not empty, not ``.`` or ``..``, at most 249 characters (Java's UTF-16 length), only ASCII
    letters, digits, '.', '_' and '-'.  The message is Kafka's: ``Topic name is invalid: <reason>``.
    """
    if not isinstance(name, str):
        raise InvalidTopicError(f"Topic name is invalid: {name!r} is not a string")
    reason = _detect_invalid_topic(name)
    if reason is not None:
        raise InvalidTopicError(f"Topic name is invalid: {reason}")


def is_valid_topic(name: str) -> bool:
    """Whether ``name`` is a legal topic name (Kafka: ``Topic.isValid``)."""
    return isinstance(name, str) and _detect_invalid_topic(name) is None


def is_internal_topic(topic: str) -> bool:
    """``__consumer_offsets`` and ``__transaction_state`` (Kafka: ``Topic.isInternal``)."""
    return topic in _INTERNAL_TOPICS


def has_collision_chars(topic: str) -> bool:
    """Whether ``topic`` has a '.' or '_', which metric names cannot tell apart
    (``Topic.hasCollisionChars``)."""
    return "_" in topic or "." in topic


def unify_collision_chars(topic: str) -> str:
    """``topic`` with every '.' made '_', for collision checks only (``Topic.unifyCollisionChars``)."""
    return topic.replace(".", "_")


def has_collision(topic_a: str, topic_b: str) -> bool:
    """Whether two names differ only by '.' against '_' in the same places (``Topic.hasCollision``)."""
    return unify_collision_chars(topic_a) == unify_collision_chars(topic_b)


def log_dir_name(topic_partition: TopicPartition) -> str:
    """``<topic>-<partition>`` (Kafka: ``LocalLog.logDirName``)."""
    return f"{topic_partition.topic}-{topic_partition.partition}"


def _unique_id() -> str:
    # java.util.UUID.randomUUID.toString.replaceAll("-", ""): 32 lowercase hex digits
    return uuid.uuid4().hex


def _dir_name_with_suffix_capped_length(topic_partition: TopicPartition, suffix: str) -> str:
    """Kafka: ``LocalLog.logDirNameWithSuffixCappedLength``: the topic is cut so the name is ≤ 255."""
    full_suffix = f"-{topic_partition.partition}.{_unique_id()}{suffix}"
    prefix_length = min(len(topic_partition.topic), _MAX_FILE_NAME_LENGTH - len(full_suffix))
    return topic_partition.topic[:prefix_length] + full_suffix


def log_delete_dir_name(topic_partition: TopicPartition) -> str:
    """``<topic>-<partition>.<uuid>-delete``, at most 255 characters (``LocalLog.logDeleteDirName``)."""
    return _dir_name_with_suffix_capped_length(topic_partition, DELETE_DIR_SUFFIX)


def log_stray_dir_name(topic_partition: TopicPartition) -> str:
    """``<topic>-<partition>.<uuid>-stray``, at most 255 characters (``LocalLog.logStrayDirName``)."""
    return _dir_name_with_suffix_capped_length(topic_partition, STRAY_DIR_SUFFIX)


def log_future_dir_name(topic_partition: TopicPartition) -> str:
    """``<topic>-<partition>.<uuid>-future``, not shortened (Kafka: ``LocalLog.logFutureDirName``)."""
    return f"{log_dir_name(topic_partition)}.{_unique_id()}{FUTURE_DIR_SUFFIX}"


def _java_file_name(path: str) -> str:
    """``java.io.File.getName``: the last component, after dropping trailing separators."""
    separators = "/" + (os.sep if os.sep != "/" else "") + (os.altsep or "")
    stripped = path.rstrip(separators)
    if not stripped:
        return ""
    for sep in separators:
        stripped = stripped.rsplit(sep, 1)[-1]
    return stripped


def _canonical_path(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def parse_topic_partition_name(dir_name: str | os.PathLike[str] | None) -> TopicPartition:
    """The topic and partition a partition directory is named for (``LocalLog.parseTopicPartitionName``).

    ``dir_name`` is a directory's name or path; only its last component counts and the file system
    is not consulted.  The name is split at its **last** '-': the topic is what comes before (it may
    itself hold '-' and '.'), the partition what comes after, a Java ``int``.  A name ending in
    ``-delete``, ``-future`` or ``-stray`` must be ``<something>-<something>.<something><suffix>`` with
    no whitespace; everything from its last '.' is dropped before the split, so
    ``foo.bar-42.<uuid>-delete`` is ``foo.bar``, 42.  (0.10.1.1 knew no renamed forms: it split every
    name at its last '-'.)

    Raises :class:`InvalidPartitionDirError`, whose message is Kafka's (with the directory's canonical
    path) plus the rule that failed, when ``dir_name`` is ``None``, the name is empty or has no '-', a
    renamed form does not match its pattern, the topic or the partition is empty, or the partition is
    not a 32-bit integer.  Like Kafka the topic is not checked against :func:`validate_topic`.

    The partition is read as Java's ``Integer.parseInt`` reads it (an optional sign, then digits, in
    range), except that only ASCII digits are accepted: Java also takes other Unicode decimal digits,
    which no broker writes.
    """
    if dir_name is None:
        raise InvalidPartitionDirError("dir should not be null", reason="dir is None")
    path = os.fsdecode(dir_name)
    name = _java_file_name(path)

    def fail(reason: str) -> InvalidPartitionDirError:
        return InvalidPartitionDirError(
            f"Found directory {_canonical_path(path)}, '{name}' is not in the form of topic-partition or "
            f"topic-partition.uniqueId-delete (if marked for deletion): {reason}.\n"
            "Kafka's log directories (and children) should only contain Kafka topic data.",
            path=path,
            name=name,
            reason=reason,
        )

    if not name:
        raise fail("the name is empty")
    if "-" not in name:
        raise fail("the name has no '-'")
    renamed = False
    for suffix, pattern in (
        (DELETE_DIR_SUFFIX, DELETE_DIR_PATTERN),
        (FUTURE_DIR_SUFFIX, FUTURE_DIR_PATTERN),
        (STRAY_DIR_SUFFIX, STRAY_DIR_PATTERN),
    ):
        if name.endswith(suffix):
            if pattern.fullmatch(name) is None:
                raise fail(f"a name ending in '{suffix}' must be <topic>-<partition>.<uniqueId>{suffix}")
            renamed = True
    base = name[: name.rindex(".")] if renamed else name

    index = base.rfind("-")
    topic = base[:index]
    partition_string = base[index + 1 :]
    if not topic:
        raise fail("the topic (before the last '-') is empty")
    if not partition_string:
        raise fail("the partition (after the last '-') is empty")
    if _JAVA_INT.fullmatch(partition_string) is None:
        raise fail(f"the partition '{partition_string}' is not an integer")
    partition = int(partition_string)
    if not INT32_MIN <= partition <= INT32_MAX:
        raise fail(f"the partition '{partition_string}' does not fit a 32-bit int")
    return TopicPartition(topic, partition)
