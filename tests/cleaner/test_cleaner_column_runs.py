"""The cleaner's array path: whole plain batches read together are answered for at once.

``LogCleanerFilter.batch_fates`` gives a run's batch retentions and record fates as arrays (Kafka's
``checkBatchRetention`` and ``shouldRetainRecord``, batch by batch, in ``Cleaner.cleanInto``), and the map pass
puts a run's keys in one call.  The oracle is the batch-by-batch path the filter falls back to: with the hook
answering ``None`` the cleaned segments, their indexes and the statistics must be the same, byte for byte.
The log mixes what decides a plain batch's fate: producers whose last batch is emptied (kept as a header),
keyless records (dropped, counted invalid), tombstones, headers, aborted and committed transactions between
the runs, compressed and legacy batches, and the round's last batch.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkalog import MemoryRecords
from kafkalog._common import CONTROL_FLAG_MASK, TRANSACTIONAL_FLAG_MASK
from kafkalog.cleaner import cleaner as cleaner_module
from kafkalog.cleaner.filter import LogCleanerFilter
from kafkalog.cleaner.manager import LogToClean
from kafkalog.cleaner.offset_map import SkimpyOffsetMap
from kafkalog.cleaner.stats import CleanerStats
from kafkalog.record import ControlRecordType, EndTransactionMarker
from kafkalog.record import filter as record_filter
from kafkalog.scheduler import MockTime
from tests.support.cleaner_utils import INT_MAX, MB, Env

#: Each way's clock starts here, so the delete horizons the first cleaning stamps are the same bytes.
_START_MS = 1_700_000_000_000


def _write(env: Env, name: str) -> Any:
    rng = random.Random(1818)
    log = env.make_log(env.config(segment_bytes=2048, max_message_bytes=MB), directory=env.root / f"{name}-0")
    offset = 0
    sequences: dict[int, int] = {}

    def append(n: int, *, producer_id: int = -1, transactional: bool = False, every_key: bool = False,
               **kwargs: Any) -> None:
        nonlocal offset
        rows: list[Any] = []
        for i in range(n):
            key = b"k%d" % i if every_key else None if rng.random() < 0.05 else b"k%d" % rng.randrange(40)
            value = None if rng.random() < 0.1 else b"v%d" % rng.randrange(1000)
            rows.append((key, value, 1_000 + offset + i, [("h", b"x")]) if rng.random() < 0.03 else
                        (key, value, 1_000 + offset + i))
        producer = {}
        if producer_id >= 0:
            producer = {"producer_id": producer_id, "producer_epoch": 0,
                        "base_sequence": sequences.get(producer_id, 0), "is_transactional": transactional}
            sequences[producer_id] = sequences.get(producer_id, 0) + n
        log.append_as_follower(MemoryRecords.with_records(rows, base_offset=offset, partition_leader_epoch=0,
                                                          **producer, **kwargs))
        offset += n

    def marker(producer_id: int, control_type: ControlRecordType) -> None:
        nonlocal offset
        log.append_as_follower(MemoryRecords.with_end_transaction_marker(
            producer_id, 0, EndTransactionMarker(control_type, 0), base_offset=offset, timestamp=5_000,
            partition_leader_epoch=0))
        offset += 1

    # Transactions begin a segment or more before their markers: the runs between them read no transactional
    # batch, but move the aborted transaction that began before them to the ongoing ones.
    transactions = {20: 9, 21: 10, 45: ControlRecordType.COMMIT, 46: ControlRecordType.ABORT,
                    70: 9, 100: ControlRecordType.ABORT}
    for step in range(140):
        append(rng.randrange(1, 6), producer_id=rng.choice([-1, -1, -1, 7, 8]))
        what = transactions.get(step)
        if isinstance(what, int):
            append(3, producer_id=what, transactional=True)
        elif what is not None:
            marker(9 if step != 46 else 10, what)
        if step == 50:
            append(4, compression="gzip")
            log.append_as_follower(MemoryRecords.with_records([(b"k1", b"old")], magic=1, base_offset=offset))
            offset += 1
        if step == 80:
            append(5, compression="zstd", producer_id=8)
            append(3, timestamp_type="LogAppendTime", log_append_time=4_000)
    # Producer 7's last batch: every record superseded later, so it is kept empty for its state.
    append(2, producer_id=7)
    append(40, every_key=True)
    log.roll()
    return log


def _clean_twice(root: Any, name: str) -> list[tuple[list[bytes], tuple[int, ...]]]:
    """Clean the log twice, the second time past the first one's delete horizons: each time the cleaned files
    and the statistics."""
    env = Env(root / name)
    env.time.scheduler.shutdown()
    env.time = MockTime(current_time_ms=_START_MS)
    try:
        log = _write(env, name)
        cleaner = env.make_cleaner(INT_MAX, max_message_size=MB, offset_map=SkimpyOffsetMap(1000 * 24))
        cleanings = []
        for _ in range(2):
            end, stats = cleaner.clean(LogToClean(log.topic_partition, log, 0, log.active_segment.base_offset))
            files = []
            for segment in log.log_segments():
                segment.flush()
                files += [segment.log.read_bytes(), segment.offset_index.file.read_bytes(),
                          segment.time_index.file.read_bytes()]
            cleanings.append((files, (end, stats.messages_read, stats.bytes_read, stats.messages_written,
                                      stats.bytes_written, stats.invalid_messages_read, stats.map_messages_read,
                                      stats.map_bytes_read)))
            env.time.sleep(log.config.delete_retention_ms + 1)
        return cleanings
    finally:
        env.close()


def _record_layer_only(result: Any, record_filter_: Any, data: Any, records: Any, starts: Any, positions: Any,
                       last_offsets: Any, keep: Any, fates: Any, leftover: Any) -> None:
    """``_rewrite_plain`` with no kernel: every batch written by the record layer (``leftover``)."""
    for b in range(len(positions)):
        leftover(b)


def test_arrays_clean_as_batch_by_batch(scratch: Any, impl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    answered: list[bool] = []
    real = LogCleanerFilter.batch_fates

    def counted(self: LogCleanerFilter, run: Any) -> Any:
        fates = real(self, run)
        answered.append(fates is not None)
        return fates

    monkeypatch.setattr(LogCleanerFilter, "batch_fates", counted)
    arrays = _clean_twice(scratch, "arrays")
    assert answered and all(answered)  # every run of kernel batches, transactions and markers too
    monkeypatch.setattr(LogCleanerFilter, "batch_fates", lambda self, run: None)
    batch_by_batch = _clean_twice(scratch, "batches")
    assert arrays == batch_by_batch
    monkeypatch.setattr(record_filter, "_rewrite_plain", _record_layer_only)
    record_layer = _clean_twice(scratch, "record-layer")
    assert arrays == record_layer
    first, second = arrays
    assert first[1][5] > 0  # keyless records were dropped and counted
    assert first[0] != second[0]  # the second cleaning dropped what the first kept until its horizon


@pytest.mark.parametrize("slots", [12, 30, 1000])
def test_map_pass_arrays_as_batch_by_batch(env: Env, monkeypatch: pytest.MonkeyPatch, slots: int) -> None:
    """Kafka's ``buildOffsetMap`` over runs holding transactional batches and markers, read as arrays (each run's
    keys in one call, a Python step only per transactional or control batch), against the path it replaces, which
    took those batches one at a time: the same map, latest offset and statistics, whether the map fills inside a
    run (12 and 30 slots, 9 and 22 keys at the load factor) or not."""
    log = _write(env, "map")
    keys = [b"k%d" % i for i in range(40)]

    def build(run_attributes: int) -> tuple[Any, ...]:
        monkeypatch.setattr(cleaner_module, "_ANY_ATTRIBUTES", run_attributes)
        offset_map = SkimpyOffsetMap(slots * 24)
        stats = CleanerStats(env.time, log.topic_partition)
        cleaner = env.make_cleaner(INT_MAX, max_message_size=MB, offset_map=offset_map)
        cleaner.build_offset_map(log, 0, log.active_segment.base_offset, offset_map, stats)
        return (offset_map.latest_offset, offset_map.size, stats.map_messages_read, stats.map_bytes_read,
                [offset_map.get(key) for key in keys])

    arrays = build(-1)
    assert arrays == build(~(TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK))
    assert (arrays[1] < 40) == (slots < 1000)
