"""What the three real clients write into a broker, topic by topic (broker to kafkalog).

Each topic holds one kind of data, written by confluent-kafka, kafka-python and aiokafka, each with its own batch
builder and compressors:

- ``plain``: values without keys, a record with neither, an empty value, timestamps set by the producer (some
  going back in time);
- ``keyed`` (3 partitions): keys, headers (repeated names, a header without a value), the clients' partitioners;
- ``codecs``: gzip, snappy, lz4 and zstd batches of each client in one partition, small segments and a dense
  index (``internal.segment.bytes``, ``index.interval.bytes``);
- ``idempotent``: producer ids and sequences of each client;
- ``txn`` (2 partitions, small segments): transactions of each client that commit and that abort, interleaved
  with each other and with plain writes, so aborted ranges overlap committed ones and span segments;
- ``logappend``: ``message.timestamp.type=LogAppendTime`` (the broker stamps the batches);
- ``recompressed``: ``compression.type=zstd`` (the broker recompresses gzip and uncompressed batches);
- ``compacted``: ``cleanup.policy=compact``, small segments, updates, tombstones, a committed and an aborted
  transaction, cleaned by the broker's own cleaner (the caller waits for it, :func:`wait_until_cleaned`).

The data is text (UTF-8), so ``kafkalog dump``'s string decoder prints it back; values vary in size and
repetition, from a seeded generator.  Records carry producer timestamps of the last hours (not older: the
broker's retention, seven days by default, must not delete anything while the test reads).
"""

from __future__ import annotations

import asyncio
import random
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .broker import BrokerError, KafkaBroker
from .clients import CLIENT_TIMEOUT_S, TopicPartitionKey, confluent_producer, create_topics, produce

# kafka-python's package import trips a DeprecationWarning of importlib.resources; only that is muted.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaProducer

__all__ = ["BROKER_CONFIG", "CODECS", "TOPICS", "Workload", "produce_workload", "wait_until_cleaned"]

CODECS = ("gzip", "snappy", "lz4", "zstd")
#: Broker settings of this workload: the cleaner looks for work every 100 ms.
BROKER_CONFIG = {"log.cleaner.backoff.ms": 100}
#: Small segments for the topics that should roll (4.x allows segment.bytes of 1 MiB or more; this internal
#: setting is what Kafka's own tests use for less), and producer batches that fit in them.
SMALL_SEGMENTS = {"internal.segment.bytes": 4096, "index.interval.bytes": 256}
SMALL_BATCHES = {"batch_size": 1024}
#: ``name: (partitions, topic configs)``.
TOPICS: dict[str, tuple[int, dict[str, Any]]] = {
    "plain": (1, {}),
    "keyed": (3, {}),
    "codecs": (1, {"internal.segment.bytes": 16384, "index.interval.bytes": 512}),
    "idempotent": (1, {}),
    "txn": (2, dict(SMALL_SEGMENTS)),
    "logappend": (1, {"message.timestamp.type": "LogAppendTime"}),
    "recompressed": (1, {"compression.type": "zstd"}),
    "compacted": (1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01, "min.compaction.lag.ms": 0,
                      **SMALL_SEGMENTS}),
}


@dataclass
class Workload:
    """What was written: per topic, the codecs its batches were written with by the clients (before any
    recompression by the broker), and how many records each partition was sent, data records only."""

    codecs: dict[str, set[str]] = field(default_factory=dict)
    sent: dict[str, int] = field(default_factory=dict)
    #: The partitions of every topic.
    partitions: list[TopicPartitionKey] = field(default_factory=list)

    def note(self, topic: str, codec: str, count: int) -> None:
        self.codecs.setdefault(topic, set()).add(codec)
        self.sent[topic] = self.sent.get(topic, 0) + count


def _text(rng: random.Random, i: int) -> str:
    """A value of 0 to ~600 characters: words repeated (compressible) or random letters (not)."""
    if i % 5 == 0:
        return ""
    if i % 2:
        words = ("alpha", "beta", "gamma", "delta", "kafka", "log")
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 90)))
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rng.randint(1, 300)))


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- kafka-python and aiokafka -----------------------------------------------------------------------------

def _b(text: str | bytes | None) -> bytes | None:
    return text.encode() if isinstance(text, str) else text


def _kafka_python(broker: KafkaBroker, **config: Any) -> Any:
    return KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5,
                         request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000), **config)


def _kafka_python_send(producer: Any, topic: str, records: Iterable[tuple[Any, ...]],
                       partition: int | None = None) -> None:
    futures = []
    for record in records:
        key, value, *rest = record
        headers = [(k, _b(v)) for k, v in rest[0]] if rest and rest[0] else None
        timestamp = rest[1] if len(rest) > 1 else None
        futures.append(producer.send(topic, key=_b(key), value=_b(value), headers=headers, partition=partition,
                                     timestamp_ms=timestamp))
    producer.flush(CLIENT_TIMEOUT_S)
    for future in futures:
        future.get(CLIENT_TIMEOUT_S)


async def _aiokafka(broker: KafkaBroker, **config: Any) -> Any:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5,
                                request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000), **config)
    await producer.start()
    return producer


async def _aiokafka_send(producer: Any, topic: str, records: Iterable[tuple[Any, ...]],
                         partition: int | None = None) -> None:
    futures = []
    for record in records:
        key, value, *rest = record
        headers = [(k, _b(v)) for k, v in rest[0]] if rest and rest[0] else None
        futures.append(await producer.send(topic, key=_b(key), value=_b(value), headers=headers, partition=partition))
    for future in futures:
        await asyncio.wait_for(future, CLIENT_TIMEOUT_S)


# -- the topics --------------------------------------------------------------------------------------------

def _plain(broker: KafkaBroker, w: Workload) -> None:
    rng, now = random.Random(1), _now_ms()
    records: list[tuple[Any, ...]] = [(None, f"plain-{i} {_text(rng, i)}", None, now - 3_600_000 + (i % 7) * 1000)
                                      for i in range(30)]
    records += [(None, None), ("only-key", ""), (None, "after the null")]
    producer = confluent_producer(broker)
    for key, value, *rest in records:
        timestamp = rest[1] if len(rest) > 1 else 0
        producer.produce("plain", key=key, value=value, timestamp=timestamp or 0)
    if producer.flush(CLIENT_TIMEOUT_S):
        raise BrokerError("confluent-kafka: records of plain not acknowledged")
    w.note("plain", "none", len(records))
    kp = _kafka_python(broker)
    try:
        _kafka_python_send(kp, "plain", [(None, f"kafka-python {i}", None, now - i * 60_000) for i in range(20)])
    finally:
        kp.close(10)
    w.note("plain", "none", 20)


def _keyed(broker: KafkaBroker, w: Workload) -> None:
    rng = random.Random(2)
    headers = [("trace", "t-1"), ("empty", None), ("trace", "t-2"), ("ünïcode", "värde")]
    confluent = [(f"user-{i % 13}", _text(rng, i), [(k, _b(v)) for k, v in headers[: i % 5]]) for i in range(60)]
    produce(confluent_producer(broker, partitioner="murmur2_random"), "keyed", confluent)
    w.note("keyed", "none", 60)
    # kafka-python and aiokafka take no header without a value.
    headers = [h for h in headers if h[1] is not None]
    kp = _kafka_python(broker)
    try:
        _kafka_python_send(kp, "keyed", [(f"user-{i % 7}", f"kp {i}", headers[i % 4:]) for i in range(30)])
    finally:
        kp.close(10)
    w.note("keyed", "none", 30)

    async def aio() -> None:
        producer = await _aiokafka(broker)
        try:
            await _aiokafka_send(producer, "keyed", [(f"user-{i % 5}", f"aio {i}", headers[:i % 3]) for i in range(30)])
        finally:
            await producer.stop()

    asyncio.run(aio())
    w.note("keyed", "none", 30)


def _codecs(broker: KafkaBroker, w: Workload) -> None:
    rng = random.Random(3)

    def records(client: str, codec: str) -> list[tuple[Any, ...]]:
        return [(f"{client}-{codec}-{i % 4}", _text(rng, i), [("codec", codec.encode())]) for i in range(25)]

    for codec in CODECS:
        produce(confluent_producer(broker, compression_type=codec, batch_size=4096), "codecs",
                records("confluent", codec))
        kp = _kafka_python(broker, compression_type=codec, batch_size=4096)
        try:
            _kafka_python_send(kp, "codecs", records("kafka-python", codec))
        finally:
            kp.close(10)
        w.note("codecs", codec, 50)

    async def aio() -> None:
        for codec in CODECS:
            producer = await _aiokafka(broker, compression_type=codec, max_batch_size=4096)
            try:
                await _aiokafka_send(producer, "codecs", records("aiokafka", codec))
            finally:
                await producer.stop()
            w.note("codecs", codec, 25)

    asyncio.run(aio())


def _idempotent(broker: KafkaBroker, w: Workload) -> None:
    produce(confluent_producer(broker, enable_idempotence=True, batch_num_messages=7), "idempotent",
            [(f"k{i % 3}", f"confluent {i}") for i in range(40)])
    kp = _kafka_python(broker, enable_idempotence=True)
    try:
        _kafka_python_send(kp, "idempotent", [(f"k{i % 3}", f"kafka-python {i}") for i in range(20)])
    finally:
        kp.close(10)

    async def aio() -> None:
        producer = await _aiokafka(broker, enable_idempotence=True)
        try:
            await _aiokafka_send(producer, "idempotent", [(f"k{i % 3}", f"aiokafka {i}") for i in range(20)])
        finally:
            await producer.stop()

    asyncio.run(aio())
    w.note("idempotent", "none", 80)


def _transactions(broker: KafkaBroker, w: Workload, topic: str, partitions: int) -> None:
    """Transactions of the three clients on ``topic``, interleaved: aiokafka's and confluent's are open at the same
    time, one aborts while the other commits, and plain writes fall between them."""
    rng = random.Random(4)
    plain = confluent_producer(broker, **SMALL_BATCHES)
    tx = confluent_producer(broker, transactional_id="kafkalog-confluent", **SMALL_BATCHES)
    tx.init_transactions(CLIENT_TIMEOUT_S)
    kp = _kafka_python(broker, transactional_id="kafkalog-kafka-python", batch_size=1024)
    kp.init_transactions()

    def batch(tag: str, n: int, key: str | None = None) -> list[tuple[Any, ...]]:
        return [(key if key is not None else f"{tag}-{i % 3}", f"{tag} {i} {_text(rng, i)[:200]}") for i in range(n)]

    async def interleaved() -> None:
        aio = await _aiokafka(broker, transactional_id="kafkalog-aiokafka", max_batch_size=1024)
        try:
            for p in range(partitions):
                # Committed by confluent-kafka, spanning segments.
                tx.begin_transaction()
                produce(tx, topic, batch(f"c-commit-{p}", 30), partition=p)
                tx.commit_transaction(CLIENT_TIMEOUT_S)
                # aiokafka opens a transaction; confluent-kafka opens one beside it and aborts it; plain writes
                # fall between; then aiokafka commits.
                await aio.begin_transaction()
                await _aiokafka_send(aio, topic, batch(f"a-commit-{p}", 12), partition=p)
                tx.begin_transaction()
                produce(tx, topic, batch(f"c-abort-{p}", 20), partition=p)
                produce(plain, topic, batch(f"plain-{p}", 6), partition=p)
                await _aiokafka_send(aio, topic, batch(f"a-commit-more-{p}", 12), partition=p)
                tx.abort_transaction(CLIENT_TIMEOUT_S)
                await aio.commit_transaction()
                # aiokafka aborts; kafka-python commits, then aborts.
                await aio.begin_transaction()
                await _aiokafka_send(aio, topic, batch(f"a-abort-{p}", 15), partition=p)
                await aio.abort_transaction()
                kp.begin_transaction()
                _kafka_python_send(kp, topic, batch(f"k-commit-{p}", 18), partition=p)
                kp.commit_transaction()
                kp.begin_transaction()
                _kafka_python_send(kp, topic, batch(f"k-abort-{p}", 18), partition=p)
                kp.abort_transaction()
                produce(plain, topic, batch(f"plain-end-{p}", 4), partition=p)
                w.note(topic, "none", 30 + 24 + 20 + 6 + 15 + 36 + 4)
        finally:
            await aio.stop()

    try:
        asyncio.run(interleaved())
    finally:
        kp.close(10)
        tx.flush(CLIENT_TIMEOUT_S)


def _log_append_time(broker: KafkaBroker, w: Workload) -> None:
    produce(confluent_producer(broker, compression_type="lz4"), "logappend",
            [(f"k{i}", f"stamped by the broker {i}") for i in range(20)])
    kp = _kafka_python(broker)
    try:
        _kafka_python_send(kp, "logappend", [(None, f"kafka-python {i}", None, 1_000_000 + i) for i in range(10)])
    finally:
        kp.close(10)
    w.note("logappend", "lz4", 20)
    w.note("logappend", "none", 10)


def _recompressed(broker: KafkaBroker, w: Workload) -> None:
    rng = random.Random(5)
    produce(confluent_producer(broker, compression_type="gzip"), "recompressed",
            [(f"k{i % 6}", _text(rng, i)) for i in range(20)])
    kp = _kafka_python(broker)
    try:
        _kafka_python_send(kp, "recompressed", [(f"k{i % 6}", _text(rng, i)) for i in range(10)])
    finally:
        kp.close(10)
    w.note("recompressed", "gzip", 20)
    w.note("recompressed", "none", 10)


def _compacted(broker: KafkaBroker, w: Workload) -> None:
    """Updates of 40 keys, tombstones for ten, a committed and an aborted transaction, then enough records for
    the segments holding all that to roll, so the cleaner may clean it."""
    rng = random.Random(6)
    produce(confluent_producer(broker, enable_idempotence=True, **SMALL_BATCHES), "compacted",
            [(f"k{i}", f"v1 {_text(rng, i)[:100]}") for i in range(40)])
    produce(confluent_producer(broker, compression_type="lz4", **SMALL_BATCHES), "compacted",
            [(f"k{i}", f"v2 {_text(rng, i)[:100]}") for i in range(20)])
    produce(confluent_producer(broker, **SMALL_BATCHES), "compacted", [(f"k{i}", None) for i in range(10)])
    tx = confluent_producer(broker, transactional_id="kafkalog-compacted", **SMALL_BATCHES)
    tx.init_transactions(CLIENT_TIMEOUT_S)
    tx.begin_transaction()
    produce(tx, "compacted", [(f"k{i}", f"committed {i}") for i in range(20, 25)])
    tx.commit_transaction(CLIENT_TIMEOUT_S)
    tx.begin_transaction()
    produce(tx, "compacted", [(f"k{i}", f"aborted {i}") for i in range(25, 30)])
    tx.abort_transaction(CLIENT_TIMEOUT_S)
    produce(confluent_producer(broker, compression_type="zstd", **SMALL_BATCHES), "compacted",
            [(f"tail-{i % 8}", f"tail {i} {_text(rng, i)[:150]}") for i in range(60)])
    w.note("compacted", "none", 40 + 10 + 5)
    w.note("compacted", "lz4", 20)
    w.note("compacted", "zstd", 60)


def produce_workload(broker: KafkaBroker) -> Workload:
    """Create :data:`TOPICS` and write all of the above into them."""
    create_topics(broker, TOPICS)
    w = Workload(partitions=[(name, p) for name, (count, _) in TOPICS.items() for p in range(count)])
    _plain(broker, w)
    _keyed(broker, w)
    _codecs(broker, w)
    _idempotent(broker, w)
    _transactions(broker, w, "txn", TOPICS["txn"][0])
    _log_append_time(broker, w)
    _recompressed(broker, w)
    _compacted(broker, w)
    return w


def _active_segment(broker: KafkaBroker, topic: str, partition: int) -> int:
    directory = broker.log_dir / f"{topic}-{partition}"
    return max(int(p.stem) for p in directory.glob("*.log"))


def _cleaner_checkpoint(broker: KafkaBroker, topic: str, partition: int) -> int | None:
    path = broker.log_dir / "cleaner-offset-checkpoint"
    try:
        lines = path.read_text().splitlines()[2:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) == 3 and fields[0] == topic and int(fields[1]) == partition:
            return int(fields[2])
    return None


def wait_until_cleaned(broker: KafkaBroker, topic: str, partition: int = 0, timeout: float = CLIENT_TIMEOUT_S) -> int:
    """Wait until the broker's cleaner has cleaned ``topic``'s partition up to its active segment (its checkpoint in
    ``cleaner-offset-checkpoint`` reaches the active segment's base offset); that offset."""
    deadline = time.monotonic() + timeout
    while True:
        active = _active_segment(broker, topic, partition)
        cleaned = _cleaner_checkpoint(broker, topic, partition)
        if active > 0 and cleaned == active:
            return active
        if time.monotonic() > deadline:
            raise BrokerError(f"the broker's cleaner did not clean {topic}-{partition} up to its active segment "
                              f"{active} in {timeout:.0f} s (its checkpoint: {cleaned})\n{broker.log_tail()}")
        time.sleep(0.1)
