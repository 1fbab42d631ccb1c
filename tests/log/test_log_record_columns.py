"""``Log.record_columns()``: the consumer's read of a partition as columns (issue 32).

The columns must hold exactly the records ``Log.records()`` gives, field for field, for every kind of batch and
every rule of the consumer's view (:mod:`kafkalog.log.consumer_view`): the range, the high watermark and the last
stable offset, control batches, aborted transactions, CRCs; and their ``batches``/``starts`` must describe the
records kept.  Not a Kafka port: Kafka's consumer hands out record objects only.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog.config import LogConfig
from kafkalog.errors import CorruptRecordError, OffsetOutOfRangeError
from kafkalog.file_message_set import KeptChunkBuffers
from kafkalog.log import Log
from kafkalog.record import MemoryRecords, RecordColumns
from tests.log.test_consumer_view import FIRST_TOPIC, corrupt_copy
from tests.support.log_test_utils import LogFactory, append_transaction_sample

Row = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def _slice(data: Any, position: int, length: int) -> bytes | None:
    return None if length < 0 else bytes(data[position:position + length])


def rows_of(columns: RecordColumns) -> list[Row]:
    """Each record of ``columns`` as ``(offset, timestamp, key, value, headers)``, read from the columns alone."""
    out: list[Row] = []
    for r in columns.records:
        first, count = int(r["header_index"]), int(r["header_count"])
        headers: list[tuple[str, bytes | None]] = []
        for h in columns.headers[first:first + count]:
            key = _slice(columns.data, int(h["key_pos"]), int(h["key_len"]))
            assert key is not None
            headers.append((key.decode(), _slice(columns.data, int(h["value_pos"]), int(h["value_len"]))))
        out.append((int(r["offset"]), int(r["timestamp"]), _slice(columns.data, int(r["key_pos"]), int(r["key_len"])),
                    _slice(columns.data, int(r["value_pos"]), int(r["value_len"])), headers))
    return out


def check_spans(log: Log, columns: RecordColumns) -> None:
    """``starts`` and ``batches`` describe the records kept: one span per batch row, each span's records inside
    its batch's offsets, and each row where its batch is in its segment's file."""
    assert columns.starts is not None and columns.batches is not None
    starts, batches = columns.starts, columns.batches
    assert len(starts) == len(batches) + 1
    assert int(starts[0]) == 0 and int(starts[-1]) == len(columns.records)
    assert (np.diff(starts) >= 0).all()
    on_disk = {(int(b["base_offset"]), int(b["position"]), int(b["size"]))
               for segment in log.log_segments()
               for b in segment.log.scan(check_crc=False, stop_on_invalid=False).batches}
    for k, batch in enumerate(batches):
        assert (int(batch["base_offset"]), int(batch["position"]), int(batch["size"])) in on_disk
        offsets = columns.records["offset"][int(starts[k]):int(starts[k + 1])]
        assert (offsets <= batch["last_offset"]).all()
        if batch["magic"] == 2:  # a legacy wrapper's row has no first offset (decompression tells it)
            assert (offsets >= batch["base_offset"]).all()
        if k:
            assert (offsets > batches[k - 1]["last_offset"]).all()


def columns_rows(log: Log, *args: Any, **kwargs: Any) -> list[Row]:
    """Every record of ``log.record_columns(...)``, the column sets collected first (each must stay valid while
    the read goes on)."""
    sets = list(log.record_columns(*args, **kwargs))
    for columns in sets:
        assert len(columns) > 0
        check_spans(log, columns)
    return [row for columns in sets for row in rows_of(columns)]


def object_rows(log: Log, *args: Any, **kwargs: Any) -> list[Row]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in log.records(*args, **kwargs)]


def many_batches(create_log: LogFactory, codec: str) -> Log:
    """30 batches of 7 records over several small segments: null keys and values, headers on some records; v2
    batches of ``codec``, or v1 messages (``legacy-v1``: lz4 wrappers every third batch)."""
    legacy = codec == "legacy-v1"
    config = {"segment.bytes": 1024}
    if legacy:
        config["message.format.version"] = "0.10.2"
    log = create_log(LogConfig(config))
    for b in range(30):
        records = []
        for i in range(7):
            n = b * 7 + i
            key = None if n % 5 == 0 else b"key-%d" % n
            value = None if n % 11 == 0 else b"value-%d" % n * (1 + n % 3)
            headers = [] if legacy or n % 4 else [(f"h{n}", b"x" * (n % 3)), ("empty", None)]
            records.append((key, value, 1_000 + n, headers))
        if legacy:
            log.append(MemoryRecords.with_records([r[:3] for r in records], magic=1,
                                                  compression="lz4" if b % 3 == 2 else "none"))
        else:
            log.append(MemoryRecords.with_records(records, compression=codec))
    assert len(log.log_segments()) > 2
    return log


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "legacy-v1"])
def test_columns_are_the_records(impl: ModuleType, create_log: LogFactory, codec: str) -> None:
    """The whole partition, and ranges starting and ending inside batches, at batch edges and past the end."""
    log = many_batches(create_log, codec)
    every = object_rows(log)
    assert [row[0] for row in every] == list(range(210))
    assert any(row[4] for row in every) is (codec != "legacy-v1")
    assert columns_rows(log) == every
    for start, end in [(3, 200), (7, 14), (10, 11), (0, 1), (209, 210), (50, 500), (33, 34), (100, None)]:
        assert columns_rows(log, start, end) == object_rows(log, start, end) == every[start:end], (start, end)
    assert columns_rows(log, 210) == []


def test_columns_read_committed(impl: ModuleType, create_log: LogFactory) -> None:
    """Control batches are never in the columns, aborted transactions not under read_committed, and nothing at or
    past the last stable offset (the open transaction): neither as records nor as batch rows."""
    log = create_log()
    append_transaction_sample(log)
    uncommitted = columns_rows(log)
    assert uncommitted == object_rows(log)
    assert [(row[0], row[3]) for row in uncommitted] == [
        (0, b"plain"), (1, b"aborted"), (3, b"committed"), (5, b"open"), (6, b"after the open one")]
    committed = columns_rows(log, isolation="read_committed")
    assert committed == object_rows(log, isolation="read_committed")
    assert [(row[0], row[3]) for row in committed] == [(0, b"plain"), (3, b"committed")]
    assert columns_rows(log, 1, isolation="read_committed") == committed[1:]
    rows = np.concatenate([c.batches for c in log.record_columns(isolation="read_committed")
                           if c.batches is not None])
    assert rows["base_offset"].tolist() == [0, 3]
    rows = np.concatenate([c.batches for c in log.record_columns() if c.batches is not None])
    assert rows["base_offset"].tolist() == [0, 1, 3, 5, 6]  # no marker's batch (2 and 4)


def test_columns_stop_at_a_high_watermark_inside_a_batch(impl: ModuleType, create_log: LogFactory) -> None:
    """As a fetch, the read ends before the batch holding the high watermark."""
    log = create_log()
    for b in range(4):
        log.append(MemoryRecords.with_records([(None, b"%d" % (b * 5 + i), i) for i in range(5)],
                                              compression="lz4" if b % 2 else "none"))
    for hw in (7, 10, 13, 20):
        log.high_watermark = hw
        assert columns_rows(log) == object_rows(log)
        assert columns_rows(log, 2, 12) == object_rows(log, 2, 12)
    log.high_watermark = 7
    assert [row[0] for row in columns_rows(log)] == list(range(5))
    log.high_watermark = 10
    assert [row[0] for row in columns_rows(log)] == list(range(10))


def test_columns_of_a_corrupt_batch(impl: ModuleType, golden: Path, tmp_path: Path) -> None:
    """The columns of the batches before a bad CRC, then the error with the segment file and position; with
    ``check_crcs=False`` every record, as ``Log.records`` reads them."""
    directory, bad, original = corrupt_copy(golden, tmp_path)
    segment = directory / "00000000000000000000.log"
    before = [r.offset for r in original if r.offset < original[8].offset]
    with Log(directory, read_only=True) as log:
        seen: list[int] = []
        with pytest.raises(CorruptRecordError) as info:
            for columns in log.record_columns():
                seen += columns.records["offset"].tolist()
        assert seen == before
        assert (info.value.position, info.value.path) == (bad, str(segment))
        # A start past the bad batch does not reach it; one before it does.
        assert columns_rows(log, original[9].offset) == object_rows(log, original[9].offset)
        with pytest.raises(CorruptRecordError):
            list(log.record_columns(original[8].offset))
        forensic = columns_rows(log, check_crcs=False)
        assert forensic == object_rows(log, check_crcs=False)
    assert len(forensic) == 18
    assert sum(a.value != row[3] for a, row in zip(original, forensic, strict=True)) == 1


def test_columns_of_the_golden_log(impl: ModuleType, golden: Path, tmp_path: Path) -> None:
    """A broker's log read as columns is what its records are."""
    directory = tmp_path / "first_topic-2"
    shutil.copytree(golden / FIRST_TOPIC, directory)
    with Log(directory, read_only=True) as log:
        assert columns_rows(log) == object_rows(log)
        assert len(columns_rows(log)) == 18


def test_columns_out_of_range(impl: ModuleType, create_log: LogFactory) -> None:
    log = create_log()
    for i in range(10):
        log.append(MemoryRecords.with_records([(None, b"%d" % i, i)]))
    with pytest.raises(OffsetOutOfRangeError):
        log.record_columns(11)
    log.maybe_increment_log_start_offset(3)
    with pytest.raises(OffsetOutOfRangeError):
        log.record_columns(2)
    assert [row[0] for row in columns_rows(log)] == list(range(3, 10))
    with pytest.raises(ValueError, match="isolation level"):
        log.record_columns(isolation="serializable")


def test_kept_chunk_buffers_never_overwrite_a_view_still_held() -> None:
    """A column read's chunks: memory is reused once no view of it is left, never while one is."""
    buffers = KeptChunkBuffers()
    first = buffers.view(100)
    first[:] = b"a" * 100
    second = buffers.view(100)
    second[:] = b"b" * 100
    third = buffers.view(100)  # both held: new memory
    third[:] = b"c" * 100
    assert bytes(first) == b"a" * 100 and bytes(second) == b"b" * 100
    del first
    fourth = buffers.view(50)  # the first chunk's memory, no longer held
    fourth[:] = b"d" * 50
    assert bytes(second) == b"b" * 100 and bytes(third) == b"c" * 100
    assert len(buffers._pool) == KeptChunkBuffers.POOL
    assert any(np.shares_memory(np.frombuffer(fourth, np.uint8), b) for b in buffers._pool)
    del fourth
    assert len(buffers.view(1000)) == 1000  # a free buffer too small is replaced


def test_columns_in_range_is_the_consumers_offset_test(impl: ModuleType) -> None:
    """The columns' cut is the objects' (``records_in_range``), record by record, offsets in or out of order: one
    below the start is skipped, the first at or past the end ends the read; the batch spans are recounted."""
    from kafkalog._common import RECORD_DTYPE
    from kafkalog.log.consumer_view import _columns_in_range

    for offsets, start, end in [([3, 1, 5, 9, 4], 2, 8), ([0, 1, 2, 3], 0, 4), ([0, 1, 2, 3], 1, 3),
                                ([5, 6], 7, 9), ([7, 2, 8], 3, 8), ([4, 4, 4], 4, 5)]:
        records = np.zeros(len(offsets), dtype=RECORD_DTYPE)
        records["offset"] = offsets
        starts = np.array([0, 2, len(offsets)], dtype=np.int64) if len(offsets) > 2 else \
            np.array([0, len(offsets)], dtype=np.int64)
        batches = np.zeros(len(starts) - 1, dtype=[("base_offset", "i8")])
        cut, ended = _columns_in_range(RecordColumns(records, records[:0], b"", starts, batches), start, end)
        kept, objects_ended = impl.records_in_range([impl.Record(o, 0, None, None) for o in offsets], start, end)
        assert ended is objects_ended
        assert ([] if cut is None else cut.records["offset"].tolist()) == [r.offset for r in kept]
        if cut is not None:
            assert cut.starts is not None and int(cut.starts[-1]) == len(cut.records)
            # Kafka's walk by index: the batch of every record kept.
            batch_of = np.repeat(np.arange(len(starts) - 1), np.diff(starts)).tolist()
            kept_batches = []
            for i, offset in enumerate(offsets):
                if offset >= end:
                    break
                if offset >= start:
                    kept_batches.append(batch_of[i])
            assert np.diff(cut.starts).tolist() == np.bincount(kept_batches, minlength=len(starts) - 1).tolist()
