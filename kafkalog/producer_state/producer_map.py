"""The producers a :class:`~kafkalog.producer_state.manager.ProducerStateManager` keeps, by id: Kafka's
``Map<Long, ProducerStateEntry> producers`` (``ProducerStateManager.java``, tag 3.8.0), held in two forms.

- The producers loaded from a snapshot and not touched since stay in the snapshot's own form: its
  :data:`~kafkalog.producer_state.snapshot.SNAPSHOT_ENTRY` rows as read (46 bytes a row, in file order), and an
  index sorted by producer id giving each producer's row, its place in the order of insertion and whether it is
  still there (25 bytes a producer).
- A producer the log asks for (:meth:`ProducerMap.get`: an append, a transaction's end, the oldest open
  transaction's timestamp) or that it adds becomes a
  :class:`~kafkalog.producer_state.entry.ProducerStateEntry`, the object the manager updates in place.

So a writable log loading a snapshot of a million producers (46 MB) holds 71 MB of arrays rather than a million
objects (1.1 GB), and pays for an object only for a producer that writes again.  The map answers as a dict
does: ``len``, membership, and iteration in the order of insertion (a key put again keeps its place, a key
removed and put again goes last), which the snapshot's ``HashMap`` order is computed from
(:meth:`ProducerMap.snapshot_rows`).

Invariants: a producer id is in one form at most; the index's ids are distinct and sorted; an index entry stops
being live when its producer becomes an object or is removed, and is never live again (a row no live entry
points at, an expired producer's or an earlier entry of a producer id written twice, is dead weight until the
next load); ``len`` is the objects plus the live index entries.  Not thread-safe: the manager's callers
serialise, as for the rest of its state.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Any

import numpy as np
import numpy.typing as npt

from .._common import INT64_MAX, INT64_MIN
from .entry import ProducerStateEntry
from .snapshot import (
    SNAPSHOT_CHUNK_ENTRIES,
    SNAPSHOT_ENTRY,
    canonicalize_rows,
    entries_of_rows,
    expired_rows,
    is_expired,
    java_hash_map_positions,
    rows_of_entries,
)

__all__ = ["ProducerMap", "ProducersView"]

_EMPTY_IDS: npt.NDArray[np.int64] = np.empty(0, dtype=np.int64)


class ProducerMap:
    """Producer id -> :class:`~kafkalog.producer_state.entry.ProducerStateEntry` (see the module docstring)."""

    __slots__ = ("_entries", "_ids", "_live", "_live_count", "_next_rank", "_positions", "_ranks", "_row_ranks",
                 "_rows")

    def __init__(self) -> None:
        self._entries: dict[int, ProducerStateEntry] = {}
        self._ranks: dict[int, int] = {}
        self._next_rank = 0
        self._forget_rows()

    def _forget_rows(self) -> None:
        self._rows: npt.NDArray[Any] = np.empty(0, SNAPSHOT_ENTRY)
        # The index, sorted by id: the producer's row, its place in the order of insertion, whether it is there.
        self._ids = _EMPTY_IDS
        self._positions = _EMPTY_IDS
        self._row_ranks = _EMPTY_IDS
        self._live: npt.NDArray[np.bool_] = np.empty(0, dtype=np.bool_)
        self._live_count = 0

    def clear(self) -> None:
        self._entries.clear()
        self._ranks.clear()
        self._next_rank = 0
        self._forget_rows()

    def __len__(self) -> int:
        return len(self._entries) + self._live_count

    def __contains__(self, producer_id: object) -> bool:
        return producer_id in self._entries or (isinstance(producer_id, int) and self._find(producer_id) >= 0)

    def _find(self, producer_id: int) -> int:
        """The index entry of ``producer_id`` if it is live, else -1."""
        if not self._live_count or not INT64_MIN <= producer_id <= INT64_MAX:
            return -1
        i = int(np.searchsorted(self._ids, producer_id))
        if i < len(self._ids) and int(self._ids[i]) == producer_id and self._live[i]:
            return i
        return -1

    def _make(self, indices: npt.NDArray[np.intp]) -> list[ProducerStateEntry]:
        return entries_of_rows(self._rows[self._positions[indices]])

    def _retire(self, i: int) -> None:
        self._live[i] = False
        self._live_count -= 1
        if not self._live_count:
            self._forget_rows()

    def get(self, producer_id: int) -> ProducerStateEntry | None:
        """The producer's entry, made from its row (and kept, for the caller to update) if it has one."""
        entry = self._entries.get(producer_id)
        if entry is not None:
            return entry
        i = self._find(producer_id)
        if i < 0:
            return None
        (entry,) = self._make(np.array([i]))
        self._entries[producer_id] = entry
        self._ranks[producer_id] = int(self._row_ranks[i])
        self._retire(i)
        return entry

    def peek(self, producer_id: int) -> ProducerStateEntry | None:
        """The producer's entry, without keeping one made from a row: what a read-only view answers."""
        entry = self._entries.get(producer_id)
        if entry is not None:
            return entry
        i = self._find(producer_id)
        return self._make(np.array([i]))[0] if i >= 0 else None

    def put(self, producer_id: int, entry: ProducerStateEntry) -> None:
        """Keep ``entry`` for ``producer_id``, in the place of the one it replaces (Kafka: ``producers.put``)."""
        if producer_id not in self._entries:
            i = self._find(producer_id)
            if i >= 0:
                self._ranks[producer_id] = int(self._row_ranks[i])
                self._retire(i)
            else:
                self._ranks[producer_id] = self._next_rank
                self._next_rank += 1
        self._entries[producer_id] = entry

    def pop(self, producer_id: int) -> None:
        """Forget the producer, if it is kept."""
        if self._entries.pop(producer_id, None) is not None:
            del self._ranks[producer_id]
            return
        i = self._find(producer_id)
        if i >= 0:
            self._retire(i)

    def load(self, rows: npt.NDArray[Any], kept: npt.NDArray[np.bool_] | None = None) -> None:
        """Put the producer of each snapshot row that ``kept`` keeps (all by default), in file order, a later
        row of a producer id replacing an earlier one in its place (Kafka: ``loadProducerEntry``'s
        ``addProducerId`` for each entry read).  Into an empty map the rows are kept as they are, indexed."""
        indices = np.flatnonzero(kept) if kept is not None else None
        if len(self) or not len(rows):
            for entry in entries_of_rows(rows if indices is None else rows[indices]):
                self.put(entry.producer_id, entry)
            return
        ids = rows["producer_id"].astype(np.int64)
        if indices is not None:
            ids = ids[indices]
        if not len(ids):
            return
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        # A stable sort: the first of a producer's rows is its place, the last its value.
        first, last = order[starts], order[np.append(starts[1:], len(ids)) - 1]
        del order
        if indices is not None:
            first, last = indices[first], indices[last]
        self._rows = rows
        self._ids = ids[starts]
        self._positions = last.astype(np.int64)
        self._row_ranks = first.astype(np.int64)
        self._live = np.ones(len(starts), dtype=np.bool_)
        self._live_count = len(starts)
        self._next_rank = len(rows)

    def remove_expired(self, current_time_ms: int, expiration_ms: int) -> None:
        """Forget the producers idle ``expiration_ms`` or longer with no open transaction (Kafka's
        ``isProducerExpired``: :func:`~kafkalog.producer_state.snapshot.expired_rows` over the rows,
        :func:`~kafkalog.producer_state.snapshot.is_expired` over the objects)."""
        if self._live_count:
            expired = expired_rows(self._rows, current_time_ms, expiration_ms)[self._positions] & self._live
            for i in np.flatnonzero(expired).tolist():
                self._retire(i)
        for producer_id in [producer_id for producer_id, entry in self._entries.items()
                            if is_expired(entry, current_time_ms, expiration_ms)]:
            self.pop(producer_id)

    def _order(self) -> tuple[npt.NDArray[np.intp], list[int], npt.NDArray[np.intp]]:
        """The live index entries, the objects' ids, and the order of insertion over both (a number below the
        count of live index entries is one of them, else an object)."""
        live = np.flatnonzero(self._live)
        ids = list(self._entries)
        ranks = np.concatenate((self._row_ranks[live],
                                np.fromiter((self._ranks[i] for i in ids), dtype=np.int64, count=len(ids))))
        return live, ids, np.argsort(ranks, kind="stable")

    def keys(self) -> Iterator[int]:
        """The producer ids in order of insertion."""
        live, ids, order = self._order()
        live_ids = self._ids[live]
        for start in range(0, len(order), SNAPSHOT_CHUNK_ENTRIES):
            for k in order[start:start + SNAPSHOT_CHUNK_ENTRIES].tolist():
                yield int(live_ids[k]) if k < len(live) else ids[k - len(live)]

    def items(self) -> Iterator[tuple[int, ProducerStateEntry]]:
        """``(producer id, entry)`` in order of insertion; an entry of a row is made for the caller, a chunk of
        rows at a time, and not kept (memory: a chunk)."""
        live, ids, order = self._order()
        entries = self._entries
        for start in range(0, len(order), SNAPSHOT_CHUNK_ENTRIES):
            block = order[start:start + SNAPSHOT_CHUNK_ENTRIES]
            from_rows = block < len(live)
            made = iter(self._make(live[block[from_rows]]))
            for k, is_row in zip(block.tolist(), from_rows.tolist(), strict=True):
                if is_row:
                    entry = next(made)
                    yield entry.producer_id, entry
                else:
                    producer_id = ids[k - len(live)]
                    yield producer_id, entries[producer_id]

    def snapshot_rows(self, largest_size: int) -> npt.NDArray[Any]:
        """The rows of a snapshot of every producer, in the order of a ``HashMap`` that held ``largest_size``
        at most (:func:`~kafkalog.producer_state.snapshot.java_hash_map_positions`; Kafka: ``writeSnapshot``
        over ``producers``)."""
        live, ids, _order = self._order()
        rows = np.concatenate((self._rows[self._positions[live]], rows_of_entries(self._entries[i] for i in ids)))
        ranks = np.concatenate((self._row_ranks[live],
                                np.fromiter((self._ranks[i] for i in ids), dtype=np.int64, count=len(ids))))
        positions = java_hash_map_positions(rows["producer_id"].astype(np.int64), ranks, largest_size)
        ordered: npt.NDArray[Any] = rows[positions]
        canonicalize_rows(ordered)  # a row is written as its entry would be
        return ordered


class _Items(ItemsView[int, ProducerStateEntry]):
    _mapping: ProducersView

    def __iter__(self) -> Iterator[tuple[int, ProducerStateEntry]]:
        return self._mapping.producers.items()


class _Values(ValuesView[ProducerStateEntry]):
    _mapping: ProducersView

    def __iter__(self) -> Iterator[ProducerStateEntry]:
        return (entry for _producer_id, entry in self._mapping.producers.items())


class ProducersView(Mapping[int, ProducerStateEntry]):
    """A read-only view of a :class:`ProducerMap` (Kafka: ``activeProducers``, an unmodifiable view).  The
    entry of a producer kept as a row is made for each look and not kept: changing it changes nothing."""

    __slots__ = ("producers",)

    def __init__(self, producers: ProducerMap) -> None:
        self.producers = producers

    def __getitem__(self, producer_id: int) -> ProducerStateEntry:
        entry = self.producers.peek(producer_id)
        if entry is None:
            raise KeyError(producer_id)
        return entry

    def __contains__(self, producer_id: object) -> bool:
        return producer_id in self.producers

    def __iter__(self) -> Iterator[int]:
        return self.producers.keys()

    def __len__(self) -> int:
        return len(self.producers)

    def items(self) -> ItemsView[int, ProducerStateEntry]:
        """``(producer id, entry)`` in order of insertion (:meth:`ProducerMap.items`)."""
        return _Items(self)

    def values(self) -> ValuesView[ProducerStateEntry]:
        """The entries in order of insertion (:meth:`ProducerMap.items`)."""
        return _Values(self)

    def __repr__(self) -> str:
        return f"ProducersView({len(self)} producers)"
