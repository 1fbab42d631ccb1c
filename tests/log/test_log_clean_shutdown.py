"""A ``Log`` opened alone (no LogManager) and closed cleanly reopens without recovery (issue 17).

The marker is the log dir's (``.kafka_cleanshutdown``), so a lone log may write it only where it speaks for
every partition of the dir: Kafka 3.8's rule in ``LogManager.shutdown`` (the marker was there at load, or every
log of the dir was loaded, hence recovered, since).  A crash (the process dies, nothing closed) leaves no
marker, and the next open recovers; a LogManager and a lone Log over the same dir read each other's marker.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

from kafkalog import Log, LogConfig, LogManager, MemoryRecords
from kafkalog.filenames import CLEAN_SHUTDOWN_FILE

CONFIG = LogConfig({"segment.bytes": 300})


def _fill(log: Log, n: int = 20) -> None:
    for i in range(n):
        log.append(MemoryRecords.with_records([(b"k%d" % i, b"v" * 20, 1000 + i)]))


def test_a_lone_log_closed_cleanly_reopens_without_recovery(tmp_path: Path, impl: ModuleType) -> None:
    partition = tmp_path / "logs" / "t-0"
    with Log(partition, CONFIG) as log:
        _fill(log)
        segments = log.number_of_segments
    assert segments > 2
    assert (partition.parent / CLEAN_SHUTDOWN_FILE).is_file()
    with Log(partition, CONFIG) as reopened:
        assert reopened.had_clean_shutdown
        assert reopened.load_report.recovered_segments == []
        assert reopened.load_report.rebuilt_indexes == []
        assert reopened.recovery_point == reopened.log_end_offset == 20
        assert [r.offset for r in reopened.records()] == list(range(20))


def test_a_crashed_lone_log_is_recovered(tmp_path: Path) -> None:
    partition = tmp_path / "logs" / "t-0"
    with Log(partition, CONFIG) as log:
        _fill(log)
    script = textwrap.dedent(f"""
        import os
        from kafkalog import Log, LogConfig, MemoryRecords
        log = Log({str(partition)!r}, LogConfig({{"segment.bytes": 300}}))
        log.append(MemoryRecords.with_records([(b"late", b"v", 5000)]))
        os._exit(0)  # a crash: nothing flushed or closed
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert not (partition.parent / CLEAN_SHUTDOWN_FILE).exists()
    with Log(partition, CONFIG) as reopened:
        assert not reopened.had_clean_shutdown
        assert [base for base, _ in reopened.load_report.recovered_segments] == \
            [s.base_offset for s in reopened.log_segments()]
        assert reopened.log_end_offset == 21


def test_a_lone_log_does_not_vouch_for_a_partition_nobody_recovered(tmp_path: Path) -> None:
    """Another partition of the dir crashed: closing ``t-0`` cleanly must not mark the dir clean, or ``t-1``
    would be trusted unrecovered by the next opener (a LogManager here)."""
    root = tmp_path / "logs"
    with Log(root / "t-1", CONFIG) as other:
        _fill(other, 3)
    (root / CLEAN_SHUTDOWN_FILE).unlink()  # as after a crash of t-1's writer
    with Log(root / "t-0", CONFIG) as log:
        _fill(log, 3)
    assert not (root / CLEAN_SHUTDOWN_FILE).exists()
    with LogManager(root, CONFIG) as manager:
        assert all(not log.had_clean_shutdown for log in manager.all_logs())
    # The manager loaded (recovered) every partition and shut down cleanly: now a lone log trusts the marker.
    assert (root / CLEAN_SHUTDOWN_FILE).is_file()
    with Log(root / "t-1", CONFIG) as log:
        assert log.had_clean_shutdown and log.load_report.recovered_segments == []


def test_every_partition_opened_alone_makes_the_dir_clean(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    with Log(root / "t-0", CONFIG) as a:
        _fill(a, 3)
    (root / CLEAN_SHUTDOWN_FILE).unlink()
    with Log(root / "t-0", CONFIG) as a, Log(root / "t-1", CONFIG) as b:
        assert not a.had_clean_shutdown and a.load_report.recovered_segments != []
        _fill(b, 3)
    assert (root / CLEAN_SHUTDOWN_FILE).is_file()
    with LogManager(root, CONFIG) as manager:
        assert all(log.had_clean_shutdown and log.load_report.recovered_segments == [] for log in manager.all_logs())
