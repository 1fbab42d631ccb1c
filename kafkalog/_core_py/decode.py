"""The record decode in plain Python: the twin of ``_core_pyx/decode.pxi``.

Kafka (clients, tag 3.8.0): ``utils/ByteUtils.java`` (``readVarint``, ``readVarlong``),
``record/DefaultRecord.java`` (``readFrom``, ``readPartiallyFrom``), ``record/DefaultRecordBatch.java``
and ``record/LegacyRecord.java``.  A v2 record, after its batch's 61-byte header, is a varint length, an
attributes byte, a varlong timestamp delta, a varint offset delta, a varint-sized key and value, and a
varint count of headers, each a varint-sized key and value (zig-zag varints, -1 for null).  A v0/v1
message is crc (int32), magic, attributes, a v1 timestamp (int64) and int32-sized key and value.

Records come out as columns (:data:`~kafkalog._common.RECORD_DTYPE`, :data:`~kafkalog._common.HEADER_DTYPE`)
or as :class:`Record` objects; :func:`gather_slices` packs spans of them in Arrow's variable-width layout.
:func:`lz4_decode_block` decodes the LZ4 blocks of a compressed batch that keep the block format's rules.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .._common import (
    ATTRIBUTES_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    HEADER_DTYPE,
    INT32_MAX,
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
    ControlRecordType,
    TimestampType,
)
from .._java_utf8 import JAVA_UTF8
from ..errors import CorruptRecordError, InvalidRecordError, UnsupportedMagicError
from ._ints import _FRAME, _I16, _I32, _I64, _MASK32, _MASK64, _U32, wrap64


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
        return ControlRecordType.parse(self.key) if self.is_control else None

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
        offset = wrap64(base_offset + offset_delta)
        timestamp = append_time if append_time is not None else wrap64(base_timestamp + timestamp_delta)
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
                (bytes(view[kp:kp + kl]).decode("utf-8", JAVA_UTF8),
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


def records_in_range(records: list[Any], start_offset: int, end_offset: int) -> tuple[list[Any], bool]:
    """The records of ``records`` (any objects with an ``offset``, in log order) that a consumer reading
    offsets ``[start_offset, end_offset)`` is given, and whether one at or past ``end_offset`` ended them.

    Each record is looked at in turn, as Kafka's consumer does (``CompletedFetch.nextFetchedRecord`` skips
    a record below the offset it fetches from): one below ``start_offset`` is left out, the first at or
    past ``end_offset`` ends the list, whatever follows it.  When every record is kept the result may be
    ``records`` itself.
    """
    kept: list[Any] = []
    for record in records:
        offset = record.offset
        if offset >= end_offset:
            return kept, True
        if offset >= start_offset:
            kept.append(record)
    return kept, False


def lz4_decode_block(block: Any, out: Any) -> int:
    """Decode the raw LZ4 block ``block`` into the writable buffer ``out`` when the block keeps every rule
    of the LZ4 block format within ``len(out)`` bytes of output, and return the length it decodes to;
    return ``-1`` when it does not.  What ``out`` holds past that length (all of it after -1) is not
    specified: the compiled twin copies short runs 16 bytes at a time.

    The rules (lz4's ``doc/lz4_Block_format.md``): each sequence is a token, its literal length (15 plus
    bytes up to the first that is not 255), the literals, then, unless the literals end the block, a
    2-byte little-endian match offset (1 up to the output so far) and the match length (4 plus, as for the
    literals): that many bytes copied from ``offset`` back, the copy overlapping its own output when the
    offset is shorter.  The block ends with literals only (its last token's match length 0), exactly at
    its last byte; the last match starts at least 12 bytes and ends at least 5 bytes before the end of the
    output; the output fits ``out``.  An empty block is not one.  A block that keeps these rules decodes
    to the same bytes in every LZ4 decoder (lz4's ``LZ4_decompress_safe`` is more lenient only: it also
    takes offset 0, and some blocks ending in a short match); ``record.compression`` relies on that, and
    ``tests/record/test_lz4_block_kernel.py`` holds cramjam's decoder to it.
    """
    with memoryview(block) as view, memoryview(out) as target:
        data = view.cast("B") if view.format != "B" else view
        sink = target.cast("B") if target.format != "B" else target
        n = len(data)
        capacity = len(sink)
        if n == 0:
            return -1
        ip = op = 0
        last_match_start = last_match_end = -1
        while True:
            if ip >= n:
                return -1
            token = data[ip]
            ip += 1
            literals = token >> 4
            if literals == 15:
                literals, ip = _lz4_length_bytes(data, ip, literals)
            if literals < 0 or literals > n - ip or literals > capacity - op:
                return -1
            sink[op:op + literals] = data[ip:ip + literals]
            ip += literals
            op += literals
            if ip == n:
                if token & 15:
                    return -1
                break
            if n - ip < 2:
                return -1
            offset = data[ip] | data[ip + 1] << 8
            ip += 2
            if offset == 0 or offset > op:
                return -1
            match = token & 15
            if match == 15:
                match, ip = _lz4_length_bytes(data, ip, match)
                if match < 0:
                    return -1
            match += 4
            if match > capacity - op:
                return -1
            # The source is the last ``offset`` bytes written: a match longer than that repeats them.
            source = bytes(sink[op - offset:op - offset + min(offset, match)])
            sink[op:op + match] = (source * (match // len(source) + 1))[:match]
            last_match_start = op
            op += match
            last_match_end = op
    if last_match_end >= 0 and (last_match_start > op - 12 or last_match_end > op - 5):
        return -1
    return op


def _lz4_length_bytes(data: Any, ip: int, length: int) -> tuple[int, int]:
    """A length of 15 in a token goes on in the bytes from ``ip``, up to the first that is not 255: the
    whole length and where its bytes end, or ``(-1, ip)`` when they run off the block."""
    n = len(data)
    while True:
        if ip >= n:
            return -1, ip
        more = data[ip]
        ip += 1
        length += more
        if more != 255:
            return length, ip


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
