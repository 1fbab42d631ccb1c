"""The record layer against the facts of Kafka's formats (spec §1): exact bytes, builder semantics,
the offset and timestamp rules of legacy wrappers, v2 producer and control fields, and the columns
the record decode produces.  Every test runs on both kernel twins through ``impl``.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from types import ModuleType

import numpy as np
import pytest

from kafkalog import (
    CompressionType,
    ControlRecordType,
    CorruptRecordError,
    EndTransactionMarker,
    InvalidRecordError,
    MemoryRecords,
    TimestampType,
)
from kafkalog.errors import IllegalStateError
from kafkalog.record import DefaultRecordBatch, LegacyRecordBatch
from kafkalog.record.batch import write_empty_header
from kafkalog.record.legacy import LegacyRecord, legacy_entry

# spec §1.8, cross-checked there against kafka-python 2.0.2.
V0_KV = bytes.fromhex("0000000000000000" "00000010" "1fecd70a" "00" "00" "00000001" "6b" "00000001" "76")
V1_KV = bytes.fromhex(
    "0000000000000000" "00000018" "e4e321bc" "01" "00" "00000000000003e8" "00000001" "6b" "00000001" "76"
)
V2_EXAMPLE = bytes.fromhex(
    "0000000000000000" "00000049" "00000000" "02" "19063059" "0000" "00000001"
    "00000000000003e8" "00000000000003e9" "ffffffffffffffff" "ffff" "ffffffff" "00000002"
    "14" "00" "00" "00" "04" "6b30" "04" "7630" "00"
    "18" "00" "02" "02" "04" "6b31" "01" "02" "02" "68" "02" "78"
)


def test_crc_check_values(impl: ModuleType) -> None:
    assert impl.crc32c(b"123456789") == 0xE3069283
    assert impl.crc32(b"123456789") == 0xCBF43926
    assert impl.crc32c(b"") == 0
    data = bytes(range(256)) * 50
    assert impl.crc32c(data[1000:], impl.crc32c(data[:1000])) == impl.crc32c(data)
    assert impl.crc32(data) == zlib.crc32(data)


def test_v0_and_v1_bytes_match_the_spec(impl: ModuleType) -> None:
    assert MemoryRecords.with_records([(b"k", b"v")], magic=0).buffer == V0_KV
    assert MemoryRecords.with_records([(b"k", b"v", 1000)], magic=1).buffer == V1_KV


def test_v2_bytes_match_the_spec(impl: ModuleType) -> None:
    built = MemoryRecords.with_records(
        [(b"k0", b"v0", 1000), (b"k1", None, 1001, [("h", b"x")])], partition_leader_epoch=0
    )
    assert built.buffer == V2_EXAMPLE


def test_v2_example_decodes_field_by_field(impl: ModuleType) -> None:
    (batch,) = MemoryRecords(V2_EXAMPLE).batches()
    assert isinstance(batch, DefaultRecordBatch)
    assert (batch.base_offset, batch.last_offset, batch.count, batch.size_in_bytes) == (0, 1, 2, 85)
    assert (batch.magic, batch.crc, batch.partition_leader_epoch) == (2, 419835993, 0)
    assert batch.compression is CompressionType.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert (batch.base_timestamp, batch.max_timestamp) == (1000, 1001)
    producer = (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence)
    assert producer == (-1, -1, -1, -1)
    assert not batch.is_transactional and not batch.is_control and batch.delete_horizon_ms is None
    assert batch.is_valid()
    assert [r.as_tuple() for r in batch.records()] == [
        (0, 1000, b"k0", b"v0", []),
        (1, 1001, b"k1", None, [("h", b"x")]),
    ]


def test_record_columns_point_at_the_bytes(impl: ModuleType) -> None:
    (batch,) = MemoryRecords(V2_EXAMPLE).batches()
    cols = batch.record_columns()
    assert cols.records["offset"].tolist() == [0, 1]
    assert cols.records["timestamp"].tolist() == [1000, 1001]
    assert cols.records["value_len"].tolist() == [2, -1]
    assert [cols.key(0), cols.value(0), cols.key(1), cols.value(1)] == [b"k0", b"v0", b"k1", None]
    assert cols.records["header_count"].tolist() == [0, 1]
    h = cols.headers[int(cols.records["header_index"][1])]
    assert bytes(cols.data[int(h["key_pos"]):int(h["key_pos"]) + int(h["key_len"])]) == b"h"
    assert bytes(cols.data[int(h["value_pos"]):int(h["value_pos"]) + int(h["value_len"])]) == b"x"


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_v2_round_trip_every_codec(impl: ModuleType, codec: str) -> None:
    records = [
        (b"key-%d" % i, (b"value-%d " % i) * (i % 7), 1_700_000_000_000 + 3 * i, [("n", b"%d" % i)])
        for i in range(50)
    ]
    records.append((None, None, 1_700_000_000_500, [("null", None)]))
    built = MemoryRecords.with_records(records, compression=codec, base_offset=1000)
    (batch,) = built.batches()
    assert batch.compression.kafka_name == codec
    assert batch.is_valid()
    assert (batch.base_offset, batch.last_offset, batch.count) == (1000, 1050, 51)
    assert batch.max_timestamp == max(r[2] for r in records)
    got = [r.as_tuple() for r in batch.records()]
    assert got == [(1000 + i, r[2], r[0], r[1], list(r[3])) for i, r in enumerate(records)]
    assert batch.record_columns().records["offset"].tolist() == list(range(1000, 1051))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_legacy_round_trip(impl: ModuleType, magic: int, codec: str) -> None:
    records = [(b"k%d" % i if i % 4 else None, b"v" * i if i % 5 else None, 5000 + i) for i in range(20)]
    built = MemoryRecords.with_records(records, magic=magic, compression=codec, base_offset=70)
    batches = list(built.batches())
    assert all(isinstance(b, LegacyRecordBatch) and b.is_valid() for b in batches)
    assert len(batches) == (20 if codec == "none" else 1)
    expected_ts = [5000 + i if magic == 1 else -1 for i in range(20)]
    got = [r.as_tuple() for r in built.records()]
    assert got == [(70 + i, expected_ts[i], r[0], r[1], []) for i, r in enumerate(records)]
    if codec != "none":
        (wrapper,) = batches
        assert wrapper.last_offset == 89 and wrapper.base_offset == 70 and wrapper.count == 20
        assert wrapper.max_timestamp == (5019 if magic == 1 else -1)


def _inner_offsets(wrapper: bytes, magic: int) -> list[int]:
    """The offsets written inside a gzip wrapper, read with zlib and struct only."""
    size = struct.unpack_from(">i", wrapper, 8)[0]
    key_size_at = 12 + (14 if magic == 1 else 6)  # frame, crc, magic, attributes[, timestamp]
    value_len_at = key_size_at + 4  # the key is null: its size -1 is all there is of it
    value_len = struct.unpack_from(">i", wrapper, value_len_at)[0]
    assert value_len_at + 4 + value_len == 12 + size
    inner = zlib.decompress(wrapper[value_len_at + 4:], 31)
    offsets, pos = [], 0
    while pos < len(inner):
        offset, inner_size = struct.unpack_from(">qi", inner, pos)
        offsets.append(offset)
        pos += 12 + inner_size
    return offsets


def test_wrapper_inner_offsets_are_absolute_in_v0_and_relative_in_v1(impl: ModuleType) -> None:
    records = [(b"k", b"v%d" % i, 10 + i) for i in range(4)]
    v0 = bytes(MemoryRecords.with_records(records, magic=0, compression="gzip", base_offset=500).buffer)
    v1 = bytes(MemoryRecords.with_records(records, magic=1, compression="gzip", base_offset=500).buffer)
    assert struct.unpack_from(">q", v0)[0] == 503 and struct.unpack_from(">q", v1)[0] == 503
    assert _inner_offsets(v0, 0) == [500, 501, 502, 503]
    assert _inner_offsets(v1, 1) == [0, 1, 2, 3]


def test_v1_wrapper_offset_zero_keeps_inner_offsets(impl: ModuleType) -> None:
    # Some librdkafka versions wrote wrapper offset 0; Kafka then takes inner offsets as given.
    built = bytearray(MemoryRecords.with_records([(b"a", b"1", 1), (b"b", b"2", 2)], magic=1,
                                                 compression="gzip", base_offset=0).buffer)
    assert struct.unpack_from(">q", built)[0] == 1
    struct.pack_into(">q", built, 0, 0)  # the frame offset is outside the CRC
    assert [r.offset for r in MemoryRecords(bytes(built)).records()] == [0, 1]


def test_v1_wrapper_offset_below_last_inner_is_invalid(impl: ModuleType) -> None:
    built = bytearray(MemoryRecords.with_records([(b"a", b"1", 1), (b"b", b"2", 2), (b"c", b"3", 3)],
                                                 magic=1, compression="gzip").buffer)
    struct.pack_into(">q", built, 0, 1)  # last inner relative offset is 2
    with pytest.raises(InvalidRecordError, match="less than the last inner message offset"):
        list(MemoryRecords(bytes(built)).records())


def test_log_append_time(impl: ModuleType) -> None:
    records = [(b"k", b"v%d" % i, 100 + i) for i in range(3)]
    for magic, codec in ((1, "gzip"), (1, "none"), (2, "none"), (2, "lz4")):
        built = MemoryRecords.with_records(records, magic=magic, compression=codec,
                                           timestamp_type="LogAppendTime", log_append_time=99_000)
        batches = list(built.batches())
        assert all(b.timestamp_type is TimestampType.LOG_APPEND_TIME for b in batches)
        assert all(b.max_timestamp == 99_000 for b in batches)
        assert [r.timestamp for r in built.records()] == [99_000] * 3, (magic, codec)
    with pytest.raises(ValueError, match="log_append_time"):
        MemoryRecords.with_records(records, timestamp_type="LogAppendTime")
    with pytest.raises(ValueError, match="v0"):
        MemoryRecords.with_records(records, magic=0, timestamp_type="LogAppendTime", log_append_time=1)


def test_producer_fields_and_sequence_wrap(impl: ModuleType) -> None:
    built = MemoryRecords.with_records(
        [(b"k", b"v", 1)] * 5, producer_id=77, producer_epoch=3, base_sequence=0x7FFFFFFE,
        is_transactional=True, partition_leader_epoch=9,
    )
    (batch,) = built.batches()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 0x7FFFFFFE)
    assert batch.last_sequence == 2  # Kafka's incrementSequence wraps past Integer.MAX_VALUE to 0
    assert batch.is_transactional and batch.has_producer_id and batch.partition_leader_epoch == 9


def test_partition_leader_epoch_is_outside_the_crc(impl: ModuleType) -> None:
    data = bytearray(V2_EXAMPLE)
    struct.pack_into(">i", data, 12, 12345)
    (batch,) = MemoryRecords(bytes(data)).batches()
    assert batch.partition_leader_epoch == 12345 and batch.is_valid()


def test_delete_horizon_bit(impl: ModuleType) -> None:
    built = MemoryRecords.with_records([(b"k", None, 5000), (b"j", b"x", 5007)], delete_horizon_ms=86_400_000)
    (batch,) = built.batches()
    assert batch.has_delete_horizon and batch.delete_horizon_ms == 86_400_000
    assert batch.attributes & 0x40
    # Timestamps are deltas against the horizon, so the records keep their own.
    assert [r.timestamp for r in batch.records()] == [5000, 5007]
    assert batch.max_timestamp == 5007


def test_end_transaction_markers(impl: ModuleType) -> None:
    for kind in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        built = MemoryRecords.with_end_transaction_marker(
            42, 7, EndTransactionMarker(kind, 13), base_offset=88, timestamp=1234
        )
        (batch,) = built.batches()
        assert batch.is_control and batch.is_transactional and batch.count == 1
        assert (batch.producer_id, batch.producer_epoch) == (42, 7)
        assert batch.control_type is kind
        assert batch.end_transaction_marker() == EndTransactionMarker(kind, 13)
        (record,) = batch.records()
        assert record.key == struct.pack(">hh", 0, int(kind))
        assert record.value == struct.pack(">hi", 0, 13)


def test_a_control_type_prints_its_name(impl: ModuleType) -> None:
    """Issue 30: ``str(record.control_type)`` printed ``1`` where ``str(record.timestamp_type)`` prints
    ``CreateTime``.  It prints its name, as Kafka's ``ControlRecordType`` does, and stays the int it was."""
    built = MemoryRecords.with_end_transaction_marker(42, 7, EndTransactionMarker(ControlRecordType.COMMIT, 13),
                                                      timestamp=1234)
    (record,) = next(built.batches()).records()
    kind = record.control_type
    assert (str(kind), f"{kind}", format(kind), repr(kind)) == (
        "COMMIT", "COMMIT", "COMMIT", "<ControlRecordType.COMMIT: 1>")
    assert str(record.timestamp_type) == "CreateTime"
    assert kind == 1 and int(kind) == 1 and kind > ControlRecordType.ABORT and kind is ControlRecordType.COMMIT
    assert [str(t) for t in ControlRecordType] == ["UNKNOWN", "ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER",
                                                   "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"]


def test_kraft_control_types_are_types_not_errors(impl: ModuleType) -> None:
    for kind in (ControlRecordType.LEADER_CHANGE, ControlRecordType.SNAPSHOT_HEADER,
                 ControlRecordType.SNAPSHOT_FOOTER, ControlRecordType.KRAFT_VERSION,
                 ControlRecordType.KRAFT_VOTERS):
        (batch,) = MemoryRecords.with_control_record(kind, b"\x00\x01", timestamp=5).batches()
        assert batch.is_control and not batch.is_transactional
        assert batch.control_type is kind and batch.end_transaction_marker() is None
    assert ControlRecordType.parse(struct.pack(">hh", 0, 99)) is ControlRecordType.UNKNOWN
    assert ControlRecordType.parse(struct.pack(">hh", 3, 1)) is ControlRecordType.COMMIT
    with pytest.raises(InvalidRecordError):
        ControlRecordType.parse(b"\x00")
    with pytest.raises(InvalidRecordError):
        ControlRecordType.parse(struct.pack(">hh", -1, 1))


def test_mixed_magics_in_one_buffer_over_mmap(impl: ModuleType, tmp_path: pytest.TempPathFactory) -> None:
    parts = [
        MemoryRecords.with_records([(b"a", b"0")], magic=0, base_offset=0).buffer,
        MemoryRecords.with_records([(b"b", b"1", 11), (b"c", b"2", 12)], magic=1, compression="snappy",
                                   base_offset=1).buffer,
        MemoryRecords.with_records([(b"d", b"3", 13)], magic=2, compression="zstd", base_offset=3).buffer,
    ]
    path = tmp_path / "mixed.log"  # type: ignore[operator]
    path.write_bytes(b"".join(parts))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        log = MemoryRecords(mm)
        assert [b.magic for b in log.batches()] == [0, 1, 2]
        assert [(r.offset, r.value) for r in log.records()] == [(0, b"0"), (1, b"1"), (2, b"2"), (3, b"3")]
        scan = log.scan()
        assert scan.batches["magic"].tolist() == [0, 1, 2]
        assert scan.batches["last_offset"].tolist() == [0, 2, 3]
        assert scan.batches["valid"].tolist() == [1, 1, 1]
        assert scan.valid_bytes == len(mm)
        del log, scan
    # the mmap closed above: no kafkalog object kept a view of it


def test_scan_columns_for_legacy_entries(impl: ModuleType) -> None:
    data = legacy_entry(5, 1, 0x08, 777, b"k", b"v") + legacy_entry(6, 0, 0, -1, None, b"w")
    batches, stop, reason = impl.scan_batches(data)
    assert (stop, reason) == (len(data), 0)
    assert batches["base_offset"].tolist() == [5, 6]
    assert batches["max_timestamp"].tolist() == [777, -1]
    assert batches["record_count"].tolist() == [1, 1]
    assert batches["attributes"].tolist() == [8, 0]
    assert batches["size"].tolist() == [12 + 22 + 2, 12 + 14 + 1]


def test_scan_limits_and_ranges(impl: ModuleType) -> None:
    one = MemoryRecords.with_records([(b"k", b"v", 1)]).buffer
    data = one * 5
    batches, stop, reason = impl.scan_batches(data, max_batches=2)
    assert (len(batches), stop, reason) == (2, 2 * len(one), 6)
    batches, stop, reason = impl.scan_batches(data, len(one), 3 * len(one))
    assert batches["position"].tolist() == [len(one), 2 * len(one)] and stop == 3 * len(one)
    batches, stop, reason = impl.scan_batches(data + b"\x00" * 5)
    assert (len(batches), stop, reason) == (5, 5 * len(one), 1)  # PARTIAL: 5 bytes cannot hold a frame


def test_single_entry_magic_agrees_with_the_scan(impl: ModuleType) -> None:
    one = bytes(MemoryRecords.with_records([(b"k", b"v", 1)]).buffer)
    legacy = legacy_entry(5, 1, 0x08, 777, b"k", b"v")
    too_small_v2 = bytearray(one[:20])
    too_small_v2[8:12] = (20 - 12).to_bytes(4, "big")  # passes the 14-byte floor only if size >= 14
    bad_magic = bytearray(one)
    bad_magic[16] = 3
    cases = [one, legacy, b"", one * 2, one + b"\x00" * 5, one[:-1], bytes(bad_magic), bytes(too_small_v2),
             b"\x00" * 40]
    for data in cases:
        rows, stop, reason = impl.scan_batches(data, 0, -1, False, False)
        whole = len(rows) == 1 and (stop, reason) == (len(data), 0)
        assert impl.single_entry_magic(data) == (int(rows["magic"][0]) if whole else -1), data[:20]
    assert impl.single_entry_magic(one, len(one) - 12) == 2
    assert impl.single_entry_magic(one, len(one) - 13) == -1  # its size field is over the limit
    assert impl.single_entry_magic(memoryview(one)) == 2


def test_only_batch_is_the_one_batches_yields(impl: ModuleType) -> None:
    one = bytes(MemoryRecords.with_records([(b"k", b"v", 1)]).buffer)
    (batch,) = MemoryRecords(one).batches()
    only = MemoryRecords(one).only_batch()
    assert only is not None and (type(only), only.position, only.size_in_bytes, only.last_offset) == (
        type(batch), batch.position, batch.size_in_bytes, batch.last_offset)
    assert MemoryRecords(one * 2).only_batch() is None
    assert MemoryRecords(one[:-1]).only_batch() is None


def test_ensure_valid_names_both_crcs(impl: ModuleType) -> None:
    data = bytearray(V2_EXAMPLE)
    data[-1] ^= 0xFF
    (batch,) = MemoryRecords(bytes(data)).batches()
    assert not batch.is_valid()
    with pytest.raises(CorruptRecordError, match=r"stored crc = 419835993, computed crc = \d+") as info:
        batch.ensure_valid()
    assert info.value.position == 0


def test_timestamp_type_names() -> None:
    assert str(TimestampType.CREATE_TIME) == "CreateTime"
    assert TimestampType.of("LogAppendTime") is TimestampType.LOG_APPEND_TIME
    assert TimestampType.of(-1) is TimestampType.NO_TIMESTAMP_TYPE
    with pytest.raises(ValueError):
        TimestampType.of("Whenever")


def test_empty_buffer_and_empty_v2_batch(impl: ModuleType) -> None:
    assert list(MemoryRecords(b"").batches()) == []
    (batch,) = MemoryRecords.with_records([]).batches()
    assert (batch.count, batch.base_timestamp, batch.max_timestamp, batch.records()) == (0, -1, -1, [])
    assert batch.is_valid()


def test_records_from_either_twin_compare_equal() -> None:
    from kafkalog import _impl

    twins = _impl.both()
    made = {name: twin.Record(5, 6, b"k", None, [("h", b"x")]) for name, twin in twins.items()}
    for a in made.values():
        for b in made.values():
            assert a == b and hash(a) == hash(b)
    assert np.array([1]).dtype  # numpy imported for the column tests above


def test_error_in_a_compressed_batch_points_at_the_batch(impl: ModuleType) -> None:
    """A bad record inside a compressed batch is reported at the batch's position in the buffer, with
    the offset inside the decompressed stream in the message."""
    from kafkalog.record.compression import compress

    good = MemoryRecords.with_records([(b"a", b"1", 1)]).buffer
    records = impl.encode_v2_records([5], [b"k"], [b"v"], None, 5) + b"\x00\x00"  # 2 stray bytes
    batch = bytearray(MemoryRecords.with_records([(b"k", b"v", 5)], compression="gzip").buffer[:61])
    batch += compress("gzip", records, magic=2)
    struct.pack_into(">q", batch, 0, 1)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">I", batch, 17, impl.crc32c(bytes(batch[21:])))
    data = bytes(good) + bytes(batch)
    with pytest.raises(InvalidRecordError, match=r"records still remaining .*at byte \d+ of the decompressed "
                                                 r"records of the gzip batch") as info:
        list(MemoryRecords(data).records())
    assert info.value.position == len(good)


def test_records_yields_every_record_before_a_truncated_tail(impl: ModuleType) -> None:
    # Two v2 batches and a legacy one, then half of another batch: strict iteration hands out every
    # whole record first and raises only when it reaches the cut; by default (Kafka's
    # ByteBufferLogInputStream) iteration stops there quietly.
    first = MemoryRecords.with_records([(b"a", b"1", 1), (b"b", b"2", 2)], base_offset=0).buffer
    second = MemoryRecords.with_records([(b"c", b"3", 3)], base_offset=2).buffer
    legacy = MemoryRecords.with_records([(b"d", b"4", 4)], magic=1, base_offset=3).buffer
    cut = MemoryRecords.with_records([(b"e", b"5", 5)], base_offset=4).buffer
    records = MemoryRecords(bytes(first) + bytes(second) + bytes(legacy) + bytes(cut)[: len(cut) // 2])
    seen = []
    with pytest.raises(CorruptRecordError):
        for record in records.records(strict=True):
            seen.append(record.offset)
    assert seen == [0, 1, 2, 3]
    assert [r.value for r in records.records()] == [b"1", b"2", b"3", b"4"]
    lazy = records.records()  # nothing is read until the first record is asked for
    assert next(lazy).key == b"a"


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_chunk_kernels_walk_a_batch_a_few_records_at_a_time(impl: ModuleType, codec: str) -> None:
    """``decode_v2_records_chunk`` and ``decode_v2_record_objects_chunk`` read a batch's records a few at a
    call, each call starting where the last stopped with the records still left: the pieces put together
    are what one call decodes, and what follows the last record is checked by the call that reads it."""
    from kafkalog.record.compression import decompress

    records = [(f"k{i}".encode(), None if i % 5 == 0 else b"v" * i, 1_000 + i,
                [("h", b"x"), ("g", None)] if i % 3 == 0 else None) for i in range(23)]
    batch = next(MemoryRecords.with_records(records, compression=codec, base_offset=100).batches())
    data = bytes(batch.raw_bytes())
    section = data[61:] if codec == "none" else decompress(codec, data[61:], magic=2, max_size=1 << 20)
    args = (100, 1_000)
    whole, whole_headers = impl.decode_v2_records(section, 0, len(section), 23, *args)
    objects = impl.decode_v2_record_objects(section, 0, len(section), 23, *args)
    for size in (1, 4, 22, 23, 50):
        pieces, piece_objects, position, left = [], [], 0, 23
        while left:
            rows, headers, stop = impl.decode_v2_records_chunk(section, position, len(section), left, *args,
                                                               max_records=size)
            more, stop_too = impl.decode_v2_record_objects_chunk(section, position, len(section), left, *args,
                                                                 max_records=size)
            assert stop == stop_too
            assert len(rows) == len(more) == min(size, left)
            # Header rows are numbered from 0 in each piece.
            assert [headers[int(r["header_index"]):int(r["header_index"]) + int(r["header_count"])].tolist()
                    for r in rows] == [whole_headers[int(w["header_index"]):int(w["header_index"])
                                                     + int(w["header_count"])].tolist()
                                       for w in whole[23 - left:23 - left + len(rows)]]
            pieces.append(rows[["offset", "timestamp", "key_pos", "value_pos", "key_len", "value_len"]])
            piece_objects += more
            position, left = stop, left - len(rows)
        assert position == len(section)
        assert np.concatenate(pieces).tolist() == whole[["offset", "timestamp", "key_pos", "value_pos", "key_len",
                                                         "value_len"]].tolist()
        assert piece_objects == objects
    # The call that reads the last record finds the byte after it; the ones before do not look.
    padded = section + b"\x00"
    rows, _headers, stop = impl.decode_v2_records_chunk(padded, 0, len(padded), 23, *args, max_records=22)
    with pytest.raises(InvalidRecordError, match="records still remaining") as info:
        impl.decode_v2_records_chunk(padded, stop, len(padded), 1, *args, max_records=1)
    assert info.value.position == len(section)
    with pytest.raises(InvalidRecordError, match="records still remaining"):
        impl.decode_v2_record_objects_chunk(padded, stop, len(padded), 1, *args)


@pytest.mark.parametrize(("timestamp_type", "is_transactional", "is_control"), [
    (TimestampType.CREATE_TIME, False, False),
    (TimestampType.LOG_APPEND_TIME, True, False),
    (TimestampType.CREATE_TIME, True, True),
])
def test_write_empty_header(impl: ModuleType, timestamp_type: TimestampType, is_transactional: bool,
                            is_control: bool) -> None:
    """Kafka ``DefaultRecordBatch.writeEmptyHeader``: a 61-byte v2 header, no records, base timestamp -1, the
    given offsets, producer fields and max timestamp, and a CRC-32C over the attributes onwards."""
    data = write_empty_header(base_offset=10, last_offset=14, producer_id=7, producer_epoch=3, base_sequence=20,
                              partition_leader_epoch=5, timestamp_type=timestamp_type, timestamp=1234,
                              is_transactional=is_transactional, is_control=is_control)
    # The layout field by field, as Kafka writes it (the cleaner packed it this way before it had names).
    attributes = ((timestamp_type is TimestampType.LOG_APPEND_TIME) << 3 | is_transactional << 4
                  | is_control << 5)
    expected = bytearray(struct.pack(">qiibIhiqqqhii", 10, 49, 5, 2, 0, attributes, 4, -1, 1234, 7, 3, 20, 0))
    struct.pack_into(">I", expected, 17, impl.crc32c(bytes(expected[21:])))
    assert data == bytes(expected)
    (batch,) = MemoryRecords(data).batches()
    assert isinstance(batch, DefaultRecordBatch)
    assert batch.is_valid()
    assert (batch.base_offset, batch.last_offset, batch.max_timestamp) == (10, 14, 1234)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 3, 20)
    assert (batch.is_transactional, batch.is_control, batch.timestamp_type) == (is_transactional, is_control,
                                                                                timestamp_type)
    assert batch.records() == []
# ---------------------------------------------------------------------------------------------------------
# In-place header setters (Kafka: DefaultRecordBatch / AbstractLegacyRecordBatch setLastOffset,
# setPartitionLeaderEpoch, setMaxTimestamp), as the validator uses them


def _reread(buf: bytearray) -> list[DefaultRecordBatch | LegacyRecordBatch]:
    return list(MemoryRecords(bytes(buf)).batches())  # type: ignore[arg-type]


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_v2_setters_rewrite_the_header_and_keep_the_crc_valid(impl: ModuleType, codec: str) -> None:
    buf = bytearray(MemoryRecords.with_records([(b"k", b"a", 10), (b"k", b"b", 30)], compression=codec).buffer)
    batch = next(MemoryRecords(buf).batches())
    crc = batch.crc
    batch.set_last_offset(41)
    batch.set_partition_leader_epoch(7)
    assert batch.crc == crc  # neither field is under the CRC
    batch.set_max_timestamp(TimestampType.CREATE_TIME, 30)  # unchanged: nothing written
    assert batch.crc == crc
    batch.set_max_timestamp(TimestampType.LOG_APPEND_TIME, 99)
    (again,) = _reread(buf)
    assert (again.base_offset, again.last_offset, again.partition_leader_epoch) == (40, 41, 7)
    assert (again.timestamp_type, again.max_timestamp, again.crc) == (TimestampType.LOG_APPEND_TIME, 99, batch.crc)
    assert again.is_valid() and again.compression is CompressionType.of(codec)
    assert [r.timestamp for r in again.records()] == [99, 99]
    assert (batch.base_offset, batch.max_timestamp, batch.attributes) == (40, 99, again.attributes)


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_legacy_setters_rewrite_the_message_and_keep_the_crc_valid(impl: ModuleType, codec: str) -> None:
    buf = bytearray(MemoryRecords.with_records([(b"k", b"a", 10)], magic=1, compression=codec).buffer)
    batch = next(MemoryRecords(buf).batches())
    batch.set_last_offset(12)
    batch.set_max_timestamp(TimestampType.LOG_APPEND_TIME, 99)
    (again,) = _reread(buf)
    assert (again.last_offset, again.timestamp_type, again.max_timestamp) == (12, TimestampType.LOG_APPEND_TIME, 99)
    assert again.is_valid() and again.crc == batch.crc
    assert [(r.offset, r.timestamp) for r in batch.records()] == [(12, 99)]
    with pytest.raises(IllegalStateError, match="prior to 2 do not support partition leader epoch"):
        batch.set_partition_leader_epoch(1)
    v0 = next(MemoryRecords(bytearray(V0_KV)).batches())
    with pytest.raises(IllegalStateError, match="magic = 0"):
        v0.set_max_timestamp(TimestampType.CREATE_TIME, 5)


def test_legacy_record_view_of_a_message() -> None:
    """LegacyRecord (Kafka's ``LegacyRecord``, the validator's view of a v0/v1 message): its fields, its own
    size without the frame, its stored and computed CRC, and ``ensure_valid`` on a corrupt copy."""
    entry = legacy_entry(5, 1, 0, 1000, b"k", b"v")
    batch = next(iter(MemoryRecords(entry).batches()))
    assert isinstance(batch, LegacyRecordBatch)
    [record] = list(batch.legacy_records())
    assert isinstance(record, LegacyRecord)
    assert (record.offset, record.key, record.value, record.timestamp, record.is_compressed) == \
        (5, b"k", b"v", 1000, False)
    assert record.size_in_bytes == len(entry) - 12
    assert record.computed_crc() == record.crc == batch.crc
    record.ensure_valid()
    corrupt = bytearray(entry)
    corrupt[-1] ^= 0xFF
    corrupt_batch = next(iter(MemoryRecords(corrupt).batches()))
    assert isinstance(corrupt_batch, LegacyRecordBatch)
    [bad] = list(corrupt_batch.legacy_records())
    with pytest.raises(CorruptRecordError, match="Record is corrupt"):
        bad.ensure_valid()


# ---------------------------------------------------------------------------------------------------------
# A writable buffer for the setters: MemoryRecords.writable and RecordBatch.over


def test_writable_copies_only_a_read_only_buffer(tmp_path: pytest.TempPathFactory) -> None:
    data = MemoryRecords.with_records([(b"k", b"v", 10)], compression="lz4").buffer
    assert isinstance(data, bytes)
    path = tmp_path / "records.bin"  # type: ignore[operator]
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped, \
            open(path, "r+b") as g, mmap.mmap(g.fileno(), 0) as writable_map:
        owner = bytearray(data)
        read_only: list[object] = [data, memoryview(owner).toreadonly(), mapped]
        for buffer in read_only:
            records = MemoryRecords(buffer, max_batch_size=1000, max_decompressed_size=2000)
            copy = records.writable()
            assert copy is not records and type(copy.buffer) is bytearray and copy.buffer == data
            assert (copy.max_batch_size, copy.max_decompressed_size) == (1000, 2000)
            copy.buffer[0] = 0x7F  # the copy is the caller's no more
            assert bytes(records.buffer) == data
        for buffer in (owner, memoryview(owner), writable_map):
            records = MemoryRecords(buffer)
            assert records.writable() is records
        del records, copy  # no view of either mmap outlives it


@pytest.mark.parametrize(("magic", "codec"), [(2, "none"), (2, "zstd"), (1, "none"), (1, "gzip")])
def test_a_batch_over_a_copy_of_its_buffer(impl: ModuleType, magic: int, codec: str) -> None:
    """``over`` gives the batch as read from a copy of its buffer: every header field and the position (in its
    log, ``origin`` included) as the walk of the copy finds them, the records read from the copy, the setters
    writing the copy only."""
    data = MemoryRecords.with_records([(b"a", b"1", 10), (b"b", b"2", 20)], magic=magic, compression=codec,
                                      base_offset=3).buffer
    two = data + data
    batches = [type(b)(two, b._at, b.size_in_bytes, 999, 500) for b in MemoryRecords(two).batches()]
    copy = bytearray(two)
    moved = [batch.over(copy) for batch in batches]
    walked = [type(b)(copy, b._at, b.size_in_bytes, 999, 500) for b in MemoryRecords(copy).batches()]
    fields = ("position", "size_in_bytes", "base_offset", "last_offset", "max_timestamp", "crc", "attributes",
              "partition_leader_epoch", "magic", "timestamp_type", "_max_decompressed_size")
    for batch, over, again in zip(batches, moved, walked, strict=True):
        assert type(over) is type(batch) and over is not batch
        assert [getattr(over, f) for f in fields] == [getattr(again, f) for f in fields] == \
            [getattr(batch, f) for f in fields]
        assert over.records() == batch.records()
    moved[-1].set_last_offset(99)
    assert [b.last_offset for b in MemoryRecords(bytes(copy)).batches()] == [b.last_offset for b in batches[:-1]] + [99]
    assert two == data + data and batches[-1].last_offset == 4


def test_batch_facts_are_the_batches_facts(impl: ModuleType) -> None:
    """``MemoryRecords.batch_facts`` (what a segment's append indexes by, read by the scan kernel) gives each
    entry's max timestamp, last offset and size as :meth:`~MemoryRecords.batches`' objects do, over v0, v1
    (a compressed wrapper too) and v2 entries, one entry alone, and a partial tail; and raises what they raise
    on corrupt framing."""
    entries = [
        MemoryRecords.with_records([(b"a", b"1")], magic=0, base_offset=0).buffer,
        MemoryRecords.with_records([(b"b", b"2", 7)], magic=1, base_offset=1).buffer,
        MemoryRecords.with_records([(b"c", b"3", 8), (b"d", None, 9)], magic=1, compression="gzip",
                                   base_offset=2).buffer,
        MemoryRecords.with_records([(b"e", b"4", 30), (b"f", b"5", 20)], base_offset=4).buffer,
        MemoryRecords.with_records([(b"g", b"6", 5)], base_offset=6, timestamp_type="LogAppendTime",
                                   log_append_time=99).buffer,
    ]
    data = b"".join(bytes(e) for e in entries)
    for buf in (data, bytes(entries[3]), data + bytes(entries[3])[:20]):
        records = MemoryRecords(buf)
        assert list(records.batch_facts()) == [(b.max_timestamp, b.last_offset, b.size_in_bytes)
                                               for b in records.batches()]
    bad = bytearray(data)
    struct.pack_into(">i", bad, len(bytes(entries[0])) + 8, 3)  # the second entry's size below any overhead
    with pytest.raises(CorruptRecordError) as from_objects:
        list(MemoryRecords(bytes(bad)).batches())
    with pytest.raises(CorruptRecordError) as from_facts:
        list(MemoryRecords(bytes(bad)).batch_facts())
    assert str(from_facts.value) == str(from_objects.value)
