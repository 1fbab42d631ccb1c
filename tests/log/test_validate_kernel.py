"""The validator's per-record kernel, ``validate_v2_records``, on both twins: checked against the record decode
and Kafka's formulas as the validator applied them record by record (``validateKey``, ``validateTimestamp``,
``DefaultRecord.sizeInBytes`` from the decoded fields)."""

from __future__ import annotations

import struct
from types import ModuleType
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog._common import java_long
from kafkalog.errors import InvalidRecordError
from kafkalog.record import DefaultRecordBatch
from kafkalog.record.batch import RECORD_BATCH_OVERHEAD
from kafkalog.record.records_util import default_record_size_in_bytes

NOW = 1_700_000_000_000
LONG_MAX = (1 << 63) - 1


def _batch(records: list[Any], **kwargs: Any) -> tuple[bytes, DefaultRecordBatch]:
    data = bytes(MemoryRecords.with_records(records, **kwargs).buffer)
    batch = next(MemoryRecords(data).batches())
    assert isinstance(batch, DefaultRecordBatch)
    return data, batch


def _run(impl: ModuleType, data: bytes, batch: DefaultRecordBatch, *, before: int = LONG_MAX,
         after: int = LONG_MAX, compacted: bool = False, check_timestamps: bool = True) -> Any:
    return impl.validate_v2_records(
        data, RECORD_BATCH_OVERHEAD, len(data), batch.count, batch.base_offset, batch.base_timestamp, None,
        now=NOW, timestamp_before_max_ms=before, timestamp_after_max_ms=after, compacted=compacted,
        check_timestamps=check_timestamps)


def _oracle(batch: DefaultRecordBatch, *, before: int, after: int, compacted: bool,
            check_timestamps: bool) -> tuple[int, int, int, bool, list[tuple[int, int, int, int]]]:
    """What LogValidator's record loop found, one Record at a time."""
    records = batch.records(check_crcs=False)
    errors = []
    for i, r in enumerate(records):
        if compacted and r.key is None:
            errors.append((i, 1, r.timestamp, r.offset))
        elif check_timestamps and r.timestamp != -1:
            difference = java_long(NOW - r.timestamp)
            if difference > before or java_long(-difference) > after:
                errors.append((i, 2, r.timestamp, r.offset))
    size = sum(default_record_size_in_bytes(r.offset - batch.base_offset, r.timestamp - batch.base_timestamp,
                                            r.key, r.value, r.headers) for r in records)
    max_timestamp = max([-1, *(r.timestamp for r in records)])
    return len(records), max_timestamp, size, all(r.offset == i for i, r in enumerate(records)), errors


RECORDS = [
    (b"k0", b"v" * 200, NOW - 10),
    (None, b"tombstone-less", NOW + 5),
    (b"k2", None, -1),
    (b"k3", b"x" * 70_000, NOW - 3_600_001, [("h\u00e9", b"1"), ("n", None)]),
    (None, None, NOW + 7_200_000),
]


@pytest.mark.parametrize("compacted", [False, True])
@pytest.mark.parametrize(("before", "after"), [(LONG_MAX, LONG_MAX), (3_600_000, 3_600_000), (0, 0)])
@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_matches_the_record_loop(impl: ModuleType, compacted: bool, before: int, after: int,
                                 codec: str) -> None:
    data, batch = _batch(RECORDS, compression=codec)
    # A compressed batch is checked over its decompressed records, as the validator does.
    stream, start, end = batch._records_bytes()
    kernel = impl.validate_v2_records(
        stream, start, end, batch.count, batch.base_offset, batch.base_timestamp, None, now=NOW,
        timestamp_before_max_ms=before, timestamp_after_max_ms=after, compacted=compacted, check_timestamps=True)
    assert kernel == _oracle(batch, before=before, after=after, compacted=compacted, check_timestamps=True)
    if codec == "none":
        assert _run(impl, data, batch, before=before, after=after, compacted=compacted) == kernel


def test_no_timestamp_check_under_log_append_time(impl: ModuleType) -> None:
    data, batch = _batch(RECORDS)
    count, max_timestamp, _size, in_sequence, errors = _run(impl, data, batch, before=0, after=0,
                                                             check_timestamps=False)
    assert (count, max_timestamp, in_sequence, errors) == (5, NOW + 7_200_000, True, [])


def test_offsets_out_of_sequence(impl: ModuleType) -> None:
    data, batch = _batch([(b"a", b"1", NOW), (b"b", b"2", NOW)])
    assert _run(impl, data, batch)[3] is True
    # The same records under a base offset of 5: offsets 5, 6 are not the inner 0, 1 Kafka expects.
    moved = struct.pack(">q", 5) + data[8:]
    assert _run(impl, moved, next(MemoryRecords(moved).batches()))[3] is False  # type: ignore[arg-type]


def test_wrapped_offsets_are_sized_as_python_ints(impl: ModuleType) -> None:
    # Base offset Long.MAX_VALUE: the second record's offset wraps to Long.MIN_VALUE, and its delta from the
    # base, as the Record loop computed it, is far outside a long.
    data, _batch_read = _batch([(b"a", b"1", NOW), (b"b", b"2", -1)])
    moved = struct.pack(">q", LONG_MAX) + data[8:]
    batch = next(MemoryRecords(moved).batches())
    assert isinstance(batch, DefaultRecordBatch)
    result = _run(impl, moved, batch)
    assert result == _oracle(batch, before=LONG_MAX, after=LONG_MAX, compacted=False, check_timestamps=True)
    assert result[2] > len(moved) - RECORD_BATCH_OVERHEAD


def test_invalid_utf8_header_key_is_sized_as_its_text(impl: ModuleType) -> None:
    data, batch = _batch([(b"k", b"v", NOW, [("ab", b"")])])
    bad = data.replace(b"\x04ab", b"\x04\xff\xfe")  # the key's two bytes, not UTF-8
    bad_batch = next(MemoryRecords(bad).batches())
    assert isinstance(bad_batch, DefaultRecordBatch)
    result = _run(impl, bad, bad_batch)
    oracle = _oracle(bad_batch, before=LONG_MAX, after=LONG_MAX, compacted=False, check_timestamps=True)
    assert result == oracle
    assert result[2] != _run(impl, data, batch)[2]


def test_header_key_with_an_encoded_surrogate_is_sized_as_javas_text(impl: ModuleType) -> None:
    """Java (and the object decode, :mod:`kafkalog._java_utf8`) reads ``ED A0 80`` as one U+FFFD, three bytes
    again; Python's ``"replace"`` would make it three, nine bytes: the size follows the decode."""
    data, batch = _batch([(b"k", b"v", NOW, [("abc", b"")])])
    bad = data.replace(b"\x06abc", b"\x06\xed\xa0\x80")
    bad_batch = next(MemoryRecords(bad).batches())
    assert isinstance(bad_batch, DefaultRecordBatch)
    result = _run(impl, bad, bad_batch)
    assert result == _oracle(bad_batch, before=LONG_MAX, after=LONG_MAX, compacted=False, check_timestamps=True)
    assert result[2] == _run(impl, data, batch)[2]


def test_framing_errors_are_the_decoders(impl: ModuleType) -> None:
    data, _batch_read = _batch([(b"a", b"1", NOW), (b"b", b"2", NOW)])
    for cut in (data[:-1], data + b"\x00"):
        with pytest.raises(InvalidRecordError) as decoded:
            impl.decode_v2_records(cut, RECORD_BATCH_OVERHEAD, len(cut), 2, 0, NOW)
        with pytest.raises(InvalidRecordError) as checked:
            impl.validate_v2_records(cut, RECORD_BATCH_OVERHEAD, len(cut), 2, 0, NOW, now=NOW,
                                     timestamp_before_max_ms=0, timestamp_after_max_ms=0, compacted=True,
                                     check_timestamps=True)
        assert (str(checked.value), checked.value.position) == (str(decoded.value), decoded.value.position)


def test_empty_batch(impl: ModuleType) -> None:
    assert impl.validate_v2_records(b"", 0, 0, 0, 0, NOW, now=NOW, timestamp_before_max_ms=0,
                                    timestamp_after_max_ms=0, compacted=True,
                                    check_timestamps=True) == (0, -1, 0, True, [])
