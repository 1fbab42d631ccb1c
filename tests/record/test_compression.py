"""Tests of kafkalog.record.compression: Kafka's codecs, their stream formats, limits and corruption."""

from __future__ import annotations

import gzip
import importlib
import random
import struct
import tracemalloc
import warnings
import zlib
from typing import Any

import cramjam
import lz4.frame
import pytest
import xxhash
import zstandard

from kafkalog.errors import (
    CorruptRecordError,
    RecordTooLargeError,
    UnsupportedCompressionError,
    UnsupportedMagicError,
)
from kafkalog.record.compression import CompressionType, compress, decompress

# kafka-python's package import trips a DeprecationWarning of importlib.resources; only that is muted.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    kafka_codec: Any = importlib.import_module("kafka.codec")

NONE, GZIP, SNAPPY, LZ4, ZSTD = (
    CompressionType.NONE,
    CompressionType.GZIP,
    CompressionType.SNAPPY,
    CompressionType.LZ4,
    CompressionType.ZSTD,
)

LEGAL = [
    (codec, magic) for codec in CompressionType for magic in (0, 1, 2) if codec is not ZSTD or magic == 2
]
COMPRESSED = [(codec, magic) for codec, magic in LEGAL if codec is not NONE]

XERIAL_HEADER = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
MiB = 1 << 20


def _payload(size: int, seed: int) -> bytes:
    """Random bytes interleaved with repeated words: compressible, but not trivially."""
    rng = random.Random(seed)
    words = [b"kafka", b"segment", b"offset", b"record-batch", b"timestamp"]
    parts: list[bytes] = []
    length = 0
    while length < size:
        part = rng.randbytes(rng.randrange(1, 40)) if rng.random() < 0.3 else rng.choice(words) * 3
        parts.append(part)
        length += len(part)
    return b"".join(parts)[:size]


SMALL = b"kafkalog: a small record value"
BIG = _payload(256 * 1024 + 321, seed=1)  # > 200 KiB: several xerial (32 KiB) and LZ4 (64 KiB) blocks
INPUTS = {"empty": b"", "small": SMALL, "big": BIG}


def _ids(pairs: list[tuple[CompressionType, int]]) -> list[str]:
    return [f"{codec.kafka_name}-v{magic}" for codec, magic in pairs]


def _hc(data: bytes) -> int:
    """The LZ4 frame header checksum byte of ``data``, computed here independently of the module."""
    return (xxhash.xxh32(data, seed=0).intdigest() >> 8) & 0xFF


def _lz4_frame(flg: int, bd: int, body: bytes, *, hc: int | None = None) -> bytes:
    descriptor = bytes((flg, bd))
    return LZ4_MAGIC + descriptor + bytes((_hc(descriptor) if hc is None else hc,)) + body


def _lz4_block_words(frame: bytes) -> list[int]:
    """The block size words of a frame as Kafka writes it (7-byte header, no checksums)."""
    words = []
    pos = 7
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            break
        words.append(word)
        pos += word & 0x7FFFFFFF
    assert pos == len(frame)
    return words


def _xerial_block_lengths(stream: bytes) -> list[int]:
    assert stream[:16] == XERIAL_HEADER
    lengths = []
    pos = 16
    while pos < len(stream):
        (length,) = struct.unpack_from(">i", stream, pos)
        lengths.append(length)
        pos += 4 + length
    assert pos == len(stream)
    return lengths


def _error(
    codec: CompressionType | int | str, data: bytes | bytearray, *, magic: int, max_size: int
) -> CorruptRecordError:
    """The CorruptRecordError (or subclass) that decompressing ``data`` raises."""
    with pytest.raises(CorruptRecordError) as info:
        decompress(codec, data, magic=magic, max_size=max_size)
    return info.value


# ---------------------------------------------------------------------------------------------------------
# CompressionType


def test_compression_type_ids_and_kafka_names() -> None:
    assert [(int(c), c.kafka_name) for c in CompressionType] == [
        (0, "none"),
        (1, "gzip"),
        (2, "snappy"),
        (3, "lz4"),
        (4, "zstd"),
    ]


@pytest.mark.parametrize("value", ["gzip", "GZIP", "Gzip", 1, GZIP])
def test_of_accepts_names_ids_and_members(value: str | int | CompressionType) -> None:
    assert CompressionType.of(value) is GZIP


@pytest.mark.parametrize("value", [5, 6, 7, -1, 8, "brotli", "", "1", True, None, 1.0])
def test_of_rejects_unknown_codecs(value: Any) -> None:
    with pytest.raises(UnsupportedCompressionError) as info:
        CompressionType.of(value)
    assert repr(value) in str(info.value)
    assert "unknown compression codec" in str(info.value)


# ---------------------------------------------------------------------------------------------------------
# Round trips and the layouts written


@pytest.mark.parametrize("name", sorted(INPUTS))
@pytest.mark.parametrize(("codec", "magic"), LEGAL, ids=_ids(LEGAL))
def test_round_trip(codec: CompressionType, magic: int, name: str) -> None:
    data = INPUTS[name]
    packed = compress(codec, data, magic=magic)
    assert isinstance(packed, bytes)
    assert decompress(codec, packed, magic=magic, max_size=len(data)) == data
    # Names and ids select the same codec; bytearray and memoryview inputs are read the same.
    assert decompress(codec.kafka_name, bytearray(packed), magic=magic, max_size=len(data)) == data
    assert compress(int(codec), memoryview(data), magic=magic) == packed
    if data:
        with pytest.raises(RecordTooLargeError, match=f"max_size={len(data) - 1} bytes"):
            decompress(codec, packed, magic=magic, max_size=len(data) - 1)
    if codec is not NONE and len(data) > 1000:
        assert len(packed) < len(data) * 0.8


def test_none_is_the_identity_but_keeps_the_limit() -> None:
    assert compress(NONE, BIG, magic=1) == BIG
    assert decompress("none", memoryview(BIG)[10:20], magic=2, max_size=10) == BIG[10:20]
    with pytest.raises(RecordTooLargeError, match="max_size=9 bytes"):
        decompress(NONE, BIG[:10], magic=2, max_size=9)


def test_gzip_writes_one_standard_member() -> None:
    packed = compress(GZIP, BIG, magic=1)
    assert packed[:4] == b"\x1f\x8b\x08\x00"  # magic, deflate, no flags
    assert packed[4:8] == b"\x00\x00\x00\x00"  # no mtime
    assert struct.unpack("<II", packed[-8:]) == (zlib.crc32(BIG), len(BIG))
    assert gzip.decompress(packed) == BIG


def test_gzip_reads_concatenated_members() -> None:
    stream = gzip.compress(b"first member, ") + gzip.compress(b"") + compress(GZIP, SMALL, magic=2)
    assert decompress(GZIP, stream, magic=2, max_size=100) == b"first member, " + SMALL


def test_snappy_writes_xerial_blocks_of_32_kib() -> None:
    packed = compress(SNAPPY, BIG, magic=1)
    lengths = _xerial_block_lengths(packed)
    assert len(lengths) == (len(BIG) + 32767) // 32768 == 9
    pos = 16
    for index, length in enumerate(lengths):
        block = packed[pos + 4 : pos + 4 + length]
        expected = BIG[index * 32768 : (index + 1) * 32768]
        assert bytes(cramjam.snappy.decompress_raw(block)) == expected
        pos += 4 + length
    assert compress(SNAPPY, b"", magic=0) == XERIAL_HEADER


def test_snappy_reads_concatenated_xerial_streams() -> None:
    stream = (
        compress(SNAPPY, b"one ", magic=1) + compress(SNAPPY, b"", magic=1) + compress(SNAPPY, SMALL, magic=1)
    )
    assert decompress(SNAPPY, stream, magic=1, max_size=100) == b"one " + SMALL


def test_lz4_writes_kafkas_frame() -> None:
    packed = compress(LZ4, BIG, magic=2)
    assert packed[:6] == LZ4_MAGIC + b"\x60\x40"  # FLG: v1, independent blocks; BD: 64 KiB
    assert packed[6] == _hc(b"\x60\x40") == 0x82
    assert packed[-4:] == b"\x00\x00\x00\x00"
    words = _lz4_block_words(packed)
    assert len(words) == (len(BIG) + 65535) // 65536 == 5
    assert not any(word & 0x80000000 for word in words)  # all compressible
    assert compress(LZ4, b"", magic=1) == LZ4_MAGIC + b"\x60\x40\x82\x00\x00\x00\x00"


def test_lz4_stores_incompressible_blocks_uncompressed() -> None:
    noise = random.Random(5).randbytes(70000)
    packed = compress(LZ4, noise, magic=1)
    assert _lz4_block_words(packed) == [0x80000000 | 65536, 0x80000000 | (70000 - 65536)]
    assert packed[11 : 11 + 65536] == noise[:65536]
    assert decompress(LZ4, packed, magic=1, max_size=70000) == noise


def test_zstd_writes_a_standard_frame() -> None:
    packed = compress(ZSTD, BIG, magic=2)
    assert packed[:4] == b"\x28\xb5\x2f\xfd"
    assert zstandard.ZstdDecompressor().decompress(packed) == BIG


def test_zstd_reads_several_and_skippable_frames() -> None:
    skippable = struct.pack("<II", 0x184D2A5E, 3) + b"abc"
    stream = skippable + compress(ZSTD, b"one ", magic=2) + skippable + compress(ZSTD, SMALL, magic=2)
    assert decompress(ZSTD, stream, magic=2, max_size=100) == b"one " + SMALL


def test_lz4_reader_takes_every_frame_option_kafka_allows() -> None:
    data = _payload(300_000, seed=9)
    for block_size in (lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX1MB, lz4.frame.BLOCKSIZE_MAX4MB):
        for checksums in (False, True):
            frame = lz4.frame.compress(
                data,
                block_size=block_size,
                block_linked=False,
                block_checksum=checksums,
                content_checksum=checksums,
                store_size=checksums,
            )
            assert decompress(LZ4, frame, magic=2, max_size=len(data)) == data
            assert decompress(LZ4, frame, magic=0, max_size=len(data)) == data


# ---------------------------------------------------------------------------------------------------------
# Interoperability with kafka-python's kafka.codec


def _kafka_python_decode(codec: CompressionType, magic: int, packed: bytes) -> bytes:
    if codec is GZIP:
        return bytes(kafka_codec.gzip_decode(packed))
    if codec is SNAPPY:
        return bytes(kafka_codec.snappy_decode(packed))
    if codec is LZ4:
        decode = kafka_codec.lz4_decode_old_kafka if magic == 0 else kafka_codec.lz4_decode
        return bytes(decode(packed))
    return bytes(kafka_codec.zstd_decode(packed))


def _kafka_python_encode(codec: CompressionType, magic: int, data: bytes) -> bytes:
    if codec is GZIP:
        return bytes(kafka_codec.gzip_encode(data))
    if codec is SNAPPY:
        return bytes(kafka_codec.snappy_encode(data))
    if codec is LZ4:
        encode = kafka_codec.lz4_encode_old_kafka if magic == 0 else kafka_codec.lz4_encode
        return bytes(encode(data))
    return bytes(kafka_codec.zstd_encode(data))


@pytest.mark.parametrize("name", ["small", "big"])
@pytest.mark.parametrize(("codec", "magic"), COMPRESSED, ids=_ids(COMPRESSED))
def test_kafka_python_reads_our_output(codec: CompressionType, magic: int, name: str) -> None:
    data = INPUTS[name]
    assert _kafka_python_decode(codec, magic, compress(codec, data, magic=magic)) == data


@pytest.mark.parametrize("name", sorted(INPUTS))
@pytest.mark.parametrize(("codec", "magic"), COMPRESSED, ids=_ids(COMPRESSED))
def test_we_read_kafka_python_output(codec: CompressionType, magic: int, name: str) -> None:
    data = INPUTS[name]
    packed = _kafka_python_encode(codec, magic, data)
    assert decompress(codec, packed, magic=magic, max_size=len(data)) == data


def test_snappy_output_matches_kafka_python_byte_for_byte() -> None:
    assert compress(SNAPPY, BIG, magic=1) == kafka_codec.snappy_encode(BIG)
    assert compress(SNAPPY, b"", magic=1) == kafka_codec.snappy_encode(b"") == XERIAL_HEADER


@pytest.mark.parametrize("data", [SMALL, BIG, b"x"])
def test_raw_snappy_block_is_read(data: bytes) -> None:
    raw = bytes(kafka_codec.snappy_encode(data, xerial_compatible=False))
    assert raw == bytes(cramjam.snappy.compress_raw(data))
    assert decompress(SNAPPY, raw, magic=1, max_size=len(data)) == data


# ---------------------------------------------------------------------------------------------------------
# LZ4 and magic 0: the broken header checksum of Kafka's 0.8/0.9 writer


def test_lz4_magic_0_writes_the_broken_header_checksum() -> None:
    old = compress(LZ4, SMALL, magic=0)
    new = compress(LZ4, SMALL, magic=1)
    broken = _hc(LZ4_MAGIC + b"\x60\x40")  # xxh32 over the magic bytes and the descriptor
    correct = _hc(b"\x60\x40")  # xxh32 over the descriptor only
    assert (broken, correct) == (0x1A, 0x82)
    assert old[6] == broken
    assert new[6] == correct
    assert old[:6] + old[7:] == new[:6] + new[7:]
    assert old == kafka_codec.lz4_encode_old_kafka(b"")[:7] + new[7:]


def test_lz4_magic_0_reads_both_checksums_and_magic_1_only_the_correct_one() -> None:
    old = compress(LZ4, BIG, magic=0)
    new = compress(LZ4, BIG, magic=2)
    assert decompress(LZ4, old, magic=0, max_size=len(BIG)) == BIG
    assert decompress(LZ4, new, magic=0, max_size=len(BIG)) == BIG
    assert decompress(LZ4, new, magic=1, max_size=len(BIG)) == BIG
    for magic in (1, 2):
        error = _error(LZ4, old, magic=magic, max_size=len(BIG))
        assert type(error) is CorruptRecordError
        assert "descriptor checksum mismatch: HC byte 0x1a, descriptor hashes to 0x82" in str(error)


# ---------------------------------------------------------------------------------------------------------
# Limits: decompression bombs


BOMB_CASES = [(GZIP, 1), (SNAPPY, 0), (LZ4, 0), (LZ4, 2), (ZSTD, 2)]


@pytest.mark.parametrize(("codec", "magic"), BOMB_CASES, ids=_ids(BOMB_CASES))
def test_bomb_is_refused_within_bounded_memory(
    codec: CompressionType, magic: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb = compress(codec, bytes(8 * MiB), magic=magic)
    assert len(bomb) < MiB
    # cramjam's output buffers live outside Python's allocator, so count what it decodes as well.
    decoded: list[int] = []
    for module, name in ((cramjam.snappy, "decompress_raw"), (cramjam.lz4, "decompress_block")):
        original = getattr(module, name)

        def counting(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            result = _original(*args, **kwargs)
            decoded.append(len(result))
            return result

        monkeypatch.setattr(module, name, counting)
    tracemalloc.start()
    try:
        with pytest.raises(RecordTooLargeError) as info:
            decompress(codec, bomb, magic=magic, max_size=MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"max_size={MiB} bytes" in str(info.value)
    assert peak < 4 * MiB
    assert sum(decoded) <= MiB + 64 * 1024
    if codec is SNAPPY:
        assert decoded  # the wrapper did see the decoding (lz4 blocks that keep the format's rules are
        # decoded by the compiled core, into the output Python's count holds)


def test_raw_snappy_bomb_is_refused_from_its_length_preamble() -> None:
    bomb = bytes(cramjam.snappy.compress_raw(bytes(8 * MiB)))
    assert bomb[:4] == b"\x80\x80\x80\x04"  # varint 8 MiB
    with pytest.raises(RecordTooLargeError, match=r"max_size=1048576 bytes \(at least 8388608 bytes\)"):
        decompress(SNAPPY, bomb, magic=2, max_size=MiB)


def test_zstd_declared_content_size_is_checked_before_decoding() -> None:
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(bytes(3 * MiB))
    with pytest.raises(RecordTooLargeError, match=r"max_size=65536 bytes \(at least 3145728 bytes\)"):
        decompress(ZSTD, frame, magic=2, max_size=64 * 1024)


def test_lz4_declared_content_size_is_checked_before_decoding() -> None:
    frame = lz4.frame.compress(bytes(3 * MiB), store_size=True, block_linked=False)
    with pytest.raises(RecordTooLargeError, match=r"max_size=1000 bytes \(at least 3145728 bytes\)"):
        decompress(LZ4, frame, magic=2, max_size=1000)


def test_limit_of_zero_allows_only_empty_content() -> None:
    for codec, magic in COMPRESSED:
        assert decompress(codec, compress(codec, b"", magic=magic), magic=magic, max_size=0) == b""
        with pytest.raises(RecordTooLargeError, match="max_size=0 bytes"):
            decompress(codec, compress(codec, b"x", magic=magic), magic=magic, max_size=0)


# ---------------------------------------------------------------------------------------------------------
# Corruption


@pytest.mark.parametrize(("codec", "magic"), COMPRESSED, ids=_ids(COMPRESSED))
def test_truncated_streams_are_corrupt(codec: CompressionType, magic: int) -> None:
    packed = compress(codec, BIG, magic=magic)
    for cut in (len(packed) - 1, len(packed) - 4, len(packed) // 2, 20):
        error = _error(codec, packed[:cut], magic=magic, max_size=len(BIG))
        assert type(error) is CorruptRecordError
        assert f"corrupt {codec.kafka_name} payload: truncated" in str(error), cut
    # Shorter cuts; a xerial stream cut after its 16-byte header would be a valid empty stream.
    for cut in (1, 3, 6, 11, 15):
        error = _error(codec, packed[:cut], magic=magic, max_size=len(BIG))
        assert f"corrupt {codec.kafka_name} payload" in str(error), cut


@pytest.mark.parametrize(("codec", "magic"), COMPRESSED, ids=_ids(COMPRESSED))
def test_empty_payload_is_corrupt(codec: CompressionType, magic: int) -> None:
    error = _error(codec, b"", magic=magic, max_size=100)
    assert type(error) is CorruptRecordError
    expected = "truncated: 0 bytes are too few" if codec is LZ4 else "empty payload"
    assert expected in str(error)


@pytest.mark.parametrize(
    ("position", "value", "message"),
    [
        (0, 0x1E, "incorrect header check"),
        (2, 0x07, "unknown compression method"),
        (-8, None, "incorrect data check"),  # CRC-32
        (-1, None, "incorrect length check"),  # ISIZE
    ],
)
def test_gzip_header_and_trailer_damage(position: int, value: int | None, message: str) -> None:
    damaged = bytearray(compress(GZIP, BIG, magic=1))
    damaged[position] = damaged[position] ^ 0xFF if value is None else value
    error = _error(GZIP, damaged, magic=1, max_size=len(BIG))
    assert type(error) is CorruptRecordError
    assert "corrupt gzip payload: inflating member 1" in str(error)
    assert message in str(error)


@pytest.mark.parametrize(
    ("position", "value", "message"),
    [
        (0, 0x05, "invalid frame magic 0x184d2205"),
        (4, 0xA0, "frame version 2 is unsupported"),
        (4, 0x40, "Dependent block stream is unsupported"),
        (4, 0x61, "reserved bits of FLG must be 0"),
        (5, 0x30, "block size value must be between 4 and 7, got 3"),
        (5, 0x41, "reserved bits of BD must be 0"),
        (5, 0xC0, "reserved bits of BD must be 0"),
        (6, 0x83, "descriptor checksum mismatch"),
    ],
)
def test_lz4_header_damage(position: int, value: int, message: str) -> None:
    damaged = bytearray(compress(LZ4, BIG, magic=2))
    damaged[position] = value
    error = _error(LZ4, damaged, magic=2, max_size=len(BIG))
    assert type(error) is CorruptRecordError
    assert message in str(error)


def test_lz4_block_larger_than_the_frame_maximum_is_corrupt() -> None:
    for word in (65537, 0x80000000 | 65537, 0x7FFFFFFF):
        frame = _lz4_frame(0x60, 0x40, struct.pack("<I", word) + bytes(70000) + bytes(4))
        error = _error(LZ4, frame, magic=2, max_size=MiB)
        assert type(error) is CorruptRecordError
        assert f"Block size {word & 0x7FFFFFFF} exceeded max: 65536" in str(error)
    # The same size is fine where BD allows 256 KiB blocks.
    frame = _lz4_frame(0x60, 0x50, struct.pack("<I", 0x80000000 | 65537) + bytes(65537) + bytes(4))
    assert decompress(LZ4, frame, magic=2, max_size=MiB) == bytes(65537)


def test_lz4_checksums_and_content_size_are_verified() -> None:
    data = _payload(150_000, seed=4)
    frame = lz4.frame.compress(data, block_linked=False, block_checksum=True, content_checksum=True)
    assert frame[4] & 0x14 == 0x14
    damaged = bytearray(frame)
    damaged[-1] ^= 0x01  # last byte of the content checksum
    assert "Content checksum mismatch" in str(_error(LZ4, damaged, magic=2, max_size=MiB))
    (first_word,) = struct.unpack_from("<I", frame, 15)  # header with content size is 15 bytes
    damaged = bytearray(frame)
    damaged[15 + 4 + (first_word & 0x7FFFFFFF)] ^= 0x01  # first byte of the first block's checksum
    error = _error(LZ4, damaged, magic=2, max_size=MiB)
    assert "Block checksum mismatch for the block at offset 15" in str(error)
    # A content size that disagrees with the content (header checksum fixed up).
    damaged = bytearray(frame)
    damaged[6:14] = struct.pack("<Q", len(data) - 1)
    damaged[14] = _hc(bytes(damaged[4:14]))
    error = _error(LZ4, damaged, magic=2, max_size=MiB)
    assert f"content size of {len(data) - 1} bytes but holds {len(data)}" in str(error)


def test_lz4_corrupt_block_data_is_never_read_as_a_size_prefixed_block() -> None:
    # cramjam's decompress_block_into retries a failing block as if it had a 4-byte size prefix; this
    # block is garbage followed by a valid block and must not decode to that block's content.
    inner = bytes(cramjam.lz4.compress_block(b"hello hello hello", store_size=False))
    block = b"\x05\x00\x00\x00" + inner
    frame = _lz4_frame(0x60, 0x40, struct.pack("<I", len(block)) + block + bytes(4))
    error = _error(LZ4, frame, magic=2, max_size=MiB)
    assert type(error) is CorruptRecordError
    assert "the block at offset 7 does not decompress" in str(error)


def test_xerial_block_lengths_are_checked() -> None:
    valid = compress(SNAPPY, SMALL, magic=1)
    cases = [
        (XERIAL_HEADER + struct.pack(">i", -2) + b"abcd", "negative xerial block length -2 at offset 16"),
        (XERIAL_HEADER + struct.pack(">i", 1000) + b"abc", "claims 1000 bytes but 3 remain"),
        (valid + struct.pack(">i", 7), "claims 7 bytes but 0 remain"),
        (valid + b"\x00\x00", "2 bytes at offset"),
        (
            XERIAL_HEADER + struct.pack(">i", 0),
            "the xerial block at offset 16 ends inside its length preamble",
        ),
        (XERIAL_HEADER + b"\x82SNAPPY\x00\x00\x00", "incomplete xerial header at offset 16"),
    ]
    for stream, message in cases:
        error = _error(SNAPPY, stream, magic=1, max_size=MiB)
        assert type(error) is CorruptRecordError
        assert message in str(error)


def test_snappy_damage_is_corrupt() -> None:
    packed = bytearray(compress(SNAPPY, BIG, magic=1))
    # A damaged magic byte makes the stream a (bad) raw block, as in snappy-java.
    damaged = bytearray(packed)
    damaged[1] = ord("T")
    error = _error(SNAPPY, damaged, magic=1, max_size=len(BIG))
    assert type(error) is CorruptRecordError
    assert "raw snappy block" in str(error)
    # A block whose stated length disagrees with its content.
    damaged = bytearray(packed)
    damaged[20] ^= 0x01  # first byte of the first block's varint
    error = _error(SNAPPY, damaged, magic=1, max_size=len(BIG))
    assert "xerial block at offset 16" in str(error)
    # An over-long varint.
    error = _error(SNAPPY, b"\xff\xff\xff\xff\xff\x01abc", magic=1, max_size=MiB)
    assert "invalid length preamble" in str(error)


def test_zstd_damage_is_corrupt() -> None:
    packed = compress(ZSTD, BIG, magic=2)
    cases = [
        (b"\x29" + packed[1:], "not a zstd frame: magic 0xfd2fb529"),
        (packed[:4] + bytes((packed[4] | 0x08,)) + packed[5:], "reserved bit set in the frame header"),
        (packed + b"\x00\x01\x02\x03", "4 bytes after the last frame"),
        (packed + packed[:3], "3 bytes at offset"),
        (struct.pack("<II", 0x184D2A50, 100) + b"x", "skippable frame at offset 0 runs past the end"),
    ]
    for stream, message in cases:
        error = _error(ZSTD, stream, magic=2, max_size=len(BIG))
        assert type(error) is CorruptRecordError
        assert message in str(error)
    # Damage inside a compressed block is found by libzstd and reported as ours.
    damaged = bytearray(packed)
    damaged[len(packed) // 2] ^= 0xFF
    damaged[len(packed) // 2 + 1] ^= 0xFF
    error = _error(ZSTD, damaged, magic=2, max_size=len(BIG))
    assert "corrupt zstd payload" in str(error)
    assert isinstance(error.__cause__, zstandard.ZstdError)


def test_trailing_bytes_are_corrupt() -> None:
    cases = [
        (
            GZIP,
            1,
            b"\x1f\x8b\x08",
            "the 3 bytes after gzip member 1 (from offset 50) are not a complete gzip member",
        ),
        (GZIP, 2, b"garbage!", "inflating member 2 (starting at offset 50) failed"),
        (LZ4, 1, b"\x00\x00\x00", "3 bytes after the end of the frame (offset 45)"),
        (LZ4, 0, LZ4_MAGIC, "4 bytes after the end of the frame (offset 45)"),
        (ZSTD, 2, b"\x00\x00\x00", "truncated: 3 bytes at offset 39 are too few for a frame magic"),
        (ZSTD, 2, b"\x00\x00\x00\x00", "4 bytes after the last frame (offset 39) are not a frame"),
    ]
    for codec, magic, tail, message in cases:
        stream = compress(codec, SMALL, magic=magic) + tail
        error = _error(codec, stream, magic=magic, max_size=100)
        assert type(error) is CorruptRecordError
        assert message in str(error), codec


@pytest.mark.parametrize("codec", [5, 6, 7, -1, "brotli"])
def test_unknown_codecs_are_unsupported(codec: int | str) -> None:
    with pytest.raises(UnsupportedCompressionError, match=f"unknown compression codec {codec!r}"):
        compress(codec, SMALL, magic=2)
    with pytest.raises(UnsupportedCompressionError, match=f"unknown compression codec {codec!r}"):
        decompress(codec, SMALL, magic=2, max_size=100)


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_needs_magic_2(magic: int) -> None:
    message = f"ZStandard compression is not supported for magic {magic}"
    with pytest.raises(UnsupportedCompressionError, match=message):
        compress(ZSTD, SMALL, magic=magic)
    with pytest.raises(UnsupportedCompressionError, match=message):
        decompress("zstd", compress(ZSTD, SMALL, magic=2), magic=magic, max_size=100)


@pytest.mark.parametrize("magic", [3, -1, 255])
def test_unknown_magic_is_refused(magic: int) -> None:
    with pytest.raises(UnsupportedMagicError, match=f"unsupported message format magic {magic}"):
        compress(GZIP, SMALL, magic=magic)
    with pytest.raises(UnsupportedMagicError, match=f"unsupported message format magic {magic}"):
        decompress(GZIP, compress(GZIP, SMALL, magic=2), magic=magic, max_size=100)


def test_negative_limit_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="max_size must be a non-negative int, got -1"):
        decompress(GZIP, compress(GZIP, SMALL, magic=2), magic=2, max_size=-1)


# ---------------------------------------------------------------------------------------------------------
# Random and mutated input


def test_random_and_mutated_input_raises_only_kafkalog_errors() -> None:
    rng = random.Random(20240607)
    samples = [b"", b"k", SMALL, _payload(70_000, seed=2)]
    outcomes = {"ok": 0, "corrupt": 0, "too large": 0}
    for codec, magic in COMPRESSED:
        valid = [compress(codec, sample, magic=magic) for sample in samples]
        valid.append(_kafka_python_encode(codec, magic, samples[3]))
        for _ in range(80):
            kind = rng.randrange(5)
            if kind == 0:
                data = bytearray(rng.randbytes(rng.randrange(64)))
            else:
                data = bytearray(rng.choice(valid))
                if kind == 1 and data:
                    for _ in range(rng.randrange(1, 4)):
                        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
                elif kind == 2:
                    del data[rng.randrange(len(data) + 1) :]
                elif kind == 3:
                    at = rng.randrange(len(data) + 1)
                    data[at:at] = rng.randbytes(rng.randrange(1, 8))
                else:
                    data[: rng.randrange(1, 20)] = rng.randbytes(rng.randrange(1, 20))
            max_size = rng.choice([0, 17, 4096, MiB])
            try:
                result = decompress(codec, data, magic=magic, max_size=max_size)
            except RecordTooLargeError as exc:
                assert f"max_size={max_size} bytes" in str(exc)
                outcomes["too large"] += 1
            except CorruptRecordError as exc:
                assert str(exc).startswith(f"corrupt {codec.kafka_name} payload")
                outcomes["corrupt"] += 1
            else:
                assert len(result) <= max_size
                outcomes["ok"] += 1
    assert sum(outcomes.values()) == 80 * len(COMPRESSED)
    assert outcomes["corrupt"] > 200
    assert outcomes["too large"] > 20
    assert outcomes["ok"] > 5


def test_zstd_one_sized_frame_decodes_as_the_stream_does() -> None:
    """A single frame stating its content size is decoded in one libzstd call; a frame that states none, or a
    payload of several, through the stream: the same bytes either way, and a frame whose stated size is
    wrong gets the streaming decode's error."""
    sized = compress(ZSTD, BIG, magic=2)
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(BIG)
    for packed in (sized, unsized, sized + sized):
        expected = BIG * (2 if packed == sized + sized else 1)
        assert decompress(ZSTD, packed, magic=2, max_size=len(expected)) == expected
    # The frame header zstandard writes here: magic, descriptor (single segment, a 4-byte content size), size.
    assert sized[4] == 0xA0
    assert int.from_bytes(sized[5:9], "little") == len(BIG)
    wrong = sized[:5] + (len(BIG) - 1).to_bytes(4, "little") + sized[9:]
    error = _error(ZSTD, wrong, magic=2, max_size=len(BIG))
    assert type(error) is CorruptRecordError
    assert "corrupt zstd payload: decoding after" in str(error)
