"""The Spark source's planner and read tasks over tiered storage (without Spark): for each layout, a store built
from a log kafkalog wrote reads as the library reads the original log; overlapping and duplicate uploads,
the ``__remote_log_metadata`` filter and bad input."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kafkalog.errors import CorruptRemoteSegmentError, EncryptedSegmentError, RemoteLayoutError
from kafkalog.log import Log
from kafkalog.partition_view.facts import partition_facts
from kafkalog.partition_view.tiered import TieredPartition, TieredSegments
from kafkalog.record import MemoryRecords
from kafkalog.remote.metadata import metadata_values
from kafkalog.remote.upload import LocalSegment, upload_aiven, upload_local_tiered
from kafkalog.spark.options import ReadOptions, SparkOptionError
from kafkalog.spark.plan import ReadTask, find_partitions, plan_read
from kafkalog.spark.stream import initial_position, latest_position, plan_micro_batch
from tests.remote.test_metadata import segment_metadata, segment_update
from tests.remote.tiered_stores import ABORTED_PRODUCER, library_read, write_rich_partition

TOPIC_ID = "LWgrMmVrT0a__7a4SasuPA"
LAYOUTS = ["kafka-local-tiered-storage", "aiven-tiered-storage"]


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[LocalSegment]]:
    """A partition kafkalog wrote (compressed batches, an aborted and a committed transaction) and its closed
    segments."""
    directory = tmp_path_factory.mktemp("original") / "orders-0"
    return directory, write_rich_partition(directory)


def upload(layout: str, fs: Any, root: str, segments: list[LocalSegment], **options: Any) -> dict[int, str]:
    if layout == "kafka-local-tiered-storage":
        return upload_local_tiered(fs, f"{root}/kafka-tiered-storage", "orders", 0, TOPIC_ID, segments)
    return upload_aiven(fs, root, "orders", 0, TOPIC_ID, segments, **options)


def url(fs: Any, root: str) -> str:
    return f"memory://{root}" if "memory" in fs.protocol else root


def stored(layout: str, store: tuple[Any, str], segments: list[LocalSegment]) -> str:
    """The URL (or path) of ``store`` with ``segments`` uploaded in ``layout``."""
    fs, root = store
    upload(layout, fs, root, segments)
    return url(fs, root)


def read(options: dict[str, str]) -> list[tuple[Any, ...]]:
    """The rows of the planned tasks, each read after a trip through pickle (as Spark ships it)."""
    return rows(plan_read(ReadOptions.parse(options)))


def rows(tasks: list[ReadTask]) -> list[tuple[Any, ...]]:
    batches = [b for t in tasks for b in pickle.loads(pickle.dumps(t)).read()]
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    stamps = [int(t.timestamp() * 1000) if hasattr(t, "timestamp") else t
              for t in table.column("timestamp").to_pylist()]
    return sorted(zip(table.column("offset").to_pylist(), table.column("key").to_pylist(),
                      table.column("value").to_pylist(), stamps, strict=True))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reads_as_the_library_reads_the_original_log(layout: str, store: tuple[Any, str],
                                                     original: tuple[Path, list[LocalSegment]]) -> None:
    directory, segments = original
    path = stored(layout, store, segments)
    assert read({"path": path}) == library_read(directory, segments)
    # the layout named, small tasks (segments cut in pieces at batch boundaries), read_committed
    committed = library_read(directory, segments, isolation="read_committed")
    assert len(committed) < len(library_read(directory, segments))  # the aborted transaction is hidden
    assert read({"path": path, "layout": layout, "maxPartitionBytes": "1500",
                 "kafka.isolation.level": "read_committed"}) == committed
    # offsets inside segments, then by time
    assert read({"path": path, "startingOffsets": '{"orders":{"0":300}}', "endingOffsets": '{"orders":{"0":800}}'}) \
        == library_read(directory, segments, 300, 800)
    assert read({"path": path, "startingTimestamp": str(1_700_000_000_000 + 500),
                 "endingTimestamp": str(1_700_000_000_000 + 1000)}) \
        == [r for r in library_read(directory, segments) if 1_700_000_000_500 <= r[3] < 1_700_000_001_000]
    # a task carries only the segments it reads (with their manifests), no filesystem
    for task in plan_read(ReadOptions.parse({"path": path, "maxPartitionBytes": "8000"})):
        assert isinstance(task.source, TieredSegments)
        assert {s.base_offset for s in task.source.segments} == {p.base_offset for p in task.slices}
        assert all(s.fs is None for s in task.source.segments)
    facts = partition_facts(find_partitions([path], ReadOptions.parse({"path": path}))[0][1])
    assert (facts.log_start_offset, facts.log_end_offset) == (0, segments[-1].end_offset + 1)
    assert [t.producer_id for t in facts.transactions.aborted] == [ABORTED_PRODUCER]


def test_aiven_uncompressed_and_under_a_prefix(store: tuple[Any, str],
                                               original: tuple[Path, list[LocalSegment]]) -> None:
    fs, root = store
    directory, segments = original
    upload_aiven(fs, root, "orders", 0, TOPIC_ID, segments, prefix="tiered-", compression=False)
    path = url(fs, root)
    # a prefix that is no directory cannot be told from a topic name: layout.prefix says it
    (tp, _found), = find_partitions([path], ReadOptions.parse({"path": path}))
    assert tp.topic == "tiered-orders"
    (tp, _found), = find_partitions([path], ReadOptions.parse({"path": path, "layout.prefix": "tiered-"}))
    assert tp.topic == "orders"
    assert read({"path": path, "layout.prefix": "tiered-"}) == library_read(directory, segments)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_overlapping_segments_are_cut_at_the_next_base_offset(layout: str, store: tuple[Any, str],
                                                              original: tuple[Path, list[LocalSegment]]) -> None:
    """A copy retried with other boundaries: one upload holds segments 0 and 1 together, the next starts at
    segment 1's base offset; each offset is read once, from the segment with the greatest base at or below it."""
    directory, segments = original
    first, second, *rest = segments
    merged = LocalSegment(first.base_offset, second.end_offset, first.log + second.log, first.index,
                          first.timeindex, second.snapshot, first.txnindex, first.leader_epoch)
    path = stored(layout, store, [merged, second, *rest])
    assert read({"path": path}) == library_read(directory, segments)
    assert read({"path": path, "startingOffsets": '{"orders":{"0":100}}', "endingOffsets": '{"orders":{"0":400}}',
                 "maxPartitionBytes": "2000"}) == library_read(directory, segments, 100, 400)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_two_uploads_of_a_segment_read_once(layout: str, store: tuple[Any, str],
                                            original: tuple[Path, list[LocalSegment]]) -> None:
    directory, segments = original
    stored(layout, store, segments)
    path = stored(layout, store, segments[1:2])  # the copy retried under a new segment id
    assert read({"path": path}) == library_read(directory, segments)
    ((_tp, found),) = find_partitions([path], ReadOptions.parse({"path": path}))
    assert isinstance(found, TieredPartition) and len(found.skipped) == 1


@pytest.mark.parametrize("layout", LAYOUTS)
def test_remote_log_metadata_keeps_the_copied_segments(layout: str, store: tuple[Any, str], tmp_path: Path,
                                                       original: tuple[Path, list[LocalSegment]]) -> None:
    fs, root = store
    directory, segments = original
    ids = upload(layout, fs, root, segments)
    # __remote_log_metadata: every segment copied but the last, whose copy only started
    values = []
    for s in segments:
        values.append(segment_metadata(ids[s.base_offset], start=s.base_offset, end=s.end_offset))
        if s is not segments[-1]:
            values.append(segment_update(ids[s.base_offset], state=1))
    metadata = tmp_path / "__remote_log_metadata-0"
    log = Log(metadata)
    try:
        for v in values:
            log.append_as_leader(MemoryRecords.with_records([(None, v)]), leader_epoch=0)
    finally:
        log.close()
    path = url(fs, root)
    assert read({"path": path, "remoteLogMetadata": str(metadata)}) == library_read(directory, segments[:-1])
    # the metadata topic read through a URL too (kafkalog.urls)
    if "memory" in fs.protocol:
        for file in metadata.iterdir():
            fs.pipe_file(f"{root}-meta/{metadata.name}/{file.name}", file.read_bytes())
        remote = f"memory://{root}-meta/{metadata.name}"
        assert list(metadata_values([remote])) == values
        assert read({"path": path, "remoteLogMetadata": f'["{remote}"]'}) == library_read(directory, segments[:-1])


def test_bad_input_is_a_clear_error(store: tuple[Any, str], original: tuple[Path, list[LocalSegment]],
                                    tmp_path: Path) -> None:
    fs, root = store
    directory, segments = original
    upload("kafka-local-tiered-storage", fs, root, segments)
    path = url(fs, root)
    with pytest.raises(SparkOptionError, match=r"unknown layout 'aiven'.*did you mean aiven-tiered-storage"):
        read({"path": path, "layout": "aiven"})
    with pytest.raises(SparkOptionError, match=r"unknown option 'layuot'.*did you mean layout"):
        read({"path": path, "layuot": "auto"})
    with pytest.raises(RemoteLayoutError, match="layout is aiven-tiered-storage, but it holds kafka-local"):
        read({"path": path, "layout": "aiven-tiered-storage"})
    with pytest.raises(RemoteLayoutError, match="nothing of that layout"):
        read({"path": str(directory.parent), "layout": "kafka-local-tiered-storage"})
    with pytest.raises(Exception, match="neither a partition dir"):
        read({"path": path, "layout": "broker"})
    with pytest.raises(SparkOptionError, match=r"layout.prefix .* not kafka-local"):
        read({"path": path, "layout": "kafka-local-tiered-storage", "layout.prefix": "x/"})
    empty = tmp_path / "__remote_log_metadata-0"
    Log(empty).close()
    with pytest.raises(SparkOptionError, match=r"remoteLogMetadata filters .* broker"):
        read({"path": str(directory), "remoteLogMetadata": str(empty)})
    encrypted = f"{root}/encrypted"
    upload_aiven(fs, encrypted, "orders", 0, TOPIC_ID, segments[:1],
                 encryption={"dataKey": "AAAA", "aad": "AAAA"})
    with pytest.raises(EncryptedSegmentError, match="encrypted"):
        read({"path": url(fs, encrypted)})


def test_a_stream_reads_tiered_storage_batch_by_batch(store: tuple[Any, str],
                                                      original: tuple[Path, list[LocalSegment]]) -> None:
    directory, segments = original
    path = stored("aiven-tiered-storage", store, segments)
    options = ReadOptions.parse({"path": path, "startingOffsets": "earliest"}, streaming=True)
    start = initial_position(options)
    got: list[tuple[Any, ...]] = []
    while True:
        end = latest_position(options, start, 400)
        if end == start:
            break
        got += rows(plan_micro_batch(options, start, end))
        start = end
    assert sorted(got) == library_read(directory, segments)


def test_the_jobs_on_broker_dirs_refuse_tiered_storage(store: tuple[Any, str],
                                                       original: tuple[Path, list[LocalSegment]]) -> None:
    from kafkalog.spark.jobs import _broker_dirs

    path = stored("kafka-local-tiered-storage", store, original[1])
    with pytest.raises(SparkOptionError, match="is tiered storage: this job reads a broker's log dirs"):
        _broker_dirs(find_partitions([path]))


def _cut(fs: Any, root: str, segment: LocalSegment, keep: int) -> tuple[str, int]:
    """Cut the stored ``.log`` of ``segment`` (LocalTieredStorage) to its first ``keep`` bytes; returns its path
    and the offset after the last batch still whole in it."""
    (path,) = fs.glob(f"{root}/kafka-tiered-storage/orders-0-{TOPIC_ID}/{segment.base_offset:020d}-*.log")
    kept = segment.log[:keep]
    fs.pipe_file(path, kept)
    rows = MemoryRecords(kept).scan(check_crc=False, stop_on_invalid=False).batches
    assert len(rows) and len(kept) > int(rows["position"][-1] + rows["size"][-1])  # cut inside a batch
    return path, int(rows["last_offset"][-1]) + 1


def test_a_segment_cut_short_loses_data(store: tuple[Any, str], original: tuple[Path, list[LocalSegment]],
                                        caplog: pytest.LogCaptureFixture) -> None:
    """A LocalTieredStorage ``.log`` cut short in the middle of the partition holds fewer offsets than its next
    segment's base offset says: with ``failOnDataLoss`` (the default) the read fails naming the segment and the
    offsets missing; without, the read skips them and says so in the log (Spark's Kafka source: ``Cannot fetch
    records in [a, b)`` and ``Some data may have been lost``)."""
    fs, root = store
    directory, segments = original
    path = stored("kafka-local-tiered-storage", store, segments)
    middle, following = segments[1], segments[2]
    log_path, reached = _cut(fs, root, middle, len(middle.log) // 2)
    lost = f"offsets {reached} to {following.base_offset} \\(exclusive\\)"
    with pytest.raises(CorruptRemoteSegmentError, match=f"{lost}.*Some data may have been lost") as info:
        read({"path": path})
    assert info.value.path is not None and info.value.path.endswith(log_path)
    # a read that starts in the offsets lost, through the segment's offset index (entries past its end)
    start = (reached + following.base_offset) // 2
    with pytest.raises(CorruptRemoteSegmentError, match=f"offsets {start} to {following.base_offset}"):
        read({"path": path, "startingOffsets": f'{{"orders":{{"0":{start}}}}}'})
    # a read that ends before the offsets lost needs none of them
    assert read({"path": path, "endingOffsets": f'{{"orders":{{"0":{reached}}}}}'}) \
        == library_read(directory, segments, 0, reached)
    with caplog.at_level("WARNING", logger="kafkalog.spark.plan"):
        assert read({"path": path, "failOnDataLoss": "false", "maxPartitionBytes": "1500"}) \
            == library_read(directory, segments, 0, reached) + library_read(directory, segments, following.base_offset)
    assert any(log_path in r.getMessage() and f"offsets {reached} to {following.base_offset}" in r.getMessage()
               for r in caplog.records)
    assert read({"path": path, "failOnDataLoss": "false", "startingOffsets": f'{{"orders":{{"0":{start}}}}}'}) \
        == library_read(directory, segments, following.base_offset)


def test_a_segment_cut_to_nothing_loses_data(store: tuple[Any, str], original: tuple[Path, list[LocalSegment]]) -> None:
    """A ``.log`` of no bytes between two segments: every offset below the next base offset is lost (the planner
    used to pass over an empty segment)."""
    fs, root = store
    directory, segments = original
    path = stored("kafka-local-tiered-storage", store, segments)
    middle, following = segments[1], segments[2]
    (log_path,) = fs.glob(f"{root}/kafka-tiered-storage/orders-0-{TOPIC_ID}/{middle.base_offset:020d}-*.log")
    fs.pipe_file(log_path, b"")
    with pytest.raises(CorruptRemoteSegmentError, match=f"offsets {middle.base_offset} to {following.base_offset} "):
        read({"path": path})
    assert read({"path": path, "failOnDataLoss": "false"}) == library_read(directory, segments, 0, middle.base_offset) \
        + library_read(directory, segments, following.base_offset)


def test_the_last_segment_cut_short_loses_data(store: tuple[Any, str],
                                               original: tuple[Path, list[LocalSegment]]) -> None:
    """The last segment has no next one: its own offset index (an entry past the end of its ``.log``) and the
    partial batch its ``.log`` ends with (an uploaded segment is a closed one, copied whole) say it was cut."""
    fs, root = store
    directory, segments = original
    path = stored("kafka-local-tiered-storage", store, segments)
    last = segments[-1]
    entries = [struct.unpack_from(">ii", last.index, i) for i in range(0, len(last.index), 8)]
    relative, position = entries[-1]
    log_path, reached = _cut(fs, root, last, position - 10)  # before the last index entry's batch
    with pytest.raises(CorruptRemoteSegmentError, match=f"offsets {reached} to {last.base_offset + relative + 1} "):
        read({"path": path})
    facts = partition_facts(find_partitions([path], ReadOptions.parse({"path": path}))[0][1])
    assert facts.log_end_offset == last.base_offset + relative + 1  # what the index says was there
    assert read({"path": path, "failOnDataLoss": "false"}) == library_read(directory, segments, 0, reached)
    # cut after the last index entry's batch: only the partial batch says so
    log_path, reached = _cut(fs, root, last, len(last.log) - 10)
    with pytest.raises(CorruptRemoteSegmentError, match=f"offsets {reached} to {reached + 1} ") as info:
        read({"path": path})
    assert info.value.path is not None and info.value.path.endswith(log_path)
    assert read({"path": path, "failOnDataLoss": "false"}) == library_read(directory, segments, 0, reached)
    # whole again: nothing is lost
    fs.pipe_file(log_path, last.log)
    assert read({"path": path}) == library_read(directory, segments)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_uploaded_transaction_index_that_fails_its_check_is_refused(
        layout: str, store: tuple[Any, str], original: tuple[Path, list[LocalSegment]]) -> None:
    """Issue 28: an uploaded ``.txnindex`` must pass Kafka's ``TransactionIndex.sanityCheck``, as the broker's
    ``RemoteIndexCache`` makes it pass before a fetch uses it (a ``CorruptIndexException`` fails the fetch); the
    planner took its aborts from it.  Now it says which index, and plans nothing."""
    import dataclasses

    from kafkalog.errors import CorruptIndexError
    from kafkalog.transaction_index import AbortedTxn

    _directory, segments = original
    later = next(i for i, s in enumerate(segments) if s.base_offset > 0)
    bad = AbortedTxn(ABORTED_PRODUCER, 0, segments[later].base_offset - 1, 0)
    path = stored(layout, store, [*segments[:later], dataclasses.replace(segments[later], txnindex=bad.to_bytes()),
                                  *segments[later + 1:]])
    found = find_partitions([path], ReadOptions.parse({"path": path}))[0][1]
    with pytest.raises(CorruptIndexError, match=f"is less than start offset {segments[later].base_offset}"):
        partition_facts(found)
    assert partition_facts(found, read_committed=False).transactions is None
