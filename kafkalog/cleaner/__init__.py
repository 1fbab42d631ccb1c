"""Log compaction: Kafka's cleaner components, one module each, above the log they clean.

Port of ``kafka/log/LogCleaner.scala``, ``LogCleanerManager.scala``, ``OffsetMap.scala`` and ``CleanerConfig``
(Kafka 0.10.1.1; 3.8.0 for modern behaviour, spec §4):

- :mod:`~kafkalog.cleaner.log_cleaner`: the ``LogCleaner`` and its ``CleanerThread`` s, and
  :func:`~kafkalog.cleaner.compact`, one thread's work run once on one log;
- :mod:`~kafkalog.cleaner.cleaner`: the ``Cleaner`` that cleans one log (offset map, segment groups, the
  ``.cleaned`` -> ``.swap`` -> live swap);
- :mod:`~kafkalog.cleaner.cleaning_round`: what a round hands down to each group and segment (``CleaningRound``);
- :mod:`~kafkalog.cleaner.filter`: what a cleaning keeps of each batch and record (the ``logCleanerFilter``),
  asking the Cleaner it is handed (``RecordDecisions``) rather than importing it;
- :mod:`~kafkalog.cleaner.transactions`: what a round knows of aborted transactions and markers;
- :mod:`~kafkalog.cleaner.manager`: which log is cleaned next, each partition's cleaning state and the
  ``cleaner-offset-checkpoint`` files (``LogCleanerManager``);
- :mod:`~kafkalog.cleaner.config`: the cleaner's settings (``CleanerConfig``);
- :mod:`~kafkalog.cleaner.stats`: a round's statistics (``CleanerStats``);
- :mod:`~kafkalog.cleaner.offset_map`: the map of key hashes to latest offsets (``SkimpyOffsetMap``);
- :mod:`~kafkalog.cleaner.throttler`: the I/O limit the cleaner threads share (``Throttler``).

The layers run one way: the cleaner imports the log, the segments and the record formats; nothing below it
imports the cleaner.  Import the classes from here.
"""

from .cleaner import Cleaner
from .cleaning_round import CleaningRound
from .config import CleanerConfig
from .filter import LogCleanerFilter
from .log_cleaner import CleanerThread, LogCleaner, compact
from .stats import CleanerStats
from .transactions import CleanedTransactionMetadata

__all__ = [
    "CleanedTransactionMetadata",
    "Cleaner",
    "CleanerConfig",
    "CleanerStats",
    "CleanerThread",
    "CleaningRound",
    "LogCleaner",
    "LogCleanerFilter",
    "compact",
]
