"""``lz4_decode_block``, with each twin: the LZ4 block decoder for blocks that keep every rule of the block
format, which lets the lz4 reader (:mod:`kafkalog.record.compression`) decode such a block in one pass
instead of cramjam's two calls.

The oracle is cramjam's non-retrying decode, ``cramjam.lz4.decompress_block``: whatever the kernel decodes
(a length, not -1) cramjam must decode within the same capacity to the same bytes.  The kernel may refuse
more than cramjam does: such a block is left to cramjam.
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
        bytes(65_536),
        rng.randbytes(65_536),
        rng.randbytes(1_000) * 40,
        b"ab" * 30_000,
        b" ".join(rng.choice(words) for _ in range(5_000))[:65_536],
        bytes(rng.randrange(4) for _ in range(5_000)),
    ]


def _block(content: bytes) -> bytes:
    return bytes(cramjam.lz4.compress_block(content, store_size=False))


def _decode(impl: ModuleType, block: bytes, capacity: int) -> bytes | None:
    """The kernel's output within ``capacity``, or None when it refuses the block."""
    out = bytearray(capacity)
    length = impl.lz4_decode_block(block, out)
    return None if length < 0 else bytes(out[:length])


def _cramjam(block: bytes, capacity: int) -> bytes | None:
    """cramjam's non-retrying decode within ``capacity`` (padded to it), or None when it refuses the block."""
    try:
        padded = cramjam.lz4.decompress_block(block, output_len=capacity)
    except Exception:  # cramjam's refusal, whatever its type
        return None
    return bytes(padded)


def test_valid_blocks_decode(impl: ModuleType) -> None:
    for content in _contents(random.Random(18)):
        block = _block(content)
        assert _decode(impl, block, 65_536) == content
        assert _decode(impl, block, len(content)) == content
        out = memoryview(bytearray(len(content) + 10))[5:5 + len(content)]
        assert impl.lz4_decode_block(memoryview(bytearray(block)), out) == len(content)
        assert bytes(out) == content
        if content:
            assert _decode(impl, block, len(content) - 1) is None  # does not fit


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
def test_blocks_breaking_a_rule_are_refused(impl: ModuleType, block: bytes, why: str) -> None:
    assert impl.lz4_decode_block(block, bytearray(65_536)) == -1, why


def test_rules_at_the_edges(impl: ModuleType) -> None:
    assert _decode(impl, b"\x00", 0) == b""  # no literals, no match: an empty output
    assert _decode(impl, b"\x30abc", 3) == b"abc"
    assert _decode(impl, b"\x30abc", 2) is None
    # 8 literals, a match of 8 at offset 8 (starting 13 and ending 5 bytes before the end), 5 literals.
    block = b"\x84abcdefgh\x08\x00\x50hello"
    assert _decode(impl, block, 21) == b"abcdefghabcdefghhello" == _cramjam(block, 21)
    assert _decode(impl, block, 20) is None
    # A match of 4 + 15 + 3 at offset 3 repeats its last 3 bytes, its copy overlapping itself.
    block = b"\x3fabc\x03\x00\x03\x50hello"
    assert _decode(impl, block, 100) == b"abc" * 8 + b"a" + b"hello" == _cramjam(block, 100)[:30]
    # 15 + 255 + 3 literals: the length bytes are read until one is not 255.
    literals = bytes(range(256)) + bytes(17)
    assert _decode(impl, b"\xf0\xff\x03" + literals, 1_000) == literals


def test_what_it_decodes_cramjam_decodes_the_same(impl: ModuleType) -> None:
    rng = random.Random(1818)
    decoded = refused = 0
    for content in _contents(rng):
        block = _block(content)
        for _ in range(150 if impl.IMPLEMENTATION == "cython" else 12):
            damaged = bytearray(block or b"\x00")
            for _ in range(rng.randrange(1, 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            capacity = rng.choice([65_536, len(content), len(content) + 3, max(len(content) - 1, 0)])
            ours = _decode(impl, bytes(damaged), capacity)
            if ours is None:
                refused += 1
                continue
            decoded += 1
            theirs = _cramjam(bytes(damaged), capacity)
            assert theirs is not None
            assert theirs[:len(ours)] == ours
            out = bytearray(capacity)
            assert cramjam.lz4.decompress_block_into(bytes(damaged), memoryview(out), output_len=capacity) == len(ours)
    assert decoded and refused


def test_twins_agree_on_damaged_blocks() -> None:
    from kafkalog import _core_py

    compiled: Any = pytest.importorskip("kafkalog._core")
    rng = random.Random(7)
    for content in _contents(rng):
        block = _block(content)
        for _ in range(30):
            damaged = bytearray(block or b"\x00")
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            capacity = rng.choice([65_536, len(content)])
            assert _decode(compiled, bytes(damaged), capacity) == _decode(_core_py, bytes(damaged), capacity)


def test_the_reader_leaves_only_refused_blocks_to_cramjam(monkeypatch: pytest.MonkeyPatch) -> None:
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
    assert calls == []
    # A block ending in a match breaks the format's rules (lz4 itself refuses it): cramjam's error.
    frame = b"\x04\x22\x4d\x18\x60\x40\x82" + struct.pack("<I", 7) + b"\x40abcd\x04\x00" + bytes(4)
    with pytest.raises(CorruptRecordError, match="the block at offset 7 does not decompress"):
        decompress(CompressionType.LZ4, frame, magic=2, max_size=1 << 20)
    assert calls[0] == "decompress_block_into"


def test_damaged_frames_read_the_same_with_the_kernel_and_without() -> None:
    """The reader with the compiled kernel and without it (cramjam's calls for every block): the same
    content, or the same error, for every damaged frame."""
    pytest.importorskip("kafkalog._core")

    def outcome(frame: bytes, max_size: int) -> tuple[str, Any]:
        try:
            return "ok", decompress(CompressionType.LZ4, frame, magic=2, max_size=max_size)
        except Exception as e:  # the error's type and message are the outcome
            return type(e).__name__, str(e)

    rng = random.Random(5)
    words = [b"key-%08d" % rng.randrange(10**6) for _ in range(50)]
    for content in (rng.randbytes(150_000), b" ".join(rng.choice(words) for _ in range(20_000))[:200_000],
                    b"ab" * 70_000):
        frame = compress(CompressionType.LZ4, content, magic=2)
        for _ in range(100):
            damaged = bytearray(frame)
            for _ in range(rng.randrange(1, 4)):
                damaged[rng.randrange(7, len(damaged))] = rng.randrange(256)
            max_size = rng.choice([1 << 20, len(content), len(content) - 1, 70_000])
            with _impl.using("cython"):
                compiled = outcome(bytes(damaged), max_size)
            with _impl.using("python"):
                plain = outcome(bytes(damaged), max_size)
            assert compiled == plain
