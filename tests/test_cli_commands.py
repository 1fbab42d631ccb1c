"""``kafkalog verify``, ``recover``, ``clean``, ``stats`` and ``demo``, checked against the library."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import struct
from pathlib import Path
from typing import Any

import pytest

from kafkalog import cleaner as cleaner_module
from kafkalog.cli import main
from kafkalog.config import LogConfig
from kafkalog.demo import run as run_demo
from kafkalog.fsutil import DirLock, interrupts_deferred
from kafkalog.log import Log
from kafkalog.manager import LogManager
from kafkalog.record import MemoryRecords
from kafkalog.topic import TopicPartition
from kafkalog.verify import classify_dir, verify_log_dir


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def copy_tree(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    for root, dirs, files in os.walk(target):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return target


def golden_log_dirs(golden: Path) -> list[Path]:
    found = []
    for directory in sorted(p for p in golden.rglob("*") if p.is_dir()):
        try:
            if classify_dir(directory) == "logdir" and directory != golden:
                found.append(directory)
        except Exception:
            continue
    return found


# -- verify -------------------------------------------------------------------------------------------

def test_verify_passes_every_golden_log_dir(golden: Path, impl: Any) -> None:
    """Every golden log dir verifies clean, except the one whose MISSING.txt says a segment's .log was
    not copied: there the checkpoints rightly point past the surviving log end."""
    dirs = golden_log_dirs(golden)
    assert len(dirs) >= 13
    for directory in dirs:
        report = verify_log_dir(directory)
        errors = [f for p in report.partitions for f in p.errors]
        if directory.parent.name == "ArthurArutunyan04__Backend_labs":
            assert "__consumer_offsets-19/00000000000000258527.log" in (directory.parent / "MISSING.txt").read_text()
            assert {f.path.rsplit("/", 1)[1] for f in errors} == {"recovery-point-offset-checkpoint",
                                                                 "replication-offset-checkpoint"}
            assert all("__consumer_offsets-19" in f.message and "258527" in f.message for f in errors)
        else:
            assert errors == [], directory
    status, out, _err = run("verify", str(golden / "xpxwo100__bullShit/tmp/kafka-logs"))
    assert status == 0
    assert "TEST-TOPIC-0" in out and "21211" in out and out.rstrip().endswith("4 partitions checked, 0 errors")


@pytest.fixture
def ronem(golden: Path, tmp_path: Path) -> Path:
    """A writable copy of a KRaft log dir with a multi-segment metadata log and both indexes."""
    return copy_tree(golden / "ronem123__rupia-transaction-service/kafka-logs", tmp_path / "kafka-logs")


def _verify_errors(directory: Path) -> list[str]:
    status, out, _err = run("verify", "--json", str(directory))
    objects = [json.loads(line) for line in out.splitlines()]
    errors = [f["message"] for o in objects for f in o["findings"] if f["severity"] == "error"]
    assert status == (1 if errors else 0)
    return errors


def test_verify_finds_each_planted_fault(ronem: Path) -> None:
    assert _verify_errors(ronem) == []
    metadata = ronem / "__cluster_metadata-0"
    log = metadata / "00000000000001725413.log"
    pristine = log.read_bytes()
    # A flipped byte inside a batch.
    data = bytearray(pristine)
    data[5000] ^= 0x40
    log.write_bytes(bytes(data))
    assert any("fails its CRC check" in m for m in _verify_errors(ronem))
    # A truncated tail.
    log.write_bytes(pristine[:-7])
    assert any("not a whole batch" in m for m in _verify_errors(ronem))
    log.write_bytes(pristine)
    # An index entry pointing at the wrong batch (a later one).
    index = metadata / "00000000000001725413.index"
    pristine_index = index.read_bytes()
    raw = bytearray(pristine_index)
    struct.pack_into(">i", raw, 4, struct.unpack_from(">i", raw, 4 + 8 * 3)[0])
    index.write_bytes(bytes(raw))
    assert any("points past the batch holding offset" in m for m in _verify_errors(ronem))
    index.write_bytes(pristine_index)
    assert _verify_errors(ronem) == []
    # Out-of-order time index.
    time_index = metadata / "00000000000001725413.timeindex"
    raw = bytearray(time_index.read_bytes())
    raw[12:24], raw[24:36] = raw[24:36], raw[12:24]
    time_index.write_bytes(bytes(raw))
    assert any("timestamps out of order" in m for m in _verify_errors(ronem))


def test_verify_bad_input(tmp_path: Path) -> None:
    status, _out, err = run("verify", str(tmp_path / "missing"))
    assert status == 2 and "No such directory" in err
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("x")
    status, _out, err = run("verify", str(tmp_path / "notes"))
    assert status == 2 and "neither a partition dir" in err and "Traceback" not in err
    part = tmp_path / "random-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(os.urandom(5000))
    status, out, err = run("verify", str(part))
    assert status == 1 and "Traceback" not in err and "RESULT" in out


# -- recover -------------------------------------------------------------------------------------------

def _build_log_dir(root: Path, records: int = 300) -> Path:
    config = LogConfig({"segment.bytes": 4096, "index.interval.bytes": 512})
    with LogManager(root, config) as manager:
        log = manager.create_log(TopicPartition("events", 0))
        for i in range(0, records, 10):
            log.append(MemoryRecords.with_records(
                [(f"key-{(i + j) % 17}".encode(), f"value {i + j}".encode(), 1_700_000_000_000 + i + j)
                 for j in range(10)]))
    return root / "events-0"


def test_recover_truncates_a_torn_write_and_rebuilds_a_lost_index(tmp_path: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    with Log(partition, read_only=True) as before:
        expected = [(r.offset, r.key, r.value) for r in before.records()]
    segments = sorted(partition.glob("*.log"))
    with open(segments[-1], "ab") as f:
        f.write(b"\x00" * 8 + b"\x00\x00\x01\x00" + b"torn")
    segments[0].with_suffix(".index").unlink()
    status, out, err = run("recover", "--full", str(partition))
    assert status == 0, err
    assert f"rebuilt the indexes of segment {int(segments[0].stem)}: offset index missing" in out
    assert f"segment {int(segments[-1].stem)}: truncated 16 B (16 bytes)" in out
    with Log(partition, read_only=True) as after:
        assert [(r.offset, r.key, r.value) for r in after.records()] == expected
    assert segments[0].with_suffix(".index").exists()
    assert verify_log_dir(tmp_path / "logs").ok
    # The recovery point is checkpointed at the log end.
    checkpoint = (tmp_path / "logs" / "recovery-point-offset-checkpoint").read_text().split("\n")
    assert f"events 0 {len(expected)}" in checkpoint
    status, out, _err = run("recover", "--json", str(partition))
    assert status == 0 and json.loads(out)["truncatedBytes"] == 0


def test_recover_and_clean_refuse_a_locked_log_dir_and_non_partitions(tmp_path: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs", 20)
    with DirLock(tmp_path / "logs"):
        for command in ("recover", "clean"):
            status, _out, err = run(command, str(partition))
            assert status == 2 and "Failed to acquire lock" in err
    status, _out, err = run("recover", str(tmp_path / "logs"))
    assert status == 2 and "is a log dir" in err
    status, _out, err = run("clean", str(tmp_path / "nothing-0"))
    assert status == 2 and "Traceback" not in err


# -- clean and stats -----------------------------------------------------------------------------------

def test_clean_until_clean_keeps_the_latest_value_per_key(tmp_path: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    with Log(partition, read_only=True) as before:
        records = list(before.records())
        active_base = before.active_segment.base_offset
    latest = {r.key: (r.offset, r.value) for r in records if r.offset < active_base}
    status, out, err = run("clean", "--until-clean", str(partition))
    assert status == 0, err
    assert "Log cleaner thread 0 cleaned log events-0" in out and "MB of log processed" in out
    with Log(partition, read_only=True) as after:
        kept = [r for r in after.records() if r.offset < active_base]
        tail = [(r.offset, r.value) for r in after.records() if r.offset >= active_base]
    assert {r.key: (r.offset, r.value) for r in kept} == latest
    assert len(kept) == len(latest)
    assert tail == [(r.offset, r.value) for r in records if r.offset >= active_base]
    assert not list(partition.glob("*.cleaned")) and not list(partition.glob("*.swap"))
    status, out, _err = run("clean", str(partition))
    assert status == 0 and "Nothing to clean" in out


def test_stats_agree_with_the_library(tmp_path: Path, golden: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    status, out, err = run("stats", "--json", str(tmp_path / "logs"))
    assert status == 0, err
    (stats,) = [json.loads(line) for line in out.splitlines()]
    with Log(partition, read_only=True) as log:
        records = list(log.records())
        assert stats["segments"] == log.number_of_segments and stats["size"] == log.size()
    assert stats["records"] == len(records) == 300
    assert stats["distinct_keys"] == len({r.key for r in records}) == 17
    assert stats["min_timestamp"] == min(r.timestamp for r in records)
    assert stats["max_timestamp"] == max(r.timestamp for r in records)
    assert stats["codecs"] == {"none": 30} and stats["magics"] == {"v2": 30}
    assert 0 < stats["dirty_ratio"] <= 1
    status, out, _err = run("stats", "--csv", str(golden / "asayers__kafkalite/tests/test-data/fs-data"))
    rows = out.splitlines()
    assert rows[0].startswith("topic,partition,segments,size")
    assert any(row.startswith("hamlet-gzip,0,1,143118,0,5382,22,5382,") and "gzip:22" in row for row in rows)
    status, out, _err = run("stats", str(golden / "xpxwo100__bullShit/tmp/kafka-logs"))
    assert status == 0 and "TEST-TOPIC-0" in out and "21211" in out


# -- Ctrl-C --------------------------------------------------------------------------------------------

def test_interrupts_are_held_until_the_block_ends() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("finished")
    assert done == ["finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_interrupted_clean_leaves_no_cleaned_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    before = sorted(p.name for p in partition.iterdir())

    def interrupted(*_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cleaner_module.Cleaner, "clean_into", interrupted)
    status, _out, err = run("clean", str(partition))
    assert status == 130 and err.strip() == "kafkalog: interrupted"
    assert sorted(p.name for p in partition.iterdir()) == before


# -- the tour ------------------------------------------------------------------------------------------

def test_demo_tour_runs_every_step(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_demo(str(tmp_path / "tour"), out) == 0
    text = out.getvalue()
    for step in ("1. A log dir", "2. Appending", "3. Reading", "4. Retention", "5. Compaction", "6. A crash",
                 "7. The result"):
        assert f"== {step}" in text
    assert "bytes of torn write truncated" in text and "indexes rebuilt" in text
    assert "| offset: " in text
    assert verify_log_dir(tmp_path / "tour" / "kafka-logs").ok
