"""A producer's and a consumer's conveniences over the port: thin, and no more than that.

kafkalog's clients have no broker and no network: :class:`Producer` (:mod:`kafkalog.clients.producer`) appends to
the logs of a :class:`~kafkalog.manager.log_manager.LogManager` in the calling thread, choosing the partition as
Kafka's producer does (:mod:`kafkalog.clients.partitioner`: ``murmur2``), and :class:`Consumer`
(:mod:`kafkalog.clients.consumer`) reads them back through the log's consumer view.  The records and results are
named as kafka-python names them, so code written against it reads the same; ``docs/clients.rst`` tabulates where
the behaviour differs.

They sit above the log and the manager, and nothing in the storage layers imports them.  Import the classes from
here.
"""

from .consumer import Consumer, ConsumerRecord
from .producer import Producer, RecordMetadata

__all__ = ["Consumer", "ConsumerRecord", "Producer", "RecordMetadata"]
