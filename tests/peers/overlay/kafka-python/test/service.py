"""kafkalog's stand-in for ``test/service.py`` of kafka-python's source tree, which its sdist does not ship.

``test/integration/fixtures.py`` imports two classes from it.  With ``KAFKA_URI`` set, which is how
``tests/peers/run_peer_suites.py`` runs the suite, the fixture only ever builds an ``ExternalService``: a broker
that is already running, which there is nothing to open, close, or wait for.  Spawning a broker of its own
(``SpawnedService``) is what the suite does without ``KAFKA_URI``; here it is refused, so that a run can never
silently test something other than kafkalog's broker.
"""

__all__ = ["ExternalService", "SpawnedService"]


class ExternalService:
    """A broker someone else runs, at ``host:port``."""

    def __init__(self, host, port):
        self.host = host
        self.port = port

    def open(self):
        pass

    def close(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        pass


class SpawnedService:
    """Refused: the peer run tests kafkalog's broker, never one spawned from a Kafka distribution."""

    def __init__(self, args=None, env=None):
        raise RuntimeError("the peer suites run against kafkalog serve (KAFKA_URI); they spawn no broker")
