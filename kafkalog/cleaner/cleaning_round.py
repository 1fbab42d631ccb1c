"""What a cleaning round of one log hands down: the round's offset map, clock, statistics and transactions.

Part of the port of ``kafka/log/LogCleaner.scala`` (3.8.0), where ``Cleaner.cleanSegments`` and ``cleanInto``
take these as separate arguments.  Both the :class:`~kafkalog.cleaner.cleaner.Cleaner` and the record filter
it hands each segment to (:class:`~kafkalog.cleaner.filter.LogCleanerFilter`) read them, so they live below
both: the filter needs no import of the Cleaner.
"""

from __future__ import annotations

from dataclasses import dataclass

from .offset_map import OffsetMap
from .stats import CleanerStats
from .transactions import CleanedTransactionMetadata

__all__ = ["CleaningRound"]


@dataclass(frozen=True)
class CleaningRound:
    """What a cleaning round of one log hands to the cleaning of each group of its segments
    (:meth:`Cleaner.clean_segments <kafkalog.cleaner.cleaner.Cleaner.clean_segments>`) and of each segment
    (:meth:`Cleaner.clean_into <kafkalog.cleaner.cleaner.Cleaner.clean_into>`).

    Kafka passes these one by one (``LogCleaner.scala``, 3.8.0): ``cleanSegments(log, segments, map,
    currentTime, stats, transactionMetadata, legacyDeleteHorizonMs)`` and ``cleanInto(topicPartition,
    sourceRecords, dest, map, retainLegacyDeletesAndTxnMarkers, deleteRetentionMs, maxLogMessageSize,
    transactionMetadata, lastRecordsOfActiveProducers, stats, currentTime)``.  The fields keep their names.
    What is not the round's stays an argument: the group and its log, the producers' last batches (read once per
    group, by ``clean_segments``), and for each segment the source, the destination, whether its legacy deletes
    are retained, and the log config's ``delete.retention.ms`` and ``max.message.bytes`` (read at each segment,
    as Kafka does).
    """

    #: The keys of the dirty section and their latest offsets (Kafka: ``map``).
    offset_map: OffsetMap
    #: The round's clock reading, for delete horizons (Kafka: ``currentTime``).
    current_time: int
    stats: CleanerStats
    #: Aborted transactions and markers, shared by every group of the round (Kafka: ``transactionMetadata``).
    transaction_metadata: CleanedTransactionMetadata
    #: Tombstones of v0/v1 segments last modified before this go (Kafka: ``legacyDeleteHorizonMs``).
    legacy_delete_horizon_ms: int
    #: The round's first uncleanable offset: its last batch is kept, emptied if need be (KAFKA-17076, after 3.8).
    upper_bound_offset_of_cleaning_round: int
