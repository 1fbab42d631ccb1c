"""``kafkalog dump``: Kafka's DumpLogSegments output (spec §6), checked on golden files.

The batch and record lines are parsed back into their labelled fields and compared with what an
independent struct-level reader (in this file) finds in the same bytes; a small segment's whole text is
compared with a hand-checked expected file; ``--json`` is checked to carry the same facts as the text.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

import crcmod.predefined
import pytest

from kafkalog.cli import main
from tests.support.golden_data import (
    ARTHUR,
    BULLSHIT,
    DANIELOWO,
    DIPENDRASAINI,
    KAFKALITE,
    KAFKALITE_EXPECTED,
    YUANLIUBEI,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "dump"
_crc32c = crcmod.predefined.mkCrcFun("crc-32c")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def fields(line: str) -> dict[str, str]:
    """The ``label: value`` pairs of a dump line (``CreateTime: 5`` included), in order."""
    line = line.removeprefix("| ")
    # Keys and payloads are free text: only what comes before them is labelled fields.
    line = re.split(r"(?:^| )(?:key|payload): ", line, maxsplit=1)[0]
    out: dict[str, str] = {}
    for match in re.finditer(r"(\w+): (\[[^\]]*\]|\{.*\}$|\S+)", line):
        out[match.group(1)] = match.group(2)
    return out


# -- an independent reader of the framing (struct only) ----------------------------------------------

def independent_batches(data: bytes) -> list[dict[str, Any]]:
    """Top-level entries of a .log, read with struct: v2 headers field by field, legacy messages whole."""
    out = []
    position = 0
    while position + 17 <= len(data):
        offset, size = struct.unpack_from(">qi", data, position)
        if position + 12 + size > len(data):
            break
        magic = data[position + 16]
        if magic == 2:
            (base, _length, epoch, _magic, crc, attributes, last_delta, _first_ts, max_ts, producer_id,
             producer_epoch, base_sequence, count) = struct.unpack_from(">qiibIhiqqqhii", data, position)
            out.append({
                "baseOffset": base, "lastOffset": base + last_delta, "count": count,
                "baseSequence": base_sequence, "producerId": producer_id, "producerEpoch": producer_epoch,
                "partitionLeaderEpoch": epoch, "isTransactional": bool(attributes & 0x10),
                "isControl": bool(attributes & 0x20), "position": position, "maxTimestamp": max_ts,
                "size": 12 + size, "magic": 2, "codec": attributes & 7, "crc": crc,
                "valid": crc == _crc32c(data[position + 21:position + 12 + size]),
                "timestampType": "LogAppendTime" if attributes & 8 else "CreateTime"})
        else:
            crc, _magic, attributes = struct.unpack_from(">IbB", data, position + 12)
            timestamp = struct.unpack_from(">q", data, position + 18)[0] if magic == 1 else -1
            out.append({
                "offset": offset, "position": position, "maxTimestamp": timestamp, "size": 12 + size,
                "magic": magic, "codec": attributes & 7, "crc": crc,
                "valid": crc == zlib.crc32(data[position + 16:position + 12 + size]) & 0xFFFFFFFF,
                "timestampType": "NoTimestampType" if magic == 0 else
                ("LogAppendTime" if attributes & 8 else "CreateTime")})
        position += 12 + size
    return out


CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def golden_logs(golden: Path) -> list[Path]:
    return sorted(p for p in golden.rglob("*.log") if p.stat().st_size > 0)


def test_batch_lines_match_the_bytes_field_for_field(golden: Path, impl: Any) -> None:
    """Every batch line of every golden .log, against the independent reader: spec §6's batch line."""
    logs = golden_logs(golden)
    assert len(logs) > 30
    checked = 0
    for log in logs:
        status, out, _err = run("dump", "--files", str(log))
        lines = out.splitlines()
        assert lines[0] == f"Dumping {log}"
        assert lines[1] == f"Log starting offset: {int(log.name.split('.')[0])}"
        batch_lines = [line for line in lines[2:] if not line.startswith("Found ")]
        expected = independent_batches(log.read_bytes())
        assert len(batch_lines) == len(expected), log
        for line, facts in zip(batch_lines, expected, strict=True):
            got = fields(line)
            if facts["magic"] == 2:
                assert line.startswith(f"baseOffset: {facts['baseOffset']} lastOffset: ")
                for label in ("baseOffset", "lastOffset", "count", "baseSequence", "producerId",
                              "producerEpoch", "partitionLeaderEpoch"):
                    assert got[label] == str(facts[label]), (log, label)
                for label in ("isTransactional", "isControl"):
                    assert got[label] == str(facts[label]).lower()
                assert got["deleteHorizonMs"] == "OptionalLong.empty"
            else:
                assert line.startswith(f"offset: {facts['offset']} position: ")
            assert got["position"] == str(facts["position"])
            assert got[facts["timestampType"]] == str(facts["maxTimestamp"])
            assert got["size"] == str(facts["size"])
            assert got["magic"] == str(facts["magic"])
            assert got["compresscodec"] == CODECS[facts["codec"]]
            assert got["crc"] == str(facts["crc"])
            assert got["isvalid"] == str(facts["valid"]).lower() == "true"
            checked += 1
        assert status == 0, log
    assert checked > 10000


def test_small_segment_text_equals_the_hand_checked_file(golden: Path) -> None:
    """__consumer_offsets-19's first segment (3 compacted v2 batches, 7 records, leader epoch 6): the whole
    stdout and the non-consecutive-offset report on stderr, checked by hand against DETAILS.md."""
    directory = golden / f"{ARTHUR}/__consumer_offsets-19"
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        absolute = os.getcwd()  # what a relative name is made absolute against (symlinks resolved)
        status, out, err = run("dump", "--files", "00000000000000000000.log", "--deep-iteration")
    finally:
        os.chdir(cwd)
    assert out == (DATA / "consumer_offsets_19_deep.stdout").read_text()
    assert err == (DATA / "consumer_offsets_19_deep.stderr").read_text().replace("{dir}", absolute)
    assert status == 0  # gaps left by compaction are reported, but are not corruption


def test_record_lines_legacy_crc_keys_and_payloads(golden: Path, impl: Any) -> None:
    foo = golden / f"{BULLSHIT}/foo-0/00000000000000000000.log"
    status, out, _err = run("dump", "--files", str(foo), "--print-data-log")
    lines = out.splitlines()
    assert status == 0
    records = [line for line in lines if line.startswith("| ")]
    assert len(records) == 204  # DETAILS.md: 204 v1 messages
    first = records[0]
    assert first == ("| offset: 0 CreateTime: 1479457300602 keySize: 1 valueSize: 1 isValid: true "
                     "crc: 1581195197} key: 0 payload: 0")
    data = foo.read_bytes()
    assert struct.unpack_from(">I", data, 12)[0] == 1581195197  # the message's own CRC, unsigned


def test_compressed_v0_wrapper_records_carry_inner_crcs(golden: Path) -> None:
    log = golden / f"{KAFKALITE}/hamlet-snappy-0/00000000000000000000.log"
    status, out, _err = run("dump", "--files", str(log), "--print-data-log")
    lines = out.splitlines()
    assert status == 0
    assert lines[2].startswith("offset: 253 position: 0 NoTimestampType: -1 size: 8524 magic: 0 "
                               "compresscodec: snappy ")
    records = [line for line in lines if line.startswith("| ")]
    assert len(records) == 5382
    expected = (golden / f"{KAFKALITE_EXPECTED}/hamlet-snappy-0").read_text().splitlines()
    for line, want in zip(records, expected, strict=True):
        offset, value = want.split(": ", 1)
        assert line.startswith(f"| offset: {offset} NoTimestampType: -1 keySize: -1 ")
        assert "isValid: true crc: " in line
        assert line.endswith("} payload: " + json.loads(value))


def test_control_markers_and_kraft_records(golden: Path) -> None:
    topic = golden / (f"{DANIELOWO}/"
                      "_confluent-ksql-default__command_topic-0/00000000000000000000.log")
    _status, out, _err = run("dump", "--files", str(topic), "--print-data-log")
    markers = [line for line in out.splitlines() if "endTxnMarker" in line]
    assert len(markers) == 4  # DETAILS.md: 4 COMMIT control batches
    assert all(line.endswith("endTxnMarker: COMMIT coordinatorEpoch: 0") for line in markers)
    assert all(" key: " not in line and "payload" not in line for line in markers)
    snapshot = next(golden.rglob("00000000000001727631-0000000001.checkpoint"))
    status, out, _err = run("dump", "--files", str(snapshot), "--deep-iteration")
    lines = out.splitlines()
    assert status == 0
    assert lines[1] == "Snapshot end offset: 1727631, epoch: 1"
    assert lines[3].endswith('SnapshotHeader {"version":0,"lastContainedLogTimestamp":1767080811441}')
    assert lines[4].endswith('KRaftVersion {"version":0,"kRaftVersion":1}')
    assert '"endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}]' in lines[5]
    assert lines[-1].endswith('SnapshotFooter {"version":0}')
    metadata = next(golden.rglob(f"{ARTHUR}/__cluster_metadata-0/*0.log"))
    _status, out, _err = run("dump", "--files", str(metadata), "--deep-iteration")
    assert "controlType: LEADER_CHANGE(2)" in out


def test_skip_record_metadata_keeps_kafkas_prefix_quirk(golden: Path) -> None:
    """With --skip-record-metadata the key carries the ``| `` prefix; a keyless record's line starts with
    `` payload:`` (Kafka prints the indent only before a key)."""
    log = golden / f"{KAFKALITE}/numbers-0/00000000000000000000.log"
    _status, out, _err = run("dump", "--files", str(log), "--print-data-log", "--skip-record-metadata",
                             "--max-bytes", "300")
    lines = out.splitlines()
    assert lines[3] == " payload: 0"
    foo = golden / f"{BULLSHIT}/foo-0/00000000000000000000.log"
    _status, out, _err = run("dump", "--files", str(foo), "--value-decoder-class", "string",
                             "--skip-record-metadata", "--max-bytes", "40")
    assert out.splitlines()[3] == "| key: 0 payload: 0"


@pytest.mark.parametrize("flag", ["--deep-iteration", "--print-data-log"])
def test_json_carries_the_same_facts_as_the_text(golden: Path, flag: str) -> None:
    files = [golden / f"{KAFKALITE}/hamlet-none-0/00000000000000000000.log",
             next(golden.rglob("__cluster_metadata-0/00000000000000005151.index")),
             next(golden.rglob("__cluster_metadata-0/00000000000000005151.timeindex"))]
    if flag == "--deep-iteration":  # binary payloads would break the text into extra lines
        files.insert(0, next(golden.rglob(f"{ARTHUR}/__cluster_metadata-0/*51.log")))
    arg = ",".join(map(str, files))
    _s1, text, _e1 = run("dump", "--files", arg, flag)
    _s2, js, _e2 = run("dump", "--files", arg, flag, "--json")
    objects = [json.loads(line) for line in js.splitlines()]
    lines = text.split("\n")[:-1]
    assert len(objects) == len(lines)
    assert {o["type"] for o in objects} >= {"file", "logStart", "batch", "record", "indexEntry", "timeIndexEntry"}
    for line, obj in zip(lines, objects, strict=True):
        if obj["type"] in ("file", "logStart"):
            continue
        if "payload" in obj:
            assert line.endswith(f" payload: {obj['payload']}")
        for label, value in fields(line).items():
            if label in ("CreateTime", "LogAppendTime", "NoTimestampType"):
                key = "maxTimestamp" if obj["type"] == "batch" else "timestamp"
                assert obj["timestampType"] == label
                assert str(obj[key]) == value
            elif label == "deleteHorizonMs":
                assert value == "OptionalLong.empty" and obj[label] is None
            elif label == "headerKeys":
                assert value == "[" + ",".join(obj[label]) + "]"
            elif isinstance(obj[label], bool):
                assert value == str(obj[label]).lower()
            elif label == "crc" and line.startswith("| "):
                assert value == f"{obj[label]}}}"
            else:
                assert value == str(obj[label]), (line, label)


def test_index_and_time_index_entries(golden: Path, tmp_path: Path) -> None:
    directory = next(golden.rglob(f"{ARTHUR}/__cluster_metadata-0"))
    base = directory / "00000000000000005151"
    status, out, err = run("dump", "--files", f"{base}.index,{base}.timeindex")
    lines = out.splitlines()
    index_lines = [line for line in lines if line.startswith("offset: ")]
    data = (directory / "00000000000000005151.index").read_bytes()
    expected = [f"offset: {5151 + rel} position: {pos}" for rel, pos in struct.iter_unpack(">ii", data)]
    assert index_lines == expected
    time_lines = [line for line in lines if line.startswith("timestamp: ")]
    data = (directory / "00000000000000005151.timeindex").read_bytes()
    assert time_lines == [f"timestamp: {ts} offset: {5151 + rel}" for ts, rel in struct.iter_unpack(">qi", data)]
    assert status == 0 and err == ""
    # --verify-index-only prints nothing per entry; --index-sanity-check prints Kafka's line.
    status, out, _err = run("dump", "--files", f"{base}.index", "--verify-index-only")
    assert out.splitlines() == [f"Dumping {base}.index"] and status == 0
    status, out, _err = run("dump", "--files", f"{base}.index", "--index-sanity-check")
    assert out.splitlines()[1] == f"{base}.index passed sanity check."
    # An index entry moved to the wrong batch is a mismatch on stderr and exit status 1.
    copy = tmp_path / directory.name
    shutil.copytree(directory, copy)
    index = copy / "00000000000000005151.index"
    index.chmod(0o644)
    raw = bytearray(index.read_bytes())
    struct.pack_into(">i", raw, 4, struct.unpack_from(">i", raw, 12)[0])  # entry 0 takes entry 1's position
    index.write_bytes(bytes(raw))
    status, _out, err = run("dump", "--files", str(index))
    assert status == 1
    assert err.startswith(f"Mismatches in :{index}\n  Index offset: ")
    # Out-of-order time index entries.
    time_index = copy / "00000000000000005151.timeindex"
    time_index.chmod(0o644)
    raw = bytearray(time_index.read_bytes())
    raw[0:12], raw[12:24] = raw[12:24], raw[0:12]
    time_index.write_bytes(bytes(raw))
    status, _out, err = run("dump", "--files", str(time_index), "--verify-index-only")
    assert status == 1
    assert f"Found out of order timestamp in :{time_index}" in err or "not found in the log" in err


def test_kafkas_mismatch_lines_over_a_brokers_own_indexes_exit_0(golden: Path, tmp_path: Path) -> None:
    """Issue 30: a healthy broker's indexes hold entries Kafka's tool reports (a multi-batch append indexed by its
    last offset at its first batch; the zero first slot of a time index that holds no entry yet).  The lines stay
    Kafka's, the exit status is verify's rule: 0 here, 1 once an entry sends lookups to the wrong batch."""
    partition = shutil.copytree(golden / f"{DIPENDRASAINI}/invoice-0", tmp_path / "invoice-0")
    index = partition / "00000000000000000000.index"
    status, _out, err = run("dump", "--verify-index-only", "--files", str(index))
    assert err.startswith(f"Mismatches in :{index}\n  Index offset: 29971, log offset: 29917\n")
    assert status == 0, err
    offsets = golden / f"{YUANLIUBEI}/__consumer_offsets-17"
    time_index = shutil.copytree(offsets, tmp_path / offsets.name) / "00000000000000000058.timeindex"
    status, _out, err = run("dump", "--files", str(time_index))
    assert err.splitlines() == ["The following indexed offsets are not found in the log.",
                                "Indexed offset: 58, found log offset: 59"]
    assert status == 0
    # The first entry moved onto the second's batch: a lookup of its offset starts past the batch holding it.
    index.chmod(0o644)
    raw = bytearray(index.read_bytes())
    struct.pack_into(">i", raw, 4, struct.unpack_from(">i", raw, 12)[0])
    index.write_bytes(bytes(raw))
    status, _out, err = run("dump", "--verify-index-only", "--files", str(index))
    assert status == 1 and err.startswith(f"Mismatches in :{index}\n")


def test_trailing_invalid_bytes_and_a_flipped_crc(golden: Path, tmp_path: Path) -> None:
    source = golden / f"{BULLSHIT}/foo-0/00000000000000000000.log"
    log = tmp_path / "00000000000000000000.log"
    data = bytearray(source.read_bytes())
    data[30] ^= 0xFF  # inside the first (36-byte) message: its CRC no longer matches
    log.write_bytes(bytes(data) + b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00")
    status, out, _err = run("dump", "--files", str(log))
    lines = out.splitlines()
    assert status == 1
    assert lines[2].endswith("isvalid: false")
    assert lines[-1] == f"Found 10 invalid bytes at the end of {log.name}"
    status, out, _err = run("dump", "--files", str(log), "--max-bytes", str(len(data) + 10))
    assert "invalid bytes" not in out  # Kafka prints the line only without --max-bytes


def test_producer_snapshot_and_transaction_index(tmp_path: Path, golden: Path) -> None:
    entry = struct.pack(">qhiqiqiq", 4001, 3, 9, 120, 4, 1_700_000_000_123, 7, 110)
    body = struct.pack(">i", 1) + entry
    snapshot = tmp_path / "00000000000000000121.snapshot"
    snapshot.write_bytes(struct.pack(">hI", 1, _crc32c(body)) + body)
    txn = tmp_path / "00000000000000000000.txnindex"
    txn.write_bytes(struct.pack(">hqqqq", 0, 4001, 100, 110, 90) + b"\x00\x01")
    status, out, err = run("dump", "--files", f"{snapshot},{txn}")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[1] == ("producerId: 4001 producerEpoch: 3 coordinatorEpoch: 7 currentTxnFirstOffset: "
                        "OptionalLong[110] lastTimestamp: 1700000000123 firstSequence: 5 lastSequence: 9 "
                        "lastOffset: 120 offsetDelta: 4 timestamp: 1700000000123")
    assert lines[3] == "version: 0 producerId: 4001 firstOffset: 100 lastOffset: 110 lastStableOffset: 90"
    # Golden snapshots are empty (version 1, no entries): only the Dumping line.
    empty = next(golden.rglob("*.snapshot"))
    status, out, _err = run("dump", "--files", str(empty))
    assert status == 0 and out.splitlines() == [f"Dumping {empty}"]
    # A corrupt snapshot is reported with Kafka's message.
    snapshot.write_bytes(snapshot.read_bytes()[:-1] + b"\xff")
    status, _out, err = run("dump", "--files", str(snapshot))
    assert status == 1 and "Snapshot is corrupt (CRC is no longer valid)" in err


@pytest.mark.parametrize("content", [b"", os.urandom(4096), b"\x00" * 11, b"\xff" * 64])
def test_bad_files_give_a_message_not_a_traceback(tmp_path: Path, content: bytes) -> None:
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(content)
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(content[:16])
    time_index = tmp_path / "00000000000000000000.timeindex"
    time_index.write_bytes(content[:24])
    status, _out, err = run("dump", "--files", f"{log},{index},{time_index}", "--deep-iteration")
    assert "Traceback" not in err
    assert status in (0, 1)
    assert (status == 0) == (content == b"")


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    status, out, err = run("dump", "--files", str(tmp_path / "00000000000000000000.log"))
    assert (status, out) == (2, "")
    assert err == f"kafkalog dump: error: {tmp_path / '00000000000000000000.log'}: no such file or directory\n"
    (tmp_path / "00000000000000000000.log").mkdir()
    status, _out, err = run("dump", "--files", str(tmp_path / "00000000000000000000.log"))
    assert status == 2 and "a directory without segment files" in err and "Traceback" not in err
    bad_name = tmp_path / "segment.log"
    bad_name.write_bytes(b"")
    status, _out, err = run("dump", "--files", str(bad_name))
    assert status == 2 and "not named after an offset" in err
    (tmp_path / "notes.txt").write_text("x")
    # Kafka's line for a file of unknown suffix, but exit 2 where Kafka's tool exits 0.
    status, _out, err = run("dump", "--files", str(tmp_path / "notes.txt"))
    assert status == 2 and err == f"Ignoring unknown file {tmp_path / 'notes.txt'}\n"
    status, _out, err = run("dump", "--files", str(bad_name), "--share-group-state-decoder")
    assert status == 2 and "not supported" in err
    status, _out, _err = run("dump")
    assert status == 2  # --files is required


def test_an_empty_partition_dir_has_nothing_to_dump(tmp_path: Path) -> None:
    """A dir named as a partition with no segment yet is a valid, empty partition: a note, exit 0; the same
    dir under a name that is no partition's is an error (exit 2)."""
    empty = tmp_path / "events-0"
    empty.mkdir()
    (empty / "leader-epoch-checkpoint").write_text("0\n0\n")
    status, out, err = run("dump", "--files", str(empty))
    assert (status, out) == (0, "")
    assert err == f"kafkalog dump: {empty}: a partition dir without segment files: nothing to dump\n"
    status, out, _err = run("dump", "--json", "--files", str(empty))
    assert status == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        {"type": "note", "file": str(empty), "message": "a partition dir without segment files: nothing to dump"}]
    other = tmp_path / "not a partition"
    other.mkdir()
    status, _out, err = run("dump", "--files", str(other))
    assert status == 2 and "a directory without segment files" in err


def test_files_takes_a_partition_dir(tmp_path: Path) -> None:
    """``--files DIR`` dumps the dir's segment files by base offset, .log, .index, .timeindex, .txnindex
    within a segment, exactly as naming them one by one does; other files in the dir are left out, and a
    file of unknown suffix named beside the dir still makes the exit status 2 after everything is dumped."""
    from kafkalog.config.log_config import LogConfig
    from kafkalog.manager.log_manager import LogManager
    from kafkalog.record import MemoryRecords
    from kafkalog.topic import TopicPartition

    with LogManager(tmp_path / "logs", LogConfig({"segment.bytes": 2048, "index.interval.bytes": 256})) as manager:
        log = manager.create_log(TopicPartition("events", 0))
        for i in range(0, 200, 10):
            log.append(MemoryRecords.with_records(
                [(f"k{j}".encode(), f"value {i + j}".encode(), 1_700_000_000_000 + i + j) for j in range(10)]))
    partition = tmp_path / "logs" / "events-0"
    (partition / "00000000000000000000.txnindex").write_bytes(b"")
    (partition / "notes.txt").write_text("not a segment file")
    bases = sorted({int(p.name.split(".")[0]) for p in partition.glob("*.log")})
    assert len(bases) >= 3
    expected = [str(partition / f"{base:020d}{suffix}") for base in bases
                for suffix in (".log", ".index", ".timeindex", ".txnindex")
                if (partition / f"{base:020d}{suffix}").exists()]
    status, out, err = run("dump", "--files", str(partition), "--deep-iteration")
    one_by_one = run("dump", "--files", ",".join(expected), "--deep-iteration")
    assert (status, out, err) == one_by_one
    assert status in (0, 1) and "Traceback" not in err  # Kafka's index check may report mismatches
    assert [line.removeprefix("Dumping ") for line in out.splitlines() if line.startswith("Dumping ")] == expected
    assert "notes.txt" not in out + err and ".snapshot" not in out
    status, out, err = run("dump", "--files", f"{partition}/,{partition / 'notes.txt'}")
    assert status == 2
    assert out.splitlines()[0] == f"Dumping {expected[0]}"
    assert err.splitlines()[-1] == f"Ignoring unknown file {partition / 'notes.txt'}"
    status, out, _err = run("dump", "--files", str(partition), "--json")
    assert [json.loads(line)["file"] for line in out.splitlines() if json.loads(line)["type"] == "file"] == expected


def test_deep_iteration_is_linear_in_offset_gaps(tmp_path: Path) -> None:
    """A compacted segment has a gap between almost every two records.  ``--deep-iteration`` notes each gap
    for its report in O(1), as Kafka prepends to a Scala list, and keeps the notes out of memory past a
    bound, so 250,000 gaps cost about what 250,000 consecutive records do, plus the report's lines (the port
    inserted at the head of a Python list, quadratic: 88 s for 400,000 gaps against 8 s without).  Timed
    against the same dump without gaps, so the bound holds on a slow machine too.  The report lists the
    gaps newest first, Kafka's order."""
    import time

    from kafkalog.record.batch import build_default_batch

    n = 250_000
    times = {}
    for name, step in (("consecutive", 1), ("gaps", 2)):
        path = tmp_path / name / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(build_default_batch([(None, None, 0)] * n, offset_deltas=range(0, step * n, step)))
        start = time.perf_counter()
        status, out, err = run("dump", "--files", str(path), "--deep-iteration", "--skip-record-metadata")
        times[name] = time.perf_counter() - start
        assert status == 0
        assert len(out.splitlines()) == 1 + 2 + n  # Dumping, the start offset, the batch, a line per record
    assert times["gaps"] < 4 * times["consecutive"] + 1, times
    lines = err.splitlines()
    assert lines[0] == f"Non-consecutive offsets in {path.absolute()}"
    assert len(lines) == n
    assert lines[1] == f"  {2 * n - 4} is followed by {2 * n - 2}"
    assert lines[-1] == "  0 is followed by 2"
    assert all(line == f"  {2 * i} is followed by {2 * i + 2}" for i, line in zip(range(n - 2, -1, -1), lines[1:],
                                                                                   strict=True))


def test_index_sanity_check_checks_a_transaction_index(tmp_path: Path) -> None:
    """Issue 28: ``--index-sanity-check`` passed a ``.txnindex`` that fails Kafka's ``TransactionIndex.sanityCheck``
    (the check a broker's open rebuilds it on) by printing its entries, as Kafka's tool does.  kafkalog runs the
    check, as for the other indexes: ``passed sanity check.``, or the check's error and exit status 1.  Without the
    option the entries are printed, a chunk at a time."""
    from kafkalog.transaction_index import AbortedTxn

    index = tmp_path / "00000000000000000002.txnindex"
    index.write_bytes(AbortedTxn(7, 1, 2, 3).to_bytes())
    status, out, err = run("dump", "--index-sanity-check", "--files", str(index))
    assert (status, out.splitlines(), err) == (0, [f"Dumping {index}", f"{index} passed sanity check."], "")
    index.write_bytes(AbortedTxn(7, 1, 2, 3).to_bytes() + AbortedTxn(8, 0, 1, 2).to_bytes())
    status, out, err = run("dump", "--index-sanity-check", "--files", str(index))
    assert status == 1 and out.splitlines() == [f"Dumping {index}"]
    assert (f"Last offset of aborted transaction AbortedTxn(version=0, producerId=8, firstOffset=0, lastOffset=1, "
            f"lastStableOffset=2) in index {index} is less than start offset 2") in err
    status, out, _err = run("dump", "--files", str(index))
    assert status == 0 and out.splitlines()[1:] == [
        "version: 0 producerId: 7 firstOffset: 1 lastOffset: 2 lastStableOffset: 3",
        "version: 0 producerId: 8 firstOffset: 0 lastOffset: 1 lastStableOffset: 2"]
    status, out, _err = run("dump", "--index-sanity-check", "--json", "--files", str(index))
    assert status == 1 and [json.loads(line)["type"] for line in out.splitlines()] == ["file", "problem"]


def test_record_lines_from_columns_are_the_record_objects_lines(tmp_path: Path, impl: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A deep dump prints a v2 data batch's records from the decoded columns, a chunk at a time (issue 32: the
    dump beside Kafka's); its lines are those the record-object path prints, for headers (none, one, several,
    non-ASCII keys), producer sequences (none, and one wrapping past Integer.MAX_VALUE), every codec, a batch of
    more records than a decode chunk holds, and offsets with gaps (a compacted log's)."""
    from kafkalog import MemoryRecords
    from kafkalog.cli.dump import DumpLogSegments
    from kafkalog.record.batch import CHUNK_RECORDS

    batches = [
        MemoryRecords.with_records([(b"k", b"v", 1_700_000_000_000 + i) for i in range(5)]),
        MemoryRecords.with_records([(b"k", None, 1_700_000_000_000, [("h\u00e9", b"x"), ("two", None)]),
                                    (None, b"v" * 300, 1_700_000_000_001), (b"", b"", 1_700_000_000_002, [("a", b"")])],
                                   compression="zstd", base_offset=5, producer_id=7, producer_epoch=1,
                                   base_sequence=2**31 - 2),
        MemoryRecords.with_records([(b"key-%d" % i, b"value", 1_700_000_000_000) for i in range(CHUNK_RECORDS + 7)],
                                   compression="lz4", base_offset=100, producer_id=8, producer_epoch=0,
                                   base_sequence=0),
    ]
    # Offsets 0-4, 5-7, then a gap to 100: the record path reports the gap too.
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(bytes(records.buffer) for records in batches))
    columns = run("dump", "--deep-iteration", "--files", str(path))
    monkeypatch.setattr(DumpLogSegments, "_print_record_lines", DumpLogSegments._print_record_objects)
    objects = run("dump", "--deep-iteration", "--files", str(path))
    assert columns == objects
    assert columns[0] == 0
    assert "Non-consecutive offsets" in columns[2] and "7 is followed by 100" in columns[2]
    assert "headerKeys: [h\u00e9,two]" in columns[1] and "sequence: 2147483647" in columns[1]
    assert "| offset: 7 CreateTime: 1700000000002 keySize: 0 valueSize: 0 sequence: 0 headerKeys: [a]" in columns[1]
    assert columns[1].count("| offset: ") == 5 + 3 + CHUNK_RECORDS + 7
