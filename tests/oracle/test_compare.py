"""The oracle's comparison (``tests/oracle/compare.py``) on directories and answers made to differ on purpose:
what must compare equal (a batch recompressed by the runtime's own library, and the positions behind it) and what
must not (anything else), with the file, byte offset and field of the first difference."""

from __future__ import annotations

import base64
import gzip
import shutil
import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog._core_py.crc import crc32c
from tests.oracle.compare import (
    DirComparison,
    LogMatch,
    compare_answers,
    compare_dirs,
    compare_entries,
    producer_payloads,
    read_image,
    rules_for,
)
from tests.oracle.compare import _compare_offset_index as _compare_offset_index
from tests.oracle.driver import LEGACY_EMPTY_BATCH, legacy_empty_batch, size_decided_roll
from tests.oracle.kafkalog_side import KafkalogRunner
from tests.oracle.scenario import canonical_op

T0 = 1_700_000_000_000
NO_TS = -1
LOG = "00000000000000000000.log"
INDEX = "00000000000000000000.index"
TIME_INDEX = "00000000000000000000.timeindex"


def batch(*values: bytes, codec: str = "none", base_offset: int = 0) -> bytes:
    return bytes(MemoryRecords.with_records([(b"k%d" % i, v, T0 + i) for i, v in enumerate(values)],
                                            compression=codec, base_offset=base_offset).buffer)


def regzip(entry: bytes, level: int = 0, value_of_first: bytes | None = None) -> bytes:
    """The same v2 gzip batch with its records compressed again at another level (0: stored, larger), as another
    runtime's compressor would write it; ``value_of_first`` also changes the first record's value (same length)."""
    raw = gzip.decompress(entry[61:])
    if value_of_first is not None:
        first = next(MemoryRecords(entry).batches()).records(check_crcs=False)[0]
        assert first.value is not None and len(value_of_first) == len(first.value)
        raw = raw.replace(first.value, value_of_first, 1)
    body = gzip.compress(raw, compresslevel=level, mtime=0)
    header = bytearray(entry[:61])
    struct.pack_into(">i", header, 8, 49 + len(body))
    out = bytearray(header + body)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


# ---------------------------------------------------------------------------------------------------------
# Runs of entries


def test_identical_entries(impl: ModuleType) -> None:
    data = batch(b"a") + batch(b"b", b"c", codec="gzip", base_offset=1)
    difference, match = compare_entries(data, data, LOG)
    assert difference is None
    assert match.kafka_positions == match.kafkalog_positions == [0, len(batch(b"a")), len(data)]
    assert not match.resized


def test_a_flipped_header_byte_is_named(impl: ModuleType) -> None:
    first, second = batch(b"a"), batch(b"b", base_offset=1)
    changed = bytearray(second)
    changed[14] ^= 0x01  # partitionLeaderEpoch
    difference, _ = compare_entries(first + second, first + bytes(changed), LOG)
    assert difference is not None
    assert (difference.kind, difference.path, difference.byte_offset) == ("file", LOG, len(first) + 14)
    assert "entry 1 (magic 2, field partitionLeaderEpoch)" in difference.detail
    assert f"{LOG} at byte {len(first) + 14}" in difference.describe()


def test_recompressed_batch_compares_decoded(impl: ModuleType) -> None:
    """A gzip batch Kafka's log wrote itself and kafkalog's runtime compressed otherwise: equal decoded."""
    kafka_batch = batch(b"x" * 200, b"y" * 100, codec="gzip")
    other = regzip(kafka_batch)
    assert other != kafka_batch and len(other) > len(kafka_batch)
    tail = batch(b"after", base_offset=2)
    difference, match = compare_entries(kafka_batch + tail, other + tail, LOG)
    assert difference is None
    assert match.resized
    assert match.kafka_positions == [0, len(kafka_batch), len(kafka_batch) + len(tail)]
    assert match.kafkalog_positions == [0, len(other), len(other) + len(tail)]
    assert match.equivalent(len(kafka_batch), len(other))
    assert not match.equivalent(len(kafka_batch), len(kafka_batch))


def test_recompressed_batch_with_another_record_differs(impl: ModuleType) -> None:
    kafka_batch = batch(b"x" * 200, b"y" * 100, codec="gzip")
    other = regzip(kafka_batch, value_of_first=b"z" * 200)
    difference, _ = compare_entries(kafka_batch, other, LOG)
    assert difference is not None
    assert difference.detail.startswith("entry 0 (recompressed, compared decoded): record 0 ")
    assert "b'zzzz" in difference.detail


def test_recompressed_batch_with_another_header_differs(impl: ModuleType) -> None:
    kafka_batch = batch(b"x" * 200, codec="gzip")
    other = bytearray(regzip(kafka_batch))
    struct.pack_into(">q", other, 35, T0 + 99)  # maxTimestamp
    struct.pack_into(">I", other, 17, crc32c(bytes(other[21:])))
    difference, _ = compare_entries(kafka_batch, bytes(other), LOG)
    assert difference is not None
    assert f"batch header field maxTimestamp: kafka {T0}, kafkalog {T0 + 99}" in difference.detail


def test_a_producers_compression_must_be_kept_byte_for_byte(impl: ModuleType) -> None:
    """Kafka kept the producer's compressed payload: kafkalog recompressing it is a difference."""
    kafka_batch = batch(b"x" * 200, codec="gzip")
    digests = producer_payloads(kafka_batch)
    assert len(digests) == 1
    difference, _ = compare_entries(kafka_batch, regzip(kafka_batch), LOG, digests)
    assert difference is not None
    assert "entry 0 (magic 2, field batchLength)" in difference.detail


def test_a_producers_payload_is_the_producers_only_at_its_offsets(impl: ModuleType) -> None:
    """The same records compress alike: a producer's payload appended at offset 5 does not make a batch of the
    same records at offset 0 (recompressed by the log) one that must be kept byte for byte (found by generated
    seed 70 of the 3.9 line, where a later append repeated an earlier one's only record)."""
    producers = batch(b"x" * 200, codec="gzip")
    at_zero, at_five = batch(b"x" * 200, codec="gzip"), batch(b"x" * 200, codec="gzip", base_offset=5)
    digests = producer_payloads(producers, first_offset=5, last_offset=5)
    assert compare_entries(at_zero, regzip(at_zero), LOG, digests)[0] is None
    difference, _ = compare_entries(at_five, regzip(at_five), LOG, digests)
    assert difference is not None


def test_a_leader_never_keeps_a_v0_entry(impl: ModuleType) -> None:
    """Kafka's LogValidator rebuilds every v0 entry a leader appends: a v0 wrapper that came from a producer
    gives no producer digest for a leader append (Java recompressing may write the producer's very bytes), but
    does for a follower's, which is kept as it came (found by generated seeds 1058 and 1247 of the 3.9 line)."""
    wrapper = bytes(MemoryRecords.with_records([(b"k", b"x" * 200, NO_TS)], magic=0, compression="gzip").buffer)
    assert producer_payloads(wrapper, 0, 0, leader=True) == set()
    assert len(producer_payloads(wrapper, 0, 0, leader=False)) == 1


def test_uncompressed_batches_never_compare_decoded(impl: ModuleType) -> None:
    one = batch(b"abc")
    other = bytearray(one)
    other[-1] ^= 0x20  # the last byte of the only record: its header count
    difference, _ = compare_entries(one, bytes(other), LOG)
    assert difference is not None and "the records" in difference.detail


def test_missing_entries_and_torn_tails(impl: ModuleType) -> None:
    first, second = batch(b"a"), batch(b"b", base_offset=1)
    difference, _ = compare_entries(first + second, first, LOG)
    assert difference is not None
    assert (difference.byte_offset, difference.kafka, difference.kafkalog) == (len(first), 2, 1)
    difference, _ = compare_entries(first + second[:10], first + second[:7], LOG)
    assert difference is not None
    assert difference.byte_offset == len(first) + 7
    assert "after the last whole entry (10 and 7 bytes)" in difference.detail


# ---------------------------------------------------------------------------------------------------------
# Directories


def make_dir(directory: Path, config: dict[str, str], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A partition dir written by kafkalog's side of the harness; returns the last answer."""
    runner = KafkalogRunner()
    runner.request({"cmd": "start", "dir": str(directory), "config": config, "time_ms": T0})
    answer: dict[str, Any] = {}
    for op in ops:
        answer = runner.request({"cmd": "op", "op": canonical_op(op)})
    runner.request({"cmd": "end"})
    return answer


def append(*values: str, codec: str = "none") -> dict[str, Any]:
    return {"op": "append", "compression": codec,
            "records": [{"key": f"k{i}", "value": v, "timestamp": T0 + i} for i, v in enumerate(values)]}


@pytest.fixture
def two_dirs(scratch: Path, impl: ModuleType) -> tuple[Path, Path]:
    kafka = scratch / "kafka" / "topic-0"
    make_dir(kafka, {"index.interval.bytes": "1"},
             [append("a"), append("x" * 300, "y" * 200, codec="gzip"), append("b"), append("c")])
    kafkalog = scratch / "kafkalog" / "topic-0"
    shutil.copytree(kafka, kafkalog)
    return kafka, kafkalog


def test_identical_dirs(two_dirs: tuple[Path, Path]) -> None:
    result = compare_dirs(*two_dirs)
    assert result.difference is None
    assert set(result.logs) == {LOG}
    assert not result.resized


def test_a_file_on_one_side_only(two_dirs: tuple[Path, Path]) -> None:
    kafka, kafkalog = two_dirs
    (kafkalog / "00000000000000000004.snapshot").write_bytes(b"")
    difference = compare_dirs(kafka, kafkalog).difference
    assert difference is not None
    assert (difference.path, difference.detail) == ("00000000000000000004.snapshot",
                                                    "only kafkalog has this file (kafka, kafkalog: the files)")


def test_a_changed_byte_anywhere_is_found(two_dirs: tuple[Path, Path]) -> None:
    kafka, kafkalog = two_dirs
    data = bytearray((kafkalog / TIME_INDEX).read_bytes())
    data[5] ^= 0xFF
    (kafkalog / TIME_INDEX).write_bytes(bytes(data))
    difference = compare_dirs(kafka, kafkalog).difference
    assert difference is not None
    assert (difference.path, difference.byte_offset) == (TIME_INDEX, 5)


def test_the_same_bytes_and_more_zeros_is_another_size(two_dirs: tuple[Path, Path]) -> None:
    kafka, kafkalog = two_dirs
    with (kafkalog / "leader-epoch-checkpoint").open("ab") as f:
        f.write(b"\0")
    difference = compare_dirs(kafka, kafkalog).difference
    assert difference is not None
    assert difference.path == "leader-epoch-checkpoint"


def recompress_second_batch(directory: Path, shift_index: bool) -> int:
    """Rewrite the gzip batch of ``directory``'s segment as another runtime would compress it, and (if
    ``shift_index``) move the ``.index`` positions after it as that runtime's log would have written them;
    returns how many bytes longer the segment became."""
    data = (directory / LOG).read_bytes()
    first_size = struct.unpack_from(">i", data, 8)[0] + 12
    second_size = struct.unpack_from(">i", data, first_size + 8)[0] + 12
    old = data[first_size:first_size + second_size]
    new = regzip(old)
    delta = len(new) - len(old)
    (directory / LOG).write_bytes(data[:first_size] + new + data[first_size + second_size:])
    if shift_index:
        index = bytearray((directory / INDEX).read_bytes())
        for at in range(0, len(index), 8):
            offset, position = struct.unpack_from(">ii", index, at)
            if position > first_size:
                struct.pack_into(">ii", index, at, offset, position + delta)
        (directory / INDEX).write_bytes(bytes(index))
    return delta


def test_a_recompressed_batch_and_the_positions_after_it(two_dirs: tuple[Path, Path]) -> None:
    kafka, kafkalog = two_dirs
    delta = recompress_second_batch(kafkalog, shift_index=True)
    assert delta > 0
    result = compare_dirs(kafka, kafkalog)
    assert result.difference is None
    assert result.resized
    kafka_size, kafkalog_size = result.sizes[LOG]
    assert kafkalog_size == kafka_size + delta
    # the state's segment sizes, and a read's position, follow the batches
    match = result.segment(0)
    assert isinstance(match, LogMatch)
    third = match.kafka_positions[2]
    state = {"logEndOffset": 5, "segments": [[0, kafka_size]]}
    read = {"fetchOffsetMetadata": {"messageOffset": 3, "segmentBaseOffset": 0, "relativePositionInSegment": third},
            "records": "", "firstEntryIncomplete": False, "abortedTransactions": None}
    kafka_answer = {"result": read, "state": state}
    kafkalog_answer = {"result": {**read, "fetchOffsetMetadata": {**read["fetchOffsetMetadata"],
                                                                  "relativePositionInSegment": third + delta}},
                       "state": {**state, "segments": [[0, kafkalog_size]]}}
    assert compare_answers(kafka_answer, kafkalog_answer, result) is None
    # without the correspondence the same answers differ
    difference = compare_answers(kafka_answer, kafkalog_answer, DirComparison())
    assert difference is not None
    assert difference.path == "result.fetchOffsetMetadata.relativePositionInSegment"
    wrong_size = {**kafkalog_answer, "state": {**state, "segments": [[0, kafkalog_size + 1]]}}
    difference = compare_answers(kafka_answer, wrong_size, result)
    assert difference is not None and difference.path == "state.segments[0]"


def test_index_positions_must_point_at_the_same_batches(two_dirs: tuple[Path, Path]) -> None:
    kafka, kafkalog = two_dirs
    recompress_second_batch(kafkalog, shift_index=False)
    difference = compare_dirs(kafka, kafkalog).difference
    assert difference is not None
    assert difference.path == INDEX
    assert "the positions compared through the batches they point at" in difference.detail


def test_sparse_files_are_read_to_their_last_data(tmp_path: Path) -> None:
    path = tmp_path / "sparse.index"
    with path.open("wb") as f:
        f.write(b"\1" * 16)
        f.truncate(10 * 1024 * 1024)
    size, image = read_image(path)
    assert size == 10 * 1024 * 1024
    assert image[:16] == b"\1" * 16 and len(image) < size and not image[16:].strip(b"\0")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert read_image(empty) == (0, b"")


# ---------------------------------------------------------------------------------------------------------
# Answers


STATE = {"logStartOffset": 0, "logEndOffset": 1, "highWatermark": 0, "lastStableOffset": 0,
         "firstUnstableOffset": None, "recoveryPoint": 0, "segments": [[0, 70]], "activeProducers": [],
         "leaderEpochs": [[0, 0]], "timeMs": T0}


def test_errors_compare_by_class() -> None:
    error = {"error": {"class": "OffsetOutOfRangeException", "message": "Kafka's words"}, "state": STATE}
    same = {"error": {"class": "OffsetOutOfRangeException", "message": "kafkalog's words"}, "state": STATE}
    assert compare_answers(error, same) is None
    other = {"error": {"class": "IllegalArgumentException", "message": ""}, "state": STATE}
    difference = compare_answers(error, other)
    assert difference is not None and (difference.kind, difference.path) == ("error", "error.class")
    difference = compare_answers(error, {"result": {"incremented": True}, "state": STATE})
    assert difference is not None and difference.kafkalog == {"incremented": True}


def test_results_compare_field_by_field() -> None:
    kafka = {"result": {"firstOffset": 0, "recordValidationStats": {"temporaryMemoryBytes": 0}, "shallowCount": 1},
             "state": STATE}
    assert compare_answers(kafka, kafka) is None
    changed = {"result": {"firstOffset": 0, "recordValidationStats": {"temporaryMemoryBytes": 7}},
               "state": STATE}
    difference = compare_answers(kafka, changed)
    assert difference is not None
    assert (difference.path, difference.kafka, difference.kafkalog) == (
        "result.recordValidationStats.temporaryMemoryBytes", 0, 7)
    # a key only one Kafka version has (shallowCount) is compared only when both answers have it; any other is not
    assert compare_answers({"result": {"firstOffset": 0}, "state": STATE},
                           {"result": {"firstOffset": 0, "shallowCount": 3}, "state": STATE}) is None
    difference = compare_answers({"result": {"firstOffset": 0}, "state": STATE},
                                 {"result": {"firstOffset": 0, "lastOffset": 0}, "state": STATE})
    assert difference is not None and (difference.path, difference.kafka) == ("result.lastOffset", ...)
    # 0 and False, 1 and 1.0 are not the same JSON
    difference = compare_answers({"result": {"truncated": False}, "state": STATE},
                                 {"result": {"truncated": 0}, "state": STATE})
    assert difference is not None


def test_states_compare_field_by_field() -> None:
    other = {**STATE, "activeProducers": [[7, 0, 0, 0, None]]}
    difference = compare_answers({"result": {}, "state": STATE}, {"result": {}, "state": other})
    assert difference is not None
    assert (difference.kind, difference.path, difference.kafka) == ("state", "state.activeProducers", [])
    difference = compare_answers({"state": STATE}, {"state": {**STATE, "segments": [[0, 70], [1, 0]]}})
    assert difference is not None and difference.path == "state.segments"


def test_reads_compare_their_records_decoded_when_recompressed(impl: ModuleType) -> None:
    kafka_batch = batch(b"x" * 200, b"y" * 100, codec="gzip")
    read = {"fetchOffsetMetadata": {"messageOffset": 0, "segmentBaseOffset": 0, "relativePositionInSegment": 0},
            "records": base64.b64encode(kafka_batch).decode(), "firstEntryIncomplete": False,
            "abortedTransactions": None}
    kafka = {"result": read, "state": STATE}
    same = {"result": {**read, "records": base64.b64encode(regzip(kafka_batch)).decode()}, "state": STATE}
    assert compare_answers(kafka, same) is None
    changed = {"result": {**read, "records": base64.b64encode(regzip(kafka_batch, value_of_first=b"z" * 200)).decode()},
               "state": STATE}
    difference = compare_answers(kafka, changed)
    assert difference is not None
    assert (difference.kind, difference.path) == ("result", "result.records")
    assert difference.detail.startswith("the records read: entry 0 (recompressed, compared decoded): record 0")


def test_cleaning_byte_counts_follow_recompression() -> None:
    clean = {"endOffset": 4, "messagesRead": 4, "bytesRead": 300, "messagesWritten": 3, "bytesWritten": 200}
    other = {**clean, "bytesRead": 310, "bytesWritten": 190}
    difference = compare_answers({"result": clean, "state": STATE}, {"result": other, "state": STATE})
    assert difference is not None and difference.path == "result.bytesRead"
    assert compare_answers({"result": clean, "state": STATE}, {"result": other, "state": STATE},
                           resized_before=True) is None
    fewer = {**other, "messagesWritten": 2}
    difference = compare_answers({"result": clean, "state": STATE}, {"result": fewer, "state": STATE},
                                 resized_before=True)
    assert difference is not None and difference.path == "result.messagesWritten"


def test_kafka_4_close_leaves_the_indexes_untrimmed(two_dirs: tuple[Path, Path]) -> None:
    """Rules.close_keeps_indexes: at the end, Kafka 4's index files may run on past kafkalog's trimmed ones
    (zeros, or stale entries), and its time index may lack the last entry a 3.9 close appends; a difference
    within kafkalog's entries is still one."""
    kafka, kafkalog = two_dirs
    index, time_index = (kafka / INDEX).read_bytes(), (kafka / TIME_INDEX).read_bytes()
    assert len(index) >= 8 and len(time_index) >= 12
    (kafka / INDEX).write_bytes(index + bytes(4096))
    (kafka / TIME_INDEX).write_bytes(time_index[:-12] + bytes(4096))
    assert compare_dirs(kafka, kafkalog, closed_untrimmed=True).difference is None
    assert compare_dirs(kafka, kafkalog).difference is not None
    (kafka / INDEX).write_bytes(index + b"\1" + bytes(4095))
    assert compare_dirs(kafka, kafkalog, closed_untrimmed=True).difference is None
    (kafka / INDEX).write_bytes(index[:-8] + bytes(4096))
    difference = compare_dirs(kafka, kafkalog, closed_untrimmed=True).difference
    assert difference is not None and difference.path == INDEX


def test_closed_logs_leave_kafkas_deleted_files_out(two_dirs: tuple[Path, Path]) -> None:
    """At ``end`` (``closed``), Kafka's dir keeps the ``.deleted`` files its dropped tasks would have deleted, and
    kafkalog's close deleted them (its deliberate deviation): Kafka's are not compared.  A ``.deleted`` file left
    in kafkalog's dir is a difference, closed or not, and before ``end`` Kafka's count as any file."""
    kafka, kafkalog = two_dirs
    (kafka / "00000000000000000007.log.deleted").write_bytes(b"replaced")
    difference = compare_dirs(kafka, kafkalog).difference
    assert difference is not None and difference.path == "00000000000000000007.log.deleted"
    assert compare_dirs(kafka, kafkalog, closed=True).difference is None
    (kafkalog / "00000000000000000007.log.deleted").write_bytes(b"replaced")
    difference = compare_dirs(kafka, kafkalog, closed=True).difference
    assert difference is not None and difference.path == "00000000000000000007.log.deleted"


def test_kafka_4_reads_name_the_batch(impl: ModuleType) -> None:
    """Rules.read_names_batch: Kafka 4 answers the base offset of the first batch read as ``messageOffset``;
    another offset still differs, and on the 3.9 line any difference does."""
    records = base64.b64encode(batch(b"a", b"b", b"c", base_offset=5)).decode()

    def read(offset: int) -> dict[str, Any]:
        return {"result": {"fetchOffsetMetadata": {"messageOffset": offset, "segmentBaseOffset": 0,
                                                   "relativePositionInSegment": 0},
                           "records": records, "firstEntryIncomplete": False, "abortedTransactions": None},
                "state": STATE}

    assert compare_answers(read(5), read(6), rules=rules_for("4")) is None
    assert compare_answers(read(5), read(6)) is not None
    difference = compare_answers(read(4), read(6), rules=rules_for("4"))
    assert difference is not None and difference.path == "result.fetchOffsetMetadata.messageOffset"


def test_a_read_cut_after_a_resized_batch_is_compared_as_far_as_both_go(impl: ModuleType) -> None:
    """A read of ``max_bytes`` whose first batch was recompressed to another size cuts its last batch (a
    producer's, kept as it came) at another byte on each side: the two cut parts are compared as far as the
    shorter goes; a changed byte there still differs, and so does any cut when nothing before it was resized."""
    kafka_batch = batch(b"x" * 200, b"y" * 100, codec="gzip")
    other = regzip(kafka_batch)
    kept = batch(b"kept" * 150, b"more" * 50, base_offset=2)
    limit = len(other) + 40
    assert len(kafka_batch) < len(other) < limit < len(kafka_batch) + len(kept)
    kafka_read, kafkalog_read = (kafka_batch + kept)[:limit], (other + kept)[:limit]

    def answer(records: bytes) -> dict[str, Any]:
        return {"result": {"fetchOffsetMetadata": {"messageOffset": 0, "segmentBaseOffset": 0,
                                                   "relativePositionInSegment": 0},
                           "records": base64.b64encode(records).decode(), "firstEntryIncomplete": False,
                           "abortedTransactions": None}, "state": STATE}

    assert compare_answers(answer(kafka_read), answer(kafkalog_read)) is None
    changed = bytearray(kafkalog_read)
    changed[len(other) + 30] ^= 0xFF
    difference = compare_answers(answer(kafka_read), answer(bytes(changed)))
    assert difference is not None and difference.path == "result.records"
    plain = batch(b"x" * 200, b"y" * 100)
    difference = compare_answers(answer((plain + kept)[:limit]), answer((plain + kept)[:limit - 3] + b"\0\0\0"))
    assert difference is not None and difference.path == "result.records"


def test_stale_index_entries_compare_through_earlier_positions(impl: ModuleType) -> None:
    """A truncation empties the segment but leaves its index entries in the file: a stale entry's position is
    compared through the batches it named when it was written (an earlier correspondence of the .log), and only
    when it names no batch of the file now."""
    kafka_batch = batch(b"x" * 200, b"y" * 100, codec="gzip")
    other = regzip(kafka_batch)
    tail = batch(b"after", base_offset=2)
    _, before = compare_entries(kafka_batch + tail, other + tail, LOG)
    _, now = compare_entries(b"", b"", LOG)
    kafka_index = struct.pack(">ii", 2, len(kafka_batch)) + bytes(8)
    kafkalog_index = struct.pack(">ii", 2, len(other)) + bytes(8)
    assert _compare_offset_index(kafka_index, kafkalog_index, INDEX, now) is not None
    assert _compare_offset_index(kafka_index, kafkalog_index, INDEX, now, [before]) is None
    wrong = struct.pack(">ii", 2, len(other) + 1) + bytes(8)
    assert _compare_offset_index(kafka_index, wrong, INDEX, now, [before]) is not None
    assert _compare_offset_index(kafka_index, struct.pack(">ii", 3, len(other)) + bytes(8), INDEX, now,
                                 [before]) is not None


def test_kafka_4_first_unstable_offset_names_the_batch() -> None:
    """Rules.unstable_offset_names_batch: with the log start offset moved into an open transaction's batch
    (16 to 23), Kafka 4's first unstable (and last stable) offset is that batch's base; kafkalog's is the log
    start offset.  Another offset, a batch not in Kafka's log, or the 3.9 line still differs."""
    base = {**STATE, "logStartOffset": 23, "logEndOffset": 24, "highWatermark": 24}
    kafka = {"result": {}, "state": {**base, "firstUnstableOffset": 16, "lastStableOffset": 16}}
    kafkalog = {"result": {}, "state": {**base, "firstUnstableOffset": 23, "lastStableOffset": 23}}
    dirs = DirComparison(logs={LOG: LogMatch(kafka_batches=[(0, 15), (16, 23)])})
    assert compare_answers(kafka, kafkalog, dirs, rules=rules_for("4")) is None
    difference = compare_answers(kafka, kafkalog, dirs)
    assert difference is not None and difference.path == "state.lastStableOffset"
    other_batches = DirComparison(logs={LOG: LogMatch(kafka_batches=[(0, 15), (16, 20), (21, 23)])})
    assert compare_answers(kafka, kafkalog, other_batches, rules=rules_for("4")) is not None
    wrong = {"result": {}, "state": {**base, "firstUnstableOffset": 16, "lastStableOffset": 23}}
    assert compare_answers(wrong, kafkalog, dirs, rules=rules_for("4")) is not None


def test_a_roll_decided_by_recompressed_sizes_ends_the_comparison() -> None:
    """size_decided_roll: one side rolled at the log end because its active segment (larger by recompression)
    and the batch exceed segment.bytes, the other's did not; anything else is no such parting."""
    op = {"op": "append"}
    before = {**STATE, "logEndOffset": 13, "segments": [[0, 514]]}
    rolled = {**STATE, "logEndOffset": 16, "segments": [[0, 514], [13, 95]]}
    stayed = {**STATE, "logEndOffset": 16, "segments": [[0, 600]]}
    before_kafkalog = {**before, "segments": [[0, 505]]}
    why = size_decided_roll(op, (before, before_kafkalog), (rolled, stayed), 600)
    assert why is not None and "Kafka rolled a segment at offset 13" in why
    why = size_decided_roll(op, (before_kafkalog, before), (stayed, rolled), 600)
    assert why is not None and "kafkalog rolled" in why
    overfull = {**stayed, "segments": [[0, 610]]}
    assert size_decided_roll(op, (before, before_kafkalog), (rolled, overfull), 600) is None
    assert size_decided_roll(op, (before, before_kafkalog), (rolled, stayed), 700) is None
    assert size_decided_roll({"op": "roll"}, (before, before_kafkalog), (rolled, stayed), 600) is None
    moved = {**rolled, "segments": [[0, 514], [14, 95]]}
    assert size_decided_roll(op, (before, before_kafkalog), (moved, stayed), 600) is None


def test_the_cleaners_legacy_empty_entry_deviation() -> None:
    """legacy_empty_batch: only a clean that Kafka fails with 3.9.2's words about an emptied v0/v1 entry while
    kafkalog completes it."""
    failed = {"error": {"class": "IllegalStateException", "message": LEGACY_EMPTY_BATCH}, "state": STATE}
    cleaned = {"result": {"endOffset": 7}, "state": STATE}
    assert legacy_empty_batch({"op": "clean"}, failed, cleaned) is not None
    assert legacy_empty_batch({"op": "append"}, failed, cleaned) is None
    other = {"error": {"class": "IllegalStateException", "message": "something else"}, "state": STATE}
    assert legacy_empty_batch({"op": "clean"}, other, cleaned) is None
    assert legacy_empty_batch({"op": "clean"}, failed, failed) is None


def test_a_read_limit_inside_a_recompressed_batch_on_one_side_only(impl: ModuleType) -> None:
    """A read's size limit falls inside a recompressed batch on one side and past its end on the other: that batch
    is not compared (nor, when it is the first, ``firstEntryIncomplete``), what precedes it still is; an
    uncompressed batch at the limit still differs."""
    first = batch(b"first")
    kafka_batch = batch(b"x" * 200, b"y" * 100, codec="gzip", base_offset=1)
    other = regzip(kafka_batch)
    limit = len(first) + len(kafka_batch) + 10
    assert len(other) > limit - len(first)
    _, segment = compare_entries(first + kafka_batch, first + other, LOG)
    dirs = DirComparison(logs={LOG: segment})

    def answer(records: bytes, incomplete: bool = False) -> dict[str, Any]:
        return {"result": {"fetchOffsetMetadata": {"messageOffset": 0, "segmentBaseOffset": 0,
                                                   "relativePositionInSegment": 0},
                           "records": base64.b64encode(records).decode(), "firstEntryIncomplete": incomplete,
                           "abortedTransactions": None}, "state": STATE}

    kafka_read, kafkalog_read = first + kafka_batch, (first + other)[:limit]
    assert compare_answers(answer(kafka_read), answer(kafkalog_read), dirs) is None
    assert compare_answers(answer(kafka_read), answer(kafkalog_read)) is not None
    changed = bytearray(kafkalog_read)
    changed[20] ^= 0xFF
    assert compare_answers(answer(kafka_read), answer(bytes(changed)), dirs) is not None
    # The first batch at the limit: whole on Kafka's side, cut (first entry incomplete) on kafkalog's.
    _, alone = compare_entries(kafka_batch, other, LOG)
    dirs = DirComparison(logs={LOG: alone})
    cut = other[:len(kafka_batch) + 5]
    assert compare_answers(answer(kafka_batch), answer(cut, incomplete=True), dirs) is None
    # Past the whole batch, the same limit cuts the segment's next batch on that side: not compared.
    _, followed = compare_entries(kafka_batch + first, other + first, LOG)
    dirs = DirComparison(logs={LOG: followed})
    assert compare_answers(answer(kafka_batch + first[:5]), answer(cut, incomplete=True), dirs) is None
    plain_dirs = DirComparison(logs={LOG: compare_entries(first + first, first + first, LOG)[1]})
    assert compare_answers(answer(first + first), answer(first + first[:10]), plain_dirs) is not None


def test_a_size_decided_roll_needs_the_same_batch_on_both_sides(tmp_path: Path, impl: ModuleType) -> None:
    """_appended_alike: the batch the parting append wrote compares equal (decoded when recompressed); one with
    another record (as a wrong inner timestamp would give) is a difference, not a parting."""
    from tests.oracle.driver import _appended_alike

    old = batch(b"old")
    kafka_batch = batch(b"x" * 200, b"y" * 100, codec="gzip", base_offset=1)
    kafka, kafkalog = tmp_path / "kafka", tmp_path / "kafkalog"
    kafka.mkdir()
    kafkalog.mkdir()
    (kafka / LOG).write_bytes(old + kafka_batch)
    (kafkalog / LOG).write_bytes(old)
    new_log = "00000000000000000001.log"
    before = ({"segments": [[0, len(old)]]}, {"segments": [[0, len(old)]]})
    after = ({"segments": [[0, len(old) + len(kafka_batch)]]}, {"segments": [[0, len(old)], [1, 0]]})

    def alike(kafkalog_batch: bytes) -> bool:
        (kafkalog / new_log).write_bytes(kafkalog_batch)
        after[1]["segments"][-1][1] = len(kafkalog_batch)
        return _appended_alike(kafka, kafkalog, before, after, set())

    assert alike(regzip(kafka_batch))
    assert not alike(regzip(kafka_batch, value_of_first=b"z" * 200))
    assert not _appended_alike(kafka, kafkalog, None, after, set())


def test_a_legacy_wrapper_compares_its_inner_messages_byte_for_byte(impl: ModuleType) -> None:
    """A recompressed v0/v1 wrapper is equal when its inner messages are, byte for byte: a decoded record of a
    LogAppendTime wrapper shows the wrapper's time whatever the inner message holds (3.9.2 seed 5104)."""
    from kafkalog.record.legacy import build_legacy_message_set, legacy_entry

    records = [(b"key-%d" % i, b"value %d" % i, T0 + i) for i in range(5)]
    kafka = build_legacy_message_set(records, magic=1, base_offset=3, compression="gzip",
                                     timestamp_type="LogAppendTime", log_append_time=T0 + 100)

    def wrapper(inner_times: list[int], level: int) -> bytes:
        inner = b"".join(legacy_entry(i, 1, 0x08, t, k, v) for i, ((k, v, _), t) in enumerate(zip(records, inner_times,
                                                                                               strict=True)))
        return legacy_entry(7, 1, 0x01 | 0x08, T0 + 100, None, gzip.compress(inner, compresslevel=level, mtime=0))

    same = wrapper([T0 + 100] * 5, 1)
    assert same != kafka
    assert compare_entries(kafka, same, LOG)[0] is None
    difference, _ = compare_entries(kafka, wrapper([t for _, _, t in records], 1), LOG)
    assert difference is not None and "inner messages" in difference.detail


def test_a_snapshot_rewritten_over_a_longer_one(tmp_path: Path) -> None:
    """kafkalog truncates a producer snapshot it writes again; Kafka's keeps the longer file's tail: equal when
    kafkalog's whole file is the start of Kafka's, a difference otherwise (and for any other kind of file)."""
    kafka, kafkalog = tmp_path / "kafka", tmp_path / "kafkalog"
    kafka.mkdir()
    kafkalog.mkdir()
    snapshot = "00000000000000000033.snapshot"
    (kafka / snapshot).write_bytes(b"0123456789" + b"stale tail of the longer one")
    (kafkalog / snapshot).write_bytes(b"0123456789")
    assert compare_dirs(kafka, kafkalog).difference is None
    (kafkalog / snapshot).write_bytes(b"0123456780")
    assert compare_dirs(kafka, kafkalog).difference is not None
    (kafkalog / snapshot).write_bytes(b"0123456789" + b"stale tail of the longer one" + b"!")
    assert compare_dirs(kafka, kafkalog).difference is not None
    (kafkalog / snapshot).unlink()
    (kafka / snapshot).unlink()
    (kafka / "leader-epoch-checkpoint").write_bytes(b"0\n0\n\n")
    (kafkalog / "leader-epoch-checkpoint").write_bytes(b"0\n0\n")
    assert compare_dirs(kafka, kafkalog).difference is not None


def test_a_time_index_entry_kafka_loses_after_truncating_a_reopened_segment(tmp_path: Path) -> None:
    """kafkalog keeps a reopened segment's largest timestamp across a truncation that empties its time index,
    Kafka forgets it (the segment walkthrough): after such a truncation, Kafka's .timeindex may lack kafkalog's
    last entry, of a larger timestamp than any Kafka's holds; only then, and only that entry."""
    kafka, kafkalog = tmp_path / "kafka", tmp_path / "kafkalog"
    kafka.mkdir()
    kafkalog.mkdir()
    name = "00000000000000000029.timeindex"
    first, last = struct.pack(">qi", T0, 0), struct.pack(">qi", T0 + 5, 1)
    (kafka / name).write_bytes(b"")
    (kafkalog / name).write_bytes(last)
    assert compare_dirs(kafka, kafkalog, truncated_reopened=True).difference is None
    assert compare_dirs(kafka, kafkalog).difference is not None
    (kafka / name).write_bytes(first)
    (kafkalog / name).write_bytes(first + last)
    assert compare_dirs(kafka, kafkalog, truncated_reopened=True).difference is None
    (kafkalog / name).write_bytes(first + struct.pack(">qi", T0 - 5, 1))
    assert compare_dirs(kafka, kafkalog, truncated_reopened=True).difference is not None
    (kafkalog / name).write_bytes(first + last + last)
    assert compare_dirs(kafka, kafkalog, truncated_reopened=True).difference is not None
