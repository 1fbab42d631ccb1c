"""Fixtures of the storage tests: Kafka's OffsetIndexTest / TimeIndexTest setup, an index over a new file
(base offset 45, room for 30 entries), on the ``impl`` twin, closed after the test.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kafkalog.index import (
    OffsetIndex,
    TimeIndex,
)
from tests.support.index_utils import BASE_OFFSET, MAX_ENTRIES


@pytest.fixture
def offset_index(impl: ModuleType, tmp_path: Path) -> Any:
    """Kafka's setup: an offset index at base 45 over a new file, 30 entries of 8 bytes."""
    idx = OffsetIndex(tmp_path / "offset.index", BASE_OFFSET, MAX_ENTRIES * 8)
    yield idx
    idx.close()


@pytest.fixture
def time_index(impl: ModuleType, tmp_path: Path) -> Any:
    """Kafka's setup: a time index at base 45 over a new file, 30 entries of 12 bytes."""
    idx = TimeIndex(tmp_path / "time.timeindex", BASE_OFFSET, MAX_ENTRIES * 12)
    yield idx
    idx.close()
