"""``kafkalog clean``: which partitions it compacts (the topic's cleanup.policy, from the KRaft metadata log of the
partition's broker or from ``--config``), what it refuses (the metadata log, a policy not known, a policy without
compact) and what it reports (records dropped for having no key)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import time
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.cli import main
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.record import MemoryRecords
from tests.support.golden_data import ARTHUR, RONEM
from tests.support.kraft_metadata import (
    BROKER,
    METADATA_DIR,
    TOPIC,
    config_record,
    topic_id,
    topic_record,
    write_meta_properties,
    write_metadata_log,
    write_partition_metadata,
)

USERS, ORDERS, EVENTS = topic_id(1), topic_id(2), topic_id(3)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def digest(directory: Path) -> dict[str, str]:
    """Every file of a partition dir and its bytes (hashed): what 'untouched' means."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def _partition(log_dir: Path, name: str, records: int, *, keyed: bool, tid: str | None = None) -> Path:
    """A partition dir of ``records`` records in several segments, keys repeating when ``keyed``, none when not."""
    path = log_dir / name
    now = int(time.time() * 1000)  # within any retention, should a policy hold delete too
    with Log(path, LogConfig({"segment.bytes": 2048})) as log:
        for start in range(0, records, 10):
            log.append(MemoryRecords.with_records(
                [(f"k{(start + i) % 7}".encode() if keyed else None, b"v%d" % (start + i), now + i)
                 for i in range(10)]))
    if tid is not None:
        write_partition_metadata(path, tid)
    return path


def _kraft_log_dir(root: Path, node_id: int = 1) -> Path:
    """Broker ``node_id``'s log dir: users (compact), orders (no policy of its own: the cluster's default, delete,
    unless its broker sets one: broker 2 sets compact) and events (keyless; its policy set to delete, then to
    compact), with the metadata log that says so."""
    root.mkdir(parents=True)
    write_meta_properties(root, node_id)
    write_metadata_log(root, [
        [topic_record("users", USERS), config_record(TOPIC, "users", "cleanup.policy", "compact"),
         topic_record("orders", ORDERS), topic_record("events", EVENTS)],
        [config_record(BROKER, "", "log.cleanup.policy", "delete"),
         config_record(BROKER, "2", "log.cleanup.policy", "compact"),
         config_record(TOPIC, "events", "cleanup.policy", "delete"),
         config_record(TOPIC, "events", "cleanup.policy", "compact")],
    ])
    _partition(root, "users-0", 200, keyed=True, tid=USERS)
    _partition(root, "orders-0", 200, keyed=True, tid=ORDERS)
    _partition(root, "events-0", 200, keyed=False, tid=EVENTS)
    return root


def test_a_partition_whose_policy_is_not_known_is_not_cleaned(tmp_path: Path, impl: ModuleType) -> None:
    """A partition dir with no KRaft metadata log beside it (a ZooKeeper-mode broker's, or one copied alone) has
    no known cleanup.policy: not cleaned, exit 2, one line saying how to give it.  (It used to be compacted as
    if the policy were compact: a keyless topic lost its records.)"""
    partition = _partition(tmp_path / "logs", "events-0", 200, keyed=False)
    before = digest(partition)
    status, out, err = run("clean", "--roll", "--until-clean", str(partition))
    assert (status, out) == (2, "")
    assert err == (f"kafkalog clean: events-0 not cleaned: its cleanup.policy is not known (no KRaft metadata log "
                   f"(__cluster_metadata-0) in {tmp_path / 'logs'}: not a KRaft broker's log dir, or not the one "
                   "holding its metadata log); --config cleanup.policy=compact compacts it\n")
    assert digest(partition) == before


def test_the_metadata_log_is_never_cleaned(tmp_path: Path, impl: ModuleType) -> None:
    """The KRaft metadata log, keyless by design, is refused by name, --config or not; so is any Raft log."""
    root = _kraft_log_dir(tmp_path / "logs")
    metadata = root / METADATA_DIR
    before = digest(metadata)
    for extra in ([], ["--config", "cleanup.policy=compact"]):
        status, out, err = run("clean", "--roll", "--until-clean", *extra, str(metadata))
        assert (status, out) == (2, "")
        assert err == ("kafkalog clean: __cluster_metadata-0 not cleaned: it is the KRaft metadata log, a Raft log, "
                       "which Kafka's cleaner never compacts (its controller bounds it with snapshots); no config "
                       "changes that\n")
    assert digest(metadata) == before
    # Another name, but a Raft log's quorum-state beside the segments.
    raft = _partition(tmp_path / "other", "raft-0", 20, keyed=False)
    (raft / "quorum-state").write_text("{}")
    status, _out, err = run("clean", "--config", "cleanup.policy=compact", str(raft))
    assert status == 2 and "it is a Raft log (it holds a quorum-state file)" in err


def test_the_policy_comes_from_the_metadata_log(tmp_path: Path, impl: ModuleType) -> None:
    root = _kraft_log_dir(tmp_path / "logs")
    users, orders = root / "users-0", root / "orders-0"
    status, out, err = run("clean", "--roll", "--until-clean", str(users))
    assert (status, err) == (0, "")
    assert "Log cleaner thread 0 cleaned log users-0" in out
    with Log(users, read_only=True) as log:
        assert len(list(log.records())) == 7
    before = digest(orders)
    status, out, err = run("clean", "--roll", "--until-clean", str(orders))
    assert (status, out) == (2, "")
    assert err == (f"kafkalog clean: orders-0 not cleaned: cleanup.policy=delete (the cluster's default "
                   f"log.cleanup.policy in the KRaft metadata log {root / METADATA_DIR}) does not compact (Kafka's "
                   "cleaner leaves such a log alone); --config cleanup.policy=compact compacts it anyway\n")
    assert digest(orders) == before
    # An explicit --config wins, and says what it overrides.
    status, out, err = run("clean", "--roll", "--until-clean", "--config", "cleanup.policy=compact", str(orders))
    assert status == 0
    assert err == (f"kafkalog clean: orders-0: cleanup.policy=compact from --config overrides cleanup.policy=delete "
                   f"(the cluster's default log.cleanup.policy in the KRaft metadata log {root / METADATA_DIR})\n")
    # On broker 2, its own dynamic config wins over the cluster's default.
    broker_2 = _kraft_log_dir(tmp_path / "broker-2", node_id=2)
    status, out, err = run("clean", "--roll", "--until-clean", str(broker_2 / "orders-0"))
    assert (status, err) == (0, "") and "cleaned log orders-0" in out


def test_records_dropped_for_having_no_key_are_reported(tmp_path: Path, impl: ModuleType) -> None:
    """events is compacted (its policy was delete, then compact: the latest wins), and every record without a
    key that the cleaning drops is counted on stderr, -v or not."""
    root = _kraft_log_dir(tmp_path / "logs")
    events = root / "events-0"
    with Log(events, read_only=True) as log:
        before = len(list(log.records()))
    status, out, err = run("clean", "--roll", "--until-clean", "--json", str(events))
    assert status == 0
    with Log(events, read_only=True) as log:
        after = len(list(log.records()))
    assert before - after > 0
    assert err == (f"kafkalog clean: events-0: dropped {before - after} records without a key (a compacted topic "
                   "keeps each key's latest record; Kafka's cleaner drops records without one)\n")
    assert sum(json.loads(line)["invalidMessagesRead"] for line in out.splitlines()) == before - after


def test_a_dir_left_from_a_deleted_topic_of_the_same_name_has_no_known_policy(tmp_path: Path,
                                                                              impl: ModuleType) -> None:
    """The metadata log knows users by another id than the dir's partition.metadata: the dir is not that topic."""
    root = _kraft_log_dir(tmp_path / "logs")
    write_partition_metadata(root / "users-0", topic_id(99))
    status, _out, err = run("clean", str(root / "users-0"))
    assert status == 2
    assert (f"its partition.metadata says topic id {topic_id(99)}, but the KRaft metadata log {root / METADATA_DIR} "
            f"knows users as {USERS}: the dir is left from a deleted topic of the same name") in err
    # A topic the metadata log has never heard of.
    _partition(root, "ghost-0", 20, keyed=True)
    status, _out, err = run("clean", str(root / "ghost-0"))
    assert status == 2 and "has no topic ghost (deleted, or never created in this cluster)" in err


def test_the_metadata_log_of_another_log_dir(tmp_path: Path, impl: ModuleType) -> None:
    """A broker with two log dirs keeps its metadata log in one: --metadata-log-dir names it."""
    first = _kraft_log_dir(tmp_path / "first")
    second = tmp_path / "second"
    second.mkdir()
    users = second / "users-0"
    shutil.move(str(first / "users-0"), users)
    status, _out, err = run("clean", str(users))
    assert status == 2 and "its cleanup.policy is not known" in err
    status, out, err = run("clean", "--metadata-log-dir", str(first), str(users))
    assert (status, err) == (0, "") and "cleaned log users-0" in out


def test_a_bad_config_argument_is_a_clear_error(tmp_path: Path) -> None:
    partition = _partition(tmp_path / "logs", "events-0", 20, keyed=True)
    status, _out, err = run("clean", "--config", "cleanup.policy", str(partition))
    assert (status, err) == (2, "kafkalog clean: --config wants KEY=VALUE, got 'cleanup.policy'\n")
    status, _out, err = run("clean", "--config", "cleanup.policy=Compact", str(partition))
    assert status == 2 and "Invalid value" in err and "cleanup.policy" in err and "Traceback" not in err


@pytest.mark.parametrize("data_dir", [ARTHUR, RONEM])
def test_a_brokers_log_dir_is_cleaned_as_its_metadata_log_says(golden: Path, tmp_path: Path, impl: ModuleType,
                                                                data_dir: str) -> None:
    """On a copy of a KRaft broker's log dir: the metadata log (keyless: compacted, 874,344 bytes became 61) is
    refused; topics whose policy is delete (oms_*: their topic config; topic_transactions: Kafka's default) are
    refused and untouched; __consumer_offsets (compact) is cleaned; a keyless topic the metadata log does not
    know is untouched until --config says compact, and then its dropped records are counted."""
    root = tmp_path / "logs"
    shutil.copytree(golden / data_dir, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    _partition(root, "events-0", 200, keyed=False)
    refused = {}
    for partition in sorted(p for p in root.iterdir() if p.is_dir()):
        before = digest(partition)
        status, out, err = run("clean", "--roll", "--until-clean", str(partition))
        if partition.name.startswith("__consumer_offsets"):
            assert (status, err) == (0, ""), partition.name
            continue
        assert (status, out) == (2, ""), partition.name
        assert digest(partition) == before, partition.name
        refused[partition.name] = err
    assert "it is the KRaft metadata log" in refused.pop(METADATA_DIR)
    assert "its cleanup.policy is not known (the KRaft metadata log" in refused.pop("events-0")
    if data_dir == ARTHUR:
        assert set(refused) == {"oms_order_created-1", "oms_order_status_changed-0", "oms_order_status_changed-1",
                                "oms_order_status_changed-2"}
        assert all("cleanup.policy=delete (the topic's config in the KRaft metadata log" in e for e in refused.values())
    else:
        assert refused["topic_transactions-0"].startswith(
            "kafkalog clean: topic_transactions-0 not cleaned: cleanup.policy=delete (Kafka's default: neither the "
            "topic nor its brokers set it in the KRaft metadata log")
    status, _out, err = run("clean", "--roll", "--until-clean", "--config", "cleanup.policy=compact",
                            str(root / "events-0"))
    assert status == 0 and "kafkalog clean: events-0: dropped " in err and "records without a key" in err
    status, _out, err = run("clean", "--config", "cleanup.policy=compact", str(root / METADATA_DIR))
    assert status == 2 and "it is the KRaft metadata log" in err
