"""Kafka's LocalTieredStorage layout (``LocalTieredStorage``, ``RemoteLogSegmentFileset``,
``RemoteTopicPartitionDirectory``, Kafka 3.8.0): names parsed as Kafka parses them, partitions and segments
listed in order, segments and indexes read back byte for byte through ranged reads."""

from __future__ import annotations

import re
import struct
from typing import Any

import pytest

from kafkalog.errors import CorruptIndexError, RemoteLayoutError, RemoteResourceNotFoundError, RemoteStorageError
from kafkalog.record import MemoryRecords
from kafkalog.remote import IndexType, detect_layout, list_partitions, local_tiered
from kafkalog.remote.local_tiered import DIRNAME_FORMAT, FILENAME_FORMAT, RemoteLogSegmentFileType
from kafkalog.remote.upload import LocalSegment, new_uuid, upload_local_tiered

TOPIC_ID = "LWgrMmVrT0a__7a4SasuPA"  # LocalTieredStorage's javadoc example


def test_lists_partitions_and_reads_segments_back(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    storage = f"{root}/kafka-tiered-storage"
    ids = upload_local_tiered(fs, storage, "orders", 0, TOPIC_ID, local_segments)
    upload_local_tiered(fs, storage, "orders", 1, TOPIC_ID, local_segments[:1])
    # the dir the storage was configured with, or the storage directory itself
    for where in (root, storage):
        assert detect_layout(fs, where) == "kafka-local-tiered-storage"
        partitions = list_partitions(fs, where)
        assert [(p.topic, p.partition, p.topic_id) for p in partitions] == [("orders", 0, TOPIC_ID),
                                                                              ("orders", 1, TOPIC_ID)]
    p0 = partitions[0]
    assert p0.name == "orders-0" and p0.skipped == ()
    assert [s.base_offset for s in p0.segments] == [s.base_offset for s in local_segments]
    for remote, local in zip(p0.segments, local_segments, strict=True):
        assert remote.segment_id == ids[local.base_offset]
        assert remote.size == len(local.log)
        assert remote.read() == local.log
        assert remote.read(100, 333) == local.log[100:433]
        assert remote.read(remote.size - 10, 1000) == local.log[-10:]  # cut at the segment's end
        assert remote.read(remote.size, 10) == b""
        assert remote.index_types() == {IndexType.OFFSET, IndexType.TIMESTAMP, IndexType.PRODUCER_SNAPSHOT,
                                        IndexType.LEADER_EPOCH}
        assert remote.index(IndexType.OFFSET) == local.index
        assert remote.index(IndexType.TIMESTAMP) == local.timeindex
        assert remote.index(IndexType.LEADER_EPOCH) == local.leader_epoch
        assert remote.index(IndexType.TRANSACTION) is None  # optional, not uploaded
    first = MemoryRecords(p0.segments[0].read())
    assert next(iter(first.batches())).base_offset == 0


def test_kafka_name_patterns() -> None:
    # RemoteTopicPartitionDirectory: topic (legal chars, dashes too), partition, 22-character uuid
    m = DIRNAME_FORMAT.fullmatch("my-topic-3-5fEBmixCR5-dMntYSLIr1g")
    assert m is not None and m.groups() == ("my-topic", "3", "5fEBmixCR5-dMntYSLIr1g")
    assert DIRNAME_FORMAT.fullmatch("topic-0") is None  # a broker's partition dir
    m = FILENAME_FORMAT.fullmatch("00000000000000000011-bCqX9U--S-6U8XUM9II25Q.log")
    assert m is not None and m.groups() == ("00000000000000000011-", "bCqX9U--S-6U8XUM9II25Q", ".log")
    assert RemoteLogSegmentFileType.of_filename("0-bCqX9U--S-6U8XUM9II25Q.leader_epoch_checkpoint") \
        is RemoteLogSegmentFileType.LEADER_EPOCH_CHECKPOINT
    for bad in ("00000000000000000011.log", "0-bCqX9U--S-6U8XUM9II25Q.crc", "0-short.log",
                "\u0663-bCqX9U--S-6U8XUM9II25Q.log"):  # an Arabic-Indic digit: Java's \\d is ASCII only
        with pytest.raises(RemoteLayoutError, match=re.escape(f"Not a remote log segment file: {bad}")):
            RemoteLogSegmentFileType.of_filename(bad)


def test_stray_names_are_kafkas_errors(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    upload_local_tiered(fs, root, "orders", 0, TOPIC_ID, local_segments[:1])
    fs.makedirs(f"{root}/orders-1", exist_ok=True)
    fs.pipe_file(f"{root}/orders-1/x", b"")
    with pytest.raises(RemoteLayoutError, match="Not a topic partition directory file: orders-1"):
        local_tiered.list_partitions(fs, root)
    fs.rm(f"{root}/orders-1", recursive=True)
    fs.pipe_file(f"{root}/orders-0-{TOPIC_ID}/00000000000000000000.log", b"")
    with pytest.raises(RemoteLayoutError, match=r"Not a remote log segment file: 00000000000000000000\.log"):
        local_tiered.list_partitions(fs, root)


def test_partition_number_past_int_max(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    upload_local_tiered(fs, root, "orders", 2**31, TOPIC_ID, local_segments[:1])
    with pytest.raises(RemoteLayoutError, match="Invalid format for topic-partition directory"):
        local_tiered.list_partitions(fs, root)


def test_missing_root(store: tuple[Any, str]) -> None:
    fs, root = store
    with pytest.raises(RemoteResourceNotFoundError):
        local_tiered.list_partitions(fs, f"{root}/nowhere")
    assert detect_layout(fs, root) is None


def test_unfinished_copy_is_skipped(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    ids = upload_local_tiered(fs, root, "orders", 0, TOPIC_ID, local_segments[:3])
    # RemoteLogSegmentFileset.copy writes the .log first and the snapshot last: the last copy stopped half-way
    last = f"{root}/orders-0-{TOPIC_ID}/{local_segments[2].base_offset:020d}-{ids[local_segments[2].base_offset]}"
    fs.rm(last + ".snapshot")
    fs.rm(last + ".leader_epoch_checkpoint")
    [p] = local_tiered.list_partitions(fs, root)
    assert [s.base_offset for s in p.segments] == [s.base_offset for s in local_segments[:2]]
    [skipped] = p.skipped
    assert skipped.reason.startswith("Invalid fileset, missing files: [LEADER_EPOCH_CHECKPOINT, PRODUCER_SNAPSHOT]")


def test_transaction_index_is_optional_and_read(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    seg = LocalSegment(**{**vars(local_segments[0]), "txnindex": bytes(range(34))})
    upload_local_tiered(fs, root, "orders", 0, TOPIC_ID, [seg])
    [p] = local_tiered.list_partitions(fs, root)
    assert p.segments[0].index(IndexType.TRANSACTION) == bytes(range(34))


def test_two_copies_of_one_base_offset(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    first = upload_local_tiered(fs, root, "orders", 0, TOPIC_ID, local_segments[:2])
    second = upload_local_tiered(fs, root, "orders", 0, TOPIC_ID, local_segments[1:2])
    [p] = local_tiered.list_partitions(fs, root)
    assert [s.base_offset for s in p.segments] == [s.base_offset for s in local_segments[:2]]
    assert len(p.skipped) == 1 and "another upload of base offset" in p.skipped[0].reason
    # LocalTieredStorage knows nothing of either copy's metadata: the greater segment id wins, whatever the order
    offset = local_segments[1].base_offset
    assert p.segments[1].segment_id == max(first[offset], second[offset])
    # __remote_log_metadata decides when it is given
    [p] = local_tiered.list_partitions(fs, root, copied={first[0], first[offset]})
    assert p.segments[1].segment_id == first[offset]
    assert len(p.skipped) == 1 and p.skipped[0].reason == "not COPY_SEGMENT_FINISHED in __remote_log_metadata"


def test_object_cut_short_after_listing(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    upload_local_tiered(fs, root, "orders", 0, TOPIC_ID, local_segments[:1])
    [p] = local_tiered.list_partitions(fs, root)
    segment = p.segments[0]
    fs.pipe_file(segment.path, local_segments[0].log[:100])
    with pytest.raises(RemoteStorageError, match=r"gave 0 bytes, not 100"):
        segment.read(200, 100)
    with pytest.raises(RemoteStorageError, match="negative position"):
        segment.read(-1, 10)


def test_segment_ids_are_uuids() -> None:
    assert len(new_uuid()) == 22


def test_lookup_through_the_uploaded_offset_index(store: tuple[Any, str], local_segments: list[LocalSegment]) -> None:
    fs, root = store
    seg = local_segments[1]
    upload_local_tiered(fs, root, "orders", 0, TOPIC_ID, [seg])
    [p] = local_tiered.list_partitions(fs, root)
    remote = p.segments[0]
    relative, position = struct.unpack(">ii", seg.index[:8])
    assert remote.lookup(seg.base_offset + relative) == (seg.base_offset + relative, position)
    assert remote.lookup(seg.base_offset - 1) == (seg.base_offset, 0)
    assert len(seg.index) == 16  # rewritten with as many bytes as were listed
    # an entry at or past the end of the .log (cut short) is not searched: the read starts from the last batch
    # the .log still holds, and the offsets lost are the reader's to report
    fs.pipe_file(remote.path.replace(".log", ".index"), struct.pack(">iiii", 1, 10, 2, remote.size))
    assert remote.offset_index_entries()[1:] == (2, 1)
    assert remote.lookup(seg.base_offset + 5) == (seg.base_offset + 1, 10)
    fs.pipe_file(remote.path.replace(".log", ".index"), struct.pack(">iiii", 1, -10, 2, 20))
    with pytest.raises(CorruptIndexError, match="points outside the segment's"):
        remote.lookup(seg.base_offset + 1)
