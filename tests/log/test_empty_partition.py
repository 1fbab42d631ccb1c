"""A partition dir with no files in a read-only open (issue 15, defect 16).

A broker that loads a partition dir holding no segment creates an empty segment at the checkpointed log
start offset (Kafka: ``LogLoader.load``, "no existing segments, create a new mutable segment beginning at
logStartOffset").  A read-only open writes nothing, so it reads the dir as that empty log would read, with
no file behind it.  Before the fix one empty dir made ``LogManager(read_only=True)`` fail for the whole
log dir and ``kafkalog stats`` exit 2.  Checked here for ``Log``, ``LogManager``, ``verify``, ``stats``,
``dump`` and the Spark planner, on both kernel twins, and that nothing on disk changes.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from types import ModuleType

import pytest

from kafkalog.checkpoint import LOG_START_OFFSET_CHECKPOINT_FILE, OffsetCheckpoint
from kafkalog.cli import main
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.manager.log_manager import LogManager
from kafkalog.record import MemoryRecords
from kafkalog.tools.stats import partition_stats
from kafkalog.tools.verify import Severity, verify_log_dir
from kafkalog.topic import TopicPartition

EMPTY = TopicPartition("empty", 0)
EVENTS = TopicPartition("events", 0)
START = 42  # the empty partition's checkpointed log start offset


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time: what a read-only open must not change."""
    found = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.stat(path)
            found[os.path.relpath(path, root)] = (info.st_size if name in files else 0, info.st_mtime_ns)
    return found


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """A log dir with a partition of 30 records and an empty partition dir whose log start offset is
    checkpointed at ``START``."""
    root = tmp_path / "logs"
    with LogManager(root, LogConfig()) as manager:
        log = manager.create_log(EVENTS)
        log.append(MemoryRecords.with_records([(b"k%d" % i, b"v", 1_700_000_000_000 + i) for i in range(30)]))
    (root / "empty-0").mkdir()
    checkpoint = OffsetCheckpoint(root / LOG_START_OFFSET_CHECKPOINT_FILE)
    checkpoint.write({**checkpoint.read(), EMPTY: START})
    return root


def test_a_read_only_log_of_an_empty_dir_is_an_empty_log(log_dir: Path, impl: ModuleType) -> None:
    before = snapshot(log_dir)
    with Log(log_dir / "empty-0", read_only=True, log_start_offset=START) as log:
        assert (log.log_start_offset, log.log_end_offset) == (START, START)
        assert log.size == 0 and list(log.records()) == []
        assert log.read(START, 1000).records.size_in_bytes() == 0
        assert log.fetch_offset_by_timestamp(0) is None
    with Log(log_dir / "empty-0", read_only=True) as log:
        assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    assert snapshot(log_dir) == before
    assert os.listdir(log_dir / "empty-0") == []


def test_a_read_only_log_manager_loads_the_other_partitions(log_dir: Path, impl: ModuleType) -> None:
    before = snapshot(log_dir)
    manager = LogManager(log_dir, read_only=True)
    try:
        events, empty = manager.get_log(EVENTS), manager.get_log(EMPTY)
        assert events is not None and events.log_end_offset == 30
        assert empty is not None and (empty.log_start_offset, empty.log_end_offset) == (START, START)
    finally:
        manager.shutdown()
    assert snapshot(log_dir) == before


def test_verify_and_stats_read_the_empty_partition(log_dir: Path, impl: ModuleType) -> None:
    before = snapshot(log_dir)
    report = verify_log_dir(log_dir)
    assert report.ok
    empty = next(p for p in report.partitions if p.topic_partition == EMPTY)
    assert empty.segments == 0
    assert [f.severity for f in empty.findings] == [Severity.NOTE]
    assert "no segment" in empty.findings[0].message
    status, out, err = run("verify", str(log_dir))
    assert status == 0, (out, err)
    assert "2 partitions checked, 0 errors" in out

    stats = partition_stats(log_dir / "empty-0")
    assert (stats.log_start_offset, stats.log_end_offset, stats.records, stats.size) == (START, START, 0, 0)
    assert stats.segments == 0  # on disk, as verify counts them
    status, out, err = run("stats", "--json", str(log_dir))
    assert status == 0, err
    rows = {(r["topic"], r["partition"]): r for r in map(json.loads, out.splitlines())}
    assert rows[("empty", 0)]["logEndOffset"] == START and rows[("events", 0)]["records"] == 30
    status, out, err = run("stats", str(log_dir / "empty-0"))
    assert status == 0 and f"empty at {START}" in out, (out, err)  # no offset held: not a first..last range
    assert snapshot(log_dir) == before


def test_dump_of_the_empty_dir(log_dir: Path, impl: ModuleType) -> None:
    status, _out, err = run("dump", "--files", str(log_dir / "empty-0"))
    assert status == 0 and "Traceback" not in err


def test_the_spark_planner_plans_around_it(log_dir: Path, impl: ModuleType) -> None:
    pytest.importorskip("pyarrow")
    pytest.importorskip("pyspark", reason="kafkalog.spark needs the spark extra")
    from kafkalog.partition_view.facts import partition_facts
    from kafkalog.spark.options import ReadOptions
    from kafkalog.spark.plan import plan_read

    before = snapshot(log_dir)
    facts = partition_facts(log_dir / "empty-0")
    assert (facts.log_start_offset, facts.log_end_offset, facts.last_stable_offset) == (START, START, START)
    tasks = plan_read(ReadOptions.parse({"path": str(log_dir)}))
    assert {(t.topic, t.partition) for t in tasks} == {("events", 0)}
    assert sum(1 for t in tasks for batch in t.read() for _ in range(batch.num_rows)) == 30
    tasks = plan_read(ReadOptions.parse({"path": str(log_dir),
                                         "startingOffsets": json.dumps({"empty": {"0": START}, "events": {"0": 0}})}))
    assert {(t.topic, t.partition) for t in tasks} == {("events", 0)}
    assert snapshot(log_dir) == before


def test_an_empty_dir_waiting_for_deletion_is_not_written_either(log_dir: Path, impl: ModuleType) -> None:
    """A ``-delete`` dir with no segment: a writable open adds a segment at 0, a read-only one must not."""
    (log_dir / "empty-0").rmdir()
    doomed = log_dir / "gone-0.0123456789abcdef0123456789abcdef-delete"
    doomed.mkdir()
    before = snapshot(log_dir)
    manager = LogManager(log_dir, read_only=True)
    try:
        assert manager.has_logs_to_be_deleted
    finally:
        manager.shutdown()
    assert snapshot(log_dir) == before
