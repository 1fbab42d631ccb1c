"""Kafka's own broker on the JVM, launched beside ``kafkalog serve`` for the broker rows (``test_bench_broker.py``).

One KRaft node (broker and controller in one JVM, as ``config/server.properties`` of a Kafka download sets it up)
run from the jars :mod:`kafkalog.bench.kafka_jvm` finds (``.oracle/kafka-<version>/lib``, or
``KAFKALOG_KAFKA_LIB``) and the logging binding beside them in ``broker-lib/`` (``make oracle-jars`` resolves both),
on 127.0.0.1 only.  It is timed as a user times one: ``kafka-storage.sh format`` (``StorageTool``) and then
``kafka-server-start.sh`` (``kafka.Kafka``), each a JVM of its own, with the options those scripts give a broker
(:data:`~kafkalog.bench.kafka_jvm.JVM_OPTIONS`: a fixed 1 GiB G1 heap, C2 on) and the tool (a 256 MiB heap).

A work directory holds everything the broker writes::

    <work>/server.properties     the node's configuration: ports, log dir, one replica for the internal topics
    <work>/log4j2.properties     its logging: INFO into <work>/server.log, as a download's defaults log
    <work>/stdout.log            what the JVM printed
    <work>/data/                 log.dirs

Nothing else is set: the broker's threads, buffers and flush policy are Kafka's defaults, so the rows compare a
broker as it ships.  This module is the benchmarks' own (the oracle tests have theirs, with a small quick-start
JVM); it needs nothing from ``tests/``, so the rows run from an installed kafkalog too.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import uuid
from pathlib import Path

from .kafka_jvm import JVM_OPTIONS, KAFKA_VERSION, KafkaJvm, KafkaJvmError
from .kafka_jvm import find as find_jvm

__all__ = ["KafkaBrokerJvm", "find", "free_port"]

#: ``kafka-run-class.sh``'s heap for a tool (``kafka-storage.sh`` sets none of its own).
TOOL_HEAP: tuple[str, ...] = ("-Xmx256M",)
NODE_ID = 1
FORMAT_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0

_LOG4J2 = """status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find() -> KafkaJvm | str:
    """The JDK and jars a broker runs from, or one line saying why it cannot run here (the rows skip with it)."""
    found = find_jvm()
    if isinstance(found, str):
        return found.replace("Kafka's JVM rows", "Kafka's broker rows")
    if not any(found.lib.glob("kafka_2.13-*.jar")):
        return f"Kafka's broker rows need Kafka {KAFKA_VERSION}'s broker jar (kafka_2.13-*.jar) in {found.lib}"
    if not any((found.lib.parent / "broker-lib").glob("*.jar")):
        return (f"Kafka's broker rows need the logging binding of {found.lib.parent / 'broker-lib'} "
                "(make oracle-jars)")
    return found


class KafkaBrokerJvm:
    """One KRaft node in ``work``: :meth:`launch` formats its log dir and starts it, :meth:`stop` shuts it down."""

    def __init__(self, jvm: KafkaJvm, work: Path) -> None:
        self.jvm = jvm
        self.work = work
        self.log_dir = work / "data"
        self.port = free_port()
        self.controller_port = free_port()
        self.server_log = work / "server.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._classpath = os.pathsep.join(
            [jvm.classpath(), *(str(j) for j in sorted((jvm.lib.parent / "broker-lib").glob("*.jar")))])
        work.mkdir(parents=True, exist_ok=True)
        config = {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.voters": f"{NODE_ID}@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            # one node: the internal topics cannot have the default three replicas
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
        }
        (work / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in sorted(config.items())))
        (work / "log4j2.properties").write_text(_LOG4J2.format(log=self.server_log))

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _command(self, options: tuple[str, ...], main: str, *args: str) -> list[str]:
        return [self.jvm.java, *options, f"-Dlog4j2.configurationFile={self.work / 'log4j2.properties'}",
                f"-Dkafka.logs.dir={self.work}", "-cp", self._classpath, main, *args]

    def launch(self) -> None:
        """``kafka-storage.sh format`` with a new cluster id, then ``kafka-server-start.sh``; returns once the
        broker's JVM is started (not once it answers: the caller's client finds out)."""
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        while cluster_id.startswith("-"):  # Kafka draws again: a command line would read it as an option
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        done = subprocess.run(
            self._command((*TOOL_HEAP, *(o for o in JVM_OPTIONS if not o.startswith(("-Xms", "-Xmx")))),
                          "kafka.tools.StorageTool", "format",
                          f"--cluster-id={cluster_id}", f"--config={self.work / 'server.properties'}"),
            capture_output=True, timeout=FORMAT_TIMEOUT_S, cwd=self.work, check=False)
        if done.returncode != 0:
            raise KafkaJvmError(f"kafka-storage format exited {done.returncode}: "
                                f"{(done.stdout + done.stderr).decode(errors='replace')[-2000:]}")
        with (self.work / "stdout.log").open("ab") as out:
            self._process = subprocess.Popen(
                self._command(JVM_OPTIONS, "kafka.Kafka", str(self.work / "server.properties")),
                cwd=self.work, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def exited(self) -> int | None:
        """The JVM's exit status if it has ended, else None."""
        return None if self._process is None else self._process.poll()

    def log_tail(self, lines: int = 40) -> str:
        if not self.server_log.is_file():
            return ""
        return "\n".join(self.server_log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """A controlled shutdown (SIGTERM), killed if it takes longer than :data:`STOP_TIMEOUT_S`."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
