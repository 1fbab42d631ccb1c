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

from .quiet import QUIET_SETTINGS, quiet_environment, start_driver

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["QUIET_SETTINGS", "compact", "register", "session", "stats"]


def register(spark: SparkSession) -> SparkSession:
    """Register the ``kafkalog`` data source with ``spark``; returns ``spark``."""
    from .source import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)
    return spark


def session(master: str = "local[*]", app_name: str = "kafkalog", **conf: Any) -> SparkSession:
    """A Spark session (a new one, or the running one) with the data source registered.

    The Python workers run this interpreter (``PYSPARK_PYTHON``), so they import the same kafkalog; the
    web UI is off unless ``conf`` turns it on, and Spark starts quietly (:mod:`kafkalog.spark.quiet`: its
    log at ERROR, none of the start-up lines, no progress bars, errors as one line).  ``conf`` keys are
    Spark's (``spark.driver.memory`` ...), with ``_`` for ``.`` accepted:
    ``session(spark_sql_shuffle_partitions=4, spark_log_level="WARN")``.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    settings = {"spark.master": master, "spark.app.name": app_name, "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "8", **QUIET_SETTINGS}
    settings.update({key.replace("_", ".") if "." not in key else key: str(value) for key, value in conf.items()})
    quiet_environment(master, settings)
    start_driver(settings)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    return register(spark)


def __getattr__(name: str) -> Any:
    # The jobs import pyspark; loaded on first use so ``import kafkalog.spark`` stays light.
    if name in ("compact", "stats"):
        from . import jobs

        return getattr(jobs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
