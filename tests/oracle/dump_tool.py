"""Kafka's own ``DumpLogSegments``, run from the oracle's jars, and its output cut into one part per file.

The tool is Kafka's ``kafka-dump-log.sh``: ``kafka.tools.DumpLogSegments`` (Scala, ``kafka_2.13``) in 3.9.2,
``org.apache.kafka.tools.DumpLogSegments`` (Java, ``kafka-tools``) in 4.x.  Each version's tool runs in one JVM
for the whole session (``tests/oracle/java/dump/DumpServer.java``, compiled into the ignored ``.oracle/``
cache): a JVM costs a second or so to start, and the oracle calls the tool some thirty times.  Each call
dumps many files (``--files a,b,c``) and prints exactly what a fresh ``kafka-dump-log.sh`` would (the tool
keeps no state between calls); :func:`run_dump` cuts what it printed into:

- per file, the stdout lines from its ``Dumping <file>`` line up to the next file's (the files are given as
  absolute paths, so the line is known in advance: a payload that happens to start with ``Dumping`` is not
  taken for one);
- the stderr lines printed while the files were dumped (``Ignoring unknown file ...``, a corrupt snapshot's
  message), in order;
- the reports the tool prints on stderr after the last file (index mismatches, time-index errors,
  non-consecutive offsets), one block a report: a header line and the lines under it.  Kafka keeps them in
  hash maps, so their order across files is the hash order of the paths: :attr:`KafkaDump.reports` is sorted,
  to be compared as a set.

Kafka's tool stops at the first exception it meets (in a shell: a stack trace, exit status 1, and none of
the reports; here the call ends with the exception).
When that happens the file it was dumping is recorded with the exception (``SimpleClassName: message``) and
what it printed before it, and the next run goes on from the file after it; once every such file is known,
one last run dumps all the others, for their reports.  So every file is compared, and the failing files cost
one call each and one more for them all.

Two lines of logging start-up noise are not the tool's output and are dropped: the ``log4j:WARN`` lines of
3.9's reload4j without a configuration, and the ``SLF4J:`` lines of 4.x's slf4j without a binding.

:class:`OracleUnavailable` says why the tool cannot run (no ``java``, or the jars not fetched: ``make
oracle-jars``).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.oracle.jvm import OracleUnavailable, find_java, kafka_jars

__all__ = ["KAFKA_VERSIONS", "REPORT_HEADERS", "FileDump", "KafkaDump", "OracleUnavailable", "close_servers",
           "jar_dir", "parse_reports", "run_dump", "split_by_file"]

REPO = Path(__file__).resolve().parents[2]
#: The scenario key of each Kafka line (the oracle contract's ``kafka_versions()``) to the jar version.
KAFKA_VERSIONS = {"3.9": "3.9.2", "4": "4.4.0"}
_TOOL_CLASS = {"3": "kafka.tools.DumpLogSegments", "4": "org.apache.kafka.tools.DumpLogSegments"}
#: How long one JVM may take, whatever it dumps (a few seconds are expected).
TIMEOUT_S = 300
#: The first lines of the reports printed after the last file (3.9.2 and 4.x wordings).
REPORT_HEADERS = ("Mismatches in :", "Found timestamp mismatch in :", "Found out of order timestamp in :",
                  "The following indexed offsets are not found in", "Non-consecutive offsets in ")
_NOISE = re.compile(r"^(log4j:WARN |SLF4J: )")
_EXCEPTION = re.compile(r'^Exception in thread "main" ([\w.$]+)(?:: (.*))?$')


def jar_dir(version: str) -> Path:
    """The jars of Kafka ``version`` (``3.9.2``, ``4.4.0``), as ``make oracle-jars`` leaves them; raises
    :class:`OracleUnavailable` without them, or without a JDK (javac compiles DumpServer on first use)."""
    find_java()
    return kafka_jars(version)[0].parent


@dataclass
class FileDump:
    """What Kafka's tool printed for one file: its stdout lines (``Dumping <file>`` first), and the exception
    it stopped on, if it did (then the last line may be a line it had begun)."""

    path: str
    lines: list[str]
    exception: str | None = None


@dataclass
class KafkaDump:
    """One dump of many files: each file's part, the stderr lines printed along the way, the reports."""

    files: dict[str, FileDump]
    inline_errors: list[str] = field(default_factory=list)
    reports: list[tuple[str, ...]] = field(default_factory=list)
    tool_runs: int = 1


def split_by_file(stdout: str, files: Sequence[str]) -> dict[str, FileDump]:
    """Cut a dump's stdout into the parts of ``files``, which it dumped in that order (a part ends where the
    next file's ``Dumping`` line is; text before the first is an error)."""
    parts: dict[str, FileDump] = {}
    current: FileDump | None = None
    pending = list(files)
    lines = stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        if pending and line == f"Dumping {pending[0]}":
            name = pending.pop(0)
            current = parts[name] = FileDump(name, [line])
        elif current is None:
            raise ValueError(f"output before the first file: {line!r}")
        else:
            current.lines.append(line)
    return parts


def parse_reports(stderr_lines: Sequence[str]) -> tuple[list[str], list[tuple[str, ...]]]:
    """The lines printed while dumping, and the report blocks after them (a header and its indented lines;
    3.9's not-found report has unindented ``Indexed offset: ...`` lines)."""
    inline: list[str] = []
    blocks: list[list[str]] = []
    for line in stderr_lines:
        if line.startswith(REPORT_HEADERS):
            blocks.append([line])
        elif blocks and (line.startswith("  ") or line.startswith("Indexed offset: ")):
            blocks[-1].append(line)
        elif blocks:
            raise ValueError(f"a stderr line after the reports began: {line!r}")
        else:
            inline.append(line)
    return inline, sorted(tuple(block) for block in blocks)


def _exception(stderr_lines: Sequence[str]) -> str | None:
    for line in stderr_lines:
        match = _EXCEPTION.match(line)
        if match:
            name = match.group(1).rsplit(".", 1)[-1]
            return f"{name}: {match.group(2)}" if match.group(2) is not None else name
    return None


_SERVER_SOURCE = Path(__file__).resolve().parent / "java" / "dump" / "DumpServer.java"


def _server_classes() -> Path:
    """``DumpServer`` compiled into the ignored ``.oracle/`` cache, in a directory named by a hash of its source
    (a changed source compiles again, an unchanged one costs nothing)."""
    source = _SERVER_SOURCE.read_bytes()
    out = REPO / ".oracle" / f"dump-server-{hashlib.sha256(source).hexdigest()[:16]}"
    if not (out / "DumpServer.class").is_file():
        work = Path(tempfile.mkdtemp(prefix="dump-server-", dir=REPO / ".oracle"))
        subprocess.run([find_java()[1], "--release", "17", "-d", str(work), str(_SERVER_SOURCE)], check=True,
                       capture_output=True, timeout=TIMEOUT_S)
        try:
            work.rename(out)  # whole, or not at all (another session may have won the race)
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
    return out


class _Server:
    """One JVM running Kafka ``version``'s tool for every call (:file:`java/dump/DumpServer.java`): a JVM costs a
    second to start, a call of a few files a few milliseconds.  Calls from several threads take turns."""

    def __init__(self, version: str) -> None:
        lib = jar_dir(version)
        self.version = version
        # The JVM's own stderr, shown if it dies; open as long as the JVM runs.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115
        command = [find_java()[0], "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dfile.encoding=UTF-8",
                   "-cp", f"{_server_classes()}{os.pathsep}{lib}/*", "DumpServer",
                   _TOOL_CLASS[version.split(".", 1)[0]]]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                        env={**os.environ, "LC_ALL": "C.UTF-8"})
        self.lock = threading.Lock()

    def _read(self, n: int) -> bytes:
        assert self.process.stdout is not None
        data = self.process.stdout.read(n)
        if len(data) != n:
            self.log.seek(0)
            raise RuntimeError(f"Kafka {self.version}'s dump runner ended (status {self.process.poll()}):\n"
                               + self.log.read().decode("utf-8", "replace")[-4000:])
        return data

    def call(self, args: Sequence[str]) -> tuple[int, bytes, bytes]:
        """The tool's ``main(args)``: 0 or 1 (it threw), its stdout and its stderr."""
        if any(("\t" in a or "\n" in a) for a in args):
            raise ValueError(f"an argument with a tab or a line break: {args}")
        assert self.process.stdin is not None and self.process.stdout is not None
        with self.lock:
            watchdog = threading.Timer(TIMEOUT_S, self.process.kill)
            watchdog.start()
            try:
                self.process.stdin.write(("\t".join(args) + "\n").encode("utf-8"))
                self.process.stdin.flush()
                header = self.process.stdout.readline()
                if not header.endswith(b"\n"):
                    self._read(1)  # raises, with the runner's log
                status, out, err = (int(x) for x in header.split())
                return status, self._read(out), self._read(err)
            finally:
                watchdog.cancel()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.log.close()


_SERVERS: dict[str, _Server] = {}
_SERVERS_LOCK = threading.Lock()


def _server(version: str) -> _Server:
    with _SERVERS_LOCK:
        if version not in _SERVERS:
            _SERVERS[version] = _Server(version)
        return _SERVERS[version]


def close_servers() -> None:
    """End the runners' JVMs (each waited for a few seconds, then killed)."""
    with _SERVERS_LOCK:
        while _SERVERS:
            _SERVERS.popitem()[1].close()


atexit.register(close_servers)


def run_dump(version: str, files: Sequence[str | os.PathLike[str]], flags: Sequence[str] = ()) -> KafkaDump:
    """Kafka ``version``'s ``DumpLogSegments`` with ``flags`` over ``files`` (absolute paths): one JVM, or, when
    the tool stops on some files, one for each of them and two more (calls of the tool's ``main`` in the
    version's one JVM, :class:`_Server`)."""
    names = [os.fspath(f) for f in files]
    if not all(os.path.isabs(name) for name in names):
        raise ValueError("run_dump takes absolute paths (Kafka prints the path as given)")
    stopped: dict[str, FileDump] = {}
    remaining = list(names)
    runs = 0

    def run(batch: list[str]) -> tuple[int, dict[str, FileDump], list[str]]:
        nonlocal runs
        runs += 1
        status, stdout, err = _server(version).call([*flags, "--files", ",".join(batch)])
        stderr = [line for line in err.decode("utf-8").splitlines() if not _NOISE.match(line)]
        return status, split_by_file(stdout.decode("utf-8"), batch), stderr

    # Find the files the tool stops on: each run goes on from the file after the last stop.
    while remaining:
        status, parts, stderr = run(remaining)
        if status == 0:
            break
        exception = _exception(stderr)
        if exception is None or not parts:
            raise RuntimeError(f"Kafka {version}'s DumpLogSegments failed outside a "
                               "file:\n" + "\n".join(stderr[:40]))
        last = list(parts)[-1]
        parts[last].exception = exception
        stopped[last] = parts[last]
        remaining = remaining[remaining.index(last) + 1:]
    if stopped:
        # The reports come after the last file of a run that ends: one more run of every other file.
        rest = [name for name in names if name not in stopped]
        status, parts, stderr = run(rest) if rest else (0, {}, [])
        if status != 0:
            raise RuntimeError(f"Kafka {version}'s DumpLogSegments stopped on a file it had dumped before:\n"
                               + "\n".join(stderr[:40]))
    elif not names:
        parts, stderr = {}, []
    inline, reports = parse_reports(stderr)
    parts.update(stopped)
    return KafkaDump({name: parts[name] for name in names}, inline, reports, runs)
