"""Client scripts that run the same against any Kafka broker, each returning what its clients saw in a comparable shape.

:mod:`~tests.oracle.broker.test_client_scenarios` runs every scenario of :data:`SCENARIOS` against kafkalog's
broker and against a real Kafka broker and compares the two results with ``==``.  A scenario takes only a bootstrap
address and a prefix for the names it makes (so that it can run again on the same broker), and returns plain values:
lists, dicts, tuples, ints, bytes, strings and error names.  Nothing in a result depends on the broker's identity or
on the clock: no cluster, topic or member ids, no host names, no wall-clock timestamps (a LogAppendTime topic's
timestamps are reduced to "the broker's own, and never going back").

The three clients each do what they do best:

- kafka-python: produce and consume with every codec (its own batch builder and compressors), offsets for times,
  the beginning and end offsets, auto-created topics, and a consumer that must not reset an out-of-range offset;
- confluent-kafka (librdkafka): acks 0, 1 and all, null keys and values, headers without values; the consumer
  group with two members and the range assignor, committed offsets; the admin client (topics, configurations,
  partitions, records, groups) and its errors;
- aiokafka: a LogAppendTime topic;
- raw requests (:class:`~tests.support.kafka_wire.WireClient`): what no client lets a script do on purpose, such as
  committing offsets as a member the group does not know, or of a generation that is over.

Transactions: :func:`confluent_transactions` commits, aborts and sends offsets to a transaction, and compares what
read_committed and read_uncommitted consumers see, the control batches in the log, the last stable offset and the
group's committed offsets; what a read_committed consumer sees of non-transactional data is
:func:`confluent_read_committed`.

Every wait is bounded; a scenario that cannot finish raises :class:`ScenarioError` with what it was waiting for.
"""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkalog.config import LogConfig

from .broker import NODE_ID, quiet_logger
from .clients import Row, read_partitions

with warnings.catch_warnings():  # kafka-python's import trips a DeprecationWarning of importlib.resources
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    import kafka.errors

__all__ = ["BROKER_SETTINGS", "DEFAULTS_DIFFERING", "KAFKA_4_ONLY_TOPIC_CONFIGS", "REMOVED_IN_KAFKA_4", "SCENARIOS",
           "ScenarioError"]

#: The broker settings the scenarios need, the same on both brokers.
BROKER_SETTINGS: dict[str, str] = {
    "auto.create.topics.enable": "true",
    "num.partitions": "2",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    # topic defaults set in the broker's configuration (STATIC_BROKER_CONFIG in DescribeConfigs)
    "log.segment.bytes": str(512 * 1024 * 1024),
    "log.retention.hours": "200",
}
#: Topic configurations whose broker default differs between Kafka 4.4 and kafkalog (which follows Kafka 3.8),
#: and why; :func:`admin_topic_configs` compares every other configuration kafkalog's LogConfig knows.
DEFAULTS_DIFFERING: dict[str, str] = {
    "message.timestamp.after.max.ms": "Kafka 4.0 lowered the default from Long.MAX_VALUE to one hour (KIP-1030); "
                                      "kafkalog keeps 3.8's",
    "message.format.version": "removed in Kafka 4.0 (KIP-724): a 4.x broker writes only v2 batches and does not "
                              "describe it",
    "message.downconversion.enable": "removed in Kafka 4.0 (KIP-724: no down-conversion)",
    "message.timestamp.difference.max.ms": "removed in Kafka 4.0 (deprecated since 3.6, when KIP-937 split it into "
                                           "the before and after bounds)",
}
#: Topic configurations a Kafka 4.4 broker describes that kafkalog's LogConfig (Kafka 3.8's) does not have (added in
#: 3.9 and 4.x).
KAFKA_4_ONLY_TOPIC_CONFIGS: frozenset[str] = frozenset({
    "errors.deadletterqueue.group.enable", "max.decompressed.message.bytes", "remote.copy.lag.bytes",
    "remote.copy.lag.ms", "remote.log.copy.disable", "remote.log.delete.on.disable"})
#: LogConfig's configurations Kafka 4 removed (and so does not describe).
REMOVED_IN_KAFKA_4: frozenset[str] = frozenset({
    "message.format.version", "message.downconversion.enable", "message.timestamp.difference.max.ms"})
TIMEOUT_S = 30.0
CODECS = (None, "gzip", "snappy", "lz4", "zstd")
#: Producer timestamps of the CreateTime scenarios: the start of the hour before this one, the same for both brokers
#: of a run; in the past (Kafka 4 refuses timestamps more than an hour ahead) and recent (neither broker's retention
#: may delete what a scenario reads back).
BASE_TS = (int(time.time()) // 3600 - 1) * 3600 * 1000



class ScenarioError(AssertionError):
    """A scenario could not do what it does (a client failed, or a wait ran out)."""


# -- shared helpers ------------------------------------------------------------------------------------------------

def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap, "logger": quiet_logger()})


def _error_name(exc: BaseException) -> str:
    """The Kafka error a client raised, by name (confluent-kafka's ``KafkaError.name()``, kafka-python's class)."""
    from confluent_kafka import KafkaError, KafkaException
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return str(exc.args[0].name())
    return type(exc).__name__


def _outcome(future: Any) -> str:
    """``"ok"`` or the error name of an admin future."""
    try:
        future.result(TIMEOUT_S)
    except Exception as e:
        return _error_name(e)
    return "ok"


def _wait_for(what: str, check: Callable[[], Any], timeout: float = TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise ScenarioError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _fill_partitions(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """``per_partition`` records in each partition of ``topic``, valued ``b"<partition>-<i>"``, all delivered."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "logger": quiet_logger()})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, value=b"%d-%d" % (p, i), partition=p)
    if producer.flush(TIMEOUT_S):
        raise ScenarioError("not every record was delivered")


def _create_topics(bootstrap: str, topics: Mapping[str, tuple[int, Mapping[str, Any]]]) -> None:
    """Create the topics and wait until metadata names this node the leader of all their partitions (a KRaft
    broker learns of a new topic from its metadata log a moment after CreateTopics answers)."""
    from confluent_kafka.admin import NewTopic
    admin = _admin(bootstrap)
    futures = admin.create_topics([NewTopic(name, n, 1, config={k: str(v) for k, v in config.items()})
                                   for name, (n, config) in topics.items()], operation_timeout=TIMEOUT_S)
    for future in futures.values():
        future.result(TIMEOUT_S)
    _wait_for_leaders(bootstrap, {name: n for name, (n, _) in topics.items()})


def _wait_for_leaders(bootstrap: str, counts: Mapping[str, int]) -> None:
    """Wait until metadata names this node the leader of every partition, and the partitions answer ListOffsets (a
    KRaft broker's metadata can name the leader a moment before its replica manager leads the partition, and a
    write with acks=0 in that moment is lost without a word)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    admin = _admin(bootstrap)

    def led() -> bool:
        topics = admin.list_topics(timeout=10).topics
        return all(name in topics and topics[name].error is None and len(topics[name].partitions) == n
                   and all(p.leader == NODE_ID and p.error is None for p in topics[name].partitions.values())
                   for name, n in counts.items())

    def answering() -> bool:
        futures = admin.list_offsets({TopicPartition(name, p): OffsetSpec.latest()
                                      for name, n in counts.items() for p in range(n)})
        return all(_outcome(f) == "ok" for f in futures.values())
    _wait_for(f"leaders of {sorted(counts)}", led)
    _wait_for(f"the partitions of {sorted(counts)} to answer", answering)


def _records(n: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int]]:
    """``n`` records: keys (every fourth null, unless the value is), values (every third null, every fifth
    empty), headers (a repeated name), producer timestamps (every sixth going back a second)."""
    out = []
    for i in range(n):
        key = None if i % 4 == 3 and i % 3 != 2 else b"key-%d" % i  # clients refuse both null
        value = None if i % 3 == 2 else (b"" if i % 5 == 4 else b"value-%d-" % i + b"x" * (i * 7 % 50))
        headers = [("h", b"%d" % i), ("h", b"again")] if i % 2 else []
        ts = BASE_TS + i * 10 - (1000 if i % 6 == 5 else 0)
        out.append((key, value, headers, ts))
    return out


def _kafka_python_consume(bootstrap: str, topic: str, partitions: Iterable[int], count: int) -> list[Row]:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [kafka.TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        rows: list[Row] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(rows) < count:
            if time.monotonic() > deadline:
                raise ScenarioError(f"kafka-python read {len(rows)} of {count} records of {topic}")
            for messages in consumer.poll(timeout_ms=500).values():
                rows.extend(Row(m.offset, m.timestamp_type, m.timestamp, m.key, m.value, tuple(m.headers))
                            for m in messages)
        return rows
    finally:
        consumer.close()


def _confluent_consume(bootstrap: str, tps: Iterable[tuple[str, int]], *, isolation: str = "read_uncommitted",
                       start: int | None = None) -> dict[tuple[str, int], list[Row]]:
    """Everything from ``start`` (the beginning) to the end of each partition, read with assign()."""
    return read_partitions(bootstrap, tps, isolation=isolation, start=start, timeout=TIMEOUT_S, failure=ScenarioError)


# -- produce and consume -------------------------------------------------------------------------------------------

def kafka_python_codecs(bootstrap: str, prefix: str) -> dict[str, Any]:
    """kafka-python writes the same records with each codec (acks=all) to a CreateTime topic, and reads them back:
    the offsets and timestamps the produce answers gave, and every record's offset, timestamp type, timestamp, key,
    value and headers."""
    topics = {f"{prefix}kp-{codec}": (1, {"message.timestamp.type": "CreateTime"}) for codec in CODECS}
    _create_topics(bootstrap, topics)
    result: dict[str, Any] = {}
    records = _records(30)
    for codec in CODECS:
        topic = f"{prefix}kp-{codec}"
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec,
                                       linger_ms=20, batch_size=2048)
        try:
            futures = [producer.send(topic, key=k, value=v, headers=h, timestamp_ms=ts) for k, v, h, ts in records]
            producer.flush(TIMEOUT_S)
            sent = [(m.offset, m.timestamp) for m in (f.get(TIMEOUT_S) for f in futures)]
        finally:
            producer.close()
        result[str(codec)] = {"sent": sent, "read": _kafka_python_consume(bootstrap, topic, [0], len(records))}
    return result


def confluent_acks(bootstrap: str, prefix: str) -> dict[str, Any]:
    """confluent-kafka writes with acks 0, 1 and all (and a codec each) to a partition each, then reads all three:
    what the delivery reports said (offsets; acks=0 gets none from the broker), the records, the end offsets."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    topic = f"{prefix}ck-acks"
    _create_topics(bootstrap, {topic: (3, {})})
    records = _records(20)
    reports: dict[str, list[Any]] = {}
    for partition, (acks, codec) in enumerate((("0", "gzip"), ("1", "lz4"), ("all", "zstd"))):
        producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "compression.type": codec,
                             "linger.ms": 20, "logger": quiet_logger()})
        got: list[Any] = []
        for key, value, headers, ts in records:
            producer.produce(topic, key=key, value=value, headers=[*headers, ("none", None)], timestamp=ts,
                             partition=partition,
                             on_delivery=lambda err, msg, got=got: got.append(err.name() if err else msg.offset()))
        if producer.flush(TIMEOUT_S):
            raise ScenarioError(f"acks={acks}: not every record was delivered")
        reports[acks] = got
    read = _confluent_consume(bootstrap, [(topic, p) for p in range(3)])
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}unused", "logger": quiet_logger()})
    try:
        watermarks = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(3)]
    finally:
        consumer.close()
    return {"reports": reports, "read": [read[(topic, p)] for p in range(3)], "watermarks": watermarks}


def confluent_read_committed(bootstrap: str, prefix: str) -> dict[str, Any]:
    """A read_committed consumer of records written outside transactions (by an idempotent producer) sees what a
    read_uncommitted one sees, up to the same end; ListOffsets gives the same latest offset at both levels."""
    from confluent_kafka import IsolationLevel, Producer, TopicPartition
    from confluent_kafka.admin import OffsetSpec
    topic = f"{prefix}ck-committed"
    _create_topics(bootstrap, {topic: (1, {})})
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "logger": quiet_logger()})
    for key, value, headers, ts in _records(15):
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts)
    if producer.flush(TIMEOUT_S):
        raise ScenarioError("not every record was delivered")
    views = {level: _confluent_consume(bootstrap, [(topic, 0)], isolation=level)[(topic, 0)]
             for level in ("read_uncommitted", "read_committed")}
    admin = _admin(bootstrap)
    latest = {}
    for name, level in (("uncommitted", IsolationLevel.READ_UNCOMMITTED),
                        ("committed", IsolationLevel.READ_COMMITTED)):
        futures = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()}, isolation_level=level)
        latest[name] = [f.result(TIMEOUT_S).offset for f in futures.values()]
    return {"views": views, "latest": latest}


def aiokafka_log_append_time(bootstrap: str, prefix: str) -> dict[str, Any]:
    """aiokafka writes to a LogAppendTime topic with producer timestamps the broker must replace: the offsets, keys
    and values read back; that every timestamp is the broker's (not the producer's, within the run's wall-clock
    window, never going back) and that the produce answer's timestamp is the one stored."""
    import aiokafka
    topic = f"{prefix}aio-logappend"
    _create_topics(bootstrap, {topic: (1, {"message.timestamp.type": "LogAppendTime"})})
    records = [r for r in _records(14) if r[0] is not None or r[1] is not None][:12]  # aiokafka needs one

    async def run() -> tuple[list[Any], list[Any]]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="snappy", linger_ms=5)
        await producer.start()
        try:
            sent = []
            for i in range(0, len(records), 4):  # three batches, so that the broker stamps three times
                futures = [await producer.send(topic, key=k, value=v, headers=h, timestamp_ms=ts, partition=0)
                           for k, v, h, ts in records[i:i + 4]]
                sent.extend([await f for f in futures])
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = aiokafka.TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got: list[Any] = []
            while len(got) < len(records):
                batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500), TIMEOUT_S)
                for messages in batches.values():
                    got.extend(messages)
            return sent, got
        finally:
            await consumer.stop()

    before = int(time.time() * 1000)
    sent, got = asyncio.run(run())
    after = int(time.time() * 1000)
    stamps = [m.timestamp for m in got]
    return {
        "offsets": [m.offset for m in sent],
        "answer_types": [m.timestamp_type for m in sent],
        "read": [(m.offset, m.timestamp_type, m.key, m.value, list(m.headers)) for m in got],
        "broker_stamped": all(before - 1000 <= ts <= after + 1000 for ts in stamps),
        "non_decreasing": stamps == sorted(stamps),
        "answer_is_stored": [m.timestamp for m in sent] == stamps,
    }


# -- offsets -------------------------------------------------------------------------------------------------------

def kafka_python_offsets(bootstrap: str, prefix: str) -> dict[str, Any]:
    """kafka-python's offsets_for_times (before, at, between and after the records' timestamps, including one that
    went back), beginning and end offsets, before and after DeleteRecords moves the log start offset."""
    topic = f"{prefix}kp-times"
    _create_topics(bootstrap, {topic: (1, {})})
    stamps = [BASE_TS + s for s in (1000, 2000, 3000, 2500, 5000, 6000, 6000, 7000)]
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks=1)
    try:
        for i, ts in enumerate(stamps):  # one batch each: a batch's index entry is its largest timestamp
            producer.send(topic, value=b"%d" % i, timestamp_ms=ts).get(TIMEOUT_S)
    finally:
        producer.close()
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap)
    tp = kafka.TopicPartition(topic, 0)
    targets = [BASE_TS + t for t in (0, 1000, 1500, 2500, 2600, 6000, 7000, 7001)]

    def lookups() -> list[Any]:
        found = [consumer.offsets_for_times({tp: t})[tp] for t in targets]
        return [None if f is None else (f.offset, f.timestamp) for f in found]
    try:
        result: dict[str, Any] = {"times": lookups(), "beginning": consumer.beginning_offsets([tp])[tp],
                                  "end": consumer.end_offsets([tp])[tp]}
        admin = _admin(bootstrap)  # kept until its future is done: a destroyed client fails them
        deleted = admin.delete_records([_confluent_tp(topic, 0, 3)])
        result["low_watermark"] = next(iter(deleted.values())).result(TIMEOUT_S).low_watermark
        result["times_after_delete"] = lookups()
        result["beginning_after_delete"] = consumer.beginning_offsets([tp])[tp]
        result["end_after_delete"] = consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()
    return result


def _confluent_tp(topic: str, partition: int, offset: int) -> Any:
    from confluent_kafka import TopicPartition
    return TopicPartition(topic, partition, offset)


# -- metadata ------------------------------------------------------------------------------------------------------

def auto_created_topics(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Topics created by a metadata request that names them (and by a kafka-python producer's), a name metadata
    refuses, and one it is told not to create.

    kafkalog's metadata answers a topic it creates at once; Kafka's KRaft broker answers with an error until its
    controller has made the topic (LEADER_NOT_AVAILABLE in 3.x, UNKNOWN_TOPIC_OR_PARTITION in 4.4: the difference
    :mod:`kafkalog.broker.metadata`'s docstring gives): the request is repeated until the answer has no error, and
    only that answer is compared.
    """
    from kio.schema.errors import ErrorCode
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    from tests.support.kafka_wire import WireClient

    def ask(client: WireClient, name: str, create: bool) -> Any:
        request = MetadataRequest(topics=(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=name),),
                                  allow_auto_topic_creation=create, include_topic_authorized_operations=False)
        return client.request(request)[1].topics[0]

    def settled(client: WireClient, name: str) -> Any:
        return _wait_for(f"metadata of {name}", lambda: (t := ask(client, name, True)).error_code is ErrorCode.none
                         and t)

    result: dict[str, Any] = {}
    with WireClient(bootstrap) as client:
        created = settled(client, f"{prefix}auto")
        result["created"] = (created.error_code.name, created.is_internal,
                             sorted((p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
                                    for p in created.partitions))
        again = ask(client, f"{prefix}auto", True)
        result["again"] = (again.error_code.name, len(again.partitions))
        result["not_created"] = ask(client, f"{prefix}no-auto", False).error_code.name
        result["invalid_name"] = ask(client, f"{prefix}bad name!", True).error_code.name
        result["too_long"] = ask(client, "x" * 250, True).error_code.name
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        sent = producer.send(f"{prefix}auto-produce", key=b"k", value=b"v", partition=1).get(TIMEOUT_S)
        result["produced"] = (sent.partition, sent.offset)
        result["partitions"] = sorted(producer.partitions_for(f"{prefix}auto-produce"))
    finally:
        producer.close()
    return result


# -- consumer groups -----------------------------------------------------------------------------------------------

def confluent_group(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Two confluent-kafka members of a group with the range assignor share a four-partition topic; they commit
    offsets (with metadata); the offsets are fetched by a member and by the admin client; the group is described
    and listed while it has members and after they left; it cannot be deleted while it has members, can be after,
    and is gone then."""
    from confluent_kafka import Consumer, ConsumerGroupState, TopicPartition
    topic, group = f"{prefix}grouped", f"{prefix}group"
    _create_topics(bootstrap, {topic: (4, {})})
    _fill_partitions(bootstrap, topic, 4, 6)
    assigned: dict[str, set[int]] = {"a": set(), "b": set()}

    def member(name: str) -> Any:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"member-{name}",
                             "session.timeout.ms": 10000, "heartbeat.interval.ms": 300,
                             "partition.assignment.strategy": "range", "enable.auto.commit": False,
                             "auto.offset.reset": "earliest", "logger": quiet_logger()})

        def on_assign(_c: Any, partitions: list[Any]) -> None:
            assigned[name] = {p.partition for p in partitions}

        def on_revoke(_c: Any, _partitions: list[Any]) -> None:
            assigned[name] = set()
        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        return consumer

    members = {"a": member("a"), "b": member("b")}
    read: dict[int, list[bytes]] = {p: [] for p in range(4)}

    def balanced() -> bool:
        for consumer in members.values():
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                read[message.partition()].append(message.value())
        return len(assigned["a"]) == 2 and len(assigned["b"]) == 2 and not assigned["a"] & assigned["b"]

    admin = _admin(bootstrap)
    result: dict[str, Any] = {}
    try:
        _wait_for("two members sharing the partitions", balanced)
        result["assignment"] = sorted(sorted(parts) for parts in assigned.values())
        for name, consumer in members.items():
            consumer.commit(offsets=[TopicPartition(topic, p, 2 + p, metadata=f"by-{p}")
                                     for p in sorted(assigned[name])], asynchronous=False)
        committed = members["a"].committed([TopicPartition(topic, p) for p in range(4)], timeout=10)
        result["committed"] = [(c.partition, c.offset, c.metadata, c.error) for c in committed]
        result["described"] = _describe_group(admin, group)
        result["listed"] = _list_groups(admin, prefix)
        result["delete_while_active"] = _outcome(admin.delete_consumer_groups([group])[group])
    finally:
        for consumer in members.values():
            consumer.close()
    listed = admin.list_consumer_group_offsets([_group_request(group, topic)])[group].result(TIMEOUT_S)
    result["fetched"] = sorted((tp.partition, tp.offset, tp.metadata) for tp in listed.topic_partitions)
    result["described_empty"] = _describe_group(admin, group)
    result["listed_empty"] = _list_groups(admin, prefix, [ConsumerGroupState.EMPTY])
    result["deleted"] = _outcome(admin.delete_consumer_groups([group])[group])
    result["deleted_again"] = _outcome(admin.delete_consumer_groups([group])[group])
    result["listed_after"] = _list_groups(admin, prefix)
    return result


def _group_request(group: str, topic: str) -> Any:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    return ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(4)])


def _describe_group(admin: Any, group: str) -> dict[str, Any]:
    described = admin.describe_consumer_groups([group])[group].result(TIMEOUT_S)
    return {
        "simple": described.is_simple_consumer_group,
        "state": described.state.name,
        "assignor": described.partition_assignor,
        "coordinator": described.coordinator.id,
        "members": sorted((m.client_id, m.group_instance_id,
                           sorted(tp.partition for tp in m.assignment.topic_partitions)) for m in described.members),
    }


def _list_groups(admin: Any, prefix: str, states: list[Any] | None = None) -> list[Any]:
    listed = admin.list_consumer_groups(**({"states": set(states)} if states else {})).result(TIMEOUT_S)
    return sorted((g.group_id, g.is_simple_consumer_group, g.state.name) for g in listed.valid
                  if g.group_id.startswith(prefix))


def _subscription(topics: list[str]) -> bytes:
    """A ConsumerProtocolSubscription v0 (the ``consumer`` protocol's member metadata): its topics, no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


def group_request_errors(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Raw group requests: a member joins (KIP-394's two rounds) and syncs; then offsets are committed as that member,
    as a member the group does not know and with a generation that is not the group's; heartbeats the same; the
    offsets fetched; the member leaves; a leave of an unknown member."""
    from kio.schema.errors import ErrorCode
    from kio.schema.heartbeat.v4.request import HeartbeatRequest
    from kio.schema.join_group.v7.request import JoinGroupRequest, JoinGroupRequestProtocol
    from kio.schema.leave_group.v4.request import LeaveGroupRequest, MemberIdentity
    from kio.schema.offset_commit.v8.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )
    from kio.schema.offset_fetch.v7.request import OffsetFetchRequest, OffsetFetchRequestTopic
    from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
    from kio.static.primitive import i32, i32Timedelta, i64

    from tests.support.kafka_wire import WireClient

    topic, group = f"{prefix}raw-grouped", f"{prefix}raw-group"
    _create_topics(bootstrap, {topic: (1, {})})
    join = {"group_id": group, "session_timeout": i32Timedelta.parse(_ms(10000)),
            "rebalance_timeout": i32Timedelta.parse(_ms(10000)), "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": (JoinGroupRequestProtocol(name="range", metadata=_subscription([topic])),)}

    def commit(client: WireClient, member: str, generation: int, offset: int) -> str:
        request = OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=i32(generation), member_id=member,
            group_instance_id=None, topics=(OffsetCommitRequestTopic(name=topic, partitions=(
                OffsetCommitRequestPartition(partition_index=i32(0), committed_offset=i64(offset),
                                             committed_leader_epoch=i32(-1), committed_metadata="m"),)),))
        return str(client.request(request)[1].topics[0].partitions[0].error_code.name)

    def heartbeat(client: WireClient, member: str, generation: int) -> str:
        return str(client.request(HeartbeatRequest(group_id=group, generation_id=i32(generation), member_id=member,
                                                   group_instance_id=None))[1].error_code.name)

    def fetch(client: WireClient) -> Any:
        response = client.request(OffsetFetchRequest(group_id=group, topics=(
            OffsetFetchRequestTopic(name=topic, partition_indexes=(i32(0),)),), require_stable=False))[1]
        p = response.topics[0].partitions[0]
        return (response.error_code.name, p.committed_offset, p.metadata, p.error_code.name)

    result: dict[str, Any] = {}
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        first = client.request(JoinGroupRequest(member_id="", **join))[1]
        result["join_first"] = first.error_code.name
        if first.error_code is not ErrorCode.member_id_required:
            raise ScenarioError(f"the first join answered {first.error_code.name}")
        member = first.member_id
        joined = client.request(JoinGroupRequest(member_id=member, **join))[1]
        generation = int(joined.generation_id)
        result["join"] = (joined.error_code.name, generation, joined.protocol_type, joined.protocol_name,
                          joined.leader == member, len(joined.members))
        synced = client.request(SyncGroupRequest(
            group_id=group, generation_id=i32(generation), member_id=member, group_instance_id=None,
            protocol_type="consumer", protocol_name="range",
            assignments=(SyncGroupRequestAssignment(member_id=member, assignment=b""),)))[1]
        result["sync"] = (synced.error_code.name, synced.protocol_type, synced.protocol_name, synced.assignment)
        result["commit"] = commit(client, member, generation, 5)
        result["commit_unknown_member"] = commit(client, "not-a-member", generation, 6)
        result["commit_illegal_generation"] = commit(client, member, generation + 1, 7)
        result["commit_old_generation"] = commit(client, member, generation - 1, 8)
        result["heartbeat"] = heartbeat(client, member, generation)
        result["heartbeat_unknown_member"] = heartbeat(client, "not-a-member", generation)
        result["heartbeat_illegal_generation"] = heartbeat(client, member, generation + 1)
        result["fetched"] = fetch(client)
        left = client.request(LeaveGroupRequest(group_id=group, members=(
            MemberIdentity(member_id=member, group_instance_id=None),
            MemberIdentity(member_id="not-a-member", group_instance_id=None))))[1]
        result["leave"] = (left.error_code.name, [m.error_code.name for m in left.members])
        result["commit_after_leave"] = commit(client, member, generation, 9)
        result["commit_as_simple_consumer"] = commit(client, "", -1, 10)
        result["fetched_after"] = fetch(client)
    return result


def _ms(ms: int) -> Any:
    import datetime
    return datetime.timedelta(milliseconds=ms)


# -- admin ---------------------------------------------------------------------------------------------------------

def admin_topic_configs(bootstrap: str, prefix: str) -> dict[str, Any]:
    """A topic created with configuration overrides, and one without: the value, source and default flag of every
    configuration kafkalog's LogConfig knows (except :data:`DEFAULTS_DIFFERING`), as DescribeConfigs gives them;
    then an incremental alter and the values after it."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    plain, tuned = f"{prefix}cfg-plain", f"{prefix}cfg-tuned"
    overrides = {"cleanup.policy": "compact", "retention.ms": "3600000", "max.message.bytes": "2000000",
                 "min.cleanable.dirty.ratio": "0.2", "compression.type": "zstd", "segment.bytes": "1048576",
                 "message.timestamp.type": "LogAppendTime"}
    _create_topics(bootstrap, {plain: (1, {}), tuned: (1, overrides)})
    admin = _admin(bootstrap)
    known = set(LogConfig().to_props()) - set(DEFAULTS_DIFFERING)

    def described(topic: str) -> dict[str, Any]:
        resource = ConfigResource("topic", topic)
        entries = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
        return {name: (entry.value, entry.source, entry.is_default, entry.is_read_only, entry.is_sensitive)
                for name, entry in sorted(entries.items()) if name in known}

    resource = ConfigResource("topic", plain)
    names = set(admin.describe_configs([resource])[resource].result(TIMEOUT_S))
    everything = set(LogConfig().to_props())
    result: dict[str, Any] = {"names_beyond_logconfig": sorted(names - everything),
                              "logconfig_names_missing": sorted(everything - names),
                              "plain": described(plain), "tuned": described(tuned),
                              "raw_plain": _raw_describe_configs(bootstrap, plain, known),
                              "raw_tuned": _raw_describe_configs(bootstrap, tuned, known),
                              "raw_created": _raw_create_topic_configs(
                                  bootstrap, f"{prefix}cfg-raw", {"cleanup.policy": "compact,delete",
                                                                  "retention.ms": "3600000"}, known)}
    resource = ConfigResource("topic", tuned, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("compression.type", None, incremental_operation=AlterConfigOpType.DELETE)])
    result["altered"] = _outcome(admin.incremental_alter_configs([resource])[resource])
    # A KRaft broker describes the change once its metadata log has it, a moment after the controller answered.
    result["tuned_after"] = _wait_for("the altered configuration", lambda: (
        (found := described(tuned))["retention.ms"][0] == "7200000" and found["compression.type"][1] != 1 and found))
    return result


def _raw_describe_configs(bootstrap: str, topic: str, known: set[str]) -> list[Any]:
    """DescribeConfigs v4 of ``topic`` with synonyms: each known configuration's value, source, flags, type and
    synonyms (name, value, source), as the broker sends them (confluent-kafka keys synonyms by name, which hides a
    name listed twice)."""
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
    from kio.static.primitive import i8

    from tests.support.kafka_wire import WireClient
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        request = DescribeConfigsRequest(resources=(DescribeConfigsResource(
            resource_type=i8(2), resource_name=topic, configuration_keys=None),), include_synonyms=True,
            include_documentation=False)
        answer = client.request(request)[1].results[0]
    return [answer.error_code.name] + [
        (c.name, c.value, c.read_only, c.config_source, c.is_sensitive, c.config_type,
         [(s.name, s.value, s.source) for s in c.synonyms])
        for c in sorted(answer.configs, key=lambda c: c.name) if c.name in known]


def _raw_create_topic_configs(bootstrap: str, topic: str, overrides: Mapping[str, str], known: set[str]) -> Any:
    """CreateTopics v7 of a topic with ``overrides``: the answer's partitions, replication factor and configs
    (name, value, read-only, source, sensitive), those kafkalog knows."""
    from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
    from kio.static.primitive import i16, i32, i32Timedelta

    from tests.support.kafka_wire import WireClient
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        request = CreateTopicsRequest(topics=(CreatableTopic(
            name=topic, num_partitions=i32(3), replication_factor=i16(-1), assignments=(),
            configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in overrides.items())),),
            timeout=i32Timedelta.parse(_ms(10000)), validate_only=False)
        answer = client.request(request)[1].topics[0]
    return (answer.error_code.name, answer.num_partitions, answer.replication_factor, answer.topic_config_error_code,
            sorted((c.name, c.value, c.read_only, c.config_source, c.is_sensitive) for c in answer.configs or ()
                   if c.name in known))


def admin_partitions_records_topics(bootstrap: str, prefix: str) -> dict[str, Any]:
    """CreatePartitions grows a topic, DeleteRecords moves its log start offset, DeleteTopics removes it."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import NewPartitions
    topic = f"{prefix}grow"
    _create_topics(bootstrap, {topic: (2, {})})
    admin = _admin(bootstrap)
    result: dict[str, Any] = {"grown": _outcome(admin.create_partitions([NewPartitions(topic, 5)])[topic])}
    _wait_for_leaders(bootstrap, {topic: 5})
    result["partitions"] = sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "logger": quiet_logger()})
    for i in range(10):
        producer.produce(topic, value=b"%d" % i, partition=4)
    if producer.flush(TIMEOUT_S):
        raise ScenarioError("not every record was delivered")
    deleted = admin.delete_records([TopicPartition(topic, 4, 6)])
    result["low_watermark"] = next(iter(deleted.values())).result(TIMEOUT_S).low_watermark
    deleted = admin.delete_records([TopicPartition(topic, 4, -1)])  # -1: up to the high watermark
    result["low_watermark_all"] = next(iter(deleted.values())).result(TIMEOUT_S).low_watermark
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}unused", "logger": quiet_logger()})
    try:
        result["watermarks"] = consumer.get_watermark_offsets(TopicPartition(topic, 4), timeout=10)
    finally:
        consumer.close()
    result["deleted"] = _outcome(admin.delete_topics([topic], operation_timeout=TIMEOUT_S)[topic])
    result["gone"] = _wait_for(f"{topic} to go", lambda: topic not in admin.list_topics(timeout=10).topics)
    return result


def admin_mistakes(bootstrap: str, prefix: str) -> dict[str, Any]:
    """What the admin client reports for the usual mistakes: a topic that exists, an invalid name, three replicas on
    one broker, no partitions, a bad configuration value and an unknown one, fewer partitions than a topic has,
    deleting or describing a topic that does not exist, deleting records past the end."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import ConfigResource, NewPartitions, NewTopic
    topic = f"{prefix}exists"
    _create_topics(bootstrap, {topic: (2, {})})
    admin = _admin(bootstrap)

    def create(new: Any) -> str:
        return _outcome(admin.create_topics([new], operation_timeout=TIMEOUT_S)[new.topic])

    result = {
        "exists": create(NewTopic(topic, 1, 1)),
        "invalid_name": create(NewTopic(f"{prefix}bad/name", 1, 1)),
        "dot_name": create(NewTopic(".", 1, 1)),
        "replication_3": create(NewTopic(f"{prefix}rf3", 1, 3)),
        "bad_config": create(NewTopic(f"{prefix}badcfg", 1, 1, config={"retention.ms": "soon"})),
        "unknown_config": create(NewTopic(f"{prefix}unkcfg", 1, 1, config={"no.such.config": "1"})),
        "fewer_partitions": _outcome(admin.create_partitions([NewPartitions(topic, 1)])[topic]),
        "same_partitions": _outcome(admin.create_partitions([NewPartitions(topic, 2)])[topic]),
        "grow_unknown": _outcome(admin.create_partitions([NewPartitions(f"{prefix}nope", 3)])[f"{prefix}nope"]),
        "delete_unknown": _outcome(admin.delete_topics([f"{prefix}nope"], operation_timeout=TIMEOUT_S)[
            f"{prefix}nope"]),
    }
    resource = ConfigResource("topic", f"{prefix}nope")
    result["describe_unknown"] = _outcome(admin.describe_configs([resource])[resource])
    deleted = admin.delete_records([TopicPartition(topic, 0, 100)])
    result["delete_records_past_end"] = _outcome(next(iter(deleted.values())))
    result["zero_partitions"] = _raw_create_topic(bootstrap, f"{prefix}zero", 0, 1)
    result["negative_replication"] = _raw_create_topic(bootstrap, f"{prefix}negrf", 1, 0)
    result["listed"] = sorted(t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix))
    return result


def _raw_create_topic(bootstrap: str, name: str, partitions: int, replication: int) -> str:
    """CreateTopics v7 as a client that does not check its arguments sends it (librdkafka refuses 0 partitions)."""
    from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
    from kio.static.primitive import i16, i32, i32Timedelta

    from tests.support.kafka_wire import WireClient
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        request = CreateTopicsRequest(topics=(CreatableTopic(name=name, num_partitions=i32(partitions),
                                                             replication_factor=i16(replication), assignments=(),
                                                             configs=()),),
                                      timeout=i32Timedelta.parse(_ms(10000)), validate_only=False)
        return str(client.request(request)[1].topics[0].error_code.name)


def produce_unknown_topic(bootstrap: str, prefix: str) -> dict[str, Any]:
    """A producer that may not create topics (``allow.auto.create.topics=false``, so its metadata requests do not
    ask for one) writes to a topic that does not exist: the error confluent-kafka reports, and the code a raw
    Produce request gets.  (kafka-python 3.0's producer does not pass its ``allow_auto_create_topics`` on to the
    metadata requests it sends, so it creates the topic on either broker: it is left out.)"""
    from confluent_kafka import Producer
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kio.static.primitive import i16, i32, i32Timedelta

    from kafkalog.record import MemoryRecords
    from tests.support.kafka_wire import WireClient
    result: dict[str, Any] = {}
    reports: list[str] = []
    confluent = Producer({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False,
                          "topic.metadata.propagation.max.ms": 1000, "message.timeout.ms": 5000,
                          "logger": quiet_logger()})
    confluent.produce(f"{prefix}missing-ck", value=b"v",
                      on_delivery=lambda err, _msg: reports.append(err.name() if err else "ok"))
    confluent.flush(TIMEOUT_S)
    result["confluent"] = reports
    batch = bytes(MemoryRecords.with_records([(b"k", b"v", BASE_TS)]).buffer)
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        request = ProduceRequest(transactional_id=None, acks=i16(-1), timeout=i32Timedelta.parse(_ms(5000)),
                                 topic_data=(TopicProduceData(name=f"{prefix}missing-raw", partition_data=(
                                     PartitionProduceData(index=i32(0), records=batch),)),))
        answer = client.request(request)[1].responses[0].partition_responses[0]
        result["raw"] = (answer.error_code.name, answer.base_offset)
    return result


def fetch_out_of_range(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Consumers that may not reset an offset past the end: kafka-python (``auto_offset_reset='none'``) raises,
    confluent-kafka (``auto.offset.reset=error``) reports an error; a raw Fetch gets OFFSET_OUT_OF_RANGE."""
    from confluent_kafka import Consumer, TopicPartition
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
    from kio.static.primitive import i8, i32, i32Timedelta, i64

    from tests.support.kafka_wire import WireClient
    topic = f"{prefix}range"
    _create_topics(bootstrap, {topic: (1, {})})
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i in range(5):
            producer.send(topic, value=b"%d" % i, partition=0)
        producer.flush(TIMEOUT_S)
    finally:
        producer.close()
    result: dict[str, Any] = {}
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="none", enable_auto_commit=False)
    tp = kafka.TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 50)
        deadline = time.monotonic() + TIMEOUT_S
        while "kafka_python" not in result:
            if time.monotonic() > deadline:
                raise ScenarioError("kafka-python did not report the offset out of range")
            try:
                consumer.poll(timeout_ms=200)
            except kafka.errors.OffsetOutOfRangeError as e:
                result["kafka_python"] = (type(e).__name__, {(t.topic, t.partition): o for t, o in e.args[0].items()}
                                          if e.args and isinstance(e.args[0], dict) else None)
    finally:
        consumer.close()
    confluent = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}range", "auto.offset.reset": "error",
                          "enable.auto.commit": False, "logger": quiet_logger()})
    try:
        confluent.assign([TopicPartition(topic, 0, 50)])
        deadline = time.monotonic() + TIMEOUT_S
        while "confluent" not in result:
            if time.monotonic() > deadline:
                raise ScenarioError("confluent-kafka did not report the offset out of range")
            message = confluent.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is None:
                raise ScenarioError(f"confluent-kafka read offset {message.offset()} of 5")
            # the first error is compared, whatever it is (_AUTO_OFFSET_RESET, saying the broker's error)
            result["confluent"] = (error.name(), message.partition(), "Broker: Offset out of range" in error.str())
    finally:
        confluent.close()
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        for name, partition, offset in (("raw_past_end", 0, 50), ("raw_negative", 0, -5), ("raw_at_end", 0, 5),
                                        ("raw_unknown_partition", 7, 0)):
            request = FetchRequest(
                replica_id=i32(-1), max_wait=i32Timedelta.parse(_ms(0)), min_bytes=i32(0), max_bytes=i32(1 << 20),
                isolation_level=i8(0), session_id=i32(0), session_epoch=i32(-1), topics=(FetchTopic(
                    topic=topic, partitions=(FetchPartition(partition=i32(partition), current_leader_epoch=i32(-1),
                                                            fetch_offset=i64(offset), last_fetched_epoch=i32(-1),
                                                            log_start_offset=i64(-1),
                                                            partition_max_bytes=i32(1 << 20)),)),),
                forgotten_topics_data=(), rack_id="")
            p = client.request(request)[1].responses[0].partitions[0]
            result[name] = (p.error_code.name, p.high_watermark, p.last_stable_offset, p.log_start_offset, p.records)
    return result


# -- more produce, offsets and metadata ----------------------------------------------------------------------------

def _raw_produce(client: Any, topic: str, partition: int, records: bytes, acks: int = -1) -> tuple[Any, ...]:
    """One Produce v9 of ``records`` to ``topic``'s ``partition``: the partition's code, base offset, log start
    offset, the indexes of the records refused (KIP-467) and whether an error message came (its words are the
    broker's own)."""
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kio.static.primitive import i16, i32, i32Timedelta
    request = ProduceRequest(transactional_id=None, acks=i16(acks), timeout=i32Timedelta.parse(_ms(5000)),
                             topic_data=(TopicProduceData(name=topic, partition_data=(
                                 PartitionProduceData(index=i32(partition), records=records),)),))
    answer = client.request(request)[1].responses[0].partition_responses[0]
    return (answer.error_code.name, answer.base_offset, answer.log_start_offset,
            [e.batch_index for e in answer.record_errors], answer.error_message is not None)


def _acks_0_closes(bootstrap: str, topic: str, partition: int, records: bytes) -> str:
    """Whether the broker closes the connection after a Produce with acks=0 (Kafka does when a partition failed:
    nothing else would tell the client)."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kio.static.primitive import i16, i32, i32Timedelta

    from tests.support.kafka_wire import WireClient
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        client.send_raw(client.frame(ProduceRequest(
            transactional_id=None, acks=i16(0), timeout=i32Timedelta.parse(_ms(5000)), topic_data=(TopicProduceData(
                name=topic, partition_data=(PartitionProduceData(index=i32(partition), records=records),)),))))
        try:
            client.request(ApiVersionsRequest(client_software_name="scenario", client_software_version="1"))
        except ConnectionError:
            return "closed"
    return "open"


def raw_produce_mistakes(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Produce requests a client library would not send: a good one first; then acks 2 (alone, and with a partition
    that does not exist or records that are not one batch, which are found first), a partition the topic does not
    have, a batch whose CRC is wrong, two batches in one partition's records, a v1 message set, a batch larger
    than the topic's ``max.message.bytes``, a timestamp further ahead than ``message.timestamp.after.max.ms``
    allows, and a write to ``__consumer_offsets``; and whether the connection stays open after a Produce with acks=0
    that succeeded and after ones that failed."""
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
    from kio.static.primitive import i8

    from kafkalog.record import MemoryRecords
    from tests.support.kafka_wire import WireClient
    topic = f"{prefix}raw-produce"
    _create_topics(bootstrap, {topic: (1, {"max.message.bytes": "2000", "message.timestamp.after.max.ms": "60000"})})

    def batch(*values: bytes, ts: int = BASE_TS, magic: int = 2) -> bytes:
        return bytes(MemoryRecords.with_records([(None, v, ts) for v in values], magic=magic).buffer)

    corrupt = bytearray(batch(b"payload"))
    corrupt[-1] ^= 0xFF
    result: dict[str, Any] = {}
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        result["good"] = _raw_produce(client, topic, 0, batch(b"a", b"b", b"c"))
        result["acks_2"] = _raw_produce(client, topic, 0, batch(b"x"), acks=2)
        result["acks_2_unknown_partition"] = _raw_produce(client, topic, 3, batch(b"x"), acks=2)
        result["acks_2_two_batches"] = _raw_produce(client, topic, 0, batch(b"x") + batch(b"y"), acks=2)
        result["unknown_partition"] = _raw_produce(client, topic, 3, batch(b"x"))
        result["corrupt"] = _raw_produce(client, topic, 0, bytes(corrupt))
        result["two_batches"] = _raw_produce(client, topic, 0, batch(b"x") + batch(b"y"))
        result["magic_1"] = _raw_produce(client, topic, 0, batch(b"x", magic=1))
        result["too_large"] = _raw_produce(client, topic, 0, batch(b"x" * 5000))
        result["future_timestamp"] = _raw_produce(client, topic, 0, batch(b"x", ts=int(time.time() * 1000) + 3_600_000))
        result["good_again"] = _raw_produce(client, topic, 0, batch(b"d"))
    result["acks_0"] = _acks_0_closes(bootstrap, topic, 0, batch(b"e"))
    result["acks_0_unknown_partition"] = _acks_0_closes(bootstrap, topic, 3, batch(b"x"))
    result["acks_0_too_large"] = _acks_0_closes(bootstrap, topic, 0, batch(b"x" * 5000))
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        # __consumer_offsets is made when a group coordinator is first looked for
        client.request(FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(f"{prefix}raw-produce-group",)))
        _wait_for_leaders(bootstrap, {"__consumer_offsets": 1})
        result["internal_topic"] = _raw_produce(client, "__consumer_offsets", 0, batch(b"x"))[0]
    return result


def confluent_list_offsets(bootstrap: str, prefix: str) -> dict[str, Any]:
    """The admin client's ListOffsets: earliest, latest, the largest timestamp and timestamps, on an empty topic and
    on one with records (a timestamp going back), before and after DeleteRecords; and a raw ListOffsets naming a
    partition twice and one that does not exist."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import OffsetSpec
    from kio.schema.list_offsets.v8.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
    from kio.static.primitive import i8, i32, i64

    from tests.support.kafka_wire import WireClient
    empty, full = f"{prefix}lo-empty", f"{prefix}lo-full"
    _create_topics(bootstrap, {empty: (1, {}), full: (1, {})})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "logger": quiet_logger()})
    for i, delta in enumerate((100, 300, 200, 400, 400, 50)):
        producer.produce(full, value=b"%d" % i, timestamp=BASE_TS + delta)
        producer.flush(TIMEOUT_S)  # one batch each
    admin = _admin(bootstrap)
    specs = {"earliest": OffsetSpec.earliest(), "latest": OffsetSpec.latest(),
             "max_timestamp": OffsetSpec.max_timestamp(), "at_200": OffsetSpec.for_timestamp(BASE_TS + 200),
             "at_250": OffsetSpec.for_timestamp(BASE_TS + 250), "after_all": OffsetSpec.for_timestamp(BASE_TS + 401)}

    def offsets(topic: str) -> dict[str, Any]:
        out = {}
        for name, spec in specs.items():
            future = next(iter(admin.list_offsets({TopicPartition(topic, 0): spec}).values()))
            try:
                found = future.result(TIMEOUT_S)
                out[name] = (found.offset, found.timestamp)
            except Exception as e:
                out[name] = _error_name(e)
        return out

    result: dict[str, Any] = {"empty": offsets(empty), "full": offsets(full)}
    deleted = admin.delete_records([TopicPartition(full, 0, 4)])
    result["low_watermark"] = next(iter(deleted.values())).result(TIMEOUT_S).low_watermark
    result["full_after_delete"] = offsets(full)
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        def ask(*partitions: tuple[int, int]) -> list[Any]:
            request = ListOffsetsRequest(replica_id=i32(-1), isolation_level=i8(0), topics=(ListOffsetsTopic(
                name=full, partitions=tuple(ListOffsetsPartition(partition_index=i32(p), current_leader_epoch=i32(-1),
                                                                 timestamp=i64(t)) for p, t in partitions)),))
            return [(p.partition_index, p.error_code.name, p.offset, p.timestamp)
                    for p in client.request(request)[1].topics[0].partitions]
        result["raw_twice"] = ask((0, -1), (0, -2))
        result["raw_unknown_partition"] = ask((5, -1))
        result["raw_max_timestamp"] = ask((0, -3))
    return result


def raw_idempotent_producer(bootstrap: str, prefix: str) -> dict[str, Any]:
    """A producer id from InitProducerId, then batches of its sequence: in order, repeated (the broker answers the
    first write's offset again and writes nothing), skipping ahead (OUT_OF_ORDER_SEQUENCE_NUMBER), an older epoch;
    and what a consumer reads."""
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
    from kio.static.primitive import i16, i32Timedelta, i64

    from kafkalog.record import MemoryRecords
    from tests.support.kafka_wire import WireClient
    topic = f"{prefix}idempotent"
    _create_topics(bootstrap, {topic: (1, {})})
    result: dict[str, Any] = {}
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        request = InitProducerIdRequest(transactional_id=None, transaction_timeout=i32Timedelta.parse(_ms(60000)),
                                        producer_id=i64(-1), producer_epoch=i16(-1))
        # a Kafka broker answers COORDINATOR_LOAD_IN_PROGRESS until its producer id manager has a block of ids
        init = _wait_for("a producer id", lambda: (found := client.request(request)[1]).error_code.name not in (
            "coordinator_load_in_progress", "coordinator_not_available", "not_coordinator") and found)
        result["init"] = (init.error_code.name, init.producer_epoch, init.producer_id >= 0)
        pid = int(init.producer_id)

        def batch(sequence: int, count: int, epoch: int = 0) -> bytes:
            return bytes(MemoryRecords.with_records([(None, b"%d" % (sequence + i), BASE_TS) for i in range(count)],
                                                    producer_id=pid, producer_epoch=epoch,
                                                    base_sequence=sequence).buffer)

        result["first"] = _raw_produce(client, topic, 0, batch(0, 3))
        result["second"] = _raw_produce(client, topic, 0, batch(3, 2))
        result["repeated_second"] = _raw_produce(client, topic, 0, batch(3, 2))
        result["repeated_first"] = _raw_produce(client, topic, 0, batch(0, 3))
        result["gap"] = _raw_produce(client, topic, 0, batch(9, 1))
        result["next"] = _raw_produce(client, topic, 0, batch(5, 1))
        result["new_epoch_from_zero"] = _raw_produce(client, topic, 0, batch(0, 1, epoch=1))
        result["old_epoch"] = _raw_produce(client, topic, 0, batch(6, 1, epoch=0))
        result["new_epoch_gap"] = _raw_produce(client, topic, 0, batch(5, 1, epoch=2))
    result["read"] = [(r[0], r[4]) for r in _confluent_consume(bootstrap, [(topic, 0)])[(topic, 0)]]
    return result


def confluent_describe(bootstrap: str, prefix: str) -> dict[str, Any]:
    """The admin client's describe_topics and describe_cluster with the authorized operations (no authorizer:
    everything), and list_topics' view of a topic, an internal one and one that does not exist."""
    from confluent_kafka import TopicCollection
    topic = f"{prefix}described"
    _create_topics(bootstrap, {topic: (3, {})})
    admin = _admin(bootstrap)
    described = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(
        TIMEOUT_S)
    missing = admin.describe_topics(TopicCollection([f"{prefix}missing"]))[f"{prefix}missing"]
    cluster = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT_S)
    return {
        "topic": (described.name, described.is_internal,
                  [(p.id, p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr])
                   for p in described.partitions],
                  sorted(op.name for op in described.authorized_operations or ())),
        "missing": _outcome(missing),
        "cluster": (cluster.controller.id, sorted(n.id for n in cluster.nodes),
                    sorted(op.name for op in cluster.authorized_operations or ())),
    }


def admin_alter_mistakes(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Configuration changes that must fail: an unknown name, a bad value, APPEND to a configuration that is not a
    list, a topic that does not exist; and a legacy AlterConfigs, which replaces every override."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    topic = f"{prefix}altered"
    _create_topics(bootstrap, {topic: (1, {"retention.ms": "3600000", "cleanup.policy": "compact"})})
    admin = _admin(bootstrap)

    def alter(name: str, *entries: Any) -> str:
        resource = ConfigResource("topic", name, incremental_configs=list(entries))
        return _outcome(admin.incremental_alter_configs([resource])[resource])

    result = {
        "unknown_name": alter(topic, ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)),
        "bad_value": alter(topic, ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)),
        "append_not_list": alter(topic, ConfigEntry("retention.ms", "5",
                                                    incremental_operation=AlterConfigOpType.APPEND)),
        "unknown_topic": alter(f"{prefix}nope", ConfigEntry("retention.ms", "5",
                                                            incremental_operation=AlterConfigOpType.SET)),
        "append_list": alter(topic, ConfigEntry("cleanup.policy", "delete",
                                                incremental_operation=AlterConfigOpType.APPEND)),
    }
    resource = ConfigResource("topic", topic, set_config={"segment.ms": "100000"})
    result["legacy"] = _outcome(admin.alter_configs([resource])[resource])

    def overrides() -> dict[str, str]:
        described = ConfigResource("topic", topic)
        entries = admin.describe_configs([described])[described].result(TIMEOUT_S)
        return {n: e.value for n, e in entries.items() if e.source == 1}
    result["overrides"] = _wait_for("the legacy alter", lambda: (found := overrides()) and "segment.ms" in found
                                    and found)
    return result


def _scrub(value: Any) -> Any:
    """A kafka-python admin answer without what differs between brokers by nature: member ids, client hosts."""
    if isinstance(value, dict):
        return {(tuple(k) if isinstance(k, tuple) else k): _scrub(v) for k, v in value.items()
                if k not in ("member_id", "client_host")}
    if isinstance(value, list | tuple):
        items = [_scrub(v) for v in value]
        if items and all(isinstance(v, dict) and "client_id" in v for v in items):
            items.sort(key=lambda v: v["client_id"])  # members, in no particular order
        return items
    if hasattr(value, "to_dict"):
        return _scrub(value.to_dict())
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, set | frozenset):
        return sorted(map(str, value))
    return value


def _sorted_operations(described: dict[str, Any]) -> dict[str, Any]:
    for group in described.values():
        if isinstance(group, dict) and group.get("authorized_operations") is not None:
            group["authorized_operations"] = sorted(group["authorized_operations"])
    return described


def kafka_python_group_admin(bootstrap: str, prefix: str) -> dict[str, Any]:
    """kafka-python's admin client on a group of two confluent-kafka members with the round-robin assignor: it
    describes the group (kafka-python decodes the members' subscriptions and assignments), lists it, fetches its
    offsets, and tries to change and delete them while the group is active and after its members left; then
    deletes it, twice.

    (kafka-python 3.0's own consumers are not the members: a kafka-python leader that assigns before its metadata
    snapshot is taken rebalances again at once, and now and then hangs in that second rebalance, against Kafka's
    broker as against kafkalog's.)
    """
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as ConfluentTopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata
    topic, group = f"{prefix}kp-grouped", f"{prefix}kp-group"
    _create_topics(bootstrap, {topic: (3, {})})
    _fill_partitions(bootstrap, topic, 3, 4)
    assigned: dict[str, set[int]] = {"a": set(), "b": set()}

    def member(name: str) -> Any:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"kp-{name}",
                             "session.timeout.ms": 10000, "heartbeat.interval.ms": 300,
                             "partition.assignment.strategy": "roundrobin", "enable.auto.commit": False,
                             "auto.offset.reset": "earliest", "logger": quiet_logger()})
        consumer.subscribe([topic], on_assign=lambda _c, ps: assigned.__setitem__(name, {p.partition for p in ps}),
                           on_revoke=lambda _c, _ps: assigned.__setitem__(name, set()))
        return consumer

    members = {"a": member("a"), "b": member("b")}

    def balanced() -> bool:
        for consumer in members.values():
            consumer.poll(0.1)
        return bool(assigned["a"]) and bool(assigned["b"]) and not assigned["a"] & assigned["b"] and len(
            assigned["a"] | assigned["b"]) == 3

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    tps = [kafka.TopicPartition(topic, p) for p in range(3)]
    result: dict[str, Any] = {}
    try:
        _wait_for("two members sharing the partitions", balanced)
        result["assignment"] = sorted(sorted(parts) for parts in assigned.values())
        for name, consumer in members.items():
            consumer.commit(offsets=[ConfluentTopicPartition(topic, p, 1 + p, metadata=f"kp-{p}")
                                     for p in sorted(assigned[name])], asynchronous=False)
        result["described"] = _sorted_operations(_scrub(admin.describe_groups([group])))
        result["listed"] = _scrub([g for g in admin.list_groups() if g["group_id"].startswith(prefix)])
        result["offsets"] = _scrub(admin.list_group_offsets({group: tps}))
        result["alter_active"] = _outcome_of(lambda: admin.alter_group_offsets(group, {tps[0]: OffsetAndMetadata(
            0, "", -1)}))
        result["delete_offsets_active"] = _outcome_of(lambda: admin.delete_group_offsets(group, [tps[0]]))
    finally:
        for consumer in members.values():
            consumer.close()
    try:
        result["described_empty"] = _sorted_operations(_scrub(admin.describe_groups([group])))
        result["alter_empty"] = _outcome_of(lambda: admin.alter_group_offsets(group, {tps[0]: OffsetAndMetadata(
            0, "reset", -1)}))
        result["delete_offsets_empty"] = _outcome_of(lambda: admin.delete_group_offsets(group, [tps[1]]))
        result["offsets_after"] = _scrub(admin.list_group_offsets({group: tps}))
        result["deleted"] = _outcome_of(lambda: admin.delete_groups([group]))
        result["deleted_again"] = _outcome_of(lambda: admin.delete_groups([group]))
    finally:
        admin.close()
    return result


def _outcome_of(call: Callable[[], Any]) -> Any:
    """What ``call`` returned (scrubbed), or the name of the error it raised."""
    try:
        return _scrub(call())
    except Exception as e:
        return _error_name(e)


def raw_fetch_limits(bootstrap: str, prefix: str) -> dict[str, Any]:
    """The same raw batches written to both brokers, then fetched raw under limits: the whole answer of each
    partition (code, high watermark, last stable offset, log start offset, the record bytes exactly as the broker
    sends them), for a fetch from the middle of a batch, a response limit smaller than the first batch (KIP-74:
    that batch comes whole anyway), partition limits, a partition past its data and one below its log start."""
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
    from kio.static.primitive import i8, i32, i32Timedelta, i64

    from kafkalog.record import MemoryRecords
    from tests.support.kafka_wire import WireClient
    topic = f"{prefix}fetch-limits"
    _create_topics(bootstrap, {topic: (3, {})})
    result: dict[str, Any] = {}
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        for p in range(3):
            for n in range(4):
                records = [(b"k%d" % i, b"v" * (50 * (n + 1) + p), BASE_TS + i) for i in range(3)]
                written = _raw_produce(client, topic, p, bytes(MemoryRecords.with_records(
                    records, compression="gzip" if n % 2 else "none").buffer))
                if written[0] != "none":
                    raise ScenarioError(f"the raw write to {topic}-{p} failed: {written}")
        admin = _admin(bootstrap)
        deleted = admin.delete_records([_confluent_tp(topic, 2, 3)])
        next(iter(deleted.values())).result(TIMEOUT_S)

        def fetch(max_bytes: int, wanted: list[tuple[int, int, int]]) -> list[Any]:
            request = FetchRequest(
                replica_id=i32(-1), max_wait=i32Timedelta.parse(_ms(0)), min_bytes=i32(0), max_bytes=i32(max_bytes),
                isolation_level=i8(0), session_id=i32(0), session_epoch=i32(-1), topics=(FetchTopic(
                    topic=topic, partitions=tuple(FetchPartition(
                        partition=i32(p), current_leader_epoch=i32(-1), fetch_offset=i64(offset),
                        last_fetched_epoch=i32(-1), log_start_offset=i64(-1), partition_max_bytes=i32(limit))
                        for p, offset, limit in wanted)),),
                forgotten_topics_data=(), rack_id="")
            answer = client.request(request)[1]
            return [(q.partition_index, q.error_code.name, q.high_watermark, q.last_stable_offset, q.log_start_offset,
                     q.records) for t in answer.responses for q in t.partitions]

        big = 1 << 20
        result["everything"] = fetch(big, [(0, 0, big), (1, 0, big), (2, 3, big)])
        result["mid_batch"] = fetch(big, [(0, 4, big)])
        result["response_limit_below_first_batch"] = fetch(10, [(0, 0, big), (1, 0, big)])
        result["partition_limit_below_first_batch"] = fetch(big, [(0, 0, 10), (1, 0, 10)])
        result["partition_limit_two_batches"] = fetch(big, [(0, 0, 400), (1, 3, 500)])
        result["past_the_data"] = fetch(big, [(0, 12, big), (1, 13, big)])
        result["below_log_start"] = fetch(big, [(2, 1, big)])
    return result


def raw_leader_epochs(bootstrap: str, prefix: str) -> dict[str, Any]:
    """OffsetForLeaderEpoch as a consumer validating its position asks it (KIP-320): the end offset of epoch 0 (the
    only one a single node's partitions have), of a later epoch, of an older one; with the current epoch given right,
    ahead and behind; for a partition that does not exist; on an empty partition."""
    from kio.schema.offset_for_leader_epoch.v4.request import (
        OffsetForLeaderEpochRequest,
        OffsetForLeaderPartition,
        OffsetForLeaderTopic,
    )
    from kio.static.primitive import i32

    from kafkalog.record import MemoryRecords
    from tests.support.kafka_wire import WireClient
    topic = f"{prefix}epochs"
    _create_topics(bootstrap, {topic: (2, {})})
    result: dict[str, Any] = {}
    with WireClient(bootstrap, timeout=TIMEOUT_S) as client:
        for _ in range(3):
            _raw_produce(client, topic, 0, bytes(MemoryRecords.with_records([(None, b"v", BASE_TS)] * 2).buffer))

        def ask(partition: int, epoch: int, current: int = -1) -> tuple[Any, ...]:
            request = OffsetForLeaderEpochRequest(replica_id=i32(-1), topics=(OffsetForLeaderTopic(
                topic=topic, partitions=(OffsetForLeaderPartition(partition=i32(partition),
                                                                  current_leader_epoch=i32(current),
                                                                  leader_epoch=i32(epoch)),)),))
            answer = client.request(request)[1].topics[0].partitions[0]
            return answer.error_code.name, answer.leader_epoch, answer.end_offset

        result["epoch_0"] = ask(0, 0)
        result["epoch_3"] = ask(0, 3)
        result["epoch_minus_1"] = ask(0, -1)
        result["current_right"] = ask(0, 0, current=0)
        result["current_ahead"] = ask(0, 0, current=4)
        result["empty_partition"] = ask(1, 0)
        result["unknown_partition"] = ask(7, 0)
    return result


def confluent_transactions(bootstrap: str, prefix: str) -> dict[str, Any]:
    """confluent-kafka's transactional producer over two partitions: a committed transaction, an aborted one (its
    records flushed to the log first), and one that sends a group's offsets; then what each isolation level reads,
    where the markers are (a raw fetch of the log's batches: offsets and whether each is a control batch), the
    latest offsets at both levels, and the group's committed offset."""
    from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
    from confluent_kafka.admin import OffsetSpec
    # The group is named outside the prefix: kafka_python_group_admin lists the prefix's groups, and Kafka 4.4's
    # coordinator did not list a group that only a TxnOffsetCommit made, where 3.8's classic one (kafkalog's) lists it
    # as an Empty group of no protocol type.
    topic, source, group = f"{prefix}txn", f"{prefix}txn-source", f"txn-group-of-{prefix}"
    _create_topics(bootstrap, {topic: (2, {}), source: (1, {})})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{prefix}tx", "linger.ms": 5,
                         "logger": quiet_logger()})
    producer.init_transactions(TIMEOUT_S)
    records = _records(6)
    producer.begin_transaction()
    for i, (key, value, headers, ts) in enumerate(records):
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts, partition=i % 2)
    producer.commit_transaction(TIMEOUT_S)
    producer.begin_transaction()
    for key, _value, headers, ts in records[:3]:
        producer.produce(topic, key=key, value=b"aborted", headers=headers, timestamp=ts, partition=0)
    if producer.flush(TIMEOUT_S):
        raise ScenarioError("the aborted transaction's records were not delivered")
    producer.abort_transaction(TIMEOUT_S)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "logger": quiet_logger()})
    try:
        producer.begin_transaction()
        producer.produce(topic, key=b"last", value=b"last", partition=1, timestamp=records[0][3])
        producer.send_offsets_to_transaction([TopicPartition(source, 0, 7)], consumer.consumer_group_metadata(),
                                             TIMEOUT_S)
        producer.commit_transaction(TIMEOUT_S)
        committed = [tp.offset for tp in consumer.committed([TopicPartition(source, 0)], timeout=TIMEOUT_S)]
    finally:
        consumer.close()
    views = {level: _confluent_consume(bootstrap, [(topic, 0), (topic, 1)], isolation=level)
             for level in ("read_uncommitted", "read_committed")}
    admin = _admin(bootstrap)
    latest = {}
    for name, level in (("uncommitted", IsolationLevel.READ_UNCOMMITTED),
                        ("committed", IsolationLevel.READ_COMMITTED)):
        futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(2)},
                                     isolation_level=level)
        latest[name] = sorted((tp.partition, f.result(TIMEOUT_S).offset) for tp, f in futures.items())
    return {"views": {level: [rows[(topic, p)] for p in range(2)] for level, rows in views.items()},
            "latest": latest, "committed": committed}


#: Every scenario by name, in the order the comparison runs them.
SCENARIOS: dict[str, Callable[[str, str], Any]] = {
    "kafka_python_codecs": kafka_python_codecs,
    "confluent_acks": confluent_acks,
    "confluent_read_committed": confluent_read_committed,
    "confluent_transactions": confluent_transactions,
    "aiokafka_log_append_time": aiokafka_log_append_time,
    "kafka_python_offsets": kafka_python_offsets,
    "auto_created_topics": auto_created_topics,
    "confluent_group": confluent_group,
    "group_request_errors": group_request_errors,
    "admin_topic_configs": admin_topic_configs,
    "admin_partitions_records_topics": admin_partitions_records_topics,
    "admin_mistakes": admin_mistakes,
    "produce_unknown_topic": produce_unknown_topic,
    "fetch_out_of_range": fetch_out_of_range,
    "raw_produce_mistakes": raw_produce_mistakes,
    "confluent_list_offsets": confluent_list_offsets,
    "raw_idempotent_producer": raw_idempotent_producer,
    "confluent_describe": confluent_describe,
    "admin_alter_mistakes": admin_alter_mistakes,
    "kafka_python_group_admin": kafka_python_group_admin,
    "raw_fetch_limits": raw_fetch_limits,
    "raw_leader_epochs": raw_leader_epochs,
}
