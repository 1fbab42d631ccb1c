"""Fixtures of the tiered-storage tests: a store (an fsspec filesystem and a root in it), in memory and on
the local disk, emptied after the test; a partition of closed segments kafkalog wrote."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from kafkalog.remote.upload import LocalSegment
from tests.remote.tiered_stores import write_partition


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """``(fs, root)``: fsspec's memory filesystem (a root of its own: its store is process-wide) or the local
    one under the test's temporary directory."""
    if request.param == "memory":
        fs = fsspec.filesystem("memory")
        root = f"/kafkalog-test-{uuid.uuid4().hex}"
        fs.makedirs(root, exist_ok=True)
        yield fs, root
        fs.rm(root, recursive=True)
    else:
        root = tmp_path / "store"
        root.mkdir()
        yield fsspec.filesystem("file"), root.as_posix()


@pytest.fixture(scope="module")
def local_segments(tmp_path_factory: pytest.TempPathFactory) -> list[LocalSegment]:
    """The closed segments of a partition kafkalog wrote (four or more, several batches each)."""
    return write_partition(tmp_path_factory.mktemp("partition") / "orders-0")
