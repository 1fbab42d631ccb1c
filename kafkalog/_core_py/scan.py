"""The batch scan and the offset search in plain Python: the twin of ``_core_pyx/scan.pxi``.

Kafka: ``clients/.../common/record/ByteBufferLogInputStream.java`` (``nextBatchSize``),
``FileLogInputStream.java`` (``nextBatch``) and ``FileRecords.searchForOffsetWithSize`` (tag 3.8.0).  A log
entry is a 12-byte frame, offset (int64) and size (int32), big-endian, then ``size`` bytes whose byte 4 (16
from the frame's start) is the magic: a v2 batch (61-byte header, CRC-32C from byte 21) or a v0/v1
message (CRC-32 from the magic).  A walk never raises on bad bytes: it stops at the first entry it cannot
take and says why (:class:`~kafkalog._common.ScanStop`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .._common import (
    ATTRIBUTES_OFFSET,
    BATCH_DTYPE,
    CRC_OFFSET,
    HEADER_SIZE_UP_TO_MAGIC,
    LAST_OFFSET_DELTA_OFFSET,
    LEGACY_COMPRESSION_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V1,
    MAGIC_V2,
    MAX_TIMESTAMP_OFFSET,
    MIN_RECORD_OVERHEAD,
    PRODUCER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V1,
    RECORDS_COUNT_OFFSET,
    ScanStop,
)
from ._ints import _FRAME, _I16, _I32, _I64, _U32, wrap64
from .crc import crc32, crc32c


def _next_frame(
    view: memoryview, pos: int, end: int, max_entry_size: int
) -> tuple[ScanStop | None, int, int, int]:
    """Frame the entry at ``pos``: ``(None, offset, size, magic)`` when a whole entry starts there, else
    ``(reason, 0, 0, 0)`` with the :class:`ScanStop` that ends a walk at ``pos``.

    The checks of Kafka's ``ByteBufferLogInputStream.nextBatchSize`` and ``FileLogInputStream.nextBatch``,
    in that order, plus the per-magic minimum sizes (a v1 message needs 22 bytes, a v2 batch its 61-byte
    header), so no field is read from the next entry.  The scan and the offset search share it.

    A size below the minimum is corrupt (Kafka 3.x) unless every byte from ``pos`` to ``end`` is zero: that
    is a zero-filled tail (a preallocated segment that was not trimmed, a file extended but never written),
    where the data ends, as 0.10.1's ``FileMessageSet.iterator`` ended at a size below the minimum.
    """
    remaining = end - pos
    if remaining <= 0:
        return ScanStop.END, 0, 0, 0
    if remaining < LOG_OVERHEAD:
        return ScanStop.PARTIAL, 0, 0, 0
    offset, size = _FRAME.unpack_from(view, pos)
    if size < MIN_RECORD_OVERHEAD:
        return (ScanStop.ZERO_TAIL if _all_zero(view, pos, end) else ScanStop.SIZE_TOO_SMALL), 0, 0, 0
    if size > max_entry_size:
        return ScanStop.TOO_LARGE, 0, 0, 0
    if remaining < HEADER_SIZE_UP_TO_MAGIC or remaining < LOG_OVERHEAD + size:
        return ScanStop.PARTIAL, 0, 0, 0
    magic = view[pos + MAGIC_OFFSET]
    if magic > MAGIC_V2:
        return ScanStop.BAD_MAGIC, 0, 0, 0
    if (magic == MAGIC_V2 and LOG_OVERHEAD + size < RECORD_BATCH_OVERHEAD) or (
        magic == MAGIC_V1 and size < RECORD_OVERHEAD_V1
    ):
        return ScanStop.SIZE_TOO_SMALL, 0, 0, 0
    return None, offset, size, magic


def _all_zero(view: memoryview, pos: int, end: int) -> bool:
    """Whether every byte of ``view[pos:end]`` is 0 (numpy reads it in place: no copy of a long tail)."""
    with view[pos:end] as tail:
        return not np.frombuffer(tail, dtype=np.uint8).any()


def _last_offset(view: memoryview, pos: int, offset: int, magic: int) -> int:
    """An entry's last offset: base + lastOffsetDelta for v2, the frame's offset for legacy."""
    if magic == MAGIC_V2:
        return wrap64(offset + _I32.unpack_from(view, pos + LAST_OFFSET_DELTA_OFFSET)[0])
    return offset


def scan_batches(
    buf: Any,
    start: int = 0,
    end: int = -1,
    check_crc: bool = True,
    stop_on_invalid: bool = True,
    max_entry_size: int = 0x7FFFFFFF,
    max_batches: int = 0x7FFFFFFFFFFFFFFF,
) -> tuple[npt.NDArray[Any], int, int]:
    """Walk the log entries of ``buf[start:end]`` (any magic, mixed) and describe each one.

    Returns ``(batches, stop_position, stop_reason)``: a :data:`~kafkalog._common.BATCH_DTYPE` array
    with a row per complete entry, the position after the last one, and a :class:`ScanStop`.

    The framing checks are Kafka's ``ByteBufferLogInputStream.nextBatchSize`` and
    ``FileLogInputStream.nextBatch``, in that order: a size below the 14-byte minimum record overhead
    is corrupt, a size above ``max_entry_size`` is too large, an entry that runs past ``end`` is a
    partial write, a magic outside 0..2 is corrupt.  The scan also refuses a v1 entry smaller than
    its 22-byte overhead and a v2 batch smaller than its 61-byte header, whose fields would otherwise
    be read from the next entry.  With ``check_crc`` the CRC is computed (CRC-32C over bytes 21.. of
    a v2 batch, CRC-32 over the magic.. of a legacy message; Kafka's ``isValid``), and with
    ``stop_on_invalid`` the first mismatch ends the scan before that entry, as ``LogSegment.recover``
    needs.  The scan never raises on bad bytes: it stops and says why, and the caller decides.
    """
    size_of_buf = len(buf) if not isinstance(buf, memoryview) else buf.nbytes
    if end < 0 or end > size_of_buf:
        end = size_of_buf
    if start < 0:
        start = 0
    rows: list[tuple[int, int, int, int, int, int, int, int, int, int]] = []
    pos = start
    reason: ScanStop
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" or whole.ndim != 1 else whole
        while True:
            stop, offset, size, magic = _next_frame(view, pos, end, max_entry_size)
            if stop is ScanStop.END:
                reason = stop
                break
            if len(rows) >= max_batches:
                reason = ScanStop.LIMIT
                break
            if stop is not None:
                reason = stop
                break
            entry_end = pos + LOG_OVERHEAD + size
            if magic == MAGIC_V2:
                stored_crc = _U32.unpack_from(view, pos + CRC_OFFSET)[0]
                attributes = _I16.unpack_from(view, pos + ATTRIBUTES_OFFSET)[0]
                max_timestamp = _I64.unpack_from(view, pos + MAX_TIMESTAMP_OFFSET)[0]
                count = _I32.unpack_from(view, pos + RECORDS_COUNT_OFFSET)[0]
                crc_start = pos + ATTRIBUTES_OFFSET
            else:
                message = pos + LOG_OVERHEAD
                stored_crc = _U32.unpack_from(view, message)[0]
                attributes = view[message + 5]
                max_timestamp = _I64.unpack_from(view, message + 6)[0] if magic == MAGIC_V1 else -1
                count = 1 if attributes & LEGACY_COMPRESSION_MASK == 0 else -1
                crc_start = message + 4
            valid = -1
            if check_crc:
                crc = crc32c if magic == MAGIC_V2 else crc32  # CRC-32C for v2, CRC-32 for legacy
                computed = crc(view[crc_start:entry_end])
                valid = 1 if computed == stored_crc else 0
                if not valid and stop_on_invalid:
                    reason = ScanStop.BAD_CRC
                    break
            rows.append(
                (pos, LOG_OVERHEAD + size, offset, _last_offset(view, pos, offset, magic), max_timestamp,
                 stored_crc, count, attributes, magic, valid)
            )
            pos = entry_end
    return np.array(rows, dtype=BATCH_DTYPE), pos, int(reason)


def single_entry_magic(buf: Any, max_entry_size: int = 0x7FFFFFFF) -> int:
    """The magic of the one entry ``buf`` holds, or -1 when it does not hold exactly one whole entry.

    The entry is framed as :func:`scan_batches` frames it (the same checks, in the same order), so when this
    gives a magic, ``scan_batches(buf, check_crc=False, stop_on_invalid=False)`` gives one row for the whole
    buffer and stops at :data:`ScanStop.END`.  It reads only the frame, and builds no array: a one-batch
    append (a producer with ``linger.ms=0``) costs the scan's array more than its walk.
    """
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" or whole.ndim != 1 else whole
        end = view.nbytes
        stop, _offset, size, magic = _next_frame(view, 0, end, max_entry_size)
    return magic if stop is None and LOG_OVERHEAD + size == end else -1


def producer_fields(buf: Any, positions: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int16]]:
    """The producer id and epoch of the v2 batch at each of ``positions`` in ``buf``, read from the headers (what
    a walk over the batches of a log reads to know its producers, in one call instead of a read a batch).

    Every position is checked first: one where no whole batch header fits in ``buf`` raises ``ValueError``.
    Returns ``(producer_ids, producer_epochs)``.
    """
    at = [int(position) for position in positions]
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" or whole.ndim != 1 else whole
        total = view.nbytes
        for position in at:
            if position < 0 or position > total - RECORD_BATCH_OVERHEAD:
                raise ValueError(f"producer_fields: the batch at {position} is outside the buffer")
        ids = [_I64.unpack_from(view, position + PRODUCER_ID_OFFSET)[0] for position in at]
        epochs = [_I16.unpack_from(view, position + PRODUCER_EPOCH_OFFSET)[0] for position in at]
    return np.array(ids, dtype=np.int64), np.array(epochs, dtype=np.int16)


def search_for_offset(
    buf: Any, start: int, end: int, target_offset: int, max_entry_size: int = 0x7FFFFFFF
) -> tuple[int, int, int, int, int]:
    """The first entry in ``buf[start:end]`` whose last offset is >= ``target_offset``.

    Kafka: ``FileRecords.searchForOffsetWithSize`` (modern; 0.10.1's ``FileMessageSet.searchForOffsetWithSize``
    compared the shallow offset, which for a v2 batch is its base: modern Kafka matches on the last offset so a
    target inside a batch finds that batch).  Returns ``(position, size, last_offset, stop_position,
    stop_reason)``; ``position`` is -1 when no entry qualifies, and then ``stop_position`` and
    ``stop_reason`` (a :class:`ScanStop`) say where and why the walk ended.  Only the framing is read;
    CRCs are not checked, as Kafka's search does not check them.
    """
    size_of_buf = len(buf) if not isinstance(buf, memoryview) else buf.nbytes
    if end < 0 or end > size_of_buf:
        end = size_of_buf
    pos = max(start, 0)
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" or whole.ndim != 1 else whole
        while True:
            stop, offset, size, magic = _next_frame(view, pos, end, max_entry_size)
            if stop is not None:
                return -1, 0, -1, pos, int(stop)
            last = _last_offset(view, pos, offset, magic)
            if last >= target_offset:
                return pos, LOG_OVERHEAD + size, last, pos, int(ScanStop.END)
            pos += LOG_OVERHEAD + size
