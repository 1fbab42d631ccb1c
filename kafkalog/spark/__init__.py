"""kafkalog on Spark: the ``kafkalog`` data source and the cleaner and statistics as Spark jobs.

::

    from kafkalog.spark import session
    spark = session()                      # local[*], with the data source registered
    df = spark.read.format("kafkalog").load("/var/lib/kafka/data")

Needs the ``spark`` extra (PySpark 4.2+, PyArrow) and Java 17; without PySpark, importing this package
raises an ImportError saying to ``pip install 'kafkalog[spark]'``.  See :mod:`kafkalog.spark.source` for the
data source, :mod:`kafkalog.spark.jobs` for ``compact`` and ``stats``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

try:
    import pyspark  # noqa: F401 - only to fail early, with the way out
except ImportError as e:
    raise ImportError("kafkalog.spark needs PySpark: install kafkalog's spark extra, "
                      "pip install 'kafkalog[spark]'") from e

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["QUIET_SETTINGS", "compact", "register", "session", "stats"]

#: What :func:`session` sets to keep Spark's own output down to what matters (``make demo`` starts its
#: session with them too): Spark's log at ERROR (``spark.log.level``, applied as the context starts), no
#: console progress bars, and Python errors from the data source shown as their message, without the
#: traceback (``hideTraceback``: the kafkalog error class and message are the first line of what the user
#: gets).  Conf given to :func:`session` overrides them.
QUIET_SETTINGS = {
    "spark.log.level": "ERROR",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.pyspark.udf.hideTraceback.enabled": "true",
}


def register(spark: SparkSession) -> SparkSession:
    """Register the ``kafkalog`` data source with ``spark``; returns ``spark``."""
    from .source import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)
    return spark


def session(master: str = "local[*]", app_name: str = "kafkalog", **conf: Any) -> SparkSession:
    """A Spark session (a new one, or the running one) with the data source registered.

    The Python workers run this interpreter (``PYSPARK_PYTHON``), so they import the same kafkalog; the
    web UI is off unless ``conf`` turns it on, and Spark is quiet (:data:`QUIET_SETTINGS`: its log at
    ERROR, no progress bars, errors as one line).  ``conf`` keys are Spark's (``spark.driver.memory`` ...),
    with ``_`` for ``.`` accepted: ``session(spark_sql_shuffle_partitions=4, spark_log_level="WARN")``.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "8", **QUIET_SETTINGS}
    settings.update({key.replace("_", ".") if "." not in key else key: str(value) for key, value in conf.items()})
    if settings["spark.sql.execution.pyspark.udf.hideTraceback.enabled"].lower() == "true":
        # The conf reaches the workers of batch reads; a stream's reader runs in a worker started without it,
        # which reads the variable the conf stands for from the environment it inherits from the JVM, and the
        # JVM from this process when this call starts it.
        os.environ.setdefault("SPARK_HIDE_TRACEBACK", "1")
    for key, value in settings.items():
        builder = builder.config(key, value)
    from pyspark import SparkContext

    running = SparkContext._active_spark_context is not None
    spark = builder.getOrCreate()
    if running:
        # spark.log.level applies as a context starts; a running one is told (which Spark announces on stderr).
        spark.sparkContext.setLogLevel(settings["spark.log.level"])
    return register(spark)


def __getattr__(name: str) -> Any:
    # The jobs import pyspark; loaded on first use so ``import kafkalog.spark`` stays light.
    if name in ("compact", "stats"):
        from . import jobs

        return getattr(jobs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
