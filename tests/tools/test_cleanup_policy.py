"""Whether a compaction may touch a partition dir (kafkalog.tools.cleanup_policy.decide_cleanup): Raft logs
never; the metadata log's config of the topic, with what the user says laid over it and winning; no known
policy, no compaction."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.config.config_def import ConfigError
from kafkalog.log import Log
from kafkalog.tools.cleanup_policy import CleanupDecision, decide_cleanup, raft_log
from kafkalog.tools.cluster_metadata import MetadataLogs
from kafkalog.topic import TopicPartition
from tests.support.kraft_metadata import (
    TOPIC,
    config_record,
    topic_id,
    topic_record,
    write_metadata_log,
    write_partition_metadata,
)

ORDERS = TopicPartition("orders", 0)


def _hint(name: str, value: str) -> str:
    return f"--config {name}={value}"


def _decide(root: Path, *user: tuple[str, dict[str, str]], tp: TopicPartition = ORDERS) -> CleanupDecision:
    return decide_cleanup(root / str(tp), tp, user=list(user), metadata_logs=MetadataLogs([root]), hint=_hint)


def _log_dir(root: Path, *records: bytes) -> Path:
    write_metadata_log(root, [[topic_record("orders", topic_id(1)), *records]])
    with Log(root / "orders-0"):
        pass
    return root


def test_raft_logs_are_known_by_name_and_by_what_they_hold(tmp_path: Path) -> None:
    plain = tmp_path / "t-0"
    plain.mkdir()
    assert raft_log(plain, TopicPartition("t", 0)) is None
    assert raft_log(plain, TopicPartition("__cluster_metadata", 0)) == "it is the KRaft metadata log"
    (plain / "00000000000000000010-0000000001.checkpoint").write_bytes(b"")
    assert raft_log(plain, TopicPartition("t", 0)) == "it is a Raft log (it holds KRaft snapshots)"
    (plain / "00000000000000000010-0000000001.checkpoint").unlink()
    write_partition_metadata(plain, "AAAAAAAAAAAAAAAAAAAAAQ")
    assert raft_log(plain, TopicPartition("t", 0)) == (
        "it is a Raft log (its partition.metadata names the metadata topic's id)")
    (plain / "quorum-state").write_text("{}")
    assert raft_log(plain, TopicPartition("t", 0)) == "it is a Raft log (it holds a quorum-state file)"


def test_what_the_user_says_wins_the_later_first(tmp_path: Path, impl: ModuleType) -> None:
    root = _log_dir(tmp_path, config_record(TOPIC, "orders", "cleanup.policy", "delete"),
                    config_record(TOPIC, "orders", "min.cleanable.dirty.ratio", "0.9"),
                    config_record(TOPIC, "orders", "delete.retention.ms", "5"))
    from_metadata = _decide(root)
    assert (from_metadata.kind, from_metadata.cleanup_policy) == ("no-compact", "delete")
    assert from_metadata.source == f"the topic's config in the KRaft metadata log {root / '__cluster_metadata-0'}"
    decision = _decide(root, ("config", {"cleanup.policy": "compact", "segment.bytes": "2048"}),
                       ("topic_configs['orders']", {"cleanup.policy": "compact,delete"}))
    assert (decision.kind, decision.cleanup_policy, decision.source) == (
        "compact", "compact,delete", "from topic_configs['orders']")
    # The metadata log's other configs stay, under the user's; the ratio is 0 (a clean asked for is wanted now).
    assert decision.config == {"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0",
                               "delete.retention.ms": "5", "segment.bytes": "2048"}
    assert decision.notes == (f"cleanup.policy=compact,delete from topic_configs['orders'] overrides "
                              f"cleanup.policy=delete ({from_metadata.source})",)
    kept_ratio = _decide(root, ("--config", {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.25"}))
    assert kept_ratio.config is not None and kept_ratio.config["min.cleanable.dirty.ratio"] == "0.25"
    # The same policy, said again, overrides nothing worth a note.
    assert _decide(root, ("--config", {"cleanup.policy": "delete"})).notes == ()


def test_a_bad_value_is_the_users_error_or_the_metadata_logs_refusal(tmp_path: Path, impl: ModuleType) -> None:
    root = _log_dir(tmp_path, config_record(TOPIC, "orders", "cleanup.policy", "compact"),
                    config_record(TOPIC, "orders", "segment.bytes", "lots"))
    with pytest.raises(ConfigError, match=r"segment\.byte"):
        _decide(root, ("--config", {"segment.byte": "1"}))
    refused = _decide(root)
    assert (refused.kind, refused.config, refused.cleanup_policy) == ("bad-config", None, "compact")
    assert refused.skipped is not None and refused.skipped.startswith(
        "its config in the KRaft metadata log does not parse (Invalid value 'lots' for configuration segment.bytes")
    assert refused.skipped.endswith("; --config segment.bytes=<value> overrides it")
    assert _decide(root, ("--config", {"segment.bytes": "4096"})).kind == "compact"


def test_a_partition_metadata_that_does_not_parse_leaves_the_policy_unknown(tmp_path: Path,
                                                                           impl: ModuleType) -> None:
    root = _log_dir(tmp_path, config_record(TOPIC, "orders", "cleanup.policy", "compact"))
    (root / "orders-0" / "partition.metadata").write_text("version: x\n")
    decision = _decide(root)
    assert decision.kind == "unknown" and decision.skipped is not None
    assert "its partition.metadata cannot be read: Malformed line" in decision.skipped
    assert decision.skipped.endswith("; --config cleanup.policy=compact compacts it")
    assert _decide(root, ("--config", {"cleanup.policy": "compact"})).kind == "compact"
