"""Which partition a keyed record goes to: Kafka's default partitioner.

Port of ``Utils.murmur2`` and ``BuiltInPartitioner.partitionForKey`` (clients, tag 3.8.0): the
partition of a record with a key is ``(murmur2(key) & 0x7fffffff) % partitions``, so a key lands where
a Java producer would have put it.  Records without a key have no fixed partition (Kafka's producer
sticks to one partition per batch); the caller chooses.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["murmur2", "partition_for_key", "partitions_for_keys"]

_MASK32 = 0xFFFFFFFF
_M = 0x5BD1E995
_SEED = 0x9747B28C


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2(data: bytes) -> int:
    """The 32-bit murmur2 hash Kafka's partitioner uses, as a Java ``int`` (Kafka: ``Utils.murmur2``)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    left = length & 3
    if left == 3:
        h ^= data[whole + 2] << 16
    if left >= 2:
        h ^= data[whole + 1] << 8
    if left >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return _signed(h)


def partition_for_key(key: bytes, partitions: int) -> int:
    """Kafka: ``BuiltInPartitioner.partitionForKey`` (``Utils.toPositive(murmur2(key)) % numPartitions``)."""
    if partitions <= 0:
        raise ValueError(f"a topic has at least one partition, not {partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % partitions


_M_U32 = np.uint32(_M)


def _murmur2_rows(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint32]:
    """:func:`murmur2` of each row of ``data`` (keys of one length), vectorised in
    numpy's wrapping uint32 arithmetic: the workload hashes every key it writes, a million in ``make demo``."""
    rows, length = data.shape
    h = np.full(rows, (_SEED ^ length) & 0xFFFFFFFF, dtype=np.uint32)
    whole = length & ~3
    words = np.ascontiguousarray(data[:, :whole]).view("<u4")
    for i in range(whole // 4):
        k = words[:, i] * _M_U32
        k ^= k >> np.uint32(24)
        k *= _M_U32
        h *= _M_U32
        h ^= k
    left = length & 3
    if left == 3:
        h ^= data[:, whole + 2].astype(np.uint32) << np.uint32(16)
    if left >= 2:
        h ^= data[:, whole + 1].astype(np.uint32) << np.uint32(8)
    if left >= 1:
        h ^= data[:, whole].astype(np.uint32)
        h *= _M_U32
    h ^= h >> np.uint32(13)
    h *= _M_U32
    h ^= h >> np.uint32(15)
    return h


def partitions_for_keys(keys: Sequence[bytes], partitions: int) -> npt.NDArray[np.int64]:
    """:func:`partition_for_key` of each of ``keys``, at once: the keys of one length are hashed together in
    numpy's wrapping uint32 arithmetic (the demo workload partitions a million keys this way)."""
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    out = np.empty(len(keys), dtype=np.int64)
    distinct = np.unique(lengths).tolist()
    if len(distinct) == 1:  # keys of one width (the workload's): hashed as they come, no gather
        length = distinct[0]
        data = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), length)
        out[:] = (_murmur2_rows(data) & np.uint32(0x7FFFFFFF)) % partitions
        return out
    for length in distinct:
        at = np.flatnonzero(lengths == length)
        data = np.frombuffer(b"".join([keys[i] for i in at.tolist()]), dtype=np.uint8).reshape(len(at), length)
        out[at] = (_murmur2_rows(data) & np.uint32(0x7FFFFFFF)) % partitions
    return out
