"""Aiven's tiered-storage layout (``ObjectKeyFactory``, ``KafkaRemoteStorageManager``, ``FetchChunkEnumeration``):
segments kafkalog wrote, uploaded as the plugin uploads them (chunked, zstd-compressed or not, indexes
packed), listed and read back byte for byte through ranged reads."""

from __future__ import annotations

import base64
import json
import pickle
import random
import struct
import tracemalloc
import uuid
from typing import Any

import fsspec
import pytest
import zstandard

from kafkalog.errors import (
    CorruptRemoteSegmentError,
    EncryptedSegmentError,
    IllegalArgumentError,
    RemoteLayoutError,
)
from kafkalog.record import MemoryRecords
from kafkalog.remote import IndexType, aiven, detect_layout, list_partitions
from kafkalog.remote.aiven import KEY_FORMAT, AivenSegment
from kafkalog.remote.aiven_manifest import encode_transformed_chunks
from kafkalog.remote.upload import LocalSegment, upload_aiven

TOPIC_ID = "MWJ6FHTfRYy67jzwZdeqSQ"  # ObjectKeyFactory's javadoc example


def test_object_key_factory_test_keys() -> None:
    m = KEY_FORMAT.fullmatch("topic-AAAAAAAAAAAAAAAAAAAAAQ/7/00000000000000001234-AAAAAAAAAAAAAAAAAAAAAA.rsm-manifest")
    assert m is not None
    assert m.groups() == ("topic", "AAAAAAAAAAAAAAAAAAAAAQ", "7", "00000000000000001234", "AAAAAAAAAAAAAAAAAAAAAA",
                          "rsm-manifest")
    m = KEY_FORMAT.fullmatch("my-topic-tqimKeZwStOEOwRzT3L5oQ/0/00000000000000000000-tqimKeZwStOEOwRzT3L5oQ.log")
    assert m is not None and m.group(1) == "my-topic"
    assert KEY_FORMAT.fullmatch("topic-AAAAAAAAAAAAAAAAAAAAAQ/7/1234-AAAAAAAAAAAAAAAAAAAAAA.log") is None


@pytest.mark.parametrize("compression", [True, False])
def test_lists_and_reads_back(store: tuple[Any, str], local_segments: list[LocalSegment], compression: bool) -> None:
    fs, root = store
    ids = upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments, compression=compression, chunk_size=700)
    upload_aiven(fs, root, "orders", 3, TOPIC_ID, local_segments[:1], compression=compression)
    assert detect_layout(fs, root) == "aiven-tiered-storage"
    partitions = list_partitions(fs, root)
    assert [(p.topic, p.partition, p.topic_id) for p in partitions] == [("orders", 0, TOPIC_ID),
                                                                          ("orders", 3, TOPIC_ID)]
    p0 = partitions[0]
    assert p0.skipped == ()
    assert [s.base_offset for s in p0.segments] == [s.base_offset for s in local_segments]
    rng = random.Random(19)
    for remote, local in zip(p0.segments, local_segments, strict=True):
        assert isinstance(remote, AivenSegment)
        assert remote.segment_id == ids[local.base_offset]
        assert remote.end_offset == local.end_offset
        assert remote.size == len(local.log)
        assert remote.read() == local.log
        for _ in range(30):
            start = rng.randrange(remote.size)
            size = rng.randrange(1, 2500)
            assert remote.read(start, size) == local.log[start:start + size]
        assert remote.read(699, 2) == local.log[699:701]  # across a chunk boundary
        assert remote.index_types() == {IndexType.OFFSET, IndexType.TIMESTAMP, IndexType.PRODUCER_SNAPSHOT,
                                        IndexType.LEADER_EPOCH}
        assert remote.index(IndexType.OFFSET) == local.index
        assert remote.index(IndexType.TIMESTAMP) == local.timeindex
        assert remote.index(IndexType.PRODUCER_SNAPSHOT) == local.snapshot
        assert remote.index(IndexType.LEADER_EPOCH) == local.leader_epoch
        assert remote.index(IndexType.TRANSACTION) is None
        # OffsetIndex.lookup on the uploaded index: the batch holding the offset starts at that position
        offset, position = remote.lookup(remote.base_offset + 45)
        assert offset <= remote.base_offset + 45 and 0 < position < remote.size
        batch = next(iter(MemoryRecords(remote.read(position, 4096)).batches()))
        assert batch.base_offset <= offset <= batch.last_offset  # an entry names its batch's last offset
        assert remote.lookup(remote.base_offset) == (remote.base_offset, 0)


def test_reads_fetch_ranges_not_objects(store: tuple[Any, str], local_segments: list[LocalSegment],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    fs, root = store
    upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:1], chunk_size=500)
    [p] = aiven.list_partitions(fs, root)
    calls: list[tuple[str, int | None, int | None]] = []
    real = fs.cat_file

    def cat_file(path: str, start: int | None = None, end: int | None = None, **kw: Any) -> bytes:
        calls.append((path, start, end))
        return bytes(real(path, start=start, end=end, **kw))

    monkeypatch.setattr(fs, "cat_file", cat_file)
    segment = p.segments[0]
    assert isinstance(segment, AivenSegment) and segment.manifest is not None
    chunk = segment.manifest.chunk_index.chunk(2)
    assert segment.read(1000, 10) == local_segments[0].log[1000:1010]
    assert calls == [(segment.path, chunk.transformed_position, chunk.transformed_position + chunk.transformed_size)]
    # consecutive chunks come in one ranged read, up to MAX_FETCH_BYTES
    calls.clear()
    monkeypatch.setattr(aiven, "MAX_FETCH_BYTES", segment.manifest.chunk_index.chunk(0).transformed_size * 2)
    assert segment.read(0, 2000) == local_segments[0].log[:2000]
    assert 1 < len(calls) < 4 and {c[0] for c in calls} == {segment.path}  # four chunks, in two or three reads


def test_segment_without_manifest_is_skipped(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:2])
    upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[2:3], manifest=False)
    [p] = aiven.list_partitions(fs, root)
    assert [s.base_offset for s in p.segments] == [s.base_offset for s in local_segments[:2]]
    assert [s.reason for s in p.skipped] == ["no .rsm-manifest: the upload is not finished"]


def test_manifest_without_its_objects_is_a_deletion(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    ids = upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:2])
    fs.rm(f"{root}/orders-{TOPIC_ID}/0/{0:020d}-{ids[0]}.log")
    [p] = aiven.list_partitions(fs, root)
    assert [s.base_offset for s in p.segments] == [local_segments[1].base_offset]
    assert "a deletion under way" in p.skipped[0].reason


def test_encrypted_segment_is_an_error(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:1],
                 encryption={"dataKey": "key1:c2VhbGVk", "aad": "CgsMDQ=="})
    with pytest.raises(EncryptedSegmentError, match="uploaded encrypted"):
        aiven.list_partitions(fs, root)


def test_prefix(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:1], prefix="tiered-")
    [p] = aiven.list_partitions(fs, root)
    assert p.topic == "tiered-orders"  # a prefix without a slash cannot be told from the topic's name
    [p] = aiven.list_partitions(fs, root, prefix="tiered-")
    assert p.topic == "orders"
    upload_aiven(fs, f"{root}/bucket", "orders", 0, TOPIC_ID, local_segments[:1], prefix="a/b/")
    [p] = aiven.list_partitions(fs, f"{root}/bucket/a/b")
    assert p.topic == "orders"
    [p] = aiven.list_partitions(fs, f"{root}/bucket", prefix="a/b/")
    assert p.topic == "orders"
    # a prefix of whole directories is found from the keys
    assert detect_layout(fs, f"{root}/bucket") == "aiven-tiered-storage"
    [p] = aiven.list_partitions(fs, f"{root}/bucket")
    assert p.topic == "orders"
    with pytest.raises(RemoteLayoutError, match="with prefix '': a/b/orders-"):
        aiven.list_partitions(fs, f"{root}/bucket", prefix="")
    upload_aiven(fs, f"{root}/bucket", "orders", 0, TOPIC_ID, local_segments[:1], prefix="c/")
    with pytest.raises(RemoteLayoutError, match=r"several prefixes: \['a/b/', 'c/'\]"):
        aiven.list_partitions(fs, f"{root}/bucket")


def test_two_uploads_of_one_base_offset(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    old = upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:1], event_timestamp_ms=1000)
    new = upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:1], event_timestamp_ms=2000)
    [p] = aiven.list_partitions(fs, root)
    assert [s.segment_id for s in p.segments] == [new[0]]  # the copy started last
    # a copy whose data reaches a higher leader epoch wins over a later one
    newer_epoch = upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:1], event_timestamp_ms=500,
                               epochs={0: 0, 1: 30})
    [p] = aiven.list_partitions(fs, root)
    assert [s.segment_id for s in p.segments] == [newer_epoch[0]]
    assert len(p.skipped) == 2
    [p] = aiven.list_partitions(fs, root, copied={old[0]})
    assert [s.segment_id for s in p.segments] == [old[0]]


def test_bad_keys_and_objects(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    ids = upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:1], chunk_size=500)
    key = f"{root}/orders-{TOPIC_ID}/0/{0:020d}-{ids[0]}"
    fs.pipe_file(f"{root}/orders-{TOPIC_ID}/0/stray.txt", b"")
    with pytest.raises(RemoteLayoutError, match="not an object key of Aiven's tiered storage"):
        aiven.list_partitions(fs, root)
    fs.rm(f"{root}/orders-{TOPIC_ID}/0/stray.txt")
    log = fs.cat_file(key + ".log")
    fs.pipe_file(key + ".log", log[:-1])
    with pytest.raises(CorruptRemoteSegmentError, match="its manifest's chunk index says"):
        aiven.list_partitions(fs, root)
    # a chunk whose bytes were damaged
    damaged = bytearray(log)
    damaged[len(damaged) // 2] ^= 0xFF
    fs.pipe_file(key + ".log", bytes(damaged))
    [p] = aiven.list_partitions(fs, root)
    with pytest.raises(CorruptRemoteSegmentError, match="chunk"):
        p.segments[0].read()
    fs.pipe_file(key + ".rsm-manifest", b"{not json")
    with pytest.raises(CorruptRemoteSegmentError, match=r"manifest is not JSON.*rsm-manifest"):
        aiven.list_partitions(fs, root)
    fs.pipe_file(key + ".indexes", b"")
    fs.pipe_file(key + ".rsm-manifest", b"")
    with pytest.raises(CorruptRemoteSegmentError):
        aiven.list_partitions(fs, root)


def test_index_outside_the_indexes_object(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    ids = upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:1])
    key = f"{root}/orders-{TOPIC_ID}/0/{0:020d}-{ids[0]}"
    fs.pipe_file(key + ".indexes", fs.cat_file(key + ".indexes")[:5])
    with pytest.raises(CorruptRemoteSegmentError, match=r"index at .* is outside the object's 5 bytes"):
        aiven.list_partitions(fs, root)


def test_segments_pickle_into_a_task(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    """A Spark task gets its segments pickled: they carry plain data and the filesystem, nothing else."""
    fs, root = store
    upload_aiven(fs, root, "orders", 0, TOPIC_ID, local_segments[:2], chunk_size=600)
    [p] = list_partitions(fs, root, layout="aiven-tiered-storage")
    copy = pickle.loads(pickle.dumps(p))
    assert copy == p
    assert copy.segments[1].read(10, 1500) == local_segments[1].log[10:1510]


def test_unknown_or_absent_layout(store: tuple[Any, str]) -> None:
    fs, root = store
    fs.makedirs(f"{root}/orders-0", exist_ok=True)
    fs.pipe_file(f"{root}/orders-0/00000000000000000000.log", b"")  # a broker's log dir
    assert detect_layout(fs, root) is None
    with pytest.raises(RemoteLayoutError, match="no tiered-storage layout found"):
        list_partitions(fs, root)
    with pytest.raises(RemoteLayoutError, match="unknown layout 'hdfs'"):
        list_partitions(fs, root, layout="hdfs")
    with pytest.raises(IllegalArgumentError, match="unknown option prefix for layout kafka-local-tiered-storage"):
        list_partitions(fs, root, layout="kafka-local-tiered-storage", prefix="x/")


# -- hostile manifests (issue 28) ----------------------------------------------------------------------

SEGMENT_ID = "AAAAAAAAAAAAAAAAAAAAAA"
EMPTY_INDEXES = {**{name: {"position": 0, "size": 0} for name in ("offset", "timestamp", "producerSnapshot",
                                                                     "leaderEpoch")}, "transaction": None}
ONE_ZERO_FRAME = zstandard.ZstdCompressor(write_content_size=True).compress(b"\x00")  # one original byte


def put_segment(fs: Any, root: str, log: bytes, chunk_index: dict[str, Any], compression: bool) -> str:
    """One segment of the layout written by hand: ``log`` as its ``.log`` object, empty indexes, a manifest
    with ``chunk_index``; the manifest's path."""
    key = f"{root}/orders-{TOPIC_ID}/0/{0:020d}-{SEGMENT_ID}"
    fs.makedirs(key.rsplit("/", 1)[0], exist_ok=True)
    fs.pipe_file(key + ".log", log)
    fs.pipe_file(key + ".indexes", b"")
    manifest = {"version": "1", "chunkIndex": chunk_index, "segmentIndexes": EMPTY_INDEXES, "compression": compression}
    fs.pipe_file(key + ".rsm-manifest", json.dumps(manifest).encode())
    return key + ".rsm-manifest"


def test_a_manifest_of_two_billion_one_byte_chunks_is_refused(store: tuple[Any, str]) -> None:
    """The issue's manifest: a compressed segment of 2^31 - 1 one-byte chunks, each transformed to nothing,
    so that an empty ``.log`` object matches it.  It was listed, and a read of 8 MiB built eight million chunk
    objects (1.7 GB); the plugin never writes a fixed index for a compressed segment, and a chunk of original
    bytes is never transformed to nothing."""
    fs, root = store
    fixed = {"type": "fixed", "originalChunkSize": 1, "originalFileSize": 2**31 - 1, "transformedChunkSize": 0,
             "finalTransformedChunkSize": 0}
    path = put_segment(fs, root, b"", fixed, compression=True)
    with pytest.raises(CorruptRemoteSegmentError, match="a compressed segment has a variable chunk index") as info:
        aiven.list_partitions(fs, root)
    assert info.value.path is not None and info.value.path.endswith(path.rsplit("/", 1)[1])


def test_a_manifest_whose_chunks_cannot_fit_its_object_is_refused_before_they_are_decoded(
        store: tuple[Any, str]) -> None:
    """A variable index of a million chunks (a few hundred bytes of manifest: zstd shrinks the sizes' list;
    the plugin's own limit, 10 MiB of list, allows ten million) next to an object of seven frames: refused by
    the count alone, naming the manifest, without decoding the list (before: a million Python ints, then two
    arrays of them, and only then the size check)."""
    fs, root = store
    count = 1_000_000
    # ChunkSizesBinaryCodec's bytes for `count` equal sizes, written directly (no list of ten million ints)
    raw = struct.pack(">iib", count, len(ONE_ZERO_FRAME), 1) + bytes(count - 1) + struct.pack(">i", len(ONE_ZERO_FRAME))
    variable = {"type": "variable", "originalChunkSize": 1, "originalFileSize": count,
                "transformedChunks": base64.b64encode(zstandard.ZstdCompressor(write_content_size=True).compress(raw))
                .decode()}
    path = put_segment(fs, root, ONE_ZERO_FRAME * 7, variable, compression=True)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRemoteSegmentError, match=r"1000000 chunks .* cannot fit in the \.log object's "
                                                            f"{7 * len(ONE_ZERO_FRAME)} bytes") as info:
            aiven.list_partitions(fs, root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.path is not None and info.value.path.endswith(path.rsplit("/", 1)[1])
    assert peak < 2 * 1024 * 1024


def test_a_read_of_many_small_chunks_holds_its_bytes_not_a_chunk_each() -> None:
    """Ten thousand one-byte chunks (the plugin allows ``chunk.size=1``), read whole: what the read holds at
    once is its bytes, the ranged read and one chunk, not a chunk object and a part per chunk of the range
    (before: 3 MB of them for these 10 KB)."""
    fs = fsspec.filesystem("memory")
    root = f"/kafkalog-test-{uuid.uuid4().hex}"
    count = 10_000
    try:
        put_segment(fs, root, ONE_ZERO_FRAME * count, {
            "type": "variable", "originalChunkSize": 1, "originalFileSize": count,
            "transformedChunks": encode_transformed_chunks([len(ONE_ZERO_FRAME)] * count)}, compression=True)
        [p] = aiven.list_partitions(fs, root)
        [segment] = p.segments
        tracemalloc.start()
        try:
            data = segment.read(0, count)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert data == bytes(count)
        # the object (100 KB) fetched once and copied once, the 10 KB read, and change
        assert peak < 1024 * 1024
        assert segment.read(4321, 7) == bytes(7)
    finally:
        fs.rm(root, recursive=True)
