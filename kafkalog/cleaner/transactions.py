"""What a cleaning round knows of transactions.

Part of the port of ``kafka/log/LogCleaner.scala`` (3.8.0): ``CleanedTransactionMetadata``.  The aborted
transactions it is given are the log's ``.txnindex`` entries (:meth:`Log.collect_aborted_transactions
<kafkalog.log.reads.LogReads.collect_aborted_transactions>`), as Kafka's cleaner takes them.  (The producers'
last batches, Kafka's ``lastRecordsOfActiveProducers``, come straight from the log's producer state:
:meth:`kafkalog.cleaner.cleaner.Cleaner.clean_segments`.)  :mod:`kafkalog.cleaner.cleaner` uses it; the package
re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import KafkaLogError
from ..record import ControlRecordType, RecordBatch
from ..transaction_index import AbortedTxn, TransactionIndex

__all__ = ["CleanedTransactionMetadata"]


def _control_type(batch: RecordBatch) -> ControlRecordType | None:
    try:
        return batch.control_type
    except KafkaLogError:
        return ControlRecordType.UNKNOWN


class _AbortedTxnMetadata:
    __slots__ = ("aborted_txn", "last_observed_batch_offset")

    def __init__(self, aborted_txn: AbortedTxn) -> None:
        self.aborted_txn = aborted_txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """Which batches of a cleaning pass belong to aborted transactions and which markers may go (Kafka:
    ``CleanedTransactionMetadata``)."""

    def __init__(self) -> None:
        self._aborted_transactions: list[AbortedTxn] = []
        self._ongoing_committed_txns: set[int] = set()
        self._ongoing_aborted_txns: dict[int, _AbortedTxnMetadata] = {}
        #: Where the aborted transactions whose markers are retained are written: the ``.txnindex`` of the
        #: segment being cleaned into (Kafka: ``cleanedIndex``); ``None`` writes nothing.
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted_transactions(self, aborted: Iterable[AbortedTxn]) -> None:
        seen = set(self._aborted_transactions)
        self._aborted_transactions.extend(txn for txn in aborted if txn not in seen)
        self._aborted_transactions.sort(key=lambda txn: txn.first_offset)

    def _consume_aborted_txns_up_to(self, offset: int) -> None:
        while self._aborted_transactions and self._aborted_transactions[0].first_offset <= offset:
            txn = self._aborted_transactions.pop(0)
            self._ongoing_aborted_txns.setdefault(txn.producer_id, _AbortedTxnMetadata(txn))  # getOrElseUpdate

    def on_control_batch_read(self, batch: RecordBatch) -> bool:
        """Whether a marker may be removed (Kafka: ``onControlBatchRead``): an ABORT once every batch of its
        transaction is gone, a COMMIT when no batch of its transaction was seen in this pass."""
        return self.on_control_read(batch.last_offset, batch.producer_id, _control_type(batch))

    def on_control_read(self, last_offset: int, producer_id: int, control_type: ControlRecordType | None) -> bool:
        """:meth:`on_control_batch_read` of a control batch given by its last offset, producer id and control
        type (``UNKNOWN`` when its record cannot be read as a control key), as a pass over arrays has them."""
        self._consume_aborted_txns_up_to(last_offset)
        if control_type is ControlRecordType.ABORT:
            metadata = self._ongoing_aborted_txns.pop(producer_id, None)
            if metadata is not None and metadata.last_observed_batch_offset is not None:
                # The marker stays until every batch of its transaction is gone, and so does its entry.
                if self.cleaned_index is not None:
                    self.cleaned_index.append(metadata.aborted_txn)
                return False
            return True
        if control_type is ControlRecordType.COMMIT:
            if producer_id in self._ongoing_committed_txns:
                self._ongoing_committed_txns.discard(producer_id)
                return False
            return True
        return False

    def on_data_batches_read(self, last_offset: int) -> None:
        """:meth:`on_batch_read` of consecutive non-transactional batches, ``last_offset`` the largest of their
        last offsets: none is aborted, and the aborted transactions that began up to them become ongoing, in
        the order one call a batch moves them."""
        self._consume_aborted_txns_up_to(last_offset)

    def on_batch_read(self, batch: RecordBatch) -> bool:
        """Whether a data batch belongs to an aborted transaction (Kafka: ``onBatchRead``)."""
        return self.on_data_read(batch.last_offset, batch.is_transactional, batch.producer_id)

    def on_data_read(self, last_offset: int, is_transactional: bool, producer_id: int) -> bool:
        """:meth:`on_batch_read` of a data batch given by its last offset, transactional bit and producer id."""
        self._consume_aborted_txns_up_to(last_offset)
        if is_transactional:
            metadata = self._ongoing_aborted_txns.get(producer_id)
            if metadata is not None:
                metadata.last_observed_batch_offset = last_offset
                return True
            self._ongoing_committed_txns.add(producer_id)
        return False
