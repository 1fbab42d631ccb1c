"""Aiven's manifest and chunk index (``SegmentManifestV1SerdeTest``, ``ChunkIndexSerializationTest``,
``ChunkSizesBinaryCodecTest`` of Aiven-Open/tiered-storage-for-apache-kafka): the JSON their tests pin, read
back; and what a hostile manifest gets."""

from __future__ import annotations

import base64
import itertools
import json
import os
import struct
import tracemalloc

import pytest
import zstandard

from kafkalog.errors import CorruptRemoteSegmentError
from kafkalog.remote import IndexType
from kafkalog.remote.aiven_manifest import (
    MIN_ZSTD_FRAME_SIZE,
    Chunk,
    ChunkIndex,
    SegmentIndexV1,
    decode_chunk_sizes,
    decode_transformed_chunks,
    decompress_chunk,
    encode_chunk_sizes,
    encode_transformed_chunks,
    parse_manifest,
    zstd_compress_bound,
)
from kafkalog.remote.aiven_manifest import (
    decode_chunk_sizes as decode,
)

# ChunkIndexSerializationTest: three transformed sizes 10, 20, 30 in the codec's bytes, zstd with content size.
ENCODED_CHUNKS = "KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"
METADATA = {"remoteLogSegmentId": {"topicIdPartition": {"topicId": "lZ6vvmajTWKDBUTV6SQAtQ",
                                                        "topicPartition": {"topic": "topic1", "partition": 42}},
                                   "id": "adh9f8BMS4anaUnD8KWfWg"},
            "startOffset": 0, "endOffset": 1000, "maxTimestampMs": 1000000000, "brokerId": 2,
            "eventTimestampMs": 2000000000, "segmentLeaderEpochs": {"0": 100, "1": 200, "2": 300}}
INDEXES = {"offset": {"position": 0, "size": 1}, "timestamp": {"position": 1, "size": 1},
           "producerSnapshot": {"position": 2, "size": 1}, "leaderEpoch": {"position": 3, "size": 1},
           "transaction": {"position": 4, "size": 1}}
FIXED = {"type": "fixed", "originalChunkSize": 100, "originalFileSize": 1000, "transformedChunkSize": 110,
         "finalTransformedChunkSize": 110}
VARIABLE_INDEX = {"type": "variable", "originalChunkSize": 100, "originalFileSize": 250,
                  "transformedChunks": ENCODED_CHUNKS}


def manifest(**fields: object) -> str:
    """SegmentManifestV1SerdeTest's WITHOUT_ENCRYPTION_JSON, with ``fields`` changed (None removes one)."""
    base: dict[str, object] = {"version": "1", "chunkIndex": FIXED, "segmentIndexes": INDEXES,
                               "compression": False, "remoteLogSegmentMetadata": METADATA}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not None}, separators=(",", ":"))


def test_serde_test_manifest_without_encryption() -> None:
    # the fixed index 100/1000/110/110 is an encrypted one's shape: read it as the plugin does (it is only
    # refused as "not the original file" when neither compression nor encryption explains it)
    m = parse_manifest(manifest(encryption={"dataKey": "k:AAAA", "aad": "CgsMDQ=="}))
    assert m.encrypted and not m.compression
    assert m.chunk_index.kind == "fixed" and m.chunk_index.count == 10
    assert m.chunk_index.chunk(9) == Chunk(9, 900, 100, 990, 110)
    assert [m.index(t) for t in IndexType] == [SegmentIndexV1(0, 1), SegmentIndexV1(1, 1), SegmentIndexV1(2, 1),
                                               SegmentIndexV1(4, 1), SegmentIndexV1(3, 1)]
    assert (m.start_offset, m.end_offset, m.segment_id, m.event_timestamp_ms, m.max_leader_epoch) == \
        (0, 1000, "adh9f8BMS4anaUnD8KWfWg", 2000000000, 2)
    with pytest.raises(CorruptRemoteSegmentError, match="neither compressed nor encrypted"):
        parse_manifest(manifest())


def test_serde_test_manifest_without_txn_index() -> None:
    identity = {**FIXED, "transformedChunkSize": 100, "finalTransformedChunkSize": 100}
    m = parse_manifest(manifest(chunkIndex=identity, segmentIndexes={**INDEXES, "transaction": None}))
    assert m.index(IndexType.TRANSACTION) is None and not m.encrypted
    assert m.chunk_index.transformed_file_size == 1000
    # older plugin versions write no remoteLogSegmentMetadata; a number 1 is the same type id as "1"
    m = parse_manifest(manifest(chunkIndex=identity, remoteLogSegmentMetadata=None, version=1))
    assert m.end_offset is None and m.max_leader_epoch is None


def test_serde_test_encryption_requires_its_fields() -> None:
    # WITH_ENCRYPTION_WITHOUT_SECRET_KEY_JSON: what the test compares after removing the data key
    with pytest.raises(CorruptRemoteSegmentError, match="Missing required creator property 'dataKey'"):
        parse_manifest(manifest(encryption={"aad": "CgsMDQ=="}))


def test_chunk_index_serialization_test_vectors() -> None:
    assert encode_transformed_chunks([10, 20, 30]) == ENCODED_CHUNKS
    assert decode_transformed_chunks(ENCODED_CHUNKS) == [10, 20, 30]
    raw = zstandard.ZstdDecompressor().decompress(base64.b64decode(ENCODED_CHUNKS))
    assert raw == struct.pack(">iibbbi", 3, 10, 1, 0, 10, 30)
    fixed = ChunkIndex.fixed(100, 250, 110, 30)
    assert fixed.chunks == [Chunk(0, 0, 100, 0, 110), Chunk(1, 100, 100, 110, 110), Chunk(2, 200, 50, 220, 30)]
    variable = parse_manifest(manifest(
        compression=True, chunkIndex={"type": "variable", "originalChunkSize": 100, "originalFileSize": 250,
                                      "transformedChunks": ENCODED_CHUNKS})).chunk_index
    assert variable.chunks == [Chunk(0, 0, 100, 0, 10), Chunk(1, 100, 100, 10, 20), Chunk(2, 200, 50, 30, 30)]
    assert variable.chunks_for_range(150, 201) == variable.chunks[1:3]
    assert variable.chunks_for_range(0, 1000) == variable.chunks
    assert variable.chunks_for_range(250, 300) == []
    assert ChunkIndex.fixed(100, 0, 100, 0).chunks == [Chunk(0, 0, 0, 0, 0)]  # materializeChunks of an empty file


@pytest.mark.parametrize("missing", ["originalChunkSize", "originalFileSize", "transformedChunkSize",
                                     "finalTransformedChunkSize"])
def test_fixed_index_requires_every_field(missing: str) -> None:
    index = {k: v for k, v in FIXED.items() if k != missing}
    with pytest.raises(CorruptRemoteSegmentError, match=f"Missing required creator property '{missing}'"):
        parse_manifest(manifest(chunkIndex=index, encryption={"dataKey": "k", "aad": ""}))


@pytest.mark.parametrize(("values", "width"), [
    ([0, 1000, 2, 44002, 369], 2),
    ([2**31 - 1, 2**31 - 2, 2**31 - 3, 10], 1),
    ([1, 2, 3, 2**31 - 1], 1),
    ([1, 0xFF + 10, 0xFF + 20, 0xFF + 30, 2**31 - 1], 2),
    ([1, 0xFFFF + 10, 0xFFFF + 20, 0xFFFF + 30, 2**31 - 1], 3),
    ([1, 0xFFFFFF + 10, 0xFFFFFF + 20, 0xFFFFFF + 30, 2**31 - 1], 4),
    (list(range(0, 2**31 - 2000, 1000 * 4096)), 4),
])
def test_chunk_sizes_codec(values: list[int], width: int) -> None:
    encoded = encode_chunk_sizes(values)
    assert len(encoded) == 4 + 4 + 1 + (len(values) - 1) * width + 4
    assert encoded[8] == width
    assert decode(encoded) == values


def test_chunk_sizes_codec_edges() -> None:
    assert decode_chunk_sizes(encode_chunk_sizes([])) == []
    assert decode_chunk_sizes(encode_chunk_sizes([213])) == [213]
    assert decode_chunk_sizes(encode_chunk_sizes([2**31 - 1])) == [2**31 - 1]
    for bad in ([-1], [-1, 2, 3], [1, -2, 3], [1, 2, -3]):
        with pytest.raises(ValueError, match="Values cannot be negative"):
            encode_chunk_sizes(bad)


@pytest.mark.parametrize(("data", "why"), [
    (b"\x00\x00", "cannot hold the count"),
    (struct.pack(">i", -1), "negative count"),
    (struct.pack(">i", 1) + b"\x00", "one value announced"),
    (struct.pack(">iib", 3, 10, 5) + b"\x00" * 6, "5 bytes per value"),
    (struct.pack(">iib", 2**30, 10, 1), "need"),
    (struct.pack(">iibbi", 2, 10, 1, 0, 30) + b"!", "1 bytes after the last value"),
    (struct.pack(">iibbi", 2, 2**31 - 1, 1, 5, 30), "negative transformed chunk size"),
    (struct.pack(">ii", 1, -5), "negative transformed chunk size"),
])
def test_hostile_chunk_sizes(data: bytes, why: str) -> None:
    with pytest.raises(CorruptRemoteSegmentError, match=why):
        decode_chunk_sizes(data)


def test_hostile_transformed_chunks() -> None:
    with pytest.raises(CorruptRemoteSegmentError, match="not base64"):
        decode_transformed_chunks("not base64!")
    with pytest.raises(CorruptRemoteSegmentError, match="not a zstd frame"):
        decode_transformed_chunks(base64.b64encode(b"plain bytes").decode())
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(encode_chunk_sizes([1, 2]))
    with pytest.raises(CorruptRemoteSegmentError, match="Invalid decompressed size: -1"):
        decode_transformed_chunks(base64.b64encode(no_size).decode())
    huge = zstandard.ZstdCompressor(write_content_size=True).compress(bytes(10 * 1024 * 1024 + 1))
    with pytest.raises(CorruptRemoteSegmentError, match="Invalid decompressed size: 10485761"):
        decode_transformed_chunks(base64.b64encode(huge).decode())
    frame = base64.b64decode(ENCODED_CHUNKS)
    with pytest.raises(CorruptRemoteSegmentError, match="truncated"):
        decode_transformed_chunks(base64.b64encode(frame[:-3]).decode())


def test_decompress_chunk_checks_its_size() -> None:
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"x" * 100)
    assert decompress_chunk(frame, 100, "c") == b"x" * 100
    with pytest.raises(CorruptRemoteSegmentError, match=r"Invalid decompressed size: 100 .* says 99"):
        decompress_chunk(frame, 99, "c")
    with pytest.raises(CorruptRemoteSegmentError, match="bytes after the zstd frame"):
        decompress_chunk(frame + b"junk", 100, "c")


@pytest.mark.parametrize(("text", "why"), [
    ("{", "not JSON"),
    ("[]", "expected a JSON object"),
    (manifest(version=None), "missing type id property 'version'"),
    (manifest(version="2"), "Could not resolve type id '2' as a subtype of SegmentManifest"),
    (manifest(compression=None), "Missing required creator property 'compression'"),
    (manifest(compression="false"), "expected true or false"),
    (manifest(extra=1), 'Unrecognized field "extra"'),
    (manifest(chunkIndex={**FIXED, "type": "other"}), "Could not resolve type id 'other'"),
    (manifest(chunkIndex={k: v for k, v in FIXED.items() if k != "type"}), "missing type id property 'type'"),
    (manifest(chunkIndex={**FIXED, "originalChunkSize": 0}), "Original chunk size must be positive, 0 given"),
    (manifest(chunkIndex={**FIXED, "originalFileSize": -1}), "Original file size must be non-negative"),
    (manifest(chunkIndex={**FIXED, "originalFileSize": 2**31}), "out of range"),
    (manifest(chunkIndex={**FIXED, "originalFileSize": "1000"}), "expected an integer"),
    (manifest(segmentIndexes={**INDEXES, "offset": None}), "offset cannot be null"),
    (manifest(segmentIndexes={k: v for k, v in INDEXES.items() if k != "transaction"}),
     "Missing required creator property 'transaction'"),
    (manifest(segmentIndexes={**INDEXES, "leaderEpoch": {"position": -1, "size": 1}}), "out of range"),
    (manifest(compression=True, chunkIndex={"type": "variable", "originalChunkSize": 100, "originalFileSize": 1000,
                                            "transformedChunks": ENCODED_CHUNKS}), "3 transformed chunks"),
    (manifest(compression=True, chunkIndex={"type": "variable", "originalChunkSize": 100, "originalFileSize": 0,
                                            "transformedChunks": encode_transformed_chunks([])}),
     "transformedChunks is empty"),
    # issue 28: what the plugin cannot have written
    (manifest(compression=True), "a compressed segment has a variable chunk index"),
    (manifest(chunkIndex=VARIABLE_INDEX), "a variable chunk index belongs to a compressed segment"),
    (manifest(compression=True, chunkIndex={**VARIABLE_INDEX, "transformedChunks": encode_transformed_chunks(
        [10, 20, 3])}), r"chunk 2 of 50 original bytes cannot be a zstd frame of 3 bytes \(one takes 9 to 113\)"),
    (manifest(compression=True, chunkIndex={**VARIABLE_INDEX, "transformedChunks": encode_transformed_chunks(
        [10, 164, 30])}), r"chunk 1 of 100 original bytes cannot be a zstd frame of 164 bytes \(one takes 9 to 163\)"),
    (manifest(compression=True, chunkIndex={**VARIABLE_INDEX, "transformedChunks": encode_transformed_chunks(
        [0, 20, 30])}), "chunk 0 of 100 original bytes cannot be a zstd frame of 0 bytes"),
])
def test_hostile_manifests(text: str, why: str) -> None:
    with pytest.raises(CorruptRemoteSegmentError, match=why):
        parse_manifest(text)


def test_zstd_frame_bounds() -> None:
    """The bounds a compressed chunk's size is held to, against what zstd writes: the least frame, and
    incompressible chunks of the sizes around the 128 KiB block, checksummed."""
    assert len(zstandard.ZstdCompressor(write_content_size=True).compress(b"")) == MIN_ZSTD_FRAME_SIZE
    for size in (0, 1, 100, 128 * 1024 - 1, 128 * 1024, 300_000):
        frame = zstandard.ZstdCompressor(write_content_size=True, write_checksum=True).compress(os.urandom(size))
        assert MIN_ZSTD_FRAME_SIZE <= len(frame) <= zstd_compress_bound(size)
    assert [zstd_compress_bound(n) for n in (0, 50, 100, 128 * 1024, 4 * 1024 * 1024)] == [
        64, 113, 163, 131584, 4210688]


def test_manifest_against_its_log_object_size() -> None:
    """Given the ``.log`` object's size, the chunk index must describe exactly that many bytes; an
    encrypted segment's compressed chunk sizes are not held to zstd's bounds (AES-GCM adds to each)."""
    variable = manifest(compression=True, chunkIndex=VARIABLE_INDEX)
    assert parse_manifest(variable, log_object_size=60).chunk_index.transformed_file_size == 60
    with pytest.raises(CorruptRemoteSegmentError, match=r"the \.log object has 59 bytes, its manifest's chunk index "
                                                        "says 60"):
        parse_manifest(variable, log_object_size=59)
    with pytest.raises(CorruptRemoteSegmentError, match=r"3 chunks .* cannot fit in the \.log object's 26 bytes"):
        parse_manifest(variable, log_object_size=26)
    encrypted = parse_manifest(manifest(compression=True, encryption={"dataKey": "k:AAAA", "aad": "CgsMDQ=="},
                                        chunkIndex={**VARIABLE_INDEX,
                                                    "transformedChunks": encode_transformed_chunks([1, 2, 3])}))
    assert encrypted.encrypted and encrypted.chunk_index.transformed_file_size == 6


def test_chunk_ranges_are_computed_when_reached() -> None:
    """A range of a hundred thousand chunks costs a ``range`` until it is read (before: a list of a chunk
    object each, 25 MB here, 1.7 GB for the issue's 8 MiB of one-byte chunks)."""
    index = ChunkIndex.fixed(1, 2**31 - 1, 1, 1)
    assert index.count == 2**31 - 1
    tracemalloc.start()
    try:
        chunks = index.chunks_for_range(1000, 101_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024
    assert len(chunks) == 100_000
    assert chunks[0] == Chunk(1000, 1000, 1, 1000, 1) and chunks[-1] == Chunk(100_999, 100_999, 1, 100_999, 1)
    assert list(chunks[2:4]) == [Chunk(1002, 1002, 1, 1002, 1), Chunk(1003, 1003, 1, 1003, 1)]
    assert list(itertools.islice(chunks, 2)) == [Chunk(1000, 1000, 1, 1000, 1), Chunk(1001, 1001, 1, 1001, 1)]
    assert index.chunks_for_range(5, 5) == [] and index.chunks_for_range(2**31, 2**31 + 9) == []
    assert index.chunks[-1] == Chunk(2**31 - 2, 2**31 - 2, 1, 2**31 - 2, 1)
