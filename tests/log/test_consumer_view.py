"""The reader contract: deep reads check CRCs, records say what they are, and ``Log.records()`` is the consumer's
view, the same one the Spark source reads through (kafkalog.log.consumer_view).

Kafka's consumer is the model (3.8.0 ``CompletedFetch.nextFetchedRecord``): with ``check.crcs=true`` every batch
fetched is checked, control batches are never returned, and a ``read_committed`` consumer skips aborted
transactions and stops at the last stable offset; ``ConsumerRecord`` carries the timestamp type.
"""

from __future__ import annotations

import gc
import gzip
import pickle
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import _impl
from kafkalog.cli import main as cli_main
from kafkalog.errors import CorruptRecordError, OffsetOutOfRangeError
from kafkalog.file_message_set import FileMessageSet
from kafkalog.log import Log
from kafkalog.log.consumer_view import ConsumerView, IsolationLevel
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords, TimestampType
from kafkalog.record.legacy import legacy_entry
from tests.support.golden_data import VOLODYMYRZEE
from tests.support.log_test_utils import LogFactory, append_transaction_sample

FIRST_TOPIC = f"{VOLODYMYRZEE}/first_topic-2"  # v2, 16 uncompressed batches, 18 records


def value_position(data: bytes, batch_index: int) -> int:
    """Where the first record's value of the ``batch_index``-th batch of ``data`` starts."""
    records = MemoryRecords(data)
    row = records.scan(check_crc=False).batches[batch_index]
    (columns,) = records.record_columns()
    first = int(columns.starts[batch_index])
    position = int(columns.records["value_pos"][first])
    assert int(row["position"]) < position < int(row["position"]) + int(row["size"])
    return position


def corrupt_copy(golden: Path, tmp_path: Path, batch_index: int = 8) -> tuple[Path, int, list[Any]]:
    """A copy of first_topic-2 with one byte of a record's value flipped in batch ``batch_index``: the dir,
    the bad batch's position, and every record as the broker wrote it."""
    directory = tmp_path / "first_topic-2"
    shutil.copytree(golden / FIRST_TOPIC, directory)
    segment = directory / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    original = list(MemoryRecords(bytes(data)).records())
    at = value_position(bytes(data), batch_index)
    data[at] ^= 0x20
    segment.write_bytes(bytes(data))
    bad = int(MemoryRecords(bytes(data)).scan(check_crc=False).batches[batch_index]["position"])
    return directory, bad, original


def test_every_deep_read_checks_crcs(impl: ModuleType, golden: Path, tmp_path: Path) -> None:
    directory, bad, original = corrupt_copy(golden, tmp_path)
    assert len(original) == 18
    segment = directory / "00000000000000000000.log"
    data = segment.read_bytes()
    before = [r for r in original if r.offset < original[8].offset]

    def read(records: Any) -> tuple[list[Any], CorruptRecordError]:
        seen = []
        with pytest.raises(CorruptRecordError) as info:
            for record in records:
                seen.append(record)
        return seen, info.value

    # In memory: the position in the buffer, Kafka's message with both CRCs.
    seen, error = read(MemoryRecords(data).records())
    assert seen == before
    assert error.position == bad and error.path is None
    assert "Record is corrupt (stored crc = " in str(error) and "computed crc = " in str(error)
    columns, error = read(MemoryRecords(data).record_columns())
    assert [int(o) for c in columns for o in c.records["offset"]] == [r.offset for r in before]
    assert error.position == bad

    # From the file, and through the log: the file is named too.
    with FileMessageSet(segment, writable=False) as file:
        seen, error = read(file.records())
    assert seen == before
    assert (error.position, error.path) == (bad, str(segment))
    assert str(segment) in str(error) and f"at position {bad}" in str(error)
    with Log(directory, read_only=True) as log:
        seen, error = read(log.records())
        assert seen == before
        assert (error.position, error.path) == (bad, str(segment))

        # Forensic reads see every record, the flipped byte included.
        forensic = list(log.records(check_crcs=False))
    assert [r.offset for r in forensic] == [r.offset for r in original]
    changed = [(a.value, b.value) for a, b in zip(original, forensic, strict=True) if a.value != b.value]
    assert len(changed) == 1
    with FileMessageSet(segment, writable=False) as file:
        assert len(list(file.records(check_crcs=False))) == 18
    assert sum(len(c) for c in MemoryRecords(data).record_columns(check_crcs=False)) == 18


def test_dump_still_shows_the_bad_batch(golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The forensic tool keeps printing what it finds: ``isvalid: false`` for the bad batch, records and all."""
    directory, bad, _original = corrupt_copy(golden, tmp_path)
    arguments = ["dump", "--files", "", "--deep-iteration", "--print-data-log"]
    arguments[2] = str(golden / FIRST_TOPIC / "00000000000000000000.log")
    cli_main(arguments)
    clean = capsys.readouterr().out
    arguments[2] = str(directory / "00000000000000000000.log")
    cli_main(arguments)
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "isvalid:" in line]
    assert len(lines) == 16
    assert [line for line in lines if "isvalid: false" in line] == [line for line in lines
                                                                    if f"position: {bad} " in line]
    assert out.count("| offset: ") == clean.count("| offset: ") == 18


def wrapper_with_bad_inner_crc() -> tuple[bytes, int]:
    """A v1 gzip wrapper of three messages whose second inner message has a flipped value byte; the wrapper's
    own CRC is right.  Returns the bytes and the position of the wrapper (0)."""
    inner = [legacy_entry(i, 1, 0, 1_000 + i, b"k%d" % i, b"value-%d" % i) for i in range(3)]
    corrupt = bytearray(inner[1])
    corrupt[-1] ^= 0x01
    payload = gzip.compress(inner[0] + bytes(corrupt) + inner[2])
    return legacy_entry(2, 1, 1, 1_002, None, payload), 0


def test_legacy_inner_messages_are_checked(impl: ModuleType) -> None:
    """Kafka's consumer runs ``LegacyRecord.ensureValid`` on every legacy record: an inner message of a wrapper
    with a bad CRC fails the deep read though the wrapper's own CRC is right."""
    data, position = wrapper_with_bad_inner_crc()
    records = MemoryRecords(data)
    (batch,) = records.batches()
    assert batch.is_valid()
    assert batch.record_validity() == [True, False, True]
    for read in (lambda: list(records.records()), lambda: list(records.record_columns()), batch.records,
                 batch.record_columns):
        with pytest.raises(CorruptRecordError) as info:
            read()
        assert info.value.position == position
        assert "inner message 1" in str(info.value)
    assert [r.value for r in records.records(check_crcs=False)] == [b"value-0", b"value-0", b"value-2"]


def test_records_say_their_timestamp_type_and_control(impl: ModuleType) -> None:
    v0 = MemoryRecords.with_records([(b"k", b"v")], magic=0)
    v1 = MemoryRecords.with_records([(b"k", b"v", 5)], magic=1)
    v1_append = MemoryRecords.with_records([(b"k", b"v", 5), (b"k2", b"v2", 6)], magic=1, compression="gzip",
                                           timestamp_type="LogAppendTime", log_append_time=77)
    v2 = MemoryRecords.with_records([(b"k", b"v", 5)], compression="lz4")
    v2_append = MemoryRecords.with_records([(b"k", b"v", 5)], timestamp_type="LogAppendTime", log_append_time=77)
    commit = MemoryRecords.with_end_transaction_marker(4, 0, EndTransactionMarker(ControlRecordType.COMMIT, 3),
                                                       timestamp=9)
    expected = [(v0, TimestampType.NO_TIMESTAMP_TYPE, -1), (v1, TimestampType.CREATE_TIME, 5),
                (v1_append, TimestampType.LOG_APPEND_TIME, 77), (v2, TimestampType.CREATE_TIME, 5),
                (v2_append, TimestampType.LOG_APPEND_TIME, 77), (commit, TimestampType.CREATE_TIME, 9)]
    for records, timestamp_type, timestamp in expected:
        got = list(records.records())
        for record in got:
            assert record.timestamp_type is timestamp_type
            assert str(record.timestamp_type) == timestamp_type.kafka_name
            assert record.timestamp == timestamp
            assert record.is_control is (records is commit)
        # The same from a batch, for every batch kind.
        assert [r.timestamp_type for b in records.batches() for r in b.records()] == [timestamp_type] * len(got)
    (marker,) = commit.records()
    assert marker.control_type is ControlRecordType.COMMIT
    assert EndTransactionMarker.deserialize(marker.key, marker.value).coordinator_epoch == 3
    assert "is_control=True" in repr(marker)
    (data,) = v2.records()
    assert data.control_type is None
    # The facts survive pickling and do not take part in equality (they describe the batch, not the record).
    for record in (marker, data, *v0.records(), *v1_append.records()):
        copy = pickle.loads(pickle.dumps(record))
        assert copy == record
        assert (copy.timestamp_type, copy.is_control) == (record.timestamp_type, record.is_control)
    assert impl.Record(0, 5, b"k", b"v") == data
    assert impl.Record(0, 5, b"k", b"v").timestamp_type is TimestampType.CREATE_TIME


def test_both_twins_give_the_same_facts() -> None:
    commit = MemoryRecords.with_end_transaction_marker(4, 0, EndTransactionMarker(ControlRecordType.ABORT, 3),
                                                       timestamp=9)
    buf = bytes(commit.buffer) + bytes(MemoryRecords.with_records(
        [(b"k", b"v", 5)], timestamp_type="LogAppendTime", log_append_time=77, base_offset=1).buffer)
    facts = {}
    for name in _impl.both():
        with _impl.using(name):
            facts[name] = [(r.offset, r.timestamp, r.timestamp_type, r.is_control, r.control_type)
                           for r in MemoryRecords(buf).records()]
    assert len(set(map(tuple, facts.values()))) == 1
    assert facts["python"] == [(0, 9, TimestampType.CREATE_TIME, True, ControlRecordType.ABORT),
                               (1, 77, TimestampType.LOG_APPEND_TIME, False, None)]


def _written(magic: int, codec: str, base: int) -> tuple[bytes, list[tuple[Any, ...]]]:
    """Five records in one batch (or message set) of ``magic`` and ``codec`` from offset ``base`` (v2: with
    headers on some, null keys and values), and what a reader must give for them."""
    rows: list[tuple[Any, ...]] = []
    for i in range(5):
        key = None if i == 1 else b"key-%d" % (base + i)
        value = None if i == 3 else bytes([i]) * (10 * i)
        headers = [("h", b"x"), ("empty", None)] if magic == 2 and i % 2 == 0 else []
        rows.append((key, value, 1_700_000_000_000 + base + i, headers))
    records = MemoryRecords.with_records(rows if magic == 2 else [r[:3] for r in rows], magic=magic,
                                         compression=codec, base_offset=base)
    expected = [(base + i, -1 if magic == 0 else ts, key, value, headers)
                for i, (key, value, ts, headers) in enumerate(rows)]
    return bytes(records.buffer), expected


def test_records_of_every_codec_and_magic_are_the_same_on_both_twins(create_log: LogFactory) -> None:
    """What a reader is given, for every codec at every magic, is the same on both twins and is what was
    written (``MemoryRecords.records()``: the decode of a fetch), and so is ``Log.records()`` over v2 batches of
    every codec.  A record's headers list is its own (a change to it is kept); the compiled twin's lists, and the
    pairs in them, are out of the cycle collector's bookkeeping (issue 32: a reader asking every record for its
    headers otherwise set off a collection every few hundred records)."""
    codecs = {0: ["none", "gzip", "snappy", "lz4"], 1: ["none", "gzip", "snappy", "lz4"],
              2: ["none", "gzip", "snappy", "lz4", "zstd"]}
    parts, expected = [], []
    for magic, names in codecs.items():
        for codec in names:
            data, rows = _written(magic, codec, len(expected))
            parts.append(data)
            expected += rows
    buffer = b"".join(parts)
    log = create_log()
    v2_expected = []
    for codec in codecs[2]:
        data, rows = _written(2, codec, 0)  # a producer's batch: the log gives it its offsets
        first_offset = log.log_end_offset
        log.append(MemoryRecords(data))
        v2_expected += [(first_offset + offset, *rest) for offset, *rest in rows]
    read: dict[str, tuple[list[Any], list[Any]]] = {}
    for name in _impl.both():
        with _impl.using(name):
            records, from_log = list(MemoryRecords(buffer).records()), list(log.records())
        assert [r.as_tuple() for r in records] == expected, name
        assert [r.as_tuple() for r in from_log] == v2_expected, name
        if name == "cython":
            for r in records + from_log:
                assert not gc.is_tracked(r.headers)
                assert not any(gc.is_tracked(pair) for pair in r.headers)
        read[name] = records, from_log
        first = from_log[1]
        first.headers.append(("added", b"kept"))
        assert first.headers[-1] == ("added", b"kept") and first.headers is first.headers
    if len(read) == 2:
        assert read["python"][0] == read["cython"][0]
        assert read["python"][1] == read["cython"][1]


# -------------------------------------------------------------------------------------------------------------
# Log.records(): the consumer's view


def transactional_log(create_log: LogFactory) -> Log:
    """A log of ``append_transaction_sample``: data, aborted, committed and open transactions, LSO 5."""
    log = create_log()
    append_transaction_sample(log)
    return log


def test_log_records_leave_out_control_records(create_log: LogFactory) -> None:
    log = transactional_log(create_log)
    # The raw read keeps the markers, each saying what it is.
    raw = [r for segment in log.log_segments() for r in segment.log.records()]
    assert [(r.offset, r.control_type) for r in raw if r.is_control] == [(2, ControlRecordType.ABORT),
                                                                          (4, ControlRecordType.COMMIT)]
    uncommitted = list(log.records())
    assert [r.value for r in uncommitted] == [b"plain", b"aborted", b"committed", b"open", b"after the open one"]
    assert [r.offset for r in uncommitted] == [0, 1, 3, 5, 6]
    assert not any(r.is_control for r in uncommitted)


def test_log_records_read_committed(create_log: LogFactory) -> None:
    log = transactional_log(create_log)
    committed = list(log.records(isolation="read_committed"))
    # No aborted record, and nothing at or past the last stable offset (5: the open transaction's first offset).
    assert [(r.offset, r.value) for r in committed] == [(0, b"plain"), (3, b"committed")]
    assert list(log.records(3, isolation=IsolationLevel.READ_COMMITTED)) == committed[1:]
    view = ConsumerView.of(log, isolation="read_committed")
    assert (view.start_offset, view.end_offset, view.read_committed) == (0, 5, True)
    with pytest.raises(ValueError, match="isolation level"):
        log.records(isolation="serializable")


def test_log_records_stop_at_the_high_watermark(create_log: LogFactory) -> None:
    log = create_log()
    for i in range(10):
        log.append(MemoryRecords.with_records([(None, b"%d" % i, i)]))
    assert [r.offset for r in log.records()] == list(range(10))
    log.high_watermark = 6
    assert [r.offset for r in log.records()] == list(range(6))
    assert [r.offset for r in log.records(2, 4)] == [2, 3]
    assert [r.offset for r in log.records(4, 100)] == [4, 5]
    assert list(log.records(6)) == []
    log.high_watermark = None
    assert [r.offset for r in log.records(8)] == [8, 9]
    with pytest.raises(OffsetOutOfRangeError):
        log.records(11)
    log.maybe_increment_log_start_offset(3)
    with pytest.raises(OffsetOutOfRangeError):
        log.records(2)
    assert next(iter(log.records())).offset == 3


def test_log_records_start_inside_a_compressed_batch(create_log: LogFactory) -> None:
    log = create_log()
    log.append(MemoryRecords.with_records([(None, b"%d" % i, i) for i in range(5)], compression="gzip"))
    log.append(MemoryRecords.with_records([(None, b"%d" % i, i) for i in range(5, 8)]))
    assert [r.offset for r in log.records(3)] == [3, 4, 5, 6, 7]
    assert [r.offset for r in log.records(2, 6)] == [2, 3, 4, 5]


def test_log_records_across_segments(create_log: LogFactory) -> None:
    from kafkalog.config.log_config import LogConfig

    log = create_log(LogConfig({"segment.bytes": 300}))
    for i in range(40):
        log.append(MemoryRecords.with_records([(b"k", b"value-%d" % i, i)]))
    assert log.number_of_segments > 5
    assert [r.value for r in log.records()] == [b"value-%d" % i for i in range(40)]
    assert [r.offset for r in log.records(17, 23)] == list(range(17, 23))


def test_records_in_range_is_the_consumers_offset_test(impl: ModuleType) -> None:
    """The kernel ``Log.records()`` cuts each decoded run with: below the start left out, the first at or past
    the end ends the run whatever follows (offsets out of order are taken one by one, as the consumer does)."""
    def run(*offsets: int) -> list[Any]:
        return [impl.Record(o, o, b"k", b"v") for o in offsets]

    def expected(records: list[Any], start: int, end: int) -> tuple[list[int], bool]:
        kept = []
        for r in records:
            if r.offset >= end:
                return kept, True
            if r.offset >= start:
                kept.append(r.offset)
        return kept, False

    cases = [run(5, 6, 7), run(1, 2, 3, 4, 5, 6, 7, 8), run(), run(9, 3, 6, 12, 6), run(6, 5, 4), run(10, 11)]
    for records in cases:
        for start, end in [(0, 100), (5, 8), (3, 7), (6, 6), (7, 12), (-1, 4), (12, 13)]:
            kept, ended = impl.records_in_range(records, start, end)
            assert ([r.offset for r in kept], ended) == expected(records, start, end)
    all_in = run(5, 6, 7)
    assert impl.records_in_range(all_in, 5, 8)[0] == all_in
    # Legacy batches hand out their own record objects: anything with an offset.
    legacy = [LegacyLike(o) for o in (3, 4, 5)]
    assert impl.records_in_range(legacy, 4, 5) == ([legacy[1]], True)


class LegacyLike:
    def __init__(self, offset: int) -> None:
        self.offset = offset


def test_log_records_cut_runs_at_both_ends(impl: ModuleType, create_log: LogFactory) -> None:
    """Ranges starting and ending inside runs of uncompressed batches (one kernel call each), inside
    compressed batches and at batch edges, against the records read whole."""
    log = create_log()
    for b in range(12):
        log.append(MemoryRecords.with_records([(None, b"%d" % (b * 10 + i), i) for i in range(10)],
                                              compression="gzip" if b % 4 == 3 else "none"))
    every = [(r.offset, r.value) for r in log.records()]
    assert [o for o, _v in every] == list(range(120))
    for start, end in [(0, 120), (3, 117), (10, 20), (29, 31), (35, 36), (0, 1), (119, 120), (55, 200)]:
        assert [(r.offset, r.value) for r in log.records(start, end)] == every[start:min(end, 120)]


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_spark_tasks_read_what_log_records_gives(create_log: LogFactory, isolation: str) -> None:
    """One consumer's view for both readers: the Spark source's tasks (run here without Spark) return exactly
    the records ``Log.records()`` gives, for both isolation levels."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark", reason="kafkalog.spark needs the spark extra")
    from kafkalog.spark.options import ReadOptions
    from kafkalog.spark.plan import plan_read

    log = transactional_log(create_log)
    log.flush()
    expected = [(r.offset, r.key, r.value) for r in log.records(isolation=isolation)]
    options = ReadOptions.parse({"path": str(log.dir), "kafka.isolation.level": isolation})
    got = []
    for task in plan_read(options):
        for batch in task.read():
            columns = batch.to_pydict()
            got += zip(columns["offset"], columns["key"], columns["value"], strict=True)
    assert got == expected


def test_spark_task_names_the_corrupt_file(golden: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark", reason="kafkalog.spark needs the spark extra")
    from kafkalog.spark.options import ReadOptions
    from kafkalog.spark.plan import plan_read

    directory, bad, _original = corrupt_copy(golden, tmp_path)
    (task,) = plan_read(ReadOptions.parse({"path": str(directory)}))
    with pytest.raises(CorruptRecordError) as info:
        for _batch in task.read():
            pass
    assert (info.value.position, info.value.path) == (bad, str(directory / "00000000000000000000.log"))
    assert "kafkalog verify" in str(info.value)
    (lenient,) = plan_read(ReadOptions.parse({"path": str(directory), "checkCrcs": "false"}))
    assert sum(b.num_rows for b in lenient.read()) == 18


def _spark_rows(options: dict[str, str]) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every row the Spark source's tasks (run without Spark) read with ``options``: (offset, key, value)."""
    from kafkalog.spark.options import ReadOptions
    from kafkalog.spark.plan import plan_read

    got: list[tuple[int, bytes | None, bytes | None]] = []
    for task in plan_read(ReadOptions.parse(options)):
        for batch in task.read():
            columns = batch.to_pydict()
            got += zip(columns["offset"], columns["key"], columns["value"], strict=True)
    return got


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_spark_tasks_read_each_chunk_in_one_pass(impl: ModuleType, create_log: LogFactory,
                                                 monkeypatch: pytest.MonkeyPatch, isolation: str) -> None:
    """A task reads as ``Log.record_columns()`` does: the chunk's framing is scanned once (with
    ``checkCrcs=false`` no other scan runs), and the decode kernel is handed only the batches the consumer is
    given, never a transaction marker nor, under ``read_committed``, an aborted batch or one past the last stable
    offset."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark", reason="kafkalog.spark needs the spark extra")
    from kafkalog.spark.options import ReadOptions
    from kafkalog.spark.plan import plan_read

    log = transactional_log(create_log)
    log.flush()
    expected = [(r.offset, r.key, r.value) for r in log.records(isolation=isolation)]
    (task,) = plan_read(ReadOptions.parse({"path": str(log.dir), "kafka.isolation.level": isolation,
                                           "checkCrcs": "false"}))
    decoded: list[int] = []
    scans: list[bool] = []
    decode, scan = impl.decode_v2_batches, impl.scan_batches

    def decode_spy(buf: Any, rows: Any) -> Any:
        decoded.extend(int(o) for o in rows["base_offset"])
        return decode(buf, rows)

    def scan_spy(buf: Any, *args: Any) -> Any:
        scans.append(bool(args[2]) if len(args) > 2 else False)
        return scan(buf, *args)

    monkeypatch.setattr(impl, "decode_v2_batches", decode_spy)
    monkeypatch.setattr(impl, "scan_batches", scan_spy)
    got = []
    for batch in task.read():
        columns = batch.to_pydict()
        got += zip(columns["offset"], columns["key"], columns["value"], strict=True)
    assert got == expected
    # Batches 2 and 4 are the ABORT and COMMIT markers, 1 the aborted batch, 5 the open transaction (LSO 5).
    assert decoded == ([0, 3] if isolation == "read_committed" else [0, 1, 3, 5, 6])
    assert len(scans) == 1


def test_spark_tasks_cut_the_range_inside_batches(create_log: LogFactory) -> None:
    """Starting and ending offsets inside uncompressed runs and inside compressed batches: the tasks' rows are
    ``Log.records(start, end)``'s."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark", reason="kafkalog.spark needs the spark extra")
    log = create_log()
    for b in range(12):
        log.append(MemoryRecords.with_records([(b"k%d" % b, b"%d" % (b * 10 + i), i) for i in range(10)],
                                              compression="gzip" if b % 4 == 3 else "none"))
    log.flush()
    topic, partition = log.topic_partition.topic, str(log.topic_partition.partition)
    for start, end in [(0, 120), (3, 117), (10, 20), (29, 31), (35, 36), (119, 120), (55, 90)]:
        options = {"path": str(log.dir), "startingOffsets": f'{{"{topic}": {{"{partition}": {start}}}}}',
                   "endingOffsets": f'{{"{topic}": {{"{partition}": {end}}}}}'}
        assert _spark_rows(options) == [(r.offset, r.key, r.value) for r in log.records(start, end)], (start, end)


def test_spark_task_names_the_file_of_corrupt_framing(create_log: LogFactory, tmp_path: Path) -> None:
    """Framing broken inside a task's range raises as a bad CRC does: at the file position, naming the segment,
    with what to do, once the rows before it are handed out."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark", reason="kafkalog.spark needs the spark extra")
    from kafkalog.spark.options import ReadOptions
    from kafkalog.spark.plan import plan_read

    log = hundred_batches(create_log)
    path = log.dir / "00000000000000000000.log"
    bad = int(log.segments.active_segment.log.scan().batches["position"][60])
    log.close()
    data = bytearray(path.read_bytes())
    data[bad + 8:bad + 12] = (3).to_bytes(4, "big")  # a size below any batch's
    path.write_bytes(bytes(data))
    (task,) = plan_read(ReadOptions.parse({"path": str(log.dir), "endingOffsets": "latest",
                                           "failOnDataLoss": "false"}))
    seen = []
    with pytest.raises(CorruptRecordError) as info:
        for batch in task.read():
            seen += batch.column("offset").to_pylist()
    assert seen == list(range(600))
    assert (info.value.position, info.value.path) == (bad, str(path))
    assert "kafkalog verify" in str(info.value)


def test_isolation_level_names() -> None:
    assert IsolationLevel.of("read_committed") is IsolationLevel.READ_COMMITTED
    assert IsolationLevel.of("READ_UNCOMMITTED") is IsolationLevel.READ_UNCOMMITTED
    assert IsolationLevel.of(1) is IsolationLevel.READ_COMMITTED
    assert str(IsolationLevel.READ_COMMITTED) == "read_committed"
    with pytest.raises(ValueError):
        IsolationLevel.of(2)


class CountingChannel:
    """Counts the bytes a read-only set's channel reads, passing every call through."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.bytes_read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.channel, name)

    def read_into(self, view: memoryview, position: int) -> int:
        got = int(self.channel.read_into(view, position))
        self.bytes_read += got
        return got

    def pread(self, position: int, size: int) -> bytes:
        data = bytes(self.channel.pread(position, size))
        self.bytes_read += len(data)
        return data


def read_only_segment(log: Log) -> tuple[FileMessageSet, CountingChannel]:
    segment = FileMessageSet(log.dir / "00000000000000000000.log", writable=False)
    counting = CountingChannel(segment._channel)
    segment._channel = counting  # type: ignore[assignment]
    return segment, counting


def hundred_batches(create_log: LogFactory) -> Log:
    log = create_log()
    for b in range(100):
        log.append(MemoryRecords.with_records([(None, b"v%03d-%d" % (b, i) * 20, i) for i in range(10)]))
    log.flush()
    return log


@pytest.mark.parametrize("chunk_bytes", [256, 4096, 1 << 20])
def test_chunks_read_a_read_only_segment_once(create_log: LogFactory, chunk_bytes: int) -> None:
    """A segment that is not mapped is read once by a consumer's read: each read is scanned where it lies,
    and only the batch a read ends inside is read again (chunks smaller than a batch read each batch whole)."""
    log = hundred_batches(create_log)
    largest = int(log.segments.active_segment.log.scan().batches["size"].max())
    segment, counting = read_only_segment(log)
    size = segment.size_in_bytes()
    view = ConsumerView(0, log.log_end_offset)
    got = [r.offset for _p, chunk in view.chunks(segment, 0, chunk_bytes) for r in chunk.records()]
    assert got == list(range(1000))
    reads = -(-size // chunk_bytes)
    assert size <= counting.bytes_read <= size + reads * largest
    segment.close()


def test_chunks_stop_at_the_end_of_the_range(create_log: LogFactory) -> None:
    """A read of the first offsets of a long segment reads no further than the batch that ends the range."""
    log = hundred_batches(create_log)
    segment, counting = read_only_segment(log)
    chunks = list(ConsumerView(0, 25).chunks(segment, 0, 4096))
    assert [r.offset for _p, c in chunks for r in c.records()] == list(range(30))  # whole batches of ten
    assert counting.bytes_read <= 2 * 4096
    segment.close()


def test_chunks_give_the_file_positions_of_their_batches(create_log: LogFactory) -> None:
    """Both ways of reading (a writable set's map, a read-only set's reads) hand out the same chunks at the
    same file positions, starting past the batches below the range."""
    log = hundred_batches(create_log)
    rows = log.segments.active_segment.log.scan().batches
    view = ConsumerView(305, 712)
    for segment in (log.segments.active_segment.log, read_only_segment(log)[0]):
        chunks = list(view.chunks(segment, 0, 8192))
        assert chunks[0][0] == int(rows["position"][30])
        for position, chunk in chunks:
            assert bytes(chunk.buffer) == segment.read_bytes(position, len(chunk.buffer))
        offsets = [r.offset for _p, c in chunks for r in c.records()]
        assert offsets == list(range(300, 720))


def test_chunks_raise_for_corrupt_framing_inside_the_range_only(create_log: LogFactory, tmp_path: Path) -> None:
    """Framing broken past the range is never read (a consumer's fetch stops at its end); inside the range it
    raises with the file position, after the chunks before it."""
    log = hundred_batches(create_log)
    path = log.dir / "00000000000000000000.log"
    rows = log.segments.active_segment.log.scan().batches
    log.close()
    copy = tmp_path / "copy.log"
    data = bytearray(path.read_bytes())
    bad = int(rows["position"][60])
    data[bad + 8:bad + 12] = (3).to_bytes(4, "big")  # a size below any batch's
    copy.write_bytes(bytes(data))
    with FileMessageSet(copy, writable=False) as segment:
        assert [r.offset for _p, c in ConsumerView(0, 600).chunks(segment, 0, 4096) for r in c.records()] \
            == list(range(600))
        seen = []
        with pytest.raises(CorruptRecordError) as info:
            for _p, chunk in ConsumerView(0, 1000).chunks(segment, 0, 4096):
                seen += [r.offset for r in chunk.records()]
        assert seen == list(range(600))
        assert info.value.position == bad
