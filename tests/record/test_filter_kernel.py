"""The cleaner's rewrite of uncompressed v2 batches, ``filter_v2_batches``, with each twin.

The oracle is the path the kernel replaces, the record layer's own in :func:`kafkalog.record.filter.filter_to`
(``_write_retained``, Kafka's ``filterBatch`` / ``buildRetainedRecordsInto`` / ``writeEmptyHeader``, one batch
at a time): given the same keep masks and the same word on each batch (retain it empty, it is an empty
transaction's marker), the kernel must write the same bytes and report the same retained records, offsets and
timestamps, over every mix: some, all or no records kept; kept tombstones in batches with and without a delete
horizon; transactional batches; control batches (markers) kept whole, stamped with a horizon, or dropped; empty
batches kept for their producer.  It stops at the batches it leaves to that path (compressed, LogAppendTime,
rebuilt ones with headers) and refuses what is not a v2 batch inside its data.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog._common import FILTER_EMPTY_TXN_MARKER, FILTER_RETAIN_EMPTY
from kafkalog.record import ControlRecordType, EndTransactionMarker, MemoryRecords
from kafkalog.record.batch import CompressionType, TimestampType, encode_default_batch
from kafkalog.record.filter import (
    BatchRetention,
    DecodedBatch,
    FilterResult,
    KeptRecords,
    RecordFilter,
    _account,
    _write_retained,
    decoded_batches,
)

NOW = 1_700_000_000_000
RETENTION = 86_400_000
HORIZON = NOW + RETENTION


class _Clock(RecordFilter):
    """The filter's clock alone: what ``_write_retained`` reads of a filter (the new delete horizon)."""

    def check_batch_retention(self, batch: Any) -> Any:
        raise AssertionError("not asked")

    def should_retain_records(self, piece: Any) -> Any:
        raise AssertionError("not asked")


def _run(batches: list[bytes]) -> tuple[bytes, list[DecodedBatch]]:
    data = b"".join(batches)
    items = list(decoded_batches(MemoryRecords(data)))
    assert len({id(item.columns) for item in items}) == 1  # one set of columns, every batch whole
    return data, items


def _batch(base_offset: int, records: list[Any], **kwargs: Any) -> bytes:
    return bytes(MemoryRecords.with_records(records, base_offset=base_offset, **kwargs).buffer)


def _with_horizon(base_offset: int, records: list[Any], horizon: int) -> bytes:
    """A batch a former cleaning stamped with a delete horizon (attribute bit 6, the horizon as base timestamp)."""
    return encode_default_batch(
        [r[0] for r in records], [r[1] for r in records], [r[2] for r in records], None, base_offset=base_offset,
        compression=CompressionType.NONE, timestamp_type=TimestampType.CREATE_TIME, log_append_time=None,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, is_transactional=False, is_control=False,
        partition_leader_epoch=0, delete_horizon_ms=horizon, offset_deltas=None, last_offset_delta=None)


def _marker(base_offset: int, producer_id: int, kind: ControlRecordType) -> bytes:
    return bytes(MemoryRecords.with_end_transaction_marker(
        producer_id, 0, EndTransactionMarker(kind, 0), base_offset=base_offset, timestamp=NOW - 5,
        partition_leader_epoch=0).buffer)


def _kernel(core: ModuleType, items: list[DecodedBatch], masks: list[Any],
            fates: list[int] | None = None) -> tuple[int, bytes, Any, Any, FilterResult]:
    columns, lo = items[0].columns, items[0].lo
    starts = np.array([item.lo - lo for item in items] + [items[-1].hi - lo], dtype=np.int64)
    positions = np.array([item.batch.position for item in items], dtype=np.int64)
    keep = np.concatenate(masks).astype(np.uint8)
    words = np.array(fates or [0] * len(items), dtype=np.uint8)
    out = bytearray(b"prefix")
    done, kept, max_ts = core.filter_v2_batches(columns.data, columns.records[lo:items[-1].hi], starts, positions,
                                                keep, words, HORIZON, out)
    assert out[:6] == b"prefix"
    result = FilterResult(output=out[6:])
    _account(result, np.array([item.batch.last_offset for item in items[:done]], dtype=np.int64), kept[:done],
             max_ts[:done])
    return done, bytes(out[6:]), kept, max_ts, result


def _record_layer(items: list[DecodedBatch], masks: list[Any], fates: list[int]) -> FilterResult:
    """What the record layer writes of each batch, given the same masks and words."""
    result = FilterResult()
    clock = _Clock(NOW, RETENTION)
    for item, mask, fate in zip(items, masks, fates, strict=True):
        kept = KeptRecords()
        kept.add(item, mask)
        retention = BatchRetention.RETAIN_EMPTY if fate & FILTER_RETAIN_EMPTY else BatchRetention.DELETE_EMPTY
        _write_retained(result, clock, item.batch, kept, retention, bool(fate & FILTER_EMPTY_TXN_MARKER))
    return result


def _mixed(rng: random.Random) -> list[bytes]:
    batches, offset = [], 0
    for b in range(60):
        kind = rng.choice(["plain", "plain", "txn", "marker", "horizon"])
        if kind == "marker":
            batches.append(_marker(offset, 7, rng.choice([ControlRecordType.COMMIT, ControlRecordType.ABORT])))
            offset += 1
            continue
        n = rng.randint(1, 12)
        records = [(None if rng.random() < 0.1 else b"key-%d" % rng.randint(0, 30),
                    None if rng.random() < 0.2 else b"v" * rng.randint(0, 300),
                    rng.choice([-1, 0, NOW + rng.randint(-10**6, 10**6), 2**62]))
                   for _ in range(n)]
        if kind == "horizon":
            batches.append(_with_horizon(offset, records, NOW + rng.randint(-10**6, 10**6)))
        else:
            kwargs: dict[str, Any] = {}
            if kind == "txn":
                kwargs = {"producer_id": 7, "producer_epoch": 2, "base_sequence": offset, "is_transactional": True}
            elif b % 3 == 0:
                kwargs = {"producer_id": 9, "producer_epoch": 1, "base_sequence": offset}
            batches.append(_batch(offset, records, partition_leader_epoch=b, **kwargs))
        offset += n + rng.randint(0, 3)
    return batches


@pytest.mark.parametrize("seed", [18, 19, 20])
def test_every_mix_matches_the_record_layer(impl: ModuleType, seed: int) -> None:
    rng = random.Random(seed)
    _, items = _run(_mixed(rng))
    masks = [np.array([rng.random() < 0.5 for _ in range(item.hi - item.lo)]) for item in items]
    for i, mask in enumerate(masks):  # every batch shape: all kept, none kept, some kept
        mask[:] = [True, False, mask][i % 3] if i % 3 < 2 else mask
    fates = [rng.choice([0, 0, FILTER_RETAIN_EMPTY, FILTER_EMPTY_TXN_MARKER,
                         FILTER_RETAIN_EMPTY | FILTER_EMPTY_TXN_MARKER]) for _ in items]
    done, out, kept, max_ts, result = _kernel(impl, items, masks, fates)
    assert done == len(items)
    expected = _record_layer(items, masks, fates)
    assert out == bytes(expected.output)
    assert (result.messages_retained, result.max_offset, result.max_timestamp,
            result.shallow_offset_of_max_timestamp) == (
        expected.messages_retained, expected.max_offset, expected.max_timestamp,
        expected.shallow_offset_of_max_timestamp)
    assert kept.tolist() == [int(mask.sum()) if mask.any() or fate & FILTER_RETAIN_EMPTY else -1
                             for mask, fate in zip(masks, fates, strict=True)]
    written = MemoryRecords(out)
    assert all(batch.is_valid() for batch in written.batches())
    # The shapes the mix must hold for the comparison to mean something.
    attributes = [batch.attributes for batch in written.batches()]
    assert any(a & 0x40 and not a & 0x20 for a in attributes)  # data batches with a delete horizon
    assert any(a & 0x60 == 0x60 for a in attributes)  # markers stamped with a horizon
    assert any(batch.count == 0 for batch in written.batches())  # empty headers kept for producers
    assert all(m == -1 for m, k in zip(max_ts.tolist(), kept.tolist(), strict=True) if k == -1)


def test_a_kept_tombstone_gets_the_delete_horizon(impl: ModuleType) -> None:
    _, items = _run([_batch(5, [(b"a", None, NOW - 10), (b"b", b"1", NOW - 20)])])
    done, out, kept, max_ts, _ = _kernel(impl, items, [np.array([True, True])])
    assert (done, kept.tolist(), max_ts.tolist()) == (1, [2], [NOW - 10])
    (batch,) = MemoryRecords(out).batches()
    assert batch.delete_horizon_ms == HORIZON and batch.is_valid()
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == [(5, NOW - 10, b"a", None),
                                                                          (6, NOW - 20, b"b", b"1")]


def test_a_batch_kept_empty_is_a_bare_header(impl: ModuleType) -> None:
    _, items = _run([_batch(3, [(b"a", b"1", NOW), (b"b", b"2", NOW + 1)], producer_id=4, producer_epoch=1,
                            base_sequence=10)])
    done, out, kept, max_ts, result = _kernel(impl, items, [np.array([False, False])], [FILTER_RETAIN_EMPTY])
    assert (done, kept.tolist(), max_ts.tolist()) == (1, [0], [NOW + 1])
    (batch,) = MemoryRecords(out).batches()
    assert (batch.count, batch.base_offset, batch.last_offset, batch.producer_id, batch.base_sequence,
            batch.is_valid()) == (0, 3, 4, 4, 10, True)
    assert (result.max_offset, result.messages_retained) == (4, 0)


@pytest.mark.parametrize("case", ["headers", "gzip", "log_append_time"])
def test_stops_before_a_batch_the_record_layer_rewrites(impl: ModuleType, case: str) -> None:
    plain = [(b"a", b"1", 10), (b"b", b"2", 11)]
    odd = {"headers": _batch(2, [(b"a", b"4", 12, [("h", b"x")]), (b"c", b"3", 13)]),
           "gzip": _batch(2, [(b"a", b"4", 12), (b"c", b"3", 13)], compression="gzip"),
           "log_append_time": _batch(2, [(b"a", b"4", 12), (b"c", b"3", 13)], timestamp_type="LogAppendTime",
                                     log_append_time=99)}[case]
    if case == "gzip":
        # A compressed batch has its own columns; the kernel is handed its header all the same.
        data = _batch(0, plain) + odd + _batch(4, plain)
        items = list(decoded_batches(MemoryRecords(data)))
        assert len({id(item.columns) for item in items}) > 1
        columns = items[0].columns
        positions = np.array([0, len(_batch(0, plain))], dtype=np.int64)
        out = bytearray()
        done, kept, _ = impl.filter_v2_batches(
            data, columns.records, np.array([0, 1, 2], dtype=np.int64), positions, np.array([1, 0], np.uint8),
            np.zeros(2, dtype=np.uint8), HORIZON, out)
        assert (done, kept.tolist()[:1]) == (1, [1])
        return
    _, items = _run([_batch(0, plain), odd, _batch(4, plain)])
    # The odd batch keeps its first record only, so it would be rebuilt.
    masks = [np.array([True, False]), np.array([True, False]), np.array([True, True])]
    done, out, kept, _, _ = _kernel(impl, items, masks)
    assert done == 1
    assert out == bytes(_record_layer(items[:1], masks[:1], [0]).output)
    assert kept.tolist() == [1, -1, -1]
    # From the next batch on, the kernel goes on.
    done, out, _, _, _ = _kernel(impl, items[2:], masks[2:])
    assert (done, out) == (1, items[2].batch.raw_bytes())


def test_whole_batches_with_headers_are_copied(impl: ModuleType) -> None:
    data, items = _run([_batch(0, [(b"a", b"1", 10, [("h", b"x")])])])
    done, out, kept, _, _ = _kernel(impl, items, [np.array([True])])
    assert (done, out, kept.tolist()) == (1, data, [1])


def test_bad_input_raises(impl: ModuleType) -> None:
    data, items = _run([_batch(0, [(b"a", b"1", 10)])])
    columns = items[0].columns
    starts, keep, fates = np.array([0, 1], dtype=np.int64), np.ones(1, dtype=np.uint8), np.zeros(1, dtype=np.uint8)
    with pytest.raises(ValueError, match="outside the data"):
        impl.filter_v2_batches(columns.data, columns.records, starts, np.array([len(data)], dtype=np.int64), keep,
                               fates, HORIZON, bytearray())
    with pytest.raises(ValueError, match="differ in length"):
        impl.filter_v2_batches(columns.data, columns.records, starts, np.zeros(2, dtype=np.int64), keep, fates,
                               HORIZON, bytearray())
    records = columns.records.copy()
    records["key_pos"][0] = len(data)
    with pytest.raises(ValueError, match="outside the data"):
        impl.filter_v2_batches(columns.data, records, starts, np.zeros(1, dtype=np.int64), keep, fates, HORIZON,
                               bytearray())
    # A truncated batch (its size past the data) and a legacy message are not v2 batches inside the data.
    with pytest.raises(ValueError, match="not a v2 batch inside the data"):
        impl.filter_v2_batches(columns.data[:-1], columns.records[:0], np.zeros(2, dtype=np.int64),
                               np.zeros(1, dtype=np.int64), keep[:0], fates, HORIZON, bytearray())
    legacy = bytes(MemoryRecords.with_records([(b"a", b"1")], magic=1).buffer)
    with pytest.raises(ValueError, match="not a v2 batch inside the data"):
        impl.filter_v2_batches(legacy + bytes(61), columns.records[:0], np.zeros(2, dtype=np.int64),
                               np.zeros(1, dtype=np.int64), keep[:0], fates, HORIZON, bytearray())


def test_without_a_horizon_to_stamp_it_stops_before_a_batch_needing_one(impl: ModuleType) -> None:
    """A clock whose horizon no batch can hold (``current_time + delete.retention.ms`` past a long, as with
    Kafka's tests at ``Long.MAX_VALUE``) comes as -1: a batch that would be stamped goes to the record layer."""
    _, items = _run([_batch(0, [(b"a", b"1", 10)]), _batch(1, [(b"b", None, 11)])])
    columns = items[0].columns
    out = bytearray()
    done, kept, _ = impl.filter_v2_batches(columns.data, columns.records, np.array([0, 1, 2], dtype=np.int64),
                                           np.array([item.batch.position for item in items], dtype=np.int64),
                                           np.ones(2, dtype=np.uint8), np.zeros(2, dtype=np.uint8), -1, out)
    assert (done, kept.tolist(), bytes(out)) == (1, [1, -1], items[0].batch.raw_bytes())
