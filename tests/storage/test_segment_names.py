"""Files named like a segment's but not for an offset a log can hold (issue 15, defect 7).

Kafka names a segment's files for its base offset, 20 zero-padded digits (``filenamePrefixFromOffset``), and
reads the offset back with ``Long.parseLong`` (``offsetFromFile``).  A name such as
``99999999999999999999.log`` has the 20 digits but a number past ``Long.MaxValue``: a broker's
``parseLong`` throws ``NumberFormatException`` and the log does not load.  kafkalog says so with a kafkalog
error naming the file (:func:`kafkalog.filenames.offset_from_file_name`), and every loader treats such a
file as it treats other files that are not a segment's: left alone, skipped with a warning, listed in the
load report.  Verify reports it as an error (a broker cannot load that partition); dump refuses to dump it.
Each entry point is checked on both kernel twins: before the fix some raised a bare ``OverflowError``, the
compiled twin where the plain one did not, and the read-only ones took the name's number for the log end.
"""

from __future__ import annotations

import io
import json
import logging
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.cli import main
from kafkalog.config.log_config import LogConfig
from kafkalog.errors import IllegalArgumentError, KafkaLogError
from kafkalog.filenames import offset_from_file, offset_from_file_name
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import MemoryRecords
from kafkalog.tools.stats import partition_stats
from kafkalog.tools.verify import Severity, verify_partition
from kafkalog.topic import TopicPartition

INT64_MAX = 2**63 - 1
#: 20 digits, past Long.MaxValue (9223372036854775807).
TOO_BIG = "99999999999999999999"
RECORDS = 100

#: Names of the shape a loader looks at, none of them named for an offset the way Kafka names a segment.
BAD_NAMES = [
    f"{TOO_BIG}.log",
    f"{INT64_MAX + 1:020d}.log",  # one past Long.MaxValue
    f"{TOO_BIG}.index",
    f"{TOO_BIG}.timeindex",
    f"{TOO_BIG}.txnindex",
    f"{TOO_BIG}.log.swap",
    f"{TOO_BIG}.log.cleaned",
    "5.log",  # not 20 digits: a broker reads it as offset 5, then opens 00000000000000000005.log
    "000000000000000000050.log",  # 21 digits: the same offset as 00000000000000000050.log
]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def build_log_dir(root: Path, bad_name: str) -> tuple[Path, Path, bytes]:
    """A log dir with one partition of ``RECORDS`` records in two segments, and a file called ``bad_name``
    holding a copy of the first segment's bytes (so a loader that took it for a segment would read
    batches from it).  Returns the partition dir, the bad file and its bytes."""
    config = LogConfig({"segment.bytes": 1024, "cleanup.policy": "compact"})
    with LogManager(root, config) as manager:
        log = manager.create_log(TopicPartition("events", 0))
        for i in range(0, RECORDS, 10):
            log.append(MemoryRecords.with_records(
                [(f"k{(i + j) % 7}".encode(), f"v{i + j}".encode(), 1_700_000_000_000 + i + j) for j in range(10)]))
    partition = root / "events-0"
    first = sorted(partition.glob("*.log"))[0]
    bad = partition / bad_name
    data = first.read_bytes()
    bad.write_bytes(data)
    return partition, bad, data


@pytest.fixture(params=BAD_NAMES)
def bad_dir(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path, bytes]:
    return build_log_dir(tmp_path / "logs", request.param)


def test_offset_from_file_name_refuses_offsets_past_long_max() -> None:
    assert offset_from_file_name(f"{INT64_MAX:020d}.log") == INT64_MAX
    for name in (f"{TOO_BIG}.log", f"{INT64_MAX + 1}.index", f"/x/y/{TOO_BIG}.timeindex"):
        with pytest.raises(IllegalArgumentError) as caught:
            offset_from_file_name(name)
        assert Path(name).name in str(caught.value) and str(INT64_MAX) in str(caught.value)
        with pytest.raises(IllegalArgumentError):
            offset_from_file(Path(name))
    # Digits other than ASCII's are not digits of an offset (str.isdigit says they are).
    with pytest.raises(IllegalArgumentError):
        offset_from_file_name("\u0661\u0662.log")


def test_log_skips_the_file_with_a_warning(bad_dir: tuple[Path, Path, bytes], impl: ModuleType,
                                           caplog: pytest.LogCaptureFixture) -> None:
    partition, bad, data = bad_dir
    for read_only in (True, False):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="kafkalog.log.loader"), \
                Log(partition, read_only=read_only, had_clean_shutdown=False) as log:
            assert log.log_end_offset == RECORDS
            assert [r.offset for r in log.records()] == list(range(RECORDS))
            assert [name for name, _why in log.load_report.skipped_files] == [bad.name]
            assert not log.load_report.changed or not read_only
        assert any(bad.name in m for m in caplog.messages), caplog.messages
        assert bad.read_bytes() == data


def test_log_manager_loads_the_dir(bad_dir: tuple[Path, Path, bytes], impl: ModuleType) -> None:
    partition, bad, data = bad_dir
    for read_only in (True, False):
        manager = LogManager(partition.parent, LogConfig(), read_only=read_only)
        try:
            log = manager.get_log(TopicPartition("events", 0))
            assert log is not None and log.log_end_offset == RECORDS
        finally:
            manager.shutdown()
        assert bad.read_bytes() == data


def test_verify_reports_the_file(bad_dir: tuple[Path, Path, bytes], impl: ModuleType) -> None:
    partition, bad, _data = bad_dir
    report = verify_partition(partition)
    assert report.log_end_offset == RECORDS and report.records == RECORDS
    found = [f for f in report.findings if f.path == str(bad)]
    assert [f.severity for f in found] == [Severity.ERROR], report.findings
    assert all(f.path != str(bad) for f in report.findings if f not in found)
    status, out, err = run("verify", "--json", str(partition.parent))
    assert status == 1, (out, err)
    assert "Traceback" not in err
    objects = [json.loads(line) for line in out.splitlines()]
    assert objects[0]["logEndOffset"] == RECORDS
    assert [f["path"] for f in objects[0]["findings"] if f["severity"] == "error"] == [str(bad)]


def test_stats_skip_the_file(bad_dir: tuple[Path, Path, bytes], impl: ModuleType) -> None:
    partition, bad, _data = bad_dir
    stats = partition_stats(partition)
    assert (stats.log_end_offset, stats.records) == (RECORDS, RECORDS)
    assert stats.skipped_files == [bad.name]
    status, out, err = run("stats", "--json", str(partition.parent))
    assert status == 0, err
    assert json.loads(out)["logEndOffset"] == RECORDS
    assert bad.name in err and "skipped" in err


def test_dump_refuses_the_file(bad_dir: tuple[Path, Path, bytes], impl: ModuleType) -> None:
    _partition, bad, _data = bad_dir
    if bad.name.endswith((".swap", ".cleaned")) or bad.name in ("5.log", "000000000000000000050.log"):
        # dump takes only the suffixes it knows, and, as DumpLogSegments, any name Long.parseLong reads
        return
    for extra in ([], ["--deep-iteration"], ["--verify-index-only"], ["--index-sanity-check"]):
        status, _out, err = run("dump", *extra, "--files", str(bad))
        assert status == 2, (extra, err)
        assert bad.name in err and "Traceback" not in err


def test_recover_and_clean_skip_the_file(bad_dir: tuple[Path, Path, bytes], impl: ModuleType) -> None:
    partition, bad, data = bad_dir
    status, out, err = run("recover", "--full", str(partition))
    assert status == 0, err
    assert f"skipped {bad.name}" in out and f"Log end offset {RECORDS}," in out
    status, out, err = run("recover", "--json", str(partition))
    assert status == 0, err
    assert [f["name"] for f in json.loads(out)["skippedFiles"]] == [bad.name]
    status, out, err = run("clean", "--config", "cleanup.policy=compact", str(partition))
    assert status == 0, err
    assert bad.name in err and "skipped" in err
    assert bad.read_bytes() == data
    with Log(partition, read_only=True) as log:
        assert log.log_end_offset == RECORDS


def test_the_same_on_a_copy_with_both_twins_in_one_process(tmp_path: Path) -> None:
    """The twins agree: both open the same dir to the same log end (the compiled twin used to fail where
    the plain one opened it)."""
    from kafkalog import _impl

    partition, _bad, _data = build_log_dir(tmp_path / "logs", f"{TOO_BIG}.log")
    ends = []
    for name in _impl.both():
        copy = tmp_path / name
        shutil.copytree(partition.parent, copy)
        with _impl.using(name), Log(copy / partition.name, had_clean_shutdown=False) as log:
            ends.append(log.log_end_offset)
    assert set(ends) == {RECORDS}


def test_kafka_log_error_is_what_escapes(tmp_path: Path) -> None:
    """Whatever a caller does with such a name, the error is kafkalog's."""
    with pytest.raises(KafkaLogError):
        offset_from_file_name(f"{TOO_BIG}.log")
