"""kafkalog.producer_state.producer_map: the producer map of a ProducerStateManager, the producers loaded from a
snapshot kept as its rows, checked against the dict it stands for (Kafka's ``HashMap<Long, ProducerStateEntry>``
in ``ProducerStateManager``, filled by ``loadProducerEntry`` for each entry ``readSnapshot`` returns): its
length, membership, entries and order of insertion, and the snapshot it writes, under random operations.
"""

from __future__ import annotations

import random
import struct
from types import ModuleType

import numpy as np

from kafkalog import _impl
from kafkalog.producer_state import BatchMetadata, ProducerStateEntry
from kafkalog.producer_state.producer_map import ProducerMap, ProducersView
from kafkalog.producer_state.snapshot import (
    SNAPSHOT_ENTRY,
    java_hash_map_order,
    parse_snapshot,
    serialize_rows,
    serialize_snapshot,
)

_ENTRY = struct.Struct(">qhiqiqiq")


def _rows(*entries: tuple[int, ...]) -> np.ndarray:
    """Snapshot rows laid out from the schema (producer id, epoch, last sequence, last offset, offset delta,
    timestamp, coordinator epoch, open transaction's first offset or -1)."""
    return np.frombuffer(b"".join(_ENTRY.pack(*entry) for entry in entries), SNAPSHOT_ENTRY)


def _entry(producer_id: int, epoch: int = 0, txn: int | None = None, timestamp: int = 1_000) -> ProducerStateEntry:
    return ProducerStateEntry(producer_id, epoch, -1, timestamp, txn, BatchMetadata(3, 10, 0, timestamp))


def _loaded(rows: np.ndarray, kept: np.ndarray | None = None) -> tuple[ProducerMap, dict[int, ProducerStateEntry]]:
    """The map loaded with ``rows``, and the dict ``loadProducerEntry`` fills with the same entries."""
    producers = ProducerMap()
    producers.load(rows, kept)
    oracle: dict[int, ProducerStateEntry] = {}
    data = serialize_rows(rows if kept is None else rows[kept])
    for entry in parse_snapshot(data, "oracle"):
        oracle[entry.producer_id] = entry
    return producers, oracle


def _same(producers: ProducerMap, oracle: dict[int, ProducerStateEntry]) -> None:
    assert len(producers) == len(oracle)
    assert list(producers.keys()) == list(oracle)
    assert list(producers.items()) == list(oracle.items())
    view = ProducersView(producers)
    assert dict(view) == oracle
    assert all(producer_id in view and view[producer_id] == entry for producer_id, entry in oracle.items())
    for largest in (0, 100):
        assert serialize_rows(producers.snapshot_rows(largest)) == serialize_snapshot(java_hash_map_order(oracle,
                                                                                                          largest))


def test_load_keeps_the_later_entry_in_the_earlier_place(impl: ModuleType) -> None:
    """``loadProducerEntry`` puts each entry: a producer id written twice keeps the place of its first entry (a
    ``HashMap`` put of a key it holds) and the value of its last."""
    producers, oracle = _loaded(_rows((9, 0, 1, 4, 0, 1_000, -1, -1), (3, 0, 1, 5, 0, 1_000, -1, 2),
                                      (9, 1, 2, 6, 0, 1_001, -1, -1), (-1, 0, -1, -1, 0, 1_000, -1, -1)))
    assert list(oracle) == [9, 3, -1]
    assert oracle[9].producer_epoch == 1
    _same(producers, oracle)
    assert producers.get(2**70) is None and 2**70 not in producers  # no id outside int64 is a row's


def test_load_leaves_out_the_rows_not_kept(impl: ModuleType) -> None:
    rows = _rows((5, 0, 1, 4, 0, 1_000, -1, -1), (6, 0, 1, 5, 0, 1_000, -1, -1), (5, 2, 1, 6, 0, 9, -1, -1))
    producers, oracle = _loaded(rows, np.array([True, True, False]))
    assert oracle[5].producer_epoch == 0  # the later entry of 5 was not kept: the earlier one stands
    _same(producers, oracle)
    nothing, empty = _loaded(rows, np.zeros(3, dtype=np.bool_))
    assert len(nothing) == 0 and empty == {}
    _same(nothing, empty)


def test_an_entry_made_from_a_row_is_kept_and_keeps_its_place(impl: ModuleType) -> None:
    producers, oracle = _loaded(_rows(*((pid, 0, 1, 4, 0, 1_000, -1, -1) for pid in (40, 30, 20, 10))))
    entry = producers.get(20)
    assert entry is not None and producers.get(20) is entry  # made once, then the object the manager updates
    entry.add_batch(0, 2, 11, 0, 1_100)
    oracle[20].add_batch(0, 2, 11, 0, 1_100)
    view = ProducersView(producers)
    assert view[30] is not view[30]  # the view makes an entry of a row for each look, and keeps none
    _same(producers, oracle)
    producers.put(10, _entry(10, epoch=4))  # a put of a loaded producer keeps its place
    oracle[10] = _entry(10, epoch=4)
    producers.pop(40)  # removed, then put again: last
    del oracle[40]
    producers.put(40, _entry(40))
    oracle[40] = _entry(40)
    producers.put(50, _entry(50))
    oracle[50] = _entry(50)
    _same(producers, oracle)
    producers.clear()
    assert len(producers) == 0 and list(producers.items()) == [] and producers.get(30) is None


def test_remove_expired_forgets_idle_producers_without_a_transaction(impl: ModuleType) -> None:
    producers, oracle = _loaded(_rows((1, 0, 1, 4, 0, 100, -1, -1), (2, 0, 1, 5, 0, 100, -1, 3),
                                      (3, 0, 1, 6, 0, 900, -1, -1), (4, 0, 1, 7, 0, 100, -1, -1)))
    producers.put(5, _entry(5, timestamp=100))
    oracle[5] = _entry(5, timestamp=100)
    assert producers.get(4) is not None  # an object now, expired all the same
    producers.remove_expired(1_000, 500)
    for producer_id in (1, 4, 5):
        del oracle[producer_id]
    _same(producers, oracle)
    assert list(oracle) == [2, 3]


def test_random_operations_match_a_dict(impl: ModuleType) -> None:
    """Random loads (with repeated ids), gets, puts, pops and expirations against the dict they stand for."""
    rng = random.Random(28)
    for _round in range(20):
        ids = [rng.randrange(-5, 60) for _ in range(rng.randrange(0, 80))]
        rows = _rows(*((pid, rng.randrange(3), rng.randrange(100), rng.randrange(-1, 50), 0,
                        rng.randrange(0, 2_000), -1, rng.choice((-1, -1, 7))) for pid in ids))
        kept = np.array([rng.random() < 0.9 for _ in ids], dtype=np.bool_) if ids else None
        producers, oracle = _loaded(rows, kept)
        for _step in range(60):
            producer_id = rng.randrange(-5, 70)
            action = rng.random()
            if action < 0.3:
                got = producers.get(producer_id)
                assert got == oracle.get(producer_id)
            elif action < 0.6:
                entry = _entry(producer_id, epoch=rng.randrange(3), timestamp=rng.randrange(2_000))
                producers.put(producer_id, entry)
                oracle[producer_id] = entry
            elif action < 0.85:
                producers.pop(producer_id)
                oracle.pop(producer_id, None)
            else:
                now, expiration = rng.randrange(0, 3_000), rng.randrange(1, 2_000)
                producers.remove_expired(now, expiration)
                for gone in [pid for pid, entry in oracle.items() if entry.current_txn_first_offset is None
                             and now - entry.last_timestamp >= expiration]:
                    del oracle[gone]
        _same(producers, oracle)


def test_the_snapshot_written_reads_back(impl: ModuleType) -> None:
    producers, oracle = _loaded(_rows(*((pid, 1, 2, 3, 0, 1_000, 0, -1) for pid in range(100, 0, -3))))
    producers.put(7, _entry(7, txn=4))
    oracle[7] = _entry(7, txn=4)
    data = serialize_rows(producers.snapshot_rows(0))
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count, crc) == (1, len(oracle), int(_impl.core.crc32c(data[6:])))
    assert {entry.producer_id: entry for entry in parse_snapshot(data, "written")} == oracle
