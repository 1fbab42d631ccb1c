"""A keyed workload written into log dirs the way a broker writes it: the data of ``make demo``.

Four topics, each a different kind of traffic and a different on-disk format, so that one run exercises
every path of the readers and the cleaner:

=========  ==========  ==========================  =======================================================
topic      partitions  on disk                     traffic
=========  ==========  ==========================  =======================================================
users      4           v2, zstd or none (as the    profile updates keyed by user; 2% deletes (tombstones)
                       producer sent them)
inventory  3           v1, gzip (format 0.10.2)    stock levels keyed by SKU; 1% deletes
sessions   2           v0, snappy (format 0.9.0)   session state keyed by session id; 10% deletes (logouts)
clicks     3           v2, lz4, with headers       page views keyed by user; ``cleanup.policy=delete``
=========  ==========  ==========================  =======================================================

The first three are compacted topics.  Keys are skewed, as real keys are: a few hot users, SKUs and
sessions take most of the updates (a key is ``int(keys * u**3)`` for uniform ``u``).  Each partition's
records go to :meth:`kafkalog.log.unified_log.Log.append` in producer batches of ``batch_records``, partitioned by
Kafka's default partitioner (murmur2 of the key); a topic whose ``message.format.version`` is older than
0.11 gets its batches converted to v0 or v1 on append, as a broker converts them.  Timestamps run up to
the present, ``interval_ms`` apart, so no retention check deletes anything.  The generator is
deterministic for a given ``seed`` (timestamps aside).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..clients.partitioner import partitions_for_keys
from ..config.log_config import LogConfig
from ..errors import IllegalStateError
from ..manager.log_manager import LogManager
from ..record import MemoryRecords
from ..topic import TopicPartition

__all__ = ["TOPICS", "TopicSpec", "WorkloadResult", "topic_configs", "write_workload"]


@dataclass(frozen=True)
class TopicSpec:
    """One topic of the workload: its name, partitions, share of the records, topic config (Kafka's names),
    the share of updates that delete their key, and the codecs its producers use (taken in turn)."""

    name: str
    partitions: int
    share: float
    config: Mapping[str, str]
    delete_ratio: float
    producer_codecs: tuple[str, ...] = ("none",)

    @property
    def compacted(self) -> bool:
        return "compact" in self.config.get("cleanup.policy", "delete")


TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec("users", 4, 0.40, {"cleanup.policy": "compact", "compression.type": "producer"}, 0.02,
              ("zstd", "none")),
    TopicSpec("inventory", 3, 0.25, {"cleanup.policy": "compact", "message.format.version": "0.10.2",
                                     "compression.type": "gzip"}, 0.01),
    TopicSpec("sessions", 2, 0.15, {"cleanup.policy": "compact", "message.format.version": "0.9.0",
                                    "compression.type": "snappy"}, 0.10),
    TopicSpec("clicks", 3, 0.20, {"cleanup.policy": "delete", "compression.type": "lz4"}, 0.0),
)


def topic_configs(topics: Iterable[TopicSpec] = TOPICS) -> dict[str, dict[str, str]]:
    """The per-topic configs of ``topics``, as :class:`~kafkalog.manager.log_manager.LogManager` and the compact job
    take them."""
    return {t.name: dict(t.config) for t in topics}


@dataclass
class WorkloadResult:
    """What :func:`write_workload` wrote: per topic, the records and deletes appended, and the time taken."""

    records: dict[str, int] = field(default_factory=dict)
    deletes: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    elapsed_s: float = 0.0

    @property
    def total_records(self) -> int:
        return sum(self.records.values())


_PLANS = (b"free", b"pro", b"team", b"enterprise")
_WAREHOUSES = (b"ams", b"fra", b"iad", b"sin", b"syd")
_PAGES = (b"/", b"/search", b"/product", b"/cart", b"/checkout", b"/account", b"/help")
_STATES = (b"active", b"idle", b"checkout", b"browsing")
_FROM_WEB = ("source", b"web")
_FROM_APP = ("source", b"app")

#: Records drawn at a time: the numpy columns of a chunk and the records made from them are the
#: generator's whole memory, whatever the record count (with at most ``batch_records`` waiting per partition).
_CHUNK = 4096

#: How each topic's keys are written from their key ids.
_KEY_FORMATS = {"users": b"user-%07d", "inventory": b"sku-%06d", "sessions": b"session-%08x", "clicks": b"user-%07d"}


def _key_format(topic: str) -> bytes:
    return _KEY_FORMATS.get(topic, _KEY_FORMATS["clicks"])


@dataclass(frozen=True)
class _KeyTable:
    """Every key of a topic's key space made once, with its partition: keys repeat (a few hot ones take most
    updates), so a record's key and partition are looked up by key id rather than formatted and hashed again."""

    names: list[bytes]
    partitions: np.ndarray[Any, np.dtype[np.int64]]

    @classmethod
    def of(cls, topic: TopicSpec, key_space: int) -> _KeyTable:
        fmt = _key_format(topic.name)
        names = [fmt % k for k in range(key_space)]
        return cls(names, partitions_for_keys(names, topic.partitions))


def _records(topic: str, key_ids: list[int], ns: list[int], deletes: list[bool], r1: list[int], r2: list[int]
             ) -> tuple[list[bytes | None], list[tuple[tuple[str, bytes], tuple[str, bytes]]] | None]:
    """The values and headers of a topic's records (keyed by ``key_ids``); ``r1`` and ``r2`` are two uniform
    draws in [0, 1) scaled to 2**20 per record, for the fields that vary."""
    if topic == "users":
        values: list[bytes | None] = [
            None if d else b'{"user":%d,"name":"user %d","plan":"%s","email":"u%d@example.com","logins":%d,'
            b'"version":%d}' % (k, k, _PLANS[a & 3], k, 1 + b % 4999, n)
            for k, n, d, a, b in zip(key_ids, ns, deletes, r1, r2, strict=True)]
        return values, None
    if topic == "inventory":
        values = [
            None if d else b'{"sku":"sku-%06d","warehouse":"%s","stock":%d,"price_cents":%d,"version":%d}'
            % (k, _WAREHOUSES[k % 5], a % 900, 100 + k % 9900, n)
            for k, n, d, a in zip(key_ids, ns, deletes, r1, strict=True)]
        return values, None
    if topic == "sessions":
        values = [
            None if d else b'{"session":"%08x","state":"%s","pages":%d,"version":%d}'
            % (k, _STATES[a & 3], 1 + b % 79, n)
            for k, n, d, a, b in zip(key_ids, ns, deletes, r1, r2, strict=True)]
        return values, None
    values = [b'{"user":%d,"page":"%s","ms":%d,"n":%d}' % (k, _PAGES[a % 7], 5 + b % 2995, n)
              for k, n, a, b in zip(key_ids, ns, r1, r2, strict=True)]
    # a tuple of two pairs, the source pair shared: the same headers as a list of fresh pairs, made faster
    headers = [(_FROM_WEB if n % 3 else _FROM_APP, ("trace", b"%x" % n)) for n in ns]
    return values, headers


def write_workload(log_dirs: Iterable[str | Path], records: int, *, keys: int | None = None,
                   topics: Iterable[TopicSpec] = TOPICS, segment_bytes: int = 1024 * 1024,
                   batch_records: int = 200, interval_ms: int = 5, seed: int = 7) -> WorkloadResult:
    """Append ``records`` records of ``topics`` to new partitions in ``log_dirs`` through a
    :class:`~kafkalog.manager.log_manager.LogManager`, which leaves the dirs as a cleanly shut down broker does.

    ``keys`` is the number of distinct keys per topic (default ``records // 20``, at least 1).  Each log
    is rolled at the end (as ``segment.ms`` would roll it), so everything written is cleanable.  Raises
    :class:`~kafkalog.errors.IllegalStateError`, before writing anything, if a partition of the workload
    exists already in ``log_dirs``: its records would mix with an earlier run's.

    The records are drawn with numpy, :data:`_CHUNK` at a time, and made into tuples a topic at a time, so
    the generator's memory does not grow with ``records``.
    """
    if records < 0:
        raise ValueError(f"records must not be negative, not {records}")
    if batch_records < 1:
        raise ValueError(f"batch_records must be positive, not {batch_records}")
    specs = tuple(topics)
    key_space = max(1, keys if keys is not None else records // 20)
    rng = np.random.default_rng(seed)
    result = WorkloadResult({t.name: 0 for t in specs}, {t.name: 0 for t in specs})
    default = LogConfig({"segment.bytes": segment_bytes})
    started = time.perf_counter()
    now_ms = int(time.time() * 1000)
    first_ts = now_ms - records * interval_ms
    shares = np.array([t.share for t in specs], dtype=np.float64)
    shares /= shares.sum()
    delete_ratios = np.array([t.delete_ratio if t.compacted else 0.0 for t in specs])
    # A key space no larger than the records is made once (most keys recur); a larger one key by key.
    tables = {t.name: _KeyTable.of(t, key_space) for t in specs} if key_space <= records else {}
    with LogManager([Path(d) for d in log_dirs], default, topic_configs(specs)) as manager:
        existing = sorted(str(tp) for tp in manager.logs_by_topic_partition() if tp.topic in {t.name for t in specs})
        if existing:
            raise IllegalStateError(f"the log dirs hold partitions of the workload already ({', '.join(existing)}); "
                                    "give empty or new log dirs")
        logs = {(t.name, p): manager.create_log(TopicPartition(t.name, p)) for t in specs for p in range(t.partitions)}
        pending: dict[tuple[str, int], list[Any]] = {tp: [] for tp in logs}
        turns = {tp: 0 for tp in logs}
        codecs = {t.name: t.producer_codecs for t in specs}

        def flush(tp: tuple[str, int], batch: list[Any]) -> None:
            codec = codecs[tp[0]][turns[tp] % len(codecs[tp[0]])]
            turns[tp] += 1
            logs[tp].append(MemoryRecords.with_records(batch, compression=codec))
            result.batches += 1

        def add(tp: tuple[str, int], new: list[Any]) -> None:
            # whole batches of batch_records go out as they fill; the rest waits for the partition's next records
            waiting = pending[tp]
            waiting += new
            done = len(waiting) - len(waiting) % batch_records
            for at in range(0, done, batch_records):
                flush(tp, waiting[at:at + batch_records])
            del waiting[:done]

        for start in range(0, records, _CHUNK):
            size = min(_CHUNK, records - start)
            topic_of = rng.choice(len(specs), size=size, p=shares)
            key_ids = (key_space * rng.random(size) ** 3).astype(np.int64)
            deletes = rng.random(size) < delete_ratios[topic_of]
            r1, r2 = rng.integers(0, 1 << 20, size=(2, size))
            ns = np.arange(start, start + size, dtype=np.int64)
            for t, spec in enumerate(specs):
                at = np.flatnonzero(topic_of == t)
                if not len(at):
                    continue
                n_list = ns[at].tolist()
                ids = key_ids[at]
                id_list = ids.tolist()
                values, headers = _records(spec.name, id_list, n_list, deletes[at].tolist(), r1[at].tolist(),
                                           r2[at].tolist())
                table = tables.get(spec.name)
                if table is not None:
                    topic_keys = [table.names[k] for k in id_list]
                    partition_of = table.partitions[ids]
                else:
                    fmt = _key_format(spec.name)
                    topic_keys = [fmt % k for k in id_list]
                    partition_of = partitions_for_keys(topic_keys, spec.partitions)
                timestamps = (first_ts + ns[at] * interval_ms).tolist()
                rows = list(zip(topic_keys, values, timestamps, headers, strict=True) if headers is not None
                            else zip(topic_keys, values, timestamps, strict=True))
                result.records[spec.name] += len(at)
                result.deletes[spec.name] += int(np.count_nonzero(deletes[at]))
                # the rows grouped by partition in one stable sort, each partition's in their order
                grouped = [rows[i] for i in np.argsort(partition_of, kind="stable").tolist()]
                ends = np.cumsum(np.bincount(partition_of, minlength=spec.partitions)).tolist()
                begin = 0
                for p, end in enumerate(ends):
                    if end > begin:
                        add((spec.name, p), grouped[begin:end])
                    begin = end
        for tp, log in logs.items():
            if pending[tp]:
                flush(tp, pending[tp])
            if log.active_segment.size() > 0:
                log.roll()
    result.elapsed_s = time.perf_counter() - started
    return result
