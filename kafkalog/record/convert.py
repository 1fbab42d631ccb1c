"""Message-format conversion for readers of an older format, and what it costs.

Ports of (Apache Kafka, tag 3.8.0, ``clients/src/main/java/org/apache/kafka/common/record/``):

* ``RecordsUtil.java``: ``downConvert`` (:func:`down_convert`, the records as
  :class:`~kafkalog.record.memory.MemoryRecords`, over
  :func:`~kafkalog.record.records_util.down_convert_batches`, which converts them);
* ``LazyDownConversionRecords.java``: its chunked iterator (:class:`LazyDownConversionRecords`); the
  network ``Send`` that writes the chunks to a socket (``LazyDownConversionRecordsSend``) is not ported;

and of 0.10.1.1's ``core/src/main/scala/kafka/log/FileMessageSet.scala`` ``toMessageFormat`` with
``kafka/message/Message.scala`` ``toFormatVersion`` (:func:`to_message_format`).

Why conversion exists.  A consumer that only reads an older message format (a fetch request of an old
version) cannot parse newer entries, so the broker rewrites what it sends: 0.10.1 turned v1 messages into
v0 ones for pre-0.10 consumers (``toMessageFormat``, which converts either way between v0 and v1); 3.x turns
v2 batches into v1 or v0 messages and v1 into v0 (``downConvert``), never up.  What is already in the
reader's format (or older) is sent as it is.  The log itself never changes.

The 3.x rules, in ``RecordsUtil.downConvert``'s order, for each batch:

* below v2, control batches (transaction markers) are dropped, and a zstd batch is an error (v0/v1 have
  no zstd);
* a batch of the target magic or older is copied byte for byte;
* a newer batch is rebuilt in the target magic with its own codec and timestamp type (LogAppendTime keeps
  the batch's append time); record offsets are kept, headers dropped.  When the target is v0/v1 and the
  batch is uncompressed, the records before ``first_offset`` are left out: the fetch started in the middle
  of the v2 batch, and a v0/v1 reader (some librdkafka versions) expects no offset before the one it
  asked for.  A batch left with no record is dropped.

Where this port differs from Kafka, and why:

* ``LazyDownConversionRecords`` converts the first chunk in its constructor (to know its size) and the
  iterator then skips one batch of the source to pass it; when the first batches convert to nothing (control
  batches dropped for a v0/v1 reader) that one batch is not all the first chunk consumed, and Kafka's
  iterator converts the batch after it a second time.  Here the iterator skips every batch the first chunk
  consumed, so no record is sent twice.
* :func:`to_message_format` builds the messages it converts from what a reader sees of each record (key,
  value, timestamp), not from the inner message's bytes: an inner message of a v1 wrapper kept in v1 is
  rewritten with the timestamp the wrapper reports for it (the append time under LogAppendTime), where
  0.10.1 kept the inner bytes.  Its new wrapper is CreateTime with the largest inner timestamp, as 0.10.1's.
  0.10.1 knew no v2 batch; here a v2 record converts as ``downConvert`` converts it.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from .._common import (
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    NO_TIMESTAMP,
)
from ..errors import IllegalArgumentError, UnsupportedCompressionError
from .batch import RecordBatch
from .compression import CompressionType, compress
from .legacy import LegacyRecordBatch, legacy_entry
from .memory import MemoryRecords
from .records_util import ConvertedRecords, down_convert_batches

__all__ = [
    "MIN_OVERFLOW_MESSAGE_LENGTH",
    "LazyDownConversionRecords",
    "Records",
    "down_convert",
    "to_message_format",
]

_FRAME = struct.Struct(">qi")

#: What a chunked down-converted fetch sends at the least when nothing converts: an entry header, so that
#: an old consumer sees a message too large for its buffer and says so (Kafka:
#: ``LazyDownConversionRecordsSend.MIN_OVERFLOW_MESSAGE_LENGTH`` = ``Records.LOG_OVERHEAD``).
MIN_OVERFLOW_MESSAGE_LENGTH = LOG_OVERHEAD


class Records(Protocol):
    """What conversion reads: a run of batches and its size (Kafka: ``Records``), such as
    :class:`~kafkalog.record.MemoryRecords` and :class:`~kafkalog.file_message_set.FileMessageSet`."""

    def batches(self) -> Iterator[RecordBatch]: ...

    def size_in_bytes(self) -> int: ...


# ---------------------------------------------------------------------------------------------------------
# RecordsUtil.downConvert


def down_convert(batches: Iterable[RecordBatch], to_magic: int, first_offset: int, *,
                 nanoseconds: Callable[[], int] = time.monotonic_ns) -> ConvertedRecords[MemoryRecords]:
    """``batches`` in ``to_magic`` or older, for a reader of that format (Kafka:
    ``RecordsUtil.downConvert``); see the module docstring for the rules and
    :func:`~kafkalog.record.records_util.down_convert_batches` for the stats.

    Raises:
        UnsupportedCompressionError: a zstd batch for a v0/v1 reader.
    """
    converted = down_convert_batches(batches, to_magic, first_offset, nanoseconds=nanoseconds)
    return ConvertedRecords(MemoryRecords(converted.records), converted.record_conversion_stats)


# ---------------------------------------------------------------------------------------------------------
# LazyDownConversionRecords


class _Peekable:
    """An iterator of batches that can show its next one (Kafka's ``AbstractIterator.peek``)."""

    def __init__(self, batches: Iterator[RecordBatch]) -> None:
        self._batches = batches
        self._next: RecordBatch | None = None

    def peek(self) -> RecordBatch | None:
        if self._next is None:
            self._next = next(self._batches, None)
        return self._next

    def next(self) -> RecordBatch | None:
        batch = self.peek()
        self._next = None
        return batch


class LazyDownConversionRecords:
    """Records to down-convert a chunk at a time, as a fetch sends them (Kafka:
    ``LazyDownConversionRecords``, KIP-283): the whole converted fetch is never in memory at once.

    :meth:`size_in_bytes` is what the fetch response announces: the source's size, or the first converted
    chunk's if that is larger (a consumer needs at least one whole batch to make progress); with nothing to
    convert, :data:`MIN_OVERFLOW_MESSAGE_LENGTH` (an old consumer then reports a message too large for its
    fetch size) or 0 for no source batch at all.
    """

    def __init__(self, topic_partition: object, records: Records, to_magic: int, first_offset: int, *,
                 nanoseconds: Callable[[], int] = time.monotonic_ns) -> None:
        self.topic_partition = topic_partition
        self.records = records
        self.to_magic = to_magic
        self.first_offset = first_offset
        self._nanoseconds = nanoseconds
        # The first chunk is converted now to know the size; the iterator hands it out first.
        first = next(self._chunks(_Peekable(iter(records.batches())), 0), None)
        self._first_converted: tuple[ConvertedRecords[MemoryRecords], int] | None = first
        if first is not None:
            self._size_in_bytes = max(records.size_in_bytes(), first[0].records.size_in_bytes())
        else:
            has_batches = next(iter(records.batches()), None) is not None
            self._size_in_bytes = MIN_OVERFLOW_MESSAGE_LENGTH if has_batches else 0

    def size_in_bytes(self) -> int:
        return self._size_in_bytes

    def iterator(self, maximum_read_size: int) -> Iterator[ConvertedRecords[MemoryRecords]]:
        """The converted records, a chunk at a time (Kafka: ``iterator``): each chunk converts the source
        batches that fit ``maximum_read_size`` (at least one), and chunks that convert to nothing are
        skipped.  The first chunk converted by the constructor is handed out first, by the first iterator
        only."""
        first = self._first_converted
        self._first_converted = None
        batches = _Peekable(iter(self.records.batches()))
        if first is not None:
            converted, consumed = first
            for _ in range(consumed):
                batches.next()
            yield converted
        for converted, _consumed in self._chunks(batches, maximum_read_size):
            yield converted

    def _chunks(self, batches: _Peekable, maximum_read_size: int
                ) -> Iterator[tuple[ConvertedRecords[MemoryRecords], int]]:
        """Kafka's ``Iterator.makeNext`` loop: ``(converted chunk, source batches it consumed)``, the count
        including the batches of chunks that converted to nothing before it."""
        consumed = 0
        while batches.peek() is not None:
            chunk: list[RecordBatch] = []
            size_so_far = 0
            while True:
                upcoming = batches.peek()
                if upcoming is None or (chunk and upcoming.size_in_bytes + size_so_far > maximum_read_size):
                    break
                batches.next()
                chunk.append(upcoming)
                size_so_far += upcoming.size_in_bytes
            consumed += len(chunk)
            converted = down_convert(chunk, self.to_magic, self.first_offset, nanoseconds=self._nanoseconds)
            if converted.records.size_in_bytes() > 0:
                yield converted, consumed
                consumed = 0

    def __repr__(self) -> str:
        return (f"LazyDownConversionRecords(size={self._size_in_bytes}, underlying={self.records!r}, "
                f"toMagic={self.to_magic}, firstOffset={self.first_offset})")


# ---------------------------------------------------------------------------------------------------------
# 0.10.1: FileMessageSet.toMessageFormat


def to_message_format(batches: Iterable[RecordBatch], to_magic: int) -> MemoryRecords | None:
    """Every message of ``batches`` in ``to_magic`` (0 or 1, up or down), offsets kept, as one message set
    with the first entry's codec: one message per record uncompressed, one wrapper around them all
    compressed (0.10.1: ``FileMessageSet.toMessageFormat`` with ``Message.toFormatVersion`` and the
    ``ByteBufferMessageSet`` it builds).  ``None`` when there is no whole message to convert, which the
    caller answers with its own bytes (0.10.1: "the message is too large").

    A message already in ``to_magic`` and not inside a wrapper is kept byte for byte; a v0 message up-converted
    to v1 gets timestamp -1 and CreateTime; a v1 message down-converted loses its timestamp; see the module
    docstring for the rest.

    Raises:
        IllegalArgumentError: ``to_magic`` is not 0 or 1.
        UnsupportedCompressionError: the first batch is zstd, which v0/v1 cannot carry.
    """
    if to_magic not in (MAGIC_V0, MAGIC_V1):
        raise IllegalArgumentError(f"Messages convert to magic 0 or 1, not {to_magic}")
    codec: CompressionType | None = None
    # (offset, message bytes without the frame, timestamp) per message, in order
    messages: list[tuple[int, bytes, int]] = []
    for batch in batches:
        if codec is None:
            codec = batch.compression
        if isinstance(batch, LegacyRecordBatch) and not batch.is_compressed and batch.magic == to_magic:
            messages.append((batch.last_offset, batch.raw_bytes()[LOG_OVERHEAD:], batch.max_timestamp))
            continue
        for record in batch.records():
            timestamp = record.timestamp if to_magic == MAGIC_V1 and batch.magic > MAGIC_V0 else NO_TIMESTAMP
            entry = legacy_entry(0, to_magic, 0, timestamp, record.key, record.value)
            messages.append((record.offset, entry[LOG_OVERHEAD:], timestamp))
    if not messages:
        return None
    if codec is None or codec is CompressionType.NONE:
        return MemoryRecords(b"".join(_FRAME.pack(offset, len(body)) + body for offset, body, _ in messages))
    if codec is CompressionType.ZSTD:
        raise UnsupportedCompressionError(f"ZStandard compression is not supported for magic {to_magic}")
    # ByteBufferMessageSet.create: v1 inner offsets count from the first offset, v0 ones are absolute.
    first = messages[0][0]
    inner = b"".join(
        _FRAME.pack(offset if to_magic == MAGIC_V0 else offset - first, len(body)) + body
        for offset, body, _ in messages
    )
    wrapper_timestamp = max(timestamp for _, _, timestamp in messages) if to_magic == MAGIC_V1 else NO_TIMESTAMP
    return MemoryRecords(legacy_entry(messages[-1][0], to_magic, int(codec), wrapper_timestamp, None,
                                      compress(codec, inner, magic=to_magic)))
