"""Tests of :mod:`kafkalog.broker.txn_records` and :mod:`kafkalog.broker.txn_config`: ports of Kafka 3.8.0's
``TransactionLogTest`` (``core/src/test/scala/unit/kafka/coordinator/transaction/TransactionLogTest.scala``), the
records checked byte for byte against hand-built encodings of the schemas (what Kafka's generated serializers
write, field by field), read back by ``kafkalog dump --transaction-log-decoder`` after a coordinator wrote them,
and the configuration's properties.

Kafka tests not ported: none.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from kafkalog.broker.txn_config import TransactionCoordinatorConfig
from kafkalog.broker.txn_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata
from kafkalog.broker.txn_records import (
    TxnKey,
    UnknownKey,
    key_to_bytes,
    read_txn_record_key,
    read_txn_record_value,
    value_to_bytes,
)
from kafkalog.cli import main
from kafkalog.config.config_def import ConfigError
from kafkalog.errors import IllegalStateError
from kafkalog.messages import MessageReadError
from kafkalog.record.memory import MemoryRecords
from kafkalog.tools.dump_decoders import TransactionLogMessageParser
from tests.support.txn_utils import TOPIC, TxnHarness

S = TransactionState
PRODUCER_EPOCH = 0
TIMEOUT_MS = 1000
TOPIC_PARTITIONS = {("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1), ("topic2", 2)}


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s16(text: str) -> bytes:
    return i16(len(text.encode())) + text.encode()


def test_should_throw_exception_write_invalid_txn() -> None:
    m = TransactionMetadata.create("transactionalId", 23423, PRODUCER_EPOCH, TIMEOUT_MS, 0)
    m.add_partitions(TOPIC_PARTITIONS)
    with pytest.raises(IllegalStateError, match="not expected to have any partitions since its state is Empty"):
        value_to_bytes(m.prepare_no_transit())


def test_should_read_write_messages() -> None:
    mappings = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
    states = {0: S.EMPTY, 1: S.ONGOING, 2: S.PREPARE_COMMIT, 3: S.COMPLETE_COMMIT, 4: S.PREPARE_ABORT,
              5: S.COMPLETE_ABORT}
    records = []
    for transactional_id, producer_id in mappings.items():
        m = TransactionMetadata.create(transactional_id, producer_id, PRODUCER_EPOCH, TIMEOUT_MS, 0,
                                       states[producer_id])
        if m.state is not S.EMPTY:
            m.add_partitions(TOPIC_PARTITIONS)
        records.append((key_to_bytes(transactional_id), value_to_bytes(m.prepare_no_transit())))
    count = 0
    for record in MemoryRecords.with_records(records).records():
        key = read_txn_record_key(bytes(record.key))
        assert isinstance(key, TxnKey)
        m = read_txn_record_value(key.transactional_id, bytes(record.value))
        assert m is not None
        assert m.producer_id == mappings[key.transactional_id]
        assert m.producer_epoch == PRODUCER_EPOCH
        assert m.txn_timeout_ms == TIMEOUT_MS
        assert m.state is states[m.producer_id]
        assert m.topic_partitions == (set() if m.state is S.EMPTY else TOPIC_PARTITIONS)
        count += 1
    assert count == len(mappings)


def test_transaction_metadata_parsing() -> None:
    m = TransactionMetadata.create("id", 1334, PRODUCER_EPOCH, TIMEOUT_MS, 0, S.ONGOING)
    m.add_partitions({("topic", 0)})
    key_text, value_text = TransactionLogMessageParser()(0, key_to_bytes("id"), value_to_bytes(m.prepare_no_transit()))
    assert key_text == "transaction_metadata::transactionalId=id"
    assert value_text == (f"producerId:1334,producerEpoch:{PRODUCER_EPOCH},state=Ongoing,partitions=[topic-0],"
                          f"txnLastUpdateTimestamp=0,txnTimeoutMs={TIMEOUT_MS}")


def test_transaction_metadata_tombstone_parsing() -> None:
    assert TransactionLogMessageParser()(0, key_to_bytes("id"), None) == \
        ("transaction_metadata::transactionalId=id", "<DELETE>")


def test_serialize_transaction_log_value_to_highest_non_flexible_version() -> None:
    transit = TxnTransitMetadata(1, 1, 1, 1, 1000, S.COMPLETE_COMMIT, frozenset(), 500, 500)
    assert struct.unpack_from(">h", value_to_bytes(transit))[0] == 0


def test_deserialize_highest_supported_transaction_log_value() -> None:
    """A v1 (flexible) value: compact strings and arrays, empty tagged-field sections."""
    value = (i16(1) + i64(100) + i16(50) + i32(500) + bytes([S.COMPLETE_COMMIT.value])
             + b"\x02" + b"\x06topic" + b"\x02" + i32(0) + b"\x00" + i64(1000) + i64(750) + b"\x00")
    m = read_txn_record_value("transactionId", value)
    assert m is not None
    assert (m.producer_id, m.producer_epoch, m.state) == (100, 50, S.COMPLETE_COMMIT)
    assert (m.txn_start_timestamp, m.txn_last_update_timestamp, m.txn_timeout_ms) == (750, 1000, 500)
    assert m.topic_partitions == {("topic", 0)}


def test_deserialize_future_transaction_log_value() -> None:
    """A v1 value with tagged fields this version does not know, in the partitions and at the top level: read and
    ignored."""
    def tags() -> bytes:  # tag 0: a compact string "foo"; tag 1: an int32 4000
        return b"\x02" + b"\x00\x04\x04foo" + b"\x01\x04" + i32(4000)

    value = (i16(1) + i64(1000) + i16(100) + i32(1000) + bytes([S.COMPLETE_COMMIT.value])
             + b"\x02" + b"\x06topic" + b"\x02" + i32(1) + tags() + i64(2000) + i64(3000) + tags())
    m = read_txn_record_value("transaction-id", value)
    assert m is not None
    assert (m.producer_id, m.producer_epoch, m.txn_timeout_ms, m.state) == (1000, 100, 1000, S.COMPLETE_COMMIT)
    assert m.topic_partitions == {("topic", 1)}
    assert (m.txn_last_update_timestamp, m.txn_start_timestamp) == (2000, 3000)


def test_read_txn_record_key_can_read_unknown_message() -> None:
    assert read_txn_record_key(i16(2**15 - 1) + s16("")) == UnknownKey(2**15 - 1)


# -- byte for byte, and bad bytes --

def test_key_and_value_bytes_are_kafkas() -> None:
    """``TransactionLogKey`` v0 and ``TransactionLogValue`` v0 field by field (the dump tests' encoding)."""
    assert key_to_bytes("my-txn") == i16(0) + s16("my-txn")
    transit = TxnTransitMetadata(1000, -1, 2, -1, 60000, S.ONGOING, frozenset({("foo", 2), ("foo", 0), ("bar", 1)}),
                                 17, 1_700_000_000_123)
    partitions = i32(2) + s16("bar") + i32(1) + i32(1) + s16("foo") + i32(2) + i32(0) + i32(2)
    assert value_to_bytes(transit) == (i16(0) + i64(1000) + i16(2) + i32(60000) + bytes([1]) + partitions
                                       + i64(1_700_000_000_123) + i64(17))
    empty = TxnTransitMetadata(1000, -1, 3, 2, 60000, S.EMPTY, frozenset(), -1, 5)
    assert value_to_bytes(empty) == i16(0) + i64(1000) + i16(3) + i32(60000) + bytes([0]) + i32(-1) + i64(5) + i64(-1)


@pytest.mark.parametrize(("value", "error", "message"), [
    (i16(2) + i64(1), IllegalStateError, "Unknown version 2 from the transaction log message value"),
    (i16(0) + i64(1) + i16(0) + i32(1) + bytes([8]) + i32(-1) + i64(0) + i64(0), IllegalStateError,
     "Unknown transaction state id 8"),
    (i16(0) + i64(1), MessageReadError, "^null$"),  # Java's BufferUnderflowException has no message
    (b"\x00", MessageReadError, "Could not read version"),
])
def test_bad_values_are_clear_errors(value: bytes, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        read_txn_record_value("id", value)


def test_bad_keys_are_clear_errors() -> None:
    with pytest.raises(MessageReadError, match="Could not read version"):
        read_txn_record_key(b"")
    with pytest.raises(MessageReadError, match="only 5 byte"):
        read_txn_record_key(i16(0) + i16(50) + b"short")


# -- what a coordinator wrote, through the CLI --

def test_dump_transaction_log_decoder_reads_what_the_coordinator_wrote(tmp_path: Path) -> None:
    """``kafkalog dump --transaction-log-decoder`` over a ``__transaction_state`` segment after a committed
    transaction: one line per transition, in Kafka's text."""
    h = TxnHarness(tmp_path)
    pid, epoch, _ = h.init_pid("dumped", 60000)
    h.add_partitions("dumped", pid, epoch, {(TOPIC, 1)})
    h.produce(1, pid, epoch, 0, b"v")
    h.end_txn("dumped", pid, epoch, True)
    segment = h.txn_log("dumped").dir / "00000000000000000000.log"
    h.close()
    out, err = io.StringIO(), io.StringIO()
    status = main(["--no-progress", "dump", "--transaction-log-decoder", "--files", str(segment)], stdout=out,
                  stderr=err)
    assert (status, err.getvalue()) == (0, "")
    now = h.timer.now
    lines = [line.split(" headerKeys: [] ", 1)[1] for line in out.getvalue().splitlines()
             if line.startswith("| offset:")]
    prefix = "key: transaction_metadata::transactionalId=dumped payload: "
    assert lines == [prefix + f"producerId:{pid},producerEpoch:0,state={state},partitions=[{parts}],"
                              f"txnLastUpdateTimestamp={now},txnTimeoutMs=60000"
                     for state, parts in [("Empty", ""), ("Ongoing", "topic1-1"), ("PrepareCommit", "topic1-1"),
                                          ("CompleteCommit", "")]]


# -- TransactionCoordinatorConfig --

def test_config_defaults_are_kafkas() -> None:
    c = TransactionCoordinatorConfig()
    assert (c.transactional_id_expiration_ms, c.transaction_max_timeout_ms, c.transaction_state_log_num_partitions,
            c.transaction_state_log_replication_factor, c.transaction_state_log_segment_bytes,
            c.transaction_state_log_load_buffer_size, c.transaction_state_log_min_isr,
            c.transaction_abort_timed_out_transaction_cleanup_interval_ms,
            c.transaction_remove_expired_transaction_cleanup_interval_ms) == \
        (604800000, 900000, 50, 3, 104857600, 5242880, 2, 10000, 3600000)
    assert c.transaction_topic_configs() == {
        "unclean.leader.election.enable": "false", "compression.type": "uncompressed", "cleanup.policy": "compact",
        "min.insync.replicas": "2", "segment.bytes": "104857600"}


def test_config_from_properties() -> None:
    c = TransactionCoordinatorConfig.from_properties({
        "transaction.state.log.num.partitions": "3", "transaction.max.timeout.ms": "60000",
        "transactional.id.expiration.ms": "100", "log.dirs": "/tmp/elsewhere"})
    assert (c.transaction_state_log_num_partitions, c.transaction_max_timeout_ms,
            c.transactional_id_expiration_ms) == (3, 60000, 100)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("transaction.state.log.num.partitions", "0", "Value must be at least 1"),
    ("transaction.max.timeout.ms", "ten", "Not a number of type INT"),
    ("transaction.state.log.replication.factor", "40000", "Value does not fit a Java short"),
    ("transactional.id.expiration.ms", "2147483648", "Not a number of type INT"),
])
def test_config_rejects_bad_values(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TransactionCoordinatorConfig.from_properties({name: value})
