"""A classic group's state machine and its members, as Kafka 3.8.0's coordinator keeps them in memory.

Port of ``core/src/main/scala/kafka/coordinator/group/GroupMetadata.scala`` and ``MemberMetadata.scala`` (tag
3.8.0).  A group moves between five states:

=======================  ======================================================  ===========================
state                    what it does                                            comes from
=======================  ======================================================  ===========================
``Empty``                no members; keeps offsets until they expire             PreparingRebalance
``PreparingRebalance``   parks JoinGroups until all rejoined or the timeout      Stable, CompletingRebalance,
                                                                                 Empty
``CompletingRebalance``  waits for the leader's SyncGroup                        PreparingRebalance
``Stable``               heartbeats answered normally                            CompletingRebalance
``Dead``                 removed (deleted, expired, unloaded)                    any
=======================  ======================================================  ===========================

A transition from a state not in the table is Kafka's ``IllegalStateException``
(:class:`~kafkalog.errors.IllegalStateError`).  Each transition stamps ``current_state_timestamp`` (the
``GroupMetadataValue`` field offsets expiry measures from).

Invariants: a static member's ``group.instance.id`` maps to exactly one member id; ``num_awaiting`` counts the
members holding a join callback; a pending member (KIP-394: given a member id, not yet rejoined with it) is never
a member; the leader is a member, or there is none.

kafkalog differs from Kafka where Kafka leaves an order to a ``HashMap``: members are kept in the order they joined,
so a new leader (``remove``, ``maybe_elect_new_joined_leader``) is the earliest remaining member, and a tie in the
protocol vote goes to the protocol that got its first vote earliest.  Any of Kafka's orders is a valid one; this one
is reproducible.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from ..errors import IllegalArgumentError, IllegalStateError
from ..messages import MessageReadError, schema
from .group_records import GroupMetadataRecord, MemberRecord, OffsetAndMetadata

__all__ = ["CommitRecordMetadataAndOffset", "GroupMetadata", "GroupOverview", "GroupState", "GroupSummary",
           "JoinGroupResult", "MemberMetadata", "MemberSummary", "SyncGroupResult", "TopicPartition"]

logger = logging.getLogger(__name__)

#: Kafka: ``ConsumerProtocol.PROTOCOL_TYPE``.
CONSUMER_PROTOCOL_TYPE = "consumer"
_MEMBER_ID_DELIMITER = "-"

#: (topic, partition)
TopicPartition = tuple[str, int]


class GroupState(enum.Enum):
    """Kafka: ``GroupState`` (``toString`` is the name: ``PreparingRebalance``, ...)."""

    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"

    def __str__(self) -> str:
        return self.value


_VALID_PREVIOUS = {
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: set(GroupState),
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
}


@dataclass
class JoinGroupResult:
    """Kafka: ``JoinGroupResult``; ``members`` are ``(member id, group instance id, metadata)``."""

    member_id: str
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncGroupResult:
    """Kafka: ``SyncGroupResult``."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]


@dataclass(frozen=True)
class MemberSummary:
    """Kafka: ``MemberSummary`` (DescribeGroups' member)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSummary:
    """Kafka: ``GroupSummary`` (DescribeGroups' group)."""

    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberSummary, ...]


@dataclass(frozen=True)
class GroupOverview:
    """Kafka: ``GroupOverview`` (ListGroups' group)."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True)
class CommitRecordMetadataAndOffset:
    """Kafka: ``CommitRecordMetadataAndOffset``: a committed offset and the offset of the batch that holds it
    (``None`` while its append is pending), so that the later of a transactional and a plain commit wins."""

    appended_batch_offset: int | None
    offset_and_metadata: OffsetAndMetadata

    def older_than(self, that: CommitRecordMetadataAndOffset) -> bool:
        if self.appended_batch_offset is None or that.appended_batch_offset is None:
            raise IllegalStateError("Cannot compare offset commits whose records were not appended")
        return self.appended_batch_offset < that.appended_batch_offset


class MemberMetadata:
    """One member of a classic group (Kafka: ``MemberMetadata``): its timeouts, its protocols in order of
    preference, its assignment, and the callbacks of its parked JoinGroup and SyncGroup."""

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 supported_protocols: list[tuple[str, bytes]], assignment: bytes = b"") -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols = supported_protocols
        self.assignment = assignment
        self.awaiting_join_callback: JoinCallback | None = None
        self.awaiting_sync_callback: SyncCallback | None = None
        self.is_new = False
        #: Set when a heartbeat (or anything that proves the member alive) arrives; cleared when the next
        #: expiration is scheduled.
        self.heartbeat_satisfied = False

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    def metadata(self, protocol: str) -> bytes:
        """Kafka: ``MemberMetadata.metadata``: the member's metadata for ``protocol``."""
        for name, metadata in self.supported_protocols:
            if name == protocol:
                return metadata
        raise IllegalArgumentError("Member does not support protocol")

    @property
    def has_satisfied_heartbeat(self) -> bool:
        """Kafka: ``hasSatisfiedHeartbeat``: a new member must heartbeat even while it waits to join; any other
        waiting member counts as alive."""
        if self.is_new:
            return self.heartbeat_satisfied
        if self.is_awaiting_join or self.is_awaiting_sync:
            return True
        return self.heartbeat_satisfied

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Kafka: ``matches``: the same protocols, in the same order, with the same metadata."""
        return len(protocols) == len(self.supported_protocols) and all(
            a[0] == b[0] and bytes(a[1]) == bytes(b[1]) for a, b in zip(protocols, self.supported_protocols,
                                                                       strict=True))

    def summary(self, protocol: str) -> MemberSummary:
        return MemberSummary(self.member_id, self.group_instance_id, self.client_id, self.client_host,
                             self.metadata(protocol), self.assignment)

    def summary_no_metadata(self) -> MemberSummary:
        return MemberSummary(self.member_id, self.group_instance_id, self.client_id, self.client_host, b"", b"")

    def vote(self, candidates: set[str]) -> str:
        """Kafka: ``vote``: the member's most preferred protocol among ``candidates``."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise IllegalArgumentError("Member does not support any of the candidate protocols")

    def __repr__(self) -> str:
        return (f"MemberMetadata(memberId={self.member_id}, groupInstanceId={self.group_instance_id}, "
                f"clientId={self.client_id}, clientHost={self.client_host}, sessionTimeoutMs={self.session_timeout_ms}"
                f", rebalanceTimeoutMs={self.rebalance_timeout_ms}, "
                f"supportedProtocols={[p for p, _ in self.supported_protocols]})")


class GroupMetadata:
    """A classic group (Kafka: ``GroupMetadata``): its state, generation, protocol, leader, members and offsets.

    Not thread-safe, as Kafka's is not: Kafka guards it with the group's lock; kafkalog's coordinator runs on one
    event loop and never awaits in the middle of a change.
    """

    def __init__(self, group_id: str, initial_state: GroupState, time_ms: Callable[[], int]) -> None:
        self.group_id = group_id
        self._state = initial_state
        self._time_ms = time_ms
        self.current_state_timestamp: int | None = time_ms()
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self._leader_id: str | None = None
        self._members: dict[str, MemberMetadata] = {}
        self._static_members: dict[str, str] = {}
        self._pending_members: set[str] = set()
        self._num_members_awaiting_join = 0
        self._supported_protocols: dict[str, int] = {}
        self._offsets: dict[TopicPartition, CommitRecordMetadataAndOffset] = {}
        self._pending_offset_commits: dict[TopicPartition, OffsetAndMetadata] = {}
        self._pending_transactional_offset_commits: dict[int, dict[TopicPartition, CommitRecordMetadataAndOffset]] = {}
        self._received_transactional_offset_commits = False
        self._received_consumer_offset_commits = False
        self._pending_sync_members: set[str] = set()
        self._subscribed_topics: set[str] | None = None
        self.new_member_added = False

    @classmethod
    def load_group(cls, group_id: str, record: GroupMetadataRecord, time_ms: Callable[[], int]) -> GroupMetadata:
        """Kafka: ``GroupMetadata.loadGroup`` over ``readGroupMessageValue``'s members: ``Empty`` without members,
        else ``Stable``."""
        members = [MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                  m.rebalance_timeout, m.session_timeout, record.protocol_type,
                                  [(record.protocol or "", m.subscription)], m.assignment)
                   for m in record.members]
        group = cls(group_id, GroupState.STABLE if members else GroupState.EMPTY, time_ms)
        group.generation_id = record.generation
        group.protocol_type = record.protocol_type or None
        group.protocol_name = record.protocol
        group._leader_id = record.leader
        group.current_state_timestamp = record.current_state_timestamp
        for member in members:
            group.add(member)
            logger.info("Loaded member %s in group %s with generation %s.", member, group_id, group.generation_id)
        group._subscribed_topics = group.compute_subscribed_topics()
        return group

    # -- queries --

    @property
    def current_state(self) -> GroupState:
        return self._state

    def is_(self, state: GroupState) -> bool:
        return self._state is state

    def has(self, member_id: str) -> bool:
        return member_id in self._members

    def get(self, member_id: str) -> MemberMetadata:
        return self._members[member_id]

    @property
    def size(self) -> int:
        return len(self._members)

    def is_leader(self, member_id: str) -> bool:
        return self._leader_id == member_id

    @property
    def leader_or_null(self) -> str | None:
        return self._leader_id

    @property
    def current_state_timestamp_or_default(self) -> int:
        return -1 if self.current_state_timestamp is None else self.current_state_timestamp

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def current_static_member_id(self, group_instance_id: str) -> str | None:
        return self._static_members.get(group_instance_id)

    def has_static_member(self, group_instance_id: str) -> bool:
        return group_instance_id in self._static_members

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self._pending_members

    @property
    def num_pending(self) -> int:
        return len(self._pending_members)

    @property
    def num_awaiting(self) -> int:
        return self._num_members_awaiting_join

    @property
    def all_members(self) -> list[str]:
        return list(self._members)

    @property
    def all_static_members(self) -> set[str]:
        return set(self._static_members)

    def all_dynamic_members(self) -> set[str]:
        """For tests, as Kafka's."""
        return set(self._members) - set(self._static_members.values())

    @property
    def all_member_metadata(self) -> list[MemberMetadata]:
        return list(self._members.values())

    def not_yet_rejoined_members(self) -> dict[str, MemberMetadata]:
        return {k: m for k, m in self._members.items() if not m.is_awaiting_join}

    @property
    def has_all_members_joined(self) -> bool:
        return len(self._members) == self._num_members_awaiting_join and not self._pending_members

    @property
    def rebalance_timeout_ms(self) -> int:
        """Kafka: ``rebalanceTimeoutMs``: the largest of the members'."""
        return max((m.rebalance_timeout_ms for m in self._members.values()), default=0)

    @property
    def can_rebalance(self) -> bool:
        return self._state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    def is_in_states(self, states: Iterable[str]) -> bool:
        return self._state.value.lower() in set(states)

    # -- membership --

    def add(self, member: MemberMetadata, callback: JoinCallback | None = None) -> None:
        """Kafka: ``add``."""
        if member.group_instance_id is not None:
            if member.group_instance_id in self._static_members:
                raise IllegalStateError(f"Static member with groupInstanceId={member.group_instance_id} cannot be "
                                        f"added to group {self.group_id} since it is already a member")
            self._static_members[member.group_instance_id] = member.member_id
        if not self._members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type or not self.supports_protocols(
                member.protocol_type, {p for p, _ in member.supported_protocols}):
            raise IllegalStateError(f"Member {member.member_id} does not speak the protocols of group {self.group_id}")
        if self._leader_id is None:
            self._leader_id = member.member_id
        self._members[member.member_id] = member
        self._inc_supported_protocols(member)
        member.awaiting_join_callback = callback
        if member.is_awaiting_join:
            self._num_members_awaiting_join += 1
        self._pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        """Kafka: ``remove``."""
        member = self._members.pop(member_id, None)
        if member is not None:
            self._dec_supported_protocols(member)
            if member.is_awaiting_join:
                self._num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self._static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self._leader_id = next(iter(self._members), None)
        self._pending_members.discard(member_id)
        self._pending_sync_members.discard(member_id)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Kafka: ``maybeElectNewJoinedLeader``: keep a leader that rejoined, else make the first member that did
        the leader; ``False`` when there is no leader or no member rejoined."""
        if self._leader_id is None:
            return False
        current = self.get(self._leader_id)
        if current.is_awaiting_join:
            return True
        for member_id, member in self._members.items():
            if member.is_awaiting_join:
                self._leader_id = member_id
                logger.info("Group leader [member.id: %s, group.instance.id: %s] failed to join before rebalance "
                            "timeout, while new leader %s was elected.", current.member_id,
                            current.group_instance_id, member)
                return True
        logger.info("Group leader [member.id: %s, group.instance.id: %s] failed to join before rebalance timeout, "
                    "and the group couldn't proceed to next generation because no member joined.",
                    current.member_id, current.group_instance_id)
        return False

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> MemberMetadata:
        """Kafka: ``replaceStaticMember``: the member keeps everything but its id; a request parked under the old
        id is fenced."""
        member = self._members.pop(old_member_id, None)
        if member is None:
            raise IllegalArgumentError(f"Cannot replace non-existing member id {old_member_id}")
        self.maybe_invoke_join_callback(member, JoinGroupResult(old_member_id, ErrorCode.fenced_instance_id))
        self.maybe_invoke_sync_callback(member, SyncGroupResult(ErrorCode.fenced_instance_id))
        member.member_id = new_member_id
        self._members[new_member_id] = member
        if self.is_leader(old_member_id):
            self._leader_id = new_member_id
        self._static_members[group_instance_id] = new_member_id
        return member

    def add_pending_member(self, member_id: str) -> None:
        if self.has(member_id):
            raise IllegalStateError(f"Attempt to add pending member {member_id} which is already a stable member "
                                    "of the group")
        self._pending_members.add(member_id)

    def add_pending_sync_member(self, member_id: str) -> None:
        if not self.has(member_id):
            raise IllegalStateError(f"Attempt to add a pending sync for member {member_id} which is not a member "
                                    "of the group")
        self._pending_sync_members.add(member_id)

    def remove_pending_sync_member(self, member_id: str) -> None:
        if not self.has(member_id):
            raise IllegalStateError(f"Attempt to remove a pending sync for member {member_id} which is not a member "
                                    "of the group")
        self._pending_sync_members.discard(member_id)

    @property
    def has_received_sync_from_all_members(self) -> bool:
        return not self._pending_sync_members

    @property
    def all_pending_sync_members(self) -> set[str]:
        return set(self._pending_sync_members)

    def clear_pending_sync_members(self) -> None:
        self._pending_sync_members.clear()

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        """Kafka: ``generateMemberId``: the instance id (or else the client id), ``-``, a random UUID."""
        prefix = client_id if group_instance_id is None else group_instance_id
        return prefix + _MEMBER_ID_DELIMITER + str(uuid.uuid4())

    def transition_to(self, state: GroupState) -> None:
        """Kafka: ``transitionTo``."""
        if self._state not in _VALID_PREVIOUS[state]:
            raise IllegalStateError(
                f"Group {self.group_id} should be in the "
                f"{','.join(sorted(s.value for s in _VALID_PREVIOUS[state]))} states before moving to {state} state. "
                f"Instead it is in {self._state} state")
        self._state = state
        self.current_state_timestamp = self._time_ms()

    # -- protocols --

    def select_protocol(self) -> str:
        """Kafka: ``selectProtocol``: each member votes for its preferred protocol among those all support; the
        most votes win."""
        if not self._members:
            raise IllegalStateError("Cannot select protocol for empty group")
        candidates = self._candidate_protocols()
        votes: dict[str, int] = {}
        for member in self._members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda p: votes[p])

    def _inc_supported_protocols(self, member: MemberMetadata) -> None:
        for name, _ in member.supported_protocols:
            self._supported_protocols[name] = self._supported_protocols.get(name, 0) + 1

    def _dec_supported_protocols(self, member: MemberMetadata) -> None:
        for name, _ in member.supported_protocols:
            self._supported_protocols[name] = self._supported_protocols.get(name, 0) - 1

    def _candidate_protocols(self) -> set[str]:
        n = len(self._members)
        return {p for p, count in self._supported_protocols.items() if count == n}

    def supports_protocols(self, member_protocol_type: str, member_protocols: set[str]) -> bool:
        """Kafka: ``supportsProtocols``."""
        if self.is_(GroupState.EMPTY):
            return bool(member_protocol_type) and bool(member_protocols)
        return self.protocol_type == member_protocol_type and any(
            self._supported_protocols.get(p, 0) == len(self._members) for p in member_protocols)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka: ``isSubscribedToTopic``: ``True`` when the subscriptions are not known."""
        return True if self._subscribed_topics is None else topic in self._subscribed_topics

    @property
    def subscribed_topics(self) -> set[str] | None:
        return self._subscribed_topics

    def compute_subscribed_topics(self) -> set[str] | None:
        """Kafka: ``computeSubscribedTopics``: the topics of every member's ``consumer`` subscription, read as its
        version 0 (the prefix of every version); ``None`` when not a consumer group, no protocol yet, or a
        subscription that does not read."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self._members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self._members.values():
                data = member.metadata(self.protocol_name)
                if len(data) < 2 or int.from_bytes(data[:2], "big", signed=True) < 0:
                    raise MessageReadError("bad consumer protocol version")
                subscription, _ = schema("ConsumerProtocolSubscription").read(data, 0, pos=2)
                topics.update(subscription["topics"])
        except (MessageReadError, IllegalArgumentError) as e:
            logger.warning("Failed to parse Consumer Protocol %s:%s of group %s. Consumer group coordinator is not "
                           "aware of the subscribed topics. (%s)", CONSUMER_PROTOCOL_TYPE, self.protocol_name,
                           self.group_id, e)
            return None
        return topics

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, callback: JoinCallback | None) -> None:
        """Kafka: ``updateMember``."""
        self._dec_supported_protocols(member)
        member.supported_protocols = protocols
        self._inc_supported_protocols(member)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self._num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self._num_members_awaiting_join -= 1
        member.awaiting_join_callback = callback

    def maybe_invoke_join_callback(self, member: MemberMetadata, result: JoinGroupResult) -> None:
        """Kafka: ``maybeInvokeJoinCallback``."""
        callback = member.awaiting_join_callback
        if callback is None:
            return
        member.awaiting_join_callback = None
        self._num_members_awaiting_join -= 1
        try:
            callback(result)
        except Exception:
            logger.exception("Failed to invoke join callback for %s.", member)
            callback(JoinGroupResult(member.member_id, ErrorCode.unknown_server_error))

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result: SyncGroupResult) -> bool:
        """Kafka: ``maybeInvokeSyncCallback``: whether there was a callback to invoke."""
        callback = member.awaiting_sync_callback
        if callback is None:
            return False
        member.awaiting_sync_callback = None
        try:
            callback(result)
        except Exception:
            logger.exception("Failed to invoke sync callback for %s.", member)
            callback(SyncGroupResult(ErrorCode.unknown_server_error))
        return True

    def init_next_generation(self) -> None:
        """Kafka: ``initNextGeneration``."""
        self.generation_id += 1
        if self._members:
            self.protocol_name = self.select_protocol()
            self._subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self._subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY)
        self._received_consumer_offset_commits = False
        self._received_transactional_offset_commits = False
        self.clear_pending_sync_members()

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """Kafka: ``currentMemberMetadata``: what the leader's JoinGroup response lists."""
        if self.is_(GroupState.DEAD) or self.is_(GroupState.PREPARING_REBALANCE):
            raise IllegalStateError(f"Cannot obtain member metadata for group in state {self._state}")
        assert self.protocol_name is not None
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self._members.values()]

    def summary(self) -> GroupSummary:
        """Kafka: ``summary``: a stable group shows its members' metadata and assignments."""
        if self.is_(GroupState.STABLE):
            if self.protocol_name is None:
                raise IllegalStateError("Invalid null group protocol for stable group")
            return GroupSummary(str(self._state), self.protocol_type or "", self.protocol_name,
                                tuple(m.summary(self.protocol_name) for m in self._members.values()))
        return GroupSummary(str(self._state), self.protocol_type or "", "",
                            tuple(m.summary_no_metadata() for m in self._members.values()))

    def overview(self) -> GroupOverview:
        return GroupOverview(self.group_id, self.protocol_type or "", str(self._state))

    def to_record(self, assignment: Mapping[str, bytes]) -> GroupMetadataRecord:
        """What ``GroupMetadataManager.groupMetadataValue`` writes of this group, with ``assignment``."""
        members = []
        for m in self._members.values():
            if self.protocol_name is None:
                raise IllegalStateError("Attempted to write non-empty group metadata with no defined protocol.")
            if m.member_id not in assignment:
                raise IllegalStateError(f"Attempted to write member {m.member_id} of group {self.group_id} with no "
                                        "assignment.")
            members.append(MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                        m.rebalance_timeout_ms, m.session_timeout_ms, m.metadata(self.protocol_name),
                                        bytes(assignment[m.member_id])))
        return GroupMetadataRecord(self.protocol_type or "", self.generation_id, self.protocol_name, self._leader_id,
                                   self.current_state_timestamp_or_default, tuple(members))

    # -- offsets --

    def initialize_offsets(self, offsets: Mapping[TopicPartition, CommitRecordMetadataAndOffset],
                           pending: Mapping[int, Mapping[TopicPartition, CommitRecordMetadataAndOffset]]) -> None:
        self._offsets.update(offsets)
        for producer_id, producer_offsets in pending.items():
            self._pending_transactional_offset_commits[producer_id] = dict(producer_offsets)

    def on_offset_commit_append(self, tp: TopicPartition, commit: CommitRecordMetadataAndOffset) -> None:
        """Kafka: ``onOffsetCommitAppend``."""
        if tp in self._pending_offset_commits:
            if commit.appended_batch_offset is None:
                raise IllegalStateError("Cannot complete offset commit write without providing the metadata of the "
                                        "record in the log.")
            current = self._offsets.get(tp)
            if current is None or current.older_than(commit):
                self._offsets[tp] = commit
        if self._pending_offset_commits.get(tp) == commit.offset_and_metadata:
            del self._pending_offset_commits[tp]

    def fail_pending_offset_write(self, tp: TopicPartition, offset: OffsetAndMetadata) -> None:
        if self._pending_offset_commits.get(tp) == offset:
            del self._pending_offset_commits[tp]

    def prepare_offset_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self._received_consumer_offset_commits = True
        self._pending_offset_commits.update(offsets)

    def prepare_txn_offset_commit(self, producer_id: int, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Kafka: ``prepareTxnOffsetCommit`` (the transaction coordinator's part uses it)."""
        self._received_transactional_offset_commits = True
        producer_offsets = self._pending_transactional_offset_commits.setdefault(producer_id, {})
        for tp, offset in offsets.items():
            producer_offsets[tp] = CommitRecordMetadataAndOffset(None, offset)

    @property
    def has_received_consistent_offset_commits(self) -> bool:
        return not self._received_consumer_offset_commits or not self._received_transactional_offset_commits

    def fail_pending_txn_offset_commit(self, producer_id: int, tp: TopicPartition) -> None:
        pending = self._pending_transactional_offset_commits.get(producer_id)
        if pending is not None:
            pending.pop(tp, None)
            if not pending:
                del self._pending_transactional_offset_commits[producer_id]

    def on_txn_offset_commit_append(self, producer_id: int, tp: TopicPartition,
                                    commit: CommitRecordMetadataAndOffset) -> None:
        pending = self._pending_transactional_offset_commits.get(producer_id)
        if pending is not None and tp in pending and pending[tp].offset_and_metadata == commit.offset_and_metadata:
            pending[tp] = commit

    def complete_pending_txn_offset_commit(self, producer_id: int, is_commit: bool) -> None:
        """Kafka: ``completePendingTxnOffsetCommit``: after the marker, a commit's offsets replace older ones."""
        pending = self._pending_transactional_offset_commits.pop(producer_id, None)
        if not is_commit or pending is None:
            return
        for tp, commit in pending.items():
            if commit.appended_batch_offset is None:
                raise IllegalStateError(f"Trying to complete a transactional offset commit for producerId "
                                        f"{producer_id} and groupId {self.group_id} even though the offset commit "
                                        "record itself hasn't been appended to the log.")
            current = self._offsets.get(tp)
            if current is None or current.older_than(commit):
                self._offsets[tp] = commit

    @property
    def active_producers(self) -> set[int]:
        return set(self._pending_transactional_offset_commits)

    def has_pending_offset_commits_from_producer(self, producer_id: int) -> bool:
        return producer_id in self._pending_transactional_offset_commits

    def has_pending_offset_commits_for_topic_partition(self, tp: TopicPartition) -> bool:
        """Kafka: ``hasPendingOffsetCommitsForTopicPartition`` (what OffsetFetch's ``require_stable`` asks)."""
        return tp in self._pending_offset_commits or any(
            tp in pending for pending in self._pending_transactional_offset_commits.values())

    def remove_all_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return self.remove_offsets(list(self._offsets))

    def remove_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, OffsetAndMetadata]:
        """Kafka: ``removeOffsets``: pending commits of the partitions are dropped too."""
        removed: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp in tps:
            self._pending_offset_commits.pop(tp, None)
            for pending in self._pending_transactional_offset_commits.values():
                pending.pop(tp, None)
            commit = self._offsets.pop(tp, None)
            if commit is not None:
                removed[tp] = commit.offset_and_metadata
        return removed

    def remove_expired_offsets(self, current_timestamp: int, retention_ms: int) -> dict[TopicPartition,
                                                                                        OffsetAndMetadata]:
        """Kafka: ``removeExpiredOffsets`` (KIP-211): an empty group's offsets expire ``retention_ms`` after it
        became empty; a stable consumer group's, of topics no member subscribes to, after their commit; a group
        without a protocol (a standalone consumer's) after their commit.  An expire timestamp in the record
        (OffsetCommit v2-v4) overrides the rule."""

        def expired(base: Callable[[CommitRecordMetadataAndOffset], int],
                    subscribed: set[str] | frozenset[str] = frozenset()) -> dict[TopicPartition, OffsetAndMetadata]:
            out = {}
            for tp, commit in self._offsets.items():
                if tp[0] in subscribed or tp in self._pending_offset_commits:
                    continue
                expire = commit.offset_and_metadata.expire_timestamp
                if (current_timestamp - base(commit) >= retention_ms) if expire is None else (
                        current_timestamp >= expire):
                    out[tp] = commit.offset_and_metadata
            return out

        if self.protocol_type is not None and self.is_(GroupState.EMPTY):
            state_timestamp = self.current_state_timestamp
            result = expired(lambda c: state_timestamp if state_timestamp is not None
                             else c.offset_and_metadata.commit_timestamp)
        elif (self.protocol_type == CONSUMER_PROTOCOL_TYPE and self._subscribed_topics is not None
              and self.is_(GroupState.STABLE)):
            result = expired(lambda c: c.offset_and_metadata.commit_timestamp, self._subscribed_topics)
        elif self.protocol_type is None:
            result = expired(lambda c: c.offset_and_metadata.commit_timestamp)
        else:
            result = {}
        if result:
            logger.debug("Expired offsets from group '%s': %s", self.group_id, sorted(result))
        for tp in result:
            del self._offsets[tp]
        return result

    def all_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return {tp: c.offset_and_metadata for tp, c in self._offsets.items()}

    def offset(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        commit = self._offsets.get(tp)
        return None if commit is None else commit.offset_and_metadata

    def offset_with_record_metadata(self, tp: TopicPartition) -> CommitRecordMetadataAndOffset | None:
        """For tests, as Kafka's."""
        return self._offsets.get(tp)

    def pending_offset_commit(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        """For tests, as Kafka's."""
        return self._pending_offset_commits.get(tp)

    def pending_txn_offset_commit(self, producer_id: int, tp: TopicPartition) -> CommitRecordMetadataAndOffset | None:
        """For tests, as Kafka's."""
        return self._pending_transactional_offset_commits.get(producer_id, {}).get(tp)

    @property
    def num_offsets(self) -> int:
        return len(self._offsets)

    @property
    def has_offsets(self) -> bool:
        return bool(self._offsets or self._pending_offset_commits or self._pending_transactional_offset_commits)

    def __repr__(self) -> str:
        return (f"GroupMetadata(groupId={self.group_id}, generation={self.generation_id}, "
                f"protocolType={self.protocol_type}, currentState={self._state}, members={self._members})")

