"""OffsetMap and SkimpyOffsetMap: the cleaner's map from a key to the last offset it was written at.

Port of ``kafka/log/OffsetMap.scala`` (Kafka 0.10.1.1; ``storage/.../OffsetMap.java`` and
``SkimpyOffsetMap.java`` in 3.8.0), with the KAFKA-3682 guard (0.10.1) that stops ``get`` from probing
a full map forever.

A SkimpyOffsetMap is one byte array of ``memory`` bytes holding ``memory // 24`` entries: the MD5 of a
key (16 bytes) and an offset (8 bytes, big-endian).  It stores no keys and never deletes: two keys with
the same MD5 share an entry (a loss the cleaner accepts), and the map is cleared between cleanings.
An all-zero entry is empty.  The probe sequence is Kafka's exactly (see
``_core_py.offset_map.offset_map_position_of``), so the same keys land in the same entries as in Kafka.

The table is a numpy ``uint8`` array; probing and hashing are kernels (``_core.offset_map_*``), which
also run the cleaner's whole-segment passes over it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _impl
from ..errors import IllegalArgumentError

__all__ = ["OffsetMap", "SkimpyOffsetMap"]

_PAGE_BYTES = 4096  # the usual page size; only the threshold of clear() depends on it


class OffsetMap:
    """What the cleaner needs of a map from keys to offsets (Kafka: ``OffsetMap``)."""

    @property
    def slots(self) -> int:
        raise NotImplementedError

    def put(self, key: bytes, offset: int) -> None:
        raise NotImplementedError

    def get(self, key: bytes) -> int:
        raise NotImplementedError

    def update_latest_offset(self, offset: int) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    @property
    def size(self) -> int:
        raise NotImplementedError

    @property
    def latest_offset(self) -> int:
        raise NotImplementedError

    @property
    def utilization(self) -> float:
        """Kafka: ``utilization`` = size / slots."""
        return self.size / self.slots


class SkimpyOffsetMap(OffsetMap):
    """A fixed-size hash table of MD5 key hashes to offsets (Kafka: ``SkimpyOffsetMap``)."""

    HASH_SIZE = 16
    BYTES_PER_ENTRY = HASH_SIZE + 8

    def __init__(self, memory: int, hash_algorithm: str = "MD5") -> None:
        if hash_algorithm.upper() != "MD5":
            raise IllegalArgumentError(f"Unsupported hash algorithm {hash_algorithm!r}: kafkalog's map uses MD5")
        if memory < self.BYTES_PER_ENTRY:
            raise IllegalArgumentError(f"A map of {memory} bytes cannot hold one {self.BYTES_PER_ENTRY}-byte entry")
        self.memory = memory
        self.hash_algorithm = "MD5"
        self._slots = memory // self.BYTES_PER_ENTRY
        self.table: npt.NDArray[np.uint8] = np.zeros(memory, dtype=np.uint8)
        self._entries = 0
        self.lookups = 0
        self.probes = 0
        self._last_offset = -1

    @property
    def slots(self) -> int:
        """How many entries fit (Kafka: ``slots``)."""
        return self._slots

    @property
    def size(self) -> int:
        """How many entries are used (Kafka: ``size``)."""
        return self._entries

    @property
    def latest_offset(self) -> int:
        """The last offset put or set by :meth:`update_latest_offset`; -1 before any (Kafka: ``latestOffset``)."""
        return self._last_offset

    def update_latest_offset(self, offset: int) -> None:
        """Kafka: ``updateLatestOffset``: the cleaner moves it past records it skipped (offset gaps)."""
        self._last_offset = offset

    def is_empty(self, position: int) -> bool:
        """Whether the entry at byte ``position`` is empty (Kafka: private ``isEmpty``)."""
        return not self.table[position:position + self.BYTES_PER_ENTRY].any()

    def position_of(self, hash: bytes, attempt: int) -> int:
        """Where probe ``attempt`` of ``hash`` lands (Kafka: private ``positionOf``); counts a probe."""
        self.probes += 1
        return int(_impl.core.offset_map_position_of(hash, attempt, self._slots))

    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest for ``key`` (Kafka: ``put``).  A full map refuses every put, even of
        a key it holds, as Kafka's does."""
        if self._entries >= self._slots:
            raise IllegalArgumentError("Attempt to add a new entry to a full offset map.")
        if key is None:
            raise IllegalArgumentError("Cannot put a null key in an offset map")
        self.lookups += 1
        new, probes = _impl.core.offset_map_put(self.table, self._slots, key, offset)
        self.probes += probes
        self._entries += int(new)
        self._last_offset = offset

    def get(self, key: bytes) -> int:
        """The offset last put for ``key``, or -1 (Kafka: ``get``); stops after ``slots + 12`` probes."""
        self.lookups += 1
        found, probes = _impl.core.offset_map_get(self.table, self._slots, key)
        self.probes += probes
        return int(found)

    def __contains__(self, key: bytes) -> bool:
        return self.get(key) >= 0

    def clear(self) -> None:
        """Empty the map and reset its counters (Kafka: ``clear``, which zeroes the whole buffer).

        The same empty table, got more cheaply when few entries were used: a map no put has written to is all
        zeros already, and one whose entries touched few of its pages gets a fresh zeroed array, whose pages
        the system zeroes as they are first touched, rather than zeros written over all of it (128 MiB by
        default, some 50 ms, paid by every round of a small log).  A well-filled map is zeroed in place: its
        pages are all in memory, and faulting them in again one at a time costs several times the writing.
        """
        if self._entries and self._entries < self.memory // _PAGE_BYTES // 8:
            self.table = np.zeros(self.memory, dtype=np.uint8)
        elif self._entries:
            self.table.fill(0)
        self._entries = 0
        self.lookups = 0
        self.probes = 0
        self._last_offset = -1

    @property
    def collision_rate(self) -> float:
        """Extra probes per lookup (Kafka: ``collisionRate``, ``(probes - lookups) / (double) lookups``).

        NaN before any lookup (or after :meth:`clear`), as Java's ``0 / 0.0`` is; Python's division would
        raise instead.
        """
        if self.lookups == 0:
            return math.nan if self.probes == 0 else math.copysign(math.inf, self.probes)
        return (self.probes - self.lookups) / self.lookups

    def put_records(
        self, data: Any, records: npt.NDArray[Any], start_offset: int, max_entries: int
    ) -> tuple[int, bool]:
        """Put every keyed record at or past ``start_offset`` until the map holds ``max_entries``: one kernel
        call for a decoded batch or run of batches.  Returns ``(records processed, full)``."""
        processed, entries, lookups, probes, last, full = _impl.core.offset_map_put_records(
            self.table, self._slots, data, records, start_offset, self._entries, min(max_entries, self._slots))
        self._entries = int(entries)
        self.lookups += int(lookups)
        self.probes += int(probes)
        if last >= 0:
            self._last_offset = int(last)
        return int(processed), bool(full)

    def latest_codes(self, data: Any, records: npt.NDArray[Any]) -> npt.NDArray[np.int8]:
        """For each record, its :class:`~kafkalog._common.RecordFate`: past the mapped range, the latest for its
        key, superseded, or no key (one int8 a record)."""
        codes, lookups, probes = _impl.core.offset_map_latest_codes(self.table, self._slots, data, records,
                                                                   self._last_offset)
        self.lookups += int(lookups)
        self.probes += int(probes)
        result: npt.NDArray[np.int8] = codes
        return result

    def __repr__(self) -> str:
        return (f"SkimpyOffsetMap(memory={self.memory}, slots={self._slots}, size={self._entries}, "
                f"latest_offset={self._last_offset})")
