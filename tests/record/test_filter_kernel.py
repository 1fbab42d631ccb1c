"""The cleaner's rewrite of plain v2 batches, ``filter_v2_batches``, with each twin.

The oracle is the record layer's own path in :func:`kafkalog.record.filter.filter_to`: a batch keeping
every record is its raw bytes, one keeping some is :func:`~kafkalog.record.filter.build_retained_records`
of its kept rows.  The kernel must write the same bytes, and stop at the batches it leaves to that path.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kafkalog.record import MemoryRecords
from kafkalog.record.filter import DecodedBatch, build_retained_records, decoded_batches


def _run(batches: list[bytes]) -> tuple[bytes, list[DecodedBatch]]:
    data = b"".join(batches)
    items = list(decoded_batches(MemoryRecords(data)))
    assert len({id(item.columns) for item in items}) == 1  # one run of uncompressed v2 batches
    return data, items


def _batch(base_offset: int, records: list[Any], **kwargs: Any) -> bytes:
    return bytes(MemoryRecords.with_records(records, base_offset=base_offset, **kwargs).buffer)


def _kernel(core: ModuleType, items: list[DecodedBatch], masks: list[Any],
            retain_empty: list[bool] | None = None) -> tuple[int, bytes, Any, Any]:
    columns, lo = items[0].columns, items[0].lo
    starts = np.array([item.lo - lo for item in items] + [items[-1].hi - lo], dtype=np.int64)
    positions = np.array([item.batch.position for item in items], dtype=np.int64)
    keep = np.concatenate(masks).astype(np.uint8)
    empty = np.array(retain_empty or [False] * len(items), dtype=np.uint8)
    out = bytearray(b"prefix")
    done, kept, max_ts = core.filter_v2_batches(columns.data, columns.records[lo:items[-1].hi], starts, positions,
                                                keep, empty, out)
    assert out[:6] == b"prefix"
    return done, bytes(out[6:]), kept, max_ts


def _expected(item: DecodedBatch, mask: Any) -> tuple[bytes, int]:
    """The record layer's bytes for one batch and the max timestamp it reports."""
    batch = item.batch
    if mask.all():
        return batch.raw_bytes(), batch.max_timestamp
    if not mask.any():
        return b"", -1
    index = item.lo + np.flatnonzero(mask)
    rows = item.columns.records[index]
    data = build_retained_records(batch, item.columns, index, batch.delete_horizon_ms, rows=rows)
    return data, int(rows["timestamp"].max())


def test_plain_batches_match_the_record_layer(impl: ModuleType) -> None:
    rng = random.Random(18)
    batches, offset = [], 0
    for b in range(40):
        n = rng.randint(1, 12)
        records = [(None if rng.random() < 0.1 else b"key-%d" % rng.randint(0, 30), b"v" * rng.randint(0, 300),
                    rng.choice([-1, 0, 1_700_000_000_000 + rng.randint(-10**6, 10**6), 2**62]))
                   for _ in range(n)]
        kwargs: dict[str, Any] = {}
        if b % 3 == 0:
            kwargs = {"producer_id": 7, "producer_epoch": 2, "base_sequence": offset, "is_transactional": b % 2 == 0}
        batches.append(_batch(offset, records, partition_leader_epoch=b, **kwargs))
        offset += n + rng.randint(0, 3)
    _, items = _run(batches)
    masks = [np.array([rng.random() < 0.5 for _ in range(item.hi - item.lo)]) for item in items]
    masks[0][:] = True
    masks[1][:] = False
    done, out, kept, max_ts = _kernel(impl, items, masks)
    assert done == len(items)
    expected = [_expected(item, mask) for item, mask in zip(items, masks, strict=True)]
    assert out == b"".join(e[0] for e in expected)
    assert kept.tolist() == [int(mask.sum()) for mask in masks]
    assert max_ts.tolist() == [e[1] for e in expected]
    assert all(batch.is_valid() for batch in MemoryRecords(out).batches())


@pytest.mark.parametrize("case", ["tombstone", "headers", "retain_empty"])
def test_stops_before_a_batch_the_record_layer_rewrites(impl: ModuleType, case: str) -> None:
    plain = [(b"a", b"1", 10), (b"b", b"2", 11)]
    odd = {"tombstone": [(b"a", None, 12), (b"c", b"3", 13)],
           "headers": [(b"a", b"4", 12, [("h", b"x")]), (b"c", b"3", 13)],
           "retain_empty": [(b"a", b"4", 12), (b"c", b"3", 13)]}[case]
    _, items = _run([_batch(0, plain), _batch(2, odd), _batch(4, plain)])
    # The odd batch keeps its first record (the tombstone, the record with headers) or, for retain_empty, none.
    masks = [np.array([True, False]), np.array([case != "retain_empty", False]), np.array([True, True])]
    done, out, kept, _ = _kernel(impl, items, masks, retain_empty=[False, case == "retain_empty", False])
    assert done == 1
    assert out == _expected(items[0], masks[0])[0]
    assert kept.tolist() == [1, 0, 0]
    # From the next batch on, the kernel goes on.
    done, out, _, _ = _kernel(impl, items[2:], masks[2:])
    assert (done, out) == (1, items[2].batch.raw_bytes())


def test_whole_batches_with_headers_are_copied(impl: ModuleType) -> None:
    data, items = _run([_batch(0, [(b"a", b"1", 10, [("h", b"x")])])])
    done, out, kept, _ = _kernel(impl, items, [np.array([True])])
    assert (done, out, kept.tolist()) == (1, data, [1])


def test_bad_input_raises(impl: ModuleType) -> None:
    data, items = _run([_batch(0, [(b"a", b"1", 10)])])
    columns = items[0].columns
    args = dict(starts=np.array([0, 1], dtype=np.int64), keep=np.ones(1, dtype=np.uint8),
                retain_empty=np.zeros(1, dtype=np.uint8))
    with pytest.raises(ValueError, match="outside the data"):
        impl.filter_v2_batches(columns.data, columns.records, args["starts"], np.array([len(data)], dtype=np.int64),
                               args["keep"], args["retain_empty"], bytearray())
    with pytest.raises(ValueError, match="differ in length"):
        impl.filter_v2_batches(columns.data, columns.records, args["starts"], np.zeros(2, dtype=np.int64),
                               args["keep"], args["retain_empty"], bytearray())
    records = columns.records.copy()
    records["key_pos"][0] = len(data)
    with pytest.raises(ValueError, match="outside the data"):
        impl.filter_v2_batches(columns.data, records, args["starts"], np.zeros(1, dtype=np.int64),
                               args["keep"], args["retain_empty"], bytearray())
