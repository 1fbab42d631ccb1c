"""SkimpyOffsetMap's kernels in plain Python: the twin of ``_core_pyx/offset_map.pxi``.

Kafka: ``core/src/main/scala/kafka/log/OffsetMap.scala`` (0.10.1.1) and
``storage/src/main/java/org/apache/kafka/storage/internals/log/SkimpyOffsetMap.java`` (3.8.0), and the key
test of ``LogCleaner.scala``'s ``shouldRetainRecord`` (:func:`offset_map_latest_codes`).

The table is ``slots`` entries of 24 bytes: the MD5 of a key (16 bytes) and its offset (int64,
big-endian); an all-zero entry is empty.  The counters (lookups, probes) belong to the caller; the
kernels return what they add.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from .._common import RecordFate
from ._ints import _MASK32, _U32

_MAP_HASH_SIZE = 16
_MAP_ENTRY_SIZE = 24
_MAP_OFFSET = struct.Struct(">q")
_EMPTY_ENTRY = bytes(_MAP_ENTRY_SIZE)
# The fates as plain ints: numpy stores (and compares) a plain int several times faster than an IntEnum member.
_PAST_MAP, _LATEST, _SUPERSEDED, _NO_KEY = (int(fate) for fate in (
    RecordFate.PAST_MAP, RecordFate.LATEST, RecordFate.SUPERSEDED, RecordFate.NO_KEY))


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
    a :class:`~kafkalog._common.RecordFate` (past the mapped range, the latest for its key, superseded, or no key).

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
                codes[i] = _PAST_MAP
            elif key_len < 0:
                codes[i] = _NO_KEY
            else:
                found, used = _map_get(t, slots, hashlib.md5(view[key_pos:key_pos + key_len]).digest())
                lookups += 1
                probes += used
                codes[i] = _LATEST if offset >= found else _SUPERSEDED
    return codes, lookups, probes
