"""The compression codecs of Kafka's message formats.

A compressed v0/v1 wrapper message carries a compressed message set as its value, and a compressed v2
record batch carries its records compressed after the batch header.  This module turns those payloads
into bytes and back, byte for byte in the stream formats the Java broker and clients write and read.

Kafka sources mirrored (Apache Kafka 3.8.0, ``clients/src/main/java/org/apache/kafka/common/``):

* ``record/CompressionType.java`` - the codec ids (the low three bits of the attributes) and names.
* ``compress/GzipCompression.java`` and ``compress/GzipOutputStream.java`` - ``java.util.zip``'s
  ``GZIPOutputStream`` at ``Deflater.DEFAULT_COMPRESSION`` and ``GZIPInputStream``.
* ``compress/SnappyCompression.java`` - xerial snappy-java's ``SnappyOutputStream`` and
  ``SnappyInputStream`` (snappy-java 1.1.10.5 in Kafka 3.8).
* ``compress/Lz4Compression.java``, ``compress/Lz4BlockOutputStream.java`` and
  ``compress/Lz4BlockInputStream.java`` (called ``KafkaLZ4BlockOutputStream`` / ``KafkaLZ4BlockInputStream``
  before 3.8) - Kafka's own partial LZ4 frame writer and reader.
* ``compress/ZstdCompression.java`` - zstd-jni's ``ZstdOutputStreamNoFinalizer`` at level 3 and
  ``ZstdInputStreamNoFinalizer``.
* ``record/MemoryRecordsBuilder.java`` and ``record/AbstractLegacyRecordBatch.java`` - zstd exists only in
  message format v2 (magic 2).

Stream formats (all integers unsigned unless marked signed):

gzip (id 1)
    One gzip member (RFC 1952): ``1f 8b 08 FLG MTIME(4) XFL OS``, a raw deflate stream, then CRC-32 and
    ISIZE (both 4 bytes, little-endian).  Written by zlib at its default level 6, the level Java's
    ``Deflater.DEFAULT_COMPRESSION`` means.  The header's OS byte is zlib's 3 where Java writes 0 or 255
    (depending on the JDK); readers ignore it.  Reading accepts several members one after another, as
    ``GZIPInputStream`` does, and checks every member's CRC-32 and ISIZE.

snappy (id 2), xerial framing
    ``82 'SNAPPY' 00`` (8 bytes), version int32 BE (1), minimum compatible version int32 BE (1), then
    blocks, each an int32 BE (signed) length followed by that many bytes of one raw snappy block.  The
    writer gives every block at most 32 KiB of input (``SnappyOutputStream.DEFAULT_BLOCK_SIZE``) and
    writes the 16-byte header even for empty input.  A raw snappy block starts with its uncompressed
    length as a little-endian base-128 varint of at most 5 bytes (at most 2**32 - 1), which is read and
    checked against the limit before the block is decoded.  Reading: a payload of at least 16 bytes that
    starts with the 8 magic bytes is xerial-framed (the two version words are not checked: snappy-java
    1.1.10 does not check them in the first header and kafka-python never does; a second header where a
    block length is expected starts a concatenated stream, as in snappy-java); any other non-empty
    payload is one raw snappy block (snappy-java falls back to the same, and some non-Java producers write
    this).  A xerial stream cut exactly between blocks is still a valid, shorter stream: the framing has
    no end mark, so only the record count of the enclosing batch can tell.

lz4 (id 3), Kafka's LZ4 frame
    ``04 22 4d 18`` (magic 0x184D2204 little-endian), FLG, BD, [content size, 8 bytes LE, when FLG bit 3
    is set], HC, blocks, end mark, [content checksum, 4 bytes LE, when FLG bit 2 is set].
    FLG: bits 7-6 version (must be 01), bit 5 block independence (must be 1: "Dependent block stream is
    unsupported"), bit 4 block checksum, bit 3 content size, bit 2 content checksum, bits 1-0 reserved
    (must be 0).  BD: bit 7 and bits 3-0 reserved (must be 0), bits 6-4 the block size id 4..7 for a
    maximum block of 64 KiB, 256 KiB, 1 MiB or 4 MiB.  HC = (xxh32(FLG..end of descriptor, seed 0) >> 8)
    & 0xFF.  Each block is a size word (uint32 LE; bit 31 set = the data is stored uncompressed, bits 30-0
    the length, never above the maximum block size), the block data (a raw LZ4 block holding at most the
    maximum block size), and with FLG bit 4 the xxh32 of the block data.  The end mark is the word 0.
    The content checksum is xxh32 over all of the decompressed content.
    Kafka writes FLG 0x60 (version 1, independent blocks, no checksums, no content size), BD 0x40
    (64 KiB), input cut into 64 KiB blocks, a block stored uncompressed when compression does not make it
    smaller, and no content checksum.  For magic 0 Kafka keeps the broken header checksum of its 0.8/0.9
    writer, which hashed the magic bytes too: HC = (xxh32(bytes 0..end of BD) >> 8) & 0xFF; for magic 0
    the reader ignores HC, so it takes both forms.  For magic 1 and 2 HC must be right.  Block and content
    checksums are verified when their flags are set (Kafka 3.8 verifies block checksums only), and a
    content size, when present, must match the content.

zstd (id 4)
    Standard zstd frames (RFC 8878): magic ``28 b5 2f fd``, frame header, blocks each with a 3-byte
    header (last-block bit, type raw/RLE/compressed, size), optional 4-byte checksum.  Written at level 3,
    zstd-jni's default.  Reading accepts several frames and skippable frames (magic 0x184D2A5?), as
    zstd-jni's stream does.  Frame and block headers are walked here first, so a truncated frame is
    reported (the ``zstandard`` stream reader ends silently on one), and so are bytes after the last
    frame; the declared content sizes are checked against the limit before anything is decoded.

Limits.  ``decompress`` never returns more than ``max_size`` bytes: output is produced in bounded pieces
(64 KiB for gzip and zstd, one block for snappy and LZ4) and the size is checked before each piece is
kept, so a payload claiming or producing more raises :class:`RecordTooLargeError` (whose message names
the limit) after allocating at most about ``max_size`` plus one piece.  LZ4 blocks are decoded in place
into one buffer sized ahead from the block size words (what the blocks can decode to, at most
``max_size + 1``).  An LZ4 block that fails to decode
into the room left under the limit is reported as too large, since it cannot be told apart from a corrupt
block without decoding past the limit.  The output grows in place in one ``bytearray``
(:func:`decompress_buffer`, what the record readers use), so it is held once; :func:`decompress` returns
it as ``bytes``, a second copy for a moment.  A zstd payload of one frame that states its content size
(what Kafka's and kafkalog's writers produce) is decoded by one libzstd call into a buffer of exactly that
size, already checked against the limit; the pieces are for the others, and for a frame that fails there,
so that its error is the streaming decode's.  libzstd's own window buffer is outside this count; it is bounded by
libzstd's default window limit (128 MiB), as in zstd-jni, and only the pages decoded into are touched.

Errors.  Malformed payloads raise :class:`CorruptRecordError` naming the codec, what is wrong and the
offset inside the compressed payload; no exception of zlib, cramjam or zstandard leaves this module.
Unknown codec ids and zstd below magic 2 raise :class:`UnsupportedCompressionError`; a magic other than 0,
1 or 2 raises :class:`UnsupportedMagicError`.  Where Kafka is more lenient the reader here is strict:
bytes after the last gzip member, after the LZ4 end mark (and its content checksum), after the last zstd
frame, and a partial block length at the end of a xerial stream are all corrupt, although the Java
streams stop reading before them.
"""

from __future__ import annotations

import enum
import struct
import threading
import zlib
from types import TracebackType
from typing import Literal

import cramjam
import xxhash
import zstandard

from kafkalog import _impl
from kafkalog.errors import (
    CorruptRecordError,
    KafkaLogError,
    RecordTooLargeError,
    UnsupportedCompressionError,
    UnsupportedMagicError,
)

__all__ = ["CompressionType", "compress", "decompress", "decompress_buffer"]

_Bytes = bytes | bytearray | memoryview

# Output (gzip, zstd) and input (gzip) is handled in pieces of this size.
_PIECE = 64 * 1024

_GZIP_WBITS = 31  # zlib: gzip wrapper, 32 KiB window
_GZIP_LEVEL = zlib.Z_DEFAULT_COMPRESSION  # Deflater.DEFAULT_COMPRESSION, zlib level 6

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")
_XERIAL_HEADER_SIZE = len(_XERIAL_HEADER)  # 16
_XERIAL_BLOCK_SIZE = 32 * 1024
_SNAPPY_MAX_LENGTH = 0xFFFFFFFF

_LZ4_MAGIC = b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian
_LZ4_VERSION = 1
_LZ4_FLG_BLOCK_INDEPENDENCE = 0x20
_LZ4_FLG_BLOCK_CHECKSUM = 0x10
_LZ4_FLG_CONTENT_SIZE = 0x08
_LZ4_FLG_CONTENT_CHECKSUM = 0x04
_LZ4_FLG_RESERVED = 0x03
_LZ4_BD_RESERVED = 0x8F
_LZ4_BLOCKSIZE_64KB = 4
_LZ4_WRITE_FLG = (_LZ4_VERSION << 6) | _LZ4_FLG_BLOCK_INDEPENDENCE  # 0x60
_LZ4_WRITE_BD = _LZ4_BLOCKSIZE_64KB << 4  # 0x40
_LZ4_STORED = 0x80000000  # Lz4BlockOutputStream.LZ4_FRAME_INCOMPRESSIBLE_MASK
_LZ4_END_MARK = b"\x00\x00\x00\x00"
# An LZ4 sequence of n bytes decodes to fewer than 255 * n + 20 bytes (each byte of a length adds at most 255).
_LZ4_MAX_EXPANSION = 256
# The maximum block of the frames Kafka writes (BD 0x40); _LZ4_KAFKA_HEADER is their whole header.
_LZ4_KAFKA_MAX_BLOCK = 64 * 1024

_ZSTD_LEVEL = 3
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50  # low four bits free
_ZSTD_BLOCK_RESERVED = 3
_ZSTD_LOCAL = threading.local()  # see _zstd_decompressor


class CompressionType(enum.IntEnum):
    """Kafka's codec ids, as stored in the low three bits of a message's or batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name Kafka uses in configs and ``CompressionType.name``: ``"none"``, ``"gzip"``, ..."""
        return self.name.lower()

    @classmethod
    def of(cls, value: str | int | CompressionType) -> CompressionType:
        """The codec named by a Kafka name (any case), an id 0-4, or a member.

        Anything else raises :class:`UnsupportedCompressionError` naming the value.
        """
        if type(value) is int and 0 <= value <= 4:
            # A batch's codec id, once a batch read: a tuple lookup where cls(value) costs a microsecond.
            return _CODECS[value]
        if isinstance(value, cls):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if 0 <= value <= 4:
                return cls(value)
        elif isinstance(value, str):
            member = cls.__members__.get(value.upper())
            if member is not None:
                return member
        raise UnsupportedCompressionError(
            f"unknown compression codec {value!r}: expected one of none, gzip, snappy, lz4, zstd or an id 0-4"
        )


_CODECS = tuple(CompressionType)  # by id, 0-4


def compress(
    codec: CompressionType | int | str, data: bytes | bytearray | memoryview, *, magic: int
) -> bytes:
    """Compress ``data`` the way Kafka's writer does for ``codec`` in message format ``magic``."""
    ctype = _resolve(codec, magic)
    view = _byte_view(data)
    if ctype is CompressionType.NONE:
        return bytes(view)
    if ctype is CompressionType.GZIP:
        return _gzip_compress(view)
    if ctype is CompressionType.SNAPPY:
        return _snappy_compress(view)
    if ctype is CompressionType.LZ4:
        return _lz4_compress(view, magic)
    return _zstd_compress(view)


def decompress(
    codec: CompressionType | int | str,
    data: bytes | bytearray | memoryview,
    *,
    magic: int,
    max_size: int,
) -> bytes:
    """Decompress a ``codec`` payload of message format ``magic`` into at most ``max_size`` bytes.

    Raises :class:`RecordTooLargeError` when the content is larger than ``max_size`` (checked while
    decompressing, see the module notes on limits), :class:`CorruptRecordError` when the payload is
    malformed, :class:`UnsupportedCompressionError` for a codec that does not exist or that this message
    format cannot carry, and :class:`UnsupportedMagicError` for a magic other than 0, 1 and 2.
    """
    return bytes(decompress_buffer(codec, data, magic=magic, max_size=max_size))


def decompress_buffer(
    codec: CompressionType | int | str,
    data: bytes | bytearray | memoryview,
    *,
    magic: int,
    max_size: int,
) -> bytes | bytearray:
    """:func:`decompress` into a ``bytearray`` that grew in place as the pieces came: the output held once,
    not joined from its pieces at the end, which for a batch that decompresses to hundreds of MiB is the
    difference between holding it once and twice.  A zstd frame decoded in one call (see the module notes)
    comes as the ``bytes`` libzstd wrote, not copied."""
    ctype = _resolve(codec, magic)
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 0:
        raise ValueError(f"max_size must be a non-negative int, got {max_size!r}")
    view = _byte_view(data)
    out = _Output(ctype.kafka_name, max_size)
    if ctype is CompressionType.NONE:
        out.reserve(len(view))
        return bytearray(view)
    if ctype is CompressionType.GZIP:
        _gzip_decompress(view, out)
    elif ctype is CompressionType.SNAPPY:
        _snappy_decompress(view, out)
    elif ctype is CompressionType.LZ4:
        _lz4_decompress(view, magic, out)
    else:
        _zstd_decompress(view, out)
    return out.result()


# ---------------------------------------------------------------------------------------------------------
# Shared helpers


def _resolve(codec: CompressionType | int | str, magic: int) -> CompressionType:
    ctype = CompressionType.of(codec)
    if isinstance(magic, bool) or not isinstance(magic, int) or magic not in (0, 1, 2):
        raise UnsupportedMagicError(f"unsupported message format magic {magic!r}: expected 0, 1 or 2")
    if ctype is CompressionType.ZSTD and magic < 2:
        raise UnsupportedCompressionError(
            f"ZStandard compression is not supported for magic {magic}: zstd needs message format v2"
        )
    return ctype


def _byte_view(data: _Bytes) -> memoryview:
    """A flat unsigned-byte view of ``data`` (no copy)."""
    return memoryview(data).cast("B")


def _corrupt(codec: str, message: str) -> CorruptRecordError:
    return CorruptRecordError(f"corrupt {codec} payload: {message}")


def _is_library_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of a codec library rather than an interrupt or an exhausted memory.

    pyo3 (cramjam) reports a Rust panic as ``PanicException``, which derives from ``BaseException``.
    """
    if isinstance(exc, (KafkaLogError, MemoryError)):
        return False
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


class _LibraryErrors:
    """``with _LibraryErrors(codec, what):`` turns a codec library's exception into CorruptRecordError."""

    __slots__ = ("_codec", "_what")

    def __init__(self, codec: str, what: str) -> None:
        self._codec = codec
        self._what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        if exc is None or not _is_library_failure(exc):
            return False
        detail = str(exc) or type(exc).__name__
        raise _corrupt(self._codec, f"{self._what} failed: {detail}") from exc


class _Output:
    """Collects decompressed pieces in one growing ``bytearray`` (CPython over-allocates it and the C
    allocator moves large blocks by remapping pages, so it grows without a second copy) and refuses to hold
    more than ``limit`` bytes."""

    __slots__ = ("_out", "codec", "limit")

    def __init__(self, codec: str, limit: int) -> None:
        self.codec = codec
        self.limit = limit
        self._out: bytes | bytearray = bytearray()

    @property
    def size(self) -> int:
        return len(self._out)

    @property
    def room(self) -> int:
        """How many more bytes may be added."""
        return self.limit - self.size

    def too_large(self, at_least: int) -> RecordTooLargeError:
        return RecordTooLargeError(
            f"{self.codec} payload decompresses to more than max_size={self.limit} bytes "
            f"(at least {at_least} bytes)"
        )

    def reserve(self, count: int) -> None:
        """Raise RecordTooLargeError unless ``count`` more bytes fit."""
        if count > self.room:
            raise self.too_large(self.size + count)

    def add(self, piece: _Bytes | cramjam.Buffer) -> None:
        self.reserve(len(piece))
        self._out += piece

    def whole(self, content: bytes | bytearray) -> None:
        """Take ``content`` as the whole output (nothing was added yet), without copying it."""
        self.reserve(len(content))
        self._out = content

    def result(self) -> bytes | bytearray:
        return self._out


def _u32le(view: memoryview, pos: int) -> int:
    return int.from_bytes(view[pos : pos + 4], "little")


# ---------------------------------------------------------------------------------------------------------
# gzip


def _gzip_compress(view: memoryview) -> bytes:
    deflater = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    return deflater.compress(view) + deflater.flush()


def _gzip_decompress(view: memoryview, out: _Output) -> None:
    total = len(view)
    if total == 0:
        raise _corrupt("gzip", "empty payload (a gzip stream has at least one member)")
    member = 1
    member_start = 0  # offset of the current member, for messages
    fed = 0  # bytes of view handed to zlib so far
    inflater = zlib.decompressobj(_GZIP_WBITS)
    pending: bytes | memoryview = b""
    while True:
        if not pending and fed < total:
            pending = view[fed : fed + _PIECE]
            fed += len(pending)
        before = len(pending)
        with _LibraryErrors("gzip", f"inflating member {member} (starting at offset {member_start})"):
            piece = inflater.decompress(pending, min(_PIECE, out.room + 1))
        pending = inflater.unconsumed_tail
        out.add(piece)
        if inflater.eof:
            pending = inflater.unused_data
            if not pending and fed >= total:
                return
            # Another member follows, as GZIPInputStream reads it.
            member_start = fed - len(pending)
            member += 1
            inflater = zlib.decompressobj(_GZIP_WBITS)
            continue
        if not piece and not pending and fed >= total:
            if member == 1:
                raise _corrupt("gzip", f"truncated: the stream ends inside its member after {total} bytes")
            raise _corrupt(
                "gzip",
                f"the {total - member_start} bytes after gzip member {member - 1} (from offset "
                f"{member_start}) are not a complete gzip member",
            )
        if not piece and pending and len(pending) == before:
            # zlib neither consumed input nor produced output: never loop on that.
            raise _corrupt("gzip", f"inflater stalled in member {member} (starting at offset {member_start})")


# ---------------------------------------------------------------------------------------------------------
# snappy


def _snappy_compress(view: memoryview) -> bytes:
    pieces: list[bytes | cramjam.Buffer] = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE])
        pieces.append(len(block).to_bytes(4, "big"))
        pieces.append(block)
    return b"".join(pieces)


def _snappy_decompress(view: memoryview, out: _Output) -> None:
    total = len(view)
    if total == 0:
        raise _corrupt("snappy", "empty payload (snappy-java refuses an empty stream)")
    if total < _XERIAL_HEADER_SIZE or view[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        _snappy_block(view, out, "raw snappy block")
        return
    pos = _XERIAL_HEADER_SIZE
    while pos < total:
        if total - pos < 4:
            raise _corrupt(
                "snappy",
                f"truncated: {total - pos} bytes at offset {pos} are too few for a xerial block length",
            )
        if view[pos : pos + len(_XERIAL_MAGIC)] == _XERIAL_MAGIC:
            # A concatenated xerial stream: its header takes the place of a block length.
            if total - pos < _XERIAL_HEADER_SIZE:
                raise _corrupt("snappy", f"truncated: incomplete xerial header at offset {pos}")
            pos += _XERIAL_HEADER_SIZE
            continue
        length = int.from_bytes(view[pos : pos + 4], "big", signed=True)
        if length < 0:
            raise _corrupt("snappy", f"negative xerial block length {length} at offset {pos}")
        start = pos + 4
        end = start + length
        if end > total:
            raise _corrupt(
                "snappy",
                f"truncated: the xerial block at offset {pos} claims {length} bytes "
                f"but {total - start} remain",
            )
        _snappy_block(view[start:end], out, f"xerial block at offset {pos}")
        pos = end


def _snappy_block(block: memoryview, out: _Output, where: str) -> None:
    """Decode one raw snappy block after checking its stated length against the limit."""
    length = _snappy_length(block, where)
    out.reserve(length)
    with _LibraryErrors("snappy", f"decoding the {where}"):
        decoded = cramjam.snappy.decompress_raw(block)
    if len(decoded) != length:
        raise _corrupt("snappy", f"the {where} decoded to {len(decoded)} bytes but states {length}")
    out.add(decoded)


def _snappy_length(block: memoryview, where: str) -> int:
    """The uncompressed length a raw snappy block starts with (a varint of at most 5 bytes)."""
    value = 0
    for index in range(5):
        if index == len(block):
            raise _corrupt("snappy", f"truncated: the {where} ends inside its length preamble")
        byte = block[index]
        value |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            if value > _SNAPPY_MAX_LENGTH:
                break
            return value
    raise _corrupt("snappy", f"the {where} has an invalid length preamble (above 2**32 - 1)")


# ---------------------------------------------------------------------------------------------------------
# lz4


def _lz4_header_checksum(descriptor: bytes | memoryview) -> int:
    return (xxhash.xxh32_intdigest(descriptor) >> 8) & 0xFF


_LZ4_KAFKA_HEADER = _LZ4_MAGIC + bytes(
    (_LZ4_WRITE_FLG, _LZ4_WRITE_BD, _lz4_header_checksum(bytes((_LZ4_WRITE_FLG, _LZ4_WRITE_BD))))
)
_U32LE = struct.Struct("<I")


def _lz4_compress(view: memoryview, magic: int) -> bytes:
    header = _LZ4_MAGIC + bytes((_LZ4_WRITE_FLG, _LZ4_WRITE_BD))
    # Magic 0 keeps the pre-0.10 writer's checksum, which covered the magic bytes as well.
    hashed = header if magic == 0 else header[len(_LZ4_MAGIC) :]
    pieces: list[bytes | memoryview | cramjam.Buffer] = [header, bytes((_lz4_header_checksum(hashed),))]
    block_size = 1 << (2 * _LZ4_BLOCKSIZE_64KB + 8)
    for start in range(0, len(view), block_size):
        chunk = view[start : start + block_size]
        packed = cramjam.lz4.compress_block(chunk, store_size=False)
        if len(packed) >= len(chunk):
            pieces.append((len(chunk) | _LZ4_STORED).to_bytes(4, "little"))
            pieces.append(chunk)
        else:
            pieces.append(len(packed).to_bytes(4, "little"))
            pieces.append(packed)
    pieces.append(_LZ4_END_MARK)
    return b"".join(pieces)


def _lz4_decompress(view: memoryview, magic: int, out: _Output) -> None:
    if view[:7] == _LZ4_KAFKA_HEADER:
        # The frame header Kafka writes, which every check of _lz4_header passes (for any magic).
        flg, max_block, pos, content_size = _LZ4_WRITE_FLG, _LZ4_KAFKA_MAX_BLOCK, 7, None
    else:
        flg, max_block, pos, content_size = _lz4_header(view, magic)
    if content_size is not None:
        out.reserve(content_size)
    total = len(view)
    block_checksums = bool(flg & _LZ4_FLG_BLOCK_CHECKSUM)
    content_hash = xxhash.xxh32() if flg & _LZ4_FLG_CONTENT_CHECKSUM else None
    # The blocks are decoded straight into one buffer sized from their size words, not into a scratch block
    # copied onto a growing output: those copies and allocations were a third of an lz4 batch's
    # decompression (issue 18's profile).  ``size`` is the content so far; the buffer past it is room.
    sink = bytearray(_lz4_size_hint(view, pos, max_block, out.room + 1))
    # Blocks that keep the LZ4 block format's rules are decoded by the compiled core in one pass; any other
    # is left to cramjam (_lz4_block).  The plain twin's decoder, a Python loop per sequence, would be far
    # slower than cramjam, so it is not asked.
    core = _impl.core
    decode_block = core.lz4_decode_block if core.IMPLEMENTATION == "cython" else None
    target = memoryview(sink)
    size = 0
    try:
        while True:
            if total - pos < 4:
                raise _corrupt("lz4", f"truncated: no block size word or end mark at offset {pos}")
            word_at = pos
            (word,) = _U32LE.unpack_from(view, pos)
            pos += 4
            length = word & 0x7FFFFFFF
            if length == 0:
                break
            if length > max_block:
                raise _corrupt(
                    "lz4", f"Block size {length} exceeded max: {max_block} (size word at offset {word_at})"
                )
            end = pos + length
            if end > total:
                raise _corrupt(
                    "lz4",
                    f"truncated: the block at offset {word_at} claims {length} bytes but {total - pos} remain",
                )
            data = view[pos:end]
            pos = end
            if block_checksums:
                if total - pos < 4:
                    raise _corrupt("lz4", f"truncated: the block at offset {word_at} lacks its checksum")
                if xxhash.xxh32_intdigest(data) != _U32LE.unpack_from(view, pos)[0]:
                    raise _corrupt("lz4", f"Block checksum mismatch for the block at offset {word_at}")
                pos += 4
            room = out.limit - size
            stored = word & _LZ4_STORED
            if stored and length > room:
                raise out.too_large(size + length)
            cap = length if stored else min(max_block, room + 1)
            if size + cap > len(sink):
                # The hint fell short: the buffer grows (not while a view of it is out).
                target.release()
                sink.extend(bytes(size + cap - len(sink)))
                target = memoryview(sink)
            if stored:
                target[size : size + length] = data
                decoded = length
            else:
                decoded = -1 if decode_block is None else decode_block(data, target[size : size + cap])
                if decoded < 0:
                    decoded = _lz4_block(data, word_at, max_block, target[size : size + cap], room, out)
                if decoded > room:
                    raise out.too_large(size + decoded)
            if content_hash is not None:
                content_hash.update(target[size : size + decoded])
            size += decoded
    finally:
        target.release()
    del sink[size:]
    out.whole(sink)
    if content_hash is not None:
        if total - pos < 4:
            raise _corrupt("lz4", "truncated: the content checksum after the end mark is missing")
        if content_hash.intdigest() != _U32LE.unpack_from(view, pos)[0]:
            raise _corrupt("lz4", "Content checksum mismatch")
        pos += 4
    if pos != total:
        raise _corrupt("lz4", f"{total - pos} bytes after the end of the frame (offset {pos})")
    if content_size is not None and content_size != out.size:
        raise _corrupt("lz4", f"the frame states a content size of {content_size} bytes but holds {out.size}")


def _lz4_header(view: memoryview, magic: int) -> tuple[int, int, int, int | None]:
    """Check an LZ4 frame header; returns its FLG, maximum block size, the offset of the first block and
    the content size it states (``None`` when it states none)."""
    total = len(view)
    if total >= 4 and view[:4] != _LZ4_MAGIC:
        raise _corrupt(
            "lz4", f"invalid frame magic 0x{_u32le(view, 0):08x} (expected 0x184d2204): stream unsupported"
        )
    if total < 7:
        raise _corrupt("lz4", f"truncated: {total} bytes are too few for the frame header")
    flg = view[4]
    bd = view[5]
    version = flg >> 6
    if version != _LZ4_VERSION:
        raise _corrupt("lz4", f"frame version {version} is unsupported (FLG 0x{flg:02x})")
    if flg & _LZ4_FLG_RESERVED:
        raise _corrupt("lz4", f"reserved bits of FLG must be 0 (FLG 0x{flg:02x})")
    if not flg & _LZ4_FLG_BLOCK_INDEPENDENCE:
        raise _corrupt("lz4", f"Dependent block stream is unsupported (FLG 0x{flg:02x})")
    if bd & _LZ4_BD_RESERVED:
        raise _corrupt("lz4", f"reserved bits of BD must be 0 (BD 0x{bd:02x})")
    size_id = (bd >> 4) & 0x07
    if size_id < 4:
        raise _corrupt("lz4", f"block size value must be between 4 and 7, got {size_id} (BD 0x{bd:02x})")
    max_block = 1 << (2 * size_id + 8)
    pos = 6
    content_size: int | None = None
    if flg & _LZ4_FLG_CONTENT_SIZE:
        if total < pos + 8 + 1:
            raise _corrupt("lz4", "truncated: the frame header ends inside its content size")
        content_size = int.from_bytes(view[pos : pos + 8], "little")
        pos += 8
    if magic != 0:
        expected = _lz4_header_checksum(view[4:pos])
        if view[pos] != expected:
            raise _corrupt(
                "lz4",
                f"frame descriptor checksum mismatch: HC byte 0x{view[pos]:02x}, descriptor hashes to "
                f"0x{expected:02x} (stream frame descriptor corrupted; the broken checksum of Kafka's "
                "0.8/0.9 writer is accepted for magic 0 only)",
            )
    return flg, max_block, pos + 1, content_size


def _lz4_size_hint(view: memoryview, pos: int, max_block: int, cap: int) -> int:
    """What the blocks from ``pos`` can decode to, at most ``cap``: the sizes of stored blocks, and for a
    compressed one the maximum block or 255 bytes per byte of it (an LZ4 sequence cannot expand further),
    whichever is less.  Only a size for the output buffer: the words are checked as the blocks are read,
    and a buffer found too small grows."""
    total = len(view)
    hint = 0
    while hint < cap and total - pos >= 4:
        word = _u32le(view, pos)
        length = word & 0x7FFFFFFF
        if length == 0:
            break
        hint += min(length, max_block) if word & _LZ4_STORED else min(max_block, length * _LZ4_MAX_EXPANSION)
        pos += 4 + length
    return min(hint, cap)


def _lz4_block(data: memoryview, word_at: int, max_block: int, target: memoryview, room: int,
               out: _Output) -> int:
    """Decode one compressed LZ4 block into ``target`` (at most ``min(max_block, room + 1)`` bytes) with
    cramjam; returns its length.  This decides the result or the error of every block the compiled
    ``lz4_decode_block`` does not decode: one that breaks a rule of the LZ4 block format, which lz4 itself
    may still take (it is more lenient), or that does not fit ``target``.

    ``cramjam.lz4.decompress_block_into`` reports the real decoded length, but when a block fails to
    decode it silently retries it as a block with a 4-byte size prefix, which can accept corrupt data.
    ``cramjam.lz4.decompress_block`` never retries (it pads its output to ``output_len``).  So after the
    first, the second decodes the block again within the length the first reported: it fails if the first
    took the retry, since a block that does not decode within ``len(target)`` bytes does not within fewer.
    """
    cap = len(target)
    try:
        length: int = cramjam.lz4.decompress_block_into(data, target, output_len=cap)
        cramjam.lz4.decompress_block(data, output_len=length)
    except BaseException as exc:
        if not _is_library_failure(exc):
            raise
        if cap < max_block:
            raise RecordTooLargeError(
                f"lz4 payload decompresses to more than max_size={out.limit} bytes: the block at offset "
                f"{word_at} does not decode within the {room} bytes left (unless it is corrupt)"
            ) from exc
        detail = str(exc) or type(exc).__name__
        raise _corrupt("lz4", f"the block at offset {word_at} does not decompress: {detail}") from exc
    finally:
        target.release()
    return length


# ---------------------------------------------------------------------------------------------------------
# zstd


def _zstd_compress(view: memoryview) -> bytes:
    return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(view)


def _zstd_decompress(view: memoryview, out: _Output) -> None:
    declared, sized = _zstd_walk(view)
    out.reserve(declared)
    if sized:
        # One frame stating its size, checked against the limit above: libzstd decodes it in one call into
        # a buffer of exactly that size (and fails unless the frame holds exactly that), where the stream
        # below makes 64 KiB pieces and copies them into the output (a third of a zstd batch's read, issue
        # 18's profile).  A frame that fails here is decoded again below, for the streaming decode's error.
        try:
            content = _zstd_decompressor().decompress(view)
        except zstandard.ZstdError:
            pass
        else:
            out.whole(content)
            return
    with _LibraryErrors("zstd", "opening the decoder"):
        reader = zstandard.ZstdDecompressor().stream_reader(view, read_across_frames=True)
    try:
        while True:
            with _LibraryErrors("zstd", f"decoding after {out.size} bytes of output"):
                piece = reader.read(min(_PIECE, out.room + 1))
            if not piece:
                return
            out.add(piece)
    finally:
        reader.close()  # type: ignore[no-untyped-call]


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor for whole sized frames.  A ``ZstdDecompressor`` may serve one call after
    another but not two threads at once; making one a batch cost more than decoding a 1,000-record batch
    (a fresh libzstd context, its pages faulted in again: issue 18's profile)."""
    decompressor: zstandard.ZstdDecompressor | None = getattr(_ZSTD_LOCAL, "decompressor", None)
    if decompressor is None:
        decompressor = _ZSTD_LOCAL.decompressor = zstandard.ZstdDecompressor()
    return decompressor


def _zstd_walk(view: memoryview) -> tuple[int, bool]:
    """Check the frame structure of a zstd payload; return the sum of the content sizes frames declare, and
    whether the payload is a single frame (no skippable one) that declares its content size.

    The payload must be whole frames (zstd or skippable), nothing cut off and nothing after them.
    """
    total = len(view)
    if total == 0:
        raise _corrupt("zstd", "empty payload (no frame)")
    declared = 0
    pos = 0
    frames, sized = 0, False
    while pos < total:
        if total - pos < 4:
            raise _corrupt(
                "zstd", f"truncated: {total - pos} bytes at offset {pos} are too few for a frame magic"
            )
        frame_magic = _u32le(view, pos)
        if frame_magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE_MAGIC:
            if total - pos < 8:
                raise _corrupt("zstd", f"truncated: the skippable frame at offset {pos} lacks its size")
            end = pos + 8 + _u32le(view, pos + 4)
            if end > total:
                raise _corrupt("zstd", f"truncated: the skippable frame at offset {pos} runs past the end")
            pos = end
            frames += 1
            continue
        if frame_magic != _ZSTD_MAGIC:
            if pos == 0:
                raise _corrupt("zstd", f"not a zstd frame: magic 0x{frame_magic:08x} (expected 0xfd2fb528)")
            raise _corrupt("zstd", f"{total - pos} bytes after the last frame (offset {pos}) are not a frame")
        pos, content_size = _zstd_frame(view, pos)
        frames += 1
        sized = content_size is not None
        declared += content_size or 0
    return declared, frames == 1 and sized


def _zstd_frame(view: memoryview, start: int) -> tuple[int, int | None]:
    """Walk the zstd frame at ``start``; return the offset after it and its stated content size (``None``
    when it states none)."""
    total = len(view)
    pos = start + 4
    if pos >= total:
        raise _corrupt("zstd", f"truncated: the frame at offset {start} has no header")
    descriptor = view[pos]
    fcs_flag = descriptor >> 6
    single_segment = bool(descriptor & 0x20)
    if descriptor & 0x08:
        raise _corrupt("zstd", f"reserved bit set in the frame header of the frame at offset {start}")
    has_checksum = bool(descriptor & 0x04)
    dict_id_size = (0, 1, 2, 4)[descriptor & 0x03]
    fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    header_size = 1 + (0 if single_segment else 1) + dict_id_size + fcs_size
    if pos + header_size > total:
        raise _corrupt("zstd", f"truncated: the frame header at offset {start} is incomplete")
    content_size: int | None = None
    if fcs_size:
        fcs_at = pos + header_size - fcs_size
        content_size = int.from_bytes(view[fcs_at : fcs_at + fcs_size], "little")
        if fcs_size == 2:
            content_size += 256
    pos += header_size
    while True:
        if total - pos < 3:
            raise _corrupt("zstd", f"truncated: no block header at offset {pos} (frame at offset {start})")
        block_header = int.from_bytes(view[pos : pos + 3], "little")
        block_type = (block_header >> 1) & 0x03
        if block_type == _ZSTD_BLOCK_RESERVED:
            raise _corrupt("zstd", f"reserved block type at offset {pos}")
        payload = 1 if block_type == 1 else block_header >> 3  # an RLE block holds one byte
        end = pos + 3 + payload
        if end > total:
            raise _corrupt("zstd", f"truncated: the block at offset {pos} runs past the end")
        pos = end
        if block_header & 1:
            break
    if has_checksum:
        if total - pos < 4:
            raise _corrupt("zstd", f"truncated: the frame at offset {start} lacks its checksum")
        pos += 4
    return pos, content_size
