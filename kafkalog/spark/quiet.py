"""A Spark driver that starts without noise: the settings :mod:`kafkalog.spark.demo` starts Spark with.

A local PySpark session prints, before any work, lines that are not about the user's job: Spark's
announcement of its default log4j profile and of the shell's log level, Hadoop's ``NativeCodeLoader``
warning (no native Hadoop library, which a pip-installed PySpark never has), and, on a machine whose host
name resolves to a loopback address, ``Utils``' warning that it picked another interface.
:func:`quiet_conf` removes them at their source:

* ``log4j2.properties`` beside this module becomes the driver's log4j configuration
  (``-Dlog4j2.configurationFile`` in ``spark.driver.extraJavaOptions``, which the launcher applies to the
  driver JVM it starts): Spark's defaults at WARN, ``NativeCodeLoader`` at ERROR;
* for a ``local`` master, ``SPARK_LOCAL_IP`` is set to ``127.0.0.1`` unless the environment sets it: a
  local session talks only to itself, so the loopback address is the right one to bind.

One line remains that no setting reaches: ``WARNING: Using incubator modules: jdk.incubator.vector``.  Spark
4's launcher always passes ``--add-modules=jdk.incubator.vector`` to the JVM (``JavaModuleOptions`` in
``spark-launcher``) and the JDK prints that warning whenever an incubator module is loaded, with no option
to turn it off.

Both only matter before the JVM starts: an already running session keeps its logging.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["LOG4J2_PROPERTIES", "quiet_conf"]

#: kafkalog's log4j2 configuration for the driver (shipped with the package).
LOG4J2_PROPERTIES = Path(__file__).resolve().parent / "log4j2.properties"


def quiet_conf(master: str) -> dict[str, str]:
    """The Spark conf that starts a driver on ``master`` without start-up noise; for a ``local`` master it
    also sets ``SPARK_LOCAL_IP=127.0.0.1`` in this process's environment when unset (the JVM inherits it).

    A caller that has its own ``spark.driver.extraJavaOptions`` appends them to the value returned.
    """
    if master.startswith("local") and not os.environ.get("SPARK_LOCAL_IP"):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES.as_uri()}"}
