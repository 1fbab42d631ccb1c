"""The decoders of ``kafkalog dump`` for Kafka's internal topics: what a key and a value hold, as text.

Ports of the ``MessageParser``s of ``core/src/main/scala/kafka/tools/DumpLogSegments.scala`` (tag 3.8.0),
each a callable ``(offset, key, value) -> (key text or None, payload text or None)``, the dump printing
``key: <key text>`` and `` payload: <payload text>`` for what is not ``None``:

- :class:`OffsetsMessageParser` (``--offsets-decoder``, ``__consumer_offsets``): the key is
  ``int16 record type`` + the key message of that type, the value ``int16 version`` + the value message
  (Kafka: ``CoordinatorRecordSerde``); printed as ``{"type":"<record type>","data":{...}}`` and
  ``{"version":"<version>","data":{...}}``, a tombstone as ``<DELETE>``.  A classic group's members'
  subscriptions and assignments are decoded too when the group speaks the ``consumer`` protocol.
- :class:`TransactionLogMessageParser` (``--transaction-log-decoder``, ``__transaction_state``): Kafka 3.8
  prints no JSON here but ``TransactionLog.formatRecordKeyAndValue``'s text,
  ``transaction_metadata::transactionalId=<id>`` and ``producerId:..,producerEpoch:..,state=..,
  partitions=[..],txnLastUpdateTimestamp=..,txnTimeoutMs=..``.
- :class:`ClusterMetadataLogMessageParser` (``--cluster-metadata-decoder``, ``__cluster_metadata`` and
  KRaft snapshots): the value is ``uvarint frame version (1)``, ``uvarint apiKey``, ``uvarint version``,
  then the record (Kafka: ``AbstractApiMessageSerde.read``); printed as
  ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``, with no key.
- :class:`RemoteMetadataLogMessageParser` (``--remote-log-metadata-decoder``, Kafka 3.9's, for
  ``__remote_log_metadata``): the value framed as a metadata record's, one of the RLMM's four messages,
  printed as the object Kafka builds of it prints itself (``RemoteLogSegmentMetadata{remoteLogSegmentId=...,
  state=COPY_SEGMENT_STARTED}``), with no key.

Bad bytes are handled as Kafka's parsers handle them: a record that does not decode prints
``Error at offset N, skipping. <why>`` (offsets; ``Error at N, skipping. <why>`` for metadata, as Kafka
words it) or ``Unknown record type T at offset N, skipping.`` in place of the key.  Where Kafka's parser
throws out of the tool instead (an offsets record without a key, a transaction-log value of an unknown
version or state), this one raises :class:`DecoderError` with Kafka's message, which the dump reports as one
line on stderr before going on with the next record.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ..errors import KafkaLogError
from ..messages import MessageReadError, read_api_message, read_version_prefix, schema, to_json

__all__ = ["DECODERS", "ClusterMetadataLogMessageParser", "DecoderError", "MessageParser", "OffsetsMessageParser",
           "RemoteMetadataLogMessageParser", "TransactionLogMessageParser", "metadata_record_types"]

#: What a parser returns: the key text and the payload text, either of them absent.
Parsed = tuple[str | None, str | None]
MessageParser = Callable[[int, bytes | None, bytes | None], Parsed]


class DecoderError(KafkaLogError, ValueError):
    """A record a decoder cannot print at all, where Kafka's tool would stop with an exception."""


# -- __consumer_offsets -----------------------------------------------------------------------------

#: Kafka: ``CoordinatorRecordSerde.apiMessageKeyFor`` / ``apiMessageValueFor`` (record type -> messages).
_COORDINATOR_RECORDS = {
    0: ("OffsetCommitKey", "OffsetCommitValue"),
    1: ("OffsetCommitKey", "OffsetCommitValue"),
    2: ("GroupMetadataKey", "GroupMetadataValue"),
    3: ("ConsumerGroupMetadataKey", "ConsumerGroupMetadataValue"),
    4: ("ConsumerGroupPartitionMetadataKey", "ConsumerGroupPartitionMetadataValue"),
    5: ("ConsumerGroupMemberMetadataKey", "ConsumerGroupMemberMetadataValue"),
    6: ("ConsumerGroupTargetAssignmentMetadataKey", "ConsumerGroupTargetAssignmentMetadataValue"),
    7: ("ConsumerGroupTargetAssignmentMemberKey", "ConsumerGroupTargetAssignmentMemberValue"),
    8: ("ConsumerGroupCurrentMemberAssignmentKey", "ConsumerGroupCurrentMemberAssignmentValue"),
}


class _UnknownRecordTypeError(Exception):
    def __init__(self, record_type: int) -> None:
        super().__init__(record_type)
        self.record_type = record_type


def _coordinator_message(name: str, data: bytes, version: int, what: str) -> dict[str, Any]:
    """Kafka: ``CoordinatorRecordSerde.readMessage`` (the message after the version prefix)."""
    try:
        return schema(name).read(data, version, pos=2)[0]
    except MessageReadError as e:
        raise MessageReadError(f"Could not read record with version {version} from {what}'s buffer due to: "
                               f"{e}.") from e


def _embedded(member: dict[str, Any], field: str, message: str) -> None:
    """Kafka: ``OffsetsMessageParser.prepareGroupMetadataValue.replace``: a member's subscription or
    assignment bytes become their JSON when they read as ``int16 version`` + the consumer protocol's
    message; bytes that do not read stay as they are (base64)."""
    data = member.get(field)
    if not isinstance(data, bytes):
        return
    with contextlib.suppress(MessageReadError):  # Kafka swallows the failure and keeps the bytes
        member[field] = schema(message).read(data, read_version_prefix(data, field), pos=2)[0]


class OffsetsMessageParser:
    """Kafka: ``DumpLogSegments.OffsetsMessageParser`` (``--offsets-decoder``)."""

    def __call__(self, offset: int, key: bytes | None, value: bytes | None) -> Parsed:
        if key is None:
            raise DecoderError(f"Failed to decode message at offset {offset} using offset topic decoder "
                               "(message had a missing key)")
        try:
            record_type = read_version_prefix(key, "key")
            names = _COORDINATOR_RECORDS.get(record_type)
            if names is None:
                raise _UnknownRecordTypeError(record_type)
            key_json = _coordinator_message(names[0], key, record_type, "key")
            key_text = to_json({"type": str(record_type), "data": key_json})
            if value is None:
                return key_text, "<DELETE>"
            version = read_version_prefix(value, "value")
            value_json = _coordinator_message(names[1], value, version, "value")
            if names[1] == "GroupMetadataValue" and value_json.get("protocolType") == "consumer":
                for member in value_json.get("members") or []:
                    _embedded(member, "subscription", "ConsumerProtocolSubscription")
                    _embedded(member, "assignment", "ConsumerProtocolAssignment")
            return key_text, to_json({"version": str(version), "data": value_json})
        except _UnknownRecordTypeError as e:
            return f"Unknown record type {e.record_type} at offset {offset}, skipping.", None
        except MessageReadError as e:
            return f"Error at offset {offset}, skipping. {e}", None


# -- __transaction_state ---------------------------------------------------------------------------

#: Kafka: ``TransactionState.fromId`` (the case objects' names).
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                      "Dead", "PrepareEpochFence")


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units)."""
    h = 0
    units = text.encode("utf-16-be", errors="surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return _java_int(h)


def _scala_hash_set_order(groups: list[list[tuple[str, int]]]) -> list[tuple[str, int]]:
    """The order in which a Scala 2.13 ``mutable.HashSet`` of ``TopicPartition`` iterates after
    ``++=`` of each group in turn: what ``TransactionMetadata.topicPartitions`` prints.

    The set keeps a power-of-two table of buckets, each a list sorted by the improved hash
    (``h ^ (h >>> 16)``); it iterates bucket by bucket.  The table grows before each group to the size that
    group's own size hints (``tableSizeFor((n + 1) / 0.75)``), and, for groups of up to four (Scala's
    ``Set1``..``Set4``, added one by one), whenever an add would reach three quarters of it.
    """
    capacity, size = 16, 0
    entries: dict[tuple[str, int], tuple[int, int]] = {}

    def table_size_for(n: int) -> int:
        return min(1 << max(n - 1, 4).bit_length(), 1 << 30)

    for group in groups:
        unique = list(dict.fromkeys(group))
        target = table_size_for(int((len(unique) + 1) / 0.75))
        capacity = max(capacity, target)
        for tp in unique:
            if len(unique) <= 4 and size + 1 >= int(capacity * 0.75):
                capacity *= 2
            if tp in entries:
                continue
            topic, partition = tp
            h = _java_int(31 * _java_int(31 + partition) + _java_string_hash(topic))
            improved = _java_int(h ^ ((h & 0xFFFFFFFF) >> 16))
            entries[tp] = (improved, len(entries))
            size += 1
    return sorted(entries, key=lambda tp: (entries[tp][0] & (capacity - 1), entries[tp][0], entries[tp][1]))


class TransactionLogMessageParser:
    """Kafka: ``DumpLogSegments.TransactionLogMessageParser`` = ``TransactionLog.formatRecordKeyAndValue``
    (``--transaction-log-decoder``)."""

    def __call__(self, offset: int, key: bytes | None, value: bytes | None) -> Parsed:
        if key is None:
            raise DecoderError(f"record at offset {offset} has no key: not a transaction log record")
        try:
            version = read_version_prefix(key, "key")
            key_schema = schema("TransactionLogKey")
            if not key_schema.valid[0] <= version <= key_schema.valid[1]:
                return f"unknown::version={version}", None
            transactional_id = key_schema.read(key, version, pos=2)[0]["transactionalId"]
            key_text = f"transaction_metadata::transactionalId={transactional_id}"
            if value is None:
                return key_text, "<DELETE>"
            return key_text, self._value(value)
        except MessageReadError as e:
            raise DecoderError(f"record at offset {offset}: {e}") from e

    @staticmethod
    def _value(value: bytes) -> str:
        """Kafka: ``TransactionLog.readTxnRecordValue``, then the text ``formatRecordKeyAndValue`` makes."""
        version = read_version_prefix(value, "value")
        value_schema = schema("TransactionLogValue")
        if not value_schema.valid[0] <= version <= value_schema.valid[1]:
            raise DecoderError(f"Unknown version {version} from the transaction log message value")
        txn = value_schema.read(value, version, pos=2)[0]
        status = txn["transactionStatus"]
        if not 0 <= status < len(TRANSACTION_STATES):
            raise DecoderError(f"Unknown transaction state id {status} from the transaction status message")
        state = TRANSACTION_STATES[status]
        groups = [] if state == "Empty" else [[(p["topic"], pid) for pid in p["partitionIds"]]
                                              for p in txn["transactionPartitions"] or []]
        partitions = ",".join(f"{topic}-{partition}" for topic, partition in _scala_hash_set_order(groups))
        return (f"producerId:{txn['producerId']},producerEpoch:{txn['producerEpoch']},state={state},"
                f"partitions=[{partitions}],txnLastUpdateTimestamp={txn['transactionLastUpdateTimestampMs']},"
                f"txnTimeoutMs={txn['transactionTimeoutMs']}")


# -- __cluster_metadata ----------------------------------------------------------------------------

#: The files of the KRaft metadata record schemas of Kafka 3.8 (``metadata/src/main/resources/common/metadata``;
#: ``ZkMigrationRecord.json`` holds ``ZkMigrationStateRecord``).
_METADATA_SCHEMAS = (
    "RegisterBrokerRecord", "UnregisterBrokerRecord", "TopicRecord", "PartitionRecord", "ConfigRecord",
    "PartitionChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord", "RemoveTopicRecord",
    "DelegationTokenRecord", "UserScramCredentialRecord", "FeatureLevelRecord", "ClientQuotaRecord",
    "ProducerIdsRecord", "BrokerRegistrationChangeRecord", "AccessControlEntryRecord",
    "RemoveAccessControlEntryRecord", "NoOpRecord", "ZkMigrationRecord", "RemoveUserScramCredentialRecord",
    "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord", "RemoveDelegationTokenRecord",
    "RegisterControllerRecord",
)


def _type_name(schema_name: str) -> str:
    """Kafka: ``MetadataRecordTypeGenerator`` (``MessageGenerator.toSnakeCase``, upper-cased):
    ``RegisterBrokerRecord`` -> ``REGISTER_BROKER_RECORD``."""
    out = []
    previous_upper = True
    for c in schema_name:
        if c.isupper():
            if not previous_upper:
                out.append("_")
            out.append(c)
            previous_upper = True
        else:
            out.append(c.upper())
            previous_upper = False
    return "".join(out)


def metadata_record_types() -> dict[int, tuple[str, str]]:
    """apiKey -> (``MetadataRecordType`` name, schema name), for every metadata record type of Kafka 3.8."""
    types: dict[int, tuple[str, str]] = {}
    for name in _METADATA_SCHEMAS:
        message = schema(name)
        assert message.api_key is not None
        types[message.api_key] = (_type_name(message.name), name)
    return types


class ClusterMetadataLogMessageParser:
    """Kafka: ``DumpLogSegments.ClusterMetadataLogMessageParser`` over ``MetadataRecordSerde``
    (``--cluster-metadata-decoder``)."""

    def __init__(self) -> None:
        self._types = metadata_record_types()
        self._schemas = {api_key: schema_name for api_key, (_type, schema_name) in self._types.items()}

    def __call__(self, offset: int, key: bytes | None, value: bytes | None) -> Parsed:
        try:
            return None, self._record(value)
        except MessageReadError as e:
            return None, f"Error at {offset}, skipping. {e}"

    def _record(self, value: bytes | None) -> str:
        """Kafka: ``AbstractApiMessageSerde.read`` and the JSON ``ClusterMetadataLogMessageParser`` wraps."""
        api_key, version, data = read_api_message(value, self._schemas)
        return to_json({"type": self._types[api_key][0], "version": version, "data": data})


# -- __remote_log_metadata ------------------------------------------------------------------------

class RemoteMetadataLogMessageParser:
    """Kafka 3.9.0: ``DumpLogSegments.RemoteMetadataLogMessageParser`` (``--remote-log-metadata-decoder``):
    the value through ``RemoteLogMetadataSerde.deserialize``, printed as the object's ``toString``
    (:mod:`kafkalog.remote.metadata`), with no key."""

    def __call__(self, offset: int, key: bytes | None, value: bytes | None) -> Parsed:
        from ..remote.metadata import deserialize

        try:
            return None, str(deserialize(value))
        except MessageReadError as e:
            return None, f"Error at offset {offset}, skipping. {e}"


#: The decoders by the option that selects them.
DECODERS: dict[str, Callable[[], MessageParser]] = {
    "offsets_decoder": OffsetsMessageParser,
    "transaction_log_decoder": TransactionLogMessageParser,
    "cluster_metadata_decoder": ClusterMetadataLogMessageParser,
    "remote_log_metadata_decoder": RemoteMetadataLogMessageParser,
}
