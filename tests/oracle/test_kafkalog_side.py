"""kafkalog's side of the oracle alone (no JVM): each op of the protocol applied to kafkalog's ``Log`` and cleaner
gives the answers Kafka's ``UnifiedLog`` is expected to give (``tests/oracle/kafkalog_side.py``), on both kernel
twins; and kafkalog compared with itself through the whole harness finds nothing."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog.errors import KafkaStorageError, OffsetOutOfRangeError, RecordTooLargeError
from kafkalog.log.validator import InvalidTimestampError, UnsupportedForMessageFormatError
from tests.oracle.driver import run_scenario
from tests.oracle.generator import generate
from tests.oracle.kafkalog_side import KafkalogRunner, damage_tail, kafka_class_name
from tests.oracle.scenario import canonical_op, parse_scenario

T0 = 1_700_000_000_000


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    # A reopen sets the high watermark back to the log start offset, as Kafka's constructor does: kafkalog warns.
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


def record(key: str | None, value: str | None, ts: int = T0, **headers: str) -> dict[str, Any]:
    return {"key": key, "value": value, "timestamp": ts, "headers": headers}


class Side:
    """A :class:`KafkalogRunner` with one log started in ``directory``: ``op(...)`` sends a canonical op."""

    def __init__(self, directory: Path, config: dict[str, str] | None = None) -> None:
        self.runner = KafkalogRunner()
        self.dir = directory / "topic-0"
        start = self.runner.request({"cmd": "start", "dir": str(self.dir), "config": config or {}, "time_ms": T0})
        self.state = start["state"]

    def op(self, op: dict[str, Any]) -> dict[str, Any]:
        answer = self.runner.request({"cmd": "op", "op": canonical_op(op)})
        assert "fatal" not in answer
        self.state = answer["state"]
        return answer

    def result(self, op: dict[str, Any]) -> dict[str, Any]:
        answer = self.op(op)
        assert "error" not in answer, answer["error"]
        return answer["result"]  # type: ignore[no-any-return]

    def error(self, op: dict[str, Any]) -> str:
        answer = self.op(op)
        assert "result" not in answer
        return answer["error"]["class"]  # type: ignore[no-any-return]

    def files(self) -> list[str]:
        return sorted(p.name for p in self.dir.iterdir())


@pytest.fixture
def side(scratch: Path, impl: ModuleType) -> Iterator[Any]:
    made: list[Side] = []

    def make(config: dict[str, str] | None = None) -> Side:
        made.append(Side(scratch / str(len(made)), config))
        return made[-1]

    yield make
    for one in made:
        one.runner.close()


def records_read(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    data = base64.b64decode(result["records"])
    return [(r.offset, r.key, r.value, tuple(r.headers)) for batch in MemoryRecords(data).batches()
            for r in batch.records()]


def test_start_state_is_kafkas_new_log(side: Any) -> None:
    log = side({"segment.bytes": "1024"})
    assert log.state == {"logStartOffset": 0, "logEndOffset": 0, "highWatermark": 0, "lastStableOffset": 0,
                         "firstUnstableOffset": None, "recoveryPoint": 0, "segments": [[0, 0]],
                         "activeProducers": [], "leaderEpochs": [], "timeMs": T0}
    assert log.runner.request({"cmd": "start", "dir": str(log.dir), "config": {}, "time_ms": 0}) == {
        "fatal": "start while a log is open"}
    assert log.runner.request({"cmd": "compact"}) == {"fatal": "unknown cmd 'compact'"}
    assert KafkalogRunner().request({"cmd": "op", "op": {"op": "roll"}}) == {"fatal": "no log: 'op' before start"}


def test_leader_follower_and_coordinator_appends(side: Any) -> None:
    log = side()
    first = log.op({"op": "append", "records": [record("a", "1"), record(None, None, T0 + 5, h="x")],
                    "leader_epoch": 3})
    # the bytes appended, as Kafka's builder makes them, go back in the answer
    assert MemoryRecords(base64.b64decode(first["input"])).only_batch().partition_leader_epoch == 3
    info = first["result"]
    assert (info["firstOffset"], info["lastOffset"], info["lastLeaderEpoch"], info["maxTimestamp"]) == (
        0, 1, 3, T0 + 5)
    assert (info["logStartOffset"], info["sourceCompression"], info["recordErrors"], info["leaderHwChange"]) == (
        0, "none", [], "NONE")
    assert info["validBytes"] == MemoryRecords(base64.b64decode(first["input"])).size_in_bytes()
    gzip = log.result({"op": "append", "records": [record("b", "2")], "compression": "gzip", "leader_epoch": 3})
    assert (gzip["firstOffset"], gzip["sourceCompression"]) == (2, "gzip")
    assert gzip["recordValidationStats"]["temporaryMemoryBytes"] > 0
    follower = log.result({"op": "append", "records": [record("c", "3")], "origin": "replication",
                           "leader_epoch": 4})
    assert (follower["firstOffset"], follower["lastOffset"], follower["lastLeaderEpoch"]) == (3, 3, 4)
    gap = log.result({"op": "append", "records": [record("d", "4")], "origin": "replication", "base_offset": 10,
                      "leader_epoch": 4})
    assert gap["firstOffset"] == 10
    assert log.error({"op": "append", "records": [record("e", "5")], "origin": "replication", "base_offset": 2,
                      "leader_epoch": 4}) == "UnexpectedAppendOffsetException"
    assert log.state["logEndOffset"] == 11
    assert log.state["leaderEpochs"] == [[3, 0], [4, 3]]

    read = log.result({"op": "read", "offset": 0, "max_bytes": 10_000})
    assert records_read(read) == [(0, b"a", b"1", ()), (1, None, None, (("h", b"x"),)), (2, b"b", b"2", ()),
                                  (3, b"c", b"3", ()), (10, b"d", b"4", ())]
    assert read["fetchOffsetMetadata"] == {"messageOffset": 0, "segmentBaseOffset": 0,
                                           "relativePositionInSegment": 0}
    assert (read["firstEntryIncomplete"], read["abortedTransactions"]) == (False, None)
    # Kafka's high watermark starts at the log start offset: a consumer's read sees nothing yet
    assert records_read(log.result({"op": "read", "offset": 0, "max_bytes": 10_000,
                                    "isolation": "high_watermark"})) == []
    assert log.result({"op": "update_high_watermark", "offset": 3}) == {"highWatermark": 3}
    upto_hw = log.result({"op": "read", "offset": 0, "max_bytes": 10_000, "isolation": "high_watermark"})
    assert [r[0] for r in records_read(upto_hw)] == [0, 1, 2]
    second = log.result({"op": "read", "offset": 2, "max_bytes": 10_000})["fetchOffsetMetadata"]
    assert second["relativePositionInSegment"] == info["validBytes"]


def test_transactions_markers_and_the_last_stable_offset(side: Any) -> None:
    log = side()
    producer = {"id": 7, "epoch": 1, "sequence": 0, "transactional": True}
    log.result({"op": "append", "records": [record("a", "1")]})
    log.result({"op": "append", "records": [record("b", "2"), record("c", "3")], "producer": producer})
    assert log.state["firstUnstableOffset"] == 1
    assert log.state["activeProducers"] == [[7, 1, 1, 2, 1]]
    marker = log.result({"op": "marker", "type": "abort", "producer": {"id": 7, "epoch": 1},
                         "coordinator_epoch": 2})
    assert (marker["firstOffset"], marker["lastOffset"]) == (3, 3)
    assert log.state["activeProducers"] == [[7, 1, 1, 2, None]]
    # the marker is below the log end but not the high watermark: the transaction is not stable yet
    assert (log.state["firstUnstableOffset"], log.state["lastStableOffset"]) == (1, 0)
    log.result({"op": "update_high_watermark", "offset": 4})
    assert (log.state["firstUnstableOffset"], log.state["lastStableOffset"]) == (None, 4)
    committed = log.result({"op": "read", "offset": 0, "max_bytes": 10_000, "isolation": "txn_committed"})
    assert committed["abortedTransactions"] == [{"producerId": 7, "firstOffset": 1}]
    assert log.error({"op": "marker", "type": "commit", "producer": {"id": 7, "epoch": 0}}) == \
        "InvalidProducerEpochException"
    assert log.error({"op": "append", "records": [record("d", "4")],
                      "producer": {**producer, "sequence": 5}}) == "OutOfOrderSequenceException"
    assert ".txnindex" in " ".join(log.files())


def test_errors_carry_kafkas_class_names(side: Any) -> None:
    log = side({"cleanup.policy": "compact", "max.message.bytes": "200"})
    assert log.error({"op": "append", "records": [record(None, "v")]}) == "RecordValidationException"
    assert log.error({"op": "append", "records": [record("k", "v" * 300)]}) == "RecordTooLargeException"
    log.result({"op": "append", "records": [record("k", "v")]})
    assert log.error({"op": "delete_records", "offset": 1}) == "OffsetOutOfRangeException"
    log.result({"op": "update_high_watermark", "offset": 1})
    assert log.result({"op": "delete_records", "offset": 1}) == {"incremented": True}
    assert log.result({"op": "delete_records", "offset": 1}) == {"incremented": False}
    assert log.error({"op": "read", "offset": 0, "max_bytes": 100}) == "OffsetOutOfRangeException"
    assert log.state["logStartOffset"] == 1


@pytest.mark.parametrize(("error", "name"), [
    (OffsetOutOfRangeError("x"), "OffsetOutOfRangeException"),
    (RecordTooLargeError("x"), "RecordTooLargeException"),
    (InvalidTimestampError("x"), "RecordValidationException"),
    (UnsupportedForMessageFormatError("x"), "UnsupportedForMessageFormatException"),
    (KafkaStorageError("x"), "KafkaStorageException"),
    (KeyError("x"), "KeyError"),
])
def test_kafka_class_name(error: BaseException, name: str) -> None:
    assert kafka_class_name(error) == name


def test_roll_truncate_flush_and_time(side: Any) -> None:
    log = side({"segment.bytes": "1024"})
    for key in "abc":
        log.result({"op": "append", "records": [record(key, "v")]})
    assert log.result({"op": "roll"}) == {"activeSegment": 3}
    log.result({"op": "append", "records": [record("d", "v")]})
    assert [base for base, _ in log.state["segments"]] == [0, 3]
    assert log.result({"op": "truncate_to", "offset": 5}) == {"truncated": False}
    assert log.result({"op": "truncate_to", "offset": 2}) == {"truncated": True}
    assert (log.state["logEndOffset"], [base for base, _ in log.state["segments"]]) == (2, [0])
    assert log.result({"op": "flush"}) == {"recoveryPoint": 2}
    assert log.result({"op": "truncate_fully_and_start_at", "offset": 40}) == {}
    assert (log.state["logStartOffset"], log.state["logEndOffset"], log.state["segments"]) == (40, 40, [[40, 0]])
    assert log.result({"op": "advance_time", "ms": 1500}) == {"timeMs": T0 + 1500}
    assert log.state["timeMs"] == T0 + 1500


def test_retention_and_delayed_deletion(side: Any) -> None:
    log = side({"segment.bytes": "200", "retention.bytes": "1", "file.delete.delay.ms": "1000"})
    for key in "abcdef":
        log.result({"op": "append", "records": [record(key, "value")]})
    segments = len(log.state["segments"])
    assert segments > 2
    assert log.result({"op": "retention"}) == {"deleted": 0}  # nothing below the high watermark yet
    log.result({"op": "update_high_watermark", "offset": 6})
    deleted = log.result({"op": "retention"})["deleted"]
    assert deleted == segments - 1
    assert any(name.endswith(".deleted") for name in log.files())
    log.result({"op": "advance_time", "ms": 1000})
    assert not any(name.endswith(".deleted") for name in log.files())
    assert log.state["logStartOffset"] == log.state["segments"][0][0]


def test_one_cleaning_and_the_next_from_where_it_ended(side: Any) -> None:
    log = side({"cleanup.policy": "compact", "segment.bytes": "300"})
    for i in range(6):
        log.result({"op": "append", "records": [record("k", str(i)), record(f"x{i}", "y")]})
    assert log.result({"op": "clean"}) == {"endOffset": None}  # the high watermark is still at 0
    log.result({"op": "update_high_watermark", "offset": 12})
    clean = log.result({"op": "clean"})
    active = log.state["segments"][-1][0]
    assert (clean["firstDirtyOffset"], clean["firstUncleanableOffset"], clean["endOffset"]) == (0, active, active)
    assert clean["messagesRead"] == active
    assert clean["messagesWritten"] < clean["messagesRead"]
    assert clean["invalidMessagesRead"] == 0
    assert log.result({"op": "clean"}) == {"endOffset": None}
    values = [r[2] for r in records_read(log.result({"op": "read", "offset": 0, "max_bytes": 100_000}))
              if r[1] == b"k"]
    assert values[0] != b"0"


def test_reopens_clean_and_unclean_with_a_damaged_tail(side: Any) -> None:
    log = side({"segment.bytes": "1024"})
    producer = {"id": 3, "epoch": 0, "sequence": 0}
    for i, key in enumerate("abc"):
        log.result({"op": "append", "records": [record(key, "v")], "producer": {**producer, "sequence": i}})
    before = log.state
    assert log.result({"op": "reopen", "clean_shutdown": True}) == {}
    # a clean close flushed: the recovery point is the end; the producers were snapshotted
    assert {**before, "recoveryPoint": 3} == log.state
    assert "00000000000000000003.snapshot" in log.files()
    log.result({"op": "append", "records": [record("d", "v")], "producer": {**producer, "sequence": 3}})
    log.result({"op": "reopen", "clean_shutdown": False, "truncate_bytes": 5})
    # the torn last batch is gone; the producer's last sequence is that of the batch before
    assert log.state["logEndOffset"] == 3
    assert log.state["activeProducers"] == [[3, 0, 2, 2, None]]
    log.result({"op": "reopen", "clean_shutdown": False, "corrupt_byte": 1, "recovery_point": 0})
    # the flipped last byte fails the last batch's CRC; the recovery point stays where recovery began (Kafka's
    # LogLoader keeps min(recovery point, log end offset) after an unclean shutdown)
    assert (log.state["logEndOffset"], log.state["recoveryPoint"]) == (2, 0)


def test_damage_tail(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000.log").write_bytes(b"first")
    last = tmp_path / "00000000000000000010.log"
    last.write_bytes(bytes(range(10)))
    (tmp_path / "00000000000000000020.log.deleted").write_bytes(b"gone")
    damage_tail(tmp_path, 3, 2)
    assert last.read_bytes() == bytes([0, 1, 2, 3, 4, 0xFF ^ 5, 6])
    damage_tail(tmp_path, 0, 7)
    assert last.read_bytes() == bytes([0xFF, 1, 2, 3, 4, 0xFF ^ 5, 6])
    damage_tail(tmp_path, 0, 8)  # before the start: nothing
    damage_tail(tmp_path, 100, 0)
    assert last.read_bytes() == b""
    assert (tmp_path / "00000000000000000000.log").read_bytes() == b"first"


def test_v0_and_v1_logs(side: Any) -> None:
    log = side({"message.format.version": "0.10.0"})
    converted = log.result({"op": "append", "records": [record("a", "1"), record("b", "2")],
                            "compression": "gzip"})
    assert converted["recordValidationStats"]["numRecordsConverted"] == 2
    legacy = log.result({"op": "append", "records": [record("c", "3")], "magic": 0})
    assert (legacy["firstOffset"], legacy["lastOffset"]) == (2, 2)
    batches = list(MemoryRecords(base64.b64decode(
        log.result({"op": "read", "offset": 0, "max_bytes": 10_000})["records"])).batches())
    assert [b.magic for b in batches] == [1, 1]
    assert log.error({"op": "append", "records": [record("d", "4", h="x")]}) == "IllegalArgumentException"


@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_kafkalog_against_itself_is_identical(scratch: Path, impl: ModuleType, kafka: str) -> None:
    """The harness's self-check: kafkalog compared with kafkalog, over generated scenarios of every profile, finds
    no difference (the comparison is exact where it must be, and the side is deterministic)."""
    for seed in range(7):
        with KafkalogRunner() as twin:
            outcome = run_scenario(generate(seed, kafka), scratch, kafka=twin)
        assert outcome.difference is None, outcome.report()
        assert outcome.compared == len(outcome.scenario.ops) + 2


def test_run_without_kafka_collects_kafkalogs_answers(scratch: Path, impl: ModuleType) -> None:
    scenario = parse_scenario({"kafka": "3.9", "ops": [{"op": "append", "records": [record("a", "b")]},
                                                       {"op": "roll"}]})
    outcome = run_scenario(scenario, scratch)
    assert outcome.difference is None and outcome.compared == 0
    assert [kafka for kafka, _ in outcome.answers] == [None] * 4
    assert [answer.get("result") for _, answer in outcome.answers[2:]] == [{"activeSegment": 1}, None]
    assert outcome.answers[-1][1]["state"]["recoveryPoint"] == 1
    assert not (scratch / "kafkalog").exists()


def test_end_drops_the_queued_tasks_unrun(side: Any) -> None:
    """As the Java runner does at ``end`` (and at a reopen: a restarted broker's new scheduler): the delayed
    deletion of a truncated segment's producer snapshot, queued by the log, does not run when the log is ended
    (Kafka 3.9's dir keeps the file ``.deleted``: generated seed 10 of the rolls profile).  kafkalog's close
    deletes it itself (its deliberate deviation, :mod:`kafkalog.log.pending_deletions`), which the comparison at
    ``end`` allows for (``compare_dirs(closed=True)``)."""
    log = side()
    log.result({"op": "append", "records": [record("a", "1"), record("b", "2"), record("c", "3")]})
    log.result({"op": "roll"})
    log.result({"op": "append", "records": [record("d", "4")]})
    log.result({"op": "truncate_to", "offset": 2})
    deleted = "00000000000000000003.snapshot.deleted"
    assert deleted in log.files()
    assert log.runner.request({"cmd": "end"})["state"]["logEndOffset"] == 2
    assert deleted not in log.files()
    assert not any(name.endswith(".deleted") for name in log.files())


def test_the_side_reads_the_wire_form_of_an_op(side: Any) -> None:
    """An op with its optional fields left out (``wire_op``, what the runner protocol sends) is completed with
    their defaults; one it cannot read answers ``fatal``, naming the field."""
    log = side()
    answer = log.runner.request({"cmd": "op", "op": {"op": "reopen", "clean_shutdown": False}})
    assert answer["result"] == {} and "error" not in answer
    answer = log.runner.request({"cmd": "op", "op": {"op": "read", "offset": 0}})
    assert "max_bytes" in answer["fatal"]
