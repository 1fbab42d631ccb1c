"""What the producer state holds per producer and per transaction.

Ports of (Apache Kafka, tag 3.8.0, ``storage/src/main/java/org/apache/kafka/storage/internals/log/``):
``BatchMetadata.java``, ``ProducerStateEntry.java``, ``TxnMetadata.java``, ``CompletedTxn.java``,
``LastRecord.java``, ``VerificationGuard.java`` and ``VerificationStateEntry.java``.

Invariants:

- a :class:`ProducerStateEntry` keeps at most :data:`NUM_BATCHES_TO_RETAIN` (5) batches, oldest first: the
  batches a retried produce request can duplicate.  A new producer epoch empties the queue.
- sequences are 31-bit and wrap from ``Integer.MAX_VALUE`` to 0 (``DefaultRecordBatch.decrementSequence``).
- an entry with no batch (only a transaction marker survives of the producer) has ``last_seq == -1``,
  ``first_data_offset == last_data_offset == -1``: it still fences older epochs.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass

from .._common import INT32_MAX, NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP
from ..fetch import LogOffsetMetadata
from .batch_info import ProducerBatchInfo

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "BatchMetadata",
    "CompletedTxn",
    "LastRecord",
    "ProducerStateEntry",
    "TxnMetadata",
    "VerificationGuard",
    "VerificationStateEntry",
    "decrement_sequence",
]

#: How many of a producer's last batches are kept to answer duplicates (Kafka: ``NUM_BATCHES_TO_RETAIN``).
NUM_BATCHES_TO_RETAIN = 5


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement`` on the 31-bit sequence ring (Kafka: ``DefaultRecordBatch.decrementSequence``)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


@dataclass(frozen=True)
class BatchMetadata:
    """One batch a producer wrote: its last sequence and offset, its offset span and max timestamp
    (Kafka: ``BatchMetadata``)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        """Kafka: ``firstSeq``, the last sequence less the offset delta, wrapping below 0."""
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        """Kafka: ``firstOffset``."""
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """The state of one producer id (Kafka: ``ProducerStateEntry``): its epoch, the coordinator epoch of its
    last transaction marker, its last timestamp, the first offset of its open transaction and its last
    :data:`NUM_BATCHES_TO_RETAIN` batches (lowest sequence first).

    Mutable, as Kafka's: :class:`~kafkalog.producer_state.append_info.ProducerAppendInfo` updates a copy, and the
    manager folds the copy into the entry it keeps.  Two entries compare equal when every field does (Kafka's
    has no ``equals``; the comparison serves tests and the snapshot round trip).
    """

    __slots__ = ("_batch_metadata", "coordinator_epoch", "current_txn_first_offset", "last_timestamp",
                 "producer_epoch", "producer_id")
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, last_timestamp: int,
                 current_txn_first_offset: int | None, first_batch_metadata: BatchMetadata | None) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self._batch_metadata: deque[BatchMetadata] = deque()
        if first_batch_metadata is not None:
            self._batch_metadata.append(first_batch_metadata)

    @classmethod
    def empty(cls, producer_id: int) -> ProducerStateEntry:
        """A producer never seen: no epoch, no batch (Kafka: ``ProducerStateEntry.empty``)."""
        return cls(producer_id, NO_PRODUCER_EPOCH, -1, NO_TIMESTAMP, None, None)

    @property
    def first_seq(self) -> int:
        """Kafka: ``firstSeq`` (``-1`` with no batch)."""
        return self._batch_metadata[0].first_seq if self._batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        """Kafka: ``lastSeq`` (``-1`` with no batch)."""
        return self._batch_metadata[-1].last_seq if self._batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        """Kafka: ``firstDataOffset`` (``-1`` with no batch)."""
        return self._batch_metadata[0].first_offset if self._batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        """Kafka: ``lastDataOffset`` (``-1`` with no batch)."""
        return self._batch_metadata[-1].last_offset if self._batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        """Kafka: ``lastOffsetDelta`` (0 with no batch)."""
        return self._batch_metadata[-1].offset_delta if self._batch_metadata else 0

    @property
    def batch_metadata(self) -> tuple[BatchMetadata, ...]:
        """The retained batches, lowest sequence first (Kafka: ``batchMetadata``)."""
        return tuple(self._batch_metadata)

    def is_empty(self) -> bool:
        """Whether no batch is retained (Kafka: ``isEmpty``)."""
        return not self._batch_metadata

    def with_producer_id_and_batch_metadata(self, producer_id: int,
                                            batch_metadata: BatchMetadata | None) -> ProducerStateEntry:
        """A new entry with this one's epochs, timestamp and open transaction (Kafka:
        ``withProducerIdAndBatchMetadata``)."""
        return ProducerStateEntry(producer_id, self.producer_epoch, self.coordinator_epoch, self.last_timestamp,
                                  self.current_txn_first_offset, batch_metadata)

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp: int) -> None:
        """Kafka: ``addBatch``: a new epoch forgets the old epoch's batches first."""
        self.maybe_update_producer_epoch(producer_epoch)
        self._add_batch_metadata(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        """Take ``producer_epoch``, emptying the batches if it is new (Kafka: ``maybeUpdateProducerEpoch``)."""
        if self.producer_epoch != producer_epoch:
            self._batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def _add_batch_metadata(self, batch: BatchMetadata) -> None:
        if len(self._batch_metadata) == NUM_BATCHES_TO_RETAIN:
            self._batch_metadata.popleft()
        self._batch_metadata.append(batch)

    def update(self, next_entry: ProducerStateEntry) -> None:
        """Fold ``next_entry``, an updated copy of this entry, into it (Kafka: ``update(ProducerStateEntry)``).

        ``next_entry``'s batches move here: its queue is left empty, as Kafka's ``removeFirst`` loop leaves it.
        """
        self._update(next_entry.producer_epoch, next_entry.coordinator_epoch, next_entry.last_timestamp,
                     next_entry._batch_metadata, next_entry.current_txn_first_offset)

    def update_marker(self, producer_epoch: int, coordinator_epoch: int, last_timestamp: int) -> None:
        """A transaction marker's update: no batch, no open transaction after it (Kafka:
        ``update(short, int, long)``)."""
        self._update(producer_epoch, coordinator_epoch, last_timestamp, deque(), None)

    def _update(self, producer_epoch: int, coordinator_epoch: int, last_timestamp: int,
                batch_metadata: deque[BatchMetadata], current_txn_first_offset: int | None) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        while batch_metadata:
            self._add_batch_metadata(batch_metadata.popleft())
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = current_txn_first_offset
        self.last_timestamp = last_timestamp

    def set_current_txn_first_offset(self, first_offset: int) -> None:
        """Kafka: ``setCurrentTxnFirstOffset``."""
        self.current_txn_first_offset = first_offset

    def find_duplicate_batch(self, batch: ProducerBatchInfo) -> BatchMetadata | None:
        """The retained batch of the same epoch and sequence range as ``batch``, which then duplicates it (Kafka:
        ``findDuplicateBatch``)."""
        if batch.producer_epoch != self.producer_epoch:
            return None
        return self.batch_with_sequence_range(batch.base_sequence, batch.last_sequence)

    def batch_with_sequence_range(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The retained batch with exactly this sequence range (Kafka: ``batchWithSequenceRange``)."""
        for metadata in self._batch_metadata:
            if metadata.first_seq == first_seq and metadata.last_seq == last_seq:
                return metadata
        return None

    def _fields(self) -> tuple[object, ...]:
        return (self.producer_id, self.producer_epoch, self.coordinator_epoch, self.last_timestamp,
                self.current_txn_first_offset, tuple(self._batch_metadata))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProducerStateEntry):
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(producer_id={self.producer_id}, producer_epoch={self.producer_epoch}, "
                f"current_txn_first_offset={self.current_txn_first_offset}, "
                f"coordinator_epoch={self.coordinator_epoch}, last_timestamp={self.last_timestamp}, "
                f"batch_metadata={list(self._batch_metadata)})")


class TxnMetadata:
    """A transaction of a producer: where it starts and, once its marker is written, where it ends (Kafka:
    ``TxnMetadata``).  ``last_offset`` is set when the transaction completes."""

    __slots__ = ("first_offset", "last_offset", "producer_id")

    def __init__(self, producer_id: int, first_offset: LogOffsetMetadata | int,
                 last_offset: int | None = None) -> None:
        self.producer_id = producer_id
        self.first_offset = (first_offset if isinstance(first_offset, LogOffsetMetadata)
                             else LogOffsetMetadata(first_offset))
        self.last_offset = last_offset

    def __repr__(self) -> str:
        return (f"TxnMetadata(producer_id={self.producer_id}, first_offset={self.first_offset}, "
                f"last_offset={self.last_offset})")


@dataclass(frozen=True)
class CompletedTxn:
    """A transaction a marker ended, for the transaction index (Kafka: ``CompletedTxn``).

    ``first_offset`` is the transaction's first offset, ``last_offset`` the offset of its COMMIT/ABORT marker
    (both inclusive).
    """

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True)
class LastRecord:
    """A producer's last write as the cleaner needs it (Kafka: ``LastRecord``): the offset of its last data
    batch (``None`` when only a marker is left) and its epoch."""

    last_data_offset: int | None
    producer_epoch: int


class VerificationGuard:
    """A token naming one verification of an ongoing transaction (Kafka: ``VerificationGuard``, KIP-890).

    Each new guard takes the next value of a process-wide counter; :data:`SENTINEL` (value 0) is the guard of an
    append that was never verified, and verifies nothing, not even itself.
    """

    __slots__ = ("_value",)

    SENTINEL: VerificationGuard
    _counter = itertools.count(1)
    _counter_lock = threading.Lock()

    def __init__(self, _value: int | None = None) -> None:
        if _value is None:
            with VerificationGuard._counter_lock:
                _value = next(VerificationGuard._counter)
        self._value = _value

    def verify(self, verifying_guard: VerificationGuard) -> bool:
        """Whether ``verifying_guard`` is this guard, and not the sentinel (Kafka: ``verify``)."""
        return verifying_guard is not VerificationGuard.SENTINEL and verifying_guard == self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VerificationGuard):
            return NotImplemented
        return self._value == other._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"VerificationGuard(value={self._value})"


VerificationGuard.SENTINEL = VerificationGuard(0)


class VerificationStateEntry:
    """The verification state of one producer id (Kafka: ``VerificationStateEntry``): the guard of the
    transaction being verified, when verification started, and the lowest sequence (with its epoch) seen
    since, so a higher sequence cannot be written ahead of a lower one that is being retried."""

    __slots__ = ("epoch", "lowest_sequence", "timestamp", "verification_guard")

    def __init__(self, timestamp: int, sequence: int, epoch: int) -> None:
        self.timestamp = timestamp
        self.verification_guard = VerificationGuard()
        self.lowest_sequence = sequence
        self.epoch = epoch

    def maybe_update_lowest_sequence_and_epoch(self, incoming_sequence: int, incoming_epoch: int) -> None:
        """Keep the lowest sequence of the current epoch; a higher epoch restarts it (Kafka:
        ``maybeUpdateLowestSequenceAndEpoch``)."""
        if incoming_epoch == self.epoch and incoming_sequence < self.lowest_sequence:
            self.lowest_sequence = incoming_sequence
        if incoming_epoch > self.epoch:
            self.epoch = incoming_epoch
            self.lowest_sequence = incoming_sequence

    def __repr__(self) -> str:
        return (f"VerificationStateEntry(timestamp={self.timestamp}, guard={self.verification_guard}, "
                f"lowest_sequence={self.lowest_sequence}, epoch={self.epoch})")
