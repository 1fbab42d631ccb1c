"""Helpers of the LogManager tests (tests/log/manager/): Kafka's ``TestUtils.createLogManager`` settings
(the test ``logConfig``, task periods), checkpoint-file readers, a counter of the disk syncs the tests turn
off, and record builders.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kafkalog
from kafkalog.config.log_config import LogConfig
from kafkalog.log import Log
from kafkalog.manager.log_manager import (
    LogManager,
)
from kafkalog.record import MemoryRecords
from kafkalog.topic import TopicPartition

MAX_LOG_AGE_MS = 10 * 60 * 1000
NAME = "kafka"
LOG_CONFIG = LogConfig({"segment.bytes": 1024, "segment.index.bytes": 4096, "retention.ms": MAX_LOG_AGE_MS})
RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: The size of ``singleton(b"test")``: a v2 batch header (61) and one 11-byte record.
SET_SIZE = 72
#: The checkpoint period of the tests that sleep through retention.ms (see ``any_twin_manager``).
LONG_TASK_PERIOD_MS = 10**9
#: The directory of the ``kafkalog`` package, for the child processes.
PACKAGE_ROOT = str(Path(kafkalog.__file__).resolve().parent.parent)

ManagerFactory = Callable[..., LogManager]


def singleton(value: bytes, key: bytes | None = None) -> MemoryRecords:
    """Kafka's ``TestUtils.singletonRecords``: one v2 record without a timestamp."""
    return MemoryRecords.with_records([(key, value)])


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """An offset checkpoint file, parsed here (spec §2.9) rather than with kafkalog's reader."""
    lines = path.read_text().splitlines()
    assert lines[0] == "0"
    count = int(lines[1])
    entries = {}
    for line in lines[2:]:
        topic, partition, offset = line.split()
        entries[TopicPartition(topic, int(partition))] = int(offset)
    assert len(entries) == count
    return entries


def record_tuples(log: Log) -> list[tuple[Any, ...]]:
    return [r.as_tuple() for r in log.records()]


class SyncCounter:
    """Counts the fsyncs kafkalog asks for (see :func:`no_disk_sync`)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fd: int) -> None:
        os.fstat(fd)  # a bad descriptor still fails, as fsync would
        self.calls += 1


def append_many(log: Log, count: int, key: bytes | None = None) -> int:
    """``count`` singleton appends; the last offset appended."""
    last = -1
    for _ in range(count):
        last = log.append_as_leader(singleton(b"test", key), leader_epoch=0).last_offset
    return last


def materialize_indexes(log: Log) -> None:
    """Kafka's ``s.offsetIndex(); s.timeIndex()``: open every lazy index so its file exists."""
    for segment in log.log_segments():
        assert segment.offset_index.base_offset == segment.base_offset
        assert segment.time_index.base_offset == segment.base_offset


HOLD_LOCK = textwrap.dedent("""
    import sys
    from kafkalog.manager.log_manager import LogManager
    manager = LogManager(sys.argv[1])
    print("locked", len(manager.all_logs()), flush=True)
    sys.stdin.readline()
    manager.shutdown()
    print("released", flush=True)
""")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    return env


def open_paths(under: Path) -> list[str]:
    """The files under ``under`` this process holds open (descriptors and mappings both own one)."""
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(under.resolve())):
            paths.append(target)
    return sorted(paths)
