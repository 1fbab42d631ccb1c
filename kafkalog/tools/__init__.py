"""Tools built on the log: what the ``kafkalog`` commands and the Spark jobs run over whole directories.

The package root holds the port of Kafka's log layer; these modules use it from outside, one partition
dir or log dir at a time, without a :class:`~kafkalog.manager.log_manager.LogManager` owning the dir:

- :mod:`kafkalog.tools.partition_dir`: tell a partition dir from a log dir, list a log dir's partitions,
  and read or write one partition's entries in its log dir's checkpoints;
- :mod:`kafkalog.tools.verify`: read-only checks of partition dirs and log dirs (``kafkalog verify``);
- :mod:`kafkalog.tools.stats`: per-partition statistics (``kafkalog stats``, the Spark ``stats`` job);
- :mod:`kafkalog.tools.log_dir_writer`: append to some partitions of a log dir under its lock, with the
  broker's crash-safety bookkeeping (the Spark writer);
- :mod:`kafkalog.tools.cluster_metadata`: the topics and topic configs a KRaft metadata log records, replayed
  (each topic's effective config, as a broker resolves it);
- :mod:`kafkalog.tools.cleanup_policy`: whether a compaction may touch a partition dir, by its topic's
  ``cleanup.policy`` (``kafkalog clean``, the Spark ``compact`` job).

Kafka keeps its counterparts outside ``kafka.log`` too: ``kafka.tools.DumpLogSegments`` (here
:mod:`kafkalog.cli.dump`) reads segment files directly, as :mod:`~kafkalog.tools.verify` does.
"""
