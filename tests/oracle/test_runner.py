"""The Kafka runner itself: each op of the oracle's protocol, on Kafka 3.9.2 and 4.4.0, answers what Kafka must.

These tests hold the runner (``tests/oracle/java``, ``tests/oracle/jvm.py``) to Kafka's known behaviour -- offsets
assigned, producer state, aborted transactions, an out-of-order sequence refused, a torn tail recovered -- and read
the partition directory it leaves with kafkalog (read-only), so that what the differential harness compares is
known to be Kafka's.  The comparison of Kafka with kafkalog is the harness's (``tests/oracle/test_*``), not these.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalog import Log
from kafkalog.record import MemoryRecords
from tests.oracle import conftest as oracle_conftest
from tests.oracle.jvm import (
    JAVA_SOURCES,
    KafkaRunner,
    OracleUnavailable,
    RunnerError,
    RunnerFatal,
    compile_runner,
    find_java,
    kafka_jars,
    kafka_versions,
    source_digest,
)

KAFKAS = ("3.9", "4")
#: The scenario clock's start (an instant after 2023, so that timestamps are ordinary).
START_MS = 1_700_000_000_000
#: A segment.bytes that rolls after two or three small batches (passed to 4.x as internal.segment.bytes).
SMALL_SEGMENT = "200"


@pytest.fixture(params=KAFKAS)
def runner(request: pytest.FixtureRequest, kafka_runner_for: Callable[[str], KafkaRunner]) -> KafkaRunner:
    return kafka_runner_for(request.param)


class Partition:
    """One log of a runner, opened by ``start``: sends ops, keeps the last state, checks what is on disk."""

    def __init__(self, runner: KafkaRunner, directory: Path) -> None:
        self.runner = runner
        self.dir = directory
        self.state: dict[str, Any] | None = None
        self.open = False

    def start(self, config: dict[str, str] | None = None, time_ms: int = START_MS) -> dict[str, Any]:
        answer = self.runner.request({"cmd": "start", "dir": str(self.dir), "config": config or {},
                                      "time_ms": time_ms})
        self.state = answer["state"]
        self.open = self.state is not None
        return answer

    def op(self, name: str, **fields: Any) -> dict[str, Any]:
        """The whole answer to one op (``result`` or ``error``, ``state``, ``input``)."""
        answer = self.runner.request({"cmd": "op", "op": {"op": name, **fields}})
        self.state = answer["state"]
        return answer

    def ok(self, name: str, **fields: Any) -> dict[str, Any]:
        """The result of an op Kafka must accept."""
        answer = self.op(name, **fields)
        assert "error" not in answer, answer["error"]
        result: dict[str, Any] = answer["result"]
        return result

    def append(self, records: list[dict[str, Any]], *, compression: str = "none", magic: int = 2,
               leader_epoch: int = 0, origin: str = "client", **extra: Any) -> dict[str, Any]:
        return self.op("append", records=records, compression=compression, magic=magic, leader_epoch=leader_epoch,
                       origin=origin, **extra)

    def end(self) -> dict[str, Any]:
        answer = self.runner.request({"cmd": "end"})
        self.open = False
        self.state = answer["state"]
        return answer

    def files(self) -> list[str]:
        return sorted(p.name for p in self.dir.iterdir())

    def segment_bytes(self, base_offset: int = 0) -> bytes:
        return (self.dir / f"{base_offset:020d}.log").read_bytes()


@pytest.fixture
def partition(runner: KafkaRunner, scratch: Path) -> Iterator[Partition]:
    """A partition dir (``topic-0``) for the runner; its log is ended after the test, whatever happened."""
    p = Partition(runner, scratch / "topic-0")
    yield p
    if p.open and runner.running:
        with contextlib.suppress(RunnerError):
            p.end()


def rec(key: str | None, value: str | None, timestamp: int = START_MS, **headers: str) -> dict[str, Any]:
    return {"key": key, "value": value, "timestamp": timestamp, "headers": headers}


def decode(b64: str) -> MemoryRecords:
    return MemoryRecords(base64.b64decode(b64))


def kv(records: MemoryRecords) -> list[tuple[int, bytes | None, bytes | None]]:
    """The data records' (offset, key, value), control records left out."""
    return [(r.offset, r.key, r.value) for r in records.records() if not getattr(r, "is_control", False)]


# --- the process -------------------------------------------------------------------------------------------------


def test_version_and_startup(runner: KafkaRunner) -> None:
    """The JVM runs the version's jars and says so; it started within the startup deadline."""
    assert runner.kafka_version == kafka_versions()[runner.kafka]
    answer = runner.request({"cmd": "version"})
    assert answer["kafka"] == runner.version
    assert answer["java"].split(".")[0].isdigit() and int(answer["java"].split(".")[0]) >= 17
    assert runner.startup_seconds < 120


def test_a_runner_that_dies_or_hangs_is_an_error_and_is_replaced(
        kafka_runner_for: Callable[[str], KafkaRunner], scratch: Path) -> None:
    """A request to a dead runner raises with the log's tail; a request past its deadline kills the runner; the
    session fixture gives the next test a fresh one."""
    shared = kafka_runner_for("4")  # skips where Kafka cannot run
    with KafkaRunner("4", work_dir=scratch / "work") as private:
        assert private.log_path.parent == scratch / "work"
        with pytest.raises(RunnerError, match="no answer in 0 s"):
            private.request({"cmd": "version"}, timeout=0.0)
        assert not private.running
        with pytest.raises(RunnerError, match=r"died|closed"):
            private.request({"cmd": "version"})
    with pytest.raises(RunnerError, match="closed"):
        private.request({"cmd": "version"})
    os.kill(shared.pid or 0, signal.SIGKILL)
    with pytest.raises(RunnerError, match=r"died \(exit code -9\)"):
        shared.request({"cmd": "version"})
    fresh = kafka_runner_for("4")
    assert fresh is not shared and fresh.running
    assert fresh.request({"cmd": "version"})["kafka"] == "4.4.0"


def test_compiled_classes_are_keyed_by_the_sources(tmp_path: Path) -> None:
    """A changed source changes the digest (a recompile); unchanged sources reuse the compiled classes."""
    jars = kafka_jars_or_skip("3.9.2")
    copy = tmp_path / "java"
    shutil.copytree(JAVA_SOURCES, copy)
    digest = source_digest("3.9.2", jars, copy)
    assert source_digest("3.9.2", jars, copy) == digest
    runner_java = copy / "common" / "dev" / "kafkalog" / "oracle" / "Runner.java"
    runner_java.write_text(runner_java.read_text() + "\n// changed\n")
    assert source_digest("3.9.2", jars, copy) != digest
    # a change to the other version's module does not touch this one's classes
    other = next((copy / "kafka4").rglob("*.java"))
    before = source_digest("3.9.2", jars, copy)
    other.write_text(other.read_text() + "\n// changed\n")
    assert source_digest("3.9.2", jars, copy) == before
    classes = compile_runner("3.9.2")  # compiled by the session's runners already
    started = time.monotonic()
    assert compile_runner("3.9.2") == classes
    assert time.monotonic() - started < 1.0
    assert (classes / "dev" / "kafkalog" / "oracle" / "kafka39" / "Main.class").is_file()


def kafka_jars_or_skip(version: str) -> list[Path]:
    """The version's jars, when they and a JDK are here (the test skips, or fails where the oracle is required)."""
    try:
        find_java()
        return kafka_jars(version)
    except OracleUnavailable as e:
        oracle_conftest.oracle_unavailable(str(e))


def test_requests_it_cannot_understand_are_fatal_and_it_goes_on(runner: KafkaRunner, partition: Partition) -> None:
    """Every malformed request is refused with a reason (never taken for Kafka's answer); the runner serves on."""
    fatal: list[tuple[dict[str, Any], str]] = [
        ({"cmd": "launch"}, "unknown cmd"),
        ({"cmd": "version", "extra": 1}, "unknown field 'extra'"),
        ({"cmd": "op", "op": {"op": "roll"}}, "no log is open"),
        ({"cmd": "start", "dir": "relative/topic-0", "config": {}, "time_ms": 0}, "absolute"),
        ({"cmd": "start", "dir": str(partition.dir), "config": {"segment.bytes": 1024}, "time_ms": 0},
         "must be a string"),
    ]
    for message, reason in fatal:
        with pytest.raises(RunnerFatal, match=reason):
            runner.request(message)
    partition.start()
    with pytest.raises(RunnerFatal, match="still open"):
        runner.request({"cmd": "start", "dir": str(partition.dir.with_name("topic-1")), "config": {}, "time_ms": 0})
    bad_ops = [
        ({"op": "compact"}, "unknown op 'compact'"),
        ({"op": "roll", "force": True}, "unknown field 'force'"),
        ({"op": "truncate_to"}, "missing field 'offset'"),
        ({"op": "truncate_to", "offset": "3"}, "must be an integer"),
        ({"op": "advance_time", "ms": -1}, "out of range"),
        ({"op": "read", "offset": 0, "max_bytes": 10, "isolation": "read_committed", "min_one_message": True},
         "isolation must be"),
        ({"op": "append", "records": [rec("k", "v", colour="red")], "compression": "none", "magic": 0,
          "leader_epoch": 0, "origin": "client"}, "does not support record headers"),
        ({"op": "append", "records": [rec("k", "v")], "compression": "zstd", "magic": 1, "leader_epoch": 0,
          "origin": "client"}, "ZStandard compression is not supported for magic 1"),
        ({"op": "append", "records": [rec("k", "v")], "compression": "none", "magic": 1, "leader_epoch": 0,
          "origin": "client", "producer": {"id": 1, "epoch": 0, "sequence": 0, "transactional": False}},
         "producer fields need magic 2"),
        ({"op": "append", "records": [rec("k", "v")], "compression": "brotli", "magic": 2, "leader_epoch": 0,
          "origin": "client"}, "unknown compression"),
        ({"op": "reopen", "clean_shutdown": True, "truncate_bytes": 1}, "unclean reopen only"),
        ({"op": "reopen", "clean_shutdown": False, "corrupt_byte": -1}, "out of range"),
    ]
    for op, reason in bad_ops:
        with pytest.raises(RunnerFatal, match=reason):
            runner.request({"cmd": "op", "op": op})
    partition.end()
    with pytest.raises(RunnerFatal, match="exists already"):
        runner.request({"cmd": "start", "dir": str(partition.dir), "config": {}, "time_ms": 0})
    assert runner.request({"cmd": "version"})["kafka"] == runner.version


def test_a_kafka_error_at_start_leaves_no_log(runner: KafkaRunner, partition: Partition) -> None:
    """A topic config Kafka refuses is Kafka's error, with no state; the next start works."""
    answer = partition.start({"no.such.config": "1"})
    assert answer == {"error": {"class": "InvalidConfigurationException",
                                "message": "Unknown topic config name: no.such.config"}, "state": None}
    assert partition.end() == {"state": None}
    answer = partition.start({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert answer["error"]["class"] == "InvalidConfigurationException"
    shutil.rmtree(partition.dir, ignore_errors=True)
    assert partition.start()["state"]["logEndOffset"] == 0


# --- appends and reads --------------------------------------------------------------------------------------------


def test_client_appends_are_assigned_offsets_and_read_back(runner: KafkaRunner, partition: Partition) -> None:
    """appendAsLeader assigns offsets from the log end and stamps the leader epoch; read returns the segment's
    bytes up to the high watermark; the directory holds the records (read with kafkalog)."""
    state = partition.start()["state"]
    assert state == {"logStartOffset": 0, "logEndOffset": 0, "highWatermark": 0, "lastStableOffset": 0,
                     "firstUnstableOffset": None, "recoveryPoint": 0, "segments": [[0, 0]], "activeProducers": [],
                     "leaderEpochs": [], "timeMs": START_MS}
    records = [rec("k1", "v1", START_MS + 1, trace="a"), rec("k2", None, START_MS + 3), rec(None, "v3", START_MS + 2)]
    answer = partition.append(records, leader_epoch=5)
    batch = base64.b64decode(answer["input"])
    (built,) = MemoryRecords(batch).batches()
    assert (built.magic, built.base_offset, built.partition_leader_epoch, built.producer_id) == (2, 0, 5, -1)
    assert answer["result"] == {
        "firstOffset": 0, "lastOffset": 2, "lastLeaderEpoch": 5, "maxTimestamp": START_MS + 3, "logAppendTime": -1,
        "logStartOffset": 0,
        "recordValidationStats": {"temporaryMemoryBytes": 0, "numRecordsConverted": 0, "conversionTimeNanos": 0},
        "sourceCompression": "none", "validBytes": len(batch), "lastOffsetOfFirstBatch": 2, "recordErrors": [],
        "leaderHwChange": "NONE"}
    assert answer["state"]["logEndOffset"] == 3
    assert answer["state"]["segments"] == [[0, len(batch)]]
    assert answer["state"]["leaderEpochs"] == [[5, 0]]
    assert partition.segment_bytes() == batch  # offsets 0.. and epoch 5 were already the batch's

    second = partition.append([rec("k1", "v4")], compression="gzip", leader_epoch=6)
    assert (second["result"]["firstOffset"], second["result"]["lastOffset"]) == (3, 3)
    assert second["result"]["sourceCompression"] == "gzip"
    assert second["state"]["leaderEpochs"] == [[5, 0], [6, 3]]
    assert partition.ok("update_high_watermark", offset=4) == {"highWatermark": 4}
    assert partition.ok("update_high_watermark", offset=99) == {"highWatermark": 4}  # bounded by the log end

    read = partition.ok("read", offset=0, max_bytes=1 << 20, isolation="high_watermark", min_one_message=False)
    assert read["fetchOffsetMetadata"] == {"messageOffset": 0, "segmentBaseOffset": 0, "relativePositionInSegment": 0}
    assert read["firstEntryIncomplete"] is False
    assert read["abortedTransactions"] is None
    assert base64.b64decode(read["records"]) == partition.segment_bytes()
    assert kv(decode(read["records"])) == [(0, b"k1", b"v1"), (1, b"k2", None), (2, None, b"v3"), (3, b"k1", b"v4")]
    # from inside the second batch: the whole batch, positioned where it starts
    read = partition.ok("read", offset=3, max_bytes=1, isolation="log_end", min_one_message=True)
    assert read["fetchOffsetMetadata"] == {"messageOffset": 3, "segmentBaseOffset": 0,
                                           "relativePositionInSegment": len(batch)}
    assert kv(decode(read["records"])) == [(3, b"k1", b"v4")]
    # without min_one_message, max_bytes cuts the batch: the first byte, marked incomplete
    cut = partition.ok("read", offset=0, max_bytes=1, isolation="log_end", min_one_message=False)
    assert base64.b64decode(cut["records"]) == batch[:1]
    assert cut["firstEntryIncomplete"] is True

    end = partition.end()["state"]
    assert (end["logEndOffset"], end["highWatermark"]) == (4, 4)
    assert "00000000000000000004.snapshot" in partition.files()  # close's producer snapshot
    log = Log(partition.dir, read_only=True)
    try:
        got = [(r.offset, r.key, r.value, list(r.headers)) for r in log.records()]
    finally:
        log.close()
    assert got == [(0, b"k1", b"v1", [("trace", b"a")]), (1, b"k2", None, []), (2, None, b"v3", []),
                   (3, b"k1", b"v4", [])]


def test_a_read_outside_the_log_is_kafkas_error(runner: KafkaRunner, partition: Partition) -> None:
    partition.start()
    partition.append([rec("k", "v")])
    answer = partition.op("read", offset=-1, max_bytes=100, isolation="log_end", min_one_message=True)
    assert answer["error"]["class"] == "OffsetOutOfRangeException"
    answer = partition.op("read", offset=5, max_bytes=100, isolation="log_end", min_one_message=True)
    assert answer["error"]["class"] == "OffsetOutOfRangeException"
    assert answer["state"]["logEndOffset"] == 1


def test_idempotent_producer_sequences(runner: KafkaRunner, partition: Partition) -> None:
    """An out-of-order sequence is Kafka's OutOfOrderSequenceException (the input is still answered, the log is
    unchanged); a retried batch is answered with its first append's offsets and not written again."""
    partition.start()
    producer = {"id": 9, "epoch": 0, "sequence": 0, "transactional": False}
    first = partition.append([rec("a", "1"), rec("b", "2")], producer=producer)
    assert first["state"]["activeProducers"] == [[9, 0, 1, 1, None]]
    size = first["state"]["segments"][0][1]
    gap = partition.append([rec("c", "3")], producer={**producer, "sequence": 5})
    assert gap["error"]["class"] == "OutOfOrderSequenceException"
    assert "input" in gap and "result" not in gap
    assert gap["state"]["logEndOffset"] == 2 and gap["state"]["segments"] == [[0, size]]
    retry = partition.append([rec("a", "1"), rec("b", "2")], producer=producer)
    assert (retry["result"]["firstOffset"], retry["result"]["lastOffset"]) == (0, 1)
    assert retry["state"]["logEndOffset"] == 2
    nxt = partition.append([rec("c", "3")], producer={**producer, "sequence": 2})
    assert nxt["result"]["firstOffset"] == 2
    assert nxt["state"]["activeProducers"] == [[9, 0, 2, 2, None]]
    fenced = partition.append([rec("d", "4")], producer={**producer, "epoch": 3, "sequence": 7})
    assert fenced["error"]["class"] == "OutOfOrderSequenceException"  # a new epoch must start at sequence 0


def test_transactions_markers_and_read_committed(runner: KafkaRunner, partition: Partition) -> None:
    """Markers end transactions (COORDINATOR appends); the last stable offset waits for the open one; a
    read_committed fetch names the aborted transaction; the transaction index holds it."""
    partition.start()
    p7 = {"id": 7, "epoch": 0, "sequence": 0, "transactional": True}
    p8 = {"id": 8, "epoch": 0, "sequence": 0, "transactional": True}
    state = partition.append([rec("a", "1"), rec("b", "2")], producer=p7)["state"]
    assert state["activeProducers"] == [[7, 0, 1, 1, 0]]
    assert state["firstUnstableOffset"] == 0
    state = partition.append([rec("c", "3")], producer=p8)["state"]
    marker = partition.op("marker", type="abort", producer={"id": 7, "epoch": 0}, coordinator_epoch=4,
                          leader_epoch=0)
    (control,) = MemoryRecords(base64.b64decode(marker["input"])).batches()
    assert control.is_control and control.producer_id == 7
    assert (marker["result"]["firstOffset"], marker["result"]["lastOffset"]) == (3, 3)
    assert marker["result"]["maxTimestamp"] == START_MS  # the marker is stamped with the clock
    assert marker["state"]["activeProducers"] == [[7, 0, 1, 1, None], [8, 0, 0, 2, 2]]
    # a completed transaction stays unstable until the high watermark passes its marker
    assert marker["state"]["firstUnstableOffset"] == 0
    state = partition.op("update_high_watermark", offset=4)["state"]
    assert (state["firstUnstableOffset"], state["lastStableOffset"]) == (2, 2)
    partition.op("marker", type="commit", producer={"id": 8, "epoch": 0}, coordinator_epoch=4, leader_epoch=0)
    partition.append([rec("d", "4")])
    state = partition.op("update_high_watermark", offset=6)["state"]
    assert (state["firstUnstableOffset"], state["lastStableOffset"], state["highWatermark"]) == (None, 6, 6)

    committed = partition.ok("read", offset=0, max_bytes=1 << 20, isolation="txn_committed", min_one_message=True)
    assert committed["abortedTransactions"] == [{"producerId": 7, "firstOffset": 0}]
    assert [o for o, _k, _v in kv(decode(committed["records"]))] == [0, 1, 2, 5]  # control records aside
    uncommitted = partition.ok("read", offset=0, max_bytes=1 << 20, isolation="high_watermark", min_one_message=True)
    assert uncommitted["abortedTransactions"] is None
    # one aborted transaction: version, producer id, first, last and last stable offsets (34 bytes)
    assert (partition.dir / "00000000000000000000.txnindex").stat().st_size == 34
    stale = partition.op("marker", type="commit", producer={"id": 8, "epoch": 0}, coordinator_epoch=3,
                         leader_epoch=0)
    assert stale["error"]["class"] == "TransactionCoordinatorFencedException"


def test_follower_appends_keep_the_leaders_offsets(runner: KafkaRunner, partition: Partition) -> None:
    """appendAsFollower takes the batch's offsets and epoch as they are; an offset below the log end is refused."""
    partition.start()
    answer = partition.append([rec("a", "1"), rec("b", "2")], origin="replication", leader_epoch=2)
    (built,) = MemoryRecords(base64.b64decode(answer["input"])).batches()
    assert (built.base_offset, built.partition_leader_epoch) == (0, 2)  # base offset: the log end
    assert answer["result"]["lastOffset"] == 1
    assert answer["state"]["leaderEpochs"] == [[2, 0]]
    answer = partition.append([rec("c", "3")], origin="replication", leader_epoch=4, base_offset=10)
    assert (answer["result"]["firstOffset"], answer["state"]["logEndOffset"]) == (10, 11)
    assert answer["state"]["leaderEpochs"] == [[2, 0], [4, 10]]
    behind = partition.append([rec("d", "4")], origin="replication", leader_epoch=4, base_offset=5)
    assert behind["error"]["class"] == "UnexpectedAppendOffsetException"
    not_zero = partition.append([rec("e", "5")], base_offset=7)
    assert not_zero["error"]["class"] == "InvalidRecordException"  # a client's v2 batch starts at offset 0


def test_log_append_time_topics_stamp_the_clock(runner: KafkaRunner, partition: Partition) -> None:
    partition.start({"message.timestamp.type": "LogAppendTime"})
    partition.ok("advance_time", ms=250)
    result = partition.ok("append", records=[rec("k", "v", 5)], compression="none", magic=2, leader_epoch=0,
                          origin="client")
    assert result["logAppendTime"] == START_MS + 250
    assert result["maxTimestamp"] == START_MS + 250


def test_message_formats_v0_v1(runner: KafkaRunner, partition: Partition) -> None:
    """3.9 keeps a v1 batch on a topic whose message.format.version is 0.10.x (no leader epochs then); 4.x has no
    message.format.version and converts a v1 batch to v2."""
    if runner.kafka == "3.9":
        partition.start({"message.format.version": "0.10.2"})
        answer = partition.append([rec("k", "v"), rec("k2", "v2")], compression="gzip", magic=1)
        assert answer["result"]["recordValidationStats"]["numRecordsConverted"] == 0
        assert answer["state"]["leaderEpochs"] == []
        assert [b.magic for b in MemoryRecords(partition.segment_bytes()).batches()] == [1]
        assert not (partition.dir / "leader-epoch-checkpoint").exists()
    else:
        refused = partition.start({"message.format.version": "0.10.2"})
        assert refused["error"]["class"] == "InvalidConfigurationException"
        shutil.rmtree(partition.dir, ignore_errors=True)
        partition.start()
        answer = partition.append([rec("k", "v"), rec("k2", "v2")], compression="gzip", magic=1)
        assert answer["result"]["recordValidationStats"]["numRecordsConverted"] == 2
        assert [b.magic for b in MemoryRecords(partition.segment_bytes()).batches()] == [2]
    assert kv(MemoryRecords(partition.segment_bytes())) == [(0, b"k", b"v"), (1, b"k2", b"v2")]


def test_transaction_version_of_markers(runner: KafkaRunner, partition: Partition) -> None:
    """Kafka 4 writes markers under a transaction version: V2 wants the epoch bumped, V1 (the runner's default)
    does not; 3.9 has no such field."""
    partition.start()
    partition.append([rec("a", "1")], producer={"id": 3, "epoch": 0, "sequence": 0, "transactional": True})
    if runner.kafka == "3.9":
        with pytest.raises(RunnerFatal, match="transaction_version is a Kafka 4 field"):
            runner.request({"cmd": "op", "op": {"op": "marker", "type": "commit", "producer": {"id": 3, "epoch": 0},
                                                "coordinator_epoch": 0, "leader_epoch": 0, "transaction_version": 2}})
        return
    same_epoch = partition.op("marker", type="commit", producer={"id": 3, "epoch": 0}, coordinator_epoch=0,
                              leader_epoch=0, transaction_version=2)
    assert same_epoch["error"]["class"] == "InvalidProducerEpochException"
    bumped = partition.op("marker", type="commit", producer={"id": 3, "epoch": 1}, coordinator_epoch=0,
                          leader_epoch=0, transaction_version=2)
    assert bumped["state"]["activeProducers"] == [[3, 1, -1, -1, None]]


# --- segments, time, retention ------------------------------------------------------------------------------------


def test_rolls_truncation_log_start_and_delayed_deletion(runner: KafkaRunner, partition: Partition) -> None:
    """Size rolls, roll(), truncateTo, truncateFullyAndStartAt, the log start moved by deleteRecords, the
    segments below it deleted by deleteOldSegments, their files removed when file.delete.delay.ms has passed."""
    partition.start({"segment.bytes": SMALL_SEGMENT, "file.delete.delay.ms": "1000"})
    for i in range(6):
        partition.append([rec(f"key-{i}", f"value-{i}")])
    segments = partition.state["segments"] if partition.state else []
    assert len(segments) == 3 and [base for base, _size in segments] == [0, 2, 4]
    assert partition.ok("roll") == {"activeSegment": 6}
    assert partition.ok("roll") == {"activeSegment": 6}  # an empty active segment is not rolled again
    assert partition.ok("truncate_to", offset=5) == {"truncated": True}
    assert partition.state and partition.state["logEndOffset"] == 5
    assert [base for base, _size in partition.state["segments"]] == [0, 2, 4]
    assert partition.ok("truncate_to", offset=9) == {"truncated": False}
    assert partition.op("truncate_to", offset=-1)["error"]["class"] == "IllegalArgumentException"

    too_far = partition.op("delete_records", offset=3)  # above the high watermark (0)
    assert too_far["error"]["class"] == "OffsetOutOfRangeException"
    partition.ok("update_high_watermark", offset=5)
    assert partition.ok("delete_records", offset=3) == {"incremented": True}
    assert partition.ok("delete_records", offset=2) == {"incremented": False}
    assert partition.ok("retention") == {"deleted": 1}
    assert partition.state and partition.state["logStartOffset"] == 3
    assert [base for base, _size in partition.state["segments"]] == [2, 4]
    deleted = [name for name in partition.files() if name.endswith(".deleted")]
    assert "00000000000000000000.log.deleted" in deleted
    partition.ok("advance_time", ms=999)
    assert [name for name in partition.files() if name.endswith(".deleted")] == deleted
    assert partition.ok("advance_time", ms=1) == {"timeMs": START_MS + 1000}
    assert [name for name in partition.files() if name.endswith(".deleted")] == []

    partition.ok("truncate_fully_and_start_at", offset=100)
    state = partition.state or {}
    assert (state["logStartOffset"], state["logEndOffset"], state["highWatermark"]) == (100, 100, 100)
    assert state["segments"] == [[100, 0]]


def test_retention_by_time_and_size(runner: KafkaRunner, partition: Partition) -> None:
    partition.start({"segment.bytes": SMALL_SEGMENT, "retention.ms": "60000", "retention.bytes": "400"})
    for i in range(8):
        partition.append([rec(f"k{i}", "x" * 20)])
    partition.ok("update_high_watermark", offset=8)
    sizes = [size for _base, size in (partition.state or {})["segments"]]
    by_size = partition.ok("retention")["deleted"]
    assert by_size >= 1
    # Kafka deletes the oldest segments only while what stays is still at least retention.bytes
    assert sum(sizes[by_size:]) >= 400 > sum(sizes[by_size + 1:])
    partition.ok("advance_time", ms=60_001)
    # every segment is older than retention.ms now, the active one too: with the high watermark at the log end it
    # goes as well, after a roll, and the log starts again at its end
    remaining = len((partition.state or {})["segments"])
    assert partition.ok("retention") == {"deleted": remaining}
    state = partition.state or {}
    assert (state["segments"], state["logStartOffset"]) == ([[8, 0]], 8)


def test_the_clock_drives_producer_expiration(runner: KafkaRunner, partition: Partition) -> None:
    """The producer-expiration check runs every 10 minutes of the mock clock, forgetting producers idle longer than
    producer.id.expiration.ms (a broker config the runner hands to the producer state manager)."""
    partition.start({"producer.id.expiration.ms": "1000"})
    partition.append([rec("k", "v")], producer={"id": 11, "epoch": 0, "sequence": 0, "transactional": False})
    assert partition.ok("advance_time", ms=599_999) == {"timeMs": START_MS + 599_999}
    assert partition.state and partition.state["activeProducers"] == [[11, 0, 0, 0, None]]
    partition.ok("advance_time", ms=1)
    assert partition.state and partition.state["activeProducers"] == []


def test_flush_and_clean_reopen(runner: KafkaRunner, partition: Partition) -> None:
    """flush moves the recovery point to the log end; a clean reopen loads the closed log as it was."""
    partition.start({"segment.bytes": SMALL_SEGMENT})
    for i in range(3):
        partition.append([rec(f"k{i}", "v")], leader_epoch=1,
                         producer={"id": 5, "epoch": 2, "sequence": i, "transactional": False})
    assert partition.ok("flush") == {"recoveryPoint": 3}
    partition.append([rec("k3", "v")], leader_epoch=2)
    before = dict(partition.state or {})
    assert before["recoveryPoint"] == 3
    assert partition.ok("reopen", clean_shutdown=True) == {}
    after = partition.state or {}
    for key in ("logStartOffset", "logEndOffset", "segments", "activeProducers", "leaderEpochs"):
        assert after[key] == before[key], key
    assert after["activeProducers"] == [[5, 2, 2, 2, None]]
    # LogLoader takes a cleanly shut down log as flushed: its recovery point is the log end
    assert after["recoveryPoint"] == 4
    assert after["highWatermark"] == 0  # a new log starts its high watermark at the log start


def test_unclean_reopen_recovers_a_torn_or_corrupt_tail(runner: KafkaRunner, partition: Partition) -> None:
    """After a crash (no close), a tail cut mid-batch and a flipped last byte are both cut off by recovery."""
    partition.start()
    first = partition.append([rec("a", "1"), rec("b", "2")])["result"]["validBytes"]
    partition.append([rec("c", "3")])
    assert partition.ok("reopen", clean_shutdown=False, truncate_bytes=1) == {}
    assert partition.state and partition.state["logEndOffset"] == 2
    assert partition.state["segments"] == [[0, first]]
    assert partition.segment_bytes() == partition.segment_bytes()[:first]
    partition.append([rec("c", "3")])
    partition.ok("reopen", clean_shutdown=False, corrupt_byte=1)
    assert partition.state and (partition.state["logEndOffset"], partition.state["segments"]) == (2, [[0, first]])
    assert "Corruption found in segment 0, truncating to offset 2" in runner.log_path.read_text(errors="replace")
    # a recovery point at the log end trusts the segment: nothing is checked, nothing cut
    partition.append([rec("c", "3")])
    partition.ok("flush")
    partition.ok("reopen", clean_shutdown=False)
    assert partition.state and partition.state["logEndOffset"] == 3


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts the JVM's open files in /proc")
def test_an_unclean_reopen_releases_the_abandoned_logs_files(runner: KafkaRunner, partition: Partition) -> None:
    """The crashed log's handles are closed without a write (3.9 ``closeHandlers``, 4.x ``closeQuietly``), not left
    to the garbage collector: after many reopens the segment is open once, by the new log."""
    partition.start()
    partition.append([rec("a", "1")])
    for _ in range(3):
        partition.ok("reopen", clean_shutdown=False)
    segment = partition.dir / f"{0:020d}.log"
    fds = Path(f"/proc/{runner.pid}/fd")
    opened = [fd for fd in fds.iterdir() if _target(fd) == str(segment)]
    assert len(opened) == 1


def _target(fd: Path) -> str | None:
    try:
        return os.readlink(fd)
    except OSError:  # closed since the directory was listed
        return None


def test_reopen_with_the_scenario_defaults_and_damage_past_the_file(runner: KafkaRunner,
                                                                     partition: Partition) -> None:
    """The scenario format's canonical reopen writes every default (no recovery point, 0 bytes cut, byte 0 flipped:
    no damage); a cut longer than the file empties it, and a byte before the file's start is left alone (a generator
    does not know the file's size)."""
    partition.start()
    size = partition.append([rec("a", "1"), rec("b", "2")])["result"]["validBytes"]
    defaults = {"recovery_point": None, "truncate_bytes": 0, "corrupt_byte": 0}
    assert partition.ok("reopen", clean_shutdown=True, **defaults) == {}
    assert partition.ok("reopen", clean_shutdown=False, **defaults) == {}
    assert partition.state and partition.state["segments"] == [[0, size]]
    partition.ok("reopen", clean_shutdown=False, corrupt_byte=size + 1)
    assert partition.state and (partition.state["logEndOffset"], partition.state["segments"]) == (2, [[0, size]])
    partition.ok("reopen", clean_shutdown=False, recovery_point=0, truncate_bytes=size + 100, corrupt_byte=1)
    assert partition.state and (partition.state["logEndOffset"], partition.state["segments"]) == (0, [[0, 0]])


def test_only_warnings_reach_the_log_file(runner: KafkaRunner, partition: Partition) -> None:
    """Kafka's INFO lines (a truncation logs several) never reach stderr; stdout carried JSON only (every answer
    parsed)."""
    partition.start()
    partition.append([rec("a", "1"), rec("b", "2")])
    partition.ok("truncate_to", offset=1)
    text = runner.log_path.read_text(errors="replace")
    assert " INFO " not in text and " DEBUG " not in text
    assert "Truncating to offset 1" not in text


def test_where_the_versions_differ_on_reads_and_close(runner: KafkaRunner, partition: Partition) -> None:
    """Two differences of 4.x the harness meets at once.  A read's ``fetchOffsetMetadata.messageOffset`` is the
    offset asked for in 3.9 and the base offset of the batch holding it in 4.x (``FileRecords``'s offset search).
    ``close()`` in 3.9 writes each segment's last time-index entry and trims the indexes to their entries; 4.x's
    does neither, so the active segment's indexes keep their preallocated size."""
    partition.start()
    partition.append([rec("a", "1", START_MS + 5), rec("b", "2", START_MS + 9)])
    read = partition.ok("read", offset=1, max_bytes=1000, isolation="log_end", min_one_message=True)
    expected_offset, index_sizes = ((1, (0, 12)) if runner.kafka == "3.9" else (0, (10485760, 10485756)))
    assert read["fetchOffsetMetadata"]["messageOffset"] == expected_offset
    partition.end()
    index = (partition.dir / f"{0:020d}.index").stat().st_size
    time_index = partition.dir / f"{0:020d}.timeindex"
    assert (index, time_index.stat().st_size) == index_sizes
    # the last entry the 3.9 close wrote: (max timestamp, relative offset 1); 4.x's time index is all zeros
    last_entry = (START_MS + 9).to_bytes(8, "big") + (1).to_bytes(4, "big")
    assert time_index.read_bytes()[:12] == (last_entry if runner.kafka == "3.9" else bytes(12))


def test_after_a_clean_reopen_4_rolls_at_the_next_append(runner: KafkaRunner, partition: Partition) -> None:
    """4.x's close leaves the active segment's indexes at their preallocated size, and an index loaded from a file
    counts every slot of it as an entry: the reopened active segment's offset index is full, so the next append
    rolls a new segment.  3.9 trims on close and appends to the same segment."""
    partition.start()
    size = partition.append([rec("a", "1")])["result"]["validBytes"]
    partition.ok("reopen", clean_shutdown=True)
    partition.append([rec("b", "2")])
    expected = [[0, 2 * size]] if runner.kafka == "3.9" else [[0, size], [1, size]]
    assert partition.state and partition.state["segments"] == expected


def test_a_high_watermark_read_lowers_a_mid_batch_high_watermark_on_4(runner: KafkaRunner,
                                                                         partition: Partition) -> None:
    """4.x's ``fetchHighWatermarkMetadata`` completes a high watermark known by offset only through the offset
    search that answers the batch's base offset, and stores that: a high watermark inside a batch drops to the
    batch's start on the first ``high_watermark`` read.  3.9 keeps it."""
    partition.start()
    partition.append([rec("a", "1"), rec("b", "2")])
    partition.append([rec("c", "3"), rec("d", "4")])
    assert partition.ok("update_high_watermark", offset=3) == {"highWatermark": 3}
    partition.ok("read", offset=0, max_bytes=1000, isolation="high_watermark", min_one_message=True)
    assert partition.state and partition.state["highWatermark"] == (3 if runner.kafka == "3.9" else 2)


# --- the cleaner ---------------------------------------------------------------------------------------------------


def test_clean_compacts_up_to_the_active_segment(runner: KafkaRunner, partition: Partition) -> None:
    """One cleaning up to the active segment: the cleanable range below the active segment and the last stable
    offset, the latest record of each key kept, the end offset remembered as the next first dirty offset."""
    partition.start({"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                     "segment.bytes": SMALL_SEGMENT})
    for i, key in enumerate(["a", "b", "a", "c", "a", "b", "d"]):
        partition.append([rec(key, f"{key}{i}")])
    assert partition.ok("clean") == {"endOffset": None}  # high watermark 0: nothing is stable yet
    partition.ok("update_high_watermark", offset=7)
    state = partition.state or {}
    active = state["segments"][-1][0]
    result = partition.ok("clean")
    assert active == 6 and result["endOffset"] == active
    assert (result["firstDirtyOffset"], result["firstUncleanableOffset"]) == (0, active)
    # the offset map of 0..5 keeps a@4, b@5, c@3: three records of six survive below the active segment
    assert (result["messagesRead"], result["messagesWritten"], result["invalidMessagesRead"]) == (6, 3, 0)
    assert 0 < result["bytesWritten"] < result["bytesRead"]
    log = []
    for base, _size in (partition.state or {})["segments"]:
        log += kv(MemoryRecords(partition.segment_bytes(base)))
    assert log == [(3, b"c", b"c3"), (4, b"a", b"a4"), (5, b"b", b"b5"), (6, b"d", b"d6")]
    assert partition.ok("clean") == {"endOffset": None}  # nothing dirty below the active segment any more


def test_clean_cleans_whatever_the_policy_and_the_dirty_ratio(runner: KafkaRunner, partition: Partition) -> None:
    """The contract's ``clean`` is one cleaning up to the active segment (issue 29): the cleaner thread's filters (a
    ``compact`` policy, ``min.cleanable.dirty.ratio``) do not hold it back."""
    partition.start({"min.cleanable.dirty.ratio": "0.99", "segment.bytes": SMALL_SEGMENT})
    for i in range(4):
        partition.append([rec("same", str(i))])
    partition.ok("update_high_watermark", offset=4)
    active = (partition.state or {})["segments"][-1][0]
    result = partition.ok("clean")
    assert 0 < active < 4 and result["endOffset"] == active
    assert (result["messagesRead"], result["messagesWritten"]) == (active, 1)


def test_truncation_pulls_the_cleaner_checkpoint_back(runner: KafkaRunner, partition: Partition) -> None:
    """After a truncation below the checkpoint (LogManager.truncateTo's maybeTruncateCheckpoint) the next cleaning
    starts at the new active segment, not at the old end offset."""
    partition.start({"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                     "segment.bytes": SMALL_SEGMENT})
    for i in range(6):
        partition.append([rec("k", str(i))])
    partition.ok("update_high_watermark", offset=6)
    first = partition.ok("clean")["endOffset"]
    assert first == 4
    partition.ok("truncate_to", offset=3)
    for i in range(6):
        partition.append([rec("k", str(i))])
    partition.ok("update_high_watermark", offset=9)
    again = partition.ok("clean")
    assert again["firstDirtyOffset"] == 2  # the active segment's base after the truncation, below the old 4


# --- where Kafka cannot run ------------------------------------------------------------------------------------------


def test_without_java_or_jars_the_oracle_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reasons name what is missing and how to get it."""
    with pytest.raises(OracleUnavailable, match=r"Kafka 0\.0\.0's jars are not in .*make oracle-jars"):
        kafka_jars("0.0.0")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(OracleUnavailable, match=r"no java on PATH .*JDK 17"):
        find_java()


def test_unavailable_skips_unless_the_oracle_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    """As KAFKALOG_REQUIRE_EXTENSION for the compiled core: KAFKALOG_REQUIRE_ORACLE=1 turns the skip into a failure."""
    monkeypatch.setattr(oracle_conftest, "REQUIRE_ORACLE", False)
    with pytest.raises(pytest.skip.Exception, match="run `make oracle-jars`"):
        oracle_conftest.oracle_unavailable("no jars: run `make oracle-jars`")
    monkeypatch.setattr(oracle_conftest, "REQUIRE_ORACLE", True)
    with pytest.raises(pytest.fail.Exception, match=r"KAFKALOG_REQUIRE_ORACLE is set .*no jars"):
        oracle_conftest.oracle_unavailable("no jars: run `make oracle-jars`")
