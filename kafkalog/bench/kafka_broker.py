"""Kafka's own broker on the JVM: one KRaft node, for the benchmarks' broker rows and for the broker oracle tests.

One KRaft node (broker and controller in one JVM, as ``config/server.properties`` of a Kafka download sets it up)
on 127.0.0.1 only, run from a JDK and Kafka's jars the caller names.  It is started as a user starts one:
``kafka-storage.sh format`` (``StorageTool``, :meth:`KafkaBrokerJvm.format`) and then ``kafka-server-start.sh``
(``kafka.Kafka``, :meth:`KafkaBrokerJvm.start`), each a JVM of its own.  The two callers:

- the broker rows (``test_bench_broker.py``) build theirs with :meth:`KafkaBrokerJvm.from_jvm` from the jars
  :mod:`kafkalog.bench.kafka_jvm` finds (``.oracle/kafka-<version>/lib``, or ``KAFKALOG_KAFKA_LIB``) and the
  logging binding beside them in ``broker-lib/`` (``make oracle-jars`` resolves both), with the options those scripts
  give a broker (:data:`~kafkalog.bench.kafka_jvm.JVM_OPTIONS`: a fixed 1 GiB G1 heap, C2 on) and the tool (a
  256 MiB heap), and nothing else set: the broker's threads, buffers and flush policy are Kafka's defaults, so the
  rows compare a broker as it ships;
- the oracle tests (``tests/oracle/broker/broker.py``) run a small quick-start JVM of a Kafka version they choose
  (3.x logs through log4j 1, 4.x through log4j 2), lay test settings over the configuration, wait until it answers
  and restart it where it was.

A work directory holds everything the broker writes::

    <work>/server.properties     the node's configuration: ports, log dir, one replica for the internal topics,
                                 then the caller's settings
    <work>/log4j*.properties     its logging: INFO into <work>/server.log, as a download's defaults log
    <work>/server.log            what the broker logged
    <work>/stdout.log            what the JVM printed
    <work>/data/                 log.dirs: meta.properties, __cluster_metadata-0 and the partitions

The two listeners (clients and the controller) are free ports of 127.0.0.1 picked once, so a restarted broker is
found where it was.  This module needs nothing from ``tests/``, so the rows run from an installed kafkalog too.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from .kafka_jvm import JVM_OPTIONS, KAFKA_VERSION, KafkaJvm, KafkaJvmError
from .kafka_jvm import find as find_jvm

__all__ = ["KafkaBrokerJvm", "find", "free_port", "random_cluster_id"]

#: ``kafka-run-class.sh``'s heap for a tool (``kafka-storage.sh`` sets none of its own).
TOOL_HEAP: tuple[str, ...] = ("-Xmx256M",)
#: The format tool's options when the caller names none: the broker's, with the tool's heap.
TOOL_OPTIONS: tuple[str, ...] = (*TOOL_HEAP, *(o for o in JVM_OPTIONS if not o.startswith(("-Xms", "-Xmx"))))
NODE_ID = 1
FORMAT_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0

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


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
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
    """One KRaft node of Kafka ``version`` in ``work`` (module docstring), run by ``java`` from ``classpath``.

    ``config`` is laid over the node's own settings in ``server.properties`` (Kafka's names); ``jvm_options`` are the
    broker JVM's and ``tool_options`` the format tool's (:data:`TOOL_OPTIONS` when not given).  :meth:`format` once,
    then :meth:`start` and :meth:`stop` (or :meth:`kill`) as often as the caller likes; :meth:`launch` is both.
    """

    def __init__(self, java: str, classpath: Sequence[str | os.PathLike[str]], work: Path, *,
                 version: str = KAFKA_VERSION, config: Mapping[str, object] | None = None,
                 jvm_options: Sequence[str] = JVM_OPTIONS, tool_options: Sequence[str] | None = None) -> None:
        self.java = java
        self.version = version
        self.line = int(version.split(".")[0])
        self.work = work
        self.log_dir = work / "data"
        self.port = free_port()
        self.controller_port = free_port()
        self.cluster_id = random_cluster_id()
        self.server_log = work / "server.log"
        self.stdout_log = work / "stdout.log"
        self.jvm_options = tuple(jvm_options)
        self.tool_options = TOOL_OPTIONS if tool_options is None else tuple(tool_options)
        self._classpath = os.pathsep.join(map(str, classpath))
        self._process: subprocess.Popen[bytes] | None = None
        self.config: dict[str, str] = {
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
        self.config.update({k: str(v) for k, v in (config or {}).items()})
        work.mkdir(parents=True, exist_ok=True)
        (work / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in sorted(self.config.items())))
        template, name = (_LOG4J1, "log4j.properties") if self.line < 4 else (_LOG4J2, "log4j2.properties")
        self._logging = work / name
        self._logging.write_text(template.format(log=self.server_log))

    @classmethod
    def from_jvm(cls, jvm: KafkaJvm, work: Path) -> KafkaBrokerJvm:
        """The benchmarks' broker: :data:`~kafkalog.bench.kafka_jvm.KAFKA_VERSION` from ``jvm``'s jars and the
        logging binding in ``broker-lib/`` beside them, with a broker's and a tool's JVM options."""
        return cls(jvm.java, [jvm.classpath(), *sorted((jvm.lib.parent / "broker-lib").glob("*.jar"))], work)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _command(self, options: Sequence[str], main: str, *args: str) -> list[str]:
        if self.line < 4:
            logging_option = f"-Dlog4j.configuration=file:{self._logging}"
        else:
            logging_option = f"-Dlog4j2.configurationFile={self._logging}"
        return [self.java, *options, logging_option, f"-Dkafka.logs.dir={self.work}", "-cp", self._classpath, main,
                *args]

    def format(self) -> None:
        """Kafka's ``kafka-storage.sh format``: ``meta.properties`` and the bootstrap metadata into the log dir (once,
        before the first start).

        Raises:
            KafkaJvmError: the tool did not end in :data:`FORMAT_TIMEOUT_S`, or failed (its output's tail).
        """
        command = self._command(self.tool_options, "kafka.tools.StorageTool", "format",
                                f"--cluster-id={self.cluster_id}", f"--config={self.work / 'server.properties'}")
        try:
            done = subprocess.run(command, capture_output=True, timeout=FORMAT_TIMEOUT_S, cwd=self.work, check=False)
        except subprocess.TimeoutExpired as e:
            raise KafkaJvmError(f"kafka-storage format did not end in {FORMAT_TIMEOUT_S:.0f} s") from e
        if done.returncode != 0:
            raise KafkaJvmError(f"kafka-storage format exited {done.returncode}: "
                                f"{(done.stdout + done.stderr).decode(errors='replace')[-2000:]}")

    def start(self) -> None:
        """``kafka-server-start.sh``: returns once the broker's JVM is started (not once it answers: the caller
        finds that out as its clients do)."""
        with self.stdout_log.open("ab") as out:
            self._process = subprocess.Popen(
                self._command(self.jvm_options, "kafka.Kafka", str(self.work / "server.properties")),
                cwd=self.work, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def launch(self) -> None:
        """:meth:`format` with a new cluster id, then :meth:`start`: what a user does to a new node."""
        self.format()
        self.start()

    def exited(self) -> int | None:
        """The JVM's exit status if it has ended, else None."""
        return None if self._process is None else self._process.poll()

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines the broker logged, and what the JVM printed itself."""
        parts = []
        for path in (self.server_log, self.stdout_log):
            if path.is_file():
                text = path.read_text(errors="replace").splitlines()
                parts.append(f"--- {path.name} (last {min(lines, len(text))} of {len(text)} lines) ---")
                parts.extend(line[:400] for line in text[-lines:])
        return "\n".join(parts)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> bool:
        """A controlled shutdown (SIGTERM, which leaves ``.kafka_cleanshutdown``), waited for ``timeout`` seconds;
        whether it stopped so (False: it was still running and has been killed, its files not closed as a stopped
        broker closes them)."""
        process = self._process
        if process is None or process.poll() is not None:
            self._process = None
            return True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return False
        self._process = None
        return True

    def kill(self) -> None:
        """SIGKILL to the broker's process group, as a crash: no file is closed, flushed or trimmed."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
