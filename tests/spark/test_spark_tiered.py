"""``spark.read.format("kafkalog")`` over tiered storage: for each layout, a store built from a log kafkalog wrote
(several segments, zstd and lz4 batches, an aborted transaction) reads as the library reads the original log,
with offsets and timestamps honoured; once through an S3 server on 127.0.0.1 (moto's); the
``remoteLogMetadata`` filter; bad input as clear errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from kafkalog.log import Log
from kafkalog.record import MemoryRecords
from kafkalog.remote.upload import LocalSegment, upload_aiven, upload_local_tiered
from tests.remote import tiered_stores as stores_of
from tests.remote.test_metadata import segment_metadata, segment_update

TOPIC_ID = "LWgrMmVrT0a__7a4SasuPA"
LAYOUTS = ["kafka-local-tiered-storage", "aiven-tiered-storage"]
T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[LocalSegment], dict[str, Any]]]:
    """The original partition, its closed segments, and a store of each layout on the local disk (with the
    segment ids by base offset)."""
    base = tmp_path_factory.mktemp("tiered")
    directory = base / "orders-0"
    segments = stores_of.write_rich_partition(directory)
    fs = fsspec.filesystem("file")
    local = base / "local-tiered"
    ids = upload_local_tiered(fs, f"{local}/kafka-tiered-storage", "orders", 0, TOPIC_ID, segments)
    aiven = base / "aiven"
    upload_aiven(fs, aiven.as_posix(), "orders", 0, TOPIC_ID, segments, prefix="tiered/")
    yield directory, segments, {"kafka-local-tiered-storage": (local, ids), "aiven-tiered-storage": (aiven, None)}


def rows(frame: Any) -> list[tuple[Any, ...]]:
    got = frame.selectExpr("offset", "key", "value", "unix_millis(timestamp)").collect()
    return sorted((r[0], bytes(r[1]), bytes(r[2]), r[3]) for r in got)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_spark_reads_each_layout_as_the_library_reads_the_log(layout: str, spark: Any, stores: Any) -> None:
    directory, segments, found = stores
    root = str(found[layout][0])
    reader = spark.read.format("kafkalog")
    assert rows(reader.load(root)) == stores_of.library_read(directory, segments)
    assert rows(reader.option("layout", layout).option("maxPartitionBytes", "3000")
                .option("kafka.isolation.level", "read_committed").load(root)) \
        == stores_of.library_read(directory, segments, isolation="read_committed")
    ranged = (spark.read.format("kafkalog").option("startingOffsets", '{"orders":{"0":250}}')
              .option("endingOffsets", '{"orders":{"0":777}}').load(root))
    assert rows(ranged) == stores_of.library_read(directory, segments, 250, 777)
    timed = (spark.read.format("kafkalog").option("startingTimestamp", str(T0 + 400))
             .option("endingTimestamp", str(T0 + 900)).load(root))
    assert rows(timed) == [r for r in stores_of.library_read(directory, segments) if T0 + 400 <= r[3] < T0 + 900]


def test_spark_reads_tiered_storage_through_s3(spark: Any, stores: Any) -> None:
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    from kafkalog.urls.local_s3 import s3_server

    directory, segments, found = stores
    with s3_server(("kafkalog-tiered",)) as server:
        url = server.upload(found["aiven-tiered-storage"][0], "kafkalog-tiered/store")
        reader = spark.read.format("kafkalog")
        for name, value in server.options.items():
            reader = reader.option(f"storage.{name}", value)
        assert rows(reader.option("maxPartitionBytes", "4000").load(url)) == stores_of.library_read(directory, segments)


def test_spark_keeps_the_segments_remote_log_metadata_says_are_copied(spark: Any, stores: Any,
                                                                      tmp_path: Path) -> None:
    directory, segments, found = stores
    root, ids = found["kafka-local-tiered-storage"]
    metadata = tmp_path / "__remote_log_metadata-0"
    log = Log(metadata)
    try:
        for s in segments[:2]:  # only the first two copies finished
            for value in (segment_metadata(ids[s.base_offset], start=s.base_offset, end=s.end_offset),
                          segment_update(ids[s.base_offset], state=1)):
                log.append_as_leader(MemoryRecords.with_records([(None, value)]), leader_epoch=0)
    finally:
        log.close()
    frame = spark.read.format("kafkalog").option("remoteLogMetadata", str(metadata)).load(str(root))
    assert rows(frame) == stores_of.library_read(directory, segments[:2])


def test_spark_says_what_is_wrong(spark: Any, stores: Any, tmp_path: Path) -> None:
    _directory, segments, found = stores
    root = str(found["kafka-local-tiered-storage"][0])
    with pytest.raises(Exception, match="unknown layout 'tiered'"):
        spark.read.format("kafkalog").option("layout", "tiered").load(root).collect()
    with pytest.raises(Exception, match="layout is aiven-tiered-storage, but it holds kafka-local-tiered-storage"):
        spark.read.format("kafkalog").option("layout", "aiven-tiered-storage").load(root).collect()
    encrypted = tmp_path / "encrypted"
    upload_aiven(fsspec.filesystem("file"), encrypted.as_posix(), "orders", 0, TOPIC_ID, segments[:1],
                 encryption={"dataKey": "AAAA", "aad": "AAAA"})
    with pytest.raises(Exception, match="uploaded encrypted"):
        spark.read.format("kafkalog").load(str(encrypted)).collect()
