"""The log manager: every partition of a broker's log dirs, and the files that describe a log dir.

- :mod:`~kafkalog.manager.log_manager`: ``LogManager`` (Kafka's ``LogManager.scala``): loading the logs,
  creating and deleting them, the background tasks, the checkpoints, a clean shutdown;
- :mod:`~kafkalog.manager.configs`: the topic configs it keeps and their updates;
- :mod:`~kafkalog.manager.meta_properties`: a log dir's ``meta.properties`` (its directory id);
- :mod:`~kafkalog.manager.partition_metadata`: a partition dir's ``partition.metadata`` (its topic id).

The manager sits above the log and the cleaner and imports them; nothing below it imports this package.
Import the class from here.
"""

from .log_manager import LogManager

__all__ = ["LogManager"]
