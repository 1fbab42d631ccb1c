"""The ``.rsm-manifest`` of Aiven's tiered-storage plugin: how an uploaded segment was cut and transformed.

Port of ``io.aiven.kafka.tieredstorage.manifest`` (github Aiven-Open/tiered-storage-for-apache-kafka,
``core/src/main/java/io/aiven/kafka/tieredstorage/manifest/``: ``SegmentManifestV1``, ``SegmentIndexesV1``,
``SegmentIndexV1``, ``SegmentEncryptionMetadataV1``; ``manifest/index/``: ``AbstractChunkIndex``,
``FixedSizeChunkIndex``, ``VariableSizeChunkIndex``; ``manifest/index/serde/``: ``ChunkSizesBinaryCodec``,
``TransformedChunksSerializer``/``Deserializer``).  The manifest is JSON written by Jackson::

    {"version":"1",
     "chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,
                   "transformedChunkSize":110,"finalTransformedChunkSize":110},
     "segmentIndexes":{"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},
                       "producerSnapshot":{"position":2,"size":1},"leaderEpoch":{"position":3,"size":1},
                       "transaction":{"position":4,"size":1}},          (or "transaction":null)
     "compression":false,
     "encryption":{"dataKey":"<key id>:<base64 RSA-encrypted AES key>","aad":"<base64>"},   (when enabled)
     "remoteLogSegmentMetadata":{"remoteLogSegmentId":{...,"id":"<uuid>"},"startOffset":0,"endOffset":1000,
                       "maxTimestampMs":...,"brokerId":2,"eventTimestampMs":...,"segmentLeaderEpochs":{"0":100}}}

``remoteLogSegmentMetadata`` is written for the reader's information only (the plugin ignores it when
reading, and older versions do not write it).

**The chunk index.**  The original ``.log`` is cut into chunks of ``originalChunkSize`` bytes, the last one
shorter; each chunk is transformed on its own (zstd-compressed when ``compression``, then AES-GCM-encrypted
when ``encryption``) and the results are concatenated into the ``.log`` object.  A *fixed* index (no
compression) gives every transformed chunk the size ``transformedChunkSize`` but the last,
``finalTransformedChunkSize``; without encryption the object is the original file itself.  A *variable*
index (compression) lists every transformed size: ``transformedChunks`` is standard base64 of a zstd frame
(which states its content size, at most 10 MiB) of ``ChunkSizesBinaryCodec``'s bytes, all big-endian::

    int32 count
    -- when count == 1: int32 value; when count >= 2:
    int32 base                  the least of the values but the last
    int8  bytesPerValue         1..4: the bytes of the largest (value - base), the last value excepted
    count - 1 values            each (value - base) in its bytesPerValue low bytes
    int32 last value            in full

Chunk ``i`` (Kafka: ``Chunk``) covers original bytes ``[i * originalChunkSize, ...)`` and transformed
bytes from the sum of the transformed sizes before it.  An empty original file has one empty chunk.

**The indexes.**  The ``.indexes`` object is the offset index, time index, producer snapshot, leader-epoch
checkpoint and (when the segment had one) transaction index, in that order, each transformed on its own
(never compressed; encrypted when the segment is), each at its ``position`` and ``size`` in the object.

Everything is checked beyond what the plugin checks (it trusts its own writer): the JSON's types and
required fields with Jackson's words, Java int ranges, chunk counts that match the sizes, transformed chunk
sizes that fit the object; failures are :class:`~kafkalog.errors.CorruptRemoteSegmentError`.

**What a manifest may claim.**  A manifest is a few hundred bytes, and what it claims decides what a read
costs, so it must agree with what the plugin can write before anything is built from it:

- the index's kind follows ``compression``, as ``TransformFinisher`` chooses it: a compressed segment has a
  variable index (zstd makes every chunk's size its own), an uncompressed one a fixed index;
- a compressed chunk is one zstd frame of its original bytes (``ZstdCompressCtx.compress``, one shot), so
  its transformed size is at least :data:`MIN_ZSTD_FRAME_SIZE` and at most :func:`zstd_compress_bound` of
  its original size (an encrypted segment's sizes are not checked: it is refused anyway);
- the chunk count the original sizes give is the count the variable index lists, compared before the
  list's values are decoded; and, when the ``.log`` object's size is known, the count must fit in it
  (every chunk is at least one frame) before the list is decoded, and the chunks' transformed sizes must
  add up to it exactly.

Chunks are never materialized (the plugin's ``materializeChunks`` builds one object per chunk): a chunk is
computed from the index when it is reached, :meth:`ChunkIndex.chunks_for_range` is a lazy
:class:`ChunkRange`, and a variable index keeps its sizes and their running sums in two flat arrays (12
bytes a chunk).  A manifest of two billion one-byte chunks costs nothing until a read, and a read costs its
own bytes, not an object per byte.  The largest variable index the plugin reads (10 MiB of sizes, ten
million chunks) takes 120 MB here (210 MB while it is built); given the ``.log`` object's size, a manifest
claiming more chunks than the object can hold is refused before its sizes are decoded, so what an index
takes is in proportion to the object it describes.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import numpy.typing as npt
import zstandard

from ..errors import CorruptRemoteSegmentError
from .segment import IndexType

__all__ = ["MAX_DECOMPRESSED_SIZE", "MIN_ZSTD_FRAME_SIZE", "Chunk", "ChunkIndex", "ChunkRange", "SegmentIndexV1",
           "SegmentManifestV1", "decode_chunk_sizes", "decode_transformed_chunks", "encode_chunk_sizes",
           "encode_transformed_chunks", "parse_manifest", "zstd_compress_bound"]

#: ``TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE``: the most a variable index's bytes may take.
MAX_DECOMPRESSED_SIZE = 10 * 1024 * 1024
#: The least a zstd frame takes (RFC 8878): the 4-byte magic number, a frame header of at least 2 bytes and
#: one block header of 3 bytes.
MIN_ZSTD_FRAME_SIZE = 9
_ZSTD_BLOCK_SIZE_MAX = 128 * 1024
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _corrupt(message: str) -> CorruptRemoteSegmentError:
    return CorruptRemoteSegmentError(message)


# -- ChunkSizesBinaryCodec ---------------------------------------------------------------------------

def _bytes_needed(v: int) -> int:
    return 1 if v <= 0xFF else 2 if v <= 0xFFFF else 3 if v <= 0xFFFFFF else 4


def encode_chunk_sizes(values: list[int]) -> bytes:
    """``ChunkSizesBinaryCodec.encode``."""
    if any(v < 0 or v > _INT32_MAX for v in values):
        raise ValueError("Values cannot be negative")
    count = len(values)
    if count == 0:
        return struct.pack(">i", 0)
    if count == 1:
        return struct.pack(">ii", 1, values[0])
    base = min(values[:-1])
    width = max(_bytes_needed(v - base) for v in values[:-1])
    body = b"".join((v - base).to_bytes(4, "big")[4 - width:] for v in values[:-1])
    return struct.pack(">iib", count, base, width) + body + struct.pack(">i", values[-1])


def _chunk_count(data: bytes) -> int:
    """The count at the head of ``ChunkSizesBinaryCodec``'s bytes, read before any value is."""
    if len(data) < 4:
        raise _corrupt(f"chunk sizes: {len(data)} bytes cannot hold the count")
    count = int(struct.unpack_from(">i", data)[0])
    if count < 0:
        raise _corrupt(f"chunk sizes: negative count {count}")
    return count


def _chunk_sizes(data: bytes) -> npt.NDArray[np.int64]:
    """``ChunkSizesBinaryCodec.decode`` into one int64 array, with no Python object per value; refuses what
    the plugin's decoder would read past or misread: a negative count, a count the bytes cannot hold, a
    width outside 1..4, bytes left over, a negative size."""
    count = _chunk_count(data)
    if count == 0:
        values = np.zeros(0, dtype=np.int64)
        end = 4
    elif count == 1:
        if len(data) < 8:
            raise _corrupt("chunk sizes: one value announced, fewer than 4 bytes follow")
        values = np.array([struct.unpack_from(">i", data, 4)[0]], dtype=np.int64)
        end = 8
    else:
        if len(data) < 9:
            raise _corrupt("chunk sizes: no room for the base and the bytes per value")
        base, width = struct.unpack_from(">ib", data, 4)
        if not 1 <= width <= 4:
            raise _corrupt(f"chunk sizes: {width} bytes per value (1 to 4 expected)")
        end = 9 + (count - 1) * width + 4
        if len(data) < end:
            raise _corrupt(f"chunk sizes: {count} values of {width} bytes need {end} bytes, {len(data)} given")
        values = np.empty(count, dtype=np.int64)
        deltas = values[:-1]
        if width == 3:
            digits = np.frombuffer(data, dtype=np.uint8, count=(count - 1) * 3, offset=9).reshape(count - 1, 3)
            deltas[:] = digits[:, 0]
            deltas <<= 8
            deltas |= digits[:, 1]
            deltas <<= 8
            deltas |= digits[:, 2]
        else:
            deltas[:] = np.frombuffer(data, dtype=f">u{width}", count=count - 1, offset=9)
        # Java adds in int arithmetic: a hostile base can wrap, which the check below catches.
        deltas += base + 2**31
        deltas %= 2**32
        deltas -= 2**31
        values[-1] = struct.unpack_from(">i", data, end - 4)[0]
    if len(data) != end:
        raise _corrupt(f"chunk sizes: {len(data) - end} bytes after the last value")
    if count and int(values.min()) < 0:
        raise _corrupt("chunk sizes: a negative transformed chunk size")
    return values


def decode_chunk_sizes(data: bytes) -> list[int]:
    """``ChunkSizesBinaryCodec.decode``, which also refuses what the plugin's decoder would read past or
    misread: a negative count, a count the bytes cannot hold, a width outside 1..4, bytes left over, a
    negative size."""
    return [int(v) for v in _chunk_sizes(data).tolist()]


def encode_transformed_chunks(values: list[int]) -> str:
    """``TransformedChunksSerializer``: the codec's bytes in a zstd frame that states its content size,
    in standard base64."""
    raw = encode_chunk_sizes(values)
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(raw)
    return base64.b64encode(frame).decode("ascii")


def _java_base64(text: str, what: str) -> bytes:
    """``Base64.getDecoder().decode``: the standard alphabet, padding optional, nothing else."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as e:
        raise _corrupt(f"{what}: not base64: {e}") from e


def _transformed_chunks_bytes(text: str) -> bytes:
    """``TransformedChunksDeserializer`` up to the codec: base64, then a zstd frame whose content size is
    stated and at most :data:`MAX_DECOMPRESSED_SIZE`."""
    frame = _java_base64(text, "transformedChunks")
    try:
        size = zstandard.frame_content_size(frame)
    except zstandard.ZstdError as e:
        raise _corrupt(f"transformedChunks: not a zstd frame: {e}") from e
    if size < 0 or size > MAX_DECOMPRESSED_SIZE:
        raise _corrupt(f"transformedChunks: Invalid decompressed size: {size}")
    return _zstd_exact(frame, size, "transformedChunks")


def decode_transformed_chunks(text: str) -> list[int]:
    """``TransformedChunksDeserializer``: base64, then a zstd frame whose content size is stated and at
    most :data:`MAX_DECOMPRESSED_SIZE`, then :func:`decode_chunk_sizes`."""
    return decode_chunk_sizes(_transformed_chunks_bytes(text))


def _zstd_exact(frame: bytes, size: int, what: str) -> bytes:
    """One zstd frame that decompresses to exactly ``size`` bytes, nothing after it."""
    d = zstandard.ZstdDecompressor().decompressobj()
    try:
        out = d.decompress(frame)
    except zstandard.ZstdError as e:
        raise _corrupt(f"{what}: zstd frame does not decompress: {e}") from e
    if not d.eof:
        raise _corrupt(f"{what}: zstd frame is truncated")
    if d.unused_data:
        raise _corrupt(f"{what}: {len(d.unused_data)} bytes after the zstd frame")
    if len(out) != size:
        raise _corrupt(f"{what}: decompressed to {len(out)} bytes, {size} expected")
    return out


def decompress_chunk(frame: bytes, original_size: int, what: str) -> bytes:
    """``DecompressionChunkEnumeration``: a transformed chunk back to its original bytes.  The frame must
    state its content size (the plugin sets ``setContentSize(true)``) and it must be the chunk's original
    size, so no more than that is ever allocated."""
    try:
        stated = zstandard.frame_content_size(frame)
    except zstandard.ZstdError as e:
        raise _corrupt(f"{what}: not a zstd frame: {e}") from e
    if stated != original_size:
        raise _corrupt(f"{what}: Invalid decompressed size: {stated} (the chunk index says {original_size})")
    return _zstd_exact(frame, original_size, what)


def zstd_compress_bound(size: int) -> int:
    """``ZSTD_COMPRESSBOUND``: the most one-shot zstd compression of ``size`` bytes writes, frame header and
    checksum included (``ZstdCompressCtx.compress`` compresses into a buffer of this size)."""
    margin = (_ZSTD_BLOCK_SIZE_MAX - size) >> 11 if size < _ZSTD_BLOCK_SIZE_MAX else 0
    return size + (size >> 8) + margin


# -- the chunk index ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Chunk:
    """``io.aiven.kafka.tieredstorage.Chunk``."""

    id: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True)
class ChunkIndex:
    """``FixedSizeChunkIndex`` (``transformed_chunks`` is ``None``) or ``VariableSizeChunkIndex``.

    Chunks are computed when asked for rather than materialized as the plugin does
    (``AbstractChunkIndex.materializeChunks``): a fixed index can claim two billion chunks, and a variable one
    ten million.  A variable index keeps its transformed sizes (``array("i")``) and their running sums, the
    chunks' transformed positions (``array("q")``, one more than the chunks): 12 bytes a chunk, no object.
    """

    original_chunk_size: int
    original_file_size: int
    transformed_chunk_size: int | None = None
    final_transformed_chunk_size: int | None = None
    transformed_chunks: Sequence[int] | None = None  # an array("i")
    _starts: Sequence[int] | None = field(default=None, repr=False)  # an array("q")

    @property
    def kind(self) -> str:
        return "fixed" if self.transformed_chunks is None else "variable"

    @property
    def count(self) -> int:
        """The number of chunks: one, empty, for an empty original file."""
        if self.transformed_chunks is not None:
            return len(self.transformed_chunks)
        return _chunk_count_for(self.original_chunk_size, self.original_file_size)

    def chunk(self, i: int) -> Chunk:
        """Chunk ``i`` (``0 <= i < count``)."""
        count = self.count
        if not 0 <= i < count:
            raise IndexError(i)
        if self.original_file_size == 0 and self.transformed_chunks is None:
            return Chunk(0, 0, 0, 0, 0)
        last = i == count - 1
        original_size = self.original_file_size - (count - 1) * self.original_chunk_size if last \
            else self.original_chunk_size
        if self.transformed_chunks is not None:
            assert self._starts is not None
            return Chunk(i, i * self.original_chunk_size, original_size, self._starts[i], self.transformed_chunks[i])
        assert self.transformed_chunk_size is not None and self.final_transformed_chunk_size is not None
        size = self.final_transformed_chunk_size if last else self.transformed_chunk_size
        return Chunk(i, i * self.original_chunk_size, original_size, i * self.transformed_chunk_size, size)

    @property
    def chunks(self) -> ChunkRange:
        """Every chunk (``ChunkIndex.chunks``), each computed when it is reached."""
        return ChunkRange(self, range(self.count))

    @property
    def transformed_file_size(self) -> int:
        """The size the transformed ``.log`` object must have."""
        last = self.chunk(self.count - 1)
        return last.transformed_position + last.transformed_size

    @classmethod
    def fixed(cls, original_chunk_size: int, original_file_size: int, transformed_chunk_size: int,
              final_transformed_chunk_size: int) -> ChunkIndex:
        """``new FixedSizeChunkIndex(...)``."""
        _positive(original_chunk_size, "Original chunk size")
        _non_negative(original_file_size, "Original file size")
        _non_negative(final_transformed_chunk_size, "Final transformed chunk size")
        _non_negative(transformed_chunk_size, "Transformed chunk size")
        return cls(original_chunk_size, original_file_size, transformed_chunk_size=transformed_chunk_size,
                   final_transformed_chunk_size=final_transformed_chunk_size)

    @classmethod
    def variable(cls, original_chunk_size: int, original_file_size: int,
                 transformed_chunks: Sequence[int] | npt.NDArray[np.int64]) -> ChunkIndex:
        """``new VariableSizeChunkIndex(...)``, which also requires one transformed size per original chunk
        (the plugin would index past its list otherwise) and sizes a Java ``int`` holds."""
        if not len(transformed_chunks):
            raise _corrupt("transformedChunks is empty: a variable chunk index has at least one chunk")
        _positive(original_chunk_size, "Original chunk size")
        _non_negative(original_file_size, "Original file size")
        _check_chunk_count(len(transformed_chunks), original_chunk_size, original_file_size)
        values = np.asarray(transformed_chunks, dtype=np.int64)
        if int(values.min()) < 0 or int(values.max()) > _INT32_MAX:
            raise _corrupt("transformedChunks: a transformed chunk size outside 0..2147483647")
        # Written in place through numpy views of the two arrays: no temporary copy of a ten-million list.
        sizes = array("i", [0]) * len(values)
        np.frombuffer(sizes, dtype=np.intc)[:] = values
        starts = array("q", [0]) * (len(values) + 1)
        np.cumsum(values, out=np.frombuffer(starts, dtype=np.int64)[1:])
        return cls(original_chunk_size, original_file_size, transformed_chunks=sizes, _starts=starts)

    def chunks_for_range(self, start: int, end: int) -> ChunkRange:
        """``AbstractChunkIndex.chunksForRange`` for the original bytes ``[start, end)``: the chunks that
        cover them, computed as they are reached (the plugin builds a list)."""
        end = min(end, self.original_file_size)
        if start < 0 or end <= start:
            return ChunkRange(self, range(0))
        return ChunkRange(self, range(start // self.original_chunk_size, (end - 1) // self.original_chunk_size + 1))


class ChunkRange(Sequence[Chunk]):
    """Consecutive chunks of a :class:`ChunkIndex`, by id (``ids``), each computed when it is reached, so
    that a range of a million chunks costs a ``range`` until it is read.  Compares equal to any sequence of
    the same chunks."""

    __slots__ = ("_index", "ids")

    def __init__(self, index: ChunkIndex, ids: range) -> None:
        self._index = index
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> Chunk: ...

    @overload
    def __getitem__(self, i: slice) -> ChunkRange: ...

    def __getitem__(self, i: int | slice) -> Chunk | ChunkRange:
        if isinstance(i, slice):
            return ChunkRange(self._index, self.ids[i])
        return self._index.chunk(self.ids[i])

    def __iter__(self) -> Iterator[Chunk]:
        return map(self._index.chunk, self.ids)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        return f"ChunkRange(chunks {self.ids.start} to {self.ids.stop - 1})" if self.ids else "ChunkRange()"


def _chunk_count_for(original_chunk_size: int, original_file_size: int) -> int:
    """How many chunks an original file of this size is cut into (one, empty, for an empty file)."""
    return max(1, -(-original_file_size // original_chunk_size))


def _positive(size: int, name: str) -> None:
    if size <= 0:
        raise _corrupt(f"{name} must be positive, {size} given")


def _non_negative(size: int, name: str) -> None:
    if size < 0:
        raise _corrupt(f"{name} must be non-negative, {size} given")


# -- the manifest ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SegmentIndexV1:
    """``SegmentIndexV1``: where one index lies in the ``.indexes`` object."""

    position: int
    size: int


@dataclass(frozen=True)
class SegmentManifestV1:
    """``SegmentManifestV1``, with what the plugin writes of ``remoteLogSegmentMetadata`` (``None`` where it
    does not say: older versions write none of it)."""

    chunk_index: ChunkIndex
    segment_indexes: tuple[tuple[IndexType, SegmentIndexV1 | None], ...]
    compression: bool
    encrypted: bool
    start_offset: int | None = None
    end_offset: int | None = None
    segment_id: str | None = None
    event_timestamp_ms: int | None = None
    max_leader_epoch: int | None = None

    def index(self, index_type: IndexType) -> SegmentIndexV1 | None:
        """``SegmentIndexesV1.segmentIndex``."""
        return dict(self.segment_indexes).get(index_type)


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _corrupt(f"{what}: expected a JSON object, found {json.dumps(value)[:60]}")
    return value


def _fields(obj: dict[str, Any], what: str, required: tuple[str, ...], known: tuple[str, ...]) -> None:
    """Jackson's checks with ``FAIL_ON_UNKNOWN_PROPERTIES`` on (the plugin's mapper): every required creator
    property present, no property it does not know."""
    for name in required:
        if name not in obj:
            raise _corrupt(f"{what}: Missing required creator property '{name}'")
    for name in obj:
        if name not in required and name not in known:
            raise _corrupt(f'{what}: Unrecognized field "{name}"')


def _int(value: Any, what: str, low: int = _INT32_MIN, high: int = _INT32_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _corrupt(f"{what}: expected an integer, found {json.dumps(value)[:60]}")
    if not low <= value <= high:
        raise _corrupt(f"{what}: {value} is out of range")
    return value


def _chunk_index(raw: Any, *, compression: bool, encrypted: bool, log_object_size: int | None) -> ChunkIndex:
    """The manifest's ``chunkIndex``, checked against what the plugin writes for a segment so transformed
    (see the module's docstring) before a variable index's sizes are decoded."""
    obj = _object(raw, "chunkIndex")
    kind = obj.get("type")
    if kind == "fixed":
        names: tuple[str, ...] = ("originalChunkSize", "originalFileSize", "transformedChunkSize",
                                  "finalTransformedChunkSize")
        _fields(obj, "chunkIndex", names, ("type",))
        a, b, c, d = (_int(obj[n], f"chunkIndex.{n}") for n in names)
        if compression:
            raise _corrupt("chunkIndex: a compressed segment has a variable chunk index (the plugin's "
                           "TransformFinisher writes a fixed one only when no chunk is compressed), not a fixed one")
        return ChunkIndex.fixed(a, b, c, d)
    if kind == "variable":
        names = ("originalChunkSize", "originalFileSize", "transformedChunks")
        _fields(obj, "chunkIndex", names, ("type",))
        chunks = obj["transformedChunks"]
        if not isinstance(chunks, str):
            raise _corrupt("chunkIndex.transformedChunks: expected a base64 string")
        chunk_size = _int(obj["originalChunkSize"], "chunkIndex.originalChunkSize")
        file_size = _int(obj["originalFileSize"], "chunkIndex.originalFileSize")
        if not compression:
            raise _corrupt("chunkIndex: a variable chunk index belongs to a compressed segment (the plugin "
                           "writes one only when it compresses), and this segment is not compressed")
        _positive(chunk_size, "Original chunk size")
        _non_negative(file_size, "Original file size")
        count = _chunk_count_for(chunk_size, file_size)
        if log_object_size is not None and not encrypted and count * MIN_ZSTD_FRAME_SIZE > log_object_size:
            raise _corrupt(f"chunkIndex: {count} chunks (an original file of {file_size} bytes in chunks of "
                           f"{chunk_size}), each a zstd frame of at least {MIN_ZSTD_FRAME_SIZE} bytes, cannot fit "
                           f"in the .log object's {log_object_size} bytes")
        data = _transformed_chunks_bytes(chunks)
        # The count first: the values are decoded only when there are as many as the original file has chunks.
        _check_chunk_count(_chunk_count(data), chunk_size, file_size)
        sizes = _chunk_sizes(data)
        if not encrypted:
            _check_zstd_frame_sizes(sizes, chunk_size, file_size)
        return ChunkIndex.variable(chunk_size, file_size, sizes)
    if kind is None:
        raise _corrupt("chunkIndex: missing type id property 'type'")
    raise _corrupt(f"chunkIndex: Could not resolve type id '{kind}' as a subtype of ChunkIndex: known type ids "
                   "= [fixed, variable]")


def _check_chunk_count(listed: int, original_chunk_size: int, original_file_size: int) -> None:
    """A variable index lists one transformed size per original chunk."""
    if listed == 0:
        raise _corrupt("transformedChunks is empty: a variable chunk index has at least one chunk")
    count = _chunk_count_for(original_chunk_size, original_file_size)
    if count != listed:
        raise _corrupt(f"{listed} transformed chunks for an original file of {original_file_size} bytes in chunks "
                       f"of {original_chunk_size} ({count} chunks)")


def _check_zstd_frame_sizes(sizes: npt.NDArray[np.int64], original_chunk_size: int, original_file_size: int) -> None:
    """Each compressed chunk is one zstd frame of its original bytes: between :data:`MIN_ZSTD_FRAME_SIZE` and
    :func:`zstd_compress_bound` of its original size.  All chunks but the last have the same original size,
    so one bound serves them all."""
    last = len(sizes) - 1
    final_size = original_file_size - last * original_chunk_size
    body = sizes[:last]
    bad = np.flatnonzero((body < MIN_ZSTD_FRAME_SIZE) | (body > zstd_compress_bound(original_chunk_size)))
    i = int(bad[0]) if bad.size else last
    original = original_chunk_size if i < last else final_size
    size = int(sizes[i])
    if not MIN_ZSTD_FRAME_SIZE <= size <= zstd_compress_bound(original):
        raise _corrupt(f"chunkIndex: chunk {i} of {original} original bytes cannot be a zstd frame of {size} "
                       f"bytes (one takes {MIN_ZSTD_FRAME_SIZE} to {zstd_compress_bound(original)})")


_INDEX_NAMES = (("offset", IndexType.OFFSET), ("timestamp", IndexType.TIMESTAMP),
                ("producerSnapshot", IndexType.PRODUCER_SNAPSHOT), ("leaderEpoch", IndexType.LEADER_EPOCH),
                ("transaction", IndexType.TRANSACTION))


def _segment_indexes(raw: Any) -> tuple[tuple[IndexType, SegmentIndexV1 | None], ...]:
    obj = _object(raw, "segmentIndexes")
    _fields(obj, "segmentIndexes", tuple(n for n, _ in _INDEX_NAMES), ())
    out: list[tuple[IndexType, SegmentIndexV1 | None]] = []
    for name, index_type in _INDEX_NAMES:
        value = obj[name]
        if value is None:
            if index_type is not IndexType.TRANSACTION:
                raise _corrupt(f"segmentIndexes: {name} cannot be null")
            out.append((index_type, None))
            continue
        entry = _object(value, f"segmentIndexes.{name}")
        _fields(entry, f"segmentIndexes.{name}", ("position", "size"), ())
        position = _int(entry["position"], f"segmentIndexes.{name}.position", 0)
        size = _int(entry["size"], f"segmentIndexes.{name}.size", 0)
        out.append((index_type, SegmentIndexV1(position, size)))
    return tuple(out)


def _metadata(raw: Any) -> dict[str, Any]:
    """What the reader uses of ``remoteLogSegmentMetadata`` (``KafkaTypeSerdeModule``'s mixin): the plugin
    does not read it back, so only the fields used are checked, and only when present."""
    if raw is None:
        return {}
    obj = _object(raw, "remoteLogSegmentMetadata")
    out: dict[str, Any] = {}
    for key, name in (("startOffset", "start_offset"), ("endOffset", "end_offset"),
                      ("eventTimestampMs", "event_timestamp_ms")):
        if key in obj:
            out[name] = _int(obj[key], f"remoteLogSegmentMetadata.{key}", _INT64_MIN, _INT64_MAX)
    segment_id = _object(obj.get("remoteLogSegmentId", {}), "remoteLogSegmentMetadata.remoteLogSegmentId").get("id")
    if segment_id is not None:
        if not isinstance(segment_id, str):
            raise _corrupt("remoteLogSegmentMetadata.remoteLogSegmentId.id: expected a string")
        out["segment_id"] = segment_id
    epochs = obj.get("segmentLeaderEpochs")
    if epochs is not None:
        epochs = _object(epochs, "remoteLogSegmentMetadata.segmentLeaderEpochs")
        try:
            keys = [int(k) for k in epochs]
        except ValueError as e:
            raise _corrupt(f"remoteLogSegmentMetadata.segmentLeaderEpochs: a key is not an epoch: {e}") from e
        if keys:
            out["max_leader_epoch"] = max(keys)
    return out


def _identity(index: ChunkIndex) -> bool:
    """Whether every transformed chunk of a fixed index is its original chunk, byte for byte in size."""
    last = index.chunk(index.count - 1)
    return index.transformed_chunk_size == index.original_chunk_size and last.transformed_size == last.original_size


def parse_manifest(text: bytes | str, *, log_object_size: int | None = None) -> SegmentManifestV1:
    """A ``.rsm-manifest`` as the plugin's mapper reads it (``mapper.readValue(json, SegmentManifest.class)``),
    checked against what the plugin writes (the module's docstring).  ``log_object_size``, when given, is the
    size of the segment's ``.log`` object: the chunk index must describe exactly that many transformed bytes,
    and a variable index's chunk count is checked against it before its sizes are decoded.

    Raises:
        CorruptRemoteSegmentError: not JSON, a version other than ``"1"``, a field missing, unknown or of the
            wrong type, a chunk index that does not add up, does not match ``compression``, or does not fit the
            ``.log`` object.
    """
    try:
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:  # RecursionError: hostile nesting
        raise _corrupt(f"manifest is not JSON: {e}") from e
    obj = _object(raw, "manifest")
    version = obj.get("version")
    if version is None:
        raise _corrupt("manifest: missing type id property 'version'")
    # Jackson reads the type id as text; a number 1 is the same id.
    if str(version) != "1" or isinstance(version, bool):
        raise _corrupt(f"manifest: Could not resolve type id '{version}' as a subtype of SegmentManifest: "
                       "known type ids = [1]")
    _fields(obj, "manifest", ("chunkIndex", "segmentIndexes", "compression"),
            ("version", "encryption", "remoteLogSegmentMetadata"))
    compression = obj["compression"]
    if not isinstance(compression, bool):
        raise _corrupt(f"manifest.compression: expected true or false, found {json.dumps(compression)[:60]}")
    encryption = obj.get("encryption")
    if encryption is not None:
        enc = _object(encryption, "manifest.encryption")
        # SegmentEncryptionMetadataV1's creator requires both; the data key cannot be read without the
        # RSA key pair, which is what makes such a segment unreadable here.
        _fields(enc, "manifest.encryption", ("dataKey", "aad"), ())
    index = _chunk_index(obj["chunkIndex"], compression=compression, encrypted=encryption is not None,
                         log_object_size=log_object_size)
    indexes = _segment_indexes(obj["segmentIndexes"])
    if not compression and encryption is None and not _identity(index):
        raise _corrupt("chunkIndex: the segment is neither compressed nor encrypted, yet its transformed chunk "
                       "sizes differ from the original ones")
    if log_object_size is not None and index.transformed_file_size != log_object_size:
        raise _corrupt(f"the .log object has {log_object_size} bytes, its manifest's chunk index says "
                       f"{index.transformed_file_size}")
    return SegmentManifestV1(index, indexes, compression, encryption is not None,
                             **_metadata(obj.get("remoteLogSegmentMetadata")))
