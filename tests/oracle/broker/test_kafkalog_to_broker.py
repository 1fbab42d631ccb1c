"""kafkalog to broker: a partition kafkalog wrote into a stopped Kafka 4.4 broker's log dir is served by that broker,
after its own loading and recovery, exactly as kafkalog reads it; the broker then appends more, and kafkalog reads
the whole partition as the broker's consumers got it.

The run (:func:`kafkalog_to_broker`): the broker creates two topics (their KRaft records, topic ids and
``partition.metadata``) and stops.  Then, twice:

- *clean*: kafkalog's ``LogManager`` opens the broker's log dir and writes ``kl-clean-0``
  (:mod:`~tests.oracle.broker.kafkalog_writes`: every codec, producer state and markers, a segment its cleaner
  cleaned) and shuts down cleanly, leaving its checkpoints, producer snapshots, trimmed indexes and the
  clean-shutdown marker, which the broker then loads as they are, without recovery;
- *crash*: a kafkalog process writes ``kl-crash-0`` the same way and is killed (SIGKILL), and the last batch is
  then torn (its last bytes cut, as a write the crash interrupted): the broker finds no clean-shutdown marker
  and recovers; kafkalog recovers a copy of the same files, and the two must agree.

A third partition, ``kl-compact-0`` (compacted on the broker too), kafkalog writes and does not clean: the
broker's cleaner cleans it while it serves the *clean* round, and kafkalog's cleaner a copy of the same files;
the broker's consumers then get what kafkalog reads of its own cleaning, and the cleaned batches are the same.

Each time the broker starts on the files, its consumers (``read_committed`` and ``read_uncommitted``) get
kafkalog's records; a producer appends plain records and a committed and an aborted transaction; the consumers
read the whole partition again; the broker stops; and kafkalog reads the whole partition as they got it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog.cli import main
from kafkalog.manager.log_manager import LogManager
from kafkalog.topic import TopicPartition
from tests.oracle.broker.broker import ROOT, KafkaBroker
from tests.oracle.broker.clients import (
    CLIENT_TIMEOUT_S,
    Row,
    TopicPartitionKey,
    confluent_producer,
    consume,
    create_topics,
    library_rows,
    produce,
    wait_for_leaders,
    wait_until_stable,
)
from tests.oracle.broker.conftest import ISOLATIONS, KAFKA_CURRENT, require_broker
from tests.oracle.broker.kafkalog_writes import TOPIC_CONFIG, write_batches, write_partition
from tests.oracle.broker.workloads import BROKER_CONFIG, wait_until_cleaned

pytestmark = pytest.mark.slow

CLEAN, CRASH, KILLED, COMPACT = ("kl-clean", 0), ("kl-crash", 0), ("killed", 0), ("kl-compact", 0)
#: The compacted topic both cleaners clean: the broker's cleaner looks at it at once (any dirty ratio, no lag).
COMPACT_CONFIG = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01, "min.compaction.lag.ms": 0,
                  "delete.retention.ms": TOPIC_CONFIG["delete.retention.ms"],
                  "index.interval.bytes": TOPIC_CONFIG["index.interval.bytes"]}
Consumed = dict[str, list[Row]]


@dataclass
class Round:
    """One partition's round trip: what kafkalog read from what it wrote (per isolation level), what the broker's
    consumers got of it, what they got after the broker appended more, a copy of the log dir as the broker left it
    at its stop, and the broker's lines about the partition while it loaded it."""

    written: Consumed
    served: Consumed
    after_appends: Consumed
    stopped_log_dir: Path
    load_log: list[str]
    #: The partition dir as kafkalog left it (the crash: after kafkalog's own recovery of a copy), before the
    #: broker started on it.
    kafkalog_dir: Path


@dataclass
class KafkalogToBroker:
    broker: KafkaBroker
    rounds: dict[TopicPartitionKey, Round]
    #: Copies of the broker's log dir: stopped after it created the topics; killed (SIGKILL) after an append.
    created: Path
    killed: Path
    #: The killed broker's log dir recovered by kafkalog (a ``LogManager`` opened on a copy and closed), and by the
    #: broker (started on it, read by its consumers, stopped); what its consumers got of the killed topic.
    killed_by_kafkalog: Path
    killed_by_broker: Path
    killed_served: Consumed
    #: A compacted partition kafkalog wrote and did not clean: what the broker's consumers got after its cleaner
    #: cleaned it up to ``compact_cleaned_up_to``, and what kafkalog reads after its cleaner cleaned a copy.
    compact_served: Consumed
    compact_cleaned_up_to: int
    compact_by_kafkalog: Consumed
    compact_written: list[Row]
    #: kafkalog's cleaned copy of the partition dir.
    compact_kafkalog_dir: Path


def _both(broker: KafkaBroker, tp: TopicPartitionKey) -> Consumed:
    return {isolation: consume(broker, [tp], isolation)[tp] for isolation in ISOLATIONS}


def _library(log_dir: Path, tp: TopicPartitionKey, **manager: object) -> Consumed:
    with LogManager(log_dir, **manager) as m:  # type: ignore[arg-type]
        log = m.get_log(TopicPartition(*tp))
        assert log is not None
        return {isolation: library_rows(log.records(isolation=isolation)) for isolation in ISOLATIONS}


def _serve_and_append(broker: KafkaBroker, tp: TopicPartitionKey, written: Consumed, copy_to: Path,
                      kafkalog_dir: Path, while_running: Callable[[KafkaBroker], None] | None = None) -> Round:
    """Start the broker on the files, read them (and do ``while_running``), append more (plain and transactions),
    read all, stop."""
    log_mark = broker.server_log.stat().st_size if broker.server_log.exists() else 0
    with broker.running_broker():
        wait_for_leaders(broker, [tp[0]])
        wait_until_stable(broker, [tp])
        served = _both(broker, tp)
        if while_running is not None:
            while_running(broker)
        with broker.server_log.open(errors="replace") as f:
            f.seek(log_mark)
            load_log = [line for line in f if f"{tp[0]}-{tp[1]}" in line]
        produce(confluent_producer(broker, compression_type="snappy"), tp[0],
                [(f"broker-{i % 4}", f"appended by the broker {i}") for i in range(15)], partition=tp[1])
        tx = confluent_producer(broker, transactional_id=f"kafkalog-after-{tp[0]}")
        tx.init_transactions(CLIENT_TIMEOUT_S)
        for commit in (True, False):
            tx.begin_transaction()
            produce(tx, tp[0], [(f"tx-{i}", f"{'committed' if commit else 'aborted'} {i}") for i in range(5)],
                    partition=tp[1])
            (tx.commit_transaction if commit else tx.abort_transaction)(CLIENT_TIMEOUT_S)
        wait_until_stable(broker, [tp])
        after = _both(broker, tp)
    shutil.copytree(broker.log_dir, copy_to)
    return Round(written, served, after, copy_to, load_log, kafkalog_dir)


def _tear_last_batch(partition_dir: Path, cut: int = 7) -> None:
    """Cut ``cut`` bytes off the end of the last segment's ``.log``: a write the crash interrupted."""
    last = max(partition_dir.glob("*.log"), key=lambda p: int(p.stem))
    size = last.stat().st_size
    assert size > cut
    os.truncate(last, size - cut)


@pytest.fixture(scope="module")
def kafkalog_to_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkalogToBroker]:
    require_broker(KAFKA_CURRENT)
    work = tmp_path_factory.mktemp("kafkalog-to-broker")
    broker = KafkaBroker(KAFKA_CURRENT, work / "broker", BROKER_CONFIG)
    broker.format()
    with broker.running_broker():
        # The index interval kafkalog writes with, so that the broker's recovery indexes as kafkalog's does; the
        # cleanup policy stays the default (delete), so that its cleaner leaves kafkalog's segments alone.
        index = {"index.interval.bytes": TOPIC_CONFIG["index.interval.bytes"]}
        create_topics(broker, {CLEAN[0]: (1, index), CRASH[0]: (1, index), COMPACT[0]: (1, COMPACT_CONFIG)})
    shutil.copytree(broker.log_dir, work / "created")
    rounds = {}

    # Clean: written here, the manager shut down as a broker shuts down.
    configs = {CLEAN[0]: TOPIC_CONFIG, CRASH[0]: TOPIC_CONFIG, COMPACT[0]: TOPIC_CONFIG}
    with LogManager(broker.log_dir, topic_configs=configs) as manager:
        log = write_partition(manager, TopicPartition(*CLEAN))
        written = {isolation: library_rows(log.records(isolation=isolation)) for isolation in ISOLATIONS}
        compact_log = manager.get_log(TopicPartition(*COMPACT))
        assert compact_log is not None
        write_batches(compact_log, int(time.time() * 1000))  # not cleaned: the broker's cleaner will
        compact_written = library_rows(compact_log.records())
    shutil.copytree(broker.log_dir / "kl-clean-0", work / "written-clean")
    shutil.copytree(broker.log_dir / "kl-compact-0", work / "compact-by-kafkalog" / "kl-compact-0")
    compact: dict[str, Any] = {}

    def broker_cleans(running: KafkaBroker) -> None:
        compact["cleaned_up_to"] = wait_until_cleaned(running, COMPACT[0])
        compact["served"] = _both(running, COMPACT)

    rounds[CLEAN] = _serve_and_append(broker, CLEAN, written, work / "after-clean", work / "written-clean",
                                      broker_cleans)
    # kafkalog's cleaner cleans the copy of the same files, up to the same active segment, with the broker's
    # config of the topic (its segment size groups the segments a cleaning rewrites).
    with LogManager(work / "compact-by-kafkalog", topic_configs={COMPACT[0]: COMPACT_CONFIG}) as manager:
        stats = manager.compact(COMPACT[0])
        assert stats, "kafkalog's cleaner did not clean the copy"
        log = manager.get_log(TopicPartition(*COMPACT))
        assert log is not None
        compact["kafkalog"] = {isolation: library_rows(log.records(isolation=isolation)) for isolation in ISOLATIONS}

    # Crash: written by a process killed by SIGKILL, the last batch torn; kafkalog recovers a copy.
    child = subprocess.run([sys.executable, "-m", "tests.oracle.broker.kafkalog_writes", str(broker.log_dir),
                            CRASH[0]], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                           timeout=120, check=False)
    assert child.returncode == -9, child.stderr.decode(errors="replace")
    _tear_last_batch(broker.log_dir / "kl-crash-0")
    shutil.copytree(broker.log_dir, work / "crashed")
    written = _library(work / "crashed", CRASH, topic_configs=configs)
    rounds[CRASH] = _serve_and_append(broker, CRASH, written, work / "after-crash", work / "crashed" / "kl-crash-0")

    # The broker killed: a few records in a new topic, then SIGKILL.
    with broker.running_broker():
        create_topics(broker, {"killed": (1, {})})
        produce(confluent_producer(broker), "killed", [("k", "killed soon"), ("k", "after this")])
        broker.kill()
    shutil.copytree(broker.log_dir, work / "killed")
    shutil.copytree(broker.log_dir, work / "killed-by-kafkalog")
    with LogManager(work / "killed-by-kafkalog"):
        pass
    with broker.running_broker():
        wait_for_leaders(broker, ["killed"])
        killed_served = _both(broker, KILLED)
    shutil.copytree(broker.log_dir, work / "killed-by-broker")
    yield KafkalogToBroker(broker, rounds, work / "created", work / "killed", work / "killed-by-kafkalog",
                           work / "killed-by-broker", killed_served, compact["served"], compact["cleaned_up_to"],
                           compact["kafkalog"], compact_written, work / "compact-by-kafkalog" / "kl-compact-0")


@pytest.mark.parametrize("tp", [CLEAN, CRASH], ids=["clean", "crash"])
def test_the_broker_serves_what_kafkalog_wrote(kafkalog_to_broker: KafkalogToBroker, tp: TopicPartitionKey) -> None:
    """The broker's consumers, both isolation levels, get exactly kafkalog's records of the partition; the
    written data is what the case is about (aborted records only uncommitted readers see, tombstones, a cleaned
    part)."""
    r = kafkalog_to_broker.rounds[tp]
    assert r.served == r.written
    committed, uncommitted = r.written["read_committed"], r.written["read_uncommitted"]
    assert any(row.value and row.value.startswith(b"abort") for row in uncommitted)
    assert not any(row.value and row.value.startswith(b"abort") for row in committed)
    assert any(row.key is not None and row.value is None for row in committed)


def test_the_broker_loads_kafkalogs_clean_files_as_they_are(kafkalog_to_broker: KafkalogToBroker) -> None:
    """After kafkalog's clean shutdown the broker finds nothing to recover or rebuild in the partition: no
    warning or error about it, no index rebuilt, no segment recovered."""
    lines = kafkalog_to_broker.rounds[CLEAN].load_log
    trouble = [line for line in lines if " WARN " in line or " ERROR " in line or any(
        sign in line for sign in ("Recovering unflushed segment", "rebuilding index", "Found a corrupted"))]
    assert not trouble, "".join(trouble)
    assert any("Reloading from producer snapshot" in line for line in lines), "".join(lines)


def test_the_broker_recovers_kafkalogs_crash_as_kafkalog_does(kafkalog_to_broker: KafkalogToBroker) -> None:
    """After the crash the broker recovered the partition (it says so) and dropped the torn batch (the last append,
    "after the cleaning"), as kafkalog's recovery of the same files did: the records served are kafkalog's
    (checked above), and those of the batch before the torn one are there."""
    r = kafkalog_to_broker.rounds[CRASH]
    assert any("Recovering unflushed segment" in line for line in r.load_log), "".join(r.load_log)
    assert not any(row.value and row.value.startswith(b"after the cleaning") for row in r.written["read_uncommitted"])
    assert any(row.value and row.value.startswith(b"last") for row in r.written["read_uncommitted"])


@pytest.mark.parametrize("tp", [CLEAN, CRASH], ids=["clean", "crash"])
def test_the_broker_keeps_kafkalogs_closed_segments_byte_for_byte(kafkalog_to_broker: KafkalogToBroker,
                                                                   tp: TopicPartitionKey) -> None:
    """Every segment that was closed when the broker started on the partition (all but kafkalog's active one) has,
    after the broker served it, appended after it and stopped, the bytes kafkalog left: its ``.log``, ``.index``,
    ``.timeindex`` and ``.txnindex``.  After the clean shutdown the broker rewrote nothing; after the crash its
    recovery wrote the indexes kafkalog's recovery wrote."""
    r = kafkalog_to_broker.rounds[tp]
    before = r.kafkalog_dir
    after = r.stopped_log_dir / f"{tp[0]}-{tp[1]}"
    bases = sorted(int(p.stem) for p in before.glob("*.log"))
    assert len(bases) >= 3, bases
    compared = []
    for base in bases[:-1]:
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            name = f"{base:020d}{suffix}"
            if not (before / name).exists():
                assert not (after / name).exists(), name
                continue
            assert (after / name).read_bytes() == (before / name).read_bytes(), name
            compared.append(name)
    assert any(name.endswith(".txnindex") for name in compared), compared


@pytest.mark.parametrize("tp", [CLEAN, CRASH], ids=["clean", "crash"])
def test_kafkalog_reads_what_the_broker_appended(kafkalog_to_broker: KafkalogToBroker, tp: TopicPartitionKey,
                                                 impl: ModuleType) -> None:
    """The broker appended to kafkalog's partition and stopped: kafkalog reads the whole partition, both
    isolation levels, as the broker's consumers got it, and ``verify`` finds the log dir clean."""
    r = kafkalog_to_broker.rounds[tp]
    assert r.after_appends != r.served
    assert _library(r.stopped_log_dir, tp, read_only=True) == r.after_appends
    out, err = io.StringIO(), io.StringIO()
    status = main(["verify", "--json", str(r.stopped_log_dir)], stdout=out, stderr=err)
    reports = [json.loads(line) for line in out.getvalue().splitlines()]
    assert status == 0, [report for report in reports if not report.get("ok", True)] or err.getvalue()


@pytest.mark.parametrize("state", ["created", "killed"])
def test_verify_finds_a_stopped_and_a_killed_broker_log_dir_clean(kafkalog_to_broker: KafkalogToBroker, state: str,
                                                                  impl: ModuleType) -> None:
    """``kafkalog verify`` exits 0 on the log dir of a broker stopped after it created two topics (its KRaft
    metadata log of a few records, whose indexes a broker leaves preallocated at every stop) and of one killed
    after a few appends (every active segment's indexes preallocated and holding no entry yet: all zeros).  It
    used to take the zero first slot of those indexes for an entry, and report errors on a healthy log dir."""
    log_dir = getattr(kafkalog_to_broker, state)
    out, err = io.StringIO(), io.StringIO()
    status = main(["verify", "--json", "--notes", str(log_dir)], stdout=out, stderr=err)
    reports = [json.loads(line) for line in out.getvalue().splitlines()]
    assert status == 0, [report for report in reports if not report.get("ok", True)] or err.getvalue()
    notes = [f["message"] for r in reports for f in r.get("findings", ()) if f["severity"] == "note"]
    if state == "killed":
        assert any("its entries end at entry 0" in note for note in notes), notes


def test_kafkalog_recovers_a_killed_broker_as_the_broker_does(kafkalog_to_broker: KafkalogToBroker,
                                                              impl: ModuleType) -> None:
    """The log dir of a broker killed after a few appends, recovered twice: by kafkalog (a ``LogManager`` opened on
    a copy and closed) and by the broker (started on it and stopped).  The killed topic's partition then holds the
    same files with the same bytes in both (but the leader epoch the restarted broker adds as it leads again), and
    kafkalog reads the records the broker's consumers got."""
    r = kafkalog_to_broker
    ours, theirs = r.killed_by_kafkalog / "killed-0", r.killed_by_broker / "killed-0"
    names = sorted(p.name for p in theirs.iterdir())
    assert sorted(p.name for p in ours.iterdir()) == names
    assert any(name.endswith(".snapshot") for name in names), names
    for name in names:
        if name == "leader-epoch-checkpoint":
            continue
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    # The restarted broker led the partition at a new leader epoch, which it assigns the log end offset as it
    # becomes leader (Partition.makeLeader); recovery itself left the epochs kafkalog's recovery left.
    ours_epochs = (ours / "leader-epoch-checkpoint").read_text().split("\n")
    theirs_epochs = (theirs / "leader-epoch-checkpoint").read_text().split("\n")
    log_end = len(r.killed_served["read_uncommitted"])
    assert ours_epochs[2:-1] == theirs_epochs[2:-2], (ours_epochs, theirs_epochs)
    new_epoch, start = map(int, theirs_epochs[-2].split())
    assert start == log_end and new_epoch > int(ours_epochs[-2].split()[0]), theirs_epochs
    assert _library(r.killed_by_kafkalog, KILLED, read_only=True) == r.killed_served
    assert [row.value for row in r.killed_served["read_committed"]] == [b"killed soon", b"after this"]


def test_the_brokers_cleaner_and_kafkalogs_clean_kafkalogs_partition_alike(kafkalog_to_broker: KafkalogToBroker,
                                                                           impl: ModuleType) -> None:
    """A compacted partition kafkalog wrote (every codec, keys, tombstones, an idempotent producer, transactions
    that commit and abort, markers) is cleaned by the broker's cleaner, up to its active segment, and a copy of
    the same files by kafkalog's: the broker's consumers of both isolation levels get, after the broker's
    cleaning, exactly what kafkalog reads after its own (the same records kept, tombstones and markers kept for
    ``delete.retention.ms``, the aborted transactions' records gone, the idempotent producer's last batch kept)."""
    r = kafkalog_to_broker
    assert r.compact_cleaned_up_to > 0
    assert r.compact_served == r.compact_by_kafkalog
    assert len(r.compact_served["read_uncommitted"]) < len(r.compact_written), "the cleaning removed records"
    uncommitted = r.compact_served["read_uncommitted"]
    cleaned = [row for row in uncommitted if row.offset < r.compact_cleaned_up_to]
    assert len({row.key for row in cleaned if not row.value or not row.value.startswith(b"idempotent")}) > 5
    assert any(row.key is not None and row.value is None for row in cleaned)
    assert not any(row.value and row.value.startswith(b"abort") for row in uncommitted)


def _cleaned_batches(partition_dir: Path, below: int) -> tuple[list[int], list[tuple[Any, ...]]]:
    """The segment base offsets of a partition dir, and every batch below ``below`` as its header fields (but
    size, CRC and the delete horizon's value, which is the cleaning's clock: whether it is set) and its
    records."""
    from kafkalog.log import Log

    log = Log(partition_dir, read_only=True)
    try:
        bases, batches = [], []
        for segment in log.log_segments():
            bases.append(segment.base_offset)
            for batch in segment.log:
                if batch.base_offset >= below:
                    break
                records = tuple((r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch)
                batches.append((batch.base_offset, batch.last_offset, batch.magic, batch.compression.name,
                                int(batch.timestamp_type), batch.is_transactional, batch.is_control,
                                batch.delete_horizon_ms is not None, batch.producer_id, batch.producer_epoch,
                                batch.base_sequence, batch.partition_leader_epoch, batch.max_timestamp, records))
        return bases, batches
    finally:
        log.close()


def test_the_brokers_cleaner_and_kafkalogs_write_the_same_batches(kafkalog_to_broker: KafkalogToBroker,
                                                                  impl: ModuleType) -> None:
    """The two cleanings of that partition, batch by batch: the same segments, and below the cleaned offset the
    same batches (offsets, codec, producer fields, transactional and control flags, whether the delete horizon
    is set, leader epoch, max timestamp) holding the same records.  Compressed bytes are each runtime's
    compressor's, so batches are compared decoded."""
    r = kafkalog_to_broker
    broker_dir = r.rounds[CLEAN].stopped_log_dir / f"{COMPACT[0]}-{COMPACT[1]}"
    theirs = _cleaned_batches(broker_dir, r.compact_cleaned_up_to)
    ours = _cleaned_batches(r.compact_kafkalog_dir, r.compact_cleaned_up_to)
    assert ours[0] == theirs[0]
    assert len(ours[1]) == len(theirs[1])
    for mine, kafka in zip(ours[1], theirs[1], strict=True):
        assert mine == kafka
    assert any(batch[7] for batch in theirs[1]), "the delete horizon was set on a batch with tombstones or markers"
