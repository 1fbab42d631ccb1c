"""A real Kafka broker for the tests: one KRaft node (broker and controller in one process) run from the jars
``make oracle-jars`` resolves into ``.oracle/kafka-<version>/``, on 127.0.0.1 only.

The node itself is the benchmarks' (:class:`kafkalog.bench.kafka_broker.KafkaBrokerJvm`: its work directory, its
``server.properties`` and logging, format, start, stop and kill); :class:`KafkaBroker` is that node as the tests
want it: a Kafka version of ``.oracle/`` (3.x or 4.x), a small quick-start JVM (:data:`JVM_OPTIONS`), small test
settings (one partition for each internal topic, no rebalance delay, few threads) under the caller's ``config``,
and failures that fail the test with the broker's log.  ``format()`` runs Kafka's ``StorageTool format`` once;
``start()`` starts the JVM and waits, bounded, until the broker answers a metadata request; ``stop()`` asks it to
shut down (SIGTERM: a controlled shutdown, which leaves ``.kafka_cleanshutdown``) and fails if it has not exited in
time (it is killed then); ``kill()`` is a crash (SIGKILL).  A restarted broker is found where it was.  Nothing
listens anywhere else and nothing is fetched: the jars are in the local cache.

kafkalog's own: a test harness around Kafka's ``kafka.Kafka`` and ``kafka.tools.StorageTool``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kafkalog.bench.kafka_broker import NODE_ID, STOP_TIMEOUT_S, KafkaBrokerJvm
from kafkalog.bench.kafka_jvm import KafkaJvmError
from tests.oracle.jvm import OracleUnavailable, find_java, kafka_jars

__all__ = ["NODE_ID", "ROOT", "BrokerError", "BrokerUnavailable", "KafkaBroker", "broker_classpath", "quiet_logger"]

#: The checkout: ``.oracle/`` is resolved relative to it.
ROOT = Path(__file__).resolve().parents[3]
ORACLE_DIR = ROOT / ".oracle"
#: How long a broker may take to start (a 2-core machine shared by a whole test run); the node's own bounds format
#: (120 s) and stop (:data:`STOP_TIMEOUT_S`, 60 s).
START_TIMEOUT_S = 120.0
#: The JVM's options: a small heap, one GC thread, the quick compiler only (short runs), no JMX port.
JVM_OPTIONS = ("-Xmx512m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m",
               "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true")
#: What the tests lay over the node's own settings: small and quick to start.
TEST_CONFIG: Mapping[str, str] = {
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    # One partition for each internal topic (quick to create and to load).
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": str(4 * 1024 * 1024),
}


class BrokerUnavailable(OracleUnavailable):
    """What a broker needs beyond the oracle's jars is missing: ``broker-lib/`` (``make oracle-jars`` fetches it)."""


class BrokerError(AssertionError):
    """The broker failed to format, start, answer or stop; the message ends with the tail of its log."""


def quiet_logger() -> logging.Logger:
    """The logger the clients are given (``logger``), so that librdkafka's connection chatter goes to Python's
    logging (captured per test) and not straight to the process's stderr."""
    return logging.getLogger("tests.oracle.broker.clients")


def broker_classpath(version: str) -> list[Path]:
    """The jars a broker of ``version`` runs from: ``lib/`` (Kafka and its dependencies) and ``broker-lib/`` (what
    the broker tests add: the storage test jar of 3.x, the slf4j binding of 4.x).

    Raises:
        OracleUnavailable: no JDK, or the jars of ``version`` are not in ``.oracle/``.
    """
    find_java()
    jars = kafka_jars(version)
    home = ORACLE_DIR / f"kafka-{version}"
    extra = home / "broker-lib"
    if not any(j.name.startswith("kafka_2.13-") for j in jars) or not (home / ".broker-resolved").is_file():
        raise BrokerUnavailable(f"the jars of Kafka {version} are not in {home}: run `make oracle-jars` (Maven "
                                "resolves them into .oracle/, an ignored cache)")
    return jars + sorted(extra.glob("*.jar"))


class KafkaBroker(KafkaBrokerJvm):
    """One KRaft node of Kafka ``version`` (``"4.4.0"``, ``"3.9.2"``) in ``work``, with ``config`` laid over the
    generated ``server.properties`` (broker settings by Kafka's names; :data:`TEST_CONFIG` under them)."""

    def __init__(self, version: str, work: Path, config: Mapping[str, Any] | None = None) -> None:
        options = (*JVM_OPTIONS, f"-Djava.io.tmpdir={work}")
        super().__init__(find_java()[0], broker_classpath(version), work, version=version,
                         config={**TEST_CONFIG, **(config or {})}, jvm_options=options, tool_options=options)

    def _fail(self, message: str) -> BrokerError:
        return BrokerError(f"Kafka {self.version} broker in {self.work}: {message}\n{self.log_tail()}")

    def format(self) -> None:
        """Kafka's ``kafka-storage.sh format``, failing the test with the broker's log."""
        try:
            super().format()
        except KafkaJvmError as e:
            raise self._fail(str(e)) from e

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the JVM and wait until the broker answers a metadata request naming itself; a broker that exits
        or does not answer in ``timeout`` seconds is killed and fails the caller with its log's tail."""
        if self.running:
            raise self._fail("start() while it runs")
        super().start()
        try:
            self._wait_until_ready(time.monotonic() + timeout)
        except BaseException:
            self.kill()
            raise

    def _wait_until_ready(self, deadline: float) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "logger": quiet_logger(),
                             "socket.connection.setup.timeout.ms": 2000, "reconnect.backoff.max.ms": 200})
        while True:
            code = self.exited()
            if code is not None:
                raise self._fail(f"exited with status {code} while starting")
            try:
                if NODE_ID in admin.list_topics(timeout=2).brokers:
                    return
            except KafkaException:
                pass
            if time.monotonic() > deadline:
                raise self._fail("did not answer a metadata request in time")
            time.sleep(0.2)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> bool:
        """A controlled shutdown (SIGTERM), waited for ``timeout`` seconds; then SIGKILL and a :class:`BrokerError`
        (the files were not closed as a stopped broker closes them)."""
        if not super().stop(timeout):
            raise self._fail(f"did not stop in {timeout:.0f} s after SIGTERM; killed")
        return True

    @contextlib.contextmanager
    def running_broker(self) -> Iterator[KafkaBroker]:
        """Started on entry; stopped at exit (killed if the block raised, as nothing more is to be read from it)."""
        self.start()
        try:
            yield self
        except BaseException:
            self.kill()
            raise
        self.stop()

    def __repr__(self) -> str:
        return f"KafkaBroker({self.version!r}, {str(self.work)!r}, port={self.port})"
