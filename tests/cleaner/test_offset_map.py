"""SkimpyOffsetMap and its kernels against Kafka's OffsetMapTest (spec §4.1, §7.3).

Ports ``storage/src/test/java/org/apache/kafka/storage/internals/log/OffsetMapTest.java`` (Kafka trunk; the
first three cases are also ``core/src/test/scala/unit/kafka/log/OffsetMapTest.scala`` in 3.8.0 and 0.8.2) with
its values: testBasicValidation (10/100/1000/5000 items in ``items * 48`` bytes), testClear, testGetWhenFull,
testUpdateLatestOffset, testLatestOffset and testUtilization (4096 bytes, keys from "37").  Then what the port
adds: the probe sequence against the spec's test vectors and a model of Java's ``positionOf``, the MD5 kernel
against hashlib, the two kernel twins writing byte-identical tables, the full-map refusal, the collision rate,
and the batch kernels (``put_records``, ``latest_codes``) against a model that calls ``put``/``get`` one
record at a time.

Every test that touches a kernel takes ``impl`` and runs once per twin.
"""

from __future__ import annotations

import hashlib
import math
import random
import struct
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog import MemoryRecords, _impl
from kafkalog._common import RecordFate
from kafkalog.cleaner.offset_map import SkimpyOffsetMap
from kafkalog.errors import IllegalArgumentError

MEMORY_SIZE = 4096
INT_MIN = -(2**31)


def key(n: int) -> bytes:
    """Kafka's ``key(i)``: the decimal digits of ``i`` as bytes."""
    return str(n).encode()


def fill_from_37(offset_map: SkimpyOffsetMap) -> int:
    """Kafka's loop ``i = 37; while (map.size() < map.slots()) { map.put(key(i), i); i++; }``; returns
    ``i``."""
    i = 37
    while offset_map.size < offset_map.slots:
        offset_map.put(key(i), i)
        i += 1
    return i


# -- Kafka's OffsetMapTest --------------------------------------------------------------------------------


@pytest.mark.parametrize("items", [10, 100, 1000, 5000])
def test_basic_validation(impl: ModuleType, items: int) -> None:
    offset_map = SkimpyOffsetMap(items * 48)
    assert offset_map.slots == items * 2
    for i in range(items):
        offset_map.put(key(i), i)
    for i in range(items):
        assert offset_map.get(key(i)) == i
    assert offset_map.size == items
    assert offset_map.latest_offset == items - 1


@pytest.mark.parametrize("entries", [0, 3, 2_000])
def test_clear_a_large_map_with_few_or_many_entries(impl: ModuleType, entries: int) -> None:
    """clear() replaces the table of a map with few entries for its size and zeroes a fuller one in place:
    either way the map is empty, and fills again as a new one does."""
    offset_map = SkimpyOffsetMap(1 << 20)  # 256 pages: a fresh table below 32 entries, zeroed in place above
    for i in range(entries):
        offset_map.put(key(i), i)
    table = offset_map.table
    offset_map.clear()
    assert (offset_map.table is table) == (entries == 0 or entries >= 32)
    assert not offset_map.table.any()
    assert (offset_map.size, offset_map.latest_offset, offset_map.lookups, offset_map.probes) == (0, -1, 0, 0)
    assert all(offset_map.get(key(i)) == -1 for i in range(entries))
    offset_map.put(key(1), 7)
    assert (offset_map.get(key(1)), offset_map.size) == (7, 1)


def test_clear(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    for i in range(10):
        offset_map.put(key(i), i)
    for i in range(10):
        assert offset_map.get(key(i)) == i
    offset_map.clear()
    for i in range(10):
        assert offset_map.get(key(i)) == -1
    assert offset_map.size == 0
    assert offset_map.latest_offset == -1
    assert not offset_map.table.any()
    # clear resets the counters too; the ten gets after it were counted afresh
    assert offset_map.lookups == 10


def test_get_when_full(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    i = fill_from_37(offset_map)
    assert offset_map.slots == 170
    assert i == 37 + 170
    # an absent key in a full map: the probing stops (KAFKA-3682) after slots + 12 attempts
    probes_before = offset_map.probes
    assert offset_map.get(key(i)) == -1
    assert offset_map.probes - probes_before == offset_map.slots + 12
    assert offset_map.get(key(i - 1)) == i - 1


def test_update_latest_offset(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    i = fill_from_37(offset_map)
    last_offsets = 40
    assert offset_map.get(key(i - 1)) == i - 1
    offset_map.update_latest_offset(last_offsets)
    assert offset_map.latest_offset == last_offsets
    assert offset_map.get(key(last_offsets)) == last_offsets


def test_latest_offset(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    assert offset_map.latest_offset == -1
    i = fill_from_37(offset_map)
    assert offset_map.latest_offset == i - 1


def test_utilization(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    i = 37
    assert offset_map.utilization == 0.0
    while offset_map.size < offset_map.slots:
        offset_map.put(key(i), i)
        assert offset_map.utilization == offset_map.size / offset_map.slots
        i += 1
    assert offset_map.utilization == 1.0


# -- the probe sequence -----------------------------------------------------------------------------------


def java_position_of(digest: bytes, attempt: int, slots: int) -> int:
    """Java's ``positionOf``, written from the spec: an int read big-endian at min(attempt, 12), plus
    max(0, attempt - 12), wrapped as a Java int; ``Utils.abs`` (MIN_VALUE -> 0) modulo slots, times 24."""
    window = min(attempt, 12)
    probe = struct.unpack_from(">i", digest, window)[0] + max(0, attempt - 12)
    probe = (probe + 2**31) % 2**32 - 2**31
    magnitude = 0 if probe == INT_MIN else abs(probe)
    return (magnitude % slots) * 24


def test_probe_test_vectors(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    assert offset_map.slots == 170
    md5_0 = impl.md5(b"0")
    md5_1 = impl.md5(b"1")
    assert md5_0.hex() == "cfcd208495d565ef66e7dff9f98764da"
    assert md5_1.hex() == "c4ca4238a0b923820dcc509a6f75849b"
    assert [offset_map.position_of(md5_0, a) for a in range(4)] == [480, 3912, 2424, 24]
    assert [offset_map.position_of(md5_1, a) for a in range(4)] == [1824, 2688, 3048, 264]
    assert offset_map.probes == 8  # every computed position counts a probe


def test_probe_sequence_matches_java_model(impl: ModuleType) -> None:
    rng = random.Random(4682)
    digests = [rng.randbytes(16) for _ in range(200)]
    # the last window at Integer.MIN_VALUE (abs gives 0) and just around it, and a negative last window
    # (linear probing walks down), and the largest positive one (the + attempt wraps to negative)
    digests += [
        bytes(12) + b"\x80\x00\x00\x00",
        bytes(12) + b"\x80\x00\x00\x01",
        bytes(12) + b"\xff\xff\xff\xfe",
        bytes(12) + b"\x7f\xff\xff\xff",
        b"\x80\x00\x00\x00" * 4,
    ]
    for slots in (1, 2, 3, 170, 1000, 2**31 // 24):
        for digest in digests:
            for attempt in (*range(20), 1000, 2**31 - 1):
                expected = java_position_of(digest, attempt, slots)
                assert impl.offset_map_position_of(digest, attempt, slots) == expected, (
                    digest.hex(),
                    attempt,
                )


def test_linear_probing_walks_down_from_a_negative_last_window(impl: ModuleType) -> None:
    # window 12 = -5: |-5 + 1| = 4, |-5 + 2| = 3, ... then past zero it walks up again
    digest = bytes(12) + struct.pack(">i", -5)
    positions = [impl.offset_map_position_of(digest, a, 100) // 24 for a in range(12, 20)]
    assert positions == [5, 4, 3, 2, 1, 0, 1, 2]
    # the window at Integer.MIN_VALUE lands on slot 0; one more attempt is -(2^31 - 1)
    digest = bytes(12) + b"\x80\x00\x00\x00"
    assert impl.offset_map_position_of(digest, 12, 1000) == 0
    assert impl.offset_map_position_of(digest, 13, 1000) == ((2**31 - 1) % 1000) * 24


def test_position_of_rejects_bad_arguments(impl: ModuleType) -> None:
    with pytest.raises(ValueError):
        impl.offset_map_position_of(bytes(15), 0, 10)
    with pytest.raises(ValueError):
        impl.offset_map_position_of(bytes(16), 0, 0)
    with pytest.raises(ValueError):
        impl.offset_map_position_of(bytes(16), -1, 10)


# -- MD5 ----------------------------------------------------------------------------------------------------


def test_md5_matches_hashlib(impl: ModuleType) -> None:
    rng = random.Random(5)
    data = rng.randbytes(300)
    for n in range(301):
        assert impl.md5(data[:n]) == hashlib.md5(data[:n]).digest(), n
    for n in (0, 1, 55, 56, 63, 64, 65, 119, 120, 4096, 100_003):
        blob = rng.randbytes(n)
        assert impl.md5(blob) == hashlib.md5(blob).digest(), n
        assert impl.md5(bytearray(blob)) == hashlib.md5(blob).digest()
        assert impl.md5(memoryview(blob)) == hashlib.md5(blob).digest()
    # a slice of a larger buffer, as the kernels hash keys in place
    view = memoryview(data)[17:250]
    assert impl.md5(view) == hashlib.md5(data[17:250]).digest()


def test_map_keys_by_md5(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    offset_map.put(b"0", 77)
    position = java_position_of(hashlib.md5(b"0").digest(), 0, 170)
    assert position == 480
    entry = bytes(offset_map.table[position : position + 24])
    assert entry == hashlib.md5(b"0").digest() + struct.pack(">q", 77)
    assert offset_map.is_empty(position) is False
    assert offset_map.is_empty(0) is True
    # every other entry is zero
    assert int(np.count_nonzero(offset_map.table)) == int(np.count_nonzero(np.frombuffer(entry, np.uint8)))


# -- the two twins build the same table ---------------------------------------------------------------------


def _random_puts(seed: int, n: int, distinct: int) -> list[tuple[bytes, int]]:
    rng = random.Random(seed)
    keys = [rng.randbytes(rng.randrange(0, 40)) for _ in range(distinct)]
    return [(rng.choice(keys), offset) for offset in range(n)]


def test_twins_write_identical_tables() -> None:
    twins = _impl.both()
    if "cython" not in twins:
        pytest.skip("kafkalog._core is not built")
    puts = _random_puts(17, 3000, 700)
    tables = {}
    for name in ("python", "cython"):
        with _impl.using(name):
            offset_map = SkimpyOffsetMap(1000 * 24)
            for k, offset in puts:
                offset_map.put(k, offset)
            found = [offset_map.get(k) for k, _ in puts]
            tables[name] = (
                bytes(offset_map.table),
                offset_map.size,
                offset_map.lookups,
                offset_map.probes,
                offset_map.latest_offset,
                found,
            )
    assert tables["python"] == tables["cython"]
    # and both agree with a dict: the last offset put for every key
    last: dict[bytes, int] = {}
    for k, offset in puts:
        last[k] = offset
    assert tables["python"][5] == [last[k] for k, _ in puts]
    assert tables["python"][1] == len(last)


def test_overwrite_keeps_the_entry(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    offset_map.put(b"k", 1)
    table = bytes(offset_map.table)
    offset_map.put(b"k", 2)
    assert offset_map.size == 1
    assert offset_map.get(b"k") == 2
    assert offset_map.latest_offset == 2
    # only the offset's last byte changed (1 -> 2, big-endian)
    changed = [i for i in range(MEMORY_SIZE) if table[i] != offset_map.table[i]]
    assert len(changed) == 1
    assert (changed[0] + 1) % 24 == 0


# -- a full map, the counters ----------------------------------------------------------------------------


def test_put_on_a_full_map_is_refused_even_for_a_key_it_holds(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(3 * 24)
    for i in range(3):
        offset_map.put(key(i), i)
    table = bytes(offset_map.table)
    counters = (offset_map.lookups, offset_map.probes, offset_map.latest_offset)
    with pytest.raises(IllegalArgumentError):
        offset_map.put(key(3), 3)
    with pytest.raises(IllegalArgumentError):
        offset_map.put(key(1), 10)  # Kafka checks entries >= slots before looking the key up
    assert bytes(offset_map.table) == table
    assert (offset_map.lookups, offset_map.probes, offset_map.latest_offset) == counters
    assert offset_map.get(key(1)) == 1
    assert offset_map.get(key(3)) == -1


def test_constructor_limits(impl: ModuleType) -> None:
    assert SkimpyOffsetMap(24).slots == 1
    assert SkimpyOffsetMap(47).slots == 1
    assert SkimpyOffsetMap(4000).slots == 166
    with pytest.raises(IllegalArgumentError):
        SkimpyOffsetMap(23)
    with pytest.raises(IllegalArgumentError):
        SkimpyOffsetMap(4096, "SHA-256")
    assert SkimpyOffsetMap(4096, "md5").hash_algorithm == "MD5"


def test_collision_rate_before_any_lookup_is_nan(impl: ModuleType) -> None:
    """Kafka's ``collisionRate`` is ``(probes - lookups) / (double) lookups``: Java's ``0 / 0.0``, NaN, for a new
    map and again after ``clear`` (which resets both counters); a probe counted with no lookup (``positionOf``
    alone) gives ``x / 0.0``, Infinity."""
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    assert (offset_map.lookups, offset_map.probes) == (0, 0)
    assert math.isnan(offset_map.collision_rate)
    offset_map.put(key(37), 37)
    assert offset_map.collision_rate == 0.0
    offset_map.clear()
    assert math.isnan(offset_map.collision_rate)
    offset_map.position_of(hashlib.md5(key(37)).digest(), 0)
    assert offset_map.collision_rate == math.inf


def test_collision_rate(impl: ModuleType) -> None:
    offset_map = SkimpyOffsetMap(MEMORY_SIZE)
    # MD5("0") and MD5("1") land on different slots at the first attempt: no collision
    offset_map.put(b"0", 0)
    offset_map.put(b"1", 1)
    assert (offset_map.lookups, offset_map.probes) == (2, 2)
    assert offset_map.collision_rate == 0.0
    # a full map: the counters are Kafka's (each put and get one lookup, each computed position one probe)
    offset_map.clear()
    i = fill_from_37(offset_map)
    assert offset_map.lookups == 170
    assert offset_map.probes > 170
    assert offset_map.collision_rate == (offset_map.probes - offset_map.lookups) / offset_map.lookups
    for j in range(37, i):
        assert offset_map.get(key(j)) == j
    assert offset_map.lookups == 340
    assert offset_map.collision_rate == (offset_map.probes - 340) / 340
    assert offset_map.collision_rate > 0.5


def test_probe_counts_match_a_model(impl: ModuleType) -> None:
    """put/get probe counts equal those of a plain-Python model of Java's put/get loops."""
    slots = 50
    table: dict[int, tuple[bytes, int]] = {}

    def model_put(k: bytes, offset: int) -> int:
        digest = hashlib.md5(k).digest()
        attempt = 0
        while True:
            position = java_position_of(digest, attempt, slots)
            if position not in table or table[position][0] == digest:
                table[position] = (digest, offset)
                return attempt + 1
            attempt += 1

    def model_get(k: bytes) -> tuple[int, int]:
        digest = hashlib.md5(k).digest()
        for attempt in range(slots + 12):
            position = java_position_of(digest, attempt, slots)
            if position not in table:
                return -1, attempt + 1
            if table[position][0] == digest:
                return table[position][1], attempt + 1
        return -1, slots + 12

    offset_map = SkimpyOffsetMap(slots * 24)
    rng = random.Random(99)
    for offset in range(45):
        k = key(rng.randrange(60))
        probes = offset_map.probes
        expected_probes = model_put(k, offset)
        offset_map.put(k, offset)
        assert offset_map.probes - probes == expected_probes
    for n in range(120):
        probes = offset_map.probes
        expected, expected_probes = model_get(key(n))
        assert offset_map.get(key(n)) == expected
        assert offset_map.probes - probes == expected_probes
    assert offset_map.size == len(table)


# -- the batch kernels against put/get one record at a time ---------------------------------------------


def columns_of(records: MemoryRecords) -> list[Any]:
    return [batch.record_columns() for batch in records.batches()]


def model_put_records(
    offset_map: SkimpyOffsetMap, columns: Any, start_offset: int, max_entries: int
) -> tuple[int, bool]:
    """The loop ``put_records`` replaces: fullness checked before every put of a keyed record at or past
    ``start_offset``; returns (records processed, full)."""
    for i in range(len(columns)):
        offset = int(columns.records["offset"][i])
        k = columns.key(i)
        if k is None or offset < start_offset:
            continue
        if offset_map.size >= min(max_entries, offset_map.slots):
            return i, True
        offset_map.put(k, offset)
    return len(columns), False


def model_latest_codes(offset_map: SkimpyOffsetMap, columns: Any) -> list[int]:
    codes = []
    for i in range(len(columns)):
        offset = int(columns.records["offset"][i])
        k = columns.key(i)
        if offset > offset_map.latest_offset:
            codes.append(RecordFate.PAST_MAP)
        elif k is None:
            codes.append(RecordFate.NO_KEY)
        else:
            codes.append(RecordFate.LATEST if offset >= offset_map.get(k) else RecordFate.SUPERSEDED)
    return codes


def state(offset_map: SkimpyOffsetMap) -> tuple[Any, ...]:
    return (
        bytes(offset_map.table),
        offset_map.size,
        offset_map.lookups,
        offset_map.probes,
        offset_map.latest_offset,
    )


def record_sets(rng: random.Random) -> list[MemoryRecords]:
    """Batches of every kind a segment holds, with duplicate keys, keyless records and offset gaps."""

    def some(n: int) -> list[tuple[bytes | None, bytes | None, int]]:
        out: list[tuple[bytes | None, bytes | None, int]] = []
        for i in range(n):
            k = None if rng.random() < 0.15 else key(rng.randrange(40))
            v = None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 9))
            out.append((k, v, 1000 + i))
        return out

    sets = [
        MemoryRecords.with_records(some(30), base_offset=100),
        MemoryRecords.with_records(some(25), compression="gzip", base_offset=130),
        MemoryRecords.with_records(some(20), magic=1, compression="snappy", base_offset=155),
        MemoryRecords.with_records(some(10), magic=0, base_offset=175),
        MemoryRecords.with_records(some(10), magic=1, compression="lz4", base_offset=185),
        MemoryRecords.with_records(some(15), compression="zstd", base_offset=195),
    ]
    return sets


@pytest.mark.parametrize("start_offset", [0, 112, 160, 300])
@pytest.mark.parametrize("max_entries", [3, 20, 10_000])
def test_put_records_matches_put_one_at_a_time(impl: ModuleType, start_offset: int, max_entries: int) -> None:
    rng = random.Random(start_offset * 7 + max_entries)
    all_columns = [c for records in record_sets(rng) for c in columns_of(records)]
    batch_map = SkimpyOffsetMap(64 * 24)
    model_map = SkimpyOffsetMap(64 * 24)
    stopped = False
    for columns in all_columns:
        expected = model_put_records(model_map, columns, start_offset, max_entries)
        got = batch_map.put_records(columns.data, columns.records, start_offset, max_entries)
        assert got == expected
        assert state(batch_map) == state(model_map)
        if got[1]:
            stopped = True
            # the stop is before the record that found the map full, which is a keyed one past the start
            processed = got[0]
            assert columns.key(processed) is not None
            assert int(columns.records["offset"][processed]) >= start_offset
            assert batch_map.size == min(max_entries, batch_map.slots)
            break
    assert stopped == (max_entries < 40 and start_offset < 200)
    if start_offset == 300:
        assert batch_map.size == 0 and batch_map.latest_offset == -1 and batch_map.lookups == 0


def test_put_records_full_stop_reports_processed_and_latest(impl: ModuleType) -> None:
    records = MemoryRecords.with_records(
        [(b"a", b"1"), (None, b"2"), (b"b", b"3"), (b"a", b"4"), (None, b"5"), (b"c", b"6"), (b"d", b"7")],
        base_offset=10,
    )
    (columns,) = columns_of(records)
    offset_map = SkimpyOffsetMap(10 * 24)
    # room for two keys: a@10, b@12, a@13 (overwrite: but fullness is checked first, so it stops there)
    assert offset_map.put_records(columns.data, columns.records, 0, 2) == (3, True)
    assert offset_map.size == 2
    assert offset_map.latest_offset == 12
    assert offset_map.get(b"a") == 10
    offset_map.clear()
    # room for three: a@10, b@12, a@13, then c@15 fills it, and d finds it full
    assert offset_map.put_records(columns.data, columns.records, 0, 3) == (6, True)
    assert offset_map.latest_offset == 15
    assert offset_map.get(b"a") == 13
    offset_map.clear()
    # from offset 13: a@13, c@15, d@16; keyless and earlier records are skipped
    assert offset_map.put_records(columns.data, columns.records, 13, 100) == (7, False)
    assert (offset_map.size, offset_map.latest_offset, offset_map.get(b"b")) == (3, 16, -1)
    # nothing at or past the start: the latest offset is left alone
    offset_map.update_latest_offset(99)
    assert offset_map.put_records(columns.data, columns.records, 50, 100) == (7, False)
    assert offset_map.latest_offset == 99
    # max_entries above the slots is capped at the slots: a@10, b@12, then a@13 finds two of two used
    small = SkimpyOffsetMap(2 * 24)
    assert small.put_records(columns.data, columns.records, 0, 1000) == (3, True)
    assert small.size == 2


def test_latest_codes_match_get_one_at_a_time(impl: ModuleType) -> None:
    rng = random.Random(1234)
    sets = record_sets(rng)
    all_columns = [c for records in sets for c in columns_of(records)]
    batch_map = SkimpyOffsetMap(64 * 24)
    model_map = SkimpyOffsetMap(64 * 24)
    # map the first part of the records, so some records are past the mapped range
    for columns in all_columns[:3]:
        batch_map.put_records(columns.data, columns.records, 0, 10_000)
        model_put_records(model_map, columns, 0, 10_000)
    assert state(batch_map) == state(model_map)
    seen = set()
    for columns in all_columns:
        expected = model_latest_codes(model_map, columns)
        got = batch_map.latest_codes(columns.data, columns.records)
        assert got.dtype == np.int8
        assert got.tolist() == expected
        assert state(batch_map) == state(model_map)
        seen.update(expected)
    assert seen == set(RecordFate)


def test_latest_codes_values(impl: ModuleType) -> None:
    records = MemoryRecords.with_records(
        [(b"a", b"1"), (None, b"2"), (b"b", None), (b"a", b"4"), (b"c", b"5")], base_offset=0
    )
    (columns,) = columns_of(records)
    offset_map = SkimpyOffsetMap(10 * 24)
    offset_map.put(b"a", 3)
    offset_map.put(b"b", 2)
    offset_map.update_latest_offset(3)
    lookups = offset_map.lookups
    codes = offset_map.latest_codes(columns.data, columns.records)
    # a@0 superseded, keyless, b@2 latest (a tombstone: the map does not judge values), a@3 latest, c@4 past
    assert codes.tolist() == [RecordFate.SUPERSEDED, RecordFate.NO_KEY, RecordFate.LATEST, RecordFate.LATEST,
                              RecordFate.PAST_MAP]
    assert offset_map.lookups - lookups == 3  # only keyed records inside the mapped range are looked up


def test_batch_kernels_check_key_positions(impl: ModuleType) -> None:
    (columns,) = columns_of(MemoryRecords.with_records([(b"key", b"value")]))
    rows = columns.records.copy()
    rows["key_pos"] = len(columns.data) - 1
    offset_map = SkimpyOffsetMap(10 * 24)
    with pytest.raises(ValueError):
        offset_map.put_records(columns.data, rows, 0, 10)
    with pytest.raises(ValueError):
        offset_map.latest_codes(columns.data, rows)
    assert offset_map.size == 0
    with pytest.raises(ValueError):
        impl.offset_map_put(np.zeros(23, dtype=np.uint8), 1, b"k", 0)  # one slot needs 24 bytes
