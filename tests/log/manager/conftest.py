"""Fixtures of the LogManager tests: managers built as Kafka's ``TestUtils.createLogManager`` builds them
(a MockTime whose scheduler runs the background tasks, the test ``logConfig``), on one or both kernel twins,
in a fresh log dir, with disk syncs counted instead of made.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog.config.log_config import LogConfig
from kafkalog.manager.log_manager import (
    LogManager,
)
from kafkalog.scheduler import MockTime
from tests.support.manager_utils import LOG_CONFIG, ManagerFactory, SyncCounter


@pytest.fixture(autouse=True)
def no_disk_sync(monkeypatch: pytest.MonkeyPatch) -> SyncCounter:
    """``os.fsync`` checks its descriptor and counts, without waiting for the disk.

    No test here cuts the power, so what reaches the platter is not observable; an fsync costs about 4 ms on
    the test machines and the retention and checkpoint cases ask for hundreds.  The counter lets a test check
    that a flush was asked for."""
    counter = SyncCounter()
    monkeypatch.setattr(os, "fsync", counter)
    return counter


@pytest.fixture
def mock_time() -> MockTime:
    return MockTime()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "kafka-logs"


@pytest.fixture
def any_twin_manager(mock_time: MockTime, log_dir: Path) -> Iterator[ManagerFactory]:
    """Kafka's ``createLogManager``: the test's clock and scheduler and TestUtils' task periods.  Every
    manager made is shut down at the end (a second shutdown does nothing).  Tests that move the clock by
    the ten minutes of retention pass a long ``checkpoint_ms``: 120 checkpoint writes would check nothing
    there.  On the live twin only: for the tests whose point is not the records (locks, directories)."""
    made: list[LogManager] = []

    def make(log_dirs: Any = None, topic_configs: Any = None, default_config: LogConfig = LOG_CONFIG,
             recovery_threads: int = 1, checkpoint_ms: int = 10000, is_stray: Any = None) -> LogManager:
        manager = LogManager(log_dirs if log_dirs is not None else [log_dir], default_config, topic_configs,
                             recovery_threads_per_data_dir=recovery_threads, flush_check_ms=1000,
                             flush_recovery_offset_checkpoint_ms=checkpoint_ms,
                             flush_start_offset_checkpoint_ms=checkpoint_ms, retention_check_ms=1000,
                             scheduler=mock_time.scheduler, time=mock_time, is_stray=is_stray)
        made.append(manager)
        return manager

    yield make
    for manager in made:
        manager.shutdown()


@pytest.fixture
def make_manager(any_twin_manager: ManagerFactory, impl: ModuleType) -> ManagerFactory:
    """:func:`any_twin_manager` on each kernel twin in turn."""
    return any_twin_manager


@pytest.fixture
def manager(make_manager: ManagerFactory) -> LogManager:
    """Kafka's ``setUp``: a started manager over one directory."""
    manager = make_manager()
    manager.startup()
    return manager
