"""A partition's producer state, as Kafka 3.x keeps it beside the log (``org.apache.kafka.storage.internals.log``,
tag 3.8.0): which producer ids wrote, their last batches and epochs, their open transactions, and the
``<offset>.snapshot`` files that persist it.

- :mod:`~kafkalog.producer_state.entry`: per producer and per transaction (``ProducerStateEntry``,
  ``BatchMetadata``, ``TxnMetadata``, ``CompletedTxn``, ``LastRecord``, ``VerificationGuard``,
  ``VerificationStateEntry``);
- :mod:`~kafkalog.producer_state.batch_info`: what the producer state reads of a batch
  (:class:`~kafkalog.producer_state.batch_info.ProducerBatchInfo`);
- :mod:`~kafkalog.producer_state.append_info`: the checks of one producer's batches in an append
  (``ProducerAppendInfo``);
- :mod:`~kafkalog.producer_state.manager`: the state of a partition (``ProducerStateManager``);
- :mod:`~kafkalog.producer_state.producer_map`: the manager's producers by id, those loaded from a snapshot kept
  as its rows (:class:`~kafkalog.producer_state.producer_map.ProducerMap`);
- :mod:`~kafkalog.producer_state.snapshot`: the snapshot files (``readSnapshot``, ``writeSnapshot``,
  ``SnapshotFile``), read in bounded memory, and what a load makes of one's transactions
  (:class:`~kafkalog.producer_state.snapshot.SnapshotTransactions`).

A log feeds it as ``UnifiedLog`` does: for each batch with a producer id, ``prepare_update`` (once per producer
and append), ``append``; after the append, ``update`` for each producer, ``complete_txn`` for each transaction a
marker ended (after its transaction-index entry), ``update_map_end_offset``; ``take_snapshot`` at roll and at
clean shutdown; ``truncate_and_reload`` when the log is loaded or truncated.  That side of it is the log's
(:mod:`kafkalog.log.producer_state_updates`): the package sits below the segments, which feed it as they are
recovered, and imports neither them nor the log.
"""

from ..append_origin import AppendOrigin
from ..errors import (
    CorruptSnapshotError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from .append_info import ProducerAppendInfo
from .batch_info import ProducerBatchInfo
from .entry import (
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    CompletedTxn,
    LastRecord,
    ProducerStateEntry,
    TxnMetadata,
    VerificationGuard,
    VerificationStateEntry,
)
from .manager import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    LATE_TRANSACTION_BUFFER_MS,
    ProducerStateManager,
    ProducerStateManagerConfig,
)
from .snapshot import (
    MAX_SNAPSHOT_BYTES,
    PRODUCER_SNAPSHOT_VERSION,
    SnapshotFile,
    SnapshotTransactions,
    list_snapshot_files,
    parse_snapshot,
    read_snapshot,
    serialize_snapshot,
    write_snapshot,
)

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "LATE_TRANSACTION_BUFFER_MS",
    "MAX_SNAPSHOT_BYTES",
    "NUM_BATCHES_TO_RETAIN",
    "PRODUCER_SNAPSHOT_VERSION",
    "AppendOrigin",
    "BatchMetadata",
    "CompletedTxn",
    "CorruptSnapshotError",
    "InvalidProducerEpochError",
    "InvalidTxnStateError",
    "LastRecord",
    "OutOfOrderSequenceError",
    "ProducerAppendInfo",
    "ProducerBatchInfo",
    "ProducerStateEntry",
    "ProducerStateManager",
    "ProducerStateManagerConfig",
    "SnapshotFile",
    "SnapshotTransactions",
    "TransactionCoordinatorFencedError",
    "TxnMetadata",
    "VerificationGuard",
    "VerificationStateEntry",
    "list_snapshot_files",
    "parse_snapshot",
    "read_snapshot",
    "serialize_snapshot",
    "write_snapshot",
]
