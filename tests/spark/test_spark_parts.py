"""The parts of the Spark pipeline that need no Spark: the gather kernel (both twins), the Arrow export,
options, Kafka's partitioner, transactions and the log dir writer."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kafkalog import _core_py
from kafkalog.cli import main
from kafkalog.clients.partitioner import murmur2, partition_for_key, partitions_for_keys
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import KafkaLogError, KafkaStorageError, OffsetOutOfRangeError
from kafkalog.fsutil import DirLock
from kafkalog.log import Log
from kafkalog.record import MemoryRecords
from kafkalog.tools.log_dir_writer import LogDirWriter
from kafkalog.topic import TopicPartition

pytest.importorskip("pyspark", reason="kafkalog.spark needs the spark extra")
from kafkalog.spark.options import EARLIEST, LATEST, ReadOptions, SparkOptionError, parse_offsets
from kafkalog.spark.write import WriteOptions


def test_gather_slices_twins_agree(impl: Any) -> None:
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, 10_000, dtype=np.uint8).tobytes()
    positions = rng.integers(0, 9_000, 500).astype(np.int64)
    lengths = rng.integers(-1, 900, 500).astype(np.int32)
    offsets, values = impl.gather_slices(data, positions, lengths)
    want_offsets, want_values = _core_py.gather_slices(data, positions, lengths)
    assert offsets.dtype == np.int32 and values.dtype == np.uint8
    assert np.array_equal(offsets, want_offsets) and np.array_equal(values, want_values)
    for i in (0, 17, 499):
        n = max(int(lengths[i]), 0)
        assert values[offsets[i]:offsets[i + 1]].tobytes() == data[positions[i]:positions[i] + n]
    empty = impl.gather_slices(b"", np.empty(0, np.int64), np.empty(0, np.int32))
    assert list(empty[0]) == [0] and len(empty[1]) == 0
    with pytest.raises(ValueError, match="outside the 10000-byte buffer"):
        impl.gather_slices(data, np.array([9_999], np.int64), np.array([2], np.int32))
    with pytest.raises(ValueError, match="2 positions but 1 lengths"):
        impl.gather_slices(data, np.array([0, 1], np.int64), np.array([2], np.int32))


def test_arrow_export_matches_the_records(impl: Any, tmp_path: Path) -> None:
    """The Arrow batches of a consumer's columns, a range cut inside a batch: what the records hold, headers and
    nulls included, in the source's schema."""
    pytest.importorskip("pyarrow")
    from kafkalog.file_message_set import FileMessageSet
    from kafkalog.log.consumer_view import ConsumerView
    from kafkalog.spark.arrow import arrow_schema, to_arrow

    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(bytes(MemoryRecords.with_records(
        [(b"k1", b"v1", 5, [("a", b"1")]), (None, b"v2", 6), (b"k3", None, 7, [("b", None), ("c", b"")])],
        base_offset=100).buffer) + bytes(MemoryRecords.with_records([(b"z", b"zz", 9)], base_offset=103,
                                                                    compression="gzip").buffer))
    with FileMessageSet(segment, writable=False) as log:
        batches = [to_arrow(c, topic="t", partition=3, include_headers=True)
                   for c in ConsumerView(101, 104).segment_columns(log)]
    rows = [r for b in batches for r in b.to_pylist()]
    assert all(b.schema == arrow_schema(True) for b in batches)
    assert [(r["offset"], r["key"], r["value"], r["headers"]) for r in rows] == [
        (101, None, b"v2", []), (102, b"k3", None, [{"key": "b", "value": None}, {"key": "c", "value": b""}]),
        (103, b"z", b"zz", [])]
    assert {(r["topic"], r["partition"], r["timestampType"]) for r in rows} == {("t", 3, 0)}


def test_offset_options() -> None:
    assert parse_offsets("startingOffsets", "earliest", LATEST) == EARLIEST
    assert parse_offsets("x", ' {"a-b": {"0": 5, "1": -1}} ', EARLIEST) == {
        TopicPartition("a-b", 0): 5, TopicPartition("a-b", 1): LATEST}
    for bad, message in (('{"a": 5}', "must map partition"), ('{"a": {"x": 1}}', "not a partition number"),
                         ('{"a": {"0": -3}}', "must be an offset"), ("[1]", "JSON object"),
                         ("{", "must be 'earliest'")):
        with pytest.raises(SparkOptionError, match=message):
            parse_offsets("startingOffsets", bad, EARLIEST)
    with pytest.raises(SparkOptionError, match="may not be latest"):
        ReadOptions.parse({"path": "/x", "startingOffsets": "latest"})
    with pytest.raises(SparkOptionError, match=r"give one of assign, subscribe .*, not topics and topicPattern"):
        ReadOptions.parse({"path": "/x", "topics": "a", "topicPattern": "b"})
    with pytest.raises(SparkOptionError, match="no path"):
        ReadOptions.parse({})
    options = ReadOptions.parse({"PATH": "/x", "subscribePattern": "ev.*", "maxOffsetsPerTrigger": "10"},
                                streaming=True)
    assert options.starting == LATEST and options.selects("events") and not options.selects("xevents")
    assert options.max_offsets_per_trigger == 10


def test_unknown_options_are_errors_naming_them() -> None:
    # Spark hands the source lower-cased keys; the message names the option and its close matches.
    with pytest.raises(SparkOptionError, match=r"unknown option 'startingoffset' for a kafkalog read; "
                                               r"did you mean startingOffsets or startingOffsetsByTimestamp or "
                                               r"endingOffsets\?$"):
        ReadOptions.parse({"path": "/x", "startingoffset": "earliest"})
    with pytest.raises(SparkOptionError, match=r"unknown option 'topic' for a kafkalog stream; did you mean topics\?"):
        ReadOptions.parse({"path": "/x", "topic": "a"}, streaming=True)
    with pytest.raises(SparkOptionError, match=r"unknown option 'zzz' for a kafkalog read \(it takes: assign, topics,"):
        ReadOptions.parse({"path": "/x", "zzz": "1"})
    with pytest.raises(SparkOptionError, match=r"'kafka\.bootstrap\.servers' is for a Kafka broker"):
        ReadOptions.parse({"path": "/x", "kafka.bootstrap.servers": "localhost:9092"})
    with pytest.raises(SparkOptionError, match=r"unknown option 'kafka\.auto\.offset\.reset'"):
        ReadOptions.parse({"path": "/x", "kafka.auto.offset.reset": "earliest"})
    # Every documented option, in Spark's lower case or as written, and Spark's own path and paths.
    every = {"paths": '["/x"]', "topics": "a", "startingoffsets": "earliest", "endingOffsets": "latest",
             "includeheaders": "true", "kafka.isolation.level": "read_committed", "failOnDataLoss": "false",
             "checkcrcs": "false", "maxpartitionbytes": "1024", "minPartitions": "2", "maxOffsetsPerTrigger": "5"}
    assert ReadOptions.parse(every).read_committed
    assert ReadOptions.parse({"path": "/x", "subscribe": "a"}).topics == {"a"}
    assert ReadOptions.parse({"path": "/x", "subscribepattern": "a"}).topic_pattern is not None


def test_writer_options_are_checked(tmp_path: Path) -> None:
    path = str(tmp_path / "out")
    with pytest.raises(SparkOptionError, match=r"unknown option 'topik' for a kafkalog write; did you mean topic\?"):
        WriteOptions.parse({"path": path, "topik": "t"}, ["value"])
    with pytest.raises(SparkOptionError, match="bad topic config"):
        WriteOptions.parse({"path": path, "topic": "t", "segment.byte": "1"}, ["value"])
    options = WriteOptions.parse({"path": path, "topic": "t", "numpartitions": "3", "compression": "gzip",
                                  "batchbytes": "4096", "segment.bytes": "1048576"}, ["value"])
    assert options.num_partitions == 3 and options.topic_config == {"segment.bytes": "1048576"}
    # The columns a read has and a write cannot keep are ignored; any other unknown column is refused.
    WriteOptions.parse({"path": path, "topic": "t"}, ["key", "value", "offset", "timestampType", "headers"])
    with pytest.raises(SparkOptionError, match=r"unknown: \['headrs'\]"):
        WriteOptions.parse({"path": path, "topic": "t"}, ["value", "headrs"])


def test_isolation_level_defaults_to_read_uncommitted_as_in_spark() -> None:
    assert not ReadOptions.parse({"path": "/x"}).read_committed
    assert not ReadOptions.parse({"path": "/x"}, streaming=True).read_committed
    assert ReadOptions.parse({"path": "/x", "kafka.isolation.level": "READ_COMMITTED"}).read_committed



def test_a_read_past_the_log_raises_the_log_s_own_offset_out_of_range_error(tmp_path: Path) -> None:
    """The Spark read refuses offsets outside the log (``failOnDataLoss``, on by default) with the error a
    fetch from the log raises, :class:`kafkalog.errors.OffsetOutOfRangeError`, so one ``except`` catches
    both; the message names the offset, the partition, the range the log holds and the way out."""
    from kafkalog.spark.plan import plan_read

    root = tmp_path / "logs"
    with LogDirWriter(root) as writer:
        writer.log(TopicPartition("t", 0)).append(MemoryRecords.with_records([(b"k", b"v%d" % i) for i in range(5)]))
    for option, offset in (("startingOffsets", 999), ("endingOffsets", 6)):
        options = ReadOptions.parse({"path": str(root), option: json.dumps({"t": {"0": offset}})})
        with pytest.raises(OffsetOutOfRangeError) as info:
            plan_read(options)
        assert str(info.value).startswith(f"The {option[:-len('Offsets')]} offset {offset} of t-0 is out of range: "
                                          "the log holds offsets 0 to 5 (exclusive).")
        assert "set failOnDataLoss=false" in str(info.value)
    try:
        plan_read(ReadOptions.parse({"path": str(root), "startingOffsets": '{"t": {"0": 999}}'}))
    except KafkaLogError as e:  # and the package's root error, as every kafkalog error
        assert isinstance(e, OffsetOutOfRangeError)
    with Log(root / "t-0", read_only=True) as log, pytest.raises(OffsetOutOfRangeError):
        log.read(999, 1024)
    # failOnDataLoss=false clamps instead: nothing past the end to read
    assert plan_read(ReadOptions.parse({"path": str(root), "startingOffsets": '{"t": {"0": 999}}',
                                        "failOnDataLoss": "false"})) == []


def test_kafka_partitioner_vectors() -> None:
    # Kafka's UtilsTest.testMurmur2.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107
    assert partition_for_key(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    # The vectorised form gives each key what the one-key form gives, for every tail length.
    keys = [bytes(range(n % 251, n % 251 + length)) for n, length in enumerate([0, 1, 2, 3, 4, 5, 7, 8, 13] * 9)]
    assert partitions_for_keys(keys, 7).tolist() == [partition_for_key(key, 7) for key in keys]
    # keys all of one width take the path without a gather; no keys give no partitions
    for length in (0, 1, 3, 4, 9):
        same = [bytes((n + i) % 256 for i in range(length)) for n in range(40)]
        assert partitions_for_keys(same, 5).tolist() == [partition_for_key(key, 5) for key in same]
    assert partitions_for_keys([], 3).tolist() == []


def test_log_dir_writer_owns_the_dir_and_checkpoints(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    with LogDirWriter(root, LogConfig({"segment.bytes": "1024"})) as writer:
        for i in range(20):
            writer.log(TopicPartition("t", 1)).append(MemoryRecords.with_records([(b"k", b"v%d" % i)]))
        with pytest.raises(KafkaStorageError, match="Failed to acquire lock"):
            DirLock(root)
    assert "t 1 20" in (root / "recovery-point-offset-checkpoint").read_text()
    (root / ".kafka_cleanshutdown").touch()
    try:
        with LogDirWriter(root) as writer:
            writer.log(TopicPartition("t", 1)).append(MemoryRecords.with_records([(b"k", b"more")]))
            assert not (root / ".kafka_cleanshutdown").exists()  # a crash now must recover
            raise RuntimeError("the job failed")
    except RuntimeError:
        pass
    assert not (root / ".kafka_cleanshutdown").exists()
    with Log(root / "t-1", read_only=True) as log:
        assert log.log_end_offset == 21


def test_clean_keeps_the_cleaner_checkpoints_of_other_partitions(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    with LogDirWriter(root, LogConfig({"segment.bytes": "1024"})) as writer:
        for tp in (TopicPartition("a", 0), TopicPartition("b", 0)):
            for i in range(60):
                writer.log(tp).append(MemoryRecords.with_records([(b"k%d" % (i % 3), b"v%d" % i)]))
    for name in ("a-0", "b-0"):
        assert main(["--no-progress", "clean", "--config", "cleanup.policy=compact", str(root / name)],
                    stdout=io.StringIO(), stderr=io.StringIO()) == 0
    checkpoint = (root / "cleaner-offset-checkpoint").read_text().split("\n")
    assert any(line.startswith("a 0 ") for line in checkpoint) and any(line.startswith("b 0 ") for line in checkpoint)


def test_import_without_pyspark_says_to_install_the_extra() -> None:
    # A child interpreter where pyspark cannot be imported (None in sys.modules makes an import fail).
    code = """
import sys
sys.modules["pyspark"] = None
try:
    import kafkalog.spark
except ImportError as e:
    print(e)
    print(type(e.__cause__).__name__, e.__cause__)
else:
    print("imported")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    message, cause = done.stdout.splitlines()
    assert "pip install 'kafkalog[spark]'" in message
    assert cause.startswith("ModuleNotFoundError") and "pyspark" in cause


def test_the_driver_s_stderr_is_forwarded_without_the_incubator_warning(capfd: pytest.CaptureFixture[str]) -> None:
    """kafkalog.spark.quiet: every line the JVM writes reaches stderr as it was, in order, a last line without
    its newline included, except the JDK's incubator-module warning, which no setting turns off."""
    import os
    import threading

    from kafkalog.spark.quiet import _forward_stderr

    read_end, write_end = os.pipe()
    forward = threading.Thread(target=_forward_stderr, args=(read_end,))
    forward.start()
    for piece in (b"WARNING: Using incubator modules: jdk.incubator.vector\n26/11/25 WARN Some", b"thing: real\n",
                  b"x" * 70000 + b"\n", b"last, no newline"):
        os.write(write_end, piece)
    os.close(write_end)
    forward.join(timeout=10)
    assert not forward.is_alive()
    assert capfd.readouterr().err == "26/11/25 WARN Something: real\n" + "x" * 70000 + "\nlast, no newline"


def test_a_read_uncommitted_plan_reads_no_transactions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``read_uncommitted`` plan needs neither the aborted transactions nor the last stable offset (control
    batches are hidden by their own header in the task), so it reads no transactions, and asking its facts for
    the last stable offset is an error, not a guess.  A ``read_committed`` plan of a dir with a producer snapshot
    reads its ``.txnindex`` and the snapshot (the log was closed, so no batch lies past the snapshot); of a dir
    with none, every batch header."""
    from kafkalog.errors import IllegalStateError
    from kafkalog.log import transactions
    from kafkalog.partition_view.facts import partition_facts
    from kafkalog.spark.plan import plan_read
    from tests.support.log_test_utils import append_transaction_sample

    with Log(tmp_path / "t-0", LogConfig({})) as log:
        append_transaction_sample(log)
        end = log.log_end_offset
    scans: list[int] = []
    real = transactions.producer_batches
    monkeypatch.setattr(transactions, "producer_batches",
                        lambda *a, **k: scans.append(1) or real(*a, **k))
    uncommitted = plan_read(ReadOptions.parse({"path": str(tmp_path)}))
    assert scans == [] and uncommitted[0].view.transactions.aborted == ()
    facts = partition_facts(tmp_path / "t-0", read_committed=False)
    assert facts.transactions is None and facts.log_end_offset == end
    with pytest.raises(IllegalStateError, match="did not read its transactions"):
        _ = facts.last_stable_offset
    committed = plan_read(ReadOptions.parse({"path": str(tmp_path), "kafka.isolation.level": "read_committed"}))
    assert scans == [] and [t.producer_id for t in committed[0].view.transactions.aborted] == [7]
    assert committed[0].view.end_offset == 5  # producer 9's transaction is open since 5
    for snapshot in (tmp_path / "t-0").glob("*.snapshot"):
        snapshot.unlink()
    from_headers = plan_read(ReadOptions.parse({"path": str(tmp_path), "kafka.isolation.level": "read_committed"}))
    assert scans and from_headers[0].view == committed[0].view
