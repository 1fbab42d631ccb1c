"""The classic group coordinator's records in ``__consumer_offsets``, written and read as Kafka 3.8.0 does.

Port of the record half of ``core/src/main/scala/kafka/coordinator/group/GroupMetadataManager.scala`` (tag 3.8.0):
``offsetCommitKey``, ``groupMetadataKey``, ``offsetCommitValue``, ``groupMetadataValue``, ``readMessageKey``,
``readOffsetMessageValue`` and ``readGroupMessageValue``; and of ``partitionFor`` (``Utils.abs(groupId.hashCode)
% offsets.topic.num.partitions``).

A record's key and value each start with an ``int16`` version, then the message of the vendored schema at that
version (``MessageUtil.toVersionPrefixedBytes``; the messages are :mod:`kafkalog.messages`'):

=========================  =============================================================================
key version 0, 1           ``OffsetCommitKey``: group, topic, partition.  Kafka 3.8 writes version 1.
  value                    ``OffsetCommitValue``: offset, leader epoch (v3+), metadata, commit timestamp,
                           expire timestamp (v1 only).  3.8 writes v3, or v1 when the commit carries an
                           explicit expire timestamp (an OffsetCommit v2-v4 ``retention_time_ms``).
key version 2              ``GroupMetadataKey``: group.
  value                    ``GroupMetadataValue``: protocol type, generation, protocol, leader, current state
                           timestamp (v2+), members (rebalance timeout v1+, group instance id v3+).  3.8
                           writes v3 (its inter-broker protocol is past 2.3).
=========================  =============================================================================

A value of ``null`` is a tombstone: an offset deleted or expired, a group deleted (the log cleaner then drops the
key).  Any other key version is an *unknown key* that a loading coordinator skips with a warning (a record of the
new consumer-group protocol, KIP-848, is one to the classic coordinator); an unknown value version is Kafka's
``IllegalStateException``, here :class:`~kafkalog.errors.IllegalStateError`.  A key or value whose bytes do not
read as their schema is :class:`~kafkalog.messages.MessageReadError`.

Kafka 3.8 picks the value versions by its ``inter.broker.protocol.version``; kafkalog's broker is 3.8's, so the
versions are the 3.8 defaults' (``GroupMetadataValue`` v3, ``OffsetCommitValue`` v3 or v1), the versions a real
3.8 broker beside it writes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..errors import IllegalStateError
from ..messages import read_version_prefix, schema, write_version_prefixed

__all__ = ["GROUP_METADATA_TOPIC_NAME", "GroupMetadataKey", "GroupMetadataRecord", "MemberRecord",
           "OffsetAndMetadata", "OffsetKey", "UnknownKey", "group_metadata_key", "group_metadata_value",
           "java_string_hashcode", "offset_commit_key", "offset_commit_value", "partition_for",
           "read_group_message_value",
           "read_message_key", "read_offset_message_value"]

#: Kafka: ``Topic.GROUP_METADATA_TOPIC_NAME``.
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
#: Kafka: ``RecordBatch.NO_PARTITION_LEADER_EPOCH`` and ``OffsetCommitRequest.DEFAULT_TIMESTAMP``.
NO_PARTITION_LEADER_EPOCH = -1
DEFAULT_TIMESTAMP = -1

_OFFSET_KEY_VERSIONS = (0, 1)  # OffsetCommitKey's validVersions
_GROUP_KEY_VERSION = 2  # GroupMetadataKey's
_OFFSET_KEY_WRITTEN = 1  # OffsetCommitKey.HIGHEST_SUPPORTED_VERSION
_GROUP_VALUE_WRITTEN = 3  # the highest non-flexible version, what 3.8 writes past IBP 2.3
_OFFSET_VALUE_WRITTEN = 3
_OFFSET_VALUE_WITH_EXPIRY = 1


def java_string_hashcode(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over the UTF-16 code units, as an ``int``."""
    h = 0
    for unit in struct.unpack(f"<{len(text.encode('utf-16-le', 'surrogatepass')) // 2}H",
                              text.encode("utf-16-le", "surrogatepass")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka: ``GroupMetadataManager.partitionFor``: ``Utils.abs(groupId.hashCode) % partitions``, where
    ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 (``n & 0x7fffffff``), not to itself."""
    return (java_string_hashcode(group_id) & 0x7FFFFFFF) % partitions


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset (Kafka: ``OffsetAndMetadata``); ``leader_epoch`` and ``expire_timestamp`` are ``None``
    when absent (Kafka's empty ``Optional`` / ``None``)."""

    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None


@dataclass(frozen=True)
class MemberRecord:
    """One member as a ``GroupMetadataValue`` holds it (Kafka: ``GroupMetadataValue.MemberMetadata``)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataRecord:
    """A group as a ``GroupMetadataValue`` holds it; ``current_state_timestamp`` is ``None`` for -1 (a v0/v1
    value, or Kafka's empty ``Option``)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None
    members: tuple[MemberRecord, ...]


@dataclass(frozen=True)
class OffsetKey:
    """Kafka: ``OffsetKey`` (``GroupTopicPartition``)."""

    version: int
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    """Kafka: ``GroupMetadataKey``."""

    version: int
    group: str


@dataclass(frozen=True)
class UnknownKey:
    """Kafka: ``UnknownKey``: a key version the classic coordinator does not know."""

    version: int


# -- writing --------------------------------------------------------------------------------------------

def offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    """Kafka: ``GroupMetadataManager.offsetCommitKey``: ``OffsetCommitKey`` v1."""
    return write_version_prefixed("OffsetCommitKey", {"group": group_id, "topic": topic, "partition": partition},
                                  _OFFSET_KEY_WRITTEN)


def group_metadata_key(group_id: str) -> bytes:
    """Kafka: ``GroupMetadataManager.groupMetadataKey``: ``GroupMetadataKey`` v2."""
    return write_version_prefixed("GroupMetadataKey", {"group": group_id}, _GROUP_KEY_VERSION)


def offset_commit_value(offset: OffsetAndMetadata) -> bytes:
    """Kafka: ``GroupMetadataManager.offsetCommitValue``: v1 when the commit has an expire timestamp (the only
    version with the field), else v3."""
    version = _OFFSET_VALUE_WITH_EXPIRY if offset.expire_timestamp is not None else _OFFSET_VALUE_WRITTEN
    data: dict[str, Any] = {"offset": offset.offset, "metadata": offset.metadata,
                            "commitTimestamp": offset.commit_timestamp}
    if version == _OFFSET_VALUE_WITH_EXPIRY:
        # Kafka sets the leader epoch on every version, and v1, which has no such field, drops it unwritten.
        data["expireTimestamp"] = offset.expire_timestamp
    else:
        data["leaderEpoch"] = NO_PARTITION_LEADER_EPOCH if offset.leader_epoch is None else offset.leader_epoch
    return write_version_prefixed("OffsetCommitValue", data, version)


def group_metadata_value(group: GroupMetadataRecord) -> bytes:
    """Kafka: ``GroupMetadataManager.groupMetadataValue``, v3.  Every member needs its subscription (the
    metadata of the group's protocol) and its assignment: Kafka's ``IllegalStateException`` when either is
    missing is the caller's to raise (:class:`~kafkalog.broker.group_metadata.GroupMetadata` does)."""
    return write_version_prefixed("GroupMetadataValue", {
        "protocolType": group.protocol_type,
        "generation": group.generation,
        "protocol": group.protocol,
        "leader": group.leader,
        "currentStateTimestamp": -1 if group.current_state_timestamp is None else group.current_state_timestamp,
        "members": [{
            "memberId": m.member_id,
            "groupInstanceId": m.group_instance_id,
            "clientId": m.client_id,
            "clientHost": m.client_host,
            "rebalanceTimeout": m.rebalance_timeout,
            "sessionTimeout": m.session_timeout,
            "subscription": m.subscription,
            "assignment": m.assignment,
        } for m in group.members],
    }, _GROUP_VALUE_WRITTEN)


# -- reading ---------------------------------------------------------------------------------------------

def _read(name: str, data: bytes, version: int) -> dict[str, Any]:
    message, _end = schema(name).read(data, version, pos=2)
    return message


def read_message_key(key: bytes) -> OffsetKey | GroupMetadataKey | UnknownKey:
    """Kafka: ``GroupMetadataManager.readMessageKey``."""
    version = read_version_prefix(key, "key")
    if _OFFSET_KEY_VERSIONS[0] <= version <= _OFFSET_KEY_VERSIONS[1]:
        data = _read("OffsetCommitKey", key, version)
        return OffsetKey(version, data["group"], data["topic"], data["partition"])
    if version == _GROUP_KEY_VERSION:
        return GroupMetadataKey(version, _read("GroupMetadataKey", key, version)["group"])
    return UnknownKey(version)


def read_offset_message_value(value: bytes | None) -> OffsetAndMetadata | None:
    """Kafka: ``GroupMetadataManager.readOffsetMessageValue``; ``None`` for a tombstone."""
    if value is None:
        return None
    version = read_version_prefix(value, "value")
    low, high = schema("OffsetCommitValue").valid
    if not low <= version <= high:
        raise IllegalStateError(f"Unknown offset message version: {version}")
    data = _read("OffsetCommitValue", value, version)
    epoch = data.get("leaderEpoch", NO_PARTITION_LEADER_EPOCH)
    expire = data.get("expireTimestamp", DEFAULT_TIMESTAMP)
    return OffsetAndMetadata(
        offset=data["offset"], leader_epoch=None if epoch == NO_PARTITION_LEADER_EPOCH else epoch,
        metadata=data["metadata"], commit_timestamp=data["commitTimestamp"],
        expire_timestamp=None if expire == DEFAULT_TIMESTAMP else expire)


def read_group_message_value(value: bytes | None) -> GroupMetadataRecord | None:
    """Kafka: ``GroupMetadataManager.readGroupMessageValue``, up to the group it builds (which
    :meth:`~kafkalog.broker.group_metadata.GroupMetadata.load_group` does); ``None`` for a tombstone.  A v0
    value has no rebalance timeout: the member's session timeout stands for it, as in Kafka."""
    if value is None:
        return None
    version = read_version_prefix(value, "value")
    low, high = schema("GroupMetadataValue").valid
    if not low <= version <= high:
        raise IllegalStateError(f"Unknown group metadata message version: {version}")
    data = _read("GroupMetadataValue", value, version)
    members = tuple(MemberRecord(
        member_id=m["memberId"], group_instance_id=m.get("groupInstanceId"), client_id=m["clientId"],
        client_host=m["clientHost"],
        rebalance_timeout=m["sessionTimeout"] if version == 0 else m["rebalanceTimeout"],
        session_timeout=m["sessionTimeout"], subscription=m["subscription"], assignment=m["assignment"],
    ) for m in data["members"])
    timestamp = data.get("currentStateTimestamp", -1)
    return GroupMetadataRecord(
        protocol_type=data["protocolType"], generation=data["generation"], protocol=data["protocol"],
        leader=data["leader"], current_state_timestamp=None if timestamp == -1 else timestamp, members=members)
