"""Validating one producer's batches before they are appended: sequences, epochs, transactions.

Port of ``storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerAppendInfo.java`` (Apache
Kafka, tag 3.8.0): :class:`ProducerAppendInfo`.  It starts from the producer's entry after its last
successful append, checks each new batch against what came before (in the same append too), and collects
the transactions the batches start; :meth:`ProducerStateManager.update
<kafkalog.producer_state.manager.ProducerStateManager.update>` folds the result in only once the append succeeded.

What is checked depends on the append's origin (:class:`~kafkalog.append_origin.AppendOrigin`):

- every origin but ``replication`` refuses an epoch older than the producer's
  (:class:`~kafkalog.errors.InvalidProducerEpochError`) and a marker of an older coordinator epoch
  (:class:`~kafkalog.errors.TransactionCoordinatorFencedError`); replication only logs them;
- only ``client`` appends have their sequence checked (:class:`~kafkalog.errors.OutOfOrderSequenceError`):
  the first sequence of a batch follows the last one of the same epoch (``Integer.MAX_VALUE`` wraps to 0),
  a new epoch starts at 0, and a producer with no epoch (all its records deleted) may start anywhere;
- every origin refuses a non-transactional batch while the producer's transaction is open
  (:class:`~kafkalog.errors.InvalidTxnStateError`).

Batches reach it through :class:`~kafkalog.producer_state.batch_info.ProducerBatchInfo`, the few header
fields it reads: a :class:`~kafkalog.record.batch.DefaultRecordBatch` is one.
"""

from __future__ import annotations

import logging

from .._common import INT32_MAX, NO_PRODUCER_EPOCH, NO_SEQUENCE
from ..append_origin import AppendOrigin
from ..errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from ..fetch import LogOffsetMetadata
from ..record.types import ControlRecordType, EndTransactionMarker
from ..topic import TopicPartition
from .batch_info import ProducerBatchInfo
from .entry import CompletedTxn, ProducerStateEntry, TxnMetadata, VerificationStateEntry

__all__ = ["ProducerAppendInfo"]

logger = logging.getLogger(__name__)


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerAppendInfo:
    """The checks and the pending state of one producer's batches in one append (Kafka:
    ``ProducerAppendInfo``).

    ``current_entry`` is the producer's entry after its last append (``ProducerStateEntry.empty`` for a new
    producer); it is never changed: the batches update a copy, :meth:`to_entry`.  ``verification_state_entry``
    is the producer's verification state when a transaction is being verified (KIP-890), else ``None``.
    """

    def __init__(self, topic_partition: TopicPartition | str, producer_id: int, current_entry: ProducerStateEntry,
                 origin: AppendOrigin | str, verification_state_entry: VerificationStateEntry | None = None) -> None:
        self.topic_partition = topic_partition
        self.producer_id = producer_id
        self.current_entry = current_entry
        self.origin = AppendOrigin.of(origin)
        self.verification_state_entry = verification_state_entry
        self._transactions: list[TxnMetadata] = []
        self._updated_entry = current_entry.with_producer_id_and_batch_metadata(producer_id, None)

    def _maybe_validate_data_batch(self, producer_epoch: int, first_seq: int, offset: int) -> None:
        self._check_producer_epoch(producer_epoch, offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(producer_epoch, first_seq, offset)

    def _check_producer_epoch(self, producer_epoch: int, offset: int) -> None:
        """Kafka: ``checkProducerEpoch``."""
        if producer_epoch < self._updated_entry.producer_epoch:
            message = (f"Epoch of producer {self.producer_id} at offset {offset} in {self.topic_partition} is "
                       f"{producer_epoch}, which is smaller than the last seen epoch "
                       f"{self._updated_entry.producer_epoch}")
            if self.origin is AppendOrigin.REPLICATION:
                logger.warning("%s", message)
            else:
                # From 2.7 this is InvalidProducerEpoch, not ProducerFenced: the client may abort and retry.
                raise InvalidProducerEpochError(message)

    def _check_sequence(self, producer_epoch: int, append_first_seq: int, offset: int) -> None:
        """Kafka: ``checkSequence``."""
        verification = self.verification_state_entry
        if verification is not None and append_first_seq > verification.lowest_sequence:
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {self.producer_id} at offset {offset} in partition "
                f"{self.topic_partition}: {append_first_seq} (incoming seq. number), "
                f"{verification.lowest_sequence} (earliest seen sequence)")
        updated = self._updated_entry
        if producer_epoch != updated.producer_epoch:
            if append_first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in "
                    f"partition {self.topic_partition}: {producer_epoch} (request epoch), {append_first_seq} "
                    f"(seq. number), {updated.producer_epoch} (current producer epoch)")
        else:
            if not updated.is_empty():
                current_last_seq = updated.last_seq
            elif producer_epoch == self.current_entry.producer_epoch:
                current_last_seq = self.current_entry.last_seq
            else:
                current_last_seq = NO_SEQUENCE
            # With no epoch (all the producer's records deleted by retention or DeleteRecords) any sequence goes.
            if not (self.current_entry.producer_epoch == NO_PRODUCER_EPOCH
                    or _in_sequence(current_last_seq, append_first_seq)):
                raise OutOfOrderSequenceError(
                    f"Out of order sequence number for producer {self.producer_id} at offset {offset} in "
                    f"partition {self.topic_partition}: {append_first_seq} (incoming seq. number), "
                    f"{current_last_seq} (current end sequence number)")

    def append(self, batch: ProducerBatchInfo,
               first_offset_metadata: LogOffsetMetadata | None = None) -> CompletedTxn | None:
        """Check and take one batch; for a marker that ends a non-empty transaction, the transaction (Kafka:
        ``append(RecordBatch, Optional<LogOffsetMetadata>)``).

        A control batch without records (the cleaner removed the whole transaction) changes nothing.

        Raises:
            InvalidRecordError: a control batch whose record is not a COMMIT or ABORT marker.
        """
        if batch.is_control:
            if batch.count <= 0:
                return None
            marker = batch.end_transaction_marker()
            if marker is None:
                control_type = getattr(batch, "control_type", ControlRecordType.UNKNOWN)
                raise InvalidRecordError(
                    f"Invalid control record type for an end transaction marker: "
                    f"{getattr(control_type, 'name', control_type)} in the control "
                    f"batch at offset {batch.base_offset} of producer {self.producer_id}")
            return self.append_end_txn_marker(marker, batch.producer_epoch, batch.base_offset, batch.max_timestamp)
        if first_offset_metadata is None:
            first_offset_metadata = LogOffsetMetadata(batch.base_offset)
        self.append_data_batch(batch.producer_epoch, batch.base_sequence, batch.last_sequence, batch.max_timestamp,
                               first_offset_metadata, batch.last_offset, batch.is_transactional)
        return None

    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int,
                          first_offset_metadata: LogOffsetMetadata | int, last_offset: int,
                          is_transactional: bool) -> None:
        """Check and take a data batch (Kafka: ``appendDataBatch``).

        Raises:
            InvalidProducerEpochError, OutOfOrderSequenceError: as the module says.
            InvalidTxnStateError: a non-transactional batch while the producer's transaction is open.
        """
        if not isinstance(first_offset_metadata, LogOffsetMetadata):
            first_offset_metadata = LogOffsetMetadata(first_offset_metadata)
        first_offset = first_offset_metadata.message_offset
        self._maybe_validate_data_batch(epoch, first_seq, first_offset)
        self._updated_entry.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, last_timestamp)
        current_txn_first_offset = self._updated_entry.current_txn_first_offset
        if current_txn_first_offset is not None and not is_transactional:
            raise InvalidTxnStateError(
                f"Expected transactional write from producer {self.producer_id} at offset "
                f"{first_offset_metadata} in partition {self.topic_partition}")
        if current_txn_first_offset is None and is_transactional:
            self._updated_entry.set_current_txn_first_offset(first_offset)
            self._transactions.append(TxnMetadata(self.producer_id, first_offset_metadata))

    def _check_coordinator_epoch(self, end_txn_marker: EndTransactionMarker, offset: int) -> None:
        """Kafka: ``checkCoordinatorEpoch``."""
        current = self._updated_entry.coordinator_epoch
        if current > end_txn_marker.coordinator_epoch:
            if self.origin is AppendOrigin.REPLICATION:
                logger.info("Detected invalid coordinator epoch for producerId %s at offset %s in partition %s: "
                            "%s is older than previously known coordinator epoch %s", self.producer_id, offset,
                            self.topic_partition, end_txn_marker.coordinator_epoch, current)
            else:
                raise TransactionCoordinatorFencedError(
                    f"Invalid coordinator epoch for producerId {self.producer_id} at offset {offset} in "
                    f"partition {self.topic_partition}: {end_txn_marker.coordinator_epoch} (zombie), "
                    f"{current} (current)")

    def append_end_txn_marker(self, end_txn_marker: EndTransactionMarker, producer_epoch: int, offset: int,
                              timestamp: int) -> CompletedTxn | None:
        """Check and take a COMMIT/ABORT marker at ``offset`` (Kafka: ``appendEndTxnMarker``).

        Only a marker that ends a transaction with data returns its
        :class:`~kafkalog.producer_state.entry.CompletedTxn`: an empty
        transaction moves no last stable offset and has no place in the transaction index.

        Raises:
            InvalidProducerEpochError, TransactionCoordinatorFencedError: as the module says.
        """
        self._check_producer_epoch(producer_epoch, offset)
        self._check_coordinator_epoch(end_txn_marker, offset)
        first_offset = self._updated_entry.current_txn_first_offset
        completed = (CompletedTxn(self.producer_id, first_offset, offset,
                                  end_txn_marker.control_type is ControlRecordType.ABORT)
                     if first_offset is not None else None)
        self._updated_entry.update_marker(producer_epoch, end_txn_marker.coordinator_epoch, timestamp)
        return completed

    def to_entry(self) -> ProducerStateEntry:
        """The producer's entry as the batches so far leave it (Kafka: ``toEntry``)."""
        return self._updated_entry

    @property
    def started_transactions(self) -> tuple[TxnMetadata, ...]:
        """The transactions the batches started, in order (Kafka: ``startedTransactions``)."""
        return tuple(self._transactions)

    def __repr__(self) -> str:
        entry = self._updated_entry
        return (f"ProducerAppendInfo(producer_id={self.producer_id}, producer_epoch={entry.producer_epoch}, "
                f"first_sequence={entry.first_seq}, last_sequence={entry.last_seq}, "
                f"current_txn_first_offset={entry.current_txn_first_offset}, "
                f"coordinator_epoch={entry.coordinator_epoch}, last_timestamp={entry.last_timestamp}, "
                f"started_transactions={self._transactions})")
