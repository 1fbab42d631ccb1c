"""kafkalog.topic: TopicPartition, Kafka's topic-name rules and partition directory names.

Cases follow Kafka 3.8.0 ``TopicTest`` (clients) and ``LocalLogTest.testParseTopicPartitionName*`` /
``testLogDeleteDirName`` (core), plus the renamed forms (``-future``, ``-stray``) and the edge cases of
Java's ``Integer.parseInt`` and ``File.getName``.
"""

from __future__ import annotations

import os
import pathlib
import re

import pytest

from kafkalog.errors import KafkaLogError
from kafkalog.topic import (
    CLUSTER_METADATA_TOPIC_PARTITION,
    DELETE_DIR_PATTERN,
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_PATTERN,
    LEGAL_CHARS,
    MAX_NAME_LENGTH,
    STRAY_DIR_PATTERN,
    InvalidPartitionDirError,
    InvalidTopicError,
    TopicPartition,
    has_collision,
    has_collision_chars,
    is_internal_topic,
    is_valid_topic,
    log_delete_dir_name,
    log_dir_name,
    log_future_dir_name,
    log_stray_dir_name,
    parse_topic_partition_name,
    unify_collision_chars,
    validate_topic,
)

UUID = "0123456789abcdef0123456789abcdef"

# --- TopicPartition -----------------------------------------------------------------------------------


def test_topic_partition_str_is_kafkas_to_string() -> None:
    tp = TopicPartition("orders", 3)
    assert str(tp) == "orders-3"
    assert f"{tp}" == "orders-3"
    assert str(TopicPartition("__consumer_offsets", 49)) == "__consumer_offsets-49"
    assert str(TopicPartition("topic-logx-001", 2)) == "topic-logx-001-2"
    assert repr(tp) == "TopicPartition(topic='orders', partition=3)"


def test_topic_partition_is_a_hashable_tuple() -> None:
    tp = TopicPartition("foo", 1)
    assert (tp.topic, tp.partition) == ("foo", 1)
    assert tp == ("foo", 1)
    topic, partition = tp
    assert (topic, partition) == ("foo", 1)
    assert {tp: 5}[TopicPartition("foo", 1)] == 5
    assert len({TopicPartition("foo", 1), TopicPartition("foo", 1), TopicPartition("foo", 2)}) == 2
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 1)]) == [
        ("a", 1),
        ("a", 2),
        ("b", 0),
    ]
    assert TopicPartition("__cluster_metadata", 0) == CLUSTER_METADATA_TOPIC_PARTITION
    assert log_dir_name(TopicPartition("foo.bar", 7)) == "foo.bar-7"


# --- Topic.validate -----------------------------------------------------------------------------------

VALID_NAMES = ["valid", "TOPIC", "nAmEs", "ar6", "VaL1d", "_0-9_.", "...", "x" * MAX_NAME_LENGTH]


@pytest.mark.parametrize("name", VALID_NAMES)
def test_valid_topic_names(name: str) -> None:
    # TopicTest.shouldAcceptValidTopicNames
    validate_topic(name)  # does not raise
    assert is_valid_topic(name) is True


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "the empty string is not allowed"),
        (".", "'.' is not allowed"),
        ("..", "'..' is not allowed"),
        ("a" * 250, f"the length of '{'a' * 250}' is longer than the max allowed length 249"),
        (
            "foo bar",
            "'foo bar' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'",
        ),
        ("foo:bar", "'foo:bar' contains one or more characters other than ASCII alphanumerics"),
        ("foo=bar", "'foo=bar' contains one or more characters other than ASCII alphanumerics"),
        ("tópico", "'tópico' contains one or more characters"),
        ("\u0661\u0662", "'\u0661\u0662' contains one or more characters"),
    ],
)
def test_invalid_topic_names(name: str, reason: str) -> None:
    # TopicTest.shouldThrowOnInvalidTopicNames, with Kafka's messages
    with pytest.raises(InvalidTopicError) as info:
        validate_topic(name)
    assert str(info.value).startswith("Topic name is invalid: " + reason)
    assert isinstance(info.value, KafkaLogError)
    assert isinstance(info.value, ValueError)
    assert is_valid_topic(name) is False


@pytest.mark.parametrize(
    "char", ["/", "\\", ",", "\u0000", ":", '"', "'", ";", "*", "?", " ", "\t", "\r", "\n", "="]
)
def test_invalid_characters(char: str) -> None:
    # TopicTest.shouldRecognizeInvalidCharactersInTopicNames
    name = "Is " + char + "illegal"
    assert is_valid_topic(name) is False
    assert is_valid_topic("Is" + char + "illegal") is False
    with pytest.raises(InvalidTopicError, match="contains one or more characters other than ASCII"):
        validate_topic("Is" + char + "illegal")


def test_length_is_javas_utf16_length() -> None:
    # String.length() counts UTF-16 units: an astral character counts twice, so 125 of them are 250
    # units and fail on length before the character rule is looked at.
    with pytest.raises(InvalidTopicError, match="longer than the max allowed length 249"):
        validate_topic("\U0001f600" * 125)
    with pytest.raises(InvalidTopicError, match="contains one or more characters"):
        validate_topic("\U0001f600" * 124)
    assert LEGAL_CHARS == "[a-zA-Z0-9._-]"


def test_non_string_topic_is_invalid() -> None:
    with pytest.raises(InvalidTopicError, match="is not a string"):
        validate_topic(b"foo")  # type: ignore[arg-type]
    assert is_valid_topic(None) is False  # type: ignore[arg-type]


def test_internal_topics() -> None:
    assert is_internal_topic("__consumer_offsets") is True
    assert is_internal_topic("__transaction_state") is True
    assert is_internal_topic("__cluster_metadata") is False
    assert is_internal_topic("orders") is False


def test_collision_chars() -> None:
    # TopicTest.testTopicHasCollisionChars / testUnifyCollisionChars / testTopicHasCollision
    for topic in ["start", "end", "middle", "many"]:
        assert has_collision_chars(topic) is False
    for topic in [".start", "end.", "mid.dle", ".ma.ny.", "_start", "end_", "mid_dle", "_ma_ny."]:
        assert has_collision_chars(topic) is True
    assert unify_collision_chars("topic") == "topic"
    assert unify_collision_chars(".topic") == "_topic"
    assert unify_collision_chars("_topic") == "_topic"
    assert unify_collision_chars("_.topic") == "__topic"
    periods = [".topic", "to.pic", "topic.", "topic"]
    underscores = ["_topic", "to_pic", "topic_", "topic"]
    for topic in periods + underscores:
        assert has_collision(topic, topic) is True
    for a, b in zip(periods, underscores, strict=True):
        assert has_collision(a, b) is True
    for a, b in zip(periods, reversed(underscores), strict=True):
        assert has_collision(a, b) is False


# --- LocalLog.parseTopicPartitionName -----------------------------------------------------------------


def test_parse_topic_partition_name(tmp_path: pathlib.Path) -> None:
    """LocalLogTest.testParseTopicPartitionName and LogTest.testParseTopicPartitionName (0.10.1.1): a
    directory ``<logDir>/test_topic-143`` is topic ``test_topic``, partition 143."""
    tp = parse_topic_partition_name(tmp_path / "test_topic-143")
    assert tp == TopicPartition("test_topic", 143)
    assert isinstance(tp, TopicPartition)
    assert parse_topic_partition_name("test_topic-143") == ("test_topic", 143)
    assert parse_topic_partition_name(str(tmp_path / "test_topic-143")) == ("test_topic", 143)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-0", ("orders", 0)),
        ("topic-logx-001-2", ("topic-logx-001", 2)),  # split at the last '-'
        ("__consumer_offsets-49", ("__consumer_offsets", 49)),
        ("__cluster_metadata-0", ("__cluster_metadata", 0)),
        ("foo.bar-7", ("foo.bar", 7)),
        ("foo--1", ("foo-", 1)),
        ("-foo-1", ("-foo", 1)),
        ("foo-007", ("foo", 7)),
        ("foo-+5", ("foo", 5)),  # Integer.parseInt takes a leading '+'
        ("foo-2147483647", ("foo", 2147483647)),
        ("my topic-0", ("my topic", 0)),  # Kafka does not check the topic here
        ("foo-3.abc", ("foo", None)),  # an error: partition "3.abc"; see below
    ],
)
def test_parse_plain_names(name: str, expected: tuple[str, int | None]) -> None:
    if expected[1] is None:
        with pytest.raises(InvalidPartitionDirError, match="is not an integer"):
            parse_topic_partition_name(name)
    else:
        assert parse_topic_partition_name(name) == expected


def test_parse_path_forms(tmp_path: pathlib.Path) -> None:
    # Only the last component counts, as java.io.File.getName; a trailing separator is dropped.
    assert parse_topic_partition_name(str(tmp_path / "foo-3") + os.sep) == ("foo", 3)
    assert parse_topic_partition_name(os.fsencode(tmp_path / "foo-4")) == ("foo", 4)  # type: ignore[arg-type]
    assert parse_topic_partition_name(pathlib.PurePosixPath("/data/kafka-logs/bar-9")) == ("bar", 9)
    # the parent's name has a '-' but does not matter
    assert parse_topic_partition_name("kafka-logs/bar-10") == ("bar", 10)


def test_parse_name_with_period_for_deleted_topic() -> None:
    """testParseTopicPartitionNameWithPeriodForDeletedTopic: a ``-delete`` name whose topic has a period parses
    back to the topic and partition (KAFKA-5232)."""
    name = log_delete_dir_name(TopicPartition("foo.bar-testtopic", 42))
    assert parse_topic_partition_name(name) == TopicPartition("foo.bar-testtopic", 42)


@pytest.mark.parametrize("suffix", ["-delete", "-future", "-stray"])
def test_parse_renamed_dirs_with_uuid(suffix: str) -> None:
    for topic, partition in [("orders", 3), ("foo.bar", 0), ("topic-logx-001", 12), ("a.b.c", 7)]:
        name = f"{topic}-{partition}.{UUID}{suffix}"
        assert parse_topic_partition_name(name) == (topic, partition)
        assert parse_topic_partition_name(f"/var/kafka-logs/{name}") == (topic, partition)


def test_parse_generated_renamed_dirs() -> None:
    tp = TopicPartition("payments.v2", 11)
    for make, pattern in [
        (log_delete_dir_name, DELETE_DIR_PATTERN),
        (log_future_dir_name, FUTURE_DIR_PATTERN),
        (log_stray_dir_name, STRAY_DIR_PATTERN),
    ]:
        name = make(tp)
        assert pattern.fullmatch(name) is not None
        assert parse_topic_partition_name(name) == tp
    assert re.fullmatch(r"payments\.v2-11\.[0-9a-f]{32}-future", log_future_dir_name(tp))
    assert re.fullmatch(r"payments\.v2-11\.[0-9a-f]{32}-stray", log_stray_dir_name(tp))
    assert log_delete_dir_name(tp) != log_delete_dir_name(tp)  # a fresh uuid every time


def test_log_delete_dir_name() -> None:
    # LocalLogTest.testLogDeleteDirName
    name1 = log_delete_dir_name(TopicPartition("foo", 3))
    assert len(name1) <= 255
    assert re.fullmatch(r"foo-3\.[0-9a-z]{32}-delete", name1)
    assert DELETE_DIR_PATTERN.fullmatch(name1)
    assert not FUTURE_DIR_PATTERN.fullmatch(name1)
    name2 = log_delete_dir_name(TopicPartition("n" + "o" * 248, 5))
    assert len(name2) == 255
    assert re.fullmatch(r"n[o]{212}-5\.[0-9a-z]{32}-delete", name2)
    assert DELETE_DIR_PATTERN.fullmatch(name2)
    assert not FUTURE_DIR_PATTERN.fullmatch(name2)
    # the truncated topic is what parsing gives back
    assert parse_topic_partition_name(name2) == ("n" + "o" * 212, 5)


def test_stray_name_is_capped_and_future_name_is_not() -> None:
    topic = "n" + "o" * 248
    stray = log_stray_dir_name(TopicPartition(topic, 5))
    assert len(stray) == 255
    assert re.fullmatch(r"n[o]{213}-5\.[0-9a-f]{32}-stray", stray)  # "-stray" is one shorter than "-delete"
    future = log_future_dir_name(TopicPartition(topic, 5))
    assert len(future) == 249 + len("-5.") + 32 + len("-future") == 291
    assert parse_topic_partition_name(future) == (topic, 5)


def test_parse_every_golden_partition_dir(golden: pathlib.Path) -> None:
    found = {}
    for log in golden.rglob("*.log"):
        found[log.parent.name] = parse_topic_partition_name(log.parent)
    assert found["TEST-TOPIC-0"] == ("TEST-TOPIC", 0)
    assert found["__consumer_offsets-40"] == ("__consumer_offsets", 40)
    assert found["topic-logx-001-2"] == ("topic-logx-001", 2)
    assert found["__cluster_metadata-0"] == ("__cluster_metadata", 0)
    assert found["_confluent-controlcenter-5-1-2-1-KSTREAM-OUTEROTHER-0000000096-store-changelog-0"] == (
        "_confluent-controlcenter-5-1-2-1-KSTREAM-OUTEROTHER-0000000096-store-changelog",
        0,
    )
    assert all(str(tp) == name for name, tp in found.items())
    assert len(found) >= 20


# --- every error case ---------------------------------------------------------------------------------


def _error(dir_name: object) -> InvalidPartitionDirError:
    with pytest.raises(InvalidPartitionDirError) as info:
        parse_topic_partition_name(dir_name)  # type: ignore[arg-type]
    error = info.value
    assert isinstance(error, KafkaLogError)
    assert isinstance(error, ValueError)
    return error


def test_parse_empty_name() -> None:
    """LocalLogTest.testParseTopicPartitionNameForEmptyName and LogTest.testParseTopicPartitionNameForEmptyName
    (0.10.1.1): ``new File("")`` is refused."""
    error = _error("")
    assert error.reason == "the name is empty"
    assert f"Found directory {os.path.realpath('')}, '' is not in the form of topic-partition" in str(error)


def test_parse_null() -> None:
    """LocalLogTest.testParseTopicPartitionNameForNull and LogTest.testParseTopicPartitionNameForNull
    (0.10.1.1): a null directory is refused."""
    error = _error(None)
    assert str(error) == "dir should not be null"


def test_parse_missing_separator(tmp_path: pathlib.Path) -> None:
    """LocalLogTest.testParseTopicPartitionNameForMissingSeparator and
    LogTest.testParseTopicPartitionNameForMissingSeparator (0.10.1.1): ``<logDir>/test_topic1999`` is refused
    (3.8.0 also refuses a ``-delete`` name without the separator)."""
    error = _error(tmp_path / "test_topic1999")
    assert error.reason == "the name has no '-'"
    assert error.name == "test_topic1999"
    assert error.path == str(tmp_path / "test_topic1999")
    message = str(error)
    assert message.startswith(
        f"Found directory {os.path.realpath(tmp_path / 'test_topic1999')}, 'test_topic1999'"
    )
    assert "Kafka's log directories (and children) should only contain Kafka topic data." in message
    # and the "-delete" marker case: test_topic1999.-delete
    error = _error(tmp_path / ("test_topic1999." + DELETE_DIR_SUFFIX))
    assert "must be <topic>-<partition>.<uniqueId>-delete" in error.reason
    assert "'test_topic1999.-delete'" in str(error)


def test_parse_missing_topic(tmp_path: pathlib.Path) -> None:
    """LocalLogTest.testParseTopicPartitionNameForMissingTopic and LogTest.testParseTopicPartitionNameForMissingTopic
    (0.10.1.1): ``<logDir>/-1999`` is refused (3.8.0 also refuses its ``-delete`` name)."""
    error = _error(tmp_path / "-1999")
    assert error.reason == "the topic (before the last '-') is empty"
    assert "'-1999'" in str(error)
    delete_name = log_delete_dir_name(TopicPartition("", 1999))
    assert delete_name.startswith("-1999.")
    error = _error(tmp_path / delete_name)
    assert "must be <topic>-<partition>.<uniqueId>-delete" in error.reason
    assert error.name == delete_name


def test_parse_missing_partition(tmp_path: pathlib.Path) -> None:
    """LocalLogTest.testParseTopicPartitionNameForMissingPartition (``logDir.getPath + "test_topic-"``) and
    LogTest.testParseTopicPartitionNameForMissingPartition (0.10.1.1: ``<logDir>/test_topic-``): a name with
    nothing after its last '-' is refused (3.8.0 also refuses its ``-delete`` name)."""
    error = _error(str(tmp_path) + "test_topic-")
    assert error.reason == "the partition (after the last '-') is empty"
    error = _error(tmp_path / "test_topic-")
    assert error.reason == "the partition (after the last '-') is empty"
    assert error.name == "test_topic-"
    error = _error(tmp_path / ("test_topic-." + DELETE_DIR_SUFFIX))
    assert "must be <topic>-<partition>.<uniqueId>-delete" in error.reason


def test_parse_invalid_partition(tmp_path: pathlib.Path) -> None:
    """testParseTopicPartitionNameForInvalidPartition: a partition that is not a number is refused, and so is
    the ``-delete`` form."""
    error = _error(tmp_path / "test_topic-1999a")
    assert error.reason == "the partition '1999a' is not an integer"
    error = _error(tmp_path / ("test_topic1999a." + DELETE_DIR_SUFFIX))
    assert "-delete" in error.reason


def test_parse_existing_invalid_dir(tmp_path: pathlib.Path) -> None:
    """testParseTopicPartitionNameForExistingInvalidDir: existing directories that are not partitions are
    refused."""
    (tmp_path / "non_kafka_dir").mkdir()
    (tmp_path / "non_kafka_dir-delete").mkdir()
    assert _error(tmp_path / "non_kafka_dir").reason == "the name has no '-'"
    assert "-delete" in _error(tmp_path / "non_kafka_dir-delete").reason


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("foo-2147483648", "the partition '2147483648' does not fit a 32-bit int"),
        ("foo-99999999999999999999", "does not fit a 32-bit int"),
        ("foo-1x", "the partition '1x' is not an integer"),
        ("foo-+", "the partition '+' is not an integer"),
        ("foo- 1", "the partition ' 1' is not an integer"),
        ("foo-1_000", "the partition '1_000' is not an integer"),  # Python's int() would take it
        ("foo-\u0661", "the partition '\u0661' is not an integer"),  # ASCII digits only (Java: any Nd digit)
        ("foo-1.5", "the partition '1.5' is not an integer"),
        ("foo-", "the partition (after the last '-') is empty"),
        ("-", "the topic (before the last '-') is empty"),
        ("foo", "the name has no '-'"),
        (".", "the name has no '-'"),
        ("..", "the name has no '-'"),
        ("foo-1-delete", "must be <topic>-<partition>.<uniqueId>-delete"),  # no '.'
        ("foo-1.-delete", "must be <topic>-<partition>.<uniqueId>-delete"),  # empty uniqueId
        ("foo-." + UUID + "-delete", "must be <topic>-<partition>.<uniqueId>-delete"),  # empty partition
        ("foo-x-." + UUID + "-delete", "the partition (after the last '-') is empty"),
        ("-1." + UUID + "-future", "must be <topic>-<partition>.<uniqueId>-future"),
        ("foo-1." + UUID + "-stray", None),  # the valid one, for contrast
        ("my topic-1." + UUID + "-delete", "must be <topic>-<partition>.<uniqueId>-delete"),  # \S+
        ("foo-1.ab cd-stray", "must be <topic>-<partition>.<uniqueId>-stray"),
        ("foo-3.abc.def-delete", "the partition '3.abc' is not an integer"),
        ("-delete", "must be <topic>-<partition>.<uniqueId>-delete"),
        ("-future", "must be <topic>-<partition>.<uniqueId>-future"),
        ("-stray", "must be <topic>-<partition>.<uniqueId>-stray"),
    ],
)
def test_parse_error_cases(name: str, reason: str | None) -> None:
    if reason is None:
        assert parse_topic_partition_name(name) == ("foo", 1)
        return
    error = _error(name)
    assert reason in error.reason
    assert f"'{name}' is not in the form of topic-partition" in str(error)
    assert error.name == name
