"""Where a partition's segments come from: the one shape every layout is read through (the Spark source's
read tasks, :class:`~kafkalog.spark.plan.ReadTask`, carry one).

A :class:`SegmentSource` opens a segment's ``.log`` (by its base offset) as a read-only
:class:`~kafkalog.file_message_set.FileMessageSet` and finds the position of an offset in it; the consumer
view, the chunked decode and the Arrow conversion after it are the same for all:

- :class:`LocalDir`: a partition dir on the local disk (files, the fast path);
- :class:`UrlDir`: a broker's partition dir copied to a URL (objects read by range, :mod:`kafkalog.urls`);
- :class:`~kafkalog.partition_view.tiered.TieredSegments`: a partition in a tiered-storage layout (each
  segment's original ``.log`` rebuilt by range from what its layout uploaded, :mod:`kafkalog.remote`).

Each pickles without a filesystem or an open file: a task opens what it reads, in its own process.
kafkalog's, no Kafka counterpart.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from ..file_message_set import FileMessageSet
from ..filenames import log_filename
from ..segment import LogSegment
from ..urls.channel import open_remote_log
from ..urls.location import Storage
from ..urls.partition import UrlSegment

__all__ = ["LocalDir", "SegmentSource", "UrlDir"]


class SegmentSource(Protocol):
    """The segments of one partition, by base offset.

    ``offsets_contiguous`` says whether each segment holds every offset from its base offset up to the next
    segment's (the last one: up to the log end offset), so that a segment whose batches end before that has
    lost records: true of tiered storage, where Kafka copies only topics that are not compacted and records a
    copied segment's end offset as the next one's base offset less one (``RemoteLogManager.copyLogSegment``);
    not of a broker's dir, whose compacted segments end wherever the cleaner left their last record.
    """

    @property
    def offsets_contiguous(self) -> bool: ...

    def open_log(self, base_offset: int, size: int | None = None) -> FileMessageSet:
        """The segment's ``.log``, read-only (``size``: its size when known).

        Raises:
            FileNotFoundError: the segment is gone (a local log truncated, cleaned or deleted).
        """
        ...

    def translate_offset(self, base_offset: int, size: int, offset: int) -> int | None:
        """The position of the first batch whose last offset is at or after ``offset``, found through the
        segment's offset index (``LogSegment.translateOffset``), or ``None``."""
        ...

    def log_name(self, base_offset: int) -> str:
        """The segment's ``.log`` as messages name it."""
        ...

    def only(self, base_offsets: Collection[int]) -> SegmentSource:
        """The source of just these segments: what a task that reads them carries (a tiered layout's
        segments carry their manifests, which a task reading others need not ship)."""
        ...


def _translated(segment: LogSegment | UrlSegment, close: Callable[[], None], offset: int) -> int | None:
    """``segment.translate_offset(offset)``'s position, the segment closed after."""
    try:
        found = segment.translate_offset(offset)
    finally:
        close()
    return None if found is None else found.position


@dataclass(frozen=True)
class LocalDir:
    """A partition dir on the local disk."""

    dir: str
    offsets_contiguous = False

    def open_log(self, base_offset: int, size: int | None = None) -> FileMessageSet:
        return FileMessageSet(log_filename(self.dir, base_offset), writable=False)

    def translate_offset(self, base_offset: int, size: int, offset: int) -> int | None:
        segment = LogSegment.open(self.dir, base_offset, read_only=True)
        return _translated(segment, segment.close_handlers, offset)

    def log_name(self, base_offset: int) -> str:
        return str(log_filename(self.dir, base_offset))

    def only(self, base_offsets: Collection[int]) -> LocalDir:
        return self


@dataclass(frozen=True)
class UrlDir:
    """A broker's partition dir at a URL (``dir``), its filesystem built from ``storage`` at first use."""

    storage: Storage
    dir: str
    offsets_contiguous = False

    def open_log(self, base_offset: int, size: int | None = None) -> FileMessageSet:
        return open_remote_log(self.storage.at(self.dir) / f"{base_offset:020d}.log", size)

    def translate_offset(self, base_offset: int, size: int, offset: int) -> int | None:
        remote = UrlSegment(self.storage.at(self.dir), base_offset, {"log": size})
        return _translated(remote, remote.close, offset)

    def log_name(self, base_offset: int) -> str:
        return f"{self.dir}/{base_offset:020d}.log"

    def only(self, base_offsets: Collection[int]) -> UrlDir:
        return self
