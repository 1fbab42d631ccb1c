"""Who is appending to a log: Kafka's ``AppendOrigin``.

Port of (Apache Kafka, tag 3.8.0) ``storage/src/main/java/org/apache/kafka/storage/internals/log/AppendOrigin.java``,
an enum of its own in Kafka as here: the log's validator (:mod:`kafkalog.log.validator`), the producer state
(:class:`~kafkalog.producer_state.ProducerAppendInfo`) and a segment's recovery (which replays batches as
``replication``) all take it, so it sits below all three.
"""

from __future__ import annotations

from ._common import NamedChoice

__all__ = ["AppendOrigin"]


class AppendOrigin(NamedChoice):
    """Who is appending (Kafka: ``AppendOrigin``); members compare equal to their lower-case names, and
    :meth:`~kafkalog._common.NamedChoice.of` takes them in either case (``"client"``, ``"RAFT_LEADER"``).

    Only ``client`` appends get the strict batch checks (base offset 0, count and offset range, no control
    batches, sequence numbers); ``raft_leader`` batches must carry the leader's epoch.
    """

    REPLICATION = "replication"
    COORDINATOR = "coordinator"
    CLIENT = "client"
    RAFT_LEADER = "raft_leader"
