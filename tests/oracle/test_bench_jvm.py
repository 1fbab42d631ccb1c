"""The benchmarks' Kafka side (:mod:`kafkalog.bench.kafka_jvm`, issue 32): it finds a JDK and Kafka's jars or says
why not, compiles ``KafkaLogBench.java`` once, and what Kafka computes on the JVM agrees with kafkalog on the same
data.  kafkalog's own tooling, no Kafka test: the benchmarks measure speed, these check the harness is right.

Speed is never asserted here: each command runs one warm-up and two timed rounds of a small piece of work, and the
test reads the checks and the shape of the timings.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pytest

from kafkalog import MemoryRecords
from kafkalog.bench import kafka_jvm
from kafkalog.bench.test_bench_kafka_clean import clean_once, write_txn_log
from kafkalog.config import LogConfig
from kafkalog.index import OffsetIndex
from kafkalog.log import Log
from kafkalog.scheduler import MockTime
from tests.oracle.conftest import oracle_unavailable


@pytest.fixture(scope="module")
def kafka() -> kafka_jvm.KafkaJvm:
    found = kafka_jvm.find()
    if isinstance(found, str):
        oracle_unavailable(found)
    return found


def _batches(codec: str, count: int) -> list[bytes]:
    rng = random.Random(32)
    return [bytes(MemoryRecords.with_records([(f"k{b}-{i}".encode(), rng.randbytes(20), 1_700_000_000_000 + i)
                                              for i in range(10)], compression=codec).buffer) for b in range(count)]


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_kafka_appends_what_kafkalog_builds(kafka: kafka_jvm.KafkaJvm, tmp_path: Path, codec: str) -> None:
    batches = _batches(codec, 30)
    (tmp_path / "batches").write_bytes(b"".join(batches))
    result = kafka.run("append", tmp_path / "batches", tmp_path / "work", 1, 1, 2, timeout=300)
    assert result["check"] == {"log_end_offset": 300, "size": sum(map(len, batches))}
    assert len(result["rounds_s"]) == 2 and all(s > 0 for s in result["rounds_s"])
    assert not any((tmp_path / "work").iterdir())  # each round's log is removed


def test_kafka_reads_a_log_kafkalog_wrote(kafka: kafka_jvm.KafkaJvm, tmp_path: Path) -> None:
    mock = MockTime()
    directory = tmp_path / "written" / "bench-0"
    log = Log(directory, LogConfig({"segment.bytes": 4096}), scheduler=mock.scheduler, time=mock)
    for batch in _batches("lz4", 40):
        log.append(MemoryRecords(bytearray(batch)))
    expected = sum(r.offset + r.timestamp + len(r.headers) + len(r.key) + len(r.value) for r in log.records())
    assert log.number_of_segments > 3
    log.close()
    result = kafka.run("read", directory, 1000, 1, 2, timeout=300)
    assert result["check"] == {"records": 400, "digest": expected}


def test_kafka_looks_up_the_entries_kafkalog_finds(kafka: kafka_jvm.KafkaJvm, tmp_path: Path) -> None:
    path = tmp_path / f"{500:020d}.index"
    entries = np.zeros(1000, dtype=[("relative", ">i4"), ("position", ">i4")])
    entries["relative"] = np.arange(1000) * 3
    entries["position"] = np.arange(1000) * 100
    path.write_bytes(entries.tobytes())
    targets = [480, 500, 501, 502, 503, 2000, 3496, 3497, 10_000]
    index = OffsetIndex(path, 500, writable=False)
    try:
        expected = sum(found.offset + found.position for found in map(index.lookup, targets))
    finally:
        index.close()
    (tmp_path / "targets").write_bytes(struct.pack(f">{len(targets)}q", *targets))
    result = kafka.run("lookup", path, 500, tmp_path / "targets", 1, 2, timeout=300)
    assert result["check"] == {"lookups": len(targets), "digest": expected}


def test_kafka_cleans_as_kafkalog_cleans(kafka: kafka_jvm.KafkaJvm, tmp_path: Path) -> None:
    """The clean row's log in small (40 batches of 16 records, 300 keys, 64 KiB segments): Kafka's Cleaner and
    kafkalog's read, write and keep the same, tombstones, a commit and an abort among them."""
    txn_log = write_txn_log(tmp_path / "saved" / "small-0", batches=40, keys=300, segment_bytes=64 << 10, seed=1)
    assert (txn_log.tombstones > 0, txn_log.commits > 0, txn_log.aborts > 0) == (True, True, True)
    assert len(txn_log.dirty.dirty_files) > 3
    expected = clean_once(txn_log, tmp_path / "kafkalog")
    # every batch read, the records of the aborted ones dropped unread
    assert expected["bytes_read"] == txn_log.dirty.dirty_bytes
    assert expected["messages_written"] < expected["messages_read"] < txn_log.dirty.records
    assert expected["tombstones"] > 0
    assert expected["control_batches"] == txn_log.commits + txn_log.aborts
    result = kafka.run("clean", txn_log.dir, 64 << 10, tmp_path / "work", 1, 2, timeout=300)
    assert result["check"] == expected
    assert len(result["rounds_s"]) == 2 and all(s > 0 for s in result["rounds_s"])
    assert not any((tmp_path / "work").iterdir())  # each round's copy is removed


def test_a_failing_command_says_what_the_jvm_said(kafka: kafka_jvm.KafkaJvm, tmp_path: Path) -> None:
    with pytest.raises(kafka_jvm.KafkaJvmError, match=r"NoSuchFileException|exited 1"):
        kafka.run("append", tmp_path / "missing", tmp_path / "work", 0, 1, 1, timeout=300)


def test_without_java_the_rows_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    found = kafka_jvm.find()
    assert found == "Kafka's JVM rows cannot run: no java on PATH (nor in JAVA_HOME): a JDK 17 or newer is needed"


def test_without_the_jars_the_rows_say_where_they_looked(kafka: kafka_jvm.KafkaJvm, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALOG_KAFKA_LIB", str(tmp_path / "no-jars"))
    found = kafka_jvm.find()
    assert isinstance(found, str)
    assert found.startswith(f"Kafka's JVM rows need Kafka {kafka_jvm.KAFKA_VERSION}'s jars (make oracle-jars")
    assert str(tmp_path / "no-jars") in found
