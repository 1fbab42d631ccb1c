"""What the producer state reads of a batch: the header fields of Kafka's ``RecordBatch`` it uses.

Kafka's ``ProducerStateEntry.findDuplicateBatch`` and ``ProducerAppendInfo.append`` take a ``RecordBatch``
(``clients/src/main/java/org/apache/kafka/common/record/RecordBatch.java``, tag 3.8.0).  Here they take
:class:`ProducerBatchInfo`, the part of it they read, so that recovery can feed them from a header scan
(:mod:`kafkalog.log.producer_state_updates`) as well as from a
:class:`~kafkalog.record.batch.DefaultRecordBatch`.  It sits below both the entries
(:mod:`~kafkalog.producer_state.entry`) and the append checks (:mod:`~kafkalog.producer_state.append_info`),
which read it.
"""

from __future__ import annotations

from typing import Protocol

from ..record.types import EndTransactionMarker

__all__ = ["ProducerBatchInfo"]


class ProducerBatchInfo(Protocol):
    """What the producer state reads of a batch (Kafka reads them from ``RecordBatch``).

    All header fields but the marker: :meth:`end_transaction_marker` is asked only of a control batch with
    records (``count > 0``), and the marker's timestamp is taken as ``max_timestamp``: Kafka reads the
    timestamp of the batch's one record, which is the batch's max timestamp in every batch a broker writes
    (one record; with ``LogAppendTime`` Kafka's reader returns the max timestamp for every record).
    """

    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...
    @property
    def count(self) -> int: ...
    def end_transaction_marker(self) -> EndTransactionMarker | None: ...
