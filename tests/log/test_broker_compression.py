"""Broker-side compression: Kafka's ``BrokerCompressionTest`` (core/src/test/scala/unit/kafka/log, tags
3.8.0 and 0.10.1.1).

A topic's ``compression.type`` decides the codec its log stores: a named codec, whatever codec the producer
used, or ``producer``, which keeps the producer's.  Each case appends two records ("hello", "there"; no key,
no timestamp) compressed with one codec to a log whose topic is configured with one ``compression.type``,
through :meth:`kafkalog.log.unified_log.Log.append_as_leader`, reads back from offset 0 (4096 bytes, at least one
batch) and checks the codec of the first batch stored.  3.8.0 crosses every ``compression.type`` with every
record codec, zstd included, on a v2 log; 0.10.1.1 had no zstd and wrote v1 messages, on a log of message
format 0.10.1.  Every case runs on both kernel twins (through ``create_log``).
"""

from __future__ import annotations

import itertools

import pytest

from kafkalog import MemoryRecords
from kafkalog.config.log_config import BrokerCompressionType, LogConfig
from kafkalog.log.validator import target_compression
from kafkalog.record import CompressionType, RecordBatch
from tests.support.log_test_utils import LogFactory

# Kafka 3.8.0: BrokerCompressionType.values x CompressionType.values
CASES_3_8 = list(itertools.product(list(CompressionType), list(BrokerCompressionType)))
# Kafka 0.10.1.1: CompressionType.values x BrokerCompressionCodec.brokerCompressionOptions
CASES_0_10 = list(itertools.product(
    [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4],
    ["uncompressed", "snappy", "lz4", "gzip", "producer"],
))


def read_batch(log_factory: LogFactory, config: LogConfig, records: MemoryRecords) -> RecordBatch:
    """Append ``records`` as the leader (epoch 0) to a new log and read the batch at offset 0 (Kafka's
    ``readBatch(0)`` / ``readMessage(0)``: 4096 bytes, at least one batch); the records must all be there."""
    log = log_factory(config)
    log.append_as_leader(records, leader_epoch=0)
    fetched = log.read(0, 4096, min_one_message=True)
    assert [(r.offset, r.value) for r in fetched.records.records()] == [(0, b"hello"), (1, b"there")]
    batch: RecordBatch = next(iter(fetched.records.batches()))
    return batch


@pytest.mark.parametrize(("message_compression", "broker_compression"), CASES_3_8,
                         ids=[f"{m.kafka_name}-{b}" for m, b in CASES_3_8])
def test_broker_side_compression(create_log: LogFactory, message_compression: CompressionType,
                                 broker_compression: BrokerCompressionType) -> None:
    """testBrokerSideCompression (3.8.0): the stored codec is the topic's, or the producer's under
    ``producer``."""
    config = LogConfig({"compression.type": broker_compression.value})
    records = MemoryRecords.with_records([(None, b"hello"), (None, b"there")], compression=message_compression)
    batch = read_batch(create_log, config, records)
    assert batch.magic == 2
    stored = batch.compression
    if broker_compression is not BrokerCompressionType.PRODUCER:
        expected = target_compression(config.compression_type, CompressionType.NONE)
        assert stored is expected, f"Compression at offset 0 should produce {broker_compression}"
    else:
        assert stored is message_compression, f"Compression at offset 0 should produce {message_compression}"


@pytest.mark.parametrize(("message_compression", "broker_compression"), CASES_0_10,
                         ids=[f"{m.kafka_name}-{b}" for m, b in CASES_0_10])
def test_broker_side_compression_0_10_1_1(create_log: LogFactory, message_compression: CompressionType,
                                          broker_compression: str) -> None:
    """BrokerCompressionTest.testBrokerSideCompression (0.10.1.1): the same on a v1 log (message format
    0.10.1) with v1 messages, before zstd; the codec of the first message stored."""
    config = LogConfig({"compression.type": broker_compression, "message.format.version": "0.10.1"})
    records = MemoryRecords.with_records([(None, b"hello"), (None, b"there")], magic=1,
                                         compression=message_compression)
    batch = read_batch(create_log, config, records)
    assert batch.magic == 1
    stored = batch.compression
    if broker_compression != "producer":
        # BrokerCompressionCodec.getCompressionCodec: "uncompressed" is the codec none
        expected = CompressionType.NONE if broker_compression == "uncompressed" else \
            CompressionType.of(broker_compression)
        assert stored is expected, f"Compression at offset 0 should produce {broker_compression}"
    else:
        assert stored is message_compression, f"Compression at offset 0 should produce {message_compression}"
