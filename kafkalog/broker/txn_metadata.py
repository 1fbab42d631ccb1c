"""A transactional id's metadata and the state machine its transactions move through.

Port of ``core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala`` (tag 3.8.0):
``TransactionState`` (the states, their ids in the ``__transaction_state`` value and the states each may follow),
``TxnTransitMetadata`` (the next metadata, prepared before its record is written) and ``TransactionMetadata``
(the ``prepare*`` methods that check and prepare a transition, ``completeTransitionTo`` that applies it once the
record is in the log).

A transition happens in two steps, as in Kafka: ``prepare_*`` checks that the target state may follow the current
one, sets ``pending_state`` and returns a :class:`TxnTransitMetadata`; the coordinator writes that to the log; then
:meth:`TransactionMetadata.complete_transition_to` checks the written metadata against the cached one (same
producer id and epoch, partitions only growing, ...) and makes it current.  While a transition is pending no other
may be prepared: the coordinator answers ``CONCURRENT_TRANSACTIONS`` instead.

=================  ==  =============================================  ============================
state              id  may follow                                     expires (transactional.id.*)
=================  ==  =============================================  ============================
Empty              0   Empty, CompleteCommit, CompleteAbort           yes
Ongoing            1   Ongoing, Empty, CompleteCommit, CompleteAbort  no
PrepareCommit      2   Ongoing                                        no
PrepareAbort       3   Ongoing, PrepareEpochFence                     no
CompleteCommit     4   PrepareCommit                                  yes
CompleteAbort      5   PrepareAbort                                   yes
Dead               6   Empty, CompleteAbort, CompleteCommit           no
PrepareEpochFence  7   Ongoing                                        no
=================  ==  =============================================  ============================

``Dead`` and ``PrepareEpochFence`` are never written: ``Dead`` marks an id whose tombstone is being written
(expiration), ``PrepareEpochFence`` an ongoing transaction a newer producer (or a timeout) is about to abort with
a bumped epoch.  Kafka guards each metadata with a lock; kafkalog's coordinator runs on one event loop and no
handler awaits between reading and changing a metadata, so there is no lock.  A broken invariant is Kafka's
``IllegalStateException``, here :class:`~kafkalog.errors.IllegalStateError` (an ``IllegalArgumentException``
is :class:`~kafkalog.errors.IllegalArgumentError`).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from .._common import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from ..errors import IllegalArgumentError, IllegalStateError

__all__ = ["TopicPartition", "TransactionMetadata", "TransactionState", "TxnTransitMetadata",
           "is_epoch_exhausted"]

logger = logging.getLogger(__name__)

#: ``(topic, partition)``, as the group coordinator's modules name a partition.
TopicPartition = tuple[str, int]

SHORT_MAX = 2**15 - 1


class TransactionState(enum.Enum):
    """Kafka: ``TransactionState``; the value is the id written in ``TransactionLogValue.TransactionStatus``."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def state_name(self) -> str:
        """Kafka's name of the state (``Empty``, ``PrepareCommit``, ...): what ListTransactions and
        DescribeTransactions answer and the dump tool prints."""
        return _NAMES[self]

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        return _PREVIOUS[self]

    @property
    def is_expiration_allowed(self) -> bool:
        """Kafka: ``isExpirationAllowed``: an id in this state may be removed once ``transactional.id.expiration.ms``
        has passed since its last update."""
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        """Kafka: ``TransactionState.fromId``.

        Raises:
            IllegalStateError: an id no state has.
        """
        try:
            return cls(state_id)
        except ValueError:
            raise IllegalStateError(f"Unknown transaction state id {state_id} from the transaction status "
                                    "message") from None

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        """Kafka: ``TransactionState.fromName``: ``None`` for a name no state has."""
        return _BY_NAME.get(name)

    def __str__(self) -> str:
        return self.state_name


_S = TransactionState
_NAMES = {_S.EMPTY: "Empty", _S.ONGOING: "Ongoing", _S.PREPARE_COMMIT: "PrepareCommit",
          _S.PREPARE_ABORT: "PrepareAbort", _S.COMPLETE_COMMIT: "CompleteCommit", _S.COMPLETE_ABORT: "CompleteAbort",
          _S.DEAD: "Dead", _S.PREPARE_EPOCH_FENCE: "PrepareEpochFence"}
_BY_NAME = {name: state for state, name in _NAMES.items()}
_PREVIOUS = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka: ``TransactionMetadata.isEpochExhausted``: the epoch leaves no room for the bump an abort by the
    coordinator may need (``Short.MaxValue - 1`` and up)."""
    return producer_epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class TxnTransitMetadata:
    """Kafka: ``TxnTransitMetadata``: the metadata a transition leads to, written to the log before it becomes
    the cached metadata.  ``last_producer_id`` is the producer id before the transition."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


class TransactionMetadata:
    """Kafka: ``TransactionMetadata``: the cached state of one transactional id."""

    def __init__(self, transactional_id: str, producer_id: int, last_producer_id: int, producer_epoch: int,
                 last_producer_epoch: int, txn_timeout_ms: int, state: TransactionState,
                 topic_partitions: set[TopicPartition] | None = None, txn_start_timestamp: int = -1,
                 txn_last_update_timestamp: int = -1) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.last_producer_id = last_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.topic_partitions: set[TopicPartition] = set(topic_partitions or ())
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = txn_last_update_timestamp
        self.pending_state: TransactionState | None = None
        #: Kafka: ``hasFailedEpochFence``: the last fencing bump was not written, so the next one reuses its epoch.
        self.has_failed_epoch_fence = False

    @classmethod
    def create(cls, transactional_id: str, producer_id: int, producer_epoch: int, txn_timeout_ms: int,
               timestamp: int, state: TransactionState = TransactionState.EMPTY, *,
               last_producer_id: int = NO_PRODUCER_ID,
               last_producer_epoch: int = NO_PRODUCER_EPOCH) -> TransactionMetadata:
        """Kafka: ``TransactionMetadata.apply`` (its three overloads): no partitions, both timestamps
        ``timestamp``."""
        return cls(transactional_id, producer_id, last_producer_id, producer_epoch, last_producer_epoch,
                   txn_timeout_ms, state, set(), timestamp, timestamp)

    # -- partitions --

    def add_partitions(self, partitions: set[TopicPartition] | frozenset[TopicPartition]) -> None:
        self.topic_partitions |= partitions

    def remove_partition(self, topic_partition: TopicPartition) -> None:
        """Kafka: ``removePartition``: a partition whose marker is written.

        Raises:
            IllegalStateError: the transaction is not being committed or aborted.
        """
        if self.state not in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            raise IllegalStateError(f"Transaction metadata's current state is {self.state}, and its pending state is "
                                    f"{self.pending_state} while trying to remove partitions whose txn marker has "
                                    "been sent, this is not expected")
        self.topic_partitions.discard(topic_partition)

    # -- preparing transitions --

    def prepare_no_transit(self) -> TxnTransitMetadata:
        """Kafka: ``prepareNoTransit``: the current metadata, as a transit (no pending state is set)."""
        return TxnTransitMetadata(self.producer_id, self.last_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp,
                                  self.txn_last_update_timestamp)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Kafka: ``prepareFenceProducerEpoch``: bump the epoch (unless the last bump failed to be written) so
        that the ongoing transaction can be aborted past the producer that owns it.

        Raises:
            IllegalStateError: the epoch is ``Short.MaxValue`` (a bump would overflow).
        """
        if self.producer_epoch == SHORT_MAX:
            raise IllegalStateError("Cannot fence producer with epoch equal to Short.MaxValue since this would "
                                    "overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare_transition_to(TransactionState.PREPARE_EPOCH_FENCE, self.producer_id, bumped,
                                           NO_PRODUCER_EPOCH, self.txn_timeout_ms, frozenset(self.topic_partitions),
                                           self.txn_start_timestamp, self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int, expected_producer_epoch: int | None,
                                         update_timestamp: int) -> TxnTransitMetadata | None:
        """Kafka: ``prepareIncrementProducerEpoch``: the transit to ``Empty`` with the next epoch; ``None`` (Kafka's
        ``Left(PRODUCER_FENCED)``) when ``expected_producer_epoch`` (KIP-360's, from the request) is neither the
        current epoch nor the one before it.  A producer retrying with the previous epoch gets the current epoch
        back, not a second bump.

        Raises:
            IllegalStateError: the epoch is exhausted.
        """
        if self.is_producer_epoch_exhausted:
            raise IllegalStateError(f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            logger.info("Expected producer epoch %d does not match current producer epoch %d or previous producer "
                        "epoch %d", expected_producer_epoch, self.producer_epoch, self.last_producer_epoch)
            return None
        return self._prepare_transition_to(TransactionState.EMPTY, self.producer_id, next_epoch, last_epoch,
                                           new_txn_timeout_ms, frozenset(), -1, update_timestamp)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int, update_timestamp: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        """Kafka: ``prepareProducerIdRotation``: a new producer id at epoch 0, when the epoch is exhausted.

        Raises:
            IllegalStateError: a transaction is still pending.
        """
        if self.has_pending_transaction:
            raise IllegalStateError("Cannot rotate producer ids while a transaction is still pending")
        return self._prepare_transition_to(
            TransactionState.EMPTY, new_producer_id, 0, self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            new_txn_timeout_ms, frozenset(), -1, update_timestamp)

    def prepare_add_partitions(self, added: set[TopicPartition] | frozenset[TopicPartition],
                               update_timestamp: int) -> TxnTransitMetadata:
        """Kafka: ``prepareAddPartitions``: ``Ongoing`` with ``added`` too; a new transaction starts now."""
        if self.state in (TransactionState.EMPTY, TransactionState.COMPLETE_ABORT, TransactionState.COMPLETE_COMMIT):
            start = update_timestamp
        else:
            start = self.txn_start_timestamp
        return self._prepare_transition_to(TransactionState.ONGOING, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(self.topic_partitions | set(added)), start, update_timestamp)

    def prepare_abort_or_commit(self, new_state: TransactionState, update_timestamp: int) -> TxnTransitMetadata:
        """Kafka: ``prepareAbortOrCommit``: ``PrepareCommit`` or ``PrepareAbort``, the partitions kept (their markers
        are still to be written)."""
        return self._prepare_transition_to(new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                                           self.txn_timeout_ms, frozenset(self.topic_partitions),
                                           self.txn_start_timestamp, update_timestamp)

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        """Kafka: ``prepareComplete``: ``CompleteCommit`` after ``PrepareCommit``, else ``CompleteAbort``; every
        marker is written, so no partition is left."""
        new_state = (TransactionState.COMPLETE_COMMIT if self.state is TransactionState.PREPARE_COMMIT
                     else TransactionState.COMPLETE_ABORT)
        # Kafka clears the flag before the transition is written: the fence it remembers ends with this abort.
        self.has_failed_epoch_fence = False
        return self._prepare_transition_to(new_state, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                                           self.txn_start_timestamp, update_timestamp)

    def prepare_dead(self) -> TxnTransitMetadata:
        """Kafka: ``prepareDead``: the id is about to be removed (its tombstone is being written)."""
        return self._prepare_transition_to(TransactionState.DEAD, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                                           self.txn_start_timestamp, self.txn_last_update_timestamp)

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (TransactionState.ONGOING, TransactionState.PREPARE_ABORT,
                              TransactionState.PREPARE_COMMIT)

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    def _prepare_transition_to(self, new_state: TransactionState, new_producer_id: int, new_epoch: int,
                               new_last_epoch: int, new_txn_timeout_ms: int,
                               new_topic_partitions: frozenset[TopicPartition], new_txn_start_timestamp: int,
                               update_timestamp: int) -> TxnTransitMetadata:
        """Kafka: ``prepareTransitionTo``."""
        if self.pending_state is not None:
            raise IllegalStateError(f"Preparing transaction state transition to {new_state} while it already a "
                                    f"pending state {self.pending_state}")
        if new_producer_id < 0:
            raise IllegalArgumentError(f"Illegal new producer id {new_producer_id}")
        if new_state is not TransactionState.DEAD and new_epoch < 0:
            raise IllegalArgumentError(f"Illegal new producer epoch {new_epoch}")
        if self.state not in new_state.valid_previous_states:
            raise IllegalStateError(f"Preparing transaction state transition to {new_state} failed since the target "
                                    f"state {new_state} is not a valid previous state of the current state "
                                    f"{self.state}")
        transit = TxnTransitMetadata(new_producer_id, self.producer_id, new_epoch, new_last_epoch, new_txn_timeout_ms,
                                     new_state, new_topic_partitions, new_txn_start_timestamp, update_timestamp)
        logger.debug("TransactionalId %s prepare transition from %s to %s", self.transactional_id, self.state,
                     transit)
        self.pending_state = new_state
        return transit

    # -- completing a transition --

    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Kafka: ``completeTransitionTo``: make ``transit``, now in the log, the current metadata, after checking
        it is the transition that was prepared.

        Raises:
            IllegalStateError: no transition is pending, or ``transit`` is not the one prepared, or it is to
                ``Dead`` (an expired id leaves the cache instead) or ``PrepareEpochFence``.
        """
        to_state = self.pending_state
        if to_state is None:
            logger.critical("%s's transition to %s failed since pendingState is not defined: this should not happen",
                            self, transit)
            raise IllegalStateError(f"TransactionalId {self.transactional_id} completing transaction state "
                                    "transition while it does not have a pending state")
        if to_state is not transit.txn_state:
            self._throw_state_transition_failure(transit)
        S = TransactionState
        if to_state is S.EMPTY:  # InitProducerId
            if ((self.producer_epoch != transit.producer_epoch and not self._valid_producer_epoch_bump(transit))
                    or transit.topic_partitions or transit.txn_start_timestamp != -1):
                self._throw_state_transition_failure(transit)
            self.txn_timeout_ms = transit.txn_timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.last_producer_id = transit.last_producer_id
        elif to_state is S.ONGOING:  # AddPartitionsToTxn
            if (not self._valid_producer_epoch(transit) or not self.topic_partitions <= transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms):
                self._throw_state_transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.add_partitions(transit.topic_partitions)
        elif to_state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):  # EndTxn
            if (not self._valid_producer_epoch(transit) or self.topic_partitions != transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms
                    or self.txn_start_timestamp != transit.txn_start_timestamp):
                self._throw_state_transition_failure(transit)
        elif to_state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):  # every marker written
            if (not self._valid_producer_epoch(transit) or self.txn_timeout_ms != transit.txn_timeout_ms
                    or transit.txn_start_timestamp == -1):
                self._throw_state_transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions.clear()
        elif to_state is S.PREPARE_EPOCH_FENCE:
            self._throw_state_transition_failure(transit)
        else:  # Dead
            raise IllegalStateError(f"TransactionalId {self.transactional_id} is trying to complete a transition to "
                                    f"{to_state}. This means that the transactionalId was being expired, and the "
                                    "only acceptable completion of this operation is to remove the transaction "
                                    f"metadata from the cache, not to persist the {to_state} in the log.")
        logger.debug("TransactionalId %s complete transition from %s to %s", self.transactional_id, self.state,
                     transit)
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending_state = None
        self.state = to_state

    def _valid_producer_epoch(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id

    def _valid_producer_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id)

    def _throw_state_transition_failure(self, transit: TxnTransitMetadata) -> None:
        logger.critical("%s's transition to %s failed: this should not happen", self, transit)
        raise IllegalStateError(f"TransactionalId {self.transactional_id} failed transition to state {transit} due "
                                "to unexpected metadata")

    # -- value semantics (Kafka's equals / toString) --

    def _key(self) -> tuple[object, ...]:
        return (self.transactional_id, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                self.txn_timeout_ms, self.state, frozenset(self.topic_partitions), self.txn_start_timestamp,
                self.txn_last_update_timestamp)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TransactionMetadata):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable: Kafka hashes it, but nothing here keys by it

    def __repr__(self) -> str:
        return (f"TransactionMetadata(transactionalId={self.transactional_id}, producerId={self.producer_id}, "
                f"producerEpoch={self.producer_epoch}, txnTimeoutMs={self.txn_timeout_ms}, state={self.state}, "
                f"pendingState={self.pending_state}, topicPartitions={sorted(self.topic_partitions)}, "
                f"txnStartTimestamp={self.txn_start_timestamp}, "
                f"txnLastUpdateTimestamp={self.txn_last_update_timestamp})")
