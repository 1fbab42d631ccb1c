"""The kernels in plain Python: the readable reference, and the fallback when ``_core`` is not built.

Every function here has a twin of the same name, signature and behaviour in ``_core.pyx``; the test
suite runs both through one fixture, so a difference between them is a failing test.  This file is
written to be read next to Kafka's Java: each kernel names the Kafka code whose rules it applies.

Kernels take the buffer as an argument and keep no view of it after they return (the mmap rule in
``docs/design.md`` §3), so an mmap they were given can still be resized or closed.  Buffers are any
object with the buffer protocol: ``bytes``, ``bytearray``, ``memoryview``, ``mmap.mmap``.

Errors are kafkalog's own (:mod:`kafkalog.errors`) and carry the byte position of the bad entry.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import crcmod.predefined
import numpy as np
import numpy.typing as npt

from ._common import (
    ATTRIBUTES_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    BATCH_DTYPE,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    HEADER_DTYPE,
    HEADER_SIZE_UP_TO_MAGIC,
    INDEX_ENTRY_SIZE,
    INT32_MAX,
    LAST_OFFSET_DELTA_OFFSET,
    LEGACY_COMPRESSION_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V1,
    MAGIC_V2,
    MAX_TIMESTAMP_OFFSET,
    MIN_RECORD_OVERHEAD,
    MIN_V2_RECORD_SIZE,
    RECORD_BATCH_OVERHEAD,
    RECORD_DTYPE,
    RECORD_OVERHEAD_V1,
    RECORDS_COUNT_OFFSET,
    TIMESTAMP_TYPE_MASK,
    WARM_SECTION_BYTES,
    IndexKind,
    ScanStop,
    TimestampType,
)
from .errors import CorruptRecordError, InvalidRecordError, UnsupportedMagicError

if TYPE_CHECKING:
    from .record.types import ControlRecordType

__all__ = [
    "IMPLEMENTATION",
    "Record",
    "crc32",
    "crc32c",
    "crc32c_hardware",
    "decode_legacy_records",
    "decode_v2_batch_objects",
    "decode_v2_batches",
    "decode_v2_record_objects",
    "decode_v2_record_objects_chunk",
    "decode_v2_records",
    "decode_v2_records_chunk",
    "encode_v2_records",
    "gather_slices",
    "index_lookup",
    "index_points",
    "md5",
    "offset_map_get",
    "offset_map_latest_codes",
    "offset_map_position_of",
    "offset_map_put",
    "offset_map_put_records",
    "index_search",
    "scan_batches",
    "search_for_offset",
    "set_crc32c_software",
]

IMPLEMENTATION = "python"

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_FRAME = struct.Struct(">qi")  # offset, size
_OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset

_crc32c_fun = crcmod.predefined.mkCrcFun("crc-32c")
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def _wrap64(x: int) -> int:
    """``x`` as a Java ``long`` would hold it: the sums of hostile deltas wrap, as they do in Kafka."""
    return ((x + (1 << 63)) & _MASK64) - (1 << 63)


# ---------------------------------------------------------------------------------------------------
# CRCs


def crc32c(data: Any, crc: int = 0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from ``crc`` (Kafka: ``Crc32C.compute``).

    crcmod's table implementation is the reference the compiled twin is tested and timed against.
    """
    return int(_crc32c_fun(data, crc))


def crc32(data: Any, crc: int = 0) -> int:
    """CRC-32 (IEEE, as ``java.util.zip.CRC32``) of ``data``, continuing from ``crc``.

    The CRC of legacy (v0/v1) messages.
    """
    return zlib.crc32(data, crc) & _MASK32


def crc32c_hardware() -> bool:
    """Whether CRC-32C runs on the CPU's crc32 instruction.  The plain twin never does."""
    return False


def set_crc32c_software(on: bool) -> None:
    """Force the table CRC-32C even where the CPU has SSE4.2 (for benchmarks); nothing to do here."""


# ---------------------------------------------------------------------------------------------------
# The batch scan


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
        return _wrap64(offset + _I32.unpack_from(view, pos + LAST_OFFSET_DELTA_OFFSET)[0])
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


# ---------------------------------------------------------------------------------------------------
# Index search


def index_search(
    buf: Any, entries: int, kind: int, target: int, base_offset: int, smallest_upper_bound: bool = False
) -> int:
    """The slot of the largest entry <= ``target`` (or, with ``smallest_upper_bound``, of the smallest
    entry >= it) among the first ``entries`` entries of an index buffer; -1 when there is none.

    Kafka 2.1+ ``AbstractIndex.indexSlotRangeFor`` (KAFKA-6432), followed instead of 0.10.1's plain binary
    search because it decides which pages a lookup touches: it first looks in the warm section (the
    last 8 KiB of entries) and only falls back to the whole index when the target is older.  The binary
    search is Kafka's, quirk included: a smallest-upper-bound search for exactly the first entry's key
    answers slot 1 (or -1 when there is one entry), because slot 0 is never compared.
    """
    kind = IndexKind(kind)
    entry_size = INDEX_ENTRY_SIZE[kind]
    if entries < 0:
        raise ValueError(f"negative entry count {entries}")
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" or whole.ndim != 1 else whole
        if entries * entry_size > view.nbytes:
            raise ValueError(
                f"{entries} entries of {entry_size} bytes do not fit the {view.nbytes}-byte index"
            )
        if entries == 0:
            return -1

        def key(slot: int) -> int:
            at = slot * entry_size
            if kind is IndexKind.OFFSET_KEY:
                return base_offset + int(_I32.unpack_from(view, at)[0])
            if kind is IndexKind.OFFSET_VALUE:
                return int(_I32.unpack_from(view, at + 4)[0])
            if kind is IndexKind.TIME_KEY:
                return int(_I64.unpack_from(view, at)[0])
            return base_offset + int(_I32.unpack_from(view, at + 8)[0])

        def binary_search(lo: int, hi: int) -> int:
            while lo < hi:
                mid = (lo + hi + 1) >> 1
                found = key(mid)
                if found > target:
                    hi = mid - 1
                elif found < target:
                    lo = mid
                else:
                    return mid
            if smallest_upper_bound:
                return -1 if lo == entries - 1 else lo + 1
            return lo

        first_hot = max(0, entries - 1 - WARM_SECTION_BYTES // entry_size)
        if key(first_hot) < target:
            return binary_search(first_hot, entries - 1)
        if key(0) > target:
            return 0 if smallest_upper_bound else -1
        return binary_search(0, first_hot)


def index_lookup(buf: Any, entries: int, kind: int, target: int, base_offset: int) -> tuple[int, int] | None:
    """The entry of the largest-lower-bound slot for ``target`` as ``(key, value)`` (offset and position,
    or timestamp and offset, both absolute), or ``None`` when there is none: the search and the read of
    the entry in one call, which is all an index ``lookup`` needs."""
    slot = index_search(buf, entries, kind, target, base_offset)
    if slot < 0:
        return None
    at = slot * INDEX_ENTRY_SIZE[IndexKind(kind)]
    if kind in (IndexKind.OFFSET_KEY, IndexKind.OFFSET_VALUE):
        relative, position = _OFFSET_ENTRY.unpack_from(buf, at)
        return base_offset + relative, position
    timestamp, relative = _TIME_ENTRY.unpack_from(buf, at)
    return timestamp, base_offset + relative


def index_points(positions: npt.NDArray[Any], interval: int) -> npt.NDArray[Any]:
    """Which batches get an index entry when a segment is rebuilt (the rule of ``LogSegment.recover``):
    ``positions[i]`` (batch starts, increasing) gets one when it is more than ``interval`` bytes past the
    last batch that got one, counting from position 0.  Returns their indices, increasing.
    """
    chosen: list[int] = []
    n = len(positions)
    last = 0
    i = int(np.searchsorted(positions, last + interval, side="right"))
    while i < n:
        chosen.append(i)
        last = int(positions[i])
        i = int(np.searchsorted(positions, last + interval, side="right"))
    return np.array(chosen, dtype=np.int64)


# ---------------------------------------------------------------------------------------------------
# Varints (Kafka's ByteUtils.readVarint / readVarlong / writeVarint / writeVarlong)


def _read_varint(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    """A zig-zag varint of at most 5 bytes; bits past 32 are dropped, as Java's int shift drops them."""
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("Found invalid record structure: a varint runs past the record", pos)
        b = view[pos]
        pos += 1
        if b & 0x80 == 0:
            value |= b << shift
            break
        value |= (b & 0x7F) << shift
        shift += 7
        if shift > 28:
            raise InvalidRecordError(
                "Varint is too long, the most significant bit in the 5th byte is set", pos
            )
    value &= _MASK32
    return (value >> 1) ^ -(value & 1), pos


def _read_varlong(view: memoryview, pos: int, end: int) -> tuple[int, int]:
    """A zig-zag varlong of at most 10 bytes, wrapped to 64 bits."""
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("Found invalid record structure: a varlong runs past the record", pos)
        b = view[pos]
        pos += 1
        if b & 0x80 == 0:
            value |= b << shift
            break
        value |= (b & 0x7F) << shift
        shift += 7
        if shift > 63:
            raise InvalidRecordError("Varlong is too long, most significant bit in the 10th byte is set", pos)
    value &= _MASK64
    return (value >> 1) ^ -(value & 1), pos


def _write_varint(out: bytearray, value: int) -> None:
    v = ((value << 1) ^ (value >> 31)) & _MASK32
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _write_varlong(out: bytearray, value: int) -> None:
    v = ((value << 1) ^ (value >> 63)) & _MASK64
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


# ---------------------------------------------------------------------------------------------------
# Record decode


#: A record's timestamp type, by its number + 1 (-1 NoTimestampType, 0 CreateTime, 1 LogAppendTime).
_TIMESTAMP_TYPES = (TimestampType.NO_TIMESTAMP_TYPE, TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
_TIMESTAMP_TYPE_IDS = frozenset((-1, 0, 1))


class Record:
    """One record as a reader sees it: absolute ``offset``, ``timestamp`` (ms, -1 for none), ``key`` and
    ``value`` (``bytes`` or ``None``) and ``headers`` (a list of ``(str, bytes | None)``); and what the
    batch it came from says of it: ``timestamp_type`` (:class:`~kafkalog._common.TimestampType`) and
    ``is_control`` (a transaction marker or a KRaft control record; ``control_type`` names which).

    Kafka: ``org.apache.kafka.common.record.Record`` (``DefaultRecord`` for v2, ``LegacyRecord``
    seen through a legacy batch), with the batch facts a ``ConsumerRecord`` carries.  Equal to any
    record, of either twin, with the same offset, timestamp, key, value and headers: the batch facts
    describe where a record was read, not the record, and take no part in equality.
    """

    __slots__ = ("_timestamp_type", "headers", "is_control", "key", "offset", "timestamp", "value")

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None = None,
        timestamp_type: int = TimestampType.CREATE_TIME,
        is_control: bool = False,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers if headers is not None else []
        if timestamp_type not in _TIMESTAMP_TYPE_IDS:
            raise ValueError(f"Unknown timestamp type id {timestamp_type!r}")
        # Kept as the plain number: the decode makes a record per record it reads, and an enum lookup
        # each time would be a fifth of the plain twin's object decode.
        self._timestamp_type = int(timestamp_type)
        self.is_control = bool(is_control)

    @property
    def timestamp_type(self) -> TimestampType:
        return _TIMESTAMP_TYPES[self._timestamp_type + 1]

    @property
    def control_type(self) -> ControlRecordType | None:
        """For a control record, the :class:`~kafkalog.record.ControlRecordType` its key names (``UNKNOWN``
        for a type this port does not know); ``None`` for a data record."""
        return _control_type(self.key) if self.is_control else None

    def as_tuple(self) -> tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        return (self.offset, self.timestamp, self.key, self.value, self.headers)

    def __eq__(self, other: object) -> bool:
        as_tuple = getattr(other, "as_tuple", None)
        if as_tuple is None:
            return NotImplemented
        return bool(self.as_tuple() == as_tuple())

    def __hash__(self) -> int:
        return hash((self.offset, self.timestamp, self.key, self.value, tuple(self.headers)))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Record, (*self.as_tuple(), self._timestamp_type, self.is_control))

    def __repr__(self) -> str:
        control = ", is_control=True" if self.is_control else ""
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r}{control})"
        )


def _control_type(key: bytes | None) -> ControlRecordType:
    # The record layer imports this module, so its control types are found when first asked for.
    from .record.types import ControlRecordType

    return ControlRecordType.parse(key)


def _check_count(count: int, start: int, end: int) -> None:
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count}", start)
    if count > (end - start) // MIN_V2_RECORD_SIZE:
        raise InvalidRecordError(
            f"Incorrect declared batch size, premature EOF reached: {count} records cannot fit in "
            f"{end - start} bytes",
            start,
        )


def _walk_v2_records(
    view: memoryview,
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None,
    record: Any,
    header: Any,
    take: int = -1,
) -> int:
    """The loop of Kafka's ``DefaultRecord.readFrom``, once per record, in Kafka's order of checks.

    ``record(offset, timestamp, key_pos, key_len, value_pos, value_len, n_headers)`` and
    ``header(key_pos, key_len, value_pos, value_len)`` receive each parsed piece, so the column decode
    and the object decode share one parser.  Reads the first ``take`` (all when negative) of the ``count``
    records left from ``start`` and returns the position after them; once the last is read, nothing may
    follow it before ``end``.
    """
    _check_count(count, start, end)
    take = _chunk_size(count, take)
    pos = start
    for _ in range(take):
        if pos >= end:
            raise InvalidRecordError("Incorrect declared batch size, premature EOF reached", pos)
        record_start = pos
        length, pos = _read_varint(view, pos, end)
        if length < 0 or length > end - pos:
            raise InvalidRecordError(
                f"Invalid record size: expected {length} bytes in record payload, but instead the "
                f"buffer has only {end - pos} remaining bytes",
                record_start,
            )
        body_start = pos
        body_end = pos + length
        if pos >= body_end:
            raise InvalidRecordError("Found invalid record structure: empty record body", record_start)
        pos += 1  # attributes: unused by every version so far
        timestamp_delta, pos = _read_varlong(view, pos, body_end)
        offset_delta, pos = _read_varint(view, pos, body_end)
        key_len, pos = _read_varint(view, pos, body_end)
        key_pos = pos
        if key_len >= 0:
            if key_len > body_end - pos:
                raise InvalidRecordError(f"Found invalid record structure: key size {key_len}", record_start)
            pos += key_len
        else:
            key_len = -1
        value_len, pos = _read_varint(view, pos, body_end)
        value_pos = pos
        if value_len >= 0:
            if value_len > body_end - pos:
                raise InvalidRecordError(
                    f"Found invalid record structure: value size {value_len}", record_start
                )
            pos += value_len
        else:
            value_len = -1
        n_headers, pos = _read_varint(view, pos, body_end)
        if n_headers < 0:
            raise InvalidRecordError(f"Found invalid number of record headers {n_headers}", record_start)
        if n_headers > body_end - pos:
            raise InvalidRecordError(
                f"Found invalid number of record headers {n_headers}: more than the "
                f"{body_end - pos} bytes left in the record",
                record_start,
            )
        offset = _wrap64(base_offset + offset_delta)
        timestamp = append_time if append_time is not None else _wrap64(base_timestamp + timestamp_delta)
        record(offset, timestamp, key_pos, key_len, value_pos, value_len, n_headers)
        for _ in range(n_headers):
            hk_len, pos = _read_varint(view, pos, body_end)
            if hk_len < 0:
                raise InvalidRecordError(f"Invalid negative header key size {hk_len}", record_start)
            if hk_len > body_end - pos:
                raise InvalidRecordError(
                    f"Found invalid record structure: header key size {hk_len}", record_start
                )
            hk_pos = pos
            pos += hk_len
            hv_len, pos = _read_varint(view, pos, body_end)
            hv_pos = pos
            if hv_len >= 0:
                if hv_len > body_end - pos:
                    raise InvalidRecordError(
                        f"Found invalid record structure: header value size {hv_len}", record_start
                    )
                pos += hv_len
            else:
                hv_len = -1
            header(hk_pos, hk_len, hv_pos, hv_len)
        if pos != body_end:
            raise InvalidRecordError(
                f"Invalid record size: expected to read {length} bytes in record payload, but instead "
                f"read {pos - body_start}",
                record_start,
            )
    if take == count and pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file", pos)
    return pos


def _chunk_size(count: int, max_records: int) -> int:
    return count if max_records < 0 or max_records > count else max_records


def decode_v2_records(
    buf: Any,
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None = None,
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Decode the ``count`` v2 records in ``buf[start:end]`` into columns.

    ``buf[start:end]`` holds the records of one batch with nothing before or after: the bytes after a
    v2 header, or the decompressed stream of a compressed batch.  ``append_time`` is the batch's max
    timestamp when its type is LogAppendTime (then every record reports it), else ``None``.
    Returns ``(records, headers)`` as :data:`RECORD_DTYPE` and :data:`HEADER_DTYPE` arrays whose
    positions index ``buf``.  Raises :class:`InvalidRecordError` with the position of the bad record.
    """
    records, headers, _stop = decode_v2_records_chunk(buf, start, end, count, base_offset, base_timestamp,
                                                      append_time)
    return records, headers


def decode_v2_records_chunk(
    buf: Any,
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None = None,
    max_records: int = -1,
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], int]:
    """The next ``max_records`` (all when negative) of the ``count`` v2 records left in ``buf[start:end]``,
    decoded as :func:`decode_v2_records` does, and the position after them: what a reader calls again, with
    the records still left, to walk a batch of any size a bounded number of records at a time.  The call
    that reads the last of the ``count`` records checks that nothing follows it before ``end``.  Header
    rows are numbered from 0 in each call's columns.
    """
    records: list[tuple[int, ...]] = []
    headers: list[tuple[int, int, int, int]] = []

    def on_record(offset: int, ts: int, kp: int, kl: int, vp: int, vl: int, nh: int) -> None:
        records.append((offset, ts, kp, vp, kl, vl, len(headers), nh, 0, 0, MAGIC_V2, 0))

    def on_header(kp: int, kl: int, vp: int, vl: int) -> None:
        headers.append((kp, vp, kl, vl))

    with memoryview(buf) as view:
        stop = _walk_v2_records(view.cast("B") if view.format != "B" else view, start, end, count, base_offset,
                                base_timestamp, append_time, on_record, on_header, max_records)
    return np.array(records, dtype=RECORD_DTYPE), np.array(headers, dtype=HEADER_DTYPE), stop


def decode_v2_record_objects(
    buf: Any,
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None = None,
    is_control: bool = False,
) -> list[Record]:
    """The same decode as :func:`decode_v2_records`, producing :class:`Record` objects.

    Each record carries its batch's timestamp type (LogAppendTime when ``append_time`` is given) and
    ``is_control``, the batch's control bit.  Header keys are decoded as UTF-8 with replacement, as
    Kafka's ``Utils.utf8`` (a Java ``String``) does.
    """
    return decode_v2_record_objects_chunk(buf, start, end, count, base_offset, base_timestamp, append_time,
                                          is_control)[0]


def decode_v2_record_objects_chunk(
    buf: Any,
    start: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    append_time: int | None = None,
    is_control: bool = False,
    max_records: int = -1,
) -> tuple[list[Record], int]:
    """The next ``max_records`` of the ``count`` v2 records left in ``buf[start:end]`` as :class:`Record`
    objects, and the position after them (as :func:`decode_v2_records_chunk` for columns)."""
    out: list[Record] = []
    timestamp_type = 0 if append_time is None else 1  # CreateTime, LogAppendTime
    with memoryview(buf) as view:
        view = view.cast("B") if view.format != "B" else view

        def on_record(offset: int, ts: int, kp: int, kl: int, vp: int, vl: int, nh: int) -> None:
            key = bytes(view[kp:kp + kl]) if kl >= 0 else None
            value = bytes(view[vp:vp + vl]) if vl >= 0 else None
            out.append(Record(offset, ts, key, value, [], timestamp_type, is_control))

        def on_header(kp: int, kl: int, vp: int, vl: int) -> None:
            out[-1].headers.append(
                (bytes(view[kp:kp + kl]).decode("utf-8", "replace"),
                 bytes(view[vp:vp + vl]) if vl >= 0 else None)
            )

        stop = _walk_v2_records(view, start, end, count, base_offset, base_timestamp, append_time,
                                on_record, on_header, max_records)
    return out, stop


class _BatchHead(NamedTuple):
    start: int
    end: int
    n_records: int
    base_offset: int
    base_timestamp: int
    append_time: int | None
    is_control: bool


def _batch_head(view: memoryview, row: Any) -> _BatchHead:
    """Where one uncompressed v2 batch's records are and how to read them, checked against the buffer: a row
    that is no uncompressed v2 batch of the buffer is a ``ValueError`` (the caller's mistake).  The record
    count is the batch's own business, checked when its records are decoded, after those of the batches
    before it.

    The fields come from the buffer, not from the scan row, so a stale row cannot mislead the decode.
    """
    pos = int(row["position"])
    size = int(row["size"])
    total = view.nbytes
    if pos < 0 or size < RECORD_BATCH_OVERHEAD or pos > total - size:
        raise ValueError(f"batch row (position {pos}, size {size}) is outside the buffer of {total} bytes")
    if view[pos + MAGIC_OFFSET] != MAGIC_V2:
        raise ValueError(f"the entry at position {pos} is not a v2 batch")
    attributes = _I16.unpack_from(view, pos + ATTRIBUTES_OFFSET)[0]
    if attributes & COMPRESSION_CODEC_MASK:
        raise ValueError(f"the batch at position {pos} is compressed: decode its decompressed records")
    start = pos + RECORD_BATCH_OVERHEAD
    end = pos + size
    count = _I32.unpack_from(view, pos + RECORDS_COUNT_OFFSET)[0]
    append_time = (
        _I64.unpack_from(view, pos + MAX_TIMESTAMP_OFFSET)[0] if attributes & TIMESTAMP_TYPE_MASK else None
    )
    return _BatchHead(start, end, count, _I64.unpack_from(view, pos)[0],
                      _I64.unpack_from(view, pos + BASE_TIMESTAMP_OFFSET)[0], append_time,
                      bool(attributes & CONTROL_FLAG_MASK))


def decode_v2_batches(
    buf: Any, batches: npt.NDArray[Any]
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]]:
    """Decode every record of a run of uncompressed v2 batches into one set of columns.

    ``batches`` are rows of the batch scan (:data:`BATCH_DTYPE`) for entries of ``buf`` that are v2 and
    uncompressed (anything else is a ``ValueError``: the caller decompresses first).  Returns
    ``(records, headers, starts)``, where the records of batch ``i`` are ``records[starts[i]:starts[i+1]]``.
    One call does what a loop of :func:`decode_v2_records` would, without a Python step per batch, and in
    the same order: every row is checked first, then the batches are decoded one after the other, so a bad
    batch (its record count or its records) is reported only when the batches before it are good.
    """
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" else whole
        heads = [_batch_head(view, row) for row in batches]
    starts = [0]
    record_columns = []
    header_columns = []
    n_headers = 0
    for head in heads:
        records, headers = decode_v2_records(buf, head.start, head.end, head.n_records, head.base_offset,
                                             head.base_timestamp, head.append_time)
        records["header_index"] += n_headers
        n_headers += len(headers)
        record_columns.append(records)
        header_columns.append(headers)
        starts.append(starts[-1] + head.n_records)
    return (
        np.concatenate(record_columns) if record_columns else np.empty(0, dtype=RECORD_DTYPE),
        np.concatenate(header_columns) if header_columns else np.empty(0, dtype=HEADER_DTYPE),
        np.array(starts, dtype=np.int64),
    )


def decode_v2_batch_objects(buf: Any, batches: npt.NDArray[Any]) -> list[Record]:
    """Every record of a run of uncompressed v2 batches as :class:`Record` objects, in one list
    (the object twin of :func:`decode_v2_batches`)."""
    with memoryview(buf) as whole:
        view = whole.cast("B") if whole.format != "B" else whole
        heads = [_batch_head(view, row) for row in batches]
    out: list[Record] = []
    for head in heads:
        out += decode_v2_record_objects(buf, head.start, head.end, head.n_records, head.base_offset,
                                        head.base_timestamp, head.append_time, head.is_control)
    return out


def decode_legacy_records(buf: Any, start: int, end: int) -> npt.NDArray[Any]:
    """Decode the framed v0/v1 messages filling ``buf[start:end]`` into :data:`RECORD_DTYPE` columns.

    Used for the top level of a legacy message set and for the inner set of a decompressed wrapper
    (Kafka: ``AbstractLegacyRecordBatch`` and its ``DeepRecordsIterator``).  The range must hold whole
    messages: a partial one is corrupt here, because a caller only hands over bytes it believes are
    complete.  Offsets are the frame's, as stored (relative for the inner messages of a v1 wrapper);
    the CRC is reported, not checked.  Null keys and values have length -1.
    """
    rows: list[tuple[int, ...]] = []
    pos = start
    with memoryview(buf) as view:
        view = view.cast("B") if view.format != "B" else view
        while pos < end:
            if end - pos < LOG_OVERHEAD:
                raise CorruptRecordError(
                    f"Truncated message: {end - pos} bytes left, fewer than the {LOG_OVERHEAD}-byte "
                    "log overhead",
                    pos,
                )
            offset, size = _FRAME.unpack_from(view, pos)
            if size < MIN_RECORD_OVERHEAD:
                raise CorruptRecordError(
                    f"Message size {size} is smaller than the minimum record overhead "
                    f"({MIN_RECORD_OVERHEAD})",
                    pos,
                )
            if size > end - pos - LOG_OVERHEAD:
                raise CorruptRecordError(
                    f"Truncated message: size {size} but only {end - pos - LOG_OVERHEAD} bytes follow",
                    pos,
                )
            message = pos + LOG_OVERHEAD
            message_end = message + size
            crc = _U32.unpack_from(view, message)[0]
            magic = view[message + 4]
            if magic > MAGIC_V1:
                raise UnsupportedMagicError(f"Invalid magic {magic} in a legacy message set", pos)
            attributes = view[message + 5]
            if magic == MAGIC_V1:
                if size < RECORD_OVERHEAD_V1:
                    raise CorruptRecordError(
                        f"Message size {size} is smaller than the v1 record overhead ({RECORD_OVERHEAD_V1})",
                        pos,
                    )
                timestamp = _I64.unpack_from(view, message + 6)[0]
                key_size_at = message + 14
            else:
                timestamp = -1
                key_size_at = message + 6
            key_len = _I32.unpack_from(view, key_size_at)[0]
            key_pos = key_size_at + 4
            if key_len < 0:
                key_len = -1
            elif key_len > message_end - 4 - key_pos:
                raise CorruptRecordError(f"Key size {key_len} runs past the message of size {size}", pos)
            value_size_at = key_pos + max(key_len, 0)
            value_len = _I32.unpack_from(view, value_size_at)[0]
            value_pos = value_size_at + 4
            if value_len < 0:
                value_len = -1
            elif value_len > message_end - value_pos:
                raise CorruptRecordError(
                    f"Value size {value_len} runs past the message of size {size}", pos
                )
            signed_attributes = attributes - 256 if attributes > 127 else attributes
            rows.append((offset, timestamp, key_pos, value_pos, key_len, value_len, 0, 0, crc,
                         signed_attributes, magic, 0))
            pos = message_end
    return np.array(rows, dtype=RECORD_DTYPE)


# ---------------------------------------------------------------------------------------------------
# Column gather (records and headers to Arrow's variable-width layout)


def gather_slices(data: Any, positions: npt.NDArray[Any],
                  lengths: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]:
    """Copy the slices ``data[positions[i]:positions[i] + lengths[i]]`` end to end: Arrow's layout of a
    binary or string column.  Returns ``(offsets, values)``: ``offsets`` has ``len(positions) + 1``
    int32 entries, slice ``i`` being ``values[offsets[i]:offsets[i + 1]]``.  A negative length is a null
    (Kafka's -1 key or value): an empty slice, which the caller marks null.

    ``positions`` are int64 and ``lengths`` int32, as the record-decode kernels write them.  A slice
    outside ``data``, or more than 2 GiB - 1 in all (Arrow's int32 offsets), raises ``ValueError``.
    """
    view = np.frombuffer(data, dtype=np.uint8)
    positions = np.asarray(positions, dtype=np.int64)
    sizes = np.maximum(np.asarray(lengths, dtype=np.int64), 0)
    if len(positions) != len(sizes):
        raise ValueError(f"{len(positions)} positions but {len(sizes)} lengths")
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if len(ends) else 0
    if total > INT32_MAX:
        raise ValueError(f"{total} bytes of slices do not fit Arrow's int32 offsets")
    taken = sizes > 0
    if taken.any() and (int(positions[taken].min()) < 0 or int((positions + sizes)[taken].max()) > len(view)):
        raise ValueError(f"a slice lies outside the {len(view)}-byte buffer")
    offsets = np.zeros(len(positions) + 1, dtype=np.int32)
    offsets[1:] = ends
    # Byte j of the output comes from position (j - start of its slice) + start of the slice's source.
    source = np.arange(total, dtype=np.int64) + np.repeat(positions - (ends - sizes), sizes)
    return offsets, view[source]


# ---------------------------------------------------------------------------------------------------
# v2 encode


def encode_v2_records(
    timestamps: Sequence[int],
    keys: Sequence[Any],
    values: Sequence[Any],
    headers: Sequence[Sequence[tuple[str, Any]] | None] | None,
    base_timestamp: int,
    offset_deltas: Sequence[int] | None = None,
) -> bytes:
    """The records section of a v2 batch (Kafka: ``DefaultRecord.writeTo``, once per record).

    Record ``i`` gets offset delta ``offset_deltas[i]`` (``i`` when ``None``) and timestamp delta
    ``timestamps[i] - base_timestamp``.  Keys, values and header values are bytes-like or ``None``;
    header keys are ``str`` (written as UTF-8) and may not be ``None``, as Kafka's ``RecordHeader``
    requires.
    """
    n = len(timestamps)
    if len(keys) != n or len(values) != n or (headers is not None and len(headers) != n) or (
        offset_deltas is not None and len(offset_deltas) != n
    ):
        raise ValueError("encode_v2_records: the columns differ in length")
    out = bytearray()
    body = bytearray()
    for i in range(n):
        body.clear()
        body.append(0)  # attributes
        _write_varlong(body, timestamps[i] - base_timestamp)
        _write_varint(body, offset_deltas[i] if offset_deltas is not None else i)
        for field in (keys[i], values[i]):
            if field is None:
                body.append(1)  # varint -1
            else:
                data = bytes(field)
                _write_varint(body, len(data))
                body += data
        record_headers = headers[i] if headers is not None else None
        if not record_headers:
            body.append(0)
        else:
            _write_varint(body, len(record_headers))
            for header_key, header_value in record_headers:
                if header_key is None:
                    raise ValueError("Invalid null header key found in headers")
                encoded_key = header_key.encode("utf-8")
                _write_varint(body, len(encoded_key))
                body += encoded_key
                if header_value is None:
                    body.append(1)
                else:
                    data = bytes(header_value)
                    _write_varint(body, len(data))
                    body += data
        _write_varint(out, len(body))
        out += body
    return bytes(out)


# ---------------------------------------------------------------------------------------------------
# SkimpyOffsetMap (Kafka: kafka/log/OffsetMap.scala, storage/.../SkimpyOffsetMap.java)
#
# The table is ``slots`` entries of 24 bytes: the MD5 of a key (16 bytes) and its offset (int64,
# big-endian); an all-zero entry is empty.  The counters (lookups, probes) belong to the caller; the
# kernels return what they add.

_MAP_HASH_SIZE = 16
_MAP_ENTRY_SIZE = 24
_MAP_OFFSET = struct.Struct(">q")
_EMPTY_ENTRY = bytes(_MAP_ENTRY_SIZE)


def md5(data: Any) -> bytes:
    """MD5 of ``data`` (the hash SkimpyOffsetMap keys by; Kafka: ``MessageDigest.getInstance("MD5")``)."""
    return hashlib.md5(data).digest()


def offset_map_position_of(hash: Any, attempt: int, slots: int) -> int:
    """The byte position probe ``attempt`` of ``hash`` lands on (Kafka: ``positionOf``).

    Probe ``a`` reads the big-endian int32 at byte min(a, 12) of the hash and adds max(0, a - 12), wrapping
    as a Java int; the slot is ``Utils.abs(probe) % slots``, where the abs of MIN_VALUE is 0.  So the first
    thirteen probes use the digest's overlapping windows, and the rest walk from the last window (downwards
    when that window is negative, because of the abs).
    """
    if len(hash) != _MAP_HASH_SIZE:
        raise ValueError(f"a hash is {_MAP_HASH_SIZE} bytes, not {len(hash)}")
    if slots <= 0 or attempt < 0:
        raise ValueError("slots must be positive and attempt non-negative")
    window = min(attempt, _MAP_HASH_SIZE - 4)
    probe = (_U32.unpack_from(hash, window)[0] + max(0, attempt - (_MAP_HASH_SIZE - 4))) & _MASK32
    if probe >= 1 << 31:
        probe -= 1 << 32
    magnitude = 0 if probe == -(1 << 31) else abs(probe)
    return (magnitude % slots) * _MAP_ENTRY_SIZE


def _check_table(table: Any, slots: int) -> None:
    if slots <= 0 or slots * _MAP_ENTRY_SIZE > len(table):
        raise ValueError(f"{slots} slots of {_MAP_ENTRY_SIZE} bytes do not fit a table of {len(table)} bytes")


def _map_put(table: Any, slots: int, hash: bytes, offset: int) -> tuple[bool, int]:
    attempt = 0
    pos = offset_map_position_of(hash, attempt, slots)
    probes = 1
    while bytes(table[pos:pos + _MAP_ENTRY_SIZE]) != _EMPTY_ENTRY:
        if bytes(table[pos:pos + _MAP_HASH_SIZE]) == hash:
            table[pos + _MAP_HASH_SIZE:pos + _MAP_ENTRY_SIZE] = _MAP_OFFSET.pack(offset)
            return False, probes
        attempt += 1
        pos = offset_map_position_of(hash, attempt, slots)
        probes += 1
    table[pos:pos + _MAP_HASH_SIZE] = hash
    table[pos + _MAP_HASH_SIZE:pos + _MAP_ENTRY_SIZE] = _MAP_OFFSET.pack(offset)
    return True, probes


def _map_get(table: Any, slots: int, hash: bytes) -> tuple[int, int]:
    max_attempts = slots + _MAP_HASH_SIZE - 4  # KAFKA-3682: never probe forever in a full map
    attempt = 0
    probes = 0
    while True:
        if attempt >= max_attempts:
            return -1, probes
        pos = offset_map_position_of(hash, attempt, slots)
        probes += 1
        if bytes(table[pos:pos + _MAP_ENTRY_SIZE]) == _EMPTY_ENTRY:
            return -1, probes
        attempt += 1
        if bytes(table[pos:pos + _MAP_HASH_SIZE]) == hash:
            return int(_MAP_OFFSET.unpack_from(table, pos + _MAP_HASH_SIZE)[0]), probes


def offset_map_put(table: Any, slots: int, key: Any, offset: int) -> tuple[bool, int]:
    """Put ``key`` -> ``offset``: probe from attempt 0 until the key's hash or an empty entry, and write
    there.  Returns ``(new_entry, probes)`` (Kafka: ``put``; the caller checks fullness first)."""
    _check_table(table, slots)
    with memoryview(table) as t:
        return _map_put(t, slots, hashlib.md5(key).digest(), offset)


def offset_map_get(table: Any, slots: int, key: Any) -> tuple[int, int]:
    """The offset stored for ``key``, or -1, and the probes it took (Kafka: ``get``)."""
    _check_table(table, slots)
    with memoryview(table) as t:
        return _map_get(t, slots, hashlib.md5(key).digest())


def offset_map_put_records(
    table: Any, slots: int, data: Any, records: npt.NDArray[Any], start_offset: int, entries: int, max_entries: int
) -> tuple[int, int, int, int, int, bool]:
    """Put every keyed record at or past ``start_offset`` into the map, in order, until the map holds
    ``max_entries`` (the loop of the cleaner's ``buildOffsetMapForSegment``: fullness is checked before
    every put, even of a key already present).

    Returns ``(processed, entries, lookups, probes, last_put_offset, full)``.
    """
    _check_table(table, slots)
    lookups = probes = 0
    last = -1
    total = len(data) if not isinstance(data, memoryview) else data.nbytes
    rows = records.tolist()
    for i, row in enumerate(rows):
        offset, key_pos, key_len = row[0], row[2], row[4]
        if key_len >= 0 and (key_pos < 0 or key_pos + key_len > total):
            raise ValueError(f"record {i}'s key ({key_pos}, {key_len}) is outside the data")
    with memoryview(data) as whole, memoryview(table) as t:
        view = whole.cast("B") if whole.format != "B" else whole
        for i, row in enumerate(rows):
            offset, key_pos, key_len = row[0], row[2], row[4]
            if key_len < 0 or offset < start_offset:
                continue
            if entries >= max_entries:
                return i, entries, lookups, probes, last, True
            new, used = _map_put(t, slots, hashlib.md5(view[key_pos:key_pos + key_len]).digest(), offset)
            lookups += 1
            probes += used
            entries += int(new)
            last = offset
    return len(rows), entries, lookups, probes, last, False


def offset_map_latest_codes(
    table: Any, slots: int, data: Any, records: npt.NDArray[Any], latest_offset: int
) -> tuple[npt.NDArray[Any], int, int]:
    """For each record, what the map says of it (the key test of the cleaner's ``shouldRetainRecord``):
    2 = past the mapped range (kept), 1 = the latest for its key, 0 = superseded, -1 = no key.

    Returns ``(codes, lookups, probes)``.
    """
    _check_table(table, slots)
    total = len(data) if not isinstance(data, memoryview) else data.nbytes
    rows = records.tolist()
    for i, row in enumerate(rows):
        key_pos, key_len = row[2], row[4]
        if key_len >= 0 and (key_pos < 0 or key_pos + key_len > total):
            raise ValueError(f"record {i}'s key ({key_pos}, {key_len}) is outside the data")
    codes = np.empty(len(rows), dtype=np.int8)
    lookups = probes = 0
    with memoryview(data) as whole, memoryview(table) as t:
        view = whole.cast("B") if whole.format != "B" else whole
        for i, row in enumerate(rows):
            offset, key_pos, key_len = row[0], row[2], row[4]
            if offset > latest_offset:
                codes[i] = 2
            elif key_len < 0:
                codes[i] = -1
            else:
                found, used = _map_get(t, slots, hashlib.md5(view[key_pos:key_pos + key_len]).digest())
                lookups += 1
                probes += used
                codes[i] = 1 if offset >= found else 0
    return codes, lookups, probes
