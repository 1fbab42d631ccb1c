"""``lz4_block_length``, with each twin: the walk over a raw LZ4 block's sequence headers that lets the lz4
reader (:mod:`kafkalog.record.compression`) decode a block once instead of twice.

The oracle is cramjam's non-retrying decode, ``cramjam.lz4.decompress_block``: whatever the walk vouches for
(a length, not -1) must decode there within the same capacity, to exactly that length, and
``decompress_block_into`` (the call the reader keeps) must report that length and write those bytes.
The walk may refuse more than the decoder does: such a block is only decoded twice.
"""

from __future__ import annotations

import random
import struct
from types import ModuleType
from typing import Any

import cramjam
import pytest

from kafkalog import _impl
from kafkalog.errors import CorruptRecordError
from kafkalog.record.compression import CompressionType, compress, decompress


def _contents(rng: random.Random) -> list[bytes]:
    words = [b"key-%08d" % rng.randrange(10**6) for _ in range(50)]
    return [
        b"",
        b"a",
        b"abcdefghijkl",
        bytes(70_000)[:65_536],
        rng.randbytes(65_536),
        rng.randbytes(1_000) * 40,
        b" ".join(rng.choice(words) for _ in range(5_000))[:65_536],
        bytes(rng.randrange(4) for _ in range(5_000)),
    ]


def _block(content: bytes) -> bytes:
    return bytes(cramjam.lz4.compress_block(content, store_size=False))


def _decodes(block: bytes, capacity: int) -> bytes | None:
    """cramjam's non-retrying decode within ``capacity``, or None when it refuses the block."""
    try:
        padded = cramjam.lz4.decompress_block(block, output_len=capacity)
    except Exception:  # cramjam's refusal, whatever its type
        return None
    return bytes(padded)


def test_valid_blocks_have_their_length(impl: ModuleType) -> None:
    for content in _contents(random.Random(18)):
        block = _block(content)
        assert impl.lz4_block_length(block, 65_536) == len(content)
        assert impl.lz4_block_length(memoryview(bytearray(block)), len(content)) == len(content)
        if content:
            assert impl.lz4_block_length(block, len(content) - 1) == -1  # does not fit


@pytest.mark.parametrize(
    ("block", "why"),
    [
        (b"", "an empty block is no block"),
        (b"\x40abcd\x04\x00", "ends with a match"),
        (b"\x01", "the last token has a match length"),
        (b"\x44abcd\x04\x00\x10h", "fewer than 5 literals after the last match"),
        (b"\x44abcd\x00\x00\x50hello", "offset 0"),
        (b"\x44abcd\x05\x00\x50hello", "offset past the output so far"),
        (b"\x50abc", "literals past the end of the block"),
        (b"\xf0", "literal length bytes missing"),
        (b"\xf0\xff", "literal length bytes run off the end"),
        (b"\x4fabcd\x04\x00", "match length bytes missing"),
        (b"\x44abcd\x04", "half an offset"),
        (b"\x80abcdefgh\x08\x00\x50hello", "the last match starts fewer than 12 bytes before the end"),
    ],
)
def test_blocks_breaking_a_rule_are_not_vouched_for(impl: ModuleType, block: bytes, why: str) -> None:
    assert impl.lz4_block_length(block, 65_536) == -1, why


def test_rules_at_the_edges(impl: ModuleType) -> None:
    assert impl.lz4_block_length(b"\x00", 0) == 0  # no literals, no match: an empty output
    assert impl.lz4_block_length(b"\x30abc", 3) == 3
    assert impl.lz4_block_length(b"\x30abc", 2) == -1
    assert impl.lz4_block_length(b"\x30abc", -1) == -1
    # 8 literals, a match of 8 at offset 8 (starting 13 and ending 5 bytes before the end), 5 literals.
    block = b"\x84abcdefgh\x08\x00\x50hello"
    assert impl.lz4_block_length(block, 21) == 21
    assert impl.lz4_block_length(block, 20) == -1
    assert _decodes(block, 21) == b"abcdefghabcdefghhello"
    # 15 + 255 + 3 literals: the length bytes are read until one is not 255.
    literals = bytes(range(256)) + bytes(17)
    assert impl.lz4_block_length(b"\xf0\xff\x03" + literals, 1_000) == 273


def test_what_it_vouches_for_decodes_to_that_length(impl: ModuleType) -> None:
    rng = random.Random(1818)
    vouched = refused = 0
    for content in _contents(rng):
        block = _block(content)
        for _ in range(150 if impl.IMPLEMENTATION == "cython" else 15):
            damaged = bytearray(block or b"\x00")
            for _ in range(rng.randrange(1, 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            capacity = rng.choice([65_536, len(content), len(content) + 3, max(len(content) - 1, 0)])
            length = impl.lz4_block_length(bytes(damaged), capacity)
            if length < 0:
                refused += 1
                continue
            vouched += 1
            decoded = _decodes(bytes(damaged), capacity)
            assert decoded is not None
            out = bytearray(capacity)
            assert cramjam.lz4.decompress_block_into(bytes(damaged), memoryview(out), output_len=capacity) == length
            assert bytes(out[:length]) == decoded[:length]
    assert vouched and refused


def test_twins_agree_on_damaged_blocks() -> None:
    from kafkalog import _core_py

    compiled: Any = pytest.importorskip("kafkalog._core")
    rng = random.Random(7)
    for content in _contents(rng):
        block = _block(content)
        for _ in range(40):
            damaged = bytearray(block or b"\x00")
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            capacity = rng.choice([65_536, len(content)])
            assert compiled.lz4_block_length(bytes(damaged), capacity) == _core_py.lz4_block_length(
                bytes(damaged), capacity)


def test_the_reader_decodes_a_vouched_block_once_and_any_other_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("kafkalog._core")
    monkeypatch.setattr(_impl, "core", _impl.both()["cython"])
    calls: list[str] = []
    for name in ("decompress_block", "decompress_block_into"):
        original = getattr(cramjam.lz4, name)

        def counting(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(cramjam.lz4, name, counting)
    content = b" ".join(b"key-%08d" % i for i in range(9_000))  # two blocks, both compressed
    assert decompress(CompressionType.LZ4, compress(CompressionType.LZ4, content, magic=2), magic=2,
                      max_size=len(content)) == content
    assert calls == ["decompress_block_into"] * 2
    # A block ending in a match breaks the format's rules (lz4 itself refuses it): decoded twice, refused.
    calls.clear()
    frame = b"\x04\x22\x4d\x18\x60\x40\x82" + struct.pack("<I", 7) + b"\x40abcd\x04\x00" + bytes(4)
    with pytest.raises(CorruptRecordError, match="the block at offset 7 does not decompress"):
        decompress(CompressionType.LZ4, frame, magic=2, max_size=1 << 20)
    assert calls[0] == "decompress_block_into"
