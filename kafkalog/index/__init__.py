"""The sparse indexes of a segment: AbstractIndex, OffsetIndex, TimeIndex and LazyIndex.

Port of ``kafka/log/AbstractIndex.scala``, ``OffsetIndex.scala`` and ``TimeIndex.scala`` (Kafka
0.10.1.1), with the modern behaviour of ``storage/.../log/AbstractIndex.java``, ``OffsetIndex.java``,
``TimeIndex.java`` and ``LazyIndex.java`` (3.8.0) where the spec marks it: the warm-section slot search
(2.1), absolute offsets from ``entry`` (modern), a sanity check that accepts a last offset equal to the
base offset (2.1), indexes opened at first use (2.4).

On disk (big-endian, no header)::

    <base>.index      8-byte entries   relative offset int32 | position int32
    <base>.timeindex  12-byte entries  timestamp int64 | relative offset int32

One module a class, as Kafka has them: ``abstract_index`` (the file, its map and the slot search,
shared), ``offset_index``, ``time_index`` and ``lazy_index``; import them all from here.
"""

from .abstract_index import DEFAULT_MAX_INDEX_SIZE, AbstractIndex, OffsetPosition, TimestampOffset
from .lazy_index import LazyIndex
from .offset_index import OffsetIndex
from .time_index import TimeIndex

__all__ = [
    "DEFAULT_MAX_INDEX_SIZE",
    "AbstractIndex",
    "LazyIndex",
    "OffsetIndex",
    "OffsetPosition",
    "TimeIndex",
    "TimestampOffset",
]
