"""Helpers of the offset- and time-index tests (tests/storage/test_*index*.py): Kafka's setup constants and
``monotonicSeq``, list models of the lookups to check the kernels against, and raw index-file writers.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from kafkalog.index import (
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
)

BASE_OFFSET = 45
MAX_ENTRIES = 30
INT32_MAX = 2**31 - 1
OFFSET_WARM_ENTRIES = 8192 // 8
TIME_WARM_ENTRIES = 8192 // 12

# Kafka's OffsetIndexTest.monotonicSeq draws its steps from ``new Random(1L)``: ``nextInt(15) + 1``.
# These are the first 30 of them, as a JVM gives them.
KAFKA_MONOTONIC_STEPS = (1, 14, 8, 4, 15, 5, 15, 2, 14, 14, 5, 14, 8, 4, 13, 5, 3, 13, 7, 15, 12, 3, 11, 15,
                         15, 15, 14, 9, 13, 3)


def monotonic_seq(base: int, length: int) -> list[int]:
    """Kafka's ``monotonicSeq(base, len)`` (3.8.0): a running sum of the seeded steps."""
    out = []
    last = base
    for step in KAFKA_MONOTONIC_STEPS[:length]:
        last += step
        out.append(last)
    return out


# -- models --------------------------------------------------------------------------------------


def llb_model(keys: Sequence[int], target: int) -> int:
    """Largest entry <= target, -1 when none (keys strictly increasing)."""
    return bisect.bisect_right(keys, target) - 1


def sub_model(keys: Sequence[int], target: int) -> int:
    """Kafka's smallest-upper-bound slot, quirk included: slot 0 is never compared, so a target equal
    to the first key answers slot 1 (or -1 with a single entry) (spec §3.1)."""
    n = len(keys)
    if n == 0:
        return -1
    if target == keys[0]:
        return 1 if n > 1 else -1
    slot = bisect.bisect_left(keys, target)
    return -1 if slot == n else slot


def offset_lookup_model(offsets: Sequence[int], positions: Sequence[int], base: int,
                        target: int) -> OffsetPosition:
    slot = llb_model(offsets, target)
    return OffsetPosition(base, 0) if slot < 0 else OffsetPosition(offsets[slot], positions[slot])


def time_lookup_model(timestamps: Sequence[int], offsets: Sequence[int], base: int,
                      target: int) -> TimestampOffset:
    slot = llb_model(timestamps, target)
    return TimestampOffset(-1, base) if slot < 0 else TimestampOffset(timestamps[slot], offsets[slot])


def targets_for(keys: Sequence[int], rng: np.random.Generator, warm: int, count: int) -> list[int]:
    """Targets of every kind: below the first key, equal to keys, between keys, past the last, in the
    warm section (the last ``warm`` + 1 entries) and far before it."""
    n = len(keys)
    first, last = keys[0], keys[-1]
    out = [first - 1, first, first + 1, last - 1, last, last + 1, last + 10**6, first - 10**6, -1, 0]
    first_hot = max(0, n - 1 - warm)
    out += [keys[first_hot], keys[first_hot] - 1, keys[first_hot] + 1]
    slots = rng.integers(0, n, count)
    warm_slots = rng.integers(first_hot, n, count)
    cold_slots = rng.integers(0, max(1, first_hot), count)
    for chosen in (slots, warm_slots, cold_slots):
        for s in chosen.tolist():
            out += [keys[s], keys[s] - 1, keys[s] + 1]
    out += rng.integers(first - 100, last + 100, count).tolist()
    return out


def random_increasing(rng: np.random.Generator, n: int, start: int, max_step: int) -> np.ndarray:
    return start + np.cumsum(rng.integers(1, max_step + 1, n)).astype(np.int64)


def append_time_entries(idx: TimeIndex, count: int) -> None:
    """TimeIndexTest.appendEntries: (i * 10, i * 10 + base) for i in 1..count."""
    for i in range(1, count + 1):
        idx.maybe_append(i * 10, i * 10 + BASE_OFFSET)


def raises_exactly(cls: type[BaseException], fn: Callable[[], object]) -> BaseException:
    """Kafka's assertWriteFails: the error must be this class, not a subclass."""
    with pytest.raises(Exception) as info:  # the class is checked exactly below
        fn()
    assert type(info.value) is cls, f"expected {cls.__name__}, got {type(info.value).__name__}: {info.value}"
    return info.value


def write_offset_entries(path: Path, entries: Sequence[tuple[int, int]], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(struct.pack(">ii", r, p) for r, p in entries) + tail)


def write_time_entries(path: Path, entries: Sequence[tuple[int, int]], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(struct.pack(">qi", t, r) for t, r in entries) + tail)
