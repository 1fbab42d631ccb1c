"""Which partition a keyed record goes to: Kafka's default partitioner.

Port of ``Utils.murmur2`` and ``BuiltInPartitioner.partitionForKey`` (clients, tag 3.8.0): the
partition of a record with a key is ``(murmur2(key) & 0x7fffffff) % partitions``, so a key lands where
a Java producer would have put it.  Records without a key have no fixed partition (Kafka's producer
sticks to one partition per batch); the caller chooses.
"""

from __future__ import annotations

__all__ = ["murmur2", "partition_for_key"]

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
