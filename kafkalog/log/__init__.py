"""The log: Kafka's log components, one module each, between the segments below and the cleaner and manager above.

Ports of ``kafka/log/UnifiedLog.scala``, ``LocalLog.scala``, ``LogLoader.scala`` (Kafka 3.8.0; ``Log.scala`` in
0.10.1.1) and of the storage module's ``LogSegments``, ``LogValidator``, ``LogAppendInfo`` (3.8.0):

- :mod:`~kafkalog.log.unified_log`: :class:`~kafkalog.log.unified_log.Log`, Kafka's ``UnifiedLog`` (offsets, high
  watermark, append, the lock) over a ``LocalLog``;
- :mod:`~kafkalog.log.local_log`: ``LocalLog``, the segments' files and directory (rolls, truncation, deletion,
  flushing);
- :mod:`~kafkalog.log.segments`: ``LogSegments``, the segments by base offset;
- :mod:`~kafkalog.log.loader`: ``LogLoader``, loading and recovery of a log directory;
- :mod:`~kafkalog.log.reads`: ``UnifiedLog``'s reads (``read``, ``fetchOffsetByTimestamp``, aborted transactions);
- :mod:`~kafkalog.log.retention`: ``UnifiedLog``'s retention pass (``deleteOldSegments``);
- :mod:`~kafkalog.log.leader_epochs`: ``UnifiedLog``'s leader-epoch cache (``leader-epoch-checkpoint``);
- :mod:`~kafkalog.log.producer_state_wiring`: ``UnifiedLog``'s members for the producer state, and
  :mod:`~kafkalog.log.producer_state_updates` the per-batch work of append, recovery and load
  (``analyzeAndValidateProducerState``, ``rebuildProducerState``) on a
  :class:`~kafkalog.producer_state.ProducerStateManager`;
- :mod:`~kafkalog.log.append_info`: ``LogAppendInfo`` and the append's shallow pass
  (``analyzeAndValidateRecords``, ``trimInvalidBytes``);
- :mod:`~kafkalog.log.validator`: ``LogValidator``, the append's deep pass, with its record builder
  (:mod:`~kafkalog.log.validator_builder`) and one-batch fast paths (:mod:`~kafkalog.log.validator_one_batch`);
- :mod:`~kafkalog.log.transactions`: the last stable offset and the aborted transactions a ``read_committed``
  consumer skips, and :mod:`~kafkalog.log.consumer_view` what a consumer reads of a log;
- :mod:`~kafkalog.log.pending_deletions`: the ``.deleted`` files a log has still to remove.

The layers run one way: the log imports the segments, indexes, producer state and record formats; nothing below
it imports the log, and the cleaner, the manager, the tools and the wings import it.  The modules of the family
describe the log they work on by Protocols rather than importing :mod:`~kafkalog.log.unified_log`.  Import the log
from here: ``from kafkalog.log import Log``; the package also gives the names a user of ``Log`` needs beside it (its
offsets listener, the special timestamps of ``fetch_offset_by_timestamp``, the file names), each from its home.
"""

from ..fetch import NO_OP_OFFSETS_LISTENER, LogOffsetsListener
from ..filenames import filename_prefix_from_offset, index_filename, log_filename, time_index_filename
from ..topic import parse_topic_partition_name
from .append_info import LogAppendInfo
from .reads import EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, UNKNOWN_TIMESTAMP
from .unified_log import Log

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "NO_OP_OFFSETS_LISTENER",
    "UNKNOWN_TIMESTAMP",
    "Log",
    "LogAppendInfo",
    "LogOffsetsListener",
    "filename_prefix_from_offset",
    "index_filename",
    "log_filename",
    "parse_topic_partition_name",
    "time_index_filename",
]
