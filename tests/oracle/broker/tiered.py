"""Tiered storage on a real broker (broker to kafkalog): a Kafka 3.9.2 node whose ``RemoteStorageManager`` is
Kafka's own ``LocalTieredStorage`` (the kafka-storage test jar, which Maven serves for 3.9.2 and not for 4.4.0),
with ``__remote_log_metadata`` as its metadata store (``TopicBasedRemoteLogMetadataManager``, one partition).

The topic ``tiered`` (``remote.storage.enable=true``, small segments, ``local.retention.bytes`` of two segments) is
written by confluent-kafka and kafka-python: every codec, keys and headers, an idempotent producer, a transaction
that commits and one that aborts, then plain batches enough to roll many segments.  The broker copies each
closed segment below the last stable offset into the store (``<dir>/kafka-tiered-storage/tiered-0-<topicId>/
<offset>-<segmentId>.log|.index|.timeindex|.txnindex|.snapshot|.leader_epoch_checkpoint``), then deletes the
copied segments past the local retention from its log dir, so that the partition's first offsets are only in
the store: :func:`wait_until_tiered` waits (bounded) for that; then a few records more stay in the active
segment, only in the log dir (:func:`produce_local_tail`).

kafkalog's own: a test workload; the settings are Kafka's ``RemoteLogManagerConfig`` and ``LocalTieredStorage``
names.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from .broker import BrokerError, KafkaBroker
from .clients import CLIENT_TIMEOUT_S, confluent_producer, create_topics, produce
from .workloads import CODECS, _kafka_python, _kafka_python_send, _text

__all__ = ["TIERED_TOPIC", "produce_local_tail", "produce_tiered", "store_segments", "tiered_broker_config",
           "wait_until_tiered"]

TIERED_TOPIC = "tiered"
#: ``remote.storage.enable`` and a local retention of two segments' bytes (past it, a segment already copied is
#: deleted from the log dir; a retention by time would roll and tier the active segment too, once it is older
#: than that: ``UnifiedLog.deleteSegments``); small segments (3.x takes ``segment.bytes`` this small) and a dense
#: index.
TOPIC_CONFIG = {"remote.storage.enable": "true", "local.retention.bytes": 16384, "retention.ms": -1,
                "segment.bytes": 8192, "index.interval.bytes": 512}


def tiered_broker_config(store: Path) -> dict[str, Any]:
    """The broker settings of tiered storage into ``store`` (``LocalTieredStorage``'s ``dir``); the copy and the
    local retention run every half second."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "rsm.config.dir": str(store),
        "rsm.config.delete.on.close": "false",
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
        "remote.log.manager.task.interval.ms": "500",
        "log.retention.check.interval.ms": "500",
    }


def produce_tiered(broker: KafkaBroker) -> int:
    """Write the topic (see the module docstring); the number of data records sent."""
    create_topics(broker, {TIERED_TOPIC: (1, TOPIC_CONFIG)})
    rng, sent = random.Random(7), 0
    headers = [("codec", b"?"), ("empty", None)]
    for codec in CODECS:
        produce(confluent_producer(broker, compression_type=codec, batch_size=2048), TIERED_TOPIC,
                [(f"confluent-{codec}-{i % 5}", _text(rng, i), [(headers[0][0], codec.encode()), headers[1]])
                 for i in range(30)])
        kp = _kafka_python(broker, compression_type=codec, batch_size=2048)
        try:
            _kafka_python_send(kp, TIERED_TOPIC, [(None, f"kafka-python {codec} {i} {_text(rng, i)}")
                                                  for i in range(20)])
        finally:
            kp.close(10)
        sent += 50
    produce(confluent_producer(broker, enable_idempotence=True, batch_num_messages=9), TIERED_TOPIC,
            [(f"idem-{i % 3}", f"idempotent {i}") for i in range(40)])
    sent += 40
    tx = confluent_producer(broker, transactional_id="kafkalog-tiered", batch_size=2048)
    tx.init_transactions(CLIENT_TIMEOUT_S)
    for commit in (True, False, True):
        tx.begin_transaction()
        tag = "tx-commit" if commit else "tx-abort"
        produce(tx, TIERED_TOPIC, [(f"{tag}-{i % 4}", f"{tag} {i} {_text(rng, i)[:300]}") for i in range(40)])
        (tx.commit_transaction if commit else tx.abort_transaction)(CLIENT_TIMEOUT_S)
        sent += 40
    # Plain batches after the transactions, enough for their markers to be in segments the broker copies.
    produce(confluent_producer(broker, compression_type="lz4", batch_size=2048), TIERED_TOPIC,
            [(f"tail-{i % 7}", f"tail {i} {_text(rng, i)}") for i in range(300)])
    return sent + 300


def produce_local_tail(broker: KafkaBroker) -> int:
    """After the broker tiered the first segments: a few records more, which stay in the active segment (the
    broker copies closed segments only), so that the partition's last offsets are only in the log dir."""
    produce(confluent_producer(broker, compression_type="zstd"), TIERED_TOPIC,
            [(f"local-{i % 3}", f"local tail {i}", [("where", b"log dir")]) for i in range(20)])
    return 20


def _partition_store(store: Path) -> Path | None:
    found = sorted((store / "kafka-tiered-storage").glob(f"{TIERED_TOPIC}-0-*"))
    return found[0] if found else None


def store_segments(store: Path) -> list[int]:
    """The base offsets of the segments the store holds for the topic's partition (its ``.log`` files)."""
    partition = _partition_store(store)
    if partition is None:
        return []
    return sorted(int(p.name.split("-", 1)[0]) for p in partition.glob("*.log"))


def _local_start(broker: KafkaBroker) -> int:
    logs = [int(p.stem) for p in (broker.log_dir / f"{TIERED_TOPIC}-0").glob("*.log")]
    return min(logs) if logs else 0


def wait_until_tiered(broker: KafkaBroker, store: Path, timeout: float = CLIENT_TIMEOUT_S) -> tuple[int, list[int]]:
    """Wait until the store holds three segments or more and the broker deleted the first of them from its log
    dir (the local log starts past offset 0); the local log's first base offset and the store's base offsets."""
    deadline = time.monotonic() + timeout
    while True:
        copied, local = store_segments(store), _local_start(broker)
        if len(copied) >= 3 and local > 0:
            return local, copied
        if time.monotonic() > deadline:
            raise BrokerError(f"after {timeout:.0f} s the store holds {copied} and the local log starts at {local}: "
                              f"the broker did not tier the topic\n{broker.log_tail()}")
        time.sleep(0.25)
