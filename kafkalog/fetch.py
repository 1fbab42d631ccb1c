"""What a read of a log returns: where the fetch starts, and the records it got.

Ports of ``LogOffsetMetadata`` (``kafka/server/LogOffsetMetadata.scala``, now
``storage/.../LogOffsetMetadata.java``), ``FetchDataInfo`` (``kafka/server/FetchDataInfo.scala``,
now ``storage/.../FetchDataInfo.java``) and ``LogOffsetSnapshot`` (``storage/.../LogOffsetSnapshot.java``,
3.8.0), the ``LogOffsetsListener`` told of the high watermark's moves (``storage/.../LogOffsetsListener.java``,
3.8.0), and ``FetchIsolation`` (``storage/.../FetchIsolation.java``, 3.8.0), how far a fetch may read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

from ._common import NamedChoice
from .errors import KafkaLogError
from .record import MemoryRecords

if TYPE_CHECKING:
    from .file_message_set import FileMessageSet
    from .transaction_index import AbortedTxn

__all__ = ["EMPTY_RECORDS", "NO_OP_OFFSETS_LISTENER", "UNKNOWN_OFFSET", "UNKNOWN_OFFSET_METADATA", "FetchDataInfo",
           "FetchIsolation", "LogOffsetMetadata", "LogOffsetSnapshot", "LogOffsetsListener"]

#: Kafka's ``UNKNOWN_OFFSET`` / ``UNKNOWN_FILE_POSITION`` for metadata that only knows the offset.
UNKNOWN_OFFSET = -1
#: A read that found its offset but returns no bytes (Kafka: ``MemoryRecords.EMPTY``).
EMPTY_RECORDS = MemoryRecords(b"")


class FetchIsolation(NamedChoice):
    """How far a read may go (Kafka: ``FetchIsolation``): to the log end offset (a follower's fetch), the high
    watermark (a ``read_uncommitted`` consumer's) or the last stable offset (a ``read_committed`` consumer's, which
    is also given the aborted transactions of what it read).  Members compare equal to their lower-case names."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


class LogOffsetMetadata(NamedTuple):
    """An offset and, when known, where it is: the base offset of its segment and the byte position of
    its batch in that segment (Kafka: ``LogOffsetMetadata``).

    ``LogOffsetMetadata(offset)`` knows only the offset (:attr:`message_offset_only`); such metadata is on
    no segment, so it is neither older than nor on the same segment as any other, and has no position to
    compare.
    """

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = UNKNOWN_OFFSET

    @property
    def message_offset_only(self) -> bool:
        """Whether only the offset is known (Kafka: ``messageOffsetOnly``)."""
        return (self.segment_base_offset == UNKNOWN_OFFSET
                and self.relative_position_in_segment == UNKNOWN_OFFSET)

    def on_older_segment(self, that: LogOffsetMetadata) -> bool:
        """Whether this offset is in an older segment than ``that``; ``False`` when either knows only its
        offset (Kafka: ``onOlderSegment``)."""
        if self.message_offset_only or that.message_offset_only:
            return False
        return self.segment_base_offset < that.segment_base_offset

    def on_same_segment(self, that: LogOffsetMetadata) -> bool:
        """Whether this offset is in the same segment as ``that``; ``False`` when either knows only its
        offset (Kafka: ``onSameSegment``)."""
        if self.message_offset_only or that.message_offset_only:
            return False
        return self.segment_base_offset == that.segment_base_offset

    def position_diff(self, that: LogOffsetMetadata) -> int:
        """Bytes from ``that`` to this offset in their segment (Kafka: ``positionDiff``).

        Raises:
            KafkaLogError: when either knows only its offset, or they are on different segments.
        """
        if self.message_offset_only or that.message_offset_only:
            raise KafkaLogError(f"{self} cannot compare its segment position with {that} since it only has "
                                "message offset info")
        if not self.on_same_segment(that):
            raise KafkaLogError(f"{self} cannot compare its segment position with {that} since they are not "
                                "on the same segment")
        return self.relative_position_in_segment - that.relative_position_in_segment

    def __str__(self) -> str:
        return (f"(offset={self.message_offset}, segment=[{self.segment_base_offset}:"
                f"{self.relative_position_in_segment}])")


#: Metadata of no offset at all (Kafka: ``LogOffsetMetadata.UNKNOWN_OFFSET_METADATA``).
UNKNOWN_OFFSET_METADATA = LogOffsetMetadata(-1, UNKNOWN_OFFSET, UNKNOWN_OFFSET)


class FetchDataInfo(NamedTuple):
    """The result of a read (Kafka: ``FetchDataInfo``).

    ``records`` has ``batches()``, ``records()`` and ``size_in_bytes()``: a slice of the segment file
    (:class:`~kafkalog.file_message_set.FileMessageSet`, read on demand) or :data:`EMPTY_RECORDS`.
    ``first_entry_incomplete`` is set when the size limit cut the first batch short.
    """

    fetch_offset_metadata: LogOffsetMetadata
    records: FileMessageSet | MemoryRecords
    first_entry_incomplete: bool = False
    aborted_transactions: list[AbortedTxn] | None = None

    def records_bytes(self) -> bytes:
        """The records' bytes as they lie in the segment (one read of the file slice) or in memory, undecoded: what
        a fetch response carries and a follower appends."""
        records = self.records
        if records.size_in_bytes() == 0:
            return b""
        if isinstance(records, MemoryRecords):
            return bytes(records.buffer)
        return bytes(records.read_bytes())


class LogOffsetSnapshot(NamedTuple):
    """A log's offsets taken together, each with its position (Kafka: ``LogOffsetSnapshot``, what
    ``UnifiedLog.fetchOffsetSnapshot`` returns)."""

    log_start_offset: int
    log_end_offset: LogOffsetMetadata
    high_watermark: LogOffsetMetadata
    last_stable_offset: LogOffsetMetadata


class LogOffsetsListener(Protocol):
    """Told of every change of a log's high watermark (Kafka: ``LogOffsetsListener``)."""

    def on_high_watermark_updated(self, offset: int) -> None:
        """Kafka: ``onHighWatermarkUpdated``."""


class _NoOpOffsetsListener:
    def on_high_watermark_updated(self, offset: int) -> None:
        pass


#: The listener of a log that was given none (Kafka: ``LogOffsetsListener.NO_OP_OFFSETS_LISTENER``).
NO_OP_OFFSETS_LISTENER: LogOffsetsListener = _NoOpOffsetsListener()
