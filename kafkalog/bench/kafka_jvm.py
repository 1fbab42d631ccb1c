"""Kafka's own log layer on the JVM, run beside kafkalog's benchmark rows on the same data in the same run.

The Java program in ``jvm/`` (shipped with the benchmarks; ``KafkaLogBench`` its entry point) does a row's work
with Kafka's classes (``UnifiedLog``, ``OffsetIndex``, ...) and times it inside its JVM; this module finds a JDK
and Kafka's jars, compiles the program once per source and jar set, runs one command of it and reads back its
timings.  Java is a benchmark-time tool only:
without ``java``/``javac`` (17 or newer) or the jars, :func:`find` says why and the rows that need Kafka are
skipped with that note.

Where the jars come from: ``KAFKALOG_KAFKA_LIB`` (a directory of Kafka's jars and their dependencies), else the
``lib`` directory ``make oracle-jars`` fills in a checkout (``.oracle/kafka-<version>/lib``), looked for beside the
package's source tree and under the current directory.  The version is :data:`KAFKA_VERSION`, the newest Kafka
line the oracle runs (4.x: the Java ``UnifiedLog`` of Kafka's storage module).

How Kafka is measured, to be fair to it:

- the JVM a broker runs with: ``kafka-run-class.sh``'s performance options and ``kafka-server-start.sh``'s heap
  (:data:`JVM_OPTIONS`: G1, a 1 GiB fixed heap, the C2 compiler on), one JVM per row, so one row's garbage and
  compiled code do not reach the next;
- warmed up: the row's whole work run :data:`WARMUP_ROUNDS` times untimed before the timed rounds, which are as
  many as kafkalog's row has, each timed with ``System.nanoTime`` around the work alone (the buffers an append
  round takes are copied, and its log created, before the clock starts; the log is closed after it stops);
- one thread doing the work, as kafkalog's row: Kafka's scheduler thread idles (its tasks are minutes away).

The fastest and the median timed round are what the ratio compares, as for every other row.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["JVM_CLOCK", "JVM_OPTIONS", "KAFKA_VERSION", "WARMUP_ROUNDS", "KafkaJvm", "KafkaJvmError", "find",
           "find_jdk", "replay"]

#: The Kafka whose jars the rows run (the oracle's newest line).
KAFKA_VERSION = "4.4.0"
#: ``kafka-server-start.sh``'s ``KAFKA_HEAP_OPTS`` and ``kafka-run-class.sh``'s ``KAFKA_JVM_PERFORMANCE_OPTS``.
JVM_OPTIONS: tuple[str, ...] = ("-Xms1g", "-Xmx1g", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                                "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                                "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true")
#: Untimed runs of a row's whole work before its timed rounds: enough for C2 to compile the paths it takes.
WARMUP_ROUNDS = 5
#: The program's entry point: ``KafkaLogBench.main`` picks the command; each row's work may live in a class of its
#: own beside it (every ``jvm/*.java``, in the default package, so it compiles and runs without a build tool).
_MAIN_CLASS = "KafkaLogBench"
#: The oldest Java the source is written for (switch expressions, ``var``, ``Stream.toList``).
_JAVA_RELEASE = 17


class KafkaJvmError(RuntimeError):
    """Kafka's side of a row failed: the program did not compile, exited non-zero, or printed no timings.  The
    message holds the end of what it wrote to stderr."""


@dataclass(frozen=True)
class KafkaJvm:
    """A JDK and Kafka's jars that can run the rows: ``run`` one command of ``KafkaLogBench``."""

    java: str
    javac: str
    lib: Path

    def classpath(self) -> str:
        return os.pathsep.join(str(jar) for jar in sorted(self.lib.glob("*.jar")))

    def compiled(self) -> Path:
        """The directory holding the compiled program, made once per source and jar set (by their digest)."""
        sources = _sources()
        digest = hashlib.sha256(b"".join(name.encode() + text for name, text in sources)
                                + self.classpath().encode()).hexdigest()[:16]
        out = self.lib.parent / f"bench-{digest}"
        if (out / f"{_MAIN_CLASS}.class").is_file():
            return out
        staging = self.lib.parent / f"bench-{digest}.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name, text in sources:
            (staging / name).write_bytes(text)
        done = subprocess.run([self.javac, "--release", str(_JAVA_RELEASE), "-nowarn", "-cp", self.classpath(),
                               "-d", str(staging), *(str(staging / name) for name, _ in sources)],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise KafkaJvmError(f"javac failed on the benchmarks' Java sources against Kafka {KAFKA_VERSION}'s jars "
                                f"in {self.lib}:\n" + _tail(done.stderr))
        try:
            staging.rename(out)
        except OSError:  # another run compiled it first: theirs is the same program
            shutil.rmtree(staging, ignore_errors=True)
        return out

    def run(self, *command: object, timeout: float = 1800.0) -> dict[str, Any]:
        """Run ``KafkaLogBench`` with ``command``; its result: ``rounds_s`` (seconds of each timed round) and
        ``check`` (what the row compares with kafkalog's own result)."""
        classpath = os.pathsep.join([str(self.compiled()), self.classpath()])
        args = [self.java, *JVM_OPTIONS, "-cp", classpath, _MAIN_CLASS, *map(str, command)]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise KafkaJvmError(f"Kafka's side of the row ({' '.join(map(str, command))}) took more than "
                                f"{timeout:g} s") from None
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            raise KafkaJvmError(f"Kafka's side of the row ({' '.join(map(str, command))}) exited "
                                f"{done.returncode}:\n" + _tail(done.stderr))
        result: dict[str, Any] = json.loads(lines[-1])
        if not result.get("rounds_s"):
            raise KafkaJvmError(f"Kafka's side of the row printed no timed round: {lines[-1]}")
        return result


class _JvmClock:
    """The clock a Kafka row's pytest-benchmark fixture reads (``@pytest.mark.benchmark(timer=JVM_CLOCK)``): it
    stands still, and :func:`replay` moves it by the seconds the JVM timed each round, so the row's statistics,
    table, JSON and chart are those rounds, beside kafkalog's."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


JVM_CLOCK = _JvmClock()


def replay(benchmark: Any, rounds_s: list[float], warmup: int = WARMUP_ROUNDS) -> None:
    """Hand the rounds Kafka's JVM timed to ``benchmark`` (whose timer must be :data:`JVM_CLOCK`), one round each,
    and say how they were measured in its ``extra_info`` (``warmup``: the untimed rounds the JVM ran first)."""
    pending = iter(rounds_s)

    def one_round() -> None:
        JVM_CLOCK.now += next(pending)

    benchmark.pedantic(one_round, rounds=len(rounds_s), iterations=1, warmup_rounds=0)
    benchmark.extra_info.update(kafka_version=KAFKA_VERSION, jvm_options=list(JVM_OPTIONS),
                                jvm_warmup_rounds=warmup)


def _sources() -> list[tuple[str, bytes]]:
    """The Java sources shipped in ``kafkalog/bench/jvm``, by name."""
    folder = resources.files("kafkalog.bench").joinpath("jvm")
    return sorted((entry.name, entry.read_bytes()) for entry in folder.iterdir() if entry.name.endswith(".java"))


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


@functools.cache
def _java_major(java: str) -> int | None:
    """The feature release of ``java`` (17 for 17.0.9), from ``-XshowSettings:properties``; None if it does not run."""
    try:
        done = subprocess.run([java, "-XshowSettings:properties", "-version"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stderr.splitlines():
        name, _, value = line.strip().partition(" = ")
        if name == "java.specification.version":
            try:
                return int(value.strip().removeprefix("1."))
            except ValueError:
                return None
    return None


def _lib_candidates() -> list[Path]:
    found = []
    if os.environ.get("KAFKALOG_KAFKA_LIB"):
        return [Path(os.environ["KAFKALOG_KAFKA_LIB"])]
    source_tree = Path(__file__).resolve().parents[2]
    for root in (source_tree, Path.cwd()):
        found.append(root / ".oracle" / f"kafka-{KAFKA_VERSION}" / "lib")
    return found


def find_jdk() -> tuple[str, str] | str:
    """``(java, javac)`` of a JDK 17 or newer (``$JAVA_HOME``'s when it has both, else those on ``PATH``), or one
    line saying what is missing.  The Kafka rows and the oracle tests (``tests/oracle/jvm.py``) find their JDK here.
    """
    home = os.environ.get("JAVA_HOME")
    home_java, home_javac = (Path(home, "bin", "java"), Path(home, "bin", "javac")) if home else (None, None)
    if home_java is not None and home_javac is not None and home_java.is_file() and home_javac.is_file():
        java, javac = str(home_java), str(home_javac)
    else:
        on_path, javac_on_path = shutil.which("java"), shutil.which("javac")
        if on_path is None or javac_on_path is None:
            missing = "java" if on_path is None else "javac"
            return f"no {missing} on PATH (nor in JAVA_HOME): a JDK {_JAVA_RELEASE} or newer is needed"
        java, javac = on_path, javac_on_path
    major = _java_major(java)
    if major is None or major < _JAVA_RELEASE:
        return (f"{java} is {'not runnable' if major is None else f'Java {major}'}: a JDK {_JAVA_RELEASE} or newer "
                "is needed")
    return java, javac


def find() -> KafkaJvm | str:
    """A :class:`KafkaJvm`, or one line saying why Kafka's rows cannot run here."""
    jdk = find_jdk()
    if isinstance(jdk, str):
        return f"Kafka's JVM rows cannot run: {jdk}"
    java, javac = jdk
    for lib in _lib_candidates():
        if lib.is_dir() and any(lib.glob("kafka-storage-*.jar")):
            return KafkaJvm(java, javac, lib)
    where = ", ".join(str(lib) for lib in _lib_candidates())
    return (f"Kafka's JVM rows need Kafka {KAFKA_VERSION}'s jars (make oracle-jars, or KAFKALOG_KAFKA_LIB); "
            f"none in {where}")
