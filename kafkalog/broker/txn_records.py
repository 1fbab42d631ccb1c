"""The transaction coordinator's records in ``__transaction_state``, written and read as Kafka 3.8.0 does.

Port of ``core/src/main/scala/kafka/coordinator/transaction/TransactionLog.scala`` (tag 3.8.0): ``keyToBytes``,
``valueToBytes``, ``readTxnRecordKey``, ``readTxnRecordValue``; the schemas are
``transaction-coordinator/src/main/resources/common/message/TransactionLog{Key,Value}.json``, vendored in
:mod:`kafkalog.messages`.  Every record's key and value start with an ``int16`` version
(``MessageUtil.toVersionPrefixedBytes``):

========================  ===================================================================================
key, version 0            ``TransactionLogKey``: transactional id.  Any other version is an *unknown key* a
                          loading coordinator skips with a warning.
value, version 0 or 1     ``TransactionLogValue``: producer id, producer epoch, transaction timeout, status
                          (the :class:`~kafkalog.broker.txn_metadata.TransactionState` id), the partitions
                          (``null`` for ``Empty``, else one entry per topic with its partition ids), last update
                          and start timestamps.  Version 1 is flexible (tagged fields).  Kafka 3.8 writes v0.
``null`` value            a tombstone: the transactional id expired (the log cleaner then drops the key).
========================  ===================================================================================

The records are written uncompressed (Kafka's ``TransactionLog.EnforcedCompression``), one per batch, with the
coordinator origin.  Where kafkalog differs: Kafka lists a value's topics in the iteration order of a Scala hash
map (``groupBy``), kafkalog in sorted order (topics, then partition ids); a reader rebuilds a set either way, and
both orders are the same set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._common import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from ..errors import IllegalStateError
from ..messages import read_version_prefix, schema, write_version_prefixed
from .txn_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata

__all__ = ["TRANSACTION_STATE_TOPIC_NAME", "TxnKey", "UnknownKey", "key_to_bytes", "read_txn_record_key",
           "read_txn_record_value", "value_to_bytes"]

#: Kafka: ``Topic.TRANSACTION_STATE_TOPIC_NAME``.
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
#: Kafka: ``TransactionLogKey.HIGHEST_SUPPORTED_VERSION``.
_KEY_VERSION = 0
#: Kafka 3.8 writes ``TransactionLogValue`` v0 (``valueToBytes`` passes 0 whatever the broker's version).
_VALUE_VERSION = 0


@dataclass(frozen=True)
class TxnKey:
    """Kafka: ``TxnKey``."""

    version: int
    transactional_id: str


@dataclass(frozen=True)
class UnknownKey:
    """Kafka: ``UnknownKey``: a key version this coordinator does not know."""

    version: int


def key_to_bytes(transactional_id: str) -> bytes:
    """Kafka: ``TransactionLog.keyToBytes``: ``TransactionLogKey`` v0."""
    return write_version_prefixed("TransactionLogKey", {"transactionalId": transactional_id}, _KEY_VERSION)


def value_to_bytes(transit: TxnTransitMetadata) -> bytes:
    """Kafka: ``TransactionLog.valueToBytes``: ``TransactionLogValue`` v0.

    Raises:
        IllegalStateError: an ``Empty`` transaction with partitions (Kafka's ``IllegalStateException``).
    """
    if transit.txn_state is TransactionState.EMPTY and transit.topic_partitions:
        raise IllegalStateError(f"Transaction is not expected to have any partitions since its state is "
                                f"{transit.txn_state}: {transit}")
    partitions: list[dict[str, Any]] | None
    if transit.txn_state is TransactionState.EMPTY:
        partitions = None
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(transit.topic_partitions):
            by_topic.setdefault(topic, []).append(partition)
        partitions = [{"topic": topic, "partitionIds": ids} for topic, ids in by_topic.items()]
    return write_version_prefixed("TransactionLogValue", {
        "producerId": transit.producer_id,
        "producerEpoch": transit.producer_epoch,
        "transactionTimeoutMs": transit.txn_timeout_ms,
        "transactionStatus": transit.txn_state.value,
        "transactionPartitions": partitions,
        "transactionLastUpdateTimestampMs": transit.txn_last_update_timestamp,
        "transactionStartTimestampMs": transit.txn_start_timestamp,
    }, _VALUE_VERSION)


def read_txn_record_key(key: bytes) -> TxnKey | UnknownKey:
    """Kafka: ``TransactionLog.readTxnRecordKey``.

    Raises:
        MessageReadError: the key's bytes do not read as its schema.
    """
    version = read_version_prefix(key, "key")
    low, high = schema("TransactionLogKey").valid
    if not low <= version <= high:
        return UnknownKey(version)
    data, _end = schema("TransactionLogKey").read(key, version, pos=2)
    return TxnKey(version, data["transactionalId"])


def read_txn_record_value(transactional_id: str, value: bytes | None) -> TransactionMetadata | None:
    """Kafka: ``TransactionLog.readTxnRecordValue``: the metadata a value holds, ``None`` for a tombstone.  The
    last producer id and epoch are not in the record: they come back as ``-1``.

    Raises:
        IllegalStateError: an unknown value version or state id.
        MessageReadError: the value's bytes do not read as its schema.
    """
    if value is None:
        return None
    version = read_version_prefix(value, "value")
    low, high = schema("TransactionLogValue").valid
    if not low <= version <= high:
        raise IllegalStateError(f"Unknown version {version} from the transaction log message value")
    data, _end = schema("TransactionLogValue").read(value, version, pos=2)
    metadata = TransactionMetadata(
        transactional_id, producer_id=data["producerId"], last_producer_id=NO_PRODUCER_ID,
        producer_epoch=data["producerEpoch"], last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=data["transactionTimeoutMs"], state=TransactionState.from_id(data["transactionStatus"]),
        topic_partitions=set(), txn_start_timestamp=data["transactionStartTimestampMs"],
        txn_last_update_timestamp=data["transactionLastUpdateTimestampMs"])
    if metadata.state is not TransactionState.EMPTY:
        for entry in data["transactionPartitions"] or ():
            metadata.add_partitions({(entry["topic"], partition) for partition in entry["partitionIds"]})
    return metadata
