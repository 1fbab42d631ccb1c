"""Interoperability of kafkalog's record layer with two independent Kafka clients.

The peers are kafka-python (pure Python) and aiokafka.  aiokafka ships a compiled (Cython,
``aiokafka.record._crecords``) and a pure variant of its record classes and picks the compiled one unless
``AIOKAFKA_NO_EXTENSIONS`` is set; these tests use whatever it exposes by default, and
:data:`AIOKAFKA_VARIANT` records which one that was (``compiled`` in the reference environment).

Covered, for both kafkalog twins (the ``impl`` fixture):

1. batches built by a peer, for every magic x codec, parse in kafkalog to the same records;
2. batches built by kafkalog parse in both peers to the same records, producer fields and LogAppendTime
   included;
3. uncompressed batches are byte-identical to the peers' for the same inputs, and compressed ones carry
   the same uncompressed content;
4. a kafka-python v1 wrapper placed at a non-zero offset, as a broker places it, reads back with
   absolute offsets.

Facts about the peers' writers, from their sources (kafka-python 3.0.12, aiokafka 0.14):

* v2: base offset always 0 and the offset deltas are the offsets handed to ``append``; kafka-python
  writes partition leader epoch 0, aiokafka -1; neither sets the timestamp type (the broker does).
  kafka-python (and aiokafka's pure builder) silently drop a codec that does not shrink the records, so
  the data here is compressible and the tests check the codec really is in the batch.
* v0/v1 compressed: the wrapper is written at offset 0 with timestamp 0, inner offsets are the offsets
  handed to ``append`` (0..n-1 here, which v1 reads as relative); v0 LZ4 uses the "broken" header
  checksum of Kafka 0.8/0.9 in kafka-python, while aiokafka neither writes nor reads v0 LZ4.
"""

from __future__ import annotations

import random
import struct
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from aiokafka.errors import UnsupportedCodecError as AiokafkaUnsupportedCodecError
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioDefaultBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

from kafkalog import CompressionType, InvalidRecordError, MemoryRecords, TimestampType
from kafkalog.record import ScanStop

with warnings.catch_warnings():
    # kafka-python's package __init__ loads its protocol schemas through importlib.resources.read_text,
    # deprecated since Python 3.11; the project turns warnings into errors, so keep this one out.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import codec as kafka_codec
    from kafka.record.default_records import DefaultRecordBatchBuilder as KpDefaultBuilder
    from kafka.record.memory_records import MemoryRecords as KpMemoryRecords
    from kafka.record.memory_records import MemoryRecordsBuilder as KpMemoryRecordsBuilder

_AIOKAFKA_COMPILED = AioMemoryRecords.__module__.startswith("aiokafka.record._crecords")
#: Which aiokafka record classes are in use: ``compiled`` (``aiokafka.record._crecords``) or ``pure``.
AIOKAFKA_VARIANT = "compiled" if _AIOKAFKA_COMPILED else "pure"

SEED = 20240611
T0 = 1_700_000_000_000
BIG_BATCH = 1 << 24  # a batch_size no test comes near, so the peers never refuse an append
INT32_MAX = 0x7FFFFFFF

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
MAGIC_CODECS = [(magic, codec) for magic in (0, 1) for codec in ("none", "gzip", "snappy", "lz4")] + [
    (2, codec) for codec in ("none", "gzip", "snappy", "lz4", "zstd")
]
MAGIC_CODEC_IDS = [f"v{magic}-{codec}" for magic, codec in MAGIC_CODECS]

Header = tuple[str, bytes | None]
InputRecord = tuple[bytes | None, bytes | None, int, list[Header]]
RecordTuple = tuple[int, int, bytes | None, bytes | None, list[Header]]


# ---------------------------------------------------------------------------------------------------
# Data


def make_records(*, headers: bool, seed: int = SEED) -> list[InputRecord]:
    """A fixed, seeded set of records with every edge the formats have.

    Null keys, tombstones, empty key and value, a 70 KiB value (more than one xerial snappy block and
    more than one 64 KiB LZ4 block), timestamps that go down as well as up (negative v2 deltas), and
    for v2 headers with a null value, an empty value, an empty key and a non-ASCII key.  Mostly text,
    so every codec shrinks the records and the peers keep the codec they were asked for.
    """
    rng = random.Random(seed)
    words = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot", b"golf", b"hotel", b"india"]

    def text(size: int) -> bytes:
        out = bytearray()
        while len(out) < size:
            out += rng.choice(words) + b" "
        return bytes(out[:size])

    def hdrs(*items: Header) -> list[Header]:
        return list(items) if headers else []

    records: list[InputRecord] = [
        (b"key-0", b"first value", T0,
         hdrs(("trace-id", b"abc"), ("null-header", None), ("empty", b""), ("", b"no key"),
              ("ключ", b"\x00\xff"))),
        (None, b"a value under a null key", T0 + 17, hdrs(("only-null", None))),
        (b"tombstone", None, T0 + 5, []),
        (b"", b"", T0 + 5, hdrs(("h", b""))),
        (None, None, T0 - 1_500, []),
        (b"big", text(70 * 1024), T0 + 250_000, hdrs(("size", b"70KiB"))),
    ]
    for i in range(14):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 24))
        value = None if rng.random() < 0.1 else text(rng.randrange(0, 400))
        timestamp = T0 + rng.randrange(-10_000, 1_000_000)
        record_headers = [
            (f"h{j}-{i}", None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 8)))
            for j in range(rng.randrange(0, 3))
        ]
        records.append((key, value, timestamp, record_headers if headers else []))
    return records


def kafkalog_inputs(records: Sequence[InputRecord], magic: int) -> list[tuple[Any, ...]]:
    """kafkalog's builder input: headers only for v2 (legacy builders refuse them)."""
    if magic == 2:
        return [(k, v, ts, h) for k, v, ts, h in records]
    return [(k, v, ts) for k, v, ts, _ in records]


def expected(records: Sequence[InputRecord], magic: int, base_offset: int,
             log_append_time: int | None = None) -> list[RecordTuple]:
    """What a reader reports: v0 has no timestamp (-1), LogAppendTime replaces every timestamp."""
    out: list[RecordTuple] = []
    for i, (key, value, timestamp, headers) in enumerate(records):
        if magic == 0:
            timestamp = -1
        elif log_append_time is not None:
            timestamp = log_append_time
        out.append((base_offset + i, timestamp, key, value, list(headers) if magic == 2 else []))
    return out


# ---------------------------------------------------------------------------------------------------
# The peers as writers


def kafka_python_build(records: Sequence[InputRecord], magic: int, codec: str) -> bytes:
    """kafka-python's producer path: ``MemoryRecordsBuilder`` with offsets from 0."""
    builder = KpMemoryRecordsBuilder(magic, CODEC_IDS[codec], BIG_BATCH)
    for key, value, timestamp, headers in records:
        assert builder.append(timestamp, key, value, list(headers) if magic == 2 else None) is not None
    builder.close()
    return bytes(builder.buffer())


def aiokafka_build(records: Sequence[InputRecord], magic: int, codec: str) -> bytes:
    """aiokafka's record builders, appending offsets 0..n-1 as its producer does."""
    builder: Any
    if magic == 2:
        builder = AioDefaultBuilder(magic, CODEC_IDS[codec], 0, -1, -1, -1, BIG_BATCH)
    else:
        builder = AioLegacyBuilder(magic, CODEC_IDS[codec], BIG_BATCH)
    for offset, (key, value, timestamp, headers) in enumerate(records):
        if magic == 2:
            meta = builder.append(offset, timestamp, key, value, list(headers))
        else:
            meta = builder.append(offset, timestamp, key, value)
        assert meta is not None
    return bytes(builder.build())


PEER_BUILDERS: dict[str, Callable[[Sequence[InputRecord], int, str], bytes]] = {
    "kafka-python": kafka_python_build,
    "aiokafka": aiokafka_build,
}
#: The partition leader epoch each peer writes into a v2 batch ("set by broker").
PEER_LEADER_EPOCH = {"kafka-python": 0, "aiokafka": -1}

# aiokafka refuses to write v0 LZ4 (KAFKA-3160), so that one pair has no aiokafka-built batch.
PEER_CASES = [
    (peer, magic, codec)
    for peer in PEER_BUILDERS
    for magic, codec in MAGIC_CODECS
    if not (peer == "aiokafka" and magic == 0 and codec == "lz4")
]
PEER_CASE_IDS = [f"{peer}-v{magic}-{codec}" for peer, magic, codec in PEER_CASES]


# ---------------------------------------------------------------------------------------------------
# The peers as readers


def _peer_record(record: Any) -> RecordTuple:
    timestamp = -1 if record.timestamp is None else record.timestamp
    return (record.offset, timestamp, record.key, record.value, list(record.headers))


def kafka_python_read(buf: bytes) -> tuple[list[Any], list[RecordTuple]]:
    """kafka-python's batches (CRC checked first, as it requires) and all their records."""
    batches = []
    records: list[RecordTuple] = []
    for batch in KpMemoryRecords(buf):
        assert batch.validate_crc()
        batches.append(batch)
        records.extend(_peer_record(r) for r in batch)
    return batches, records


def aiokafka_read(buf: bytes) -> tuple[list[Any], list[RecordTuple]]:
    """aiokafka's batches (CRC checked) and all their records."""
    source = AioMemoryRecords(buf)
    batches = []
    records: list[RecordTuple] = []
    while source.has_next():
        batch = source.next_batch()
        assert batch.validate_crc()
        batches.append(batch)
        records.extend(_peer_record(r) for r in batch)
    return batches, records


def kafkalog_read(buf: bytes) -> list[RecordTuple]:
    return [r.as_tuple() for r in MemoryRecords(buf).records()]


# ---------------------------------------------------------------------------------------------------
# 1. Peer-built batches read by kafkalog


@pytest.mark.parametrize(("peer", "magic", "codec"), PEER_CASES, ids=PEER_CASE_IDS)
def test_peer_built_batches_parse_identically(impl: Any, peer: str, magic: int, codec: str) -> None:
    records = make_records(headers=magic == 2)
    buf = PEER_BUILDERS[peer](records, magic, codec)
    want = expected(records, magic, 0)

    memory = MemoryRecords(buf)
    assert [r.as_tuple() for r in memory.records()] == want
    assert memory.valid_bytes() == len(buf)
    scan = memory.scan()
    assert scan.stop_reason is ScanStop.END
    assert scan.batches["valid"].tolist() == [1] * len(scan.batches)

    batches = list(memory.batches())
    uncompressed_legacy = magic < 2 and codec == "none"
    assert len(batches) == (len(records) if uncompressed_legacy else 1)
    for batch in batches:
        assert batch.magic == magic
        # Also proves the peer kept the codec: it drops one that does not shrink the records.
        assert batch.compression is CompressionType.of(codec)
        assert batch.is_valid()

    # The column decode agrees with the object decode.
    columns = [batch.record_columns() for batch in batches]
    assert np.concatenate([c.records["offset"] for c in columns]).tolist() == [r[0] for r in want]
    assert np.concatenate([c.records["timestamp"] for c in columns]).tolist() == [r[1] for r in want]
    assert [c.key(i) for c in columns for i in range(len(c))] == [r[2] for r in want]
    assert [c.value(i) for c in columns for i in range(len(c))] == [r[3] for r in want]

    if magic == 2:
        (batch,) = batches
        assert batch.base_offset == 0
        assert batch.last_offset == len(records) - 1
        assert batch.count == len(records)
        assert batch.partition_leader_epoch == PEER_LEADER_EPOCH[peer]
        assert batch.timestamp_type is TimestampType.CREATE_TIME
        assert batch.max_timestamp == max(r[2] for r in records)
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
        assert batch.last_sequence == -1
        assert not batch.is_transactional
        assert not batch.is_control
    elif codec != "none":
        (wrapper,) = batches
        # The peers write the wrapper at offset 0 with timestamp 0: v1 inner offsets are then taken as
        # given (the librdkafka rule) and v0 inner offsets are absolute anyway.
        assert wrapper.last_offset == 0
        assert wrapper.base_offset == 0
        assert wrapper.count == len(records)
        assert wrapper.max_timestamp == (0 if magic == 1 else -1)
    else:
        assert [b.last_offset for b in batches] == list(range(len(records)))
        assert [b.count for b in batches] == [1] * len(records)
    if magic == 0:
        assert {b.timestamp_type for b in batches} == {TimestampType.NO_TIMESTAMP_TYPE}
    elif magic == 1:
        assert {b.timestamp_type for b in batches} == {TimestampType.CREATE_TIME}


@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
@pytest.mark.parametrize("peer", ["kafka-python", "aiokafka"])
def test_peer_built_producer_fields_parse(impl: Any, peer: str, codec: str) -> None:
    records = make_records(headers=True)[:6]  # with the 70 KiB value, so the peer keeps the codec
    pid, epoch, sequence = 123_456_789_012, 7, INT32_MAX - 3
    builder: Any
    if peer == "kafka-python":
        builder = KpDefaultBuilder(2, CODEC_IDS[codec], True, pid, epoch, sequence, BIG_BATCH)
    else:
        builder = AioDefaultBuilder(2, CODEC_IDS[codec], True, pid, epoch, sequence, BIG_BATCH)
    for offset, (key, value, timestamp, headers) in enumerate(records):
        assert builder.append(offset, timestamp, key, value, list(headers)) is not None
    buf = bytes(builder.build())

    (batch,) = MemoryRecords(buf).batches()
    assert batch.is_valid()
    assert batch.compression is CompressionType.of(codec)
    assert batch.producer_id == pid
    assert batch.producer_epoch == epoch
    assert batch.base_sequence == sequence
    # Sequence 2**31 - 4 plus 5 wraps past Integer.MAX_VALUE to 0: the last is 1.
    assert batch.last_sequence == 1
    assert batch.is_transactional
    assert not batch.is_control
    assert [r.as_tuple() for r in batch.records()] == expected(records, 2, 0)


# ---------------------------------------------------------------------------------------------------
# 2. kafkalog-built batches read by the peers


@pytest.mark.parametrize(("magic", "codec"), MAGIC_CODECS, ids=MAGIC_CODEC_IDS)
def test_kafkalog_built_batches_parse_in_peers(impl: Any, magic: int, codec: str) -> None:
    records = make_records(headers=magic == 2)
    base = 1_000_007
    buf = bytes(MemoryRecords.with_records(
        kafkalog_inputs(records, magic), magic=magic, compression=codec, base_offset=base
    ).buffer)
    want = expected(records, magic, base)
    n_batches = len(records) if magic < 2 and codec == "none" else 1

    assert kafkalog_read(buf) == want

    kp_batches, kp_records = kafka_python_read(buf)
    assert kp_records == want
    assert len(kp_batches) == n_batches
    assert {b.magic for b in kp_batches} == {magic}
    assert {b.compression_type for b in kp_batches} == {CODEC_IDS[codec]}
    if magic == 2:
        (kp,) = kp_batches
        assert (kp.base_offset, kp.last_offset, kp.records_count) == (base, base + len(records) - 1,
                                                                      len(records))
        assert kp.first_timestamp == records[0][2]
        assert kp.max_timestamp == max(r[2] for r in records)
        assert kp.timestamp_type == 0
        assert kp.leader_epoch == -1  # kafkalog's default: no partition leader epoch
        assert (kp.producer_id, kp.producer_epoch, kp.base_sequence) == (-1, -1, -1)
        assert not kp.is_transactional
        assert not kp.is_control_batch
    else:
        assert {b.timestamp_type for b in kp_batches} == {None if magic == 0 else 0}

    if magic == 0 and codec == "lz4":
        # aiokafka does not read v0 LZ4 at all (KAFKA-3160): a peer limit, not a kafkalog one.
        source = AioMemoryRecords(buf)
        batch = source.next_batch()
        with pytest.raises(AiokafkaUnsupportedCodecError, match=r"0\.8/0\.9"):
            list(batch)
        return
    aio_batches, aio_records = aiokafka_read(buf)
    assert aio_records == want
    assert len(aio_batches) == n_batches
    assert aio_batches[-1].next_offset == base + len(records)
    if magic == 2:
        (aio,) = aio_batches
        assert aio.compression_type == CODEC_IDS[codec]
        assert (aio.base_offset, aio.last_offset_delta) == (base, len(records) - 1)
        assert aio.first_timestamp == records[0][2]
        assert aio.max_timestamp == max(r[2] for r in records)
        assert (aio.producer_id, aio.producer_epoch, aio.base_sequence) == (-1, -1, -1)
        assert not aio.is_transactional
        assert not aio.is_control_batch


@pytest.mark.parametrize("transactional", [True, False], ids=["transactional", "idempotent"])
@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_kafkalog_producer_fields_read_by_peers(impl: Any, codec: str, transactional: bool) -> None:
    records = make_records(headers=True)[:5]
    pid, epoch, sequence, leader_epoch, base = 987_654_321_098, 32_000, INT32_MAX - 2, 42, 5_000
    buf = bytes(MemoryRecords.with_records(
        kafkalog_inputs(records, 2), compression=codec, base_offset=base, producer_id=pid,
        producer_epoch=epoch, base_sequence=sequence, is_transactional=transactional,
        partition_leader_epoch=leader_epoch,
    ).buffer)
    want = expected(records, 2, base)

    (kp,), kp_records = kafka_python_read(buf)
    assert kp_records == want
    assert (kp.producer_id, kp.producer_epoch, kp.base_sequence) == (pid, epoch, sequence)
    assert kp.is_transactional is transactional
    assert kp.last_sequence == 1  # INT32_MAX - 2 + 4 wraps to 1
    assert kp.leader_epoch == leader_epoch
    assert kp.compression_type == CODEC_IDS[codec]

    (aio,), aio_records = aiokafka_read(buf)
    assert aio_records == want
    assert (aio.producer_id, aio.producer_epoch, aio.base_sequence) == (pid, epoch, sequence)
    assert aio.is_transactional is transactional
    assert not aio.is_control_batch

    (own,) = MemoryRecords(buf).batches()
    assert (own.producer_id, own.producer_epoch, own.base_sequence, own.last_sequence) == (
        pid, epoch, sequence, 1)


LOG_APPEND_CASES = [(1, "none"), (1, "gzip"), (1, "snappy"), (2, "none"), (2, "gzip"), (2, "zstd")]


@pytest.mark.parametrize(("magic", "codec"), LOG_APPEND_CASES, ids=[f"v{m}-{c}" for m, c in LOG_APPEND_CASES])
def test_kafkalog_log_append_time_read_by_peers(impl: Any, magic: int, codec: str) -> None:
    records = make_records(headers=magic == 2)[:8]
    append_time = T0 + 3_600_000
    base = 77
    buf = bytes(MemoryRecords.with_records(
        kafkalog_inputs(records, magic), magic=magic, compression=codec, base_offset=base,
        timestamp_type="LogAppendTime", log_append_time=append_time,
    ).buffer)
    want = expected(records, magic, base, log_append_time=append_time)

    assert kafkalog_read(buf) == want
    own = list(MemoryRecords(buf).batches())
    assert {b.timestamp_type for b in own} == {TimestampType.LOG_APPEND_TIME}
    assert {b.max_timestamp for b in own} == {append_time}

    kp_batches, kp_records = kafka_python_read(buf)
    assert kp_records == want
    assert {b.timestamp_type for b in kp_batches} == {1}
    assert {r.timestamp_type for b in KpMemoryRecords(buf) for r in b} == {1}
    if magic == 2:
        assert kp_batches[0].max_timestamp == append_time

    aio_batches, aio_records = aiokafka_read(buf)
    assert aio_records == want
    source = AioMemoryRecords(buf)
    aio_types = set()
    while source.has_next():
        aio_types |= {r.timestamp_type for r in source.next_batch()}
    assert aio_types == {1}
    if magic == 2:
        assert aio_batches[0].timestamp_type == 1
        assert aio_batches[0].max_timestamp == append_time


# ---------------------------------------------------------------------------------------------------
# 3. Byte identity


def _small_records(headers: bool) -> list[InputRecord]:
    """A hand-written set: headers (one null), a null key, a null value, timestamps up and down."""
    h: Callable[[list[Header]], list[Header]] = (lambda x: x) if headers else (lambda x: [])
    return [
        (b"k0", b"v0", T0 + 10, h([("a", b"1"), ("null", None)])),
        (None, b"no key", T0 + 11, h([])),
        (b"gone", None, T0 + 3, h([("b", b"")])),
        (b"", b"", T0 + 500, h([])),
        (None, None, T0 - 20, h([("c", None)])),
    ]


@pytest.mark.parametrize("data", ["small", "generated"])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_uncompressed_bytes_equal_kafka_python(impl: Any, magic: int, data: str) -> None:
    records = _small_records(magic == 2) if data == "small" else make_records(headers=magic == 2)
    theirs = kafka_python_build(records, magic, "none")
    # kafka-python's MemoryRecordsBuilder numbers records from its ``offset`` argument, 0 by default, and
    # its v2 builder always writes base offset 0: hence base_offset=0.  It writes partition leader epoch
    # 0 into v2 batches ("set by broker") where kafkalog defaults to -1 (no epoch, as the Java producer
    # writes): hence partition_leader_epoch=0 for magic 2.
    extra = {"partition_leader_epoch": 0} if magic == 2 else {}
    ours = MemoryRecords.with_records(
        kafkalog_inputs(records, magic), magic=magic, base_offset=0, **extra
    ).buffer
    assert bytes(ours) == theirs
    assert kafkalog_read(theirs) == expected(records, magic, 0)


@pytest.mark.parametrize("data", ["small", "generated"])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_uncompressed_bytes_equal_aiokafka(impl: Any, magic: int, data: str) -> None:
    records = _small_records(magic == 2) if data == "small" else make_records(headers=magic == 2)
    theirs = aiokafka_build(records, magic, "none")
    # aiokafka appends offsets 0..n-1 under base offset 0 and writes leader epoch -1, which is kafkalog's
    # default: only base_offset=0 needs saying.
    ours = MemoryRecords.with_records(kafkalog_inputs(records, magic), magic=magic, base_offset=0).buffer
    assert bytes(ours) == theirs


@pytest.mark.parametrize("transactional", [True, False], ids=["transactional", "idempotent"])
def test_uncompressed_producer_batch_bytes_equal_kafka_python(impl: Any, transactional: bool) -> None:
    records = _small_records(True)
    pid, epoch, sequence = 4_242_424_242, 3, 1_000
    builder = KpDefaultBuilder(2, 0, transactional, pid, epoch, sequence, BIG_BATCH)
    for offset, (key, value, timestamp, headers) in enumerate(records):
        assert builder.append(offset, timestamp, key, value, list(headers)) is not None
    theirs = bytes(builder.build())
    # Base offset 0 and leader epoch 0: what kafka-python's v2 builder always writes (see above).
    ours = MemoryRecords.with_records(
        kafkalog_inputs(records, 2), base_offset=0, partition_leader_epoch=0, producer_id=pid,
        producer_epoch=epoch, base_sequence=sequence, is_transactional=transactional,
    ).buffer
    assert bytes(ours) == theirs


_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_PEER_DECODERS: dict[tuple[int, str], Callable[[bytes], bytes]] = {
    **{(magic, "gzip"): kafka_codec.gzip_decode for magic in (0, 1, 2)},
    **{(magic, "snappy"): kafka_codec.snappy_decode for magic in (0, 1, 2)},
    (0, "lz4"): kafka_codec.lz4_decode_old_kafka,
    (1, "lz4"): kafka_codec.lz4_decode,
    (2, "lz4"): kafka_codec.lz4_decode,
    (2, "zstd"): kafka_codec.zstd_decode,
}
COMPRESSED_CASES = [(m, c) for m, c in MAGIC_CODECS if c != "none"]


def _wrapper_fields(buf: bytes, magic: int) -> tuple[int, int, bytes]:
    """Frame offset, timestamp (-1 for v0) and value of the one legacy wrapper in ``buf``."""
    offset, size = struct.unpack_from(">qi", buf, 0)
    assert size == len(buf) - 12
    pos = 18
    timestamp = -1
    if magic == 1:
        (timestamp,) = struct.unpack_from(">q", buf, pos)
        pos += 8
    key_len, value_len = struct.unpack_from(">ii", buf, pos)
    assert key_len == -1
    return offset, timestamp, buf[pos + 8:pos + 8 + value_len]


@pytest.mark.parametrize(("magic", "codec"), COMPRESSED_CASES, ids=[f"v{m}-{c}" for m, c in COMPRESSED_CASES])
def test_compressed_content_equals_kafka_python(impl: Any, magic: int, codec: str) -> None:
    """The codec streams differ (levels, library versions), but what they hold is the same bytes; each
    side's stream is opened with kafka-python's decoders, not kafkalog's."""
    records = make_records(headers=magic == 2)
    theirs = kafka_python_build(records, magic, codec)
    extra = {"partition_leader_epoch": 0} if magic == 2 else {}  # kafka-python's epoch, as above
    ours = bytes(MemoryRecords.with_records(
        kafkalog_inputs(records, magic), magic=magic, compression=codec, base_offset=0, **extra
    ).buffer)
    decode = _PEER_DECODERS[(magic, codec)]
    if magic == 2:
        our_header = list(_V2_HEADER.unpack_from(ours))
        their_header = list(_V2_HEADER.unpack_from(theirs))
        # Everything but the batch length and the CRC (both depend on the compressed size).
        for field in (1, 4):
            our_header[field] = their_header[field] = None
        assert our_header == their_header
        assert decode(ours[61:]) == decode(theirs[61:])
        return
    our_offset, our_timestamp, our_value = _wrapper_fields(ours, magic)
    their_offset, their_timestamp, their_value = _wrapper_fields(theirs, magic)
    assert decode(our_value) == decode(their_value)
    # The wrappers differ where a broker would overwrite kafka-python's placeholders: kafkalog writes
    # Kafka's values (offset of the last inner message, the largest inner timestamp for v1).
    assert (their_offset, their_timestamp) == (0, 0 if magic == 1 else -1)
    assert our_offset == len(records) - 1
    assert our_timestamp == (max(r[2] for r in records) if magic == 1 else -1)
    assert ours[16:18] == theirs[16:18]  # magic and attributes


# ---------------------------------------------------------------------------------------------------
# 4. A kafka-python v1 wrapper at a non-zero base offset


def _at_offset(wrapper: bytes, offset: int) -> bytes:
    """``wrapper`` with its frame offset replaced, as a broker assigning offsets in place does.

    The legacy CRC covers magic..end of the message, not the 12-byte frame, so the wrapper stays valid.
    """
    return struct.pack(">q", offset) + wrapper[8:]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_v1_wrapper_at_nonzero_base_gives_absolute_offsets(impl: Any, codec: str) -> None:
    records = make_records(headers=False)
    n = len(records)
    first = kafka_python_build(records[:12], 1, codec)
    second = kafka_python_build(records[12:], 1, codec)
    base = 9_000_000_123
    buf = _at_offset(first, base + 11) + _at_offset(second, base + n - 1)
    assert buf[12:16] == first[12:16]  # the stored CRC is untouched

    want = expected(records, 1, base)
    assert kafkalog_read(buf) == want
    first_batch, second_batch = MemoryRecords(buf).batches()
    assert first_batch.is_valid() and second_batch.is_valid()
    assert (first_batch.base_offset, first_batch.last_offset, first_batch.count) == (base, base + 11, 12)
    assert (second_batch.base_offset, second_batch.last_offset, second_batch.next_offset) == (
        base + 12, base + n - 1, base + n)
    offsets = second_batch.record_columns().records["offset"].tolist()
    assert offsets == list(range(base + 12, base + n))
    assert MemoryRecords(buf).valid_bytes() == len(buf)

    # Both peers compute the same absolute offsets from the same frames.
    assert kafka_python_read(buf)[1] == want
    assert aiokafka_read(buf)[1] == want


def test_v1_wrapper_offset_below_last_inner_is_invalid(impl: Any) -> None:
    """A non-zero wrapper offset smaller than the last relative inner offset cannot be placed."""
    records = make_records(headers=False)[:6]
    wrapper = kafka_python_build(records, 1, "gzip")
    (batch,) = MemoryRecords(_at_offset(wrapper, 4)).batches()  # inner offsets are 0..5
    assert batch.is_valid()
    assert batch.last_offset == 4
    with pytest.raises(InvalidRecordError, match="less than the last inner message offset"):
        batch.records()
