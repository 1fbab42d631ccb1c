"""A Spark standalone cluster on this machine: one master and some workers, each its own JVM, started from the
``spark-class`` launcher that PySpark ships and stopped when the ``with`` block ends.

::

    from kafkalog.spark import session
    from kafkalog.spark.standalone import StandaloneCluster

    with StandaloneCluster(workers=2) as cluster:
        spark = session(cluster.master_url, executor_cores=1)
        spark.read.format("kafkalog").load("s3://bucket/kafka-logs").count()
        spark.stop()

It is what a cluster deployment looks like, in small: the driver, the master and each worker are separate
processes that talk over RPC, the executors are started by the workers in their own work dirs and run their own
Python workers, and nothing is shared with the driver but what the job sends.  So a job that runs here does not
depend on the driver's files or memory, which a ``local[*]`` session hides.  Used by the cluster tests and by
``python -m kafkalog.spark.demo --cluster``.

Everything binds to 127.0.0.1 on ports the JVMs pick (port 0), read back from the master's log.  Each process
has a time limit to come up; a cluster that does not come up in time is stopped and reported with the tail of
its logs.  Stopping terminates the workers, then the master (SIGTERM, then SIGKILL after a grace period);
the executors are the workers' children and go with them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from ..errors import KafkaLogError

__all__ = ["StandaloneCluster", "StandaloneClusterError"]

#: The master's log line that gives its URL (``Master.scala``: "Starting Spark master at spark://host:port").
_MASTER_URL = re.compile(rb"Starting Spark master at (spark://[^\s]+)")
#: A worker's log line once the master has accepted it (``Worker.scala``).
_REGISTERED = b"Successfully registered with master"


class StandaloneClusterError(KafkaLogError):
    """The cluster did not start (or stop) as asked; the message ends with the tail of the logs."""


class StandaloneCluster:
    """A master and ``workers`` workers, each with ``cores`` cores and ``memory`` for its executors.

    ``root`` holds each process's log and each worker's work dir (a temporary dir, removed at the end, when not
    given).  ``timeout`` bounds the start of each process, in seconds.
    """

    def __init__(self, workers: int = 2, *, cores: int = 1, memory: str = "1g", root: str | Path | None = None,
                 timeout: float = 120.0) -> None:
        if workers < 1:
            raise ValueError(f"a cluster needs at least one worker, not {workers}")
        if cores < 1:
            raise ValueError(f"a worker needs at least one core, not {cores}")
        self.workers, self.cores, self.memory, self.timeout = workers, cores, memory, timeout
        self._given_root = Path(root) if root is not None else None
        self.root: Path | None = None
        self.master_url: str = ""
        self._processes: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    # -- the processes -------------------------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        """The daemons' environment: loopback only, and this Python for the executors' Python workers (so
        they import the kafkalog the driver runs).  The daemons keep Spark's own logging (INFO, to their
        log files here): the start is read from it."""
        env = dict(os.environ)
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        env["SPARK_MASTER_HOST"] = "127.0.0.1"
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.pop("PYSPARK_GATEWAY_PORT", None)
        env.pop("PYSPARK_GATEWAY_SECRET", None)
        return env

    def _start(self, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        from pyspark.find_spark_home import _find_spark_home

        assert self.root is not None
        launcher = Path(_find_spark_home()) / "bin" / "spark-class"
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([str(launcher), *args], stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=self._environment(), cwd=self.root,
                                       start_new_session=True)
        self._processes.append((name, process, log))
        return process, log

    def _wait_for(self, name: str, process: subprocess.Popen[bytes], log: Path, found: re.Pattern[bytes] | bytes
                  ) -> bytes:
        """The log's text once it holds ``found``; an error when the process ends or the time runs out first."""
        deadline = time.monotonic() + self.timeout
        while True:
            text = log.read_bytes()
            hit = found.search(text) if isinstance(found, re.Pattern) else (found in text or None)
            if hit:
                return text
            if process.poll() is not None:
                raise StandaloneClusterError(f"the {name} exited with status {process.returncode} before it was "
                                             f"up{self._tails()}")
            if time.monotonic() > deadline:
                raise StandaloneClusterError(f"the {name} was not up after {self.timeout:.0f} s{self._tails()}")
            time.sleep(0.2)

    def _tails(self) -> str:
        parts = []
        for name, _, log in self._processes:
            try:
                lines = log.read_text(errors="replace").splitlines()[-15:]
            except OSError:
                continue
            parts.append(f"\n--- the end of {name}'s log ({log}):\n" + "\n".join(lines))
        return "".join(parts)

    # -- the context manager -------------------------------------------------------------------------

    def start(self) -> StandaloneCluster:
        """Start the master, then the workers, and wait until every worker is registered with the master."""
        if self._processes:
            raise StandaloneClusterError("the cluster is already started")
        self.root = self._given_root or Path(tempfile.mkdtemp(prefix="kafkalog-spark-cluster-"))
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            master, log = self._start("master", "org.apache.spark.deploy.master.Master",
                                      "--host", "127.0.0.1", "--port", "0", "--webui-port", "0")
            text = self._wait_for("master", master, log, _MASTER_URL)
            match = _MASTER_URL.search(text)
            assert match is not None
            self.master_url = match.group(1).decode()
            started = []
            for n in range(1, self.workers + 1):
                work_dir = self.root / f"worker-{n}"
                work_dir.mkdir(exist_ok=True)
                started.append(self._start(
                    f"worker-{n}", "org.apache.spark.deploy.worker.Worker", self.master_url,
                    "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                    "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work_dir)))
            for n, (process, log) in enumerate(started, 1):
                self._wait_for(f"worker-{n}", process, log, _REGISTERED)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, grace: float = 15.0) -> None:
        """Stop the workers, then the master; kill what has not ended after ``grace`` seconds."""
        for _, process, _ in reversed(self._processes):
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for _, process, _ in reversed(self._processes):
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._processes.clear()
        if self.root is not None and self._given_root is None:
            shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
