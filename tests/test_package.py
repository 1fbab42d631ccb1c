"""The package's own namespace: what ``import kafkalog`` gives (design.md §7's library API)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kafkalog


def test_the_storage_classes_are_on_the_package_and_load_on_first_use() -> None:
    from kafkalog.cleaner import LogCleaner
    from kafkalog.cleaner.config import CleanerConfig
    from kafkalog.config.log_config import LogConfig
    from kafkalog.log import Log
    from kafkalog.manager.log_manager import LogManager
    from kafkalog.segment import LogSegment
    from kafkalog.topic import TopicPartition

    assert (kafkalog.Log, kafkalog.LogManager, kafkalog.LogCleaner, kafkalog.LogConfig, kafkalog.CleanerConfig,
            kafkalog.LogSegment, kafkalog.TopicPartition) == (
        Log, LogManager, LogCleaner, LogConfig, CleanerConfig, LogSegment, TopicPartition)
    assert set(kafkalog.__all__) >= {"Log", "LogManager", "LogCleaner", "MemoryRecords", "implementation"}
    for name in kafkalog.__all__:
        assert getattr(kafkalog, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'Logg'"):
        kafkalog.Logg  # noqa: B018
    # a fresh interpreter: importing the package does not import the log layer yet
    code = "import sys, kafkalog; print('kafkalog.log' in sys.modules, kafkalog.LogManager.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "LogManager"]


def test_serve_is_at_the_top_and_says_which_extra_it_needs() -> None:
    """Issue 34 names ``with kafkalog.serve(...) as broker``: the broker's :func:`~kafkalog.broker.serve`, loaded on
    first use; without the broker extra (kio) the error says what to install."""
    from kafkalog.broker import serve
    assert kafkalog.serve is serve
    code = ("import sys; sys.modules['kio'] = None\n"
            "import kafkalog\n"
            "try:\n"
            "    kafkalog.serve\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "kafkalog.serve needs the broker extra: pip install 'kafkalog[broker]'" in out


def test_every_subpackage_is_in_the_wheel() -> None:
    """pyproject.toml lists the packages by hand; a subpackage missing there would be left out of the wheel."""
    import tomllib
    from pathlib import Path

    root = Path(kafkalog.__file__).resolve().parent
    found = {".".join(p.parent.relative_to(root.parent).parts) for p in root.rglob("__init__.py")}
    listed = tomllib.loads((root.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert found == set(listed)
