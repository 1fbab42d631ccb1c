"""Bad input gives a clear kafkalog error: the right class, a message that says what is wrong, and the
byte position of the bad entry, never a crash, a hang or a huge allocation.

Every bad buffer here is made from good bytes (``MemoryRecords.with_records``) by changing a few of
them; where the point is a malformed record behind a valid CRC, the batch is re-sealed with kafkalog's
own CRC functions (v2: CRC-32C of bytes 21..end; v0/v1: CRC-32 of the magic byte onwards, i.e. from
frame position 16).  Each test runs once per kernel twin (the ``impl`` fixture).
"""

from __future__ import annotations

import gzip
import struct
import tracemalloc
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaLogError,
    MemoryRecords,
    RecordTooLargeError,
    UnsupportedCompressionError,
    UnsupportedMagicError,
)
from kafkalog.errors import IllegalArgumentError
from kafkalog.file_message_set import FileMessageSet
from kafkalog.record import ControlRecordType, EndTransactionMarker, ScanStop, TimestampType
from kafkalog.record import batch as batch_module
from tests.support.log_test_utils import record_count_bomb

V2_HEADER = 61
RECORDS = [(b"key-0", b"value-0", 1_000), (None, b"value-1", 1_001), (b"key-2", None, 1_002)]

# ---------------------------------------------------------------------------------------------------
# Byte helpers (written here, not taken from kafkalog, so the tests do not trust what they test)


def varint(n: int) -> bytes:
    """Zig-zag varint of a 32-bit int, as Kafka's ByteUtils.writeVarint."""
    v = ((n << 1) ^ (n >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varlong(n: int) -> bytes:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def v2_header_field(key: bytes, value: bytes | None, *, key_len: int | None = None,
                    value_len: int | None = None) -> bytes:
    out = varint(len(key) if key_len is None else key_len) + key
    if value is None:
        return out + varint(-1 if value_len is None else value_len)
    return out + varint(len(value) if value_len is None else value_len) + value


def v2_body(*, key: bytes | None = b"k", value: bytes | None = b"v", headers: tuple[bytes, ...] = (),
            ts_delta: int = 0, offset_delta: int = 0, key_len: int | None = None,
            value_len: int | None = None, header_count: int | None = None,
            raw_ts_delta: bytes | None = None) -> bytes:
    """The body of one v2 record (everything after its length varint), with overridable fields."""
    out = bytearray(b"\x00")  # attributes
    out += varlong(ts_delta) if raw_ts_delta is None else raw_ts_delta
    out += varint(offset_delta)
    for field, override in ((key, key_len), (value, value_len)):
        if override is not None:
            out += varint(override)
            out += field or b""
        elif field is None:
            out += varint(-1)
        else:
            out += varint(len(field)) + field
    out += varint(len(headers) if header_count is None else header_count)
    for h in headers:
        out += h
    return bytes(out)


def v2_record(body: bytes, *, length: int | None = None) -> bytes:
    return varint(len(body) if length is None else length) + body


def seal_v2(core: ModuleType, batch: bytearray, pos: int = 0) -> bytearray:
    size = struct.unpack_from(">i", batch, pos + 8)[0]
    end = pos + 12 + size
    struct.pack_into(">I", batch, pos + 17, core.crc32c(bytes(batch[pos + 21:end])))
    return batch


def seal_legacy(core: ModuleType, entry: bytearray, pos: int = 0) -> bytearray:
    size = struct.unpack_from(">i", entry, pos + 8)[0]
    end = pos + 12 + size
    struct.pack_into(">I", entry, pos + 12, core.crc32(bytes(entry[pos + 16:end])))
    return entry


def v2_batch_with_section(core: ModuleType, section: bytes, count: int, *, base_offset: int = 10,
                          last_offset_delta: int | None = None) -> bytes:
    """A v2 batch whose header comes from a good batch and whose records section is ``section``."""
    good = bytearray(MemoryRecords.with_records(RECORDS, base_offset=base_offset).buffer[:V2_HEADER])
    struct.pack_into(">i", good, 8, V2_HEADER - 12 + len(section))
    if last_offset_delta is None:
        last_offset_delta = max(count - 1, 0)
    struct.pack_into(">i", good, 23, last_offset_delta)
    struct.pack_into(">i", good, 57, count)
    return bytes(seal_v2(core, good + section))


def good_buffer(magic: int) -> bytes:
    """Three entries: an uncompressed batch (or, for v0/v1, three messages) and a gzip one."""
    first = MemoryRecords.with_records(RECORDS, magic=magic, base_offset=0).buffer
    second = MemoryRecords.with_records(RECORDS, magic=magic, compression="gzip", base_offset=3).buffer
    return bytes(first) + bytes(second)


def entries(buf: bytes) -> list[tuple[int, int]]:
    """(position, size) of every entry of a good buffer, from the size fields."""
    out = []
    pos = 0
    while pos < len(buf):
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        out.append((pos, 12 + size))
        pos += 12 + size
    assert pos == len(buf)
    return out


def raises(exc_type: type[KafkaLogError], fn: Callable[[], Any]) -> KafkaLogError:
    with pytest.raises(exc_type) as info:
        fn()
    return info.value


def peak_memory(fn: Callable[[], Any]) -> tuple[BaseException | None, int]:
    """Run ``fn`` under tracemalloc; return the exception it raised (or ``None``) and the peak bytes."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    error: BaseException | None = None
    try:
        fn()
    except Exception as e:
        error = e
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return error, peak


# ---------------------------------------------------------------------------------------------------
# Truncated entries


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_truncated_buffer_strict_raises_at_the_partial_entry(impl: ModuleType, magic: int) -> None:
    buf = good_buffer(magic)
    spans = entries(buf)
    assert len(spans) == (2 if magic == 2 else 4)
    ends = {pos + size for pos, size in spans}
    for cut in range(1, len(buf)):
        data = buf[:cut]
        complete = [(pos, size) for pos, size in spans if pos + size <= cut]
        records = MemoryRecords(data)
        if cut in ends:
            assert [b.position for b in records.batches()] == [pos for pos, _ in complete]
            continue
        partial_at = spans[len(complete)][0]
        seen: list[int] = []

        def walk(records: MemoryRecords = records, seen: list[int] = seen) -> None:
            for batch in records.batches(strict=True):
                seen.append(batch.position)

        error = raises(CorruptRecordError, walk)
        assert type(error) is CorruptRecordError
        assert error.position == partial_at, cut
        assert "Truncated" in str(error)
        assert str(cut - partial_at) in str(error)  # how many bytes were left
        assert seen == [pos for pos, _ in complete]
        error = raises(CorruptRecordError, lambda records=records: list(records.records(strict=True)))
        assert error.position == partial_at
        error = raises(CorruptRecordError, lambda records=records: list(records.record_columns(strict=True)))
        assert error.position == partial_at
        # Not strict, the default (a fetch cut at max_length, as Kafka's ByteBufferLogInputStream reads it):
        # the complete entries before the cut, then a silent stop, alike for batches, records and columns.
        lenient = list(records.batches())
        assert [(b.position, b.size_in_bytes) for b in lenient] == complete
        deep = list(records.records())
        assert len(deep) == sum(len(b.records()) for b in lenient)
        columns = list(records.record_columns())
        assert [int(o) for c in columns for o in c.records["offset"]] == [r.offset for r in deep]
        scan = records.scan()
        assert scan.stop_reason is ScanStop.PARTIAL
        assert scan.stop_position == partial_at
        assert records.valid_bytes() == partial_at


def test_truncated_records_of_a_whole_batch(impl: ModuleType) -> None:
    """The frame is whole but the records section of a v2 batch ends inside a record."""
    section = v2_record(v2_body(key=b"k0", value=b"v0")) + v2_record(v2_body(key=b"k1", value=b"v1"))
    cut_section = section[:-3]
    buf = v2_batch_with_section(impl, cut_section, 2)
    (batch,) = MemoryRecords(buf).batches()
    assert batch.is_valid()
    second = V2_HEADER + len(v2_record(v2_body(key=b"k0", value=b"v0")))
    error = raises(InvalidRecordError, batch.records)
    assert error.position == second
    assert "Invalid record size" in str(error)
    error = raises(InvalidRecordError, batch.record_columns)
    assert error.position == second


# ---------------------------------------------------------------------------------------------------
# Wrong size fields


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("size", [-(1 << 31), -1, 0, 1, 13])
def test_size_below_the_minimum_overhead(impl: ModuleType, magic: int, size: int) -> None:
    buf = bytearray(good_buffer(magic))
    spans = entries(bytes(buf))
    bad_at = spans[1][0]
    struct.pack_into(">i", buf, bad_at + 8, size)
    records = MemoryRecords(bytes(buf))
    for strict in (True, False):
        seen: list[int] = []

        def walk(strict: bool = strict, seen: list[int] = seen) -> None:
            for batch in records.batches(strict=strict):
                seen.append(batch.position)

        error = raises(CorruptRecordError, walk)
        assert error.position == bad_at
        assert f"Record size {size}" in str(error)
        assert "14" in str(error)
        assert seen == [spans[0][0]]
    scan = records.scan()
    assert (scan.stop_reason, scan.stop_position) == (ScanStop.SIZE_TOO_SMALL, bad_at)
    assert records.valid_bytes() == bad_at


@pytest.mark.parametrize(("magic", "size", "minimum"), [
    (2, 14, 49), (2, 48, 49),  # a v2 batch needs its 61-byte header: size field >= 49
    (1, 14, 22), (1, 21, 22),  # a v1 message needs 22 bytes of overhead
])
def test_size_below_the_header_of_its_magic(impl: ModuleType, magic: int, size: int, minimum: int) -> None:
    buf = bytearray(good_buffer(magic))
    bad_at = entries(bytes(buf))[1][0]
    struct.pack_into(">i", buf, bad_at + 8, size)
    records = MemoryRecords(bytes(buf))
    error = raises(CorruptRecordError, lambda: list(records.batches()))
    assert error.position == bad_at
    assert str(size) in str(error)
    # The message must name the minimum this magic needs (the size field, or the whole entry with its
    # 12-byte frame), not the 14 of a v0 message, which ``size`` already satisfies.
    assert str(minimum) in str(error) or str(minimum + 12) in str(error), str(error)
    scan = records.scan()
    assert (scan.stop_reason, scan.stop_position) == (ScanStop.SIZE_TOO_SMALL, bad_at)


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_size_above_max_batch_size(impl: ModuleType, magic: int) -> None:
    buf = good_buffer(magic)
    spans = entries(buf)
    largest_size_field = max(size for _, size in spans) - 12
    big_at = next(pos for pos, size in spans if size - 12 == largest_size_field)
    # Kafka's ByteBufferLogInputStream refuses a size field above maxMessageSize: equal is fine.
    at_limit = MemoryRecords(buf, max_batch_size=largest_size_field)
    assert [b.position for b in at_limit.batches()] == [pos for pos, _ in spans]
    limit = largest_size_field - 1
    records = MemoryRecords(buf, max_batch_size=limit)
    for strict in (True, False):
        error = raises(RecordTooLargeError, lambda strict=strict: list(records.batches(strict=strict)))
        assert error.position == big_at
        assert f"Record size {largest_size_field}" in str(error)
        assert str(limit) in str(error)
    scan = records.scan()
    assert (scan.stop_reason, scan.stop_position) == (ScanStop.TOO_LARGE, big_at)


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_huge_size_field_is_too_large_not_an_allocation(impl: ModuleType, magic: int) -> None:
    buf = bytearray(good_buffer(magic))
    struct.pack_into(">i", buf, 8, 0x7FFFFFFF)
    records = MemoryRecords(bytes(buf), max_batch_size=1 << 20)
    error, peak = peak_memory(lambda: list(records.batches()))
    assert isinstance(error, RecordTooLargeError)
    assert error.position == 0
    assert peak < 256 * 1024


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_size_past_the_end_of_the_buffer_is_a_truncation(impl: ModuleType, magic: int) -> None:
    buf = bytearray(good_buffer(magic))
    spans = entries(bytes(buf))
    last_at, last_size = spans[-1]
    struct.pack_into(">i", buf, last_at + 8, last_size - 12 + 100)
    records = MemoryRecords(bytes(buf))
    error = raises(CorruptRecordError, lambda: list(records.batches(strict=True)))
    assert type(error) is CorruptRecordError
    assert error.position == last_at
    assert "Truncated" in str(error)
    assert [b.position for b in records.batches()] == [pos for pos, _ in spans[:-1]]
    assert records.valid_bytes() == last_at


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("zeros", [12, 17, 18, 61, 4096, 1 << 20])
def test_zero_filled_tail_is_the_end_of_the_data(impl: ModuleType, magic: int, zeros: int) -> None:
    """Zeros after the last entry (a preallocated segment a broker did not trim, or a file extended but
    never written) end every read there, strict ones too: a size field of 0 followed by nothing but zeros
    is no entry.  0.10.1's ``FileMessageSet.iterator`` ended at any size below the minimum; modern Kafka
    never reads past the logical end of a preallocated file, and its recovery cuts the tail."""
    good = good_buffer(magic)
    records = MemoryRecords(good + bytes(zeros))
    expected = [(b.position, b.size_in_bytes) for b in MemoryRecords(good).batches()]
    deep = [r.as_tuple() for r in MemoryRecords(good).records()]
    for strict in (False, True):
        assert [(b.position, b.size_in_bytes) for b in records.batches(strict=strict)] == expected
        assert [r.as_tuple() for r in records.records(strict=strict)] == deep
        assert [int(o) for c in records.record_columns(strict=strict) for o in c.records["offset"]] == \
            [r[0] for r in deep]
    scan = records.scan()
    assert (scan.stop_reason, scan.stop_position) == (ScanStop.ZERO_TAIL, len(good))
    assert records.valid_bytes() == len(good)
    # The kernel's search for an offset past the data ends there too.
    position, _size, _last, stop, reason = impl.search_for_offset(records.buffer, 0, -1, 1 << 40)
    assert (position, stop, reason) == (-1, len(good), ScanStop.ZERO_TAIL)


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("where", [0, 7, 12, 13, 100, 4095])
def test_a_non_zero_byte_in_the_tail_is_corruption(impl: ModuleType, magic: int, where: int) -> None:
    """A size below the minimum is corrupt unless everything from it to the end is zero: one stray byte,
    in the offset before the size field, or anywhere after it, and the reads raise as before."""
    good = good_buffer(magic)
    tail = bytearray(4096)
    tail[where] = 0x5A
    records = MemoryRecords(good + bytes(tail))
    scan = records.scan()
    assert (scan.stop_reason, scan.stop_position) == (ScanStop.SIZE_TOO_SMALL, len(good))
    for strict in (False, True):
        error = raises(CorruptRecordError, lambda strict=strict: list(records.batches(strict=strict)))
        assert error.position == len(good)
        error = raises(CorruptRecordError, lambda strict=strict: list(records.records(strict=strict)))
        assert error.position == len(good)


# ---------------------------------------------------------------------------------------------------
# Bad CRCs


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_flipped_body_byte_fails_the_crc(impl: ModuleType, magic: int) -> None:
    buf = bytearray(good_buffer(magic))
    spans = entries(bytes(buf))
    bad_at, bad_size = spans[1]
    buf[bad_at + bad_size - 2] ^= 0x40
    data = bytes(buf)
    records = MemoryRecords(data)
    batches = list(records.batches())  # shallow iteration does not check CRCs
    assert [b.position for b in batches] == [pos for pos, _ in spans]
    bad = batches[1]
    assert not bad.is_valid()
    assert batches[0].is_valid()
    if magic == 2:
        computed = impl.crc32c(data[bad_at + 21:bad_at + bad_size])
        stored = struct.unpack_from(">I", data, bad_at + 17)[0]
    else:
        computed = impl.crc32(data[bad_at + 16:bad_at + bad_size])
        stored = struct.unpack_from(">I", data, bad_at + 12)[0]
    assert stored != computed
    assert bad.crc == stored
    error = raises(CorruptRecordError, bad.ensure_valid)
    assert error.position == bad_at
    assert f"stored crc = {stored}" in str(error)
    assert f"computed crc = {computed}" in str(error)
    scan = records.scan(check_crc=True)
    assert (scan.stop_reason, scan.stop_position) == (ScanStop.BAD_CRC, bad_at)
    assert len(scan.batches) == 1
    assert records.valid_bytes() == bad_at
    every = records.scan(check_crc=True, stop_on_invalid=False)
    assert every.batches["valid"].tolist() == [1 if pos != bad_at else 0 for pos, _ in spans]
    assert every.stop_reason is ScanStop.END
    # Deep reads check each batch's CRC, as a consumer with check.crcs=true: the records before the bad
    # batch, then Kafka's message at its position; check_crcs=False reads every record.
    seen: list[int] = []

    def deep() -> None:
        for record in records.records():
            seen.append(record.offset)

    error = raises(CorruptRecordError, deep)
    assert error.position == bad_at
    assert f"stored crc = {stored}, computed crc = {computed}" in str(error)
    assert seen == [r.offset for r in batches[0].records()]
    error = raises(CorruptRecordError, lambda: list(records.record_columns()))
    assert (error.position, error.detail) == (bad_at, f"Record is corrupt (stored crc = {stored}, computed crc = "
                                                      f"{computed})")
    raises(CorruptRecordError, bad.records)
    raises(CorruptRecordError, bad.record_columns)
    if magic == 2:
        # The bad batch is the gzip one: read past its CRC, its flipped byte breaks the stream instead.
        error = raises(CorruptRecordError, lambda: list(records.records(check_crcs=False)))
        assert error.position == bad_at
        assert "gzip" in str(error)
    else:
        forensic = list(records.records(check_crcs=False))
        assert [r.offset for r in forensic] == [r.offset for b in batches for r in b.records(check_crcs=False)]
        assert len(forensic) == 6
        assert sum(len(c) for c in records.record_columns(check_crcs=False)) == len(forensic)


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_flipped_crc_field_fails_the_crc(impl: ModuleType, magic: int) -> None:
    buf = bytearray(good_buffer(magic))
    crc_at = 17 if magic == 2 else 12
    buf[crc_at] ^= 0x01
    records = MemoryRecords(bytes(buf))
    first = next(iter(records.batches()))
    assert not first.is_valid()
    error = raises(CorruptRecordError, first.ensure_valid)
    assert error.position == 0
    assert records.valid_bytes() == 0
    assert records.scan().stop_reason is ScanStop.BAD_CRC


def test_partition_leader_epoch_is_outside_the_crc(impl: ModuleType) -> None:
    buf = bytearray(good_buffer(2))
    second_at = entries(bytes(buf))[1][0]
    for pos in (0, second_at):
        struct.pack_into(">i", buf, pos + 12, 0x1234ABCD)
    records = MemoryRecords(bytes(buf))
    batches = list(records.batches())
    assert [b.partition_leader_epoch for b in batches] == [0x1234ABCD, 0x1234ABCD]
    assert all(b.is_valid() for b in batches)
    for batch in batches:
        batch.ensure_valid()
    assert records.valid_bytes() == len(buf)
    assert records.scan().stop_reason is ScanStop.END
    # ...while the byte right after it, the magic, and the attributes are covered.
    buf[second_at + 22] ^= 0x10
    assert MemoryRecords(bytes(buf)).valid_bytes() == second_at


# ---------------------------------------------------------------------------------------------------
# Lengths inside v2 records

FIRST = v2_record(v2_body(key=b"k0", value=b"v0"))


def _v2_two_records(core: ModuleType, second: bytes, count: int = 2) -> tuple[bytes, int]:
    """A good v2 batch followed by a batch whose second record is ``second``; returns the buffer and
    the position of that record in it."""
    lead = bytes(MemoryRecords.with_records(RECORDS, base_offset=0).buffer)
    bad = v2_batch_with_section(core, FIRST + second, count, base_offset=3)
    return lead + bad, len(lead) + V2_HEADER + len(FIRST)


def _bad_batch(buf: bytes) -> Any:
    batches = list(MemoryRecords(buf).batches())
    assert len(batches) == 2
    assert batches[1].is_valid()  # the CRC is right: the damage is in the record itself
    return batches[1]


@pytest.mark.parametrize(("body", "needle"), [
    (v2_body(key=b"abc", key_len=1000), "key size 1000"),
    (v2_body(key=b"abc", key_len=0x7FFFFFFF), "key size 2147483647"),
    (v2_body(value=b"abc", value_len=500), "value size 500"),
    (v2_body(value=b"abc", value_len=0x7FFFFFFF), "value size 2147483647"),
    (v2_body(header_count=-1), "number of record headers -1"),
    (v2_body(header_count=-(1 << 31)), "number of record headers -2147483648"),
    (v2_body(header_count=1000), "number of record headers 1000"),
    (v2_body(headers=(v2_header_field(b"h", b"x", key_len=-1),)), "negative header key size -1"),
    (v2_body(headers=(v2_header_field(b"h", b"x", key_len=-9),)), "negative header key size -9"),
    (v2_body(headers=(v2_header_field(b"h", b"x", key_len=300),)), "header key size 300"),
    (v2_body(headers=(v2_header_field(b"h", b"x", value_len=300),)), "header value size 300"),
])
def test_v2_record_bad_lengths(impl: ModuleType, body: bytes, needle: str) -> None:
    buf, record_at = _v2_two_records(impl, v2_record(body))
    batch = _bad_batch(buf)
    for read in (batch.records, batch.record_columns):
        error = raises(InvalidRecordError, read)
        assert error.position == record_at
        assert needle in str(error)
    error = raises(InvalidRecordError, lambda: list(MemoryRecords(buf).records()))
    assert error.position == record_at
    # The kernels directly, over the records section alone.
    section = buf[batch.position + V2_HEADER:]
    for kernel in (impl.decode_v2_records, impl.decode_v2_record_objects):
        error = raises(InvalidRecordError, lambda kernel=kernel: kernel(section, 0, len(section), 2, 3, 1000))
        assert error.position == len(FIRST)
        assert needle in str(error)


@pytest.mark.parametrize(("body", "key", "value", "headers"), [
    (v2_body(key=None, key_len=-7), None, b"v", []),
    (v2_body(key=None, key_len=-(1 << 31)), None, b"v", []),
    (v2_body(value=None, value_len=-2), b"k", None, []),
    (v2_body(headers=(v2_header_field(b"h", None, value_len=-5),)), b"k", b"v", [("h", None)]),
])
def test_v2_negative_lengths_read_as_null(impl: ModuleType, body: bytes, key: bytes | None,
                                          value: bytes | None, headers: list[Any]) -> None:
    """Kafka's DefaultRecord.readFrom reads any negative key, value or header value size as null."""
    buf, _ = _v2_two_records(impl, v2_record(body))
    records = _bad_batch(buf).records()
    assert [r.as_tuple() for r in records] == [
        (3, 1_000, b"k0", b"v0", []),
        (3, 1_000, key, value, headers),
    ]


# ---------------------------------------------------------------------------------------------------
# Lengths inside legacy messages


def _legacy_entry(core: ModuleType, magic: int, key: bytes | None, value: bytes | None) -> tuple[bytes, int]:
    """A good entry followed by one made from ``(key, value)``; returns the buffer and its position."""
    lead = bytes(MemoryRecords.with_records([(b"lead", b"x", 5)], magic=magic, base_offset=0).buffer)
    entry = bytes(MemoryRecords.with_records([(key, value, 7)], magic=magic, base_offset=1).buffer)
    return lead + entry, len(lead)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize(("field", "new_size", "needle"), [
    ("key", 1000, "Key size 1000"),
    ("key", 0x7FFFFFFF, "Key size 2147483647"),
    ("value", 1000, "Value size 1000"),
    ("value", 0x7FFFFFFF, "Value size 2147483647"),
])
def test_legacy_oversized_lengths(impl: ModuleType, magic: int, field: str, new_size: int,
                                  needle: str) -> None:
    buf, at = _legacy_entry(impl, magic, b"key", b"value")
    data = bytearray(buf)
    key_size_at = at + 12 + (14 if magic == 1 else 6)
    size_at = key_size_at if field == "key" else key_size_at + 4 + 3
    struct.pack_into(">i", data, size_at, new_size)
    seal_legacy(impl, data, at)
    batches = list(MemoryRecords(bytes(data)).batches())
    assert batches[1].is_valid()
    for read in (batches[1].records, batches[1].record_columns):
        error = raises(CorruptRecordError, read)
        assert error.position == at
        assert needle in str(error)
    error = raises(CorruptRecordError, lambda: impl.decode_legacy_records(bytes(data), 0, len(data)))
    assert error.position == at


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_negative_lengths_read_as_null(impl: ModuleType, magic: int) -> None:
    """Kafka's LegacyRecord reads a negative key or value size as null."""
    buf, at = _legacy_entry(impl, magic, None, None)
    data = bytearray(buf)
    key_size_at = at + 12 + (14 if magic == 1 else 6)
    struct.pack_into(">ii", data, key_size_at, -77, -(1 << 31))
    seal_legacy(impl, data, at)
    records = list(MemoryRecords(bytes(data)).records())
    assert [r.as_tuple() for r in records] == [
        (0, 5 if magic == 1 else -1, b"lead", b"x", []),
        (1, 7 if magic == 1 else -1, None, None, []),
    ]


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_bad_inner_message_names_the_wrapper(impl: ModuleType, magic: int) -> None:
    """A wrapper whose inner message has an oversized key: the error is at the wrapper's position."""
    lead = bytes(MemoryRecords.with_records([(b"lead", b"x", 5)], magic=magic).buffer)
    inner = bytearray(MemoryRecords.with_records([(b"key", b"value", 7)], magic=magic, base_offset=1).buffer)
    struct.pack_into(">i", inner, 12 + (14 if magic == 1 else 6), 999)
    seal_legacy(impl, inner)
    wrapper = _legacy_wrapper(impl, magic, offset=1, codec=1, payload=gzip.compress(bytes(inner)))
    buf = lead + wrapper
    (_, batch) = MemoryRecords(buf).batches()
    assert batch.is_valid()
    error = raises(CorruptRecordError, batch.records)
    assert error.position == len(lead)
    assert "Key size 999" in str(error)


def _legacy_wrapper(core: ModuleType, magic: int, *, offset: int, codec: int, payload: bytes,
                    timestamp: int = 7) -> bytes:
    """A compressed wrapper message around ``payload``, made from a good wrapper by swapping its value."""
    good = bytes(MemoryRecords.with_records([(b"k", b"v", timestamp)], magic=magic, compression="gzip",
                                            base_offset=offset).buffer)
    value_size_at = 12 + (14 if magic == 1 else 6) + 4  # after the null key's size
    head = bytearray(good[:value_size_at])
    head[17] = (head[17] & ~0x07) | codec
    out = head + struct.pack(">i", len(payload)) + payload
    struct.pack_into(">i", out, 8, len(out) - 12)
    return bytes(seal_legacy(core, out))


# ---------------------------------------------------------------------------------------------------
# Varints and record counts


@pytest.mark.parametrize("run", [b"\xff" * 5 + b"\x01", b"\x80" * 5 + b"\x00", b"\xff" * 12])
def test_record_length_varint_that_never_ends(impl: ModuleType, run: bytes) -> None:
    buf, record_at = _v2_two_records(impl, run + b"\x00" * 8)
    batch = _bad_batch(buf)
    for read in (batch.records, batch.record_columns):
        error = raises(InvalidRecordError, read)
        assert "Varint is too long" in str(error)
        assert record_at <= error.position <= record_at + 5


def test_varlong_that_never_ends(impl: ModuleType) -> None:
    body = v2_body(raw_ts_delta=b"\xff" * 10 + b"\x01")
    buf, record_at = _v2_two_records(impl, v2_record(body))
    batch = _bad_batch(buf)
    for read in (batch.records, batch.record_columns):
        error = raises(InvalidRecordError, read)
        assert "Varlong is too long" in str(error)
        assert record_at < error.position <= record_at + len(v2_record(body))


def test_ten_byte_varlong_is_still_valid(impl: ModuleType) -> None:
    """Nine continuation bytes and a last one: the longest legal varlong (here a padded 1)."""
    body = v2_body(raw_ts_delta=b"\x82" + b"\x80" * 8 + b"\x00", key=b"k1", value=b"v1", offset_delta=1)
    buf, _ = _v2_two_records(impl, v2_record(body))
    records = _bad_batch(buf).records()
    assert [r.as_tuple() for r in records] == [(3, 1_000, b"k0", b"v0", []), (4, 1_001, b"k1", b"v1", [])]


@pytest.mark.parametrize("extra", [1, 100, None])
def test_record_length_past_the_end(impl: ModuleType, extra: int | None) -> None:
    body = v2_body(key=b"k1", value=b"v1")
    length = 0x7FFFFFFF if extra is None else len(body) + extra
    buf, record_at = _v2_two_records(impl, v2_record(body, length=length))
    batch = _bad_batch(buf)
    error = raises(InvalidRecordError, batch.records)
    assert error.position == record_at
    assert f"expected {length} bytes" in str(error)
    assert f"only {len(body)} remaining" in str(error)


def test_negative_record_length(impl: ModuleType) -> None:
    body = v2_body(key=b"k1", value=b"v1")
    buf, record_at = _v2_two_records(impl, v2_record(body, length=-3))
    error = raises(InvalidRecordError, _bad_batch(buf).records)
    assert error.position == record_at
    assert "Invalid record size: expected -3" in str(error)


def test_record_shorter_than_its_length(impl: ModuleType) -> None:
    body = v2_body(key=b"k1", value=b"v1")
    buf, record_at = _v2_two_records(impl, v2_record(body + b"\x00\x00", length=len(body) + 2))
    error = raises(InvalidRecordError, _bad_batch(buf).records)
    assert error.position == record_at
    assert f"expected to read {len(body) + 2} bytes" in str(error)
    assert f"read {len(body)}" in str(error)


@pytest.mark.parametrize("count", [-1, -(1 << 31)])
def test_negative_record_count(impl: ModuleType, count: int) -> None:
    buf, _ = _v2_two_records(impl, v2_record(v2_body()), count=count)
    batch = _bad_batch(buf)
    assert batch.count == count
    for read in (batch.records, batch.record_columns):
        error = raises(InvalidRecordError, read)
        assert f"record count {count}" in str(error)
        # The count is a field of the batch header: the error points into that batch.
        assert batch.position <= error.position <= batch.position + V2_HEADER


@pytest.mark.parametrize("codec", ["none", "zstd"])
@pytest.mark.parametrize("count", [1 << 20, 0x7FFFFFFF])
def test_record_count_larger_than_the_bytes_can_hold(impl: ModuleType, codec: str, count: int) -> None:
    data = bytearray(MemoryRecords.with_records(RECORDS, compression=codec).buffer)
    struct.pack_into(">i", data, 57, count)
    seal_v2(impl, data)
    (batch,) = MemoryRecords(bytes(data)).batches()
    assert batch.is_valid() and batch.count == count
    for read in (batch.records, batch.record_columns):
        error, peak = peak_memory(read)
        assert isinstance(error, InvalidRecordError), error
        assert f"{count} records cannot fit" in str(error)
        assert 0 <= error.position <= V2_HEADER
        assert peak < 256 * 1024, peak  # refused before anything is allocated for that many records
    section = bytes(data[V2_HEADER:]) if codec == "none" else b"\x00" * 40
    for kernel in (impl.decode_v2_records, impl.decode_v2_record_objects):
        error, peak = peak_memory(lambda kernel=kernel: kernel(section, 0, len(section), count, 0, 0))
        assert isinstance(error, InvalidRecordError) and error.position == 0
        assert peak < 256 * 1024, peak


def test_records_remaining_after_the_declared_count(impl: ModuleType) -> None:
    second = v2_record(v2_body(key=b"k1", value=b"v1", offset_delta=1))
    buf, record_at = _v2_two_records(impl, second, count=1)
    batch = _bad_batch(buf)
    for read in (batch.records, batch.record_columns):
        error = raises(InvalidRecordError, read)
        assert error.position == record_at
        assert "records still remaining" in str(error)


def test_records_after_a_zero_count(impl: ModuleType) -> None:
    """A batch that declares no records but carries one.  Kafka's iterator never reads past a zero
    count; a stricter reader may refuse the bytes.  Either way every reader must say the same."""
    buf = v2_batch_with_section(impl, FIRST, 0)
    (batch,) = MemoryRecords(buf).batches()
    assert batch.is_valid() and batch.count == 0
    outcomes = []
    for read in (batch.records, lambda: batch.record_columns().records.tolist(),
                 lambda: list(MemoryRecords(buf).records())):
        try:
            outcomes.append(("ok", len(read())))
        except InvalidRecordError as e:
            assert "records still remaining" in str(e)
            outcomes.append(("error", e.position))
    assert outcomes in ([("ok", 0)] * 3, [("error", V2_HEADER)] * 3), outcomes


def test_fewer_records_than_the_declared_count(impl: ModuleType) -> None:
    second = v2_record(v2_body(key=b"k1" * 10, value=b"v1" * 10, offset_delta=1))
    buf, record_at = _v2_two_records(impl, second, count=3)
    batch = _bad_batch(buf)
    error = raises(InvalidRecordError, batch.records)
    assert error.position == record_at + len(second)  # where the third record should start
    assert "premature EOF" in str(error)


# ---------------------------------------------------------------------------------------------------
# A bad batch inside a run of good ones


def _run_with_bad_batches(core: ModuleType) -> tuple[bytes, list[tuple[int, bytes, bytes]], int]:
    """Five uncompressed v2 batches, small enough to be decoded as one run: two good ones, one whose second
    record's key runs past the record, one that declares more records than its bytes can hold, and a good
    one; the two bad ones have right CRCs.  Returns the buffer, the (offset, key, value) of the records of the
    good batches before the first bad one, and the position of that batch's bad record."""
    first = bytes(MemoryRecords.with_records(RECORDS, base_offset=0).buffer)
    second = bytes(MemoryRecords.with_records(RECORDS, base_offset=3).buffer)
    bad_record = v2_batch_with_section(core, FIRST + v2_record(v2_body(key=b"abc", key_len=1000)), 2,
                                       base_offset=6)
    bad_count = bytearray(MemoryRecords.with_records(RECORDS, base_offset=8).buffer)
    struct.pack_into(">i", bad_count, 57, 1 << 20)
    seal_v2(core, bad_count)
    last = bytes(MemoryRecords.with_records(RECORDS, base_offset=11).buffer)
    buf = first + second + bad_record + bytes(bad_count) + last
    before = [(o, k, v) for o, (k, v, _ts) in enumerate(RECORDS * 2)]
    return buf, before, len(first) + len(second) + V2_HEADER + len(FIRST)


def _until_error(records: Any) -> tuple[list[Any], InvalidRecordError]:
    """What an iteration yields before it raises, and the error."""
    got = []
    with pytest.raises(InvalidRecordError) as info:
        for item in records:
            got.append(item)
    return got, info.value


def test_records_before_a_bad_batch_are_yielded(impl: ModuleType) -> None:
    """Deep iteration hands out every record of the batches before a malformed one (CRC right), then raises
    at its bad record; a later bad batch in the same run is never what is reported."""
    buf, before, bad_at = _run_with_bad_batches(impl)
    records = MemoryRecords(buf)
    assert all(b.is_valid() for b in records.batches())
    for check_crcs in (True, False):
        got, error = _until_error(records.records(check_crcs=check_crcs))
        assert [(r.offset, r.key, r.value) for r in got] == before
        assert error.position == bad_at
        assert "key size 1000" in str(error)
        got, error = _until_error(records.record_columns(check_crcs=check_crcs))
        assert [int(o) for c in got for o in c.records["offset"]] == [o for o, _k, _v in before]
        assert error.position == bad_at


def test_run_kernels_report_the_first_bad_batch(impl: ModuleType) -> None:
    """The multi-batch kernels decode their batches in order: the error is the first bad batch's, on both
    twins, though a later batch of the run has a header (its record count) that is bad too."""
    buf, _before, bad_at = _run_with_bad_batches(impl)
    rows = MemoryRecords(buf).scan().batches
    for kernel in (impl.decode_v2_batch_objects, impl.decode_v2_batches):
        error = raises(InvalidRecordError, lambda kernel=kernel: kernel(buf, rows))
        assert error.position == bad_at
        assert "key size 1000" in str(error)
        # Without the first bad batch, the count of the next one is what stops the run.
        error = raises(InvalidRecordError, lambda kernel=kernel: kernel(buf, rows[[0, 1, 3, 4]]))
        assert "records cannot fit" in str(error)
        assert int(rows["position"][3]) <= error.position <= int(rows["position"][3]) + V2_HEADER


def test_records_of_a_file_before_a_bad_batch(impl: ModuleType, tmp_path: Path) -> None:
    """The same through a segment file: the records before the bad batch, then the error at its file
    position, naming the file."""
    buf, before, bad_at = _run_with_bad_batches(impl)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(buf)
    with FileMessageSet(path, writable=False) as records:
        got, error = _until_error(records.records())
    assert [(r.offset, r.key, r.value) for r in got] == before
    assert error.position == bad_at
    assert str(path) in str(error)


# ---------------------------------------------------------------------------------------------------
# Decompression bombs


BOMB_SIZE = 4 * 1024 * 1024
LIMIT = 64 * 1024


@cache
def _bomb(magic: int, codec: str) -> bytes:
    lead = bytes(MemoryRecords.with_records([(b"lead", b"x", 5)], magic=magic).buffer)
    bomb = MemoryRecords.with_records([(b"k", bytes(BOMB_SIZE), 6)], magic=magic, compression=codec,
                                      base_offset=1).buffer
    assert len(bomb) < BOMB_SIZE // 16
    return lead + bytes(bomb)


@pytest.mark.parametrize(("magic", "codec"), [
    (2, "gzip"), (2, "zstd"), (2, "lz4"), (2, "snappy"), (1, "gzip"), (0, "gzip"), (1, "lz4"),
])
def test_compressed_payload_past_the_limit(impl: ModuleType, magic: int, codec: str) -> None:
    buf = _bomb(magic, codec)
    records = MemoryRecords(buf, max_decompressed_size=LIMIT)
    lead, bomb = list(records.batches())
    assert bomb.is_valid()
    assert [r.value for r in lead.records()] == [b"x"]
    for read in (bomb.records, bomb.record_columns, lambda: list(records.records())):
        error, peak = peak_memory(read)
        assert isinstance(error, RecordTooLargeError), error
        assert error.position == bomb.position
        assert str(LIMIT) in str(error)
        assert peak < 1024 * 1024, peak  # far below the 4 MiB the payload expands to
    # Under a limit it fits in, the same bytes read back whole.
    big = list(MemoryRecords(buf, max_decompressed_size=2 * BOMB_SIZE).records())
    assert [len(r.value) for r in big] == [1, BOMB_SIZE]


# ---------------------------------------------------------------------------------------------------
# Record-count bombs: a small batch that holds a huge number of records


#: What a deep read of the small bombs below may hold at its peak (tracemalloc).
PEAK_BOUND = 600_000


def _read_all(records: MemoryRecords) -> dict[str, Callable[[], int]]:
    """Every deep read of ``records`` (one batch), each counting what it sees without keeping it."""
    (batch,) = records.batches()
    return {
        "records": lambda: sum(1 for _ in records.records()),
        "record_columns": lambda: sum(len(c) for c in records.record_columns()),
        "batch iteration": lambda: sum(1 for _ in batch),
    }


def test_record_count_bomb_is_read_in_bounded_memory(impl: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip batch of 20,000 7-byte records is 250 bytes on disk; every deep read of it holds the
    decompressed records (140 KB) and one chunk of decoded records, never all of them at once (1.1 MB of
    columns, more as objects), as Kafka's consumer reads a compressed batch record by record.  The chunk is
    made small here (200 records) so the test is quick on the plain twin; the full-size bomb (37 M records
    in 381 KB) is measured by hand (issue 15)."""
    monkeypatch.setattr(batch_module, "CHUNK_RECORDS", 200)
    count = 20_000
    buf = record_count_bomb(count)
    assert len(buf) < 1_000
    for name, read in _read_all(MemoryRecords(buf)).items():
        seen: list[int] = []
        error, peak = peak_memory(lambda read=read, seen=seen: seen.append(read()))
        assert error is None, (name, error)
        assert seen == [count], name
        assert peak < PEAK_BOUND, (name, peak)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_record_count_bomb_is_read_in_bounded_memory(impl: ModuleType, magic: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for a compressed legacy wrapper: its inner messages are walked a chunk at a time, both to
    check them (all of them, before the first is returned, as Kafka's ``DeepRecordsIterator`` reads a v1
    wrapper) and to hand them out."""
    monkeypatch.setattr(batch_module, "CHUNK_RECORDS", 50)
    count = 2_500
    buf = MemoryRecords.with_records([(None, None, 1_000)] * count, magic=magic, compression="gzip").buffer
    records = MemoryRecords(buf)
    (batch,) = records.batches()
    assert batch.count == count
    assert batch.base_offset == 0
    reads = _read_all(records)
    del reads["batch iteration"]
    reads["validity"] = lambda: sum(len(v) for v in batch.validity_chunks())  # type: ignore[attr-defined]
    for name, read in reads.items():
        seen: list[int] = []
        error, peak = peak_memory(lambda read=read, seen=seen: seen.append(read()))
        assert error is None, (name, error)
        assert seen == [count], name
        assert peak < PEAK_BOUND, (name, peak)
    offsets = [r.offset for r in records.records()]
    assert offsets == list(range(count))


# ---------------------------------------------------------------------------------------------------
# Unknown magic and codecs


@pytest.mark.parametrize("magic", [3, 127, 128, 255])
@pytest.mark.parametrize("which", [0, 1])
def test_unknown_magic(impl: ModuleType, magic: int, which: int) -> None:
    buf = bytearray(good_buffer(2))
    bad_at = entries(bytes(buf))[which][0]
    buf[bad_at + 16] = magic
    records = MemoryRecords(bytes(buf))
    for strict in (True, False):
        seen: list[int] = []

        def walk(strict: bool = strict, seen: list[int] = seen) -> None:
            for batch in records.batches(strict=strict):
                seen.append(batch.position)

        error = raises(UnsupportedMagicError, walk)
        assert error.position == bad_at
        assert f"Invalid magic found in record: {magic}" in str(error)
        assert seen == ([] if which == 0 else [0])
    scan = records.scan()
    assert (scan.stop_reason, scan.stop_position) == (ScanStop.BAD_MAGIC, bad_at)


def test_unknown_magic_inside_a_legacy_message_set(impl: ModuleType) -> None:
    data = bytearray(MemoryRecords.with_records(RECORDS, magic=1).buffer)
    second_at = entries(bytes(data))[1][0]
    data[second_at + 16] = 2
    error = raises(UnsupportedMagicError, lambda: impl.decode_legacy_records(bytes(data), 0, len(data)))
    assert error.position == second_at
    assert "magic 2" in str(error)


@pytest.mark.parametrize("codec_id", [5, 6, 7])
@pytest.mark.parametrize("base_codec", ["none", "gzip"])
def test_unknown_codec_in_a_v2_batch(impl: ModuleType, codec_id: int, base_codec: str) -> None:
    lead = bytes(MemoryRecords.with_records(RECORDS).buffer)
    data = bytearray(MemoryRecords.with_records(RECORDS, compression=base_codec, base_offset=3).buffer)
    data[22] = (data[22] & ~0x07) | codec_id
    seal_v2(impl, data)
    buf = lead + bytes(data)
    (_, batch) = MemoryRecords(buf).batches()
    assert batch.is_valid()
    for read in (batch.records, batch.record_columns, lambda: batch.compression):
        error = raises(UnsupportedCompressionError, read)
        assert str(codec_id) in str(error)
    error = raises(UnsupportedCompressionError, batch.records)
    assert error.position == len(lead)
    error = raises(UnsupportedCompressionError, lambda: list(MemoryRecords(buf).records()))
    assert error.position == len(lead)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec_id", [4, 5, 6, 7])
def test_bad_codec_in_a_legacy_wrapper(impl: ModuleType, magic: int, codec_id: int) -> None:
    """zstd (4) does not exist below magic 2, and 5-7 exist nowhere."""
    lead = bytes(MemoryRecords.with_records([(b"lead", b"x", 5)], magic=magic).buffer)
    wrapper = bytearray(MemoryRecords.with_records(RECORDS, magic=magic, compression="gzip",
                                                   base_offset=1).buffer)
    wrapper[17] = (wrapper[17] & ~0x07) | codec_id
    seal_legacy(impl, wrapper)
    buf = lead + bytes(wrapper)
    (_, batch) = MemoryRecords(buf).batches()
    assert batch.is_valid()
    for read in (batch.records, batch.record_columns, lambda: batch.compression, lambda: batch.count):
        error = raises(UnsupportedCompressionError, read)
        assert error.position == len(lead)
        assert f"{codec_id}" in str(error) and f"magic {magic}" in str(error)


# ---------------------------------------------------------------------------------------------------
# v1 wrappers whose inner offsets do not fit


@pytest.mark.parametrize(("wrapper_offset", "inner_offsets"), [
    ((1 << 63) - 1, (-(1 << 63), -(1 << 63) + 1)),
    ((1 << 63) - 1, (-5, -4)),
    (100, (-(1 << 63), 0)),
])
def test_v1_wrapper_with_out_of_range_inner_offsets(impl: ModuleType, wrapper_offset: int,
                                                     inner_offsets: tuple[int, int]) -> None:
    """Java computes ``wrapperOffset - lastInnerOffset + innerOffset`` in wrapping long arithmetic; a
    reader may refuse such a wrapper with a kafkalog error, or report those wrapped offsets, but no other
    exception may escape."""
    inner = bytearray()
    for i, offset in enumerate(inner_offsets):
        message = bytearray(MemoryRecords.with_records([(b"k%d" % i, b"v", 7)], magic=1).buffer)
        struct.pack_into(">q", message, 0, offset)
        inner += message
    wrapper = _legacy_wrapper(impl, 1, offset=wrapper_offset, codec=1, payload=gzip.compress(bytes(inner)))
    (batch,) = MemoryRecords(wrapper).batches()
    assert batch.is_valid()
    try:
        records = batch.records()
    except KafkaLogError as e:
        assert isinstance(e, CorruptRecordError)
        assert e.position == 0
        assert "offset" in str(e)
        return
    base = wrapper_offset - inner_offsets[-1]
    wrapped = [((base + o + (1 << 63)) % (1 << 64)) - (1 << 63) for o in inner_offsets]
    assert [r.offset for r in records] == wrapped


# ---------------------------------------------------------------------------------------------------
# Builder misuse


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_builder_rejects_str_keys_and_values(impl: ModuleType, magic: int) -> None:
    with pytest.raises(TypeError, match="key must be bytes-like or None, not str"):
        MemoryRecords.with_records([("key", b"value")], magic=magic)
    with pytest.raises(TypeError, match="value must be bytes-like or None, not str"):
        MemoryRecords.with_records([(b"key", "value")], magic=magic)
    with pytest.raises(TypeError, match="key must be bytes-like or None, not int"):
        MemoryRecords.with_records([(5, b"value")], magic=magic)


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("record", [(b"k",), (b"k", b"v", 1, [], "extra"), ()])
def test_builder_rejects_wrong_tuple_arity(impl: ModuleType, magic: int, record: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError, match=f"got a sequence of {len(record)}"):
        MemoryRecords.with_records([record], magic=magic)


@pytest.mark.parametrize("record", [b"just-a-value", 5, {"key": b"k", "value": b"v"}])
def test_builder_rejects_a_record_that_is_not_a_record(impl: ModuleType, record: Any) -> None:
    """A bare value, a number or a dict is not a record: a clear TypeError/ValueError, not an
    AttributeError from deep inside the builder."""
    with pytest.raises((TypeError, ValueError), match=r"(?i)record"):
        MemoryRecords.with_records([record])


@pytest.mark.parametrize("magic", [1, 2])
@pytest.mark.parametrize("timestamp", [-2, -1000, -(1 << 63)])
def test_builder_rejects_timestamps_below_minus_one(impl: ModuleType, magic: int, timestamp: int) -> None:
    with pytest.raises(ValueError, match=f"Invalid negative timestamp {timestamp}"):
        MemoryRecords.with_records([(b"k", b"v", timestamp)], magic=magic)


@pytest.mark.parametrize("magic", [1, 2])
def test_builder_rejects_timestamps_past_int64(impl: ModuleType, magic: int) -> None:
    with pytest.raises((ValueError, OverflowError), match=r"(?i)timestamp"):
        MemoryRecords.with_records([(b"k", b"v", 1 << 63)], magic=magic)


@pytest.mark.parametrize("magic", [1, 2])
def test_builder_log_append_time_needs_the_time(impl: ModuleType, magic: int) -> None:
    with pytest.raises(ValueError, match="needs log_append_time"):
        MemoryRecords.with_records([(b"k", b"v", 1)], magic=magic, timestamp_type="LogAppendTime")
    built = MemoryRecords.with_records([(b"k", b"v", 1)], magic=magic, timestamp_type="LogAppendTime",
                                       log_append_time=9_000)
    assert [r.timestamp for r in built.records()] == [9_000]
    with pytest.raises(ValueError, match="carry no timestamp"):
        MemoryRecords.with_records([(b"k", b"v")], magic=0, timestamp_type="LogAppendTime",
                                   log_append_time=9_000)


@pytest.mark.parametrize("magic", [0, 1])
def test_builder_rejects_v2_features_below_magic_2(impl: ModuleType, magic: int) -> None:
    with pytest.raises(ValueError, match=f"Magic v{magic} does not support record headers"):
        MemoryRecords.with_records([(b"k", b"v", 1, [("h", b"x")])], magic=magic)
    for field, value in (("producer_id", 5), ("producer_epoch", 1), ("base_sequence", 0),
                         ("partition_leader_epoch", 2), ("delete_horizon_ms", 10)):
        with pytest.raises(ValueError, match=f"{field} need magic 2"):
            MemoryRecords.with_records([(b"k", b"v")], magic=magic, **{field: value})
    with pytest.raises(ValueError, match="is_transactional need magic 2"):
        MemoryRecords.with_records([(b"k", b"v")], magic=magic, is_transactional=True, producer_id=5)
    with pytest.raises(UnsupportedCompressionError, match=f"not supported for magic {magic}"):
        MemoryRecords.with_records([(b"k", b"v")], magic=magic, compression="zstd")


@pytest.mark.parametrize("magic", [3, 4, 127, -1])
def test_builder_rejects_unknown_magic(impl: ModuleType, magic: int) -> None:
    with pytest.raises(UnsupportedMagicError, match=f"Unknown magic {magic}"):
        MemoryRecords.with_records([(b"k", b"v")], magic=magic)


def test_builder_rejects_bad_header_keys(impl: ModuleType) -> None:
    with pytest.raises(ValueError, match="null header key"):
        MemoryRecords.with_records([(b"k", b"v", 1, [(None, b"x")])])
    with pytest.raises(TypeError, match=r"(?i)header key"):
        MemoryRecords.with_records([(b"k", b"v", 1, [(b"bytes-key", b"x")])])


def test_builder_rejects_bad_codecs_and_types(impl: ModuleType) -> None:
    with pytest.raises(UnsupportedCompressionError, match="'brotli'"):
        MemoryRecords.with_records([(b"k", b"v")], compression="brotli")
    with pytest.raises(UnsupportedCompressionError, match="codec 9"):
        MemoryRecords.with_records([(b"k", b"v")], compression=9)
    with pytest.raises(ValueError, match="Unknown timestamp type 'Bogus'"):
        MemoryRecords.with_records([(b"k", b"v")], timestamp_type="Bogus")
    with pytest.raises(ValueError, match="without a valid producer id"):
        MemoryRecords.with_records([(b"k", b"v")], is_transactional=True)
    with pytest.raises(TypeError, match="not str"):
        MemoryRecords("not bytes")


# ---------------------------------------------------------------------------------------------------
# Header fields past their Java types (issue 28): Kafka's builders take a short, an int, a long; a Python
# caller can pass anything, and before got a bare struct.error (or OverflowError) from deep in the packing.

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@pytest.mark.parametrize(("field", "value", "kafka_field", "java_type", "extra"), [
    ("producer_epoch", 2**15, "producerEpoch", "short", {"producer_id": 7}),
    ("producer_epoch", -(2**15) - 1, "producerEpoch", "short", {"producer_id": 7}),
    ("base_sequence", 2**31, "baseSequence", "int", {"producer_id": 7, "producer_epoch": 0}),
    ("producer_id", 2**63, "producerId", "long", {}),
    ("producer_id", LONG_MIN - 1, "producerId", "long", {}),
    ("partition_leader_epoch", 2**31, "partitionLeaderEpoch", "int", {}),
    ("base_offset", 2**63, "baseOffset", "long", {}),
    ("log_append_time", 2**63, "maxTimestamp", "long", {"timestamp_type": "LogAppendTime"}),
    ("delete_horizon_ms", 2**63, "baseTimestamp", "long", {}),
])
def test_builder_rejects_v2_header_fields_past_their_java_type(impl: ModuleType, field: str, value: int,
                                                                kafka_field: str, java_type: str,
                                                                extra: dict[str, Any]) -> None:
    with pytest.raises(IllegalArgumentError, match=f"^{field} {value} does not fit the batch header's "
                                                   f"{kafka_field}, a Java {java_type} "):
        MemoryRecords.with_records(RECORDS, **{**extra, field: value})


def test_builder_takes_every_v2_header_field_at_its_java_edge(impl: ModuleType) -> None:
    """The largest value of each type is a value, and reads back as itself."""
    built = MemoryRecords.with_records([(b"k", b"v", 5)], base_offset=LONG_MAX, producer_id=LONG_MAX,
                                       producer_epoch=2**15 - 1, base_sequence=2**31 - 1,
                                       partition_leader_epoch=2**31 - 1, timestamp_type="LogAppendTime",
                                       log_append_time=LONG_MAX)
    [batch] = built.batches()
    assert (batch.base_offset, batch.last_offset, batch.producer_id, batch.producer_epoch, batch.base_sequence,
            batch.partition_leader_epoch, batch.max_timestamp) == (
        LONG_MAX, LONG_MAX, LONG_MAX, 2**15 - 1, 2**31 - 1, 2**31 - 1, LONG_MAX)
    assert [r.offset for r in built.records()] == [LONG_MAX]


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_builder_rejects_a_last_offset_past_a_java_long(impl: ModuleType, magic: int) -> None:
    """Two records from the largest offset: a v2 batch's last offset, or a v0/v1 message's own, would be
    2^63 (before: a v2 batch whose second record read back at -2^63, an OverflowError for v0/v1)."""
    with pytest.raises(IllegalArgumentError, match=f"base_offset {LONG_MAX}: the .*{2**63}.* does not fit a Java "
                                                   "long"):
        MemoryRecords.with_records(RECORDS[:2], base_offset=LONG_MAX, magic=magic)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_builder_rejects_fields_past_a_java_long(impl: ModuleType, magic: int) -> None:
    with pytest.raises(IllegalArgumentError, match=f"^base_offset {2**63} does not fit the message's offset, a Java "
                                                   "long"):
        MemoryRecords.with_records(RECORDS, base_offset=2**63, magic=magic)
    if magic == 1:
        with pytest.raises(IllegalArgumentError, match=f"^log_append_time {2**63} does not fit the message's "
                                                       "timestamp, a Java long"):
            MemoryRecords.with_records(RECORDS, magic=1, timestamp_type="LogAppendTime", log_append_time=2**63)


@pytest.mark.parametrize(("producer_id", "producer_epoch", "coordinator_epoch", "message"), [
    (2**63, 0, 0, f"producer_id {2**63} does not fit the batch header's producerId, a Java long"),
    (7, 2**15, 0, f"producer_epoch {2**15} does not fit the batch header's producerEpoch, a Java short"),
    (7, 0, 2**31, f"coordinator_epoch {2**31} does not fit the end transaction marker's coordinatorEpoch, a Java "
                  "int"),
    (7, 0, -(2**31) - 1, f"coordinator_epoch {-(2**31) - 1} does not fit the end transaction marker's "
                         "coordinatorEpoch, a Java int"),
])
def test_end_transaction_marker_rejects_fields_past_their_java_type(impl: ModuleType, producer_id: int,
                                                                    producer_epoch: int, coordinator_epoch: int,
                                                                    message: str) -> None:
    marker = EndTransactionMarker(ControlRecordType.COMMIT, coordinator_epoch)
    with pytest.raises(IllegalArgumentError, match=f"^{message}"):
        MemoryRecords.with_end_transaction_marker(producer_id, producer_epoch, marker, timestamp=1)


def test_end_transaction_marker_at_its_java_edges(impl: ModuleType) -> None:
    for epoch in (2**31 - 1, -(2**31)):
        built = MemoryRecords.with_end_transaction_marker(LONG_MAX, 2**15 - 1,
                                                          EndTransactionMarker(ControlRecordType.ABORT, epoch),
                                                          timestamp=1)
        [record] = built.records()
        assert EndTransactionMarker.deserialize(record.key, record.value).coordinator_epoch == epoch


def test_builder_names_a_field_that_is_not_an_integer(impl: ModuleType) -> None:
    with pytest.raises(TypeError, match="producer_epoch must be an integer, not float"):
        MemoryRecords.with_records(RECORDS, producer_id=7, producer_epoch=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="coordinator_epoch must be an integer, not str"):
        EndTransactionMarker(ControlRecordType.COMMIT, "5").record_value()  # type: ignore[arg-type]
    # numpy's integers are integers
    built = MemoryRecords.with_records(RECORDS, producer_id=np.int64(7), producer_epoch=np.int16(3),
                                       base_sequence=np.int32(0))
    assert next(built.batches()).producer_epoch == 3


@pytest.mark.parametrize("magic", [1, 2])
def test_in_place_header_setters_reject_values_past_their_java_type(impl: ModuleType, magic: int) -> None:
    """The setters the validator uses on a request's batches write the same fields."""
    records = MemoryRecords(bytearray(MemoryRecords.with_records(RECORDS, magic=magic, compression="gzip").buffer))
    [batch] = records.batches()
    with pytest.raises(IllegalArgumentError, match=r"does not fit .*a Java long"):
        batch.set_last_offset(2**63)
    with pytest.raises(IllegalArgumentError, match=f"^max_timestamp {2**63} does not fit"):
        batch.set_max_timestamp(TimestampType.CREATE_TIME, 2**63)
    if magic == 2:
        with pytest.raises(IllegalArgumentError, match=f"^partition_leader_epoch {2**31} does not fit the batch "
                                                       "header's partitionLeaderEpoch"):
            batch.set_partition_leader_epoch(2**31)
    assert [r.offset for r in records.records()] == [0, 1, 2]  # nothing written
