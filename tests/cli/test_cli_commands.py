"""``kafkalog verify``, ``recover``, ``clean``, ``stats`` and ``demo``, checked against the library."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkalog import cleaner as cleaner_module
from kafkalog.cleaner import LogCleaner
from kafkalog.cleaner.config import CleanerConfig
from kafkalog.cli import console as console_module
from kafkalog.cli import main
from kafkalog.cli.console import counted, format_bytes
from kafkalog.cli.demo import tour
from kafkalog.config.log_config import LogConfig
from kafkalog.fsutil import DirLock, interrupts_deferred
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import MemoryRecords
from kafkalog.segment import LogSegment
from kafkalog.tools.verify import verify_log_dir
from kafkalog.topic import TopicPartition
from tests.support.golden_data import BULLSHIT, DANIELOWO, DIPENDRASAINI, KAFKALITE, RONEM, YUANLIUBEI
from tests.support.log_test_utils import golden_log_dirs

#: What ``clean`` needs to compact a partition dir with no KRaft metadata log beside it to say its policy.
COMPACT = ("--config", "cleanup.policy=compact")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def copy_tree(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    os.chmod(target, 0o755)  # writable as its children are: opening a log creates files in it
    for root, dirs, files in os.walk(target):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return target


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
    status, out, _err = run("verify", str(golden / BULLSHIT))
    assert status == 0
    assert "TEST-TOPIC-0" in out and "21211" in out and out.rstrip().endswith("4 partitions checked, 0 errors")


@pytest.fixture
def ronem(golden: Path, tmp_path: Path) -> Path:
    """A writable copy of a KRaft log dir with a multi-segment metadata log and both indexes."""
    return copy_tree(golden / RONEM, tmp_path / "kafka-logs")


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
    status, out, err = run("verify", str(tmp_path / "missing"))
    assert (status, out) == (2, "")
    assert err == f"kafkalog verify: error: {tmp_path / 'missing'}: no such file or directory\n"
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("x")
    status, out, err = run("verify", str(tmp_path / "notes"))
    assert status == 2 and "neither a partition dir" in err and "Traceback" not in err and out == ""
    part = tmp_path / "random-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(os.urandom(5000))
    status, out, err = run("verify", str(part))
    assert status == 1 and "Traceback" not in err and "RESULT" in out


@pytest.mark.parametrize("argv", [["verify", "{missing}"], ["verify", "--json", "{missing}"], ["stats", "{missing}"],
                                  ["stats", "--csv", "{missing}"], ["clean", "{missing}"], ["recover", "{missing}"],
                                  ["dump", "--files", "{missing}"], ["verify", "{present}", "{missing}"],
                                  ["stats", "{missing}", "{present}"]])
def test_a_missing_path_is_one_line_and_exit_2(tmp_path: Path, argv: list[str]) -> None:
    """Whatever else it is given, a command given a path that does not exist says so in one line, in
    argparse's style, and prints nothing on stdout: no empty table, no partial output."""
    present = _build_log_dir(tmp_path / "logs", records=20)
    missing = tmp_path / "logs" / "nope-0"
    argv = [a.format(missing=missing, present=present) for a in argv]
    status, out, err = run(*argv)
    assert (status, out) == (2, "")
    assert err == f"kafkalog {argv[0]}: error: {missing}: no such file or directory\n"
    # Through the console script too: the same line, no traceback.
    child = subprocess.run([sys.executable, "-m", "kafkalog", "--no-progress", *argv], capture_output=True,
                           text=True, timeout=120, check=False)
    assert (child.returncode, child.stdout, child.stderr) == (2, "", err)


@pytest.mark.parametrize(("argv", "level"), [(["-v", "verify", "{dir}"], logging.INFO),
                                             (["verify", "{dir}", "-v"], logging.INFO),
                                             (["verify", "-v", "{dir}"], logging.INFO),
                                             (["verify", "{dir}", "-vv"], logging.DEBUG),
                                             (["-v", "verify", "{dir}", "--verbose"], logging.DEBUG),
                                             (["stats", "{dir}", "--json", "-v"], logging.INFO),
                                             (["verify", "{dir}"], logging.NOTSET)])
def test_global_flags_work_after_the_command(tmp_path: Path, argv: list[str], level: int) -> None:
    """``-v`` and ``--no-progress`` mean the same before the subcommand, after it or after its arguments;
    given twice, the ``-v`` count adds up."""
    partition = _build_log_dir(tmp_path / "logs", records=20)
    argv = [a.format(dir=partition) for a in argv]
    root = logging.getLogger("kafkalog")
    saved = root.handlers[:], root.level
    try:
        out, err = io.StringIO(), io.StringIO()
        status = main([*argv, "--no-progress"], stdout=out, stderr=err)
        assert status == 0, err.getvalue()
        assert root.level == level
        assert ("kernels" in err.getvalue()) == (level != logging.NOTSET)  # the first INFO line main logs
        assert "PARTITION" in out.getvalue() or json.loads(out.getvalue())["records"] == 20
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_no_progress_works_after_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partition = _build_log_dir(tmp_path / "logs", records=20)
    monkeypatch.setattr(console_module, "_is_terminal", lambda _stream: True)
    for argv, bar in ((["stats", str(partition)], True), (["stats", str(partition), "--no-progress"], False),
                      (["--no-progress", "stats", str(partition)], False)):
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, stdout=out, stderr=err) == 0
        assert ("stats" in err.getvalue()) == bar, (argv, err.getvalue())


def test_stats_reports_crc_failures(tmp_path: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs", records=40)
    status, out, err = run("stats", "--json", str(partition))
    assert (status, err) == (0, "") and json.loads(out)["crcFailures"] == 0
    segment = sorted(partition.glob("*.log"))[0]
    data = segment.read_bytes()
    assert data.count(b"value 5\x00") == 1  # one record's value, then its header count
    segment.write_bytes(data.replace(b"value 5\x00", b"value X\x00"))
    warning = f"kafkalog stats: {partition}: warning: 1 batch failed the CRC check"
    status, out, err = run("stats", "--json", str(partition))
    assert status == 1 and err.startswith(warning)
    stats = json.loads(out)
    assert stats["crcFailures"] == 1 and stats["records"] == 40
    status, out, err = run("stats", str(partition))
    assert status == 1 and err.startswith(warning) and "events-0" in out
    status, out, _err = run("stats", "--csv", str(partition))
    header, row = out.splitlines()
    assert dict(zip(header.split(","), row.split(","), strict=True))["crcFailures"] == "1"


def test_stats_warns_of_a_torn_tail_as_verify_reports_it(tmp_path: Path) -> None:
    """Issue 30: 1,000 bytes cut off the end of the last segment leave a torn batch, which stats read past in
    silence with exit status 0.  It warns, in verify's words (how many bytes, at which position), counts the bytes
    (``invalidTailBytes``) and exits 1, as verify does for the same dir."""
    partition = _build_log_dir(tmp_path / "logs", records=280)
    last = sorted(partition.glob("*.log"))[-1]
    data = last.read_bytes()
    assert len(data) > 2000
    last.write_bytes(data[:-1000])
    with Log(partition, read_only=True) as log:
        end = sum(batch.size_in_bytes for batch in log.log_segments()[-1].log.batches())
    torn = len(data) - 1000 - end
    assert 0 < torn < 1000
    message = f"{torn} bytes at position {end} are not a whole batch (a torn write: recovery truncates them)"
    status, out, err = run("verify", str(partition))
    assert status == 1 and f"ERROR {last}: {message}" in out
    status, out, err = run("stats", "--json", str(partition))
    assert status == 1
    assert err == (f"kafkalog stats: {partition}: warning: {last.name}: {message}; the batches before them are "
                   "counted (kafkalog verify says more)\n")
    stats = json.loads(out)
    assert stats["invalidTailBytes"] == torn and stats["invalidTails"] == [f"{last.name}: {message}"]
    assert stats["records"] == 240 and stats["crcFailures"] == 0
    # The last segment's index points past the cut; the log end is where recovery would leave it, as verify says.
    assert stats["logEndOffset"] == 240
    status, out, _err = run("stats", "--csv", str(partition))
    header, row = out.splitlines()
    assert status == 1 and dict(zip(header.split(","), row.split(","), strict=True))["invalidTailBytes"] == str(torn)


def test_verify_and_stats_show_the_last_offset(tmp_path: Path) -> None:
    """Issue 30: the OFFSETS column showed ``0..40`` for a log whose last offset is 39; both commands show the first
    and the last offset (stats: ``empty at N`` for a log that holds none), and their JSON keeps the log end
    offset."""
    partition = _build_log_dir(tmp_path / "logs", records=40)
    empty = tmp_path / "logs" / "quiet-0"
    empty.mkdir()
    for command in ("verify", "stats"):
        status, out, err = run(command, str(tmp_path / "logs"))
        assert status == 0, err
        rows = {line.split()[0]: line for line in out.splitlines()[2:] if line.strip()}
        assert " 0..39 " in rows["events-0"] and " 0..40 " not in rows["events-0"]
        # verify reads offsets from segments only: a dir without one has none to show.
        assert (" - " if command == "verify" else " empty at 0 ") in rows["quiet-0"]
    for command in ("verify", "stats"):
        status, out, _err = run(command, "--json", str(partition))
        assert status == 0 and json.loads(out.splitlines()[0])["logEndOffset"] == 40


def test_stats_of_no_readable_dir_prints_no_table(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("x")
    status, out, err = run("stats", str(tmp_path / "notes"))
    assert status == 2 and out == "" and "neither a partition dir" in err


# Run as root, a child drops from its capability bounding set the two capabilities that let root read
# any file (CAP_DAC_OVERRIDE 1, CAP_DAC_READ_SEARCH 2; prctl PR_CAPBSET_DROP 24), then execs the command,
# which so runs subject to file modes.
_WITHOUT_DAC_OVERRIDE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for capability in (1, 2):
    if libc.prctl(24, capability, 0, 0, 0) != 0:
        sys.exit(f"prctl: {os.strerror(ctypes.get_errno())}")
os.execv(sys.executable, [sys.executable, "-m", "kafkalog", "--no-progress", *sys.argv[1:]])
"""


def test_unreadable_files_get_a_clear_message(golden: Path, tmp_path: Path) -> None:
    """A segment the user may not read: a clear message naming it and a non-zero exit, never a traceback."""
    partition = copy_tree(golden / f"{BULLSHIT}/foo-0", tmp_path / "logs" / "foo-0")
    segment = partition / "00000000000000000000.log"
    segment.chmod(0)
    commands = [["verify", str(partition)], ["stats", str(partition)], ["dump", "--files", str(segment)],
                ["recover", str(partition)], ["clean", *COMPACT, str(partition)]]
    for argv in commands:
        if os.geteuid() == 0:
            child = subprocess.run([sys.executable, "-c", _WITHOUT_DAC_OVERRIDE, *argv], capture_output=True,
                                   text=True, timeout=120, check=False)
            assert not child.stderr.startswith("prctl"), child.stderr
            status, out, err = child.returncode, child.stdout, child.stderr
        else:
            status, out, err = run(*argv)
        assert status in (1, 2), (argv, status, err)
        # verify lists the file among its findings on stdout; the others stop with a message on stderr.
        message = out if argv[0] == "verify" else err
        assert "Permission denied" in message and str(segment) in message, (argv, out, err)
        assert "Traceback" not in err, err


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


def test_recover_counts_the_bytes_it_cuts_while_rebuilding_a_missing_or_corrupt_index(tmp_path: Path,
                                                                                      impl: Any) -> None:
    """Issue 30: a segment whose offset index is missing or corrupt is recovered while it is loaded, and the bytes
    that cut were lost from the report: ``intact, indexes rebuilt`` and ``truncatedBytes`` 0 over a log that
    lost its torn tail.  Every byte gone from the ``.log`` files is in the report, per segment and in all, in
    the text and in the JSON, whichever path recovered the segment (below the recovery point, the active one)."""
    torn = bytes(range(37))  # shorter than any batch header: a torn write whatever its bytes
    for output in ("text", "json"):
        partition = _build_log_dir(tmp_path / output / "logs")
        segments = sorted(partition.glob("*.log"))
        assert len(segments) >= 3
        first, active = segments[0], segments[-1]
        for log_file in (first, active):
            with open(log_file, "ab") as f:
                f.write(torn)
        first.with_suffix(".index").write_bytes(b"\x00" * 3)  # not a whole entry: corrupt
        active.with_suffix(".index").unlink()
        sizes = {log_file: log_file.stat().st_size for log_file in segments}
        status, out, err = run("recover", *(["--json"] if output == "json" else []), str(partition))
        assert status == 0, err
        assert {log_file: log_file.stat().st_size for log_file in segments} == \
            {log_file: size - (len(torn) if log_file in (first, active) else 0) for log_file, size in sizes.items()}
        if output == "json":
            report = json.loads(out)
            assert report["truncatedBytes"] == 2 * len(torn)
            assert {s["baseOffset"]: s["truncatedBytes"] for s in report["recoveredSegments"]} == \
                {int(first.stem): len(torn), int(active.stem): len(torn)}
        else:
            assert f"segment {int(first.stem)}: truncated 37 B (37 bytes) of torn or corrupt data" in out
            assert f"segment {int(active.stem)}: truncated 37 B (37 bytes) of torn or corrupt data" in out
            assert "intact" not in out and "Truncated 74 bytes in all" in out
        assert verify_log_dir(tmp_path / output / "logs").ok


def test_recover_counts_a_random_segment_cut_to_nothing(tmp_path: Path) -> None:
    """Issue 30: a 5,000-byte ``.log`` of random bytes and no index is cut to nothing, and says so."""
    partition = tmp_path / "logs" / "noise-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000000.log").write_bytes(bytes((i * 97 + 13) % 256 for i in range(5000)))
    status, out, err = run("recover", "--json", str(partition))
    assert status == 0, err
    report = json.loads(out)
    assert report["truncatedBytes"] == 5000 and report["recoveredSegments"] == [
        {"baseOffset": 0, "truncatedBytes": 5000}]
    assert (partition / "00000000000000000000.log").stat().st_size == 0


MARKER = b'{"version":0,"brokerEpoch":42}'


def test_a_failed_recover_puts_the_clean_shutdown_marker_back(tmp_path: Path) -> None:
    """Issue 30: a recover that fails (here a producer snapshot it cannot delete, in a partition dir it may not
    change) put the broker's ``.kafka_cleanshutdown`` back as it found it, byte for byte, and says so."""
    partition = _build_log_dir(tmp_path / "logs")
    marker = tmp_path / "logs" / ".kafka_cleanshutdown"
    marker.write_bytes(MARKER)
    before = {f.name: f.read_bytes() for f in partition.iterdir()}
    partition.chmod(0o555)
    try:
        argv = ["recover", "--full", str(partition)]
        if os.geteuid() == 0:
            child = subprocess.run([sys.executable, "-c", _WITHOUT_DAC_OVERRIDE, *argv], capture_output=True,
                                   text=True, timeout=120, check=False)
            status, err = child.returncode, child.stderr
        else:
            status, _out, err = run(*argv)
    finally:
        partition.chmod(0o755)
    assert status == 2 and "Error while deleting producer snapshot" in err, err
    assert f"the clean-shutdown marker of {tmp_path / 'logs'} was put back as it was" in err
    assert marker.read_bytes() == MARKER
    assert {f.name: f.read_bytes() for f in partition.iterdir()} == before


def test_a_recover_failing_after_it_changed_a_segment_leaves_it_to_the_next_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: the marker goes back after a failure that came once recovery had emptied an index: the segments
    the run changed lose their offset index, which makes any next open, a clean one too, recover them."""
    partition = _build_log_dir(tmp_path / "logs")
    marker = tmp_path / "logs" / ".kafka_cleanshutdown"
    marker.write_bytes(MARKER)
    with Log(partition, read_only=True) as log:
        expected = [(r.offset, r.key, r.value) for r in log.records()]
        bases = [s.base_offset for s in log.log_segments()]
    assert len(bases) >= 3
    recover = LogSegment.recover

    def fail_on_the_second(segment: LogSegment, *args: Any, **kwargs: Any) -> int:
        if segment.base_offset == bases[1]:
            segment.offset_index.reset()  # torn down, then the disk fails
            raise OSError(28, "No space left on device")
        return recover(segment, *args, **kwargs)

    monkeypatch.setattr(LogSegment, "recover", fail_on_the_second)
    status, _out, err = run("recover", "--full", str(partition))
    monkeypatch.undo()
    assert status == 2 and "No space left on device" in err
    assert f"was put back as it was; the next open rebuilds segments {bases[0]}, {bases[1]}, whose offset index " \
        "was removed" in err
    assert marker.read_bytes() == MARKER
    assert not (partition / f"{bases[1]:020d}.index").exists()
    with LogManager(tmp_path / "logs", LogConfig()) as manager:
        log = manager.get_log(TopicPartition("events", 0))
        assert log is not None and log.had_clean_shutdown
        assert [base for base, _reason in log.load_report.rebuilt_indexes] == bases[:2]
        assert [(r.offset, r.key, r.value) for r in log.records()] == expected
    assert verify_log_dir(tmp_path / "logs").ok


def test_recover_and_clean_refuse_a_locked_log_dir_and_non_partitions(tmp_path: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs", 20)
    with DirLock(tmp_path / "logs"):
        for argv in (["recover"], ["clean", *COMPACT]):
            status, _out, err = run(*argv, str(partition))
            assert status == 2 and "Failed to acquire lock" in err
    status, _out, err = run("recover", str(tmp_path / "logs"))
    assert status == 2 and "is a log dir" in err
    status, _out, err = run("clean", str(tmp_path / "nothing-0"))
    assert status == 2 and "Traceback" not in err


GOLDEN_PARTITIONS = [
    f"{DIPENDRASAINI}/invoice-0",
    f"{YUANLIUBEI}/__consumer_offsets-17",
    f"{RONEM}/__consumer_offsets-44",
    f"{KAFKALITE}/hamlet-snappy-0",
    f"{BULLSHIT}/TEST-TOPIC-0",
    f"{DANIELOWO}/_confluent-ksql-default__command_topic-0",
]


@pytest.mark.parametrize("relative", GOLDEN_PARTITIONS)
def test_recover_full_on_golden_copies_changes_nothing_but_missing_indexes(golden: Path, tmp_path: Path,
                                                                           relative: str, impl: Any) -> None:
    """A broker's own files are intact: a full recovery truncates nothing, and afterwards the log reads
    exactly as the library read it before, with the recovery point checkpointed at the log end."""
    source = golden / relative
    partition = copy_tree(source, tmp_path / "logs" / source.name)
    with Log(source, read_only=True) as before:
        expected = [(r.offset, r.key, r.value) for r in before.records()]
        end = before.log_end_offset
    status, out, err = run("recover", "--full", "--json", str(partition))
    assert status == 0, err
    report = json.loads(out)
    assert report["truncatedBytes"] == 0 and report["deletedSegments"] == [] and report["logEndOffset"] == end
    assert all(s["truncatedBytes"] == 0 for s in report["recoveredSegments"])
    with Log(partition, read_only=True) as after:
        assert [(r.offset, r.key, r.value) for r in after.records()] == expected
    assert f"{source.name.rsplit('-', 1)[0]} {source.name.rsplit('-', 1)[1]} {end}" in \
        (tmp_path / "logs" / "recovery-point-offset-checkpoint").read_text().split("\n")
    assert verify_log_dir(tmp_path / "logs").ok


def test_recover_cuts_a_golden_copy_at_a_flipped_byte(golden: Path, tmp_path: Path) -> None:
    """A corrupt batch in the first of two golden segments: recovery keeps the batches before it and
    deletes the segment after it, as Kafka's recoverLog does."""
    source = golden / f"{DIPENDRASAINI}/invoice-0"
    partition = copy_tree(source, tmp_path / "logs" / "invoice-0")
    segments = sorted(partition.glob("*.log"))
    with Log(source, read_only=True) as before:
        first = before.log_segments()[0]
        batches = list(first.log.batches())
        keep = [(r.offset, r.value) for r in before.records() if r.offset < batches[2].base_offset]
    data = bytearray(segments[0].read_bytes())
    data[batches[2].position + 70] ^= 0xFF
    segments[0].write_bytes(bytes(data))
    status, out, err = run("recover", "--full", str(partition))
    assert status == 0, err
    cut = len(data) - batches[2].position
    assert f"segment 0: truncated {format_bytes(cut)} ({cut} bytes)" in out
    for later in segments[1:]:
        assert f"deleted segment {int(later.stem)}, which followed the truncation" in out
    with Log(partition, read_only=True) as after:
        assert [(r.offset, r.value) for r in after.records()] == keep
        assert after.log_end_offset == batches[2].base_offset


def test_recover_and_clean_draw_progress_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    monkeypatch.setattr(console_module, "_is_terminal", lambda _stream: True)
    for command in ("recover", "clean"):
        out, err = io.StringIO(), io.StringIO()
        options = ["--full"] if command == "recover" else ["--until-clean", *COMPACT]
        assert main([command, *options, str(partition)], stdout=out, stderr=err) == 0, err.getvalue()
        bar = err.getvalue()
        # tqdm redraws with carriage returns and wipes the bar when the work ends (leave=False).
        assert f"{command} events-0" in bar and "B/s" in bar and "\r" in bar
        assert f"{command} events-0" not in out.getvalue().split("\n", 1)[1]


# -- clean and stats -----------------------------------------------------------------------------------

def test_clean_until_clean_keeps_the_latest_value_per_key(tmp_path: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    with Log(partition, read_only=True) as before:
        records = list(before.records())
        active_base = before.active_segment.base_offset
    latest = {r.key: (r.offset, r.value) for r in records if r.offset < active_base}
    status, out, err = run("clean", "--until-clean", *COMPACT, str(partition))
    assert status == 0, err
    assert "Log cleaner thread 0 cleaned log events-0" in out and "MB of log processed" in out
    with Log(partition, read_only=True) as after:
        kept = [r for r in after.records() if r.offset < active_base]
        tail = [(r.offset, r.value) for r in after.records() if r.offset >= active_base]
    assert {r.key: (r.offset, r.value) for r in kept} == latest
    assert len(kept) == len(latest)
    assert tail == [(r.offset, r.value) for r in records if r.offset >= active_base]
    assert not list(partition.glob("*.cleaned")) and not list(partition.glob("*.swap"))
    status, out, _err = run("clean", *COMPACT, str(partition))
    assert status == 0 and "Nothing to clean" in out


def test_clean_roll_makes_the_active_segment_cleanable(tmp_path: Path) -> None:
    """Without --roll the active segment keeps its duplicates (Kafka never cleans it); with --roll the log is
    rolled first and every key is left once."""
    partition = _build_log_dir(tmp_path / "logs")
    with Log(partition, read_only=True) as before:
        records = list(before.records())
        active_base = before.active_segment.base_offset
    latest = {r.key: (r.offset, r.value) for r in records}
    status, out, err = run("clean", "--until-clean", *COMPACT, str(partition))
    assert status == 0, err
    with Log(partition, read_only=True) as after:
        kept = list(after.records())
    # The keys of the active segment's records are also kept earlier: those earlier records stay.
    assert len(kept) > len({r.key for r in kept}) == 17
    status, out, err = run("clean", "--until-clean", "--roll", *COMPACT, str(partition))
    assert status == 0, err
    end = records[-1].offset + 1
    assert f"events-0: rolled the active segment {active_base}; the new active segment starts at offset {end}" in out
    with Log(partition, read_only=True) as after:
        assert {r.key: (r.offset, r.value) for r in after.records()} == latest
        assert len(list(after.records())) == len(latest) == 17
        assert after.active_segment.base_offset == end and after.active_segment.size() == 0
    # Rolling an empty active segment changes nothing and says so.
    status, out, err = run("clean", "--roll", *COMPACT, str(partition))
    assert status == 0, err
    assert f"events-0: the active segment {end} is empty; nothing to roll" in out and "Nothing to clean" in out
    with Log(partition, read_only=True) as after:
        assert after.number_of_segments == 2


def test_clean_roll_leaves_what_a_broker_shutdown_leaves(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``clean --roll`` puts the clean-shutdown marker back, so it flushes the log first, as a broker's
    ``LogManager.shutdown`` does: the new, empty active segment gets its index files (0 bytes, trimmed), and the
    next open of the log dir logs nothing about a missing index and rebuilds nothing."""
    partition = _build_log_dir(tmp_path / "logs")
    status, _out, err = run("clean", "--roll", *COMPACT, str(partition))
    assert status == 0, err
    active = max(partition.glob("*.log"))
    assert active.stat().st_size == 0
    assert active.with_suffix(".index").stat().st_size == 0
    assert active.with_suffix(".timeindex").stat().st_size == 0
    assert (tmp_path / "logs" / ".kafka_cleanshutdown").exists()
    caplog.set_level(logging.INFO, logger="kafkalog")
    with LogManager(tmp_path / "logs") as manager:
        log = manager.get_log(TopicPartition("events", 0))
        assert log is not None and log.load_report.rebuilt_indexes == []
    assert not [r for r in caplog.records if "Could not find offset index file" in r.getMessage()]


def test_clean_and_recover_finish_the_deletions_they_scheduled(tmp_path: Path) -> None:
    """A command that ends deletes the segments it replaced or removed (renamed ``.deleted``, deleted by a task
    after ``file.delete.delay.ms``, a minute by default): ``clean`` its cleaned segments, ``recover`` the segments
    after a torn one.  Kafka's broker leaves them to its next start; a command may have none, and the disk held
    both copies until then."""
    partition = _build_log_dir(tmp_path / "logs")
    status, _out, err = run("clean", "--until-clean", *COMPACT, str(partition))
    assert status == 0, err
    assert list(partition.glob("*.deleted")) == []
    assert "could not delete" not in err

    partition = _build_log_dir(tmp_path / "other-logs")
    segments = sorted(partition.glob("*.log"))
    assert len(segments) > 2
    with open(segments[0], "ab") as f:
        f.write(b"\x00" * 8 + b"\x00\x00\x01\x00" + b"torn")
    status, out, err = run("recover", "--full", str(partition))
    assert status == 0, err
    assert f"deleted segment {int(segments[1].stem)}, which followed the truncation" in out
    assert list(partition.glob("*.deleted")) == []
    assert sorted(partition.glob("*.log")) == segments[:1]


def test_a_file_a_command_could_not_delete_is_named_with_the_reason(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """When a replaced segment's file cannot be deleted as the log closes, ``clean`` says which and why on stderr
    (the library's warning is not shown without ``-v``), and still succeeds: the file stays for the next open."""
    partition = _build_log_dir(tmp_path / "logs")
    real_close = Log.close

    def close_with_a_stuck_file(log: Log) -> None:
        # Before the real close: a directory stands where a waiting file was, and no unlink removes one.
        victim = sorted(log.dir.glob("*.log.deleted"))[0]
        victim.rename(victim.with_name(victim.name + ".moved"))
        victim.mkdir()
        (victim / "inside").write_bytes(b"x")
        real_close(log)

    monkeypatch.setattr(Log, "close", close_with_a_stuck_file)
    status, _out, err = run("clean", "--until-clean", *COMPACT, str(partition))
    assert status == 0, err
    stuck = [line for line in err.splitlines() if "could not delete" in line]
    assert len(stuck) == 1
    victim = next(p for p in partition.glob("*.log.deleted"))
    assert stuck[0] == (f"kafkalog clean: could not delete {victim} (Is a directory); it stays, and the next open "
                        "of the log deletes it")
    assert [p.name for p in partition.glob("*.deleted")] == [victim.name]


def test_clean_refuses_a_policy_that_does_not_compact(tmp_path: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    before = {p.name: p.read_bytes() for p in sorted(partition.iterdir())}
    status, out, err = run("clean", "--until-clean", "--config", "cleanup.policy=delete", str(partition))
    assert (status, out) == (2, "")
    assert err == ("kafkalog clean: events-0 not cleaned: cleanup.policy=delete (from --config) does not compact "
                   "(Kafka's cleaner leaves such a log alone); --config cleanup.policy=compact compacts it anyway\n")
    assert {p.name: p.read_bytes() for p in sorted(partition.iterdir())} == before
    status, _out, err = run("clean", "--config", "cleanup.policy=compact,delete", str(partition))
    assert status == 0, err


def test_every_json_output_is_camel_case(tmp_path: Path) -> None:
    """stats, verify, recover and clean --json name every field in camelCase (Kafka's tools do); stats --csv's
    header too."""
    partition = _build_log_dir(tmp_path / "logs")

    def keys(value: Any, inside: str = "") -> set[str]:
        if isinstance(value, list):
            return {k for item in value for k in keys(item, inside)}
        if not isinstance(value, dict) or inside in ("magics", "codecs"):  # counts keyed by format and codec names
            return set()
        return set(value) | {k for key, item in value.items() for k in keys(item, key)}

    seen: set[str] = set()
    for argv in (["stats", "--json", str(tmp_path / "logs")], ["verify", "--json", "--notes", str(tmp_path / "logs")],
                 ["recover", "--json", "--full", str(partition)],
                 ["clean", "--json", "--roll", *COMPACT, str(partition)]):
        status, out, err = run(*argv)
        assert status == 0, (argv, err)
        objects = [json.loads(line) for line in out.splitlines()]
        assert objects, argv
        seen |= keys(objects)
    assert {"crcFailures", "logEndOffset", "distinctKeys", "skippedFiles", "truncatedBytes", "bytesRead",
            "firstDirtyOffset"} <= seen
    assert [k for k in seen if not re.fullmatch(r"[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)*", k)] == []
    status, out, _err = run("stats", "--csv", str(partition))
    header = out.splitlines()[0].split(",")
    assert header[:6] == ["topic", "partition", "segments", "size", "logStartOffset", "logEndOffset"]
    assert all(re.fullmatch(r"[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)*", k) for k in header)


@pytest.mark.parametrize("relative", [f"{YUANLIUBEI}/__consumer_offsets-17",
                                      f"{RONEM}/__consumer_offsets-44"])
def test_clean_on_golden_copies_matches_the_library(golden: Path, tmp_path: Path, relative: str) -> None:
    """``kafkalog clean --until-clean`` on one copy of a broker's compacted partition, the library's cleaner
    on another: the same records survive and the statistics agree."""
    source = golden / relative
    by_command = copy_tree(source, tmp_path / "a" / source.name)
    by_library = copy_tree(source, tmp_path / "b" / source.name)
    config = LogConfig({"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0"})
    with DirLock(tmp_path / "b"), Log(by_library, config) as log:
        cleaner = LogCleaner(CleanerConfig(1, 128 * 1024 * 1024, 0.9, 1024 * 1024, config.max_message_size),
                             [tmp_path / "b"], {log.topic_partition: log})
        expected_stats = cleaner.run_once()
        expected = [(r.offset, r.key, r.value) for r in log.records()]
    assert expected_stats, "the golden partition has a dirty section to clean"
    status, out, err = run("clean", "--until-clean", "--json", *COMPACT, str(by_command))
    assert status == 0, err
    rounds = [json.loads(line) for line in out.splitlines()]
    assert [(r["messagesRead"], r["messagesWritten"], r["bytesRead"], r["bytesWritten"]) for r in rounds] == \
        [(s.messages_read, s.messages_written, s.bytes_read, s.bytes_written) for s in expected_stats]
    with Log(by_command, read_only=True) as after:
        assert [(r.offset, r.key, r.value) for r in after.records()] == expected
    # The brokers had compacted these already; what survives is still each key's latest record.
    end = rounds[-1]["endOffset"]
    with Log(source, read_only=True) as before:
        latest = {r.key: r.offset for r in before.records() if r.offset < end}
    assert sorted(offset for offset, _key, _value in expected if offset < end) == sorted(latest.values())
    assert (tmp_path / "a" / "cleaner-offset-checkpoint").read_text() == \
        (tmp_path / "b" / "cleaner-offset-checkpoint").read_text()


def test_stats_agree_with_the_library(tmp_path: Path, golden: Path) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    status, out, err = run("stats", "--json", str(tmp_path / "logs"))
    assert status == 0, err
    (stats,) = [json.loads(line) for line in out.splitlines()]
    with Log(partition, read_only=True) as log:
        records = list(log.records())
        assert stats["segments"] == log.number_of_segments and stats["size"] == log.size
    assert stats["records"] == len(records) == 300
    assert stats["distinctKeys"] == len({r.key for r in records}) == 17
    assert stats["minTimestamp"] == min(r.timestamp for r in records)
    assert stats["maxTimestamp"] == max(r.timestamp for r in records)
    assert stats["codecs"] == {"none": 30} and stats["magics"] == {"v2": 30}
    assert 0 < stats["dirtyRatio"] <= 1
    status, out, _err = run("stats", "--csv", str(golden / KAFKALITE))
    rows = out.splitlines()
    assert rows[0].startswith("topic,partition,segments,size")
    assert any(row.startswith("hamlet-gzip,0,1,143118,0,5382,22,5382,") and "gzip:22" in row for row in rows)
    status, out, _err = run("stats", str(golden / BULLSHIT))
    assert status == 0 and "TEST-TOPIC-0" in out and "21211" in out


# -- Ctrl-C --------------------------------------------------------------------------------------------

def test_interrupts_are_held_until_the_block_ends() -> None:
    # From Python's own handler, whatever an earlier test left (a Spark session installs one that cancels its
    # jobs), so the test does not depend on the order the suite runs in.
    earlier = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        done = []
        with pytest.raises(KeyboardInterrupt), interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("finished")
        assert done == ["finished"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, earlier)


def test_an_interrupted_clean_leaves_no_cleaned_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partition = _build_log_dir(tmp_path / "logs")
    before = sorted(p.name for p in partition.iterdir())

    def interrupted(*_args: Any, **_kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cleaner_module.Cleaner, "clean_into", interrupted)
    status, _out, err = run("clean", *COMPACT, str(partition))
    assert status == 130 and err.strip() == "kafkalog: interrupted"
    assert sorted(p.name for p in partition.iterdir()) == before


# -- the tour ------------------------------------------------------------------------------------------

def test_demo_tour_runs_every_step(tmp_path: Path) -> None:
    out = io.StringIO()
    assert tour(str(tmp_path / "tour"), out) == 0
    text = out.getvalue()
    for step in ("1. A log dir", "2. Appending", "3. Reading", "4. Retention", "5. Compaction", "6. A crash",
                 "7. The result"):
        assert f"== {step}" in text
    assert "bytes of torn write truncated" in text and "indexes rebuilt" in text
    assert "| offset: " in text
    assert verify_log_dir(tmp_path / "tour" / "kafka-logs").ok


def test_a_count_of_one_takes_the_singular(tmp_path: Path) -> None:
    """Issue 30: the tour said ``deleted 1 segments``, and other messages counted ``1 entries``, ``1 charts``,
    ``round(s)``: one helper puts every count's noun in its number."""
    assert [counted(n, "segment") for n in (0, 1, 2)] == ["0 segments", "1 segment", "2 segments"]
    assert [counted(n, "entry", "entries") for n in (1, 5)] == ["1 entry", "5 entries"]
    out = io.StringIO()
    assert tour(str(tmp_path / "tour"), out) == 0
    text = out.getvalue()
    assert "deleted 1 segment; " in text and "1 cleaning round: " in text
    assert not re.search(r"(?<![\d.])1 (segments|files|records|bytes|cleaning rounds|rounds|more lines)\b", text)
    assert "(s)" not in text
    # A time index of one entry over a segment whose batches are gone: verify counts it in the singular too.
    partition = _build_log_dir(tmp_path / "logs", records=300)
    last = sorted(partition.glob("*.log"))[-1]
    last.write_bytes(b"")
    status, out_text, _err = run("verify", str(partition))
    assert status == 1 and "timeindex: has 1 entry but the log holds no batch" in out_text
    assert out_text.rstrip().endswith("1 partition checked, 1 error")


def test_commands_read_a_record_count_bomb_in_bounded_memory(tmp_path: Path, impl: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``verify``, ``stats``, ``clean`` and ``dump --deep-iteration`` of a segment whose one gzip batch holds
    10,000 7-byte records (300 bytes on disk; the bomb of issue 15 is 37 M records in 381 KB) hold the
    decompressed records and a chunk of decoded ones at a time, never all of them (0.8 to 3.9 MB here before
    issue 15): the chunk is made small here (100 records) so the plain twin is quick.  Each command runs once
    first, so what is measured is the reading, not the first imports; the output goes nowhere, so it is not
    counted."""
    import tracemalloc

    from kafkalog.record import batch as batch_module
    from tests.support.log_test_utils import write_record_count_bomb_partition

    class Sink(io.TextIOBase):
        def write(self, text: str) -> int:
            return len(text)

    monkeypatch.setattr(batch_module, "CHUNK_RECORDS", 100)
    count = 10_000
    segment = write_record_count_bomb_partition(tmp_path / "bomb-0", count)
    commands = {
        "verify": ["verify", str(segment.parent)],
        "stats": ["stats", str(segment.parent)],
        "clean": ["clean", "--dedupe-buffer-size", "65536", "--config", "cleanup.policy=compact",
                  str(tmp_path / "cleaned" / "clean-0")],
        "dump": ["dump", "--files", str(segment), "--deep-iteration", "--skip-record-metadata"],
    }
    for name, argv in commands.items():
        peak = 0
        for traced in (False, True):
            if name == "clean":
                # A fresh log dir, without the first run's cleaner checkpoint.
                shutil.rmtree(tmp_path / "cleaned", ignore_errors=True)
                shutil.copytree(segment.parent, tmp_path / "cleaned" / "clean-0")
            if traced:
                tracemalloc.start()
            try:
                status = main(["--no-progress", *argv], stdout=Sink(), stderr=Sink())
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert status in (0, 1), name
        assert peak < 600_000, (name, peak)
    assert str(count + 1) in run("stats", "--csv", str(segment.parent))[1]


def test_help_descriptions_are_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` of every command shows its description as text: no reST markup from a module docstring."""
    from kafkalog.cli import bench_report
    from kafkalog.cli.help_text import description, plain_text

    assert plain_text("``make demo``: run :func:`~kafkalog.spark.compact`, :mod:`kafkalog.bench`, "
                      ":doc:`the CLI <cli>`, *this* and **that** (`x`)") == (
        "make demo: run compact, kafkalog.bench, the CLI, this and that (x)")
    assert description("First line\n    and its rest.\n\nNot this.") == "First line and its rest."
    assert description(None) is None
    shown: dict[str, str] = {}
    for argv in ([], ["dump"], ["verify"], ["recover"], ["clean"], ["stats"], ["demo"], ["bench"]):
        out = io.StringIO()
        assert main([*argv, "--help"], stdout=out) == 0, argv
        shown[" ".join(["kafkalog", *argv])] = out.getvalue() + capsys.readouterr().out  # argparse prints
    mains: list[tuple[str, Any]] = [("python -m kafkalog.cli.bench_report", bench_report.main)]
    try:
        from kafkalog.spark import demo as spark_demo
    except ImportError:  # no spark extra
        pass
    else:
        mains.append(("python -m kafkalog.spark.demo", spark_demo.main))
    for name, module_main in mains:
        with pytest.raises(SystemExit) as exited:
            module_main(["--help"])
        assert exited.value.code == 0, name
        shown[name] = capsys.readouterr().out
    assert len(shown) == 10
    for name, text in shown.items():
        assert text.startswith("usage: "), name
        assert not re.search(r"`|:(mod|func|class|meth|doc|data|attr):|\*\*", text), (name, text)
