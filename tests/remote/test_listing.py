"""One listing of a tiered store (:mod:`kafkalog.remote.listing`): finding the layout and building Aiven's
partitions share it, in the library and in the Spark source's planner.  Counted through a thin subclass of
fsspec's memory filesystem (its own protocol, ``countmem://``) that counts the listing calls made from outside
it (its ``find`` walks with ``ls``; an object store's ``find`` is one paginated request)."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from kafkalog.remote import detect_layout, list_partitions, list_store
from kafkalog.remote.upload import LocalSegment, upload_aiven, upload_local_tiered
from kafkalog.spark.options import ReadOptions
from kafkalog.spark.plan import find_partitions, plan_read

TOPIC_ID = "LWgrMmVrT0a__7a4SasuPA"
PROTOCOL = "countmem"


class CountingMemoryFileSystem(MemoryFileSystem):
    """fsspec's memory filesystem, counting its listing calls made from outside it: ``ls`` (``walk`` and
    ``listdir`` list through it), ``find`` and ``glob`` (each one call, whatever it lists inside)."""

    protocol = (PROTOCOL,)
    calls: ClassVar[Counter[str]] = Counter()
    _depth = threading.local()

    def _counted(self, name: str, *args: Any, **kwargs: Any) -> Any:
        depth = getattr(self._depth, "value", 0)
        if depth == 0:
            self.calls[name] += 1
        self._depth.value = depth + 1
        try:
            return getattr(super(), name)(*args, **kwargs)
        finally:
            self._depth.value = depth

    def ls(self, *args: Any, **kwargs: Any) -> Any:
        return self._counted("ls", *args, **kwargs)

    def find(self, *args: Any, **kwargs: Any) -> Any:
        return self._counted("find", *args, **kwargs)

    def glob(self, *args: Any, **kwargs: Any) -> Any:
        return self._counted("glob", *args, **kwargs)


@pytest.fixture(autouse=True)
def _registered() -> None:
    """``countmem://`` URLs reach the counting filesystem (a Storage builds it by its protocol)."""
    fsspec.register_implementation(PROTOCOL, CountingMemoryFileSystem, clobber=True)


@pytest.fixture
def store(local_segments: list[LocalSegment]) -> Iterator[tuple[CountingMemoryFileSystem, str]]:
    """An Aiven store (prefix ``tiered/``, two partitions) on the counting filesystem, the counts at zero."""
    fs = CountingMemoryFileSystem()
    root = f"/kafkalog-listing-{uuid.uuid4().hex}"
    for partition in (0, 1):
        upload_aiven(fs, root, "orders", partition, TOPIC_ID, local_segments, prefix="tiered/")
    fs.calls.clear()
    yield fs, root
    fs.rm(root, recursive=True)


def test_the_library_lists_an_aiven_store_once(store: tuple[CountingMemoryFileSystem, str],
                                               local_segments: list[LocalSegment]) -> None:
    fs, root = store
    partitions = list_partitions(fs, root)
    assert fs.calls == Counter(find=1)
    assert [(p.topic, p.partition) for p in partitions] == [("orders", 0), ("orders", 1)]
    assert [s.read() for s in partitions[1].segments] == [s.log for s in local_segments]
    fs.calls.clear()
    assert detect_layout(fs, root) == "aiven-tiered-storage"
    assert fs.calls == Counter(find=1)


@pytest.mark.parametrize("layout", ["aiven-tiered-storage", "auto"])
def test_the_spark_planner_lists_an_aiven_store_once(store: tuple[CountingMemoryFileSystem, str],
                                                     local_segments: list[LocalSegment], layout: str) -> None:
    fs, root = store
    options = ReadOptions.parse({"path": f"{PROTOCOL}://{root}", "layout": layout})
    found = find_partitions(options.paths, options)
    assert [str(tp) for tp, _ in found] == ["orders-0", "orders-1"]
    # One recursive listing finds the layout and builds the partitions; with auto, the one-level listing
    # before it is the check for a broker's log dir, which a tiered store is not.
    assert fs.calls == (Counter(find=1) if layout != "auto" else Counter(find=1, ls=1))
    fs.calls.clear()
    tasks = plan_read(options)
    assert sum(batch.num_rows for task in tasks for batch in task.read()) \
        == 2 * (local_segments[-1].end_offset + 1)
    assert fs.calls["find"] == 1


def test_a_local_tiered_store_is_told_and_listed_from_the_same_listing(local_segments: list[LocalSegment]) -> None:
    fs = CountingMemoryFileSystem()
    root = f"/kafkalog-listing-{uuid.uuid4().hex}"
    try:
        for partition in (0, 1):
            upload_local_tiered(fs, f"{root}/kafka-tiered-storage", "orders", partition, TOPIC_ID, local_segments)
        fs.calls.clear()
        listing = list_store(fs, root)
        assert detect_layout(fs, root, listing=listing) == "kafka-local-tiered-storage"
        assert fs.calls == Counter(find=1)
        assert listing.root == root and f"{root}/kafka-tiered-storage" in listing.directories
        assert [name for name, is_dir in listing.children(f"{root}/kafka-tiered-storage") if is_dir] \
            == [f"orders-0-{TOPIC_ID}", f"orders-1-{TOPIC_ID}"]
        # detected and listed, partition directories and all, from one listing
        fs.calls.clear()
        partitions = list_partitions(fs, root)
        assert fs.calls == Counter(find=1)
        assert [(p.name, len(p.segments)) for p in partitions] == [("orders-0", len(local_segments)),
                                                                   ("orders-1", len(local_segments))]
        assert [s.read() for s in partitions[0].segments] == [s.log for s in local_segments]
        fs.calls.clear()
        options = ReadOptions.parse({"path": f"{PROTOCOL}://{root}", "layout": "kafka-local-tiered-storage"})
        assert [str(tp) for tp, _ in find_partitions(options.paths, options)] == ["orders-0", "orders-1"]
        assert fs.calls == Counter(find=1)
    finally:
        fs.rm(root, recursive=True)
