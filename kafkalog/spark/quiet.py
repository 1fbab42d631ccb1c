"""A Spark driver that starts without noise: what :func:`kafkalog.spark.session` (and so ``make demo``)
starts Spark with.

A local PySpark session prints, before any work, lines that are not about the user's job: Spark's
announcement of its default log4j profile and of the shell's log level, Hadoop's ``NativeCodeLoader``
warning (no native Hadoop library, which a pip-installed PySpark never has), the JDK's ``WARNING: Using
incubator modules: jdk.incubator.vector``, and, on a machine whose host name resolves to a loopback
address, ``Utils``' warning that it picked another interface.  Then it logs every stage's progress.  This
module removes them at their source where there is one:

* :data:`QUIET_SETTINGS`: ``log4j2.properties`` beside this module is the driver's log4j configuration
  (``-Dlog4j2.configurationFile`` in ``spark.driver.extraJavaOptions``, which the launcher applies to the
  driver JVM it starts): Spark at ERROR, ``NativeCodeLoader`` silent; no console progress bars; and Python
  errors of the data source shown as their message, without the traceback (``hideTraceback``: the
  kafkalog error class and message are the first line of what the user gets);
* :func:`quiet_environment`: for a ``local`` master, or a standalone master on loopback, ``SPARK_LOCAL_IP=127.0.0.1``
  unless the environment sets it (such a session talks only to this machine, so the loopback address is the
  right one to bind), and
  ``SPARK_HIDE_TRACEBACK`` for the Python workers a stream starts without the session's conf;
* :func:`start_driver`: the incubator warning has no setting.  Spark 4's launcher always passes
  ``--add-modules=jdk.incubator.vector`` (``JavaModuleOptions`` in ``spark-launcher``), and the JDK prints
  the warning whenever an incubator module is loaded, with no option to turn it off.  So the driver JVM is
  started here, as PySpark starts it (``launch_gateway``), with its stderr passed through a pipe that
  drops that one line and forwards every other byte to this process's stderr as it comes.

All of it only matters before the JVM starts: a session already running keeps its logging.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path

__all__ = ["INCUBATOR_WARNING", "LOG4J2_PROPERTIES", "QUIET_SETTINGS", "quiet_environment", "start_driver"]

#: kafkalog's log4j2 configuration for the driver (shipped with the package).
LOG4J2_PROPERTIES = Path(__file__).resolve().parent / "log4j2.properties"

#: The Spark conf of a quiet session (see the module docstring); conf given to ``session()`` overrides it,
#: ``spark.log.level`` included (``session(spark_log_level="WARN")``).
QUIET_SETTINGS = {
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES.as_uri()}",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.pyspark.udf.hideTraceback.enabled": "true",
}

#: A standalone master on this machine (:class:`kafkalog.spark.standalone.StandaloneCluster`).
_LOOPBACK_MASTER = re.compile(r"spark://(127\.[0-9.]+|localhost)(:[0-9]+)?$")

#: The line the JDK prints for the incubator module Spark's launcher always adds.
INCUBATOR_WARNING = b"WARNING: Using incubator modules: "


def quiet_environment(master: str, settings: Mapping[str, str]) -> None:
    """Set what the JVM and the Python workers read from the environment they inherit, unless it is set."""
    if master.startswith("local") or _LOOPBACK_MASTER.match(master):
        # On one machine the driver listens on loopback only, as the executors it talks to do.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if settings.get("spark.sql.execution.pyspark.udf.hideTraceback.enabled", "").lower() == "true":
        # The conf reaches the workers of batch reads; a stream's reader runs in a worker started without it,
        # which reads the variable the conf stands for from the environment it inherits from the JVM.
        os.environ.setdefault("SPARK_HIDE_TRACEBACK", "1")


def start_driver(settings: Mapping[str, str]) -> bool:
    """Start the driver JVM PySpark would start for a session with ``settings`` (Spark conf, master and app
    name included), its stderr without the JDK's incubator warning; returns whether it started one.

    Nothing is started when this process already has a JVM (a running or stopped SparkContext leaves its
    gateway) or is itself run by ``spark-submit`` (``PYSPARK_GATEWAY_PORT``): the session then uses that one.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
            return False
        conf = SparkConf(loadDefaults=False)
        for key, value in settings.items():
            conf.set(key, value)
        read_end, write_end = os.pipe()
        # Read from before the JVM starts, so it never blocks on a full pipe.
        threading.Thread(target=_forward_stderr, args=(read_end,), name="kafkalog-driver-stderr", daemon=True).start()
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})  # type: ignore[no-untyped-call]
        finally:
            os.close(write_end)  # the JVM holds its own copy; the pipe ends when the JVM does
        SparkContext._ensure_initialized(gateway=gateway, conf=conf)
    return True


def _forward_stderr(read_end: int) -> None:
    """Copy the JVM's stderr to this process's (file descriptor 2, where the JVM would have written), line by
    line, leaving out the incubator warning."""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        pending = b""
        while chunk := pipe.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            out = b"".join(line + b"\n" for line in lines if not line.startswith(INCUBATOR_WARNING))
            if out:
                _write_all(out)
        if pending and not pending.startswith(INCUBATOR_WARNING):
            _write_all(pending)


def _write_all(data: bytes) -> None:
    try:
        while data:
            data = data[os.write(2, data):]
    except OSError:
        pass  # stderr closed: nothing can be shown, and the JVM must not block on it
