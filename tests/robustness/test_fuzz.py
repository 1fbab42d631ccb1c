"""Randomized robustness of the record layer and its kernels, for both twins.

Three parts:

1. A fixed-seed mutation loop: valid buffers of every magic and codec (and random bytes) are damaged
   (bits flipped, bytes overwritten, cut short, spans duplicated, two buffers spliced, fields set to
   edge values, the records inside a compressed batch damaged and re-compressed, CRCs re-sealed) and
   then read every way the public API offers.  Only kafkalog's own errors may come out.
2. Twin parity: the plain and the compiled kernels must give the same outcome for every damaged input,
   through the record layer and called directly: the same records, or the same error class, position
   and message.
3. A hypothesis round trip: any list of records survives ``with_records`` and the readers, for every
   magic and codec.

A failure prints the input as hex, so it can be replayed by hand.
"""

from __future__ import annotations

import array
import gzip
import mmap
import random
import struct
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import cramjam
import lz4.frame
import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog import KafkaLogError, MemoryRecords, _impl
from kafkalog.record import ControlRecordType, EndTransactionMarker, ScanStop

# Bound what one damaged batch may decompress to, so the loop stays fast whatever the bytes say, and
# the size field an entry may declare, so edge values in it reach the too-large check.
MAX_DECOMPRESSED = 1 << 20
MAX_BATCH_SIZE = 1 << 14
CASES_PER_TWIN = 4000
PARITY_CASES = 3000
KERNEL_PARITY_CASES = 4000

LEGACY_CODECS = ("none", "gzip", "snappy", "lz4")
V2_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SNAPPY_XERIAL_MAGIC = b"\x82SNAPPY\x00"

# ---------------------------------------------------------------------------------------------------
# Seed buffers


def _seed_buffers() -> list[bytes]:
    """Valid buffers of every magic and codec, with null keys and values, empty fields, headers."""
    plain = [(b"key-0", b"value-0", 1_000), (None, b"v1", 1_001), (b"k2", None, 1_005), (b"", b"", 999)]
    with_headers = [
        (b"key-0", b"value-0", 1_000, [("h1", b"x"), ("", None)]),
        (None, b"v" * 40, 1_001, []),
        (b"k2", None, 1_500, [("\u00e9t\u00e9", b"")]),
    ]
    seeds: list[bytes] = []
    for magic in (0, 1):
        for codec in LEGACY_CODECS:
            seeds.append(bytes(MemoryRecords.with_records(plain, magic=magic, compression=codec,
                                                          base_offset=40).buffer))
    for codec in V2_CODECS:
        seeds.append(bytes(MemoryRecords.with_records(with_headers, compression=codec, base_offset=7).buffer))
    seeds.append(bytes(MemoryRecords.with_records(
        plain, compression="lz4", timestamp_type="LogAppendTime", log_append_time=5_000,
        producer_id=9, producer_epoch=2, base_sequence=11, is_transactional=True,
        partition_leader_epoch=3).buffer))
    seeds.append(bytes(MemoryRecords.with_records(
        plain, magic=1, compression="gzip", timestamp_type="LogAppendTime", log_append_time=5_000).buffer))
    seeds.append(bytes(MemoryRecords.with_records([]).buffer))
    seeds.append(bytes(MemoryRecords.with_end_transaction_marker(
        9, 2, EndTransactionMarker(ControlRecordType.COMMIT, 4), base_offset=12, timestamp=3_000).buffer))
    seeds.append(bytes(MemoryRecords.with_control_record(
        ControlRecordType.LEADER_CHANGE, b"\x00\x01", base_offset=13, timestamp=3_000).buffer))
    # Mixed magics in one buffer, as an upgraded log holds them.
    seeds.append(seeds[0] + seeds[5] + seeds[8])
    seeds.append(seeds[10] + seeds[4] + seeds[12])
    return seeds


SEEDS = _seed_buffers()

# ---------------------------------------------------------------------------------------------------
# Damage


INTERESTING_32 = (0, 1, -1, 13, 14, 21, 22, 48, 49, 61, 0x7F, 0x80, 0xFF, 0x7FFF, 0x7FFFFFFF, -0x80000000,
                  0x10000, 1 << 24)
INTERESTING_64 = (0, -1, 1, (1 << 63) - 1, -(1 << 63), 1 << 62, -(1 << 62))
# Fields worth hitting in an entry: frame offset, size, leader epoch / legacy crc, magic, v2 fields.
FIELD_SPOTS = ((0, 8), (8, 4), (12, 4), (16, 1), (17, 4), (21, 2), (23, 4), (27, 8), (35, 8), (43, 8),
               (51, 2), (53, 4), (57, 4), (17, 1), (18, 8), (26, 4), (30, 4))
# Attributes: every codec id, the timestamp-type, transactional, control and delete-horizon bits.
INTERESTING_ATTRIBUTES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 0x10, 0x20, 0x30, 0x40, -1)
INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0x81, 0xFE, 0xFF, 0x02, 0x03)


def _entry_starts(buf: bytes) -> list[int]:
    """Where the entries of a (mostly) well-framed buffer start, following the size fields."""
    starts = []
    pos = 0
    while pos + 12 <= len(buf) and len(starts) < 16:
        starts.append(pos)
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        if size < 14:
            break
        pos += 12 + size
    return starts


def _reseal(buf: bytearray, pos: int) -> None:
    """Recompute the CRC of the entry at ``pos`` (when its frame fits), so damage gets past the CRC."""
    if pos + 17 > len(buf):
        return
    size = struct.unpack_from(">i", buf, pos + 8)[0]
    end = min(len(buf), pos + 12 + max(size, 0))
    core = _impl.both()["python"]
    if buf[pos + 16] == 2:
        if end >= pos + 21:
            struct.pack_into(">I", buf, pos + 17, core.crc32c(bytes(buf[pos + 21:end])))
    elif buf[pos + 16] in (0, 1):
        struct.pack_into(">I", buf, pos + 12, core.crc32(bytes(buf[pos + 16:end])))


def _decompress_plain(codec: int, payload: bytes) -> bytes | None:
    """The payload's content, through the codec libraries themselves (not kafkalog)."""
    try:
        if codec == 1:
            return gzip.decompress(payload)
        if codec == 2:
            if payload.startswith(SNAPPY_XERIAL_MAGIC):
                out = bytearray()
                pos = 16
                while pos + 4 <= len(payload):
                    n = struct.unpack_from(">i", payload, pos)[0]
                    out += bytes(cramjam.snappy.decompress_raw(payload[pos + 4:pos + 4 + n]))
                    pos += 4 + n
                return bytes(out)
            return bytes(cramjam.snappy.decompress_raw(payload))
        if codec == 3:
            return bytes(lz4.frame.decompress(payload))  # refuses magic 0's broken header checksum
        if codec == 4:
            return zstandard.ZstdDecompressor().decompressobj().decompress(payload)
    except Exception:
        return None
    return None


def _compress_plain(codec: int, data: bytes) -> bytes:
    if codec == 1:
        return gzip.compress(data, mtime=0)
    if codec == 2:
        return bytes(cramjam.snappy.compress_raw(data))  # a raw block: readers accept it too
    if codec == 3:  # Kafka reads standard frames with independent blocks of at most 64 KiB
        return bytes(lz4.frame.compress(data, block_linked=False, content_checksum=False,
                                        block_size=lz4.frame.BLOCKSIZE_MAX64KB))
    return zstandard.ZstdCompressor().compress(data)


def _damage_bytes(rng: random.Random, data: bytearray, donors: list[bytes]) -> bytearray:
    """One random kind of damage to ``data`` (in place where it can be, else a new array)."""
    kind = rng.randrange(9)
    n = len(data)
    if kind == 0 and n:  # flip a few bits
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(n)
            data[i] ^= 1 << rng.randrange(8)
    elif kind == 1 and n:  # overwrite a few bytes
        for _ in range(rng.randint(1, 4)):
            value = rng.choice(INTERESTING_BYTES) if rng.random() < 0.5 else rng.randrange(256)
            data[rng.randrange(n)] = value
    elif kind == 2:  # cut short
        data = data[:rng.randint(0, n)]
    elif kind == 3 and n:  # duplicate a span somewhere
        a = rng.randrange(n)
        b = rng.randint(a, min(n, a + 64))
        c = rng.randint(0, n)
        data = data[:c] + data[a:b] + data[c:]
    elif kind == 4:  # splice with another buffer
        other = rng.choice(donors)
        data = data[:rng.randint(0, n)] + other[rng.randint(0, len(other)):]
    elif kind == 5:  # an edge value in a header field of some entry
        starts = _entry_starts(bytes(data)) or [0]
        base = rng.choice(starts)
        at, width = rng.choice(FIELD_SPOTS)
        at += base
        if at + width <= len(data):
            if width == 8:
                struct.pack_into(">q", data, at, rng.choice(INTERESTING_64))
            elif width == 4:
                struct.pack_into(">i", data, at, rng.choice(INTERESTING_32))
            elif width == 2:
                struct.pack_into(">h", data, at, rng.choice(INTERESTING_ATTRIBUTES))
            else:
                data[at] = rng.choice(INTERESTING_BYTES)
    elif kind == 6 and n:  # a run of continuation bytes (varints that never end)
        i = rng.randrange(n)
        run = bytes([rng.choice((0x80, 0xFF, 0x81))]) * rng.randint(1, 12)
        data[i:i + len(run)] = run
    elif kind == 7 and n:  # delete a span
        a = rng.randrange(n)
        del data[a:a + rng.randint(1, 16)]
    else:  # insert random bytes
        i = rng.randint(0, n)
        data[i:i] = rng.randbytes(rng.randint(1, 16))
    return data


def _damage_inside(rng: random.Random, buf: bytes, donors: list[bytes]) -> bytes:
    """Damage the records of the first entry below its compression and CRC, so the record parser sees it."""
    out = bytearray(buf)
    if len(out) < 17:
        return bytes(out)
    magic = out[16]
    size = struct.unpack_from(">i", out, 8)[0]
    end = 12 + size
    if end > len(out) or size < 14:
        return bytes(out)
    if magic == 2 and end >= 61:
        codec = struct.unpack_from(">h", out, 21)[0] & 7
        body = bytes(out[61:end])
        inner = body if codec == 0 else _decompress_plain(codec, body)
        if inner is None:
            return bytes(out)
        damaged = bytes(_damage_bytes(rng, bytearray(inner), donors))
        if rng.random() < 0.3:
            struct.pack_into(">i", out, 57, rng.choice(INTERESTING_32))  # and the record count
        payload = damaged if codec == 0 else _compress_plain(codec, damaged)
        new = out[:61] + payload + out[end:]
        struct.pack_into(">i", new, 8, 61 + len(payload) - 12)
        _reseal(new, 0)
        return bytes(new)
    if magic in (0, 1):
        codec = out[17] & 7
        key_at = 18 + (8 if magic == 1 else 0)
        if codec == 0 or key_at + 8 > end:
            return bytes(out)
        key_len = struct.unpack_from(">i", out, key_at)[0]
        value_at = key_at + 4 + max(key_len, 0)
        if value_at + 4 > end:
            return bytes(out)
        value_len = struct.unpack_from(">i", out, value_at)[0]
        payload = bytes(out[value_at + 4:value_at + 4 + max(value_len, 0)])
        inner = _decompress_plain(codec, payload)
        if inner is None:
            return bytes(out)
        damaged = bytes(_damage_bytes(rng, bytearray(inner), donors))
        packed = _compress_plain(codec, damaged)
        new = out[:value_at] + struct.pack(">i", len(packed)) + packed + out[end:]
        struct.pack_into(">i", new, 8, value_at + 4 + len(packed) - 12)
        _reseal(new, 0)
        return bytes(new)
    return bytes(out)


def mutated_inputs(seed: int, count: int) -> list[bytes]:
    """``count`` damaged buffers, the same ones for the same ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.05:
            out.append(rng.randbytes(rng.randint(0, 120)))
            continue
        base = rng.choice(SEEDS)
        buf = bytearray(_damage_inside(rng, base, SEEDS) if roll < 0.3 else base)
        for _ in range(rng.randint(1, 3)):
            buf = _damage_bytes(rng, buf, SEEDS)
        if rng.random() < 0.4:
            for pos in _entry_starts(bytes(buf)):
                _reseal(buf, pos)
        out.append(bytes(buf))
    return out


# ---------------------------------------------------------------------------------------------------
# Reading a buffer every way


def _attempt(fn: Callable[[], Any]) -> tuple[Any, ...]:
    """``("ok", value)`` or, for a kafkalog error, ``("error", class name, position, message)``.

    Any other exception propagates: that is what this file is looking for.
    """
    try:
        return ("ok", fn())
    except KafkaLogError as e:
        return ("error", type(e).__name__, getattr(e, "position", None), str(e))


def _columns_outcome(batch: Any) -> tuple[Any, ...]:
    columns = batch.record_columns()
    return (columns.records.tobytes(), columns.headers.tobytes(), len(columns),
            [columns.key(i) for i in range(len(columns))], [columns.value(i) for i in range(len(columns))])


def _batch_outcome(batch: Any) -> list[Any]:
    out: list[Any] = [
        batch.position, batch.size_in_bytes, batch.magic, batch.crc,
        _attempt(lambda: batch.base_offset), batch.last_offset, batch.max_timestamp,
        _attempt(lambda: batch.compression), _attempt(lambda: str(batch.timestamp_type)),
        batch.partition_leader_epoch, batch.producer_id, batch.producer_epoch, batch.base_sequence,
        batch.last_sequence, batch.is_control, batch.is_transactional, batch.delete_horizon_ms,
        _attempt(lambda: batch.count), batch.is_valid(), _attempt(batch.ensure_valid),
        _attempt(lambda: [r.as_tuple() for r in batch.records()]),
        _attempt(lambda: _columns_outcome(batch)),
    ]
    if batch.magic == 2:
        out.append(_attempt(lambda: batch.control_type))
        out.append(_attempt(batch.end_transaction_marker))
    return out


def _walk(records: MemoryRecords, strict: bool) -> list[Any]:
    out: list[Any] = []
    iterator = records.batches(strict=strict)
    while True:
        step = _attempt(lambda: next(iterator, None))
        if step[0] == "error":
            out.append(step)
            return out
        batch = step[1]
        if batch is None:
            return out
        out.append(_batch_outcome(batch))


def read_every_way(buf: bytes) -> list[Any]:
    """Everything the public API reports about ``buf`` with the live twin, as comparable values."""
    records = MemoryRecords(buf, max_batch_size=MAX_BATCH_SIZE, max_decompressed_size=MAX_DECOMPRESSED)
    out: list[Any] = []
    for check_crc, stop_on_invalid in ((True, True), (True, False), (False, False)):
        scan = records.scan(check_crc=check_crc, stop_on_invalid=stop_on_invalid)
        out.append((scan.batches.tobytes(), scan.stop_position, scan.stop_reason, scan.valid_bytes))
    out.append(records.valid_bytes())
    out.append(_walk(records, strict=True))
    out.append(_walk(records, strict=False))
    out.append(_attempt(lambda: [r.as_tuple() for r in records.records(strict=False)]))
    if hasattr(records, "record_columns"):  # the whole-buffer column decode, where the tree has it
        out.append(_attempt(lambda: [_column_set(c) for c in records.record_columns(strict=False)]))
    return out


def _column_set(columns: Any) -> tuple[Any, ...]:
    starts = getattr(columns, "starts", None)
    return (columns.records.tobytes(), columns.headers.tobytes(), bytes(columns.data),
            None if starts is None else starts.tolist())


def _replay_hint(buf: bytes) -> str:
    return f"input ({len(buf)} bytes): {buf.hex()}"


def _escaped(error: BaseException, twin: str, buf: bytes) -> str:
    return f"{type(error).__name__}: {error} escaped the {twin} twin; {_replay_hint(buf)}"


# ---------------------------------------------------------------------------------------------------
# 1. Only kafkalog errors, whatever the bytes


def test_seeds_are_valid(impl: ModuleType) -> None:
    """The undamaged seeds read cleanly, so the damage below is what the readers meet."""
    total = 0
    for buf in SEEDS:
        records = MemoryRecords(buf)
        scan = records.scan()
        assert (scan.stop_reason, scan.stop_position) == (ScanStop.END, len(buf))
        assert records.valid_bytes() == len(buf)
        batches = list(records.batches())
        assert [b.position for b in batches] == scan.batches["position"].tolist()
        for batch, declared in zip(batches, scan.batches["record_count"].tolist(), strict=True):
            assert batch.is_valid()
            assert len(batch.records()) == (declared if declared >= 0 else batch.count)
        total += len(list(records.records()))
    # 8 legacy sets of 4, 5 v2 batches of 3, 2 append-time sets of 4, an empty batch, 2 control
    # records, and the two mixed buffers (4 + 4 + 3 and 3 + 4 + 3).
    assert total == 8 * 4 + 5 * 3 + 2 * 4 + 0 + 2 + 11 + 10


def test_damaged_buffers_raise_only_kafkalog_errors(impl: ModuleType) -> None:
    kinds: dict[str, int] = {}
    for buf in mutated_inputs(20240611, CASES_PER_TWIN):
        try:
            outcome = read_every_way(buf)
        except Exception as e:
            pytest.fail(_escaped(e, impl.IMPLEMENTATION, buf))
        strict_walk = outcome[4]
        last = strict_walk[-1] if strict_walk else None
        if isinstance(last, tuple) and last[0] == "error":
            kinds[last[1]] = kinds.get(last[1], 0) + 1
            assert isinstance(last[2], int) and 0 <= last[2] <= len(buf), (last, _replay_hint(buf))
    # The damage reached the framing checks of several kinds, not one error over and over.
    assert {"CorruptRecordError", "UnsupportedMagicError", "RecordTooLargeError"} <= set(kinds)


def test_random_bytes_raise_only_kafkalog_errors(impl: ModuleType) -> None:
    rng = random.Random(77)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(300):
        buf = rng.randbytes(rng.randint(0, 300))
        try:
            walk = read_every_way(buf)[4]
        except Exception as e:
            pytest.fail(_escaped(e, impl.IMPLEMENTATION, buf))
        failed = bool(walk) and isinstance(walk[-1], tuple) and walk[-1][0] == "error"
        outcomes["error" if failed else "ok"] += 1
    # Random bytes almost never frame as a log: nearly all of them must be refused.
    assert outcomes["error"] > 250


# ---------------------------------------------------------------------------------------------------
# 2. The two twins agree


def _twins() -> dict[str, ModuleType]:
    twins = _impl.both()
    if "cython" not in twins:
        pytest.skip("kafkalog._core is not built")
    return twins


def _outcome_with(name: str, buf: bytes) -> list[Any]:
    with _impl.using(name):
        try:
            return read_every_way(buf)
        except Exception as e:
            pytest.fail(_escaped(e, name, buf))


def test_twins_agree_on_damaged_buffers() -> None:
    _twins()
    for buf in mutated_inputs(31337, PARITY_CASES):
        plain = _outcome_with("python", buf)
        compiled = _outcome_with("cython", buf)
        assert plain == compiled, _replay_hint(buf)


def _kernel_call(core: ModuleType, fn: str, *args: Any) -> tuple[Any, ...]:
    try:
        result = getattr(core, fn)(*args)
    except KafkaLogError as e:
        return ("error", type(e).__name__, getattr(e, "position", None), str(e))
    if fn == "decode_v2_records":
        return ("ok", result[0].tobytes(), result[1].tobytes())
    if fn == "decode_v2_record_objects":
        return ("ok", [r.as_tuple() for r in result])
    if fn == "decode_legacy_records":
        return ("ok", result.tobytes())
    if fn == "decode_v2_batches":
        return ("ok", result[0].tobytes(), result[1].tobytes(), result[2].tolist())
    if fn == "decode_v2_batch_objects":
        return ("ok", [r.as_tuple() for r in result])
    return ("ok", result[0].tobytes(), int(result[1]), int(result[2]))


def test_twins_agree_on_kernel_calls() -> None:
    """The kernels called directly, over damaged bytes and arbitrary ranges, counts and bases."""
    twins = _twins()
    rng = random.Random(4242)
    inputs = mutated_inputs(99, KERNEL_PARITY_CASES)
    seen = {"ok": 0, "error": 0}
    for buf in inputs:
        n = len(buf)
        start = rng.choice((0, 61, rng.randint(0, n))) if n else 0
        start = min(start, n)
        end = rng.randint(start, n)
        count = rng.choice((0, 1, 2, 3, 4, -1, -(1 << 31), (1 << 31) - 1, (end - start) // 7,
                            (end - start) // 7 + 1, rng.randint(0, 40)))
        base_offset = rng.choice((0, 7, (1 << 63) - 1, -(1 << 63)))
        base_ts = rng.choice((-1, 0, 1_000, (1 << 63) - 1, -(1 << 63)))
        append_time = rng.choice((None, None, 5_000, -(1 << 63)))
        calls = [
            ("decode_v2_records", buf, start, end, count, base_offset, base_ts, append_time),
            ("decode_v2_record_objects", buf, start, end, count, base_offset, base_ts, append_time),
            ("decode_legacy_records", buf, start, end),
            ("scan_batches", buf, start, rng.choice((-1, end)), rng.random() < 0.7, rng.random() < 0.5,
             rng.choice((0x7FFFFFFF, 1000, 60, 13)), rng.choice(((1 << 63) - 1, 1, 2))),
        ]
        rows = twins["python"].scan_batches(buf, 0, -1, False, False)[0]
        plain_v2 = rows[(rows["magic"] == 2) & ((rows["attributes"] & 7) == 0)]
        for fn in ("decode_v2_batches", "decode_v2_batch_objects"):
            if len(plain_v2) and all(hasattr(core, fn) for core in twins.values()):
                calls.append((fn, buf, plain_v2))
        for fn, *args in calls:
            try:
                plain = _kernel_call(twins["python"], fn, *args)
                compiled = _kernel_call(twins["cython"], fn, *args)
            except Exception as e:
                pytest.fail(f"{type(e).__name__}: {e} from {fn}{tuple(args[1:])}; {_replay_hint(buf)}")
            assert plain == compiled, (fn, args[1:], _replay_hint(buf))
            seen[plain[0]] += 1
        assert twins["python"].crc32c(buf) == twins["cython"].crc32c(buf)
        assert twins["python"].crc32(buf) == twins["cython"].crc32(buf)
    assert seen["ok"] > 500 and seen["error"] > 500


BUFFER_KINDS: dict[str, Callable[[bytes], Any]] = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview": memoryview,
    "read-only memoryview slice": lambda b: memoryview(b"xx" + b)[2:],
    "signed-char memoryview": lambda b: memoryview(b).cast("b"),
    "int8 ndarray": lambda b: np.frombuffer(b, dtype=np.int8),
    "uint8 ndarray": lambda b: np.frombuffer(b, dtype=np.uint8),
    "uint32 array": lambda b: array.array("I", b),
}


@pytest.mark.parametrize("kind", sorted(BUFFER_KINDS))
def test_every_buffer_kind_reads_as_its_bytes(impl: ModuleType, kind: str) -> None:
    """A contiguous buffer of any item format holds the same log as its bytes, for both twins."""
    buf = SEEDS[-2] + SEEDS[-1]
    buf += bytes(-len(buf) % 4)  # whole items for the 4-byte format; the zero tail is a partial entry
    expected = read_every_way(buf)
    wrapped = BUFFER_KINDS[kind](buf)
    try:
        MemoryRecords(wrapped)
    except (TypeError, ValueError) as e:
        # Refusing a kind of buffer up front, with a clear error, is a choice; reading it wrong is not.
        assert "buffer" in str(e)
        return
    try:
        got = read_every_way(wrapped)
    except Exception as e:
        pytest.fail(f"{type(e).__name__}: {e} from the {impl.IMPLEMENTATION} twin over a {kind}")
    assert got == expected
    assert len(got[5]) == len(_entry_starts(SEEDS[-2])) + len(_entry_starts(SEEDS[-1]))


def test_mmap_reads_and_can_close(impl: ModuleType) -> None:
    """The kernels keep no view of an mmap, so it closes once the batches are dropped."""
    buf = SEEDS[-2] + SEEDS[-1]
    region = mmap.mmap(-1, len(buf))
    try:
        region.write(buf)
        assert read_every_way(region) == read_every_way(buf)
    finally:
        region.close()
    assert region.closed


# ---------------------------------------------------------------------------------------------------
# 3. Round trip of any records


_bytes_or_none = st.one_of(st.none(), st.binary(max_size=300))
_header = st.tuples(st.text(max_size=20), _bytes_or_none)
_record = st.tuples(
    _bytes_or_none,
    _bytes_or_none,
    st.one_of(st.just(-1), st.integers(min_value=0, max_value=(1 << 53))),
    st.lists(_header, max_size=4),
)

COMBINATIONS = [(0, c) for c in LEGACY_CODECS] + [(1, c) for c in LEGACY_CODECS] + [(2, c) for c in V2_CODECS]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(_record, max_size=12), base_offset=st.integers(min_value=0, max_value=(1 << 62)))
def test_any_records_round_trip(impl: ModuleType, records: list[Any], base_offset: int) -> None:
    for magic, codec in COMBINATIONS:
        if magic == 2:
            given_records = records
            expected = [(base_offset + i, ts, k, v, list(h)) for i, (k, v, ts, h) in enumerate(records)]
        else:
            given_records = [(k, v, ts) for k, v, ts, _ in records]
            expected = [(base_offset + i, ts if magic == 1 else -1, k, v, [])
                        for i, (k, v, ts, _) in enumerate(records)]
        buf = MemoryRecords.with_records(given_records, magic=magic, compression=codec,
                                         base_offset=base_offset).buffer
        read = MemoryRecords(buf)
        assert read.valid_bytes() == len(buf)
        got = [r.as_tuple() for r in read.records()]
        assert got == expected, (magic, codec)
        batches = list(read.batches())
        assert all(batch.is_valid() and batch.magic == magic for batch in batches)
        keys, values = [], []
        for batch in batches:
            columns = batch.record_columns()
            keys += [columns.key(i) for i in range(len(columns))]
            values += [columns.value(i) for i in range(len(columns))]
        assert keys == [row[2] for row in expected]
        assert values == [row[3] for row in expected]
        if magic == 2:
            (batch,) = batches
            assert batch.count == len(records)
            assert batch.compression.kafka_name == codec
            assert batch.last_offset == base_offset + max(len(records) - 1, 0)


def test_crc_helpers_match_zlib(impl: ModuleType) -> None:
    """The CRC the reseal helper above relies on, checked on the standard test vectors."""
    assert impl.crc32(b"123456789") == zlib.crc32(b"123456789") == 0xCBF43926
    assert impl.crc32c(b"123456789") == 0xE3069283
