"""A real Kafka broker for the tests: one KRaft node (broker and controller in one process) run from the jars
``make oracle-jars`` resolves into ``.oracle/kafka-<version>/``, on 127.0.0.1 only.

Each :class:`KafkaBroker` owns a work directory::

    <work>/server.properties      the node's configuration (generated: ports, log dir, small test settings)
    <work>/log4j*.properties      its logging: everything at INFO into <work>/server.log
    <work>/server.log             what the broker logged (its tail is in every error raised here)
    <work>/stdout.log             the JVM's own output
    <work>/data/                  log.dirs: meta.properties, __cluster_metadata-0 and the partitions

``format()`` runs Kafka's ``StorageTool format`` once; ``start()`` starts the JVM and waits, bounded, until the
broker answers a metadata request; ``stop()`` asks it to shut down (SIGTERM: a controlled shutdown, which leaves
``.kafka_cleanshutdown``) and kills it if it has not exited in time; ``kill()`` is a crash (SIGKILL).  The two
listeners (clients and the controller) are free ports of 127.0.0.1 picked once, so a restarted broker is found
where it was.  Nothing listens anywhere else and nothing is fetched: the jars are in the local cache.

kafkalog's own: a test harness around Kafka's ``kafka.Kafka`` and ``kafka.tools.StorageTool``.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tests.oracle.jvm import OracleUnavailable, find_java, kafka_jars

__all__ = ["ROOT", "BrokerError", "BrokerUnavailable", "KafkaBroker", "broker_classpath", "quiet_logger"]

#: The checkout: ``.oracle/`` is resolved relative to it.
ROOT = Path(__file__).resolve().parents[3]
ORACLE_DIR = ROOT / ".oracle"
#: How long a broker may take to format, start and stop (a 2-core machine shared by a whole test run).
FORMAT_TIMEOUT_S = 120.0
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
#: The JVM's options: a small heap, one GC thread, the quick compiler only (short runs), no JMX port.
JVM_OPTIONS = ("-Xmx512m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m",
               "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true")
NODE_ID = 1


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


def free_port() -> int:
    """A TCP port of 127.0.0.1 nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def random_cluster_id() -> str:
    """A cluster id as Kafka's ``Uuid.randomUuid().toString()`` prints one: 22 characters of URL-safe base64, not
    starting with ``-`` (Kafka draws again then, as a command line would take it for an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


#: Logging of a 3.x broker (reload4j, log4j 1 syntax) and of a 4.x broker (log4j 2): INFO into server.log.
_LOG4J1 = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
_LOG4J2 = """status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""


class KafkaBroker:
    """One KRaft node of Kafka ``version`` (``"4.4.0"``, ``"3.9.2"``) in ``work``, with ``config`` laid over the
    generated ``server.properties`` (broker settings by Kafka's names)."""

    def __init__(self, version: str, work: Path, config: Mapping[str, Any] | None = None) -> None:
        self.version = version
        self.line = int(version.split(".")[0])
        self.classpath = broker_classpath(version)
        self.work = work
        self.work.mkdir(parents=True, exist_ok=True)
        self.log_dir = work / "data"
        self.port = free_port()
        self.controller_port = free_port()
        self.cluster_id = random_cluster_id()
        self.server_log = work / "server.log"
        self.stdout_log = work / "stdout.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._stdout: Any = None
        self.config = self._default_config()
        self.config.update({k: str(v) for k, v in (config or {}).items()})
        self._write_files()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _default_config(self) -> dict[str, str]:
        return {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            # One node: every internal topic has one replica, and one partition (quick to create and to load).
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "background.threads": "2",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(4 * 1024 * 1024),
        }

    def _write_files(self) -> None:
        lines = [f"{k}={v}" for k, v in sorted(self.config.items())]
        (self.work / "server.properties").write_text("\n".join(lines) + "\n")
        template, name = (_LOG4J1, "log4j.properties") if self.line < 4 else (_LOG4J2, "log4j2.properties")
        (self.work / name).write_text(template.format(log=self.server_log))

    def _java(self, main: str, *args: str) -> list[str]:
        if self.line < 4:
            logging_option = f"-Dlog4j.configuration=file:{self.work / 'log4j.properties'}"
        else:
            logging_option = f"-Dlog4j2.configurationFile={self.work / 'log4j2.properties'}"
        return [find_java()[0], *JVM_OPTIONS, logging_option, f"-Djava.io.tmpdir={self.work}",
                f"-Dkafka.logs.dir={self.work}", "-cp", os.pathsep.join(map(str, self.classpath)), main, *args]

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines the broker logged, and what the JVM printed itself."""
        parts = []
        for path in (self.server_log, self.stdout_log):
            if path.is_file():
                text = path.read_text(errors="replace").splitlines()
                parts.append(f"--- {path.name} (last {min(lines, len(text))} of {len(text)} lines) ---")
                parts.extend(line[:400] for line in text[-lines:])
        return "\n".join(parts)

    def _fail(self, message: str) -> BrokerError:
        return BrokerError(f"Kafka {self.version} broker in {self.work}: {message}\n{self.log_tail()}")

    def format(self) -> None:
        """Kafka's ``kafka-storage.sh format``: write ``meta.properties`` and the bootstrap metadata into the log
        dir (once, before the first start)."""
        command = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={self.cluster_id}",
                             f"--config={self.work / 'server.properties'}")
        try:
            done = subprocess.run(command, capture_output=True, timeout=FORMAT_TIMEOUT_S, cwd=self.work, check=False)
        except subprocess.TimeoutExpired as e:
            raise self._fail(f"kafka-storage format did not end in {FORMAT_TIMEOUT_S:.0f} s") from e
        if done.returncode != 0:
            raise self._fail(f"kafka-storage format exited {done.returncode}: "
                             f"{(done.stdout + done.stderr).decode(errors='replace')[-2000:]}")

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the JVM and wait until the broker answers a metadata request naming itself; a broker that exits
        or does not answer in ``timeout`` seconds is killed and fails the caller with its log's tail."""
        if self.running:
            raise self._fail("start() while it runs")
        self._stdout = self.stdout_log.open("ab")
        self._process = subprocess.Popen(self._java("kafka.Kafka", str(self.work / "server.properties")),
                                         cwd=self.work, stdin=subprocess.DEVNULL, stdout=self._stdout,
                                         stderr=subprocess.STDOUT, start_new_session=True)
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
            if self._process is None or self._process.poll() is not None:
                code = None if self._process is None else self._process.returncode
                raise self._fail(f"exited with status {code} while starting")
            try:
                if NODE_ID in admin.list_topics(timeout=2).brokers:
                    return
            except KafkaException:
                pass
            if time.monotonic() > deadline:
                raise self._fail("did not answer a metadata request in time")
            time.sleep(0.2)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """A controlled shutdown (SIGTERM), waited for ``timeout`` seconds; then SIGKILL and a :class:`BrokerError`
        (the files were not closed as a stopped broker closes them)."""
        process = self._process
        if process is None:
            return
        try:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.kill()
                    raise self._fail(f"did not stop in {timeout:.0f} s after SIGTERM; killed") from None
        finally:
            self._release()

    def kill(self) -> None:
        """SIGKILL to the broker's process group, as a crash: no file is closed, flushed or trimmed."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
        self._release()

    def _release(self) -> None:
        self._process = None
        if self._stdout is not None:
            self._stdout.close()
            self._stdout = None

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
