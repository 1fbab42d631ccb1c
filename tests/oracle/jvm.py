"""The Kafka runner's process: Kafka's own ``UnifiedLog`` and ``Cleaner`` in a JVM, spoken to one JSON line at a time.

The runner is a small Java program (``tests/oracle/java``: ``common/`` the protocol, ``kafka39/`` and ``kafka4/``
one implementation of the log operations per Kafka version) compiled with ``javac`` against the jars ``make
oracle-jars`` resolves into ``.oracle/kafka-<version>/lib``.  This module finds ``java`` and ``javac``, compiles the
runner on demand into ``.oracle/runner-<version>/<digest>/`` (the digest covers the Java sources and the jar set,
so a changed source recompiles and an unchanged one costs nothing), starts it and carries requests and answers.
The protocol (``version``, ``start``, ``op``, ``end``) and what each op calls in each Kafka version are in the
docs' oracle page, section "The Kafka runner" (``docs/oracle-runner.rst.inc``).

One :class:`KafkaRunner` is one JVM, reused for any number of scenarios (one log open at a time); tests share
one per Kafka version per session (the ``kafka_runner_for`` fixture of ``tests/oracle/conftest.py``).  Every
request has a deadline; the JVM's stderr goes to a log file in the runner's work dir, and its last lines are in
the error raised when the process dies or stops answering.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

from kafkalog.bench.kafka_jvm import find_jdk

__all__ = [
    "DEFAULT_TIMEOUT",
    "JVM_OPTIONS",
    "STARTUP_TIMEOUT",
    "KafkaRunner",
    "OracleUnavailable",
    "RunnerError",
    "RunnerFatal",
    "compile_runner",
    "find_java",
    "kafka_jars",
    "kafka_versions",
    "source_digest",
]

ROOT = Path(__file__).resolve().parents[2]
#: The ignored cache ``make oracle-jars`` fills: ``kafka-<version>/lib/*.jar``, and the compiled runners.
ORACLE_DIR = ROOT / ".oracle"
#: The runner's Java sources.
JAVA_SOURCES = Path(__file__).resolve().parent / "java"

#: A scenario's ``"kafka"`` key to the Kafka version whose jars run it, and the runner's source module for it.
_VERSIONS: dict[str, tuple[str, str]] = {"3.9": ("3.9.2", "kafka39"), "4": ("4.4.0", "kafka4")}

#: One JVM per Kafka version on a machine of two shared cores: the serial collector and the C1 compiler only
#: (each runner starts in about 0.4 s and serves small logs; C2's background compiles would cost more than they
#: save), a heap bounded well above the cleaner's 4 MiB offset map.
JVM_OPTIONS: tuple[str, ...] = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-Xms32m",
                                "-Xmx512m", "-Dfile.encoding=UTF-8", "-Djava.awt.headless=true")

#: Seconds a request may take before the runner is taken for hung and killed.
DEFAULT_TIMEOUT = 60.0
#: Seconds the JVM may take to start and answer its first request.
STARTUP_TIMEOUT = 120.0
#: Seconds ``close`` waits for the runner to close its log and exit before it kills it.
CLOSE_TIMEOUT = 5.0
#: The Java release the runner is written for (records, sealed interfaces, ``instanceof`` patterns).
JAVA_RELEASE = 17


class OracleUnavailable(Exception):
    """Kafka cannot run here: no ``java``/``javac`` (17 or newer), or the jars of that version are not in
    ``.oracle/`` (``make oracle-jars`` fetches them)."""


class RunnerError(RuntimeError):
    """The runner failed: it did not compile, died, stopped answering, or answered what is not JSON.  The
    message ends with the last lines of the JVM's log."""


class RunnerFatal(RunnerError):
    """The runner refused a request it cannot understand (its ``{"fatal": why}`` answer); it goes on serving."""


def kafka_versions() -> dict[str, str]:
    """A scenario's ``"kafka"`` key to the Kafka version of the jars that run it: ``{"3.9": "3.9.2", "4": "4.4.0"}``."""
    return {kafka: version for kafka, (version, _module) in _VERSIONS.items()}


def find_java() -> tuple[str, str]:
    """``java`` and ``javac`` of a JDK 17 or newer: ``$JAVA_HOME``'s when it has both, else those on ``PATH``
    (:func:`kafkalog.bench.kafka_jvm.find_jdk`, which the benchmarks' Kafka rows use too).

    Raises:
        OracleUnavailable: there is no such JDK.
    """
    found = find_jdk()
    if isinstance(found, str):
        raise OracleUnavailable(f"{found} by the Kafka oracle; then `make oracle-jars`")
    return found


def kafka_jars(version: str) -> list[Path]:
    """The jars of Kafka ``version`` (``"3.9.2"``) that ``make oracle-jars`` resolved, sorted by name.

    Raises:
        OracleUnavailable: they are not there (or their resolution did not finish).
    """
    lib = ORACLE_DIR / f"kafka-{version}" / "lib"
    jars = sorted(lib.glob("*.jar")) if (lib.parent / ".resolved").is_file() else []
    if not jars:
        raise OracleUnavailable(f"Kafka {version}'s jars are not in {lib}: run `make oracle-jars` (it needs Java "
                                f"and Maven, and reaches Maven Central)")
    return jars


def _sources(module: str, root: Path = JAVA_SOURCES) -> list[Path]:
    return sorted([*(root / "common").rglob("*.java"), *(root / module).rglob("*.java")])


def source_digest(version: str, jars: list[Path], root: Path = JAVA_SOURCES) -> str:
    """The key of a compiled runner: the Java sources for ``version`` (paths and bytes) and the jar names."""
    module = _module(version)
    digest = hashlib.sha256(f"kafkalog-oracle-runner\0{version}\0{JAVA_RELEASE}\0".encode())
    for source in _sources(module, root):
        digest.update(source.relative_to(root).as_posix().encode() + b"\0")
        digest.update(source.read_bytes() + b"\0")
    for jar in jars:
        digest.update(jar.name.encode() + b"\0")
    return digest.hexdigest()[:16]


def _module(version: str) -> str:
    for jar_version, module in _VERSIONS.values():
        if jar_version == version:
            return module
    raise ValueError(f"no runner for Kafka {version}: one of {sorted(kafka_versions().values())}")


def compile_runner(version: str) -> Path:
    """The runner's classes for Kafka ``version``, compiled now unless they already are for these sources.

    The classes land in ``.oracle/runner-<version>/<digest>/``, built in a private directory and renamed into
    place, so a concurrent compile (another pytest) never sees half a runner; older digests are removed.

    Raises:
        OracleUnavailable: no JDK, one older than 17, or no jars.
        RunnerError: the sources do not compile (a bug of the runner: never a skip).
    """
    jars = kafka_jars(version)
    _java, javac = find_java()
    runner_dir = ORACLE_DIR / f"runner-{version}"
    digest = source_digest(version, jars)
    classes = runner_dir / digest
    if (classes / ".complete").is_file():
        return classes
    runner_dir.mkdir(parents=True, exist_ok=True)
    building = runner_dir / f".building-{uuid.uuid4().hex}"
    building.mkdir()
    try:
        command = [javac, "--release", str(JAVA_RELEASE), "-encoding", "UTF-8", "-nowarn", "-Xlint:none",
                   "-cp", os.pathsep.join(map(str, jars)), "-d", str(building),
                   *map(str, _sources(_module(version)))]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()
            if re.search(r"release version \d+ not supported|invalid target release", output):
                raise OracleUnavailable(f"{javac} cannot compile for Java {JAVA_RELEASE}: the Kafka oracle needs a "
                                        f"JDK {JAVA_RELEASE} or newer ({output.splitlines()[0]})")
            raise RunnerError(f"the Kafka {version} runner does not compile:\n{output}")
        (building / ".complete").touch()
        try:
            building.rename(classes)
        except OSError:
            if not (classes / ".complete").is_file():
                raise
            # another process put the same classes in place first
    finally:
        shutil.rmtree(building, ignore_errors=True)
    for stale in runner_dir.iterdir():
        if stale.name != digest and not stale.name.startswith(".building-"):
            shutil.rmtree(stale, ignore_errors=True)
    return classes


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Ends a runner left running (the finalizer of a :class:`KafkaRunner` nobody closed)."""
    if process.poll() is None:
        process.kill()
        process.wait()


class KafkaRunner:
    """One JVM running Kafka ``kafka`` (``"3.9"`` or ``"4"``, a scenario's ``"kafka"`` key) behind the protocol.

    ``request(message)`` sends one request and returns the runner's answer; a ``{"fatal": ...}`` answer raises
    :class:`RunnerFatal`, a dead or silent runner :class:`RunnerError`.  Not thread-safe: one request at a time.
    The constructor compiles the runner if needed, starts the JVM and waits for its ``version`` answer, so a
    runner that cannot start fails here; :attr:`startup_seconds` is how long that took.

    ``work_dir`` holds the JVM's log (``kafka-<version>-runner.log``); by default a temporary directory, removed
    by :meth:`close`.
    """

    def __init__(self, kafka: str = "3.9", *, work_dir: str | os.PathLike[str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        if kafka not in _VERSIONS:
            raise ValueError(f"unknown Kafka {kafka!r}: one of {sorted(_VERSIONS)}")
        self.kafka = kafka
        #: The version of the jars (``"3.9.2"``).
        self.version, module = _VERSIONS[kafka]
        self.timeout = timeout
        started = time.monotonic()
        classes = compile_runner(self.version)
        java, _javac = find_java()
        self._owns_work_dir = work_dir is None
        self.work_dir = Path(tempfile.mkdtemp(prefix=f"kafkalog-oracle-{kafka}-") if work_dir is None else work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        #: Where the JVM's stderr goes (Kafka's warnings and the runner's notes).
        self.log_path = self.work_dir / f"kafka-{self.version}-runner.log"
        classpath = os.pathsep.join([str(classes), *map(str, kafka_jars(self.version))])
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (held for the process's life, closed by close())
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [java, *JVM_OPTIONS, "-cp", classpath, f"dev.kafkalog.oracle.{module}.Main"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, cwd=self.work_dir)
        self._finalizer = weakref.finalize(self, _kill, self._process)
        self._pending = bytearray()
        try:
            answer = self.request({"cmd": "version"}, timeout=STARTUP_TIMEOUT)
        except BaseException:
            self.close()
            raise
        #: Kafka's own version string as the jars report it.
        self.kafka_version: str = answer["kafka"]
        #: The JVM's version.
        self.java_version: str = answer["java"]
        #: Seconds from the constructor's start to the runner's first answer (compiling included, if it compiled).
        self.startup_seconds = time.monotonic() - started
        if self.kafka_version != self.version:
            self.close()
            raise RunnerError(f"the Kafka {self.version} runner reports Kafka {self.kafka_version}")

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        """The JVM is up (it may still be unable to answer: :meth:`request` says)."""
        return self._process is not None and self._process.poll() is None

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Sends ``message`` (one JSON object) and returns the answer.

        Raises:
            RunnerFatal: the runner cannot understand the request.
            RunnerError: the runner is closed, died, answered no JSON object, or took longer than ``timeout``
                seconds (the instance's by default), in which case it is killed.
        """
        process = self._process
        if process is None or process.stdin is None:
            raise RunnerError(f"the Kafka {self.version} runner is closed")
        line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        try:
            process.stdin.write(line)
            process.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise self._died(f"cannot send the request ({e})") from e
        raw = self._read_line(self.timeout if timeout is None else timeout, message)
        try:
            answer = json.loads(raw)
        except ValueError as e:
            raise RunnerError(f"the runner answered what is not JSON: {raw[:200]!r}{self._log_tail()}") from e
        if not isinstance(answer, dict):
            raise RunnerError(f"the runner answered a JSON {type(answer).__name__}, not an object: {raw[:200]!r}")
        if "fatal" in answer:
            raise RunnerFatal(f"the Kafka {self.version} runner refused {_short(message)}: {answer['fatal']}")
        return answer

    def _read_line(self, timeout: float, message: dict[str, Any]) -> bytes:
        process = self._process
        assert process is not None and process.stdout is not None
        fd = process.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while (end := self._pending.find(b"\n")) < 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    self._kill_now()
                    raise RunnerError(f"no answer in {timeout:g} s to {_short(message)}: the runner was killed"
                                      f"{self._log_tail()}")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._died(f"no answer to {_short(message)}")
                self._pending += chunk
        raw = bytes(self._pending[:end])
        del self._pending[:end + 1]
        return raw

    def _died(self, what: str) -> RunnerError:
        process = self._process
        code = None
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.wait(timeout=CLOSE_TIMEOUT)
        return RunnerError(f"the Kafka {self.version} runner died (exit code {code}): {what}{self._log_tail()}")

    def _kill_now(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def _log_tail(self, lines: int = 40) -> str:
        try:
            self._log.flush()
            text = self.log_path.read_text(errors="replace")
        except (OSError, ValueError):
            return ""
        tail = text.splitlines()[-lines:]
        return f"\n--- last lines of {self.log_path} ---\n" + "\n".join(tail) if tail else ""

    def close(self) -> None:
        """Ends the runner: its stdin closes, it closes the open log and exits; killed if it takes more than a few
        seconds.  Idempotent."""
        process = self._process
        if process is None:
            return
        self._process = None
        try:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            try:
                process.wait(timeout=CLOSE_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        finally:
            if process.stdout is not None:
                process.stdout.close()
            self._finalizer.detach()
            self._log.close()
            if self._owns_work_dir:
                shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> KafkaRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.running else "closed"
        return f"KafkaRunner({self.kafka!r}, Kafka {self.version}, {state})"


def _short(message: dict[str, Any]) -> str:
    text = json.dumps(message, separators=(",", ":"))
    return text if len(text) <= 160 else text[:157] + "..."
