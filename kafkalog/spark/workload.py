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
records go to :meth:`kafkalog.log.Log.append` in producer batches of ``batch_records``, partitioned by
Kafka's default partitioner (murmur2 of the key); a topic whose ``message.format.version`` is older than
0.11 gets its batches converted to v0 or v1 on append, as a broker converts them.  Timestamps run up to
the present, ``interval_ms`` apart, so no retention check deletes anything.  The generator is
deterministic for a given ``seed`` (timestamps aside).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import LogConfig
from ..errors import IllegalStateError
from ..manager import LogManager
from ..partitioner import partition_for_key
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
    """The per-topic configs of ``topics``, as :class:`~kafkalog.manager.LogManager` and the compact job take them."""
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


_PLANS = ("free", "pro", "team", "enterprise")
_WAREHOUSES = ("ams", "fra", "iad", "sin", "syd")
_PAGES = ("/", "/search", "/product", "/cart", "/checkout", "/account", "/help")
_STATES = ("active", "idle", "checkout", "browsing")


def _record(topic: str, rng: random.Random, key_id: int, n: int, delete: bool) -> tuple[bytes, bytes | None,
                                                                                        list[tuple[str, bytes]]]:
    if topic == "users":
        key = f"user-{key_id:07d}".encode()
        value = None if delete else (
            f'{{"user":{key_id},"name":"user {key_id}","plan":"{_PLANS[rng.randrange(4)]}",'
            f'"email":"u{key_id}@example.com","logins":{rng.randrange(1, 5000)},"version":{n}}}').encode()
        return key, value, []
    if topic == "inventory":
        key = f"sku-{key_id:06d}".encode()
        value = None if delete else (
            f'{{"sku":"sku-{key_id:06d}","warehouse":"{_WAREHOUSES[key_id % 5]}","stock":{rng.randrange(0, 900)},'
            f'"price_cents":{100 + key_id % 9900},"version":{n}}}').encode()
        return key, value, []
    if topic == "sessions":
        key = f"session-{key_id:08x}".encode()
        value = None if delete else (
            f'{{"session":"{key_id:08x}","state":"{_STATES[rng.randrange(4)]}","pages":{rng.randrange(1, 80)},'
            f'"version":{n}}}').encode()
        return key, value, []
    key = f"user-{key_id:07d}".encode()
    value = (f'{{"user":{key_id},"page":"{_PAGES[rng.randrange(len(_PAGES))]}","ms":{rng.randrange(5, 3000)},'
             f'"n":{n}}}').encode()
    return key, value, [("source", b"web" if n % 3 else b"app"), ("trace", f"{n:x}".encode())]


def write_workload(log_dirs: Iterable[str | Path], records: int, *, keys: int | None = None,
                   topics: Iterable[TopicSpec] = TOPICS, segment_bytes: int = 1024 * 1024,
                   batch_records: int = 200, interval_ms: int = 5, seed: int = 7) -> WorkloadResult:
    """Append ``records`` records of ``topics`` to new partitions in ``log_dirs`` through a
    :class:`~kafkalog.manager.LogManager`, which leaves the dirs as a cleanly shut down broker does.

    ``keys`` is the number of distinct keys per topic (default ``records // 20``, at least 1).  Each log
    is rolled at the end (as ``segment.ms`` would roll it), so everything written is cleanable.  Raises
    :class:`~kafkalog.errors.IllegalStateError`, before writing anything, if a partition of the workload
    exists already in ``log_dirs``: its records would mix with an earlier run's.
    """
    if records < 0:
        raise ValueError(f"records must not be negative, not {records}")
    if batch_records < 1:
        raise ValueError(f"batch_records must be positive, not {batch_records}")
    specs = tuple(topics)
    key_space = max(1, keys if keys is not None else records // 20)
    rng = random.Random(seed)
    result = WorkloadResult({t.name: 0 for t in specs}, {t.name: 0 for t in specs})
    default = LogConfig({"segment.bytes": segment_bytes})
    started = time.perf_counter()
    now_ms = int(time.time() * 1000)
    first_ts = now_ms - records * interval_ms
    with LogManager([Path(d) for d in log_dirs], default, topic_configs(specs)) as manager:
        existing = sorted(str(tp) for tp in manager.logs_by_topic_partition() if tp.topic in {t.name for t in specs})
        if existing:
            raise IllegalStateError(f"the log dirs hold partitions of the workload already ({', '.join(existing)}); "
                                    "give empty or new log dirs")
        logs = {(t.name, p): manager.create_log(TopicPartition(t.name, p)) for t in specs for p in range(t.partitions)}
        pending: dict[tuple[str, int], list[Any]] = {tp: [] for tp in logs}
        turns = {tp: 0 for tp in logs}
        codecs = {t.name: t.producer_codecs for t in specs}

        def flush(tp: tuple[str, int]) -> None:
            batch = pending[tp]
            if batch:
                codec = codecs[tp[0]][turns[tp] % len(codecs[tp[0]])]
                turns[tp] += 1
                logs[tp].append(MemoryRecords.with_records(batch, compression=codec))
                result.batches += 1
                pending[tp] = []

        names = [t.name for t in specs]
        weights = [t.share for t in specs]
        by_name = {t.name: t for t in specs}
        for n in range(records):
            spec = by_name[rng.choices(names, weights)[0]]
            key_id = int(key_space * rng.random() ** 3)
            delete = spec.compacted and rng.random() < spec.delete_ratio
            key, value, headers = _record(spec.name, rng, key_id, n, delete)
            tp = (spec.name, partition_for_key(key, spec.partitions))
            pending[tp].append((key, value, first_ts + n * interval_ms, headers))
            result.records[spec.name] += 1
            result.deletes[spec.name] += delete
            if len(pending[tp]) >= batch_records:
                flush(tp)
        for tp, log in logs.items():
            flush(tp)
            if log.active_segment.size() > 0:
                log.roll()
    result.elapsed_s = time.perf_counter() - started
    return result
